//! One worker behind a lock, with the run-time permission check: what
//! `python.eval`/`exec`/`call` (and, later, the torch backend) go through.
//!
//! Requests from several threads are serialised by the lock. A thread
//! waiting here counts as blocked for the core's pool, so `parallel` tasks
//! waiting on Python never starve the others.

use crate::wire::{self, Reader};
use crate::worker::{Missing, Worker};
use apsi_core::api::DictMap;
use apsi_core::api::ErrorKind;
use apsi_core::api::{err, ErrorObj, Exc, HashKey, Kwargs, VResult, Value};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

pub struct Bridge {
    allowed: AtomicBool,
    worker: Mutex<Option<Worker>>,
    /// The interpreter this bridge's worker runs on, and the error when it
    /// is not there; `None`: [`crate::worker::interpreter`].
    interpreter: Option<(String, Missing)>,
}

/// What a running worker reports about itself.
#[derive(Debug, Clone)]
pub struct WorkerInfo {
    pub pid: u32,
    pub executable: String,
    pub version: String,
}

/// The process's bridge (one worker per process), denied until [`allow`].
pub fn global() -> &'static Arc<Bridge> {
    static GLOBAL: OnceLock<Arc<Bridge>> = OnceLock::new();
    GLOBAL.get_or_init(|| Arc::new(Bridge::new(false)))
}

/// Grants (or withdraws) this process's permission to run Python
/// (`--allow-python`); the Guard checks programs before they run, this
/// holds at run time for what no scan can see.
pub fn allow(yes: bool) {
    global().set_allowed(yes);
}

impl Bridge {
    /// A bridge with no worker yet (it starts at the first request).
    pub fn new(allowed: bool) -> Bridge {
        Bridge {
            allowed: AtomicBool::new(allowed),
            worker: Mutex::new(None),
            interpreter: None,
        }
    }

    /// A bridge whose worker runs on the interpreter `program` (a backend
    /// package's virtual environment), not on `APSI_PYTHON`/`python3`.
    pub fn with_interpreter(allowed: bool, program: impl Into<String>, missing: Missing) -> Bridge {
        Bridge {
            allowed: AtomicBool::new(allowed),
            worker: Mutex::new(None),
            interpreter: Some((program.into(), missing)),
        }
    }

    fn start_worker(&self) -> Result<Worker, Exc> {
        match &self.interpreter {
            Some((p, missing)) => Worker::start_with(p.clone(), missing),
            None => Worker::start(),
        }
    }

    pub fn set_allowed(&self, yes: bool) {
        self.allowed.store(yes, Ordering::SeqCst);
    }

    pub fn allowed(&self) -> bool {
        self.allowed.load(Ordering::SeqCst)
    }

    /// Evaluates a Python expression.
    pub fn eval(&self, code: &str) -> VResult<Value> {
        self.request("python.eval", &Value::tuple(vec![Value::str("eval"), Value::str(code)]))
    }

    /// Runs Python statements (in the namespace `eval` also sees).
    pub fn exec(&self, code: &str) -> VResult<Value> {
        self.request("python.exec", &Value::tuple(vec![Value::str("exec"), Value::str(code)]))
    }

    /// Calls the Python function named `name` (`math.gcd`).
    pub fn call(&self, name: &str, args: &[Value], kwargs: Kwargs) -> VResult<Value> {
        let mut kw = DictMap::with_capacity(kwargs.len());
        for (k, v) in kwargs {
            kw.insert(HashKey::new(Value::str(&**k))?, v.clone());
        }
        let req = Value::tuple(vec![
            Value::str("call"),
            Value::str(name),
            Value::list(args.to_vec()),
            Value::dict(kw),
        ]);
        self.request("python.call", &req)
    }

    /// The running worker, if one has started (and not been lost).
    pub fn worker_info(&self) -> Option<WorkerInfo> {
        self.worker.lock().as_ref().map(|w| WorkerInfo {
            pid: w.pid(),
            executable: w.executable.clone(),
            version: w.version.clone(),
        })
    }

    /// Starts the worker now (it otherwise starts at the first request).
    pub fn start(&self) -> VResult<WorkerInfo> {
        self.check("starting the Python worker")?;
        let mut slot = self.worker.lock();
        if slot.is_none() {
            *slot = Some(self.start_worker()?);
        }
        let w = slot
            .as_ref()
            .ok_or_else(|| err(ErrorKind::PythonError, "the Python worker did not start"))?;
        Ok(WorkerInfo {
            pid: w.pid(),
            executable: w.executable.clone(),
            version: w.version.clone(),
        })
    }

    fn check(&self, what: &str) -> VResult<()> {
        if self.allowed() {
            return Ok(());
        }
        Err(ErrorObj::with_hint(
            ErrorKind::PermissionError,
            format!("{what} needs --allow-python: this program was not given permission to run Python"),
            "run it again with: apsi run --allow-python FILE",
        ))
    }

    /// Sends one request (a value the worker's `handle` understands) and
    /// turns the reply into a value or an Apsi error.
    pub fn request(&self, what: &str, req: &Value) -> VResult<Value> {
        self.check(what)?;
        let mut body = Vec::new();
        wire::encode(req, &mut body).map_err(|e| in_call(e, what))?;
        apsi_core::api::par::blocking(|| {
            let mut slot = self.worker.lock();
            if slot.is_none() {
                *slot = Some(self.start_worker()?);
            }
            let w = slot
                .as_mut()
                .ok_or_else(|| err(ErrorKind::PythonError, "the Python worker did not start"))?;
            match w.exchange(&body) {
                Ok(reply) => decode_reply(&reply, what),
                Err(lost) => {
                    *slot = None;
                    Err(ErrorObj::with_hint(
                        ErrorKind::PythonError,
                        format!("the Python worker stopped during {what}: it {}", lost.0),
                        "the next Python call starts a new worker (names defined with python.exec are gone)",
                    ))
                }
            }
        })
    }
}

/// Prefixes a conversion error with the call it happened in.
fn in_call(e: Exc, what: &str) -> Exc {
    Arc::new(ErrorObj {
        kind: e.kind,
        message: format!("{what}: {}", e.message),
        hint: e.hint.clone(),
        trace: Default::default(),
        exit: None,
        payload: None,
        value: e.value.clone(),
    })
}

/// A reply: `r` + value, `p` + a Python exception (type, message,
/// traceback), or `c` + a conversion error (Apsi kind, message, hint).
pub fn decode_reply(reply: &[u8], what: &str) -> VResult<Value> {
    let mut r = Reader::new(reply);
    match r.u8()? {
        b'r' => {
            let v = r.value()?;
            if !r.at_end() {
                return Err(err(
                    ErrorKind::ValueError,
                    "a malformed message from the Python worker: bytes after the value",
                ));
            }
            Ok(v)
        }
        b'p' => {
            let (ty, msg, tb) = (r.string()?, r.string()?, r.string()?);
            let message = if msg.is_empty() { ty } else { format!("{ty}: {msg}") };
            let hint = if tb.is_empty() {
                format!("raised in Python by {what}")
            } else {
                format!("Python traceback (most recent call last):\n{tb}")
            };
            Err(ErrorObj::with_hint(ErrorKind::PythonError, message, hint))
        }
        b'c' => {
            let (kind, msg, hint) = (r.string()?, r.string()?, r.string()?);
            let kind = ErrorKind::from_name(&kind).unwrap_or(ErrorKind::PythonError);
            let message = format!("{what}: {msg}");
            Err(if hint.is_empty() {
                err(kind, message)
            } else {
                ErrorObj::with_hint(kind, message, hint)
            })
        }
        other => Err(err(
            ErrorKind::ValueError,
            format!(
                "a malformed message from the Python worker: reply tag {:?}",
                other as char
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::put_str;

    #[test]
    fn replies_decode_to_values_and_errors() {
        let mut ok = vec![b'r'];
        wire::encode(&Value::Int(6), &mut ok).unwrap();
        assert!(matches!(decode_reply(&ok, "python.call"), Ok(Value::Int(6))));

        let mut p = vec![b'p'];
        for s in [
            "ZeroDivisionError",
            "division by zero",
            "  File \"<python.eval>\", line 1, in <module>",
        ] {
            put_str(&mut p, s).unwrap();
        }
        let e = decode_reply(&p, "python.eval").unwrap_err();
        assert_eq!(e.kind, ErrorKind::PythonError);
        assert_eq!(e.message, "ZeroDivisionError: division by zero");
        assert!(e.hint.as_deref().unwrap().contains("<python.eval>"));

        let mut c = vec![b'c'];
        for s in ["OverflowError", "Python int 2**64 does not fit", ""] {
            put_str(&mut c, s).unwrap();
        }
        let e = decode_reply(&c, "python.eval").unwrap_err();
        assert_eq!(
            (e.kind, e.message.as_str()),
            (ErrorKind::OverflowError, "python.eval: Python int 2**64 does not fit")
        );

        for bad in [&b""[..], b"x", b"r", b"rNN", b"p\x01"] {
            assert!(decode_reply(bad, "python.eval").is_err());
        }
    }

    #[test]
    fn a_bridge_not_allowed_refuses_before_starting_anything() {
        let b = Bridge::new(false);
        let e = b.eval("1").unwrap_err();
        assert_eq!(e.kind, ErrorKind::PermissionError);
        assert!(e.message.contains("--allow-python"), "{}", e.message);
        assert!(b.worker_info().is_none());
    }
}
