//! `apsi run` and `apsi check`: load and check a program, then run it.

use crate::args::RunOptions;
use crate::term;
use apsi_core::check::{self, BuiltinModuleInfo, CheckEnv, Program};
use apsi_core::diagnostic::{self, Diagnostic, SourceMap};
use apsi_core::vm::{RunError, Runtime, RuntimeConfig};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// What the checker needs to know about this binary.
pub fn check_env(allowed: &[String]) -> CheckEnv {
    let prelude = apsi_core::builtins::prelude();
    let mut names: Vec<String> = prelude.exports.iter().map(|(n, _)| n.to_string()).collect();
    names.push("argv".to_string());
    let builtin_modules = crate::modules::compiled_in()
        .iter()
        .map(|m| BuiltinModuleInfo {
            name: m.name.to_string(),
            exports: m.exports.iter().map(|(n, _)| n.to_string()).collect(),
            capabilities: m.capabilities.iter().map(|c| c.to_string()).collect(),
        })
        .collect();
    CheckEnv { prelude: names, builtin_modules, allowed: allowed.to_vec() }
}

pub fn report(diags: &[Diagnostic], sources: &SourceMap) {
    let text = diagnostic::render_all(diags, sources, term::stderr_color());
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    if !text.ends_with('\n') {
        let _ = err.write_all(b"\n");
    }
}

fn load(file: &str, allowed: &[String], sources: &Arc<SourceMap>) -> Result<Program, Vec<Diagnostic>> {
    check::load(Path::new(file), file, &check_env(allowed), sources.clone())
}

pub fn run_file(opts: &RunOptions) -> u8 {
    let start = Instant::now();
    let sources = Arc::new(SourceMap::new());
    let program = match load(&opts.file, &opts.allowed, &sources) {
        Ok(p) => p,
        Err(diags) => {
            report(&diags, &sources);
            return 1;
        }
    };
    let config = RuntimeConfig {
        argv: opts.argv.clone(),
        modules: crate::modules::compiled_in(),
        threads: opts.threads,
        ..RuntimeConfig::default()
    };
    let mut runtime = Runtime::new(config);
    let result = runtime.run(&program);
    let code = match result {
        Ok(()) => 0,
        Err(RunError::Exit(code)) => code.clamp(0, 255) as u8,
        Err(RunError::Error(d)) => {
            report(&[d], &sources);
            1
        }
    };
    if opts.time {
        eprintln!("time: {:.3} ms", start.elapsed().as_secs_f64() * 1e3);
    }
    code
}

pub fn check_files(files: &[String], allowed: &[String]) -> u8 {
    let mut failed = false;
    for f in files {
        let sources = Arc::new(SourceMap::new());
        match load(f, allowed, &sources) {
            Ok(_) => println!("{f}: ok"),
            Err(diags) => {
                report(&diags, &sources);
                failed = true;
            }
        }
    }
    u8::from(failed)
}
