//! The PyTorch backend's driver (apsi-layers' `TorchDriver`): where PyTorch
//! comes from, and a Python worker on that interpreter that runs the
//! backend's worker module (`apsi-torch/apsi_torch.py`).
//!
//! It lives here because it joins three crates that must not know each
//! other: apsi-layers (which asks), apsi-python (the worker protocol) and
//! apsi-backend (the verified package lookup).
//!
//! Where PyTorch comes from, in order (LAYERS.md §7):
//! - `APSI_TORCH_PYTHON=/path/to/python` (development): that interpreter,
//!   with the worker module compiled into this `apsi`;
//! - the installed backend package that provides `torch` (`apsi pkg install
//!   torch`): its files re-hashed against the record made at extraction,
//!   its target, ABI and `requires` checked (`apsi_backend::find`), and the
//!   virtual environment its installation made (`apsi_backend::python_env`),
//!   running the package's own copy of the worker module.

use apsi_core::api::{err, ErrorKind, ErrorObj, Exc, VResult, Value};
use apsi_layers::backend::{not_installed, TorchDriver};
use apsi_python::Bridge;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

/// The worker module's protocol version; the package's manifest says the same (`abi`).
const ABI: i64 = 1;
const SYMBOL: &str = "apsi_torch_v1";
const PACKAGE: &str = "torch";
/// The worker module, for `APSI_TORCH_PYTHON`.
const EMBEDDED: &str = include_str!("../../apsi-torch/apsi_torch.py");

/// Loads the worker module's source as the module `apsi_torch` in the worker.
const LOADER: &str = r#"
def _apsi_load_torch_backend(src, path):
    import sys, types
    m = types.ModuleType("apsi_torch")
    m.__file__ = path
    exec(compile(src, path, "exec"), m.__dict__)
    sys.modules["apsi_torch"] = m
    return m.ABI
"#;

struct Env {
    python: PathBuf,
    /// The worker module's source and the name it is compiled under.
    source: String,
    path: String,
    label: String,
    /// Named by `APSI_TORCH_PYTHON` (development), not the package.
    dev: bool,
}

impl Env {
    /// What fixes an interpreter that is missing or lacks PyTorch.
    fn fix(&self, missing_torch: bool) -> String {
        match (self.dev, missing_torch) {
            (true, true) => format!(
                "install it there ({} -m pip install torch numpy), or unset APSI_TORCH_PYTHON to use the package",
                self.python.display()
            ),
            (true, false) => {
                "point APSI_TORCH_PYTHON at a Python that has torch, or unset it to use the installed package".into()
            }
            (false, _) => "repair the environment: apsi pkg install torch".into(),
        }
    }
}

fn env() -> VResult<Env> {
    if let Some(p) = std::env::var_os("APSI_TORCH_PYTHON").filter(|p| !p.is_empty()) {
        let python = PathBuf::from(p);
        // A path must exist; a bare name (`python3`) is looked up on PATH
        // when the worker starts.
        if python.components().count() > 1 && !python.exists() {
            return Err(ErrorObj::with_hint(
                ErrorKind::ModuleNotFoundError,
                format!("APSI_TORCH_PYTHON={} does not exist", python.display()),
                "point APSI_TORCH_PYTHON at a Python that has torch, or unset it to use the installed package",
            ));
        }
        let label = format!("APSI_TORCH_PYTHON={}", python.display());
        return Ok(Env {
            python,
            source: EMBEDDED.to_string(),
            path: "<apsi_torch (compiled into apsi)>".into(),
            label,
            dev: true,
        });
    }
    let Some(home) = apsi_backend::home::Home::locate() else {
        return Err(not_installed());
    };
    let want = apsi_backend::Want {
        provides: "torch",
        abi: ABI as u32,
        symbol: SYMBOL,
        core_version: apsi_core::api::VERSION,
        package: PACKAGE,
        target: apsi_backend::host_target(),
    };
    let refused = |e: apsi_backend::Error| -> Exc {
        let message = match &e.package {
            Some(p) => format!("the installed backend package {p} was refused: {}", e.message),
            None => e.message.clone(),
        };
        ErrorObj::with_hint(
            ErrorKind::ModuleNotFoundError,
            message,
            e.hint.unwrap_or_else(|| "see `apsi pkg verify torch`".into()),
        )
    };
    let found = match apsi_backend::find(&home, &want) {
        Ok(Some(f)) => f,
        Ok(None) => return Err(not_installed()),
        Err(e) => return Err(refused(e)),
    };
    let python = apsi_backend::python_env(&home, &found).map_err(refused)?;
    let source = std::fs::read_to_string(&found.library).map_err(|e| {
        err(
            ErrorKind::IOError,
            format!(
                "cannot read the torch backend's worker module {}: {e}",
                found.library.display()
            ),
        )
    })?;
    Ok(Env {
        label: format!("package {} ({})", found.label(), python.display()),
        path: found.library.display().to_string(),
        python,
        source,
        dev: false,
    })
}

/// Where the driver stands: nothing looked up yet, the backend found and
/// checked (`locate`), or its worker running with the module loaded.
enum State {
    Idle,
    Located(Env),
    Running(Arc<Bridge>, String),
}

/// The driver `apsi` installs into apsi-layers.
pub struct Driver {
    state: Mutex<State>,
}

impl Driver {
    pub fn new() -> Driver {
        Driver {
            state: Mutex::new(State::Idle),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn bridge(&self) -> VResult<Arc<Bridge>> {
        let mut state = self.state();
        // The package is verified once: `locate` (just before the first
        // job) leaves what it found for the worker to start on.
        let env = match std::mem::replace(&mut *state, State::Idle) {
            State::Running(b, label) => {
                *state = State::Running(b.clone(), label);
                return Ok(b);
            }
            State::Located(env) => env,
            State::Idle => env()?,
        };
        let missing = apsi_python::worker::Missing {
            message: format!("the PyTorch backend's Python was not found: {}", env.label),
            hint: env.fix(false),
        };
        let bridge = Arc::new(Bridge::with_interpreter(
            true,
            env.python.display().to_string(),
            missing,
        ));
        bridge.exec(LOADER)?;
        let abi = bridge.call(
            "_apsi_load_torch_backend",
            &[Value::str(&env.source), Value::str(&env.path)],
            &[],
        )?;
        if !matches!(abi, Value::Int(ABI)) {
            return Err(ErrorObj::with_hint(
                ErrorKind::ModuleNotFoundError,
                format!(
                    "the PyTorch backend ({}) speaks protocol {}, this apsi speaks {ABI}",
                    env.label,
                    apsi_core::api::repr_of(&abi)
                ),
                "install the matching version: apsi pkg install torch",
            ));
        }
        // PyTorch itself must import there: say so plainly if it does not.
        if let Err(e) = bridge.call("apsi_torch.info", &[Value::str("cpu")], &[]) {
            return Err(ErrorObj::with_hint(
                ErrorKind::ModuleNotFoundError,
                format!(
                    "the PyTorch backend ({}) cannot import PyTorch: {}",
                    env.label,
                    e.message.lines().next().unwrap_or("")
                ),
                env.fix(true),
            ));
        }
        *state = State::Running(bridge.clone(), env.label);
        Ok(bridge)
    }
}

impl TorchDriver for Driver {
    fn locate(&self) -> VResult<String> {
        let mut state = self.state();
        match &*state {
            State::Running(_, label) => Ok(label.clone()),
            State::Located(env) => Ok(env.label.clone()),
            State::Idle => {
                let env = env()?;
                let label = env.label.clone();
                *state = State::Located(env);
                Ok(label)
            }
        }
    }

    fn call(&self, func: &str, args: Vec<Value>) -> VResult<Value> {
        let bridge = self.bridge()?;
        let r = bridge.call(&format!("apsi_torch.{func}"), &args, &[]);
        if let Err(e) = &r {
            // A worker that died took the loaded module with it: the next
            // call starts a new one and loads the module again.
            if e.kind == ErrorKind::PythonError && e.message.starts_with("the Python worker stopped") {
                *self.state() = State::Idle;
            }
        }
        r.map_err(own_errors)
    }
}

/// The worker module raises `ValueError` for what the user asked wrongly
/// (an unavailable device): that is a `ValueError` here too, not a
/// `PythonError` with a traceback into the backend.
fn own_errors(e: Exc) -> Exc {
    if e.kind != ErrorKind::PythonError {
        return e;
    }
    for (prefix, kind) in [
        ("ValueError: ", ErrorKind::ValueError),
        ("NotImplementedError: ", ErrorKind::NotImplementedError),
    ] {
        if let Some(rest) = e.message.strip_prefix(prefix) {
            return err(kind, rest.to_string());
        }
    }
    e
}
