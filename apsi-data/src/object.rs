//! `Dataset`: a pipeline as an Apsi value. Its steps are methods too
//! (`ds.batch(2)`), which is how the prelude's `map`/`filter` reach it:
//! given a module object they call the object's own `map`/`filter`.
//! `for x in ds` pulls items one at a time through `__next__` (each loop a
//! fresh pass); `list(ds)` runs a whole pass through `__iter__`.

use crate::funcs;
use crate::stream::{collect, BoxStream, Node};
use apsi_core::error::ErrorKind;
use apsi_core::vm::value::{
    err, ApsiObject, BoundMethod, Caller, Kwargs, NativeFn, NativeFnPtr, ObjBox, VResult, Value,
};
use parking_lot::Mutex;
use std::sync::{Arc, OnceLock};

pub struct Dataset(pub Arc<Node>);

pub fn dataset_value(n: Node) -> Value {
    Value::Object(Arc::new(ObjBox(Box::new(Dataset(Arc::new(n))))))
}

pub fn as_dataset(v: &Value) -> Option<Arc<Node>> {
    match v {
        Value::Object(o) => o.0.as_any().downcast_ref::<Dataset>().map(|d| d.0.clone()),
        _ => None,
    }
}

fn native(name: &str, f: NativeFnPtr) -> Value {
    Value::Native(Arc::new(NativeFn::new(name, f)))
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
            ("__iter__", native("__iter__", iter_all)),
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
        if name == "__next__" {
            return Some(Ok(next_hook(self.0.clone())));
        }
        let (_, f) = methods().iter().find(|(n, _)| *n == name)?;
        Some(Ok(Value::BoundMethod(Arc::new(BoundMethod {
            receiver: this.clone(),
            func: f.clone(),
        }))))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `list(ds)` and other whole-pass uses: every item, in order.
fn iter_all(c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> {
    let node = args
        .first()
        .and_then(as_dataset)
        .ok_or_else(|| err(ErrorKind::TypeError, "__iter__ needs a Dataset"))?;
    Ok(Value::list(collect(&node, c)?))
}

/// A fresh pass, pulled by `for`: each call gives `(item,)` or `none`.
fn next_hook(node: Arc<Node>) -> Value {
    // `None` before the first item is asked for; `Some(None)` once ended.
    let pass: Mutex<Option<Option<BoxStream>>> = Mutex::new(None);
    let f = move |c: &mut dyn Caller, _args: &[Value], _kw: Kwargs| -> VResult<Value> {
        let mut g = pass.lock();
        let Some(s) = g.get_or_insert_with(|| Some(node.open())) else {
            return Ok(Value::None);
        };
        match s.next(c) {
            Ok(Some(x)) => Ok(Value::tuple(vec![x])),
            Ok(None) => {
                *g = Some(None);
                Ok(Value::None)
            }
            Err(e) => {
                *g = Some(None);
                Err(e)
            }
        }
    };
    Value::Native(Arc::new(NativeFn::closure("__next__", Box::new(f))))
}
