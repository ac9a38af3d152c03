//! Tensors of the packed dtypes (fp8, fp6, fp4, int8, int4, uint8): reading
//! their elements, converting into and out of them, and arithmetic, which
//! decodes to f32 (integer formats: i64), computes there and rounds the
//! result back to the operands' format (LANGUAGE.md §7).

use super::bulk;
use super::pack;
use crate::syntax::ast::BinOp;
use crate::tensor::arith::Arg;
use crate::tensor::core::Tensor;
use crate::tensor::dtype::{DType, Kind};
use crate::tensor::layout::{for_each_offset, Layout};
use crate::tensor::storage::{Buffer, Scalar};
use crate::value::VResult;
use std::any::Any;

/// The dtype a packed format computes in.
pub fn compute_dtype(d: DType) -> DType {
    if d.kind() == Kind::Float {
        DType::F32
    } else {
        DType::I64
    }
}

/// The elements of a packed buffer seen through `layout`, decoded to f32, row-major.
pub fn packed_f32(b: &Buffer, layout: &Layout, d: DType) -> Vec<f32> {
    let Buffer::Packed { bits, bytes, len } = b else {
        return Vec::new();
    };
    let n = layout.size();
    if layout.is_contiguous() && layout.offset.checked_add(n).is_some_and(|e| e <= *len) {
        return bulk::decode_packed(d, bytes, *bits, layout.offset, n);
    }
    let t = bulk::table(d);
    let mut out = Vec::with_capacity(n);
    for_each_offset(&layout.shape, &layout.strides, layout.offset, |o| {
        out.push(t[pack::get(bytes, *bits, o) as usize])
    });
    out
}

/// The elements of a packed buffer as `U` (row-major), as `Tensor::to_vec` gives them.
pub fn packed_to_vec<U: Scalar>(b: &Buffer, layout: &Layout, d: DType) -> Vec<U> {
    let v = packed_f32(b, layout, d);
    let boxed: Box<dyn Any> = Box::new(v);
    match boxed.downcast::<Vec<U>>() {
        Ok(same) => *same,
        Err(other) => match other.downcast::<Vec<f32>>() {
            Ok(v) => v.iter().map(|&x| U::from_f64(x as f64)).collect(),
            Err(_) => Vec::new(),
        },
    }
}

/// A dense copy of the codes seen through `layout`.
pub fn packed_contiguous(b: &Buffer, layout: &Layout) -> Buffer {
    let Buffer::Packed { bits, bytes, len } = b else {
        return Buffer::Packed {
            bits: 8,
            bytes: Vec::new(),
            len: 0,
        };
    };
    let bits = *bits;
    let n = layout.size();
    if layout.offset == 0 && layout.is_contiguous() && n == *len {
        return Buffer::Packed {
            bits,
            bytes: bytes.clone(),
            len: n,
        };
    }
    let mut out = vec![0u8; pack::byte_len(n, bits)];
    let mut i = 0usize;
    for_each_offset(&layout.shape, &layout.strides, layout.offset, |o| {
        pack::set(&mut out, bits, i, pack::get(bytes, bits, o));
        i += 1;
    });
    Buffer::Packed {
        bits,
        bytes: out,
        len: n,
    }
}

/// A tensor of `shape` whose every element is `x` rounded to the packed format `d`.
pub fn filled(shape: Vec<usize>, n: usize, x: f64, d: DType) -> Tensor {
    let bits = d.bits() as u8;
    let code = super::encode_f64(d, x) as u8;
    let mut one = vec![0u8; pack::byte_len(4, bits)];
    for i in 0..4 {
        pack::set(&mut one, bits, i, code);
    }
    let nb = pack::byte_len(n, bits);
    let bytes: Vec<u8> = one.iter().copied().cycle().take(nb).collect();
    // Clear the codes past the end so equal tensors have equal bytes.
    let mut bytes = bytes;
    for i in n..pack::byte_len(n, bits) * 8 / bits as usize {
        pack::set(&mut bytes, bits, i, 0);
    }
    Tensor::from_buffer(Buffer::Packed { bits, bytes, len: n }, shape, d)
}

/// `astype` where the source or the target is a packed format, or the target
/// is f16/bf16 from f32/f64 (all go through the bit-exact codecs). `None`
/// when neither applies (the generic path converts).
pub fn astype(t: &Tensor, d: DType) -> Option<Tensor> {
    let src_packed = super::is_packed(t.dtype);
    let dst_coded = super::is_packed(d) || matches!(d, DType::F16 | DType::BF16);
    let shape = t.shape().to_vec();
    if src_packed {
        if d == t.dtype {
            let b = t.storage.read(|b| packed_contiguous(b, &t.layout));
            return Some(Tensor::from_buffer(b, shape, d));
        }
        let v: Vec<f32> = t.to_vec();
        let buf = if dst_coded {
            bulk::encode_f32(d, &v)
        } else {
            return Some(native_from_f32(v, shape, d));
        };
        return Some(Tensor::from_buffer(buf, shape, d));
    }
    if d == DType::F32 && matches!(t.dtype, DType::F16 | DType::BF16) {
        let v = match t.dtype {
            DType::F16 => t.with_slice::<half::f16, _>(|s, l| dense(s, l).map(bulk::decode_f16)),
            _ => t.with_slice::<half::bf16, _>(|s, l| dense(s, l).map(bulk::decode_bf16)),
        }?;
        return Some(Tensor::from_vec(v, shape));
    }
    if !dst_coded {
        return None;
    }
    let buf = match t.dtype {
        DType::F32 => t.with_slice::<f32, _>(|s, l| match dense(s, l) {
            Some(s) => bulk::encode_f32(d, s),
            None => bulk::encode_f32(d, &t.to_vec::<f32>()),
        }),
        DType::F64 => t.with_slice::<f64, _>(|s, l| match dense(s, l) {
            Some(s) => bulk::encode_f64(d, s),
            None => bulk::encode_f64(d, &t.to_vec::<f64>()),
        }),
        _ if !super::is_packed(d) => return None,
        _ => bulk::encode_f64(d, &t.to_vec::<f64>()),
    };
    Some(Tensor::from_buffer(buf, shape, d))
}

fn dense<'a, T>(s: &'a [T], l: &Layout) -> Option<&'a [T]> {
    if l.is_contiguous() {
        s.get(l.offset..l.offset.checked_add(l.size())?)
    } else {
        None
    }
}

fn native_from_f32(v: Vec<f32>, shape: Vec<usize>, d: DType) -> Tensor {
    if d == DType::F32 {
        return Tensor::from_vec(v, shape);
    }
    crate::with_dtype!(d, T => Tensor::from_vec(v.iter().map(|&x| T::from_f64(x as f64)).collect(), shape), other => Tensor::from_vec(v, shape))
}

/// `x op y` for two tensors of one packed dtype: computed in f32 (i64 for
/// the integer formats) and rounded back. The casts are on the tape, so
/// gradients pass through (the rounding's derivative counts as 1).
pub fn binary_same(op: BinOp, x: &Tensor, y: &Tensor) -> VResult<Tensor> {
    let d = x.dtype;
    let c = compute_dtype(d);
    let xc = Arg::T(x.clone()).to_tensor(c)?;
    let yc = Arg::T(y.clone()).to_tensor(c)?;
    let r = crate::tensor::arith::binary_same(op, &xc, &yc)?;
    if r.dtype == c {
        Arg::T(r).to_tensor(d)
    } else {
        Ok(r)
    }
}

/// `f(x)` for a packed tensor: computed in f32 and rounded back to x's format
/// (integer formats keep their format for `-`, `abs` and `sign`, others give f32).
pub fn unary(f: crate::tensor::arith::UFn, x: &Tensor) -> VResult<Tensor> {
    let d = x.dtype;
    let xc = Arg::T(x.clone()).to_tensor(compute_dtype(d))?;
    let r = crate::tensor::arith::unary(f, &xc)?;
    if d.kind() == Kind::Float || r.dtype == DType::I64 {
        Arg::T(r).to_tensor(d)
    } else {
        Ok(r)
    }
}

/// `a @ b` for packed operands of one format: computed in f32 (i64), rounded back.
pub fn matmul(x: &Tensor, y: &Tensor) -> VResult<Tensor> {
    let d = x.dtype;
    let c = compute_dtype(d);
    let r = crate::tensor::matmul::matmul(&Arg::T(x.clone()).to_tensor(c)?, &Arg::T(y.clone()).to_tensor(c)?)?;
    Arg::T(r).to_tensor(d)
}

/// The elements of a packed tensor at storage offsets, as a new packed tensor.
pub fn gather(t: &Tensor, offsets: &[usize], shape: Vec<usize>) -> Tensor {
    let bits = t.dtype.bits() as u8;
    let bytes = t.storage.read(|b| match b {
        Buffer::Packed { bytes, bits, .. } => {
            let mut out = vec![0u8; pack::byte_len(offsets.len(), *bits)];
            for (i, &o) in offsets.iter().enumerate() {
                pack::set(&mut out, *bits, i, pack::get(bytes, *bits, o));
            }
            out
        }
        _ => Vec::new(),
    });
    Tensor::from_buffer(
        Buffer::Packed {
            bits,
            bytes,
            len: offsets.len(),
        },
        shape,
        t.dtype,
    )
}

/// Writes `src` (already of t's format), broadcast to `shape`, at storage offsets of packed `t`.
pub fn scatter(t: &Tensor, offsets: &[usize], src: &Tensor, shape: &[usize]) -> VResult<()> {
    let vals: Vec<f32> = crate::tensor::kernels::expand_to::<f32>(src, shape);
    let d = t.dtype;
    t.storage.write(|b| {
        if let Buffer::Packed { bytes, bits, .. } = b {
            for (&o, &x) in offsets.iter().zip(&vals) {
                pack::set(bytes, *bits, o, super::encode_f32(d, x) as u8);
            }
        }
    });
    Ok(())
}

/// `concat` of tensors whose common dtype `d` is packed: joined in f32 (i64), rounded back.
pub fn concat(ts: &[Tensor], axis: i64, d: DType) -> VResult<Tensor> {
    let c = compute_dtype(d);
    let parts: Vec<Tensor> = ts
        .iter()
        .map(|t| Arg::T(t.clone()).to_tensor(c))
        .collect::<VResult<_>>()?;
    Arg::T(crate::tensor::shape::concat(&parts, axis)?).to_tensor(d)
}

/// `where(cond, x, y)` for operands of the packed dtype `d`.
pub fn where_(cond: &Tensor, x: &Tensor, y: &Tensor, d: DType) -> VResult<Tensor> {
    let c = compute_dtype(d);
    let (xc, yc) = (Arg::T(x.clone()).to_tensor(c)?, Arg::T(y.clone()).to_tensor(c)?);
    Arg::T(crate::tensor::arith::where_(cond, &Arg::T(xc), &Arg::T(yc))?).to_tensor(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::print::tensor_str;
    use crate::tensor::Tensor;

    fn f32s(v: &[f32]) -> Tensor {
        Tensor::from_vec(v.to_vec(), vec![v.len()])
    }

    #[test]
    fn astype_prints_and_counts_real_bytes() {
        let x = f32s(&[1.0, 0.1, 300.0, 500.0, 1e-3]);
        let s = |d| x.astype(d).map(|t| tensor_str(&t)).unwrap_or_default();
        assert_eq!(
            s(DType::BF16),
            "tensor([1.0, 0.100097656, 300.0, 500.0, 0.0009994507], dtype=bf16)"
        );
        assert_eq!(
            s(DType::Fp8E4M3),
            "tensor([1.0, 0.1015625, 288.0, nan, 0.001953125], dtype=fp8_e4m3)"
        );
        assert_eq!(s(DType::Fp4E2M1), "tensor([1.0, 0.0, 6.0, 6.0, 0.0], dtype=fp4_e2m1)");
        assert_eq!(s(DType::Int4), "tensor([1, 0, -4, 4, 0], dtype=int4)");
        assert_eq!(x.astype(DType::Fp4E2M1).map(|t| t.nbytes()).ok(), Some(3));
        let ones = Tensor::full(vec![8], 1.0, DType::Fp6E3M2).unwrap();
        assert_eq!(ones.nbytes(), 6);
        assert_eq!(ones.to_vec::<f64>(), vec![1.0; 8]);
    }

    #[test]
    fn views_of_packed_tensors_read_the_right_codes() {
        let v: Vec<f32> = (0..12).map(|i| i as f32 * 0.5).collect();
        for d in [DType::Fp4E2M1, DType::Fp6E2M3, DType::Int4, DType::Fp8E5M2] {
            let t = f32s(&v).astype(d).unwrap().reshaped(vec![3, 4]).unwrap();
            let tt = crate::tensor::shape::permute(&t, &[1, 0]).unwrap();
            let want: Vec<f32> = t.to_vec::<f32>();
            let got = tt.to_vec::<f32>();
            for i in 0..3 {
                for j in 0..4 {
                    assert_eq!(got[j * 3 + i], want[i * 4 + j], "{}", d.name());
                }
            }
            assert_eq!(tt.contiguous().to_vec::<f32>(), got);
            assert_eq!(tt.astype(d).unwrap().to_vec::<f32>(), got);
        }
    }

    #[test]
    fn arithmetic_rounds_back_to_the_format() {
        let a = f32s(&[1.0, 2.0, 3.0]).astype(DType::Fp8E4M3).unwrap();
        let b = f32s(&[0.1, 0.2, 400.0]).astype(DType::Fp8E4M3).unwrap();
        let r = crate::tensor::arith::binary(BinOp::Add, &Arg::T(a.clone()), &Arg::T(b)).unwrap();
        assert_eq!(r.dtype, DType::Fp8E4M3);
        // 1 + 0.1015625 → 1.125; 2 + 0.203125 → 2.25; 3 + 384 → 384 (step 32)
        assert_eq!(r.to_vec::<f32>(), vec![1.125, 2.25, 384.0]);
        let m = crate::tensor::arith::binary(BinOp::Mul, &Arg::T(a), &Arg::Float(2.0)).unwrap();
        assert_eq!((m.dtype, m.to_vec::<f32>()), (DType::Fp8E4M3, vec![2.0, 4.0, 6.0]));
        let i = Tensor::from_vec(vec![100i64, -100], vec![2])
            .astype(DType::Int8)
            .unwrap();
        let s = crate::tensor::arith::binary(BinOp::Add, &Arg::T(i.clone()), &Arg::T(i)).unwrap();
        assert_eq!((s.dtype, s.to_vec::<i64>()), (DType::Int8, vec![-56, 56]));
    }

    #[test]
    fn matmul_concat_where_gather_and_scatter() {
        let a = f32s(&[1.0, 2.0, 3.0, 4.0])
            .astype(DType::Fp8E4M3)
            .unwrap()
            .reshaped(vec![2, 2])
            .unwrap();
        let p = crate::tensor::matmul::matmul(&a, &a).unwrap();
        assert_eq!(
            (p.dtype, p.to_vec::<f32>()),
            (DType::Fp8E4M3, vec![7.0, 10.0, 15.0, 22.0])
        );
        let c = crate::tensor::shape::concat(&[a.clone(), a.clone()], 0).unwrap();
        assert_eq!((c.dtype, c.shape().to_vec()), (DType::Fp8E4M3, vec![4, 2]));
        let cond = Tensor::from_vec(vec![true, false, true, false], vec![2, 2]);
        let z = Tensor::full(vec![2, 2], 0.0, DType::Fp8E4M3).unwrap();
        let w = crate::tensor::arith::where_(&cond, &Arg::T(a.clone()), &Arg::T(z)).unwrap();
        assert_eq!((w.dtype, w.to_vec::<f32>()), (DType::Fp8E4M3, vec![1.0, 0.0, 3.0, 0.0]));
        let f = f32s(&[0.5, 1.0, 1.5, 2.0, 3.0]).astype(DType::Fp4E2M1).unwrap();
        let g = gather(&f, &[4, 0, 3], vec![3]);
        assert_eq!(g.to_vec::<f32>(), vec![3.0, 0.5, 2.0]);
        scatter(&f, &[1, 2], &f32s(&[6.0]), &[2]).unwrap();
        assert_eq!(f.to_vec::<f32>(), vec![0.5, 6.0, 6.0, 2.0, 3.0]);
    }
}
