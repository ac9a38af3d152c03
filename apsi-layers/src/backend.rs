//! Choosing a backend: `"cpu"` (Apsi's own engine) or `"torch"` (PyTorch
//! in the Python worker, from the signed backend package `torch` or
//! `torch-cuda`; LAYERS.md §7).
//!
//! The Guard refuses a literal `backend="torch"` before the program runs;
//! a backend chosen at run time is checked here, before any worker starts.

use apsi_core::api::{err, ErrorKind, ErrorObj, VResult, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

static PYTHON_ALLOWED: AtomicBool = AtomicBool::new(false);

/// What the command line allowed (`--allow-python` / `--allow-all`).
pub fn allow_python(yes: bool) {
    PYTHON_ALLOWED.store(yes, Ordering::SeqCst);
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Backend {
    Cpu,
    Torch,
}

pub fn resolve(who: &str, v: Option<&Value>) -> VResult<Backend> {
    match v {
        None | Some(Value::None) => Ok(Backend::Cpu),
        Some(Value::Str(s)) if s.as_str() == "cpu" => Ok(Backend::Cpu),
        Some(Value::Str(s)) if s.as_str() == "torch" => Ok(Backend::Torch),
        Some(Value::Str(s)) => Err(err(
            ErrorKind::ValueError,
            format!(
                "{who}: unknown backend \"{}\" (expected \"cpu\" or \"torch\")",
                s.as_str()
            ),
        )),
        Some(other) => Err(err(
            ErrorKind::TypeError,
            format!("{who}: backend must be \"cpu\" or \"torch\", not {}", other.type_name()),
        )),
    }
}

/// What runs PyTorch for this process: installed by the embedder
/// (apsi-cli), which owns the Python worker and the package lookup, since a
/// module crate depends on apsi-core only (ARCHITECTURE.md, "Dependency
/// rule").
pub trait TorchDriver: Send + Sync {
    /// Where PyTorch comes from (`APSI_TORCH_PYTHON=…` or the package and
    /// its environment), or the error that says why none may be used:
    /// `ModuleNotFoundError` when no backend is installed.
    fn locate(&self) -> VResult<String>;
    /// Calls `apsi_torch.FUNC(*args)` in the backend's worker
    /// (apsi-torch/apsi_torch.py) and returns its value.
    fn call(&self, func: &str, args: Vec<Value>) -> VResult<Value>;
}

static DRIVER: OnceLock<Arc<dyn TorchDriver>> = OnceLock::new();

/// Installs the process's PyTorch driver (once; later calls are ignored).
pub fn install_torch_driver(d: Arc<dyn TorchDriver>) {
    let _ = DRIVER.set(d);
}

const INSTALL_HINT: &str = "install it with: apsi pkg install torch (or apsi pkg install torch-cuda for NVIDIA GPUs)";

/// `ModuleNotFoundError: the PyTorch backend is not installed`, with the
/// install command (LAYERS.md §7).
pub fn not_installed() -> apsi_core::api::Exc {
    ErrorObj::with_hint(
        ErrorKind::ModuleNotFoundError,
        "the PyTorch backend is not installed",
        INSTALL_HINT,
    )
}

/// The driver for `who(backend="torch")`, after the permission check and
/// the package lookup: the errors LAYERS.md §7 names.
pub fn torch(who: &str) -> VResult<Arc<dyn TorchDriver>> {
    if !PYTHON_ALLOWED.load(Ordering::SeqCst) {
        return Err(ErrorObj::with_hint(
            ErrorKind::PermissionError,
            format!("{who}(backend=\"torch\") runs PyTorch in the Python worker, which needs --allow-python"),
            format!(
                "run the program again with --allow-python; the PyTorch backend package is also needed: {INSTALL_HINT}"
            ),
        ));
    }
    let d = DRIVER.get().ok_or_else(not_installed)?;
    d.locate()?;
    Ok(d.clone())
}
