//! `apsi pkg …`: the package manager's command line. The work is done by
//! `apsi-pkg`; this file parses arguments, draws progress bars when stderr
//! is a terminal (quiet otherwise), and prints results (or `--json`).

use apsi_pkg::config::RegistryConfig;
use apsi_pkg::ops::{self, Ctx, Options, Project, Reporter};
use apsi_pkg::resolve::Platform;
use apsi_pkg::{ErrorKind, PkgError};
use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Mutex;

pub const HELP: &str = "\
apsi pkg COMMAND [OPTIONS]

Commands:
  install [NAME[@REQ]…]   install packages; in a project (a folder with apsi.toml)
                          add them to apsi.toml and resolve it into apsi.lock;
                          a Python backend (torch) also gets its environment,
                          $APSI_HOME/venvs/NAME, from its hash-pinned wheels
  remove NAME…            uninstall, with any Python environment (the store
                          keeps the archive for --offline)
  list [--json]           installed packages
  info NAME [--json]      published versions and what is installed
  search [WORD]           package names in the registry
  update                  newest versions (rewrites apsi.lock in a project)
  verify [NAME…] [--json] re-check installed packages against the signed index
  fetch NAME[@REQ]…       download into the store without installing

Options:
  --offline               use only what is cached; opens no network connection
  --locked                fail if apsi.lock would change
  --frozen                --locked and --offline
  --target TRIPLE         resolve for another target (e.g. x86_64-linux-gnu)
  --tag TAG               allow packages needing TAG (e.g. cuda); repeatable
  --jobs N                parallel downloads (default 8)
  --global                ignore any apsi.toml here; install for the user only
  --json                  machine-readable output (list, info, verify)

Python environments: made with $APSI_PYTHON (else python3) and pip, whose own
settings apply (PIP_FIND_LINKS=DIR PIP_NO_INDEX=1: wheels from a folder).
Registry: APSI_REGISTRY (URL) and APSI_REGISTRY_ROOT (its trusted root.json),
or [registry] in $APSI_HOME/config.toml. State lives in $APSI_HOME (~/.apsi).
";

struct Args {
    cmd: String,
    pos: Vec<String>,
    offline: bool,
    locked: bool,
    json: bool,
    global: bool,
    target: Option<String>,
    tags: Vec<String>,
    jobs: Option<usize>,
}

fn usage(msg: impl Into<String>) -> PkgError {
    PkgError::new(ErrorKind::Usage, msg).hint("see 'apsi pkg --help'")
}

fn parse(argv: &[String]) -> Result<Args, PkgError> {
    let Some(cmd) = argv.first() else {
        return Err(usage("'apsi pkg' needs a command"));
    };
    let mut a = Args {
        cmd: cmd.clone(),
        pos: Vec::new(),
        offline: false,
        locked: false,
        json: false,
        global: false,
        target: None,
        tags: Vec::new(),
        jobs: None,
    };
    let mut i = 1;
    while i < argv.len() {
        let s = argv[i].as_str();
        let mut value = |name: &str| -> Result<String, PkgError> {
            i += 1;
            argv.get(i)
                .cloned()
                .ok_or_else(|| usage(format!("'{name}' needs a value")))
        };
        match s {
            "--offline" => a.offline = true,
            "--locked" => a.locked = true,
            "--frozen" => {
                a.locked = true;
                a.offline = true;
            }
            "--json" => a.json = true,
            "--global" => a.global = true,
            "--target" => a.target = Some(value("--target")?),
            "--tag" => a.tags.push(value("--tag")?),
            "--jobs" | "-j" => {
                let v = value("--jobs")?;
                a.jobs = Some(
                    v.parse()
                        .ok()
                        .filter(|n| *n >= 1)
                        .ok_or_else(|| usage(format!("'--jobs' needs a whole number of at least 1, found '{v}'")))?,
                );
            }
            _ if s.starts_with('-') => return Err(usage(format!("unknown option '{s}' for 'apsi pkg {}'", a.cmd))),
            _ => a.pos.push(s.to_string()),
        }
        i += 1;
    }
    Ok(a)
}

/// Progress bars on a terminal, one per download.
struct Bars {
    multi: indicatif::MultiProgress,
    bars: Mutex<HashMap<String, indicatif::ProgressBar>>,
}

impl Reporter for Bars {
    fn begin(&self, name: &str, total: u64) {
        let style =
            indicatif::ProgressStyle::with_template("{msg:>16} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                .progress_chars("=> ");
        let b = self.multi.add(
            indicatif::ProgressBar::new(total)
                .with_style(style)
                .with_message(name.to_string()),
        );
        if let Ok(mut m) = self.bars.lock() {
            m.insert(name.to_string(), b);
        }
    }
    fn advance(&self, name: &str, done: u64) {
        if let Some(b) = self.bars.lock().ok().and_then(|m| m.get(name).cloned()) {
            b.set_position(done);
        }
    }
    fn end(&self, name: &str) {
        if let Some(b) = self.bars.lock().ok().and_then(|mut m| m.remove(name)) {
            b.finish_and_clear();
        }
    }
    fn note(&self, line: &str) {
        let _ = self.multi.println(line);
    }
}

/// No bars (stderr is not a terminal, or `--json`), but the news of a long
/// step (creating a Python environment) still goes to stderr.
struct Notes;

impl Reporter for Notes {
    fn note(&self, line: &str) {
        eprintln!("{line}");
    }
}

fn fail(e: &PkgError) -> u8 {
    // The retry marker is for the library, not for people.
    let text = e.to_string().replace(" (transient)", "");
    eprintln!("error: {text}");
    if e.kind == ErrorKind::Usage {
        2
    } else {
        1
    }
}

fn print_json(v: &impl serde::Serialize) {
    match serde_json::to_string_pretty(v) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("error: cannot write JSON: {e}"),
    }
}

/// Runs `apsi pkg ARGS…`; returns the exit status.
pub fn main(argv: &[String]) -> u8 {
    if argv
        .first()
        .map(String::as_str)
        .is_none_or(|c| c == "--help" || c == "-h" || c == "help")
    {
        print!("{HELP}");
        return if argv.is_empty() { 2 } else { 0 };
    }
    let a = match parse(argv) {
        Ok(a) => a,
        Err(e) => return fail(&e),
    };
    match run(&a) {
        Ok(code) => code,
        Err(e) => fail(&e),
    }
}

fn run(a: &Args) -> Result<u8, PkgError> {
    let home = apsi_pkg::home::from_env()?;
    if a.cmd == "list" {
        let l = ops::list(&home)?;
        if a.json {
            print_json(&l);
        } else if l.is_empty() {
            println!("no packages installed");
        } else {
            for p in l {
                println!("{} {} ({}, {})", p.name, p.version, p.kind, p.target);
            }
        }
        return Ok(0);
    }
    let registry = RegistryConfig::from_env(&home)?;
    let mut platform = Platform::host();
    if let Some(t) = &a.target {
        apsi_pkg::index::check_target(t)?;
        platform.target = t.clone();
    }
    for t in &a.tags {
        apsi_pkg::index::check_target(t)?;
    }
    platform.tags = a.tags.clone();
    let mut opts = Options {
        offline: a.offline,
        locked: a.locked,
        platform,
        ..Options::default()
    };
    if let Some(j) = a.jobs {
        opts.jobs = j;
    }
    let bars;
    let quiet = Notes;
    let reporter: &dyn Reporter = if std::io::stderr().is_terminal() && !a.json {
        bars = Bars {
            multi: indicatif::MultiProgress::new(),
            bars: Mutex::new(HashMap::new()),
        };
        &bars
    } else {
        &quiet
    };
    let ctx = Ctx::new(home, registry, opts, reporter);
    let project = if a.global {
        None
    } else {
        std::env::current_dir().ok().and_then(|d| Project::find(&d))
    };
    match a.cmd.as_str() {
        "install" => {
            let r = ctx.install(&a.pos, project.as_ref())?;
            report_install(&r, project.as_ref());
            Ok(0)
        }
        "update" => {
            let r = ctx.update(project.as_ref())?;
            report_install(&r, project.as_ref());
            Ok(0)
        }
        "fetch" => {
            if a.pos.is_empty() {
                return Err(usage("'apsi pkg fetch' needs at least one NAME"));
            }
            let r = ctx.fetch(&a.pos)?;
            for w in &r.warnings {
                eprintln!("warning: {w}");
            }
            for (n, _) in &r.downloaded {
                println!("fetched {n}");
            }
            if r.downloaded.is_empty() {
                println!("everything was already in the store");
            }
            Ok(0)
        }
        "remove" | "uninstall" => {
            if a.pos.is_empty() {
                return Err(usage("'apsi pkg remove' needs at least one NAME"));
            }
            for r in ctx.remove_all(&a.pos)? {
                println!("{r}");
            }
            Ok(0)
        }
        "info" => {
            let [name] = a.pos.as_slice() else {
                return Err(usage("'apsi pkg info' needs one NAME"));
            };
            let s = ctx.open()?;
            for w in &s.warnings {
                eprintln!("warning: {w}");
            }
            let lines = s.lines(name)?;
            let installed = ops::list(&ctx.home)?.into_iter().find(|i| &i.name == name);
            if a.json {
                print_json(&serde_json::json!({ "name": name, "versions": lines, "installed": installed }));
            } else {
                println!("{name}");
                for l in &lines {
                    let y = if l.yanked { " (yanked)" } else { "" };
                    let tags = if l.tags.is_empty() {
                        String::new()
                    } else {
                        format!(" +{}", l.tags.join("+"))
                    };
                    println!("  {} {} for {}{tags}, {} bytes{y}", l.vers, l.kind, l.target, l.size);
                }
                match installed {
                    Some(i) => println!("installed: {} ({})", i.version, i.target),
                    None => println!("not installed"),
                }
            }
            Ok(0)
        }
        "search" => {
            let s = ctx.open()?;
            let word = a.pos.first().map(|w| w.to_lowercase()).unwrap_or_default();
            let mut names: Vec<String> = s.names().into_iter().filter(|n| n.contains(&word)).collect();
            names.sort();
            if a.json {
                print_json(&names);
            } else if names.is_empty() {
                println!("no package matches '{word}'");
            } else {
                for n in names {
                    println!("{n}");
                }
            }
            Ok(0)
        }
        "verify" => {
            let v = ops::verify(&ctx, &a.pos)?;
            let bad = v.iter().any(|x| !x.ok);
            if a.json {
                print_json(&v);
            } else {
                for x in &v {
                    if x.ok {
                        println!("[ok] {} {}", x.name, x.version);
                    } else {
                        println!("[FAILED] {} {}: {}", x.name, x.version, x.problems.join("; "));
                    }
                }
                if v.is_empty() {
                    println!("no packages installed");
                }
            }
            Ok(u8::from(bad))
        }
        other => Err(usage(format!("unknown command 'apsi pkg {other}'"))),
    }
}

fn report_install(r: &ops::Report, project: Option<&Project>) {
    for w in &r.warnings {
        eprintln!("warning: {w}");
    }
    for i in &r.installed {
        println!("installed {} {} ({}, {})", i.name, i.version, i.kind, i.target);
    }
    for e in &r.python_envs {
        println!("{e}");
    }
    if r.lock_written {
        if let Some(p) = project {
            println!("wrote {}", p.lockfile().display());
        }
    }
}
