//! Converting Apsi values into the numbers a plot draws: tensors of any
//! dtype (converted to f64) and lists, tuples or ranges of numbers.

use apsi_core::api::tensor::as_tensor;
use apsi_core::api::{err, ErrorKind, Exc, VResult, Value};

/// The `TypeError` for argument `param` of `who`: `want` expected, `got` found.
pub fn wrong(who: &str, param: &str, want: &str, got: &Value) -> Exc {
    err(
        ErrorKind::TypeError,
        format!("{who}() argument '{param}' must be {want}, not {}", got.type_name()),
    )
}

/// One number (an int, bool, float or a one-element tensor).
pub fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        Value::Float(f) => Some(*f),
        other => match as_tensor(other) {
            Some(t) if t.size() == 1 => Some(t.to_vec::<f64>()[0]),
            _ => None,
        },
    }
}

/// The items of a list, tuple or range (`None` for anything else).
fn items(v: &Value) -> Option<Vec<Value>> {
    match v {
        Value::List(l) => Some(l.items.read().clone()),
        Value::Tuple(t) => Some(t.0.to_vec()),
        Value::Range(r) => {
            let n = r.len().max(0);
            if n > 100_000_000 {
                return None;
            }
            Some((0..n).map(|i| Value::Int(r.start + r.step * i)).collect())
        }
        _ => None,
    }
}

const SEQ: &str = "a 1-D tensor or a list of numbers";

/// A 1-D sequence of numbers: a 1-D tensor (any dtype), or a list, tuple
/// or range of numbers. Empty is an error (`ValueError`).
pub fn floats(who: &str, param: &str, v: &Value) -> VResult<Vec<f64>> {
    let out = if let Some(t) = as_tensor(v) {
        if t.ndim() != 1 {
            return Err(err(
                ErrorKind::ShapeError,
                format!(
                    "{who}() argument '{param}' must be a 1-D tensor, but its shape is {:?}",
                    t.shape()
                ),
            ));
        }
        t.to_vec::<f64>()
    } else if let Some(xs) = items(v) {
        let mut out = Vec::with_capacity(xs.len());
        for (i, x) in xs.iter().enumerate() {
            match number(x) {
                Some(f) => out.push(f),
                None => {
                    return Err(err(
                        ErrorKind::TypeError,
                        format!(
                            "{who}() argument '{param}' must be {SEQ}, but item {i} is {}",
                            x.type_name()
                        ),
                    ))
                }
            }
        }
        out
    } else {
        return Err(wrong(who, param, SEQ, v));
    };
    if out.is_empty() {
        return Err(err(
            ErrorKind::ValueError,
            format!("{who}() argument '{param}' is empty: there is nothing to plot"),
        ));
    }
    Ok(out)
}

/// A list of strings (bar categories), or `None` when `v` is not one.
pub fn strings(v: &Value) -> Option<Vec<String>> {
    let xs = items(v)?;
    if xs.is_empty() {
        return None;
    }
    xs.iter()
        .map(|x| match x {
            Value::Str(s) => Some(s.as_str().to_string()),
            _ => None,
        })
        .collect()
}

/// A 2-D grid of numbers: a 2-D tensor, or a list of equally long lists
/// of numbers. Returns (rows, cols, row-major values).
pub fn matrix(who: &str, param: &str, v: &Value) -> VResult<(usize, usize, Vec<f64>)> {
    const WANT: &str = "a 2-D tensor or a list of lists of numbers";
    let (rows, cols, data) = if let Some(t) = as_tensor(v) {
        if t.ndim() != 2 {
            return Err(err(
                ErrorKind::ShapeError,
                format!(
                    "{who}() argument '{param}' must be a 2-D tensor, but its shape is {:?}",
                    t.shape()
                ),
            ));
        }
        (t.shape()[0], t.shape()[1], t.to_vec::<f64>())
    } else if let Some(rows) = items(v) {
        let mut data = Vec::new();
        let mut cols = None;
        for (i, r) in rows.iter().enumerate() {
            let row = match r {
                Value::List(_) | Value::Tuple(_) => floats(who, param, r)?,
                other => return Err(wrong(who, param, WANT, other)),
            };
            match cols {
                None => cols = Some(row.len()),
                Some(c) if c != row.len() => {
                    return Err(err(
                        ErrorKind::ShapeError,
                        format!(
                            "{who}() argument '{param}': row {i} has {} values, row 0 has {c}",
                            row.len()
                        ),
                    ))
                }
                _ => {}
            }
            data.extend(row);
        }
        (rows.len(), cols.unwrap_or(0), data)
    } else {
        return Err(wrong(who, param, WANT, v));
    };
    if rows == 0 || cols == 0 {
        return Err(err(
            ErrorKind::ValueError,
            format!("{who}() argument '{param}' is empty (shape [{rows}, {cols}]): there is nothing to draw"),
        ));
    }
    if rows * cols > 4_000_000 {
        return Err(err(
            ErrorKind::ValueError,
            format!("{who}() argument '{param}' has {rows}x{cols} cells; at most 4,000,000 can be drawn"),
        ));
    }
    Ok((rows, cols, data))
}

/// Checks that `x` and `y` have the same length.
pub fn same_len(who: &str, x: &[f64], y: &[f64], xn: &str, yn: &str) -> VResult<()> {
    if x.len() != y.len() {
        return Err(err(
            ErrorKind::ShapeError,
            format!(
                "{who}(): '{xn}' and '{yn}' must have the same length, but '{xn}' has {} values and '{yn}' has {}",
                x.len(),
                y.len()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ranges_convert() {
        let l = Value::list(vec![Value::Int(1), Value::Float(2.5), Value::Bool(true)]);
        assert_eq!(floats("f", "x", &l).unwrap(), vec![1.0, 2.5, 1.0]);
        let e = floats("f", "x", &Value::list(vec![])).unwrap_err();
        assert!(e.message.contains("is empty"), "{}", e.message);
        let e = floats("f", "x", &Value::list(vec![Value::str("a")])).unwrap_err();
        assert_eq!(
            e.message,
            "f() argument 'x' must be a 1-D tensor or a list of numbers, but item 0 is str"
        );
        let e = floats("f", "x", &Value::str("a")).unwrap_err();
        assert_eq!(e.kind, ErrorKind::TypeError);
    }

    #[test]
    fn ragged_rows_are_a_shape_error() {
        let r = |xs: &[i64]| Value::list(xs.iter().map(|&i| Value::Int(i)).collect());
        let m = Value::list(vec![r(&[1, 2]), r(&[3, 4])]);
        assert_eq!(matrix("f", "z", &m).unwrap(), (2, 2, vec![1.0, 2.0, 3.0, 4.0]));
        let bad = Value::list(vec![r(&[1, 2]), r(&[3])]);
        let e = matrix("f", "z", &bad).unwrap_err();
        assert_eq!(e.kind, ErrorKind::ShapeError);
        assert!(e.message.contains("row 1 has 1 values, row 0 has 2"), "{}", e.message);
    }
}
