//! One Apsi program, checked and run in-process with its output captured.

use crate::capture::Capture;
use crate::module_infos;
use crate::temp::TempProgram;
use apsi_core::check::{self, CheckEnv};
use apsi_core::diagnostic::{self, Diagnostic, SourceMap};
use apsi_core::driver::{RunError, Runtime, RuntimeConfig};
use apsi_core::module::ModuleDescriptor;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the program's text is.
enum Source {
    /// Text to write to `<name>.apsi` in a directory of its own.
    Text { name: String, text: String },
    /// A file that already exists.
    File(PathBuf),
}

/// A program to check and run, with the modules, thread count and
/// capabilities the run gets. Build it with [`Program::new`] or
/// [`Program::file`], then call [`Program::run`].
pub struct Program {
    source: Source,
    modules: Vec<ModuleDescriptor>,
    threads: Option<usize>,
    allowed: Vec<String>,
}

/// Why a program did not run to its end.
#[derive(Debug)]
pub enum Failure {
    /// The checker refused the program (every diagnostic); nothing ran.
    Check(Vec<Diagnostic>),
    /// The program stopped early: an uncaught error, or `exit(code)`.
    Run(RunError),
}

/// What a run left: the captured output, how it ended, and the sources its
/// diagnostics point into.
#[derive(Debug)]
pub struct Outcome {
    /// Everything the program printed.
    pub out: String,
    /// `Ok` when the program ran to its end.
    pub result: Result<(), Failure>,
    /// The program's files, for rendering diagnostics and finding lines.
    pub sources: Arc<SourceMap>,
}

impl Program {
    /// The program `src`, written for the run to `<name>.apsi` (its name in
    /// diagnostics) in a temporary directory that is removed after it.
    pub fn new(name: &str, src: &str) -> Program {
        Program::from(Source::Text {
            name: name.to_string(),
            text: src.to_string(),
        })
    }

    /// The program in the file at `path`, shown by that path in diagnostics.
    pub fn file(path: &Path) -> Program {
        Program::from(Source::File(path.to_path_buf()))
    }

    fn from(source: Source) -> Program {
        Program {
            source,
            modules: Vec::new(),
            threads: None,
            allowed: Vec::new(),
        }
    }

    /// The compiled-in modules `use` may name; the checker learns their
    /// names, exports and capabilities from them.
    pub fn modules(mut self, modules: Vec<ModuleDescriptor>) -> Program {
        self.modules = modules;
        self
    }

    /// Runs with `--threads n` (a process-wide setting); without this the
    /// current thread count is kept.
    pub fn threads(mut self, n: usize) -> Program {
        self.threads = Some(n);
        self
    }

    /// Capabilities the checker allows, as `--allow-python` allows `python`.
    pub fn allow(mut self, capabilities: &[&str]) -> Program {
        self.allowed = capabilities.iter().map(|c| c.to_string()).collect();
        self
    }

    /// Checks the program and, if the checker accepts it, runs it.
    pub fn run(self) -> Outcome {
        let capture = Capture::default();
        let builtin_modules = module_infos(&self.modules);
        let mut rt = Runtime::new(RuntimeConfig {
            modules: self.modules,
            output: Some(Box::new(capture.clone())),
            threads: self.threads,
            ..RuntimeConfig::default()
        })
        .expect("the modules under test install into this core");
        let env = CheckEnv {
            prelude: rt.prelude_names(),
            builtin_modules,
            allowed: self.allowed,
            absent_modules: Vec::new(),
            source_readers: rt.source_readers(),
        };
        let sources = Arc::new(SourceMap::new());
        // Kept until the run is over: dropping it removes the file.
        let temp;
        let (path, shown) = match &self.source {
            Source::Text { name, text } => {
                temp = TempProgram::write(name, text);
                (temp.path(), format!("{name}.apsi"))
            }
            Source::File(path) => (path.as_path(), path.display().to_string()),
        };
        let result = match check::load(path, &shown, &env, sources.clone()) {
            Err(diagnostics) => Err(Failure::Check(diagnostics)),
            Ok(program) => rt.run(&program).map_err(Failure::Run),
        };
        Outcome {
            out: capture.text(),
            result,
            sources,
        }
    }
}

impl Outcome {
    /// The failure as the CLI prints it, without colour (`exit N` for
    /// `exit(N)`); `None` when the program ran to its end.
    pub fn rendered_error(&self) -> Option<String> {
        match &self.result {
            Ok(()) => None,
            Err(Failure::Check(diagnostics)) => Some(diagnostic::render_all(diagnostics, &self.sources, false)),
            Err(Failure::Run(RunError::Error(d))) => {
                Some(diagnostic::render_all(std::slice::from_ref(d), &self.sources, false))
            }
            Err(Failure::Run(RunError::Exit(code))) => Some(format!("exit {code}")),
        }
    }

    /// The 1-based line of `d`'s primary span; 0 when it has none.
    pub fn line_of(&self, d: &Diagnostic) -> usize {
        d.primary_span()
            .and_then(|s| self.sources.get(s.file).map(|f| f.line_col(s.start).0))
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apsi_core::error::ErrorKind;

    fn guarded() -> ModuleDescriptor {
        ModuleDescriptor {
            name: "guarded",
            version: "1.0.0",
            requires_core: "^2.0",
            exports: vec![],
            capabilities: vec!["net"],
            namespace_only: false,
            prelude: vec![],
            source_readers: vec![],
        }
    }

    /// The diagnostics of a program the checker refused.
    fn check_diagnostics(o: &Outcome) -> &[Diagnostic] {
        match &o.result {
            Err(Failure::Check(ds)) => ds,
            other => panic!("expected a check failure, found {other:?}"),
        }
    }

    /// Fails unless the rendered error has every one of `parts`.
    fn assert_rendered_has(o: &Outcome, parts: &[&str]) {
        let rendered = o.rendered_error().unwrap_or_default();
        assert!(
            parts.iter().all(|p| rendered.contains(p)),
            "{parts:?} not all in:\n{rendered}"
        );
    }

    #[test]
    fn a_program_runs_and_its_output_is_captured() {
        let o = Program::new("hello", "print(1 + 1)\nprint(\"two\", [3])\n").run();
        assert!(o.result.is_ok(), "{:?}", o.rendered_error());
        assert_eq!(o.out, "2\ntwo [3]\n");
        assert_eq!(o.rendered_error(), None);
    }

    #[test]
    fn a_run_time_error_keeps_the_output_before_it_and_its_line() {
        let o = Program::new("fails", "print(\"before\")\nx = [1][5]\nprint(\"after\")\n").run();
        assert_eq!(o.out, "before\n");
        let Err(Failure::Run(RunError::Error(d))) = &o.result else {
            panic!("expected a run-time error, found {:?}", o.result);
        };
        assert_eq!((d.kind, o.line_of(d)), (ErrorKind::IndexError, 2));
        assert_rendered_has(&o, &["IndexError", "fails.apsi:2:"]);
    }

    #[test]
    fn exit_is_a_failure_with_its_code() {
        let o = Program::new("quits", "print(1)\nexit(3)\nprint(2)\n").run();
        assert_eq!(o.out, "1\n");
        assert!(
            matches!(o.result, Err(Failure::Run(RunError::Exit(3)))),
            "{:?}",
            o.result
        );
        assert_eq!(o.rendered_error().as_deref(), Some("exit 3"));
    }

    #[test]
    fn a_check_failure_returns_every_diagnostic_and_runs_nothing() {
        let o = Program::new("bad", "print(\"never\")\nprint(nowhere)\nprint(nor_here)\n").run();
        assert_eq!(o.out, "");
        let ds = check_diagnostics(&o);
        assert_eq!(ds.iter().map(|d| o.line_of(d)).collect::<Vec<_>>(), vec![2, 3]);
        assert_rendered_has(&o, &["nowhere", "nor_here"]);
    }

    #[test]
    fn modules_need_the_capabilities_they_name() {
        let refused = Program::new("guard", "use guarded\nprint(\"ran\")\n")
            .modules(vec![guarded()])
            .run();
        let ds = check_diagnostics(&refused);
        assert_eq!(ds.first().map(|d| d.kind), Some(ErrorKind::PermissionError), "{ds:?}");
        let allowed = Program::new("guard", "use guarded\nprint(\"ran\")\n")
            .modules(vec![guarded()])
            .allow(&["net"])
            .run();
        assert!(allowed.result.is_ok(), "{:?}", allowed.rendered_error());
        assert_eq!(allowed.out, "ran\n");
    }

    #[test]
    fn a_program_file_is_shown_by_its_path_and_threads_are_set() {
        let temp = TempProgram::write("on_disk", "print(\"from a file\")\nraise ValueError(\"no\")\n");
        let o = Program::file(temp.path()).threads(3).run();
        assert_eq!(o.out, "from a file\n");
        assert_eq!(apsi_core::par::threads(), 3);
        assert_rendered_has(&o, &[&format!("{}:2:", temp.path().display())]);
        assert!(temp.path().exists(), "a file the test owns is left in place");
    }
}
