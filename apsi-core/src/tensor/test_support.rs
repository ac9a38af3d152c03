//! Helpers the tensor tests share (compiled for tests only).

use crate::value::VResult;

/// The value of `r`, or a panic naming the error.
pub fn ok<T>(r: VResult<T>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("unexpected error {}: {}", e.kind, e.message),
    }
}

/// Deterministic pseudo-random numbers in [lo, hi).
pub fn randv(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}
