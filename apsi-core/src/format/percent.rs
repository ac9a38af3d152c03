//! printf-style formatting: `fmt % args` on a str (LANGUAGE.md §10.10).
//!
//! This follows CPython's `PyUnicode_Format` step by step, so results and
//! error messages are Python's:
//! - a tuple supplies the values in order; any other value is the single
//!   value; a dict (or another subscriptable non-tuple, non-str value, as
//!   `PyMapping_Check` says) makes `%(name)s` look names up in it and is
//!   never "not all converted";
//! - conversions `d i u` (a float is truncated, a bool is an int), `o x X`
//!   (ints only), `e E f F g G`, `s` (`str`), `r` (`repr`), `a` (`repr`
//!   with non-ASCII escaped), `c` (an int code point or a 1-character str)
//!   and `%%`; flags `- + space 0 #`, a width and a `.precision` (no `*`);
//!   the length modifiers `h l L` are read and ignored, as Python does;
//! - `%s`/`%r` go through [`str_of`]/[`repr_of`], the core's one text form
//!   of every value, so they show what `print` and `repr` show.

use super::{float_repr, repr_of, str_of};
use crate::error::ErrorKind;
use crate::value::{err, Exc, VResult, Value};

const F_LJUST: u8 = 1;
const F_SIGN: u8 = 2;
const F_BLANK: u8 = 4;
const F_ALT: u8 = 8;
const F_ZERO: u8 = 16;

/// Widths and precisions above this are refused (one field of a gigabyte
/// of padding is a mistake, not a format).
const MAX_FIELD: usize = 100_000_000;

fn type_err(msg: impl Into<String>) -> Exc {
    err(ErrorKind::TypeError, msg)
}

fn value_err(msg: impl Into<String>) -> Exc {
    err(ErrorKind::ValueError, msg)
}

/// Whether Python would treat `v` as a mapping here (`PyMapping_Check`
/// and neither a tuple nor a str): it then supplies `%(name)` fields, and
/// an unused one is not an error.
fn is_mapping(v: &Value) -> bool {
    matches!(
        v,
        Value::Dict(_) | Value::List(_) | Value::Bytes(_) | Value::Range(_) | Value::Object(_)
    )
}

/// Where the values come from: the whole tuple, or one value
/// (`arglen == -1`), as CPython counts them.
struct Source {
    args: Value,
    arglen: isize,
    argidx: isize,
}

impl Source {
    fn next(&mut self) -> VResult<Value> {
        if self.argidx < self.arglen {
            let i = self.argidx;
            self.argidx += 1;
            if self.arglen < 0 {
                return Ok(self.args.clone());
            }
            if let Value::Tuple(t) = &self.args {
                if let Some(v) = t.0.get(i as usize) {
                    return Ok(v.clone());
                }
            }
        }
        Err(type_err("not enough arguments for format string"))
    }
}

/// One conversion specifier, parsed.
struct Spec {
    flags: u8,
    width: usize,
    prec: Option<usize>,
    conv: char,
    /// The character index of the conversion letter (for error messages).
    pos: usize,
}

/// `fmt % args`.
pub fn percent_format(fmt: &str, args: &Value) -> VResult<Value> {
    let chars: Vec<char> = fmt.chars().collect();
    let (arglen, argidx) = match args {
        Value::Tuple(t) => (t.0.len() as isize, 0),
        _ => (-1, -2),
    };
    let dict = is_mapping(args).then(|| args.clone());
    let mut src = Source {
        args: args.clone(),
        arglen,
        argidx,
    };
    let mut out = String::with_capacity(fmt.len() + 16);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c != '%' {
            out.push(c);
            continue;
        }
        // `%%` right after the `%` only: with flags, a width or a key
        // between, Python takes a value and calls `%` unsupported.
        if chars.get(i) == Some(&'%') {
            out.push('%');
            i += 1;
            continue;
        }
        if chars.get(i) == Some(&'(') {
            let Some(d) = &dict else {
                return Err(type_err("format requires a mapping"));
            };
            i += 1;
            let start = i;
            let mut depth = 1;
            while i < chars.len() && depth > 0 {
                match chars[i] {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
                i += 1;
            }
            if depth > 0 {
                return Err(value_err("incomplete format key"));
            }
            let key: String = chars[start..i - 1].iter().collect();
            let v = crate::ops::get_index(d, &Value::str(key))?;
            src = Source {
                args: v,
                arglen: -1,
                argidx: -2,
            };
        }
        let mut flags = 0u8;
        while let Some(&f) = chars.get(i) {
            flags |= match f {
                '-' => F_LJUST,
                '+' => F_SIGN,
                ' ' => F_BLANK,
                '#' => F_ALT,
                '0' => F_ZERO,
                _ => break,
            };
            i += 1;
        }
        let width = number(&chars, &mut i)
            .ok_or_else(|| value_err("width too big"))?
            .unwrap_or(0);
        let mut prec = None;
        if chars.get(i) == Some(&'.') {
            i += 1;
            prec = Some(
                number(&chars, &mut i)
                    .ok_or_else(|| value_err("precision too big"))?
                    .unwrap_or(0),
            );
        }
        while matches!(chars.get(i), Some('h' | 'l' | 'L')) {
            i += 1;
        }
        let Some(&conv) = chars.get(i) else {
            return Err(value_err("incomplete format"));
        };
        i += 1;
        let v = src.next()?;
        let spec = Spec {
            flags,
            width,
            prec,
            conv,
            pos: i - 1,
        };
        convert(&spec, &v, &mut out)?;
    }
    if src.argidx < src.arglen && dict.is_none() {
        return Err(type_err("not all arguments converted during string formatting"));
    }
    Ok(Value::str(out))
}

/// Decimal digits at `chars[*i..]`: `Some(None)` when there are none,
/// `None` when the number is too large.
fn number(chars: &[char], i: &mut usize) -> Option<Option<usize>> {
    let mut n: Option<usize> = None;
    while let Some(d) = chars.get(*i).and_then(|c| c.to_digit(10)) {
        let v = n.unwrap_or(0).checked_mul(10)?.checked_add(d as usize)?;
        if v > MAX_FIELD {
            return None;
        }
        n = Some(v);
        *i += 1;
    }
    Some(n)
}

fn convert(s: &Spec, v: &Value, out: &mut String) -> VResult<()> {
    match s.conv {
        's' | 'r' | 'a' => {
            let text = match s.conv {
                's' => str_of(v),
                'r' => repr_of(v),
                _ => ascii(&repr_of(v)),
            };
            let text = match s.prec {
                Some(p) if text.chars().count() > p => text.chars().take(p).collect(),
                _ => text,
            };
            emit(s, false, "", &text, false, out);
        }
        'c' => {
            let ch = match v {
                Value::Int(_) | Value::Bool(_) => {
                    let n = int_of(v).unwrap_or(0);
                    u32::try_from(n)
                        .ok()
                        .filter(|n| *n < 0x110000)
                        .ok_or_else(|| err(ErrorKind::OverflowError, "%c arg not in range(0x110000)"))?;
                    char::from_u32(n as u32).unwrap_or('\u{FFFD}')
                }
                Value::Str(t) if t.char_len() == 1 => t.as_str().chars().next().unwrap_or(' '),
                _ => return Err(type_err("%c requires int or char")),
            };
            emit(s, false, "", &ch.to_string(), false, out);
        }
        'd' | 'i' | 'u' | 'o' | 'x' | 'X' => {
            let n = match (v, s.conv) {
                (Value::Int(_) | Value::Bool(_), _) => int_of(v).unwrap_or(0),
                (Value::Float(f), 'd' | 'i' | 'u') => truncate(*f)?,
                (_, 'd' | 'i' | 'u') => {
                    return Err(type_err(format!(
                        "%{} format: a real number is required, not {}",
                        s.conv,
                        v.type_name()
                    )))
                }
                _ => {
                    return Err(type_err(format!(
                        "%{} format: an integer is required, not {}",
                        s.conv,
                        v.type_name()
                    )))
                }
            };
            let mag = n.unsigned_abs();
            let mut digits = match s.conv {
                'o' => format!("{mag:o}"),
                'x' => format!("{mag:x}"),
                'X' => format!("{mag:X}"),
                _ => mag.to_string(),
            };
            if let Some(p) = s.prec {
                if digits.len() < p {
                    digits = "0".repeat(p - digits.len()) + &digits;
                }
            }
            let prefix = match s.conv {
                'o' if s.flags & F_ALT != 0 => "0o",
                'x' if s.flags & F_ALT != 0 => "0x",
                'X' if s.flags & F_ALT != 0 => "0X",
                _ => "",
            };
            emit(s, n < 0, prefix, &digits, true, out);
        }
        'e' | 'E' | 'f' | 'F' | 'g' | 'G' => {
            let x = match v {
                Value::Float(f) => *f,
                Value::Int(_) | Value::Bool(_) => int_of(v).unwrap_or(0) as f64,
                other => return Err(type_err(format!("must be real number, not {}", other.type_name()))),
            };
            let upper = matches!(s.conv, 'E' | 'F' | 'G');
            let body = if x.is_finite() {
                super::spec::float_body(x.abs(), Some(s.conv), Some(s.prec.unwrap_or(6)), s.flags & F_ALT != 0)
            } else {
                let t = if x.is_nan() { "nan" } else { "inf" };
                if upper {
                    t.to_uppercase()
                } else {
                    t.to_string()
                }
            };
            emit(s, x.is_sign_negative() && !x.is_nan(), "", &body, true, out);
        }
        c => {
            return Err(value_err(format!(
                "unsupported format character '{c}' (0x{:x}) at index {}",
                c as u32, s.pos
            )));
        }
    }
    Ok(())
}

fn int_of(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Bool(b) => Some(*b as i64),
        _ => None,
    }
}

/// `int(f)` as `%d` takes it: toward zero.
fn truncate(f: f64) -> VResult<i64> {
    if f.is_nan() {
        return Err(value_err("cannot convert float NaN to integer"));
    }
    if f.is_infinite() {
        return Err(err(
            ErrorKind::OverflowError,
            "cannot convert float infinity to integer",
        ));
    }
    let t = f.trunc();
    // 2**63 is the first float past every i64.
    if !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&t) {
        return Err(err(
            ErrorKind::OverflowError,
            format!("float {} does not fit in a 64-bit int", float_repr(f)),
        ));
    }
    Ok(t as i64)
}

/// Python's `ascii()` of a repr: non-ASCII characters escaped.
fn ascii(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let n = c as u32;
        if n < 0x80 {
            out.push(c);
        } else if n <= 0xff {
            out.push_str(&format!("\\x{n:02x}"));
        } else if n <= 0xffff {
            out.push_str(&format!("\\u{n:04x}"));
        } else {
            out.push_str(&format!("\\U{n:08x}"));
        }
    }
    out
}

/// Lays a converted field out: sign (numbers only: `-`, or `+`/space by
/// flag), prefix (`0x`), body; padded to the width on the right with `-`,
/// with zeros between sign/prefix and digits with `0` (numbers only),
/// otherwise with spaces on the left.
fn emit(s: &Spec, neg: bool, prefix: &str, body: &str, numeric: bool, out: &mut String) {
    let sign = if !numeric {
        ""
    } else if neg {
        "-"
    } else if s.flags & F_SIGN != 0 {
        "+"
    } else if s.flags & F_BLANK != 0 {
        " "
    } else {
        ""
    };
    let len = sign.len() + prefix.len() + body.chars().count();
    let pad = s.width.saturating_sub(len);
    if pad == 0 {
        out.push_str(sign);
        out.push_str(prefix);
        out.push_str(body);
    } else if s.flags & F_LJUST != 0 {
        out.push_str(sign);
        out.push_str(prefix);
        out.push_str(body);
        out.extend(std::iter::repeat_n(' ', pad));
    } else if numeric && s.flags & F_ZERO != 0 {
        out.push_str(sign);
        out.push_str(prefix);
        out.extend(std::iter::repeat_n('0', pad));
        out.push_str(body);
    } else {
        out.extend(std::iter::repeat_n(' ', pad));
        out.push_str(sign);
        out.push_str(prefix);
        out.push_str(body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{DictMap, HashKey};

    fn f(fmt: &str, args: Value) -> String {
        match percent_format(fmt, &args) {
            Ok(v) => str_of(&v),
            Err(e) => format!("{}: {}", e.kind.name(), e.message),
        }
    }
    fn t(items: Vec<Value>) -> Value {
        Value::tuple(items)
    }
    use Value::{Float as F, Int as I};

    #[test]
    fn conformance_lines() {
        assert_eq!(
            f(
                "%d %s %.3f %5.1f %x %r %%",
                t(vec![
                    I(42),
                    Value::str("str"),
                    F(3.14158),
                    F(2.25),
                    I(255),
                    Value::str("q")
                ])
            ),
            "42 str 3.142   2.2 ff 'q' %"
        );
        assert_eq!(
            f(
                "[%5d] [%-5d] [%05d] [%+d] [% d] [%+.2f]",
                t(vec![I(42), I(42), I(-42), I(42), I(42), F(-1.005)])
            ),
            "[   42] [42   ] [-0042] [+42] [ 42] [-1.00]"
        );
        assert_eq!(
            f("%i %d %d %d", t(vec![I(3), F(3.99), F(-3.99), Value::Bool(true)])),
            "3 3 -3 1"
        );
        assert_eq!(
            f(
                "%x %X %o %#x %#X %#o %x",
                t(vec![I(255), I(255), I(8), I(255), I(255), I(8), I(-255)])
            ),
            "ff FF 10 0xff 0XFF 0o10 -ff"
        );
        assert_eq!(
            f("%s and %r", t(vec![Value::Bool(true), Value::str("it's")])),
            "true and \"it's\""
        );
        assert_eq!(f("%s", t(vec![t(vec![I(1), I(2)])])), "(1, 2)");
        assert_eq!(f("%s|%s", t(vec![F(1.0), F(1e16)])), "1.0|1e+16");
        assert_eq!(f("%5.1f%%", F(99.5)), " 99.5%");
        assert_eq!(f("%08.3f", F(-3.14158)), "-003.142");
    }

    #[test]
    fn mappings() {
        let mut m = DictMap::new();
        m.insert(
            HashKey::new(Value::str("name")).unwrap_or_else(|_| HashKey::int(0)),
            Value::str("Ann"),
        );
        m.insert(
            HashKey::new(Value::str("age")).unwrap_or_else(|_| HashKey::int(0)),
            I(7),
        );
        let d = Value::dict(m);
        assert_eq!(f("%(name)s is %(age)d, %(name)s!", d.clone()), "Ann is 7, Ann!");
        assert_eq!(f("%(nope)s", d.clone()), "KeyError: 'nope'");
        assert_eq!(f("no fields", d.clone()), "no fields");
        assert_eq!(f("%(name", d), "ValueError: incomplete format key");
        assert_eq!(f("%(a)s", I(1)), "TypeError: format requires a mapping");
        assert_eq!(f("x", Value::list(vec![])), "x");
    }

    #[test]
    fn errors_are_pythons() {
        assert_eq!(
            f("%d %d", t(vec![I(1)])),
            "TypeError: not enough arguments for format string"
        );
        assert_eq!(
            f("%d", t(vec![I(1), I(2)])),
            "TypeError: not all arguments converted during string formatting"
        );
        assert_eq!(
            f("x", I(1)),
            "TypeError: not all arguments converted during string formatting"
        );
        assert_eq!(
            f("%d", Value::str("x")),
            "TypeError: %d format: a real number is required, not str"
        );
        assert_eq!(
            f("%x", F(1.5)),
            "TypeError: %x format: an integer is required, not float"
        );
        assert_eq!(f("%f", Value::str("x")), "TypeError: must be real number, not str");
        assert_eq!(
            f("%y", I(1)),
            "ValueError: unsupported format character 'y' (0x79) at index 1"
        );
        assert_eq!(f("%y", t(vec![])), "TypeError: not enough arguments for format string");
        assert_eq!(f("abc %", t(vec![])), "ValueError: incomplete format");
        assert_eq!(f("%c", I(-1)), "OverflowError: %c arg not in range(0x110000)");
        assert_eq!(f("%c", Value::str("ab")), "TypeError: %c requires int or char");
        assert_eq!(f("%d", F(f64::NAN)), "ValueError: cannot convert float NaN to integer");
        assert_eq!(
            f("%d", F(f64::INFINITY)),
            "OverflowError: cannot convert float infinity to integer"
        );
        assert_eq!(f("%999999999999d", I(1)), "ValueError: width too big");
    }

    #[test]
    fn odd_corners() {
        assert_eq!(
            f("%05.3d|%#.3x|%-05d|%+ d", t(vec![I(5), I(5), I(5), I(5)])),
            "00005|0x005|5    |+5"
        );
        assert_eq!(
            f(
                "%05s|%05c|%.3s",
                t(vec![Value::str("ab"), Value::str("a"), Value::str("héllo")])
            ),
            "   ab|    a|hél"
        );
        assert_eq!(
            f("%#5o|%#.0e|%05f", t(vec![I(8), F(2.0), F(f64::INFINITY)])),
            " 0o10|2.e+00|00inf"
        );
        assert_eq!(f("%d", I(i64::MIN)), "-9223372036854775808");
        assert_eq!(f("%x", I(i64::MIN)), "-8000000000000000");
        assert_eq!(f("%a", Value::str("é")), "'\\xe9'");
        assert_eq!(f("%ld %c", t(vec![I(3), I(72)])), "3 H");
        assert_eq!(f("%.0f %f", t(vec![F(-0.4), F(-0.0)])), "-0 -0.000000");
        assert_eq!(f("%G %E", t(vec![F(f64::NAN), F(f64::NEG_INFINITY)])), "NAN -INF");
        assert_eq!(
            f("%%|%5%", t(vec![I(1)])),
            "ValueError: unsupported format character '%' (0x25) at index 5"
        );
        assert_eq!(f("%-%", t(vec![])), "TypeError: not enough arguments for format string");
    }
}
