//! Property tests of the operators against Python's identities.

use apsi_core::ops::{binary, compare, eq, get_index};
use apsi_core::syntax::ast::{BinOp, CmpOp};
use apsi_core::value::{SliceObj, Value};
use proptest::prelude::*;
use std::sync::Arc;

fn int(v: Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(i),
        _ => None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn floor_division_identity(a in any::<i64>(), b in any::<i64>()) {
        prop_assume!(b != 0);
        let q = binary(BinOp::FloorDiv, &Value::Int(a), &Value::Int(b)).ok().and_then(int);
        let r = binary(BinOp::Mod, &Value::Int(a), &Value::Int(b)).ok().and_then(int);
        match (q, r) {
            (Some(q), Some(r)) => {
                prop_assert_eq!(q as i128 * b as i128 + r as i128, a as i128);
                prop_assert!(r == 0 || (r < 0) == (b < 0));
                prop_assert!((r as i128).abs() < (b as i128).abs());
            }
            // Only i64::MIN // -1 overflows.
            (None, Some(0)) => prop_assert!(a == i64::MIN && b == -1),
            other => prop_assert!(false, "unexpected {:?}", other),
        }
    }

    #[test]
    fn checked_arithmetic_never_wraps(a in any::<i64>(), b in any::<i64>()) {
        let exact = [(BinOp::Add, a as i128 + b as i128), (BinOp::Sub, a as i128 - b as i128), (BinOp::Mul, a as i128 * b as i128)];
        for (op, want) in exact {
            match binary(op, &Value::Int(a), &Value::Int(b)) {
                Ok(Value::Int(got)) => prop_assert_eq!(got as i128, want),
                Ok(_) => prop_assert!(false, "not an int"),
                Err(e) => {
                    prop_assert_eq!(e.kind.name(), "OverflowError");
                    prop_assert!(want > i64::MAX as i128 || want < i64::MIN as i128);
                }
            }
        }
    }

    #[test]
    fn int_float_comparison_is_exact(a in any::<i64>(), d in -3i64..3) {
        let f = (a as f64) + d as f64;
        let lt = compare(CmpOp::Lt, &Value::Int(a), &Value::Float(f)).ok();
        // Exact: compare through i128 when f is integral and in range.
        if f.fract() == 0.0 && f.abs() < 9.2e18 {
            prop_assert_eq!(lt, Some((a as i128) < (f as i128)));
            prop_assert_eq!(eq(&Value::Int(a), &Value::Float(f)).ok(), Some(a as i128 == f as i128));
        }
    }

    #[test]
    fn slicing_matches_a_reference(len in 0usize..12, start in proptest::option::of(-15i64..15), stop in proptest::option::of(-15i64..15), step in proptest::option::of(-4i64..5)) {
        prop_assume!(step != Some(0));
        let items: Vec<Value> = (0..len as i64).map(Value::Int).collect();
        let opt = |v: Option<i64>| v.map(Value::Int).unwrap_or(Value::None);
        let s = Value::Slice(Arc::new(SliceObj { start: opt(start), stop: opt(stop), step: opt(step) }));
        let got = get_index(&Value::list(items), &s).ok();
        // Reference: Python's algorithm written out naively.
        let n = len as i64;
        let st = step.unwrap_or(1);
        let norm = |v: i64| if v < 0 { v + n } else { v };
        let mut want = Vec::new();
        if st > 0 {
            let lo = start.map(norm).unwrap_or(0).clamp(0, n);
            let hi = stop.map(norm).unwrap_or(n).clamp(0, n);
            let mut i = lo;
            while i < hi { want.push(i); i += st; }
        } else {
            let lo = start.map(norm).unwrap_or(n - 1).clamp(-1, n - 1);
            let hi = stop.map(norm).unwrap_or(-1).clamp(-1, n - 1);
            let mut i = lo;
            while i > hi { want.push(i); i += st; }
        }
        let got: Option<Vec<i64>> = got.and_then(|v| match v {
            Value::List(l) => Some(l.items.read().iter().filter_map(|x| int(x.clone())).collect()),
            _ => None,
        });
        prop_assert_eq!(got, Some(want));
    }
}

fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::None),
        any::<bool>().prop_map(Value::Bool),
        prop_oneof![any::<i64>(), -5i64..5].prop_map(Value::Int),
        prop_oneof![any::<f64>(), -5.0f64..5.0].prop_map(Value::Float),
        "[a-zé ,]{0,6}".prop_map(Value::str),
        "[a-z%0-9.#+ (-)sdxfrc]{0,6}".prop_map(Value::str),
        proptest::collection::vec(any::<u8>(), 0..6).prop_map(Value::bytes),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::list),
            proptest::collection::vec(inner, 0..4).prop_map(Value::tuple),
        ]
    })
}

const BIN: [BinOp; 13] = [
    BinOp::Add,
    BinOp::Sub,
    BinOp::Mul,
    BinOp::Div,
    BinOp::FloorDiv,
    BinOp::Mod,
    BinOp::Pow,
    BinOp::MatMul,
    BinOp::BitAnd,
    BinOp::BitOr,
    BinOp::BitXor,
    BinOp::Shl,
    BinOp::Shr,
];
const CMP: [CmpOp; 10] = [
    CmpOp::Eq,
    CmpOp::NotEq,
    CmpOp::Lt,
    CmpOp::LtE,
    CmpOp::Gt,
    CmpOp::GtE,
    CmpOp::In,
    CmpOp::NotIn,
    CmpOp::Is,
    CmpOp::IsNot,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// No operator panics on any pair of values; failures are Apsi errors.
    #[test]
    fn operators_never_panic(a in arb_value(), b in arb_value(), spec in "[<>^=+ z#0-9,_.a-zA-Z%]{0,8}") {
        for op in BIN {
            let _ = binary(op, &a, &b);
        }
        for op in CMP {
            let _ = compare(op, &a, &b);
        }
        let _ = apsi_core::ops::order(&a, &b);
        let _ = get_index(&a, &b);
        let _ = apsi_core::ops::contains(&a, &b);
        let _ = apsi_core::ops::len(&a);
        let _ = apsi_core::ops::hash_key(&a);
        let _ = apsi_core::format::format_value(&a, &spec);
        let _ = apsi_core::format::repr_of(&a);
        for op in [apsi_core::syntax::ast::UnaryOp::Neg, apsi_core::syntax::ast::UnaryOp::Pos, apsi_core::syntax::ast::UnaryOp::Invert, apsi_core::syntax::ast::UnaryOp::Not] {
            let _ = apsi_core::ops::unary(op, &a);
        }
        // Equality is reflexive for values without NaN inside.
        let text = apsi_core::format::repr_of(&a);
        if !text.contains("nan") {
            prop_assert_eq!(eq(&a, &a).ok(), Some(true));
        }
    }
}

struct QuietCaller;

impl apsi_core::value::Caller for QuietCaller {
    fn call(&mut self, f: &Value, args: &[Value], kw: apsi_core::value::Kwargs) -> apsi_core::value::VResult<Value> {
        apsi_core::ops::NoCaller.call(f, args, kw)
    }
    fn write_out(&mut self, _text: &str) -> apsi_core::value::VResult<()> {
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    /// No prelude function or built-in method panics or hangs on any
    /// arguments (those touching stdin, files or the process are skipped).
    #[test]
    fn prelude_and_methods_never_panic(args in proptest::collection::vec(arb_value(), 0..4), kwv in arb_value()) {
        use apsi_core::value::Caller as _;
        let p = apsi_core::builtins::prelude();
        let kws: Vec<(Arc<str>, Value)> = vec![("key".into(), kwv.clone())];
        for (name, f) in &p.exports {
            if matches!(&**name, "input" | "exit" | "read_text" | "write_text" | "read_bytes" | "write_bytes" | "bench") {
                continue;
            }
            let _ = QuietCaller.call(f, &args, &[]);
            let _ = QuietCaller.call(f, &args, &kws);
        }
        if let Some((recv, rest)) = args.split_first() {
            for name in apsi_core::builtins::method_names(recv) {
                if let Some(m) = apsi_core::builtins::method(recv, name) {
                    let mut all = vec![recv.clone()];
                    all.extend_from_slice(rest);
                    let _ = m(&mut QuietCaller, &all, &[]);
                }
            }
        }
        // Methods on a string receiver with these arguments too.
        let s = Value::str("héllo, wörld {} {0}");
        for name in apsi_core::builtins::method_names(&s) {
            if let Some(m) = apsi_core::builtins::method(&s, name) {
                let mut all = vec![s.clone()];
                all.extend_from_slice(&args);
                let _ = m(&mut QuietCaller, &all, &[]);
            }
        }
    }
}
