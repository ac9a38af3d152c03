//! `spawn`, `Task` (`wait`, `done`), `wait_all`, `wait_any`.
//!
//! A task runs on the shared worker pool on a fresh executor that shares the
//! spawning program's globals. Its outcome is stored once; `wait` returns the
//! value or raises a copy of the task's error carrying the task's Apsi stack.
//! The runtime's task registry knows every task: the program ends only after
//! all of them, and a failure nobody waited for is reported at exit.

use crate::util::{method_of, native, object, recv};
use apsi_core::api::par::TaskRegistry;
use apsi_core::api::ErrorKind;
use apsi_core::api::{err, ApsiObject, Args, Caller, ErrorObj, Exc, Kwargs, VResult, Value};
use parking_lot::{Condvar, Mutex};
use std::sync::{Arc, OnceLock};

/// Woken by the first of several tasks to finish.
struct AnyWaiter {
    first: Mutex<Option<usize>>,
    cond: Condvar,
}

#[derive(Default)]
struct Inner {
    outcome: Option<VResult<Value>>,
    any: Vec<(Arc<AnyWaiter>, usize)>,
}

pub struct Task {
    id: Option<u64>,
    registry: Option<Arc<TaskRegistry>>,
    inner: Mutex<Inner>,
    cond: Condvar,
}

impl Task {
    fn finish(&self, r: VResult<Value>) {
        if let (Some(reg), Some(id)) = (&self.registry, self.id) {
            // Recorded before the outcome is visible, so a waiter's `observed`
            // always comes after it.
            reg.finished(id, r.as_ref().err().cloned());
        }
        let mut g = self.inner.lock();
        g.outcome = Some(r);
        for (w, i) in g.any.drain(..) {
            let mut f = w.first.lock();
            if f.is_none() {
                *f = Some(i);
            }
            w.cond.notify_all();
        }
        drop(g);
        self.cond.notify_all();
    }

    pub fn is_done(&self) -> bool {
        self.inner.lock().outcome.is_some()
    }

    /// Wait for the outcome; an error comes back as a fresh copy (so waiting
    /// twice does not grow one trace twice).
    pub fn wait(&self) -> VResult<Value> {
        if !self.is_done() {
            // No lock is held here: a waiting thread may run queued jobs
            // (this task among them) when no worker can.
            apsi_core::api::par::blocking_helping(|| {
                let mut g = self.inner.lock();
                while g.outcome.is_none() {
                    self.cond.wait(&mut g);
                }
            });
        }
        let g = self.inner.lock();
        let r = match &g.outcome {
            Some(Ok(v)) => Ok(v.clone()),
            Some(Err(e)) => Err(copy_error(e)),
            None => Err(err(ErrorKind::Error, "internal error: task ended without an outcome")),
        };
        drop(g);
        if let (Some(reg), Some(id)) = (&self.registry, self.id) {
            reg.observed(id);
        }
        r
    }
}

fn copy_error(e: &Exc) -> Exc {
    Arc::new(ErrorObj {
        kind: e.kind,
        message: e.message.clone(),
        hint: e.hint.clone(),
        trace: parking_lot::Mutex::new(e.trace.lock().clone()),
        exit: e.exit,
        payload: e.payload.clone(),
        value: e.value.clone(),
    })
}

fn methods() -> &'static [(&'static str, Value)] {
    static M: OnceLock<Vec<(&'static str, Value)>> = OnceLock::new();
    M.get_or_init(|| vec![("wait", native("wait", task_wait)), ("done", native("done", task_done))])
}

impl Task {
    fn to_str(&self) -> String {
        if self.is_done() {
            "<Task done>".into()
        } else {
            "<Task running>".into()
        }
    }
}

fn task_wait(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("wait", args, kw, 1, &["self"])?;
    recv::<TaskRef>(args, "Task")?.wait()
}

fn task_done(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("done", args, kw, 1, &["self"])?;
    Ok(Value::Bool(recv::<TaskRef>(args, "Task")?.is_done()))
}

/// `spawn(f, *args)`: run `f(*args)` on the pool; returns its Task.
pub fn spawn(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    if let Some((k, _)) = kw.first() {
        return Err(err(
            ErrorKind::TypeError,
            format!("spawn() got an unexpected keyword argument '{k}'"),
        ));
    }
    let Some((f, rest)) = args.split_first() else {
        return Err(err(ErrorKind::TypeError, "spawn() needs a function to run"));
    };
    let Some(mut exec) = c.new_thread_caller() else {
        return Err(err(ErrorKind::Error, "spawn() needs an interpreter to run the task on"));
    };
    let registry = c.tasks();
    let id = registry.as_ref().map(|r| r.started());
    let task = Arc::new(Task {
        id,
        registry,
        inner: Mutex::new(Inner::default()),
        cond: Condvar::new(),
    });
    let (t, f, a) = (task.clone(), f.clone(), rest.to_vec());
    apsi_core::api::par::submit(Box::new(move || {
        // The task gets its own module task-local state (`par::task_local`).
        let run = || apsi_core::api::par::task_local::run_task(|| exec.call(&f, &a, &[]));
        let r = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
            Ok(r) => r,
            Err(_) => Err(err(ErrorKind::Error, "internal error: a task panicked")),
        };
        t.finish(r);
    }));
    Ok(object(TaskRef(task)))
}

/// The Apsi value of a task (the task itself is shared with its job).
pub struct TaskRef(pub Arc<Task>);

impl std::ops::Deref for TaskRef {
    type Target = Task;
    fn deref(&self) -> &Task {
        &self.0
    }
}

impl ApsiObject for TaskRef {
    fn type_name(&self) -> &str {
        "Task"
    }
    fn to_str(&self) -> String {
        self.0.to_str()
    }
    fn get_attr(&self, this: &Value, name: &str) -> Option<VResult<Value>> {
        method_of(this, methods(), name)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn tasks_of(fname: &str, c: &mut dyn Caller, v: &Value) -> VResult<Vec<(Value, Arc<Task>)>> {
    let items = apsi_core::api::iterate(c, v)?;
    items
        .into_iter()
        .map(|x| {
            let t = match &x {
                Value::Object(o) => o.0.as_any().downcast_ref::<TaskRef>().map(|t| t.0.clone()),
                _ => None,
            };
            match t {
                Some(t) => Ok((x, t)),
                None => Err(err(
                    ErrorKind::TypeError,
                    format!("{fname}() needs a list of tasks, found a {}", x.type_name()),
                )),
            }
        })
        .collect()
}

/// `wait_all(tasks)`: every result, in order; the first failure (in list
/// order) is raised after all have ended.
pub fn wait_all(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("wait_all", args, kw, 1, &["tasks"])?;
    let ts = tasks_of("wait_all", c, &args[0])?;
    let mut out = Vec::with_capacity(ts.len());
    let mut first_err = None;
    for (_, t) in &ts {
        match t.wait() {
            Ok(v) => out.push(v),
            Err(e) => {
                if first_err.is_none() {
                    first_err = Some(e);
                }
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(Value::list(out)),
    }
}

/// `wait_any(tasks)`: the first task to finish (the first in list order
/// among those already finished).
pub fn wait_any(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("wait_any", args, kw, 1, &["tasks"])?;
    let ts = tasks_of("wait_any", c, &args[0])?;
    if ts.is_empty() {
        return Err(err(ErrorKind::ValueError, "wait_any() needs at least one task"));
    }
    let w = Arc::new(AnyWaiter {
        first: Mutex::new(None),
        cond: Condvar::new(),
    });
    let mut registered = Vec::new();
    let mut found = None;
    for (i, (_, t)) in ts.iter().enumerate() {
        let mut g = t.inner.lock();
        if g.outcome.is_some() {
            found = Some(i);
            break;
        }
        g.any.push((w.clone(), i));
        registered.push(i);
    }
    let i = match found {
        Some(i) => i,
        None => {
            let mut f = w.first.lock();
            apsi_core::api::par::blocking(|| {
                while f.is_none() {
                    w.cond.wait(&mut f);
                }
            });
            f.unwrap_or(0)
        }
    };
    for j in registered {
        if let Some((_, t)) = ts.get(j) {
            t.inner.lock().any.retain(|(x, _)| !Arc::ptr_eq(x, &w));
        }
    }
    Ok(ts[i].0.clone())
}
