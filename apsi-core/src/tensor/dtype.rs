//! Element types (LANGUAGE.md §7).
//!
//! Every dtype of the spec has a tag here. `f64 f32 f16 bf16 i64 i32 bool`
//! are native Rust values; the narrow formats (`fp8`, `fp6`, `fp4`, `int4`,
//! `int8`, `uint8`) are stored as packed codes of their real size
//! ([`DType::storage`]) and converted by `tensor::codec`.

use crate::error::ErrorKind;
use crate::value::{err, ApsiObject, ObjBox, VResult, Value};
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    F64,
    F32,
    F16,
    BF16,
    Fp8E4M3,
    Fp8E5M2,
    Fp6E3M2,
    Fp6E2M3,
    Fp4E2M1,
    Int8,
    Int4,
    UInt8,
    I64,
    I32,
    Bool,
}

/// How a dtype's elements sit in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorageKind {
    /// One native Rust value per element.
    Native,
    /// Codes of `bits` bits packed into bytes (fp4: two per byte, fp6: four in three bytes).
    Packed { bits: u8 },
}

/// Which family of arithmetic a dtype computes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Bool,
    Int,
    Float,
}

pub const ALL: [DType; 15] = [
    DType::F64,
    DType::F32,
    DType::F16,
    DType::BF16,
    DType::Fp8E4M3,
    DType::Fp8E5M2,
    DType::Fp6E3M2,
    DType::Fp6E2M3,
    DType::Fp4E2M1,
    DType::Int8,
    DType::Int4,
    DType::UInt8,
    DType::I64,
    DType::I32,
    DType::Bool,
];

impl DType {
    /// The canonical name, as printed.
    pub fn name(self) -> &'static str {
        match self {
            DType::F64 => "f64",
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::Fp8E4M3 => "fp8_e4m3",
            DType::Fp8E5M2 => "fp8_e5m2",
            DType::Fp6E3M2 => "fp6_e3m2",
            DType::Fp6E2M3 => "fp6_e2m3",
            DType::Fp4E2M1 => "fp4_e2m1",
            DType::Int8 => "int8",
            DType::Int4 => "int4",
            DType::UInt8 => "uint8",
            DType::I64 => "i64",
            DType::I32 => "i32",
            DType::Bool => "bool",
        }
    }

    /// A dtype by canonical name or alias (`fp8` is `fp8_e4m3`, `bf8` is `fp8_e5m2`, `fp4` is `fp4_e2m1`),
    /// or by NumPy's and PyTorch's spelling as a string (`x.astype("float32")`; `float32` is not a
    /// prelude name: docs/LANGUAGE.md, "Dtype names").
    pub fn from_name(s: &str) -> Option<DType> {
        Some(match s {
            "fp8" => DType::Fp8E4M3,
            "bf8" => DType::Fp8E5M2,
            "fp4" => DType::Fp4E2M1,
            "float64" => DType::F64,
            "float32" => DType::F32,
            "float16" => DType::F16,
            "bfloat16" => DType::BF16,
            "int64" => DType::I64,
            "int32" => DType::I32,
            _ => return ALL.iter().copied().find(|d| d.name() == s),
        })
    }

    /// The prelude names bound to dtype values (canonical names and aliases).
    pub fn prelude_names() -> Vec<(&'static str, DType)> {
        let mut v: Vec<(&'static str, DType)> = ALL.iter().map(|d| (d.name(), *d)).collect();
        v.push(("fp8", DType::Fp8E4M3));
        v.push(("bf8", DType::Fp8E5M2));
        v.push(("fp4", DType::Fp4E2M1));
        v
    }

    pub fn kind(self) -> Kind {
        match self {
            DType::Bool => Kind::Bool,
            DType::I64 | DType::I32 | DType::Int8 | DType::Int4 | DType::UInt8 => Kind::Int,
            _ => Kind::Float,
        }
    }

    pub fn is_float(self) -> bool {
        self.kind() == Kind::Float
    }

    /// Bytes per element as `nbytes` counts them (packed formats: rounded up per element bits / 8).
    pub fn bits(self) -> usize {
        match self {
            DType::F64 | DType::I64 => 64,
            DType::F32 | DType::I32 => 32,
            DType::F16 | DType::BF16 => 16,
            DType::Fp8E4M3 | DType::Fp8E5M2 | DType::Int8 | DType::UInt8 | DType::Bool => 8,
            DType::Fp6E3M2 | DType::Fp6E2M3 => 6,
            DType::Fp4E2M1 | DType::Int4 => 4,
        }
    }

    pub fn storage(self) -> StorageKind {
        match self {
            DType::Fp8E4M3
            | DType::Fp8E5M2
            | DType::Fp6E3M2
            | DType::Fp6E2M3
            | DType::Fp4E2M1
            | DType::Int8
            | DType::Int4
            | DType::UInt8 => StorageKind::Packed {
                bits: self.bits() as u8,
            },
            _ => StorageKind::Native,
        }
    }

    /// Whether the dtype is a native Rust type (the kernels compute in it);
    /// the packed formats are decoded to compute.
    pub fn supported(self) -> bool {
        self.storage() == StorageKind::Native
    }

    /// The dtype when kernels compute in it directly; for a packed format,
    /// the error an operation without a packed path reports.
    pub fn check_supported(self) -> VResult<DType> {
        if self.supported() {
            Ok(self)
        } else {
            Err(err(
                ErrorKind::TypeError,
                format!(
                    "this operation does not take {} tensors (they hold packed codes); convert first with .astype(f32)",
                    self.name()
                ),
            ))
        }
    }

    /// Rank in NumPy's promotion lattice within a kind (wider is larger).
    fn width(self) -> u8 {
        match self {
            DType::Bool => 0,
            DType::Int4 => 0,
            DType::Int8 | DType::UInt8 => 1,
            DType::I32 => 2,
            DType::I64 => 3,
            DType::F16 | DType::BF16 => 1,
            DType::F32 => 2,
            DType::F64 => 3,
            _ => 0,
        }
    }

    /// Whether the dtype is one of the narrow (≤ 8-bit) formats.
    pub fn is_narrow(self) -> bool {
        !self.supported()
    }

    /// NumPy 2's `promote_types` for the supported dtypes: within a kind the
    /// wider wins (f16 with bf16 gives f32); bool gives way to anything; an
    /// int with a float gives f64 (i32/i64 values do not fit f16/f32 exactly).
    ///
    /// The narrow formats: two different narrow float formats give f32, a
    /// narrow float with f16/bf16/f32/f64 gives the latter; int8/uint8/int4
    /// mixed give i32 unless the other is wider (int4 with int8 gives int8);
    /// a narrow int with a float gives that float (f32 for a narrow float).
    pub fn promote(a: DType, b: DType) -> DType {
        if a == b {
            return a;
        }
        match (a.kind(), b.kind()) {
            (Kind::Bool, _) => b,
            (_, Kind::Bool) => a,
            (Kind::Int, Kind::Int) => {
                if a.width() == b.width() {
                    DType::I32
                } else if a.width() > b.width() {
                    a
                } else {
                    b
                }
            }
            (Kind::Float, Kind::Float) => {
                if (a == DType::F16 && b == DType::BF16)
                    || (a == DType::BF16 && b == DType::F16)
                    || (a.is_narrow() && b.is_narrow())
                {
                    DType::F32
                } else if a.width() >= b.width() {
                    a
                } else {
                    b
                }
            }
            (Kind::Int, Kind::Float) if a.is_narrow() => {
                if b.is_narrow() {
                    DType::F32
                } else {
                    b
                }
            }
            (Kind::Float, Kind::Int) if b.is_narrow() => DType::promote(b, a),
            _ => DType::F64,
        }
    }
}

/// A dtype as an Apsi value (`f32`, `x.dtype`).
pub struct DTypeObj(pub DType);

impl ApsiObject for DTypeObj {
    fn type_name(&self) -> &str {
        "dtype"
    }
    fn to_str(&self) -> String {
        self.0.name().to_string()
    }
    fn hashable(&self) -> bool {
        true
    }
    fn get_attr(&self, _this: &Value, name: &str) -> Option<VResult<Value>> {
        match name {
            "name" => Some(Ok(Value::str(self.0.name()))),
            "bits" => Some(Ok(Value::Int(self.0.bits() as i64))),
            // The prelude's `bool` is this dtype; calling it converts as Python's `bool(x)`.
            "__call__" if self.0 == DType::Bool => crate::builtins::type_token("bool").map(Ok),
            _ => None,
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The Apsi value of a dtype. Values are cached so `x.dtype is f32` holds.
pub fn dtype_value(d: DType) -> Value {
    use std::sync::OnceLock;
    static CACHE: OnceLock<Vec<Value>> = OnceLock::new();
    let all = CACHE.get_or_init(|| {
        ALL.iter()
            .map(|d| Value::Object(Arc::new(ObjBox(Box::new(DTypeObj(*d))))))
            .collect()
    });
    let i = ALL.iter().position(|x| *x == d).unwrap_or(0);
    all.get(i).cloned().unwrap_or(Value::None)
}

/// The dtype a value names, if it is a dtype value.
pub fn as_dtype(v: &Value) -> Option<DType> {
    match v {
        Value::Object(o) => o.0.as_any().downcast_ref::<DTypeObj>().map(|d| d.0),
        Value::Str(s) => DType::from_name(s.as_str()),
        Value::Native(f) if crate::builtins::type_token_name(f).as_deref() == Some("bool") => Some(DType::Bool),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_aliases_are_canonical() {
        for d in ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
        }
        assert_eq!(DType::from_name("fp8").map(|d| d.name()), Some("fp8_e4m3"));
        assert_eq!(DType::from_name("bf8").map(|d| d.name()), Some("fp8_e5m2"));
        assert_eq!(DType::from_name("nope"), None);
        assert_eq!(DType::from_name("float32"), Some(DType::F32));
        assert_eq!(DType::from_name("bfloat16"), Some(DType::BF16));
        assert_eq!(DType::from_name("int64"), Some(DType::I64));
    }

    #[test]
    fn promotion_follows_numpy() {
        use DType::*;
        assert_eq!(DType::promote(I32, I64), I64);
        assert_eq!(DType::promote(I32, F32), F64);
        assert_eq!(DType::promote(Bool, F16), F16);
        assert_eq!(DType::promote(F16, BF16), F32);
        assert_eq!(DType::promote(F32, F64), F64);
        assert_eq!(DType::promote(Bool, Bool), Bool);
    }
}
