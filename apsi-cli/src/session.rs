//! One persistent runtime that runs inputs one after another, keeping its
//! globals: what `apsi repl` and `apsi kernel` (a notebook's cells) share.
//! An input is parsed, checked against the names earlier inputs bound, and
//! run; a trailing expression's value comes back to be shown.

use crate::args::RunOptions;
use apsi_core::check::{self, CheckEnv, ReplScope};
use apsi_core::diagnostic::{self, Diagnostic, SourceMap};
use apsi_core::driver::{RunError, Runtime, RuntimeConfig};
use apsi_core::module::ModuleDescriptor;
use apsi_core::syntax;
use apsi_core::value::Value;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What running one input gave.
pub enum Outcome {
    /// It ran; the value of a trailing expression (unless it is none).
    Value(Option<Value>),
    /// A syntax, check or runtime error (rendered by [`Session::render`]).
    Failed(Vec<Diagnostic>),
    /// `exit(code)` was called.
    Exit(i32),
}

pub struct Session {
    runtime: Runtime,
    sources: Arc<SourceMap>,
    scope: ReplScope,
    env: CheckEnv,
    counter: usize,
    /// Names inputs as `<LABEL:N>` in diagnostics (`repl`, `cell`).
    label: &'static str,
}

impl Session {
    /// A session with the compiled-in modules plus `extra` (the kernel's
    /// `display`), writing program output to `output` (`None`: stdout).
    pub fn new(
        opts: &RunOptions,
        label: &'static str,
        extra: Vec<ModuleDescriptor>,
        output: Option<Box<dyn Write + Send>>,
        line_buffered: bool,
    ) -> Result<Session, String> {
        let mut modules = crate::modules::compiled_in();
        modules.extend(extra);
        crate::modules::grant(&opts.allowed);
        let config = RuntimeConfig {
            argv: Vec::new(),
            modules,
            threads: opts.threads,
            output,
            line_buffered,
            ..RuntimeConfig::default()
        };
        let runtime = Runtime::new(config).map_err(|e| e.to_string())?;
        let env = crate::run::runtime_env(&runtime, &opts.allowed);
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Ok(Session {
            runtime,
            sources: Arc::new(SourceMap::new()),
            scope: ReplScope::new(cwd),
            env,
            counter: 0,
            label,
        })
    }

    #[cfg_attr(not(feature = "kernel"), allow(dead_code))]
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Parses, checks and runs one input.
    pub fn eval(&mut self, code: &str) -> Outcome {
        self.counter += 1;
        let name = format!("<{}:{}>", self.label, self.counter);
        let file = self.sources.add(name, code.to_string());
        let (ast, syntax_errors) = syntax::parse(file, code);
        if !syntax_errors.is_empty() {
            return Outcome::Failed(syntax_errors);
        }
        let program = match check::check_source(ast, file, &self.env, &mut self.scope, self.sources.clone()) {
            Ok(p) => p,
            Err(check_errors) => return Outcome::Failed(check_errors),
        };
        let r = self.runtime.eval_program(&program);
        self.runtime.flush();
        match r {
            Ok(v) => Outcome::Value(v),
            Err(RunError::Error(d)) => Outcome::Failed(vec![d]),
            Err(RunError::Exit(code)) => Outcome::Exit(code),
        }
    }

    /// The diagnostics' text as the CLI shows them (with or without colour).
    pub fn render(&self, diags: &[Diagnostic], color: bool) -> String {
        diagnostic::render_all(diags, &self.sources, color)
    }

    /// `:time CODE`: runs it once; the outcome and how long it took.
    pub fn time(&mut self, code: &str) -> (Outcome, Duration) {
        let t = Instant::now();
        let o = self.eval(code);
        (o, t.elapsed())
    }

    /// `:bench CODE`: runs it at least 5 times and for about half a second;
    /// the best/median/mean/worst line, or the outcome of the run that failed.
    pub fn bench(&mut self, code: &str) -> Result<String, Outcome> {
        let mut times = Vec::new();
        let budget = Duration::from_millis(500);
        let started = Instant::now();
        while times.len() < 5 || (started.elapsed() < budget && times.len() < 10_000) {
            let t = Instant::now();
            match self.eval(code) {
                Outcome::Value(_) => times.push(t.elapsed()),
                failed => return Err(failed),
            }
        }
        let secs: Vec<f64> = times.iter().map(Duration::as_secs_f64).collect();
        Ok(apsi_core::measure::Summary::of(&secs)
            .map(|s| s.line())
            .unwrap_or_default())
    }
}

pub fn fmt_duration(d: Duration) -> String {
    apsi_core::measure::fmt_seconds(d.as_secs_f64())
}
