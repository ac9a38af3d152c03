//! `apsi-doctor`: what this machine can do for Apsi, found by read-only
//! probes that run in parallel, each with a time limit.
//!
//! The crate holds the machine-wide probes ([`system_probes`]: OS, CPU and
//! cgroup quota, SIMD, memory, disk, NVIDIA GPUs, Python/PyTorch, the cache
//! key, the compile cache) and the generic ones the CLI feeds with what only
//! it knows ([`probes::build`], [`probes::native`], [`probes::blas`]); the CLI
//! adds its package checks (installed backends, registry) and renders the
//! result with [`render`]. Nothing here writes anything.

pub mod check;
pub mod dl;
pub mod env;
mod fmt;
pub mod probes;
pub mod render;
pub mod runner;
pub mod subprocess;

pub use check::{Check, Status};
pub use env::Env;
pub use runner::{run_all, DoctorFailed, Probe};

use std::sync::Arc;
use std::time::Duration;

/// This crate's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The time limit of probes that only read files.
pub const FILE_LIMIT: Duration = Duration::from_secs(2);
/// The time limit of probes that ask a driver or run a program.
pub const PROGRAM_LIMIT: Duration = Duration::from_secs(10);

/// The machine-wide probes, in report order: os, cpu, simd, memory, disk,
/// gpu, python, cache-key, compile-cache.
pub fn system_probes(env: &Arc<Env>) -> Vec<Probe> {
    let e = |env: &Arc<Env>| Arc::clone(env);
    let (e1, e2, e3, e4, e5, e6, e7, e8) = (e(env), e(env), e(env), e(env), e(env), e(env), e(env), e(env));
    vec![
        Probe::new("os", FILE_LIMIT, move || probes::os::probe(&e1)),
        Probe::new("cpu", FILE_LIMIT, move || probes::cpu::probe(&e2)),
        Probe::new("simd", FILE_LIMIT, move || probes::simd::probe(&e3)),
        Probe::new("memory", FILE_LIMIT, move || probes::memory::probe(&e4)),
        Probe::new("disk", FILE_LIMIT, move || probes::disk::probe(&e5)),
        Probe::new("gpu", PROGRAM_LIMIT, move || probes::gpu::probe(&e6)),
        Probe::new("python", PROGRAM_LIMIT, {
            let env = Arc::clone(env);
            move || {
                probes::python::probe(
                    "python3",
                    PROGRAM_LIMIT.saturating_sub(Duration::from_millis(500)),
                    env.home.as_deref(),
                )
            }
        }),
        Probe::new("cache-key", FILE_LIMIT, move || probes::cache::key_probe(&e7)),
        Probe::new("compile-cache", FILE_LIMIT, move || {
            probes::cache::compile_cache_probe(&e8)
        }),
    ]
}
