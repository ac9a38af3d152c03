//! Data-driven end-to-end tests: every `.apsi` file under `examples/` and
//! `tests/spec/` runs through the real `apsi` binary and must print exactly
//! its `# expect:` lines (the conformance format: `# expect-error: KIND`,
//! `# expect-stderr: TEXT`, `# expect-exit: N`, `# args: …` for `apsi run`'s
//! options, `# argv: …` for the program's own arguments after the file).
//! Two more for the examples: `# expect-glob: TEXT` is an output line where
//! `*` stands for any run of characters (a measured time or rate), and
//! `# expect-file: PATH` names a file the program must write (removed before
//! the run, so an old copy does not count).

use std::path::{Path, PathBuf};
use std::process::Command;

/// One expected line of standard output.
#[derive(Debug)]
enum Line {
    Exact(String),
    Glob(String),
}

impl Line {
    fn matches(&self, got: &str) -> bool {
        match self {
            Line::Exact(e) => e == got,
            Line::Glob(g) => glob_match(g, got),
        }
    }
    fn text(&self) -> &str {
        match self {
            Line::Exact(t) | Line::Glob(t) => t,
        }
    }
}

/// `*` matches any run of characters; everything else matches itself.
fn glob_match(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.len() >= part.len() && rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

struct Expect {
    out: Vec<Line>,
    files: Vec<String>,
    error: Option<String>,
    stderr: Vec<String>,
    exit: i32,
    args: Vec<String>,
    argv: Vec<String>,
}

fn parse_expect(text: &str) -> Expect {
    let mut e = Expect {
        out: vec![],
        files: vec![],
        error: None,
        stderr: vec![],
        exit: -1,
        args: vec![],
        argv: vec![],
    };
    for line in text.lines() {
        let Some(pos) = line.find('#') else { continue };
        let c = line[pos + 1..].trim_start();
        let take = |key: &str| {
            c.strip_prefix(key)
                .map(|r| r.strip_prefix(' ').unwrap_or(r).to_string())
        };
        if let Some(v) = take("expect:") {
            e.out.push(Line::Exact(v));
        } else if let Some(v) = take("expect-glob:") {
            e.out.push(Line::Glob(v));
        } else if let Some(v) = take("expect-file:") {
            e.files.push(v.trim().to_string());
        } else if let Some(v) = take("expect-error:") {
            e.error = Some(v.trim().to_string());
        } else if let Some(v) = take("expect-stderr:") {
            e.stderr.push(v.trim().to_string());
        } else if let Some(v) = take("expect-exit:") {
            e.exit = v.trim().parse().expect("expect-exit needs a number");
        } else if let Some(v) = take("args:") {
            e.args.extend(v.split_whitespace().map(str::to_string));
        } else if let Some(v) = take("argv:") {
            e.argv.extend(v.split_whitespace().map(str::to_string));
        }
    }
    if e.exit < 0 {
        e.exit = if e.error.is_some() { 1 } else { 0 };
    }
    e
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let p = entry.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "lib") {
                collect(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "apsi")
            && !p.file_name().unwrap().to_string_lossy().starts_with('_')
        {
            out.push(p);
        }
    }
}

fn run_dir(rel: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel);
    let mut files = Vec::new();
    collect(&root, &mut files);
    files.sort();
    assert!(!files.is_empty(), "no programs found under {}", root.display());
    let mut failures = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let e = parse_expect(&text);
        let home = tempdir();
        let dir = f.parent().unwrap();
        for file in &e.files {
            let _ = std::fs::remove_file(dir.join(file));
        }
        let out = Command::new(env!("CARGO_BIN_EXE_apsi"))
            .arg("run")
            .args(&e.args)
            .arg(f.file_name().unwrap())
            .args(&e.argv)
            .current_dir(f.parent().unwrap())
            .env("NO_COLOR", "1")
            .env("APSI_HOME", &home)
            .output()
            .expect("cannot run apsi");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let got: Vec<&str> = stdout.lines().collect();
        let mut problems = Vec::new();
        let same = got.len() == e.out.len() && e.out.iter().zip(&got).all(|(e, g)| e.matches(g));
        if !same {
            let want: Vec<&str> = e.out.iter().map(Line::text).collect();
            problems.push(format!(
                "stdout differs:\n--- expected\n{}\n--- got\n{}",
                want.join("\n"),
                got.join("\n")
            ));
        }
        for file in &e.files {
            let written = std::fs::metadata(dir.join(file)).map(|m| m.len()).unwrap_or(0);
            if written == 0 {
                problems.push(format!("{file} was not written"));
            }
        }
        let code = out.status.code().unwrap_or(-1);
        if code != e.exit {
            problems.push(format!("exit status {code}, expected {}", e.exit));
        }
        if let Some(kind) = &e.error {
            if !stderr.contains(kind.as_str()) {
                problems.push(format!("stderr lacks {kind:?}"));
            }
        }
        for s in &e.stderr {
            if !stderr.contains(s.as_str()) {
                problems.push(format!("stderr lacks {s:?}"));
            }
        }
        if !problems.is_empty() {
            failures.push(format!(
                "{}:\n{}\nstderr:\n{}",
                f.display(),
                problems.join("\n"),
                stderr
            ));
        }
        let _ = std::fs::remove_dir_all(&home);
    }
    assert!(
        failures.is_empty(),
        "{} of {} programs failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

fn tempdir() -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let p = std::env::temp_dir().join(format!(
        "apsi-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&p).unwrap();
    p
}

#[test]
fn glob_lines_match_any_run_of_characters() {
    assert!(glob_match("a * b", "a 12.5 b"));
    assert!(glob_match("*", ""));
    assert!(glob_match("x*y*z", "x1y2z"));
    assert!(!glob_match("x*y*z", "x1y2"));
    assert!(!glob_match("rate *", "speed 3"));
    assert!(!glob_match("exact", "exact!"));
    assert!(glob_match("ab*ab", "abab"));
    assert!(!glob_match("ab*ab", "ab"));
}

#[test]
fn examples_run_as_documented() {
    run_dir("examples");
}

#[test]
fn language_spec_programs() {
    run_dir("tests/spec");
}

/// The ported pyperformance programs (`bench/programs/`, issue 15) at a
/// small size, so the ports stay correct as the interpreter changes.
#[test]
fn benchmark_programs_print_what_cpython_prints() {
    run_dir("bench/programs");
}
