//! GEMM: which library `matmul` runs, chosen the way the core chooses
//! (`apsi_core::tensor::matmul::choose`): with AVX-512F, the system OpenBLAS
//! (loaded the way the core loads it: `$APSI_BLAS_LIB`, else
//! `libopenblas.so.0`) takes the products under 16^3 multiply-adds, and those
//! up to 100^3 where it runs its AVX-512 small-matrix kernels (0.3.17 and
//! later on a SkylakeX-class core), always on one thread; the built-in `gemm`
//! crate's AVX-512 kernels take the rest. Without AVX-512 the crate's AVX2
//! kernels take every product (OpenBLAS's bits depend on its thread count).
//! `APSI_MATMUL=gemm|openblas` forces one. Reports OpenBLAS's build and
//! thread count too.

use crate::check::Check;
use crate::dl::Library;
use std::ffi::{c_char, c_int, CStr};

/// `blas_feature`: whether this apsi was built with the `blas` feature.
/// `apsi_threads`: the thread count Apsi gives BLAS (its own default).
/// `small_kernels`: the core's rule for whether an OpenBLAS runs its AVX-512
/// small-matrix kernels, from its `openblas_get_config()` and
/// `openblas_get_corename()` (`apsi_core::tensor::cblas::runs_small_kernels`).
pub fn probe(blas_feature: bool, apsi_threads: usize, small_kernels: SmallKernels) -> Check {
    let forced = std::env::var("APSI_MATMUL").ok().and_then(|v| backend_named(&v));
    probe_with(
        blas_feature,
        apsi_threads,
        super::simd::cpuid_has("avx512f"),
        forced,
        small_kernels,
    )
}

/// See [`probe`]'s `small_kernels`.
pub type SmallKernels = fn(config: &str, core: &str) -> bool;

/// The backend `APSI_MATMUL` names (`gemm` or `openblas`, any case); any
/// other value leaves the choice to the core, as the core reads it.
fn backend_named(v: &str) -> Option<&'static str> {
    match v.to_ascii_lowercase().as_str() {
        "gemm" => Some("gemm"),
        "openblas" => Some("openblas"),
        _ => None,
    }
}

/// Which library runs the largest products: `"gemm"` unless `APSI_MATMUL`
/// forces OpenBLAS (the core's rule, see the module docs).
fn large_products(forced: Option<&'static str>) -> &'static str {
    forced.unwrap_or("gemm")
}

fn probe_with(
    blas_feature: bool,
    apsi_threads: usize,
    avx512: bool,
    forced: Option<&'static str>,
    small_kernels: SmallKernels,
) -> Check {
    let large = large_products(forced);
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
        // The short name ("OpenBLAS 0.3.21"); the full config is in the details.
        let short = blas.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
        let small = avx512 && small_kernels(config.as_deref().unwrap_or(""), core.as_deref().unwrap_or(""));
        let summary = match (forced, avx512) {
            (Some("gemm"), _) => format!(
                "matmul uses the built-in gemm crate for every product (APSI_MATMUL=gemm), {apsi_threads} threads"
            ),
            (Some(_), _) => format!("matmul uses {blas} for every product (APSI_MATMUL=openblas), {apsi_threads} threads"),
            (None, true) if small => format!(
                "matmul uses {short}'s AVX-512 small-matrix kernels ({}) up to 100x100x100 on one thread, and the built-in gemm crate's AVX-512 kernels above on {apsi_threads} threads",
                core.as_deref().unwrap_or("")
            ),
            (None, true) => format!("matmul uses the built-in gemm crate's AVX-512 kernels from 16x16x16 up and {short} below, {apsi_threads} threads"),
            (None, false) => format!("matmul uses the built-in gemm crate's AVX2 kernels for every product (no AVX-512 here; {short} is not needed), {apsi_threads} threads"),
        };
        return Check::ok("gemm", summary)
            .detail(
                "large_products",
                match (large, avx512) {
                    ("gemm", true) => "gemm crate (AVX-512)",
                    ("gemm", false) => "gemm crate (AVX2)",
                    _ => "openblas",
                },
            )
            .detail("small_kernels", small)
            .detail_opt("forced", forced.map(|f| format!("APSI_MATMUL={f}")))
            .detail("library", n.as_str())
            .detail_opt("path", path)
            .detail_opt("config", config)
            .detail_opt("core", core)
            .detail_opt("library_default_threads", threads)
            .detail("threads", apsi_threads)
            .detail_opt("env", env_threads);
    }
    if !avx512 && large == "gemm" {
        // Without AVX-512 the crate runs every product: OpenBLAS is not needed.
        return Check::ok("gemm", format!("matmul uses the built-in gemm crate's AVX2 kernels for every product (no AVX-512 here, so OpenBLAS is not needed), {apsi_threads} threads"))
            .detail("large_products", "gemm crate (AVX2)")
            .detail("library", "gemm crate")
            .detail("tried", names)
            .detail("errors", errors)
            .detail("threads", apsi_threads);
    }
    Check::warn("gemm", "OpenBLAS was not found: matmul uses the built-in gemm crate for every product")
        .detail(
            "large_products",
            if avx512 {
                "gemm crate (AVX-512)"
            } else {
                "gemm crate (AVX2)"
            },
        )
        .detail("library", "gemm crate")
        .detail("tried", names)
        .detail("errors", errors)
        .detail("threads", apsi_threads)
        .fix("install OpenBLAS for faster products up to 100x100x100 (its AVX-512 small-matrix kernels; Debian/Ubuntu: `apt install libopenblas0`), or set APSI_BLAS_LIB to a CBLAS library")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_small_kernels(_: &str, _: &str) -> bool {
        false
    }

    #[test]
    fn without_the_feature_the_gemm_crate_is_used() {
        let c = probe(false, 3, no_small_kernels);
        assert_eq!(c.status, crate::Status::Ok);
        assert_eq!(c.details["library"], "gemm crate");
        assert_eq!(c.details["threads"], 3);
    }

    #[test]
    fn large_products_follow_the_cores_rule() {
        let forced = backend_named;
        assert_eq!(large_products(None), "gemm");
        assert_eq!(large_products(forced("OpenBLAS")), "openblas");
        assert_eq!(large_products(forced("gemm")), "gemm");
        assert_eq!(large_products(forced("nonsense")), "gemm");
    }

    #[test]
    fn the_summary_names_the_gemm_crate_where_avx512_runs_it() {
        let c = probe_with(true, 2, true, None, no_small_kernels);
        assert_eq!(c.details["large_products"], "gemm crate (AVX-512)", "{c:?}");
        assert!(c.summary.contains("gemm crate"), "{c:?}");
        let c = probe_with(true, 2, false, Some("gemm"), no_small_kernels);
        assert!(
            c.summary.contains("APSI_MATMUL=gemm") || c.details["library"] == "gemm crate",
            "{c:?}"
        );
    }

    #[test]
    fn the_summary_names_openblass_small_kernels_where_they_run() {
        let c = probe_with(true, 2, true, None, |_, _| true);
        if c.details["library"] == "gemm crate" {
            eprintln!("skipped: no OpenBLAS library to load");
            return;
        }
        assert!(
            c.summary.contains("small-matrix kernels") && c.summary.contains("100x100x100"),
            "{c:?}"
        );
        assert_eq!(c.details["small_kernels"], true, "{c:?}");
        // Without AVX-512 the crate runs every product, whatever OpenBLAS has.
        let c = probe_with(true, 2, false, None, |_, _| true);
        assert!(c.summary.contains("AVX2 kernels for every product"), "{c:?}");
    }

    #[test]
    fn with_the_feature_a_library_or_a_fix() {
        let c = probe(true, 2, no_small_kernels);
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
