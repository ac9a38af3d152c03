//! Turning items into batches and back: `batch` stacks numbers and tensors
//! into tensors (per position of a tuple, per key of a dict), `unbatch`
//! splits along the first axis, and rows are counted for `throughput`.

use apsi_core::api::tensor::Layout;
use apsi_core::api::tensor::Tensor;
use apsi_core::api::tensor::{as_tensor, tensor_value};
use apsi_core::api::ErrorKind;
use apsi_core::api::{err, VResult, Value};

/// Rows `lo..hi` of `t` along its first axis, as a view (no copy).
pub fn rows(t: &Tensor, lo: usize, hi: usize) -> Tensor {
    let mut l: Layout = t.layout.clone();
    if let (Some(d), Some(&st)) = (l.shape.first_mut(), t.layout.strides.first()) {
        *d = hi.saturating_sub(lo);
        l.offset = (t.layout.offset as isize + st * lo as isize).max(0) as usize;
    }
    t.view(l)
}

/// Row `i` of `t` (its first axis removed), as a view.
pub fn row(t: &Tensor, i: usize) -> Tensor {
    let mut l = Layout {
        shape: t.layout.shape.iter().skip(1).copied().collect(),
        strides: t.layout.strides.iter().skip(1).copied().collect(),
        offset: t.layout.offset,
    };
    if let Some(&st) = t.layout.strides.first() {
        l.offset = (t.layout.offset as isize + st * i as isize).max(0) as usize;
    }
    t.view(l)
}

/// The rows of `t` at `idx` (in that order), copied into a new tensor.
pub fn take_rows(t: &Tensor, idx: &[usize]) -> VResult<Tensor> {
    let mut shape = t.shape().to_vec();
    let Some(first) = shape.first_mut() else {
        return Err(err(ErrorKind::ShapeError, "cannot take rows of a 0-d tensor"));
    };
    *first = idx.len();
    let row_len: usize = t.shape().iter().skip(1).product();
    let dense_rows = t
        .layout
        .strides
        .iter()
        .skip(1)
        .copied()
        .eq(apsi_core::api::tensor::row_major_strides(&shape[1..]));
    if dense_rows {
        let st = t.layout.strides.first().copied().unwrap_or(0);
        let base = t.layout.offset as isize;
        let out = apsi_core::api::tensor::with_dtype!(t.dtype, T => Some(t.with_slice::<T, _>(|s, _| {
            let mut v: Vec<T> = Vec::with_capacity(idx.len() * row_len);
            for &i in idx {
                let o = (base + st * i as isize).max(0) as usize;
                v.extend_from_slice(s.get(o..o + row_len).unwrap_or(&[]));
            }
            (v.len() == idx.len() * row_len).then(|| Tensor::from_vec(v, shape.clone()))
        })), other => None);
        if let Some(Some(r)) = out {
            return Ok(r);
        }
    }
    let parts: Vec<Tensor> = idx.iter().map(|&i| rows(t, i, i + 1)).collect();
    if parts.is_empty() {
        return Tensor::full(shape, 0.0, t.dtype);
    }
    apsi_core::api::tensor::concat(&parts, 0)
}

/// Stacks a batch of items into one value.
pub fn stack(items: Vec<Value>) -> VResult<Value> {
    let Some(first) = items.first() else {
        return Ok(Value::list(Vec::new()));
    };
    match first {
        Value::Int(_) | Value::Bool(_) | Value::Float(_) => stack_numbers(&items),
        Value::Tuple(t) => {
            let n = t.0.len();
            let mut cols: Vec<Vec<Value>> = (0..n).map(|_| Vec::with_capacity(items.len())).collect();
            for it in &items {
                match it {
                    Value::Tuple(u) if u.0.len() == n => {
                        for (c, v) in cols.iter_mut().zip(u.0.iter()) {
                            c.push(v.clone());
                        }
                    }
                    other => {
                        return Err(err(
                            ErrorKind::TypeError,
                            format!(
                                "batch() needs items of one structure: a tuple of {n} then a {}",
                                describe(other)
                            ),
                        ))
                    }
                }
            }
            Ok(Value::tuple(cols.into_iter().map(stack).collect::<VResult<_>>()?))
        }
        Value::Dict(d) => {
            let keys: Vec<Value> = d.map.read().keys().map(|k| k.value().clone()).collect();
            let out = Value::dict(apsi_core::api::DictMap::new());
            for k in keys {
                let hk = apsi_core::api::hash_key(&k)?;
                let mut col = Vec::with_capacity(items.len());
                for it in &items {
                    let v = match it {
                        Value::Dict(e) => e.map.read().get(&hk).cloned(),
                        _ => None,
                    };
                    col.push(v.ok_or_else(|| {
                        err(
                            ErrorKind::TypeError,
                            format!(
                                "batch() needs dicts with the same keys; one has no key {}",
                                apsi_core::api::repr_of(&k)
                            ),
                        )
                    })?);
                }
                if let Value::Dict(o) = &out {
                    o.map.write().insert(hk, stack(col)?);
                }
            }
            Ok(out)
        }
        v if as_tensor(v).is_some() => {
            let ts: Vec<Tensor> = items
                .iter()
                .map(|v| {
                    as_tensor(v).ok_or_else(|| {
                        err(
                            ErrorKind::TypeError,
                            format!("batch() needs items of one kind: a Tensor then a {}", describe(v)),
                        )
                    })
                })
                .collect::<VResult<_>>()?;
            Ok(tensor_value(apsi_core::api::tensor::stack(&ts, 0)?))
        }
        _ => Ok(Value::list(items)),
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::Tuple(t) => format!("tuple of {}", t.0.len()),
        other => other.type_name().to_string(),
    }
}

fn stack_numbers(items: &[Value]) -> VResult<Value> {
    let n = items.len();
    let (mut any_float, mut all_bool) = (false, true);
    for v in items {
        match v {
            Value::Float(_) => {
                any_float = true;
                all_bool = false
            }
            Value::Int(_) => all_bool = false,
            Value::Bool(_) => {}
            other => {
                return Err(err(
                    ErrorKind::TypeError,
                    format!("batch() needs items of one kind: a number then a {}", describe(other)),
                ))
            }
        }
    }
    let t = if all_bool {
        Tensor::from_vec(
            items
                .iter()
                .map(|v| matches!(v, Value::Bool(true)))
                .collect::<Vec<bool>>(),
            vec![n],
        )
    } else if any_float {
        Tensor::from_vec(items.iter().map(num_f64).collect::<Vec<f64>>(), vec![n])
    } else {
        Tensor::from_vec(
            items
                .iter()
                .map(|v| match v {
                    Value::Int(i) => *i,
                    Value::Bool(b) => *b as i64,
                    _ => 0,
                })
                .collect::<Vec<i64>>(),
            vec![n],
        )
    };
    Ok(tensor_value(t))
}

fn num_f64(v: &Value) -> f64 {
    match v {
        Value::Float(f) => *f,
        Value::Int(i) => *i as f64,
        Value::Bool(b) => *b as u8 as f64,
        _ => f64::NAN,
    }
}

/// The items of a batch, in order: rows of a tensor, elements of a list,
/// tuples of rows of a tuple, dicts of rows of a dict.
pub fn unstack(v: &Value) -> VResult<Vec<Value>> {
    if let Some(t) = as_tensor(v) {
        let Some(&n) = t.shape().first() else {
            return Err(err(ErrorKind::ShapeError, "unbatch() cannot split a 0-d tensor"));
        };
        return Ok((0..n)
            .map(|i| apsi_core::api::tensor::result_value(row(&t, i)))
            .collect());
    }
    match v {
        Value::List(l) => Ok(l.items.read().clone()),
        Value::Tuple(t) => {
            let cols: Vec<Vec<Value>> = t.0.iter().map(unstack).collect::<VResult<_>>()?;
            let n = cols.first().map_or(0, |c| c.len());
            if cols.iter().any(|c| c.len() != n) {
                return Err(err(
                    ErrorKind::ShapeError,
                    "unbatch() needs the parts of a tuple to have the same length",
                ));
            }
            Ok((0..n)
                .map(|i| Value::tuple(cols.iter().filter_map(|c| c.get(i).cloned()).collect()))
                .collect())
        }
        Value::Dict(d) => {
            let entries: Vec<(Value, Vec<Value>)> = d
                .map
                .read()
                .iter()
                .map(|(k, v)| Ok((k.value().clone(), unstack(v)?)))
                .collect::<VResult<_>>()?;
            let n = entries.first().map_or(0, |e| e.1.len());
            if entries.iter().any(|e| e.1.len() != n) {
                return Err(err(
                    ErrorKind::ShapeError,
                    "unbatch() needs the values of a dict to have the same length",
                ));
            }
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                let o = Value::dict(apsi_core::api::DictMap::new());
                if let Value::Dict(m) = &o {
                    let mut w = m.map.write();
                    for (k, col) in &entries {
                        w.insert(apsi_core::api::hash_key(k)?, col.get(i).cloned().unwrap_or(Value::None));
                    }
                }
                out.push(o);
            }
            Ok(out)
        }
        other => Err(err(
            ErrorKind::TypeError,
            format!(
                "unbatch() needs batches (tensors, lists, tuples or dicts), found {}",
                other.type_name()
            ),
        )),
    }
}

/// How many samples an item holds: the first axis of a tensor, the length
/// of a list, the rows of a tuple's or dict's first part; 1 otherwise.
pub fn count_rows(v: &Value) -> u64 {
    if let Some(t) = as_tensor(v) {
        return t.shape().first().map_or(1, |&n| n as u64);
    }
    match v {
        Value::List(l) => l.items.read().len() as u64,
        Value::Tuple(t) => t.0.first().map_or(1, count_rows),
        Value::Dict(d) => d.map.read().values().next().map_or(1, count_rows),
        _ => 1,
    }
}
