//! The functions `use data` exports for pipelines: sources, steps (each
//! takes the dataset first, so `ds |> batch(32)` reads well) and
//! `throughput`.

use crate::object::{as_dataset, dataset_value};
use crate::stream::{count, Node};
use crate::{csv, glob};
use apsi_core::api::tensor::as_tensor;
use apsi_core::api::Args;
use apsi_core::api::ErrorKind;
use apsi_core::api::{err, record_type, Caller, Kwargs, StructType, VResult, Value};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};

fn ds_arg(a: &Args, i: usize) -> VResult<Arc<Node>> {
    let v = a.req(i)?;
    as_dataset(v).ok_or_else(|| {
        let hint = if matches!(v, Value::List(_) | Value::Tuple(_) | Value::Range(_)) {
            " (wrap it with from_list)"
        } else {
            ""
        };
        err(
            ErrorKind::TypeError,
            format!("{}() needs a Dataset, found {}{hint}", a.name, v.type_name()),
        )
    })
}

fn positive(a: &Args, i: usize, what: &str) -> VResult<usize> {
    let n = a.int(i)?;
    if n < 1 {
        return Err(err(
            ErrorKind::ValueError,
            format!("{}() needs {what} ≥ 1, found {n}", a.name),
        ));
    }
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

fn seed_arg(a: &Args, i: usize) -> VResult<Option<u64>> {
    Ok(a.int_opt(i)?.map(|s| s as u64))
}

// ------------------------------------------------------------------ sources

/// `from_tensors(*xs, batch=none, shuffle=false, seed=none)`.
pub fn from_tensors(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("from_tensors", &[], kw, &["batch", "shuffle", "seed"])?;
    if args.is_empty() {
        return Err(err(ErrorKind::TypeError, "from_tensors() needs at least one tensor"));
    }
    let mut xs = Vec::with_capacity(args.len());
    for (i, v) in args.iter().enumerate() {
        let t = as_tensor(v).ok_or_else(|| {
            err(
                ErrorKind::TypeError,
                format!(
                    "from_tensors() argument {} must be a Tensor, not {}",
                    i + 1,
                    v.type_name()
                ),
            )
        })?;
        if t.ndim() == 0 {
            return Err(err(
                ErrorKind::ShapeError,
                format!(
                    "from_tensors() argument {} is 0-d; it needs a first axis to take rows from",
                    i + 1
                ),
            ));
        }
        xs.push(t);
    }
    let n0 = xs.first().map_or(0, |t| t.shape()[0]);
    if let Some((i, t)) = xs.iter().enumerate().find(|(_, t)| t.shape()[0] != n0) {
        return Err(err(
            ErrorKind::ShapeError,
            format!(
                "from_tensors() needs tensors with the same first axis: argument 1 has {n0} rows, argument {} has {}",
                i + 1,
                t.shape()[0]
            ),
        ));
    }
    let batch = match a.int_opt(0)? {
        None => None,
        Some(_) => Some(positive(&a, 0, "a batch size")?),
    };
    Ok(dataset_value(Node::Tensors {
        xs,
        batch,
        shuffle: a.flag(1)?,
        seed: seed_arg(&a, 2)?,
        epoch: AtomicU64::new(0),
    }))
}

/// `from_npy(path, batch=none, shuffle=false, seed=none)`: rows of a mapped `.npy`.
pub fn from_npy(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("from_npy", args, kw, &["path", "batch", "shuffle", "seed"])?;
    let path = crate::files::source_arg(c, &a, 0)?;
    let t = crate::files::load(&path, true)?;
    if t.ndim() == 0 {
        return Err(err(
            ErrorKind::ShapeError,
            format!(
                "from_npy(): {} holds a 0-d array; it needs a first axis",
                path.display()
            ),
        ));
    }
    let batch = match a.int_opt(1)? {
        None => None,
        Some(_) => Some(positive(&a, 1, "a batch size")?),
    };
    Ok(dataset_value(Node::Tensors {
        xs: vec![t],
        batch,
        shuffle: a.flag(2)?,
        seed: seed_arg(&a, 3)?,
        epoch: AtomicU64::new(0),
    }))
}

/// `from_range(stop)` or `from_range(start, stop, step=1)`.
pub fn from_range(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("from_range", args, kw, &["start", "stop", "step"])?;
    let first = a.int(0)?;
    let (start, stop) = match a.int_opt(1)? {
        Some(stop) => (first, stop),
        None => (0, first),
    };
    let step = a.int_opt(2)?.unwrap_or(1);
    if step == 0 {
        return Err(err(ErrorKind::ValueError, "from_range() needs a step other than 0"));
    }
    Ok(dataset_value(Node::Range { start, stop, step }))
}

/// `from_list(xs)`: the elements of any iterable, taken now.
pub fn from_list(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("from_list", args, kw, &["xs"])?;
    let items = apsi_core::api::iterate(c, a.req(0)?)?;
    Ok(dataset_value(Node::List(items.into())))
}

/// `from_generator(f)`: `f()` at every pass, its result iterated.
pub fn from_generator(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("from_generator", args, kw, &["f"])?;
    let f = a.req(0)?;
    if !matches!(f, Value::Func(_) | Value::Native(_) | Value::BoundMethod(_)) {
        return Err(a.wrong(0, "a function", f));
    }
    Ok(dataset_value(Node::Generator(f.clone())))
}

/// `from_files(pattern)`: the matching paths, sorted.
pub fn from_files(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("from_files", args, kw, &["pattern"])?;
    let pat = match a.req(0)? {
        Value::Str(s) if apsi_core::api::is_url(s.as_str()) => {
            return Err(err(
                ErrorKind::ValueError,
                format!(
                    "from_files() matches local files; {} is a URL (a server lists no files to match): read one URL with from_csv or load_tensor, or list the URLs with from_list",
                    s.as_str()
                ),
            ))
        }
        Value::Str(s) => s.as_str().to_string(),
        other => return Err(a.wrong(0, "a glob pattern (str)", other)),
    };
    let paths = glob::glob(&pat)?;
    let items: Vec<Value> = paths.into_iter().map(Value::str).collect();
    Ok(dataset_value(Node::Items {
        what: format!("from_files({pat:?})"),
        items: items.into(),
    }))
}

/// `from_csv(path, delimiter=",", header=true, columns=none)`.
pub fn from_csv(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("from_csv", args, kw, &["path", "delimiter", "header", "columns"])?;
    let delim = match a.opt(1) {
        None => b',',
        Some(Value::Str(s)) if s.as_str().len() == 1 => s.as_str().as_bytes()[0],
        Some(other) => return Err(a.wrong(1, "a one-character str", other)),
    };
    let header = match a.opt(2) {
        None => true,
        Some(v) => v.truthy()?,
    };
    let columns = match a.opt(3) {
        None => None,
        Some(v @ (Value::List(_) | Value::Tuple(_))) => Some(apsi_core::api::iterate(c, v)?),
        Some(other) => return Err(a.wrong(3, "a list of column names or indices", other)),
    };
    // Last: a URL is downloaded only once the other arguments are right.
    let path = crate::files::source_arg(c, &a, 0)?;
    let src = csv::CsvSource::check(&path, delim, header, columns.as_deref())?;
    Ok(dataset_value(Node::Csv(Arc::new(src))))
}

// -------------------------------------------------------------------- steps

/// `map(ds, f, workers=1)` (also what the prelude's `map` calls for a dataset).
pub fn map(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("map", args, kw, &["ds", "f", "workers"])?;
    let parent = ds_arg(&a, 0)?;
    let f = a.req(1)?.clone();
    let workers = match a.int_opt(2)? {
        None => 1,
        Some(_) => positive(&a, 2, "workers")?.min(1024),
    };
    Ok(dataset_value(Node::Map { parent, f, workers }))
}

/// `filter(ds, f)`; `f=none` keeps truthy items.
pub fn filter(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("filter", args, kw, &["ds", "f"])?;
    let parent = ds_arg(&a, 0)?;
    let f = a.opt(1).cloned().unwrap_or(Value::None);
    Ok(dataset_value(Node::Filter { parent, f }))
}

/// `shuffle(ds, buffer, seed=none)`.
pub fn shuffle(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("shuffle", args, kw, &["ds", "buffer", "seed"])?;
    let parent = ds_arg(&a, 0)?;
    let buffer = positive(&a, 1, "a buffer size")?;
    Ok(dataset_value(Node::Shuffle {
        parent,
        buffer,
        seed: seed_arg(&a, 2)?,
        epoch: AtomicU64::new(0),
    }))
}

/// `batch(ds, n, drop_remainder=false)`.
pub fn batch(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("batch", args, kw, &["ds", "n", "drop_remainder"])?;
    let parent = ds_arg(&a, 0)?;
    let n = positive(&a, 1, "a batch size")?;
    Ok(dataset_value(Node::Batch {
        parent,
        n,
        drop_remainder: a.flag(2)?,
    }))
}

/// `unbatch(ds)`.
pub fn unbatch(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("unbatch", args, kw, &["ds"])?;
    Ok(dataset_value(Node::Unbatch(ds_arg(&a, 0)?)))
}

/// `take(ds, n)`.
pub fn take(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    counted_step("take", args, kw, Node::Take)
}

/// `skip(ds, n)`.
pub fn skip(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    counted_step("skip", args, kw, Node::Skip)
}

/// `name(ds, n)` for a step that takes a dataset and a count.
fn counted_step(name: &'static str, args: &[Value], kw: Kwargs, node: fn(Arc<Node>, u64) -> Node) -> VResult<Value> {
    let a = Args::optional(name, args, kw, &["ds", "n"])?;
    let parent = ds_arg(&a, 0)?;
    Ok(dataset_value(node(parent, count(name, "a count", a.int(1)?)?)))
}

/// `repeat(ds, n=none)`: n passes, or forever.
pub fn repeat(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("repeat", args, kw, &["ds", "n"])?;
    let parent = ds_arg(&a, 0)?;
    let n = match a.int_opt(1)? {
        None => None,
        Some(n) => Some(count("repeat", "a count", n)?),
    };
    Ok(dataset_value(Node::Repeat(parent, n)))
}

/// `prefetch(ds, n=2)`.
pub fn prefetch(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("prefetch", args, kw, &["ds", "n"])?;
    let parent = ds_arg(&a, 0)?;
    let n = match a.int_opt(1)? {
        None => 2,
        Some(_) => positive(&a, 1, "a queue size")?.min(1 << 20),
    };
    Ok(dataset_value(Node::Prefetch(parent, n)))
}

/// `cache(ds, dir=none)`: the first complete pass is kept (in memory, and in `dir` when given).
pub fn cache(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("cache", args, kw, &["ds", "dir"])?;
    let parent = ds_arg(&a, 0)?;
    let dir = match a.opt(1) {
        None => None,
        Some(Value::Str(s)) => Some(std::path::PathBuf::from(s.as_str())),
        Some(other) => return Err(a.wrong(1, "a folder (str) or none", other)),
    };
    Ok(dataset_value(Node::Cache {
        parent,
        dir,
        mem: Default::default(),
    }))
}

/// `throughput(ds)` → `Throughput(rows, seconds, rows_per_s)`: one full
/// pass, counting samples (a batch of 100 counts 100).
pub fn throughput(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    static T: OnceLock<Arc<StructType>> = OnceLock::new();
    let a = Args::optional("throughput", args, kw, &["ds"])?;
    let node = ds_arg(&a, 0)?;
    let t0 = std::time::Instant::now();
    let mut s = node.open();
    let mut rows: u64 = 0;
    while let Some(x) = s.next(c)? {
        rows = rows.saturating_add(crate::collate::count_rows(&x));
    }
    let secs = t0.elapsed().as_secs_f64();
    let rate = if secs > 0.0 { rows as f64 / secs } else { f64::INFINITY };
    let ty = T
        .get_or_init(|| {
            record_type(
                "Throughput",
                &[("rows", "int"), ("seconds", "float"), ("rows_per_s", "float")],
            )
        })
        .clone();
    c.call(
        &Value::StructType(ty),
        &[
            Value::Int(rows.min(i64::MAX as u64) as i64),
            Value::Float(secs),
            Value::Float(rate),
        ],
        &[],
    )
}
