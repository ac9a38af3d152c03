//! Loading a program: reading and parsing the main file and, transitively,
//! every file module it `use`s (each canonical file once), ordering the units
//! so dependencies come first, then running every static check and the Guard.

use super::resolve::{default_packages_dir, find_module, Found, Place};
use super::{annot, guard, names, CheckEnv, Program, ReplScope, ResolvedUse, Unit, UseTarget};
use crate::diagnostic::{Diagnostic, FileId, SourceMap, Span};
use crate::error::ErrorKind;
use crate::syntax::ast;
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A parser: source text of one file to its tree and its syntax errors.
pub type ParseFn<'p> = &'p dyn Fn(FileId, &str) -> (ast::Module, Vec<Diagnostic>);

/// How [`load_with`] finds and parses files.
pub struct LoadOptions<'p> {
    /// Where installed packages live; `None` means
    /// [`default_packages_dir`](super::default_packages_dir) (`$APSI_HOME/packages`).
    pub packages_dir: Option<PathBuf>,
    pub parser: ParseFn<'p>,
}

enum Slot {
    /// On the loading stack (a `use` reaching it again is a cycle).
    Loading,
    Done(usize),
    Failed,
}

struct Loader<'e, 'p> {
    env: &'e CheckEnv,
    sources: Arc<SourceMap>,
    parser: ParseFn<'p>,
    packages: Option<PathBuf>,
    main: Place,
    units: Vec<Unit>,
    slots: FxHashMap<PathBuf, Slot>,
    /// Display names of the files being loaded, outermost first, with their paths.
    stack: Vec<(PathBuf, String)>,
    diags: Vec<Diagnostic>,
    /// Files whose parse reported errors (their semantic checks are skipped,
    /// since a half-parsed file would give misleading follow-on errors).
    broken: FxHashSet<FileId>,
    /// Order in which files were first read (for sorting diagnostics).
    file_order: Vec<FileId>,
    /// Files with an unqualified `use` that could not be resolved: the
    /// missing module could export any name, so unknown names are not
    /// reported there (the `ModuleNotFoundError` is).
    open_files: FxHashSet<FileId>,
    /// Paths a `use` looked at in vain before finding its module.
    probes: Vec<PathBuf>,
}

fn describe_io(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        std::io::ErrorKind::InvalidData => "the file is not valid UTF-8 text".to_string(),
        _ => e.to_string(),
    }
}

fn parent_or_dot(p: &Path) -> PathBuf {
    p.parent().map(Path::to_path_buf).unwrap_or_default()
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The main file's folder, on disk (absolute) and as the user wrote it.
fn main_place(main: &Path, display_name: &str) -> Place {
    let real = parent_or_dot(&canonical(main));
    Place {
        real,
        display: parent_or_dot(Path::new(display_name)),
    }
}

/// [`load`](super::load) with an explicit parser and packages folder.
pub fn load_with(
    main: &Path,
    display_name: &str,
    env: &CheckEnv,
    sources: Arc<SourceMap>,
    opts: &LoadOptions<'_>,
) -> Result<Program, Vec<Diagnostic>> {
    let text = match std::fs::read_to_string(main) {
        Ok(t) => t,
        Err(e) => {
            let mut d = Diagnostic::new(
                ErrorKind::IOError,
                format!("cannot read the program '{display_name}': {}", describe_io(&e)),
            );
            d = d.help(if main.is_dir() {
                "this is a folder; give the path of a .apsi file".to_string()
            } else {
                "check the path and the current folder; an Apsi program is a .apsi file".to_string()
            });
            return Err(vec![d]);
        }
    };
    let file = sources.add(display_name, text.as_str());
    let (tree, syntax) = (opts.parser)(file, &text);
    let place = main_place(main, display_name);
    let loader = Loader::new(env, sources, opts, place);
    loader.run(tree, file, canonical(main), syntax, display_name, None)
}

/// [`check_source`](super::check_source) with an explicit parser and packages folder.
pub fn check_source_with(
    snippet: ast::Module,
    file: FileId,
    env: &CheckEnv,
    scope: &mut ReplScope,
    sources: Arc<SourceMap>,
    opts: &LoadOptions<'_>,
) -> Result<Program, Vec<Diagnostic>> {
    let place = Place {
        real: canonical(&scope.base_dir),
        display: PathBuf::new(),
    };
    let main_path = place.real.join("<repl>");
    let loader = Loader::new(env, sources, opts, place);
    let program = loader.run(snippet, file, main_path, Vec::new(), "apsi repl", Some(scope))?;
    if let Some(unit) = program.units.last() {
        scope.absorb(unit, &program, env);
    }
    Ok(program)
}

impl<'e, 'p> Loader<'e, 'p> {
    fn new(env: &'e CheckEnv, sources: Arc<SourceMap>, opts: &LoadOptions<'p>, main: Place) -> Loader<'e, 'p> {
        Loader {
            env,
            sources,
            parser: opts.parser,
            packages: opts.packages_dir.clone().or_else(default_packages_dir),
            main,
            units: Vec::new(),
            slots: FxHashMap::default(),
            stack: Vec::new(),
            diags: Vec::new(),
            broken: FxHashSet::default(),
            file_order: Vec::new(),
            open_files: FxHashSet::default(),
            probes: Vec::new(),
        }
    }

    fn run(
        mut self,
        tree: ast::Module,
        file: FileId,
        path: PathBuf,
        syntax: Vec<Diagnostic>,
        display_name: &str,
        repl: Option<&ReplScope>,
    ) -> Result<Program, Vec<Diagnostic>> {
        let main_place = self.main.clone();
        self.add_unit(
            tree,
            file,
            path,
            syntax,
            "__main__".to_string(),
            display_name.to_string(),
            &main_place,
        );

        let mut shared = names::Shared::new(&self.units, self.env, repl);
        shared.open_files = std::mem::take(&mut self.open_files);
        let mut found = std::mem::take(&mut self.diags);
        for (i, unit) in self.units.iter().enumerate() {
            if self.broken.contains(&unit.file) {
                continue;
            }
            found.extend(names::check_unit(&shared, i));
            found.extend(annot::check_module(&unit.ast));
        }
        drop(shared);
        let order = &self.file_order;
        let rank = |d: &Diagnostic| match d.primary_span() {
            None => (0usize, 0u32),
            Some(s) => (
                order.iter().position(|f| *f == s.file).unwrap_or(usize::MAX - 1) + 1,
                s.start,
            ),
        };
        found.sort_by_key(rank);
        let uses = guard::scan_units(&self.units, self.env);
        let program = if repl.is_some() { None } else { Some(display_name) };
        if let Some(d) = guard::permission_error(&uses, self.env, program) {
            found.push(d);
        }
        if found.is_empty() {
            Ok(Program {
                sources: self.sources,
                units: self.units,
                probes: self.probes,
            })
        } else {
            Err(found)
        }
    }

    /// Loads one file's `use`s (recursively), then records it as a unit.
    #[allow(clippy::too_many_arguments)]
    fn add_unit(
        &mut self,
        tree: ast::Module,
        file: FileId,
        path: PathBuf,
        syntax: Vec<Diagnostic>,
        name: String,
        display: String,
        importer: &Place,
    ) -> usize {
        self.file_order.push(file);
        if !syntax.is_empty() {
            self.broken.insert(file);
            self.diags.extend(syntax);
        }
        self.slots.insert(path.clone(), Slot::Loading);
        self.stack.push((path.clone(), display));
        let mut uses = Vec::new();
        for (span, ids, alias) in collect_uses(&tree) {
            match self.resolve_use(span, &ids, alias.as_ref(), importer) {
                Some(ru) => uses.push(ru),
                None if alias.is_none() => {
                    self.open_files.insert(file);
                }
                None => {}
            }
        }
        self.stack.pop();
        let idx = self.units.len();
        self.slots.insert(path.clone(), Slot::Done(idx));
        self.units.push(Unit::new(name, path, file, tree, uses));
        idx
    }

    fn resolve_use(
        &mut self,
        span: Span,
        path: &[ast::Ident],
        alias: Option<&ast::Ident>,
        importer: &Place,
    ) -> Option<ResolvedUse> {
        let last = path.last()?;
        let binding = alias.unwrap_or(last).name.clone();
        let mut unqualified = alias.is_none();
        let found = find_module(path, span, importer, &self.main, self.packages.as_deref(), self.env);
        let target = match found {
            Err(d) => {
                self.diags.push(*d);
                return None;
            }
            Ok(Found::Builtin(name)) => {
                if self
                    .env
                    .builtin_modules
                    .iter()
                    .any(|m| m.name == name && m.namespace_only)
                {
                    unqualified = false;
                }
                UseTarget::Builtin(name)
            }
            Ok(Found::File { real, display, missed }) => {
                for m in missed {
                    if !self.probes.contains(&m) {
                        self.probes.push(m);
                    }
                }
                let canon = canonical(&real);
                match self.slots.get(&canon) {
                    Some(Slot::Done(i)) => UseTarget::File(*i),
                    Some(Slot::Failed) => return None,
                    Some(Slot::Loading) => {
                        self.cycle_error(span, &canon, &display);
                        return None;
                    }
                    None => UseTarget::File(self.load_file(span, canon, display, last.name.clone())?),
                }
            }
        };
        Some(ResolvedUse {
            span,
            binding,
            unqualified,
            target,
        })
    }

    fn load_file(&mut self, span: Span, canon: PathBuf, display: String, name: String) -> Option<usize> {
        let text = match std::fs::read_to_string(&canon) {
            Ok(t) => t,
            Err(e) => {
                self.slots.insert(canon, Slot::Failed);
                self.diags.push(
                    Diagnostic::new(
                        ErrorKind::IOError,
                        format!("cannot read module file '{display}': {}", describe_io(&e)),
                    )
                    .label(span, "used here"),
                );
                return None;
            }
        };
        let file = self.sources.add(display.as_str(), text.as_str());
        let (tree, syntax) = (self.parser)(file, &text);
        let place = Place {
            real: parent_or_dot(&canon),
            display: parent_or_dot(Path::new(&display)),
        };
        Some(self.add_unit(tree, file, canon, syntax, name, display, &place))
    }

    fn cycle_error(&mut self, span: Span, canon: &Path, display: &str) {
        let start = self.stack.iter().position(|(p, _)| p == canon).unwrap_or(0);
        let mut chain: Vec<String> = self.stack[start..].iter().map(|(_, d)| d.clone()).collect();
        chain.push(display.to_string());
        self.diags.push(
            Diagnostic::new(ErrorKind::Error, format!("`use` cycle: {}", chain.join(" → ")))
                .label(span, "this `use` closes the cycle")
                .help("modules may not use each other in a circle; move what they share into a third module that both use"),
        );
    }
}

/// Every `use` in a tree, wherever it stands (functions included), in source order.
fn collect_uses(m: &ast::Module) -> Vec<(Span, Vec<ast::Ident>, Option<ast::Ident>)> {
    struct Uses(Vec<(Span, Vec<ast::Ident>, Option<ast::Ident>)>);
    impl<'a> super::walk::Visitor<'a> for Uses {
        fn stmt(&mut self, s: &'a ast::Stmt) {
            if let ast::StmtKind::Use { path, alias } = &s.kind {
                self.0.push((s.span, path.clone(), alias.clone()));
            }
            super::walk::walk_stmt(self, s);
        }
        fn expr(&mut self, _e: &'a ast::Expr) {}
    }
    let mut u = Uses(Vec::new());
    super::walk::walk_body(&mut u, &m.body);
    u.0
}
