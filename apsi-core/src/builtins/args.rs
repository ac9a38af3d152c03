//! The one argument parser of native functions: the prelude's, the
//! tensor functions' and every `use` module's (through `apsi_core::api`).

use crate::error::ErrorKind;
use crate::value::{err, Exc, Kwargs, VResult, Value};

/// The arguments of one native call, checked against a signature.
pub struct Args<'a> {
    pub name: &'static str,
    pub pos: &'a [Value],
    pub kw: Kwargs<'a>,
    /// Parameter names, in positional order (keywords may name them too).
    params: &'static [&'static str],
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

impl<'a> Args<'a> {
    /// Checks arity (`min..=max` positional) and that every keyword names a
    /// parameter not already given by position.
    pub fn new(
        name: &'static str,
        pos: &'a [Value],
        kw: Kwargs<'a>,
        min: usize,
        params: &'static [&'static str],
    ) -> VResult<Args<'a>> {
        let max = params.len();
        if pos.len() > max {
            let expect = if min == max {
                format!("{max}")
            } else {
                format!("at most {max}")
            };
            return Err(err(
                ErrorKind::TypeError,
                format!("{name}() takes {expect} argument{} ({} given)", plural(max), pos.len()),
            ));
        }
        for (k, _) in kw {
            match params.iter().position(|p| *p == &**k) {
                Some(i) if i < pos.len() => {
                    return Err(err(
                        ErrorKind::TypeError,
                        format!("{name}() got multiple values for argument '{k}'"),
                    ));
                }
                Some(_) => {}
                None => {
                    return Err(err(
                        ErrorKind::TypeError,
                        format!("{name}() got an unexpected keyword argument '{k}'"),
                    ));
                }
            }
        }
        let a = Args { name, pos, kw, params };
        for (i, p) in params.iter().enumerate().take(min) {
            if a.get(i).is_none() {
                return Err(err(
                    ErrorKind::TypeError,
                    format!("{name}() missing required argument '{p}'"),
                ));
            }
        }
        Ok(a)
    }

    /// Like [`Args::new`] with every parameter optional (a missing required
    /// one is reported by [`Args::req`] when it is read).
    pub fn optional(
        name: &'static str,
        pos: &'a [Value],
        kw: Kwargs<'a>,
        params: &'static [&'static str],
    ) -> VResult<Args<'a>> {
        Args::new(name, pos, kw, 0, params)
    }

    /// Parameter `i`, given by position or by keyword.
    pub fn get(&self, i: usize) -> Option<&'a Value> {
        if let Some(v) = self.pos.get(i) {
            return Some(v);
        }
        let p = self.params.get(i)?;
        self.kw.iter().find(|(k, _)| &**k == *p).map(|(_, v)| v)
    }

    /// Parameter `i`, treating an explicit `none` as absent.
    pub fn opt(&self, i: usize) -> Option<&'a Value> {
        self.get(i).filter(|v| !matches!(v, Value::None))
    }

    /// Parameter `i`, which must be present.
    pub fn req(&self, i: usize) -> VResult<&'a Value> {
        self.get(i).ok_or_else(|| {
            err(
                ErrorKind::TypeError,
                format!(
                    "{}() missing required argument '{}'",
                    self.name,
                    self.params.get(i).unwrap_or(&"?")
                ),
            )
        })
    }

    pub fn param(&self, i: usize) -> &'static str {
        self.params.get(i).copied().unwrap_or("argument")
    }

    pub fn int(&self, i: usize) -> VResult<i64> {
        expect_int(self.req(i)?, self.name, self.param(i))
    }
    pub fn int_or(&self, i: usize, default: i64) -> VResult<i64> {
        match self.opt(i) {
            Some(v) => expect_int(v, self.name, self.param(i)),
            None => Ok(default),
        }
    }
    pub fn float(&self, i: usize) -> VResult<f64> {
        expect_float(self.req(i)?, self.name, self.param(i))
    }
    pub fn str(&self, i: usize) -> VResult<&'a str> {
        expect_str(self.req(i)?, self.name, self.param(i))
    }
    pub fn bool_or(&self, i: usize, default: bool) -> VResult<bool> {
        match self.opt(i) {
            Some(v) => v.truthy(),
            None => Ok(default),
        }
    }
    /// A flag: absent or `none` is false.
    pub fn flag(&self, i: usize) -> VResult<bool> {
        self.bool_or(i, false)
    }
    /// An optional int (absent or `none` is `None`).
    pub fn int_opt(&self, i: usize) -> VResult<Option<i64>> {
        self.opt(i).map(|v| expect_int(v, self.name, self.param(i))).transpose()
    }
    /// An optional number (absent or `none` is `None`); a one-element
    /// tensor counts as its number.
    pub fn float_opt(&self, i: usize) -> VResult<Option<f64>> {
        match self.opt(i) {
            None => Ok(None),
            Some(Value::Int(n)) => Ok(Some(*n as f64)),
            Some(Value::Bool(b)) => Ok(Some(*b as u8 as f64)),
            Some(Value::Float(f)) => Ok(Some(*f)),
            Some(other) => match crate::tensor::as_tensor(other) {
                Some(t) if t.size() == 1 => Ok(Some(t.first_f64())),
                _ => Err(self.wrong(i, "a number", other)),
            },
        }
    }
    /// The `TypeError` for parameter `i`: `want` expected, `got` found.
    pub fn wrong(&self, i: usize, want: &str, got: &Value) -> Exc {
        wrong_type(self.name, self.param(i), want, got)
    }
}

pub(crate) fn wrong_type(func: &str, param: &str, want: &str, got: &Value) -> Exc {
    err(
        ErrorKind::TypeError,
        format!("{func}() argument '{param}' must be {want}, not {}", got.type_name()),
    )
}

pub(crate) fn expect_int(v: &Value, func: &str, param: &str) -> VResult<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Bool(b) => Ok(*b as i64),
        other => Err(wrong_type(func, param, "an int", other)),
    }
}

pub(crate) fn expect_float(v: &Value, func: &str, param: &str) -> VResult<f64> {
    match v {
        Value::Int(i) => Ok(*i as f64),
        Value::Bool(b) => Ok(*b as i64 as f64),
        Value::Float(f) => Ok(*f),
        other => Err(wrong_type(func, param, "a number", other)),
    }
}

pub(crate) fn expect_str<'v>(v: &'v Value, func: &str, param: &str) -> VResult<&'v str> {
    match v {
        Value::Str(s) => Ok(s.as_str()),
        other => Err(wrong_type(func, param, "a str", other)),
    }
}

/// Whether a value can be called.
pub(crate) fn is_callable(v: &Value) -> bool {
    matches!(
        v,
        Value::Func(_) | Value::Native(_) | Value::BoundMethod(_) | Value::StructType(_) | Value::Kind(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::ops::Must;
    use std::sync::Arc;

    #[test]
    fn arity_and_keywords() {
        let pos = [Value::Int(1)];
        let kw: Vec<(Arc<str>, Value)> = vec![("b".into(), Value::Int(2))];
        let a = Args::new("f", &pos, &kw, 1, &["a", "b"]).must();
        assert_eq!(a.int(1).must(), 2);
        let kw: Vec<(Arc<str>, Value)> = vec![("c".into(), Value::Int(2))];
        let e = Args::new("f", &pos, &kw, 1, &["a", "b"]).err().must();
        assert_eq!(e.message, "f() got an unexpected keyword argument 'c'");
        let e = Args::new("f", &[], &[], 1, &["a", "b"]).err().must();
        assert_eq!(e.message, "f() missing required argument 'a'");
        let three = [Value::Int(1), Value::Int(2), Value::Int(3)];
        let e = Args::new("f", &three, &[], 1, &["a", "b"]).err().must();
        assert_eq!(e.message, "f() takes at most 2 arguments (3 given)");
    }
}
