//! The abstract types of registers during specialisation, and the types of
//! argument values (the signature a compiled version is cached under).

use apsi_core::api::tensor::DType;
use apsi_core::api::Value;
use apsi_native_ir::ir::{Dt, Ty};

/// What a register holds at one point of a function, as far as the
/// specialiser knows.
#[derive(Clone, Debug)]
pub enum T {
    /// Not assigned on any path seen so far.
    Undef,
    /// Different types on different paths (an error when read).
    Conflict,
    /// The result of a recursive call whose type is still being inferred.
    Unknown,
    None,
    Int,
    Float,
    Bool,
    Tensor(Dt, u8, bool),
    Tuple(Vec<T>),
    /// The other workers' partials after a `parallel for` (a buffer and a count).
    Partials(Vec<T>),
    /// A value known when compiling (a function, a dtype, a string constant).
    Const(Value),
    /// The outlined body of a `parallel for` (function prototype index).
    Chunk(u16),
}

impl PartialEq for T {
    fn eq(&self, o: &T) -> bool {
        match (self, o) {
            (T::Undef, T::Undef) | (T::Conflict, T::Conflict) | (T::Unknown, T::Unknown) | (T::None, T::None) => true,
            (T::Int, T::Int) | (T::Float, T::Float) | (T::Bool, T::Bool) => true,
            (T::Tensor(a, b, c), T::Tensor(x, y, z)) => a == x && b == y && c == z,
            (T::Tuple(a), T::Tuple(b)) | (T::Partials(a), T::Partials(b)) => a == b,
            (T::Const(a), T::Const(b)) => a.is(b) || same_scalar(a, b),
            (T::Chunk(a), T::Chunk(b)) => a == b,
            _ => false,
        }
    }
}

fn same_scalar(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => x.as_str() == y.as_str(),
        _ => false,
    }
}

impl T {
    /// The join at a control-flow merge.
    pub fn join(&self, o: &T) -> T {
        match (self, o) {
            (T::Undef, x) | (x, T::Undef) => x.clone(),
            (T::Unknown, x) | (x, T::Unknown) => x.clone(),
            (a, b) if a == b => a.clone(),
            (T::Tuple(a), T::Tuple(b)) if a.len() == b.len() => {
                let parts: Vec<T> = a.iter().zip(b).map(|(x, y)| x.join(y)).collect();
                if parts.iter().any(|p| matches!(p, T::Conflict)) {
                    T::Conflict
                } else {
                    T::Tuple(parts)
                }
            }
            _ => T::Conflict,
        }
    }

    /// The IR variable types this value occupies.
    pub fn leaves(&self, out: &mut Vec<Ty>) {
        match self {
            T::Int => out.push(Ty::Int),
            T::Float => out.push(Ty::Float),
            T::Bool => out.push(Ty::Bool),
            T::Tensor(dt, ndim, contig) => out.push(Ty::Tensor {
                dt: *dt,
                ndim: *ndim,
                contig: *contig,
            }),
            T::Tuple(ts) => ts.iter().for_each(|t| t.leaves(out)),
            T::Partials(_) => {
                out.push(Ty::Ptr);
                out.push(Ty::Int);
            }
            _ => {}
        }
    }

    pub fn leaf_types(&self) -> Vec<Ty> {
        let mut v = Vec::new();
        self.leaves(&mut v);
        v
    }

    /// A key that identifies the type (for slot maps).
    pub fn key(&self) -> String {
        match self {
            T::Const(_) => "K".into(),
            other => format!("{other:?}"),
        }
    }

    /// How a person calls this type in an error message.
    pub fn describe(&self) -> String {
        match self {
            T::Undef => "an unassigned variable".into(),
            T::Conflict => "a variable whose type differs between paths".into(),
            T::Unknown => "a value of unknown type".into(),
            T::None => "none".into(),
            T::Int => "an int".into(),
            T::Float => "a float".into(),
            T::Bool => "a bool".into(),
            T::Tensor(dt, n, _) => format!("a {n}-d {} tensor", dt.name()),
            T::Tuple(_) => "a tuple".into(),
            T::Partials(_) => "parallel-for partials".into(),
            T::Const(v) => match v {
                Value::Str(_) => "a str".into(),
                Value::Func(f) => format!("the function '{}'", f.name),
                Value::Native(f) => format!("the function '{}'", f.name),
                other => format!("a {}", other.type_name()),
            },
            T::Chunk(_) => "a parallel-for body".into(),
        }
    }

    pub fn is_num(&self) -> bool {
        matches!(self, T::Int | T::Float | T::Bool)
    }
}

/// The element type of a dtype native code handles.
pub fn dt_of(d: DType) -> Option<Dt> {
    Some(match d {
        DType::F64 => Dt::F64,
        DType::F32 => Dt::F32,
        DType::I64 => Dt::I64,
        DType::I32 => Dt::I32,
        DType::Bool => Dt::Bool,
        _ => return None,
    })
}

pub fn dtype_of(d: Dt) -> DType {
    match d {
        Dt::F64 => DType::F64,
        Dt::F32 => DType::F32,
        Dt::I64 => DType::I64,
        Dt::I32 => DType::I32,
        Dt::Bool => DType::Bool,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_rules() {
        assert_eq!(T::Undef.join(&T::Int), T::Int);
        assert_eq!(T::Int.join(&T::Float), T::Conflict);
        assert_eq!(T::Unknown.join(&T::Float), T::Float);
        assert_eq!(
            T::Tuple(vec![T::Int, T::Float]).join(&T::Tuple(vec![T::Int, T::Float])),
            T::Tuple(vec![T::Int, T::Float])
        );
        assert_eq!(T::Tuple(vec![T::Int]).join(&T::Tuple(vec![T::Float])), T::Conflict);
    }

    #[test]
    fn leaves_flatten_tuples() {
        let t = T::Tuple(vec![T::Int, T::Tuple(vec![T::Float, T::Bool]), T::Const(Value::None)]);
        assert_eq!(t.leaf_types(), vec![Ty::Int, Ty::Float, Ty::Bool]);
        assert_eq!(T::Partials(vec![T::Float]).leaf_types(), vec![Ty::Ptr, Ty::Int]);
    }
}
