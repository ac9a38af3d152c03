//! Where a tensor's elements live.
//!
//! [`Storage`] is an enum over the places memory can be: CPU memory,
//! memory-mapped files (`Mapped`, see `mapped.rs`: the same `Buffer`, whose
//! element arrays borrow the mapping) and device buffers later (`Device` is
//! a stand-in, a type with no values, so code matching on `Storage` already
//! has its arm and no `#[cfg]` spreads when a backend arrives).
//!
//! Concurrency rule: a CPU buffer sits behind a `RwLock`. Every kernel
//! holds the read lock of each input for the duration of one operation and
//! a write through a view (`x[:, 0] = 1.0`) takes the write lock, so writes
//! from several threads through views of one tensor are serialised and can
//! never corrupt memory (each element write is all-or-nothing; the order
//! of two racing writes is unspecified). A write whose source shares the
//! destination's storage copies the source first (no lock is taken twice).

use super::dtype::DType;
pub use super::mapped::{Elems, MappedStorage};
use half::{bf16, f16};
use parking_lot::RwLock;
use std::convert::Infallible;

/// The elements of a tensor, one native element array per dtype (owned, or
/// a window of a memory-mapped file: see [`Elems`]). Packed formats (fp8,
/// fp6, fp4, int4) keep their codes in `Packed`.
pub enum Buffer {
    F64(Elems<f64>),
    F32(Elems<f32>),
    F16(Elems<f16>),
    BF16(Elems<bf16>),
    I64(Elems<i64>),
    I32(Elems<i32>),
    Bool(Elems<bool>),
    /// Codes of a packed format, `bits` per element, little-endian within a byte.
    Packed {
        bits: u8,
        bytes: Vec<u8>,
        len: usize,
    },
}

impl Buffer {
    pub fn len(&self) -> usize {
        match self {
            Buffer::F64(v) => v.len(),
            Buffer::F32(v) => v.len(),
            Buffer::F16(v) => v.len(),
            Buffer::BF16(v) => v.len(),
            Buffer::I64(v) => v.len(),
            Buffer::I32(v) => v.len(),
            Buffer::Bool(v) => v.len(),
            Buffer::Packed { len, .. } => *len,
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A buffer on an accelerator (stand-in: no value of it exists in this build).
pub struct DeviceStorage(Infallible);

pub enum Storage {
    Cpu(RwLock<Buffer>),
    Mapped(MappedStorage),
    Device(DeviceStorage),
    /// Elements computed when first read (deferred.rs).
    Deferred(super::deferred::Deferred),
}

impl Storage {
    pub fn cpu(b: Buffer) -> Storage {
        Storage::Cpu(RwLock::new(b))
    }

    /// Runs `f` with the elements under the read lock.
    pub fn read<R>(&self, f: impl FnOnce(&Buffer) -> R) -> R {
        crate::par::kernel_pool::ready();
        match self {
            Storage::Cpu(l) => f(&l.read_recursive()),
            Storage::Mapped(m) => f(&m.buf.read_recursive()),
            Storage::Device(d) => match d.0 {},
            Storage::Deferred(d) => f(&d.value().read_recursive()),
        }
    }

    /// Runs `f` with the elements under the write lock.
    pub fn write<R>(&self, f: impl FnOnce(&mut Buffer) -> R) -> R {
        crate::par::kernel_pool::ready();
        // What a deferred tensor reads must not change before it is computed.
        if super::deferred::any_pending() {
            super::deferred::compute_all();
        }
        match self {
            Storage::Cpu(l) => f(&mut l.write()),
            Storage::Mapped(m) => f(&mut m.buf.write()),
            Storage::Device(d) => match d.0 {},
            Storage::Deferred(d) => f(&mut d.value().write()),
        }
    }
}

/// The native element types, with lossless-where-possible conversions
/// (NumPy's `astype` rules: float → int truncates toward zero, NaN → 0).
pub trait Scalar: Copy + Send + Sync + 'static + PartialEq {
    const DTYPE: DType;
    fn to_f64(self) -> f64;
    fn to_i64(self) -> i64;
    fn to_bool(self) -> bool;
    fn from_f64(x: f64) -> Self;
    fn from_i64(x: i64) -> Self;
    fn from_bool(b: bool) -> Self;
    fn slice(b: &Buffer) -> Option<&[Self]>;
    fn slice_mut(b: &mut Buffer) -> Option<&mut [Self]>;
    fn buffer(v: Vec<Self>) -> Buffer;
    /// Converts from another scalar type through the widest value of its kind.
    #[inline(always)]
    fn cast<U: Scalar>(self) -> U {
        match Self::DTYPE.kind() {
            super::dtype::Kind::Float => U::from_f64(self.to_f64()),
            super::dtype::Kind::Int => U::from_i64(self.to_i64()),
            super::dtype::Kind::Bool => U::from_bool(self.to_bool()),
        }
    }
}

macro_rules! scalar_impl {
    ($t:ty, $dt:expr, $var:ident, $to_f64:expr, $to_i64:expr, $to_bool:expr, $from_f64:expr, $from_i64:expr, $from_bool:expr) => {
        impl Scalar for $t {
            const DTYPE: DType = $dt;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                ($to_f64)(self)
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                ($to_i64)(self)
            }
            #[inline(always)]
            fn to_bool(self) -> bool {
                ($to_bool)(self)
            }
            #[inline(always)]
            fn from_f64(x: f64) -> Self {
                ($from_f64)(x)
            }
            #[inline(always)]
            fn from_i64(x: i64) -> Self {
                ($from_i64)(x)
            }
            #[inline(always)]
            fn from_bool(b: bool) -> Self {
                ($from_bool)(b)
            }
            fn slice(b: &Buffer) -> Option<&[Self]> {
                match b {
                    Buffer::$var(v) => Some(&v[..]),
                    _ => None,
                }
            }
            fn slice_mut(b: &mut Buffer) -> Option<&mut [Self]> {
                match b {
                    Buffer::$var(v) => Some(&mut v[..]),
                    _ => None,
                }
            }
            fn buffer(v: Vec<Self>) -> Buffer {
                Buffer::$var(Elems::Owned(v))
            }
        }
    };
}

scalar_impl!(
    f64,
    DType::F64,
    F64,
    |x: f64| x,
    |x: f64| f2i(x),
    |x: f64| x != 0.0,
    |x: f64| x,
    |x: i64| x as f64,
    |b: bool| b as u8 as f64
);
scalar_impl!(
    f32,
    DType::F32,
    F32,
    |x: f32| x as f64,
    |x: f32| f2i(x as f64),
    |x: f32| x != 0.0,
    |x: f64| x as f32,
    |x: i64| x as f32,
    |b: bool| b as u8 as f32
);
scalar_impl!(
    f16,
    DType::F16,
    F16,
    |x: f16| x.to_f64(),
    |x: f16| f2i(x.to_f64()),
    |x: f16| x.to_f32() != 0.0,
    |x: f64| f16::from_f64(x),
    |x: i64| f16::from_f64(x as f64),
    |b: bool| if b { f16::ONE } else { f16::ZERO }
);
scalar_impl!(
    bf16,
    DType::BF16,
    BF16,
    |x: bf16| x.to_f64(),
    |x: bf16| f2i(x.to_f64()),
    |x: bf16| x.to_f32() != 0.0,
    |x: f64| bf16::from_f64(x),
    |x: i64| bf16::from_f64(x as f64),
    |b: bool| if b { bf16::ONE } else { bf16::ZERO }
);
scalar_impl!(
    i64,
    DType::I64,
    I64,
    |x: i64| x as f64,
    |x: i64| x,
    |x: i64| x != 0,
    |x: f64| f2i(x),
    |x: i64| x,
    |b: bool| b as i64
);
scalar_impl!(
    i32,
    DType::I32,
    I32,
    |x: i32| x as f64,
    |x: i32| x as i64,
    |x: i32| x != 0,
    |x: f64| f2i(x) as i32,
    |x: i64| x as i32,
    |b: bool| b as i32
);
scalar_impl!(
    bool,
    DType::Bool,
    Bool,
    |x: bool| x as u8 as f64,
    |x: bool| x as i64,
    |x: bool| x,
    |x: f64| x != 0.0,
    |x: i64| x != 0,
    |b: bool| b
);

/// Float to int as NumPy's astype does on this machine: truncation toward
/// zero, saturating, NaN to the smallest int (x86's "integer indefinite").
#[inline(always)]
fn f2i(x: f64) -> i64 {
    if x.is_nan() {
        i64::MIN
    } else {
        x as i64
    }
}

/// Dispatches on a buffer's native element type: `with_buffer!(buf, v => expr)`
/// binds `v: &[T]` (T the element type); packed buffers take `$packed`.
#[macro_export]
#[doc(hidden)]
macro_rules! with_buffer {
    ($buf:expr, $v:ident => $body:expr, packed => $packed:expr) => {
        match $buf {
            $crate::tensor::storage::Buffer::F64($v) => $body,
            $crate::tensor::storage::Buffer::F32($v) => $body,
            $crate::tensor::storage::Buffer::F16($v) => $body,
            $crate::tensor::storage::Buffer::BF16($v) => $body,
            $crate::tensor::storage::Buffer::I64($v) => $body,
            $crate::tensor::storage::Buffer::I32($v) => $body,
            $crate::tensor::storage::Buffer::Bool($v) => $body,
            $crate::tensor::storage::Buffer::Packed { .. } => $packed,
        }
    };
}

/// Runs a generic body with `$t` bound to the native type of a (supported) dtype.
#[macro_export]
#[doc(hidden)]
macro_rules! with_dtype {
    ($dt:expr, $t:ident => $body:expr, other => $other:expr) => {
        match $dt {
            $crate::tensor::dtype::DType::F64 => {
                type $t = f64;
                $body
            }
            $crate::tensor::dtype::DType::F32 => {
                type $t = f32;
                $body
            }
            $crate::tensor::dtype::DType::F16 => {
                type $t = half::f16;
                $body
            }
            $crate::tensor::dtype::DType::BF16 => {
                type $t = half::bf16;
                $body
            }
            $crate::tensor::dtype::DType::I64 => {
                type $t = i64;
                $body
            }
            $crate::tensor::dtype::DType::I32 => {
                type $t = i32;
                $body
            }
            $crate::tensor::dtype::DType::Bool => {
                type $t = bool;
                $body
            }
            _ => $other,
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casts_follow_astype() {
        assert_eq!((-2.7f64).cast::<i64>(), -2);
        assert_eq!(3i64.cast::<f32>(), 3.0);
        assert!(0.5f64.cast::<bool>());
        assert_eq!(true.cast::<f64>(), 1.0);
        assert_eq!(f64::NAN.cast::<i64>(), i64::MIN);
    }

    #[test]
    fn storage_reads_and_writes() {
        let s = Storage::cpu(Buffer::F64(vec![1.0, 2.0].into()));
        s.write(|b| {
            if let Some(v) = f64::slice_mut(b) {
                v[0] = 5.0;
            }
        });
        assert_eq!(s.read(|b| f64::slice(b).map(|v| v[0])), Some(5.0));
        assert_eq!(s.read(|b| b.len()), 2);
    }
}
