//! The float element types kernels compute in (f64, and f32 for f32/f16/bf16).

use super::storage::Scalar;

pub trait Real:
    Scalar
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
    + std::iter::Sum
{
    const ZERO: Self;
    const ONE: Self;
    const INF: Self;
    fn sqrt(self) -> Self;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn ln_1p(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn tan(self) -> Self;
    fn tanh(self) -> Self;
    fn erf(self) -> Self;
    fn floor(self) -> Self;
    fn ceil(self) -> Self;
    fn round_even(self) -> Self;
    fn abs(self) -> Self;
    fn powf(self, e: Self) -> Self;
    fn is_nan(self) -> bool;
    fn is_infinite(self) -> bool;
    fn fmod(self, b: Self) -> Self;
    /// `vmath::apply` on a slice of this type (its vectorised `exp`, `log`,
    /// `log1p`, `sigmoid`).
    fn vmath(f: super::vmath::VFn, src: &[Self], dst: &mut [std::mem::MaybeUninit<Self>]);
    fn sigmoid(self) -> Self {
        if self >= Self::ZERO {
            Self::ONE / (Self::ONE + (-self).exp())
        } else {
            let e = self.exp();
            e / (Self::ONE + e)
        }
    }
    fn sign(self) -> Self {
        if self.is_nan() || self == Self::ZERO {
            self
        } else if self > Self::ZERO {
            Self::ONE
        } else {
            -Self::ONE
        }
    }
    /// Python/NumPy floor modulo: the result has the sign of `b` (a zero
    /// too: `0.0 % -inf == -0.0`).
    fn pymod(self, b: Self) -> Self {
        let r = self.fmod(b);
        if r == Self::ZERO {
            if b < Self::ZERO {
                -Self::ZERO
            } else {
                Self::ZERO
            }
        } else if (r < Self::ZERO) != (b < Self::ZERO) {
            r + b
        } else {
            r
        }
    }
    /// Floor division as Python's float `//` (and NumPy's) computes it:
    /// from the C remainder, so an infinite divisor gives -1, 0 or a
    /// signed 0 (`1.0 // -inf == -1.0`), never nan.
    fn pyfloordiv(self, b: Self) -> Self {
        if b == Self::ZERO {
            return self / b;
        }
        let m = self.fmod(b);
        let mut div = (self - m) / b;
        if m != Self::ZERO && ((b < Self::ZERO) != (m < Self::ZERO)) {
            div = div - Self::ONE;
        }
        if div != Self::ZERO {
            let f = div.floor();
            if div - f > Self::from_f64(0.5) {
                f + Self::ONE
            } else {
                f
            }
        } else {
            // A zero with the sign of the true quotient.
            Self::ZERO * (self / b)
        }
    }
}

macro_rules! real_impl {
    ($t:ty, $erf:path) => {
        impl Real for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const INF: Self = <$t>::INFINITY;
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            #[inline(always)]
            fn ln_1p(self) -> Self {
                <$t>::ln_1p(self)
            }
            #[inline(always)]
            fn sin(self) -> Self {
                <$t>::sin(self)
            }
            #[inline(always)]
            fn cos(self) -> Self {
                <$t>::cos(self)
            }
            #[inline(always)]
            fn tan(self) -> Self {
                <$t>::tan(self)
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                <$t>::tanh(self)
            }
            #[inline(always)]
            fn erf(self) -> Self {
                $erf(self)
            }
            #[inline(always)]
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                <$t>::ceil(self)
            }
            #[inline(always)]
            fn round_even(self) -> Self {
                <$t>::round_ties_even(self)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn powf(self, e: Self) -> Self {
                <$t>::powf(self, e)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn is_infinite(self) -> bool {
                <$t>::is_infinite(self)
            }
            #[inline(always)]
            fn fmod(self, b: Self) -> Self {
                self % b
            }
            #[inline(always)]
            fn vmath(f: super::vmath::VFn, src: &[Self], dst: &mut [std::mem::MaybeUninit<Self>]) {
                super::vmath::apply(f, src, dst)
            }
        }
    };
}

real_impl!(f64, libm::erf);
real_impl!(f32, libm::erff);
