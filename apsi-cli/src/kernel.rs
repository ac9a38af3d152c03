//! `apsi kernel`: the Jupyter kernel (the protocol is apsi-kernel's; this
//! file runs cells in a [`Session`], the REPL's), and `apsi kernel install`.
//!
//! What a value shows as (IPython's rich display, by method name): always
//! `text/plain` as the REPL prints it; a tensor also `text/html` (a table,
//! shape and dtype in its caption, summarized as `print` summarizes); a
//! value with a `_repr_html_` method (returning a str) `text/html`, one
//! with `_repr_png_` (returning bytes) `image/png`. `display(x)`, a name
//! only kernel sessions have (a module of this file binds it in the
//! prelude of the kernel's runtime), sends that in the middle of a cell.

use crate::args::RunOptions;
use crate::session::{fmt_duration, Outcome, Session};
use apsi_core::diagnostic::Diagnostic;
use apsi_core::error::ErrorKind;
use apsi_core::module::{ModuleBuilder, ModuleDescriptor};
use apsi_core::tensor::print::{elem_strings, EDGE, THRESHOLD};
use apsi_core::tensor::{as_tensor, Tensor};
use apsi_core::value::{err, Caller, Kwargs, VResult, Value};
use apsi_kernel::{Bundle, Completeness, Engine, ErrorReport, Io, Kernel, KernelConfig, Reply};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// Where `display(x)` sends (set once the kernel is bound; one per process).
static IO: OnceLock<Io> = OnceLock::new();

/// Whether `apsi kernel ARGS…` runs a kernel (rather than installing one or
/// printing help): then SIGINT must interrupt cells, not the process.
pub fn is_server(argv: &[String]) -> bool {
    argv.first().map(String::as_str) == Some("kernel")
        && argv
            .iter()
            .skip(1)
            .any(|a| a == "-f" || a == "--connection-file" || a.starts_with("--connection-file="))
        && argv.get(1).map(String::as_str) != Some("install")
}

const USAGE: &str = "usage: apsi kernel install [--user | --prefix DIR]\n       apsi kernel -f CONNECTION_FILE";

pub fn main(args: &[String]) -> u8 {
    match args.first().map(String::as_str) {
        Some("install") => install(&args[1..]),
        Some("--help" | "-h" | "help") => crate::help::print_help(Some("kernel")),
        Some("-f" | "--connection-file") => match args.get(1) {
            Some(f) if args.len() == 2 => serve(&PathBuf::from(f)),
            _ => usage_error("'-f' needs the connection file's path (Jupyter passes it)"),
        },
        Some(a) if a.starts_with("--connection-file=") && args.len() == 1 => {
            serve(&PathBuf::from(&a["--connection-file=".len()..]))
        }
        Some(other) => usage_error(&format!("unknown argument '{other}' for 'apsi kernel'")),
        None => usage_error("'apsi kernel' needs 'install' or '-f CONNECTION_FILE'"),
    }
}

fn usage_error(msg: &str) -> u8 {
    eprintln!("error: {msg}\n{USAGE}\n  = hint: see 'apsi help kernel'");
    2
}

fn install(args: &[String]) -> u8 {
    let root = match args {
        [] => apsi_kernel::user_data_dir(),
        [u] if u == "--user" => apsi_kernel::user_data_dir(),
        [p, dir] if p == "--prefix" => Ok(PathBuf::from(dir).join("share").join("jupyter")),
        [p] if p.starts_with("--prefix=") => Ok(PathBuf::from(&p["--prefix=".len()..]).join("share").join("jupyter")),
        _ => return usage_error("'apsi kernel install' takes --user or --prefix DIR"),
    };
    let root = match root {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot find the Jupyter data directory: {e}");
            return 1;
        }
    };
    let exe = match std::env::current_exe().and_then(|p| p.canonicalize()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: cannot find this apsi executable's path: {e}");
            return 1;
        }
    };
    match apsi_kernel::install(&root, &exe, crate::APSI_VERSION) {
        Ok(dir) => {
            println!("installed the Apsi kernel in {}", dir.display());
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

fn serve(connection_file: &std::path::Path) -> u8 {
    // One runtime in this process, run by this thread only.
    apsi_core::value::solo::allow();
    let config = KernelConfig {
        version: crate::APSI_VERSION.to_string(),
        banner: format!("Apsi {} — a scientific programming language", crate::APSI_VERSION),
        interrupt: Arc::new(apsi_core::interrupt::request),
        is_complete: Arc::new(|code: &str| {
            if apsi_core::syntax::is_incomplete(code) {
                Completeness::Incomplete
            } else {
                Completeness::Complete
            }
        }),
    };
    let kernel = match Kernel::bind(connection_file, config) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    watch_parent();
    let io = kernel.io();
    let _ = IO.set(io.clone());
    let out = apsi_kernel::StreamWriter::new(move |text| io.stdout(text));
    let opts = RunOptions::default();
    let session = match Session::new(&opts, "cell", vec![display_module()], Some(Box::new(out)), true) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    let mut engine = CellEngine { session };
    match kernel.run(&mut engine) {
        Some(code) => code.clamp(0, 255) as u8,
        None => 0,
    }
}

/// Ends the kernel when the process that started it (Jupyter) is gone, so
/// a killed server leaves no kernel behind (as ipykernel's parent poller).
#[cfg(unix)]
fn watch_parent() {
    // SAFETY: getppid has no preconditions.
    let parent = unsafe { libc::getppid() };
    if parent <= 1 {
        return;
    }
    let _ = std::thread::Builder::new()
        .name("apsi-kernel-parent".into())
        .stack_size(64 * 1024)
        .spawn(move || loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
            // SAFETY: as above.
            if unsafe { libc::getppid() } != parent {
                std::process::exit(0);
            }
        });
}
#[cfg(not(unix))]
fn watch_parent() {}

/// The module that binds `display` in the kernel runtime's prelude.
fn display_module() -> ModuleDescriptor {
    ModuleBuilder::new("jupyter", crate::APSI_VERSION, "*")
        .function("display", display)
        .prelude("display")
        .build()
}

/// `display(x, …)`: shows each argument as a cell's result would show.
fn display(c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> {
    // What the cell printed so far comes first.
    c.flush_out()?;
    for v in args {
        let b = bundle(c, v)?;
        match IO.get() {
            Some(io) => io.display(&b),
            None => return Err(err(ErrorKind::Error, "display() works in a Jupyter kernel only")),
        }
    }
    Ok(Value::None)
}

/// `v.name()` when `v` has a method `name` (`None` when it has not).
fn call_method(c: &mut dyn Caller, v: &Value, name: &str) -> VResult<Option<Value>> {
    let has = match v {
        Value::Struct(s) => s.ty.methods.contains_key(name),
        Value::Object(_) => true,
        _ => false,
    };
    if !has {
        return Ok(None);
    }
    // An object that cannot answer the name (whatever error it gives) has
    // no such method; an error of the method itself is the cell's.
    let Ok(m) = apsi_core::ops::get_attr(v, name) else {
        return Ok(None);
    };
    c.call(&m, &[], &[]).map(Some)
}

/// What `v` shows as (see the module documentation).
pub fn bundle(c: &mut dyn Caller, v: &Value) -> VResult<Bundle> {
    let mut b = Bundle {
        plain: apsi_core::format::repr_of(v),
        html: None,
        png: None,
    };
    if let Some(t) = as_tensor(v) {
        b.html = Some(tensor_html(&t));
        return Ok(b);
    }
    match call_method(c, v, "_repr_html_")? {
        Some(Value::Str(s)) => b.html = Some(s.as_str().to_string()),
        Some(Value::None) | None => {}
        Some(other) => {
            return Err(err(
                ErrorKind::TypeError,
                format!("_repr_html_ must return a str, not {}", other.type_name()),
            ))
        }
    }
    match call_method(c, v, "_repr_png_")? {
        Some(Value::Bytes(bytes)) => b.png = Some(bytes.0.to_vec()),
        Some(Value::None) | None => {}
        Some(other) => {
            return Err(err(
                ErrorKind::TypeError,
                format!("_repr_png_ must return bytes, not {}", other.type_name()),
            ))
        }
    }
    Ok(b)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The indices of an axis of length `n` that show: all, or the first and
/// last `EDGE` around `None` (`…`) when the tensor is summarized.
fn picks(n: usize, summarize: bool) -> Vec<Option<usize>> {
    if summarize && n > 2 * EDGE {
        (0..EDGE)
            .map(Some)
            .chain([None])
            .chain((n - EDGE..n).map(Some))
            .collect()
    } else {
        (0..n).map(Some).collect()
    }
}

/// A tensor as an HTML table: shape and dtype in the caption; 0-d a cell,
/// 1-d a row, 2-d rows and columns (with their indices), more axes one 2-d
/// block per index of the leading axes, each under its `[i, j, :, :]`.
/// Past 1,000 elements each axis shows its first and last 3 entries around
/// `…`, as `print` does.
pub fn tensor_html(t: &Tensor) -> String {
    let shape = t.shape().to_vec();
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape_text = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut h = String::from("<table class=\"apsi-tensor\">");
    h.push_str(&format!(
        "<caption>tensor · shape {shape_text} · dtype {}</caption>",
        t.dtype.name()
    ));
    if t.size() == 0 {
        h.push_str("<tr><td><i>empty</i></td></tr></table>");
        return h;
    }
    let summarize = t.size() > THRESHOLD;
    let elems = elem_strings(t);
    let cell = |i: usize| format!("<td>{}</td>", escape(elems.get(i).map(String::as_str).unwrap_or("")));
    match shape.len() {
        0 => h.push_str(&format!("<tr>{}</tr>", cell(0))),
        1 => {
            h.push_str("<tr>");
            for p in picks(shape[0], summarize) {
                match p {
                    Some(i) => h.push_str(&cell(i)),
                    None => h.push_str("<td>…</td>"),
                }
            }
            h.push_str("</tr>");
        }
        nd => {
            let (rows, cols) = (shape[nd - 2], shape[nd - 1]);
            let col_picks = picks(cols, summarize);
            // Every index of the leading axes that shows (`None`: a `…` row).
            let mut blocks: Vec<Option<Vec<usize>>> = vec![Some(vec![])];
            for &n in &shape[..nd - 2] {
                let mut next = Vec::new();
                for b in &blocks {
                    match b {
                        None => next.push(None),
                        Some(prefix) => {
                            for p in picks(n, summarize) {
                                next.push(p.map(|i| {
                                    let mut v = prefix.clone();
                                    v.push(i);
                                    v
                                }));
                            }
                        }
                    }
                }
                // Several `…` in a row say one thing.
                next.dedup_by(|a, b| a.is_none() && b.is_none());
                blocks = next;
            }
            let width = col_picks.len() + 1;
            let mut head = String::from("<tr><th></th>");
            for p in &col_picks {
                match p {
                    Some(j) => head.push_str(&format!("<th>{j}</th>")),
                    None => head.push_str("<th>…</th>"),
                }
            }
            head.push_str("</tr>");
            for b in blocks {
                let Some(prefix) = b else {
                    h.push_str(&format!("<tr><th colspan=\"{width}\">…</th></tr>"));
                    continue;
                };
                if nd > 2 {
                    let idx: Vec<String> = prefix.iter().map(|i| i.to_string()).collect();
                    h.push_str(&format!(
                        "<tr><th colspan=\"{width}\" style=\"text-align:left\">[{}, :, :]</th></tr>",
                        idx.join(", ")
                    ));
                }
                h.push_str(&head);
                // Flat index of this block's first element.
                let mut start = 0;
                let mut stride: usize = rows * cols;
                for (k, &i) in prefix.iter().enumerate().rev() {
                    start += i * stride;
                    stride *= shape[k];
                }
                for p in picks(rows, summarize) {
                    match p {
                        Some(r) => {
                            h.push_str(&format!("<tr><th>{r}</th>"));
                            for q in &col_picks {
                                match q {
                                    Some(c) => h.push_str(&cell(start + r * cols + c)),
                                    None => h.push_str("<td>…</td>"),
                                }
                            }
                            h.push_str("</tr>");
                        }
                        None => {
                            h.push_str("<tr><th>⋮</th>");
                            for _ in &col_picks {
                                h.push_str("<td>⋮</td>");
                            }
                            h.push_str("</tr>");
                        }
                    }
                }
            }
        }
    }
    h.push_str("</table>");
    h
}

/// Runs cells in the session, with `:time` and `:bench`.
struct CellEngine {
    session: Session,
}

impl CellEngine {
    fn report(&self, ds: &[Diagnostic]) -> ErrorReport {
        let text = self.session.render(ds, false);
        let first = ds.first();
        ErrorReport {
            ename: first
                .map(|d| d.kind_name.clone().unwrap_or_else(|| d.kind.name().to_string()))
                .unwrap_or_else(|| "Error".to_string()),
            evalue: first.map(|d| d.message.clone()).unwrap_or_default(),
            traceback: text.lines().map(str::to_string).collect(),
        }
    }

    fn finish(&mut self, outcome: Outcome) -> Reply {
        match outcome {
            Outcome::Value(None) => Reply::Ok(None),
            Outcome::Value(Some(v)) => {
                let mut exec = self.session.runtime().executor();
                let shown = bundle(&mut exec, &v);
                self.session.runtime().flush();
                match shown {
                    Ok(b) => Reply::Ok(Some(b)),
                    Err(e) => match apsi_core::driver::error_to_run_error(&e) {
                        apsi_core::driver::RunError::Error(d) => Reply::Error(self.report(&[d])),
                        apsi_core::driver::RunError::Exit(code) => Reply::Exit(code),
                    },
                }
            }
            Outcome::Failed(ds) => Reply::Error(self.report(&ds)),
            Outcome::Exit(code) => Reply::Exit(code),
        }
    }
}

impl Engine for CellEngine {
    fn execute(&mut self, code: &str, io: &Io) -> Reply {
        apsi_core::interrupt::clear();
        let trimmed = code.trim_start();
        if let Some(rest) = trimmed.strip_prefix(":time") {
            if rest.starts_with(char::is_whitespace) && !rest.trim().is_empty() {
                let (outcome, took) = self.session.time(rest.trim());
                let ok = matches!(outcome, Outcome::Value(_));
                let reply = self.finish(outcome);
                if ok {
                    io.stdout(format!("time: {}\n", fmt_duration(took)));
                }
                return reply;
            }
        }
        if let Some(rest) = trimmed.strip_prefix(":bench") {
            if rest.starts_with(char::is_whitespace) && !rest.trim().is_empty() {
                return match self.session.bench(rest.trim()) {
                    Ok(line) => {
                        io.stdout(format!("{line}\n"));
                        Reply::Ok(None)
                    }
                    Err(failed) => self.finish(failed),
                };
            }
        }
        if let Some(magic) = trimmed.strip_prefix(':') {
            let name = magic.split_whitespace().next().unwrap_or("");
            let msg = match name {
                "time" | "bench" => format!("usage: :{name} CODE"),
                _ => format!("unknown command ':{name}' — the kernel has :time CODE and :bench CODE"),
            };
            return Reply::Error(ErrorReport {
                ename: "UsageError".into(),
                evalue: msg.clone(),
                traceback: vec![msg],
            });
        }
        let outcome = self.session.eval(code);
        self.finish(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: Vec<f64>, shape: Vec<usize>) -> Tensor {
        Tensor::from_vec(v, shape)
    }

    #[test]
    fn a_matrix_is_a_table_with_shape_and_dtype() {
        let h = tensor_html(&t(vec![1.0, 2.5, -3.0, 4.0, 5.0, 6.0], vec![2, 3]));
        assert!(h.starts_with("<table class=\"apsi-tensor\">"), "{h}");
        assert!(
            h.contains("<caption>tensor · shape (2, 3) · dtype f64</caption>"),
            "{h}"
        );
        assert!(
            h.contains("<tr><th>1</th><td>4.0</td><td>5.0</td><td>6.0</td></tr>"),
            "{h}"
        );
        assert!(h.contains("<td>-3.0</td>"), "{h}");
        assert!(!h.contains('…'), "{h}");
        assert!(h.ends_with("</table>"));
    }

    #[test]
    fn vectors_scalars_and_empty_tensors() {
        let v = tensor_html(&Tensor::from_vec(vec![1i64, 2, 3], vec![3]));
        assert!(v.contains("shape (3,) · dtype i64"), "{v}");
        assert!(v.contains("<tr><td>1</td><td>2</td><td>3</td></tr>"), "{v}");
        let s = tensor_html(&t(vec![7.0], vec![]));
        assert!(s.contains("shape () · dtype f64") && s.contains("<td>7.0</td>"), "{s}");
        let e = tensor_html(&t(vec![], vec![2, 0]));
        assert!(e.contains("shape (2, 0)") && e.contains("empty"), "{e}");
    }

    #[test]
    fn large_tensors_are_summarized_as_print_does() {
        // 40 x 40 = 1600 elements > 1000: 3 + … + 3 of each axis.
        let n = 40;
        let h = tensor_html(&t((0..n * n).map(|i| i as f64).collect(), vec![n, n]));
        assert!(h.contains("<th>…</th>") && h.contains("<th>⋮</th>"), "{h}");
        assert!(
            h.contains("<tr><th>39</th><td>1560.0</td><td>1561.0</td><td>1562.0</td><td>…</td>"),
            "{h}"
        );
        // 7 shown rows (3 + ⋮ + 3) of 7 cells each.
        assert_eq!(h.matches("<td>").count(), 7 * 7, "{h}");
        // Under the threshold nothing is left out.
        let small = tensor_html(&t((0..900).map(|i| i as f64).collect(), vec![30, 30]));
        assert!(!small.contains('…') && small.matches("<td>").count() == 900);
    }

    #[test]
    fn more_axes_are_blocks_under_their_index() {
        let h = tensor_html(&Tensor::from_vec((0..8i64).collect(), vec![2, 2, 2]));
        assert!(h.contains("[0, :, :]") && h.contains("[1, :, :]"), "{h}");
        assert!(h.contains("<tr><th>1</th><td>6</td><td>7</td></tr>"), "{h}");
        // 12 x 10 x 10 = 1200: the first axis summarized too.
        let big = tensor_html(&Tensor::from_vec((0..1200i64).collect(), vec![12, 10, 10]));
        assert!(big.contains("[11, :, :]") && !big.contains("[5, :, :]"), "{big}");
        assert!(big.contains("<td>1199</td>"), "{big}");
    }

    #[test]
    fn the_kernel_is_a_server_only_with_a_connection_file() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(is_server(&s(&["kernel", "-f", "c.json"])));
        assert!(!is_server(&s(&["kernel", "install", "--user"])));
        assert!(!is_server(&s(&["run", "-f"])));
    }
}
