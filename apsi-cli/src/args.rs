//! Command-line parsing for `apsi`. Hand-written: start-up time matters
//! (hello world must run in under 3 ms) and the grammar is small.

use std::fmt;

/// What the user asked for.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Run(RunOptions),
    Check {
        files: Vec<String>,
        allowed: Vec<String>,
    },
    Repl(RunOptions),
    /// `apsi bench FILE -n N`.
    Bench(BenchOptions),
    /// `apsi build FILE -o OUT`.
    Build {
        file: String,
        out: String,
        allowed: Vec<String>,
    },
    /// `apsi compile PATHS…`.
    Compile {
        paths: Vec<String>,
        allowed: Vec<String>,
        /// `--runtime`: Apsi's own Apsi-source parts (there are none).
        runtime: bool,
    },
    /// `apsi pkg …`: the arguments after `pkg`.
    Pkg(Vec<String>),
    /// `apsi doctor …`: the arguments after `doctor`.
    Doctor(Vec<String>),
    /// `apsi kernel …`: the arguments after `kernel` (a Jupyter kernel).
    Kernel(Vec<String>),
    Version,
    Help(Option<String>),
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunOptions {
    pub file: String,
    /// Arguments after the program's file: the program's `argv`.
    pub argv: Vec<String>,
    /// `--time`: report the wall time of the run on stderr.
    pub time: bool,
    /// `--threads N`.
    pub threads: Option<usize>,
    /// Capabilities granted: `python`, `net`.
    pub allowed: Vec<String>,
    /// `--native-ir FN`: print the optimised LLVM IR of the `@native` function FN (`*`: all).
    pub native_ir: Option<String>,
    /// `--no-cache`: neither read nor write the compile cache.
    pub no_cache: bool,
}

/// `apsi bench FILE [-n N] [--warmup W] [--json] [run options] [-- ARGS…]`.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchOptions {
    pub run: RunOptions,
    /// Timed runs (`-n`).
    pub runs: usize,
    /// Untimed runs first (`--warmup`).
    pub warmup: usize,
    pub json: bool,
}

/// A usage error: exit status 2.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageError {
    pub message: String,
    pub hint: Option<String>,
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}", self.message)?;
        if let Some(h) = &self.hint {
            write!(f, "\n  = hint: {h}")?;
        }
        Ok(())
    }
}

fn usage(message: impl Into<String>, hint: Option<&str>) -> UsageError {
    UsageError {
        message: message.into(),
        hint: hint.map(str::to_string),
    }
}

pub const COMMANDS: &[(&str, &str)] = &[
    ("run FILE [ARGS…]", "run a program (also: apsi FILE)"),
    ("check FILE…", "check programs without running them"),
    (
        "compile PATHS…",
        "check and compile programs into the compile cache (apsi help compile)",
    ),
    ("bench FILE [-n N]", "run a program N times: best/median/mean/worst"),
    ("build FILE -o OUT", "one executable with the program compiled in"),
    ("repl", "start the interactive prompt (also: apsi alone)"),
    ("pkg COMMAND …", "install and manage packages (apsi pkg --help)"),
    (
        "kernel install",
        "install the Jupyter kernel; `kernel -f FILE` runs it (apsi help kernel)",
    ),
    (
        "doctor [--json]",
        "check what this machine and build can do (apsi help doctor)",
    ),
    ("help [COMMAND]", "show help"),
];

/// Parses the arguments after the program name.
pub fn parse(args: &[String]) -> Result<Command, UsageError> {
    let Some(first) = args.first() else {
        return Ok(Command::Repl(RunOptions::default()));
    };
    match first.as_str() {
        "--version" | "-V" | "version" => Ok(Command::Version),
        "--help" | "-h" => Ok(Command::Help(None)),
        "help" => Ok(Command::Help(args.get(1).cloned())),
        "run" => parse_run(&args[1..]).map(Command::Run),
        "bench" => parse_bench(&args[1..]).map(Command::Bench),
        "build" => {
            let mut file = None;
            let mut out = None;
            let mut allowed = Vec::new();
            let mut i = 1;
            while i < args.len() {
                match args[i].as_str() {
                    "--allow-python" => allowed.push("python".to_string()),
                    "--allow-net" => allowed.push("net".to_string()),
                    "--allow-all" => allowed.extend(["python".to_string(), "net".to_string()]),
                    "-o" | "--output" => {
                        let v = args
                            .get(i + 1)
                            .ok_or_else(|| usage("'-o' needs the executable's path", Some("apsi build app.apsi -o app")))?;
                        out = Some(v.clone());
                        i += 1;
                    }
                    f if f.starts_with('-') => {
                        return Err(usage(
                            format!("unknown option '{f}' for 'apsi build'"),
                            Some("see 'apsi help build'"),
                        ))
                    }
                    f if file.is_none() => file = Some(f.to_string()),
                    f => {
                        return Err(usage(
                            format!("'apsi build' takes one FILE, found a second: '{f}'"),
                            Some("apsi build app.apsi -o app"),
                        ))
                    }
                }
                i += 1;
            }
            match (file, out) {
                (Some(file), Some(out)) => Ok(Command::Build { file, out, allowed }),
                _ => Err(usage(
                    "'apsi build' needs a FILE and '-o OUT'",
                    Some("apsi build app.apsi -o app"),
                )),
            }
        }
        "compile" => {
            let mut paths = Vec::new();
            let mut allowed = Vec::new();
            let mut runtime = false;
            for a in &args[1..] {
                match a.as_str() {
                    "--allow-python" => allowed.push("python".to_string()),
                    "--allow-net" => allowed.push("net".to_string()),
                    "--allow-all" => allowed.extend(["python".to_string(), "net".to_string()]),
                    "--runtime" => runtime = true,
                    f if f.starts_with('-') => {
                        return Err(usage(
                            format!("unknown option '{f}' for 'apsi compile'"),
                            Some("see 'apsi help compile'"),
                        ))
                    }
                    f => paths.push(f.to_string()),
                }
            }
            if paths.is_empty() && !runtime {
                return Err(usage(
                    "'apsi compile' needs at least one PATH (a .apsi file or a folder)",
                    Some("apsi compile program.apsi"),
                ));
            }
            Ok(Command::Compile {
                paths,
                allowed,
                runtime,
            })
        }
        "pkg" => Ok(Command::Pkg(args[1..].to_vec())),
        "doctor" => Ok(Command::Doctor(args[1..].to_vec())),
        "kernel" => Ok(Command::Kernel(args[1..].to_vec())),
        "repl" => {
            let opts = parse_run_flags(&args[1..], false)?;
            Ok(Command::Repl(opts))
        }
        "check" => {
            let mut files = Vec::new();
            let mut allowed = Vec::new();
            for a in &args[1..] {
                match a.as_str() {
                    "--allow-python" => allowed.push("python".to_string()),
                    "--allow-net" => allowed.push("net".to_string()),
                    "--allow-all" => allowed.extend(["python".to_string(), "net".to_string()]),
                    f if f.starts_with('-') => {
                        return Err(usage(
                            format!("unknown option '{f}' for 'apsi check'"),
                            Some("see 'apsi help check'"),
                        ))
                    }
                    f => files.push(f.to_string()),
                }
            }
            if files.is_empty() {
                return Err(usage(
                    "'apsi check' needs at least one FILE",
                    Some("apsi check program.apsi"),
                ));
            }
            Ok(Command::Check { files, allowed })
        }
        other if other.starts_with('-') => {
            // Options before a file: `apsi --time prog.apsi`.
            parse_run(args).map(Command::Run)
        }
        other if other.ends_with(".apsi") || std::path::Path::new(other).is_file() => parse_run(args).map(Command::Run),
        other => Err(usage(
            format!("unknown command '{other}'"),
            Some("commands are run, check, compile, build, bench, repl, pkg, doctor, kernel, help; or give a program: apsi FILE.apsi"),
        )),
    }
}

fn parse_run(args: &[String]) -> Result<RunOptions, UsageError> {
    let opts = parse_run_flags(args, true)?;
    if opts.file.is_empty() {
        return Err(usage("'apsi run' needs a FILE", Some("apsi run program.apsi [ARGS…]")));
    }
    Ok(opts)
}

/// `apsi bench`: its own options and `apsi run`'s, in any order before a
/// `--`; the first other argument is the file.
fn parse_bench(args: &[String]) -> Result<BenchOptions, UsageError> {
    let mut rest = Vec::new();
    let mut runs = 10;
    let mut warmup = 1;
    let mut json = false;
    let mut i = 0;
    let count = |flag: &str, v: Option<&String>, min: usize| -> Result<usize, UsageError> {
        let v = v.ok_or_else(|| usage(format!("'{flag}' needs a number"), Some("apsi bench prog.apsi -n 10")))?;
        match v.parse::<usize>() {
            Ok(n) if n >= min => Ok(n),
            _ => Err(usage(
                format!("'{flag}' needs a whole number of at least {min}, found '{v}'"),
                None,
            )),
        }
    };
    while i < args.len() {
        match args[i].as_str() {
            "--" => {
                rest.extend_from_slice(&args[i..]);
                break;
            }
            "-n" | "--runs" => {
                runs = count(&args[i], args.get(i + 1), 1)?;
                i += 1;
            }
            "--warmup" => {
                warmup = count(&args[i], args.get(i + 1), 0)?;
                i += 1;
            }
            "--json" => json = true,
            _ => rest.push(args[i].clone()),
        }
        i += 1;
    }
    let run = parse_run_flags(&rest, true)?;
    if run.file.is_empty() {
        return Err(usage(
            "'apsi bench' needs a FILE",
            Some("apsi bench program.apsi -n 10"),
        ));
    }
    Ok(BenchOptions {
        run,
        runs,
        warmup,
        json,
    })
}

/// One of `apsi run`'s own options at `args[i]`: applies it and returns how
/// many arguments it took (0: not one of them).
fn run_flag(opts: &mut RunOptions, args: &[String], i: usize) -> Result<usize, UsageError> {
    let a = args[i].as_str();
    match a {
        "--time" => opts.time = true,
        "--no-cache" => opts.no_cache = true,
        "--allow-python" => opts.allowed.push("python".into()),
        "--allow-net" => opts.allowed.push("net".into()),
        "--allow-all" => opts.allowed.extend(["python".into(), "net".into()]),
        "--threads" | "-j" => {
            let v = args
                .get(i + 1)
                .ok_or_else(|| usage("'--threads' needs a number", Some("--threads 4")))?;
            opts.threads = Some(parse_threads(v)?);
            return Ok(2);
        }
        _ if a.starts_with("--threads=") => opts.threads = Some(parse_threads(&a["--threads=".len()..])?),
        "--native-ir" => {
            let v = args
                .get(i + 1)
                .ok_or_else(|| usage("'--native-ir' needs a function name", Some("--native-ir mandel")))?;
            opts.native_ir = Some(v.clone());
            return Ok(2);
        }
        _ => return Ok(0),
    }
    Ok(1)
}

/// Flags, then (when `want_file`) the file and the program's own arguments.
///
/// Before the file, every argument must be one of apsi's options. After
/// it, apsi's own `run` options (`--time`, `--no-cache`, `--threads N`,
/// `--allow-*`, `--native-ir FN`) are still apsi's wherever they appear,
/// and every other argument is the program's, in order; after a `--`,
/// everything is the program's (`apsi run app.apsi -- --time` gives the
/// program `--time`).
fn parse_run_flags(args: &[String], want_file: bool) -> Result<RunOptions, UsageError> {
    let mut opts = RunOptions::default();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let took = run_flag(&mut opts, args, i)?;
        if took > 0 {
            i += took;
            continue;
        }
        match a {
            "--" if want_file => {
                if let Some(f) = args.get(i + 1) {
                    opts.file = f.clone();
                    opts.argv = args[i + 2..].to_vec();
                }
                return Ok(opts);
            }
            _ if a.starts_with('-') && a.len() > 1 => {
                return Err(usage(format!("unknown option '{a}'"), Some("see 'apsi help run'")));
            }
            _ if want_file => {
                opts.file = a.to_string();
                let mut j = i + 1;
                while j < args.len() {
                    if args[j] == "--" {
                        opts.argv.extend_from_slice(&args[j + 1..]);
                        break;
                    }
                    let took = run_flag(&mut opts, args, j)?;
                    if took > 0 {
                        j += took;
                    } else {
                        opts.argv.push(args[j].clone());
                        j += 1;
                    }
                }
                return Ok(opts);
            }
            _ => return Err(usage(format!("unexpected argument '{a}'"), Some("see 'apsi help'"))),
        }
    }
    Ok(opts)
}

fn parse_threads(v: &str) -> Result<usize, UsageError> {
    match v.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(usage(
            format!("'--threads' needs a whole number of at least 1, found '{v}'"),
            None,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn run_with_flags_and_program_args() {
        let c = parse(&s(&["run", "--allow-python", "--time", "p.apsi", "--x", "1"])).unwrap();
        let Command::Run(o) = c else { panic!("expected run") };
        assert_eq!(o.file, "p.apsi");
        assert_eq!(o.argv, s(&["--x", "1"]));
        assert!(o.time);
        assert_eq!(o.allowed, s(&["python"]));
    }

    #[test]
    fn apsi_options_after_the_file_are_apsis_until_a_double_dash() {
        let Ok(Command::Run(o)) = parse(&s(&["run", "app.apsi", "--time", "in.csv", "-j", "2", "--x"])) else {
            panic!()
        };
        assert!(o.time);
        assert_eq!(o.threads, Some(2));
        assert_eq!(o.argv, s(&["in.csv", "--x"]));
        let Ok(Command::Run(o)) = parse(&s(&["app.apsi", "--no-cache", "--", "--time", "-j"])) else {
            panic!()
        };
        assert!(o.no_cache && !o.time);
        assert_eq!(o.argv, s(&["--time", "-j"]));
        // A missing value after the file is still a usage error.
        assert!(parse(&s(&["run", "app.apsi", "--threads"])).is_err());
    }

    #[test]
    fn bench_and_compile() {
        let Ok(Command::Bench(b)) = parse(&s(&["bench", "p.apsi", "-n", "5", "--json", "--", "x"])) else {
            panic!()
        };
        assert_eq!((b.runs, b.warmup, b.json), (5, 1, true));
        assert_eq!(b.run.file, "p.apsi");
        assert_eq!(b.run.argv, s(&["x"]));
        let Ok(Command::Bench(b)) = parse(&s(&["bench", "--warmup", "0", "--no-cache", "p.apsi", "a"])) else {
            panic!()
        };
        assert_eq!((b.runs, b.warmup), (10, 0));
        assert!(b.run.no_cache);
        assert_eq!(b.run.argv, s(&["a"]));
        assert!(parse(&s(&["bench"])).is_err());
        assert!(parse(&s(&["bench", "p.apsi", "-n", "0"])).is_err());
        assert!(parse(&s(&["bench", "p.apsi", "-n"])).is_err());
        assert!(matches!(
            parse(&s(&["compile", "a.apsi", "dir"])),
            Ok(Command::Compile { paths, runtime: false, .. }) if paths == s(&["a.apsi", "dir"])
        ));
        assert!(matches!(
            parse(&s(&["compile", "--runtime"])),
            Ok(Command::Compile { runtime: true, .. })
        ));
        assert!(parse(&s(&["compile"])).is_err());
        assert_eq!(
            parse(&s(&["build", "a.apsi", "-o", "a", "--allow-net"])),
            Ok(Command::Build {
                file: "a.apsi".into(),
                out: "a".into(),
                allowed: s(&["net"])
            })
        );
        assert!(parse(&s(&["build", "a.apsi"])).is_err());
        assert!(parse(&s(&["build", "a.apsi", "b.apsi", "-o", "x"])).is_err());
        assert!(parse(&s(&["build", "-o"])).is_err());
        assert!(parse(&s(&["compile", "--bogus", "a.apsi"])).is_err());
    }

    #[test]
    fn bare_file_runs() {
        assert!(matches!(parse(&s(&["prog.apsi"])), Ok(Command::Run(_))));
    }

    #[test]
    fn nothing_is_repl() {
        assert!(matches!(parse(&[]), Ok(Command::Repl(_))));
    }

    #[test]
    fn usage_errors() {
        assert!(parse(&s(&["run"])).is_err());
        assert!(parse(&s(&["frobnicate"])).is_err());
        assert!(parse(&s(&["run", "--threads", "0", "a.apsi"])).is_err());
        assert!(parse(&s(&["run", "--bogus", "a.apsi"])).is_err());
        assert!(parse(&s(&["run", "--native-ir"])).is_err());
        let Ok(Command::Run(o)) = parse(&s(&["run", "--native-ir", "f", "a.apsi"])) else {
            panic!()
        };
        assert_eq!(o.native_ir.as_deref(), Some("f"));
        assert!(parse(&s(&["check"])).is_err());
    }

    #[test]
    fn doctor_takes_its_own_options() {
        assert_eq!(parse(&s(&["doctor", "--json"])), Ok(Command::Doctor(s(&["--json"]))));
        assert_eq!(parse(&s(&["doctor"])), Ok(Command::Doctor(vec![])));
        assert_eq!(
            parse(&s(&["kernel", "install", "--user"])),
            Ok(Command::Kernel(s(&["install", "--user"])))
        );
    }

    #[test]
    fn threads_forms() {
        let Ok(Command::Run(o)) = parse(&s(&["run", "--threads=2", "a.apsi"])) else {
            panic!()
        };
        assert_eq!(o.threads, Some(2));
        let Ok(Command::Run(o)) = parse(&s(&["run", "--threads", "3", "a.apsi"])) else {
            panic!()
        };
        assert_eq!(o.threads, Some(3));
    }
}
