//! Doctor's two outputs: `[✓]/[!]/[✗]` lines for people, and the JSON
//! document for programs.

use crate::check::{Check, Status};
use serde_json::{Map, Value};

/// The JSON document's version; bumped when a field changes meaning or goes away.
pub const SCHEMA_VERSION: u32 = 1;

/// `{schema_version, apsi_version, checks: [{id, status, summary, details, fix}]}`.
pub fn json(apsi_version: &str, checks: &[Check]) -> Value {
    let mut m = Map::new();
    m.insert("schema_version".into(), Value::from(SCHEMA_VERSION));
    m.insert("apsi_version".into(), Value::from(apsi_version));
    m.insert(
        "checks".into(),
        Value::Array(checks.iter().map(Check::to_json).collect()),
    );
    Value::Object(m)
}

/// [`json`] as pretty-printed text.
pub fn json_text(apsi_version: &str, checks: &[Check]) -> String {
    serde_json::to_string_pretty(&json(apsi_version, checks)).unwrap_or_default()
}

/// One line per check, the fix under each problem, and a closing tally.
/// `color`: ANSI colours on the markers; `verbose`: the details too.
pub fn text(checks: &[Check], color: bool, verbose: bool) -> String {
    let width = checks.iter().map(|c| c.id.len()).max().unwrap_or(0);
    let mut out = String::new();
    for c in checks {
        let marker = if color {
            let code = match c.status {
                Status::Ok => "32",
                Status::Warn => "33",
                Status::Error => "31",
                Status::Skip => "2",
            };
            format!("\x1b[{code}m{}\x1b[0m", c.status.marker())
        } else {
            c.status.marker().to_string()
        };
        out.push_str(&format!("{marker} {:<width$}  {}\n", c.id, c.summary));
        if matches!(c.status, Status::Warn | Status::Error) {
            if let Some(f) = &c.fix {
                out.push_str(&format!("    {:<width$}  fix: {f}\n", ""));
            }
        }
        if verbose {
            for (k, v) in &c.details {
                let v = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                out.push_str(&format!("    {:<width$}  {k}: {v}\n", ""));
            }
        }
    }
    let count = |s: Status| checks.iter().filter(|c| c.status == s).count();
    let (e, w) = (count(Status::Error), count(Status::Warn));
    out.push_str(&match (e, w) {
        (0, 0) => "\nNo problems found.\n".to_string(),
        _ => format!(
            "\n{e} error{}, {w} warning{}.\n",
            if e == 1 { "" } else { "s" },
            if w == 1 { "" } else { "s" }
        ),
    });
    out
}

/// 0 without errors (and, with `strict`, without warnings); 1 otherwise.
pub fn exit_code(checks: &[Check], strict: bool) -> u8 {
    let bad = |c: &Check| c.status == Status::Error || (strict && c.status == Status::Warn);
    u8::from(checks.iter().any(bad))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Check> {
        vec![
            Check::ok("cpu", "8 cores"),
            Check::warn("gpu", "no GPU").fix("install one"),
            Check::skip("registry", "offline"),
        ]
    }

    #[test]
    fn exit_codes() {
        let mut c = sample();
        assert_eq!(exit_code(&c, false), 0);
        assert_eq!(exit_code(&c, true), 1);
        c.push(Check::error("disk", "full").fix("free space"));
        assert_eq!(exit_code(&c, false), 1);
        assert_eq!(exit_code(&[Check::ok("a", "b"), Check::skip("c", "d")], true), 0);
    }

    #[test]
    fn plain_text_has_markers_fixes_and_no_escapes() {
        let t = text(&sample(), false, false);
        assert!(t.contains("[✓] cpu"), "{t}");
        assert!(t.contains("[!] gpu"), "{t}");
        assert!(t.contains("fix: install one"), "{t}");
        assert!(t.contains("[-] registry"), "{t}");
        assert!(t.ends_with("0 errors, 1 warning.\n"), "{t}");
        assert!(!t.contains('\x1b'));
        assert!(text(&sample(), true, false).contains("\x1b[33m[!]\x1b[0m"));
        let v = text(&[Check::ok("cpu", "x").detail("cores", 8)], false, true);
        assert!(v.contains("cores: 8") && v.contains("No problems found."), "{v}");
    }

    #[test]
    fn json_document_shape() {
        let j = json("2.0.0", &sample());
        let keys: Vec<&String> = j.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["schema_version", "apsi_version", "checks"]);
        assert_eq!(j["checks"][1]["fix"], "install one");
    }
}
