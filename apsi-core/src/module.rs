//! The Module API: how a `use` module (and the prelude) describes what it
//! gives to Apsi programs, and how it is installed into an interpreter.
//!
//! A module crate builds a [`ModuleDescriptor`] with [`ModuleBuilder`]:
//!
//! ```
//! use apsi_core::module::ModuleBuilder;
//! use apsi_core::value::Value;
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
//!
//! Installing modules into a runtime ([`check_installable`], called by
//! `Runtime::new`) fails, naming both sides, when a module's
//! `requires_core` does not match this core, when two modules have the same
//! name, or when two modules replace the same prelude name.

use crate::value::{ModuleObj, NativeFn, NativeFnPtr, Value};
use std::sync::{Arc, OnceLock};

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
    /// Exports that also replace the prelude's binding of the same name
    /// (the `native` module's `native` replaces the interpreted fallback).
    pub prelude: Vec<&'static str>,
    /// Exports whose string argument names a source to read (a file, or a
    /// URL with `--allow-net`): the Guard checks their URL literals.
    pub source_readers: Vec<&'static str>,
}

impl ModuleDescriptor {
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.exports.iter().find(|(n, _)| &**n == name).map(|(_, v)| v)
    }

    /// What the checker needs to know of this module.
    pub fn check_info(&self) -> crate::check::BuiltinModuleInfo {
        crate::check::BuiltinModuleInfo {
            name: self.name.to_string(),
            exports: self.exports.iter().map(|(n, _)| n.to_string()).collect(),
            capabilities: self.capabilities.iter().map(|c| c.to_string()).collect(),
            namespace_only: self.namespace_only,
        }
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
                prelude: Vec::new(),
                source_readers: Vec::new(),
            },
        }
    }

    /// Export a Rust function under `name`.
    pub fn function(self, name: &str, f: NativeFnPtr) -> ModuleBuilder {
        // One string serves the function and the export.
        let name: Arc<str> = name.into();
        let v = Value::Native(Arc::new(NativeFn {
            name: name.clone(),
            imp: crate::value::NativeImpl::Ptr(f),
        }));
        self.export(name, v)
    }

    /// Export any value (a constant, a closure-backed function, a type).
    pub fn constant(self, name: &str, v: Value) -> ModuleBuilder {
        self.export(name.into(), v)
    }

    /// Exports are pushed as given; a name given twice is resolved once,
    /// in [`ModuleBuilder::build`] (a search per export was quadratic in
    /// the prelude's hundreds of names, and built on every start).
    fn export(mut self, name: Arc<str>, v: Value) -> ModuleBuilder {
        self.desc.exports.push((name, v));
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

    /// Also bind the export `name` in the prelude, replacing the core's
    /// binding (see [`ModuleDescriptor::prelude`]).
    pub fn prelude(mut self, name: &'static str) -> ModuleBuilder {
        self.desc.prelude.push(name);
        self
    }

    /// Declare exports that read a source named by a string argument
    /// (see [`ModuleDescriptor::source_readers`]).
    pub fn reads_sources(mut self, names: &[&'static str]) -> ModuleBuilder {
        self.desc.source_readers.extend_from_slice(names);
        self
    }

    /// The descriptor; where a name was exported twice, the later value
    /// takes the earlier one's place.
    pub fn build(mut self) -> ModuleDescriptor {
        let exports = &mut self.desc.exports;
        let unique = {
            let mut seen = rustc_hash::FxHashSet::with_capacity_and_hasher(exports.len(), Default::default());
            exports.iter().all(|(n, _)| seen.insert(&**n))
        };
        if unique {
            return self.desc;
        }
        // Rare: rebuilt with each name at its first place, holding its last value.
        let mut place: rustc_hash::FxHashMap<Arc<str>, usize> =
            rustc_hash::FxHashMap::with_capacity_and_hasher(exports.len(), Default::default());
        let mut kept: Vec<(Arc<str>, Value)> = Vec::with_capacity(exports.len());
        for (n, v) in std::mem::take(exports) {
            match place.entry(n.clone()) {
                std::collections::hash_map::Entry::Occupied(i) => kept[*i.get()].1 = v,
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(kept.len());
                    kept.push((n, v));
                }
            }
        }
        *exports = kept;
        self.desc
    }
}

/// The compiled-in modules of a runtime. Each one's module value (a map
/// of its exports) is made the first time something asks for it: a
/// program that uses two modules does not build the other seven at every
/// start.
pub struct InstalledModules {
    entries: Vec<(ModuleDescriptor, OnceLock<Arc<ModuleObj>>)>,
}

impl InstalledModules {
    pub(crate) fn new(descriptors: Vec<ModuleDescriptor>) -> InstalledModules {
        InstalledModules {
            entries: descriptors.into_iter().map(|d| (d, OnceLock::new())).collect(),
        }
    }

    /// The module named `name` (as `use` spells it), made on first use.
    pub(crate) fn get(&self, name: &str) -> Option<&Arc<ModuleObj>> {
        let (d, obj) = self.entries.iter().find(|(d, _)| d.name == name)?;
        Some(obj.get_or_init(|| module_obj(d)))
    }

    /// Every module's descriptor, in the order installed.
    pub(crate) fn descriptors(&self) -> impl Iterator<Item = &ModuleDescriptor> {
        self.entries.iter().map(|(d, _)| d)
    }

    /// Every module, each made if it was not yet.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&'static str, &Arc<ModuleObj>)> {
        self.entries
            .iter()
            .map(|(d, obj)| (d.name, obj.get_or_init(|| module_obj(d))))
    }
}

fn module_obj(desc: &ModuleDescriptor) -> Arc<ModuleObj> {
    let mut attrs = indexmap::IndexMap::default();
    attrs.reserve(desc.exports.len());
    for (n, v) in &desc.exports {
        attrs.insert(n.clone(), v.clone());
    }
    Arc::new(ModuleObj {
        id: crate::value::StructType::new_id(),
        name: desc.name.to_string(),
        path: None,
        attrs: crate::value::VLock::new(attrs),
    })
}

/// Why a set of modules cannot be installed into a runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallError {
    pub message: String,
    pub hint: String,
}

impl std::fmt::Display for InstallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}\n  = hint: {}", self.message, self.hint)
    }
}

impl std::error::Error for InstallError {}

/// Checks modules before they are installed into a runtime of this core
/// (`core_version`: [`crate::VERSION`]).
pub fn check_installable(modules: &[ModuleDescriptor], core_version: &str) -> Result<(), InstallError> {
    let core = semver::Version::parse(core_version).map_err(|e| InstallError {
        message: format!("the core's version '{core_version}' is not semver: {e}"),
        hint: "this is a build problem of apsi-core".into(),
    })?;
    for (i, m) in modules.iter().enumerate() {
        let req = semver::VersionReq::parse(m.requires_core).map_err(|e| InstallError {
            message: format!(
                "module '{}' {} declares requires_core '{}', which is not a version requirement: {e}",
                m.name, m.version, m.requires_core
            ),
            hint: "write it as Cargo does, e.g. \"^2.0\"".into(),
        })?;
        if !req.matches(&core) {
            return Err(InstallError {
                message: format!(
                    "module '{}' {} requires apsi-core {}, and this core is {core_version}",
                    m.name, m.version, m.requires_core
                ),
                hint: format!(
                    "build apsi with a version of the '{}' module made for core {core_version}, or with a core it accepts",
                    m.name
                ),
            });
        }
        if let Some(other) = modules[..i].iter().find(|o| o.name == m.name) {
            return Err(InstallError {
                message: format!(
                    "two modules are named '{}' (versions {} and {})",
                    m.name, other.version, m.version
                ),
                hint: "install each module once; a module name is what `use NAME` finds".into(),
            });
        }
        for p in &m.prelude {
            if m.get(p).is_none() {
                return Err(InstallError {
                    message: format!("module '{}' replaces the prelude's '{p}' but exports no '{p}'", m.name),
                    hint: "export the name before declaring it with `prelude`".into(),
                });
            }
            if let Some(other) = modules[..i].iter().find(|o| o.prelude.contains(p)) {
                return Err(InstallError {
                    message: format!(
                        "modules '{}' and '{}' both replace the prelude's '{p}'",
                        other.name, m.name
                    ),
                    hint: "install only one of them".into(),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &'static str, req: &'static str) -> ModuleDescriptor {
        ModuleBuilder::new(name, "1.0.0", req)
            .function("f", |_c, _a, _k| Ok(Value::None))
            .build()
    }

    #[test]
    fn a_later_export_of_the_same_name_replaces_the_earlier_in_place() {
        let d = ModuleBuilder::new("d", "1.0.0", "^2.0")
            .constant("a", Value::Int(1))
            .function("f", |_c, _a, _k| Ok(Value::None))
            .constant("b", Value::Int(2))
            .constant("a", Value::Int(3))
            .function("b", |_c, _a, _k| Ok(Value::Int(4)))
            .build();
        let names: Vec<&str> = d.exports.iter().map(|(n, _)| &**n).collect();
        assert_eq!(names, ["a", "f", "b"]);
        assert!(matches!(d.get("a"), Some(Value::Int(3))));
        match d.get("b") {
            Some(Value::Native(f)) => assert_eq!(&*f.name, "b"),
            _ => panic!("b is the later function"),
        }
    }

    #[test]
    fn installed_modules_are_made_once_when_first_asked_for() {
        let ms = InstalledModules::new(vec![m("a", "^2"), m("b", "^2")]);
        assert!(
            ms.entries.iter().all(|(_, o)| o.get().is_none()),
            "nothing made up front"
        );
        let a = ms.get("a").expect("a is installed").clone();
        assert!(
            Arc::ptr_eq(&a, ms.get("a").unwrap()),
            "the same module value every time"
        );
        assert!(ms.entries[1].1.get().is_none(), "b is not made for a");
        assert!(a.attrs.read().get("f").is_some());
        assert!(ms.get("c").is_none());
        let names: Vec<&str> = ms.iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(Arc::ptr_eq(&a, ms.iter().next().unwrap().1));
    }

    #[test]
    fn requires_core_is_semver_and_enforced() {
        assert!(check_installable(&[m("a", "^2.0"), m("b", ">=1.5, <3")], "2.3.1").is_ok());
        let e = check_installable(&[m("a", "^2.1")], "2.0.9").unwrap_err();
        assert_eq!(
            e.message,
            "module 'a' 1.0.0 requires apsi-core ^2.1, and this core is 2.0.9"
        );
        assert!(check_installable(&[m("a", "^2.0")], "3.0.0").is_err());
        let e = check_installable(&[m("a", "two")], "2.0.0").unwrap_err();
        assert!(e.message.contains("not a version requirement"), "{e}");
    }

    #[test]
    fn duplicate_names_and_prelude_replacements_are_refused() {
        let e = check_installable(&[m("a", "^2"), m("a", "^2")], "2.0.0").unwrap_err();
        assert!(e.message.contains("two modules are named 'a'"), "{e}");
        let p = |n| {
            ModuleBuilder::new(n, "1.0.0", "^2")
                .function("native", |_c, _a, _k| Ok(Value::None))
                .prelude("native")
                .build()
        };
        assert!(check_installable(&[p("x")], "2.0.0").is_ok());
        let e = check_installable(&[p("x"), p("y")], "2.0.0").unwrap_err();
        assert!(e.message.contains("both replace the prelude's 'native'"), "{e}");
        let bad = ModuleBuilder::new("z", "1.0.0", "^2").prelude("print").build();
        assert!(check_installable(&[bad], "2.0.0").is_err());
    }
}
