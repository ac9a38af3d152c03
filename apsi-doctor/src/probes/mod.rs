//! The probes. Each is a plain function from what it needs to a [`Check`](crate::Check);
//! [`crate::system_probes`] wraps the machine-wide ones with their time limits.

pub mod blas;
pub mod build;
pub mod cache;
pub mod cpu;
pub mod disk;
pub mod gpu;
pub mod memory;
pub mod native;
pub mod os;
pub mod python;
pub mod simd;
