//! A `@native` function: the Apsi function it wraps, its options, and its
//! compiled versions, one per signature of argument types, made at the
//! first call with that signature and kept for the process.

use crate::lower::{Session, Unsupported};
use crate::rt::{self, CallState, Shared};
use crate::types::{dt_of, T};
use apsi_core::api::code::{Span, TraceEntry};
use apsi_core::api::tensor::as_tensor;
use apsi_core::api::ErrorKind;
use apsi_core::api::{err, Caller, Closure, ErrorObj, Exc, Kwargs, VResult, Value};
use apsi_native_ir::abi::{Ctx, EntryFn, TensorDesc};
use apsi_native_ir::ir;
use parking_lot::Mutex;
use std::ffi::c_void;
use std::sync::Arc;
use std::time::Instant;

/// Compilations in this process, all functions together.
static TOTAL_COMPILES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

pub fn total_compiles() -> usize {
    TOTAL_COMPILES.load(std::sync::atomic::Ordering::Relaxed)
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    pub fastmath: bool,
    pub boundscheck: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fastmath: false,
            boundscheck: true,
        }
    }
}

struct Compiled {
    entry: EntryFn,
    ret: T,
    sites: Arc<Vec<(String, Span)>>,
}

pub struct NativeFunc {
    pub closure: Arc<Closure>,
    pub opts: Options,
    cache: Mutex<Vec<(Vec<T>, Arc<Compiled>)>>,
    /// How many compilations ran (a second call of a signature makes none).
    compiles: Mutex<usize>,
}

/// The NativeError for a construct outside the subset, located at its line.
pub fn unsupported_error(u: Unsupported) -> Exc {
    let e = err(
        ErrorKind::NativeError,
        format!("cannot compile {} in @native function '{}'", u.what, u.function),
    );
    e.trace.lock().push(TraceEntry {
        function: u.function,
        span: u.span,
    });
    e
}

fn arg_type(v: &Value, i: usize, fname: &str) -> VResult<T> {
    Ok(match v {
        Value::Int(_) => T::Int,
        Value::Float(_) => T::Float,
        Value::Bool(_) => T::Bool,
        other => match as_tensor(other) {
            Some(t) => {
                let dt = dt_of(t.dtype).ok_or_else(|| {
                    err(ErrorKind::NativeError, format!("argument {} of @native function '{fname}' is a {} tensor; native code takes f64, f32, i64, i32 and bool tensors", i + 1, t.dtype.name()))
                })?;
                if t.ndim() > apsi_native_ir::abi::MAX_DIMS {
                    return Err(err(ErrorKind::NativeError, format!("argument {} of '{fname}' has more than 8 axes", i + 1)));
                }
                T::Tensor(dt, t.ndim() as u8, t.layout.is_contiguous())
            }
            None => {
                return Err(err(
                    ErrorKind::NativeError,
                    format!("argument {} of @native function '{fname}' is a {}; native functions take ints, floats, bools and tensors", i + 1, other.type_name()),
                ))
            }
        },
    })
}

fn want_ir(name: &str) -> bool {
    match std::env::var("APSI_NATIVE_IR") {
        Ok(v) => v == name || v == "*",
        Err(_) => false,
    }
}

/// `APSI_NATIVE_TYPED_IR=FN` (or `*`): print the typed IR handed to the back end.
fn want_typed_ir(name: &str) -> bool {
    match std::env::var("APSI_NATIVE_TYPED_IR") {
        Ok(v) => v == name || v == "*",
        Err(_) => false,
    }
}

impl NativeFunc {
    pub fn new(closure: Arc<Closure>, opts: Options) -> NativeFunc {
        NativeFunc {
            closure,
            opts,
            cache: Mutex::new(Vec::new()),
            compiles: Mutex::new(0),
        }
    }

    pub fn name(&self) -> &str {
        &self.closure.name
    }

    pub fn compile_count(&self) -> usize {
        *self.compiles.lock()
    }

    fn compiled(&self, sig: &[T]) -> VResult<Arc<Compiled>> {
        let mut cache = self.cache.lock();
        if let Some((_, c)) = cache.iter().find(|(s, _)| s.as_slice() == sig) {
            return Ok(c.clone());
        }
        let t0 = Instant::now();
        let mut s = Session::new();
        let (id, ret) = s
            .function(&self.closure.proto, sig.to_vec(), true)
            .map_err(unsupported_error)?;
        let funcs: Option<Vec<ir::Func>> = s.funcs.into_iter().collect();
        let funcs = funcs.ok_or_else(|| {
            err(
                ErrorKind::NativeError,
                "internal error: a native function was not lowered",
            )
        })?;
        let (mut funcs, id) = crate::prune::reachable(funcs, id);
        crate::nonneg::annotate(&mut funcs);
        if want_typed_ir(self.name()) {
            for (k, f) in funcs.iter().enumerate() {
                eprintln!(
                    "; typed IR, function {k}: {} params {:?} -> {:?}",
                    f.name, f.params, f.rets
                );
                for op in &f.ops {
                    eprintln!(";   {op:?}");
                }
            }
        }
        let nfuncs = funcs.len();
        let module = ir::Module {
            funcs,
            fastmath: self.opts.fastmath,
            boundscheck: self.opts.boundscheck,
            host: rt::host(),
        };
        let json =
            serde_json::to_vec(&module).map_err(|e| err(ErrorKind::NativeError, format!("internal error: {e}")))?;
        let t_lower = t0.elapsed().as_secs_f64();
        let (addrs, ir_text) = crate::plugin::compile(&json, nfuncs, want_ir(self.name()))?;
        if let Some(text) = ir_text {
            eprintln!(
                "; optimised LLVM IR of @native {}({})",
                self.name(),
                sig.iter().map(T::describe).collect::<Vec<_>>().join(", ")
            );
            eprintln!("{text}");
        }
        let addr = addrs.get(2 * id as usize).copied().unwrap_or(0);
        if addr == 0 {
            return Err(err(
                ErrorKind::NativeError,
                "internal error: the back end returned no entry point",
            ));
        }
        // SAFETY: the plugin returned the address of an `EntryFn` trampoline that lives for the process.
        let entry: EntryFn = unsafe { std::mem::transmute::<usize, EntryFn>(addr as usize) };
        if std::env::var_os("APSI_NATIVE_TIME").is_some() {
            eprintln!(
                "native: compiled {}({}) in {:.1} ms (lowering {:.2} ms, plugin load {:.1} ms)",
                self.name(),
                sig.iter().map(T::describe).collect::<Vec<_>>().join(", "),
                t0.elapsed().as_secs_f64() * 1e3,
                t_lower * 1e3,
                crate::plugin::load_secs() * 1e3
            );
        }
        let c = Arc::new(Compiled {
            entry,
            ret,
            sites: Arc::new(s.sites),
        });
        cache.push((sig.to_vec(), c.clone()));
        *self.compiles.lock() += 1;
        TOTAL_COMPILES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(c)
    }

    fn full_args(&self, args: &[Value], kwargs: Kwargs) -> VResult<Vec<Value>> {
        let proto = &self.closure.proto;
        if proto.has_vararg || proto.has_kwarg || proto.nkwonly > 0 {
            return Err(err(
                ErrorKind::NativeError,
                format!(
                    "@native function '{}' has *args, **kwargs or keyword-only parameters",
                    self.name()
                ),
            ));
        }
        if let Some((k, _)) = kwargs.first() {
            return Err(err(
                ErrorKind::TypeError,
                format!(
                    "@native function '{}' takes its arguments by position (got {k}=)",
                    self.name()
                ),
            ));
        }
        let n = proto.nparams as usize;
        if args.len() > n {
            return Err(err(
                ErrorKind::TypeError,
                format!("{}() takes {n} arguments but {} were given", self.name(), args.len()),
            ));
        }
        let mut full = args.to_vec();
        let nd = self.closure.defaults.len();
        while full.len() < n {
            let i = full.len();
            match (i + nd).checked_sub(n).and_then(|k| self.closure.defaults.get(k)) {
                Some(v) => full.push(v.clone()),
                None => {
                    let pname = proto.param_names.get(i).map(|s| s.to_string()).unwrap_or_default();
                    return Err(err(
                        ErrorKind::TypeError,
                        format!("{}() missing the argument '{pname}'", self.name()),
                    ));
                }
            }
        }
        for (reg, check) in proto.checks.iter() {
            if let Some(v) = full.get(*reg as usize) {
                if !apsi_core::api::code::accepts(*check, v) {
                    let pname = proto
                        .param_names
                        .get(*reg as usize)
                        .map(|s| s.to_string())
                        .unwrap_or_default();
                    return Err(err(
                        ErrorKind::TypeError,
                        format!(
                            "{}() argument '{pname}' must be {}, not {}",
                            self.name(),
                            check.name(),
                            v.type_name()
                        ),
                    ));
                }
            }
        }
        Ok(full)
    }

    /// Call with Apsi values: specialise (compiling at the first call of a signature), run, convert the result.
    pub fn call(&self, caller: &mut dyn Caller, args: &[Value], kwargs: Kwargs) -> VResult<Value> {
        let mut args = self.full_args(args, kwargs)?;
        // Under `grad`, arguments arrive as traced tensors; native code keeps
        // no tape, so say so instead of failing on the tensor's shape.
        if args.iter().any(|v| as_tensor(v).is_some_and(|t| t.node.is_some())) {
            return Err(ErrorObj::with_hint(
                ErrorKind::NativeError,
                format!(
                    "grad cannot differentiate through @native function '{}': native code records no gradient",
                    self.name()
                ),
                format!(
                    "define '{0}' without @native and take grad of that; where you want speed, use a compiled copy: `{0}_fast = native({0})`",
                    self.name()
                ),
            ));
        }
        // Narrow formats compute in f32/i32 (`narrow`).
        let decoded = crate::narrow::decode_args(&mut args)?;
        let result = self.call_decoded(caller, &args);
        // What the function wrote reaches the caller's tensors even when it
        // failed part-way, as it would have without the decoding.
        crate::narrow::write_back(&decoded)?;
        Ok(crate::narrow::original_of(result?, &decoded))
    }

    /// `call` once every argument is of a type native code takes.
    fn call_decoded(&self, caller: &mut dyn Caller, args: &[Value]) -> VResult<Value> {
        let sig: Vec<T> = args
            .iter()
            .enumerate()
            .map(|(i, v)| arg_type(v, i, self.name()))
            .collect::<VResult<_>>()?;
        let c = self.compiled(&sig)?;
        let shared = Shared {
            handles: Mutex::new(Vec::new()),
            buffers: Mutex::new(Vec::new()),
            host_err: Mutex::new(None),
            sites: c.sites.clone(),
        };
        let mut descs: Vec<TensorDesc> = Vec::new();
        let mut words: Vec<u64> = Vec::with_capacity(args.len());
        for (v, t) in args.iter().zip(&sig) {
            words.push(match (v, t) {
                (Value::Int(i), _) => *i as u64,
                (Value::Float(f), _) => f.to_bits(),
                (Value::Bool(b), _) => *b as u64,
                (other, T::Tensor(dt, _, _)) => {
                    let tensor =
                        as_tensor(other).ok_or_else(|| err(ErrorKind::Error, "internal error: tensor argument"))?;
                    let mut h = shared.handles.lock();
                    let d = rt::desc_of(&tensor, *dt, h.len() as i64)?;
                    h.push(other.clone());
                    descs.push(d);
                    u64::MAX // patched below, once `descs` no longer moves
                }
                _ => return Err(err(ErrorKind::Error, "internal error: argument type")),
            });
        }
        let mut k = 0;
        for (w, t) in words.iter_mut().zip(&sig) {
            if matches!(t, T::Tensor(..)) {
                if let Some(d) = descs.get(k) {
                    *w = d as *const TensorDesc as u64;
                }
                k += 1;
            }
        }
        let mut outs = vec![0u64; c.ret.leaf_types().len().max(1)];
        let state = CallState {
            shared: &shared,
            caller: caller as *mut (dyn Caller + '_),
        };
        let mut ctx = Ctx {
            err: 0,
            line: 0,
            a: 0,
            b: 0,
            c: 0,
            state: &state as *const CallState as *mut c_void,
            depth: 0,
        };
        // SAFETY: `entry` is the compiled trampoline for exactly this signature; the words and
        // descriptors it reads stay alive (and tensor storage is kept by `shared.handles`) for the call.
        let status = unsafe { (c.entry)(&mut ctx, words.as_ptr(), outs.as_mut_ptr()) };
        if status != 0 {
            return Err(rt::error_of(&ctx, &shared));
        }
        let handles = shared.handles.lock();
        let mut pos = 0;
        result_value(&c.ret, &outs, &mut pos, &handles)
    }
}

fn result_value(t: &T, outs: &[u64], pos: &mut usize, handles: &[Value]) -> VResult<Value> {
    let mut word = || {
        let w = outs.get(*pos).copied().unwrap_or(0);
        *pos += 1;
        w
    };
    Ok(match t {
        T::None => Value::None,
        T::Int => Value::Int(word() as i64),
        T::Float => Value::Float(f64::from_bits(word())),
        T::Bool => Value::Bool(word() != 0),
        T::Tensor(..) => {
            let h = word() as usize;
            handles
                .get(h)
                .cloned()
                .ok_or_else(|| err(ErrorKind::Error, "internal error: unknown tensor handle"))?
        }
        T::Tuple(ts) => {
            let mut items = Vec::with_capacity(ts.len());
            for t in ts {
                items.push(result_value(t, outs, pos, handles)?);
            }
            Value::tuple(items)
        }
        other => {
            return Err(err(
                ErrorKind::NativeError,
                format!("a native function cannot return {}", other.describe()),
            ))
        }
    })
}
