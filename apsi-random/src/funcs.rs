//! The functions of `use random`, following CPython 3.11's `Lib/random.py`
//! step by step (the same draws in the same order), with its messages.

use crate::mt::Mt;
use crate::state::{set_gen, with_gen, Gen};
use apsi_core::api::ErrorKind;
use apsi_core::api::{err, Caller, Kwargs, VResult, Value};

/// The parameters `names` of a call, by position or keyword (`None` when
/// absent); at least `min` must be given.
fn params<'a>(
    fname: &str,
    args: &'a [Value],
    kw: Kwargs<'a>,
    names: &[&str],
    min: usize,
) -> VResult<Vec<Option<&'a Value>>> {
    if args.len() > names.len() {
        return Err(err(
            ErrorKind::TypeError,
            format!(
                "{fname}() takes at most {} positional arguments ({} given)",
                names.len(),
                args.len()
            ),
        ));
    }
    let mut out: Vec<Option<&Value>> = args.iter().map(Some).collect();
    out.resize(names.len(), None);
    for (k, v) in kw {
        match names.iter().position(|n| *n == &**k) {
            Some(i) if out[i].is_some() => {
                return Err(err(
                    ErrorKind::TypeError,
                    format!("{fname}() got multiple values for argument '{k}'"),
                ))
            }
            Some(i) => out[i] = Some(v),
            None => {
                return Err(err(
                    ErrorKind::TypeError,
                    format!("{fname}() got an unexpected keyword argument '{k}'"),
                ))
            }
        }
    }
    if let Some(i) = out.iter().take(min).position(Option::is_none) {
        return Err(err(
            ErrorKind::TypeError,
            format!("{fname}() missing required argument '{}'", names[i]),
        ));
    }
    Ok(out)
}

fn real(v: &Value) -> VResult<f64> {
    match v {
        Value::Float(f) => Ok(*f),
        Value::Int(i) => Ok(*i as f64),
        Value::Bool(b) => Ok(f64::from(u8::from(*b))),
        other => Err(err(
            ErrorKind::TypeError,
            format!("must be real number, not {}", other.type_name()),
        )),
    }
}

/// An int argument of `randrange`, as CPython 3.11's: ints (and bools) as
/// they are, an integral float accepted (CPython warns), a fractional one a
/// `ValueError` naming the argument.
fn range_arg(v: &Value, what: &str) -> VResult<i128> {
    match v {
        Value::Int(i) => Ok(i128::from(*i)),
        Value::Bool(b) => Ok(i128::from(*b)),
        Value::Float(f) if f.is_nan() => Err(err(ErrorKind::ValueError, "cannot convert float NaN to integer")),
        Value::Float(f) if f.is_infinite() => Err(err(
            ErrorKind::OverflowError,
            "cannot convert float infinity to integer",
        )),
        Value::Float(f) if f.fract() != 0.0 => Err(err(
            ErrorKind::ValueError,
            format!("non-integer {what} for randrange()"),
        )),
        Value::Float(f) if f.abs() < 9.3e18 => Ok(*f as i128),
        Value::Float(_) => Err(err(
            ErrorKind::OverflowError,
            "randrange() argument does not fit in a 64-bit int",
        )),
        other => Err(err(
            ErrorKind::TypeError,
            format!("'{}' object cannot be interpreted as an integer", other.type_name()),
        )),
    }
}

/// `_randbelow(n)` on the current generator (`n >= 1`).
fn randbelow(n: u64) -> u64 {
    with_gen(|g| g.mt.randbelow(n))
}

/// A draw below `n` (a count that fits, as every length does).
fn below(n: i128) -> i128 {
    i128::from(randbelow(n as u64))
}

/// The int an in-range result always is.
fn int_value(v: i128) -> VResult<Value> {
    i64::try_from(v).map(Value::Int).map_err(|_| {
        err(
            ErrorKind::OverflowError,
            "randrange() result does not fit in a 64-bit int",
        )
    })
}

/// `seed(a=None)`: an int (a bool counts as 0 or 1, as in Python) or none
/// (the operating system's entropy).
pub fn seed(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let p = params("seed", args, kw, &["a"], 0)?;
    let mt = match p[0] {
        None | Some(Value::None) => Mt::from_os(),
        Some(Value::Int(n)) => Mt::from_int(*n),
        Some(Value::Bool(b)) => Mt::from_int(i64::from(*b)),
        Some(other) => {
            return Err(err(
                ErrorKind::TypeError,
                format!("random.seed() takes an int or none, not {}", other.type_name()),
            ))
        }
    };
    set_gen(Gen::new(mt));
    Ok(Value::None)
}

pub fn random(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    params("random", args, kw, &[], 0)?;
    Ok(Value::Float(with_gen(|g| g.mt.random())))
}

/// `getrandbits(k)`: `0 <= k <= 63` (Apsi ints are 64-bit).
pub fn getrandbits(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let p = params("getrandbits", args, kw, &["k"], 1)?;
    let k = match p[0] {
        Some(Value::Int(k)) => *k,
        Some(Value::Bool(b)) => i64::from(*b),
        Some(other) => {
            return Err(err(
                ErrorKind::TypeError,
                format!("'{}' object cannot be interpreted as an integer", other.type_name()),
            ))
        }
        None => 0,
    };
    if k < 0 {
        return Err(err(ErrorKind::ValueError, "number of bits must be non-negative"));
    }
    if k > 63 {
        return Err(err(
            ErrorKind::OverflowError,
            format!("getrandbits({k}) does not fit in a 64-bit int (Apsi ints are 64-bit: k is at most 63)"),
        ));
    }
    Ok(Value::Int(with_gen(|g| g.mt.getrandbits(k as u32)) as i64))
}

/// CPython 3.11's `randrange` on converted arguments.
fn randrange_i(start: i128, stop: Option<i128>, step: i128) -> VResult<i128> {
    let Some(stop) = stop else {
        if start > 0 {
            return Ok(below(start));
        }
        return Err(err(ErrorKind::ValueError, "empty range for randrange()"));
    };
    let width = stop - start;
    if step == 1 {
        if width > 0 {
            return Ok(start + below(width));
        }
        return Err(err(
            ErrorKind::ValueError,
            format!("empty range for randrange() ({start}, {stop}, {width})"),
        ));
    }
    let n = if step > 0 {
        floor_div(width + step - 1, step)
    } else if step < 0 {
        floor_div(width + step + 1, step)
    } else {
        return Err(err(ErrorKind::ValueError, "zero step for randrange()"));
    };
    if n <= 0 {
        return Err(err(ErrorKind::ValueError, "empty range for randrange()"));
    }
    Ok(start + step * below(n))
}

/// Python's `a // b`.
fn floor_div(a: i128, b: i128) -> i128 {
    let q = a / b;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

/// `randrange(stop)` / `randrange(start, stop[, step])`.
pub fn randrange(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let p = params("randrange", args, kw, &["start", "stop", "step"], 1)?;
    let start = range_arg(p[0].unwrap_or(&Value::None), "arg 1")?;
    let stop = match p[1] {
        None | Some(Value::None) => {
            if p[2].is_some() {
                return Err(err(ErrorKind::TypeError, "Missing a non-None stop argument"));
            }
            None
        }
        Some(v) => Some(range_arg(v, "stop")?),
    };
    let step = match p[2] {
        None => 1,
        Some(v) => range_arg(v, "step")?,
    };
    int_value(randrange_i(start, stop, step)?)
}

/// `randint(a, b)`: `randrange(a, b + 1)`.
pub fn randint(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let p = params("randint", args, kw, &["a", "b"], 2)?;
    let a = range_arg(p[0].unwrap_or(&Value::None), "arg 1")?;
    let b = match p[1] {
        Some(Value::Float(f)) => range_arg(&Value::Float(f + 1.0), "stop")?,
        Some(v) => range_arg(v, "stop")? + 1,
        None => 0,
    };
    int_value(randrange_i(a, Some(b), 1)?)
}

/// `choice(seq)`: `seq[_randbelow(len(seq))]`.
pub fn choice(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let p = params("choice", args, kw, &["seq"], 1)?;
    let seq = p[0].unwrap_or(&Value::None);
    let n = apsi_core::api::len_with(c, seq)?;
    if n <= 0 {
        return Err(err(ErrorKind::IndexError, "Cannot choose from an empty sequence"));
    }
    let i = randbelow(n as u64);
    apsi_core::api::get_index(seq, &Value::Int(i as i64))
}

/// `shuffle(x)`: in place, swapping `x[i]` with `x[_randbelow(i + 1)]` for
/// `i` from `len(x) - 1` down to 1.
pub fn shuffle(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let p = params("shuffle", args, kw, &["x"], 1)?;
    let x = p[0].unwrap_or(&Value::None);
    let Value::List(list) = x else {
        let n = apsi_core::api::len_with(c, x)?;
        if n > 1 {
            // CPython draws once, then fails on the first item assignment.
            randbelow(n as u64);
            return Err(err(
                ErrorKind::TypeError,
                format!("'{}' object does not support item assignment", x.type_name()),
            ));
        }
        return Ok(Value::None);
    };
    let n = list.items.read().len();
    let swaps: Vec<(usize, usize)> = with_gen(|g| {
        (1..n)
            .rev()
            .map(|i| (i, g.mt.randbelow(i as u64 + 1) as usize))
            .collect()
    });
    let mut items = list.items.write();
    for (i, j) in swaps {
        if i < items.len() && j < items.len() {
            items.swap(i, j);
        }
    }
    Ok(Value::None)
}

/// CPython's `setsize`: `21 + (k > 5 ? 4 ** ceil(log(3k, 4)) : 0)`.
fn setsize(k: u64) -> u128 {
    let mut s: u128 = 21;
    if k > 5 {
        let e = ((3 * u128::from(k)) as f64).ln() / 4f64.ln();
        s += 4u128.saturating_pow(e.ceil() as u32);
    }
    s
}

/// `sample(population, k)`: `k` distinct positions of a sequence, as
/// CPython draws them (a pool for a small population, else rejection of
/// repeats, indexing the population: a big range is never materialised).
pub fn sample(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let p = params("sample", args, kw, &["population", "k"], 2)?;
    let pop = p[0].unwrap_or(&Value::None);
    let k = match p[1] {
        Some(Value::Int(k)) => *k,
        Some(Value::Bool(b)) => i64::from(*b),
        Some(other) => {
            return Err(err(
                ErrorKind::TypeError,
                format!("'{}' object cannot be interpreted as an integer", other.type_name()),
            ))
        }
        None => 0,
    };
    if matches!(pop.type_name(), "dict" | "set" | "frozenset") {
        return Err(err(
            ErrorKind::TypeError,
            "Population must be a sequence.  For dicts or sets, use sorted(d).",
        ));
    }
    let n = apsi_core::api::len_with(c, pop)?;
    if k < 0 || k > n {
        return Err(err(
            ErrorKind::ValueError,
            "Sample larger than population or is negative",
        ));
    }
    let (n, k) = (n as u64, k as u64);
    let mut result = Vec::with_capacity(k.min(1 << 16) as usize);
    if u128::from(n) <= setsize(k) {
        let mut pool = apsi_core::api::iterate(c, pop)?;
        let picks: Vec<usize> = with_gen(|g| (0..k).map(|i| g.mt.randbelow(n - i) as usize).collect());
        for (i, j) in picks.into_iter().enumerate() {
            let last = n as usize - i - 1;
            if j >= pool.len() || last >= pool.len() {
                return Err(err(ErrorKind::ValueError, "sample(): the population changed size"));
            }
            result.push(pool[j].clone());
            pool[j] = pool[last].clone();
        }
    } else {
        let picks: Vec<u64> = with_gen(|g| {
            let cap = k.min(1 << 16) as usize;
            let mut selected = std::collections::HashSet::with_capacity(cap);
            let mut out = Vec::with_capacity(cap);
            for _ in 0..k {
                let mut j = g.mt.randbelow(n);
                while selected.contains(&j) {
                    j = g.mt.randbelow(n);
                }
                selected.insert(j);
                out.push(j);
            }
            out
        });
        for j in picks {
            result.push(apsi_core::api::get_index(pop, &Value::Int(j as i64))?);
        }
    }
    Ok(Value::list(result))
}

/// `uniform(a, b)`: `a + (b - a) * random()`.
pub fn uniform(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let p = params("uniform", args, kw, &["a", "b"], 2)?;
    let (a, b) = (p[0].unwrap_or(&Value::None), p[1].unwrap_or(&Value::None));
    let diff = match (a, b) {
        // Python's int subtraction is exact; then one rounding to float.
        (Value::Int(x), Value::Int(y)) => (i128::from(*y) - i128::from(*x)) as f64,
        _ => real(b)? - real(a)?,
    };
    let af = real(a)?;
    let r = with_gen(|g| g.mt.random());
    Ok(Value::Float(af + diff * r))
}

/// `gauss(mu=0.0, sigma=1.0)`: CPython's algorithm, with the second value
/// cached for the next call.
pub fn gauss(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let p = params("gauss", args, kw, &["mu", "sigma"], 0)?;
    let mu = p[0].map(real).transpose()?.unwrap_or(0.0);
    let sigma = p[1].map(real).transpose()?.unwrap_or(1.0);
    let z = with_gen(|g| match g.gauss_next.take() {
        Some(z) => z,
        None => {
            let x2pi = g.mt.random() * std::f64::consts::TAU;
            let g2rad = (-2.0 * (1.0 - g.mt.random()).ln()).sqrt();
            g.gauss_next = Some(x2pi.sin() * g2rad);
            x2pi.cos() * g2rad
        }
    });
    Ok(Value::Float(mu + z * sigma))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setsize_follows_cpython() {
        // 21 + 4 ** ceil(log(3k, 4)) for k > 5.
        assert_eq!(setsize(5), 21);
        assert_eq!(setsize(6), 21 + 64);
        assert_eq!(setsize(22), 21 + 256);
        assert_eq!(setsize(u64::MAX / 2), 21 + (1u128 << 66));
    }

    #[test]
    fn floor_division_and_empty_ranges() {
        assert_eq!(floor_div(-7, 2), -4);
        assert_eq!(floor_div(7, -2), -4);
        assert_eq!(floor_div(-94, -7), 13);
        assert!(randrange_i(5, Some(5), 1).is_err());
        assert!(randrange_i(0, None, 1).is_err());
        assert!(randrange_i(1, Some(10), 0).is_err());
        assert!(randrange_i(10, Some(1), 2).is_err());
        let e = randrange_i(5, Some(3), 1).err().map(|e| e.message.clone());
        assert_eq!(e.as_deref(), Some("empty range for randrange() (5, 3, -2)"));
    }
}
