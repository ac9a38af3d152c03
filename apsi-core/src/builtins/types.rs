//! The built-in types as values, their constructors, `type` and `isinstance`.
//!
//! Decision (for docs/LANGUAGE.md): a built-in type *is* the prelude's
//! constructor function for it, so `type(3) == int`, `type("a") is str` and
//! `isinstance(x, (int, float))` work as in Python. These values print as
//! `<type int>`. `type` of a struct value is its struct type, `type` of an
//! error value is its error kind (`type(e) == ValueError`), and `type` of a
//! module object (a tensor, a task) is a type token named after its type
//! (`<type Tensor>`), equal for all values of that type. `bool` counts as an
//! `int` for `isinstance`, as in Python. Types with no constructor (`none`,
//! `function`, `module`, `error`, `slice`, `type`) have tokens that raise
//! `TypeError` when called.

use super::args::{expect_int, Args};
use crate::error::ErrorKind;
use crate::ops;
use crate::value::{err, Caller, DictMap, HashKey, Kwargs, NativeFn, NativeFnPtr, RangeObj, VResult, Value};
use parking_lot::Mutex;
use std::sync::{Arc, OnceLock};

const CONSTRUCTORS: [(&str, NativeFnPtr); 9] = [
    ("int", int_ctor),
    ("float", float_ctor),
    ("str", str_ctor),
    ("bool", bool_ctor),
    ("list", list_ctor),
    ("dict", dict_ctor),
    ("tuple", tuple_ctor),
    ("range", range_ctor),
    ("set", super::sets::set_ctor),
];

/// Built-in types added after the first eight (kept apart so each
/// addition is one line here).
const MORE_CONSTRUCTORS: [(&str, NativeFnPtr); 1] = [("bytes", super::bytes::bytes_ctor)];

const NO_CONSTRUCTOR: [&str; 6] = ["none", "function", "module", "error", "slice", "type"];

fn no_constructor(_c: &mut dyn Caller, _a: &[Value], _k: Kwargs) -> VResult<Value> {
    Err(err(
        ErrorKind::TypeError,
        "values of this type cannot be created by calling the type",
    ))
}

fn tokens() -> &'static Vec<(&'static str, Arc<NativeFn>)> {
    static TOKENS: OnceLock<Vec<(&'static str, Arc<NativeFn>)>> = OnceLock::new();
    TOKENS.get_or_init(|| {
        let mut v: Vec<(&'static str, Arc<NativeFn>)> = CONSTRUCTORS
            .iter()
            .chain(MORE_CONSTRUCTORS.iter())
            .map(|(n, f)| (*n, Arc::new(NativeFn::new(n, *f))))
            .collect();
        v.extend(
            NO_CONSTRUCTOR
                .iter()
                .map(|n| (*n, Arc::new(NativeFn::new(n, no_constructor)))),
        );
        v
    })
}

/// Type tokens of module object types, made on first use.
type ObjectTokens = Mutex<Vec<(String, Arc<NativeFn>)>>;

fn object_tokens() -> &'static ObjectTokens {
    static OBJ: OnceLock<ObjectTokens> = OnceLock::new();
    OBJ.get_or_init(|| Mutex::new(Vec::new()))
}

/// The value of the built-in type `name` (`int`, `str`, …, `none`).
pub fn type_token(name: &str) -> Option<Value> {
    tokens()
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| Value::Native(f.clone()))
}

/// If `f` is the value of a type, that type's name.
pub fn type_token_name(f: &Arc<NativeFn>) -> Option<String> {
    if let Some((n, _)) = tokens().iter().find(|(_, t)| Arc::ptr_eq(t, f)) {
        return Some(n.to_string());
    }
    object_tokens()
        .lock()
        .iter()
        .find(|(_, t)| Arc::ptr_eq(t, f))
        .map(|(n, _)| n.clone())
}

/// The constructors bound in the prelude.
pub(crate) fn constructor_exports() -> Vec<(&'static str, Value)> {
    CONSTRUCTORS
        .iter()
        .chain(MORE_CONSTRUCTORS.iter())
        .filter_map(|(n, _)| type_token(n).map(|v| (*n, v)))
        .collect()
}

/// `type(x)`.
pub fn type_of(v: &Value) -> Value {
    let name = match v {
        Value::Struct(s) => return Value::StructType(s.ty.clone()),
        Value::Error(e) => {
            return match &e.payload {
                Some(p) => type_of(p),
                None => Value::Kind(e.kind),
            }
        }
        Value::Object(o) => {
            let tn = o.0.type_name().to_string();
            let mut reg = object_tokens().lock();
            if let Some((_, t)) = reg.iter().find(|(n, _)| *n == tn) {
                return Value::Native(t.clone());
            }
            let t = Arc::new(NativeFn::new(&tn, no_constructor));
            reg.push((tn, t.clone()));
            return Value::Native(t);
        }
        Value::StructType(_) | Value::Kind(_) => "type",
        Value::Native(f) if type_token_name(f).is_some() => "type",
        other => other.type_name(),
    };
    type_token(name).unwrap_or(Value::None)
}

pub(crate) fn is_instance(x: &Value, t: &Value) -> VResult<bool> {
    match t {
        Value::Tuple(ts) => {
            for t in ts.0.iter() {
                if is_instance(x, t)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        Value::StructType(ty) => Ok(match x {
            Value::Struct(s) => s.ty.descends_from(ty),
            Value::Error(e) => matches!(&e.payload, Some(Value::Struct(s)) if s.ty.descends_from(ty)),
            _ => false,
        }),
        Value::Kind(k) => Ok(match x {
            Value::Error(e) => k.catches(e.kind),
            Value::Struct(s) => matches!(s.ty.error_kind, Some(ek) if k.catches(ek)),
            _ => false,
        }),
        Value::Native(f) => match type_token_name(f) {
            Some(name) => Ok(match name.as_str() {
                "int" => matches!(x, Value::Int(_) | Value::Bool(_)),
                "type" => matches!(type_of(x), Value::Native(ref g) if type_token_name(g).as_deref() == Some("type")),
                _ => match type_of(x) {
                    Value::Native(g) => Arc::ptr_eq(&g, f),
                    _ => false,
                },
            }),
            // A module's constructor named like its type (`Tensor`).
            None => Ok(matches!(x, Value::Object(o) if o.0.type_name() == &*f.name)),
        },
        other => Err(err(
            ErrorKind::TypeError,
            format!(
                "isinstance() arg 2 must be a type or a tuple of types, not {}",
                other.type_name()
            ),
        )),
    }
}

pub(crate) fn isinstance(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    if let ([x, types], true) = (args, kw.is_empty()) {
        return Ok(Value::Bool(is_instance(x, types)?));
    }
    let a = Args::new("isinstance", args, kw, 2, &["x", "types"])?;
    Ok(Value::Bool(is_instance(a.req(0)?, a.req(1)?)?))
}

pub(crate) fn type_fn(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("type", args, kw, 1, &["x"])?;
    Ok(type_of(a.req(0)?))
}

/// 2**63 as a float: the first float above every i64.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// Float to int by truncation, refusing inf, nan and out-of-range values.
pub(crate) fn float_to_int(f: f64) -> VResult<i64> {
    if f.is_nan() {
        return Err(err(ErrorKind::ValueError, "cannot convert float nan to int"));
    }
    if f.is_infinite() {
        return Err(err(ErrorKind::OverflowError, "cannot convert float infinity to int"));
    }
    let t = f.trunc();
    if !(-TWO_63..TWO_63).contains(&t) {
        return Err(err(
            ErrorKind::OverflowError,
            format!("float {} does not fit in a 64-bit int", crate::format::float_repr(f)),
        ));
    }
    Ok(t as i64)
}

/// Removes underscores that stand between two digits; `None` if any other
/// underscore is present.
fn strip_underscores(s: &str, is_digit: impl Fn(char) -> bool) -> Option<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    for (i, &c) in chars.iter().enumerate() {
        if c == '_' {
            let before = i > 0 && is_digit(chars[i - 1]);
            let after = chars.get(i + 1).is_some_and(|&n| is_digit(n));
            if !before || !after {
                return None;
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// Python's `int(text, base)`: sign, optional base prefix, underscores
/// between digits, surrounding whitespace. `base` 0 reads the prefix.
pub(crate) fn parse_int(text: &str, base: u32) -> VResult<i64> {
    let bad = || {
        err(
            ErrorKind::ValueError,
            format!(
                "invalid literal for int() with base {base}: {}",
                crate::format::quote_str(text)
            ),
        )
    };
    let ascii = super::decimal_digits::to_ascii_digits(text);
    let t = ascii.trim();
    let (neg, body) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let lower = body.to_ascii_lowercase();
    let (base, digits) = {
        let prefixed = |p: &str, b: u32| -> Option<(u32, &str)> {
            if (base == b || base == 0) && lower.starts_with(p) {
                // Python allows an underscore right after the prefix.
                let rest = &body[2..];
                Some((b, rest.strip_prefix('_').unwrap_or(rest)))
            } else {
                None
            }
        };
        if let Some(r) = prefixed("0x", 16)
            .or_else(|| prefixed("0o", 8))
            .or_else(|| prefixed("0b", 2))
        {
            r
        } else if base == 0 {
            if body.len() > 1 && body.starts_with('0') && body.chars().any(|c| c != '0' && c != '_') {
                return Err(bad());
            }
            (10, body)
        } else {
            (base, body)
        }
    };
    let clean = strip_underscores(digits, |c| c.is_digit(base)).ok_or_else(bad)?;
    if clean.is_empty() || !clean.chars().all(|c| c.is_digit(base)) {
        return Err(bad());
    }
    let mag = u64::from_str_radix(&clean, base).map_err(|_| {
        err(
            ErrorKind::OverflowError,
            format!("int {} does not fit in 64 bits", crate::format::quote_str(text)),
        )
    })?;
    let v = if neg { -(mag as i128) } else { mag as i128 };
    i64::try_from(v).map_err(|_| {
        err(
            ErrorKind::OverflowError,
            format!("int {} does not fit in 64 bits", crate::format::quote_str(text)),
        )
    })
}

/// Python's `float(text)`: decimal and scientific forms, `inf`,
/// `infinity`, `nan` (any case, optional sign), underscores between digits.
pub(crate) fn parse_float(text: &str) -> VResult<f64> {
    let bad = || {
        err(
            ErrorKind::ValueError,
            format!("could not convert string to float: {}", crate::format::quote_str(text)),
        )
    };
    let ascii = super::decimal_digits::to_ascii_digits(text);
    let t = ascii.trim();
    let clean = strip_underscores(t, |c| c.is_ascii_digit()).ok_or_else(bad)?;
    let lower = clean.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    if lower.len() - unsigned.len() > 1 {
        return Err(bad());
    }
    match unsigned {
        "inf" | "infinity" => {
            return Ok(if lower.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            })
        }
        "nan" => return Ok(f64::NAN),
        _ => {}
    }
    if !unsigned
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | '+' | '-'))
    {
        return Err(bad());
    }
    lower.parse::<f64>().map_err(|_| bad())
}

fn int_ctor(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("int", args, kw, 0, &["x", "base"])?;
    let Some(x) = a.get(0) else { return Ok(Value::Int(0)) };
    if let Some(b) = a.opt(1) {
        let base = expect_int(b, "int", "base")?;
        if base != 0 && !(2..=36).contains(&base) {
            return Err(err(ErrorKind::ValueError, "int() base must be >= 2 and <= 36, or 0"));
        }
        return match x {
            Value::Str(s) => Ok(Value::Int(parse_int(s.as_str(), base as u32)?)),
            other => Err(err(
                ErrorKind::TypeError,
                format!("int() can't convert a {} with an explicit base", other.type_name()),
            )),
        };
    }
    match x {
        Value::Int(i) => Ok(Value::Int(*i)),
        Value::Bool(b) => Ok(Value::Int(*b as i64)),
        Value::Float(f) => Ok(Value::Int(float_to_int(*f)?)),
        Value::Str(s) => Ok(Value::Int(parse_int(s.as_str(), 10)?)),
        // A one-element tensor (or any object with `item()`), as float() does.
        Value::Object(_) => match ops::call_dunder(x, "item", &[]) {
            Some(r) => int_ctor(_c, &[r?], &[]),
            None => Err(err(
                ErrorKind::TypeError,
                format!("int() argument must be a str or a number, not {}", x.type_name()),
            )),
        },
        other => Err(err(
            ErrorKind::TypeError,
            format!("int() argument must be a str or a number, not {}", other.type_name()),
        )),
    }
}

fn float_ctor(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("float", args, kw, 0, &["x"])?;
    let Some(x) = a.get(0) else {
        return Ok(Value::Float(0.0));
    };
    match x {
        Value::Int(i) => Ok(Value::Float(*i as f64)),
        Value::Bool(b) => Ok(Value::Float(*b as i64 as f64)),
        Value::Float(f) => Ok(Value::Float(*f)),
        Value::Str(s) => Ok(Value::Float(parse_float(s.as_str())?)),
        Value::Object(_) => match ops::call_dunder(x, "item", &[]) {
            Some(r) => float_ctor(_c, &[r?], &[]),
            None => Err(err(
                ErrorKind::TypeError,
                format!("float() argument must be a str or a number, not {}", x.type_name()),
            )),
        },
        other => Err(err(
            ErrorKind::TypeError,
            format!("float() argument must be a str or a number, not {}", other.type_name()),
        )),
    }
}

fn str_ctor(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("str", args, kw, 0, &["x"])?;
    Ok(match a.get(0) {
        None => Value::str(""),
        Some(v @ Value::Str(_)) => v.clone(),
        Some(Value::Int(i)) => int_str(*i),
        Some(v) => Value::str(crate::format::str_checked(v)?),
    })
}

/// `str(i)` for an int, formatted straight into an inline string.
fn int_str(i: i64) -> Value {
    Value::Str(crate::value::StrRef::new(crate::value::StrObj::from_int(i)))
}

fn bool_ctor(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("bool", args, kw, 0, &["x"])?;
    Ok(Value::Bool(match a.get(0) {
        None => false,
        Some(v) => v.truthy()?,
    }))
}

pub(crate) fn list_ctor(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("list", args, kw, 0, &["xs"])?;
    Ok(Value::list(match a.get(0) {
        None => Vec::new(),
        Some(v) => ops::iterate(c, v)?,
    }))
}

fn tuple_ctor(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("tuple", args, kw, 0, &["xs"])?;
    Ok(match a.get(0) {
        None => Value::tuple(Vec::new()),
        Some(v @ Value::Tuple(_)) => v.clone(),
        Some(v) => Value::tuple(ops::iterate(c, v)?),
    })
}

/// Adds `(key, value)` pairs from a dict or an iterable of pairs.
///
/// `map` is the new dict's table itself (`dict(…)`), or a vector the caller
/// adds to a dict it locks only afterwards (`d.update(…)`, `d |= …`).
pub(crate) fn update_from<M: Extend<(HashKey, Value)>>(c: &mut dyn Caller, map: &mut M, src: &Value) -> VResult<()> {
    if let Value::Dict(d) = src {
        map.extend(d.map.read().iter().map(|(k, v)| (k.clone(), v.clone())));
        return Ok(());
    }
    // `dict(zip(ks, vs))` (compiled with a loop's zip): each row's key and
    // value straight from the columns, no tuple. The key is hashed after
    // the step, outside the iterator's lock (a struct's `__hash__` is Apsi
    // code).
    if let Value::Object(o) = src {
        if let Some(it) = o.0.as_any().downcast_ref::<ops::iters::IterObj>() {
            loop {
                let (mut k, mut v) = (None, None);
                let step = it.next_unpacked(2, |j, x| {
                    if j == 0 {
                        k = Some(x.into_value());
                    } else {
                        v = Some(x.into_value());
                    }
                });
                match (step, k, v) {
                    (Some(true), Some(k), Some(v)) => map.extend([(HashKey::new(k)?, v)]),
                    (Some(false), _, _) => return Ok(()),
                    // Not a row iterator of pairs: the items as below.
                    _ => break,
                }
            }
        }
    }
    for (i, item) in ops::iterate(c, src)?.into_iter().enumerate() {
        // A pair held in a tuple or list: read in place (no vector per pair).
        let direct = match &item {
            Value::Tuple(t) => match &t.0[..] {
                [k, v] => Some((k.clone(), v.clone())),
                _ => None,
            },
            _ => None,
        };
        if let Some((k, v)) = direct {
            map.extend([(HashKey::new(k)?, v)]);
            continue;
        }
        let pair = ops::iterate(c, &item)?;
        if pair.len() != 2 {
            return Err(err(
                ErrorKind::ValueError,
                format!(
                    "dictionary update sequence element #{i} has length {}; 2 is required",
                    pair.len()
                ),
            ));
        }
        let mut it = pair.into_iter();
        if let (Some(k), Some(v)) = (it.next(), it.next()) {
            map.extend([(HashKey::new(k)?, v)]);
        }
    }
    Ok(())
}

fn dict_ctor(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    if args.len() > 1 {
        return Err(err(
            ErrorKind::TypeError,
            format!("dict() takes at most 1 positional argument ({} given)", args.len()),
        ));
    }
    // Filled in place; `dict(zip(ks, vs))` is sized for its rows at once.
    let rows = match args.first() {
        Some(Value::Object(o)) => {
            o.0.as_any()
                .downcast_ref::<ops::iters::IterObj>()
                .and_then(|it| it.rows_left())
        }
        _ => None,
    };
    let mut map = DictMap::with_capacity(rows.unwrap_or(0) + kw.len());
    if let Some(src) = args.first() {
        update_from(c, &mut map, src)?;
    }
    for (k, v) in kw {
        map.insert(HashKey::new(Value::str(&**k))?, v.clone());
    }
    Ok(Value::dict(map))
}

fn range_ctor(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    if !kw.is_empty() {
        return Err(err(ErrorKind::TypeError, "range() takes no keyword arguments"));
    }
    let int = |v: &Value| expect_int(v, "range", "bound");
    let (start, stop, step) = match args {
        [stop] => (0, int(stop)?, 1),
        [start, stop] => (int(start)?, int(stop)?, 1),
        [start, stop, step] => (int(start)?, int(stop)?, int(step)?),
        _ => {
            return Err(err(
                ErrorKind::TypeError,
                format!("range() takes 1 to 3 arguments ({} given)", args.len()),
            ));
        }
    };
    if step == 0 {
        return Err(err(ErrorKind::ValueError, "range() step must not be zero"));
    }
    Ok(Value::Range(Arc::new(RangeObj { start, stop, step })))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::ops::Must;
    use crate::ops::NoCaller;

    #[test]
    fn int_to_str_matches_display() {
        for i in [0, 7, -7, 10, 1234567890, i64::MAX, i64::MIN, -1_000_000] {
            assert_eq!(int_str(i).as_str(), Some(i.to_string().as_str()));
        }
    }

    #[test]
    fn int_parsing() {
        assert_eq!(parse_int(" 1_000 ", 10).must(), 1000);
        assert_eq!(parse_int("-0x1f", 0).must(), -31);
        assert_eq!(parse_int("0x1f", 16).must(), 31);
        assert_eq!(parse_int("ff", 16).must(), 255);
        assert_eq!(parse_int("-9223372036854775808", 10).must(), i64::MIN);
        assert_eq!(
            parse_int("9223372036854775808", 10).unwrap_err().kind,
            ErrorKind::OverflowError
        );
        for bad in ["", "1__0", "_1", "1_", "abc", "1.5", "0x", "--1", "010"] {
            let base = if bad == "010" { 0 } else { 10 };
            assert_eq!(parse_int(bad, base).unwrap_err().kind, ErrorKind::ValueError, "{bad}");
        }
        assert_eq!(
            parse_int("abc", 10).unwrap_err().message,
            "invalid literal for int() with base 10: 'abc'"
        );
    }

    #[test]
    fn float_parsing() {
        assert_eq!(parse_float("1e3").must(), 1000.0);
        assert_eq!(parse_float(" -inf ").must(), f64::NEG_INFINITY);
        assert_eq!(parse_float("Infinity").must(), f64::INFINITY);
        assert!(parse_float("nan").must().is_nan());
        assert_eq!(parse_float("1_000.5").must(), 1000.5);
        assert_eq!(parse_float(".5").must(), 0.5);
        for bad in ["", "abc", "1e", "--1", "1_", "0x10", "in f"] {
            assert_eq!(parse_float(bad).unwrap_err().kind, ErrorKind::ValueError, "{bad}");
        }
    }

    #[test]
    fn types_are_constructors() {
        let int = type_token("int").must();
        assert!(type_of(&Value::Int(3)).is(&int));
        assert!(is_instance(&Value::Bool(true), &int).must());
        assert!(!is_instance(&Value::Float(1.0), &int).must());
        let both = Value::tuple(vec![int.clone(), type_token("float").must()]);
        assert!(is_instance(&Value::Float(1.0), &both).must());
        assert!(is_instance(&int, &type_token("type").must()).must());
        assert_eq!(crate::format::str_of(&int), "<type int>");
        let r = range_ctor(&mut NoCaller, &[Value::Int(1), Value::Int(2), Value::Int(0)], &[]);
        assert_eq!(r.unwrap_err().kind, ErrorKind::ValueError);
        assert_eq!(float_to_int(-3.9).must(), -3);
        assert_eq!(float_to_int(f64::INFINITY).unwrap_err().kind, ErrorKind::OverflowError);
        assert_eq!(float_to_int(f64::NAN).unwrap_err().kind, ErrorKind::ValueError);
        assert_eq!(float_to_int(9.3e18).unwrap_err().kind, ErrorKind::OverflowError);
    }
}
