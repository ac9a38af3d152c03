//! The `use` modules compiled into this binary (chosen by cargo feature).

use apsi_core::check::AbsentModule;
use apsi_core::module::ModuleDescriptor;

/// Every optional cargo feature of `apsi` and whether this build has it.
pub const FEATURES: &[(&str, bool)] = &[
    ("parallel", cfg!(feature = "parallel")),
    ("precision", cfg!(feature = "precision")),
    ("data", cfg!(feature = "data")),
    ("native", cfg!(feature = "native")),
    ("pkg", cfg!(feature = "pkg")),
    ("blas", cfg!(feature = "blas")),
    ("python", cfg!(feature = "python")),
    ("math", cfg!(feature = "math")),
    ("random", cfg!(feature = "random")),
    ("layers", cfg!(feature = "layers")),
    ("plot", cfg!(feature = "plot")),
    ("kernel", cfg!(feature = "kernel")),
];

/// The `use` modules that are cargo features, and whether this build has each.
const MODULE_FEATURES: &[(&str, bool)] = &[
    ("parallel", cfg!(feature = "parallel")),
    ("precision", cfg!(feature = "precision")),
    ("native", cfg!(feature = "native")),
    ("data", cfg!(feature = "data")),
    ("python", cfg!(feature = "python")),
    ("math", cfg!(feature = "math")),
    ("random", cfg!(feature = "random")),
    ("layers", cfg!(feature = "layers")),
    ("plot", cfg!(feature = "plot")),
];

/// Modules the design names that no build of this release has yet.
const NOT_YET: &[(&str, &str)] = &[("gpu", "GPU tensors and `@gpu` kernels")];

/// Apsi's modules that this binary does not have, with what a `use` of
/// each is told: a left-out feature names the rebuild that adds it; a
/// module not released yet says so (no command can add it today).
pub fn absent() -> Vec<AbsentModule> {
    let left_out = MODULE_FEATURES.iter().filter(|(_, on)| !on).map(|(m, _)| AbsentModule {
        name: m.to_string(),
        help: format!(
            "'{m}' is an Apsi module that this binary was built without: rebuild apsi with the `{m}` \
             cargo feature (from the source repository: cargo install --path apsi-cli --features {m})"
        ),
    });
    let not_yet = NOT_YET.iter().map(|(m, what)| AbsentModule {
        name: m.to_string(),
        help: format!(
            "`use {m}` ({what}) is part of Apsi's design but not of this release ({}): no build \
             option or package provides it yet",
            crate::APSI_VERSION
        ),
    });
    left_out.chain(not_yet).collect()
}

/// Calls `$each!(feature, crate)` for every `use` module that is a cargo
/// feature, in the order they are installed: the one list
/// [`compiled_in`] and [`versions`] are made from.
macro_rules! for_each_module {
    ($each:ident) => {
        $each!("parallel", apsi_parallel);
        $each!("precision", apsi_precision);
        $each!("native", apsi_native);
        $each!("data", apsi_data);
        $each!("python", apsi_python);
        $each!("math", apsi_math);
        $each!("random", apsi_random);
        $each!("layers", apsi_layers);
        $each!("plot", apsi_plot);
    };
}

/// Every compiled-in module, freshly described.
pub fn compiled_in() -> Vec<ModuleDescriptor> {
    #[allow(unused_mut)]
    let mut out = Vec::new();
    macro_rules! describe {
        ($feature:literal, $krate:ident) => {
            #[cfg(feature = $feature)]
            out.push($krate::module());
        };
    }
    for_each_module!(describe);
    #[cfg(all(feature = "layers", feature = "python"))]
    apsi_layers::backend::install_torch_driver(std::sync::Arc::new(crate::torch_driver::Driver::new()));
    out
}

/// The (name, version) of every compiled-in module, as [`compiled_in`]'s
/// descriptors say, without building them: what the compile cache's key
/// needs before the runtime exists (`cache::look_ahead`).
pub fn versions() -> Vec<(&'static str, &'static str)> {
    #[allow(unused_mut)]
    let mut out = Vec::new();
    macro_rules! version {
        ($feature:literal, $krate:ident) => {
            #[cfg(feature = $feature)]
            out.push(($feature, $krate::VERSION));
        };
    }
    for_each_module!(version);
    out
}

/// Hands the permissions given on the command line (`--allow-python`, …)
/// to the modules that check them again at run time.
pub fn grant(allowed: &[String]) {
    let _has = |cap: &str| allowed.iter().any(|a| a == cap || a == "all");
    #[cfg(feature = "python")]
    apsi_python::allow(_has("python"));
    #[cfg(feature = "layers")]
    apsi_layers::allow(_has("python"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_the_descriptors_own() {
        let built: Vec<(String, String)> = compiled_in()
            .iter()
            .map(|d| (d.name.to_string(), d.version.to_string()))
            .collect();
        let listed: Vec<(String, String)> = versions().iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
        assert_eq!(listed, built);
    }

    #[test]
    fn absent_modules_get_help_that_names_only_what_exists() {
        let absent = absent();
        for (m, on) in MODULE_FEATURES {
            assert_eq!(absent.iter().any(|a| a.name == *m), !on, "{m}");
            assert!(
                FEATURES.iter().any(|(f, _)| f == m),
                "{m} must be a cargo feature of apsi-cli"
            );
        }
        for (m, _) in NOT_YET {
            let a = absent.iter().find(|a| a.name == *m).unwrap();
            assert!(!a.help.contains("cargo") && !a.help.contains("apsi pkg"), "{}", a.help);
            assert!(
                compiled_in().iter().all(|c| c.name != *m),
                "{m} is compiled in: take it off NOT_YET"
            );
        }
    }
}
