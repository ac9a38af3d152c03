//! Choosing a backend: `"cpu"` (Apsi's own engine) or `"torch"` (PyTorch
//! in the Python worker, from the signed backend package `torch` or
//! `torch-cuda`; LAYERS.md §7).
//!
//! The Guard refuses a literal `backend="torch"` before the program runs;
//! a backend chosen at run time is checked here, before any worker starts.

use apsi_core::api::{err, ErrorKind, ErrorObj, VResult, Value};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

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

/// `$APSI_HOME/packages` (default `~/.apsi/packages`).
fn packages_dir() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("APSI_HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(home).join("packages"));
    }
    let home = std::env::var_os("HOME")?;
    Some(PathBuf::from(home).join(".apsi").join("packages"))
}

/// Where the PyTorch backend would come from, if anywhere.
pub fn torch_source() -> Option<String> {
    if let Some(p) = std::env::var_os("APSI_TORCH_PYTHON").filter(|p| !p.is_empty()) {
        return Some(format!("APSI_TORCH_PYTHON={}", PathBuf::from(p).display()));
    }
    let dir = packages_dir()?;
    ["torch", "torch-cuda"]
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.exists())
        .map(|p| p.display().to_string())
}

const INSTALL_HINT: &str = "install it with: apsi pkg install torch (or apsi pkg install torch-cuda for NVIDIA GPUs)";

/// The error for `backend="torch"` in this build: no permission, no package,
/// or a package this version of `layers` cannot drive yet.
pub fn torch_unavailable(who: &str) -> VResult<Value> {
    if !PYTHON_ALLOWED.load(Ordering::SeqCst) {
        return Err(ErrorObj::with_hint(
            ErrorKind::PermissionError,
            format!("{who}(backend=\"torch\") runs PyTorch in the Python worker, which needs --allow-python"),
            format!(
                "run the program again with --allow-python; the PyTorch backend package is also needed: {INSTALL_HINT}"
            ),
        ));
    }
    match torch_source() {
        None => Err(ErrorObj::with_hint(
            ErrorKind::ModuleNotFoundError,
            "the PyTorch backend is not installed",
            INSTALL_HINT,
        )),
        Some(src) => Err(err(
            ErrorKind::NotImplementedError,
            format!(
                "{who}(backend=\"torch\"): apsi-layers {} cannot drive the PyTorch backend yet (found {src}); backend=\"cpu\" trains the same model on Apsi's own engine",
                crate::VERSION
            ),
        )),
    }
}
