//! `Tensor[...]` parameter annotations (LANGUAGE.md §6): checked and
//! applied when a function is called.
//!
//! `Tensor` accepts any tensor; `Tensor[f32]` any shape, converted to f32;
//! `Tensor[N, M]` two dimensions whose sizes bind the names `N` and `M`
//! across the parameters of one call (a second parameter with another size
//! for `N` raises `ShapeError`); `Tensor[N, 3, bf16]` mixes fixed sizes,
//! names and a dtype. The argument is converted to the dtype as it comes in
//! (on the autodiff tape, so gradients pass through).
//!
//! The compiled function keeps a `TypeCheck::Tensor(id)`; `id` indexes a
//! process-wide table of the distinct annotations (bounded by program text).

use super::arith::Arg;
use super::dtype::DType;
use super::layout::shape_str;
use crate::code::TypeCheck;
use crate::error::ErrorKind;
use crate::syntax::ast::{Expr, ExprKind};
use crate::value::{err, VResult, Value};
use parking_lot::RwLock;
use std::sync::Arc;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dim {
    Named(String),
    Fixed(usize),
}

/// A parsed `Tensor[...]` annotation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorAnnot {
    /// `None`: any number of dimensions.
    pub dims: Option<Vec<Dim>>,
    pub dtype: Option<DType>,
}

impl TensorAnnot {
    /// The annotation as written: `Tensor[N, 3, bf16]`.
    pub fn text(&self) -> String {
        let mut parts: Vec<String> = self
            .dims
            .iter()
            .flatten()
            .map(|d| match d {
                Dim::Named(n) => n.clone(),
                Dim::Fixed(k) => k.to_string(),
            })
            .collect();
        parts.extend(self.dtype.map(|d| d.name().to_string()));
        if parts.is_empty() {
            "Tensor".into()
        } else {
            format!("Tensor[{}]", parts.join(", "))
        }
    }
}

static TABLE: RwLock<Vec<Arc<TensorAnnot>>> = RwLock::new(Vec::new());

pub(crate) fn intern(a: TensorAnnot) -> u32 {
    if let Some(i) = TABLE.read().iter().position(|x| **x == a) {
        return i as u32;
    }
    let mut t = TABLE.write();
    if let Some(i) = t.iter().position(|x| **x == a) {
        return i as u32;
    }
    t.push(Arc::new(a));
    (t.len() - 1) as u32
}

/// The annotation with id `id`.
pub fn annotation(id: u32) -> Option<Arc<TensorAnnot>> {
    TABLE.read().get(id as usize).cloned()
}

/// Parses an annotation expression; `None` when it is not a `Tensor` form.
pub fn parse(e: &Expr) -> Option<TensorAnnot> {
    match &e.kind {
        ExprKind::Name(n) if n == "Tensor" => Some(TensorAnnot {
            dims: None,
            dtype: None,
        }),
        ExprKind::Index { value, index } if matches!(&value.kind, ExprKind::Name(n) if n == "Tensor") => {
            let items: Vec<&Expr> = match &index.kind {
                ExprKind::Tuple(v) => v.iter().collect(),
                _ => vec![&**index],
            };
            let mut dims = Vec::new();
            let mut dtype = None;
            for (k, it) in items.iter().enumerate() {
                match &it.kind {
                    ExprKind::Name(n) => match DType::from_name(n) {
                        Some(d) if k + 1 == items.len() => dtype = Some(d),
                        Some(_) => return None,
                        None => dims.push(Dim::Named(n.clone())),
                    },
                    ExprKind::Int(v) if *v >= 0 => dims.push(Dim::Fixed(*v as usize)),
                    _ => return None,
                }
            }
            let dims = if dims.is_empty() { None } else { Some(dims) };
            Some(TensorAnnot { dims, dtype })
        }
        _ => None,
    }
}

/// The run-time check for an annotation expression, when it is a `Tensor` form.
pub fn type_check_of(e: &Expr) -> Option<TypeCheck> {
    parse(e).map(|a| TypeCheck::Tensor(intern(a)))
}

/// The sizes the dimension names of one call have bound, with the parameter that bound each.
#[derive(Default)]
pub struct Dims {
    bound: Vec<(String, usize, String)>,
}

/// Checks argument `v` of parameter `param` of `fname` against annotation
/// `id`, binding its dimension names in `dims`; returns the argument
/// converted to the annotation's dtype.
pub fn check(fname: &str, param: &str, id: u32, v: &Value, dims: &mut Dims) -> VResult<Value> {
    let Some(a) = annotation(id) else {
        return Ok(v.clone());
    };
    let Some(t) = super::as_tensor(v) else {
        return Err(err(
            ErrorKind::TypeError,
            format!(
                "{fname}() argument '{param}' must be {}, not {}",
                a.text(),
                v.type_name()
            ),
        ));
    };
    if let Some(want) = &a.dims {
        if want.len() != t.ndim() {
            return Err(err(
                ErrorKind::ShapeError,
                format!(
                    "{fname}() argument '{param}' must have {} dimension{} ({}), got shape {}",
                    want.len(),
                    if want.len() == 1 { "" } else { "s" },
                    a.text(),
                    shape_str(t.shape())
                ),
            ));
        }
        for (d, &size) in want.iter().zip(t.shape()) {
            match d {
                Dim::Fixed(k) if *k != size => {
                    return Err(err(
                        ErrorKind::ShapeError,
                        format!(
                            "{fname}() argument '{param}' must have shape {}, got shape {}",
                            a.text(),
                            shape_str(t.shape())
                        ),
                    ))
                }
                Dim::Fixed(_) => {}
                Dim::Named(n) => match dims.bound.iter().find(|(m, _, _)| m == n) {
                    Some((_, k, by)) if *k != size => {
                        return Err(err(
                            ErrorKind::ShapeError,
                            format!(
                                "{fname}() argument '{param}' has {n} = {size}, but argument '{by}' has {n} = {k} ({})",
                                a.text()
                            ),
                        ))
                    }
                    Some(_) => {}
                    None => dims.bound.push((n.clone(), size, param.to_string())),
                },
            }
        }
    }
    match a.dtype {
        Some(d) if d != t.dtype => Ok(super::tensor_value(Arg::T(t).to_tensor(d)?)),
        _ => Ok(v.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::ast::Expr;

    fn name(n: &str) -> Expr {
        Expr {
            kind: ExprKind::Name(n.into()),
            span: Default::default(),
        }
    }

    fn annot(items: Vec<Expr>) -> Expr {
        let index = Expr {
            kind: ExprKind::Tuple(items),
            span: Default::default(),
        };
        Expr {
            kind: ExprKind::Index {
                value: Box::new(name("Tensor")),
                index: Box::new(index),
            },
            span: Default::default(),
        }
    }

    #[test]
    fn binds_names_across_parameters_and_converts() {
        let e = annot(vec![name("N"), name("bf16")]);
        let Some(TypeCheck::Tensor(id)) = type_check_of(&e) else {
            panic!("not a tensor check")
        };
        let mut dims = Dims::default();
        let x = super::super::tensor_value(super::super::Tensor::from_vec(vec![1.0f64, 0.1], vec![2]));
        let y = super::super::tensor_value(super::super::Tensor::from_vec(vec![1.0f64], vec![1]));
        let cx = check("f", "x", id, &x, &mut dims).map(|v| super::super::as_tensor(&v).map(|t| t.dtype));
        assert!(matches!(cx, Ok(Some(DType::BF16))));
        let e = check("f", "y", id, &y, &mut dims).err().map(|e| e.kind);
        assert_eq!(e, Some(ErrorKind::ShapeError));
        assert!(check("f", "z", id, &Value::Int(1), &mut Dims::default()).is_err());
    }

    #[test]
    fn parses_the_spec_forms() {
        assert_eq!(
            parse(&name("Tensor")),
            Some(TensorAnnot {
                dims: None,
                dtype: None
            })
        );
        let a = parse(&annot(vec![
            name("N"),
            Expr {
                kind: ExprKind::Int(3),
                span: Default::default(),
            },
            name("f32"),
        ]));
        assert_eq!(a.map(|a| a.text()), Some("Tensor[N, 3, f32]".into()));
        assert_eq!(parse(&name("int")), None);
    }
}
