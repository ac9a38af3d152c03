//! Finding the module a `use` names (LANGUAGE.md §8): a module compiled into
//! this binary, else a file beside the importing file, else one in the main
//! program's folder, else an installed package. A failure says what was tried
//! and what would fix it.

use super::suggest::closest;
use super::CheckEnv;
use crate::diagnostic::{Diagnostic, Span};
use crate::error::ErrorKind;
use crate::syntax::ast::Ident;
use std::path::{Path, PathBuf};

/// Where a directory is, both on disk and as shown to the user.
#[derive(Debug, Clone)]
pub(crate) struct Place {
    pub real: PathBuf,
    pub display: PathBuf,
}

pub(crate) enum Found {
    Builtin(String),
    File {
        real: PathBuf,
        display: String,
        /// Where it was looked for first, in vain (a file appearing there
        /// later would be found instead: the compile cache checks these).
        missed: Vec<PathBuf>,
    },
}

/// The folder installed packages live in: `$APSI_HOME/packages`, with
/// `APSI_HOME` defaulting to `~/.apsi`. `None` when neither is set.
pub fn default_packages_dir() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("APSI_HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(home).join("packages"));
    }
    let home = std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE"))?;
    Some(PathBuf::from(home).join(".apsi").join("packages"))
}

fn show(p: &Path) -> String {
    p.display().to_string()
}

/// Resolves one `use` path. `importer` is the folder of the file holding the
/// `use`, `main` the main program's folder.
pub(crate) fn find_module(
    path: &[Ident],
    span: Span,
    importer: &Place,
    main: &Place,
    packages: Option<&Path>,
    env: &CheckEnv,
) -> Result<Found, Box<Diagnostic>> {
    let dotted: Vec<&str> = path.iter().map(|i| i.name.as_str()).collect();
    let full = dotted.join(".");
    if dotted.is_empty() {
        return Err(Box::new(
            Diagnostic::new(ErrorKind::SyntaxError, "`use` needs a module name").at(span),
        ));
    }
    if let [single] = dotted.as_slice() {
        if env.builtin_modules.iter().any(|m| m.name == *single) {
            return Ok(Found::Builtin(single.to_string()));
        }
    }
    let mut rel = PathBuf::new();
    for part in &dotted {
        rel.push(part);
    }
    rel.set_extension("apsi");

    let mut tried: Vec<String> = Vec::new();
    let mut missed: Vec<PathBuf> = Vec::new();
    let mut dirs = vec![importer];
    if main.real != importer.real {
        dirs.push(main);
    }
    for dir in dirs {
        let real = dir.real.join(&rel);
        let display = dir.display.join(&rel);
        if real.is_file() {
            return Ok(Found::File {
                real,
                display: show(&display),
                missed,
            });
        }
        tried.push(show(&display));
        missed.push(real);
    }
    if let Some(pkgs) = packages {
        let first = dotted[0];
        let pkg = pkgs.join(first);
        let candidates: Vec<PathBuf> = if dotted.len() == 1 {
            vec![pkg.join(format!("{first}.apsi")), pkg.join("lib.apsi")]
        } else {
            let mut sub = pkg.clone();
            for part in &dotted[1..] {
                sub.push(part);
            }
            sub.set_extension("apsi");
            vec![sub]
        };
        for c in candidates {
            if c.is_file() {
                return Ok(Found::File {
                    display: show(&c),
                    real: c,
                    missed,
                });
            }
            tried.push(show(&c));
            missed.push(c);
        }
    }
    Err(Box::new(not_found(&full, &dotted, span, &tried, packages, env)))
}

fn not_found(
    full: &str,
    dotted: &[&str],
    span: Span,
    tried: &[String],
    packages: Option<&Path>,
    env: &CheckEnv,
) -> Diagnostic {
    let mut d =
        Diagnostic::new(ErrorKind::ModuleNotFoundError, format!("no module named '{full}'")).label(span, "not found");
    let compiled: Vec<&str> = env.builtin_modules.iter().map(|m| m.name.as_str()).collect();
    let compiled_text = if compiled.is_empty() {
        "none".to_string()
    } else {
        compiled.join(", ")
    };
    if dotted.len() == 1 {
        d = d.note(format!(
            "no module '{full}' is compiled into this binary (compiled in: {compiled_text})"
        ));
    }
    let mut looked = String::from("looked for the file at:");
    for t in tried {
        looked.push_str("\n  ");
        looked.push_str(t);
    }
    d = d.note(looked);
    if packages.is_none() {
        d = d.note("no packages folder: neither APSI_HOME nor HOME is set");
    }
    let head = dotted.first().copied().unwrap_or_default();
    let absent = env.absent_modules.iter().find(|m| m.name == head);
    let help = if let (1, Some(a)) = (dotted.len(), absent) {
        a.help.clone()
    } else {
        let mut h = String::new();
        if dotted.len() == 1 {
            let absent_names = env.absent_modules.iter().map(|m| m.name.as_str());
            if let Some(s) = closest(head, compiled.iter().copied().chain(absent_names)) {
                h.push_str(&format!("did you mean `use {s}`? "));
            }
        }
        h.push_str(&format!(
            "if '{head}' is a package, install it with `apsi pkg install {head}`; if it is your own file, \
             check the path (`use {full}` loads {}.apsi)",
            dotted.join("/")
        ));
        h
    };
    d.help(help)
}
