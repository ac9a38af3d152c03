//! Shared helpers for the VM end-to-end tests: run Apsi source through
//! parse → compile → run with captured output.

#![allow(dead_code)]

use apsi_core::check::{Program, ResolvedUse, Unit, UseTarget};
use apsi_core::diagnostic::SourceMap;
use apsi_core::driver::{RunError, Runtime, RuntimeConfig};
use apsi_core::syntax::{self, ast};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
pub struct Capture(pub Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Capture {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().map(|v| v.clone()).unwrap_or_default()).into_owned()
    }
}

/// A tiny loader for tests: `use a.b` loads `a/b.apsi` beside the file if it
/// exists, else names a compiled-in module.
fn load(
    path: &Path,
    name: &str,
    sources: &Arc<SourceMap>,
    units: &mut Vec<Unit>,
    loading: &mut Vec<PathBuf>,
) -> Result<usize, String> {
    let canon = path.to_path_buf();
    if let Some(i) = units.iter().position(|u| u.path == canon) {
        return Ok(i);
    }
    if loading.contains(&canon) {
        return Err(format!("circular use of {}", canon.display()));
    }
    loading.push(canon.clone());
    let src = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file = sources.add(path.display().to_string(), src.as_str());
    let (module, diags) = syntax::parse(file, &src);
    if !diags.is_empty() {
        return Err(format!("syntax errors: {diags:?}"));
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut uses = Vec::new();
    for s in &module.body {
        if let ast::StmtKind::Use { path: p, alias } = &s.kind {
            let mut f = dir.to_path_buf();
            for part in p {
                f.push(&part.name);
            }
            f.set_extension("apsi");
            let last = p.last().map(|i| i.name.clone()).unwrap_or_default();
            let binding = alias.as_ref().map(|a| a.name.clone()).unwrap_or(last.clone());
            let target = if f.exists() {
                UseTarget::File(load(&f, &last, sources, units, loading)?)
            } else {
                UseTarget::Builtin(p.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join("."))
            };
            uses.push(ResolvedUse {
                span: s.span,
                binding,
                unqualified: alias.is_none(),
                target,
            });
        }
    }
    units.push(Unit::new(name.to_string(), canon.clone(), file, module, uses));
    loading.pop();
    Ok(units.len() - 1)
}

pub struct Outcome {
    pub out: String,
    pub result: Result<(), RunError>,
    pub sources: Arc<SourceMap>,
}

pub fn run_file(path: &Path, config: RuntimeConfig) -> Outcome {
    let sources = Arc::new(SourceMap::new());
    let mut units = Vec::new();
    if let Err(e) = load(path, "__main__", &sources, &mut units, &mut Vec::new()) {
        panic!("cannot load {}: {e}", path.display());
    }
    let cap = Capture::default();
    let mut rt = Runtime::new(RuntimeConfig {
        output: Some(Box::new(cap.clone())),
        ..config
    })
    .expect("runtime");
    let program = Program {
        sources: sources.clone(),
        units,
        probes: Vec::new(),
    };
    let result = rt.run(&program);
    Outcome {
        out: cap.text(),
        result,
        sources,
    }
}

pub fn run_src(src: &str) -> Outcome {
    run_src_with(src, RuntimeConfig::default())
}

pub fn run_src_with(src: &str, config: RuntimeConfig) -> Outcome {
    let dir = std::env::temp_dir().join(format!(
        "apsi-vm-test-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::create_dir_all(&dir);
    let p = dir.join("main.apsi");
    std::fs::write(&p, src).expect("write temp file");
    let outcome = run_file(&p, config);
    // The outcome keeps the source text; the file is not read again.
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

/// Output of a program that must succeed.
pub fn output(src: &str) -> String {
    let o = run_src(src);
    if let Err(e) = &o.result {
        panic!("program failed: {e:?}\noutput so far:\n{}", o.out);
    }
    o.out
}

/// Kind and message of the error a program must end with.
pub fn error(src: &str) -> (String, String) {
    let o = run_src(src);
    match o.result {
        Err(RunError::Error(d)) => (d.kind.name().to_string(), d.message),
        Err(RunError::Exit(c)) => ("exit".into(), c.to_string()),
        Ok(()) => panic!("program succeeded but should fail; output:\n{}", o.out),
    }
}

pub struct Expect {
    pub out: Vec<String>,
    pub error: Option<String>,
    pub stderr: Vec<String>,
}

pub fn expectations(src: &str) -> Expect {
    let mut e = Expect {
        out: Vec::new(),
        error: None,
        stderr: Vec::new(),
    };
    for line in src.lines() {
        if let Some(i) = line.find("# expect") {
            let rest = &line[i + 2..];
            if let Some(v) = rest.strip_prefix("expect-error:") {
                e.error = Some(v.trim().to_string());
            } else if let Some(v) = rest.strip_prefix("expect-stderr:") {
                e.stderr.push(v.trim().to_string());
            } else if let Some(v) = rest.strip_prefix("expect:") {
                e.out.push(v.strip_prefix(' ').unwrap_or(v).to_string());
            }
        }
    }
    e
}

/// Run one fixture and compare with its `# expect` comments; returns a failure description.
pub fn check_fixture(path: &Path) -> Result<(), String> {
    let src = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let exp = expectations(&src);
    let o = run_file(path, RuntimeConfig::default());
    let got: Vec<String> = o.out.lines().map(|s| s.to_string()).collect();
    let mut problems = Vec::new();
    if got != exp.out {
        problems.push(format!(
            "output differs\n--- expected\n{}\n--- got\n{}",
            exp.out.join("\n"),
            got.join("\n")
        ));
    }
    match (&exp.error, &o.result) {
        (None, Ok(())) => {}
        (None, Err(e)) => problems.push(format!("unexpected error: {e:?}")),
        (Some(k), Ok(())) => problems.push(format!("expected error {k}, but the program succeeded")),
        (Some(k), Err(RunError::Error(d))) => {
            if d.kind.name() != k {
                problems.push(format!("expected error {k}, got {:?}: {}", d.kind, d.message));
            }
            for want in &exp.stderr {
                // "file.apsi:LINE" — check the primary label's line.
                if let Some((_, line)) = want.rsplit_once(':') {
                    if let (Ok(line), Some(sp)) = (line.parse::<usize>(), d.primary_span()) {
                        let f = o.sources.get(sp.file).expect("file");
                        let (l, _) = f.line_col(sp.start);
                        if l != line {
                            problems.push(format!("error reported at line {l}, expected {line}"));
                        }
                    }
                }
            }
        }
        (Some(k), Err(e)) => problems.push(format!("expected error {k}, got {e:?}")),
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{}: {}", path.display(), problems.join("\n")))
    }
}
