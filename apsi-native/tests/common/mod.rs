//! Runs Apsi programs with the native module, capturing their output.
//! Needs the LLVM plugin built beside the test binaries
//! (`cargo build -p apsi-native-llvm`).

#![allow(dead_code)]

use apsi_testkit::{Outcome, Program};
use std::path::Path;

/// Output, and the rendered error when the program failed.
pub fn run_file(path: &Path, threads: usize) -> (String, Option<String>) {
    output_and_error(
        Program::file(path)
            .modules(vec![apsi_native::module()])
            .threads(threads)
            .run(),
    )
}

/// Runs program text written to a temporary file, on 2 threads.
pub fn run_src(name: &str, src: &str) -> (String, Option<String>) {
    output_and_error(
        Program::new(name, src)
            .modules(vec![apsi_native::module()])
            .threads(2)
            .run(),
    )
}

fn output_and_error(o: Outcome) -> (String, Option<String>) {
    let err = o.rendered_error();
    (o.out, err)
}
