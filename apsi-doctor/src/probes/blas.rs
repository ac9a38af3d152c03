//! GEMM: which library `matmul` runs, chosen the way the core chooses
//! (`apsi_core::tensor::matmul::choose`): with AVX-512F the built-in `gemm`
//! crate's AVX-512 kernels take every product of at least 16^3
//! multiply-adds; the system OpenBLAS (loaded the way the core loads it:
//! `$APSI_BLAS_LIB`, else `libopenblas.so.0`) takes the rest; without
//! AVX-512 the crate's AVX2 kernels take every product (OpenBLAS's bits
//! depend on its thread count, so it only gets one-thread products);
//! `APSI_MATMUL=gemm|openblas` forces one. Reports
//! OpenBLAS's build and thread count too.

use crate::check::Check;
use crate::dl::Library;
use std::ffi::{c_char, c_int, CStr};

/// `blas_feature`: whether this apsi was built with the `blas` feature.
/// `apsi_threads`: the thread count Apsi gives BLAS (its own default).
pub fn probe(blas_feature: bool, apsi_threads: usize) -> Check {
    let forced = std::env::var("APSI_MATMUL").ok().and_then(|v| backend_named(&v));
    probe_with(blas_feature, apsi_threads, super::simd::cpuid_has("avx512f"), forced)
}

/// The backend `APSI_MATMUL` names (`gemm` or `openblas`, any case); any
/// other value leaves the choice to the core, as the core reads it.
fn backend_named(v: &str) -> Option<&'static str> {
    match v.to_ascii_lowercase().as_str() {
        "gemm" => Some("gemm"),
        "openblas" => Some("openblas"),
        _ => None,
    }
}

/// Which library runs the largest products: `"gemm"` or `"openblas"` (the
/// core's rule, see the module docs).
fn large_products(avx512: bool, forced: Option<&'static str>) -> &'static str {
    forced.unwrap_or(if avx512 { "gemm" } else { "openblas" })
}

fn probe_with(blas_feature: bool, apsi_threads: usize, avx512: bool, forced: Option<&'static str>) -> Check {
    let large = large_products(avx512, forced);
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
        let mut blas = config.clone().unwrap_or_else(|| n.clone());
        if let Some(c) = &core {
            blas.push_str(&format!(" (kernels for {c})"));
        }
        let summary = match (large, forced.is_some()) {
            ("gemm", true) => format!(
                "matmul uses the built-in gemm crate for every product (APSI_MATMUL=gemm), {apsi_threads} threads"
            ),
            ("gemm", false) => {
                // The short name ("OpenBLAS 0.3.21"); the full config is in the details.
                let short: Vec<&str> = blas.split_whitespace().take(2).collect();
                format!("matmul uses the built-in gemm crate's AVX-512 kernels from 16x16x16 up and {} below, {apsi_threads} threads", short.join(" "))
            }
            (_, true) => format!("matmul uses {blas} for every product (APSI_MATMUL=openblas), {apsi_threads} threads"),
            _ => format!("matmul uses the built-in gemm crate's AVX2 kernels for every product (no AVX-512 here; {blas} is not needed), {apsi_threads} threads"),
        };
        return Check::ok("gemm", summary)
            .detail(
                "large_products",
                if large == "gemm" {
                    "gemm crate (AVX-512)"
                } else {
                    "openblas"
                },
            )
            .detail_opt("forced", forced.map(|f| format!("APSI_MATMUL={f}")))
            .detail("library", n.as_str())
            .detail_opt("path", path)
            .detail_opt("config", config)
            .detail_opt("core", core)
            .detail_opt("library_default_threads", threads)
            .detail("threads", apsi_threads)
            .detail_opt("env", env_threads);
    }
    if large == "gemm" {
        // Only products under 16^3 would have gone to OpenBLAS: nothing to fix.
        return Check::ok("gemm", format!("matmul uses the built-in gemm crate (AVX-512 kernels from 16x16x16 up; OpenBLAS, for smaller products, was not found), {apsi_threads} threads"))
            .detail("large_products", "gemm crate (AVX-512)")
            .detail("library", "gemm crate")
            .detail("tried", names)
            .detail("errors", errors)
            .detail("threads", apsi_threads);
    }
    Check::warn("gemm", "OpenBLAS was not found: matmul falls back to the built-in gemm crate")
        .detail("large_products", "gemm crate")
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
    fn large_products_follow_the_cores_rule() {
        let forced = backend_named;
        assert_eq!(large_products(true, None), "gemm");
        assert_eq!(large_products(false, None), "openblas");
        assert_eq!(large_products(true, forced("OpenBLAS")), "openblas");
        assert_eq!(large_products(false, forced("gemm")), "gemm");
        assert_eq!(large_products(true, forced("nonsense")), "gemm");
    }

    #[test]
    fn the_summary_names_the_gemm_crate_where_avx512_runs_it() {
        let c = probe_with(true, 2, true, None);
        assert_eq!(c.details["large_products"], "gemm crate (AVX-512)", "{c:?}");
        assert!(c.summary.contains("gemm crate"), "{c:?}");
        let c = probe_with(true, 2, false, Some("gemm"));
        assert!(
            c.summary.contains("APSI_MATMUL=gemm") || c.details["library"] == "gemm crate",
            "{c:?}"
        );
    }

    #[test]
    fn with_the_feature_a_library_or_a_fix() {
        let c = probe(true, 2);
        match c.status {
            crate::Status::Ok => {
                let lib = c.details["library"].as_str().unwrap();
                assert!(lib.contains("blas") || lib == "gemm crate", "{c:?}")
            }
            crate::Status::Warn => assert!(c.fix.is_some()),
            s => panic!("unexpected {s:?}"),
        }
    }
}
