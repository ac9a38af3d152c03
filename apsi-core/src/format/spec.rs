//! Python's format mini-language (`f"{x:>10.3f}"`, `format(x, spec)`):
//! `[[fill]align][sign][z][#][0][width][grouping][.precision][type]`.
//!
//! Decisions where Python has no answer for Apsi's values: a bool with no
//! type (or `s`) formats as its text `true`/`false` and as `1`/`0` with an
//! integer or float type; any value other than a number or a string
//! (`none`, lists, structs, tensors, …) formats as its `str` text under the
//! string rules (fill, align, width, precision truncates).

use crate::error::ErrorKind;
use crate::text::float::{fixed, float_repr, positional, scientific, significant};
use crate::value::{err, VResult, Value};

#[derive(Debug, Default, Clone)]
struct Spec {
    fill: Option<char>,
    align: Option<char>,
    sign: Option<char>,
    z: bool,
    alt: bool,
    zero: bool,
    width: usize,
    grouping: Option<char>,
    precision: Option<usize>,
    ty: Option<char>,
}

fn invalid(spec: &str, v: &Value) -> crate::value::Exc {
    err(
        ErrorKind::ValueError,
        format!(
            "invalid format specifier '{spec}' for a value of type {}",
            v.type_name()
        ),
    )
}

fn parse(spec: &str, v: &Value) -> VResult<Spec> {
    let chars: Vec<char> = spec.chars().collect();
    let mut s = Spec::default();
    let mut i = 0;
    let is_align = |c: char| matches!(c, '<' | '>' | '^' | '=');
    if chars.len() >= 2 && is_align(chars[1]) {
        s.fill = Some(chars[0]);
        s.align = Some(chars[1]);
        i = 2;
    } else if !chars.is_empty() && is_align(chars[0]) {
        s.align = Some(chars[0]);
        i = 1;
    }
    if let Some(&c) = chars.get(i) {
        if matches!(c, '+' | '-' | ' ') {
            s.sign = Some(c);
            i += 1;
        }
    }
    if chars.get(i) == Some(&'z') {
        s.z = true;
        i += 1;
    }
    if chars.get(i) == Some(&'#') {
        s.alt = true;
        i += 1;
    }
    if chars.get(i) == Some(&'0') {
        s.zero = true;
        i += 1;
    }
    let start = i;
    while chars.get(i).is_some_and(|c| c.is_ascii_digit()) {
        i += 1;
    }
    if i > start {
        let text: String = chars[start..i].iter().collect();
        s.width = text
            .parse::<usize>()
            .ok()
            .filter(|w| *w <= 1_000_000)
            .ok_or_else(|| err(ErrorKind::ValueError, "too many decimal digits in format string"))?;
    }
    if let Some(&c) = chars.get(i) {
        if c == ',' || c == '_' {
            s.grouping = Some(c);
            i += 1;
            if matches!(chars.get(i), Some(',') | Some('_')) {
                return Err(err(ErrorKind::ValueError, "cannot specify both ',' and '_'"));
            }
        }
    }
    if chars.get(i) == Some(&'.') {
        i += 1;
        let start = i;
        while chars.get(i).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
        }
        if i == start {
            return Err(err(ErrorKind::ValueError, "format specifier missing precision"));
        }
        let text: String = chars[start..i].iter().collect();
        s.precision = Some(
            text.parse::<usize>()
                .ok()
                .filter(|p| *p <= 1_000_000)
                .ok_or_else(|| err(ErrorKind::ValueError, "too many decimal digits in format string"))?,
        );
    }
    if let Some(&c) = chars.get(i) {
        s.ty = Some(c);
        i += 1;
    }
    if i != chars.len() {
        return Err(invalid(spec, v));
    }
    // The `0` flag: zero fill, and sign-aware padding when no alignment is given.
    if s.zero && s.fill.is_none() {
        s.fill = Some('0');
    }
    Ok(s)
}

/// Formats a value under a format spec. An empty spec gives `str(x)`.
pub fn format_value(v: &Value, spec: &str) -> VResult<String> {
    if spec.is_empty() {
        return super::repr::str_checked(v);
    }
    let s = parse(spec, v)?;
    match v {
        Value::Int(i) => format_int(*i, &s, "int"),
        Value::Bool(b) => match s.ty {
            None | Some('s') => format_text(if *b { "true" } else { "false" }, &s, v),
            Some(_) => format_int(*b as i64, &s, "bool"),
        },
        Value::Float(f) => format_float(*f, &s, "float"),
        Value::Str(text) => format_text(text.as_str(), &s, v),
        other => format_text(&super::repr::str_checked(other)?, &s, other),
    }
}

fn unknown_code(ty: char, type_name: &str) -> crate::value::Exc {
    err(
        ErrorKind::ValueError,
        format!("unknown format code '{ty}' for value of type {type_name}"),
    )
}

fn format_text(text: &str, s: &Spec, v: &Value) -> VResult<String> {
    let type_name = v.type_name();
    if let Some(ty) = s.ty {
        if ty != 's' {
            return Err(unknown_code(ty, type_name));
        }
    }
    if s.sign.is_some() {
        return Err(err(
            ErrorKind::ValueError,
            "sign not allowed in string format specifier",
        ));
    }
    if s.alt {
        return Err(err(
            ErrorKind::ValueError,
            "alternate form (#) not allowed in string format specifier",
        ));
    }
    if s.z {
        return Err(err(
            ErrorKind::ValueError,
            "negative zero coercion (z) not allowed in string format specifier",
        ));
    }
    if let Some(g) = s.grouping {
        return Err(err(ErrorKind::ValueError, format!("cannot specify '{g}' with 's'")));
    }
    if s.align == Some('=') {
        return Err(err(
            ErrorKind::ValueError,
            "'=' alignment not allowed in string format specifier",
        ));
    }
    let body: String = match s.precision {
        Some(p) => text.chars().take(p).collect(),
        None => text.to_string(),
    };
    Ok(pad(&body, "", s.fill.unwrap_or(' '), s.align.unwrap_or('<'), s.width))
}

/// Pads `body` (with `prefix` = sign and base prefix, kept before `=` padding).
fn pad(body: &str, prefix: &str, fill: char, align: char, width: usize) -> String {
    let len = prefix.chars().count() + body.chars().count();
    if len >= width {
        return format!("{prefix}{body}");
    }
    let n = width - len;
    let fills = |k: usize| std::iter::repeat_n(fill, k).collect::<String>();
    match align {
        '<' => format!("{prefix}{body}{}", fills(n)),
        '^' => format!("{}{prefix}{body}{}", fills(n / 2), fills(n - n / 2)),
        '=' => format!("{prefix}{}{body}", fills(n)),
        _ => format!("{}{prefix}{body}", fills(n)),
    }
}

/// Inserts `sep` every `every` digits from the right of an all-digit string.
fn group(digits: &str, sep: char, every: usize) -> String {
    let n = digits.len();
    let mut out = String::with_capacity(n + n / every);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (n - i).is_multiple_of(every) {
            out.push(sep);
        }
        out.push(c);
    }
    out
}

/// Assembles a number: sign, prefix (`0x`), integer digits (grouped), and
/// the rest (fraction, exponent, `%`), then pads. With `0` fill and `=`
/// alignment the zero padding is part of the digits and is grouped too,
/// as Python does (`format(1234, '010,')` is `00,001,234`).
fn assemble(sign: &str, prefix: &str, int_digits: &str, rest: &str, s: &Spec, grouping_every: usize) -> String {
    let fill = s.fill.unwrap_or(' ');
    let align = s.align.unwrap_or(if s.zero { '=' } else { '>' });
    let head = format!("{sign}{prefix}");
    let grouped = |d: &str| match s.grouping {
        Some(sep) => group(d, sep, grouping_every),
        None => d.to_string(),
    };
    if align == '=' && fill == '0' && !int_digits.is_empty() {
        let want = s.width.saturating_sub(head.chars().count() + rest.chars().count());
        // The fewest digits whose grouped text is at least `want` long.
        let grouped_len = |d: usize| {
            if s.grouping.is_some() {
                d + (d - 1) / grouping_every
            } else {
                d
            }
        };
        let mut n = int_digits.len();
        while grouped_len(n) < want {
            n += 1;
        }
        let digits = format!("{}{int_digits}", "0".repeat(n - int_digits.len()));
        return format!("{head}{}{rest}", grouped(&digits));
    }
    let body = format!("{}{rest}", grouped(int_digits));
    pad(&body, &head, fill, align, s.width)
}

fn sign_text(neg: bool, s: &Spec) -> &'static str {
    if neg {
        "-"
    } else {
        match s.sign {
            Some('+') => "+",
            Some(' ') => " ",
            _ => "",
        }
    }
}

fn format_int(i: i64, s: &Spec, type_name: &str) -> VResult<String> {
    let ty = s.ty.unwrap_or('d');
    match ty {
        'e' | 'E' | 'f' | 'F' | 'g' | 'G' | '%' => return format_float(i as f64, s, type_name),
        'd' | 'n' | 'b' | 'o' | 'x' | 'X' | 'c' => {}
        other => return Err(unknown_code(other, type_name)),
    }
    if s.precision.is_some() {
        return Err(err(
            ErrorKind::ValueError,
            "precision not allowed in integer format specifier",
        ));
    }
    if s.z {
        return Err(err(
            ErrorKind::ValueError,
            "negative zero coercion (z) not allowed in integer format specifier",
        ));
    }
    if let Some(g) = s.grouping {
        let ok = match g {
            ',' => ty == 'd',
            _ => matches!(ty, 'd' | 'b' | 'o' | 'x' | 'X'),
        };
        if !ok {
            return Err(err(ErrorKind::ValueError, format!("cannot specify '{g}' with '{ty}'")));
        }
    }
    if ty == 'c' {
        if s.sign.is_some() {
            return Err(err(
                ErrorKind::ValueError,
                "sign not allowed with integer format specifier 'c'",
            ));
        }
        if s.alt {
            return Err(err(
                ErrorKind::ValueError,
                "alternate form (#) not allowed with integer format specifier 'c'",
            ));
        }
        let c = u32::try_from(i)
            .ok()
            .and_then(char::from_u32)
            .ok_or_else(|| err(ErrorKind::OverflowError, format!("%c arg not in range(0x110000): {i}")))?;
        let text = c.to_string();
        let align = s.align.unwrap_or(if s.zero { '=' } else { '>' });
        return Ok(pad(&text, "", s.fill.unwrap_or(' '), align, s.width));
    }
    let mag = i.unsigned_abs();
    let (digits, prefix, every) = match ty {
        'b' => (format!("{mag:b}"), "0b", 4),
        'o' => (format!("{mag:o}"), "0o", 4),
        'x' => (format!("{mag:x}"), "0x", 4),
        'X' => (format!("{mag:X}"), "0X", 4),
        _ => (mag.to_string(), "", 3),
    };
    let prefix = if s.alt { prefix } else { "" };
    Ok(assemble(sign_text(i < 0, s), prefix, &digits, "", s, every))
}

fn strip_trailing_zeros(text: &str) -> String {
    if !text.contains('.') {
        return text.to_string();
    }
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The body of a finite non-negative float under a float presentation type.
pub(crate) fn float_body(x: f64, ty: Option<char>, prec: Option<usize>, alt: bool) -> String {
    match ty {
        Some('f') | Some('F') | Some('%') => {
            let p = prec.unwrap_or(6);
            let mut t = fixed(x, p);
            if alt && p == 0 {
                t.push('.');
            }
            t
        }
        Some('e') | Some('E') => {
            let p = prec.unwrap_or(6);
            let d = significant(x, p + 1);
            let mut t = scientific(&d, p, ty == Some('E'));
            if alt && p == 0 {
                if let Some(pos) = t.find(['e', 'E']) {
                    t.insert(pos, '.');
                }
            }
            t
        }
        Some('g') | Some('G') | Some('n') | None => {
            let no_type = ty.is_none();
            let p = match prec {
                None if no_type => {
                    let mut t = float_repr(x);
                    if alt && !t.contains('.') {
                        let pos = t.find('e').unwrap_or(t.len());
                        t.insert(pos, '.');
                    }
                    return t;
                }
                None => 6,
                Some(0) => 1,
                Some(p) => p,
            };
            let d = significant(x, p);
            let exp = d.exp as i64;
            // With no type Python keeps a digit after the point and so
            // switches to scientific one digit earlier.
            let limit = if no_type { p as i64 - 1 } else { p as i64 };
            let upper = ty == Some('G');
            if exp < -4 || exp >= limit {
                let mut t = scientific(&d, if alt { p - 1 } else { 0 }, upper);
                if let Some(pos) = t.find(['e', 'E']) {
                    let (m, e) = t.split_at(pos);
                    if !alt {
                        t = format!("{}{e}", strip_trailing_zeros(m));
                    } else if !m.contains('.') {
                        t = format!("{m}.{e}");
                    }
                }
                t
            } else {
                let frac = (p as i64 - 1 - exp).max(0) as usize;
                let mut t = positional(&d, frac);
                if !alt {
                    t = strip_trailing_zeros(&t);
                }
                if no_type && !t.contains('.') {
                    t.push_str(".0");
                }
                if alt && !t.contains('.') {
                    t.push('.');
                }
                t
            }
        }
        _ => String::new(),
    }
}

fn format_float(x: f64, s: &Spec, type_name: &str) -> VResult<String> {
    let ty = s.ty;
    match ty {
        None | Some('e' | 'E' | 'f' | 'F' | 'g' | 'G' | 'n' | '%') => {}
        Some(other) => return Err(unknown_code(other, type_name)),
    }
    if let (Some(g), Some('n')) = (s.grouping, ty) {
        return Err(err(ErrorKind::ValueError, format!("cannot specify '{g}' with 'n'")));
    }
    let upper = matches!(ty, Some('F' | 'E' | 'G'));
    let pct = ty == Some('%');
    let mut neg = x.is_sign_negative() && !x.is_nan();
    let (int_digits, rest) = if !x.is_finite() {
        let t = if x.is_nan() { "nan" } else { "inf" };
        let t = if upper { t.to_uppercase() } else { t.to_string() };
        (String::new(), if pct { format!("{t}%") } else { t })
    } else {
        let v = if pct { x.abs() * 100.0 } else { x.abs() };
        let mut body = float_body(v, ty, s.precision, s.alt);
        if s.z && neg && body.chars().all(|c| !c.is_ascii_digit() || c == '0') {
            neg = false;
        }
        if pct {
            body.push('%');
        }
        let split = body.find(|c: char| !c.is_ascii_digit()).unwrap_or(body.len());
        let (a, b) = body.split_at(split);
        (a.to_string(), b.to_string())
    };
    Ok(assemble(sign_text(neg, s), "", &int_digits, &rest, s, 3))
}

#[cfg(test)]
#[allow(clippy::approx_constant)] // 3.14159 is the conformance programs' value
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::ops::Must;

    fn f(v: Value, spec: &str) -> String {
        format_value(&v, spec).must()
    }

    #[test]
    fn conformance_examples() {
        assert_eq!(f(Value::Float(3.14159), ".2f"), "3.14");
        assert_eq!(f(Value::Int(42), "5d"), "   42");
        assert_eq!(f(Value::Int(42), "<5d"), "42   ");
        assert_eq!(f(Value::Float(3.14159), "e"), "3.141590e+00");
        assert_eq!(f(Value::Float(0.25), ".1%"), "25.0%");
        assert_eq!(f(Value::Int(1234567), ","), "1,234,567");
        assert_eq!(f(Value::Int(1234), "010,"), "00,001,234");
    }

    #[test]
    fn float_without_type() {
        assert_eq!(f(Value::Float(123.0), ".3"), "1.23e+02");
        assert_eq!(f(Value::Float(12.0), ".3"), "12.0");
        assert_eq!(f(Value::Float(1.5), "10"), "       1.5");
        assert_eq!(f(Value::Float(0.1), ""), "0.1");
    }

    #[test]
    fn wrong_codes_are_value_errors() {
        let e = format_value(&Value::Float(1.0), "d").unwrap_err();
        assert_eq!(e.kind, ErrorKind::ValueError);
        assert_eq!(e.message, "unknown format code 'd' for value of type float");
        assert!(format_value(&Value::str("x"), "+").is_err());
        assert!(format_value(&Value::Int(1), ".2d").is_err());
        assert!(format_value(&Value::Int(1), "5q").is_err());
        assert!(format_value(&Value::Int(1), ".").is_err());
    }

    #[test]
    fn ints_in_other_bases_and_edge_values() {
        assert_eq!(f(Value::Int(255), "#x"), "0xff");
        assert_eq!(f(Value::Int(255), "#010b"), "0b11111111");
        assert_eq!(f(Value::Int(i64::MIN), "d"), "-9223372036854775808");
        assert_eq!(f(Value::Int(65), "c"), "A");
        assert_eq!(f(Value::Bool(true), ""), "true");
        assert_eq!(f(Value::Bool(true), "5"), "true ");
        assert_eq!(f(Value::Bool(true), "d"), "1");
        assert_eq!(f(Value::None, ">6"), "  none");
    }
}
