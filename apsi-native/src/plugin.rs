//! Finding and loading the LLVM back end (`libapsi_native_llvm.so`, built
//! by the `apsi-native-llvm` crate) at the first native compile, and the
//! one call across its C ABI.
//!
//! Where it comes from, in order: `$APSI_NATIVE_PLUGIN`; beside the running
//! executable (a development build); the installed backend package that
//! provides `native` (`apsi pkg install native-llvm`), which is loaded only
//! after `apsi-backend` re-verified its files and checked its target, ABI
//! version and `requires`. A package that fails a check is an error, never
//! skipped for another copy.

use apsi_core::api::ErrorKind;
use apsi_core::api::{err, ErrorObj, Exc};
use apsi_native_ir::abi::{CompileFn, ABI_VERSION, BACKEND_KIND, BACKEND_PACKAGE, COMPILE_SYMBOL};
use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

pub use apsi_native_ir::abi::COMPILE_SYMBOL_NAME;

pub const PLUGIN_FILE: &str = "libapsi_native_llvm.so";

struct Plugin {
    _lib: libloading::Library,
    compile: CompileFn,
}

static PLUGIN: OnceLock<Result<Plugin, NotLoadable>> = OnceLock::new();

/// Seconds spent loading the plugin (0 when it was already loaded).
static LOAD_SECS: parking_lot::Mutex<f64> = parking_lot::Mutex::new(0.0);

/// The plugin to load, and where it was found.
#[derive(Debug, Clone)]
pub struct Located {
    pub path: PathBuf,
    /// `APSI_NATIVE_PLUGIN`, `beside apsi`, or `package NAME VERSION`.
    pub source: String,
}

/// Why no plugin may be loaded: the message, and the fix.
#[derive(Debug, Clone)]
pub struct NotLoadable {
    pub message: String,
    pub hint: String,
}

/// Finds the plugin: `Ok(None)` when there is none anywhere, an error when
/// the installed backend package must not be loaded.
pub fn locate() -> Result<Option<Located>, NotLoadable> {
    let env_set = std::env::var_os("APSI_NATIVE_PLUGIN").is_some();
    if let Some(p) = candidates().into_iter().find(|p| p.is_file()) {
        let source = if env_set { "APSI_NATIVE_PLUGIN" } else { "beside apsi" };
        return Ok(Some(Located {
            path: p,
            source: source.into(),
        }));
    }
    if env_set {
        return Ok(None);
    }
    let Some(home) = apsi_backend::home::Home::locate() else {
        return Ok(None);
    };
    let want = apsi_backend::Want {
        provides: BACKEND_KIND,
        abi: ABI_VERSION,
        symbol: COMPILE_SYMBOL_NAME,
        core_version: apsi_core::api::VERSION,
        package: BACKEND_PACKAGE,
        target: apsi_backend::host_target(),
    };
    match apsi_backend::find(&home, &want) {
        Ok(None) => Ok(None),
        Ok(Some(f)) => Ok(Some(Located {
            source: format!("package {}", f.label()),
            path: f.library,
        })),
        Err(e) => Err(NotLoadable {
            message: match &e.package {
                Some(p) => format!("the installed backend package {p} was refused: {}", e.message),
                None => e.message.clone(),
            },
            hint: e.hint.unwrap_or_else(|| "see `apsi pkg verify`".into()),
        }),
    }
}

/// How to get the plugin when there is none.
pub fn how_to_get() -> String {
    format!(
        "install it with `apsi pkg install {BACKEND_PACKAGE}` (docs/PACKAGES.md: a registry that has it); in a source checkout, `cargo build --release -p apsi-native-llvm` puts {PLUGIN_FILE} beside apsi (it needs llvm-14-dev); or point APSI_NATIVE_PLUGIN at a copy"
    )
}

/// Where a development plugin is looked for: `$APSI_NATIVE_PLUGIN`, else beside the
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

fn load() -> Result<Plugin, NotLoadable> {
    let located = match locate() {
        Ok(Some(l)) => l,
        Ok(None) => {
            let looked: Vec<String> = candidates().iter().map(|p| p.display().to_string()).collect();
            return Err(NotLoadable {
                message: format!(
                    "the LLVM back end of @native is not installed (looked for {PLUGIN_FILE} in: {}, and for an installed `{BACKEND_KIND}` backend package)",
                    looked.join(", ")
                ),
                hint: how_to_get(),
            });
        }
        Err(e) => return Err(e),
    };
    let path = &located.path;
    // SAFETY: loading runs the library's initialisers; the plugin is ours and has none beyond LLVM's.
    let lib = unsafe { libloading::Library::new(path) }.map_err(|e| NotLoadable {
        message: format!("cannot load {} ({}): {e}", path.display(), located.source),
        hint: "it needs LLVM 14's shared library (Debian/Ubuntu: `apt install libllvm14`)".into(),
    })?;
    // SAFETY: the symbol has the type `CompileFn` by the versioned ABI contract.
    let compile: CompileFn = unsafe {
        let sym: libloading::Symbol<CompileFn> = lib.get(COMPILE_SYMBOL).map_err(|e| NotLoadable {
            message: format!(
                "{} ({}) is not an Apsi native back end of this version (ABI v{ABI_VERSION}): {e}",
                path.display(),
                located.source
            ),
            hint: how_to_get(),
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
    let plugin = plugin
        .as_ref()
        .map_err(|e| ErrorObj::with_hint(ErrorKind::NativeError, e.message.clone(), e.hint.clone()))?;
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
        // The IR grows within ABI v1 (new operations: the wrapping integer
        // operations, round); a back end older than this apsi cannot read them.
        if m.starts_with("bad IR from the host") {
            return Err(ErrorObj::with_hint(
                ErrorKind::NativeError,
                format!("native compilation failed: {m}"),
                format!(
                    "the native back end is older than this apsi and does not know an operation this function uses: update it (`apsi pkg install {BACKEND_PACKAGE}`, or rebuild {PLUGIN_FILE} beside apsi)"
                ),
            ));
        }
        return Err(err(ErrorKind::NativeError, format!("native compilation failed: {m}")));
    }
    Ok((addrs, texts.ir))
}
