//! `apsi repl`: the interactive prompt, with history, multi-line blocks,
//! expression values printed, `:time`, `:bench`, `:help` and `:quit`.

use crate::args::RunOptions;
use crate::run::report;
use apsi_core::check::{self, CheckEnv, ReplScope};
use apsi_core::diagnostic::SourceMap;
use apsi_core::driver::{RunError, Runtime, RuntimeConfig};
use apsi_core::{format, syntax};
use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::Editor;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

const HELP: &str = "\
Type Apsi code; a block (a line ending in ':') continues until an empty line.
  :time CODE     run CODE once and print how long it took
  :bench CODE    run CODE repeatedly and print best/median/mean/worst
  :help          this text
  :quit          leave (also Ctrl-D)";

fn history_path() -> Option<PathBuf> {
    let home = std::env::var_os("APSI_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".apsi")))?;
    std::fs::create_dir_all(&home).ok()?;
    Some(home.join("history"))
}

struct Session {
    runtime: Runtime,
    sources: Arc<SourceMap>,
    scope: ReplScope,
    env: CheckEnv,
    counter: usize,
}

impl Session {
    /// Parse, check and run one input; print its value or its error.
    fn eval(&mut self, code: &str, print_value: bool) -> bool {
        self.counter += 1;
        let name = format!("<repl:{}>", self.counter);
        let file = self.sources.add(name, code.to_string());
        let (ast, syntax_errors) = syntax::parse(file, code);
        if !syntax_errors.is_empty() {
            report(&syntax_errors, &self.sources);
            return false;
        }
        let program = match check::check_source(ast, file, &self.env, &mut self.scope, self.sources.clone()) {
            Ok(p) => p,
            Err(check_errors) => {
                report(&check_errors, &self.sources);
                return false;
            }
        };
        match self.runtime.eval_program(&program) {
            Ok(Some(v)) => {
                if print_value {
                    println!("{}", format::repr_of(&v));
                }
                true
            }
            Ok(None) => true,
            Err(RunError::Error(d)) => {
                report(&[d], &self.sources);
                false
            }
            Err(RunError::Exit(code)) => std::process::exit(code),
        }
    }
}

fn fmt_duration(d: Duration) -> String {
    apsi_core::measure::fmt_seconds(d.as_secs_f64())
}

fn bench(session: &mut Session, code: &str) {
    let mut times = Vec::new();
    let budget = Duration::from_millis(500);
    let started = Instant::now();
    while times.len() < 5 || (started.elapsed() < budget && times.len() < 10_000) {
        let t = Instant::now();
        if !session.eval(code, false) {
            return;
        }
        times.push(t.elapsed());
    }
    let secs: Vec<f64> = times.iter().map(Duration::as_secs_f64).collect();
    if let Some(s) = apsi_core::measure::Summary::of(&secs) {
        println!("{}", s.line());
    }
}

pub fn start(opts: &RunOptions) -> u8 {
    let modules = crate::modules::compiled_in();
    let mut env = crate::run::env_for(Vec::new(), &modules, &opts.allowed);
    crate::modules::grant(&opts.allowed);
    let config = RuntimeConfig {
        argv: Vec::new(),
        modules,
        threads: opts.threads,
        ..RuntimeConfig::default()
    };
    let runtime = match Runtime::new(config) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    env.prelude = runtime.prelude_names();
    env.source_readers = runtime.source_readers();
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let mut session = Session {
        runtime,
        sources: Arc::new(SourceMap::new()),
        scope: ReplScope::new(cwd),
        env,
        counter: 0,
    };
    let mut editor: Editor<(), FileHistory> = match Editor::new() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: cannot start the line editor: {e}");
            return 1;
        }
    };
    let history = history_path();
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    println!("Apsi {} — :help for help, :quit to leave", crate::APSI_VERSION);
    let mut buffer = String::new();
    loop {
        let prompt = if buffer.is_empty() { ">>> " } else { "... " };
        let line = match editor.readline(prompt) {
            Ok(l) => l,
            Err(ReadlineError::Interrupted) => {
                buffer.clear();
                println!("(interrupted; :quit to leave)");
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                eprintln!("error: cannot read input: {e}");
                return 1;
            }
        };
        if buffer.is_empty() {
            let trimmed = line.trim();
            if trimmed.is_empty() {
                continue;
            }
            if let Some(cmd) = trimmed.strip_prefix(':') {
                let _ = editor.add_history_entry(line.as_str());
                let (name, rest) = cmd.split_once(char::is_whitespace).unwrap_or((cmd, ""));
                match name {
                    "quit" | "q" | "exit" => break,
                    "help" | "h" => println!("{HELP}"),
                    "time" if !rest.trim().is_empty() => {
                        let t = Instant::now();
                        if session.eval(rest.trim(), true) {
                            println!("time: {}", fmt_duration(t.elapsed()));
                        }
                    }
                    "bench" if !rest.trim().is_empty() => bench(&mut session, rest.trim()),
                    "time" | "bench" => println!("usage: :{name} CODE"),
                    other => println!("unknown command ':{other}' — :help lists the commands"),
                }
                continue;
            }
        }
        buffer.push_str(&line);
        buffer.push('\n');
        // A block ends with an empty line; anything else that is complete runs now.
        let block_open = buffer.lines().next().is_some_and(|l| l.trim_end().ends_with(':'));
        if syntax::is_incomplete(&buffer) || (block_open && !line.trim().is_empty()) {
            continue;
        }
        let code = std::mem::take(&mut buffer);
        let _ = editor.add_history_entry(code.trim_end());
        session.eval(&code, true);
    }
    if let Some(h) = &history {
        let _ = editor.save_history(h);
    }
    0
}
