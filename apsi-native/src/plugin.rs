//! Finding and loading the LLVM back end (`libapsi_native_llvm.so`, built
//! by the `apsi-native-llvm` crate) at the first native compile, and the
//! one call across its C ABI.

use apsi_core::error::ErrorKind;
use apsi_core::vm::value::{err, Exc};
use apsi_native_ir::abi::{CompileFn, COMPILE_SYMBOL};
use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

pub const PLUGIN_FILE: &str = "libapsi_native_llvm.so";

struct Plugin {
    _lib: libloading::Library,
    compile: CompileFn,
}

static PLUGIN: OnceLock<Result<Plugin, String>> = OnceLock::new();

/// Seconds spent loading the plugin (0 when it was already loaded).
static LOAD_SECS: parking_lot::Mutex<f64> = parking_lot::Mutex::new(0.0);

/// Where the plugin is looked for: `$APSI_NATIVE_PLUGIN`, else beside the
/// running executable (and its parent folder, for test binaries in `deps/`).
pub fn candidates() -> Vec<PathBuf> {
    if let Some(p) = std::env::var_os("APSI_NATIVE_PLUGIN") {
        return vec![PathBuf::from(p)];
    }
    let mut out = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe.parent() {
            out.push(dir.join(PLUGIN_FILE));
            if let Some(up) = dir.parent() {
                out.push(up.join(PLUGIN_FILE));
            }
        }
    }
    out
}

fn load() -> Result<Plugin, String> {
    let cands = candidates();
    let Some(path) = cands.iter().find(|p| p.is_file()) else {
        let looked: Vec<String> = cands.iter().map(|p| p.display().to_string()).collect();
        return Err(format!(
            "the LLVM back end of @native ({PLUGIN_FILE}) was not found (looked in: {}); build it with `cargo build --release -p apsi-native-llvm` (it needs llvm-14-dev), or point APSI_NATIVE_PLUGIN at it",
            looked.join(", ")
        ));
    };
    // SAFETY: loading runs the library's initialisers; the plugin is ours and has none beyond LLVM's.
    let lib = unsafe { libloading::Library::new(path) }.map_err(|e| format!("cannot load {}: {e}", path.display()))?;
    // SAFETY: the symbol has the type `CompileFn` by the versioned ABI contract.
    let compile: CompileFn = unsafe {
        let sym: libloading::Symbol<CompileFn> = lib.get(COMPILE_SYMBOL).map_err(|e| {
            format!(
                "{} is not an Apsi native back end of this version (ABI v1): {e}",
                path.display()
            )
        })?;
        *sym
    };
    Ok(Plugin { _lib: lib, compile })
}

/// Whether the plugin is loaded, and how long loading it took.
pub fn load_secs() -> f64 {
    *LOAD_SECS.lock()
}

struct Texts {
    ir: Option<String>,
    error: Option<String>,
}

unsafe extern "C" fn take_text(user: *mut c_void, kind: i32, ptr: *const u8, len: usize) {
    // SAFETY: `user` is the `Texts` passed by `compile` below; the plugin passes a valid byte range.
    let t = &mut *(user as *mut Texts);
    let s = String::from_utf8_lossy(std::slice::from_raw_parts(ptr, len)).into_owned();
    if kind == 0 {
        t.ir = Some(s);
    } else {
        t.error = Some(s);
    }
}

/// Compile IR JSON of `nfuncs` functions; returns two addresses per
/// function and the optimised IR when asked for.
pub fn compile(json: &[u8], nfuncs: usize, want_ir: bool) -> Result<(Vec<u64>, Option<String>), Exc> {
    let t0 = Instant::now();
    let first = PLUGIN.get().is_none();
    let plugin = PLUGIN.get_or_init(load);
    if first {
        *LOAD_SECS.lock() = t0.elapsed().as_secs_f64();
    }
    let plugin = plugin.as_ref().map_err(|m| err(ErrorKind::NativeError, m.clone()))?;
    let mut addrs = vec![0u64; 2 * nfuncs];
    let mut texts = Texts { ir: None, error: None };
    // SAFETY: the buffers are valid for the lengths passed; `texts` outlives the call.
    let rc = unsafe {
        (plugin.compile)(
            json.as_ptr(),
            json.len(),
            want_ir as i32,
            addrs.as_mut_ptr(),
            addrs.len(),
            take_text,
            &mut texts as *mut Texts as *mut c_void,
        )
    };
    if rc != 0 {
        let m = texts
            .error
            .unwrap_or_else(|| "the LLVM back end failed without a message".into());
        return Err(err(ErrorKind::NativeError, format!("native compilation failed: {m}")));
    }
    Ok((addrs, texts.ir))
}
