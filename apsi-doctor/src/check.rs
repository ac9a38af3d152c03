//! One probe's result: an id, a status, a one-line summary, structured
//! details and, for a problem, the fix.

use serde_json::{Map, Value};

/// How a check came out. `Skip` is a check that did not apply (for example
/// the registry under `--offline`); it counts as neither a warning nor an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    Warn,
    Error,
    Skip,
}

impl Status {
    /// The JSON spelling: `ok`, `warn`, `error`, `skip`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Error => "error",
            Status::Skip => "skip",
        }
    }

    /// The text marker: `[✓]`, `[!]`, `[✗]`, `[-]`.
    pub fn marker(self) -> &'static str {
        match self {
            Status::Ok => "[✓]",
            Status::Warn => "[!]",
            Status::Error => "[✗]",
            Status::Skip => "[-]",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub id: String,
    pub status: Status,
    pub summary: String,
    pub details: Map<String, Value>,
    /// What to do about a warning or an error.
    pub fix: Option<String>,
}

impl Check {
    pub fn new(id: &str, status: Status, summary: impl Into<String>) -> Check {
        Check {
            id: id.to_string(),
            status,
            summary: summary.into(),
            details: Map::new(),
            fix: None,
        }
    }
    pub fn ok(id: &str, summary: impl Into<String>) -> Check {
        Check::new(id, Status::Ok, summary)
    }
    pub fn warn(id: &str, summary: impl Into<String>) -> Check {
        Check::new(id, Status::Warn, summary)
    }
    pub fn error(id: &str, summary: impl Into<String>) -> Check {
        Check::new(id, Status::Error, summary)
    }
    pub fn skip(id: &str, summary: impl Into<String>) -> Check {
        Check::new(id, Status::Skip, summary)
    }

    /// Adds a detail (numbers, strings, booleans, lists, objects).
    pub fn detail(mut self, key: &str, value: impl Into<Value>) -> Check {
        self.details.insert(key.to_string(), value.into());
        self
    }

    /// Adds a detail only when there is a value.
    pub fn detail_opt<T: Into<Value>>(self, key: &str, value: Option<T>) -> Check {
        match value {
            Some(v) => self.detail(key, v),
            None => self,
        }
    }

    pub fn fix(mut self, fix: impl Into<String>) -> Check {
        self.fix = Some(fix.into());
        self
    }

    /// `{id, status, summary, details, fix}` (fix is `null` when there is none).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("id".into(), Value::from(self.id.clone()));
        m.insert("status".into(), Value::from(self.status.as_str()));
        m.insert("summary".into(), Value::from(self.summary.clone()));
        m.insert("details".into(), Value::Object(self.details.clone()));
        m.insert("fix".into(), self.fix.clone().map_or(Value::Null, Value::from));
        Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_has_the_five_fields_in_order() {
        let c = Check::warn("gpu", "no GPU").detail("count", 0).fix("install a driver");
        let j = c.to_json();
        let keys: Vec<&String> = j.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["id", "status", "summary", "details", "fix"]);
        assert_eq!(j["status"], "warn");
        assert_eq!(j["details"]["count"], 0);
        assert_eq!(Check::ok("x", "y").to_json()["fix"], Value::Null);
    }
}
