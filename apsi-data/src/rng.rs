//! A small seeded random generator (SplitMix64) for shuffles: the same seed
//! gives the same order on every machine and thread count.

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// A seed for an unseeded shuffle: the clock mixed with a counter.
    pub fn fresh_seed() -> u64 {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        t ^ N.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        apsi_core::api::tensor::mix(self.0)
    }

    /// Uniform in `0..n` (n ≥ 1), without modulo bias worth mentioning (Lemire's multiply).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// A Fisher–Yates permutation of `0..n`.
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
        v
    }
}

/// The seed of epoch `epoch` of a shuffle seeded with `seed`.
pub fn epoch_seed(seed: u64, epoch: u64) -> u64 {
    let mut r = Rng::new(seed ^ epoch.wrapping_mul(0xd1b5_4a32_d192_ed03));
    r.next_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutations_are_permutations_and_repeat_per_seed() {
        let a = Rng::new(7).permutation(100);
        let mut s = a.clone();
        s.sort_unstable();
        assert_eq!(s, (0..100).collect::<Vec<_>>());
        assert_eq!(a, Rng::new(7).permutation(100));
        assert_ne!(a, Rng::new(8).permutation(100));
        assert_ne!(epoch_seed(1, 0), epoch_seed(1, 1));
    }
}
