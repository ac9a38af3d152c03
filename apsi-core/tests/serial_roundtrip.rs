//! `Runtime::encode_compiled` / `decode_compiled` (the compile cache's
//! format, `apsi_core::serial`): every spec program that runs on the core
//! alone prints exactly the same, and fails with the same diagnostic, when
//! its compiled form went through bytes and a fresh runtime; malformed bytes
//! are an error, never a panic.

use apsi_core::check::{self, CheckEnv};
use apsi_core::diagnostic::{self, SourceMap};
use apsi_core::driver::{CompiledProgram, RunError, Runtime, RuntimeConfig};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn runtime(out: &Capture) -> Runtime {
    Runtime::new(RuntimeConfig {
        output: Some(Box::new(out.clone())),
        ..RuntimeConfig::default()
    })
    .unwrap()
}

fn env(rt: &Runtime) -> CheckEnv {
    CheckEnv {
        prelude: rt.prelude_names(),
        source_readers: rt.source_readers(),
        ..CheckEnv::default()
    }
}

/// Output and rendered error of running `c` on `rt`.
fn run(mut rt: Runtime, out: &Capture, c: &CompiledProgram, sources: &SourceMap) -> String {
    let r = rt.run_compiled(c);
    rt.flush();
    let mut s = String::from_utf8_lossy(&out.0.lock().unwrap()).into_owned();
    match r {
        Ok(()) => {}
        Err(RunError::Exit(code)) => s.push_str(&format!("\n<exit {code}>")),
        Err(RunError::Error(d)) => {
            s.push_str("\n<error>\n");
            s.push_str(&diagnostic::render_all(&[d], sources, false));
        }
    }
    s
}

/// Runs `file` compiled as usual and after an encode/decode round trip;
/// `None` when it does not load on the core alone or cannot be encoded.
fn both_ways(file: &Path) -> Option<(String, String)> {
    let out1 = Capture::default();
    let rt1 = runtime(&out1);
    let sources = Arc::new(SourceMap::new());
    let name = file.display().to_string();
    let program = check::load(file, &name, &env(&rt1), sources.clone()).ok()?;
    let compiled = rt1.compile(&program).ok()?;
    let bytes = rt1.encode_compiled(&compiled).ok()?;
    let first = run(rt1, &out1, &compiled, &sources);

    // A fresh runtime, as another process would have.
    let out2 = Capture::default();
    let rt2 = runtime(&out2);
    let decoded = rt2.decode_compiled(&bytes).expect("decodes");
    // The same sources in the same order, as the compile cache restores them.
    let sources2 = SourceMap::new();
    let mut id = 0;
    while let Some(f) = sources.get(diagnostic::FileId(id)) {
        sources2.add(f.name.clone(), f.text.clone());
        id += 1;
    }
    // Encoding again gives the same bytes.
    assert_eq!(rt2.encode_compiled(&decoded).expect("encodes"), bytes, "{name}");
    let second = run(rt2, &out2, &decoded, &sources2);
    Some((first, second))
}

fn spec_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/spec");
    let mut v = Vec::new();
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "apsi") {
                v.push(p);
            }
        }
    }
    v.sort();
    v
}

#[test]
fn spec_programs_run_the_same_after_a_round_trip() {
    let mut compared = 0;
    for f in spec_files() {
        if let Some((a, b)) = both_ways(&f) {
            assert_eq!(a, b, "{}", f.display());
            compared += 1;
        }
    }
    assert!(compared >= 30, "only {compared} spec programs ran on the core alone");
}

#[test]
fn features_run_the_same_after_a_round_trip() {
    let dir = std::env::temp_dir().join(format!("apsi-serial-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("lib")).unwrap();
    std::fs::write(
        dir.join("lib/shapes.apsi"),
        "PI2 = 6.28\ncount = 0\nstruct Circle:\n    r: float\n    def area(self) -> float:\n        return PI2 / 2 * self.r ** 2\n",
    )
    .unwrap();
    let main = dir.join("main.apsi");
    std::fs::write(
        &main,
        r#"use lib.shapes
use lib.shapes as S
count = count + 1
struct Base:
    x: int = 1
    K = 10
    @property
    def double(self):
        return self.x * 2
    @staticmethod
    def make():
        return Base(5)
struct Kid(Base):
    y: int = 2
    def __add__(self, o):
        return Kid(self.x + o.x, self.y + o.y)
    def __str__(self):
        return f"Kid({self.x}, {self.y})"
def counter():
    n = 0
    def step(by=1, *, twice=false):
        nonlocal n
        n += by * (2 if twice else 1)
        return n
    return step
def gen(n):
    for i in range(n):
        yield i * i
    return "end"
def outer():
    r = yield from gen(3)
    yield r
def f(a: int, b: float = 2.0, *rest, **kw) -> float:
    return a + b + len(rest) + len(kw)
c = counter()
c(); c(3); c(twice=true)
k = Kid(1, 2) + Kid(3, 4)
print(k, Base.make().double, Kid.K, c(0), list(outer()))
print(f(1), f(1, 2.5, 3, 4, z=1), sum(x for x in range(10) if x % 2), any(x > 8 for x in range(10)))
print({x: x * x for x in range(4)}, {1, 2, 2, 3}, [a + b for a, b in zip("ab", "cd")])
print(b"\x00ab", "%5.2f|%d" % (3.14159, 7), len(argv), shapes.Circle(1.0).area(), S.PI2, count)
t = (1, "two", 3.0, none, true)
x, *mid, y = t
print(x, mid, y, t[1:3], "é"[0], 2 ** 70 // 3 if false else 2 ** 40)
try:
    try:
        raise ValueError("inner")
    finally:
        print("finally")
except ValueError as e:
    print("caught", e)
d = {"a": 1}
del d["a"]
print(d, [i for i in range(20)][::7])
g = 0
def setg():
    global g
    g = g + 41
setg()
print(g + 1)
print(1 // 0)
"#,
    )
    .unwrap();
    let (a, b) = both_ways(&main).expect("the program loads and encodes");
    assert!(a.contains("Kid(4, 6) 10 10"), "{a}");
    assert!(a.contains("ZeroDivisionError"), "{a}");
    assert_eq!(a, b);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn malformed_bytes_are_errors_never_panics() {
    let out = Capture::default();
    let rt = runtime(&out);
    let dir = std::env::temp_dir().join(format!("apsi-serial-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("p.apsi");
    std::fs::write(&p, "def f(x):\n    return [x, 'a', 1.5]\nprint(f(2))\n").unwrap();
    let sources = Arc::new(SourceMap::new());
    let program = check::load(&p, "p.apsi", &env(&rt), sources).unwrap();
    let bytes = rt.encode_compiled(&rt.compile(&program).unwrap()).unwrap();
    assert!(rt.decode_compiled(&bytes).is_ok());
    for n in 0..bytes.len() {
        assert!(rt.decode_compiled(&bytes[..n]).is_err(), "truncated to {n}");
    }
    // Flipped bits decode to an error or to some program; never a panic.
    for i in 0..bytes.len() {
        for bit in [0x01u8, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= bit;
            if let Ok(c) = rt.decode_compiled(&b) {
                // Bodies are read when first run: reading them all is an
                // error or a program too.
                let _ = c.read_all_bodies();
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Compiles `src` and returns the runtime that did and its bytes.
fn compiled_bytes(src: &str, tag: &str) -> Vec<u8> {
    let out = Capture::default();
    let rt = runtime(&out);
    let dir = std::env::temp_dir().join(format!("apsi-serial-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("p.apsi");
    std::fs::write(&p, src).unwrap();
    let sources = Arc::new(SourceMap::new());
    let program = check::load(&p, "p.apsi", &env(&rt), sources).unwrap();
    let bytes = rt.encode_compiled(&rt.compile(&program).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    bytes
}

#[test]
fn bodies_are_read_when_first_run() {
    let bytes = compiled_bytes(
        "def used(x):\n    return [v * 2 for v in x]\ndef unused(x):\n    return {k: k for k in x}\n\
         def also_unused():\n    def inner():\n        return 1\n    return inner\nprint(used([1, 2]))\n",
        "lazy",
    );
    let out = Capture::default();
    let rt = runtime(&out);
    let c = rt.decode_compiled(&bytes).unwrap();
    // Only the unit's own prototype is known before anything runs.
    assert_eq!(c.bodies_read(), (0, 1));
    let text = run(rt, &out, &c, &SourceMap::new());
    assert_eq!(text, "[2, 4]\n");
    // The top level, `used` and its comprehension ran; the other two were
    // never read (nor was `inner`, inside one of them), nor their headers:
    // a top-level `def` makes its function when the name is first read.
    assert_eq!(c.bodies_read(), (3, 5));
    assert_eq!(c.prototypes_read(), 3);
    // Nothing failed, so no span was asked for.
    assert_eq!(c.span_tables_read(), 0);
    assert!(c.read_all_bodies().is_ok());
}

#[test]
fn definitions_are_made_when_first_read() {
    let bytes = compiled_bytes(
        "struct Used:\n    x: int\n    def get(self):\n        return self.x\n    def unused(self):\n        return 0\n\
         struct Unused:\n    y: int\n    def a(self):\n        return 1\n    def b(self):\n        return 2\n\
         def helper():\n    return Used(7)\ndef other():\n    return 0\nprint(helper().get())\n",
        "lazydefs",
    );
    let out = Capture::default();
    let rt = runtime(&out);
    let c = rt.decode_compiled(&bytes).unwrap();
    let text = run(rt, &out, &c, &SourceMap::new());
    assert_eq!(text, "7\n");
    // The unit's, `helper`'s and `Used`'s two methods' prototypes: `Used`
    // is made with all its methods; `Unused` and `other` never are.
    assert_eq!(c.prototypes_read(), 4);
    // Of the two structs, only `Used` was read.
    assert_eq!(c.structs_read(), 1);
    // The top level, `helper` and `Used.get` ran.
    assert_eq!(c.bodies_read(), (3, 7));
    assert!(c.read_all_bodies().is_ok());
}

#[test]
fn span_tables_are_read_for_an_error_and_point_where_compiling_did() {
    let src = "def ok(x):\n    return x + 1\n\ndef inner(d, k):\n    v = ok(1)\n    return d[k] + v\n\n\
               def outer():\n    return inner({'a': 1}, 'b')\n\nprint(ok(1))\nprint(outer())\n";
    let dir = std::env::temp_dir().join(format!("apsi-serial-spans-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("p.apsi");
    std::fs::write(&p, src).unwrap();
    let (a, b) = both_ways(&p).expect("runs on the core");
    assert!(a.contains("KeyError"), "{a}");
    assert!(a.contains("return d[k] + v"), "{a}");
    assert_eq!(a, b);
    // Decoded again: the error's traceback read the tables of the bodies
    // it names (the top level, `outer`, `inner`), not `ok`'s.
    let out = Capture::default();
    let rt = runtime(&out);
    let program = check::load(&p, "p.apsi", &env(&rt), Arc::new(SourceMap::new())).unwrap();
    let bytes = rt.encode_compiled(&rt.compile(&program).unwrap()).unwrap();
    let c = rt.decode_compiled(&bytes).unwrap();
    let _ = run(rt, &out, &c, &SourceMap::new());
    assert_eq!(c.bodies_read(), (4, 4));
    assert_eq!(c.span_tables_read(), 3);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_body_that_does_not_read_raises_when_called() {
    let src = "def f(x):\n    return [x, 'a', 1.5, x * 2]\nprint('before')\nprint(f(2))\n";
    let bytes = compiled_bytes(src, "damaged");
    let probe = runtime(&Capture::default());
    let mut found = 0;
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x80;
        let Ok(c) = probe.decode_compiled(&b) else { continue };
        if c.read_all_bodies().is_ok() {
            continue;
        }
        // It loads; the body that does not read raises when run, with the
        // way out named, and nothing panics.
        let out = Capture::default();
        let text = run(runtime(&out), &out, &c, &SourceMap::new());
        assert!(text.contains("<error>"), "byte {i}: {text}");
        assert!(text.contains("cannot be read"), "byte {i}: {text}");
        assert!(text.contains("apsi run --no-cache"), "byte {i}: {text}");
        found += 1;
    }
    assert!(found > 0, "no damaged body was found among the flipped bytes");
}
