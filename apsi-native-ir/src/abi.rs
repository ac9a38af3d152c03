//! The C ABI between the host (`apsi-native`) and the plugin.
//!
//! The plugin exports one versioned symbol, [`COMPILE_SYMBOL`] of type
//! [`CompileFn`]: JSON of an [`crate::ir::Module`] in, two code addresses
//! per function out (its [`EntryFn`] trampoline when `entry`, its
//! [`ChunkFn`] trampoline when `chunk`, else 0). Compiled code lives for the
//! rest of the process. Generated code calls back into the host through the
//! addresses in [`Host`].

use serde::{Deserialize, Serialize};
use std::ffi::c_void;

/// The plugin's entry point (NUL-terminated for `dlsym`). A new version of
/// this ABI gets a new symbol name.
pub const COMPILE_SYMBOL: &[u8] = b"apsi_native_compile_v1\0";

/// The same symbol as a name, as a backend package's manifest gives it.
pub const COMPILE_SYMBOL_NAME: &str = "apsi_native_compile_v1";

/// The version of this ABI, as a backend package's `[backend] abi` gives it.
pub const ABI_VERSION: u32 = 1;

/// The kind of backend this ABI is for (`[backend] provides`).
pub const BACKEND_KIND: &str = "native";

/// The package that provides it in a registry built from this repository.
pub const BACKEND_PACKAGE: &str = "native-llvm";

/// Receives text from the plugin: `kind` 0 is optimised LLVM IR, 1 an error message.
pub type TextFn = unsafe extern "C" fn(user: *mut c_void, kind: i32, ptr: *const u8, len: usize);

/// `compile(json, len, want_ir, addrs, naddrs, text, user)`: 0 on success
/// (addresses written), 1 on failure (the message went to `text`).
pub type CompileFn = unsafe extern "C" fn(
    json: *const u8,
    len: usize,
    want_ir: i32,
    addrs: *mut u64,
    naddrs: usize,
    text: TextFn,
    user: *mut c_void,
) -> i32;

/// An entry trampoline: arguments and results as 8-byte words (Int: i64,
/// Float: f64 bits, Bool: 0/1, Tensor argument: a `*const TensorDesc`,
/// Tensor result: its handle). Returns 0, or 1 with the error in `ctx`.
pub type EntryFn = unsafe extern "C" fn(ctx: *mut Ctx, args: *const u64, outs: *mut u64) -> i32;

/// A chunk trampoline: runs `range(lo, hi, step)` of a `parallel for` body
/// with the captured values `env` (words as above) and the reduction
/// partials `partials` (read, then written back).
pub type ChunkFn =
    unsafe extern "C" fn(ctx: *mut Ctx, lo: i64, hi: i64, step: i64, env: *const u64, partials: *mut u64) -> i32;

/// Most axes a native tensor may have.
pub const MAX_DIMS: usize = 8;

/// A tensor as native code sees it: element pointer, the host's handle,
/// shape and strides (in elements).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TensorDesc {
    pub data: *mut u8,
    pub handle: i64,
    pub shape: [i64; MAX_DIMS],
    pub strides: [i64; MAX_DIMS],
}

impl Default for TensorDesc {
    fn default() -> Self {
        TensorDesc {
            data: std::ptr::null_mut(),
            handle: -1,
            shape: [0; MAX_DIMS],
            strides: [0; MAX_DIMS],
        }
    }
}

/// The context of one native call (one per worker in a `parallel for`).
/// Generated code writes the error fields; `state` belongs to the host.
#[repr(C)]
pub struct Ctx {
    pub err: i32,
    pub line: i32,
    pub a: i64,
    pub b: i64,
    pub c: i64,
    pub state: *mut c_void,
    /// Nesting of native calls (see [`MAX_NATIVE_DEPTH`]).
    pub depth: i64,
}

/// Deepest nesting of native-to-native calls before a RecursionError
/// (native frames live on the calling thread's stack).
pub const MAX_NATIVE_DEPTH: i64 = 3000;

/// `alloc(ctx, dtype code, ndim, dims, ones, line, out)`.
pub type AllocFn = unsafe extern "C" fn(*mut Ctx, i32, i32, *const i64, i32, i32, *mut TensorDesc) -> i32;
/// `copy(ctx, src, line, out)`.
pub type CopyFn = unsafe extern "C" fn(*mut Ctx, *const TensorDesc, i32, *mut TensorDesc) -> i32;
/// `par_for(ctx, chunk, lo, hi, step, env, m, init_first, init_rest, first_out, rest_out, nrest_out, line)`.
pub type ParForFn = unsafe extern "C" fn(
    *mut Ctx,
    ChunkFn,
    i64,
    i64,
    i64,
    *const u64,
    i64,
    *const u64,
    *const u64,
    *mut u64,
    *mut *const u64,
    *mut i64,
    i32,
) -> i32;
/// `fbin(ctx, op, x, y, line, out)` for float `//`, `%` and `**` (op: 0, 1, 2).
pub type FBinFn = unsafe extern "C" fn(*mut Ctx, i32, f64, f64, i32, *mut f64) -> i32;
/// `ipow(ctx, x, y, line, out)` for int `**` with a non-negative exponent.
pub type IPowFn = unsafe extern "C" fn(*mut Ctx, i64, i64, i32, *mut i64) -> i32;

/// Addresses of the host callbacks, as integers.
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Host {
    pub alloc: u64,
    pub copy: u64,
    pub par_for: u64,
    pub fbin: u64,
    pub ipow: u64,
}

/// Error codes generated code stores in `Ctx::err` (with `line`, and the
/// operands in `a`, `b`, `c` where noted). The host turns them into errors.
pub mod err {
    /// IndexError: index `a` out of bounds for axis `b` with size `c`.
    pub const INDEX: i32 = 1;
    /// OverflowError: integer overflow.
    pub const INT_OVERFLOW: i32 = 2;
    /// ZeroDivisionError: integer division or modulo by zero.
    pub const INT_DIV_ZERO: i32 = 3;
    /// ZeroDivisionError: float division by zero.
    pub const FLOAT_DIV_ZERO: i32 = 4;
    /// ValueError: range() step is zero.
    pub const RANGE_STEP: i32 = 5;
    /// ValueError: math domain error (`a` = which function, a `MathFn` index).
    pub const DOMAIN: i32 = 6;
    /// OverflowError: math range error (`a` = which function).
    pub const RANGE: i32 = 7;
    /// ValueError: cannot convert NaN to an int.
    pub const NAN_TO_INT: i32 = 8;
    /// OverflowError: cannot convert an infinite or too-large float to an int.
    pub const FLOAT_TO_INT: i32 = 9;
    /// ValueError: unpacking a tuple of `a` values into `b` names.
    pub const UNPACK: i32 = 10;
    /// An error the host raised itself (kept in the host's state).
    pub const HOST: i32 = 11;
    /// ZeroDivisionError: float floor division / modulo by zero.
    pub const FLOAT_MOD_ZERO: i32 = 12;
    /// ValueError: negative shift count.
    pub const NEG_SHIFT: i32 = 13;
    /// RecursionError: native calls nested deeper than `MAX_NATIVE_DEPTH`.
    pub const RECURSION: i32 = 14;
}
