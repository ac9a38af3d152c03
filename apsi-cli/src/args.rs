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
    /// `apsi pkg …`: the arguments after `pkg`.
    Pkg(Vec<String>),
    /// `apsi doctor …`: the arguments after `doctor`.
    Doctor(Vec<String>),
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
    ("repl", "start the interactive prompt (also: apsi alone)"),
    ("pkg COMMAND …", "install and manage packages (apsi pkg --help)"),
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
        "pkg" => Ok(Command::Pkg(args[1..].to_vec())),
        "doctor" => Ok(Command::Doctor(args[1..].to_vec())),
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
            Some("commands are run, check, repl, pkg, doctor, help; or give a program: apsi FILE.apsi"),
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

/// Flags, then (when `want_file`) the file and the program's own arguments.
fn parse_run_flags(args: &[String], want_file: bool) -> Result<RunOptions, UsageError> {
    let mut opts = RunOptions::default();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "--time" => opts.time = true,
            "--allow-python" => opts.allowed.push("python".into()),
            "--allow-net" => opts.allowed.push("net".into()),
            "--allow-all" => opts.allowed.extend(["python".into(), "net".into()]),
            "--threads" | "-j" => {
                let v = args
                    .get(i + 1)
                    .ok_or_else(|| usage("'--threads' needs a number", Some("--threads 4")))?;
                opts.threads = Some(parse_threads(v)?);
                i += 1;
            }
            _ if a.starts_with("--threads=") => opts.threads = Some(parse_threads(&a["--threads=".len()..])?),
            "--native-ir" => {
                let v = args
                    .get(i + 1)
                    .ok_or_else(|| usage("'--native-ir' needs a function name", Some("--native-ir mandel")))?;
                opts.native_ir = Some(v.clone());
                i += 1;
            }
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
                opts.argv = args[i + 1..].to_vec();
                return Ok(opts);
            }
            _ => return Err(usage(format!("unexpected argument '{a}'"), Some("see 'apsi help'"))),
        }
        i += 1;
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
