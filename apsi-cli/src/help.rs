//! `apsi help` and `apsi --version`.

use crate::args::COMMANDS;

pub fn version_text() -> String {
    let mut s = format!("apsi {}\n  apsi-core {}\n", apsi_core::VERSION, apsi_core::VERSION);
    for m in crate::modules::compiled_in() {
        s.push_str(&format!("  apsi-{} {}\n", m.name, m.version));
    }
    #[cfg(feature = "pkg")]
    s.push_str(&format!("  apsi-pkg {}\n", apsi_pkg::VERSION));
    s.push_str(&format!("  apsi-doctor {}\n", apsi_doctor::VERSION));
    let (on, off): (Vec<_>, Vec<_>) = crate::modules::FEATURES.iter().partition(|f| f.1);
    let names = |v: Vec<&(&str, bool)>| v.iter().map(|f| f.0).collect::<Vec<_>>().join(", ");
    s.push_str(&format!("features: {}\n", if on.is_empty() { "none (core only)".to_string() } else { names(on) }));
    if !off.is_empty() {
        s.push_str(&format!("left out: {} (rebuild with `--features …` to add them)\n", names(off)));
    }
    s
}

const RUN_HELP: &str = "\
apsi run [OPTIONS] FILE [ARGS…]   (or: apsi [OPTIONS] FILE [ARGS…])

Runs FILE. ARGS after the file are the program's `argv`.

Options:
  --time            print how long the run took (on stderr)
  --threads N       threads for `parallel for` and the thread pool
  --native-ir FN    print the optimised LLVM IR of the @native function FN (* for all) on stderr
  --allow-python    allow the `python` module and backend=\"torch\"
  --allow-net       allow reading http(s):// sources
  --allow-all       allow both
";

const CHECK_HELP: &str = "\
apsi check FILE…

Checks programs without running them: syntax, unknown names, modules,
calls with the wrong arguments, literals of the wrong type for annotated
parameters, and the permissions a program needs. Exit status 1 when any
problem is found.
";

const REPL_HELP: &str = "\
apsi repl   (or: apsi)

The interactive prompt. Type code; blocks continue until an empty line.
Expression values are printed. Commands:
  :time CODE     run CODE once and print how long it took
  :bench CODE    run CODE repeatedly: best/median/mean/worst
  :help          this text
  :quit          leave (also Ctrl-D)
History is kept in $APSI_HOME/history (~/.apsi/history).
";

pub fn print_help(topic: Option<&str>) -> u8 {
    match topic {
        None => {
            println!("Apsi {} — a scientific programming language\n", apsi_core::VERSION);
            println!("Usage: apsi COMMAND [OPTIONS]\n\nCommands:");
            for (c, what) in COMMANDS {
                println!("  {c:<20} {what}");
            }
            println!("\nOptions:\n  --version, -V        list the core and every compiled-in module with versions");
            println!("  --help, -h           this text\n\nMore: apsi help run | check | repl | doctor | pkg");
            0
        }
        Some("run") => {
            print!("{RUN_HELP}");
            0
        }
        Some("check") => {
            print!("{CHECK_HELP}");
            0
        }
        Some("repl") => {
            print!("{REPL_HELP}");
            0
        }
        Some("doctor") => {
            print!("{}", crate::doctor::HELP);
            0
        }
        #[cfg(feature = "pkg")]
        Some("pkg") => {
            print!("{}", crate::pkg::HELP);
            0
        }
        Some(other) => {
            eprintln!("error: no help for '{other}'\n  = hint: topics are run, check, repl, doctor, pkg");
            2
        }
    }
}
