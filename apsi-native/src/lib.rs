//! `@native` for Apsi (LANGUAGE.md §8, ARCHITECTURE.md "Native code").
//!
//! The front half of the native compiler, with no LLVM in it: at the first
//! call of a `@native` function with a given signature of argument types,
//! [`lower`] specialises the function's register bytecode to the typed IR
//! of `apsi-native-ir`, and [`plugin`] hands it to the LLVM back end
//! (`apsi-native-llvm`, a plugin loaded with `dlopen` only then), which
//! returns machine code. Programs that use no `@native` never load LLVM.
//!
//! - [`func`]: the native-dispatching function value and its cache.
//! - [`lower`], [`calls`], [`types`]: bytecode → typed IR.
//! - [`nonneg`]: which tensor indices cannot be negative (no wrap needed).
//! - [`prune`]: drops the functions a compile does not reach.
//! - [`rt`]: what native code calls back (allocation, `parallel for`, …).
//! - [`registry`]: which function values are `@native` wrappers.

pub mod calls;
pub mod func;
pub mod lower;
pub mod narrow;
pub mod nonneg;
pub mod plugin;
pub mod prune;
pub mod registry;
pub mod rt;
pub mod types;

use apsi_core::api::ErrorKind;
use apsi_core::api::{err, Caller, Kwargs, NativeFn, VResult, Value};
use apsi_core::api::{ModuleBuilder, ModuleDescriptor};
use func::{NativeFunc, Options};
use std::sync::Arc;

/// This crate's version: the `native` module's.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The `native` module: its `native` export replaces the prelude's
/// interpreter fallback, so `@native` needs no `use`.
pub fn module() -> ModuleDescriptor {
    ModuleBuilder::new("native", VERSION, "^2.3")
        .function("native", native)
        .prelude("native")
        .build()
}

/// Wrap an Apsi function into a native-dispatching function value.
pub fn wrap(f: &Value, opts: Options) -> VResult<Value> {
    match f {
        Value::Func(c) => {
            let nf = Arc::new(NativeFunc::new(c.clone(), opts));
            let inner = nf.clone();
            let value = Arc::new(NativeFn::closure(
                &c.name,
                Box::new(move |caller, args, kw| inner.call(caller, args, kw)),
            ));
            registry::add(&value, nf);
            Ok(Value::Native(value))
        }
        Value::Native(n) if registry::lookup(n).is_some() => Ok(f.clone()),
        other => Err(err(
            ErrorKind::TypeError,
            format!(
                "@native expects a function defined with def, found {}",
                other.type_name()
            ),
        )),
    }
}

fn flag(v: &Value, name: &str) -> VResult<bool> {
    match v {
        Value::Bool(b) => Ok(*b),
        other => Err(err(
            ErrorKind::TypeError,
            format!("native({name}=…) expects true or false, found {}", other.type_name()),
        )),
    }
}

/// `native(f)`, or `native(fastmath=…, boundscheck=…)` giving a decorator.
pub fn native(_c: &mut dyn Caller, args: &[Value], kwargs: Kwargs) -> VResult<Value> {
    match args {
        [f] if kwargs.is_empty() => wrap(f, Options::default()),
        [] => {
            let mut opts = Options::default();
            for (k, v) in kwargs {
                match &**k {
                    "fastmath" => opts.fastmath = flag(v, k)?,
                    "boundscheck" => opts.boundscheck = flag(v, k)?,
                    other => {
                        return Err(err(ErrorKind::TypeError, format!("native() got an unexpected keyword argument '{other}' (expected fastmath= or boundscheck=)")))
                    }
                }
            }
            let deco = move |_c: &mut dyn Caller, a: &[Value], kw: Kwargs| -> VResult<Value> {
                match (a, kw.is_empty()) {
                    ([f], true) => wrap(f, opts),
                    _ => Err(err(ErrorKind::TypeError, "@native(…) decorates one function")),
                }
            };
            Ok(Value::Native(Arc::new(NativeFn::closure("native", Box::new(deco)))))
        }
        _ => Err(err(
            ErrorKind::TypeError,
            format!("native() takes one function, {} arguments given", args.len()),
        )),
    }
}
