//! The `apsi-registry` command; see the library for what each command does.

use apsi_pkg::ErrorKind;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match apsi_registry::run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(if e.kind == ErrorKind::Usage { 2 } else { 1 })
        }
    }
}
