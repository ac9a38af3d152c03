//! NumPy's `.npy` format: the header (versions 1.0, 2.0 and 3.0 read; 1.0,
//! or 2.0 when the header is too long for 1.0, written) and the element
//! bytes, in C order.
//!
//! Read: little- and big-endian `f8 f4 f2 i8 i4 i2 i1 u4 u2 u1` and `b1`;
//! `f8 f4 f2 i8 i4` little-endian map straight to Apsi dtypes (and may be
//! memory-mapped), the rest are converted while reading (`i2 i1 u2 u1` →
//! i32, `u4` → i64, `u8` → i64 when every value fits). Written: f64, f32,
//! f16, i64, i32 and bool tensors. Fortran order, structured and other
//! dtypes are errors that name what was found.

use apsi_core::api::tensor::DType;
use std::io::{Read, Write};

const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// Headers longer than this are refused (NumPy itself caps them at 10 kB
/// unless told otherwise).
const MAX_HEADER: usize = 1 << 20;

/// The byte order of a descr.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endian {
    Little,
    Big,
}

/// An element type of a `.npy` file (`'<f4'`: kind `f`, 4 bytes, little-endian).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descr {
    pub kind: u8,
    pub size: usize,
    pub endian: Endian,
}

impl Descr {
    /// Parses `'<f4'`, `'|b1'`, `'>i8'`, `'f8'` (no order: native, little here).
    pub fn parse(s: &str) -> Result<Descr, String> {
        let unsupported = || {
            format!("unsupported dtype '{s}' in the .npy header; expected one of <f8 <f4 <f2 <i8 <i4 <i2 |i1 <u4 <u2 |u1 |b1 (either byte order)")
        };
        let b = s.as_bytes();
        let (endian, rest) = match b.first() {
            Some(b'<') | Some(b'=') | Some(b'|') => (Endian::Little, &b[1..]),
            Some(b'>') => (Endian::Big, &b[1..]),
            _ => (Endian::Little, b),
        };
        let (&kind, digits) = rest.split_first().ok_or_else(unsupported)?;
        let size: usize = std::str::from_utf8(digits)
            .ok()
            .and_then(|d| d.parse().ok())
            .ok_or_else(unsupported)?;
        let ok = matches!(
            (kind, size),
            (b'f', 2 | 4 | 8) | (b'i', 1 | 2 | 4 | 8) | (b'u', 1 | 2 | 4 | 8) | (b'b', 1)
        );
        if !ok {
            return Err(unsupported());
        }
        Ok(Descr { kind, size, endian })
    }

    /// The descr NumPy writes for an Apsi dtype, if NumPy has that dtype.
    pub fn of(d: DType) -> Option<Descr> {
        let (kind, size) = match d {
            DType::F64 => (b'f', 8),
            DType::F32 => (b'f', 4),
            DType::F16 => (b'f', 2),
            DType::I64 => (b'i', 8),
            DType::I32 => (b'i', 4),
            DType::Bool => (b'b', 1),
            _ => return None,
        };
        Some(Descr {
            kind,
            size,
            endian: Endian::Little,
        })
    }

    /// `'<f4'`, `'|b1'`.
    pub fn text(&self) -> String {
        let order = if self.size == 1 {
            '|'
        } else if self.endian == Endian::Little {
            '<'
        } else {
            '>'
        };
        format!("{order}{}{}", self.kind as char, self.size)
    }

    /// The Apsi dtype the elements become.
    pub fn dtype(&self) -> DType {
        match (self.kind, self.size) {
            (b'f', 8) => DType::F64,
            (b'f', 4) => DType::F32,
            (b'f', _) => DType::F16,
            (b'b', _) => DType::Bool,
            (b'i', 8) | (b'u', 4) | (b'u', 8) => DType::I64,
            _ => DType::I32,
        }
    }

    /// Whether the file's bytes are exactly the Apsi elements (so they can be mapped).
    pub fn is_native(&self) -> bool {
        cfg!(target_endian = "little")
            && self.endian == Endian::Little
            && matches!((self.kind, self.size), (b'f', 2 | 4 | 8) | (b'i', 4 | 8))
    }
}

/// What a `.npy` header says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub descr: Descr,
    pub shape: Vec<usize>,
    /// Where the elements start, in bytes from the start of the file.
    pub data_offset: u64,
}

impl Header {
    /// Number of elements (checked).
    /// The product of the non-zero axes must fit as well: strides are
    /// computed from it even when another axis is 0, so `(0, 2**62, 2**62)`
    /// is refused like `(2**62, 2**62)`.
    pub fn count(&self) -> Result<usize, String> {
        let too_many = || format!("the shape {} has too many elements", shape_text(&self.shape));
        self.shape
            .iter()
            .filter(|&&d| d != 0)
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .filter(|&p| p <= isize::MAX as usize)
            .ok_or_else(too_many)?;
        self.shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(too_many)
    }
    /// Bytes of element data (checked).
    pub fn data_len(&self) -> Result<u64, String> {
        let n = self.count()?;
        n.checked_mul(self.descr.size)
            .map(|b| b as u64)
            .ok_or_else(|| "the data size overflows".to_string())
    }
}

/// `(4, 3)`, `(5,)`, `()` as Python prints a tuple.
pub fn shape_text(shape: &[usize]) -> String {
    match shape {
        [] => "()".into(),
        [d] => format!("({d},)"),
        _ => format!(
            "({})",
            shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Reads and checks the header from the start of `r`.
pub fn read_header(r: &mut impl Read) -> Result<Header, String> {
    let mut pre = [0u8; 8];
    r.read_exact(&mut pre)
        .map_err(|_| "not a .npy file: it is shorter than the 8-byte preamble".to_string())?;
    if &pre[..6] != MAGIC {
        return Err("not a .npy file: it does not start with \\x93NUMPY".into());
    }
    let (major, minor) = (pre[6], pre[7]);
    let (hlen, prefix) = match major {
        1 => {
            let mut l = [0u8; 2];
            r.read_exact(&mut l)
                .map_err(|_| "corrupt .npy header: the header length is cut off".to_string())?;
            (u16::from_le_bytes(l) as usize, 10usize)
        }
        2 | 3 => {
            let mut l = [0u8; 4];
            r.read_exact(&mut l)
                .map_err(|_| "corrupt .npy header: the header length is cut off".to_string())?;
            (u32::from_le_bytes(l) as usize, 12usize)
        }
        _ => {
            return Err(format!(
                "unsupported .npy format version {major}.{minor}; expected 1.0, 2.0 or 3.0"
            ))
        }
    };
    if hlen > MAX_HEADER {
        return Err(format!(
            "corrupt .npy header: it claims {hlen} bytes, more than the {MAX_HEADER} allowed"
        ));
    }
    let mut text = vec![0u8; hlen];
    r.read_exact(&mut text)
        .map_err(|_| format!("corrupt .npy header: expected {hlen} header bytes, the file ends first"))?;
    let text = if major == 3 {
        String::from_utf8(text).map_err(|_| "corrupt .npy header: not UTF-8".to_string())?
    } else {
        if !text.is_ascii() {
            return Err(
                "corrupt .npy header: not ASCII (latin-1 headers are version 1.0/2.0 only with ASCII keys)".into(),
            );
        }
        String::from_utf8(text).map_err(|_| "corrupt .npy header: not ASCII".to_string())?
    };
    let d = parse_dict(&text)?;
    Ok(Header {
        descr: d.descr,
        shape: d.shape,
        data_offset: (prefix + hlen) as u64,
    })
}

struct Dict {
    descr: Descr,
    shape: Vec<usize>,
}

/// The Python literal dict of a header: `{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3), }`.
fn parse_dict(text: &str) -> Result<Dict, String> {
    let mut p = Lit {
        s: text.as_bytes(),
        i: 0,
    };
    let corrupt = |what: &str| format!("corrupt .npy header: {what} in {:?}", text.trim_end());
    p.ws();
    if !p.eat(b'{') {
        return Err(corrupt("expected a dict"));
    }
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    loop {
        p.ws();
        if p.eat(b'}') {
            break;
        }
        let key = p.string().ok_or_else(|| corrupt("expected a quoted key"))?;
        p.ws();
        if !p.eat(b':') {
            return Err(corrupt("expected ':' after a key"));
        }
        p.ws();
        match key.as_str() {
            "descr" => match p.string() {
                Some(s) => descr = Some(Descr::parse(&s)?),
                None => return Err("unsupported dtype in the .npy header: structured dtypes are not supported; expected a plain dtype such as '<f4'".into()),
            },
            "fortran_order" => {
                fortran = Some(if p.word("True") {
                    true
                } else if p.word("False") {
                    false
                } else {
                    return Err(corrupt("fortran_order must be True or False"));
                })
            }
            "shape" => shape = Some(p.int_tuple().ok_or_else(|| corrupt("shape must be a tuple of non-negative ints"))?),
            other => return Err(corrupt(&format!("unknown key '{other}'"))),
        }
        p.ws();
        if !p.eat(b',') {
            p.ws();
            if p.eat(b'}') {
                break;
            }
            return Err(corrupt("expected ',' or '}'"));
        }
    }
    let descr = descr.ok_or_else(|| corrupt("no 'descr'"))?;
    let fortran = fortran.ok_or_else(|| corrupt("no 'fortran_order'"))?;
    let shape = shape.ok_or_else(|| corrupt("no 'shape'"))?;
    if fortran {
        return Err(
            "the .npy file is in Fortran order; only C order is supported (save it with np.ascontiguousarray)".into(),
        );
    }
    Ok(Dict { descr, shape })
}

/// A cursor over a Python literal.
struct Lit<'a> {
    s: &'a [u8],
    i: usize,
}

impl Lit<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn word(&mut self, w: &str) -> bool {
        if self.s.get(self.i..self.i + w.len()) == Some(w.as_bytes()) {
            self.i += w.len();
            true
        } else {
            false
        }
    }
    fn string(&mut self) -> Option<String> {
        let q = self.peek().filter(|c| *c == b'\'' || *c == b'"')?;
        let start = self.i + 1;
        let len = self.s.get(start..)?.iter().position(|&c| c == q)?;
        let out = std::str::from_utf8(self.s.get(start..start + len)?).ok()?.to_string();
        self.i = start + len + 1;
        Some(out)
    }
    fn int(&mut self) -> Option<usize> {
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        let n = std::str::from_utf8(self.s.get(start..self.i)?).ok()?.parse().ok()?;
        // Python 2 era writers append `L` to longs.
        self.eat(b'L');
        Some(n)
    }
    fn int_tuple(&mut self) -> Option<Vec<usize>> {
        if !self.eat(b'(') {
            return None;
        }
        let mut out = Vec::new();
        loop {
            self.ws();
            if self.eat(b')') {
                return Some(out);
            }
            out.push(self.int()?);
            self.ws();
            if !self.eat(b',') {
                self.ws();
                return if self.eat(b')') { Some(out) } else { None };
            }
        }
    }
}

/// The header bytes NumPy writes for `descr` and `shape` (padded with
/// spaces and a newline so the data starts at a multiple of 64 bytes).
pub fn header_bytes(descr: &Descr, shape: &[usize]) -> Vec<u8> {
    let dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
        descr.text(),
        shape_text(shape)
    );
    let build = |prefix: usize, version: u8| -> Option<Vec<u8>> {
        let unpadded = prefix + dict.len() + 1;
        let total = unpadded.div_ceil(64) * 64;
        let hlen = total - prefix;
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&[version, 0]);
        if version == 1 {
            out.extend_from_slice(&u16::try_from(hlen).ok()?.to_le_bytes());
        } else {
            out.extend_from_slice(&u32::try_from(hlen).ok()?.to_le_bytes());
        }
        out.extend_from_slice(dict.as_bytes());
        out.resize(total - 1, b' ');
        out.push(b'\n');
        Some(out)
    };
    build(10, 1).or_else(|| build(12, 2)).unwrap_or_default()
}

/// Decodes `n` elements of `descr` from `bytes` into Apsi elements of
/// `T` (the Apsi dtype of `descr`), converting byte order and width.
pub fn decode<T: apsi_core::api::tensor::Scalar>(descr: &Descr, bytes: &[u8]) -> Result<Vec<T>, String> {
    let big = descr.endian == Endian::Big;
    macro_rules! each {
        ($t:ty, $n:expr, $conv:expr) => {{
            let mut out = Vec::with_capacity(bytes.len() / $n);
            for c in bytes.chunks_exact($n) {
                let mut a = [0u8; $n];
                a.copy_from_slice(c);
                let x = if big {
                    <$t>::from_be_bytes(a)
                } else {
                    <$t>::from_le_bytes(a)
                };
                out.push($conv(x)?);
            }
            out
        }};
    }
    let ok_f = |x: f64| -> Result<T, String> { Ok(T::from_f64(x)) };
    let ok_i = |x: i64| -> Result<T, String> { Ok(T::from_i64(x)) };
    Ok(match (descr.kind, descr.size) {
        (b'f', 8) => each!(f64, 8, ok_f),
        (b'f', 4) => each!(f32, 4, |x: f32| ok_f(x as f64)),
        (b'f', _) => each!(u16, 2, |x: u16| ok_f(half::f16::from_bits(x).to_f64())),
        (b'i', 8) => each!(i64, 8, ok_i),
        (b'i', 4) => each!(i32, 4, |x: i32| ok_i(x as i64)),
        (b'i', 2) => each!(i16, 2, |x: i16| ok_i(x as i64)),
        (b'i', _) => each!(i8, 1, |x: i8| ok_i(x as i64)),
        (b'u', 8) => each!(u64, 8, |x: u64| match i64::try_from(x) {
            Ok(v) => ok_i(v),
            Err(_) => Err(format!("the uint64 value {x} does not fit in i64")),
        }),
        (b'u', 4) => each!(u32, 4, |x: u32| ok_i(x as i64)),
        (b'u', 2) => each!(u16, 2, |x: u16| ok_i(x as i64)),
        (b'u', _) => each!(u8, 1, |x: u8| ok_i(x as i64)),
        _ => each!(u8, 1, |x: u8| Ok::<T, String>(T::from_bool(x != 0))),
    })
}

/// Writes elements as little-endian bytes of their own width.
pub fn write_elems<T: apsi_core::api::tensor::Scalar>(w: &mut impl Write, xs: &[T]) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(64 * 1024);
    for &x in xs {
        match T::DTYPE {
            DType::F64 => buf.extend_from_slice(&x.to_f64().to_le_bytes()),
            DType::F32 => buf.extend_from_slice(&(x.to_f64() as f32).to_le_bytes()),
            DType::F16 => buf.extend_from_slice(&half::f16::from_f64(x.to_f64()).to_bits().to_le_bytes()),
            DType::I64 => buf.extend_from_slice(&x.to_i64().to_le_bytes()),
            DType::I32 => buf.extend_from_slice(&(x.to_i64() as i32).to_le_bytes()),
            _ => buf.push(x.to_bool() as u8),
        }
        if buf.len() >= 60 * 1024 {
            w.write_all(&buf)?;
            buf.clear();
        }
    }
    w.write_all(&buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_empty_shape_whose_other_axes_overflow_is_refused() {
        let h = |shape: Vec<usize>| Header {
            descr: Descr::parse("<f8").unwrap(),
            shape,
            data_offset: 128,
        };
        assert!(h(vec![0, 1 << 62, 1 << 62]).count().is_err());
        assert!(h(vec![1 << 62, 1 << 62]).count().is_err());
        assert_eq!(h(vec![0, 1 << 62]).count(), Ok(0));
        assert_eq!(h(vec![3, 4]).count(), Ok(12));
    }

    #[test]
    fn numpy_written_header_parses() {
        // Bytes exactly as NumPy 1.26 writes np.zeros((4, 3), np.float32).
        let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3), }";
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&[1, 0, 118, 0]);
        b.extend_from_slice(dict.as_bytes());
        b.resize(127, b' ');
        b.push(b'\n');
        let h = read_header(&mut &b[..]).expect("header");
        assert_eq!(h.shape, vec![4, 3]);
        assert_eq!(
            h.descr,
            Descr {
                kind: b'f',
                size: 4,
                endian: Endian::Little
            }
        );
        assert_eq!(h.data_offset, 128);
        assert_eq!(header_bytes(&h.descr, &h.shape), b);
    }

    #[test]
    fn errors_name_what_was_found() {
        let e = read_header(&mut &b"hello world, not npy"[..]).unwrap_err();
        assert!(e.contains("not a .npy file"), "{e}");
        let mut b = header_bytes(
            &Descr::parse("<f8").unwrap_or(Descr {
                kind: b'f',
                size: 8,
                endian: Endian::Little,
            }),
            &[2],
        );
        b.truncate(30);
        assert!(read_header(&mut &b[..]).unwrap_err().contains("file ends first"));
        let fortran = header_bytes(
            &Descr {
                kind: b'f',
                size: 8,
                endian: Endian::Little,
            },
            &[2, 2],
        );
        let at = fortran.windows(5).position(|w| w == b"False").unwrap_or(0);
        let mut fortran = fortran.clone();
        fortran.splice(at..at + 5, b"True ".iter().copied());
        assert!(read_header(&mut &fortran[..]).unwrap_err().contains("Fortran order"));
        assert!(Descr::parse("<c16").unwrap_err().contains("unsupported dtype '<c16'"));
        assert!(Descr::parse("<U5").is_err());
        let mut v = MAGIC.to_vec();
        v.extend_from_slice(&[9, 0, 0, 0]);
        assert!(read_header(&mut &v[..]).unwrap_err().contains("version 9.0"));
    }

    #[test]
    fn big_endian_and_narrow_ints_convert() {
        let d = Descr::parse(">i2").expect("descr");
        let v: Vec<i32> = decode(&d, &[0xff, 0xfe, 0x00, 0x05]).expect("decode");
        assert_eq!(v, vec![-2, 5]);
        let d = Descr::parse("|u1").expect("descr");
        assert_eq!(d.dtype(), DType::I32);
        let d = Descr::parse("<u8").expect("descr");
        assert!(decode::<i64>(&d, &u64::MAX.to_le_bytes())
            .unwrap_err()
            .contains("does not fit"));
    }

    proptest! {
        #[test]
        fn header_round_trips(shape in proptest::collection::vec(0usize..100_000, 0..6), which in 0usize..6) {
            let dt = [DType::F64, DType::F32, DType::F16, DType::I64, DType::I32, DType::Bool][which];
            let d = Descr::of(dt).expect("numpy dtype");
            let b = header_bytes(&d, &shape);
            prop_assert_eq!(b.len() % 64, 0);
            let h = read_header(&mut &b[..]).expect("parses");
            prop_assert_eq!(h.shape, shape);
            prop_assert_eq!(h.descr, d);
            prop_assert_eq!(h.descr.dtype(), dt);
            prop_assert_eq!(h.data_offset as usize, b.len());
        }

        #[test]
        fn elements_round_trip(xs in proptest::collection::vec(-1e6f64..1e6, 0..200)) {
            let mut out = Vec::new();
            write_elems(&mut out, &xs).expect("write");
            let back: Vec<f64> = decode(&Descr::of(DType::F64).expect("f8"), &out).expect("decode");
            prop_assert_eq!(back, xs);
        }

        #[test]
        fn random_headers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut b = MAGIC.to_vec();
            b.extend_from_slice(&bytes);
            let _ = read_header(&mut &b[..]);
        }
    }
}
