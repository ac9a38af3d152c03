//! Run Apsi source with the `parallel` module installed, capturing output.

#![allow(dead_code)]

use apsi_core::check::{self, BuiltinModuleInfo, CheckEnv};
use apsi_core::diagnostic::SourceMap;
use apsi_core::vm::{RunError, Runtime, RuntimeConfig};
use std::io::Write;
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

pub struct Outcome {
    pub out: String,
    pub result: Result<(), RunError>,
}

pub fn run(name: &str, src: &str) -> Outcome {
    let dir = std::env::temp_dir().join(format!("apsi-parallel-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(format!("{name}.apsi"));
    std::fs::write(&path, src).expect("write program");
    let prelude = apsi_core::builtins::prelude();
    let m = apsi_parallel::module();
    let env = CheckEnv {
        prelude: prelude
            .exports
            .iter()
            .map(|(n, _)| n.to_string())
            .chain(["argv".to_string()])
            .collect(),
        builtin_modules: vec![BuiltinModuleInfo {
            name: m.name.to_string(),
            exports: m.exports.iter().map(|(n, _)| n.to_string()).collect(),
            capabilities: vec![],
        }],
        allowed: vec![],
    };
    let sources = Arc::new(SourceMap::new());
    let program = match check::load(&path, name, &env, sources) {
        Ok(p) => p,
        Err(d) => panic!("{name} does not check: {d:?}"),
    };
    let cap = Capture::default();
    let mut rt = Runtime::new(RuntimeConfig {
        modules: vec![apsi_parallel::module()],
        output: Some(Box::new(cap.clone())),
        ..Default::default()
    });
    let result = rt.run(&program);
    let out = String::from_utf8_lossy(&cap.0.lock().map(|v| v.clone()).unwrap_or_default()).into_owned();
    let _ = std::fs::remove_dir_all(&dir);
    Outcome { out, result }
}
