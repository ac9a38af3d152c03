//! The Module API: how a `use` module (and the prelude) describes what it
//! gives to Apsi programs, and how it is installed into an interpreter.
//!
//! A module crate builds a [`ModuleDescriptor`] with [`ModuleBuilder`]:
//!
//! ```
//! use apsi_core::module::ModuleBuilder;
//! use apsi_core::vm::value::Value;
//! let m = ModuleBuilder::new("demo", "1.0.0", "^2.0")
//!     .function("answer", |_c, _args, _kw| Ok(Value::Int(42)))
//!     .constant("pi2", Value::Float(6.28))
//!     .build();
//! assert_eq!(m.exports.len(), 2);
//! ```
//!
//! Invariants: export names are unique within a descriptor (a later
//! `function`/`constant` of the same name replaces the earlier one);
//! `requires_core` is a semver requirement on `apsi-core`'s version.

use crate::vm::value::{NativeFn, NativeFnPtr, Value};
use std::sync::Arc;

pub struct ModuleDescriptor {
    pub name: &'static str,
    pub version: &'static str,
    /// Semver requirement on apsi-core, such as `^2.0`.
    pub requires_core: &'static str,
    pub exports: Vec<(Arc<str>, Value)>,
    /// Capabilities a program using this module needs (`python`, `net`), for the Guard.
    pub capabilities: Vec<&'static str>,
    /// `use NAME` binds only `NAME` (as Python's `import`): the exports are
    /// reached as `NAME.f` and never become unqualified names, so they cannot
    /// hide the prelude's (`use math` keeps the prelude's `sqrt`).
    pub namespace_only: bool,
}

impl ModuleDescriptor {
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.exports.iter().find(|(n, _)| &**n == name).map(|(_, v)| v)
    }
}

pub struct ModuleBuilder {
    desc: ModuleDescriptor,
}

impl ModuleBuilder {
    pub fn new(name: &'static str, version: &'static str, requires_core: &'static str) -> ModuleBuilder {
        ModuleBuilder {
            desc: ModuleDescriptor {
                name,
                version,
                requires_core,
                exports: Vec::new(),
                capabilities: Vec::new(),
                namespace_only: false,
            },
        }
    }

    /// Export a Rust function under `name`.
    pub fn function(self, name: &str, f: NativeFnPtr) -> ModuleBuilder {
        let v = Value::Native(Arc::new(NativeFn::new(name, f)));
        self.constant(name, v)
    }

    /// Export any value (a constant, a closure-backed function, a type).
    pub fn constant(mut self, name: &str, v: Value) -> ModuleBuilder {
        let name: Arc<str> = name.into();
        if let Some(slot) = self.desc.exports.iter_mut().find(|(n, _)| *n == name) {
            slot.1 = v;
        } else {
            self.desc.exports.push((name, v));
        }
        self
    }

    /// Declare that using this module needs a capability the Guard checks.
    pub fn capability(mut self, cap: &'static str) -> ModuleBuilder {
        self.desc.capabilities.push(cap);
        self
    }

    /// Bind only the module's name on `use` (see [`ModuleDescriptor::namespace_only`]).
    pub fn namespace_only(mut self) -> ModuleBuilder {
        self.desc.namespace_only = true;
        self
    }

    pub fn build(self) -> ModuleDescriptor {
        self.desc
    }
}

/// Whether `core_version` satisfies a requirement such as `^2.0`, `>=2.1`, `2`.
/// (A small subset of semver: the forms module crates use.)
pub fn core_satisfies(requirement: &str, core_version: &str) -> bool {
    fn parse(v: &str) -> Vec<u64> {
        v.trim().split('.').map(|p| p.parse().unwrap_or(0)).collect()
    }
    let have = parse(core_version);
    let req = requirement.trim();
    let (op, ver) = if let Some(r) = req.strip_prefix(">=") {
        (">=", r)
    } else if let Some(r) = req.strip_prefix('^') {
        ("^", r)
    } else if let Some(r) = req.strip_prefix('=') {
        ("=", r)
    } else {
        ("^", req)
    };
    let want = parse(ver);
    let cmp = |a: &[u64], b: &[u64]| {
        for i in 0..3 {
            let (x, y) = (a.get(i).copied().unwrap_or(0), b.get(i).copied().unwrap_or(0));
            if x != y {
                return x.cmp(&y);
            }
        }
        std::cmp::Ordering::Equal
    };
    match op {
        ">=" => cmp(&have, &want) != std::cmp::Ordering::Less,
        "=" => cmp(&have, &want) == std::cmp::Ordering::Equal,
        _ => have.first() == want.first() && cmp(&have, &want) != std::cmp::Ordering::Less,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn semver_subset() {
        assert!(core_satisfies("^2.0", "2.0.0"));
        assert!(core_satisfies("^2.0", "2.3.1"));
        assert!(!core_satisfies("^2.1", "2.0.9"));
        assert!(!core_satisfies("^2.0", "3.0.0"));
        assert!(core_satisfies(">=1.5", "2.0.0"));
        assert!(core_satisfies("2", "2.4.0"));
    }
}
