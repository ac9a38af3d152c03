//! `apsi run` and `apsi check`: load and check a program, then run it.

use crate::args::RunOptions;
use crate::term;
use apsi_core::check::{self, CheckEnv, Program};
use apsi_core::diagnostic::{self, Diagnostic, SourceMap};
use apsi_core::driver::{RunError, Runtime, RuntimeConfig};
use apsi_core::module::ModuleDescriptor;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// What the checker needs to know about this binary, when no runtime exists
/// (`apsi check`).
pub fn check_env(allowed: &[String]) -> CheckEnv {
    let prelude = apsi_core::builtins::shared_prelude();
    let modules = crate::modules::compiled_in();
    let mut names: Vec<String> = prelude.exports.iter().map(|(n, _)| n.to_string()).collect();
    names.push("argv".to_string());
    let readers = modules.iter().flat_map(|m| m.source_readers.iter());
    CheckEnv {
        prelude: names,
        builtin_modules: modules.iter().map(ModuleDescriptor::check_info).collect(),
        allowed: allowed.to_vec(),
        absent_modules: crate::modules::absent(),
        source_readers: readers
            .chain(prelude.source_readers.iter())
            .map(|r| r.to_string())
            .collect(),
    }
}

/// What the checker needs to know about `runtime`: its prelude, its
/// modules and their source readers.
pub fn runtime_env(runtime: &Runtime, allowed: &[String]) -> CheckEnv {
    CheckEnv {
        prelude: runtime.prelude_names(),
        builtin_modules: runtime.builtin_module_infos(),
        allowed: allowed.to_vec(),
        absent_modules: crate::modules::absent(),
        source_readers: runtime.source_readers(),
    }
}

pub fn report(diags: &[Diagnostic], sources: &SourceMap) {
    let text = diagnostic::render_all(diags, sources, term::stderr_color());
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    if !text.ends_with('\n') {
        let _ = err.write_all(b"\n");
    }
}

fn load(file: &str, env: &CheckEnv, sources: &Arc<SourceMap>) -> Result<Program, Vec<Diagnostic>> {
    crate::alloc::huge_pages_ahead();
    check::load(Path::new(file), file, env, sources.clone())
}

pub fn run_file(opts: &RunOptions) -> u8 {
    run_program(opts, None)
}

/// Runs `opts.file`, or the program built into this executable (`app`,
/// from `apsi build`: no loading, checking or compiling).
pub fn run_program(opts: &RunOptions, app: Option<crate::build::App>) -> u8 {
    let start = Instant::now();
    // One runtime runs in this process: while only its thread runs Apsi
    // code, reference counts need no locked instructions (`solo.rs`).
    apsi_core::value::solo::allow();
    if let Some(f) = &opts.native_ir {
        // Read by apsi-native when it compiles a function (before any thread starts).
        std::env::set_var("APSI_NATIVE_IR", f);
    }
    let sources = Arc::new(SourceMap::new());
    let modules = crate::modules::compiled_in();
    crate::modules::grant(&opts.allowed);
    // `--allow-net`: `http(s)://` sources are downloaded for the program.
    let net = opts
        .allowed
        .iter()
        .any(|a| a == "net" || a == "all")
        .then(crate::net::HttpSource::new);
    let config = RuntimeConfig {
        argv: opts.argv.clone(),
        modules,
        threads: opts.threads,
        output: closed_stdout(),
        line_buffered: std::io::IsTerminal::is_terminal(&std::io::stdout()),
        url_source: net.clone().map(|n| n as Arc<dyn apsi_core::api::UrlSource>),
        // This thread runs the program and ends with the process.
        kernel_pool_here: true,
        ..RuntimeConfig::default()
    };
    let mut runtime = match Runtime::new(config) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    crate::signals::on_stop_flush(runtime.output_flusher());
    let use_cache = crate::cache::enabled(opts.no_cache);
    let loaded = match app {
        Some(app) => {
            for (name, text) in app.files {
                sources.add(name, text);
            }
            let n = app.compiled.len();
            match runtime.decode_compiled_in(app.compiled, 0..n) {
                Ok(c) => Ok(c),
                Err(e) => {
                    eprintln!("error: the program built into this executable cannot be loaded: {e}");
                    return 1;
                }
            }
        }
        None => {
            let ahead = if use_cache {
                crate::cache::take_look_ahead()
            } else {
                None
            };
            // Only compiling needs the checker's view (a cache hit does not).
            let env = || runtime_env(&runtime, &opts.allowed);
            crate::cache::load_compiled(&opts.file, &opts.allowed, &env, &runtime, &sources, use_cache, ahead)
        }
    };
    let compiled = match loaded {
        Ok(c) => c,
        Err(diags) => {
            report(&diags, &sources);
            return 1;
        }
    };
    // The program's own allocations (tensors among them) get huge pages,
    // as compiling does; loading it did not need them (`alloc.rs`).
    crate::alloc::huge_pages_ahead();
    let result = runtime.run_compiled(&compiled);
    if let Some(net) = &net {
        net.clean();
    }
    let mut code = match result {
        Ok(()) => 0,
        Err(RunError::Exit(code)) => code.clamp(0, 255) as u8,
        Err(RunError::Error(d)) => {
            report(&[d], &sources);
            1
        }
    };
    // Output that never arrived is a failure, whatever the program did.
    if let Err(e) = runtime.finish_output() {
        eprintln!("error: the program's output was not all written: {e}");
        code = code.max(1);
    }
    // The process ends when this returns (`main.rs`): freeing the program's
    // code object by object (0.1M instructions after a cached start of
    // 5,000 lines) is
    // work the exit does at once.
    std::mem::forget(compiled);
    if opts.time {
        eprintln!(
            "time: {}",
            apsi_core::measure::fmt_seconds(start.elapsed().as_secs_f64())
        );
    }
    // What the cycle collector did (docs/LANGUAGE.md, "Memory").
    if std::env::var_os("APSI_GC_STATS").is_some_and(|v| v != "0") {
        let s = apsi_core::value::cycles::stats();
        eprintln!(
            "gc: {} collections, {} instances freed, {} tracked at exit",
            s.collections, s.freed, s.tracked
        );
    }
    code
}

/// A runtime with every compiled-in module, for checking and compiling
/// without running (`apsi check`, `apsi build`); `None` after reporting why.
pub(crate) fn checking_runtime() -> Option<Runtime> {
    match Runtime::new(RuntimeConfig {
        modules: crate::modules::compiled_in(),
        ..RuntimeConfig::default()
    }) {
        Ok(r) => Some(r),
        Err(e) => {
            eprintln!("error: {e}");
            None
        }
    }
}

/// `apsi check`: the checker, then the compiler (nothing runs), so a file
/// that checks `ok` also starts.
pub fn check_files(files: &[String], allowed: &[String]) -> u8 {
    let env = check_env(allowed);
    let Some(runtime) = checking_runtime() else {
        return 1;
    };
    let mut failed = false;
    for f in files {
        let sources = Arc::new(SourceMap::new());
        match load(f, &env, &sources).and_then(|p| runtime.compile(&p).map(|_| ())) {
            Ok(()) => println!("{f}: ok"),
            Err(diags) => {
                report(&diags, &sources);
                failed = true;
            }
        }
    }
    u8::from(failed)
}

/// `apsi compile PATHS…`: checks and compiles every `.apsi` file named (a
/// folder: every `.apsi` file under it) into the compile cache, reporting
/// every error in every file. Exit status 1 when any file has an error.
pub fn compile_paths(paths: &[String], allowed: &[String], runtime_parts: bool) -> u8 {
    if runtime_parts {
        // Everything Apsi itself provides (the prelude, every module) is
        // Rust compiled into this binary: there is no Apsi source to compile.
        println!("--runtime: nothing to compile (Apsi's prelude and modules are compiled into apsi itself)");
    }
    let mut files = Vec::new();
    let mut failed = false;
    for p in paths {
        let path = Path::new(p);
        if path.is_dir() {
            let before = files.len();
            collect_apsi_files(path, &mut files, 0);
            if files.len() == before {
                eprintln!("warning: no .apsi files under {p}");
            }
        } else {
            files.push(p.clone());
        }
    }
    let modules = crate::modules::compiled_in();
    let build = crate::cache::build_identity();
    let runtime = match Runtime::new(RuntimeConfig {
        modules,
        ..RuntimeConfig::default()
    }) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    let env = runtime_env(&runtime, allowed);
    let cache = if crate::cache::enabled(false) {
        match apsi_cache::CompileCache::open(crate::APSI_VERSION) {
            Ok(c) => Some(c),
            Err(e) => {
                eprintln!("warning: compile cache: {e}; checking only");
                None
            }
        }
    } else {
        eprintln!("warning: APSI_NO_CACHE is set: checking and compiling only, nothing is stored");
        None
    };
    for f in &files {
        let sources = Arc::new(SourceMap::new());
        match crate::cache::compile_into_cache(&build, f, &env, &runtime, &sources, cache.as_ref()) {
            Ok(Some(_)) => println!("{f}: compiled"),
            Ok(None) => println!("{f}: ok (not cached)"),
            Err(diags) => {
                report(&diags, &sources);
                failed = true;
            }
        }
    }
    u8::from(failed)
}

/// The `.apsi` files under `dir`, sorted, skipping hidden folders.
fn collect_apsi_files(dir: &Path, out: &mut Vec<String>, depth: usize) {
    if depth > 64 {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        let hidden = p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'));
        let Ok(m) = p.symlink_metadata() else { continue };
        if m.is_dir() && !hidden {
            collect_apsi_files(&p, out, depth + 1);
        } else if m.is_file() && p.extension().is_some_and(|e| e == "apsi") {
            out.push(p.display().to_string());
        }
    }
}

/// A program's output must not vanish without a word when apsi was started
/// with descriptor 1 closed (`apsi run x.apsi >&-`): Rust's start-up code
/// reopens a closed descriptor 1 as `/dev/null` for reading and writing,
/// which a shell redirection (`> /dev/null`, write-only) never does. Such a
/// stdout is replaced by a sink whose writes fail, so the run ends with an
/// error and exit status 1.
fn closed_stdout() -> Option<Box<dyn Write + Send>> {
    #[cfg(unix)]
    {
        // SAFETY: fstat/stat/fcntl only read facts about descriptor 1 and a path.
        let reopened = unsafe {
            let mut fd1: libc::stat = std::mem::zeroed();
            let mut null: libc::stat = std::mem::zeroed();
            libc::fstat(1, &mut fd1) == 0
                && libc::stat(c"/dev/null".as_ptr(), &mut null) == 0
                && fd1.st_rdev == null.st_rdev
                && (fd1.st_mode & libc::S_IFMT) == libc::S_IFCHR
                && libc::fcntl(1, libc::F_GETFL) & libc::O_ACCMODE == libc::O_RDWR
        };
        if reopened {
            return Some(Box::new(ClosedStdout));
        }
    }
    None
}

struct ClosedStdout;

impl Write for ClosedStdout {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        Err(std::io::Error::other("standard output is closed"))
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
