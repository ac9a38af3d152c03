//! The prelude's contact with the system: `input`, `read_text`,
//! `write_text`, `exit`, `time`, `cpu_count`, `bench`, `timed`.

use super::args::{expect_int, Args};
use crate::error::ErrorKind;
use crate::value::{err, Caller, Kwargs, StructField, StructObj, StructType, VResult, Value};
use std::io::BufRead;
use std::sync::{Arc, OnceLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub(crate) fn input(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("input", args, kw, 0, &["prompt"])?;
    if let Some(p) = a.opt(0) {
        c.write_out(&crate::format::str_of(p))?;
    }
    let mut line = String::new();
    let n = std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| err(ErrorKind::IOError, format!("cannot read from standard input: {e}")))?;
    if n == 0 {
        return Err(err(ErrorKind::IOError, "input(): end of input"));
    }
    if line.ends_with('\n') {
        line.pop();
        if line.ends_with('\r') {
            line.pop();
        }
    }
    Ok(Value::str(line))
}

fn io_error(action: &str, path: &str, e: std::io::Error) -> crate::value::Exc {
    err(ErrorKind::IOError, format!("cannot {action} '{path}': {e}"))
}

pub(crate) fn read_text(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("read_text", args, kw, 1, &["path"])?;
    let path = a.str(0)?;
    let local = crate::value::sources::local_source(c, path, "read_text")?;
    let text = std::fs::read_to_string(&local).map_err(|e| io_error("read", path, e))?;
    Ok(Value::str(text))
}

pub(crate) fn write_text(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("write_text", args, kw, 2, &["path", "text"])?;
    let path = a.str(0)?;
    let text = a.str(1)?;
    std::fs::write(path, text).map_err(|e| io_error("write", path, e))?;
    Ok(Value::None)
}

pub(crate) fn exit(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("exit", args, kw, 0, &["code"])?;
    let code = match a.opt(0) {
        Some(v) => expect_int(v, "exit", "code")?,
        None => 0,
    };
    let code =
        i32::try_from(code).map_err(|_| err(ErrorKind::ValueError, format!("exit code {code} is out of range")))?;
    Err(crate::value::ErrorObj::exit(code))
}

pub(crate) fn time(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("time", args, kw, 0, &[])?;
    let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    Ok(Value::Float(d.as_secs_f64()))
}

/// CPUs this process may use (see [`crate::par::cpu_count`]).
pub fn cpu_count_value() -> usize {
    crate::par::cpu_count()
}

pub(crate) fn cpu_count(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("cpu_count", args, kw, 0, &[])?;
    Ok(Value::Int(cpu_count_value() as i64))
}

/// The struct type of `bench`'s result: seconds per call.
pub fn bench_result_type() -> Arc<StructType> {
    static T: OnceLock<Arc<StructType>> = OnceLock::new();
    T.get_or_init(|| {
        let field = |n: &str, ann: &str| StructField {
            name: n.into(),
            default: None,
            annotation: Some(ann.into()),
        };
        Arc::new(StructType {
            name: "BenchResult".into(),
            fields: vec![
                field("best", "float"),
                field("median", "float"),
                field("mean", "float"),
                field("worst", "float"),
                field("n", "int"),
            ],
            methods: Default::default(),
            ..StructType::plain(String::new(), Vec::new(), Default::default())
        })
    })
    .clone()
}

/// `bench(f, n=none, warmup=1)`: calls `f()` `warmup` times untimed, then
/// `n` times timed; without `n` it runs as many calls as fit in about half
/// a second (at least 3, at most 1000). Returns
/// `BenchResult(best, median, mean, worst, n)` in seconds per call.
pub(crate) fn bench(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("bench", args, kw, 1, &["f", "n", "warmup"])?;
    let f = a.req(0)?;
    let n = match a.opt(1) {
        Some(v) => {
            let n = expect_int(v, "bench", "n")?;
            if n < 1 {
                return Err(err(ErrorKind::ValueError, format!("bench() needs n >= 1, got {n}")));
            }
            Some(n as usize)
        }
        None => None,
    };
    let warmup = a.int_or(2, 1)?.max(0);
    let mut first = None;
    for i in 0..warmup {
        let t = Instant::now();
        c.call(f, &[], &[])?;
        if i == 0 {
            first = Some(t.elapsed().as_secs_f64());
        }
    }
    let n = n.unwrap_or_else(|| {
        let per = first.unwrap_or(0.01).max(1e-7);
        ((0.5 / per) as usize).clamp(3, 1000)
    });
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        c.call(f, &[], &[])?;
        times.push(t.elapsed().as_secs_f64());
    }
    let Some(crate::measure::Summary {
        best,
        median,
        mean,
        worst,
        ..
    }) = crate::measure::Summary::of(&times)
    else {
        return Err(err(ErrorKind::ValueError, "bench() ran no calls"));
    };
    let fields = vec![
        Value::Float(best),
        Value::Float(median),
        Value::Float(mean),
        Value::Float(worst),
        Value::Int(n as i64),
    ];
    Ok(Value::Struct(StructObj::new(
        bench_result_type(),
        crate::value::FieldVec::from_vec(fields),
    )))
}

/// `@timed`: a function that calls `f` and prints the call's wall time to
/// stderr as `timed: NAME took 1.234 ms` (program output written so far is
/// flushed first, so the two streams stay in order on a terminal).
pub(crate) fn timed(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("timed", args, kw, 1, &["f"])?;
    let f = a.req(0)?.clone();
    let name: Arc<str> = match &f {
        Value::Func(c) => c.name.clone(),
        Value::Native(n) => n.name.clone(),
        Value::BoundMethod(_) | Value::StructType(_) | Value::Kind(_) => Arc::from(crate::format::str_of(&f)),
        other => {
            return Err(err(
                ErrorKind::TypeError,
                format!("@timed expects a function, found {}", other.type_name()),
            ))
        }
    };
    let label = name.clone();
    let wrapper = move |c: &mut dyn Caller, args: &[Value], kw: Kwargs| -> VResult<Value> {
        let t = Instant::now();
        let r = c.call(&f, args, kw);
        let took = t.elapsed().as_secs_f64();
        let _ = c.flush_out();
        eprintln!("timed: {label} took {}", crate::measure::fmt_seconds(took));
        r
    };
    Ok(Value::Native(Arc::new(crate::value::NativeFn::closure(
        &name,
        Box::new(wrapper),
    ))))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::ops::Must;
    use crate::ops::NoCaller;
    use crate::value::NativeFn;

    fn noop(_c: &mut dyn Caller, _a: &[Value], _k: Kwargs) -> VResult<Value> {
        Ok(Value::None)
    }

    #[test]
    fn bench_returns_ordered_stats() {
        let f = Value::Native(Arc::new(NativeFn::new("noop", noop)));
        let kw: Vec<(Arc<str>, Value)> = vec![("n".into(), Value::Int(5))];
        let r = bench(&mut NoCaller, &[f], &kw).must();
        let get = |n| match crate::ops::get_attr(&r, n).must() {
            Value::Float(x) => x,
            _ => f64::NAN,
        };
        assert!(get("best") <= get("median") && get("median") <= get("worst"));
        assert_eq!(crate::format::str_of(&crate::ops::get_attr(&r, "n").must()), "5");
    }

    #[test]
    fn files_round_trip_and_errors_name_the_path() {
        let dir = std::env::temp_dir().join(format!("apsi-lib-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).must();
        let p = dir.join("t.txt");
        let ps = p.to_string_lossy().to_string();
        write_text(&mut NoCaller, &[Value::str(ps.clone()), Value::str("héllo\n")], &[]).must();
        let back = read_text(&mut NoCaller, &[Value::str(ps.clone())], &[]).must();
        assert_eq!(back.as_str(), Some("héllo\n"));
        let missing = dir.join("nope.txt").to_string_lossy().to_string();
        let e = read_text(&mut NoCaller, &[Value::str(missing.clone())], &[]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::IOError);
        assert!(
            e.message.contains(&missing) && e.message.contains("No such file"),
            "{}",
            e.message
        );
        std::fs::remove_dir_all(&dir).must();
    }

    #[test]
    fn exit_and_cpu_count() {
        let e = exit(&mut NoCaller, &[Value::Int(3)], &[]).unwrap_err();
        assert_eq!(e.exit, Some(3));
        assert!(cpu_count_value() >= 1);
    }
}
