//! `bytes` (LANGUAGE.md §10.13): the constructor, the methods, `+`/`*`,
//! `bytes.fromhex`, `str.encode` and the prelude's `read_bytes` /
//! `write_bytes`.
//!
//! Encodings: `utf-8` (the default; also spelt `utf8`, `utf_8`, `u8`, any
//! case) and `ascii` (`us-ascii`), plus `latin-1` (`latin1`,
//! `iso-8859-1`). Encoding and decoding are strict: bad data is a
//! `ValueError` with CPython's `UnicodeDecodeError`/`UnicodeEncodeError`
//! message; an unknown encoding is a `ValueError` ("unknown encoding: x",
//! Python's `LookupError`).

use super::args::Args;
use crate::error::ErrorKind;
use crate::ops;
use crate::syntax::ast::BinOp;
use crate::value::{err, Caller, Exc, Kwargs, NativeFnPtr, VResult, Value};

/// The most bytes one value built here may hold (as `*` on str allows).
const MAX_BYTES: usize = 1 << 30;

fn too_long() -> Exc {
    err(ErrorKind::OverflowError, "repeated bytes are too long")
}

/// The method names of a bytes value (for "did you mean" hints).
pub(crate) const NAMES: &[&str] = &["hex", "decode", "startswith", "endswith", "find", "count"];

pub(crate) fn method(name: &str) -> Option<NativeFnPtr> {
    Some(match name {
        "hex" => hex,
        "decode" => decode,
        "startswith" => startswith,
        "endswith" => endswith,
        "find" => find,
        "count" => count,
        _ => return None,
    })
}

/// Attributes of the `bytes` type value itself: `bytes.fromhex`.
pub(crate) fn type_method(name: &str) -> Option<NativeFnPtr> {
    match name {
        "fromhex" => Some(fromhex),
        _ => None,
    }
}

/// `a + b` and `a * n` / `n * a` where one side is bytes; `None` for any
/// other pair (the caller reports the unsupported operands).
pub fn bytes_binary(op: BinOp, a: &Value, b: &Value) -> Option<VResult<Value>> {
    match (op, a, b) {
        (BinOp::Add, Value::Bytes(x), Value::Bytes(y)) => {
            let mut out = Vec::with_capacity(x.0.len() + y.0.len());
            out.extend_from_slice(&x.0);
            out.extend_from_slice(&y.0);
            Some(Ok(Value::bytes(out)))
        }
        (BinOp::Mul, Value::Bytes(x), n) | (BinOp::Mul, n, Value::Bytes(x)) => {
            let count = match n {
                Value::Int(i) => (*i).max(0) as u64,
                Value::Bool(t) => *t as u64,
                _ => return None,
            };
            let count = if x.0.is_empty() { 0 } else { count };
            let total = (x.0.len() as u64).checked_mul(count).filter(|n| *n <= MAX_BYTES as u64);
            Some(match total {
                None => Err(too_long()),
                Some(_) => Ok(Value::bytes(x.0.repeat(count as usize))),
            })
        }
        _ => None,
    }
}

fn receiver<'a>(args: &'a [Value], name: &str) -> VResult<(&'a [u8], &'a [Value])> {
    match args.split_first() {
        Some((Value::Bytes(b), rest)) => Ok((&b.0, rest)),
        _ => Err(err(
            ErrorKind::TypeError,
            format!("bytes.{name}() needs a bytes receiver"),
        )),
    }
}

/// Which codec an encoding name means.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Codec {
    Utf8,
    Ascii,
    Latin1,
}

impl Codec {
    fn name(self) -> &'static str {
        match self {
            Codec::Utf8 => "utf-8",
            Codec::Ascii => "ascii",
            Codec::Latin1 => "latin-1",
        }
    }
}

fn codec(a: &Args<'_>, i: usize) -> VResult<Codec> {
    let Some(v) = a.opt(i) else { return Ok(Codec::Utf8) };
    let Value::Str(s) = v else {
        return Err(err(
            ErrorKind::TypeError,
            format!("{}() argument 'encoding' must be str, not {}", a.name, v.type_name()),
        ));
    };
    let norm = s.as_str().trim().to_ascii_lowercase().replace('_', "-");
    Ok(match norm.as_str() {
        "utf-8" | "utf8" | "u8" | "utf" => Codec::Utf8,
        "ascii" | "us-ascii" | "646" => Codec::Ascii,
        "latin-1" | "latin1" | "iso-8859-1" | "iso8859-1" | "l1" => Codec::Latin1,
        _ => return Err(err(ErrorKind::ValueError, format!("unknown encoding: {}", s.as_str()))),
    })
}

/// Only strict error handling exists.
fn check_errors(a: &Args<'_>, i: usize) -> VResult<()> {
    match a.opt(i) {
        None => Ok(()),
        Some(Value::Str(s)) if s.as_str() == "strict" => Ok(()),
        Some(other) => Err(err(
            ErrorKind::ValueError,
            format!(
                "{}(): only errors='strict' is supported, not {}",
                a.name,
                crate::format::repr_of(other)
            ),
        )),
    }
}

/// Text to bytes in `codec`, strictly (CPython's `UnicodeEncodeError` text).
fn encode_text(text: &str, codec: Codec) -> VResult<Vec<u8>> {
    let limit = match codec {
        Codec::Utf8 => return Ok(text.as_bytes().to_vec()),
        Codec::Ascii => 0x80,
        Codec::Latin1 => 0x100,
    };
    let mut out = Vec::with_capacity(text.len());
    for (pos, c) in text.chars().enumerate() {
        let n = c as u32;
        if n >= limit {
            let shown = if n <= 0xff {
                format!("\\x{n:02x}")
            } else if n <= 0xffff {
                format!("\\u{n:04x}")
            } else {
                format!("\\U{n:08x}")
            };
            return Err(err(
                ErrorKind::ValueError,
                format!(
                    "'{}' codec can't encode character '{shown}' in position {pos}: ordinal not in range({limit})",
                    codec.name()
                ),
            ));
        }
        out.push(n as u8);
    }
    Ok(out)
}

/// Bytes to text in `codec`, strictly (CPython's `UnicodeDecodeError` text).
fn decode_bytes(data: &[u8], codec: Codec) -> VResult<String> {
    match codec {
        Codec::Latin1 => Ok(data.iter().map(|&b| b as char).collect()),
        Codec::Ascii => match data.iter().position(|b| *b >= 0x80) {
            None => Ok(data.iter().map(|&b| b as char).collect()),
            Some(p) => Err(err(
                ErrorKind::ValueError,
                format!(
                    "'ascii' codec can't decode byte 0x{:02x} in position {p}: ordinal not in range(128)",
                    data[p]
                ),
            )),
        },
        Codec::Utf8 => match std::str::from_utf8(data) {
            Ok(s) => Ok(s.to_string()),
            Err(e) => {
                let p = e.valid_up_to();
                let b = data.get(p).copied().unwrap_or(0);
                let reason = match e.error_len() {
                    None => "unexpected end of data",
                    Some(_) if matches!(b, 0x80..=0xc1 | 0xf5..=0xff) => "invalid start byte",
                    Some(_) => "invalid continuation byte",
                };
                Err(err(
                    ErrorKind::ValueError,
                    format!("'utf-8' codec can't decode byte 0x{b:02x} in position {p}: {reason}"),
                ))
            }
        },
    }
}

/// `s.encode(encoding="utf-8", errors="strict")` on a str.
pub(crate) fn str_encode(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (text, rest) = match args.split_first() {
        Some((Value::Str(s), rest)) => (s.as_str(), rest),
        _ => return Err(err(ErrorKind::TypeError, "str.encode() needs a str receiver")),
    };
    let a = Args::new("encode", rest, kw, 0, &["encoding", "errors"])?;
    let codec = codec(&a, 0)?;
    check_errors(&a, 1)?;
    Ok(Value::bytes(encode_text(text, codec)?))
}

fn decode(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (data, rest) = receiver(args, "decode")?;
    let a = Args::new("decode", rest, kw, 0, &["encoding", "errors"])?;
    let codec = codec(&a, 0)?;
    check_errors(&a, 1)?;
    Ok(Value::str(decode_bytes(data, codec)?))
}

fn hex(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (data, rest) = receiver(args, "hex")?;
    let a = Args::new("hex", rest, kw, 0, &["sep"])?;
    let sep = match a.opt(0) {
        None => None,
        Some(Value::Str(s)) if s.char_len() == 1 => Some(s.as_str()),
        Some(_) => return Err(err(ErrorKind::ValueError, "sep must be length 1.")),
    };
    let mut out = String::with_capacity(data.len() * 3);
    for (i, b) in data.iter().enumerate() {
        if let (Some(s), true) = (sep, i > 0) {
            out.push_str(s);
        }
        out.push_str(&format!("{b:02x}"));
    }
    Ok(Value::str(out))
}

/// `bytes.fromhex(text)`: pairs of hex digits, whitespace allowed between pairs.
fn fromhex(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    // Called as `bytes.fromhex(s)`: the receiver is the `bytes` type.
    let rest = args.get(1..).unwrap_or(&[]);
    let a = Args::new("fromhex", rest, kw, 1, &["string"])?;
    let text = match a.req(0)? {
        Value::Str(s) => s.as_str(),
        other => {
            return Err(err(
                ErrorKind::TypeError,
                format!("fromhex() argument must be str, not {}", other.type_name()),
            ));
        }
    };
    let chars: Vec<char> = text.chars().collect();
    let bad = |pos: usize| {
        err(
            ErrorKind::ValueError,
            format!("non-hexadecimal number found in fromhex() arg at position {pos}"),
        )
    };
    let mut out = Vec::with_capacity(chars.len() / 2);
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let hi = chars[i].to_digit(16).ok_or_else(|| bad(i))?;
        let lo = chars
            .get(i + 1)
            .and_then(|c| c.to_digit(16))
            .ok_or_else(|| bad(i + 1))?;
        out.push((hi * 16 + lo) as u8);
        i += 2;
    }
    Ok(Value::bytes(out))
}

/// A bytes argument of a method (`b.startswith(b"x")`).
fn bytes_arg<'a>(v: &'a Value, fname: &str) -> VResult<&'a [u8]> {
    match v {
        Value::Bytes(b) => Ok(&b.0),
        other => Err(err(
            ErrorKind::TypeError,
            format!("{fname}() argument must be bytes, not {}", other.type_name()),
        )),
    }
}

fn startswith(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (data, rest) = receiver(args, "startswith")?;
    let a = Args::new("startswith", rest, kw, 1, &["prefix"])?;
    Ok(Value::Bool(data.starts_with(bytes_arg(a.req(0)?, "startswith")?)))
}

fn endswith(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (data, rest) = receiver(args, "endswith")?;
    let a = Args::new("endswith", rest, kw, 1, &["suffix"])?;
    Ok(Value::Bool(data.ends_with(bytes_arg(a.req(0)?, "endswith")?)))
}

/// The needle of `find`/`count`/`in`: bytes, or an int 0–255 (one byte).
fn needle(v: &Value) -> VResult<Vec<u8>> {
    match v {
        Value::Bytes(b) => Ok(b.0.to_vec()),
        Value::Int(_) | Value::Bool(_) => Ok(vec![byte_of(v)?]),
        other => Err(err(
            ErrorKind::TypeError,
            format!("a bytes-like object is required, not '{}'", other.type_name()),
        )),
    }
}

fn find_at(hay: &[u8], pat: &[u8]) -> Option<usize> {
    if pat.is_empty() {
        return Some(0);
    }
    hay.windows(pat.len()).position(|w| w == pat)
}

fn find(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (data, rest) = receiver(args, "find")?;
    let a = Args::new("find", rest, kw, 1, &["sub"])?;
    let pat = needle(a.req(0)?)?;
    Ok(Value::Int(find_at(data, &pat).map(|p| p as i64).unwrap_or(-1)))
}

fn count(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (data, rest) = receiver(args, "count")?;
    let a = Args::new("count", rest, kw, 1, &["sub"])?;
    let pat = needle(a.req(0)?)?;
    if pat.is_empty() {
        return Ok(Value::Int(data.len() as i64 + 1));
    }
    let mut n = 0;
    let mut i = 0;
    while let Some(p) = find_at(&data[i..], &pat) {
        n += 1;
        i += p + pat.len();
    }
    Ok(Value::Int(n))
}

/// `item in b`: an int 0–255 is one byte; bytes are a subsequence.
pub fn bytes_contains(data: &[u8], item: &Value) -> VResult<bool> {
    match item {
        Value::Bytes(b) => Ok(find_at(data, &b.0).is_some()),
        Value::Int(_) | Value::Bool(_) => Ok(data.contains(&byte_of(item)?)),
        other => Err(err(
            ErrorKind::TypeError,
            format!("a bytes-like object is required, not '{}'", other.type_name()),
        )),
    }
}

/// An int as one byte (`ValueError` outside 0–255).
fn byte_of(v: &Value) -> VResult<u8> {
    let n = match v {
        Value::Int(i) => *i,
        Value::Bool(b) => *b as i64,
        other => {
            return Err(err(
                ErrorKind::TypeError,
                format!("'{}' object cannot be interpreted as an integer", other.type_name()),
            ))
        }
    };
    u8::try_from(n).map_err(|_| err(ErrorKind::ValueError, "bytes must be in range(0, 256)"))
}

/// `bytes()`, `bytes(n)` (zeros), `bytes(iterable of ints 0–255)`,
/// `bytes(b)`, `bytes(s, encoding)`.
pub(crate) fn bytes_ctor(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("bytes", args, kw, 0, &["source", "encoding", "errors"])?;
    let Some(src) = a.get(0) else {
        return Ok(Value::bytes(Vec::new()));
    };
    if let Value::Str(s) = src {
        if a.opt(1).is_none() {
            return Err(err(ErrorKind::TypeError, "string argument without an encoding"));
        }
        let codec = codec(&a, 1)?;
        check_errors(&a, 2)?;
        return Ok(Value::bytes(encode_text(s.as_str(), codec)?));
    }
    if a.opt(1).is_some() || a.opt(2).is_some() {
        return Err(err(
            ErrorKind::TypeError,
            "encoding or errors without a string argument",
        ));
    }
    match src {
        Value::Bytes(_) => Ok(src.clone()),
        Value::Int(_) | Value::Bool(_) => {
            let n = match src {
                Value::Int(i) => *i,
                _ => matches!(src, Value::Bool(true)) as i64,
            };
            if n < 0 {
                return Err(err(ErrorKind::ValueError, "negative count"));
            }
            if n as u64 > MAX_BYTES as u64 {
                return Err(err(ErrorKind::OverflowError, format!("bytes({n}) is too large")));
            }
            Ok(Value::bytes(vec![0; n as usize]))
        }
        Value::None | Value::Float(_) => Err(err(
            ErrorKind::TypeError,
            format!("cannot convert '{}' object to bytes", src.type_name()),
        )),
        _ => {
            let items = ops::iterate(c, src)?;
            let mut out = Vec::with_capacity(items.len());
            for x in &items {
                out.push(byte_of(x)?);
            }
            Ok(Value::bytes(out))
        }
    }
}

/// `read_bytes(path)`: a whole file as bytes.
pub(crate) fn read_bytes(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("read_bytes", args, kw, 1, &["path"])?;
    let path = a.str(0)?;
    let local = crate::value::sources::local_source(c, path, "read_bytes")?;
    let data = std::fs::read(&local).map_err(|e| err(ErrorKind::IOError, format!("cannot read '{path}': {e}")))?;
    Ok(Value::bytes(data))
}

/// `write_bytes(path, b)`: replaces the file's contents with `b`.
pub(crate) fn write_bytes(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("write_bytes", args, kw, 2, &["path", "data"])?;
    let path = a.str(0)?;
    let data = match a.req(1)? {
        Value::Bytes(b) => b.clone(),
        other => {
            return Err(err(
                ErrorKind::TypeError,
                format!("write_bytes() argument 'data' must be bytes, not {}", other.type_name()),
            ))
        }
    };
    std::fs::write(path, &data.0).map_err(|e| err(ErrorKind::IOError, format!("cannot write '{path}': {e}")))?;
    Ok(Value::None)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::ops::Must;
    use crate::ops::NoCaller;
    use Value::Int as I;

    fn call(f: NativeFnPtr, args: &[Value]) -> VResult<Value> {
        f(&mut NoCaller, args, &[])
    }
    fn text(v: VResult<Value>) -> String {
        match v {
            Ok(v) => crate::format::str_of(&v),
            Err(e) => format!("{}: {}", e.kind.name(), e.message),
        }
    }
    fn b(data: &[u8]) -> Value {
        Value::bytes(data.to_vec())
    }

    #[test]
    fn constructor() {
        assert_eq!(text(call(bytes_ctor, &[])), "b''");
        assert_eq!(text(call(bytes_ctor, &[I(3)])), r"b'\x00\x00\x00'");
        assert_eq!(text(call(bytes_ctor, &[Value::list(vec![I(104), I(105)])])), "b'hi'");
        assert_eq!(
            text(call(bytes_ctor, &[Value::list(vec![I(256)])])),
            "ValueError: bytes must be in range(0, 256)"
        );
        assert_eq!(
            text(call(bytes_ctor, &[Value::list(vec![I(-1)])])),
            "ValueError: bytes must be in range(0, 256)"
        );
        assert_eq!(text(call(bytes_ctor, &[I(-1)])), "ValueError: negative count");
        assert_eq!(
            text(call(bytes_ctor, &[Value::str("é")])),
            "TypeError: string argument without an encoding"
        );
        assert_eq!(
            text(call(bytes_ctor, &[Value::str("é"), Value::str("utf-8")])),
            r"b'\xc3\xa9'"
        );
        assert_eq!(
            text(call(bytes_ctor, &[Value::Float(1.0)])),
            "TypeError: cannot convert 'float' object to bytes"
        );
    }

    #[test]
    fn codecs() {
        assert_eq!(
            text(call(str_encode, &[Value::str("héllo €")])),
            r"b'h\xc3\xa9llo \xe2\x82\xac'"
        );
        assert_eq!(
            text(call(str_encode, &[Value::str("hé"), Value::str("ascii")])),
            "ValueError: 'ascii' codec can't encode character '\\xe9' in position 1: ordinal not in range(128)"
        );
        assert_eq!(
            text(call(str_encode, &[Value::str("x"), Value::str("klingon")])),
            "ValueError: unknown encoding: klingon"
        );
        assert_eq!(text(call(decode, &[b(b"h\xc3\xa9")])), "hé");
        assert_eq!(text(call(decode, &[b(b"h\xc3\xa9"), Value::str("latin-1")])), "hÃ©");
        assert_eq!(
            text(call(decode, &[b(b"\xff\xfe")])),
            "ValueError: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"
        );
        assert_eq!(
            text(call(decode, &[b(b"a\xc3")])),
            "ValueError: 'utf-8' codec can't decode byte 0xc3 in position 1: unexpected end of data"
        );
        assert_eq!(
            text(call(decode, &[b(b"a\xc3a")])),
            "ValueError: 'utf-8' codec can't decode byte 0xc3 in position 1: invalid continuation byte"
        );
        assert_eq!(
            text(call(decode, &[b(b"ab\x80"), Value::str("ascii")])),
            "ValueError: 'ascii' codec can't decode byte 0x80 in position 2: ordinal not in range(128)"
        );
    }

    #[test]
    fn hex_and_fromhex() {
        assert_eq!(text(call(hex, &[b(b"GIF\x89a\x00\xff")])), "474946896100ff");
        assert_eq!(text(call(hex, &[b(b"\x01\x02"), Value::str(":")])), "01:02");
        assert_eq!(text(call(fromhex, &[Value::None, Value::str("48 69 21")])), "b'Hi!'");
        assert_eq!(text(call(fromhex, &[Value::None, Value::str(" 4869\n")])), "b'Hi'");
        assert_eq!(
            text(call(fromhex, &[Value::None, Value::str("4 8")])),
            "ValueError: non-hexadecimal number found in fromhex() arg at position 1"
        );
        assert_eq!(
            text(call(fromhex, &[Value::None, Value::str("zz")])),
            "ValueError: non-hexadecimal number found in fromhex() arg at position 0"
        );
    }

    #[test]
    fn operators_and_search() {
        assert_eq!(text(bytes_binary(BinOp::Add, &b(b"ab"), &b(b"cd")).must()), "b'abcd'");
        assert_eq!(text(bytes_binary(BinOp::Mul, &I(3), &b(b"ab")).must()), "b'ababab'");
        assert_eq!(text(bytes_binary(BinOp::Mul, &b(b"ab"), &I(-1)).must()), "b''");
        assert_eq!(
            text(bytes_binary(BinOp::Mul, &b(b"ab"), &I(i64::MAX)).must()),
            "OverflowError: repeated bytes are too long"
        );
        assert!(bytes_binary(BinOp::Add, &b(b"ab"), &Value::str("c")).is_none());
        assert!(bytes_contains(b"abc", &I(98)).must());
        assert!(bytes_contains(b"abc", &b(b"bc")).must());
        assert!(!bytes_contains(b"abc", &b(b"ac")).must());
        assert_eq!(bytes_contains(b"abc", &I(300)).unwrap_err().kind, ErrorKind::ValueError);
        assert_eq!(
            bytes_contains(b"abc", &Value::str("a")).unwrap_err().kind,
            ErrorKind::TypeError
        );
        assert_eq!(text(call(count, &[b(b"aaaa"), b(b"aa")])), "2");
        assert_eq!(text(call(find, &[b(b"abc"), I(99)])), "2");
        assert_eq!(text(call(startswith, &[b(b"abc"), b(b"ab")])), "true");
    }
}
