//! The prelude and the methods of the built-in types.
//!
//! [`prelude`] is the module every program sees without `use`;
//! [`method`] finds the native method of a str/list/dict/tuple receiver
//! (the receiver is passed as `args[0]`).

mod args;
pub use args::Args;
pub use core::{list_of_new, loop_enumerate, loop_zip, reversed_of_new, sorted_of_new};
pub use dicts::loop_items;
mod bytes;
mod core;
pub(crate) use self::core::SumAcc;
mod decimal_digits;
mod dicts;
mod iters;
mod lists;
pub(crate) use lists::remove_found;
mod math;
pub mod method_slots;
pub mod native_fallback;
mod ranges;
mod sets;
mod sort;
mod strs;
mod system;
mod titlecase;
pub(crate) mod types;
pub mod wrapping;

pub use bytes::{bytes_binary, bytes_contains};
pub use system::{bench_result_type, cpu_count_value};
pub use types::{type_of, type_token, type_token_name};

use crate::error::ErrorKind;
use crate::module::{ModuleBuilder, ModuleDescriptor};
use crate::value::{NativeFnPtr, Value};

/// [`prelude`], built once per process: the values are immutable (a
/// runtime binds its own `argv`), so every runtime and module shares them.
pub fn shared_prelude() -> &'static ModuleDescriptor {
    static PRELUDE: std::sync::OnceLock<ModuleDescriptor> = std::sync::OnceLock::new();
    PRELUDE.get_or_init(prelude)
}

/// The prelude: the names every program sees without `use`.
///
/// `argv` is bound to an empty list here; the runtime replaces it with the
/// program's arguments.
pub fn prelude() -> ModuleDescriptor {
    let mut b = ModuleBuilder::new("prelude", crate::VERSION, "^2.0");
    let fns: &[(&str, NativeFnPtr)] = &[
        ("print", core::print),
        ("len", core::len),
        ("repr", core::repr),
        ("format", core::format),
        ("enumerate", core::enumerate),
        ("zip", core::zip),
        ("sorted", core::sorted),
        ("reversed", core::reversed),
        ("sum", core::sum),
        ("min", core::min),
        ("max", core::max),
        ("any", core::any),
        ("all", core::all),
        ("chr", core::chr),
        ("ord", core::ord),
        ("divmod", core::divmod),
        ("abs", core::abs),
        ("round", core::round),
        ("map", core::map),
        ("filter", core::filter),
        ("reduce", core::reduce),
        ("iter", iters::iter),
        ("next", iters::next),
        ("isinstance", types::isinstance),
        ("type", types::type_fn),
        ("sqrt", math::sqrt),
        ("exp", math::exp),
        ("log", math::log),
        ("log1p", math::log1p),
        ("log2", math::log2),
        ("log10", math::log10),
        ("sin", math::sin),
        ("cos", math::cos),
        ("tan", math::tan),
        ("asin", math::asin),
        ("acos", math::acos),
        ("atan", math::atan),
        ("atan2", math::atan2),
        ("sinh", math::sinh),
        ("cosh", math::cosh),
        ("tanh", math::tanh),
        ("sigmoid", math::sigmoid),
        ("floor", math::floor),
        ("ceil", math::ceil),
        ("sign", math::sign),
        ("maximum", math::maximum),
        ("minimum", math::minimum),
        ("isnan", math::isnan),
        ("isinf", math::isinf),
        ("hypot", math::hypot),
        ("pow", math::pow),
        ("wrapping_add", wrapping::wrapping_add),
        ("wrapping_sub", wrapping::wrapping_sub),
        ("wrapping_mul", wrapping::wrapping_mul),
        ("wrapping_shl", wrapping::wrapping_shl),
        ("shr_u", wrapping::shr_u),
        ("input", system::input),
        ("read_text", system::read_text),
        ("write_text", system::write_text),
        ("read_bytes", bytes::read_bytes),
        ("write_bytes", bytes::write_bytes),
        ("hash", crate::ops::hash_builtin),
        ("exit", system::exit),
        ("time", system::time),
        ("cpu_count", system::cpu_count),
        ("bench", system::bench),
        ("timed", system::timed),
        ("native", native_fallback::native),
    ];
    for (name, f) in fns {
        b = b.function(name, *f);
    }
    for (name, v) in types::constructor_exports() {
        b = b.constant(name, v);
    }
    b = b
        .function("staticmethod", |_c, args, _kw| {
            Ok(args.first().cloned().unwrap_or(Value::None))
        })
        .function("property", |_c, args, _kw| {
            Ok(args.first().cloned().unwrap_or(Value::None))
        })
        .function("super", |_c, _args, _kw| {
            Err(crate::value::err(
                ErrorKind::TypeError,
                "super() is only valid inside a method of a struct",
            ))
        })
        .constant("NotImplemented", crate::ops::dunder::not_implemented())
        .constant("inf", Value::Float(f64::INFINITY))
        .constant("nan", Value::Float(f64::NAN))
        .constant("pi", Value::Float(std::f64::consts::PI))
        .constant("e", Value::Float(std::f64::consts::E))
        .constant("argv", Value::list(Vec::new()));
    for k in ErrorKind::ALL {
        b = b.constant(k.name(), Value::Kind(k));
    }
    // Python's name for the base of every error kind.
    b = b.constant("Exception", Value::Kind(ErrorKind::Error));
    b = crate::tensor::register(b);
    b.reads_sources(&["read_text", "read_bytes"]).build()
}

/// The native method `name` of a built-in receiver (str, list, dict,
/// tuple); it takes the receiver as `args[0]`.
pub fn method(receiver: &Value, name: &str) -> Option<NativeFnPtr> {
    match receiver {
        Value::Native(f) if type_token_name(f).as_deref() == Some("bytes") => bytes::type_method(name),
        _ => method_slots::lookup(method_slots::receiver_key(receiver)?, name),
    }
}

/// The method names of a built-in receiver (for "did you mean" hints).
pub fn method_names(receiver: &Value) -> &'static [&'static str] {
    method_slots::receiver_key(receiver).map_or(&[], method_slots::names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prelude_has_the_spec_names() {
        let p = prelude();
        assert_eq!(p.name, "prelude");
        assert_eq!(p.version, crate::VERSION);
        for n in [
            "print",
            "len",
            "range",
            "enumerate",
            "zip",
            "sorted",
            "reversed",
            "sum",
            "min",
            "max",
            "abs",
            "round",
            "int",
            "float",
            "str",
            "bool",
            "list",
            "dict",
            "tuple",
            "isinstance",
            "type",
            "map",
            "filter",
            "reduce",
            "sqrt",
            "floor",
            "ceil",
            "wrapping_add",
            "wrapping_sub",
            "wrapping_mul",
            "wrapping_shl",
            "shr_u",
            "inf",
            "nan",
            "pi",
            "e",
            "input",
            "read_text",
            "write_text",
            "argv",
            "exit",
            "time",
            "bench",
            "cpu_count",
            "Error",
            "ValueError",
            "NotImplementedError",
        ] {
            assert!(p.get(n).is_some(), "prelude lacks {n}");
        }
        assert!(matches!(p.get("nan"), Some(Value::Float(f)) if f.is_nan() && f.is_sign_positive()));
    }

    #[test]
    fn every_listed_method_exists() {
        let receivers = [
            Value::str(""),
            Value::list(vec![]),
            Value::tuple(vec![]),
            Value::empty_dict(),
            Value::bytes(vec![]),
            Value::set(Default::default()),
        ];
        for r in &receivers {
            for n in method_names(r) {
                assert!(method(r, n).is_some(), "{} lacks {n}", r.type_name());
            }
        }
    }
}
