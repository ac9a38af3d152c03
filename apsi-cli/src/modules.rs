//! The `use` modules compiled into this binary (chosen by cargo feature).

use apsi_core::module::ModuleDescriptor;

/// Every optional cargo feature of `apsi` and whether this build has it.
pub const FEATURES: &[(&str, bool)] = &[
    ("parallel", cfg!(feature = "parallel")),
    ("precision", cfg!(feature = "precision")),
    ("data", cfg!(feature = "data")),
    ("native", cfg!(feature = "native")),
    ("pkg", cfg!(feature = "pkg")),
    ("blas", cfg!(feature = "blas")),
    ("python", cfg!(feature = "python")),
    ("math", cfg!(feature = "math")),
    ("random", cfg!(feature = "random")),
];

/// Every compiled-in module, freshly described.
pub fn compiled_in() -> Vec<ModuleDescriptor> {
    #[allow(unused_mut, clippy::vec_init_then_push)] // each push is behind its own cargo feature
    let mut out = Vec::new();
    #[cfg(feature = "parallel")]
    out.push(apsi_parallel::module());
    #[cfg(feature = "precision")]
    out.push(apsi_precision::module());
    #[cfg(feature = "native")]
    out.push(apsi_native::module());
    #[cfg(feature = "data")]
    out.push(apsi_data::module());
    #[cfg(feature = "python")]
    out.push(apsi_python::module());
    #[cfg(feature = "math")]
    out.push(apsi_math::module());
    #[cfg(feature = "random")]
    out.push(apsi_random::module());
    out
}

/// Hands the permissions given on the command line (`--allow-python`, …)
/// to the modules that check them again at run time.
pub fn grant(allowed: &[String]) {
    let _has = |cap: &str| allowed.iter().any(|a| a == cap || a == "all");
    #[cfg(feature = "python")]
    apsi_python::allow(_has("python"));
}
