//! The value encoding between Apsi and the Python worker (the Python half is
//! `worker.py`; the two change together).
//!
//! One tag byte, then the payload; integers are little-endian, lengths are
//! `u32` (element counts, string bytes) or `u64` (tensor dims and bytes):
//!
//! | tag | value | payload |
//! |---|---|---|
//! | `N` `T` `F` | none, true, false | — |
//! | `i` | int | `i64` |
//! | `f` | float | the `f64`'s bits (exact: inf, nan, -0.0 survive) |
//! | `s` | str | `u32` byte count, UTF-8 |
//! | `y` | bytes | `u32` byte count, the bytes (Python `bytes`; `bytearray` and `memoryview` arrive as bytes) |
//! | `l` `t` | list, tuple | `u32` count, the items |
//! | `d` | dict | `u32` count, key then value, in insertion order |
//! | `r` | range | start, stop, step as `i64` |
//! | `a` | tensor / NumPy array | element code (a str payload), `u32` ndim, `u64` per dim, `u64` byte count, the raw little-endian elements |
//!
//! Element codes are NumPy's: `f8 f4 f2 i8 i4 i1 u1 b1`. `bf16` and the
//! narrow float formats leave as `f4` (NumPy has no such dtypes), `int4` as
//! `i1`. Decoding never trusts a length: each is checked against the bytes
//! left, and nesting is bounded by [`MAX_DEPTH`] both ways.

use apsi_core::api::tensor::DType;
use apsi_core::api::tensor::{as_tensor, tensor_value, Tensor};
use apsi_core::api::DictMap;
use apsi_core::api::ErrorKind;
use apsi_core::api::{err, HashKey, RangeObj, VResult, Value};
use half::f16;
use std::sync::Arc;

/// Deepest nesting of lists, tuples and dicts that crosses (a list that
/// contains itself would otherwise never end).
pub const MAX_DEPTH: usize = 200;

/// Appends the encoding of `v` to `out`.
pub fn encode(v: &Value, out: &mut Vec<u8>) -> VResult<()> {
    enc(v, out, 0)
}

fn put_len32(out: &mut Vec<u8>, n: usize, what: &str) -> VResult<()> {
    let n = u32::try_from(n).map_err(|_| {
        err(
            ErrorKind::ValueError,
            format!("{what} of {n} items is too large to pass to Python (at most 4294967295)"),
        )
    })?;
    out.extend_from_slice(&n.to_le_bytes());
    Ok(())
}

/// A string payload: `u32` byte count, then UTF-8.
pub fn put_str(out: &mut Vec<u8>, s: &str) -> VResult<()> {
    put_len32(out, s.len(), "a string")?;
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

fn enc(v: &Value, out: &mut Vec<u8>, depth: usize) -> VResult<()> {
    if depth > MAX_DEPTH {
        return Err(err(
            ErrorKind::ValueError,
            format!(
                "a value nested deeper than {MAX_DEPTH} levels cannot pass to Python (a list that contains itself?)"
            ),
        ));
    }
    match v {
        Value::None => out.push(b'N'),
        Value::Bool(b) => out.push(if *b { b'T' } else { b'F' }),
        Value::Int(i) => {
            out.push(b'i');
            out.extend_from_slice(&i.to_le_bytes());
        }
        Value::Float(f) => {
            out.push(b'f');
            out.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        Value::Str(s) => {
            out.push(b's');
            put_str(out, s.as_str())?;
        }
        Value::List(l) => {
            // A snapshot of the items: no lock is held while the items encode.
            let items: Vec<Value> = l.items.read().clone();
            out.push(b'l');
            put_len32(out, items.len(), "a list")?;
            for x in &items {
                enc(x, out, depth + 1)?;
            }
        }
        Value::Tuple(t) => {
            out.push(b't');
            put_len32(out, t.0.len(), "a tuple")?;
            for x in t.0.iter() {
                enc(x, out, depth + 1)?;
            }
        }
        Value::Dict(d) => {
            let pairs: Vec<(Value, Value)> = d.map.read().iter().map(|(k, v)| (k.value().clone(), v.clone())).collect();
            out.push(b'd');
            put_len32(out, pairs.len(), "a dict")?;
            for (k, x) in &pairs {
                enc(k, out, depth + 1)?;
                enc(x, out, depth + 1)?;
            }
        }
        Value::Bytes(b) => {
            out.push(b'y');
            put_len32(out, b.0.len(), "a bytes value")?;
            out.extend_from_slice(&b.0);
        }
        Value::Range(r) => {
            out.push(b'r');
            for n in [r.start, r.stop, r.step] {
                out.extend_from_slice(&n.to_le_bytes());
            }
        }
        other => match as_tensor(other) {
            Some(t) => enc_tensor(&t, out)?,
            None => {
                return Err(err(
                    ErrorKind::TypeError,
                    format!(
                        "a value of Apsi type '{}' cannot pass to Python; expected a number, str, list, tuple, dict, range, none or tensor",
                        other.type_name()
                    ),
                ))
            }
        },
    }
    Ok(())
}

/// The NumPy element code a tensor of `d` crosses as.
pub fn code_of(d: DType) -> &'static str {
    match d {
        DType::F64 => "f8",
        DType::F16 => "f2",
        DType::I64 => "i8",
        DType::I32 => "i4",
        DType::Bool => "b1",
        DType::Int8 | DType::Int4 => "i1",
        DType::UInt8 => "u1",
        DType::F32
        | DType::BF16
        | DType::Fp8E4M3
        | DType::Fp8E5M2
        | DType::Fp6E3M2
        | DType::Fp6E2M3
        | DType::Fp4E2M1 => "f4",
    }
}

fn enc_tensor(t: &Tensor, out: &mut Vec<u8>) -> VResult<()> {
    let code = code_of(t.dtype);
    let raw: Vec<u8> = match code {
        "f8" => t.to_vec::<f64>().iter().flat_map(|x| x.to_le_bytes()).collect(),
        "f4" => t.to_vec::<f32>().iter().flat_map(|x| x.to_le_bytes()).collect(),
        "f2" => t
            .to_vec::<f16>()
            .iter()
            .flat_map(|x| x.to_bits().to_le_bytes())
            .collect(),
        "i8" => t.to_vec::<i64>().iter().flat_map(|x| x.to_le_bytes()).collect(),
        "i4" => t.to_vec::<i32>().iter().flat_map(|x| x.to_le_bytes()).collect(),
        "b1" => t.to_vec::<bool>().iter().map(|b| u8::from(*b)).collect(),
        // int8/int4/uint8 hold codes; their values fit one byte.
        "i1" => t
            .to_vec::<i64>()
            .iter()
            .map(|x| (*x).clamp(-128, 127) as i8 as u8)
            .collect(),
        _ => t.to_vec::<i64>().iter().map(|x| (*x).clamp(0, 255) as u8).collect(),
    };
    out.push(b'a');
    put_str(out, code)?;
    put_len32(out, t.ndim(), "a tensor's shape")?;
    for d in t.shape() {
        out.extend_from_slice(&(*d as u64).to_le_bytes());
    }
    out.extend_from_slice(&(raw.len() as u64).to_le_bytes());
    out.extend_from_slice(&raw);
    Ok(())
}

/// Reads values from a message of the worker.
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

fn bad(what: impl Into<String>) -> apsi_core::api::Exc {
    err(
        ErrorKind::ValueError,
        format!("a malformed message from the Python worker: {}", what.into()),
    )
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Reader<'a> {
        Reader { data, pos: 0 }
    }

    /// Whether every byte was read.
    pub fn at_end(&self) -> bool {
        self.pos == self.data.len()
    }

    pub fn take(&mut self, n: usize) -> VResult<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.data.len());
        match end.and_then(|e| self.data.get(self.pos..e).map(|s| (e, s))) {
            Some((e, s)) => {
                self.pos = e;
                Ok(s)
            }
            None => Err(bad(format!(
                "expected {n} more bytes at offset {}, found {}",
                self.pos,
                self.data.len() - self.pos
            ))),
        }
    }

    fn array<const N: usize>(&mut self) -> VResult<[u8; N]> {
        self.take(N)?.try_into().map_err(|_| bad("a short read"))
    }

    pub fn u8(&mut self) -> VResult<u8> {
        Ok(self.array::<1>()?[0])
    }
    pub fn u32(&mut self) -> VResult<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    pub fn u64(&mut self) -> VResult<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    pub fn i64(&mut self) -> VResult<i64> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    /// A `u64` length that must fit in what is left.
    fn len64(&mut self) -> VResult<usize> {
        let n = self.u64()?;
        usize::try_from(n)
            .ok()
            .filter(|n| *n <= self.data.len() - self.pos)
            .ok_or_else(|| bad(format!("a length of {n} bytes")))
    }

    /// A string payload; invalid UTF-8 (lone surrogates) becomes U+FFFD.
    pub fn string(&mut self) -> VResult<String> {
        let n = self.u32()? as usize;
        Ok(String::from_utf8_lossy(self.take(n)?).into_owned())
    }

    /// A count of items, each at least one byte: more than the bytes left is malformed.
    fn count(&mut self) -> VResult<usize> {
        let n = self.u32()? as usize;
        if n > self.data.len() - self.pos {
            return Err(bad(format!("{n} items in {} bytes", self.data.len() - self.pos)));
        }
        Ok(n)
    }

    pub fn value(&mut self) -> VResult<Value> {
        self.val(0)
    }

    fn val(&mut self, depth: usize) -> VResult<Value> {
        if depth > MAX_DEPTH {
            return Err(bad(format!("nested deeper than {MAX_DEPTH} levels")));
        }
        let tag = self.u8()?;
        Ok(match tag {
            b'N' => Value::None,
            b'T' => Value::Bool(true),
            b'F' => Value::Bool(false),
            b'i' => Value::Int(self.i64()?),
            b'f' => Value::Float(f64::from_bits(self.u64()?)),
            b's' => Value::str(self.string()?),
            b'y' => {
                let n = self.u32()? as usize;
                Value::bytes(self.take(n)?.to_vec())
            }
            b'l' | b't' => {
                let n = self.count()?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.val(depth + 1)?);
                }
                if tag == b'l' {
                    Value::list(items)
                } else {
                    Value::tuple(items)
                }
            }
            b'd' => {
                let n = self.count()?;
                let mut map = DictMap::with_capacity(n);
                for _ in 0..n {
                    let k = HashKey::new(self.val(depth + 1)?)?;
                    let v = self.val(depth + 1)?;
                    map.insert(k, v);
                }
                Value::dict(map)
            }
            b'r' => {
                let (start, stop, step) = (self.i64()?, self.i64()?, self.i64()?);
                if step == 0 {
                    return Err(bad("a range with step 0"));
                }
                Value::Range(Arc::new(RangeObj { start, stop, step }))
            }
            b'a' => self.tensor()?,
            other => return Err(bad(format!("unknown value tag {:?}", other as char))),
        })
    }

    fn tensor(&mut self) -> VResult<Value> {
        let code = self.string()?;
        let ndim = self.count()?;
        let mut shape = Vec::with_capacity(ndim);
        let mut size: usize = 1;
        for _ in 0..ndim {
            let d = usize::try_from(self.u64()?).map_err(|_| bad("a dimension too large for this machine"))?;
            size = size.checked_mul(d).ok_or_else(|| bad("a shape whose size overflows"))?;
            shape.push(d);
        }
        let raw = {
            let n = self.len64()?;
            self.take(n)?
        };
        let width = match code.as_str() {
            "f8" | "i8" => 8,
            "f4" | "i4" => 4,
            "f2" => 2,
            "b1" | "i1" | "u1" => 1,
            _ => return Err(bad(format!("unknown element code '{code}'"))),
        };
        if size.checked_mul(width) != Some(raw.len()) {
            return Err(bad(format!(
                "an array of shape {shape:?} and code {code} with {} bytes",
                raw.len()
            )));
        }
        let t = match code.as_str() {
            "f8" => Tensor::from_vec(le_elems(raw, f64::from_le_bytes), shape),
            "f4" => Tensor::from_vec(le_elems(raw, f32::from_le_bytes), shape),
            "f2" => Tensor::from_vec(le_elems(raw, |b| f16::from_bits(u16::from_le_bytes(b))), shape),
            "i8" => Tensor::from_vec(le_elems(raw, i64::from_le_bytes), shape),
            "i4" => Tensor::from_vec(le_elems(raw, i32::from_le_bytes), shape),
            "b1" => Tensor::from_vec(raw.iter().map(|b| *b != 0).collect::<Vec<bool>>(), shape),
            "i1" => Tensor::from_vec(raw.iter().map(|b| *b as i8 as i64).collect::<Vec<i64>>(), shape)
                .astype(DType::Int8)?,
            _ => Tensor::from_vec(raw.iter().map(|b| *b as i64).collect::<Vec<i64>>(), shape).astype(DType::UInt8)?,
        };
        Ok(tensor_value(t))
    }
}

/// Elements of `N` little-endian bytes each, decoded by `f` (every chunk
/// from `chunks_exact` has exactly `N` bytes).
fn le_elems<T, const N: usize>(raw: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
    raw.chunks_exact(N)
        .map(|c| f(c.try_into().unwrap_or([0u8; N])))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use apsi_core::api::repr_of as repr;

    fn round(v: &Value) -> Value {
        let mut out = Vec::new();
        encode(v, &mut out).unwrap();
        let mut r = Reader::new(&out);
        let back = r.value().unwrap();
        assert!(r.at_end(), "bytes left after decoding");
        back
    }

    #[test]
    fn scalars_round_trip_exactly() {
        for f in [
            0.0,
            -0.0,
            1.5,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
            5e-324,
            0.1,
        ] {
            match round(&Value::Float(f)) {
                Value::Float(g) => assert_eq!(g.to_bits(), f.to_bits()),
                other => panic!("float came back as {}", other.type_name()),
            }
        }
        for i in [0, 1, -1, i64::MAX, i64::MIN] {
            assert!(matches!(round(&Value::Int(i)), Value::Int(j) if j == i));
        }
        assert!(matches!(round(&Value::Bool(true)), Value::Bool(true)));
        assert!(matches!(round(&Value::None), Value::None));
        assert_eq!(round(&Value::str("héllo ✓")).as_str(), Some("héllo ✓"));
        assert_eq!(repr(&round(&Value::bytes(b"GIF\x89\x00".to_vec()))), r"b'GIF\x89\x00'");
        assert_eq!(repr(&round(&Value::bytes(Vec::new()))), "b''");
    }

    #[test]
    fn containers_keep_kind_and_order() {
        let mut m = DictMap::new();
        m.insert(HashKey::new(Value::str("z")).unwrap(), Value::Int(1));
        m.insert(
            HashKey::new(Value::tuple(vec![Value::Int(1), Value::Int(2)])).unwrap(),
            Value::None,
        );
        m.insert(
            HashKey::new(Value::Int(3)).unwrap(),
            Value::list(vec![Value::Float(2.5)]),
        );
        let v = Value::list(vec![
            Value::tuple(vec![Value::Int(1), Value::str("a")]),
            Value::dict(m),
            Value::list(vec![]),
        ]);
        assert_eq!(repr(&round(&v)), "[(1, 'a'), {'z': 1, (1, 2): none, 3: [2.5]}, []]");
    }

    #[test]
    fn a_list_containing_itself_is_refused() {
        let l = Value::list(vec![]);
        if let Value::List(o) = &l {
            o.items.write().push(l.clone());
        }
        let e = encode(&l, &mut Vec::new()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::ValueError);
        assert!(e.message.contains("nested deeper than 200"), "{}", e.message);
        if let Value::List(o) = &l {
            o.items.write().clear(); // break the cycle so the test does not leak
        }
    }

    #[test]
    fn functions_do_not_cross() {
        let f = apsi_core::api::prelude_function("len").unwrap();
        let e = encode(&f, &mut Vec::new()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::TypeError);
        assert!(
            e.message.contains("Apsi type 'function'") || e.message.contains("cannot pass to Python"),
            "{}",
            e.message
        );
    }

    #[test]
    fn tensors_round_trip_with_dtype_and_shape() {
        let t = Tensor::from_vec(vec![1.5f64, -0.0, f64::NAN, 4.0, 5.0, 6.0], vec![2, 3]);
        let back = as_tensor(&round(&tensor_value(t))).unwrap();
        assert_eq!(back.dtype, DType::F64);
        assert_eq!(back.shape(), &[2, 3]);
        let v: Vec<f64> = back.to_vec();
        assert_eq!(v[1].to_bits(), (-0.0f64).to_bits());
        assert!(v[2].is_nan());
        for (d, vals) in [
            (DType::I32, vec![1.0, -2.0]),
            (DType::F16, vec![0.5, 2.0]),
            (DType::Bool, vec![1.0, 0.0]),
        ] {
            let t = Tensor::from_vec(vals.clone(), vec![2]).astype(d).unwrap();
            let back = as_tensor(&round(&tensor_value(t))).unwrap();
            assert_eq!(back.dtype, d);
            assert_eq!(back.to_vec::<f64>(), vals);
        }
        // int8 and uint8 keep their values; bf16 comes back as f32.
        let t = Tensor::from_vec(vec![-3i64, 7], vec![2]).astype(DType::Int8).unwrap();
        let back = as_tensor(&round(&tensor_value(t))).unwrap();
        assert_eq!((back.dtype, back.to_vec::<i64>()), (DType::Int8, vec![-3, 7]));
        let t = Tensor::from_vec(vec![1.0f64, 2.5], vec![2])
            .astype(DType::BF16)
            .unwrap();
        let back = as_tensor(&round(&tensor_value(t))).unwrap();
        assert_eq!((back.dtype, back.to_vec::<f64>()), (DType::F32, vec![1.0, 2.5]));
        // A 0-d tensor stays a tensor.
        let back = as_tensor(&round(&tensor_value(Tensor::scalar(2.0f32)))).unwrap();
        assert_eq!(back.shape(), &[] as &[usize]);
    }

    #[test]
    fn malformed_messages_are_errors_not_panics() {
        let cases: Vec<Vec<u8>> = vec![
            vec![],
            vec![b'i', 1, 2],
            vec![b's', 255, 255, 255, 255],
            vec![b'l', 255, 255, 255, 255],
            vec![
                b'r', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            ],
            vec![b'Q'],
            vec![b'd', 1, 0, 0, 0, b'l', 0, 0, 0, 0, b'N'],
        ];
        for c in cases {
            assert!(Reader::new(&c).value().is_err(), "{c:?} decoded");
        }
        // A tensor whose byte count does not match its shape.
        let mut m = vec![b'a'];
        put_str(&mut m, "f8").unwrap();
        m.extend_from_slice(&1u32.to_le_bytes());
        m.extend_from_slice(&u64::MAX.to_le_bytes());
        m.extend_from_slice(&8u64.to_le_bytes());
        m.extend_from_slice(&[0; 8]);
        assert!(Reader::new(&m).value().is_err());
        // Deep nesting is bounded.
        let mut deep = Vec::new();
        for _ in 0..(MAX_DEPTH + 5) {
            deep.extend_from_slice(&[b'l', 1, 0, 0, 0]);
        }
        deep.push(b'N');
        assert!(Reader::new(&deep).value().is_err());
    }

    #[test]
    fn every_byte_string_decodes_or_errs() {
        // Small exhaustive-ish fuzz: prefixes of valid messages and random bytes never panic.
        let mut out = Vec::new();
        encode(
            &Value::list(vec![
                Value::str("ab"),
                Value::Float(1.0),
                Value::tuple(vec![Value::Int(2)]),
            ]),
            &mut out,
        )
        .unwrap();
        for n in 0..out.len() {
            let _ = Reader::new(&out[..n]).value();
        }
        let mut x: u64 = 0x9E3779B97F4A7C15;
        for _ in 0..2000 {
            let mut buf = Vec::new();
            for _ in 0..(x % 40) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                buf.push(b"NTFifsltdray\x00\x01\xff"[(x % 15) as usize]);
            }
            let _ = Reader::new(&buf).value();
        }
    }
}
