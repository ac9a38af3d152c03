//! `cache(dir=none)` and `@disk_cache(dir)`.
//!
//! `ds |> cache()` keeps the items of the first complete pass in memory;
//! later passes replay them. `cache(dir)` also writes them to `dir` as
//! shards of up to 1024 items plus an index, each file tagged with
//! HMAC-SHA256 under the per-user key (`key.rs`); a later pass (or program)
//! replays verified shards. The index records the pipeline's description
//! and key: the SHA-256 of its source data by content, each step's
//! parameters and each function's code, defaults and captured values
//! (`Node::fingerprint`), and the versions; a pipeline with another key
//! recomputes and rewrites the folder. Shards are tagged under the key, so
//! a shard copied in from another cache does not verify. A file whose
//! tag does not verify is never decoded: a warning goes to stderr and the
//! items are recomputed from the pipeline. Only a complete pass is written
//! (a pass cut short by `take` leaves the cache as it was).
//!
//! `@disk_cache(dir)` wraps a function: a call's result is stored under the
//! SHA-256 of the function's name, code and arguments' encoding, tagged the
//! same way; a later call with equal arguments loads it. The hash covers
//! the function's code, defaults and captured values too, so a changed body
//! recomputes (module globals it reads are not covered).

use crate::key::{cache_key, hex_digest, tag, verify, KEY_LEN};
use crate::serial;
use crate::stream::{BoxStream, Node, Stream};
use apsi_core::api::ErrorKind;
use apsi_core::api::{err, Caller, Kwargs, NativeFn, VResult, Value};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const MAGIC: &[u8] = b"APSI-DATA-CACHE 1\n";
const SHARD: usize = 1024;

/// What a finished pass left behind.
pub type Memory = Mutex<Option<Arc<[Value]>>>;

fn warn(msg: &str) {
    eprintln!("warning: {msg}");
}

/// Writes `payload` with its tag over (`name`, `payload`) atomically.
fn write_tagged(key: &[u8; KEY_LEN], path: &Path, name: &str, payload: &[u8]) -> VResult<()> {
    let t = tag(key, &[name.as_bytes(), payload]);
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let mut bytes = Vec::with_capacity(MAGIC.len() + 32 + payload.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&t);
    bytes.extend_from_slice(payload);
    std::fs::write(&tmp, &bytes)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            err(
                ErrorKind::IOError,
                format!("cannot write the cache file {}: {e}", path.display()),
            )
        })
}

/// The payload of a tagged file, if it exists and its tag verifies
/// (`Err(())` when it exists but does not verify).
fn read_tagged(key: &[u8; KEY_LEN], path: &Path, name: &str) -> Option<Result<Vec<u8>, ()>> {
    let bytes = std::fs::read(path).ok()?;
    let ok = bytes.len() >= MAGIC.len() + 32 && bytes.starts_with(MAGIC);
    if !ok {
        return Some(Err(()));
    }
    let (t, payload) = bytes[MAGIC.len()..].split_at(32);
    if verify(key, &[name.as_bytes(), payload], t) {
        Some(Ok(payload.to_vec()))
    } else {
        Some(Err(()))
    }
}

/// The disk cache's key for `parent`: the SHA-256 of everything that
/// determines its items ([`Node::fingerprint`]) and of the versions that
/// wrote the encoding.
fn pipeline_key(parent: &Node) -> VResult<String> {
    let mut fp = Vec::new();
    fp.extend_from_slice(crate::VERSION.as_bytes());
    fp.push(0);
    fp.extend_from_slice(apsi_core::api::VERSION.as_bytes());
    fp.push(0);
    parent.fingerprint(&mut fp)?;
    Ok(hex_digest(&fp))
}

pub fn open(parent: Arc<Node>, dir: Option<PathBuf>, mem: Arc<Memory>, what: String) -> BoxStream {
    if let Some(items) = mem.lock().clone() {
        return Box::new(crate::sources::ListStream { xs: items, pos: 0 });
    }
    // The index names the pipeline and its key; shards are tagged under
    // the key too, so a shard from another cache never verifies here.
    let (dir, what, bind) = match dir {
        Some(d) => match pipeline_key(&parent) {
            Ok(k) => (Some(d), format!("{what}\n{k}"), k[..32].to_string()),
            Err(e) => {
                warn(&format!(
                    "cache({}) keeps this pipeline in memory only: its items cannot be keyed ({})",
                    d.display(),
                    e.message
                ));
                (None, what, String::new())
            }
        },
        None => (None, what, String::new()),
    };
    Box::new(CacheStream {
        parent,
        dir,
        mem,
        what,
        bind,
        state: St::Start,
        yielded: 0,
    })
}

enum St {
    Start,
    /// Replaying shards from disk: the shards left, the items of the current one.
    Replay {
        key: [u8; KEY_LEN],
        shards: std::vec::IntoIter<usize>,
        items: std::vec::IntoIter<Value>,
    },
    /// Computing from the pipeline, keeping every item.
    Record {
        s: BoxStream,
        kept: Vec<Value>,
    },
    Done,
}

struct CacheStream {
    parent: Arc<Node>,
    dir: Option<PathBuf>,
    mem: Arc<Memory>,
    what: String,
    /// The pipeline's key (a prefix), part of every shard's tag.
    bind: String,
    state: St,
    yielded: u64,
}

impl CacheStream {
    fn index_name(&self) -> &'static str {
        "index"
    }

    /// Replays the disk cache if its index verifies and names this pipeline.
    fn try_replay(&self) -> Option<St> {
        let dir = self.dir.as_ref()?;
        let key = match cache_key() {
            Ok(k) => k,
            Err(e) => {
                warn(&format!("the data cache is off: {}", e.message));
                return None;
            }
        };
        let idx_path = dir.join("index.apsic");
        match read_tagged(&key, &idx_path, self.index_name())? {
            Err(()) => {
                warn(&format!(
                    "{} does not verify with this user's cache key; recomputing",
                    idx_path.display()
                ));
                None
            }
            Ok(p) => {
                let text = String::from_utf8(p).ok()?;
                let (n, what) = text.split_once('\n')?;
                if what != self.what {
                    return None;
                }
                let n: usize = n.parse().ok()?;
                Some(St::Replay {
                    key,
                    shards: (0..n).collect::<Vec<_>>().into_iter(),
                    items: Vec::new().into_iter(),
                })
            }
        }
    }

    /// Writes the recorded items (errors become warnings: the pass itself succeeded).
    fn commit(&self, items: &[Value]) {
        *self.mem.lock() = Some(items.to_vec().into());
        let Some(dir) = &self.dir else { return };
        let run = || -> VResult<()> {
            let key = cache_key()?;
            std::fs::create_dir_all(dir)
                .map_err(|e| err(ErrorKind::IOError, format!("cannot create {}: {e}", dir.display())))?;
            let chunks: Vec<&[Value]> = items.chunks(SHARD).collect();
            for (i, chunk) in chunks.iter().enumerate() {
                let mut payload = Vec::new();
                for v in *chunk {
                    serial::encode(v, &mut payload)?;
                }
                let name = format!("shard-{i:05}");
                let tag_name = format!("{}/{name}", self.bind);
                write_tagged(&key, &dir.join(format!("{name}.apsic")), &tag_name, &payload)?;
            }
            let index = format!("{}\n{}", chunks.len(), self.what);
            write_tagged(&key, &dir.join("index.apsic"), self.index_name(), index.as_bytes())
        };
        if let Err(e) = run() {
            warn(&format!("cache({}) was not written: {}", dir.display(), e.message));
        }
    }

    /// Falls back to computing, skipping what was already handed out.
    fn recompute(&mut self, c: &mut dyn Caller) -> VResult<()> {
        let mut s = self.parent.open();
        let mut kept = Vec::new();
        for _ in 0..self.yielded {
            match s.next(c)? {
                Some(x) => kept.push(x),
                None => break,
            }
        }
        self.state = St::Record { s, kept };
        Ok(())
    }
}

impl Stream for CacheStream {
    fn next(&mut self, c: &mut dyn Caller) -> VResult<Option<Value>> {
        loop {
            match &mut self.state {
                St::Start => {
                    self.state = match self.try_replay() {
                        Some(st) => st,
                        None => St::Record {
                            s: self.parent.open(),
                            kept: Vec::new(),
                        },
                    }
                }
                St::Replay { key, shards, items } => {
                    if let Some(x) = items.next() {
                        self.yielded += 1;
                        return Ok(Some(x));
                    }
                    let Some(i) = shards.next() else {
                        self.state = St::Done;
                        continue;
                    };
                    let name = format!("shard-{i:05}");
                    let tag_name = format!("{}/{name}", self.bind);
                    let path = self
                        .dir
                        .as_ref()
                        .map(|d| d.join(format!("{name}.apsic")))
                        .unwrap_or_default();
                    let decoded = match read_tagged(key, &path, &tag_name) {
                        Some(Ok(p)) => serial::decode_all(&p).ok(),
                        _ => None,
                    };
                    match decoded {
                        Some(v) => *items = v.into_iter(),
                        None => {
                            warn(&format!(
                                "{} is missing or does not verify with this user's cache key; recomputing",
                                path.display()
                            ));
                            self.recompute(c)?;
                        }
                    }
                }
                St::Record { s, kept } => match s.next(c)? {
                    Some(x) => {
                        kept.push(x.clone());
                        self.yielded += 1;
                        return Ok(Some(x));
                    }
                    None => {
                        let items = std::mem::take(kept);
                        self.state = St::Done;
                        self.commit(&items);
                    }
                },
                St::Done => return Ok(None),
            }
        }
    }
}

/// What determines a function's results besides its arguments: its
/// bytecode (instructions, constants, nested functions), its defaults and
/// the values it captured; a native function by name. A changed body gives
/// a different fingerprint. (Module globals the function reads are not
/// covered: a function whose result depends on a changed global needs its
/// cache folder cleared.)
pub fn function_fingerprint(f: &Value, out: &mut Vec<u8>) -> VResult<()> {
    fn code(c: &apsi_core::api::code::Code, out: &mut Vec<u8>) {
        out.extend_from_slice(c.name.as_bytes());
        out.extend_from_slice(format!("{:?}", c.instrs).as_bytes());
        for k in c.consts.iter() {
            out.extend_from_slice(apsi_core::api::repr_of(k).as_bytes());
            out.push(0);
        }
        for p in c.protos.iter() {
            code(&p.code, out);
        }
    }
    match f {
        Value::Func(cl) => {
            out.extend_from_slice(b"func\0");
            code(&cl.proto.code, out);
            for d in cl.defaults.iter() {
                serial::encode(d, out)?;
            }
            for d in cl.kwdefaults.iter().flatten() {
                serial::encode(d, out)?;
            }
            for cell in cl.free.iter() {
                // A captured function is fingerprinted as code, anything
                // else by its encoding.
                let v = cell.get();
                if matches!(v, Value::Func(_) | Value::Native(_)) {
                    function_fingerprint(&v, out)?;
                } else {
                    serial::encode(&v, out)?;
                }
            }
        }
        Value::Native(n) => {
            out.extend_from_slice(b"native\0");
            out.extend_from_slice(n.name.as_bytes());
        }
        other => {
            out.extend_from_slice(b"value\0");
            out.extend_from_slice(apsi_core::api::repr_of(other).as_bytes());
        }
    }
    out.push(0);
    Ok(())
}

/// `@disk_cache(dir)`: the decorator.
pub fn disk_cache(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = apsi_core::api::Args::optional("disk_cache", args, kw, &["dir"])?;
    let dir = crate::files::path_arg(&a, 0)?;
    let deco = move |_c: &mut dyn Caller, args: &[Value], _kw: Kwargs| -> VResult<Value> {
        let f = args
            .first()
            .cloned()
            .ok_or_else(|| err(ErrorKind::TypeError, "disk_cache(dir) decorates a function"))?;
        let fname = match &f {
            Value::Func(cl) => cl.name.to_string(),
            Value::Native(n) => n.name.to_string(),
            other => {
                return Err(err(
                    ErrorKind::TypeError,
                    format!("disk_cache(dir) decorates a function, found {}", other.type_name()),
                ))
            }
        };
        let dir = dir.clone();
        let shown = fname.clone();
        let mut body = Vec::new();
        function_fingerprint(&f, &mut body)?;
        let wrapped = move |c: &mut dyn Caller, args: &[Value], kw: Kwargs| -> VResult<Value> {
            let mut enc = fname.as_bytes().to_vec();
            enc.push(0);
            enc.extend_from_slice(&body);
            serial::encode(&Value::tuple(args.to_vec()), &mut enc)?;
            for (k, v) in kw {
                enc.extend_from_slice(k.as_bytes());
                serial::encode(v, &mut enc)?;
            }
            let name = hex_digest(&enc);
            let path = dir.join(format!("{name}.apsic"));
            let key = cache_key()?;
            match read_tagged(&key, &path, &name) {
                Some(Ok(p)) => match serial::decode_all(&p) {
                    Ok(mut v) if v.len() == 1 => return Ok(v.remove(0)),
                    _ => warn(&format!("{} cannot be decoded; recomputing", path.display())),
                },
                Some(Err(())) => warn(&format!(
                    "{} does not verify with this user's cache key; recomputing",
                    path.display()
                )),
                None => {}
            }
            let r = c.call(&f, args, kw)?;
            let mut payload = Vec::new();
            serial::encode(&r, &mut payload)?;
            std::fs::create_dir_all(&dir)
                .map_err(|e| err(ErrorKind::IOError, format!("cannot create {}: {e}", dir.display())))?;
            write_tagged(&key, &path, &name, &payload)?;
            Ok(r)
        };
        Ok(Value::Native(Arc::new(NativeFn::closure(&shown, Box::new(wrapped)))))
    };
    Ok(Value::Native(Arc::new(NativeFn::closure("disk_cache", Box::new(deco)))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use apsi_core::api::NoCaller;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static CALLS: AtomicUsize = AtomicUsize::new(0);

    fn counted(_c: &mut dyn Caller, a: &[Value], _k: Kwargs) -> VResult<Value> {
        CALLS.fetch_add(1, Ordering::SeqCst);
        Ok(a.first().cloned().unwrap_or(Value::None))
    }

    #[test]
    fn disk_cache_replays_verified_shards_and_recomputes_tampered_ones() {
        let root = std::env::temp_dir().join(format!("apsi-data-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        // The only test of this crate that reads APSI_HOME.
        std::env::set_var("APSI_HOME", root.join("home"));
        let dir = root.join("c");
        let f = Value::Native(Arc::new(NativeFn::new("counted", counted)));
        let make = || {
            let src = Arc::new(Node::Range {
                start: 0,
                stop: 2000,
                step: 1,
            });
            let mapped = Arc::new(Node::Map {
                parent: src,
                f: f.clone(),
                workers: 1,
            });
            Arc::new(Node::Cache {
                parent: mapped,
                dir: Some(dir.clone()),
                mem: Default::default(),
            })
        };
        let want: Vec<String> = (0..2000).map(|i| i.to_string()).collect();
        let show = |v: Vec<Value>| v.iter().map(apsi_core::api::repr_of).collect::<Vec<_>>();
        let first = crate::stream::collect(&make(), &mut NoCaller).expect("first pass");
        assert_eq!(show(first), want);
        assert_eq!(CALLS.load(Ordering::SeqCst), 2000);
        // A new dataset over the same folder replays from disk.
        let again = crate::stream::collect(&make(), &mut NoCaller).expect("replay");
        assert_eq!(show(again), want);
        assert_eq!(CALLS.load(Ordering::SeqCst), 2000);
        let key = std::fs::metadata(root.join("home/cache.key")).expect("key");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(key.permissions().mode() & 0o777, 0o600);
        // A changed second shard is not loaded: the rest is recomputed.
        let shard = dir.join("shard-00001.apsic");
        let mut bytes = std::fs::read(&shard).expect("shard");
        if let Some(b) = bytes.last_mut() {
            *b ^= 1;
        }
        std::fs::write(&shard, bytes).expect("tamper");
        let third = crate::stream::collect(&make(), &mut NoCaller).expect("recompute");
        assert_eq!(show(third), want);
        assert_eq!(CALLS.load(Ordering::SeqCst), 4000);

        // The key covers the source's content: another list in the same
        // folder is computed, not replayed (issue 17).
        let list_cache = |xs: Vec<i64>, d: &std::path::Path| {
            Arc::new(Node::Cache {
                parent: Arc::new(Node::List(xs.into_iter().map(Value::Int).collect::<Vec<_>>().into())),
                dir: Some(d.to_path_buf()),
                mem: Default::default(),
            })
        };
        let shown = |xs: Vec<i64>| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let cl = root.join("cl");
        let one = crate::stream::collect(&list_cache(vec![1, 2, 3], &cl), &mut NoCaller).unwrap();
        assert_eq!(show(one), shown(vec![1, 2, 3]));
        let other = crate::stream::collect(&list_cache(vec![7, 8, 9], &cl), &mut NoCaller).unwrap();
        assert_eq!(show(other), shown(vec![7, 8, 9]));
        // ... and a shard copied in from another cache does not verify there.
        let (a_dir, b_dir) = (root.join("a"), root.join("b"));
        let a_items: Vec<i64> = (0..1500).collect();
        let b_items: Vec<i64> = (5000..6500).collect();
        crate::stream::collect(&list_cache(a_items, &a_dir), &mut NoCaller).unwrap();
        crate::stream::collect(&list_cache(b_items.clone(), &b_dir), &mut NoCaller).unwrap();
        std::fs::copy(a_dir.join("shard-00001.apsic"), b_dir.join("shard-00001.apsic")).unwrap();
        let b_again = crate::stream::collect(&list_cache(b_items.clone(), &b_dir), &mut NoCaller).unwrap();
        assert_eq!(show(b_again), shown(b_items));
        let _ = std::fs::remove_dir_all(&root);
    }
}
