//! `seed`, `rand`, `randn`: counter-based, so element i of a draw depends
//! only on the seed and its position in the stream; the same seed gives the
//! same numbers on every run and with any number of threads.

use parking_lot::Mutex;
use rayon::prelude::*;

struct State {
    seed: u64,
    counter: u64,
}

static STATE: Mutex<State> = Mutex::new(State {
    seed: 0x5eed_a951,
    counter: 0,
});

pub fn seed(s: u64) {
    let mut st = STATE.lock();
    st.seed = s;
    st.counter = 0;
}

/// Reserves `n` positions of the stream; returns (seed, first position).
fn reserve(n: u64) -> (u64, u64) {
    // The numbers are made on the kernels' pool.
    crate::par::kernel_pool::ready();
    let mut st = STATE.lock();
    let start = st.counter;
    st.counter = st.counter.wrapping_add(n);
    (st.seed, start)
}

/// SplitMix64's finaliser: a bijection of `u64` whose outputs look
/// independent for consecutive inputs (modules use it for their own seeded
/// streams, e.g. `use data`'s shuffles).
#[inline]
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[inline]
fn bits(seed: u64, pos: u64) -> u64 {
    mix(mix(seed ^ 0x9e37_79b9_7f4a_7c15).wrapping_add(pos.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
}

/// A uniform float in [0, 1) with 53 random bits.
#[inline]
fn unit(seed: u64, pos: u64) -> f64 {
    (bits(seed, pos) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

pub fn uniform(n: usize) -> Vec<f64> {
    uniform_as::<f64>(n)
}

/// Uniform numbers made directly in the element type (no f64 copy of a big tensor).
pub fn uniform_as<T: super::storage::Scalar>(n: usize) -> Vec<T> {
    let (s, start) = reserve(n as u64);
    // Rounding to a narrower float must not reach 1.0: clamp to the largest value below it.
    let below_one = match T::DTYPE {
        super::dtype::DType::F32 => 1.0 - 2f64.powi(-24),
        super::dtype::DType::F16 => 1.0 - 2f64.powi(-11),
        super::dtype::DType::BF16 => 1.0 - 2f64.powi(-8),
        _ => 1.0 - 2f64.powi(-53),
    };
    (0..n)
        .into_par_iter()
        .with_min_len(1 << 14)
        .map(|i| {
            let v = T::from_f64(unit(s, start + i as u64));
            if v.to_f64() >= 1.0 {
                T::from_f64(below_one)
            } else {
                v
            }
        })
        .collect()
}

/// Standard normal numbers (Box–Muller on two stream positions per number).
pub fn normal(n: usize) -> Vec<f64> {
    normal_as::<f64>(n)
}

/// Normal numbers made directly in the element type.
pub fn normal_as<T: super::storage::Scalar>(n: usize) -> Vec<T> {
    let (s, start) = reserve(2 * n as u64);
    (0..n)
        .into_par_iter()
        .with_min_len(1 << 14)
        .map(|i| {
            let i = i as u64;
            let u1 = 1.0 - unit(s, start + 2 * i);
            let u2 = unit(s, start + 2 * i + 1);
            T::from_f64((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_numbers_on_any_thread_count() {
        seed(7);
        let a = uniform(100_000);
        seed(7);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build();
        let b = match pool {
            Ok(p) => p.install(|| uniform(100_000)),
            Err(_) => uniform(100_000),
        };
        assert_eq!(a, b);
        assert!(a.iter().all(|&x| (0.0..1.0).contains(&x)));
        let m = normal(10_000);
        let mean = m.iter().sum::<f64>() / 1e4;
        assert!(mean.abs() < 0.05);
    }
}
