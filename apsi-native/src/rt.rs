//! The host side of a native call: the context native code runs with, the
//! callbacks it makes (tensor allocation and copy, `parallel for`, float
//! `//` `%` `**` and int `**` with the interpreter's exact semantics), and
//! the errors it reports, turned into Apsi errors with the Apsi line.

use crate::types::dtype_of;
use apsi_core::api::code::{Span, TraceEntry};
use apsi_core::api::tensor::Buffer;
use apsi_core::api::tensor::{as_tensor, tensor_value, Tensor};
use apsi_core::api::BinOp;
use apsi_core::api::ErrorKind;
use apsi_core::api::{err, Caller, Exc, Value};
use apsi_native_ir::abi::{err as code, ChunkFn, Ctx, Host, TensorDesc, MAX_DIMS};
use apsi_native_ir::ir::Dt;
use parking_lot::Mutex;
use std::ffi::c_void;
use std::sync::Arc;

/// What every worker of one native call shares.
pub struct Shared {
    /// Tensors by handle: the arguments, then every tensor native code made.
    pub handles: Mutex<Vec<Value>>,
    /// Partial buffers of `parallel for` loops, alive until the call ends.
    pub buffers: Mutex<Vec<Box<[u64]>>>,
    /// An error a callback raised (error code `HOST`), per worker order of discovery.
    pub host_err: Mutex<Option<Exc>>,
    pub sites: Arc<Vec<(String, Span)>>,
}

/// The host state behind `Ctx::state` for one worker.
pub struct CallState<'a> {
    pub shared: &'a Shared,
    pub caller: *mut (dyn Caller + 'a),
}

pub fn host() -> Host {
    Host {
        alloc: rt_alloc as *const () as usize as u64,
        copy: rt_copy as *const () as usize as u64,
        par_for: rt_par_for as *const () as usize as u64,
        fbin: rt_fbin as *const () as usize as u64,
        ipow: rt_ipow as *const () as usize as u64,
    }
}

/// # Safety
/// `ctx.state` must point to a live `CallState`.
unsafe fn state<'a>(ctx: *mut Ctx) -> &'a CallState<'a> {
    &*((*ctx).state as *const CallState)
}

unsafe fn fail(ctx: *mut Ctx, e: Exc, line: i32) -> i32 {
    let st = state(ctx);
    *st.shared.host_err.lock() = Some(e);
    (*ctx).err = code::HOST;
    (*ctx).line = line;
    1
}

const MATH_NAMES: [&str; 25] = [
    "sqrt", "exp", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "atan", "sinh", "cosh", "tanh", "abs",
    "floor", "ceil", "isnan", "isinf", "atan2", "hypot", "min", "max", "minimum", "maximum", "round",
];

fn domain_text(name: &str) -> String {
    match name {
        "sqrt" => "sqrt of a negative number".into(),
        "log" => "log of a number <= 0".into(),
        "log2" => "log2 of a number <= 0".into(),
        "log10" => "log10 of a number <= 0".into(),
        "log1p" => "log1p of a number <= -1".into(),
        "sin" | "cos" | "tan" => format!("{name} of an infinity"),
        other => other.to_string(),
    }
}

/// The Apsi error for the error stored in `ctx` (with the native line on its trace).
pub fn error_of(ctx: &Ctx, shared: &Shared) -> Exc {
    let (a, b, c) = (ctx.a, ctx.b, ctx.c);
    let math = || MATH_NAMES.get(a as usize).copied().unwrap_or("math");
    let e = match ctx.err {
        code::INDEX => err(
            ErrorKind::IndexError,
            format!("index {a} is out of bounds for axis {b} with size {c}"),
        ),
        code::INT_OVERFLOW => err(
            ErrorKind::OverflowError,
            "integer overflow: the result does not fit in a 64-bit int",
        ),
        code::INT_DIV_ZERO => err(
            ErrorKind::ZeroDivisionError,
            if c == 1 {
                "integer modulo by zero"
            } else {
                "integer division by zero"
            },
        ),
        code::FLOAT_DIV_ZERO => err(ErrorKind::ZeroDivisionError, "float division by zero"),
        code::RANGE_STEP => err(ErrorKind::ValueError, "range() arg 3 must not be zero"),
        code::DOMAIN => err(
            ErrorKind::ValueError,
            format!("math domain error: {}", domain_text(math())),
        ),
        code::RANGE => err(
            ErrorKind::OverflowError,
            format!("math range error: the result of {}() is too large", math()),
        ),
        code::NAN_TO_INT => err(ErrorKind::ValueError, "cannot convert float nan to int"),
        code::FLOAT_TO_INT => err(
            ErrorKind::OverflowError,
            "cannot convert an infinite or too large float to int",
        ),
        code::UNPACK => err(
            ErrorKind::ValueError,
            format!("cannot unpack {a} values into a different number of names"),
        ),
        code::NEG_SHIFT => err(ErrorKind::ValueError, "negative shift count"),
        code::RECURSION => err(
            ErrorKind::RecursionError,
            "maximum recursion depth exceeded in @native code",
        ),
        code::HOST => shared
            .host_err
            .lock()
            .take()
            .unwrap_or_else(|| err(ErrorKind::Error, "internal error: a native callback failed")),
        other => err(
            ErrorKind::Error,
            format!("internal error: unknown native error code {other}"),
        ),
    };
    if let Some((function, span)) = shared.sites.get(ctx.line as usize) {
        let mut t = e.trace.lock();
        if t.is_empty() {
            t.push(TraceEntry {
                function: function.clone(),
                span: *span,
            });
        }
    }
    e
}

fn elem_size(dt: Dt) -> usize {
    match dt {
        Dt::F64 | Dt::I64 => 8,
        Dt::F32 | Dt::I32 => 4,
        Dt::Bool => 1,
    }
}

/// The descriptor of tensor `t` (handle `handle`): element pointer, shape, strides.
pub fn desc_of(t: &Tensor, dt: Dt, handle: i64) -> Result<TensorDesc, Exc> {
    let nd = t.ndim();
    if nd > MAX_DIMS {
        return Err(err(
            ErrorKind::NativeError,
            format!("native code takes tensors of at most {MAX_DIMS} axes, found {nd}"),
        ));
    }
    let base: *mut u8 = t.storage.write(|b| match b {
        Buffer::F64(v) => v.as_mut_ptr() as *mut u8,
        Buffer::F32(v) => v.as_mut_ptr() as *mut u8,
        Buffer::I64(v) => v.as_mut_ptr() as *mut u8,
        Buffer::I32(v) => v.as_mut_ptr() as *mut u8,
        Buffer::Bool(v) => v.as_mut_ptr() as *mut u8,
        _ => std::ptr::null_mut(),
    });
    if base.is_null() {
        return Err(err(
            ErrorKind::NativeError,
            "native code reads f64, f32, i64, i32 and bool tensors only",
        ));
    }
    let mut d = TensorDesc {
        data: base.wrapping_add(t.layout.offset * elem_size(dt)),
        handle,
        ..TensorDesc::default()
    };
    for k in 0..nd {
        d.shape[k] = t.layout.shape[k] as i64;
        d.strides[k] = t.layout.strides[k] as i64;
    }
    Ok(d)
}

fn register(shared: &Shared, t: Tensor, dt: Dt) -> Result<TensorDesc, Exc> {
    let mut h = shared.handles.lock();
    let handle = h.len() as i64;
    let d = desc_of(&t, dt, handle)?;
    h.push(tensor_value(t));
    Ok(d)
}

unsafe extern "C" fn rt_alloc(
    ctx: *mut Ctx,
    dt: i32,
    ndim: i32,
    dims: *const i64,
    ones: i32,
    line: i32,
    out: *mut TensorDesc,
) -> i32 {
    let st = state(ctx);
    let Some(dt) = Dt::from_code(dt) else {
        return fail(ctx, err(ErrorKind::Error, "internal error: bad dtype code"), line);
    };
    let dims = std::slice::from_raw_parts(dims, ndim.max(0) as usize);
    let mut shape = Vec::with_capacity(dims.len());
    for &d in dims {
        if d < 0 {
            return fail(
                ctx,
                err(
                    ErrorKind::ValueError,
                    format!("negative dimensions are not allowed (found {d})"),
                ),
                line,
            );
        }
        shape.push(d as usize);
    }
    let t = match Tensor::full(shape, if ones != 0 { 1.0 } else { 0.0 }, dtype_of(dt)) {
        Ok(t) => t,
        Err(e) => return fail(ctx, e, line),
    };
    match register(st.shared, t, dt) {
        Ok(d) => {
            *out = d;
            0
        }
        Err(e) => fail(ctx, e, line),
    }
}

unsafe extern "C" fn rt_copy(ctx: *mut Ctx, src: *const TensorDesc, line: i32, out: *mut TensorDesc) -> i32 {
    let st = state(ctx);
    let h = (*src).handle;
    let v = st.shared.handles.lock().get(h as usize).cloned();
    let Some(t) = v.as_ref().and_then(as_tensor) else {
        return fail(
            ctx,
            err(ErrorKind::Error, "internal error: copy of an unknown tensor"),
            line,
        );
    };
    let Some(dt) = crate::types::dt_of(t.dtype) else {
        return fail(ctx, err(ErrorKind::NativeError, "copy of an unsupported dtype"), line);
    };
    match register(st.shared, t.contiguous(), dt) {
        Ok(d) => {
            *out = d;
            0
        }
        Err(e) => fail(ctx, e, line),
    }
}

unsafe extern "C" fn rt_fbin(ctx: *mut Ctx, op: i32, x: f64, y: f64, line: i32, out: *mut f64) -> i32 {
    let op = match op {
        0 => BinOp::FloorDiv,
        1 => BinOp::Mod,
        _ => BinOp::Pow,
    };
    match apsi_core::api::binary(op, &Value::Float(x), &Value::Float(y)) {
        Ok(Value::Float(r)) => {
            *out = r;
            0
        }
        Ok(other) => fail(
            ctx,
            err(
                ErrorKind::Error,
                format!("internal error: float operator gave {}", other.type_name()),
            ),
            line,
        ),
        Err(e) => fail(ctx, e, line),
    }
}

unsafe extern "C" fn rt_ipow(ctx: *mut Ctx, x: i64, y: i64, line: i32, out: *mut i64) -> i32 {
    match apsi_core::api::binary(BinOp::Pow, &Value::Int(x), &Value::Int(y)) {
        Ok(Value::Int(r)) => {
            *out = r;
            0
        }
        Ok(other) => fail(
            ctx,
            err(
                ErrorKind::Error,
                format!("internal error: int ** gave {}", other.type_name()),
            ),
            line,
        ),
        Err(e) => fail(ctx, e, line),
    }
}

/// Addresses that cross threads inside one `parallel for` (valid while it runs).
#[derive(Clone, Copy)]
struct Addr(usize);
// SAFETY: used only while the loop that owns the pointed-to data blocks in
// `run_chunks` (a pool helper that starts after the loop ended finds no chunk
// left and never reads them).
unsafe impl Send for Addr {}
unsafe impl Sync for Addr {}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn rt_par_for(
    ctx: *mut Ctx,
    chunk: ChunkFn,
    lo: i64,
    hi: i64,
    step: i64,
    env: *const u64,
    m: i64,
    init_first: *const u64,
    init_rest: *const u64,
    first_out: *mut u64,
    rest_out: *mut *const u64,
    nrest_out: *mut i64,
    line: i32,
) -> i32 {
    let st = state(ctx);
    if step == 0 {
        return fail(ctx, err(ErrorKind::ValueError, "range() arg 3 must not be zero"), line);
    }
    let m = m.max(0) as usize;
    let firsts: Vec<u64> = std::slice::from_raw_parts(init_first, m).to_vec();
    let rests: Vec<u64> = std::slice::from_raw_parts(init_rest, m).to_vec();
    let n = apsi_core::api::RangeObj {
        start: lo,
        stop: hi,
        step,
    }
    .len()
    .max(0) as usize;
    // The interpreter's guided chunks, so a reduction gives the same bits.
    let sched = apsi_core::api::par::Schedule::for_loop(n);
    let parts = sched.len();
    *rest_out = std::ptr::null();
    *nrest_out = 0;
    if parts == 0 {
        std::ptr::copy_nonoverlapping(firsts.as_ptr(), first_out, m);
        return 0;
    }
    let results: Arc<Mutex<Vec<Vec<u64>>>> = Arc::new(Mutex::new(vec![Vec::new(); parts]));
    let shared_addr = Addr(st.shared as *const Shared as usize);
    let env_addr = Addr(env as usize);
    let chunk_addr = Addr(chunk as usize);
    let res2 = results.clone();
    // The loop value of iteration i, as the interpreter computes chunk bounds.
    let at = move |i: usize| -> i64 {
        if i >= n {
            hi
        } else {
            (lo as i128 + i as i128 * step as i128) as i64
        }
    };
    let work = Arc::new(
        move |c: &mut dyn Caller, ch: &apsi_core::api::par::Chunk<'_>| -> apsi_core::api::VResult<Value> {
            let (k, a, b) = (ch.index, ch.lo, ch.hi);
            let mut partials = if k == 0 { firsts.clone() } else { rests.clone() };
            // SAFETY: the Shared outlives `run_chunks`, which waits for every chunk.
            let shared: &Shared = unsafe { &*(shared_addr.0 as *const Shared) };
            let cs = CallState {
                shared,
                caller: c as *mut (dyn Caller + '_),
            };
            let mut sub = Ctx {
                err: 0,
                line: 0,
                a: 0,
                b: 0,
                c: 0,
                state: &cs as *const CallState as *mut c_void,
                depth: 0,
            };
            // SAFETY: the address is a ChunkFn made by the plugin.
            let f: ChunkFn = unsafe { std::mem::transmute::<usize, ChunkFn>(chunk_addr.0) };
            let rc = unsafe {
                f(
                    &mut sub,
                    at(a),
                    at(b),
                    step,
                    env_addr.0 as *const u64,
                    partials.as_mut_ptr(),
                )
            };
            if rc != 0 {
                return Err(error_of(&sub, shared));
            }
            if let Some(slot) = res2.lock().get_mut(k) {
                *slot = partials;
            }
            Ok(Value::None)
        },
    );
    let caller: &mut dyn Caller = &mut *st.caller;
    if let Err(e) = apsi_core::api::par::run_chunks(caller, sched, work) {
        return fail(ctx, e, line);
    }
    let res = std::mem::take(&mut *results.lock());
    if let Some(f) = res.first() {
        std::ptr::copy_nonoverlapping(f.as_ptr(), first_out, m.min(f.len()));
    }
    let rest: Box<[u64]> = res.iter().skip(1).flat_map(|v| v.iter().copied()).collect();
    *nrest_out = (parts - 1) as i64;
    *rest_out = rest.as_ptr();
    st.shared.buffers.lock().push(rest);
    0
}
