//! MT19937 exactly as CPython 3.11's `_randommodule.c` drives it: the
//! seeding (`init_by_array` over the 32-bit words of `abs(n)`, least
//! significant first), 53-bit floats, `getrandbits` and `_randbelow`.

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

/// One Mersenne Twister generator.
#[derive(Clone)]
pub struct Mt {
    state: [u32; N],
    index: usize,
}

impl Mt {
    /// Seeded as CPython's `init_genrand(s)`.
    fn init_genrand(s: u32) -> Mt {
        let mut state = [0u32; N];
        state[0] = s;
        for i in 1..N {
            let prev = state[i - 1];
            state[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        Mt { state, index: N }
    }

    /// Seeded as CPython's `init_by_array(key)`; an empty key counts as `[0]`.
    pub fn from_key(key: &[u32]) -> Mt {
        let key = if key.is_empty() { &[0u32][..] } else { key };
        let mut g = Mt::init_genrand(19_650_218);
        let mt = &mut g.state;
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            let prev = mt[i - 1];
            mt[i] = (mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = mt[i - 1];
            mt[i] = (mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
        }
        mt[0] = 0x8000_0000;
        g
    }

    /// `seed(n)` for an int: the key is the 32-bit words of `abs(n)`, least
    /// significant first (`[0]` for 0).
    pub fn from_int(n: i64) -> Mt {
        let a = n.unsigned_abs();
        let (lo, hi) = (a as u32, (a >> 32) as u32);
        if hi == 0 {
            Mt::from_key(&[lo])
        } else {
            Mt::from_key(&[lo, hi])
        }
    }

    /// Seeded from the operating system's entropy, as CPython's
    /// `random_seed_urandom` (624 words through `init_by_array`).
    pub fn from_os() -> Mt {
        Mt::from_key(&crate::entropy::words(N))
    }

    fn generate(&mut self) {
        let mt = &mut self.state;
        let mag = |y: u32| if y & 1 == 1 { MATRIX_A } else { 0 };
        for kk in 0..N - M {
            let y = (mt[kk] & UPPER_MASK) | (mt[kk + 1] & LOWER_MASK);
            mt[kk] = mt[kk + M] ^ (y >> 1) ^ mag(y);
        }
        for kk in N - M..N - 1 {
            let y = (mt[kk] & UPPER_MASK) | (mt[kk + 1] & LOWER_MASK);
            mt[kk] = mt[kk + M - N] ^ (y >> 1) ^ mag(y);
        }
        let y = (mt[N - 1] & UPPER_MASK) | (mt[0] & LOWER_MASK);
        mt[N - 1] = mt[M - 1] ^ (y >> 1) ^ mag(y);
        self.index = 0;
    }

    /// The next 32-bit output (`genrand_uint32`).
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.generate();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `random()`: 53 bits from two outputs, in `[0, 1)`.
    pub fn random(&mut self) -> f64 {
        let a = self.next_u32() >> 5;
        let b = self.next_u32() >> 6;
        (f64::from(a) * 67_108_864.0 + f64::from(b)) * (1.0 / 9_007_199_254_740_992.0)
    }

    /// `getrandbits(k)` for `k <= 64`: 32-bit words from the least
    /// significant, the last one taking the top bits of its output.
    pub fn getrandbits(&mut self, k: u32) -> u64 {
        debug_assert!(k <= 64);
        if k == 0 {
            return 0;
        }
        if k <= 32 {
            return u64::from(self.next_u32() >> (32 - k));
        }
        let lo = u64::from(self.next_u32());
        let rest = k - 32;
        let hi = u64::from(self.next_u32() >> (32 - rest));
        lo | (hi << 32)
    }

    /// `_randbelow(n)` for `n >= 1`: `getrandbits(n.bit_length())` until it
    /// is below `n`.
    pub fn randbelow(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        let k = 64 - n.leading_zeros();
        loop {
            let r = self.getrandbits(k);
            if r < n {
                return r;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_cpython_for_seed_42() {
        // random.seed(42); random.random() == 0.6394267984578837
        let mut g = Mt::from_int(42);
        assert_eq!(g.random(), 0.6394267984578837);
        // then randrange(1000) == 25 (CPython's docs example)
        assert_eq!(g.randbelow(1000), 25);
    }

    #[test]
    fn reference_outputs_of_init_by_array() {
        // The MT19937 reference (mt19937ar.c) with key {0x123, 0x234, 0x345, 0x456}.
        let mut g = Mt::from_key(&[0x123, 0x234, 0x345, 0x456]);
        let first: Vec<u32> = (0..5).map(|_| g.next_u32()).collect();
        assert_eq!(first, [1067595299, 955945823, 477289528, 4107218783, 4228976476]);
    }

    #[test]
    fn sign_of_the_seed_does_not_matter_and_zero_is_one_word() {
        let (mut a, mut b) = (Mt::from_int(-7), Mt::from_int(7));
        assert_eq!(a.next_u32(), b.next_u32());
        let mut z = Mt::from_int(0);
        assert_eq!(z.random(), 0.8444218515250481);
        let mut big = Mt::from_int(i64::MIN);
        let _ = big.getrandbits(64);
    }
}
