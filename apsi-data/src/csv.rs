//! `from_csv`: a CSV file (RFC 4180 quoting: `"a, b"`, `""` for a quote,
//! line breaks inside quotes) read into rows. A column whose every
//! non-empty cell parses as a number is numeric: its cells become floats
//! (an empty cell is nan, as pandas reads it); other cells stay strings.
//! With a header row, rows are dicts keyed by column name; without, tuples;
//! `columns=[…]` (names or indices) picks columns and gives tuples in that
//! order, ready to spread over a `map` function's parameters.

use apsi_core::api::ErrorKind;
use apsi_core::api::{err, DictMap, VResult, Value};
use std::path::Path;

/// Splits CSV text into records of fields.
pub fn parse(text: &str, delim: u8) -> Result<Vec<Vec<String>>, String> {
    let mut rows = Vec::new();
    let mut row: Vec<String> = Vec::new();
    let mut field: Vec<u8> = Vec::new();
    let b = text.as_bytes();
    let (mut i, mut line) = (0usize, 1usize);
    let mut quoted = false;
    let mut any = false;
    while i < b.len() {
        let ch = b[i];
        if quoted {
            if ch == b'"' {
                if b.get(i + 1) == Some(&b'"') {
                    field.push(b'"');
                    i += 1;
                } else {
                    quoted = false;
                }
            } else {
                if ch == b'\n' {
                    line += 1;
                }
                field.push(ch);
            }
        } else if ch == b'"' && field.is_empty() {
            quoted = true;
            any = true;
        } else if ch == delim {
            row.push(String::from_utf8_lossy(&field).into_owned());
            field.clear();
            any = true;
        } else if ch == b'\n' || ch == b'\r' {
            if ch == b'\r' && b.get(i + 1) == Some(&b'\n') {
                i += 1;
            }
            if any || !field.is_empty() {
                row.push(String::from_utf8_lossy(&field).into_owned());
                rows.push(std::mem::take(&mut row));
            }
            field.clear();
            any = false;
            line += 1;
        } else {
            field.push(ch);
            any = true;
        }
        i += 1;
    }
    if quoted {
        return Err(format!(
            "a quoted field opened on or before line {line} is never closed"
        ));
    }
    if any || !field.is_empty() {
        row.push(String::from_utf8_lossy(&field).into_owned());
        rows.push(row);
    }
    Ok(rows)
}

fn number(s: &str) -> Option<f64> {
    let t = s.trim();
    match t.to_ascii_lowercase().as_str() {
        "nan" => return Some(f64::NAN),
        "inf" | "+inf" | "infinity" => return Some(f64::INFINITY),
        "-inf" | "-infinity" => return Some(f64::NEG_INFINITY),
        _ => {}
    }
    t.parse::<f64>().ok()
}

/// The rows of the CSV file at `path` as Apsi values.
/// Header names made unique as pandas does: a repeated `a` becomes `a.1`,
/// `a.2`, … (skipping names the header already has), so no column is lost.
fn unique_names(names: Vec<String>) -> Vec<String> {
    let mut seen: std::collections::HashSet<String> = names.iter().cloned().collect();
    let mut first = std::collections::HashSet::new();
    names
        .into_iter()
        .map(|n| {
            if first.insert(n.clone()) {
                return n;
            }
            let mut k = 1;
            loop {
                let cand = format!("{n}.{k}");
                if seen.insert(cand.clone()) {
                    first.insert(cand.clone());
                    return cand;
                }
                k += 1;
            }
        })
        .collect()
}

pub fn load(path: &Path, delim: u8, header: bool, columns: Option<&[Value]>) -> VResult<Vec<Value>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| err(ErrorKind::IOError, format!("cannot read {}: {e}", path.display())))?;
    let mut recs = parse(&text, delim).map_err(|m| err(ErrorKind::ValueError, format!("{}: {m}", path.display())))?;
    let names: Vec<String> = if header {
        if recs.is_empty() {
            return Err(err(
                ErrorKind::ValueError,
                format!("{}: expected a header row, the file is empty", path.display()),
            ));
        }
        unique_names(recs.remove(0).into_iter().map(|s| s.trim().to_string()).collect())
    } else {
        (0..recs.first().map_or(0, |r| r.len()))
            .map(|i| i.to_string())
            .collect()
    };
    let width = names.len();
    for (k, r) in recs.iter().enumerate() {
        if r.len() != width {
            let line = k + 1 + header as usize;
            return Err(err(
                ErrorKind::ValueError,
                format!(
                    "{}: record {line} has {} fields, expected {width} (as in the {})",
                    path.display(),
                    r.len(),
                    if header { "header" } else { "first record" }
                ),
            ));
        }
    }
    let numeric: Vec<bool> = (0..width)
        .map(|j| {
            recs.iter()
                .all(|r| r.get(j).is_some_and(|c| c.trim().is_empty() || number(c).is_some()))
        })
        .collect();
    let pick: Option<Vec<usize>> = match columns {
        None => None,
        Some(cols) => Some(
            cols.iter()
                .map(|c| match c {
                    Value::Int(i) if *i >= 0 && (*i as usize) < width => Ok(*i as usize),
                    Value::Str(s) => names.iter().position(|n| n == s.as_str()).ok_or_else(|| {
                        err(
                            ErrorKind::KeyError,
                            format!(
                                "from_csv(): no column '{}'; the columns are {}",
                                s.as_str(),
                                names.join(", ")
                            ),
                        )
                    }),
                    other => Err(err(
                        ErrorKind::ValueError,
                        format!(
                            "from_csv(): a column must be a name or an index below {width}, found {}",
                            apsi_core::api::repr_of(other)
                        ),
                    )),
                })
                .collect::<VResult<_>>()?,
        ),
    };
    let cell = |j: usize, s: &str| -> Value {
        if numeric.get(j).copied().unwrap_or(false) {
            Value::Float(number(s).unwrap_or(f64::NAN))
        } else {
            Value::str(s)
        }
    };
    let mut out = Vec::with_capacity(recs.len());
    for r in &recs {
        let v = match (&pick, header) {
            (Some(p), _) => Value::tuple(
                p.iter()
                    .map(|&j| cell(j, r.get(j).map_or("", |s| s.as_str())))
                    .collect(),
            ),
            (None, true) => {
                let mut m = DictMap::new();
                for (j, (name, s)) in names.iter().zip(r).enumerate() {
                    m.insert(apsi_core::api::hash_key(&Value::str(name.as_str()))?, cell(j, s));
                }
                Value::dict(m)
            }
            (None, false) => Value::tuple(r.iter().enumerate().map(|(j, s)| cell(j, s)).collect()),
        };
        out.push(v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn repeated_header_names_are_renamed_as_pandas_does() {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(unique_names(v(&["a", "a", "b", "a"])), v(&["a", "a.1", "b", "a.2"]));
        // A generated name the header already has is skipped.
        assert_eq!(unique_names(v(&["a", "a.1", "a"])), v(&["a", "a.1", "a.2"]));
    }

    use super::*;

    #[test]
    fn quotes_and_line_breaks() {
        let r = parse("a,b\n\"x, y\",\"say \"\"hi\"\"\"\r\n\"two\nlines\",3\n", b',').expect("parse");
        assert_eq!(
            r,
            vec![vec!["a", "b"], vec!["x, y", "say \"hi\""], vec!["two\nlines", "3"]]
        );
        assert!(parse("a,\"open\n", b',').unwrap_err().contains("never closed"));
        assert_eq!(parse("1;2\n\n3;4", b';').expect("parse").len(), 2);
    }
}
