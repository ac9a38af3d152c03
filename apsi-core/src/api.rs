//! The Module API: the one surface of `apsi-core` that a `use` module crate
//! (and a back end such as `apsi-native`) builds on. `docs/MODULES.md`
//! describes it; `apsi-cli/tests/module_boundary.rs` fails when a module
//! crate reaches past it into the core's internals.
//!
//! Everything here is re-exported from where the core keeps it; this file
//! is the list. Growing it is an API decision (write it into
//! `docs/MODULES.md`); reaching around it is a bug.
//!
//! - Values and errors: [`Value`], [`VResult`], [`err`], [`Exc`],
//!   [`ErrorKind`], [`ErrorObj`], containers ([`DictMap`], [`HashKey`]).
//! - Calling: [`Caller`] (how native code calls back into Apsi),
//!   [`Kwargs`], [`NoCaller`].
//! - Functions: [`NativeFn`], [`native`], [`bound_method`], [`method_of`],
//!   and the one argument parser, [`Args`].
//! - Objects: [`ApsiObject`] with its typed protocol hooks
//!   ([`Protocols`]: iteration, `len`, context management, operators,
//!   items), [`object`],
//!   and record types built by [`record_type`].
//! - Registration: [`ModuleBuilder`] (functions, constants, capabilities
//!   for the Guard, prelude replacements) and [`ModuleDescriptor`].
//! - Operations on values: [`iterate`], [`get_iter`], [`next_item`],
//!   [`len_with`], [`get_index`], [`set_index`], [`hash_key`], [`binary`],
//!   [`repr_of`].
//! - Sources by URL: [`local_source`] (a path, or an `http(s)://` URL
//!   fetched through the runtime's [`UrlSource`]; refused without
//!   `--allow-net`), [`is_url`].
//! - [`tensor`], [`par`] and [`code`] group what tensor-, thread- and
//!   compiler-level modules need.
//!
//! A module in full (the example of `docs/MODULES.md`):
//!
//! ```
//! use apsi_core::api::{Args, Caller, Kwargs, ModuleBuilder, ModuleDescriptor, NoCaller, VResult, Value};
//!
//! /// `greet(name, times=1)`.
//! fn greet(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
//!     let a = Args::new("greet", args, kw, 1, &["name", "times"])?;
//!     let name = a.str(0)?;
//!     let times = a.int_or(1, 1)?;
//!     Ok(Value::str(format!("hello {name}").repeat(times.max(0) as usize)))
//! }
//!
//! pub fn module() -> ModuleDescriptor {
//!     ModuleBuilder::new("greeting", "1.0.0", "^2.1").function("greet", greet).build()
//! }
//!
//! let m = module();
//! let f = m.get("greet").unwrap();
//! let kw = [("times".into(), Value::Int(2))];
//! let v = NoCaller.call(f, &[Value::str("x")], &kw).unwrap();
//! assert!(matches!(v, Value::Str(s) if s.as_str() == "hello xhello x"));
//! let e = NoCaller.call(f, &[], &[]).unwrap_err();
//! assert_eq!(e.message, "greet() missing required argument 'name'");
//! ```

use std::sync::Arc;

pub use crate::builtins::Args;
pub use crate::error::ErrorKind;
pub use crate::format::repr_of;
pub use crate::module::{ModuleBuilder, ModuleDescriptor};
pub use crate::ops::iters::{get_iter, next_item};
pub use crate::ops::{binary, get_index, hash_key, iterate, len_with, set_index, NoCaller};
pub use crate::syntax::ast::{BinOp, CmpOp, UnaryOp};
pub use crate::value::sources::{is_url, local_source, UrlSource};
pub use crate::value::{
    err, ApsiObject, Caller, Closure, DictMap, ErrorObj, Exc, HashKey, Kwargs, NativeFn, NativeFnPtr, Protocols,
    RangeObj, StructType, VResult, Value,
};
pub use crate::VERSION;

/// Wraps a Rust object as an Apsi value.
pub fn object(o: impl ApsiObject) -> Value {
    Value::Object(Arc::new(crate::value::ObjBox(Box::new(o))))
}

/// A native function value (for method tables and exports).
pub fn native(name: &str, f: NativeFnPtr) -> Value {
    Value::Native(Arc::new(NativeFn::new(name, f)))
}

/// `receiver.method`: `func` called with `receiver` first.
pub fn bound_method(receiver: &Value, func: &Value) -> Value {
    Value::BoundMethod(Arc::new(crate::value::BoundMethod {
        receiver: receiver.clone(),
        func: func.clone(),
    }))
}

/// `this.name` from a method table (name, function taking the receiver
/// first): how an object's `get_attr` finds its methods.
pub fn method_of(this: &Value, table: &[(&'static str, Value)], name: &str) -> Option<VResult<Value>> {
    let (_, f) = table.iter().find(|(n, _)| *n == name)?;
    Some(Ok(bound_method(this, f)))
}

/// The prelude's binding of `name` (a module that offers the same function
/// under its own name, such as `parallel.pmap`).
pub fn prelude_function(name: &str) -> Option<Value> {
    crate::builtins::shared_prelude().get(name).cloned()
}

/// A record type a module returns results in: a struct type named `name`
/// with the given `(field, annotation)` pairs and no methods. An instance
/// is made by calling it (`c.call(&Value::StructType(ty), &fields, &[])`),
/// so it prints, compares and unpacks as a program's own struct does.
pub fn record_type(name: &str, fields: &[(&str, &str)]) -> Arc<StructType> {
    let fields = fields
        .iter()
        .map(|(n, t)| crate::value::StructField {
            name: (*n).into(),
            default: None,
            annotation: Some((*t).into()),
        })
        .collect();
    Arc::new(StructType::plain(name, fields, Default::default()))
}

/// Tensors: the type, its storage and dtypes, and the kernels modules call.
pub mod tensor {
    pub use crate::tensor::arith::{binary, compare, extremum, softplus, unary, where_, Arg, UFn};
    pub use crate::tensor::autodiff::{backward, leaf, record, Op};
    pub use crate::tensor::codec::{self, bulk};
    pub use crate::tensor::conv::{conv2d, max_pool2d};
    pub use crate::tensor::dtype::{as_dtype, dtype_value, DType, Kind};
    pub use crate::tensor::fused::softmax;
    pub use crate::tensor::index::set as set_index;
    pub use crate::tensor::index::{index_add, index_select};
    pub use crate::tensor::layout::{check_alloc, row_major_strides, shape_str, Layout};
    pub use crate::tensor::lstm::lstm_seq;
    pub use crate::tensor::mapped::MappedStorage;
    pub use crate::tensor::matmul::matmul;
    pub use crate::tensor::object::result_value;
    pub use crate::tensor::random::{mix, normal, uniform};
    pub use crate::tensor::reduce::{reduce, RKind};
    pub use crate::tensor::scatter::scatter_reduce;
    pub use crate::tensor::shape::{concat, permute, reshape, stack};
    pub use crate::tensor::storage::{Buffer, Scalar, Storage};
    pub use crate::tensor::{as_tensor, tensor_value, Tensor};
    pub use crate::with_dtype;
}

/// Threads: the shared pool, splitting work into parts, tasks.
pub mod par {
    pub use crate::par::parts::{
        bounds, chunk_count, in_blocks, run_chunks, run_parts, Chunk, ChunkFn, Schedule, GUIDED_DIVISOR, MIN_CHUNK,
        SHORT_CHUNKS,
    };
    pub use crate::par::pool::{blocking, blocking_helping, submit, MAX_THREADS};
    pub use crate::par::task_local;
    pub use crate::par::{set_threads, threads};
    pub use crate::value::tasks::TaskRegistry;
}

/// The bytecode, for back ends that compile it further (`@native`), and
/// source positions for their errors.
pub mod code {
    pub use crate::code::{Capture, Code, FuncProto, Instr, Reg, TypeCheck, NO_REG};
    pub use crate::diagnostic::{Span, TraceEntry};
    pub use crate::ops::accepts;
}
