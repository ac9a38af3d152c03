//! What every thread of a runtime shares while code runs: the prelude, the
//! installed modules, limits, the task registry and the program's output.
//! Built by the driver (`crate::driver::Runtime::new`).

use crate::error::ErrorKind;
use crate::module::ModuleDescriptor;
use crate::value::{err, ModuleObj, VResult, Value};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::sync::{Arc, OnceLock};

/// The compiled-in modules of a runtime. Each one's module value (a map
/// of its exports) is made the first time something asks for it: a
/// program that uses two modules does not build the other seven at every
/// start.
pub struct InstalledModules {
    entries: Vec<(ModuleDescriptor, OnceLock<Arc<ModuleObj>>)>,
}

impl InstalledModules {
    pub(crate) fn new(descriptors: Vec<ModuleDescriptor>) -> InstalledModules {
        InstalledModules {
            entries: descriptors.into_iter().map(|d| (d, OnceLock::new())).collect(),
        }
    }

    /// The module named `name` (as `use` spells it), made on first use.
    pub(crate) fn get(&self, name: &str) -> Option<&Arc<ModuleObj>> {
        let (d, obj) = self.entries.iter().find(|(d, _)| d.name == name)?;
        Some(obj.get_or_init(|| module_obj(d)))
    }

    /// Every module's descriptor, in the order installed.
    pub(crate) fn descriptors(&self) -> impl Iterator<Item = &ModuleDescriptor> {
        self.entries.iter().map(|(d, _)| d)
    }

    /// Every module, each made if it was not yet.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&'static str, &Arc<ModuleObj>)> {
        self.entries
            .iter()
            .map(|(d, obj)| (d.name, obj.get_or_init(|| module_obj(d))))
    }
}

fn module_obj(desc: &ModuleDescriptor) -> Arc<ModuleObj> {
    let mut attrs = indexmap::IndexMap::default();
    attrs.reserve(desc.exports.len());
    for (n, v) in &desc.exports {
        attrs.insert(n.clone(), v.clone());
    }
    Arc::new(ModuleObj {
        id: crate::value::StructType::new_id(),
        name: desc.name.to_string(),
        path: None,
        attrs: parking_lot::RwLock::new(attrs),
    })
}

/// State every thread shares. Immutable except for the output sink.
pub struct Shared {
    pub(crate) out: Mutex<BufWriter<Box<dyn Write + Send>>>,
    /// Flush at every line end (see [`RuntimeConfig::line_buffered`]).
    pub(crate) line_buffered: bool,
    pub(crate) prelude: HashMap<Arc<str>, Value>,
    pub(crate) modules: InstalledModules,
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
