//! Methods of strings. Indices and lengths count characters, not bytes.

use super::args::{expect_str, Args};
use crate::error::ErrorKind;
use crate::format::{format_value, repr_of, str_of};
use crate::ops;
use crate::value::{err, Caller, Kwargs, NativeFnPtr, StrObj, VResult, Value};

pub(crate) const NAMES: &[&str] = &[
    "upper",
    "lower",
    "strip",
    "lstrip",
    "rstrip",
    "split",
    "rsplit",
    "splitlines",
    "join",
    "replace",
    "startswith",
    "endswith",
    "find",
    "rfind",
    "index",
    "rindex",
    "count",
    "isdigit",
    "isalpha",
    "isalnum",
    "isspace",
    "isupper",
    "islower",
    "title",
    "capitalize",
    "swapcase",
    "zfill",
    "center",
    "ljust",
    "rjust",
    "format",
    "partition",
    "rpartition",
    "encode",
];

pub(crate) fn method(name: &str) -> Option<NativeFnPtr> {
    Some(match name {
        "upper" => upper,
        "encode" => super::bytes::str_encode,
        "lower" => lower,
        "strip" => strip,
        "lstrip" => lstrip,
        "rstrip" => rstrip,
        "split" => split,
        "rsplit" => rsplit,
        "splitlines" => splitlines,
        "join" => join,
        "replace" => replace,
        "startswith" => startswith,
        "endswith" => endswith,
        "find" => find,
        "rfind" => rfind,
        "index" => index,
        "rindex" => rindex,
        "count" => count,
        "isdigit" => isdigit,
        "isalpha" => isalpha,
        "isalnum" => isalnum,
        "isspace" => isspace,
        "isupper" => isupper,
        "islower" => islower,
        "title" => title,
        "capitalize" => capitalize,
        "swapcase" => swapcase,
        "zfill" => zfill,
        "center" => center,
        "ljust" => ljust,
        "rjust" => rjust,
        "format" => format,
        "partition" => partition,
        "rpartition" => rpartition,
        _ => return None,
    })
}

fn recv<'a>(args: &'a [Value], name: &str) -> VResult<(&'a str, &'a [Value])> {
    match args.split_first() {
        Some((Value::Str(s), rest)) => Ok((s.as_str(), rest)),
        _ => Err(err(ErrorKind::TypeError, format!("str.{name}() needs a str receiver"))),
    }
}

fn s(v: String) -> VResult<Value> {
    Ok(Value::str(v))
}

/// No arguments beyond the receiver (checked by `Args` only when some
/// were given, for its error message).
fn no_args(name: &'static str, rest: &[Value], kw: Kwargs) -> VResult<()> {
    if rest.is_empty() && kw.is_empty() {
        return Ok(());
    }
    Args::new(name, rest, kw, 0, &[]).map(|_| ())
}

/// `upper`/`lower`: ASCII text is mapped byte by byte (and a string with
/// nothing to change is returned as it is: strings are immutable);
/// anything else through Unicode's full case mapping.
fn change_case(args: &[Value], kw: Kwargs, name: &'static str, upper: bool) -> VResult<Value> {
    let (t, rest) = recv(args, name)?;
    no_args(name, rest, kw)?;
    if t.is_ascii() {
        let changes = |b: &u8| {
            if upper {
                b.is_ascii_lowercase()
            } else {
                b.is_ascii_uppercase()
            }
        };
        if !t.as_bytes().iter().any(changes) {
            return Ok(args[0].clone());
        }
        let map = |b: &mut [u8]| {
            if upper {
                b.make_ascii_uppercase()
            } else {
                b.make_ascii_lowercase()
            }
        };
        // Short text is mapped on the stack and stored inline (no `String`).
        if t.len() <= StrObj::INLINE {
            let mut buf = [0u8; StrObj::INLINE];
            let b = &mut buf[..t.len()];
            b.copy_from_slice(t.as_bytes());
            map(b);
            return Ok(Value::str(std::str::from_utf8(b).unwrap_or_default()));
        }
        let mut out = t.to_string();
        if upper {
            out.make_ascii_uppercase();
        } else {
            out.make_ascii_lowercase();
        }
        return Ok(Value::str(out));
    }
    s(if upper { t.to_uppercase() } else { t.to_lowercase() })
}

fn upper(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    change_case(args, kw, "upper", true)
}

fn lower(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    change_case(args, kw, "lower", false)
}

fn strip_with(name: &'static str, args: &[Value], kw: Kwargs, left: bool, right: bool) -> VResult<Value> {
    let (t, rest) = recv(args, name)?;
    let chars: Option<Vec<char>> = if rest.is_empty() && kw.is_empty() {
        None
    } else {
        match Args::new(name, rest, kw, 0, &["chars"])?.opt(0) {
            Some(Value::None) | None => None,
            Some(v) => Some(expect_str(v, name, "chars")?.chars().collect()),
        }
    };
    let pred = |c: char| match &chars {
        Some(cs) => cs.contains(&c),
        None => is_py_space(c),
    };
    let mut out = t;
    if left {
        out = out.trim_start_matches(pred);
    }
    if right {
        out = out.trim_end_matches(pred);
    }
    // Nothing stripped: the same string (it is immutable).
    if out.len() == t.len() {
        return Ok(args[0].clone());
    }
    Ok(Value::str(out))
}

fn strip(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    strip_with("strip", args, kw, true, true)
}
fn lstrip(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    strip_with("lstrip", args, kw, true, false)
}
fn rstrip(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    strip_with("rstrip", args, kw, false, true)
}

fn strs(parts: Vec<&str>) -> Value {
    Value::list(parts.into_iter().map(Value::str).collect())
}

/// Python's whitespace (`str.isspace`, what `split()` and `strip()` take
/// away): Unicode's White_Space, plus the ASCII separators U+001C..U+001F
/// that Python counts and Rust's `char::is_whitespace` does not.
#[inline]
fn is_py_space(c: char) -> bool {
    if c.is_ascii() {
        is_ascii_py_space(c as u8)
    } else {
        c.is_whitespace()
    }
}

#[inline]
fn is_ascii_py_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t'..=b'\r' | 0x1c..=0x1f)
}

/// `split()` of ASCII text with no `maxsplit`: runs of whitespace bytes
/// separate, one pass over the bytes.
fn split_ascii_whitespace_all(t: &str) -> Vec<&str> {
    let b = t.as_bytes();
    let mut parts = Vec::with_capacity(b.len() / 6 + 1);
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && is_ascii_py_space(b[i]) {
            i += 1;
        }
        let start = i;
        while i < b.len() && !is_ascii_py_space(b[i]) {
            i += 1;
        }
        if i > start {
            // ASCII: every byte index is a character boundary.
            parts.push(&t[start..i]);
        }
    }
    parts
}

/// Python's whitespace split: runs of whitespace separate, ends are trimmed;
/// after `maxsplit` splits the rest is one part (leading space removed).
fn split_whitespace(t: &str, maxsplit: i64, from_right: bool) -> Vec<&str> {
    if maxsplit < 0 && t.is_ascii() {
        return split_ascii_whitespace_all(t);
    }
    let mut parts = Vec::new();
    if from_right {
        let mut rest = t.trim_end_matches(is_py_space);
        while !rest.is_empty() {
            if maxsplit >= 0 && parts.len() as i64 == maxsplit {
                parts.push(rest);
                break;
            }
            match rest.rfind(is_py_space) {
                Some(i) => {
                    let ws_len = rest[i..].chars().next().map_or(1, char::len_utf8);
                    parts.push(&rest[i + ws_len..]);
                    rest = rest[..i].trim_end_matches(is_py_space);
                }
                None => {
                    parts.push(rest);
                    break;
                }
            }
        }
        parts.reverse();
    } else {
        let mut rest = t.trim_start_matches(is_py_space);
        while !rest.is_empty() {
            if maxsplit >= 0 && parts.len() as i64 == maxsplit {
                parts.push(rest);
                break;
            }
            match rest.find(is_py_space) {
                Some(i) => {
                    parts.push(&rest[..i]);
                    rest = rest[i..].trim_start_matches(is_py_space);
                }
                None => {
                    parts.push(rest);
                    break;
                }
            }
        }
    }
    parts
}

fn split_impl(name: &'static str, args: &[Value], kw: Kwargs, from_right: bool) -> VResult<Value> {
    let (t, rest) = recv(args, name)?;
    let a = Args::new(name, rest, kw, 0, &["sep", "maxsplit"])?;
    let maxsplit = a.int_or(1, -1)?;
    let Some(sep) = a.opt(0) else {
        return Ok(strs(split_whitespace(t, maxsplit, from_right)));
    };
    let sep = expect_str(sep, name, "sep")?;
    if sep.is_empty() {
        return Err(err(ErrorKind::ValueError, "empty separator"));
    }
    let parts: Vec<&str> = match (maxsplit >= 0, from_right) {
        (false, _) => t.split(sep).collect(),
        (true, false) => t.splitn(maxsplit.saturating_add(1) as usize, sep).collect(),
        (true, true) => {
            let mut p: Vec<&str> = t.rsplitn(maxsplit.saturating_add(1) as usize, sep).collect();
            p.reverse();
            p
        }
    };
    Ok(strs(parts))
}

fn split(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    split_impl("split", args, kw, false)
}
fn rsplit(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    split_impl("rsplit", args, kw, true)
}

fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{b}' | '\u{c}' | '\u{1c}' | '\u{1d}' | '\u{1e}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

fn splitlines(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (t, rest) = recv(args, "splitlines")?;
    let a = Args::new("splitlines", rest, kw, 0, &["keepends"])?;
    let keep = a.bool_or(0, false)?;
    let mut parts = Vec::new();
    let mut start = 0;
    let mut iter = t.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        if is_line_break(c) {
            let mut end = i + c.len_utf8();
            if c == '\r' {
                if let Some(&(j, '\n')) = iter.peek() {
                    end = j + 1;
                    iter.next();
                }
            }
            parts.push(if keep { &t[start..end] } else { &t[start..i] });
            start = end;
        }
    }
    if start < t.len() {
        parts.push(&t[start..]);
    }
    Ok(strs(parts))
}

fn join(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (sep, rest) = recv(args, "join")?;
    let a = Args::new("join", rest, kw, 1, &["xs"])?;
    // Lists and tuples are joined in place (one read lock, no copy of the
    // items); other iterables are materialised first.
    match a.req(0)? {
        Value::List(l) => s(join_items(sep, &l.items.read())?),
        Value::Tuple(t) => s(join_items(sep, &t.0)?),
        other => {
            let items = ops::iterate(c, other)?;
            s(join_items(sep, &items)?)
        }
    }
}

/// `sep` between the strings `items`, sized exactly before copying.
fn join_items(sep: &str, items: &[Value]) -> VResult<String> {
    let mut total = sep.len().saturating_mul(items.len().saturating_sub(1));
    for (i, x) in items.iter().enumerate() {
        match x {
            Value::Str(p) => total = total.saturating_add(p.as_str().len()),
            other => {
                return Err(err(
                    ErrorKind::TypeError,
                    format!("join(): item {i} is a {}, expected a str", other.type_name()),
                ))
            }
        }
    }
    // Most pieces are short inline strings: each is copied as one fixed-size
    // block (the buffer has that much slack at its end), not by a `memcpy`
    // call sized at run time.
    const BLOCK: usize = StrObj::INLINE;
    let too_long = || {
        err(
            ErrorKind::OverflowError,
            format!("join(): the result would be {total} bytes, more than memory can hold"),
        )
    };
    let cap = total.checked_add(BLOCK).ok_or_else(too_long)?;
    let mut out: Vec<u8> = Vec::new();
    out.try_reserve_exact(cap).map_err(|_| too_long())?;
    let base = out.as_mut_ptr();
    let mut len = 0usize;
    for (i, x) in items.iter().enumerate() {
        if i > 0 && !sep.is_empty() {
            // SAFETY: len + sep.len() <= total < cap (total counts every separator).
            unsafe { std::ptr::copy_nonoverlapping(sep.as_ptr(), base.add(len), sep.len()) };
            len += sep.len();
        }
        if let Value::Str(p) = x {
            match p.inline_block() {
                Some((n, block)) => {
                    // SAFETY: len + n <= total, so len + BLOCK <= total + BLOCK = cap.
                    unsafe { std::ptr::copy_nonoverlapping(block.as_ptr(), base.add(len), BLOCK) };
                    len += n;
                }
                None => {
                    let b = p.as_str().as_bytes();
                    // SAFETY: len + b.len() <= total < cap.
                    unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), base.add(len), b.len()) };
                    len += b.len();
                }
            }
        }
    }
    debug_assert_eq!(len, total);
    // SAFETY: the first `len` bytes were written above, and they are whole
    // UTF-8 strings and separators one after another.
    unsafe {
        out.set_len(len);
        Ok(String::from_utf8_unchecked(out))
    }
}

fn replace(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (t, rest) = recv(args, "replace")?;
    let a = Args::new("replace", rest, kw, 2, &["old", "new", "count"])?;
    let (old, new) = (a.str(0)?, a.str(1)?);
    let count = a.int_or(2, -1)?;
    if count == 0 || (!old.is_empty() && !t.contains(old)) {
        return Ok(args[0].clone());
    }
    // A one-character pattern is searched with `memchr`, not a substring searcher.
    let mut chars = old.chars();
    if let (Some(ch), None, true) = (chars.next(), chars.next(), count < 0) {
        return s(t.replace(ch, new));
    }
    if count < 0 {
        s(t.replace(old, new))
    } else {
        s(t.replacen(old, new, count as usize))
    }
}

/// The byte range of characters `start..end` (Python slice bounds, either
/// may be negative or absent) and the character index of its start.
fn char_window(t: &str, start: Option<i64>, end: Option<i64>) -> Option<(usize, usize, usize)> {
    let n = t.chars().count() as i64;
    let fix = |v: i64| if v < 0 { (v + n).max(0) } else { v.min(n) };
    let lo = start.map_or(0, fix);
    let hi = end.map_or(n, fix);
    if start.is_some_and(|s| s > n) || lo > hi {
        return None;
    }
    let byte_at = |ci: i64| t.char_indices().nth(ci as usize).map_or(t.len(), |(b, _)| b);
    Some((byte_at(lo), byte_at(hi), lo as usize))
}

fn window_args<'a>(
    name: &'static str,
    rest: &'a [Value],
    kw: Kwargs<'a>,
) -> VResult<(Args<'a>, Option<i64>, Option<i64>)> {
    let a = Args::new(name, rest, kw, 1, &["sub", "start", "end"])?;
    let start = match a.opt(1) {
        Some(_) => Some(a.int(1)?),
        None => None,
    };
    let end = match a.opt(2) {
        Some(_) => Some(a.int(2)?),
        None => None,
    };
    Ok((a, start, end))
}

fn find_impl(name: &'static str, args: &[Value], kw: Kwargs, from_right: bool) -> VResult<Option<i64>> {
    let (t, rest) = recv(args, name)?;
    let (a, start, end) = window_args(name, rest, kw)?;
    let sub = a.str(0)?;
    let Some((lo, hi, clo)) = char_window(t, start, end) else {
        return Ok(None);
    };
    let hay = &t[lo..hi];
    let found = if from_right { hay.rfind(sub) } else { hay.find(sub) };
    Ok(found.map(|b| (clo + hay[..b].chars().count()) as i64))
}

fn find(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Ok(Value::Int(find_impl("find", args, kw, false)?.unwrap_or(-1)))
}
fn rfind(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Ok(Value::Int(find_impl("rfind", args, kw, true)?.unwrap_or(-1)))
}
fn index(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    find_impl("index", args, kw, false)?
        .map(Value::Int)
        .ok_or_else(|| err(ErrorKind::ValueError, "substring not found"))
}
fn rindex(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    find_impl("rindex", args, kw, true)?
        .map(Value::Int)
        .ok_or_else(|| err(ErrorKind::ValueError, "substring not found"))
}

fn count(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (t, rest) = recv(args, "count")?;
    let (a, start, end) = window_args("count", rest, kw)?;
    let sub = a.str(0)?;
    let Some((lo, hi, _)) = char_window(t, start, end) else {
        return Ok(Value::Int(0));
    };
    let hay = &t[lo..hi];
    let n = if sub.is_empty() {
        hay.chars().count() + 1
    } else {
        hay.matches(sub).count()
    };
    Ok(Value::Int(n as i64))
}

fn affix(name: &'static str, args: &[Value], kw: Kwargs, ends: bool) -> VResult<Value> {
    let (t, rest) = recv(args, name)?;
    let (a, start, end) = window_args(name, rest, kw)?;
    let Some((lo, hi, _)) = char_window(t, start, end) else {
        return Ok(Value::Bool(false));
    };
    let hay = &t[lo..hi];
    let test = |p: &str| if ends { hay.ends_with(p) } else { hay.starts_with(p) };
    match a.req(0)? {
        Value::Str(p) => Ok(Value::Bool(test(p.as_str()))),
        Value::Tuple(ps) => {
            for p in ps.0.iter() {
                if test(expect_str(p, name, "prefix")?) {
                    return Ok(Value::Bool(true));
                }
            }
            Ok(Value::Bool(false))
        }
        other => Err(err(
            ErrorKind::TypeError,
            format!("{name}() takes a str or a tuple of str, not {}", other.type_name()),
        )),
    }
}

fn startswith(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    affix("startswith", args, kw, false)
}
fn endswith(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    affix("endswith", args, kw, true)
}

fn char_test(name: &'static str, args: &[Value], kw: Kwargs, f: fn(char) -> bool) -> VResult<Value> {
    let (t, rest) = recv(args, name)?;
    Args::new(name, rest, kw, 0, &[])?;
    Ok(Value::Bool(!t.is_empty() && t.chars().all(f)))
}

fn isdigit(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    char_test("isdigit", args, kw, |c| c.is_numeric())
}
fn isalpha(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    char_test("isalpha", args, kw, char::is_alphabetic)
}
fn isalnum(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    char_test("isalnum", args, kw, char::is_alphanumeric)
}
fn isspace(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    char_test("isspace", args, kw, is_py_space)
}

fn case_test(name: &'static str, args: &[Value], kw: Kwargs, upper: bool) -> VResult<Value> {
    let (t, rest) = recv(args, name)?;
    Args::new(name, rest, kw, 0, &[])?;
    let mut cased = false;
    for c in t.chars() {
        if c.is_lowercase() {
            if upper {
                return Ok(Value::Bool(false));
            }
            cased = true;
        } else if c.is_uppercase() {
            if !upper {
                return Ok(Value::Bool(false));
            }
            cased = true;
        }
    }
    Ok(Value::Bool(cased))
}

fn isupper(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    case_test("isupper", args, kw, true)
}
fn islower(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    case_test("islower", args, kw, false)
}

fn title(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (t, rest) = recv(args, "title")?;
    Args::new("title", rest, kw, 0, &[])?;
    // Python's rule: a cased letter after a cased one is lowered, any other
    // character takes its titlecase (`"本c".title() == "本C"`).
    let chars: Vec<char> = t.chars().collect();
    let mut out = String::with_capacity(t.len());
    let mut prev_cased = false;
    for (i, &c) in chars.iter().enumerate() {
        if prev_cased {
            super::titlecase::push_lower_at(&chars, i, &mut out);
        } else {
            super::titlecase::push_title(c, &mut out);
        }
        prev_cased = super::titlecase::is_cased(c);
    }
    s(out)
}

/// Upper case to lower and lower to upper, with Unicode's full mappings
/// (`"straße".swapcase() == "STRASSE"`), as Python does.
fn swapcase(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (t, rest) = recv(args, "swapcase")?;
    Args::new("swapcase", rest, kw, 0, &[])?;
    let chars: Vec<char> = t.chars().collect();
    let mut out = String::with_capacity(t.len());
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            super::titlecase::push_lower_at(&chars, i, &mut out);
        } else if c.is_lowercase() {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
    }
    s(out)
}

fn capitalize(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (t, rest) = recv(args, "capitalize")?;
    Args::new("capitalize", rest, kw, 0, &[])?;
    // The first character's titlecase (`"ß"` → `"Ss"`), the rest lowered.
    let chars: Vec<char> = t.chars().collect();
    let mut out = String::with_capacity(t.len());
    for (i, &c) in chars.iter().enumerate() {
        if i == 0 {
            super::titlecase::push_title(c, &mut out);
        } else {
            super::titlecase::push_lower_at(&chars, i, &mut out);
        }
    }
    s(out)
}

/// A padding width (`center`, `ljust`, `rjust`, `zfill`): negative is 0;
/// past the longest text `s * n` may make, an error rather than a silently
/// shorter string.
fn padded_width(name: &str, w: i64) -> VResult<usize> {
    if w > 1 << 30 {
        return Err(err(
            ErrorKind::OverflowError,
            format!("{name}(): width {w} is too large (at most 2**30 characters)"),
        ));
    }
    Ok(w.max(0) as usize)
}

fn width_and_fill(name: &'static str, rest: &[Value], kw: Kwargs) -> VResult<(usize, char)> {
    let a = Args::new(name, rest, kw, 1, &["width", "fillchar"])?;
    let w = padded_width(name, a.int(0)?)?;
    let fill = match a.opt(1) {
        Some(v) => {
            let f = expect_str(v, name, "fillchar")?;
            let mut cs = f.chars();
            match (cs.next(), cs.next()) {
                (Some(c), None) => c,
                _ => {
                    return Err(err(
                        ErrorKind::TypeError,
                        format!("{name}(): the fill character must be exactly one character long"),
                    ))
                }
            }
        }
        None => ' ',
    };
    Ok((w, fill))
}

fn fills(c: char, n: usize) -> String {
    std::iter::repeat_n(c, n).collect()
}

fn center(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (t, rest) = recv(args, "center")?;
    let (w, f) = width_and_fill("center", rest, kw)?;
    let n = t.chars().count();
    if n >= w {
        return s(t.to_string());
    }
    let marg = w - n;
    // CPython's choice of which side gets the odd fill character.
    let left = marg / 2 + (marg & w & 1);
    s(format!("{}{t}{}", fills(f, left), fills(f, marg - left)))
}

fn ljust(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (t, rest) = recv(args, "ljust")?;
    let (w, f) = width_and_fill("ljust", rest, kw)?;
    let n = t.chars().count();
    s(format!("{t}{}", fills(f, w.saturating_sub(n))))
}

fn rjust(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (t, rest) = recv(args, "rjust")?;
    let (w, f) = width_and_fill("rjust", rest, kw)?;
    let n = t.chars().count();
    s(format!("{}{t}", fills(f, w.saturating_sub(n))))
}

fn zfill(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (t, rest) = recv(args, "zfill")?;
    let a = Args::new("zfill", rest, kw, 1, &["width"])?;
    let w = padded_width("zfill", a.int(0)?)?;
    let n = t.chars().count();
    if n >= w {
        return s(t.to_string());
    }
    let (sign, body) = match t.chars().next() {
        Some(c @ ('+' | '-')) => (c.to_string(), &t[1..]),
        _ => (String::new(), t),
    };
    s(format!("{sign}{}{body}", "0".repeat(w - n)))
}

fn partition_impl(name: &'static str, args: &[Value], kw: Kwargs, from_right: bool) -> VResult<Value> {
    let (t, rest) = recv(args, name)?;
    let a = Args::new(name, rest, kw, 1, &["sep"])?;
    let sep = a.str(0)?;
    if sep.is_empty() {
        return Err(err(ErrorKind::ValueError, "empty separator"));
    }
    let found = if from_right { t.rfind(sep) } else { t.find(sep) };
    let parts = match found {
        Some(i) => [&t[..i], sep, &t[i + sep.len()..]],
        None if from_right => ["", "", t],
        None => [t, "", ""],
    };
    Ok(Value::tuple(parts.iter().map(|p| Value::str(*p)).collect()))
}

fn partition(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    partition_impl("partition", args, kw, false)
}
fn rpartition(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    partition_impl("rpartition", args, kw, true)
}

/// Resolves a replacement field name (`0`, `name`, `0.x`, `name[1]`).
fn field_value(field: &str, auto: &mut usize, pos: &[Value], kw: Kwargs) -> VResult<Value> {
    let end = field.find(['.', '[']).unwrap_or(field.len());
    let (head, mut tail) = field.split_at(end);
    let mut v = if head.is_empty() {
        let i = *auto;
        *auto += 1;
        pos.get(i)
            .cloned()
            .ok_or_else(|| err(ErrorKind::IndexError, format!("format(): no positional argument {i}")))?
    } else if let Ok(i) = head.parse::<usize>() {
        pos.get(i)
            .cloned()
            .ok_or_else(|| err(ErrorKind::IndexError, format!("format(): no positional argument {i}")))?
    } else {
        kw.iter()
            .find(|(k, _)| &**k == head)
            .map(|(_, v)| v.clone())
            .ok_or_else(|| err(ErrorKind::KeyError, repr_of(&Value::str(head))))?
    };
    while !tail.is_empty() {
        if let Some(r) = tail.strip_prefix('.') {
            let e = r.find(['.', '[']).unwrap_or(r.len());
            v = ops::get_attr(&v, &r[..e])?;
            tail = &r[e..];
        } else if let Some(r) = tail.strip_prefix('[') {
            let e = r
                .find(']')
                .ok_or_else(|| err(ErrorKind::ValueError, "format(): missing ']' in a field name"))?;
            let key = &r[..e];
            let idx = match key.parse::<i64>() {
                Ok(i) => Value::Int(i),
                Err(_) => Value::str(key),
            };
            v = ops::get_index(&v, &idx)?;
            tail = &r[e + 1..];
        } else {
            return Err(err(
                ErrorKind::ValueError,
                format!("format(): bad field name '{field}'"),
            ));
        }
    }
    Ok(v)
}

/// Python's `str.format` over a template.
pub(crate) fn format_template(t: &str, pos: &[Value], kw: Kwargs) -> VResult<String> {
    let mut out = String::with_capacity(t.len());
    let mut auto = 0usize;
    let mut chars = t.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '}' => return Err(err(ErrorKind::ValueError, "single '}' encountered in format string")),
            '{' => {
                let mut field = String::new();
                let mut depth = 1;
                loop {
                    match chars.next() {
                        None => return Err(err(ErrorKind::ValueError, "expected '}' before end of string")),
                        Some('{') => {
                            depth += 1;
                            field.push('{');
                        }
                        Some('}') => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                            field.push('}');
                        }
                        Some(ch) => field.push(ch),
                    }
                }
                let (name_conv, spec) = match field.find(':') {
                    Some(i) => (&field[..i], &field[i + 1..]),
                    None => (field.as_str(), ""),
                };
                let (name, conv) = match name_conv.find('!') {
                    Some(i) => (&name_conv[..i], Some(&name_conv[i + 1..])),
                    None => (name_conv, None),
                };
                let v = field_value(name, &mut auto, pos, kw)?;
                let v = match conv {
                    None | Some("s") => v,
                    Some("r") => Value::str(repr_of(&v)),
                    Some(other) => {
                        return Err(err(
                            ErrorKind::ValueError,
                            format!("unknown conversion specifier '{other}'"),
                        ))
                    }
                };
                // A nested `{}` in the spec is itself a replacement field.
                let spec = if spec.contains('{') {
                    format_template(spec, pos, kw)?
                } else {
                    spec.to_string()
                };
                let text = if spec.is_empty() {
                    str_of(&v)
                } else {
                    format_value(&v, &spec)?
                };
                out.push_str(&text);
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

fn format(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (t, rest) = recv(args, "format")?;
    s(format_template(t, rest, kw)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::ops::Must;
    use crate::ops::NoCaller;
    use std::sync::Arc;

    fn call(name: &str, recv: &str, args: &[Value]) -> VResult<Value> {
        let mut all = vec![Value::str(recv)];
        all.extend_from_slice(args);
        method(name).must()(&mut NoCaller, &all, &[])
    }
    fn show(name: &str, recv: &str, args: &[Value]) -> String {
        repr_of(&call(name, recv, args).must())
    }
    fn st(x: &str) -> Value {
        Value::str(x)
    }

    #[test]
    fn join_lists_tuples_and_errors() {
        let l = Value::list(vec![st("a"), st("bc"), st("")]);
        assert_eq!(show("join", ", ", &[l]), "'a, bc, '");
        let t = Value::tuple(vec![st("x"), st("y")]);
        assert_eq!(show("join", "", &[t]), "'xy'");
        assert_eq!(show("join", "-", &[Value::list(vec![])]), "''");
        let bad = Value::list(vec![st("a"), Value::Int(1)]);
        assert_eq!(
            call("join", "", &[bad]).unwrap_err().message,
            "join(): item 1 is a int, expected a str"
        );
    }

    #[test]
    fn splitting() {
        assert_eq!(show("split", "a,b,,c", &[st(",")]), "['a', 'b', '', 'c']");
        assert_eq!(show("split", "  a  b c ", &[]), "['a', 'b', 'c']");
        assert_eq!(
            show("split", "  a  b c ", &[Value::None, Value::Int(1)]),
            "['a', 'b c ']"
        );
        assert_eq!(
            show("rsplit", "  a  b c ", &[Value::None, Value::Int(1)]),
            "['  a  b', 'c']"
        );
        assert_eq!(show("rsplit", "a,b,c", &[st(","), Value::Int(1)]), "['a,b', 'c']");
        assert_eq!(show("split", "", &[]), "[]");
        assert_eq!(show("split", "", &[st(",")]), "['']");
        assert_eq!(call("split", "a", &[st("")]).unwrap_err().kind, ErrorKind::ValueError);
        assert_eq!(show("splitlines", "a\nb\r\nc\rd\n", &[]), "['a', 'b', 'c', 'd']");
        assert_eq!(show("partition", "k=v=w", &[st("=")]), "('k', '=', 'v=w')");
        assert_eq!(show("rpartition", "k=v=w", &[st("=")]), "('k=v', '=', 'w')");
        assert_eq!(show("partition", "kv", &[st("=")]), "('kv', '', '')");
    }

    #[test]
    fn searching_counts_characters() {
        assert_eq!(show("find", "héllo", &[st("l")]), "2");
        assert_eq!(show("rfind", "héllo", &[st("l")]), "3");
        assert_eq!(show("find", "héllo", &[st("l"), Value::Int(3)]), "3");
        assert_eq!(show("find", "héllo", &[st("z")]), "-1");
        assert_eq!(
            call("index", "abc", &[st("z")]).unwrap_err().kind,
            ErrorKind::ValueError
        );
        assert_eq!(show("count", "aaaa", &[st("aa")]), "2");
        assert_eq!(show("count", "abc", &[st("")]), "4");
        assert_eq!(show("startswith", "abc", &[st("ab")]), "true");
        assert_eq!(
            show("endswith", "abc", &[Value::tuple(vec![st("x"), st("bc")])]),
            "true"
        );
    }

    #[test]
    fn transforming() {
        assert_eq!(show("upper", "héllo wörld", &[]), "'HÉLLO WÖRLD'");
        assert_eq!(show("strip", "  pad  ", &[]), "'pad'");
        assert_eq!(show("strip", "xxpadx", &[st("x")]), "'pad'");
        assert_eq!(show("replace", "abc", &[st("b"), st("B")]), "'aBc'");
        assert_eq!(show("replace", "aaa", &[st("a"), st("b"), Value::Int(2)]), "'bba'");
        assert_eq!(show("title", "they're bill's", &[]), "\"They'Re Bill'S\"");
        assert_eq!(show("capitalize", "hELLO", &[]), "'Hello'");
        assert_eq!(show("zfill", "-42", &[Value::Int(5)]), "'-0042'");
        assert_eq!(show("center", "ab", &[Value::Int(5)]), "'  ab '");
        assert_eq!(show("center", "abc", &[Value::Int(6), st("*")]), "'*abc**'");
        assert_eq!(show("ljust", "ab", &[Value::Int(4), st("-")]), "'ab--'");
        assert_eq!(show("rjust", "ab", &[Value::Int(4)]), "'  ab'");
        assert_eq!(show("isdigit", "123", &[]), "true");
        assert_eq!(show("isdigit", "", &[]), "false");
        assert_eq!(show("isupper", "AB1", &[]), "true");
        assert_eq!(show("islower", "1", &[]), "false");
        assert_eq!(
            show("join", "-", &[Value::list(vec![st("x"), st("y"), st("z")])]),
            "'x-y-z'"
        );
        assert_eq!(
            call("join", "-", &[Value::list(vec![Value::Int(1)])]).unwrap_err().kind,
            ErrorKind::TypeError
        );
    }

    #[test]
    fn format_method() {
        let kw: Vec<(Arc<str>, Value)> = vec![("name".into(), st("x")), ("w".into(), Value::Int(6))];
        let got = format_template(
            "{} {0} {name!r} {1:>{w}.2f} {{}} {2[1]}",
            &[
                Value::Int(1),
                Value::Float(2.5),
                Value::list(vec![Value::Int(7), Value::Int(8)]),
            ],
            &kw,
        )
        .must();
        assert_eq!(got, "1 1 'x'   2.50 {} 8");
        assert!(format_template("{", &[], &[]).is_err());
        assert!(format_template("}", &[], &[]).is_err());
        assert!(format_template("{5}", &[], &[]).is_err());
    }

    #[test]
    fn join_matches_concatenation_for_every_mix_of_pieces() {
        // Inline (up to 22 bytes) and heap pieces, multi-byte characters, and
        // separators of several lengths: the block copy must never show its slack.
        let pieces = [
            "",
            "a",
            "héllo",
            "0123456789012345678901",
            "01234567890123456789012",
            "ü",
            "日本語のテキスト",
            "x".repeat(100).leak(),
        ];
        for sep in ["", ",", ", ", "→", "-----------------------------"] {
            for n in 0..pieces.len() * 3 {
                let items: Vec<&str> = (0..n).map(|i| pieces[(i * 7 + n) % pieces.len()]).collect();
                let values: Vec<Value> = items.iter().map(|p| Value::str(*p)).collect();
                let got = join_items(sep, &values).unwrap();
                assert_eq!(got, items.join(sep), "sep {sep:?}, {n} pieces");
            }
        }
        assert!(join_items("", &[Value::Int(1)]).is_err());
    }
}
