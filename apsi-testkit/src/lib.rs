//! Test harness for the crates that add modules to Apsi: checks and runs an
//! Apsi program in-process, through the core's own checker and runtime, with
//! the modules under test installed and the program's output captured.
//!
//! Dev-dependency only; depends on `apsi-core` alone.

mod capture;
mod program;
mod temp;

pub use capture::Capture;
pub use program::{Failure, Outcome, Program};

use apsi_core::check::BuiltinModuleInfo;
use apsi_core::module::ModuleDescriptor;

/// What the checker needs to know of compiled-in modules: their names,
/// exported names and the capabilities a program using them needs.
pub fn module_infos(modules: &[ModuleDescriptor]) -> Vec<BuiltinModuleInfo> {
    modules.iter().map(ModuleDescriptor::check_info).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use apsi_core::value::Value;

    #[test]
    fn module_infos_carry_names_exports_and_capabilities() {
        let modules = vec![
            ModuleDescriptor {
                name: "alpha",
                version: "1.0.0",
                requires_core: "^2.0",
                exports: vec![("one".into(), Value::Int(1)), ("two".into(), Value::Int(2))],
                capabilities: vec![],
                namespace_only: false,
                prelude: vec![],
                source_readers: vec![],
            },
            ModuleDescriptor {
                name: "beta",
                version: "1.0.0",
                requires_core: "^2.0",
                exports: vec![],
                capabilities: vec!["net", "python"],
                namespace_only: true,
                prelude: vec![],
                source_readers: vec![],
            },
        ];
        let infos = module_infos(&modules);
        assert_eq!(infos.len(), 2);
        assert_eq!(
            (
                infos[0].name.as_str(),
                infos[0].exports.clone(),
                infos[0].capabilities.clone()
            ),
            ("alpha", vec!["one".to_string(), "two".to_string()], vec![])
        );
        assert_eq!(
            (
                infos[1].name.as_str(),
                infos[1].exports.clone(),
                infos[1].capabilities.clone()
            ),
            ("beta", vec![], vec!["net".to_string(), "python".to_string()])
        );
        assert!(!infos[0].namespace_only && infos[1].namespace_only);
    }
}
