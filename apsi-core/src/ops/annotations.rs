//! Whether a value fits an annotation the compiler turned into a run-time
//! check (a parameter's or a struct field's).

use crate::code::TypeCheck;
use crate::value::Value;

/// Whether `v` is accepted by a parameter annotated `check` (a run-time
/// check the compiler attached to the parameter). Here rather than on
/// `TypeCheck` so the bytecode format does not depend on tensors.
pub fn accepts(check: TypeCheck, v: &Value) -> bool {
    // Under `grad`, a float argument travels as a traced 0-d tensor.
    if let (TypeCheck::Float, Some(t)) = (check, crate::tensor::as_tensor(v)) {
        return t.ndim() == 0 && t.dtype.is_float();
    }
    matches!(
        (check, v),
        (TypeCheck::Int, Value::Int(_) | Value::Bool(_))
            | (TypeCheck::Float, Value::Float(_) | Value::Int(_) | Value::Bool(_))
            | (TypeCheck::Str, Value::Str(_))
            | (TypeCheck::Bool, Value::Bool(_))
            | (TypeCheck::List, Value::List(_))
            | (TypeCheck::Dict, Value::Dict(_))
            | (TypeCheck::Tuple, Value::Tuple(_))
            | (TypeCheck::NoneType, Value::None)
    ) || (matches!(check, TypeCheck::Tensor(_)) && crate::tensor::as_tensor(v).is_some())
}
