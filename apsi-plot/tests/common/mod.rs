//! Building figures through the module's own functions and methods, as an
//! Apsi program does (`NoCaller` stands in for the interpreter).
#![allow(dead_code)]

use apsi_core::api::{Caller, Kwargs, NoCaller, VResult, Value};
use std::sync::Arc;

pub fn module_fn(name: &str, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let m = apsi_plot::module();
    let f = m.get(name).unwrap_or_else(|| panic!("plot has no {name}"));
    NoCaller.call(f, args, kw)
}

pub fn figure(w: i64, h: i64) -> Value {
    module_fn("figure", &[Value::Int(w), Value::Int(h)], &[]).unwrap()
}

/// `recv.method(*args, **kw)`.
pub fn call(recv: &Value, method: &str, args: &[Value], kw: &[(&str, Value)]) -> VResult<Value> {
    let bound = match recv {
        Value::Object(o) => {
            o.0.get_attr(recv, method)
                .unwrap_or_else(|| panic!("no method {method}"))?
        }
        other => panic!("not an object: {}", other.type_name()),
    };
    let kw: Vec<(Arc<str>, Value)> = kw.iter().map(|(k, v)| (Arc::from(*k), v.clone())).collect();
    NoCaller.call(&bound, args, &kw)
}

pub fn ok(recv: &Value, method: &str, args: &[Value], kw: &[(&str, Value)]) -> Value {
    call(recv, method, args, kw).unwrap_or_else(|e| panic!("{method}: {}", e.message))
}

pub fn nums(xs: &[f64]) -> Value {
    Value::list(xs.iter().map(|&x| Value::Float(x)).collect())
}

pub fn s(x: &str) -> Value {
    Value::str(x)
}

pub fn linspace(a: f64, b: f64, n: usize) -> Vec<f64> {
    (0..n).map(|i| a + (b - a) * i as f64 / (n - 1) as f64).collect()
}

/// A fixed stream of pseudo-random numbers in 0..1 (the same on every machine).
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    /// About normal (the sum of 12 uniforms, less 6).
    pub fn normal(&mut self) -> f64 {
        (0..12).map(|_| self.next()).sum::<f64>() - 6.0
    }
}
