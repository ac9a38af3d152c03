//! Narrow formats at the native boundary: native code computes in f32 and
//! i32 ("decoded to FP32 for computing"), so a tensor argument in f16,
//! bf16, an fp8/fp6/fp4 format (to f32) or int8/uint8/int4 (to i32) is
//! decoded into a contiguous copy before the call, and after it every
//! element the function changed is encoded back into the argument (rounded
//! to its format as any store into it is). An argument the function only
//! reads is not written (a mapped file stays clean).
//!
//! One copy per argument tensor object: passing the same tensor twice gives
//! the function one decoded tensor, so its writes through one name are seen
//! through the other. Two different views of one storage are two copies.
//! A result that is a decoded argument comes back as the argument itself.

use apsi_core::api::tensor::{as_tensor, tensor_value, DType, Tensor};
use apsi_core::api::{VResult, Value};

/// The dtype native code computes a narrow format in, if `d` is one.
pub fn wide(d: DType) -> Option<DType> {
    match d {
        DType::F16
        | DType::BF16
        | DType::Fp8E4M3
        | DType::Fp8E5M2
        | DType::Fp6E3M2
        | DType::Fp6E2M3
        | DType::Fp4E2M1 => Some(DType::F32),
        DType::Int8 | DType::UInt8 | DType::Int4 => Some(DType::I32),
        DType::F64 | DType::F32 | DType::I64 | DType::I32 | DType::Bool => None,
    }
}

/// One decoded argument.
pub struct Decoded {
    /// The caller's tensor.
    original: Value,
    /// What the function gets.
    decoded: Value,
    /// The decoded elements before the call, as bits (to find changes).
    before: Vec<u32>,
}

fn bits(t: &Tensor) -> Vec<u32> {
    match t.dtype {
        DType::F32 => t.to_vec::<f32>().into_iter().map(f32::to_bits).collect(),
        _ => t.to_vec::<i32>().into_iter().map(|i| i as u32).collect(),
    }
}

/// Replaces every narrow-format tensor in `args` by its decoded copy.
pub fn decode_args(args: &mut [Value]) -> VResult<Vec<Decoded>> {
    let mut done: Vec<Decoded> = Vec::new();
    for a in args.iter_mut() {
        let Some(t) = as_tensor(a) else { continue };
        let Some(to) = wide(t.dtype) else { continue };
        if let Some(d) = done.iter().find(|d| d.original.is(a)) {
            *a = d.decoded.clone();
            continue;
        }
        let copy = t.astype(to)?;
        let before = bits(&copy);
        let decoded = tensor_value(copy);
        done.push(Decoded {
            original: a.clone(),
            decoded: decoded.clone(),
            before,
        });
        *a = decoded;
    }
    Ok(done)
}

/// Encodes back into each argument what the function changed.
pub fn write_back(done: &[Decoded]) -> VResult<()> {
    for d in done {
        let (Some(orig), Some(dec)) = (as_tensor(&d.original), as_tensor(&d.decoded)) else {
            continue;
        };
        if bits(&dec) != d.before {
            apsi_core::api::tensor::set_index(&orig, &Value::tuple(Vec::new()), &d.decoded)?;
        }
    }
    Ok(())
}

/// The caller's tensor for a result that is a decoded argument.
pub fn original_of(v: Value, done: &[Decoded]) -> Value {
    match &v {
        Value::Tuple(items) => Value::tuple(items.0.iter().map(|x| original_of(x.clone(), done)).collect()),
        _ => match done.iter().find(|d| d.decoded.is(&v)) {
            Some(d) => d.original.clone(),
            None => v,
        },
    }
}
