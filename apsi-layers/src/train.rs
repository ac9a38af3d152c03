//! Training mode and the generator of the running `fit` (LAYERS.md
//! "Training mode", "Determinism").
//!
//! Calling a model computes in inference mode; `fit` and `with training():`
//! switch to training mode for the code they run (Dropout draws masks then).
//! Masks come from `fit`'s own generator while a `fit` runs, else from the
//! prelude generator (`seed(n)`). Both are per thread: a model runs on the
//! thread that calls it.

use apsi_core::api::tensor::{mix, uniform, DType};
use apsi_core::api::{ApsiObject, Caller, Protocols, VResult, Value};
use std::cell::Cell;

thread_local! {
    static TRAINING: Cell<bool> = const { Cell::new(false) };
    /// The format matmul and convolution operands are rounded to under
    /// mixed precision (`precision="bf16"`/`"fp16"`), when one is on.
    static AUTOCAST: Cell<Option<DType>> = const { Cell::new(None) };
    /// The state of the running `fit`'s generator, when one runs.
    static FIT_RNG: Cell<Option<u64>> = const { Cell::new(None) };
}

pub fn training() -> bool {
    TRAINING.with(|t| t.get())
}

/// Sets the mode until dropped (then restores the one before).
pub struct Mode {
    was: bool,
}

impl Mode {
    pub fn training() -> Mode {
        Mode {
            was: TRAINING.with(|t| t.replace(true)),
        }
    }
    pub fn inference() -> Mode {
        Mode {
            was: TRAINING.with(|t| t.replace(false)),
        }
    }
}

impl Drop for Mode {
    fn drop(&mut self) {
        TRAINING.with(|t| t.set(self.was));
    }
}

/// The mixed-precision format of the running forward pass, if any.
pub fn autocast() -> Option<DType> {
    AUTOCAST.with(|a| a.get())
}

/// Rounds matmul and convolution operands to `format` until dropped (then
/// restores what was before).
pub struct Autocast {
    was: Option<DType>,
}

impl Autocast {
    pub fn new(format: Option<DType>) -> Autocast {
        Autocast {
            was: AUTOCAST.with(|a| a.replace(format)),
        }
    }
}

impl Drop for Autocast {
    fn drop(&mut self) {
        AUTOCAST.with(|a| a.set(self.was));
    }
}

/// A small counter-based generator (SplitMix64): the same numbers for the
/// same seed on every machine and thread count.
#[derive(Clone, Copy)]
pub struct Rng(pub u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(mix(seed ^ 0x6c61_7965_7273_0001))
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }
    /// Uniform in [0, 1) with 53 random bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// Uniform in `0..n` (n > 0), without modulo bias.
    pub fn below(&mut self, n: usize) -> usize {
        let n = n as u64;
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let r = self.next_u64();
            if r < zone {
                return (r % n) as usize;
            }
        }
    }
    /// A Fisher–Yates shuffle of `v`.
    pub fn shuffle(&mut self, v: &mut [usize]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

/// Makes `rng` the generator Dropout draws from until dropped; the
/// state it reached is written back to `out` on drop.
pub struct FitRng<'a> {
    was: Option<u64>,
    out: &'a mut Rng,
}

impl<'a> FitRng<'a> {
    pub fn install(out: &'a mut Rng) -> FitRng<'a> {
        let was = FIT_RNG.with(|r| r.replace(Some(out.0)));
        FitRng { was, out }
    }
}

impl Drop for FitRng<'_> {
    fn drop(&mut self) {
        if let Some(s) = FIT_RNG.with(|r| r.replace(self.was)) {
            self.out.0 = s;
        }
    }
}

/// `n` uniform numbers for a Dropout mask.
pub fn dropout_uniform(n: usize) -> Vec<f64> {
    let state = FIT_RNG.with(|r| r.get());
    match state {
        Some(s) => {
            let mut g = Rng(s);
            let v = (0..n).map(|_| g.uniform()).collect();
            FIT_RNG.with(|r| r.set(Some(g.0)));
            v
        }
        None => uniform(n),
    }
}

/// `with training():` — the block runs in training mode (the modes it
/// replaced are restored on exit, innermost first).
pub struct TrainingCtx(parking_lot::Mutex<Vec<bool>>);

impl ApsiObject for TrainingCtx {
    fn type_name(&self) -> &str {
        "training"
    }
    fn to_str(&self) -> String {
        "<training mode>".to_string()
    }
    fn protocols(&self) -> Protocols {
        let mut p = Protocols::NONE;
        p.context = true;
        p
    }
    fn enter(&self, _this: &Value, _c: &mut dyn Caller) -> VResult<Value> {
        self.0.lock().push(TRAINING.with(|t| t.replace(true)));
        Ok(Value::None)
    }
    fn exit(&self, _this: &Value, _c: &mut dyn Caller, _error: Option<&Value>) -> VResult<bool> {
        let was = self.0.lock().pop().unwrap_or(false);
        TRAINING.with(|t| t.set(was));
        Ok(false)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `training()`: a context manager for training mode.
pub fn f_training(_c: &mut dyn Caller, args: &[Value], kw: apsi_core::api::Kwargs) -> VResult<Value> {
    apsi_core::api::Args::new("training", args, kw, 0, &[])?;
    Ok(apsi_core::api::object(TrainingCtx(parking_lot::Mutex::new(Vec::new()))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_is_a_fixed_function_of_its_seed() {
        let (mut a, mut b, mut c) = (Rng::new(7), Rng::new(7), Rng::new(8));
        let xs: Vec<u64> = (0..5).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..5).map(|_| b.next_u64()).collect();
        let zs: Vec<u64> = (0..5).map(|_| c.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
        for _ in 0..1000 {
            let u = a.uniform();
            assert!((0.0..1.0).contains(&u));
            assert!(a.below(3) < 3);
        }
    }

    #[test]
    fn a_shuffle_is_a_permutation_and_moves_things() {
        let mut g = Rng::new(1);
        let mut v: Vec<usize> = (0..100).collect();
        g.shuffle(&mut v);
        let mut s = v.clone();
        s.sort_unstable();
        assert_eq!(s, (0..100).collect::<Vec<_>>());
        assert_ne!(v, s);
        let mut empty: Vec<usize> = vec![];
        g.shuffle(&mut empty);
    }

    #[test]
    fn modes_nest_and_restore() {
        assert!(!training());
        {
            let _t = Mode::training();
            assert!(training());
            {
                let _i = Mode::inference();
                assert!(!training());
            }
            assert!(training());
        }
        assert!(!training());
    }

    #[test]
    fn dropout_draws_from_the_fit_generator_while_one_is_installed() {
        let mut g = Rng::new(3);
        let first = {
            let _r = FitRng::install(&mut g);
            dropout_uniform(4)
        };
        let mut h = Rng::new(3);
        let expect: Vec<f64> = (0..4).map(|_| h.uniform()).collect();
        assert_eq!(first, expect);
        // the state it reached was written back
        assert_eq!(g.0, h.0);
    }
}
