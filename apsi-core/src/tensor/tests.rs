//! Tests of the tensor module through the same entry points Apsi code uses
//! (prelude functions, methods, operator hooks), including a central
//! finite-difference check of every differentiable operation.

use super::arith::Arg;
use super::core::Tensor;
use super::object::{as_tensor, tensor_value};
use super::test_support::{ok, randv};
use crate::ops::NoCaller;
use crate::syntax::ast::BinOp;
use crate::value::{Caller, VResult, Value};
use std::sync::Arc;

fn prelude_fn(name: &str) -> Value {
    static P: std::sync::OnceLock<crate::module::ModuleDescriptor> = std::sync::OnceLock::new();
    let p = P.get_or_init(crate::builtins::prelude);
    p.get(name).cloned().unwrap_or_else(|| panic!("prelude lacks {name}"))
}

fn call(name: &str, args: &[Value], kw: &[(&str, Value)]) -> VResult<Value> {
    let kw: Vec<(Arc<str>, Value)> = kw.iter().map(|(k, v)| (Arc::from(*k), v.clone())).collect();
    NoCaller.call(&prelude_fn(name), args, &kw)
}

fn meth(x: &Value, name: &str, args: &[Value], kw: &[(&str, Value)]) -> VResult<Value> {
    let kw: Vec<(Arc<str>, Value)> = kw.iter().map(|(k, v)| (Arc::from(*k), v.clone())).collect();
    let m = crate::ops::get_attr(x, name)?;
    NoCaller.call(&m, args, &kw)
}

fn t(v: Vec<f64>, shape: Vec<usize>) -> Value {
    tensor_value(Tensor::from_vec(v, shape))
}

fn bin(op: BinOp, a: &Value, b: &Value) -> VResult<Value> {
    crate::ops::binary(op, a, b)
}

fn to_tensor(v: &Value) -> Tensor {
    match v {
        Value::Float(f) => Tensor::scalar(*f),
        other => as_tensor(other).unwrap_or_else(|| panic!("not a tensor: {}", other.type_name())),
    }
}

/// Checks d/dx sum(f(x) * w) against central differences.
fn fd(name: &str, f: &dyn Fn(&Value) -> VResult<Value>, x: Vec<f64>, shape: Vec<usize>) {
    let leaf = super::autodiff::leaf(&Tensor::from_vec(x.clone(), shape.clone()));
    let out = to_tensor(&ok(f(&tensor_value(leaf.clone()))));
    let w = Tensor::from_vec(randv(out.size(), 99, 0.5, 1.5), out.shape().to_vec());
    let weighted = ok(super::arith::binary(BinOp::Mul, &Arg::T(out), &Arg::T(w.clone())));
    let all: Vec<usize> = (0..weighted.ndim()).collect();
    let loss = ok(super::reduce::reduce(&weighted, &all, false, super::reduce::RKind::Sum));
    let g = ok(super::autodiff::backward(&loss, &[leaf], false)).pop().flatten();
    let g: Vec<f64> = g.map(|g| g.to_vec()).unwrap_or_else(|| vec![0.0; x.len()]);
    let value_at = |xs: Vec<f64>| -> f64 {
        let o = to_tensor(&ok(f(&t(xs, shape.clone()))));
        let ov: Vec<f64> = o.to_vec();
        ov.iter().zip(w.to_vec::<f64>()).map(|(a, b)| a * b).sum()
    };
    // Through f32 the function is only piecewise constant at 1e-7: step wider.
    let (eps, rel) = if name == "astype" { (1e-3, 1e-3) } else { (1e-6, 1e-5) };
    for i in 0..x.len() {
        let mut p = x.clone();
        p[i] += eps;
        let mut m = x.clone();
        m[i] -= eps;
        let num = (value_at(p) - value_at(m)) / (2.0 * eps);
        let tol = rel * (1.0 + num.abs());
        assert!(
            (num - g[i]).abs() <= tol,
            "{name}: d/dx[{i}] analytic {} vs numeric {num}",
            g[i]
        );
    }
}

#[test]
fn every_differentiable_op_matches_finite_differences() {
    let x = randv(6, 1, 0.2, 2.0);
    let s = vec![2, 3];
    let c = t(randv(6, 2, 0.5, 1.5), vec![2, 3]);
    let row = t(randv(3, 3, 0.5, 1.5), vec![3]);
    use BinOp::*;
    fd("add", &|v| bin(Add, v, &row), x.clone(), s.clone());
    fd("sub", &|v| bin(Sub, &row, v), x.clone(), s.clone());
    fd("mul", &|v| bin(Mul, v, v), x.clone(), s.clone());
    fd("div", &|v| bin(Div, &c, v), x.clone(), s.clone());
    fd("pow", &|v| bin(Pow, v, &Value::Float(2.5)), x.clone(), s.clone());
    fd("rpow", &|v| bin(Pow, &Value::Float(1.7), v), x.clone(), s.clone());
    fd("pow-both", &|v| bin(Pow, v, v), x.clone(), s.clone());
    fd(
        "neg",
        &|v| crate::ops::unary(crate::syntax::ast::UnaryOp::Neg, v),
        x.clone(),
        s.clone(),
    );
    for name in [
        "abs", "sqrt", "exp", "log", "log1p", "sin", "cos", "tan", "tanh", "sigmoid",
    ] {
        fd(
            name,
            &|v| call(name, std::slice::from_ref(v), &[]),
            x.clone(),
            s.clone(),
        );
    }
    fd(
        "maximum",
        &|v| call("maximum", &[v.clone(), c.clone()], &[]),
        x.clone(),
        s.clone(),
    );
    fd(
        "minimum",
        &|v| call("minimum", &[v.clone(), c.clone()], &[]),
        x.clone(),
        s.clone(),
    );
    fd(
        "where",
        &|v| {
            let m = crate::ops::compare_value(crate::syntax::ast::CmpOp::Gt, v, &Value::Float(1.0))?;
            call("where", &[m, v.clone(), bin(Mul, v, v)?], &[])
        },
        x.clone(),
        s.clone(),
    );
    fd(
        "clip",
        &|v| meth(v, "clip", &[Value::Float(0.5), Value::Float(1.5)], &[]),
        x.clone(),
        s.clone(),
    );
    fd(
        "sum axis",
        &|v| meth(v, "sum", &[], &[("axis", Value::Int(0))]),
        x.clone(),
        s.clone(),
    );
    fd(
        "sum keepdims",
        &|v| {
            meth(
                v,
                "sum",
                &[],
                &[("axis", Value::Int(-1)), ("keepdims", Value::Bool(true))],
            )
        },
        x.clone(),
        s.clone(),
    );
    fd(
        "mean",
        &|v| meth(v, "mean", &[], &[("axis", Value::Int(1))]),
        x.clone(),
        s.clone(),
    );
    fd(
        "var",
        &|v| meth(v, "var", &[], &[("ddof", Value::Int(1))]),
        x.clone(),
        s.clone(),
    );
    fd(
        "std",
        &|v| meth(v, "std", &[], &[("axis", Value::Int(0))]),
        x.clone(),
        s.clone(),
    );
    fd(
        "max",
        &|v| meth(v, "max", &[], &[("axis", Value::Int(1))]),
        x.clone(),
        s.clone(),
    );
    fd("min", &|v| meth(v, "min", &[], &[]), x.clone(), s.clone());
    fd(
        "prod",
        &|v| meth(v, "prod", &[], &[("axis", Value::Int(0))]),
        x.clone(),
        s.clone(),
    );
    fd(
        "cumsum",
        &|v| meth(v, "cumsum", &[], &[("axis", Value::Int(1))]),
        x.clone(),
        s.clone(),
    );
    fd("cumsum flat", &|v| meth(v, "cumsum", &[], &[]), x.clone(), s.clone());
    fd(
        "reshape",
        &|v| {
            bin(
                Mul,
                &meth(v, "reshape", &[Value::Int(3), Value::Int(-1)], &[])?,
                &t(randv(6, 5, 0.0, 1.0), vec![3, 2]),
            )
        },
        x.clone(),
        s.clone(),
    );
    fd(
        "T",
        &|v| {
            bin(
                Mul,
                &crate::ops::get_attr(v, "T")?,
                &t(randv(6, 5, 0.0, 1.0), vec![3, 2]),
            )
        },
        x.clone(),
        s.clone(),
    );
    fd("flatten", &|v| meth(v, "flatten", &[], &[]), x.clone(), s.clone());
    fd(
        "squeeze/expand",
        &|v| meth(&meth(v, "expand_dims", &[Value::Int(0)], &[])?, "squeeze", &[], &[]),
        x.clone(),
        s.clone(),
    );
    fd(
        "astype",
        &|v| {
            meth(
                &meth(v, "astype", &[super::dtype::dtype_value(super::dtype::DType::F32)], &[])?,
                "astype",
                &[super::dtype::dtype_value(super::dtype::DType::F64)],
                &[],
            )
        },
        x.clone(),
        s.clone(),
    );
    fd(
        "concat",
        &|v| {
            call(
                "concat",
                &[Value::list(vec![v.clone(), bin(Mul, v, v)?])],
                &[("axis", Value::Int(1))],
            )
        },
        x.clone(),
        s.clone(),
    );
    fd(
        "stack",
        &|v| {
            call(
                "stack",
                &[Value::list(vec![v.clone(), c.clone()])],
                &[("axis", Value::Int(-1))],
            )
        },
        x.clone(),
        s.clone(),
    );
    fd(
        "index",
        &|v| crate::ops::get_index(v, &Value::Int(1)),
        x.clone(),
        s.clone(),
    );
    fd(
        "slice",
        &|v| {
            let sl = Value::Slice(Arc::new(crate::value::SliceObj {
                start: Value::None,
                stop: Value::None,
                step: Value::Int(-1),
            }));
            crate::ops::get_index(v, &Value::tuple(vec![Value::Int(0), sl]))
        },
        x.clone(),
        s.clone(),
    );
    fd(
        "int-array index",
        &|v| crate::ops::get_index(v, &Value::list(vec![Value::Int(1), Value::Int(0), Value::Int(1)])),
        x.clone(),
        s.clone(),
    );
    fd(
        "mask",
        &|v| {
            let m = crate::ops::compare_value(crate::syntax::ast::CmpOp::Gt, v, &Value::Float(1.0))?;
            crate::ops::get_index(v, &m)
        },
        x.clone(),
        s.clone(),
    );
    let b = t(randv(12, 7, -1.0, 1.0), vec![3, 4]);
    fd("matmul 2-D", &|v| bin(MatMul, v, &b), x.clone(), s.clone());
    fd(
        "matmul rhs",
        &|v| {
            bin(
                MatMul,
                &b.clone(),
                &meth(v, "reshape", &[Value::Int(4), Value::Int(-1)], &[])?,
            )
        },
        randv(8, 8, -1.0, 1.0),
        vec![8],
    );
    fd(
        "matmul batched",
        &|v| bin(MatMul, v, &b),
        randv(12, 9, -1.0, 1.0),
        vec![2, 2, 3],
    );
    fd("matmul 1-D", &|v| bin(MatMul, v, &b), randv(3, 10, -1.0, 1.0), vec![3]);
    fd(
        "matmul mat-vec",
        &|v| bin(MatMul, &b.clone(), v),
        randv(4, 11, -1.0, 1.0),
        vec![4],
    );
    fd(
        "dot",
        &|v| call("dot", &[v.clone(), v.clone()], &[]),
        randv(4, 12, -1.0, 1.0),
        vec![4],
    );
    fd(
        "outer",
        &|v| call("outer", &[v.clone(), row.clone()], &[]),
        randv(2, 13, -1.0, 1.0),
        vec![2],
    );
    fd(
        "norm",
        &|v| call("norm", std::slice::from_ref(v), &[]),
        x.clone(),
        s.clone(),
    );
    fd(
        "softmax",
        &|v| call("softmax", std::slice::from_ref(v), &[]),
        x.clone(),
        s.clone(),
    );
    fd(
        "softmax axis 0",
        &|v| call("softmax", std::slice::from_ref(v), &[("axis", Value::Int(0))]),
        x.clone(),
        s.clone(),
    );
    fd("sort", &|v| meth(v, "sort", &[], &[]), x.clone(), s.clone());
    let ints = |xs: &[i64]| Value::list(xs.iter().map(|&i| Value::Int(i)).collect());
    let tr = |v: &Value| crate::ops::get_attr(v, "T");
    fd(
        "roll axis",
        &|v| call("roll", &[v.clone(), Value::Int(-4)], &[("axis", Value::Int(1))]),
        x.clone(),
        s.clone(),
    );
    fd(
        "roll flat",
        &|v| call("roll", &[v.clone(), Value::Int(8)], &[]),
        x.clone(),
        s.clone(),
    );
    fd(
        "roll tuple",
        &|v| {
            call(
                "roll",
                &[v.clone(), Value::tuple(vec![Value::Int(1), Value::Int(2)])],
                &[("axis", Value::tuple(vec![Value::Int(0), Value::Int(1)]))],
            )
        },
        x.clone(),
        s.clone(),
    );
    fd(
        "roll transposed",
        &|v| call("roll", &[tr(v)?, Value::Int(1)], &[("axis", Value::Int(0))]),
        x.clone(),
        s.clone(),
    );
    fd(
        "roll reversed slice",
        &|v| {
            let sl = Value::Slice(Arc::new(crate::value::SliceObj {
                start: Value::None,
                stop: Value::None,
                step: Value::Int(-1),
            }));
            let rev = crate::ops::get_index(v, &Value::tuple(vec![sl.clone(), sl]))?;
            call("roll", &[rev, Value::Int(2)], &[("axis", Value::Int(-1))])
        },
        x.clone(),
        s.clone(),
    );
    let src23 = t(randv(6, 21, -1.0, 1.0), vec![2, 3]);
    fd(
        "index_add x",
        &|v| {
            call(
                "index_add",
                &[v.clone(), Value::Int(1), ints(&[0, 2, 0]), src23.clone()],
                &[],
            )
        },
        x.clone(),
        s.clone(),
    );
    fd(
        "index_add source",
        &|v| {
            call(
                "index_add",
                &[bin(Mul, &c, &c)?, Value::Int(1), ints(&[2, -3, 2]), v.clone()],
                &[("alpha", Value::Float(1.5))],
            )
        },
        x.clone(),
        s.clone(),
    );
    fd(
        "index_add both",
        &|v| {
            call(
                "index_add",
                &[v.clone(), Value::Int(0), ints(&[1, 1]), bin(Mul, v, v)?],
                &[],
            )
        },
        x.clone(),
        s.clone(),
    );
    fd(
        "index_add transposed",
        &|v| {
            let z = t(randv(8, 22, -1.0, 1.0), vec![4, 2]);
            call("index_add", &[z, Value::Int(0), ints(&[3, 0, 3]), tr(v)?], &[])
        },
        x.clone(),
        s.clone(),
    );
    fd(
        "index_add into transposed",
        &|v| call("index_add", &[tr(v)?, Value::Int(1), ints(&[1, 1]), tr(&c)?], &[]),
        x.clone(),
        s.clone(),
    );
    fd(
        "bincount weights",
        &|v| {
            call(
                "bincount",
                &[ints(&[0, 2, 2, 1, 0, 4])],
                &[("weights", meth(v, "flatten", &[], &[])?), ("minlength", Value::Int(7))],
            )
        },
        x.clone(),
        s.clone(),
    );
    fd(
        "softplus",
        &|v| call("softplus", &[bin(Sub, v, &Value::Float(1.2))?], &[]),
        x.clone(),
        s.clone(),
    );
    fd(
        "softplus beta threshold",
        &|v| {
            call(
                "softplus",
                &[bin(Mul, v, &Value::Float(10.0))?],
                &[("beta", Value::Float(2.0)), ("threshold", Value::Float(15.0))],
            )
        },
        x.clone(),
        s.clone(),
    );
    fd(
        "logaddexp",
        &|v| call("logaddexp", &[v.clone(), row.clone()], &[]),
        x.clone(),
        s.clone(),
    );
    fd(
        "logaddexp both",
        &|v| call("logaddexp", &[bin(Mul, v, v)?, bin(Sub, &Value::Float(2.0), v)?], &[]),
        x.clone(),
        s.clone(),
    );
    fd(
        "norm method axis",
        &|v| {
            meth(
                v,
                "norm",
                &[],
                &[("axis", Value::Int(1)), ("keepdims", Value::Bool(true))],
            )
        },
        x.clone(),
        s.clone(),
    );
    fd("norm method", &|v| meth(v, "norm", &[], &[]), x.clone(), s.clone());
    // prod is smooth at 0 (one zero, and two in a row): no 0/0.
    fd(
        "prod at zeros",
        &|v| meth(v, "prod", &[], &[("axis", Value::Int(1))]),
        vec![2.0, 0.0, 3.0, 0.0, 0.0, 1.5],
        s.clone(),
    );
    fd(
        "pow at zero",
        &|v| bin(Pow, v, &Value::Float(2.0)),
        vec![0.0, 1.0, -1.5],
        vec![3],
    );
    fd(
        "broadcast",
        &|v| {
            bin(
                Add,
                &meth(v, "reshape", &[Value::Int(2), Value::Int(1), Value::Int(3)], &[])?,
                &t(vec![0.0; 12], vec![2, 2, 3]),
            )
        },
        x,
        s,
    );
}

#[test]
fn second_derivatives_compose() {
    let f = |c: &mut dyn Caller, args: &[Value], _kw: crate::value::Kwargs| -> VResult<Value> {
        let _ = c;
        bin(BinOp::Pow, &args[0], &Value::Float(3.0))
    };
    let fv = Value::Native(Arc::new(crate::value::NativeFn::closure("cube", Box::new(f))));
    let g = ok(call("grad", &[fv], &[]));
    let gg = ok(call("grad", &[g], &[]));
    let r = ok(NoCaller.call(&gg, &[Value::Float(2.0)], &[]));
    assert!(
        matches!(r, Value::Float(v) if (v - 12.0).abs() < 1e-12),
        "got {}",
        crate::format::str_of(&r)
    );
}

#[test]
fn promotion_and_printing() {
    let i = ok(call("tensor", &[Value::list(vec![Value::Int(1), Value::Int(2)])], &[]));
    let f32v = super::dtype::dtype_value(super::dtype::DType::F32);
    let h = ok(call(
        "tensor",
        &[Value::list(vec![Value::Float(1.5)])],
        &[("dtype", f32v)],
    ));
    assert_eq!(
        crate::format::str_of(&ok(bin(BinOp::Mul, &i, &Value::Int(2)))),
        "tensor([2, 4], dtype=i64)"
    );
    assert_eq!(
        crate::format::str_of(&ok(bin(BinOp::Mul, &i, &Value::Float(0.5)))),
        "tensor([0.5, 1.0])"
    );
    assert_eq!(
        crate::format::str_of(&ok(bin(BinOp::Div, &i, &Value::Int(2)))),
        "tensor([0.5, 1.0])"
    );
    assert_eq!(
        crate::format::str_of(&ok(bin(BinOp::Mul, &h, &Value::Float(2.0)))),
        "tensor([3.0], dtype=f32)"
    );
    assert_eq!(
        crate::format::str_of(&ok(bin(BinOp::Add, &h, &i))),
        "tensor([2.5, 3.5])"
    );
    let e = bin(
        BinOp::Add,
        &t(vec![1.0, 2.0], vec![2]),
        &t(vec![1.0, 2.0, 3.0], vec![3]),
    )
    .err()
    .map(|e| (e.kind, e.message.clone()));
    assert_eq!(
        e,
        Some((
            crate::error::ErrorKind::ShapeError,
            "shapes (2,) and (3,) cannot be broadcast together".to_string()
        ))
    );
}

#[test]
fn views_share_storage_and_writes_go_through() {
    let a = ok(call("zeros", &[Value::tuple(vec![Value::Int(2), Value::Int(3)])], &[]));
    let sl = Value::Slice(Arc::new(crate::value::SliceObj {
        start: Value::None,
        stop: Value::None,
        step: Value::None,
    }));
    ok(crate::ops::set_index(
        &a,
        &Value::tuple(vec![sl.clone(), Value::Int(0)]),
        Value::Float(1.0),
    ));
    let col = ok(crate::ops::get_index(&a, &Value::tuple(vec![sl, Value::Int(1)])));
    ok(crate::ops::set_index(&col, &Value::Int(1), Value::Float(5.0)));
    assert_eq!(
        crate::format::str_of(&a),
        "tensor([[1.0, 0.0, 0.0],\n        [1.0, 5.0, 0.0]])"
    );
    // Overlapping self-assignment copies the source first.
    let row0 = ok(crate::ops::get_index(&a, &Value::Int(0)));
    ok(crate::ops::set_index(&a, &Value::Int(1), row0));
    assert_eq!(
        crate::format::str_of(&a),
        "tensor([[1.0, 0.0, 0.0],\n        [1.0, 0.0, 0.0]])"
    );
}

#[test]
fn concurrent_writes_through_views_are_safe() {
    let a = ok(call("zeros", &[Value::Int(1000)], &[]));
    std::thread::scope(|s| {
        for k in 0..4 {
            let a = a.clone();
            s.spawn(move || {
                for i in 0..250 {
                    let _ = crate::ops::set_index(&a, &Value::Int(k * 250 + i), Value::Float(1.0));
                }
            });
        }
    });
    let total = ok(meth(&a, "sum", &[], &[]));
    assert!(matches!(total, Value::Float(v) if v == 1000.0));
}

#[test]
fn truthiness_and_errors_are_clear() {
    let two = t(vec![1.0, 2.0], vec![2]);
    let e = two.truthy().err().map(|e| e.message.clone());
    assert_eq!(
        e.as_deref(),
        Some("the truth value of a tensor with more than one element is ambiguous; use .any() or .all()")
    );
    assert!(ok(t(vec![1.0], vec![1]).truthy()));
    assert!(meth(&two, "reshape", &[Value::Int(3)], &[]).is_err());
    assert!(crate::ops::get_index(&two, &Value::Int(2)).is_err());
    assert!(call(
        "tensor",
        &[Value::list(vec![Value::list(vec![Value::Int(1)]), Value::Int(2)])],
        &[]
    )
    .is_err());
}

/// A large reduction stays within the memory of its data (plus a row).
#[test]
fn big_reduction_keeps_shape_and_values() {
    let a = ok(call(
        "ones",
        &[Value::tuple(vec![Value::Int(100_000), Value::Int(3)])],
        &[],
    ));
    let s = ok(meth(&a, "sum", &[], &[("axis", Value::Int(1))]));
    assert_eq!(
        crate::format::str_of(&ok(crate::ops::get_attr(&s, "shape"))),
        "(100000,)"
    );
    let total = ok(meth(&s, "sum", &[], &[]));
    assert!(matches!(total, Value::Float(v) if v == 300_000.0));
    let cols = ok(meth(&a, "sum", &[], &[("axis", Value::Int(0))]));
    assert_eq!(crate::format::str_of(&cols), "tensor([100000.0, 100000.0, 100000.0])");
}

/// The newer operations on every dtype family and on strided views: the
/// result dtype each keeps (as its neighbours do) and the same values as
/// on a dense f64 copy.
#[test]
fn new_ops_keep_dtypes_and_read_strided_views() {
    use super::dtype::{dtype_value, DType};
    let s = |v: &Value| crate::format::str_of(v);
    let as_d = |v: &Value, d: DType| ok(meth(v, "astype", &[dtype_value(d)], &[]));
    let m = t((0..6).map(|i| i as f64).collect(), vec![2, 3]);
    let mt = ok(crate::ops::get_attr(&m, "T"));
    let ints = |xs: &[i64]| Value::list(xs.iter().map(|&i| Value::Int(i)).collect());
    // roll: any dtype (the packed formats too), any layout.
    let want = "[[2.0, 5.0], [0.0, 3.0], [1.0, 4.0]]";
    for d in [
        DType::F64,
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::I32,
        DType::Fp8E4M3,
    ] {
        let r = ok(call("roll", &[as_d(&mt, d), Value::Int(1)], &[("axis", Value::Int(0))]));
        assert_eq!(to_tensor(&r).dtype, d);
        let back = as_d(&r, DType::F64);
        assert_eq!(s(&ok(meth(&back, "tolist", &[], &[]))), want, "roll {}", d.name());
    }
    // index_add: promotes like `+`; f16 sums in f32 and rounds once.
    let src = t(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], vec![3, 2]);
    for (xd, sd, rd) in [
        (DType::F32, DType::F32, DType::F32),
        (DType::F16, DType::F16, DType::F16),
        (DType::I32, DType::I64, DType::I64),
        (DType::I32, DType::F32, DType::F64),
    ] {
        let r = ok(call(
            "index_add",
            &[as_d(&mt, xd), Value::Int(0), ints(&[2, 0, 2]), as_d(&src, sd)],
            &[],
        ));
        assert_eq!(to_tensor(&r).dtype, rd, "index_add {} {}", xd.name(), sd.name());
        let back = as_d(&r, DType::F64);
        assert_eq!(
            s(&ok(meth(&back, "tolist", &[], &[]))),
            "[[3.0, 7.0], [1.0, 4.0], [8.0, 13.0]]"
        );
    }
    // softplus and logaddexp keep a float dtype and turn ints into f64.
    for (d, rd) in [
        (DType::F32, DType::F32),
        (DType::BF16, DType::BF16),
        (DType::I64, DType::F64),
    ] {
        let x = as_d(&mt, d);
        assert_eq!(
            to_tensor(&ok(call("softplus", std::slice::from_ref(&x), &[]))).dtype,
            rd
        );
        assert_eq!(to_tensor(&ok(call("logaddexp", &[x.clone(), x], &[]))).dtype, rd);
    }
    let a = ok(call("logaddexp", &[mt.clone(), Value::Float(1.0)], &[]));
    let dense = ok(call(
        "logaddexp",
        &[ok(meth(&mt, "copy", &[], &[])), Value::Float(1.0)],
        &[],
    ));
    assert_eq!(s(&a), s(&dense));
    assert_eq!(
        s(&ok(meth(&mt, "norm", &[], &[("axis", Value::Int(1))]))),
        s(&ok(call(
            "norm",
            &[ok(meth(&mt, "copy", &[], &[]))],
            &[("axis", Value::Int(1))]
        )))
    );
    // Errors, typed, never a panic.
    let kind = |r: VResult<Value>| r.err().map(|e| e.kind);
    use crate::error::ErrorKind as K;
    assert_eq!(kind(call("bincount", &[ints(&[1, -1])], &[])), Some(K::ValueError));
    assert_eq!(
        kind(call("bincount", std::slice::from_ref(&m), &[])),
        Some(K::TypeError)
    );
    assert_eq!(
        kind(call("bincount", &[as_d(&m, DType::I64)], &[])),
        Some(K::ShapeError)
    );
    assert_eq!(
        kind(call(
            "index_add",
            &[m.clone(), Value::Int(0), ints(&[2]), t(vec![0.0; 3], vec![1, 3])],
            &[]
        )),
        Some(K::IndexError)
    );
    assert_eq!(
        kind(call("roll", &[m.clone(), Value::Int(1)], &[("axis", Value::Int(-3))])),
        Some(K::IndexError)
    );
    assert_eq!(
        kind(call("softplus", &[as_d(&m, DType::Fp8E4M3)], &[])),
        Some(K::TypeError)
    );
}

/// Runs `f` on a rayon pool of `threads` threads (the kernels ask the
/// current pool how many it has).
fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build();
    ok(pool.map_err(|e| crate::value::err(crate::error::ErrorKind::Error, e.to_string()))).install(f)
}

#[test]
fn sums_and_elementwise_kernels_give_the_same_bits_on_1_and_2_threads() {
    // Past PAR_MIN and PAR_MIN_CHEAP, so both thread counts take their
    // split paths; sums of whole tensors and of leading axes, a broadcast
    // `where` (zip3 in blocks) and an in-place `+=`.
    let n = 3 * (1 << 18) + 77;
    let x = t(randv(n, 7, -1.0, 1.0), vec![n]);
    let m = t(randv(n / 7 * 7, 8, -1.0, 1.0), vec![n / 7, 7]);
    let run = || -> Vec<u64> {
        let mut bits = Vec::new();
        for v in [
            ok(meth(&x, "sum", &[], &[])),
            ok(meth(&m, "sum", &[Value::Int(0)], &[])),
        ] {
            let tv = match as_tensor(&v) {
                Some(tt) => tt.to_vec::<f64>(),
                None => match v {
                    Value::Float(f) => vec![f],
                    other => panic!("a sum gave {}", other.type_name()),
                },
            };
            bits.extend(tv.iter().map(|f| f.to_bits()));
        }
        let c = ok(bin(BinOp::Mul, &x, &Value::Float(0.5)));
        let w = ok(call(
            "where",
            &[
                ok(crate::ops::compare_value(
                    crate::syntax::ast::CmpOp::Gt,
                    &x,
                    &Value::Float(0.0),
                )),
                c,
                Value::Float(-2.0),
            ],
            &[],
        ));
        let acc = t(vec![1.0; n], vec![n]);
        let r = crate::tensor::inplace::binary_inplace(BinOp::Add, &acc, &w).map(ok);
        assert!(r.is_some(), "+= on a dense f64 tensor is in place");
        bits.extend(to_tensor(&acc).to_vec::<f64>().iter().map(|f| f.to_bits()));
        bits
    };
    assert_eq!(on_threads(1, run), on_threads(2, run));
}

/// A first-order backward pass keeps the cotangents of elementwise rules as
/// expressions and evaluates them in blocks (cotangent.rs). It must give the
/// bits of the eager rules, for f64 and f32, at kinks and ties (zeros for
/// `abs`/`sign`, operands equal under `maximum`/`minimum`, values on `clip`'s
/// bounds), with a tensor used many times (shared nodes), chains longer than
/// an expression may grow, broadcast operands (which take the eager rules)
/// and sizes that split across threads.
#[test]
fn lazy_cotangents_give_the_bits_of_the_eager_rules() {
    use super::dtype::DType;
    use BinOp::*;
    let f = |v: &Value, c: &Value, row: &Value| -> VResult<Value> {
        let a = call("maximum", &[v.clone(), c.clone()], &[])?;
        let b = call("minimum", &[v.clone(), Value::Float(0.25)], &[])?;
        let s = bin(Sub, &bin(Add, &a, &b)?, &bin(Mul, v, c)?)?;
        let e = call(
            "log1p",
            &[call(
                "exp",
                &[crate::ops::unary(
                    crate::syntax::ast::UnaryOp::Neg,
                    &call("abs", std::slice::from_ref(v), &[])?,
                )?],
                &[],
            )?],
            &[],
        )?;
        let mut acc = bin(Add, &s, &e)?;
        for name in ["sin", "cos", "tanh", "sigmoid"] {
            acc = bin(Add, &acc, &call(name, std::slice::from_ref(v), &[])?)?;
        }
        let sq = call("sqrt", &[bin(Add, &bin(Mul, v, v)?, &Value::Float(1.0))?], &[])?;
        let q = bin(
            Div,
            &sq,
            &bin(Add, &call("abs", std::slice::from_ref(v), &[])?, &Value::Float(0.5))?,
        )?;
        let cl = call("clip", &[v.clone(), Value::Float(-0.5), Value::Float(0.5)], &[])?;
        let tn = call("tan", &[bin(Mul, v, &Value::Float(0.3))?], &[])?;
        let lg = call("log", &[bin(Add, &bin(Mul, v, v)?, &Value::Float(0.1))?], &[])?;
        acc = bin(Add, &bin(Add, &acc, &q)?, &bin(Mul, &cl, &tn)?)?;
        acc = bin(Sub, &acc, &lg)?;
        // A long chain: more nodes than one expression may hold.
        let mut chain = v.clone();
        for k in 0..40 {
            chain = bin(Mul, &bin(Add, &chain, v)?, &Value::Float(0.5 + k as f64 * 0.01))?;
        }
        acc = bin(Add, &acc, &chain)?;
        // A broadcast row: its cotangent is summed by the eager rule.
        bin(Add, &acc, &bin(Mul, &acc, row)?)
    };
    for dtype in [DType::F64, DType::F32] {
        for n in [7usize, 1000, 70_000] {
            let mut xs = randv(n, 11, -2.0, 2.0);
            for i in (0..n).step_by(5) {
                xs[i] = 0.0;
            }
            for i in (1..n).step_by(7) {
                xs[i] = 0.5;
            }
            for i in (2..n).step_by(9) {
                xs[i] = 0.25;
            }
            let x = ok(Tensor::from_vec(xs, vec![n, 1]).cast(dtype));
            let c = tensor_value(ok(Tensor::full(vec![n, 1], 0.5, dtype)));
            let row = tensor_value(ok(Tensor::from_vec(vec![0.5, -1.5, 2.0], vec![1, 3]).cast(dtype)));
            let rowleaf = super::autodiff::leaf(&to_tensor(&row));
            let grads = |lazy: bool| -> Vec<Vec<f64>> {
                let leaf = super::autodiff::leaf(&x);
                let out = to_tensor(&ok(f(&tensor_value(leaf.clone()), &c, &tensor_value(rowleaf.clone()))));
                let all: Vec<usize> = (0..out.ndim()).collect();
                let loss = ok(super::reduce::reduce(&out, &all, false, super::reduce::RKind::Sum));
                let gs = ok(super::autodiff::backward_with(
                    &loss,
                    &[leaf, rowleaf.clone()],
                    false,
                    lazy,
                ));
                gs.into_iter()
                    .map(|g| g.map(|g| g.to_vec::<f64>()).unwrap_or_default())
                    .collect()
            };
            let (lazy, eager) = (grads(true), grads(false));
            assert_eq!(lazy.len(), eager.len());
            for (l, e) in lazy.iter().zip(&eager) {
                assert_eq!(l.len(), e.len(), "{dtype:?} n={n}");
                assert!(!l.is_empty(), "{dtype:?} n={n}: no gradient");
                for (i, (a, b)) in l.iter().zip(e).enumerate() {
                    assert!(
                        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                        "{dtype:?} n={n} [{i}]: lazy {a} eager {b}"
                    );
                }
            }
        }
    }
}

/// The fused exact gelu (`UFn::Gelu`, what `use layers`' `gelu` runs): its
/// values are PyTorch's formula, its first derivative matches central
/// differences on both the direct and the recorded rule, and its second
/// derivative (through the recorded rule) matches differences of the first.
#[test]
fn fused_gelu_values_and_derivatives() {
    use super::arith::{unary, UFn};
    use super::autodiff::{backward, leaf};
    use super::reduce::{reduce, RKind};
    let xs: Vec<f64> = (-40..=40).map(|i| i as f64 * 0.15).collect();
    let n = xs.len();
    let x = Tensor::from_vec(xs.clone(), vec![n]);
    let y: Vec<f64> = ok(unary(UFn::Gelu, &x)).to_vec();
    let erf = |v: f64| -> f64 { <f64 as super::real::Real>::erf(v) };
    let gelu = |v: f64| v * 0.5 * (1.0 + erf(v * std::f64::consts::FRAC_1_SQRT_2));
    for (v, got) in xs.iter().zip(&y) {
        assert_eq!(*got, gelu(*v), "gelu({v})");
    }
    let first = |v: &[f64], record: bool| -> Vec<f64> {
        let l = leaf(&Tensor::from_vec(v.to_vec(), vec![v.len()]));
        let s = ok(reduce(&ok(unary(UFn::Gelu, &l)), &[0], false, RKind::Sum));
        ok(backward(&s, std::slice::from_ref(&l), record))[0]
            .as_ref()
            .map(|g| g.to_vec())
            .unwrap_or_default()
    };
    let h = 1e-6;
    for record in [false, true] {
        let g = first(&xs, record);
        for (i, v) in xs.iter().enumerate() {
            let fd = (gelu(v + h) - gelu(v - h)) / (2.0 * h);
            assert!(
                (g[i] - fd).abs() < 1e-8,
                "gelu'({v}) = {} (record {record}), differences {fd}",
                g[i]
            );
        }
    }
    // Second derivative: grad of sum(gelu'(x)).
    let l = leaf(&x);
    let s = ok(reduce(&ok(unary(UFn::Gelu, &l)), &[0], false, RKind::Sum));
    let g = ok(backward(&s, std::slice::from_ref(&l), true))[0]
        .clone()
        .expect("a gradient");
    let gs = ok(reduce(&g, &[0], false, RKind::Sum));
    let gg: Vec<f64> = ok(backward(&gs, std::slice::from_ref(&l), false))[0]
        .as_ref()
        .map(|g| g.to_vec())
        .unwrap_or_default();
    let d1 = |v: f64| first(&[v], false)[0];
    for (i, v) in xs.iter().enumerate() {
        let fd = (d1(v + h) - d1(v - h)) / (2.0 * h);
        assert!((gg[i] - fd).abs() < 1e-6, "gelu''({v}) = {}, differences {fd}", gg[i]);
    }
    // float32 takes the vectorised form (gelu.rs): within 6e-7 relative of
    // the float64 values (about 5 ulp), in the left tail too, for gelu and for
    // its derivative; the infinities and NaN as the formula gives them.
    let dense: Vec<f64> = (-24_000..=24_000).map(|i| i as f64 * 5e-4).collect();
    let x32 = ok(Tensor::from_vec(dense.clone(), vec![dense.len()]).astype(super::dtype::DType::F32));
    let y32 = ok(unary(UFn::Gelu, &x32));
    assert_eq!(y32.dtype, super::dtype::DType::F32);
    let y32: Vec<f64> = y32.to_vec();
    let l32 = leaf(&x32);
    let s32 = ok(reduce(&ok(unary(UFn::Gelu, &l32)), &[0], false, RKind::Sum));
    let g32: Vec<f64> = ok(backward(&s32, std::slice::from_ref(&l32), false))[0]
        .as_ref()
        .map(|g| g.to_vec())
        .unwrap_or_default();
    let dgelu = |v: f64| {
        0.5 * libm::erfc(-v * std::f64::consts::FRAC_1_SQRT_2)
            + v * (-0.5 * v * v).exp() / (2.0 * std::f64::consts::PI).sqrt()
    };
    let x32v: Vec<f64> = x32.to_vec();
    for (i, v) in x32v.iter().enumerate() {
        // The reference from the float32 input, through the tail's
        // complement (1 + erf cancels there).
        let cdf = 0.5 * libm::erfc(-v * std::f64::consts::FRAC_1_SQRT_2);
        let want = v * cdf;
        assert!(
            (y32[i] - want).abs() <= 6e-7 * want.abs() + 1.2e-38,
            "f32 gelu({v}) = {}, want {want}",
            y32[i]
        );
        // The derivative's two terms cancel near -0.75: bound the error by
        // their magnitudes.
        let (dwant, terms) = (dgelu(*v), cdf + (v * v * -0.5).exp() * v.abs() * 0.4);
        assert!(
            (g32[i] - dwant).abs() <= 6e-7 * terms + 1.2e-38,
            "f32 gelu'({v}) = {}, want {dwant}",
            g32[i]
        );
    }
    let odd = ok(
        Tensor::from_vec(vec![f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 0.0, -0.0], vec![5])
            .astype(super::dtype::DType::F32),
    );
    let o: Vec<f64> = ok(unary(UFn::Gelu, &odd)).to_vec();
    assert_eq!(o[0], f64::INFINITY);
    assert!(o[1].is_nan() && o[2].is_nan(), "{o:?}");
    assert_eq!(o[3], 0.0);
}

/// Views whose last axis repeats one element (a broadcast `(…, 1)` tensor,
/// as a reduction's gradient is) and views strided every other way read
/// the same elements.
#[test]
fn broadcast_and_strided_views_read_their_elements() {
    use super::layout::Layout;
    let base = Tensor::from_vec((0..24).map(|v| v as f64).collect::<Vec<f64>>(), vec![2, 3, 4]);
    // (2, 3, 1) -> (2, 3, 5): column 1 of each row, repeated.
    let col = base.view(Layout {
        shape: vec![2, 3, 5],
        strides: vec![12, 4, 0],
        offset: 1,
    });
    let want: Vec<f64> = (0..6)
        .flat_map(|r| std::iter::repeat_n((r * 4 + 1) as f64, 5))
        .collect();
    assert_eq!(col.to_vec::<f64>(), want);
    assert_eq!(
        col.to_vec::<f32>(),
        want.iter().map(|&v| v as f32).collect::<Vec<f32>>()
    );
    // A transposed view (last axis strided by 4) and a reversed-stride one.
    let tr = base.view(Layout {
        shape: vec![2, 4, 3],
        strides: vec![12, 1, 4],
        offset: 0,
    });
    let want: Vec<f64> = (0..2)
        .flat_map(|a| (0..4).flat_map(move |c| (0..3).map(move |b| (a * 12 + b * 4 + c) as f64)))
        .collect();
    assert_eq!(tr.to_vec::<f64>(), want);
    // An empty broadcast row reads nothing.
    let empty = base.view(Layout {
        shape: vec![2, 3, 0],
        strides: vec![12, 4, 0],
        offset: 0,
    });
    assert!(empty.to_vec::<f64>().is_empty());
}

/// Large row views are copied by the pool, row by row (`gather_rows_par`):
/// a head split of attention (last stride 1) and a reduction's broadcast
/// gradient (last stride 0), each the same on 1 and 2 threads and equal to
/// reading every element by its offset.
#[test]
fn large_row_views_are_copied_in_parallel_with_every_element_in_place() {
    use super::layout::Layout;
    let (n, t, h, d) = (8usize, 64usize, 4usize, 32usize);
    let total = n * t * h * d;
    let base = Tensor::from_vec((0..total).map(|v| v as f32).collect::<Vec<f32>>(), vec![n, t, h, d]);
    // (n, t, h, d) seen as (n, h, t, d): rows of d contiguous elements.
    let heads = Layout {
        shape: vec![n, h, t, d],
        strides: vec![(t * h * d) as isize, d as isize, (h * d) as isize, 1],
        offset: 0,
    };
    let want: Vec<f32> = (0..n)
        .flat_map(|a| {
            (0..h).flat_map(move |b| {
                (0..t).flat_map(move |c| (0..d).map(move |e| (a * t * h * d + c * h * d + b * d + e) as f32))
            })
        })
        .collect();
    // (n * t * h, 1) broadcast to (n * t * h, 64): each row one value.
    let rows = n * t * h;
    let col = Tensor::from_vec((0..rows).map(|v| v as f32).collect::<Vec<f32>>(), vec![rows, 1]);
    let bcast = Layout {
        shape: vec![rows, 64],
        strides: vec![1, 0],
        offset: 0,
    };
    let want_b: Vec<f32> = (0..rows).flat_map(|r| std::iter::repeat_n(r as f32, 64)).collect();
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            assert_eq!(base.view(heads.clone()).to_vec::<f32>(), want, "{threads} threads");
            assert_eq!(base.view(heads.clone()).to_vec::<f64>().len(), total);
            assert_eq!(col.view(bcast.clone()).to_vec::<f32>(), want_b, "{threads} threads");
        });
    }
}
