//! Hex and SHA-256 helpers (shared with the backend loader, which checks
//! installed files without this crate's network code).

pub use apsi_backend::digest::*;
