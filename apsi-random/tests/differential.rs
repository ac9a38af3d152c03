//! The differential test of LANGUAGE.md §10.11: for 1,000 seeds and mixed
//! call sequences (random, getrandbits, randrange with 1/2/3 arguments
//! including negative steps, randint, choice, shuffle, sample of lists,
//! strings and big ranges, uniform, gauss), Apsi's output and CPython's
//! (`python3` on PATH) are identical. The same program text runs in both:
//! only the first line differs (`use random` / `import random`).
//! Skipped, with a message, when python3 is absent.

use apsi_testkit::Program;
use std::io::Write;
use std::process::{Command, Stdio};

/// splitmix64: the generator of the test programs themselves.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    /// An int of a random magnitude: small, medium or near 64 bits.
    fn int(&mut self) -> i64 {
        match self.below(4) {
            0 => self.range(-20, 20),
            1 => self.range(-100_000, 100_000),
            2 => self.range(-(1 << 40), 1 << 40),
            _ => (self.next() >> 2) as i64 - (1 << 61),
        }
    }
    fn seed(&mut self) -> i64 {
        match self.below(5) {
            0 => self.range(0, 100),
            1 => self.range(-1000, 1000),
            2 => self.range(0, u32::MAX as i64),
            3 => (self.next() >> 1) as i64,
            _ => -((self.next() >> 1) as i64),
        }
    }
}

fn list_lit(g: &mut Gen, n: usize) -> String {
    let items: Vec<String> = (0..n).map(|_| g.range(-50, 50).to_string()).collect();
    format!("[{}]", items.join(", "))
}

fn str_lit(g: &mut Gen, n: usize) -> String {
    let s: String = (0..n).map(|_| (b'a' + g.below(26) as u8) as char).collect();
    format!("\"{s}\"")
}

/// One call of the mix, as a statement that prints its result.
fn call(g: &mut Gen) -> String {
    match g.below(16) {
        0 => "print(random.random())".into(),
        1 => format!("print(random.getrandbits({}))", g.range(0, 63)),
        2 => {
            let stop = match g.below(3) {
                0 => g.range(1, 10),
                1 => g.range(1, 1_000_000),
                _ => (g.next() >> 1).max(1) as i64,
            };
            format!("print(random.randrange({stop}))")
        }
        3 => {
            let a = g.int();
            let w = match g.below(3) {
                0 => g.range(1, 10),
                1 => g.range(1, 1 << 30),
                _ => g.range(1, 1 << 61),
            };
            format!("print(random.randrange({a}, {}))", a.saturating_add(w))
        }
        4 | 5 => {
            let a = g.range(-(1 << 50), 1 << 50);
            let step = match g.below(4) {
                0 => g.range(2, 10),
                1 => -g.range(1, 10),
                2 => g.range(2, 1_000_000),
                _ => -g.range(2, 1 << 40),
            };
            let n = g.range(1, 1000);
            // Non-empty: stop lies past the n-th value, within one step.
            let stop = a + step * (n - 1) + step.signum() * g.range(1, step.abs());
            format!("print(random.randrange({a}, {stop}, {step}))")
        }
        6 => {
            let a = g.int();
            let b = a.saturating_add(match g.below(2) {
                0 => g.range(0, 10),
                _ => g.range(0, 1 << 45),
            });
            format!("print(random.randint({a}, {b}))")
        }
        7 => {
            let n = g.range(1, 30) as usize;
            format!("print(random.choice({}))", list_lit(g, n))
        }
        8 => {
            let n = g.range(1, 20) as usize;
            format!("print(random.choice({}))", str_lit(g, n))
        }
        9 => format!(
            "print(random.choice(range({}, {}, {})))",
            g.range(-100, 0),
            g.range(1, 1 << 50),
            g.range(1, 7)
        ),
        10 => {
            let n = g.range(0, 40) as usize;
            format!("xs = {}\nrandom.shuffle(xs)\nprint(xs)", list_lit(g, n))
        }
        11 => {
            let n = g.range(0, 60) as usize;
            let k = g.range(0, n as i64);
            format!("print(random.sample({}, {k}))", list_lit(g, n))
        }
        12 => {
            // Big ranges: the rejection method, never materialised.
            let n = match g.below(3) {
                0 => g.range(100, 5000),
                1 => g.range(1 << 20, 1 << 40),
                _ => (g.next() >> 2) as i64,
            };
            let k = g.range(0, 40.min(n));
            format!("print(random.sample(range({n}), {k}))")
        }
        13 => {
            let n = g.range(1, 26) as usize;
            let k = g.range(0, n as i64);
            format!("print(random.sample({}, {k}))", str_lit(g, n))
        }
        14 => match g.below(3) {
            0 => format!("print(random.uniform({}, {}))", g.int(), g.int()),
            1 => format!(
                "print(random.uniform({}.5, {}.25))",
                g.range(-1000, 1000),
                g.range(-1000, 1000)
            ),
            _ => format!("print(random.uniform({}, {}.75))", g.range(-99, 99), g.range(-99, 99)),
        },
        _ => format!("print(random.gauss({}.5, {}.0))", g.range(-10, 10), g.range(0, 5)),
    }
}

/// The body for a batch of seeds: `random.seed(s)` then a mix of calls.
fn batch(g: &mut Gen, seeds: usize) -> String {
    let mut body = String::new();
    for _ in 0..seeds {
        let s = g.seed();
        body.push_str(&format!("random.seed({s})\nprint(\"seed\", {s})\n"));
        for _ in 0..g.range(8, 20) {
            body.push_str(&call(g));
            body.push('\n');
        }
    }
    body
}

fn python(src: &str) -> Option<String> {
    let mut child = Command::new("python3")
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    child.stdin.take()?.write_all(src.as_bytes()).ok()?;
    let out = child.wait_with_output().ok()?;
    assert!(
        out.status.success(),
        "python3 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn have_python() -> bool {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: python3 is not on PATH, so there is no CPython to compare with");
    }
    ok
}

fn apsi(name: &str, src: &str) -> String {
    let o = Program::new(name, src).modules(vec![apsi_random::module()]).run();
    if let Some(e) = o.rendered_error() {
        panic!("the Apsi program failed:\n{e}");
    }
    o.out
}

/// Compare line by line; on a difference, show the seed and the call.
fn compare(body: &str, ours: &str, theirs: &str) {
    if ours == theirs {
        return;
    }
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    let i = a
        .iter()
        .zip(&b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let seed = b[..i.min(b.len())]
        .iter()
        .rev()
        .find(|l| l.starts_with("seed"))
        .copied()
        .unwrap_or("?");
    let printed = body.lines().filter(|l| l.starts_with("print(")).nth(i).unwrap_or("?");
    panic!(
        "Apsi and CPython differ ({seed}) at output line {} ({printed}):\n  apsi:    {:?}\n  cpython: {:?}",
        i + 1,
        a.get(i),
        b.get(i)
    );
}

#[test]
fn same_numbers_as_cpython_for_1000_seeds() {
    if !have_python() {
        return;
    }
    let mut g = Gen(0x005e_ed0f_a951);
    let (batches, per_batch) = (10, 100);
    let mut seeds = 0;
    for b in 0..batches {
        let body = batch(&mut g, per_batch);
        let ours = apsi(&format!("diff{b}"), &format!("use random\n{body}"));
        let theirs = python(&format!("import random\n{body}")).unwrap_or_default();
        compare(&body, &ours, &theirs);
        assert!(ours.lines().count() > 10 * per_batch, "too little output");
        seeds += per_batch;
    }
    assert_eq!(seeds, 1000);
}

#[test]
fn errors_match_cpython() {
    if !have_python() {
        return;
    }
    let cases = [
        "random.randrange(0)",
        "random.randrange(-3)",
        "random.randrange(5, 5)",
        "random.randrange(7, 3)",
        "random.randrange(1, 10, 0)",
        "random.randrange(10, 1, 2)",
        "random.randrange(1, 10, -2)",
        "random.randrange(1.5)",
        "random.randrange(0, 2.5)",
        "random.randint(5, 3)",
        "random.choice([])",
        "random.choice(\"\")",
        "random.sample([1, 2], 3)",
        "random.sample([1, 2], -1)",
        "random.sample({1: 2}, 1)",
        "random.getrandbits(-1)",
        "random.shuffle((1, 2, 3))",
    ];
    let mut body = String::from("random.seed(3)\n");
    for c in cases {
        body.push_str(&format!(
            "try:\n    {c}\nexcept Exception as e:\n    print(type(e).__name__, e)\n"
        ));
    }
    body.push_str("print(random.random())\n");
    let theirs = python(&format!("import random\n{body}")).unwrap_or_default();
    // Apsi spells the error's message `e.message` and its kind `type(e)`.
    let ours_body = body.replace(
        "except Exception as e:\n    print(type(e).__name__, e)",
        "except Error as e:\n    print(e.kind, e.message)",
    );
    let ours = apsi("errors", &format!("use random\n{ours_body}"));
    compare(&body, &ours, &theirs);
    assert_eq!(ours.lines().count(), cases.len() + 1, "{ours}");
}
