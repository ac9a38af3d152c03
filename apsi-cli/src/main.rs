//! The `apsi` command: thin wiring of the core and the compiled-in modules.
//! This crate is the only place that talks to the terminal.
//!
//! Exit statuses: 0 success, 1 program error, 2 command-line usage error,
//! 70 internal error (a bug in Apsi: never a raw Rust panic or backtrace).

mod alloc;
mod args;
mod bench;
mod build;
mod cache;
mod doctor;
mod help;
#[cfg(feature = "kernel")]
mod kernel;
mod modules;
mod net;
#[cfg(feature = "pkg")]
mod pkg;
mod placement;
mod repl;
mod run;
mod session;
mod signals;
mod term;
#[cfg(all(feature = "layers", feature = "python"))]
mod torch_driver;

use std::process::ExitCode;

/// mimalloc (see `alloc.rs`).
#[global_allocator]
static GLOBAL: alloc::Mimalloc = alloc::Mimalloc;

/// The stack size of the thread that runs programs: the VM keeps Apsi frames
/// on the heap, but parsing and native callbacks recurse on the Rust stack.
const MAIN_STACK: usize = 256 * 1024 * 1024;

/// The version of Apsi as a product (this crate's), as `apsi --version`
/// and `apsi doctor` report it; the core's is `apsi_core::VERSION`.
pub const APSI_VERSION: &str = env!("CARGO_PKG_VERSION");

fn main() -> ExitCode {
    alloc::tune();
    install_panic_hook();
    let argv: Vec<String> = std::env::args().skip(1).collect();
    // A program built by `apsi build` runs its built-in program.
    let app = match build::embedded() {
        Some(Ok(app)) => Some(app),
        Some(Err(e)) => {
            eprintln!("error: {e}; it will not run\n  = hint: build it again with `apsi build`");
            return ExitCode::from(1);
        }
        None => None,
    };
    // `apsi run` stops on SIGINT/SIGTERM with its output flushed; the REPL
    // keeps the terminal's own Ctrl-C handling.
    #[cfg(unix)]
    let blocked = if app.is_some() || argv.first().map(String::as_str) == Some("run") {
        signals::block()
    } else {
        None
    };
    // A Jupyter kernel: SIGINT (the notebook's interrupt) stops the running
    // cell with KeyboardInterrupt instead of the process.
    #[cfg(feature = "kernel")]
    if app.is_none() && kernel::is_server(&argv) {
        signals::install_interrupt(apsi_core::interrupt::request);
    }
    let launch = match app {
        Some(app) => Launch::App(app),
        None => Launch::Command(args::parse(&argv)),
    };
    // `apsi run` with the cache: this thread reads, hashes and verifies the
    // program's cache entry while the interpreter's builds the runtime.
    let ahead = match &launch {
        Launch::Command(Ok(args::Command::Run(opts))) => cache::expect_look_ahead(opts),
        _ => None,
    };
    // A run ends the process from the interpreter's thread once the
    // program is done and its runtime dropped (output flushed, temporary
    // files removed): nothing is left to do but exit, and exiting there
    // spares the thread's own exit (its stack handed back page by page),
    // waking this thread and unmapping that stack (with the hand-over's
    // polling, 0.2-0.35 ms of `hello.apsi` here: bench/README, stop 49).
    let exit_from_worker = matches!(launch, Launch::App(_) | Launch::Command(Ok(args::Command::Run(_))));
    // The interpreter's thread starts on another processor than this one's
    // (`placement.rs`).
    let (handoff, apart) = placement::pair();
    let worker = std::thread::Builder::new()
        .name("apsi-main".into())
        .stack_size(MAIN_STACK)
        .spawn(move || {
            apart.settle();
            let code = match launch {
                Launch::App(app) => build::run_embedded(app, &argv),
                Launch::Command(command) => dispatch(command),
            };
            if exit_from_worker {
                // Flushes the standard streams, runs the exit handlers.
                std::process::exit(i32::from(code));
            }
            code
        });
    if let Ok(w) = &worker {
        handoff.place(w);
    }
    if let (Ok(_), Some(ahead)) = (&worker, ahead) {
        ahead.make();
    }
    // The interpreter's thread ends the process: this one watches for
    // SIGINT and SIGTERM until then.
    #[cfg(unix)]
    if let (Ok(_), true, Some(set)) = (&worker, exit_from_worker, blocked) {
        signals::watch(set);
    }
    let code = match worker {
        Ok(handle) => handle.join().unwrap_or(70),
        Err(e) => {
            eprintln!("internal error: cannot start the interpreter thread: {e}");
            70
        }
    };
    ExitCode::from(code)
}

/// What the interpreter's thread runs: the program built into this
/// executable, or the command line's command.
enum Launch {
    App(build::App),
    Command(Result<args::Command, args::UsageError>),
}

fn dispatch(command: Result<args::Command, args::UsageError>) -> u8 {
    let command = match command {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    match command {
        args::Command::Version => {
            print!("{}", help::version_text());
            0
        }
        args::Command::Help(topic) => help::print_help(topic.as_deref()),
        args::Command::Run(opts) => run::run_file(&opts),
        args::Command::Check { files, allowed } => run::check_files(&files, &allowed),
        args::Command::Compile {
            paths,
            allowed,
            runtime,
        } => run::compile_paths(&paths, &allowed, runtime),
        args::Command::Bench(opts) => bench::main(&opts),
        args::Command::Build { file, out, allowed } => build::build(&file, &out, &allowed),
        args::Command::Repl(opts) => repl::start(&opts),
        args::Command::Doctor(a) => doctor::main(&a),
        #[cfg(feature = "kernel")]
        args::Command::Kernel(a) => kernel::main(&a),
        #[cfg(not(feature = "kernel"))]
        args::Command::Kernel(_) => {
            eprintln!(
                "error: this apsi was built without the Jupyter kernel\n  = hint: rebuild with the `kernel` cargo feature"
            );
            2
        }
        #[cfg(feature = "pkg")]
        args::Command::Pkg(a) => pkg::main(&a),
        #[cfg(not(feature = "pkg"))]
        args::Command::Pkg(_) => {
            eprintln!(
                "error: this apsi was built without package support\n  = hint: rebuild with the `pkg` cargo feature"
            );
            2
        }
    }
}

/// A panic anywhere is a bug in Apsi: say so plainly, with a report hint,
/// and exit 70 without a Rust backtrace.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown fault".to_string());
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("internal error: {msg}{place}");
        eprintln!("  = hint: this is a bug in Apsi {}, not in your program; please report it with the program that triggered it", APSI_VERSION);
        std::process::exit(70);
    }));
}

#[cfg(test)]
mod tests {
    /// The unwinder is linked in (`build.rs`): a panic still unwinds to
    /// the `catch_unwind` that the thread pools use.
    #[test]
    fn a_panic_unwinds_with_the_linked_in_unwinder() {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let dropped = std::sync::atomic::AtomicBool::new(false);
        struct Guard<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Guard<'_> {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _g = Guard(&dropped);
            panic!("unwind me");
        }));
        std::panic::set_hook(hook);
        assert!(r.is_err());
        assert!(
            dropped.load(std::sync::atomic::Ordering::SeqCst),
            "locals are dropped on the way out"
        );
    }
}
