//! The compile cache as `apsi run`, `apsi bench` and `apsi compile` use it
//! (the store itself is apsi-cache; the bytes are `apsi_core::serial`'s).
//!
//! An entry is named by the SHA-256 of everything that decides what the
//! compiler makes of a program: the main file's text, canonical path and
//! name as given (diagnostics show it), this apsi's version and build (the
//! executable's size and time), the core's and every compiled-in module's
//! version, the serial format, and the permissions granted (`--allow-*`,
//! which the Guard checks before anything runs). The entry itself records
//! every module file's hash, checked on load.

use crate::args::RunOptions;
use apsi_cache::compile::{self, CompileCache, Entry, FileRecord, Known, Lookup};
use apsi_core::check::{self, CheckEnv, Program};
use apsi_core::diagnostic::{Diagnostic, FileId, SourceMap};
use apsi_core::driver::{CompiledProgram, Runtime};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Whether this run may use the cache (`--no-cache`, `APSI_NO_CACHE=1`).
pub fn enabled(no_cache_flag: bool) -> bool {
    !no_cache_flag && !compile::disabled_by_env()
}

fn warn(msg: &str) {
    eprintln!("warning: compile cache: {msg}");
}

/// What identifies this apsi build: version, core and module versions, and
/// the executable's size and modification time (a rebuild of the same
/// version is another build).
pub fn build_identity() -> String {
    let mut s = format!(
        "apsi {} core {} serial {}",
        crate::APSI_VERSION,
        apsi_core::VERSION,
        apsi_core::serial::FORMAT
    );
    for (name, version) in crate::modules::versions() {
        s.push_str(&format!(" {name}={version}"));
    }
    if let Ok(m) = std::env::current_exe().and_then(std::fs::metadata) {
        use std::os::unix::fs::MetadataExt;
        s.push_str(&format!(" exe {} {}.{}", m.len(), m.mtime(), m.mtime_nsec()));
    }
    s
}

fn entry_name(build: &str, display: &str, canon: &Path, text_hash: &[u8; 32], allowed: &[String]) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut allowed = allowed.to_vec();
    allowed.sort();
    allowed.dedup();
    compile::entry_name(&[
        b"apsi compile cache v1",
        build.as_bytes(),
        allowed.join(",").as_bytes(),
        display.as_bytes(),
        canon.as_os_str().as_bytes(),
        text_hash,
    ])
}

/// The part of a cached start that needs no runtime: the program read and
/// hashed, its entry found, read and verified. `apsi run` does it on the
/// process's first thread while the interpreter's thread builds the
/// runtime (`main.rs`), so the two overlap.
pub struct LookAhead {
    file: String,
    allowed: Vec<String>,
    cache: CompileCache,
    name: String,
    lookup: Lookup,
}

/// [`LookAhead`] for `file` run with `allowed`; `None` when anything is
/// unusual (an unreadable file, no home): the ordinary path reports it.
pub fn look_ahead(file: &str, allowed: &[String]) -> Option<LookAhead> {
    // Only a regular file can be read twice (here, then by the compiler
    // on a miss): a pipe such as `/dev/stdin` is left to the ordinary
    // path, which reads it once and does not cache it.
    if !std::fs::metadata(file).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let (Ok(text), Ok(canon)) = (compile::read_text(Path::new(file)), std::fs::canonicalize(file)) else {
        return None;
    };
    let cache = CompileCache::open(crate::APSI_VERSION).ok()?;
    let digest = apsi_cache::key::content_digest(text.as_bytes());
    let name = entry_name(&build_identity(), file, &canon, &digest, allowed);
    let known = Known {
        path: canon,
        text,
        digest,
    };
    let lookup = cache.load(&name, vec![known]);
    Some(LookAhead {
        file: file.to_string(),
        allowed: allowed.to_vec(),
        cache,
        name,
        lookup,
    })
}

/// Where the first thread hands its [`LookAhead`] to the interpreter's.
static HANDOVER: std::sync::Mutex<Option<std::sync::mpsc::Receiver<Option<LookAhead>>>> = std::sync::Mutex::new(None);

/// A look-ahead the interpreter's thread waits for ([`take_look_ahead`]).
pub struct ExpectedLookAhead {
    tx: std::sync::mpsc::Sender<Option<LookAhead>>,
    file: String,
    allowed: Vec<String>,
}

impl ExpectedLookAhead {
    /// Makes the look-ahead and hands it over.
    pub fn make(self) {
        let _ = self.tx.send(look_ahead(&self.file, &self.allowed));
    }
}

/// For `apsi run` with the cache on: registers a look-ahead for the caller
/// to make while the interpreter's thread starts; `None` without the cache.
pub fn expect_look_ahead(opts: &RunOptions) -> Option<ExpectedLookAhead> {
    if !enabled(opts.no_cache) {
        return None;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    *HANDOVER.lock().unwrap_or_else(|p| p.into_inner()) = Some(rx);
    Some(ExpectedLookAhead {
        tx,
        file: opts.file.clone(),
        allowed: opts.allowed.clone(),
    })
}

/// The look-ahead the first thread made for this run, waiting for it; `None`
/// when there is none (it is taken once).
pub fn take_look_ahead() -> Option<LookAhead> {
    let rx = HANDOVER.lock().unwrap_or_else(|p| p.into_inner()).take()?;
    // The look-ahead is usually a fraction of a millisecond away: this
    // thread asks again (giving way to any thread that wants its core)
    // rather than sleeping, since waking a sleeping thread took 40-60 us
    // here. After a few milliseconds it sleeps until the hand-over.
    let spin_until = std::time::Instant::now() + std::time::Duration::from_millis(3);
    // Waiting, it readies the memory its next allocations will come from.
    let mut warm = crate::alloc::WarmHeap::new();
    loop {
        match rx.try_recv() {
            Ok(ahead) => return ahead,
            Err(std::sync::mpsc::TryRecvError::Disconnected) => return None,
            Err(std::sync::mpsc::TryRecvError::Empty) if std::time::Instant::now() < spin_until => {
                if !warm.touch_next() {
                    std::thread::yield_now();
                }
            }
            Err(std::sync::mpsc::TryRecvError::Empty) => return rx.recv().ok().flatten(),
        }
    }
}

/// A program ready to run: from the cache, or loaded, checked and
/// compiled (then stored). `Err` holds the diagnostics to report. `ahead`
/// is a look-up already made, used when it was for this file and these
/// permissions (`allowed`). `env` makes the checker's environment, which
/// only compiling needs (a hit does not build it).
pub fn load_compiled(
    file: &str,
    allowed: &[String],
    env: &dyn Fn() -> CheckEnv,
    runtime: &Runtime,
    sources: &Arc<SourceMap>,
    use_cache: bool,
    ahead: Option<LookAhead>,
) -> Result<CompiledProgram, Vec<Diagnostic>> {
    if !use_cache {
        return compile_fresh(file, &env(), runtime, sources).map(|(c, _)| c);
    }
    let ahead = match ahead {
        Some(a) if a.file == file && a.allowed == allowed => Some(a),
        _ => look_ahead(file, allowed),
    };
    // Anything unusual takes the ordinary path, which reports it.
    let Some(LookAhead {
        cache, name, lookup, ..
    }) = ahead
    else {
        return compile_fresh(file, &env(), runtime, sources).map(|(c, _)| c);
    };
    match lookup {
        Lookup::Hit(mut hit) => {
            // The caller's map is fresh, so file ids match the entry's spans.
            let texts = std::mem::take(&mut hit.texts);
            let ids: Vec<FileId> = texts.into_iter().map(|(d, t)| sources.add(d, t)).collect();
            let in_order = ids.iter().enumerate().all(|(i, f)| f.0 as usize == i);
            let (data, range) = hit.into_payload();
            let decoded = runtime.decode_compiled_in(data, range);
            match decoded {
                Ok(c) if in_order => return Ok(c),
                Ok(_) => {}
                Err(e) => {
                    // Verified but unusable here (a module changed without a
                    // version change?): drop it, so the next run stores a good one.
                    let path = cache.path_of(&name);
                    warn(&format!("ignoring {}: {e}; compiling again", path.display()));
                    let _ = std::fs::remove_file(&path);
                }
            }
            // The files already in the map only shift the new ones' ids.
            return compile_fresh(file, &env(), runtime, sources).map(|(c, _)| c);
        }
        Lookup::Miss => {}
        Lookup::Rejected(why) => warn(&format!("ignoring {why}; compiling again")),
    }
    finish_miss(&cache, &name, file, &env(), runtime, sources)
}

fn finish_miss(
    cache: &CompileCache,
    name: &str,
    file: &str,
    env: &CheckEnv,
    runtime: &Runtime,
    sources: &Arc<SourceMap>,
) -> Result<CompiledProgram, Vec<Diagnostic>> {
    let (compiled, program) = compile_fresh(file, env, runtime, sources)?;
    store(cache, name, &program, &compiled, runtime, sources);
    Ok(compiled)
}

fn compile_fresh(
    file: &str,
    env: &CheckEnv,
    runtime: &Runtime,
    sources: &Arc<SourceMap>,
) -> Result<(CompiledProgram, Program), Vec<Diagnostic>> {
    crate::alloc::huge_pages_ahead();
    let program = check::load(Path::new(file), file, env, sources.clone())?;
    // Every unit is compiled before any runs: all compile errors, then nothing ran.
    let compiled = runtime.compile(&program)?;
    Ok((compiled, program))
}

/// The entry of a compiled program; `None` when it cannot be cached (a
/// constant the format cannot name, a file the program does not own).
fn entry_for(program: &Program, compiled: &CompiledProgram, runtime: &Runtime, sources: &SourceMap) -> Option<Entry> {
    let payload = runtime.encode_compiled(compiled).ok()?;
    let mut files = Vec::new();
    let mut id = 0u32;
    while let Some(f) = sources.get(FileId(id)) {
        let unit = program.units.iter().find(|u| u.file == FileId(id))?;
        files.push(FileRecord {
            path: std::fs::canonicalize(&unit.path).unwrap_or_else(|_| unit.path.clone()),
            display: f.name.clone(),
            digest: apsi_cache::key::content_digest(f.text.as_bytes()),
        });
        id += 1;
    }
    Some(Entry {
        files,
        probes: program.probes.clone(),
        payload,
    })
}

fn store(
    cache: &CompileCache,
    name: &str,
    program: &Program,
    compiled: &CompiledProgram,
    runtime: &Runtime,
    sources: &SourceMap,
) {
    let Some(entry) = entry_for(program, compiled, runtime, sources) else {
        return;
    };
    if let Err(e) = cache.store(name, &entry) {
        warn(&format!("{e} (APSI_NO_CACHE=1 turns the cache off)"));
    }
}

/// `apsi compile`: checks and compiles one file into the cache; `Err`
/// holds its diagnostics (reported by the caller against `sources`).
pub fn compile_into_cache(
    build: &str,
    file: &str,
    env: &CheckEnv,
    runtime: &Runtime,
    sources: &Arc<SourceMap>,
    cache: Option<&CompileCache>,
) -> Result<Option<PathBuf>, Vec<Diagnostic>> {
    let (compiled, program) = compile_fresh(file, env, runtime, sources)?;
    let Some(cache) = cache else { return Ok(None) };
    let (Ok(text), Ok(canon)) = (std::fs::read_to_string(file), std::fs::canonicalize(file)) else {
        return Ok(None);
    };
    let name = entry_name(
        build,
        file,
        &canon,
        &apsi_cache::key::content_digest(text.as_bytes()),
        &env.allowed,
    );
    match entry_for(&program, &compiled, runtime, sources) {
        Some(entry) => match cache.store(&name, &entry) {
            Ok(()) => Ok(Some(cache.path_of(&name))),
            Err(e) => {
                warn(&e);
                Ok(None)
            }
        },
        None => Ok(None),
    }
}
