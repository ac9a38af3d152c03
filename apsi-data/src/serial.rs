//! A compact binary form of Apsi values for the data caches: none, bools,
//! ints, floats, strings, lists, tuples, dicts and tensors (f64, f32, f16,
//! i64, i32, bool). Decoding checks every length against the bytes left and
//! bounds nesting, so a damaged file is an error, never a crash (the caches
//! also verify an HMAC before decoding).

use crate::npy::{self, Descr};
use apsi_core::api::tensor::Tensor;
use apsi_core::api::tensor::{as_tensor, tensor_value};
use apsi_core::api::ErrorKind;
use apsi_core::api::{err, DictMap, VResult, Value};

const MAX_DEPTH: usize = 256;

fn unsupported(v: &Value) -> apsi_core::api::Exc {
    err(
        ErrorKind::TypeError,
        format!(
            "the data cache stores none, bools, numbers, strings, lists, tuples, dicts and tensors; found {}",
            v.type_name()
        ),
    )
}

fn put_len(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&(n as u64).to_le_bytes());
}

/// Appends the encoding of `v` to `out`.
pub fn encode(v: &Value, out: &mut Vec<u8>) -> VResult<()> {
    encode_at(v, out, 0)
}

fn encode_at(v: &Value, out: &mut Vec<u8>, depth: usize) -> VResult<()> {
    if depth > MAX_DEPTH {
        return Err(err(
            ErrorKind::ValueError,
            "the data cache cannot store values nested more than 256 deep",
        ));
    }
    match v {
        Value::None => out.push(0),
        Value::Bool(b) => out.push(if *b { 2 } else { 1 }),
        Value::Int(i) => {
            out.push(3);
            out.extend_from_slice(&i.to_le_bytes());
        }
        Value::Float(f) => {
            out.push(4);
            out.extend_from_slice(&f.to_le_bytes());
        }
        Value::Str(s) => {
            out.push(5);
            put_len(out, s.as_str().len());
            out.extend_from_slice(s.as_str().as_bytes());
        }
        Value::List(l) => {
            let items = l.items.read().clone();
            out.push(6);
            put_len(out, items.len());
            for x in &items {
                encode_at(x, out, depth + 1)?;
            }
        }
        Value::Tuple(t) => {
            out.push(7);
            put_len(out, t.0.len());
            for x in t.0.iter() {
                encode_at(x, out, depth + 1)?;
            }
        }
        Value::Dict(d) => {
            let entries: Vec<(Value, Value)> = d
                .map
                .read()
                .iter()
                .map(|(k, v)| (k.value().clone(), v.clone()))
                .collect();
            out.push(8);
            put_len(out, entries.len());
            for (k, x) in &entries {
                encode_at(k, out, depth + 1)?;
                encode_at(x, out, depth + 1)?;
            }
        }
        other => {
            let t = as_tensor(other).ok_or_else(|| unsupported(other))?;
            let descr = Descr::of(t.dtype).ok_or_else(|| {
                err(
                    ErrorKind::TypeError,
                    format!(
                        "the data cache stores f64, f32, f16, i64, i32 and bool tensors; found {}",
                        t.dtype.name()
                    ),
                )
            })?;
            out.push(9);
            out.push(descr.kind);
            out.push(descr.size as u8);
            put_len(out, t.ndim());
            for &d in t.shape() {
                put_len(out, d);
            }
            let d = t.dense();
            let n = d.size();
            apsi_core::api::tensor::with_dtype!(d.dtype, T => d.with_slice::<T, _>(|s, l| npy::write_elems(out, s.get(l.offset..l.offset + n).unwrap_or(&[])))
                .map_err(|e| err(ErrorKind::IOError, e.to_string()))?, other => ());
        }
    }
    Ok(())
}

struct Rd<'a> {
    b: &'a [u8],
    i: usize,
}

fn damaged(what: &str) -> apsi_core::api::Exc {
    err(ErrorKind::ValueError, format!("damaged cache entry: {what}"))
}

impl<'a> Rd<'a> {
    fn take(&mut self, n: usize) -> VResult<&'a [u8]> {
        let end = self
            .i
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| damaged("it ends early"))?;
        let s = &self.b[self.i..end];
        self.i = end;
        Ok(s)
    }
    fn u8(&mut self) -> VResult<u8> {
        Ok(self.take(1)?[0])
    }
    fn u64(&mut self) -> VResult<u64> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
    /// A count of things each at least `min` bytes long: never more than the bytes left allow.
    fn len(&mut self, min: usize) -> VResult<usize> {
        let n = self.u64()?;
        let left = (self.b.len() - self.i) as u64;
        if n.saturating_mul(min.max(1) as u64) > left {
            return Err(damaged("a length is larger than the entry"));
        }
        Ok(n as usize)
    }
}

/// Decodes every value in `bytes`.
pub fn decode_all(bytes: &[u8]) -> VResult<Vec<Value>> {
    let mut r = Rd { b: bytes, i: 0 };
    let mut out = Vec::new();
    while r.i < bytes.len() {
        out.push(decode_at(&mut r, 0)?);
    }
    Ok(out)
}

fn decode_at(r: &mut Rd, depth: usize) -> VResult<Value> {
    if depth > MAX_DEPTH {
        return Err(damaged("nested too deep"));
    }
    Ok(match r.u8()? {
        0 => Value::None,
        1 => Value::Bool(false),
        2 => Value::Bool(true),
        3 => Value::Int(r.u64()? as i64),
        4 => Value::Float(f64::from_bits(r.u64()?)),
        5 => {
            let n = r.len(1)?;
            let s = std::str::from_utf8(r.take(n)?).map_err(|_| damaged("a string is not UTF-8"))?;
            Value::str(s)
        }
        t @ (6 | 7) => {
            let n = r.len(1)?;
            let items = (0..n).map(|_| decode_at(r, depth + 1)).collect::<VResult<Vec<_>>>()?;
            if t == 6 {
                Value::list(items)
            } else {
                Value::tuple(items)
            }
        }
        8 => {
            let n = r.len(2)?;
            let mut m = DictMap::new();
            for _ in 0..n {
                let k = decode_at(r, depth + 1)?;
                let v = decode_at(r, depth + 1)?;
                m.insert(apsi_core::api::hash_key(&k)?, v);
            }
            Value::dict(m)
        }
        9 => {
            let (kind, size) = (r.u8()?, r.u8()?);
            let descr =
                Descr::parse(&format!("<{}{}", kind as char, size)).map_err(|_| damaged("an unknown tensor dtype"))?;
            let nd = r.len(8)?;
            let shape = (0..nd)
                .map(|_| Ok(r.u64()? as usize))
                .collect::<VResult<Vec<usize>>>()?;
            let count = shape
                .iter()
                .try_fold(1usize, |a, &d| a.checked_mul(d))
                .ok_or_else(|| damaged("a tensor shape overflows"))?;
            let bytes = r.take(
                count
                    .checked_mul(descr.size)
                    .ok_or_else(|| damaged("a tensor size overflows"))?,
            )?;
            let dtype = descr.dtype();
            let t = apsi_core::api::tensor::with_dtype!(dtype, T => {
                let v: Vec<T> = npy::decode(&descr, bytes).map_err(|m| damaged(&m))?;
                Tensor::from_vec(v, shape)
            }, other => return Err(damaged("an unsupported tensor dtype")));
            tensor_value(t)
        }
        other => return Err(damaged(&format!("unknown value tag {other}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn values_round_trip() {
        let t = Tensor::from_vec(vec![1.5f32, -2.0, 3.25, 0.0], vec![2, 2]);
        let v = Value::list(vec![
            Value::None,
            Value::Bool(true),
            Value::Int(-7),
            Value::Float(0.1),
            Value::str("héllo"),
            Value::tuple(vec![Value::Int(1), tensor_value(t.clone())]),
        ]);
        let mut b = Vec::new();
        encode(&v, &mut b).expect("encode");
        let back = decode_all(&b).expect("decode");
        assert_eq!(apsi_core::api::repr_of(&back[0]), apsi_core::api::repr_of(&v));
        assert!(encode(
            &Value::Native(std::sync::Arc::new(apsi_core::api::NativeFn::new("f", |_, _, _| Ok(
                Value::None
            )))),
            &mut b
        )
        .is_err());
    }

    proptest! {
        #[test]
        fn damaged_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode_all(&bytes);
        }
    }
}
