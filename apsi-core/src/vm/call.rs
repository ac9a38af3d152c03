//! Calling conventions off the fast path: binding arguments to parameters
//! with Python's rules and messages, struct construction, error values,
//! unpacking and `except` matching.

use super::exec::Args;
use crate::code::TypeCheck;
use crate::error::ErrorKind;
use crate::value::function::Closure;
use crate::value::*;
use crate::{format, ops};
use std::sync::Arc;

fn type_err(msg: String) -> Exc {
    err(ErrorKind::TypeError, msg)
}

pub(super) use crate::text::name_list;

/// Bind positional and keyword arguments to the parameter slots of `f`
/// (register order: positional, `*args`, keyword-only, `**kwargs`).
pub(crate) fn bind_args(f: &Closure, pos: Args, kw: Vec<(Arc<str>, Value)>) -> VResult<Args> {
    let p = &f.proto;
    let name = &*p.name;
    let np = p.nparams as usize;
    let nkw = p.nkwonly as usize;
    let va = p.has_vararg as usize;
    // A plain function given exactly its positional parameters (an
    // operator method called by a list scan, a sort key, a `map` lambda):
    // the arguments are the slots.
    if p.simple && kw.is_empty() && pos.len() == np {
        return Ok(pos);
    }
    let nslots = p.nslots();
    let mut slots: SmallVecOpt = (0..nslots).map(|_| None).collect();
    let npos = pos.len();
    let mut extra = Vec::new();
    for (i, v) in pos.into_iter().enumerate() {
        if i < np {
            slots[i] = Some(v);
        } else if p.has_vararg {
            extra.push(v);
        } else {
            let nd = p.ndefaults as usize;
            let takes = if nd > 0 {
                format!("from {} to {}", np - nd, np)
            } else {
                np.to_string()
            };
            let word = if np == 1 && nd == 0 {
                "positional argument"
            } else {
                "positional arguments"
            };
            let given = if npos == 1 { "was" } else { "were" };
            return Err(type_err(format!(
                "{name}() takes {takes} {word} but {npos} {given} given"
            )));
        }
    }
    let mut kwdict = DictMap::new();
    for (k, v) in kw {
        let idx = p.param_names.iter().position(|n| **n == *k);
        let ok = match idx {
            Some(i) if i < np => Some(i),
            Some(i) if i >= np + va && i < np + va + nkw => Some(i),
            _ => None,
        };
        match ok {
            Some(i) => {
                if slots[i].is_some() {
                    return Err(type_err(format!("{name}() got multiple values for argument '{k}'")));
                }
                slots[i] = Some(v);
            }
            None if p.has_kwarg => {
                kwdict.insert(HashKey::new(Value::str(&*k))?, v);
            }
            None => return Err(type_err(format!("{name}() got an unexpected keyword argument '{k}'"))),
        }
    }
    let nd = p.ndefaults as usize;
    let mut missing = Vec::new();
    for i in 0..np {
        if slots[i].is_none() {
            if i + nd >= np {
                slots[i] = f.defaults.get(i + nd - np).cloned();
            }
            if slots[i].is_none() {
                missing.push(&*p.param_names[i]);
            }
        }
    }
    if !missing.is_empty() {
        return Err(type_err(format!(
            "{name}() missing {} positional argument{}: {}",
            missing.len().to_string() + " required",
            if missing.len() == 1 { "" } else { "s" },
            name_list(&missing)
        )));
    }
    if p.has_vararg {
        slots[np] = Some(Value::tuple(extra));
    }
    let mut missing_kw = Vec::new();
    for j in 0..nkw {
        let i = np + va + j;
        if slots[i].is_none() {
            slots[i] = f.kwdefaults.get(j).cloned().flatten();
            if slots[i].is_none() {
                missing_kw.push(&*p.param_names[i]);
            }
        }
    }
    if !missing_kw.is_empty() {
        return Err(type_err(format!(
            "{name}() missing {} required keyword-only argument{}: {}",
            missing_kw.len(),
            if missing_kw.len() == 1 { "" } else { "s" },
            name_list(&missing_kw)
        )));
    }
    if p.has_kwarg {
        slots[nslots - 1] = Some(Value::dict(kwdict));
    }
    let mut dims = crate::tensor::annot::Dims::default(); // `Tensor[N]` names bound by this call
    for &(i, check) in p.checks.iter() {
        if let Some(Some(v)) = slots.get_mut(i as usize) {
            if let TypeCheck::Tensor(id) = check {
                *v = crate::tensor::annot::check(name, &p.param_names[i as usize], id, v, &mut dims)?;
                continue;
            }
            check_type(name, &p.param_names[i as usize], check, v)?;
        }
    }
    Ok(slots.into_iter().map(|s| s.unwrap_or(Value::None)).collect())
}

type SmallVecOpt = smallvec::SmallVec<[Option<Value>; 8]>;

fn check_type(fname: &str, param: &str, check: TypeCheck, v: &Value) -> VResult<()> {
    if crate::ops::accepts(check, v) {
        Ok(())
    } else {
        Err(type_err(format!(
            "{fname}() argument '{param}' must be {}, not {}",
            check.name(),
            v.type_name()
        )))
    }
}

/// `ValueError("message")`
pub(crate) fn make_error(kind: ErrorKind, pos: &[Value], kw: &[(Arc<str>, Value)]) -> VResult<Value> {
    if let Some((k, _)) = kw.first() {
        return Err(type_err(format!(
            "{}() got an unexpected keyword argument '{k}'",
            kind.name()
        )));
    }
    if pos.len() > 1 {
        return Err(type_err(format!(
            "{}() takes at most 1 argument (the message) but {} were given",
            kind.name(),
            pos.len()
        )));
    }
    if kind == ErrorKind::StopIteration {
        // `StopIteration(v)`: `e.value` is v (none without an argument).
        return Ok(Value::Error(crate::ops::iters::stop_iteration(
            pos.first().cloned().unwrap_or(Value::None),
        )));
    }
    let msg = pos.first().map(format::str_of).unwrap_or_default();
    Ok(Value::Error(ErrorObj::new(kind, msg)))
}

/// An int operand of `range`/`..`.
pub(crate) fn range_int(v: &Value) -> VResult<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Bool(b) => Ok(*b as i64),
        other => Err(type_err(format!("range needs int bounds, found {}", other.type_name()))),
    }
}

/// Unpack `src` into exactly `n` values, or with `after = Some(m)` into `n`
/// values, a list of the rest, and `m` values.
pub(crate) fn unpack(c: &mut dyn Caller, src: &Value, n: usize, after: Option<usize>) -> VResult<Vec<Value>> {
    let items: Vec<Value> = match src {
        Value::Tuple(t) => t.0.to_vec(),
        Value::List(l) => l.items.read().clone(),
        other => match ops::iterate(c, other) {
            Ok(v) => v,
            // (A generator's own TypeError passes through unchanged.)
            Err(e) if e.kind == ErrorKind::TypeError && !ops::iters::is_iterator(other) => {
                return Err(type_err(format!(
                    "cannot unpack a non-iterable {} value",
                    other.type_name()
                )));
            }
            Err(e) => return Err(e),
        },
    };
    match after {
        None => {
            if items.len() != n {
                if items.len() > n {
                    return Err(err(
                        ErrorKind::ValueError,
                        format!("too many values to unpack (expected {n})"),
                    ));
                }
                return Err(err(
                    ErrorKind::ValueError,
                    format!("not enough values to unpack (expected {n}, got {})", items.len()),
                ));
            }
            Ok(items)
        }
        Some(m) => {
            if items.len() < n + m {
                return Err(err(
                    ErrorKind::ValueError,
                    format!(
                        "not enough values to unpack (expected at least {}, got {})",
                        n + m,
                        items.len()
                    ),
                ));
            }
            let mut items = items;
            let tail = items.split_off(items.len() - m);
            let mid = items.split_off(n);
            items.push(Value::list(mid));
            items.extend(tail);
            Ok(items)
        }
    }
}

/// Does `except kinds` catch `e`? (`kinds` is NO_REG-as-none for a bare except.)
pub(crate) fn error_matches(e: &ErrorObj, kinds: &Value) -> VResult<bool> {
    if e.exit.is_some() {
        return Ok(false);
    }
    match kinds {
        Value::Kind(k) => Ok(k.catches(e.kind)),
        Value::StructType(t) if t.error_kind.is_some() => Ok(match &e.payload {
            Some(Value::Struct(s)) => s.ty.descends_from(t),
            _ => false,
        }),
        Value::Tuple(t) => {
            for k in t.0.iter() {
                if error_matches(e, k)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        Value::StructType(t) => Err(type_err(format!(
            "except needs an error kind, and '{}' is not one (declare it as 'struct {}(Error):')",
            t.name, t.name
        ))),
        other => Err(type_err(format!(
            "except needs an error kind such as ValueError, not {}",
            other.type_name()
        ))),
    }
}
