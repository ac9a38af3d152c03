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
use crate::vm::value::VResult;
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
    for_each_offset(&layout.shape, &layout.strides, layout.offset, |o| out.push(t[pack::get(bytes, *bits, o) as usize]));
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
        return Buffer::Packed { bits: 8, bytes: Vec::new(), len: 0 };
    };
    let bits = *bits;
    let n = layout.size();
    if layout.offset == 0 && layout.is_contiguous() && n == *len {
        return Buffer::Packed { bits, bytes: bytes.clone(), len: n };
    }
    let mut out = vec![0u8; pack::byte_len(n, bits)];
    let mut i = 0usize;
    for_each_offset(&layout.shape, &layout.strides, layout.offset, |o| {
        pack::set(&mut out, bits, i, pack::get(bytes, bits, o));
        i += 1;
    });
    Buffer::Packed { bits, bytes: out, len: n }
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
        let buf = if dst_coded { bulk::encode_f32(d, &v) } else { return Some(native_from_f32(v, shape, d)) };
        return Some(Tensor::from_buffer(buf, shape, d));
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
