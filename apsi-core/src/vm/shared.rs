//! What every thread of a runtime shares while code runs: the prelude, the
//! installed modules, limits, the task registry and the program's output.
//! Built by the driver (`crate::driver::Runtime::new`).

use crate::error::ErrorKind;
use crate::value::{err, VResult, Value};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::sync::Arc;

/// State every thread shares. Immutable except for the output sink.
pub struct Shared {
    pub(crate) out: Mutex<BufWriter<Box<dyn Write + Send>>>,
    /// Flush at every line end (see [`RuntimeConfig::line_buffered`]).
    pub(crate) line_buffered: bool,
    pub(crate) prelude: HashMap<Arc<str>, Value>,
    pub(crate) modules: crate::module::InstalledModules,
    /// Compiled-in modules whose `use` binds only their name (`math`, `random`).
    pub(crate) namespace_only: std::collections::HashSet<String>,
    pub(crate) max_depth: usize,
    pub(crate) max_native_depth: usize,
    /// Tasks the program spawned (`use parallel`): waited for at exit.
    pub(crate) tasks: Arc<crate::value::tasks::TaskRegistry>,
    /// The prelude's and the modules' source readers, for the Guard
    /// ([`crate::check::CheckEnv::source_readers`]).
    pub(crate) source_readers: Vec<String>,
    /// What fetches `http(s)://` sources (`--allow-net`); `None`: no network.
    pub(crate) url_source: Option<Arc<dyn crate::value::sources::UrlSource>>,
}

impl Shared {
    pub(crate) fn write_out(&self, text: &str) -> VResult<()> {
        let mut out = self.out.lock();
        let mut r = out.write_all(text.as_bytes());
        if r.is_ok() && self.line_buffered && text.contains('\n') {
            r = out.flush();
        }
        r.map_err(|e| err(ErrorKind::IOError, format!("cannot write output: {e}")))
    }
    pub(crate) fn flush_out(&self) -> VResult<()> {
        self.out
            .lock()
            .flush()
            .map_err(|e| err(ErrorKind::IOError, format!("cannot write output: {e}")))
    }
}
