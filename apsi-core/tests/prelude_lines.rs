#![allow(clippy::approx_constant)] // 3.14159 is the conformance programs' value

//! The library half of the conformance programs: each check builds the
//! values a line of /work/shared/conformance/0*.apsi computes, with the ops
//! and the prelude, and compares what `print` writes with the expected line.

use apsi_core::builtins::{method, prelude};
use apsi_core::error::ErrorKind;
use apsi_core::module::ModuleDescriptor;
use apsi_core::ops;
use apsi_core::syntax::ast::{BinOp, CmpOp, UnaryOp};
use apsi_core::value::{Caller, Kwargs, SliceObj, VResult, Value};
use std::sync::Arc;

/// Calls natives and bound natives; collects output.
struct TestCaller {
    out: String,
}

impl Caller for TestCaller {
    fn call(&mut self, f: &Value, args: &[Value], kwargs: Kwargs) -> VResult<Value> {
        match f {
            Value::Native(n) => n.call(self, args, kwargs),
            Value::BoundMethod(m) => {
                let mut all = vec![m.receiver.clone()];
                all.extend_from_slice(args);
                self.call(&m.func, &all, kwargs)
            }
            other => panic!("test caller cannot call a {}", other.type_name()),
        }
    }
    fn write_out(&mut self, text: &str) -> VResult<()> {
        self.out.push_str(text);
        Ok(())
    }
}

struct Env {
    p: ModuleDescriptor,
    c: TestCaller,
}

fn ok<T>(r: VResult<T>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("unexpected {}: {}", e.kind, e.message),
    }
}

impl Env {
    fn new() -> Env {
        Env {
            p: prelude(),
            c: TestCaller { out: String::new() },
        }
    }
    fn get(&self, name: &str) -> Value {
        self.p
            .get(name)
            .cloned()
            .unwrap_or_else(|| panic!("prelude lacks {name}"))
    }
    fn call(&mut self, name: &str, args: &[Value]) -> Value {
        let f = self.get(name);
        ok(self.c.call(&f, args, &[]))
    }
    fn call_kw(&mut self, name: &str, args: &[Value], kw: &[(&str, Value)]) -> Value {
        let f = self.get(name);
        let kw: Vec<(Arc<str>, Value)> = kw.iter().map(|(k, v)| (Arc::from(*k), v.clone())).collect();
        ok(self.c.call(&f, args, &kw))
    }
    fn meth(&mut self, recv: &Value, name: &str, args: &[Value]) -> Value {
        let f = method(recv, name).unwrap_or_else(|| panic!("no method {name}"));
        let mut all = vec![recv.clone()];
        all.extend_from_slice(args);
        ok(f(&mut self.c, &all, &[]))
    }
    /// `print(*args)` and return the line written.
    fn print(&mut self, args: &[Value]) -> String {
        self.c.out.clear();
        self.call("print", args);
        std::mem::take(&mut self.c.out)
    }
}

fn b(op: BinOp, x: Value, y: Value) -> Value {
    ok(ops::binary(op, &x, &y))
}
fn i(n: i64) -> Value {
    Value::Int(n)
}
fn f(x: f64) -> Value {
    Value::Float(x)
}
fn s(t: &str) -> Value {
    Value::str(t)
}
fn sl(a: Value, bb: Value, c: Value) -> Value {
    Value::Slice(Arc::new(SliceObj {
        start: a,
        stop: bb,
        step: c,
    }))
}
fn neg_key(_c: &mut dyn Caller, args: &[Value], _k: Kwargs) -> VResult<Value> {
    ops::unary(UnaryOp::Neg, &args[0])
}
fn mul(_c: &mut dyn Caller, args: &[Value], _k: Kwargs) -> VResult<Value> {
    ops::binary(BinOp::Mul, &args[0], &args[1])
}
fn odd(_c: &mut dyn Caller, args: &[Value], _k: Kwargs) -> VResult<Value> {
    Ok(Value::Bool(ops::eq(
        &ops::binary(BinOp::Mod, &args[0], &Value::Int(2))?,
        &Value::Int(1),
    )?))
}
fn times10(_c: &mut dyn Caller, args: &[Value], _k: Kwargs) -> VResult<Value> {
    ops::binary(BinOp::Mul, &args[0], &Value::Int(10))
}
fn native(name: &str, fp: apsi_core::value::NativeFnPtr) -> Value {
    Value::Native(Arc::new(apsi_core::value::NativeFn::new(name, fp)))
}

#[test]
fn arith_program() {
    let mut e = Env::new();
    assert_eq!(e.print(&[b(BinOp::Div, i(7), i(2))]), "3.5\n");
    let line = [
        b(BinOp::FloorDiv, i(7), i(2)),
        b(BinOp::FloorDiv, i(-7), i(2)),
        b(BinOp::Mod, i(-7), i(3)),
        b(BinOp::Mod, f(10.5), i(3)),
    ];
    assert_eq!(e.print(&line), "3 -4 2 1.5\n");
    let neg22 = ok(ops::unary(UnaryOp::Neg, &b(BinOp::Pow, i(2), i(2))));
    assert_eq!(
        e.print(&[b(BinOp::Pow, i(2), i(10)), neg22, b(BinOp::Pow, i(2), i(-1))]),
        "1024 -4 0.5\n"
    );
    let a = e.call("abs", &[i(-3)]);
    let a2 = e.call("abs", &[f(-2.5)]);
    let mn = e.call("min", &[i(3), i(1), i(2)]);
    let mx = e.call("max", &[Value::list(vec![i(4), i(9), i(2)])]);
    assert_eq!(e.print(&[a, a2, mn, mx]), "3 2.5 1 9\n");
    let v = [
        e.call("int", &[f(3.9)]),
        e.call("int", &[f(-3.9)]),
        e.call("float", &[i(2)]),
    ];
    assert_eq!(e.print(&v), "3 -3 2.0\n");
    let lt = ok(ops::compare(CmpOp::Lt, &i(1), &i(2))) && ok(ops::compare(CmpOp::Lt, &i(2), &i(3)));
    let eq = ok(ops::compare(CmpOp::Eq, &i(1), &f(1.0)));
    assert_eq!(
        e.print(&[Value::Bool(lt), Value::Bool(false), Value::Bool(eq)]),
        "true false true\n"
    );
    let bits = [
        b(BinOp::BitAnd, i(5), i(3)),
        b(BinOp::BitOr, i(5), i(3)),
        b(BinOp::BitXor, i(5), i(3)),
        b(BinOp::Shl, i(1), i(4)),
        ok(ops::unary(UnaryOp::Invert, &i(0))),
    ];
    assert_eq!(e.print(&bits), "1 7 6 16 -1\n");
    let m = [
        e.call("sqrt", &[f(16.0)]),
        e.call("floor", &[f(2.7)]),
        e.call("ceil", &[f(2.1)]),
        e.call("round", &[f(2.5)]),
        e.call("round", &[f(3.14159), i(2)]),
    ];
    assert_eq!(e.print(&m), "4.0 2 3 2 3.14\n");
    let big = ops::binary(BinOp::Add, &i(i64::MAX), &i(1)).err().map(|x| x.kind);
    assert_eq!(big, Some(ErrorKind::OverflowError));
}

#[test]
fn strings_program() {
    let mut e = Env::new();
    let st = s("héllo wörld");
    let n = e.call("len", std::slice::from_ref(&st));
    let line = [
        n,
        ok(ops::get_index(&st, &i(1))),
        ok(ops::get_index(&st, &i(-1))),
        ok(ops::get_index(&st, &sl(i(0), i(5), Value::None))),
    ];
    assert_eq!(e.print(&line), "11 é d héllo\n");
    let up = e.meth(&st, "upper", &[]);
    assert_eq!(e.print(&[up]), "HÉLLO WÖRLD\n");
    let parts = e.meth(&s("a,b,,c"), "split", &[s(",")]);
    let joined = e.meth(&s("-"), "join", &[Value::list(vec![s("x"), s("y"), s("z")])]);
    assert_eq!(e.print(&[parts, joined]), "['a', 'b', '', 'c'] x-y-z\n");
    let stripped = e.meth(&s("  pad  "), "strip", &[]);
    assert_eq!(
        e.print(&[b(BinOp::Add, stripped, s("!")), b(BinOp::Mul, s("abc"), i(3))]),
        "pad! abcabcabc\n"
    );
    let inn = Value::Bool(ok(ops::compare(CmpOp::In, &s("b"), &s("abc"))));
    let sw = e.meth(&s("abc"), "startswith", &[s("ab")]);
    let rp = e.meth(&s("abc"), "replace", &[s("b"), s("B")]);
    assert_eq!(e.print(&[inn, sw, rp]), "true true aBc\n");
    let s15 = e.call("str", &[f(1.5)]);
    let s2 = e.call("str", &[i(2)]);
    let mixed = Value::list(vec![s("a"), i(1), f(2.0), Value::None, Value::Bool(true)]);
    assert_eq!(
        e.print(&[b(BinOp::Add, s15, s2), mixed]),
        "1.52 ['a', 1, 2.0, none, true]\n"
    );
}

#[test]
fn control_and_collections_programs() {
    let mut e = Env::new();
    let r = e.call("range", &[i(10), i(0), i(-3)]);
    let l = e.call("list", &[r]);
    assert_eq!(e.print(&[l]), "[10, 7, 4, 1]\n");
    let en = e.call("enumerate", &[s("ab")]);
    assert_eq!(e.print(&[en]), "[(0, 'a'), (1, 'b')]\n");
    let z = e.call(
        "zip",
        &[Value::list(vec![i(1), i(2), i(3)]), Value::list(vec![s("x"), s("y")])],
    );
    assert_eq!(e.print(&[z]), "[(1, 'x'), (2, 'y')]\n");

    let xs = Value::list(vec![i(9), i(3), i(1), i(2)]);
    let sorted = e.call("sorted", std::slice::from_ref(&xs));
    let by_neg = e.call_kw("sorted", std::slice::from_ref(&xs), &[("key", native("neg", neg_key))]);
    assert_eq!(e.print(&[sorted, by_neg]), "[1, 2, 3, 9] [9, 3, 2, 1]\n");
    let a = ok(ops::get_index(&xs, &sl(i(1), i(3), Value::None)));
    let rev = ok(ops::get_index(&xs, &sl(Value::None, Value::None, i(-1))));
    assert_eq!(e.print(&[a, rev]), "[3, 1] [2, 1, 3, 9]\n");

    let d = Value::empty_dict();
    ok(ops::set_index(&d, &s("b"), i(2)));
    ok(ops::set_index(&d, &s("a"), i(1)));
    ok(ops::set_index(&d, &s("c"), i(3)));
    assert_eq!(e.print(std::slice::from_ref(&d)), "{'b': 2, 'a': 1, 'c': 3}\n");
    let keys = e.meth(&d, "keys", &[]);
    let keys = e.call("list", &[keys]);
    let got = e.meth(&d, "get", &[s("z"), i(0)]);
    let has = Value::Bool(ok(ops::compare(CmpOp::In, &s("a"), &d)));
    assert_eq!(e.print(&[keys, got, has]), "['b', 'a', 'c'] 0 true\n");
    let t = Value::tuple(vec![i(1), s("two"), f(3.0)]);
    let n = e.call("len", std::slice::from_ref(&t));
    assert_eq!(e.print(&[s("two"), n, t]), "two 3 (1, 'two', 3.0)\n");
    let total = e.call("sum", &[Value::list(vec![f(0.5), f(1.5)])]);
    let prod = e.call(
        "reduce",
        &[Value::list(vec![i(1), i(2), i(3), i(4)]), native("mul", mul), i(1)],
    );
    assert_eq!(e.print(&[total, prod]), "2.0 24\n");
}

#[test]
fn pipes_and_errors_programs() {
    let mut e = Env::new();
    let xs = Value::list((1..=5).map(i).collect());
    let odds = e.call("filter", &[xs, native("odd", odd)]);
    let r = e.call("map", &[odds, native("times10", times10)]);
    assert_eq!(e.print(&[r]), "[10, 30, 50]\n");
    // Python's argument order is accepted too.
    let r = e.call("map", &[native("times10", times10), Value::list(vec![i(1)])]);
    assert_eq!(e.print(&[r]), "[10]\n");

    let err = ops::get_index(&Value::list(vec![i(1), i(2), i(3)]), &i(5))
        .err()
        .map(Value::Error);
    let err = err.unwrap_or(Value::None);
    let kind = ok(ops::get_attr(&err, "kind"));
    assert_eq!(e.print(&[s("index:"), kind]), "index: IndexError\n");
    let zero = ops::binary(BinOp::Div, &i(1), &i(0)).err().map(|x| x.kind);
    assert_eq!(zero, Some(ErrorKind::ZeroDivisionError));
    let key = ops::get_index(&Value::empty_dict(), &s("missing"))
        .err()
        .map(|x| x.kind);
    assert_eq!(key, Some(ErrorKind::KeyError));
    let ve = ok(e.c.call(
        &Value::Native(Arc::new(apsi_core::value::NativeFn::new("mk", |_c, _a, _k| {
            Ok(Value::Error(apsi_core::value::ErrorObj::new(
                ErrorKind::ValueError,
                "base",
            )))
        }))),
        &[],
        &[],
    ));
    let as_str = e.call("str", &[ve]);
    assert_eq!(e.print(&[as_str]), "ValueError: base\n");
}

#[test]
fn printing_program() {
    let mut e = Env::new();
    let line = [f(1.0), f(0.1), f(1e-10), f(1.5e300), f(-0.0), b(BinOp::Div, i(1), i(3))];
    assert_eq!(e.print(&line), "1.0 0.1 1e-10 1.5e+300 -0.0 0.3333333333333333\n");
    let inf = e.get("inf");
    let line = [
        inf.clone(),
        ok(ops::unary(UnaryOp::Neg, &inf)),
        e.get("nan"),
        b(BinOp::Pow, f(2.0), f(0.5)),
        f(1e16),
        f(123456789.0),
    ];
    assert_eq!(e.print(&line), "inf -inf nan 1.4142135623730951 1e+16 123456789.0\n");
    let kw = [("sep", s(", ")), ("end", s("!\n"))];
    let out = {
        e.c.out.clear();
        e.call_kw("print", &[i(1), i(2)], &kw);
        std::mem::take(&mut e.c.out)
    };
    assert_eq!(out, "1, 2!\n");
}
