//! GEMM: whether `matmul` will use the system OpenBLAS (loaded the way the
//! core loads it: `$APSI_BLAS_LIB`, else `libopenblas.so.0`), its build and
//! thread count, or the built-in `gemm` crate.

use crate::check::Check;
use crate::dl::Library;
use std::ffi::{c_char, c_int, CStr};

/// `blas_feature`: whether this apsi was built with the `blas` feature.
/// `apsi_threads`: the thread count Apsi gives BLAS (its own default).
pub fn probe(blas_feature: bool, apsi_threads: usize) -> Check {
    let env_threads = ["OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"].iter().find_map(|k| {
        std::env::var(k)
            .ok()
            .filter(|v| !v.is_empty())
            .map(|v| format!("{k}={v}"))
    });
    if !blas_feature {
        return Check::ok("gemm", format!("matmul uses the built-in gemm crate ({apsi_threads} threads); this apsi was built without the `blas` feature"))
            .detail("library", "gemm crate")
            .detail("threads", apsi_threads);
    }
    let names: Vec<String> = match std::env::var("APSI_BLAS_LIB") {
        Ok(p) if !p.is_empty() => vec![p],
        _ => vec!["libopenblas.so.0".into(), "libopenblas.so".into()],
    };
    let mut errors = Vec::new();
    for n in &names {
        let lib = match Library::open(n) {
            Ok(l) => l,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        if lib.symbol("cblas_dgemm").is_none() {
            errors.push(format!("{n} has no cblas_dgemm"));
            continue;
        }
        let path = lib.symbol("cblas_dgemm").and_then(crate::dl::file_of);
        // SAFETY: OpenBLAS's documented signatures: `int openblas_get_num_threads(void)`, `char* openblas_get_config(void)`.
        let (threads, config, core) = unsafe {
            let t = lib.symbol("openblas_get_num_threads").map(|p| {
                let f: unsafe extern "C" fn() -> c_int = std::mem::transmute(p);
                f()
            });
            let text = |sym: &str| {
                lib.symbol(sym).and_then(|p| {
                    let f: unsafe extern "C" fn() -> *const c_char = std::mem::transmute(p);
                    let s = f();
                    (!s.is_null()).then(|| CStr::from_ptr(s).to_string_lossy().trim().to_string())
                })
            };
            (t, text("openblas_get_config"), text("openblas_get_corename"))
        };
        let mut summary = format!("matmul uses {}", config.clone().unwrap_or_else(|| n.clone()));
        if let Some(c) = &core {
            summary.push_str(&format!(" (kernels for {c})"));
        }
        summary.push_str(&format!(", {apsi_threads} threads"));
        return Check::ok("gemm", summary)
            .detail("library", n.as_str())
            .detail_opt("path", path)
            .detail_opt("config", config)
            .detail_opt("core", core)
            .detail_opt("library_default_threads", threads)
            .detail("threads", apsi_threads)
            .detail_opt("env", env_threads);
    }
    Check::warn("gemm", "OpenBLAS was not found: matmul falls back to the built-in gemm crate")
        .detail("library", "gemm crate")
        .detail("tried", names)
        .detail("errors", errors)
        .detail("threads", apsi_threads)
        .fix("install OpenBLAS for faster large matrix products (Debian/Ubuntu: `apt install libopenblas0`), or set APSI_BLAS_LIB to a CBLAS library")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_the_feature_the_gemm_crate_is_used() {
        let c = probe(false, 3);
        assert_eq!(c.status, crate::Status::Ok);
        assert_eq!(c.details["library"], "gemm crate");
        assert_eq!(c.details["threads"], 3);
    }

    #[test]
    fn with_the_feature_a_library_or_a_fix() {
        let c = probe(true, 2);
        match c.status {
            crate::Status::Ok => assert!(c.details["library"].as_str().unwrap().contains("blas"), "{c:?}"),
            crate::Status::Warn => assert!(c.fix.is_some()),
            s => panic!("unexpected {s:?}"),
        }
    }
}
