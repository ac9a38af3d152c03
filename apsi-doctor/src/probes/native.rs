//! The native back end of `@native`: whether its plugin is found and loads,
//! the LLVM it runs on (version, from the library file that provides LLVM's
//! C API) and the host CPU name LLVM compiles for.

use crate::check::Check;
use crate::dl::{file_of, Library};
use std::ffi::{c_char, CStr};
use std::path::PathBuf;

/// `candidates`: where the plugin is looked for, in order; `abi_symbol`: the
/// entry point a plugin of this version exports; `how_to_get`: the fix when
/// it is missing.
pub fn probe(candidates: &[PathBuf], abi_symbol: &str, how_to_get: &str) -> Check {
    let looked: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
    let Some(path) = candidates.iter().find(|p| p.is_file()) else {
        return Check::warn(
            "native",
            "the LLVM back end of @native is not installed: @native functions cannot be compiled",
        )
        .detail("found", false)
        .detail("looked_in", looked)
        .fix(how_to_get);
    };
    let shown = path.display().to_string();
    let lib = match Library::open(&shown) {
        Ok(l) => l,
        Err(e) => {
            return Check::error("native", format!("{shown} was found but does not load"))
                .detail("found", true)
                .detail("path", shown)
                .detail("error", e)
                .fix("it needs LLVM 14's shared library (Debian/Ubuntu: `apt install libllvm14`); or rebuild it with `cargo build --release -p apsi-native-llvm`");
        }
    };
    if lib.symbol(abi_symbol).is_none() {
        return Check::error("native", format!("{shown} is not an Apsi native back end of this version"))
            .detail("found", true)
            .detail("path", shown)
            .detail("abi_symbol", abi_symbol)
            .fix("rebuild the plugin from this apsi's sources (`cargo build --release -p apsi-native-llvm`), or point APSI_NATIVE_PLUGIN at a matching one");
    }
    let cpu_sym = lib.symbol("LLVMGetHostCPUName");
    let llvm_file = cpu_sym.and_then(file_of);
    let llvm_version = llvm_file.as_deref().and_then(llvm_version_of);
    // SAFETY: LLVM-C: `char *LLVMGetHostCPUName(void)`, freed with `void LLVMDisposeMessage(char *)`.
    let host_cpu = cpu_sym.map(|p| unsafe {
        let f: unsafe extern "C" fn() -> *mut c_char = std::mem::transmute(p);
        let s = f();
        if s.is_null() {
            return String::new();
        }
        let out = CStr::from_ptr(s).to_string_lossy().into_owned();
        if let Some(d) = lib.symbol("LLVMDisposeMessage") {
            let dispose: unsafe extern "C" fn(*mut c_char) = std::mem::transmute(d);
            dispose(s);
        }
        out
    });
    let mut summary = format!("LLVM {}", llvm_version.as_deref().unwrap_or("(version unknown)"));
    if let Some(c) = host_cpu.as_deref().filter(|c| !c.is_empty()) {
        summary.push_str(&format!(", compiling for {c}"));
    }
    summary.push_str(&format!(" ({shown})"));
    let note = (host_cpu.as_deref() == Some("generic")).then_some(
        "this LLVM does not know the processor by name; code is still compiled for the CPU features it detects",
    );
    Check::ok("native", summary)
        .detail_opt("note", note)
        .detail("found", true)
        .detail("path", shown)
        .detail_opt("llvm_version", llvm_version)
        .detail_opt("llvm_library", llvm_file)
        .detail_opt("host_cpu", host_cpu)
}

/// `…/libLLVM-14.so.1` → `14`; the real file behind it (`libLLVM-14.0.6.so.1`) gives the full version.
pub fn llvm_version_of(file: &str) -> Option<String> {
    let real = std::fs::canonicalize(file).ok().map(|p| p.display().to_string());
    [real.as_deref(), Some(file)]
        .into_iter()
        .flatten()
        .filter_map(version_in_name)
        .max_by_key(|v| v.len())
}

fn version_in_name(path: &str) -> Option<String> {
    let name = path.rsplit('/').next()?;
    let rest = name
        .strip_prefix("libLLVM-")
        .or_else(|| name.strip_prefix("libLLVM.so."))?;
    let v = rest.split(".so").next()?;
    (!v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.')).then(|| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llvm_versions_from_file_names() {
        assert_eq!(
            version_in_name("/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1").as_deref(),
            Some("14")
        );
        assert_eq!(
            version_in_name("/usr/lib/libLLVM-14.0.6.so.1").as_deref(),
            Some("14.0.6")
        );
        assert_eq!(version_in_name("/usr/lib/libLLVM.so.18.1").as_deref(), Some("18.1"));
        assert_eq!(version_in_name("/usr/lib/libc.so.6"), None);
    }

    #[test]
    fn a_missing_plugin_is_a_warning_with_the_fix() {
        let c = probe(
            &["/nonexistent/libapsi_native_llvm.so".into()],
            "apsi_native_compile_v1",
            "build it",
        );
        assert_eq!(c.status, crate::Status::Warn);
        assert_eq!(c.fix.as_deref(), Some("build it"));
    }

    #[test]
    fn a_library_that_is_not_the_plugin_is_an_error() {
        let libc = [
            "/lib/x86_64-linux-gnu/libc.so.6",
            "/usr/lib/x86_64-linux-gnu/libc.so.6",
            "/lib64/libc.so.6",
        ]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file());
        let Some(libc) = libc else { return };
        let c = probe(&[libc], "apsi_native_compile_v1", "build it");
        assert_eq!(c.status, crate::Status::Error);
        assert!(c.summary.contains("not an Apsi native back end"));
    }

    #[test]
    fn a_file_that_does_not_load_is_an_error() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("libapsi_native_llvm.so");
        std::fs::write(&f, b"not an ELF file").unwrap();
        let c = probe(&[f], "apsi_native_compile_v1", "build it");
        assert_eq!(c.status, crate::Status::Error);
        assert!(c.details["error"].as_str().is_some());
    }
}
