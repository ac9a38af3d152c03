//! `use math` (LANGUAGE.md §10.12): the names of CPython 3.11's `math`
//! module, with its results. The platform libm computes (as CPython's does);
//! CPython's rules decide special values and errors: a domain error is
//! `ValueError: math domain error`, an overflowing float result
//! `OverflowError: math range error`, an int result past 64 bits an
//! `OverflowError`. `use math` binds only `math` (`namespace_only`), so the
//! prelude's `sqrt`, `floor`, … keep their (elementwise) meaning.
//!
//! - [`floats`]: the float functions and their special cases.
//! - [`ints`]: `floor ceil trunc isqrt gcd lcm factorial comb perm prod fsum`.
//! - [`norm`]: `hypot`'s vector norm and `fsum`'s exact partials.

pub mod args;
pub mod floats;
pub mod ints;
pub mod norm;

use apsi_core::api::Value;
use apsi_core::api::{ModuleBuilder, ModuleDescriptor};
use std::f64::consts;

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The `math` module, ready to install into a runtime.
pub fn module() -> ModuleDescriptor {
    use floats as f;
    ModuleBuilder::new("math", VERSION, "^2.1")
        .namespace_only()
        .constant("pi", Value::Float(consts::PI))
        .constant("e", Value::Float(consts::E))
        .constant("tau", Value::Float(consts::TAU))
        .constant("inf", Value::Float(f64::INFINITY))
        .constant("nan", Value::Float(f64::NAN))
        .function("sqrt", f::sqrt)
        .function("isqrt", ints::isqrt)
        .function("exp", f::exp)
        .function("expm1", f::expm1)
        .function("log", f::log)
        .function("log2", f::log2)
        .function("log10", f::log10)
        .function("log1p", f::log1p)
        .function("pow", f::pow)
        .function("fabs", f::fabs)
        .function("fmod", f::fmod)
        .function("copysign", f::copysign)
        .function("hypot", f::hypot)
        .function("sin", f::sin)
        .function("cos", f::cos)
        .function("tan", f::tan)
        .function("asin", f::asin)
        .function("acos", f::acos)
        .function("atan", f::atan)
        .function("atan2", f::atan2)
        .function("sinh", f::sinh)
        .function("cosh", f::cosh)
        .function("tanh", f::tanh)
        .function("asinh", f::asinh)
        .function("acosh", f::acosh)
        .function("atanh", f::atanh)
        .function("degrees", f::degrees)
        .function("radians", f::radians)
        .function("floor", ints::floor)
        .function("ceil", ints::ceil)
        .function("trunc", ints::trunc)
        .function("isnan", f::isnan)
        .function("isinf", f::isinf)
        .function("isfinite", f::isfinite)
        .function("isclose", f::isclose)
        .function("gcd", ints::gcd)
        .function("lcm", ints::lcm)
        .function("factorial", ints::factorial)
        .function("comb", ints::comb)
        .function("perm", ints::perm)
        .function("prod", ints::prod)
        .function("fsum", ints::fsum)
        .build()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_module_binds_only_its_name() {
        let m = super::module();
        assert!(m.namespace_only);
        assert_eq!(m.name, "math");
        for name in ["sqrt", "pi", "fsum", "isclose", "hypot", "comb"] {
            assert!(m.get(name).is_some(), "{name}");
        }
    }
}
