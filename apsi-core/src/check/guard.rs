//! The Guard scan (LANGUAGE.md §9): every capability a program uses —
//! Python (`use python`, a module needing it, `backend="torch"`) and the
//! network (an `http://`/`https://` literal passed to a function that reads
//! a source: `read_text`, `from_csv`, …; printing a URL is not reading it) —
//! found in all
//! code, called or not, before anything runs. Capabilities not granted give
//! one `PermissionError` naming every missing flag.

use super::walk::{walk_body, walk_expr, walk_stmt, Visitor};
use super::{CheckEnv, Unit};
use crate::diagnostic::{Diagnostic, Label, Span};
use crate::error::ErrorKind;
use crate::syntax::ast::*;

/// The capabilities the Guard knows, with their flags, in flag order.
pub const CAPABILITIES: &[(&str, &str)] = &[("python", "--allow-python"), ("net", "--allow-net")];

/// What a `backend="torch"` argument is called in the Guard's labels.
const TORCH_BACKEND: &str = "`backend=\"torch\"`";
/// What a `check_torch()` call is called in the Guard's labels.
const CHECK_TORCH: &str = "`check_torch()`";

/// Whether the PyTorch backend of `use layers` is installed (a `torch` or
/// `torch-cuda` package, or `APSI_TORCH_PYTHON` naming an interpreter).
fn torch_backend_present() -> bool {
    if std::env::var_os("APSI_TORCH_PYTHON").is_some_and(|p| !p.is_empty()) {
        return true;
    }
    super::resolve::default_packages_dir().is_some_and(|d| d.join("torch").exists() || d.join("torch-cuda").exists())
}

/// One use of a capability.
#[derive(Debug, Clone, PartialEq)]
pub struct CapabilityUse {
    pub capability: String,
    pub span: Span,
    pub what: String,
}

struct Scan<'e> {
    env: &'e CheckEnv,
    found: Vec<CapabilityUse>,
}

/// Every capability use in these units.
pub fn scan_units(units: &[Unit], env: &CheckEnv) -> Vec<CapabilityUse> {
    let mut s = Scan { env, found: Vec::new() };
    for u in units {
        walk_body(&mut s, &u.ast.body);
    }
    s.found
}

impl Scan<'_> {
    fn add(&mut self, capability: &str, span: Span, what: String) {
        self.found.push(CapabilityUse {
            capability: capability.to_string(),
            span,
            what,
        });
    }
}

/// Whether a call's callee is one of `readers` (`CheckEnv::source_readers`),
/// by name or as a module attribute (`data.from_csv`).
fn reads_a_source(func: &Expr, readers: &[String]) -> bool {
    let name = match &func.kind {
        ExprKind::Name(n) => n.as_str(),
        ExprKind::Attribute { attr, .. } => attr.name.as_str(),
        _ => return false,
    };
    readers.iter().any(|r| r == name)
}

fn url_literal(e: &Expr) -> bool {
    let starts = |s: &str| s.starts_with("http://") || s.starts_with("https://");
    match &e.kind {
        ExprKind::Str(s) => starts(s),
        ExprKind::FString(parts) => matches!(parts.first(), Some(FStringPart::Literal(s)) if starts(s)),
        _ => false,
    }
}

impl<'a> Visitor<'a> for Scan<'_> {
    fn stmt(&mut self, s: &'a Stmt) {
        if let StmtKind::Use { path, .. } = &s.kind {
            if let [single] = path.as_slice() {
                let caps: Vec<String> = self
                    .env
                    .builtin_modules
                    .iter()
                    .find(|m| m.name == single.name)
                    .map(|m| m.capabilities.clone())
                    .unwrap_or_default();
                for c in caps {
                    self.add(&c, s.span, format!("`use {}`", single.name));
                }
            }
        }
        walk_stmt(self, s);
    }

    fn expr(&mut self, e: &'a Expr) {
        if let ExprKind::Call { func, args } = &e.kind {
            // `check_torch()` runs PyTorch in the Python worker (LAYERS.md §7).
            let callee = match &func.kind {
                ExprKind::Name(n) => Some(n.as_str()),
                ExprKind::Attribute { attr, .. } => Some(attr.name.as_str()),
                _ => None,
            };
            if callee == Some("check_torch") {
                self.add("python", func.span, CHECK_TORCH.to_string());
            }
            let reader = reads_a_source(func, &self.env.source_readers);
            for a in args {
                match a {
                    Arg::Keyword(k, v)
                        if k.name == "backend" && matches!(&v.kind, ExprKind::Str(s) if s == "torch") =>
                    {
                        self.add("python", v.span, TORCH_BACKEND.to_string());
                    }
                    Arg::Positional(v) | Arg::Keyword(_, v) if reader && url_literal(v) => {
                        self.add("net", v.span, "a network address".to_string());
                    }
                    _ => {}
                }
            }
        }
        walk_expr(self, e);
    }
}

/// The one `PermissionError` for every use of a capability not in
/// `env.allowed`, or `None` when everything used is allowed. `program` is
/// the main file as the user named it (for the rerun command); `None` for
/// the REPL.
pub fn permission_error(uses: &[CapabilityUse], env: &CheckEnv, program: Option<&str>) -> Option<Diagnostic> {
    let allowed = |c: &str| env.allowed.iter().any(|a| a == c || a == "all");
    let missing: Vec<&CapabilityUse> = uses.iter().filter(|u| !allowed(&u.capability)).collect();
    if missing.is_empty() {
        return None;
    }
    let flag_of = |cap: &str| -> String {
        CAPABILITIES
            .iter()
            .find(|(c, _)| *c == cap)
            .map(|(_, f)| f.to_string())
            .unwrap_or_else(|| format!("--allow-{cap}"))
    };
    let mut flags: Vec<String> = Vec::new();
    for (cap, flag) in CAPABILITIES {
        if missing.iter().any(|u| u.capability == *cap) {
            flags.push(flag.to_string());
        }
    }
    for u in &missing {
        let f = flag_of(&u.capability);
        if !flags.contains(&f) {
            flags.push(f);
        }
    }
    let mut d = Diagnostic::new(
        ErrorKind::PermissionError,
        format!("this program needs permission it was not given: {}", flags.join(", ")),
    );
    for u in &missing {
        d.labels.push(Label {
            span: u.span,
            message: Some(format!("{} needs {}", u.what, flag_of(&u.capability))),
        });
    }
    let what: Vec<&str> = flags
        .iter()
        .map(|f| match f.as_str() {
            "--allow-python" => "run Python code",
            "--allow-net" => "read from the network",
            _ => "use a capability",
        })
        .collect();
    d = d.note(format!(
        "the Guard checks every function, called or not, before anything runs; these flags let it {}",
        what.join(" and ")
    ));
    if let Some(u) = missing
        .iter()
        .find(|u| u.what == TORCH_BACKEND || u.what == CHECK_TORCH)
        .filter(|_| !torch_backend_present())
    {
        d = d.note(format!(
            "{} also needs the PyTorch backend package, which is not installed: \
             apsi pkg install torch (apsi pkg install torch-cuda for NVIDIA GPUs)",
            u.what
        ));
    }
    let flags = flags.join(" ");
    let help = match program {
        Some(program) => {
            let shown = if program.contains(char::is_whitespace) {
                format!("\"{program}\"")
            } else {
                program.to_string()
            };
            format!("if you trust this program, run it again with: apsi run {flags} {shown} (or --allow-all)")
        }
        None => format!("if you trust this code, restart the REPL with: apsi repl {flags} (or --allow-all)"),
    };
    Some(d.help(help))
}
