//! The pipeline graph and the pull engine that runs it.
//!
//! A dataset is an immutable [`Node`] (a source, or a step over a parent
//! node) shared by `Arc`; iterating it opens a fresh chain of [`Stream`]s,
//! one per node, each pulling from its parent on demand. Nothing runs until
//! an item is asked for, and every pass over a dataset starts from its
//! source again.

use crate::collate;
use crate::rng::{epoch_seed, Rng};
use crate::sources;
use apsi_core::api::tensor::Tensor;
use apsi_core::api::ErrorKind;
use apsi_core::api::{err, Caller, VResult, Value};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A running pass over a dataset.
pub trait Stream: Send {
    /// The next item, `None` at the end. `c` runs any Apsi code the step needs.
    fn next(&mut self, c: &mut dyn Caller) -> VResult<Option<Value>>;
}

pub type BoxStream = Box<dyn Stream>;

/// A node of the pipeline graph.
pub enum Node {
    /// Rows (or batches of rows) of tensors of one first-axis length.
    Tensors {
        xs: Vec<Tensor>,
        batch: Option<usize>,
        shuffle: bool,
        seed: Option<u64>,
        epoch: AtomicU64,
    },
    Range {
        start: i64,
        stop: i64,
        step: i64,
    },
    List(Arc<[Value]>),
    /// A CSV file, checked when the dataset was made and read a record at
    /// a time by each pass.
    Csv(Arc<crate::csv::CsvSource>),
    /// Items prepared once, when the dataset is made (file names).
    Items {
        what: String,
        items: Arc<[Value]>,
    },
    /// `f()` called at every pass; its result is iterated.
    Generator(Value),
    Map {
        parent: Arc<Node>,
        f: Value,
        workers: usize,
    },
    Filter {
        parent: Arc<Node>,
        f: Value,
    },
    Shuffle {
        parent: Arc<Node>,
        buffer: usize,
        seed: Option<u64>,
        epoch: AtomicU64,
    },
    Batch {
        parent: Arc<Node>,
        n: usize,
        drop_remainder: bool,
    },
    Unbatch(Arc<Node>),
    Take(Arc<Node>, u64),
    Skip(Arc<Node>, u64),
    /// `None`: forever.
    Repeat(Arc<Node>, Option<u64>),
    Prefetch(Arc<Node>, usize),
    /// `dir: None`: in memory only.
    Cache {
        parent: Arc<Node>,
        dir: Option<std::path::PathBuf>,
        mem: Arc<crate::cache::Memory>,
    },
}

impl Node {
    /// The pipeline as written: `from_range(10) |> map(workers=4) |> batch(2)`.
    pub fn describe(&self) -> String {
        let step = |p: &Arc<Node>, s: String| format!("{} |> {s}", p.describe());
        match self {
            Node::Tensors { xs, batch, .. } => {
                let shapes: Vec<String> = xs
                    .iter()
                    .map(|t| apsi_core::api::tensor::shape_str(t.shape()))
                    .collect();
                match batch {
                    Some(b) => format!("from_tensors({}, batch={b})", shapes.join(", ")),
                    None => format!("from_tensors({})", shapes.join(", ")),
                }
            }
            Node::Range { start, stop, step } => {
                if *start == 0 && *step == 1 {
                    format!("from_range({stop})")
                } else {
                    format!("from_range({start}, {stop}, {step})")
                }
            }
            Node::List(xs) => format!("from_list(<{} items>)", xs.len()),
            Node::Items { what, .. } => what.clone(),
            Node::Csv(src) => format!("from_csv({:?})", src.path.display().to_string()),
            Node::Generator(_) => "from_generator(f)".into(),
            Node::Map { parent, workers, .. } => step(parent, format!("map(workers={workers})")),
            Node::Filter { parent, .. } => step(parent, "filter".into()),
            Node::Shuffle { parent, buffer, .. } => step(parent, format!("shuffle({buffer})")),
            Node::Batch { parent, n, .. } => step(parent, format!("batch({n})")),
            Node::Unbatch(p) => step(p, "unbatch".into()),
            Node::Take(p, n) => step(p, format!("take({n})")),
            Node::Skip(p, n) => step(p, format!("skip({n})")),
            Node::Repeat(p, n) => step(p, n.map_or("repeat()".into(), |n| format!("repeat({n})"))),
            Node::Prefetch(p, n) => step(p, format!("prefetch({n})")),
            Node::Cache { parent, dir, .. } => step(
                parent,
                dir.as_ref()
                    .map_or("cache()".into(), |d| format!("cache({:?})", d.display().to_string())),
            ),
        }
    }

    /// Everything that determines this pipeline's items, for the disk
    /// cache's key: the source data by content (list items, tensors, CSV
    /// rows and file names as read), each step's parameters, and each
    /// function's code, defaults and captured values
    /// ([`crate::cache::function_fingerprint`]). An item that cannot be
    /// encoded makes the pipeline uncacheable on disk (an error).
    pub fn fingerprint(&self, out: &mut Vec<u8>) -> VResult<()> {
        use crate::cache::function_fingerprint as func;
        let tag = |out: &mut Vec<u8>, t: &str| {
            out.extend_from_slice(t.as_bytes());
            out.push(0);
        };
        let num = |out: &mut Vec<u8>, n: i128| out.extend_from_slice(&n.to_le_bytes());
        match self {
            Node::Tensors {
                xs,
                batch,
                shuffle,
                seed,
                ..
            } => {
                tag(out, "tensors");
                for t in xs {
                    crate::serial::encode(&apsi_core::api::tensor::tensor_value(t.clone()), out)?;
                }
                num(out, batch.map_or(-1, |b| b as i128));
                num(out, *shuffle as i128);
                num(out, seed.map_or(-1, |s| s as i128));
            }
            Node::Range { start, stop, step } => {
                tag(out, "range");
                for n in [start, stop, step] {
                    num(out, *n as i128);
                }
            }
            Node::List(xs) | Node::Items { items: xs, .. } => {
                tag(out, "items");
                num(out, xs.len() as i128);
                let files = matches!(self, Node::Items { what, .. } if what.starts_with("from_files("));
                for x in xs.iter() {
                    crate::serial::encode(x, out)?;
                    // A file's identity: its size and modification time
                    // (what a later step reads from it may have changed).
                    if let (true, Value::Str(p)) = (files, x) {
                        match std::fs::metadata(p.as_str()) {
                            Ok(m) => {
                                num(out, m.len() as i128);
                                let t = m
                                    .modified()
                                    .ok()
                                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
                                num(out, t.map_or(-1, |d| d.as_nanos() as i128));
                            }
                            Err(_) => num(out, -2),
                        }
                    }
                }
            }
            Node::Csv(src) => {
                // The file's identity (the pass refuses a file changed
                // since), and everything that shapes its rows.
                tag(out, "csv");
                tag(out, &src.path.display().to_string());
                num(out, src.stamp.0 as i128);
                let t = src.stamp.1.and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
                num(out, t.map_or(-1, |d| d.as_nanos() as i128));
                num(out, src.delim as i128);
                num(out, src.header as i128);
                num(out, src.rows as i128);
                for n in &src.names {
                    tag(out, n);
                }
                match &src.pick {
                    None => num(out, -1),
                    Some(p) => {
                        num(out, p.len() as i128);
                        for &j in p {
                            num(out, j as i128);
                        }
                    }
                }
            }
            Node::Generator(f) => {
                tag(out, "generator");
                func(f, out)?;
            }
            Node::Map { parent, f, .. } => {
                parent.fingerprint(out)?;
                tag(out, "map");
                func(f, out)?;
            }
            Node::Filter { parent, f } => {
                parent.fingerprint(out)?;
                tag(out, "filter");
                func(f, out)?;
            }
            Node::Shuffle {
                parent, buffer, seed, ..
            } => {
                parent.fingerprint(out)?;
                tag(out, "shuffle");
                num(out, *buffer as i128);
                num(out, seed.map_or(-1, |s| s as i128));
            }
            Node::Batch {
                parent,
                n,
                drop_remainder,
            } => {
                parent.fingerprint(out)?;
                tag(out, "batch");
                num(out, *n as i128);
                num(out, *drop_remainder as i128);
            }
            Node::Unbatch(p) => {
                p.fingerprint(out)?;
                tag(out, "unbatch");
            }
            Node::Take(p, n) | Node::Skip(p, n) => {
                p.fingerprint(out)?;
                tag(out, if matches!(self, Node::Take(..)) { "take" } else { "skip" });
                num(out, *n as i128);
            }
            Node::Repeat(p, n) => {
                p.fingerprint(out)?;
                tag(out, "repeat");
                num(out, n.map_or(-1, |n| n as i128));
            }
            // Prefetching and caching do not change the items.
            Node::Prefetch(p, _) | Node::Cache { parent: p, .. } => p.fingerprint(out)?,
        }
        Ok(())
    }

    /// Starts a pass.
    pub fn open(self: &Arc<Node>) -> BoxStream {
        match &**self {
            Node::Tensors {
                xs,
                batch,
                shuffle,
                seed,
                epoch,
            } => {
                let n = xs.first().and_then(|t| t.shape().first().copied()).unwrap_or(0);
                let order = if *shuffle {
                    let e = epoch.fetch_add(1, Ordering::Relaxed);
                    let s = seed.map_or_else(Rng::fresh_seed, |s| epoch_seed(s, e));
                    Some(Rng::new(s).permutation(n))
                } else {
                    None
                };
                Box::new(sources::TensorRows {
                    xs: xs.clone(),
                    n,
                    batch: *batch,
                    order,
                    pos: 0,
                })
            }
            Node::Range { start, stop, step } => Box::new(sources::RangeStream {
                next: *start,
                stop: *stop,
                step: *step,
            }),
            Node::List(xs) | Node::Items { items: xs, .. } => Box::new(sources::ListStream { xs: xs.clone(), pos: 0 }),
            Node::Generator(f) => Box::new(sources::GenStream::new(f.clone())),
            Node::Csv(src) => Box::new(crate::csv::CsvRows::new(src.clone())),
            Node::Map { parent, f, workers } => crate::pmap::open(parent.open(), f.clone(), *workers),
            Node::Filter { parent, f } => Box::new(FilterStream {
                parent: parent.open(),
                f: f.clone(),
            }),
            Node::Shuffle {
                parent,
                buffer,
                seed,
                epoch,
            } => {
                let e = epoch.fetch_add(1, Ordering::Relaxed);
                let s = seed.map_or_else(Rng::fresh_seed, |s| epoch_seed(s, e));
                Box::new(ShuffleStream {
                    parent: Some(parent.open()),
                    buf: Vec::new(),
                    cap: *buffer,
                    rng: Rng::new(s),
                })
            }
            Node::Batch {
                parent,
                n,
                drop_remainder,
            } => Box::new(BatchStream {
                parent: parent.open(),
                n: *n,
                drop_remainder: *drop_remainder,
                done: false,
            }),
            Node::Unbatch(p) => Box::new(UnbatchStream {
                parent: p.open(),
                pending: VecDeque::new(),
            }),
            Node::Take(p, n) => Box::new(TakeStream {
                parent: p.open(),
                left: *n,
            }),
            Node::Skip(p, n) => Box::new(SkipStream {
                parent: p.open(),
                skip: *n,
            }),
            Node::Repeat(p, n) => Box::new(RepeatStream {
                node: p.clone(),
                cur: None,
                left: *n,
                yielded: false,
            }),
            Node::Prefetch(p, n) => crate::prefetch::open(p.clone(), *n),
            Node::Cache { parent, dir, mem } => {
                crate::cache::open(parent.clone(), dir.clone(), mem.clone(), parent.describe())
            }
        }
    }
}

/// Calls `f` on an item, spreading a tuple over its parameters (unless `f`
/// is an Apsi function of exactly one parameter, which gets the tuple).
pub fn call_item(c: &mut dyn Caller, f: &Value, item: &Value) -> VResult<Value> {
    if let Value::Tuple(t) = item {
        let one = match f {
            Value::Func(cl) => cl.proto.nparams == 1 && !cl.proto.has_vararg,
            _ => false,
        };
        if !one {
            return c.call(f, &t.0, &[]);
        }
    }
    c.call(f, std::slice::from_ref(item), &[])
}

struct FilterStream {
    parent: BoxStream,
    f: Value,
}

impl Stream for FilterStream {
    fn next(&mut self, c: &mut dyn Caller) -> VResult<Option<Value>> {
        while let Some(x) = self.parent.next(c)? {
            let keep = match &self.f {
                Value::None => x.truthy()?,
                f => call_item(c, f, &x)?.truthy()?,
            };
            if keep {
                return Ok(Some(x));
            }
        }
        Ok(None)
    }
}

/// Reservoir-style buffered shuffle: a buffer of up to `cap` items; each
/// output is a uniformly chosen buffered item, replaced by the next input.
struct ShuffleStream {
    parent: Option<BoxStream>,
    buf: Vec<Value>,
    cap: usize,
    rng: Rng,
}

impl Stream for ShuffleStream {
    fn next(&mut self, c: &mut dyn Caller) -> VResult<Option<Value>> {
        while self.buf.len() < self.cap {
            let Some(p) = self.parent.as_mut() else { break };
            match p.next(c)? {
                Some(x) => self.buf.push(x),
                None => self.parent = None,
            }
        }
        if self.buf.is_empty() {
            return Ok(None);
        }
        let j = self.rng.below(self.buf.len());
        Ok(Some(self.buf.swap_remove(j)))
    }
}

struct BatchStream {
    parent: BoxStream,
    n: usize,
    drop_remainder: bool,
    done: bool,
}

impl Stream for BatchStream {
    fn next(&mut self, c: &mut dyn Caller) -> VResult<Option<Value>> {
        if self.done {
            return Ok(None);
        }
        let mut items = Vec::with_capacity(self.n.min(1 << 16));
        while items.len() < self.n {
            match self.parent.next(c)? {
                Some(x) => items.push(x),
                None => {
                    self.done = true;
                    break;
                }
            }
        }
        if items.is_empty() || (self.drop_remainder && items.len() < self.n) {
            return Ok(None);
        }
        collate::stack(items).map(Some)
    }
}

struct UnbatchStream {
    parent: BoxStream,
    pending: VecDeque<Value>,
}

impl Stream for UnbatchStream {
    fn next(&mut self, c: &mut dyn Caller) -> VResult<Option<Value>> {
        loop {
            if let Some(x) = self.pending.pop_front() {
                return Ok(Some(x));
            }
            match self.parent.next(c)? {
                Some(b) => self.pending.extend(collate::unstack(&b)?),
                None => return Ok(None),
            }
        }
    }
}

struct TakeStream {
    parent: BoxStream,
    left: u64,
}

impl Stream for TakeStream {
    fn next(&mut self, c: &mut dyn Caller) -> VResult<Option<Value>> {
        if self.left == 0 {
            return Ok(None);
        }
        let x = self.parent.next(c)?;
        if x.is_some() {
            self.left -= 1;
        } else {
            self.left = 0;
        }
        Ok(x)
    }
}

struct SkipStream {
    parent: BoxStream,
    skip: u64,
}

impl Stream for SkipStream {
    fn next(&mut self, c: &mut dyn Caller) -> VResult<Option<Value>> {
        while self.skip > 0 {
            self.skip -= 1;
            if self.parent.next(c)?.is_none() {
                self.skip = 0;
                return Ok(None);
            }
        }
        self.parent.next(c)
    }
}

struct RepeatStream {
    node: Arc<Node>,
    cur: Option<BoxStream>,
    /// Passes still to start (`None`: forever).
    left: Option<u64>,
    /// Whether the current pass yielded anything (an empty pass ends a
    /// forever-repeat instead of spinning).
    yielded: bool,
}

impl Stream for RepeatStream {
    fn next(&mut self, c: &mut dyn Caller) -> VResult<Option<Value>> {
        loop {
            if self.cur.is_none() {
                match &mut self.left {
                    Some(0) => return Ok(None),
                    Some(n) => *n -= 1,
                    None => {}
                }
                self.cur = Some(self.node.open());
                self.yielded = false;
            }
            if let Some(s) = self.cur.as_mut() {
                match s.next(c)? {
                    Some(x) => {
                        self.yielded = true;
                        return Ok(Some(x));
                    }
                    None => {
                        self.cur = None;
                        if !self.yielded {
                            return Ok(None);
                        }
                    }
                }
            }
        }
    }
}

/// Every item of a pass, in order.
pub fn collect(node: &Arc<Node>, c: &mut dyn Caller) -> VResult<Vec<Value>> {
    let mut s = node.open();
    let mut out = Vec::new();
    while let Some(x) = s.next(c)? {
        out.push(x);
    }
    Ok(out)
}

/// A count argument that must be ≥ 0.
pub fn count(fname: &str, what: &str, v: i64) -> VResult<u64> {
    u64::try_from(v).map_err(|_| err(ErrorKind::ValueError, format!("{fname}() needs {what} ≥ 0, found {v}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use apsi_core::api::tensor::{as_tensor, tensor_value};
    use apsi_core::api::NativeFn;
    use apsi_core::api::NoCaller;

    fn ints(node: Node) -> Vec<i64> {
        collect(&Arc::new(node), &mut NoCaller)
            .unwrap_or_default()
            .iter()
            .map(|v| if let Value::Int(i) = v { *i } else { -999 })
            .collect()
    }
    fn range(n: i64) -> Arc<Node> {
        Arc::new(Node::Range {
            start: 0,
            stop: n,
            step: 1,
        })
    }
    fn native(f: fn(&mut dyn Caller, &[Value], apsi_core::api::Kwargs) -> VResult<Value>) -> Value {
        Value::Native(Arc::new(NativeFn::new("f", f)))
    }
    fn square(_c: &mut dyn Caller, a: &[Value], _k: apsi_core::api::Kwargs) -> VResult<Value> {
        match a {
            [Value::Int(i)] => Ok(Value::Int(i * i)),
            [Value::Int(i), Value::Int(j)] => Ok(Value::Int(i * j)),
            _ => Err(err(ErrorKind::TypeError, "square needs ints")),
        }
    }

    #[test]
    fn take_skip_repeat_edges() {
        assert_eq!(ints(Node::Take(range(5), 0)), Vec::<i64>::new());
        assert_eq!(ints(Node::Take(range(3), 10)), vec![0, 1, 2]);
        assert_eq!(ints(Node::Skip(range(3), 3)), Vec::<i64>::new());
        assert_eq!(ints(Node::Skip(range(3), 100)), Vec::<i64>::new());
        assert_eq!(ints(Node::Repeat(range(2), Some(3))), vec![0, 1, 0, 1, 0, 1]);
        assert_eq!(ints(Node::Repeat(range(2), Some(0))), Vec::<i64>::new());
        // Forever over nothing ends instead of spinning.
        assert_eq!(ints(Node::Repeat(range(0), None)), Vec::<i64>::new());
        let forever = Arc::new(Node::Repeat(range(3), None));
        assert_eq!(ints(Node::Take(forever, 7)), vec![0, 1, 2, 0, 1, 2, 0]);
        let list: Arc<[Value]> = vec![Value::Int(1), Value::Int(2), Value::Int(3)].into();
        let rep = Arc::new(Node::Repeat(Arc::new(Node::List(list)), Some(2)));
        assert_eq!(ints(Node::Skip(rep, 4)), vec![2, 3]);
        assert_eq!(
            ints(Node::Range {
                start: 10,
                stop: 0,
                step: -4
            }),
            vec![10, 6, 2]
        );
    }

    #[test]
    fn map_keeps_order_and_spreads_tuples() {
        for workers in [1, 2, 4] {
            let m = Node::Map {
                parent: range(50),
                f: native(square),
                workers,
            };
            assert_eq!(ints(m), (0..50).map(|i| i * i).collect::<Vec<_>>());
        }
        let pairs: Arc<[Value]> = vec![Value::tuple(vec![Value::Int(2), Value::Int(3)])].into();
        assert_eq!(
            ints(Node::Map {
                parent: Arc::new(Node::List(pairs)),
                f: native(square),
                workers: 1
            }),
            vec![6]
        );
    }

    #[test]
    fn map_errors_arrive_at_their_position() {
        let items: Arc<[Value]> = vec![Value::Int(1), Value::str("x"), Value::Int(3)].into();
        let node = Arc::new(Node::Map {
            parent: Arc::new(Node::List(items)),
            f: native(square),
            workers: 3,
        });
        let mut s = node.open();
        assert!(matches!(s.next(&mut NoCaller), Ok(Some(Value::Int(1)))));
        let e = s.next(&mut NoCaller).err().map(|e| e.message.clone());
        assert_eq!(e.as_deref(), Some("square needs ints"));
    }

    #[test]
    fn shuffle_is_a_permutation_and_deterministic_per_seed() {
        let run = |seed| {
            ints(Node::Shuffle {
                parent: range(100),
                buffer: 10,
                seed: Some(seed),
                epoch: AtomicU64::new(0),
            })
        };
        let a = run(1);
        assert_eq!(a, run(1));
        assert_ne!(a, run(2));
        assert_ne!(a, (0..100).collect::<Vec<_>>());
        let mut s = a.clone();
        s.sort_unstable();
        assert_eq!(s, (0..100).collect::<Vec<_>>());
        // A buffer of 10 moves an item at most 9 places earlier.
        for (pos, v) in a.iter().enumerate() {
            assert!(*v as usize <= pos + 9, "{v} at {pos}");
        }
        // Each pass is a new epoch: different, but the same sequence every run.
        let node = Arc::new(Node::Shuffle {
            parent: range(20),
            buffer: 20,
            seed: Some(5),
            epoch: AtomicU64::new(0),
        });
        let (e0, e1) = (collect(&node, &mut NoCaller).ok(), collect(&node, &mut NoCaller).ok());
        assert_ne!(e0.as_ref().map(|v| v.len()), None);
        assert_ne!(
            e0.iter().flatten().map(|v| format!("{v:?}")).collect::<Vec<_>>(),
            e1.iter().flatten().map(|v| format!("{v:?}")).collect::<Vec<_>>()
        );
    }

    #[test]
    fn batches_have_the_right_shapes() {
        let b = collect(
            &Arc::new(Node::Batch {
                parent: range(5),
                n: 2,
                drop_remainder: false,
            }),
            &mut NoCaller,
        )
        .unwrap_or_default();
        let shapes: Vec<Vec<usize>> = b.iter().filter_map(as_tensor).map(|t| t.shape().to_vec()).collect();
        assert_eq!(shapes, vec![vec![2], vec![2], vec![1]]);
        assert_eq!(
            b.first().and_then(as_tensor).map(|t| t.dtype),
            Some(apsi_core::api::tensor::DType::I64)
        );
        let d = collect(
            &Arc::new(Node::Batch {
                parent: range(5),
                n: 2,
                drop_remainder: true,
            }),
            &mut NoCaller,
        )
        .unwrap_or_default();
        assert_eq!(d.len(), 2);
        let x = apsi_core::api::tensor::Tensor::from_vec((0..12).map(|i| i as f32).collect::<Vec<_>>(), vec![4, 3]);
        let y = apsi_core::api::tensor::Tensor::from_vec((0..4).collect::<Vec<i64>>(), vec![4]);
        let src = Arc::new(Node::Tensors {
            xs: vec![x.clone(), y],
            batch: Some(3),
            shuffle: false,
            seed: None,
            epoch: AtomicU64::new(0),
        });
        let got = collect(&src, &mut NoCaller).unwrap_or_default();
        let desc: Vec<String> = got
            .iter()
            .map(|v| match v {
                Value::Tuple(t) => {
                    t.0.iter()
                        .filter_map(as_tensor)
                        .map(|t| format!("{:?}", t.shape()))
                        .collect::<Vec<_>>()
                        .join(" ")
                }
                _ => "?".into(),
            })
            .collect();
        assert_eq!(desc, vec!["[3, 3] [3]", "[1, 3] [1]"]);
        // Rows re-batched through batch() stack back to the tensor.
        let rows = Arc::new(Node::Tensors {
            xs: vec![x.clone()],
            batch: None,
            shuffle: false,
            seed: None,
            epoch: AtomicU64::new(0),
        });
        let again = collect(
            &Arc::new(Node::Batch {
                parent: rows,
                n: 4,
                drop_remainder: false,
            }),
            &mut NoCaller,
        )
        .unwrap_or_default();
        assert_eq!(
            again.first().and_then(as_tensor).map(|t| t.to_vec::<f32>()),
            Some(x.to_vec::<f32>())
        );
        // unbatch undoes batch.
        let un = Arc::new(Node::Unbatch(Arc::new(Node::Batch {
            parent: range(5),
            n: 2,
            drop_remainder: false,
        })));
        assert_eq!(
            ints(Node::Map {
                parent: un,
                f: native(square),
                workers: 1
            }),
            vec![0, 1, 4, 9, 16]
        );
        // A shuffled batch holds each row once overall.
        let sh = Arc::new(Node::Tensors {
            xs: vec![x],
            batch: Some(3),
            shuffle: true,
            seed: Some(3),
            epoch: AtomicU64::new(0),
        });
        let mut firsts: Vec<f32> = collect(&sh, &mut NoCaller)
            .unwrap_or_default()
            .iter()
            .filter_map(as_tensor)
            .flat_map(|t| t.to_vec::<f32>().chunks(3).map(|r| r[0]).collect::<Vec<_>>())
            .collect();
        firsts.sort_by(|a, b| a.total_cmp(b));
        assert_eq!(firsts, vec![0.0, 3.0, 6.0, 9.0]);
        let _ = tensor_value;
    }
}
