//! The driver: a runtime's entry points. It installs modules, runs the
//! checker's program through the compiler unit by unit (every unit is
//! compiled before any runs), and runs programs and REPL inputs on the VM.
//!
//! Name lookup at module level (LANGUAGE.md §8): the unit's own globals,
//! then the unqualified exports of the modules it uses, then the prelude
//! (with `argv`). Resolution happens at compile time; a global that is not
//! bound yet when read raises `NameError`.

// `RunError::Error` carries a whole Diagnostic by the shared contract; it is
// produced once per run, so its size does not matter.
#![allow(clippy::result_large_err)]

use crate::check::{Program, Unit, UseTarget};
use crate::compile::{analyze, compile_module, GlobalEnv, GlobalRef};
use crate::diagnostic::{Diagnostic, FileId, Label};
use crate::error::ErrorKind;
use crate::module::ModuleDescriptor;
use crate::syntax::ast;
use crate::value::function::Closure;
use crate::value::globals::GlobalSlot;
use crate::value::*;
use crate::vm::exec::Executor;
use crate::vm::shared::Shared;
use indexmap::IndexMap;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::sync::Arc;

pub struct RuntimeConfig {
    /// The program's arguments (after its file name), as `argv` shows them.
    pub argv: Vec<String>,
    /// Modules compiled into this binary (`use NAME` finds them by name).
    pub modules: Vec<ModuleDescriptor>,
    /// Where program output goes; `None` is the process's standard output.
    pub output: Option<Box<dyn Write + Send>>,
    /// Deepest Apsi call nesting before `RecursionError`.
    pub max_depth: usize,
    /// Deepest nesting of native functions calling back into Apsi.
    pub max_native_depth: usize,
    /// Stack size of the thread programs run on (native callbacks nest on
    /// it); 0 runs them on the calling thread.
    pub thread_stack: usize,
    /// `--threads N`: the thread count of `parallel for` and the `parallel`
    /// module (process-wide, see `par::set_threads`); `None` keeps the current one.
    pub threads: Option<usize>,
    /// Flush program output at every line end (for a terminal, as Python
    /// does); otherwise it is written in 64 KiB blocks, at `input()`, at
    /// `print(..., flush=true)` and when the program ends.
    pub line_buffered: bool,
    /// What fetches the `http(s)://` sources a program reads; `None` (the
    /// default) refuses them with a `PermissionError`.
    pub url_source: Option<Arc<dyn crate::value::sources::UrlSource>>,
    /// The calling thread runs this runtime's programs (`thread_stack` 0)
    /// and lives as long as the process: make it one of the threads tensor
    /// kernels split their work on, so that a split costs it no sleep
    /// (`par::kernel_pool`). For a process's one interpreter thread (the
    /// CLI's), never for a thread that ends first.
    pub kernel_pool_here: bool,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            argv: Vec::new(),
            modules: Vec::new(),
            output: None,
            max_depth: 200_000,
            max_native_depth: 400,
            thread_stack: 0,
            threads: None,
            line_buffered: false,
            url_source: None,
            kernel_pool_here: false,
        }
    }
}

/// Why a program stopped early.
#[derive(Debug)]
pub enum RunError {
    /// An uncaught error (or a compile error), ready to render.
    Error(Diagnostic),
    /// `exit(code)` was called.
    Exit(i32),
}

/// The globals of one unit (or of the REPL session).
#[derive(Default)]
struct UnitGlobals {
    own: IndexMap<Arc<str>, Arc<GlobalSlot>, crate::value::FxBuild>,
    unqualified: Vec<(Arc<str>, GlobalRef)>,
    /// Own slots that start from the value of a used module's slot of the
    /// same name (`use a` then `x = x + 1`): copied when the unit starts to
    /// run, since units are compiled before their dependencies run.
    inherit: Vec<(Arc<GlobalSlot>, Arc<GlobalSlot>)>,
}

/// A file module after it ran.
#[derive(Clone)]
struct FileModule {
    value: Value,
    exports: Vec<(Arc<str>, GlobalRef)>,
}

/// A unit compiled and not yet run.
struct CompiledUnit {
    name: String,
    path: std::path::PathBuf,
    uses: Vec<crate::check::ResolvedUse>,
    g: UnitGlobals,
    proto: Arc<crate::compile::FuncProto>,
    /// What the unit gives unqualified to the units that use it: its own
    /// module-level names (not the names its `use`s bind).
    exports: Vec<(Arc<str>, GlobalRef)>,
}

/// Every unit of a program compiled, dependencies first: what
/// [`Runtime::compile`] returns and [`Runtime::run_compiled`] runs.
pub struct CompiledProgram {
    units: Vec<CompiledUnit>,
}

impl CompiledProgram {
    /// Reads every function body and struct a decoded program left for
    /// its first run ([`crate::code::LazyCode`], [`crate::code::StructSlot`]),
    /// the first that does not decode an error: what a run would find,
    /// without running (tests, checks).
    pub fn read_all_bodies(&self) -> Result<(), crate::serial::DecodeError> {
        self.units
            .iter()
            .try_for_each(|u| crate::serial::read_bodies(&u.proto, 0))
    }

    /// How many function bodies have been read or compiled, and how many
    /// there are (counting only those reachable through read bodies).
    pub fn bodies_read(&self) -> (usize, usize) {
        let mut n = (0, 0);
        self.walk_read(&mut |p| {
            n.1 += 1;
            n.0 += usize::from(p.is_some_and(|p| p.code.is_read()));
        });
        n
    }

    /// How many prototypes (a function's header: name, parameters) have
    /// been read or compiled, of those [`bodies_read`](Self::bodies_read)
    /// counts: a cached start reads only those it makes functions of.
    pub fn prototypes_read(&self) -> usize {
        let mut n = 0;
        self.walk_read(&mut |p| n += usize::from(p.is_some()));
        n
    }

    /// How many structs have been read or compiled in the read bodies: a
    /// cached start reads only those it makes.
    pub fn structs_read(&self) -> usize {
        fn walk(p: &crate::compile::FuncProto) -> usize {
            if !p.code.is_read() {
                return 0;
            }
            let own = p.code.structs.iter().filter(|s| s.peek().is_some()).count();
            own + p
                .code
                .protos
                .iter()
                .filter_map(|q| q.peek())
                .map(|q| walk(q))
                .sum::<usize>()
        }
        self.units.iter().map(|u| walk(&u.proto)).sum()
    }

    /// How many of the read bodies have had their span tables read.
    pub fn span_tables_read(&self) -> usize {
        let mut n = 0;
        self.walk_read(&mut |p| {
            n += usize::from(p.is_some_and(|p| p.code.is_read() && p.code.spans.is_read()));
        });
        n
    }

    /// Calls `f` with every prototype reachable through read bodies (`None`
    /// for one not read itself), reading nothing.
    fn walk_read(&self, f: &mut dyn FnMut(Option<&crate::compile::FuncProto>)) {
        fn walk(p: Option<&crate::compile::FuncProto>, f: &mut dyn FnMut(Option<&crate::compile::FuncProto>)) {
            f(p);
            if let Some(p) = p.filter(|p| p.code.is_read()) {
                for q in p.code.protos.iter() {
                    walk(q.peek().map(|q| &**q), f);
                }
            }
        }
        for u in &self.units {
            walk(Some(&u.proto), f);
        }
    }
}

/// The interpreter. `Send + Sync`; create one per process (or per test).
pub struct Runtime {
    shared: Arc<Shared>,
    repl: UnitGlobals,
    /// File modules the REPL has run, by path (each runs once per process).
    repl_modules: HashMap<std::path::PathBuf, FileModule>,
    thread_stack: usize,
}

struct Env<'a> {
    g: &'a mut UnitGlobals,
    shared: &'a Shared,
}

impl Env<'_> {
    fn outer(&self, name: &str) -> Option<GlobalRef> {
        if let Some((_, r)) = self.g.unqualified.iter().find(|(n, _)| **n == *name) {
            return Some(r.clone());
        }
        self.shared.prelude.get(name).map(|v| GlobalRef::Const(v.clone()))
    }

    /// A new own slot for `name`, starting from what `outer` holds (a used
    /// module's slot is read when the unit starts to run).
    fn new_own(&mut self, name: &str, is_const: bool, outer: Option<GlobalRef>) -> Arc<GlobalSlot> {
        let initial = match &outer {
            Some(GlobalRef::Const(v)) => Some(v.clone()),
            Some(GlobalRef::Slot(s)) => s.get(),
            None => None,
        };
        let slot = Arc::new(GlobalSlot::new(name, is_const, initial));
        if let Some(GlobalRef::Slot(from)) = outer {
            self.g.inherit.push((slot.clone(), from));
        }
        self.g.own.insert(slot.name.clone(), slot.clone());
        slot
    }

    /// Create the slots of the names a unit binds at module level.
    fn declare(&mut self, names: &indexmap::IndexSet<String>, once: &std::collections::HashSet<String>, repl: bool) {
        for n in names {
            if self.g.own.contains_key(n.as_str()) {
                continue;
            }
            let outer = self.outer(n);
            let is_const = !repl && once.contains(n) && outer.is_none();
            self.new_own(n, is_const, outer);
        }
    }
}

impl GlobalEnv for Env<'_> {
    fn resolve(&mut self, name: &str) -> GlobalRef {
        if let Some(s) = self.g.own.get(name) {
            return GlobalRef::Slot(s.clone());
        }
        if let Some(r) = self.outer(name) {
            return r;
        }
        let s = Arc::new(GlobalSlot::new(name, false, None));
        self.g.own.insert(s.name.clone(), s.clone());
        GlobalRef::Slot(s)
    }

    fn slot_for_write(&mut self, name: &str) -> Arc<GlobalSlot> {
        if let Some(s) = self.g.own.get(name) {
            return s.clone();
        }
        let outer = self.outer(name);
        self.new_own(name, false, outer)
    }
}

/// Turn an uncaught error into what the caller reports.
pub fn error_to_run_error(e: &ErrorObj) -> RunError {
    if let Some(code) = e.exit {
        return RunError::Exit(code);
    }
    let mut trace = e.trace.lock().clone();
    let primary = trace.first().map(|t| t.span);
    trace.reverse();
    let mut d = Diagnostic::new(e.kind, e.message.clone());
    if let Some(Value::Struct(s)) = &e.payload {
        d.kind_name = Some(s.ty.name.to_string());
        // A `__str__` of its own is what the message line shows.
        if s.ty.method("__str__").is_some() {
            d.message = crate::format::str_of(&Value::Struct(s.clone()));
        }
    }
    if let Some(sp) = primary {
        d.labels.push(Label {
            span: sp,
            message: None,
        });
    }
    d.help = e.hint.clone();
    d.trace = trace;
    RunError::Error(d)
}

fn module_exports(m: &ModuleObj) -> Vec<(Arc<str>, GlobalRef)> {
    m.attrs
        .read()
        .iter()
        .map(|(n, v)| (n.clone(), GlobalRef::Const(v.clone())))
        .collect()
}

impl Runtime {
    /// What the checker needs to know of each installed module (for its
    /// `CheckEnv`), in the order installed.
    pub fn builtin_module_infos(&self) -> Vec<crate::check::BuiltinModuleInfo> {
        self.shared
            .modules
            .descriptors()
            .map(ModuleDescriptor::check_info)
            .collect()
    }

    /// The names the prelude binds in this runtime (for the checker's `CheckEnv`).
    pub fn prelude_names(&self) -> Vec<String> {
        self.shared.prelude.keys().map(|k| k.to_string()).collect()
    }

    /// The functions whose string argument names a source to read, of the
    /// prelude and every installed module (for the Guard).
    pub fn source_readers(&self) -> Vec<String> {
        self.shared.source_readers.clone()
    }

    /// A runtime with the configured modules installed; refused when a
    /// module does not fit this core or clashes with another
    /// ([`crate::module::check_installable`]).
    pub fn new(config: RuntimeConfig) -> Result<Runtime, crate::module::InstallError> {
        crate::module::check_installable(&config.modules, crate::VERSION)?;
        let mut prelude = HashMap::new();
        let prelude_desc = crate::builtins::shared_prelude();
        let mut source_readers: Vec<String> = prelude_desc.source_readers.iter().map(|r| r.to_string()).collect();
        for d in &config.modules {
            source_readers.extend(d.source_readers.iter().map(|r| r.to_string()));
        }
        prelude.reserve(prelude_desc.exports.len() + 1);
        // The names are the descriptors' own strings, shared, not copied.
        for (n, v) in &prelude_desc.exports {
            prelude.insert(n.clone(), v.clone());
        }
        prelude.insert(
            Arc::from("argv"),
            Value::list(config.argv.iter().map(|a| Value::str(a.as_str())).collect()),
        );
        // Names a module binds in the prelude too (`@native` needs no `use`:
        // the native module's `native` replaces the interpreted fallback).
        for d in &config.modules {
            for name in &d.prelude {
                if let Some(v) = d.get(name) {
                    prelude.insert(Arc::from(*name), v.clone());
                }
            }
        }
        let namespace_only = config
            .modules
            .iter()
            .filter(|d| d.namespace_only)
            .map(|d| d.name.to_string())
            .collect();
        let modules = crate::module::InstalledModules::new(config.modules);
        let out: Box<dyn Write + Send> = config.output.unwrap_or_else(|| Box::new(std::io::stdout()));
        let shared = Shared {
            out: Mutex::new(BufWriter::with_capacity(1 << 16, out)),
            line_buffered: config.line_buffered,
            prelude,
            modules,
            namespace_only,
            max_depth: config.max_depth.max(1),
            max_native_depth: config.max_native_depth.max(1),
            tasks: Arc::new(crate::value::tasks::TaskRegistry::new()),
            source_readers,
            url_source: config.url_source,
        };
        if let Some(n) = config.threads {
            crate::par::set_threads(n);
        }
        // Tensor kernels run on rayon's global pool, sized once: size it now
        // (a no-op when it already exists), or, for a thread that will run
        // the programs itself, when its first tensor needs it, with that
        // thread as one of the pool's (`par::kernel_pool`).
        if config.kernel_pool_here && config.thread_stack == 0 {
            crate::par::kernel_pool::join_when_needed();
        } else if let Some(n) = config.threads {
            crate::par::kernel_pool::build(n);
        }
        Ok(Runtime {
            shared: Arc::new(shared),
            repl: UnitGlobals::default(),
            repl_modules: HashMap::new(),
            thread_stack: if config.thread_stack == 0 {
                0
            } else {
                config.thread_stack.max(1 << 20)
            },
        })
    }

    /// A new executor for running Apsi code on the current thread (for
    /// modules that run callables: thread pools, benchmarks).
    pub fn executor(&self) -> Executor {
        Executor::new(self.shared.clone())
    }

    /// Flush program output.
    pub fn flush(&self) {
        let _ = self.shared.flush_out();
    }

    /// Flushes program output and says whether everything written reached
    /// its destination (a closed or failing stdout is an error here).
    pub fn finish_output(&self) -> Result<(), String> {
        self.shared.flush_out().map_err(|e| e.message.clone())
    }

    /// A handle that flushes program output from another thread (a signal
    /// watcher stopping the program), waiting at most `wait` for a writer
    /// that holds the output; `false` when it could not.
    pub fn output_flusher(&self) -> impl Fn(std::time::Duration) -> bool + Send + Sync + 'static {
        let shared = self.shared.clone();
        move |wait| match shared.out.try_lock_for(wait) {
            Some(mut out) => out.flush().is_ok(),
            None => false,
        }
    }

    /// Run a checked program: every unit once, dependencies first, the main last.
    /// The program ends when its main code and every task it spawned have
    /// ended; a task that failed without being waited for is reported.
    pub fn run(&mut self, program: &Program) -> Result<(), RunError> {
        let compiled = self.compile(program).map_err(|ds| RunError::Error(first_diag(ds)))?;
        self.run_compiled(&compiled)
    }

    /// Compiles every unit of a checked program before any runs, so every
    /// compile error is known before the program starts (all of them, in
    /// dependency order).
    pub fn compile(&self, program: &Program) -> Result<CompiledProgram, Vec<Diagnostic>> {
        let mut units: Vec<Option<CompiledUnit>> = Vec::with_capacity(program.units.len());
        let mut errors = Vec::new();
        for unit in &program.units {
            match self.compile_unit(unit, &units) {
                Ok(c) => units.push(Some(c)),
                Err(ds) => {
                    errors.extend(ds);
                    units.push(None);
                }
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(CompiledProgram {
            units: units.into_iter().flatten().collect(),
        })
    }

    /// Runs a compiled program (see [`Runtime::run`] for what ends it).
    pub fn run_compiled(&mut self, compiled: &CompiledProgram) -> Result<(), RunError> {
        let stack = self.thread_stack;
        let this = &*self;
        let r = if stack == 0 {
            this.run_compiled_here(compiled)
        } else {
            std::thread::scope(|s| {
                let h = std::thread::Builder::new()
                    .name("apsi-main".into())
                    .stack_size(stack)
                    .spawn_scoped(s, move || this.run_compiled_here(compiled));
                match h {
                    Ok(h) => h.join().unwrap_or_else(|_| {
                        Err(RunError::Error(Diagnostic::new(
                            ErrorKind::Error,
                            "internal error: the interpreter thread panicked",
                        )))
                    }),
                    Err(_) => this.run_compiled_here(compiled),
                }
            })
        };
        let failures = crate::par::pool::blocking(|| self.shared.tasks.finish());
        self.flush();
        with_task_failures(r, failures)
    }

    fn run_compiled_here(&self, compiled: &CompiledProgram) -> Result<(), RunError> {
        let mut exec = Executor::new(self.shared.clone());
        let mut done: Vec<Option<FileModule>> = Vec::with_capacity(compiled.units.len());
        for (i, c) in compiled.units.iter().enumerate() {
            self.run_compiled_unit(&mut exec, c, &done)?;
            // The program itself is no module anybody uses: no module value.
            let used = i + 1 < compiled.units.len();
            done.push(used.then(|| module_of(c)));
        }
        Ok(())
    }

    /// The values a unit's `use` statements bind (modules that ran before it).
    fn use_values(
        &self,
        uses: &[crate::check::ResolvedUse],
        done: &[Option<FileModule>],
    ) -> Result<Vec<(String, Value)>, RunError> {
        let mut binds = Vec::new();
        for u in uses {
            let value = match &u.target {
                UseTarget::Builtin(name) => match self.shared.modules.get(name) {
                    Some(m) => Value::Module(m.clone()),
                    None => return Err(RunError::Error(no_builtin_module(name, u.span))),
                },
                UseTarget::File(j) => match done.get(*j).and_then(|m| m.as_ref()) {
                    Some(m) => m.value.clone(),
                    None => {
                        let d = Diagnostic::new(
                            ErrorKind::ModuleNotFoundError,
                            format!("module '{}' was not loaded before its use", u.binding),
                        )
                        .at(u.span);
                        return Err(RunError::Error(d));
                    }
                },
            };
            binds.push((u.binding.clone(), value));
        }
        Ok(binds)
    }

    /// The exports a unit's `use` statements make visible unqualified:
    /// a compiled-in module's values, a file module's own slots.
    fn use_exports(
        &self,
        unit: &Unit,
        exports_of: &dyn Fn(usize) -> Option<Vec<(Arc<str>, GlobalRef)>>,
    ) -> Result<Vec<(Arc<str>, GlobalRef)>, Vec<Diagnostic>> {
        let mut unqualified = Vec::new();
        for u in unit.uses.iter().filter(|u| u.unqualified) {
            match &u.target {
                UseTarget::Builtin(name) => match self.shared.modules.get(name) {
                    Some(_) if self.shared.namespace_only.contains(name) => {}
                    Some(m) => unqualified.extend(module_exports(m)),
                    None => return Err(vec![no_builtin_module(name, u.span)]),
                },
                // A unit that failed to compile exports nothing; its errors are reported.
                UseTarget::File(j) => unqualified.extend(exports_of(*j).unwrap_or_default()),
            }
        }
        Ok(unqualified)
    }

    /// Compiles one unit against the units compiled before it.
    fn compile_unit(&self, unit: &Unit, before: &[Option<CompiledUnit>]) -> Result<CompiledUnit, Vec<Diagnostic>> {
        self.compile_unit_with(unit, &|j| before.get(j)?.as_ref().map(|c| c.exports.clone()))
    }

    /// Compiles one unit; `exports_of(j)` gives what unit `j` exports.
    fn compile_unit_with(
        &self,
        unit: &Unit,
        exports_of: &dyn Fn(usize) -> Option<Vec<(Arc<str>, GlobalRef)>>,
    ) -> Result<CompiledUnit, Vec<Diagnostic>> {
        let mut g = UnitGlobals {
            unqualified: self.use_exports(unit, exports_of)?,
            ..UnitGlobals::default()
        };
        let bind_names: Vec<String> = unit.uses.iter().map(|u| u.binding.clone()).collect();
        let proto = {
            let table = &unit.scopes;
            let mut env = Env {
                g: &mut g,
                shared: &self.shared,
            };
            env.declare(&table.module_names, &table.module_once, false);
            compile_module(&unit.ast, table, &mut env, false)?
        };
        if std::env::var_os("APSI_DIS").is_some() {
            dump_code(&proto.code);
        }
        let exports = g
            .own
            .iter()
            .filter(|(n, _)| !bind_names.iter().any(|b| b.as_str() == &***n))
            .map(|(n, s)| (n.clone(), GlobalRef::Slot(s.clone())))
            .collect();
        Ok(CompiledUnit {
            name: unit.name.clone(),
            path: unit.path.clone(),
            uses: unit.uses.clone(),
            g,
            proto,
            exports,
        })
    }

    /// Runs one compiled unit (see [`module_of`] for what it exports).
    fn run_compiled_unit(
        &self,
        exec: &mut Executor,
        c: &CompiledUnit,
        done: &[Option<FileModule>],
    ) -> Result<(), RunError> {
        for (own, from) in &c.g.inherit {
            if own.get().is_none() {
                if let Some(v) = from.get() {
                    own.set(v);
                }
            }
        }
        for (n, v) in self.use_values(&c.uses, done)? {
            if let Some(s) = c.g.own.get(n.as_str()) {
                s.set(v);
            }
        }
        let clo = Arc::new(Closure::module_body(c.proto.clone()));
        let r = exec.run_closure(clo);
        #[cfg(feature = "opstats")]
        crate::vm::opstats::dump_if_asked();
        if let Err(e) = r {
            self.flush();
            return Err(error_to_run_error(&e));
        }
        Ok(())
    }

    /// Run a REPL input as the checker returns it (`check::check_source`):
    /// the file modules it uses run first (once per process), then its last
    /// unit runs against the session's globals. Returns the value of a
    /// trailing expression statement (unless it is none).
    pub fn eval_program(&mut self, program: &Program) -> Result<Option<Value>, RunError> {
        let Some((last, modules)) = program.units.split_last() else {
            return Ok(None);
        };
        let mut exec = Executor::new(self.shared.clone());
        let mut done: Vec<Option<FileModule>> = Vec::with_capacity(program.units.len());
        for unit in modules {
            let m = match self.repl_modules.get(&unit.path) {
                Some(m) => m.clone(),
                None => {
                    let exports_of = |j: usize| done.get(j)?.as_ref().map(|m: &FileModule| m.exports.clone());
                    let c = self
                        .compile_unit_with(unit, &exports_of)
                        .map_err(|ds| RunError::Error(first_diag(ds)))?;
                    self.run_compiled_unit(&mut exec, &c, &done)?;
                    let m = module_of(&c);
                    self.repl_modules.insert(unit.path.clone(), m.clone());
                    m
                }
            };
            done.push(Some(m));
        }
        let binds = self.use_values(&last.uses, &done)?;
        let exports_of = |j: usize| done.get(j)?.as_ref().map(|m: &FileModule| m.exports.clone());
        let unqualified = self
            .use_exports(last, &exports_of)
            .map_err(|ds| RunError::Error(first_diag(ds)))?;
        for (n, r) in unqualified {
            if !self.repl.unqualified.iter().any(|(m, _)| *m == n) {
                self.repl.unqualified.push((n, r));
            }
        }
        self.eval_with(&last.ast, Some(&last.scopes), binds)
    }

    /// Run one REPL input, keeping globals between inputs. Returns the value
    /// of a trailing expression statement (unless it is none).
    pub fn eval_snippet(&mut self, file: FileId, ast: &ast::Module) -> Result<Option<Value>, RunError> {
        let _ = file;
        // `use NAME` of a compiled-in module binds it (and its exports).
        let mut binds = Vec::new();
        for s in &ast.body {
            if let ast::StmtKind::Use { path, alias } = &s.kind {
                let name: Vec<&str> = path.iter().map(|p| p.name.as_str()).collect();
                let name = name.join(".");
                match self.shared.modules.get(&name) {
                    Some(m) => {
                        if alias.is_none() && !self.shared.namespace_only.contains(&name) {
                            self.repl.unqualified.extend(module_exports(m));
                        }
                        let b = alias
                            .as_ref()
                            .or(path.last())
                            .map(|i| i.name.clone())
                            .unwrap_or_default();
                        binds.push((b, Value::Module(m.clone())));
                    }
                    None => {
                        let d = Diagnostic::new(
                            ErrorKind::ModuleNotFoundError,
                            format!("no module named '{name}' is available in the REPL"),
                        )
                        .at(s.span);
                        return Err(RunError::Error(d));
                    }
                }
            }
        }
        self.eval_with(ast, None, binds)
    }

    /// Compile and run one REPL input; `scopes` is the checker's analysis
    /// of `ast` when it came through the checker.
    fn eval_with(
        &mut self,
        ast: &ast::Module,
        scopes: Option<&crate::check::scopes::ScopeTable>,
        binds: Vec<(String, Value)>,
    ) -> Result<Option<Value>, RunError> {
        let bind_names: Vec<String> = binds.iter().map(|(n, _)| n.clone()).collect();
        let own;
        let table = match scopes {
            Some(t) => t,
            None => {
                own = analyze(ast, &bind_names);
                &own
            }
        };
        let proto = {
            let mut env = Env {
                g: &mut self.repl,
                shared: &self.shared,
            };
            env.declare(&table.module_names, &table.module_once, true);
            compile_module(ast, table, &mut env, true).map_err(|ds| RunError::Error(first_diag(ds)))?
        };
        for (n, v) in binds {
            if let Some(s) = self.repl.own.get(n.as_str()) {
                s.set(v);
            }
        }
        let clo = Arc::new(Closure::module_body(proto));
        let stack = self.thread_stack;
        let shared = self.shared.clone();
        let run = move || {
            let mut exec = Executor::new(shared);
            exec.run_closure(clo)
        };
        let r = if stack == 0 {
            run()
        } else {
            std::thread::scope(|s| {
                match std::thread::Builder::new()
                    .name("apsi-repl".into())
                    .stack_size(stack)
                    .spawn_scoped(s, run)
                {
                    Ok(h) => h.join().unwrap_or_else(|_| {
                        Err(err(ErrorKind::Error, "internal error: the interpreter thread panicked"))
                    }),
                    Err(_) => Err(err(ErrorKind::Error, "cannot start the interpreter thread")),
                }
            })
        };
        self.flush();
        match r {
            Ok(Value::None) => Ok(None),
            Ok(v) => Ok(Some(v)),
            Err(e) => Err(error_to_run_error(&e)),
        }
    }
}

impl Runtime {
    /// A compiled program as bytes ([`crate::serial`]), for a compile cache:
    /// [`Runtime::decode_compiled`] in another process of the same build
    /// gives the same program back. Refused when the code holds a value
    /// that is neither plain data nor one of this runtime's built-ins.
    pub fn encode_compiled(&self, p: &CompiledProgram) -> Result<Vec<u8>, crate::serial::EncodeError> {
        let mut units = Vec::with_capacity(p.units.len());
        for u in &p.units {
            let mut exports = Vec::with_capacity(u.exports.len());
            for (n, r) in &u.exports {
                match r {
                    GlobalRef::Slot(s) => exports.push((n.clone(), s.clone())),
                    GlobalRef::Const(_) => {
                        return Err(crate::serial::EncodeError(format!(
                            "unit '{}' exports a constant",
                            u.name
                        )))
                    }
                }
            }
            units.push(crate::serial::UnitParts {
                name: u.name.clone(),
                path: u.path.clone(),
                uses: u.uses.clone(),
                own: u.g.own.iter().map(|(n, s)| (n.clone(), s.clone())).collect(),
                inherit: u.g.inherit.clone(),
                exports,
                proto: u.proto.clone(),
            });
        }
        crate::serial::encode_units(&units, &self.outside())
    }

    /// The program [`Runtime::encode_compiled`] encoded, against this
    /// runtime's prelude and modules (a name that is missing here is an error).
    pub fn decode_compiled(&self, bytes: &[u8]) -> Result<CompiledProgram, crate::serial::DecodeError> {
        self.decode_compiled_in(bytes.to_vec(), 0..bytes.len())
    }

    /// [`Runtime::decode_compiled`] of `data[range]`, keeping `data` (the
    /// program reads its function bodies from it when they first run)
    /// instead of copying it.
    pub fn decode_compiled_in(
        &self,
        data: Vec<u8>,
        range: std::ops::Range<usize>,
    ) -> Result<CompiledProgram, crate::serial::DecodeError> {
        let parts = crate::serial::decode_units(data, range, &self.outside())?;
        let units = parts
            .into_iter()
            .map(|u| CompiledUnit {
                name: u.name,
                path: u.path,
                uses: u.uses,
                g: UnitGlobals {
                    own: u.own.into_iter().collect(),
                    unqualified: Vec::new(),
                    inherit: u.inherit,
                },
                proto: u.proto,
                exports: u.exports.into_iter().map(|(n, s)| (n, GlobalRef::Slot(s))).collect(),
            })
            .collect();
        Ok(CompiledProgram { units })
    }

    fn outside(&self) -> crate::serial::Outside<'_> {
        crate::serial::Outside {
            prelude: &self.shared.prelude,
            modules: &self.shared.modules,
        }
    }
}

/// A unit that ran, as a module: its own names that hold a value.
fn module_of(c: &CompiledUnit) -> FileModule {
    let mut attrs = IndexMap::default();
    for (n, r) in &c.exports {
        if let GlobalRef::Slot(s) = r {
            if let Some(v) = s.get() {
                attrs.insert(n.clone(), v);
            }
        }
    }
    let obj = ModuleObj {
        id: StructType::new_id(),
        name: c.name.clone(),
        path: Some(c.path.display().to_string()),
        attrs: crate::value::VLock::new(attrs),
    };
    FileModule {
        value: Value::Module(Arc::new(obj)),
        exports: c.exports.clone(),
    }
}

/// Add the failures of tasks nobody waited for to a program's outcome: the
/// first becomes the error when the program itself succeeded; the others
/// (and all of them when the program failed) become notes.
fn with_task_failures(r: Result<(), RunError>, failures: Vec<Exc>) -> Result<(), RunError> {
    if failures.is_empty() {
        return r;
    }
    let note = |e: &Exc| {
        format!(
            "a task that was never waited for failed: {}: {}",
            e.kind.name(),
            e.message
        )
    };
    match r {
        Ok(()) | Err(RunError::Exit(0)) => {
            let mut it = failures.iter();
            let Some(first) = it.next() else { return Ok(()) };
            let RunError::Error(mut d) = error_to_run_error(first) else {
                return Ok(());
            };
            d.notes.push(
                "this error happened in a task that was never waited for (call .wait() or wait_all() to handle it)"
                    .into(),
            );
            d.notes.extend(it.map(note));
            Err(RunError::Error(d))
        }
        Err(RunError::Error(mut d)) => {
            d.notes.extend(failures.iter().map(note));
            Err(RunError::Error(d))
        }
        other => other,
    }
}

fn no_builtin_module(name: &str, span: crate::diagnostic::Span) -> Diagnostic {
    Diagnostic::new(
        ErrorKind::ModuleNotFoundError,
        format!("no module named '{name}' is compiled into this interpreter"),
    )
    .at(span)
}

fn first_diag(mut ds: Vec<Diagnostic>) -> Diagnostic {
    if ds.is_empty() {
        Diagnostic::new(ErrorKind::Error, "internal error: compilation failed without a message")
    } else {
        ds.swap_remove(0)
    }
}

/// `APSI_DIS=1`: print every code object's bytecode to stderr (for people
/// tuning the compiler; not a stable format).
fn dump_code(code: &crate::code::Code) {
    eprint!("{code:?}");
    for p in code.protos.iter() {
        dump_code(&p.get().code);
    }
}
