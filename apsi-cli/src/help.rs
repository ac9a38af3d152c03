//! `apsi help` and `apsi --version`.

use crate::args::COMMANDS;

pub fn version_text() -> String {
    let mut s = format!("apsi {}\n  apsi-core {}\n", crate::APSI_VERSION, apsi_core::VERSION);
    for m in crate::modules::compiled_in() {
        s.push_str(&format!("  apsi-{} {}\n", m.name, m.version));
    }
    #[cfg(feature = "pkg")]
    s.push_str(&format!("  apsi-pkg {}\n", apsi_pkg::VERSION));
    s.push_str(&format!("  apsi-doctor {}\n", apsi_doctor::VERSION));
    #[cfg(feature = "kernel")]
    s.push_str(&format!("  apsi-kernel {}\n", apsi_kernel::VERSION));
    let (on, off): (Vec<_>, Vec<_>) = crate::modules::FEATURES.iter().partition(|f| f.1);
    let names = |v: Vec<&(&str, bool)>| v.iter().map(|f| f.0).collect::<Vec<_>>().join(", ");
    s.push_str(&format!(
        "features: {}\n",
        if on.is_empty() {
            "none (core only)".to_string()
        } else {
            names(on)
        }
    ));
    if !off.is_empty() {
        s.push_str(&format!(
            "left out: {} (rebuild with `--features …` to add them)\n",
            names(off)
        ));
    }
    s
}

const RUN_HELP: &str = "\
apsi run [OPTIONS] FILE [ARGS…]   (or: apsi [OPTIONS] FILE [ARGS…])

Runs FILE. ARGS after the file are the program's `argv`. The options below
are apsi's wherever they appear, after the file too (`apsi run app.apsi
--time`); every other argument after the file is the program's, and after
`--` all of them are (`apsi run app.apsi -- --time` gives the program
`--time`).

Options:
  --time            print how long the run took (on stderr)
  --no-cache        neither read nor write the compile cache (also: APSI_NO_CACHE=1)
  --threads N       threads for `parallel for` and the thread pool
  --native-ir FN    print the optimised LLVM IR of the @native function FN (* for all) on stderr
  --allow-python    allow the `python` module and backend=\"torch\"
  --allow-net       allow reading http(s):// sources
  --allow-all       allow both
";

const COMPILE_HELP: &str = "\
apsi compile [--allow-…] PATHS…
apsi compile --runtime

Checks and compiles programs ahead of time into the compile cache
($APSI_HOME/cache/compile), so their first `apsi run` starts without
parsing, checking or compiling. A PATH is a .apsi file or a folder (every
.apsi file under it). Every error in every file is reported; exit status 1
when any file has one. Give the same --allow-… options the program will run
with, and run it by the same path as given here (both are part of what a
cache entry is for).

--runtime compiles Apsi's own Apsi-source parts: there are none (the
prelude and every module are compiled into apsi), so it says so and does
nothing else.
";

const BUILD_HELP: &str = "\
apsi build [--allow-…] FILE -o OUT

Checks and compiles FILE (every error reported) and writes OUT: one
executable that is this apsi with the compiled program and its source text
appended. OUT starts without parsing, checking or compiling, needs no Apsi
source where it runs, and runs with the permissions given here (`OUT --help`
shows them); its arguments are the program's argv. It refuses to run if the
appended program was modified. Where the program uses @native, OUT needs
the native back end there (`apsi doctor` says whether it is found); a matmul
uses OpenBLAS when present.
";

const BENCH_HELP: &str = "\
apsi bench FILE [-n N] [--warmup W] [--json] [run options] [-- ARGS…]

Runs FILE N times (default 10), each as a new `apsi run` process, after W
untimed warm-up runs (default 1), and prints the wall time per run:

  bench: prog.apsi (1 warm-up, then 10 timed runs, each a new process)
  10 runs: best 1.203 ms, median 1.250 ms, mean 1.262 ms, worst 1.390 ms

The program's output is discarded; a failing run stops the benchmark with
its error output (exit status 1). --json prints one JSON object instead:
{\"file\", \"warmup\", \"runs\", \"best_s\", \"median_s\", \"mean_s\",
\"worst_s\", \"times_s\"} (seconds). --no-cache, --threads N and --allow-…
are passed to every run.
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

const KERNEL_HELP: &str = "\
apsi kernel install [--user | --prefix DIR]
apsi kernel -f CONNECTION_FILE

A Jupyter kernel: notebooks (JupyterLab, Notebook, nbclient, VS Code) run
Apsi cells in one runtime that keeps its names between cells.

`apsi kernel install` writes the kernelspec (kernel.json and the logos) as
`jupyter kernelspec install` lays it out:
  --user          ~/.local/share/jupyter/kernels/apsi (the default; on
                  macOS ~/Library/Jupyter/…; $JUPYTER_DATA_DIR when set)
  --prefix DIR    DIR/share/jupyter/kernels/apsi (a virtual environment:
                  --prefix \"$VIRTUAL_ENV\")
kernel.json runs this apsi executable by its absolute path; install again
after moving it. Jupyter starts the kernel itself with
`apsi kernel -f CONNECTION_FILE`.

In a cell: a last expression shows as the REPL shows it; a tensor also as
an HTML table (shape and dtype in the caption, summarized past 1,000
elements as print does); a value whose type has `_repr_html_` (returning a
str) or `_repr_png_` (returning bytes) shows as HTML or an image.
`display(x)` shows x that way in the middle of a cell. `:time CODE` and
`:bench CODE` (CODE: the rest of the cell) work as in the REPL. Interrupt
(the notebook's stop button) raises KeyboardInterrupt in the running cell
at its next loop iteration; the kernel and its names stay. Errors show the
text `apsi run` prints, without colour.
";

pub fn print_help(topic: Option<&str>) -> u8 {
    let text = match topic {
        None => {
            let mut t = format!("Apsi {} — a scientific programming language\n\n", crate::APSI_VERSION);
            t.push_str("Usage: apsi COMMAND [OPTIONS]\n\nCommands:\n");
            for (c, what) in COMMANDS {
                t.push_str(&format!("  {c:<20} {what}\n"));
            }
            t.push_str("\nOptions:\n  --version, -V        list the core and every compiled-in module with versions\n");
            t.push_str("  --help, -h           this text\n\nMore: apsi help run | check | compile | build | bench | repl | kernel | doctor | pkg\n");
            t
        }
        Some("run") => RUN_HELP.to_string(),
        Some("check") => CHECK_HELP.to_string(),
        Some("compile") => COMPILE_HELP.to_string(),
        Some("bench") => BENCH_HELP.to_string(),
        Some("build") => BUILD_HELP.to_string(),
        Some("repl") => REPL_HELP.to_string(),
        Some("kernel") => KERNEL_HELP.to_string(),
        Some("doctor") => crate::doctor::HELP.to_string(),
        #[cfg(feature = "pkg")]
        Some("pkg") => crate::pkg::HELP.to_string(),
        Some(other) => {
            eprintln!(
                "error: no help for '{other}'\n  = hint: topics are run, check, compile, build, bench, repl, kernel, doctor, pkg"
            );
            return 2;
        }
    };
    // A closed pipe (`apsi help | head -1`) is not an error.
    use std::io::Write;
    let _ = std::io::stdout().write_all(text.as_bytes());
    0
}
