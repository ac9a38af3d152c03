//! The `use` modules compiled into this binary (chosen by cargo feature).

use apsi_core::module::ModuleDescriptor;

/// Every compiled-in module, freshly described.
pub fn compiled_in() -> Vec<ModuleDescriptor> {
    Vec::new()
}
