//! `Dataset`: a pipeline as an Apsi value. Its steps are methods too
//! (`ds.batch(2)`), which is how the prelude's `map`/`filter` reach it:
//! given a module object they call the object's own `map`/`filter`.
//! `for x in ds`, `iter(ds)` and `list(ds)` start a fresh pass through the
//! typed `iter` hook: a `DatasetPass` iterator that pulls one item at a time.

use crate::funcs;
use crate::stream::{BoxStream, Node};
use apsi_core::api::{method_of, native, object, ApsiObject, Caller, Protocols, VResult, Value};
use parking_lot::Mutex;
use std::sync::{Arc, OnceLock};

pub struct Dataset(pub Arc<Node>);

pub fn dataset_value(n: Node) -> Value {
    object(Dataset(Arc::new(n)))
}

pub fn as_dataset(v: &Value) -> Option<Arc<Node>> {
    match v {
        Value::Object(o) => o.0.as_any().downcast_ref::<Dataset>().map(|d| d.0.clone()),
        _ => None,
    }
}

/// The methods: each takes the dataset first, as the module's functions do.
fn methods() -> &'static [(&'static str, Value)] {
    static M: OnceLock<Vec<(&'static str, Value)>> = OnceLock::new();
    M.get_or_init(|| {
        vec![
            ("map", native("map", funcs::map)),
            ("filter", native("filter", funcs::filter)),
            ("shuffle", native("shuffle", funcs::shuffle)),
            ("batch", native("batch", funcs::batch)),
            ("unbatch", native("unbatch", funcs::unbatch)),
            ("take", native("take", funcs::take)),
            ("skip", native("skip", funcs::skip)),
            ("repeat", native("repeat", funcs::repeat)),
            ("prefetch", native("prefetch", funcs::prefetch)),
            ("cache", native("cache", funcs::cache)),
        ]
    })
}

impl ApsiObject for Dataset {
    fn type_name(&self) -> &str {
        "Dataset"
    }
    fn to_str(&self) -> String {
        format!("<Dataset {}>", self.0.describe())
    }
    fn get_attr(&self, this: &Value, name: &str) -> Option<VResult<Value>> {
        method_of(this, methods(), name)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn protocols(&self) -> Protocols {
        Protocols {
            iter: true,
            ..Protocols::NONE
        }
    }
    /// A fresh pass over the pipeline.
    fn iter(&self, _this: &Value, _c: &mut dyn Caller) -> VResult<Value> {
        Ok(object(DatasetPass(Mutex::new(Some(self.0.open())))))
    }
}

/// One pass over a dataset, pulled by `for` or `next()`: `None` once it
/// has ended (or failed), so a finished pass stays finished.
struct DatasetPass(Mutex<Option<BoxStream>>);

impl ApsiObject for DatasetPass {
    fn type_name(&self) -> &str {
        "DatasetPass"
    }
    fn to_str(&self) -> String {
        "<DatasetPass>".into()
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn protocols(&self) -> Protocols {
        Protocols {
            next: true,
            ..Protocols::NONE
        }
    }
    fn next(&self, _this: &Value, c: &mut dyn Caller) -> VResult<Option<Value>> {
        let mut g = self.0.lock();
        let Some(s) = g.as_mut() else { return Ok(None) };
        match s.next(c) {
            Ok(Some(x)) => Ok(Some(x)),
            Ok(None) => {
                *g = None;
                Ok(None)
            }
            Err(e) => {
                *g = None;
                Err(e)
            }
        }
    }
}
