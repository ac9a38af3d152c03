//! Runs Apsi programs with the native module, capturing their output.
//! Needs the LLVM plugin built beside the test binaries
//! (`cargo build -p apsi-native-llvm`).

use apsi_core::check::{self, BuiltinModuleInfo, CheckEnv};
use apsi_core::diagnostic::{self, SourceMap};
use apsi_core::vm::{RunError, Runtime, RuntimeConfig};
use std::io::Write;
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

impl Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?
            .extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Output, and the rendered error when the program failed.
pub fn run_file(path: &std::path::Path, threads: usize) -> (String, Option<String>) {
    let buf = Buf::default();
    let modules = vec![apsi_native::module()];
    let builtin_modules = modules
        .iter()
        .map(|m| BuiltinModuleInfo {
            name: m.name.to_string(),
            exports: m.exports.iter().map(|(n, _)| n.to_string()).collect(),
            capabilities: Vec::new(),
        })
        .collect();
    let config = RuntimeConfig {
        modules,
        output: Some(Box::new(buf.clone())),
        threads: Some(threads),
        ..RuntimeConfig::default()
    };
    let mut rt = Runtime::new(config);
    let env = CheckEnv {
        prelude: rt.prelude_names(),
        builtin_modules,
        allowed: Vec::new(),
    };
    let sources = Arc::new(SourceMap::new());
    let name = path.display().to_string();
    let err = match check::load(path, &name, &env, sources.clone()) {
        Err(d) => Some(diagnostic::render_all(&d, &sources, false)),
        Ok(p) => match rt.run(&p) {
            Ok(()) => None,
            Err(RunError::Error(d)) => Some(diagnostic::render_all(&[d], &sources, false)),
            Err(RunError::Exit(c)) => Some(format!("exit {c}")),
        },
    };
    let out = String::from_utf8_lossy(&buf.0.lock().map(|g| g.clone()).unwrap_or_default()).into_owned();
    (out, err)
}

/// Runs program text written to a temporary file.
pub fn run_src(name: &str, src: &str) -> (String, Option<String>) {
    let dir = std::env::temp_dir().join(format!("apsi-native-test-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("{name}.apsi"));
    std::fs::write(&path, src).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    run_file(&path, 2)
}
