//! `from_csv`: a CSV file (RFC 4180 quoting: `"a, b"`, `""` for a quote,
//! line breaks inside quotes), read with the `csv` crate and streamed: the
//! file is never held in memory, only one record at a time.
//!
//! `from_csv(…)` reads the file once, record by record, to learn what every
//! pass needs before the first one starts: the header, that every record
//! has the header's width (an error names the record and its line), and
//! which columns are numeric. A column whose every non-empty cell parses as
//! a number is numeric: its cells become floats (an empty cell is nan, as
//! pandas reads it); other cells stay strings. Each pass then reads the file
//! again from the start ([`CsvRows`]); a file changed since (size or
//! modification time) is an error rather than rows of another file.
//!
//! With a header row, rows are dicts keyed by column name; without, tuples;
//! `columns=[…]` (names or indices) picks columns and gives tuples in that
//! order, ready to spread over a `map` function's parameters.

use crate::stream::Stream;
use apsi_core::api::ErrorKind;
use apsi_core::api::{err, Caller, DictMap, Exc, HashKey, VResult, Value};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// How much of the file a pass reads at once.
const CHUNK: usize = 64 * 1024;

/// A CSV file checked by `from_csv`: what each pass needs to turn records
/// into rows.
pub struct CsvSource {
    pub path: PathBuf,
    pub delim: u8,
    pub header: bool,
    /// Column names: the header's (made unique), or `0`, `1`, … without one.
    pub names: Vec<String>,
    /// Whether each column is numeric.
    numeric: Vec<bool>,
    /// `columns=[…]`: the picked column indices, in order.
    pub pick: Option<Vec<usize>>,
    /// The dict keys of a row (one per column), when rows are dicts.
    keys: Vec<HashKey>,
    /// Data records (the header not counted).
    pub rows: u64,
    /// The file's size and modification time when it was checked.
    pub stamp: (u64, Option<SystemTime>),
}

/// The size and modification time of `path`.
pub fn stamp_of(path: &Path) -> VResult<(u64, Option<SystemTime>)> {
    let m = std::fs::metadata(path).map_err(|e| cannot_read(path, &e))?;
    Ok((m.len(), m.modified().ok()))
}

fn cannot_read(path: &Path, e: &dyn std::fmt::Display) -> Exc {
    err(ErrorKind::IOError, format!("cannot read {}: {e}", path.display()))
}

/// A record reader over `path` that keeps at most one chunk of it in memory.
fn reader(path: &Path, delim: u8) -> VResult<csv::Reader<File>> {
    let file = File::open(path).map_err(|e| cannot_read(path, &e))?;
    Ok(csv::ReaderBuilder::new()
        .delimiter(delim)
        .has_headers(false)
        .flexible(true)
        .buffer_capacity(CHUNK)
        .from_reader(file))
}

/// Reads the next record into `rec`; false at the end. `n` is the 1-based
/// number of the record being read (for errors).
fn read(r: &mut csv::Reader<File>, rec: &mut csv::StringRecord, path: &Path, n: u64) -> VResult<bool> {
    r.read_record(rec).map_err(|e| match e.kind() {
        csv::ErrorKind::Utf8 { pos, .. } => err(
            ErrorKind::ValueError,
            format!(
                "{}: record {n}{} is not valid UTF-8",
                path.display(),
                pos.as_ref().map_or(String::new(), |p| format!(" (line {})", p.line()))
            ),
        ),
        csv::ErrorKind::Io(io) => cannot_read(path, io),
        _ => err(ErrorKind::ValueError, format!("{}: {e}", path.display())),
    })
}

/// Whether the text from `start` to the end of the file leaves a quoted
/// field open (the `csv` crate ends such a field at the end of the file
/// without a word; a quote opens only at the start of a field, and `""`
/// inside one is a quote).
fn ends_inside_quotes(path: &Path, start: u64, delim: u8) -> VResult<bool> {
    let mut f = File::open(path).map_err(|e| cannot_read(path, &e))?;
    f.seek(SeekFrom::Start(start)).map_err(|e| cannot_read(path, &e))?;
    let (mut quoted, mut field_start, mut after_quote) = (false, true, false);
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = f.read(&mut buf).map_err(|e| cannot_read(path, &e))?;
        if n == 0 {
            return Ok(quoted && !after_quote);
        }
        for &b in &buf[..n] {
            if quoted {
                if after_quote {
                    // `""` is a quote; anything else closed the field.
                    after_quote = false;
                    if b != b'"' {
                        quoted = false;
                        field_start = b == delim || b == b'\n' || b == b'\r';
                    }
                } else if b == b'"' {
                    after_quote = true;
                }
            } else if b == b'"' && field_start {
                quoted = true;
            } else {
                field_start = b == delim || b == b'\n' || b == b'\r';
            }
        }
    }
}

pub(crate) fn number(s: &str) -> Option<f64> {
    let t = s.trim();
    match t.to_ascii_lowercase().as_str() {
        "nan" => return Some(f64::NAN),
        "inf" | "+inf" | "infinity" => return Some(f64::INFINITY),
        "-inf" | "-infinity" => return Some(f64::NEG_INFINITY),
        _ => {}
    }
    t.parse::<f64>().ok()
}

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

/// `columns=[…]` as column indices.
fn pick_columns(cols: &[Value], names: &[String]) -> VResult<Vec<usize>> {
    let width = names.len();
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
        .collect()
}

impl CsvSource {
    /// Checks the CSV file at `path` in one streaming pass (see the module
    /// documentation).
    pub fn check(path: &Path, delim: u8, header: bool, columns: Option<&[Value]>) -> VResult<CsvSource> {
        let stamp = stamp_of(path)?;
        let mut r = reader(path, delim)?;
        let mut rec = csv::StringRecord::new();
        let mut names: Option<Vec<String>> = None;
        let mut numeric: Vec<bool> = Vec::new();
        let mut rows = 0u64;
        let mut last_start: Option<u64> = None;
        let mut n = 0u64;
        loop {
            n += 1;
            if !read(&mut r, &mut rec, path, n)? {
                break;
            }
            last_start = Some(rec.position().map_or(0, |p| p.byte()));
            let Some(names) = &names else {
                let first: Vec<String> = rec.iter().map(|s| s.trim().to_string()).collect();
                numeric = vec![true; first.len()];
                names = Some(if header {
                    unique_names(first)
                } else {
                    (0..first.len()).map(|i| i.to_string()).collect()
                });
                if !header {
                    note_numeric(&mut numeric, &rec);
                    rows += 1;
                }
                continue;
            };
            if rec.len() != names.len() {
                let line = rec.position().map_or(n, |p| p.line());
                return Err(err(
                    ErrorKind::ValueError,
                    format!(
                        "{}: record {n} (line {line}) has {} fields, expected {} (as in the {})",
                        path.display(),
                        rec.len(),
                        names.len(),
                        if header { "header" } else { "first record" }
                    ),
                ));
            }
            note_numeric(&mut numeric, &rec);
            rows += 1;
        }
        if let Some(start) = last_start {
            if ends_inside_quotes(path, start, delim)? {
                let line = r.position().line();
                return Err(err(
                    ErrorKind::ValueError,
                    format!(
                        "{}: a quoted field opened on or before line {line} is never closed",
                        path.display()
                    ),
                ));
            }
        }
        let names = match names {
            Some(names) => names,
            None if header => {
                return Err(err(
                    ErrorKind::ValueError,
                    format!("{}: expected a header row, the file is empty", path.display()),
                ))
            }
            None => Vec::new(),
        };
        let pick = columns.map(|cols| pick_columns(cols, &names)).transpose()?;
        let keys = match (&pick, header) {
            (None, true) => names
                .iter()
                .map(|n| apsi_core::api::hash_key(&Value::str(n.as_str())))
                .collect::<VResult<_>>()?,
            _ => Vec::new(),
        };
        Ok(CsvSource {
            path: path.to_path_buf(),
            delim,
            header,
            names,
            numeric,
            pick,
            keys,
            rows,
            stamp,
        })
    }

    fn cell(&self, j: usize, s: &str) -> Value {
        if self.numeric.get(j).copied().unwrap_or(false) {
            Value::Float(number(s).unwrap_or(f64::NAN))
        } else {
            Value::str(s)
        }
    }

    /// The row of one record.
    fn row(&self, rec: &csv::StringRecord) -> Value {
        match &self.pick {
            Some(p) => Value::tuple(p.iter().map(|&j| self.cell(j, rec.get(j).unwrap_or(""))).collect()),
            None if self.header => {
                let mut m = DictMap::new();
                for (j, (key, s)) in self.keys.iter().zip(rec.iter()).enumerate() {
                    m.insert(key.clone(), self.cell(j, s));
                }
                Value::dict(m)
            }
            None => Value::tuple(rec.iter().enumerate().map(|(j, s)| self.cell(j, s)).collect()),
        }
    }
}

/// A column stays numeric while each of its cells is empty or a number.
fn note_numeric(numeric: &mut [bool], rec: &csv::StringRecord) {
    for (j, c) in rec.iter().enumerate() {
        if let Some(flag) = numeric.get_mut(j) {
            if *flag && !(c.trim().is_empty() || number(c).is_some()) {
                *flag = false;
            }
        }
    }
}

/// One pass over a checked CSV file: a record at a time.
pub struct CsvRows {
    src: std::sync::Arc<CsvSource>,
    reader: Option<csv::Reader<File>>,
    rec: csv::StringRecord,
    /// Records read so far (the header included).
    n: u64,
}

impl CsvRows {
    pub fn new(src: std::sync::Arc<CsvSource>) -> CsvRows {
        CsvRows {
            src,
            reader: None,
            rec: csv::StringRecord::new(),
            n: 0,
        }
    }

    /// Opens `src` for a pass, refusing a file changed since `from_csv`
    /// checked it, and reads past the header (into `rec`).
    fn open(src: &CsvSource, rec: &mut csv::StringRecord) -> VResult<csv::Reader<File>> {
        if stamp_of(&src.path)? != src.stamp {
            return Err(err(
                ErrorKind::IOError,
                format!(
                    "{} changed since from_csv() read it (its size or modification time differs); call from_csv() again to read the new contents",
                    src.path.display()
                ),
            ));
        }
        let mut r = reader(&src.path, src.delim)?;
        if src.header {
            read(&mut r, rec, &src.path, 1)?;
        }
        Ok(r)
    }
}

impl Stream for CsvRows {
    fn next(&mut self, _c: &mut dyn Caller) -> VResult<Option<Value>> {
        let src = &self.src;
        let r = match &mut self.reader {
            Some(r) => r,
            None => {
                let r = Self::open(src, &mut self.rec)?;
                self.n = src.header as u64;
                self.reader.insert(r)
            }
        };
        if self.n >= src.rows + src.header as u64 {
            return Ok(None);
        }
        self.n += 1;
        let n = self.n;
        match read(r, &mut self.rec, &src.path, n)? {
            true if self.rec.len() == src.names.len() => Ok(Some(src.row(&self.rec))),
            _ => Err(err(
                ErrorKind::IOError,
                format!(
                    "{} changed while it was read: record {n} is not what from_csv() checked; call from_csv() again",
                    src.path.display()
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apsi_core::api::NoCaller;

    #[test]
    fn repeated_header_names_are_renamed_as_pandas_does() {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(unique_names(v(&["a", "a", "b", "a"])), v(&["a", "a.1", "b", "a.2"]));
        // A generated name the header already has is skipped.
        assert_eq!(unique_names(v(&["a", "a.1", "a"])), v(&["a", "a.1", "a.2"]));
    }

    fn rows_of(text: impl AsRef<[u8]>, delim: u8, header: bool) -> Result<Vec<String>, String> {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("t.csv");
        std::fs::write(&p, text).expect("write");
        let src = CsvSource::check(&p, delim, header, None).map_err(|e| e.message.to_string())?;
        let mut rows = CsvRows::new(std::sync::Arc::new(src));
        let mut out = Vec::new();
        while let Some(v) = rows.next(&mut NoCaller).map_err(|e| e.message.to_string())? {
            out.push(apsi_core::api::repr_of(&v));
        }
        Ok(out)
    }

    #[test]
    fn quotes_and_line_breaks() {
        let r = rows_of("a,b\n\"x, y\",\"say \"\"hi\"\"\"\r\n\"two\nlines\",3\n", b',', false).expect("rows");
        assert_eq!(r, vec!["('a', 'b')", "('x, y', 'say \"hi\"')", "('two\\nlines', '3')"]);
        let open = rows_of("a,\"open\n", b',', false).unwrap_err();
        assert!(open.contains("never closed"), "{open}");
        // A closed quote at the very end, and `""` just before it, are fine.
        assert_eq!(rows_of("a,\"x\"\"\"", b',', false).expect("rows"), vec!["('a', 'x\"')"]);
        assert_eq!(rows_of("1;2\n\n3;4", b';', false).expect("rows").len(), 2);
    }

    #[test]
    fn a_file_changed_after_from_csv_is_an_error_not_other_rows() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("t.csv");
        std::fs::write(&p, "x\n1\n2\n").expect("write");
        let src = std::sync::Arc::new(CsvSource::check(&p, b',', true, None).expect("check"));
        std::fs::write(&p, "x\n1\n2\n3\n").expect("rewrite");
        let e = CsvRows::new(src).next(&mut NoCaller).unwrap_err();
        assert!(e.message.contains("changed since from_csv() read it"), "{}", e.message);
    }

    #[test]
    fn numeric_columns_and_width_errors() {
        let r = rows_of("x,y\n1,a\n,b\n2.5,c\n", b',', true).expect("rows");
        assert_eq!(
            r,
            vec!["{'x': 1.0, 'y': 'a'}", "{'x': nan, 'y': 'b'}", "{'x': 2.5, 'y': 'c'}"]
        );
        let e = rows_of("x,y\n1,2\n3\n", b',', true).unwrap_err();
        assert!(
            e.contains("record 3 (line 3) has 1 fields, expected 2 (as in the header)"),
            "{e}"
        );
        // A header and no records: no rows.
        assert_eq!(rows_of("x,y\n", b',', true).expect("rows").len(), 0);
        let e = rows_of("", b',', true).unwrap_err();
        assert!(e.contains("expected a header row, the file is empty"), "{e}");
        assert_eq!(rows_of("", b',', false).expect("rows").len(), 0);
        let e = rows_of(b"a,b\nc,\xff\n", b',', false).unwrap_err();
        assert!(e.contains("record 2 (line 2) is not valid UTF-8"), "{e}");
    }
}
