//! The atomic core: one int (`i64`) or float (`f64`, stored as its bits)
//! updated without a lock. Float updates and checked int adds are
//! compare-and-swap loops, so every update is one atomic step of the value.

use crate::sync::{AtomicI64, AtomicU64, Ordering};

pub enum AtomicNum {
    Int(AtomicI64),
    Float(AtomicU64),
}

/// A number read from or written to an atomic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    Int(i64),
    Float(f64),
}

/// Why an update did not happen.
#[derive(Debug, PartialEq)]
pub enum AtomicError {
    /// An int atomic was given a float.
    NotInt,
    /// An int add overflowed i64.
    Overflow,
}

impl AtomicNum {
    pub fn new(v: Num) -> AtomicNum {
        match v {
            Num::Int(i) => AtomicNum::Int(AtomicI64::new(i)),
            Num::Float(f) => AtomicNum::Float(AtomicU64::new(f.to_bits())),
        }
    }

    pub fn is_float(&self) -> bool {
        matches!(self, AtomicNum::Float(_))
    }

    pub fn load(&self) -> Num {
        match self {
            AtomicNum::Int(a) => Num::Int(a.load(Ordering::SeqCst)),
            AtomicNum::Float(a) => Num::Float(f64::from_bits(a.load(Ordering::SeqCst))),
        }
    }

    fn int_of(v: Num) -> Result<i64, AtomicError> {
        match v {
            Num::Int(i) => Ok(i),
            Num::Float(_) => Err(AtomicError::NotInt),
        }
    }

    fn float_of(v: Num) -> f64 {
        match v {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    pub fn store(&self, v: Num) -> Result<(), AtomicError> {
        match self {
            AtomicNum::Int(a) => a.store(Self::int_of(v)?, Ordering::SeqCst),
            AtomicNum::Float(a) => a.store(Self::float_of(v).to_bits(), Ordering::SeqCst),
        }
        Ok(())
    }

    /// Add `v`; returns the old value.
    pub fn fetch_add(&self, v: Num) -> Result<Num, AtomicError> {
        match self {
            AtomicNum::Int(a) => {
                let d = Self::int_of(v)?;
                let mut cur = a.load(Ordering::SeqCst);
                loop {
                    let new = cur.checked_add(d).ok_or(AtomicError::Overflow)?;
                    match a.compare_exchange_weak(cur, new, Ordering::SeqCst, Ordering::SeqCst) {
                        Ok(old) => return Ok(Num::Int(old)),
                        Err(now) => cur = now,
                    }
                }
            }
            AtomicNum::Float(a) => {
                let d = Self::float_of(v);
                let mut cur = a.load(Ordering::SeqCst);
                loop {
                    let new = (f64::from_bits(cur) + d).to_bits();
                    match a.compare_exchange_weak(cur, new, Ordering::SeqCst, Ordering::SeqCst) {
                        Ok(old) => return Ok(Num::Float(f64::from_bits(old))),
                        Err(now) => cur = now,
                    }
                }
            }
        }
    }

    /// Replace the value with `new` if it equals `expected` (numerically:
    /// `0.0 == -0.0`, a NaN never matches); returns whether it did.
    pub fn compare_exchange(&self, expected: Num, new: Num) -> Result<bool, AtomicError> {
        match self {
            AtomicNum::Int(a) => {
                let new = Self::int_of(new)?;
                let exp = match expected {
                    Num::Int(i) => i,
                    Num::Float(f) => {
                        if f.fract() != 0.0 || !(-9.2e18..=9.2e18).contains(&f) {
                            return Ok(false);
                        }
                        f as i64
                    }
                };
                Ok(a.compare_exchange(exp, new, Ordering::SeqCst, Ordering::SeqCst).is_ok())
            }
            AtomicNum::Float(a) => {
                let exp = Self::float_of(expected);
                let new = Self::float_of(new).to_bits();
                let mut cur = a.load(Ordering::SeqCst);
                loop {
                    if f64::from_bits(cur) != exp {
                        return Ok(false);
                    }
                    match a.compare_exchange_weak(cur, new, Ordering::SeqCst, Ordering::SeqCst) {
                        Ok(_) => return Ok(true),
                        Err(now) => cur = now,
                    }
                }
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn int_and_float_updates() {
        let a = AtomicNum::new(Num::Int(5));
        assert_eq!(a.fetch_add(Num::Int(2)), Ok(Num::Int(5)));
        assert_eq!(a.load(), Num::Int(7));
        assert_eq!(a.fetch_add(Num::Float(1.5)), Err(AtomicError::NotInt));
        assert_eq!(a.compare_exchange(Num::Int(7), Num::Int(9)), Ok(true));
        assert_eq!(a.compare_exchange(Num::Int(7), Num::Int(10)), Ok(false));
        assert_eq!(a.load(), Num::Int(9));
        a.store(Num::Int(i64::MAX)).unwrap();
        assert_eq!(a.fetch_add(Num::Int(1)), Err(AtomicError::Overflow));
        let f = AtomicNum::new(Num::Float(0.5));
        f.fetch_add(Num::Int(1)).unwrap();
        assert_eq!(f.load(), Num::Float(1.5));
        assert_eq!(f.compare_exchange(Num::Int(1), Num::Float(2.0)), Ok(false));
        assert_eq!(f.compare_exchange(Num::Float(1.5), Num::Float(2.0)), Ok(true));
        assert_eq!(f.load(), Num::Float(2.0));
    }

    #[test]
    fn concurrent_adds_are_not_lost() {
        let a = std::sync::Arc::new(AtomicNum::new(Num::Float(0.0)));
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let a = a.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        a.fetch_add(Num::Float(1.0)).unwrap();
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(a.load(), Num::Float(40_000.0));
    }
}
