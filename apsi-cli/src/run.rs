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
    let prelude = apsi_core::builtins::prelude();
    let mut names: Vec<String> = prelude.exports.iter().map(|(n, _)| n.to_string()).collect();
    names.push("argv".to_string());
    let mut env = env_for(names, &crate::modules::compiled_in(), allowed);
    env.source_readers
        .extend(prelude.source_readers.iter().map(|r| r.to_string()));
    env
}

/// The checker's view of the compiled-in modules; the caller fills in the
/// prelude's names and source readers (from the runtime, so the prelude is
/// built once per process).
pub fn env_for(prelude: Vec<String>, modules: &[ModuleDescriptor], allowed: &[String]) -> CheckEnv {
    CheckEnv {
        prelude,
        builtin_modules: modules.iter().map(ModuleDescriptor::check_info).collect(),
        allowed: allowed.to_vec(),
        absent_modules: crate::modules::absent(),
        source_readers: modules
            .iter()
            .flat_map(|m| m.source_readers.iter().map(|r| r.to_string()))
            .collect(),
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
    check::load(Path::new(file), file, env, sources.clone())
}

pub fn run_file(opts: &RunOptions) -> u8 {
    let start = Instant::now();
    if let Some(f) = &opts.native_ir {
        // Read by apsi-native when it compiles a function (before any thread starts).
        std::env::set_var("APSI_NATIVE_IR", f);
    }
    let sources = Arc::new(SourceMap::new());
    let modules = crate::modules::compiled_in();
    let mut env = env_for(Vec::new(), &modules, &opts.allowed);
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
        ..RuntimeConfig::default()
    };
    let mut runtime = match Runtime::new(config) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    env.prelude = runtime.prelude_names();
    env.source_readers = runtime.source_readers();
    crate::signals::on_stop_flush(runtime.output_flusher());
    let program = match load(&opts.file, &env, &sources) {
        Ok(p) => p,
        Err(diags) => {
            report(&diags, &sources);
            return 1;
        }
    };
    // Every unit is compiled before any runs: all compile errors, then nothing ran.
    let compiled = match runtime.compile(&program) {
        Ok(c) => c,
        Err(diags) => {
            report(&diags, &sources);
            return 1;
        }
    };
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
    if opts.time {
        eprintln!("time: {:.3} ms", start.elapsed().as_secs_f64() * 1e3);
    }
    code
}

/// `apsi check`: the checker, then the compiler (nothing runs), so a file
/// that checks `ok` also starts.
pub fn check_files(files: &[String], allowed: &[String]) -> u8 {
    let env = check_env(allowed);
    let runtime = match Runtime::new(RuntimeConfig {
        modules: crate::modules::compiled_in(),
        ..RuntimeConfig::default()
    }) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
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
