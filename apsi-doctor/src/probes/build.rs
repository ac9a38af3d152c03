//! What is in this build of apsi: its cargo features and compiled-in modules
//! (a lean build leaves some out; the summary says which and how to get them).

use crate::check::Check;
use serde_json::{json, Map, Value};

/// `features`: every optional feature with whether it is in; `modules`:
/// (name, version) of each compiled-in `use` module.
pub fn probe(apsi_version: &str, features: &[(&str, bool)], modules: &[(String, String)]) -> Check {
    let mut fm = Map::new();
    for (f, on) in features {
        fm.insert(f.to_string(), Value::from(*on));
    }
    let on: Vec<&str> = features.iter().filter(|f| f.1).map(|f| f.0).collect();
    let off: Vec<&str> = features.iter().filter(|f| !f.1).map(|f| f.0).collect();
    let mut summary = format!("apsi {apsi_version}");
    if on.is_empty() {
        summary.push_str(", core only");
    } else {
        summary.push_str(&format!(" with {}", on.join(", ")));
    }
    if !off.is_empty() {
        summary.push_str(&format!("; built without {}", off.join(", ")));
    }
    let c = Check::ok("build", summary)
        .detail("apsi_version", apsi_version)
        .detail("features", Value::Object(fm))
        .detail(
            "modules",
            modules
                .iter()
                .map(|(n, v)| json!({"name": n, "version": v}))
                .collect::<Vec<_>>(),
        );
    if off.is_empty() {
        c
    } else {
        c.fix(format!(
            "a lean build: to add what is left out, rebuild from the sources with `cargo install --path apsi-cli --features {}`",
            off.join(",")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lean_build_says_what_is_missing_and_how_to_get_it() {
        let c = probe(
            "2.0.0",
            &[("parallel", true), ("native", false)],
            &[("parallel".into(), "1.0.0".into())],
        );
        assert_eq!(c.status, crate::Status::Ok);
        assert!(
            c.summary.contains("with parallel; built without native"),
            "{}",
            c.summary
        );
        assert!(c.fix.unwrap().contains("--features native"));
        assert_eq!(c.details["modules"][0]["name"], "parallel");
        let full = probe("2.0.0", &[("parallel", true)], &[]);
        assert!(full.fix.is_none());
    }
}
