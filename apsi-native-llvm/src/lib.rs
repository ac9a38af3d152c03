//! The LLVM back end of `@native`, built as a plugin (cdylib) so that the
//! `apsi` binary does not link LLVM: `apsi-native` loads it with `dlopen`
//! at the first native compile. The only export is the versioned entry
//! point `apsi_native_compile_v1` (see `apsi_native_ir::abi`).
//!
//! - [`codegen`]: typed IR → LLVM IR.
//! - [`jit`]: O3 for the host CPU, MCJIT, the code addresses.

mod codegen;
mod jit;

use apsi_native_ir::abi::TextFn;
use std::ffi::c_void;

// The exported entry point has exactly the type the loader expects.
const _: apsi_native_ir::abi::CompileFn = apsi_native_compile_v1;

/// # Safety
/// `json` must point to `len` readable bytes and `addrs` to `naddrs` writable words.
#[no_mangle]
pub unsafe extern "C" fn apsi_native_compile_v1(
    json: *const u8,
    len: usize,
    want_ir: i32,
    addrs: *mut u64,
    naddrs: usize,
    text: TextFn,
    user: *mut c_void,
) -> i32 {
    let input = std::slice::from_raw_parts(json, len);
    let out = std::slice::from_raw_parts_mut(addrs, naddrs);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| jit::compile(input, want_ir != 0, out)));
    let r = match r {
        Ok(r) => r,
        Err(_) => Err("internal error: the LLVM back end panicked".to_string()),
    };
    match r {
        Ok(ir) => {
            if let Some(ir) = ir {
                text(user, 0, ir.as_ptr(), ir.len());
            }
            0
        }
        Err(msg) => {
            text(user, 1, msg.as_ptr(), msg.len());
            1
        }
    }
}
