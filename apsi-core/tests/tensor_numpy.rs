//! Property tests against NumPy: broadcasting (also through transposed,
//! strided operands), reductions with axes and keepdims, basic indexing with
//! steps and new axes, and matmul (1-D, 2-D, batched). The cases and NumPy's
//! answers are in fixtures/tensor/cases.txt (made by fixtures/tensor/gen.py).

use apsi_core::ops::{self, NoCaller};
use apsi_core::syntax::ast::BinOp;
use apsi_core::tensor::{as_tensor, tensor_value, Tensor};
use apsi_core::value::{Caller, SliceObj, VResult, Value};
use std::sync::Arc;

const CASES: &str = include_str!("fixtures/tensor/cases.txt");

struct Arr {
    shape: Vec<usize>,
    vals: Vec<f64>,
}

fn parse_arr(line: &str) -> Arr {
    let mut parts = line.split_whitespace();
    let _tag = parts.next();
    let shape_s = parts.next().unwrap_or("-");
    let shape = if shape_s == "-" {
        vec![]
    } else {
        shape_s.split(',').map(|d| d.parse().expect("dim")).collect()
    };
    let vals = parts.map(|v| v.parse().expect("value")).collect();
    Arr { shape, vals }
}

fn val(a: &Arr) -> Value {
    tensor_value(Tensor::from_vec(a.vals.clone(), a.shape.clone()))
}

fn must<T>(r: VResult<T>, what: &str) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{what}: {}: {}", e.kind, e.message),
    }
}

fn prelude(name: &str) -> Value {
    static P: std::sync::OnceLock<apsi_core::module::ModuleDescriptor> = std::sync::OnceLock::new();
    P.get_or_init(apsi_core::builtins::prelude)
        .get(name)
        .cloned()
        .expect("prelude name")
}

fn method(x: &Value, name: &str, args: &[Value], kw: Vec<(Arc<str>, Value)>) -> VResult<Value> {
    let m = ops::get_attr(x, name)?;
    NoCaller.call(&m, args, &kw)
}

fn result_arr(v: &Value) -> Arr {
    match v {
        Value::Float(f) => Arr {
            shape: vec![],
            vals: vec![*f],
        },
        Value::Int(i) => Arr {
            shape: vec![],
            vals: vec![*i as f64],
        },
        other => {
            let t = as_tensor(other).expect("a tensor result");
            Arr {
                shape: t.shape().to_vec(),
                vals: t.to_vec(),
            }
        }
    }
}

fn close(got: &Arr, want: &Arr, what: &str) {
    assert_eq!(got.shape, want.shape, "{what}: shape");
    for (i, (g, w)) in got.vals.iter().zip(&want.vals).enumerate() {
        let tol = 1e-9 * (1.0 + w.abs());
        assert!(
            (g - w).abs() <= tol || (g.is_nan() && w.is_nan()),
            "{what}: element {i}: got {g}, NumPy {w}"
        );
    }
}

fn opt_int(s: &str) -> Value {
    if s == "_" {
        Value::None
    } else {
        Value::Int(s.parse().expect("int"))
    }
}

#[test]
fn tensors_agree_with_numpy() {
    let lines: Vec<&str> = CASES.lines().collect();
    let mut i = 0;
    let mut count = 0;
    while i < lines.len() {
        let head = lines[i];
        assert!(head.starts_with("case "), "bad fixture line {head}");
        let words: Vec<&str> = head.split_whitespace().collect();
        let kind = words[1];
        let two = matches!(kind, "bin" | "matmul");
        let a = parse_arr(lines[i + 1]);
        let (b, r) = if two {
            (Some(parse_arr(lines[i + 2])), parse_arr(lines[i + 3]))
        } else {
            (None, parse_arr(lines[i + 2]))
        };
        i += if two { 4 } else { 3 };
        let av = val(&a);
        let got = match kind {
            "bin" => {
                let mut x = av.clone();
                if let Some(p) = words.get(3).and_then(|w| w.strip_prefix("perm=")) {
                    let perm: Vec<Value> = p.split(',').map(|d| Value::Int(d.parse().expect("axis"))).collect();
                    x = must(method(&x, "transpose", &perm, vec![]), head);
                }
                let y = val(b.as_ref().expect("b"));
                match words[2] {
                    "add" => ops::binary(BinOp::Add, &x, &y),
                    "sub" => ops::binary(BinOp::Sub, &x, &y),
                    "mul" => ops::binary(BinOp::Mul, &x, &y),
                    "div" => ops::binary(BinOp::Div, &x, &y),
                    "pow" => ops::binary(BinOp::Pow, &x, &y),
                    f => NoCaller.call(&prelude(f), &[x, y], &[]),
                }
            }
            "matmul" => ops::binary(BinOp::MatMul, &av, &val(b.as_ref().expect("b"))),
            "reduce" => {
                let axis = match words[3] {
                    "none" => Value::None,
                    s if s.contains(',')
                        || matches!(words[2], "sum" | "mean" | "max" | "min" | "prod" | "var" | "std") =>
                    {
                        Value::tuple(s.split(',').map(|d| Value::Int(d.parse().expect("axis"))).collect())
                    }
                    s => Value::Int(s.parse().expect("axis")),
                };
                let mut kw: Vec<(Arc<str>, Value)> = vec![("axis".into(), axis)];
                if words[4] == "1" {
                    kw.push(("keepdims".into(), Value::Bool(true)));
                }
                method(&av, words[2], &[], kw)
            }
            "index" => {
                let items: Vec<Value> = words[2..]
                    .iter()
                    .map(|w| {
                        if *w == "n" {
                            Value::None
                        } else if let Some(k) = w.strip_prefix("i:") {
                            Value::Int(k.parse().expect("index"))
                        } else {
                            let p: Vec<&str> = w.split(':').collect();
                            Value::Slice(Arc::new(SliceObj {
                                start: opt_int(p[1]),
                                stop: opt_int(p[2]),
                                step: opt_int(p[3]),
                            }))
                        }
                    })
                    .collect();
                ops::get_index(&av, &Value::tuple(items))
            }
            other => panic!("unknown case kind {other}"),
        };
        let got = must(got, head);
        close(&result_arr(&got), &r, head);
        count += 1;
    }
    assert!(count >= 150, "only {count} cases ran");
}
