//! The entry points with the default parser (`syntax::parse`) and the
//! default packages folder.

use super::{check_source_with, load_with, CheckEnv, LoadOptions, Program, ReplScope};
use crate::diagnostic::{Diagnostic, FileId, SourceMap};
use crate::syntax::{self, ast};
use std::path::Path;
use std::sync::Arc;

/// Loads and checks a program: the main file at `main` (shown to the user
/// as `display_name`) and every module it uses. Returns every diagnostic
/// found, in every file, or the checked [`Program`].
pub fn load(
    main: &Path,
    display_name: &str,
    env: &CheckEnv,
    sources: Arc<SourceMap>,
) -> Result<Program, Vec<Diagnostic>> {
    let opts = LoadOptions {
        packages_dir: None,
        parser: &syntax::parse,
    };
    load_with(main, display_name, env, sources, &opts)
}

/// Checks one REPL input (already parsed into `snippet`, its text added to
/// `sources` as `file`) against what earlier inputs defined. On success the
/// scope learns this input's names; on failure it is unchanged.
pub fn check_source(
    snippet: ast::Module,
    file: FileId,
    env: &CheckEnv,
    scope: &mut ReplScope,
    sources: Arc<SourceMap>,
) -> Result<Program, Vec<Diagnostic>> {
    let opts = LoadOptions {
        packages_dir: None,
        parser: &syntax::parse,
    };
    check_source_with(snippet, file, env, scope, sources, &opts)
}
