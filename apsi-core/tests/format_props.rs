//! Property tests: float text reads back to the same value.

use apsi_core::format::{f32_repr, float_repr, format_value};
use apsi_core::value::Value;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn float_repr_round_trips(bits in any::<u64>()) {
        let x = f64::from_bits(bits);
        let text = float_repr(x);
        let back: f64 = text.parse().unwrap_or(f64::NAN);
        if x.is_nan() {
            prop_assert_eq!(text, "nan");
        } else {
            prop_assert_eq!(back.to_bits(), x.to_bits(), "{} -> {}", x, text);
            // Python's layout: a point or an exponent is always present.
            prop_assert!(text.contains('.') || text.contains('e') || text.contains("inf"));
        }
    }

    #[test]
    fn f32_repr_round_trips(bits in any::<u32>()) {
        let x = f32::from_bits(bits);
        let text = f32_repr(x);
        let back: f32 = text.parse().unwrap_or(f32::NAN);
        if x.is_nan() {
            prop_assert_eq!(text, "nan");
        } else {
            prop_assert_eq!(back.to_bits(), x.to_bits(), "{} -> {}", x, text);
        }
    }

    #[test]
    fn fixed_formatting_reads_back_close(x in -1e12f64..1e12, p in 0usize..12) {
        let text = format_value(&Value::Float(x), &format!(".{p}f")).map_err(|e| TestCaseError::fail(e.message.clone()))?;
        let back: f64 = text.parse().unwrap_or(f64::NAN);
        prop_assert!((back - x).abs() <= 0.5 * 10f64.powi(-(p as i32)) * (1.0 + 1e-9) + x.abs() * 1e-15, "{} {}", x, text);
    }

    #[test]
    fn int_formatting_matches_display(i in any::<i64>()) {
        let text = format_value(&Value::Int(i), "d").map_err(|e| TestCaseError::fail(e.message.clone()))?;
        prop_assert_eq!(text, i.to_string());
        let grouped = format_value(&Value::Int(i), ",").map_err(|e| TestCaseError::fail(e.message.clone()))?;
        prop_assert_eq!(grouped.replace(',', ""), i.to_string());
    }
}
