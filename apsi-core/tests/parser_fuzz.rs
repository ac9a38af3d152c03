//! Robustness: random token streams and random mutations of real programs
//! never panic, always return, and keep the diagnostics consistent; mutants
//! that parse also go through the checker and, when they pass it, the
//! compiler, which must not panic either.
//! `fuzz_parser_for_duration` (ignored) runs mutations for APSI_FUZZ_SECS
//! seconds (default 600) and prints how many inputs it ran and how many
//! reached the checker and the compiler.

mod parser_common;

use apsi_core::diagnostic::FileId;
use apsi_core::syntax::{is_incomplete, parse};
use proptest::prelude::*;
use std::path::Path;

fn corpus() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/parser");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("fixtures folder") {
        let p = entry.expect("entry").path();
        if p.extension().and_then(|e| e.to_str()) == Some("apsi") {
            out.push(std::fs::read_to_string(&p).expect("read fixture"));
        }
    }
    out.sort();
    out
}

/// Pieces random inputs are made of: every token kind, layout, and trouble.
const PIECES: &[&str] = &[
    "def",
    "return",
    "if",
    "elif",
    "else",
    "while",
    "for",
    "in",
    "break",
    "continue",
    "pass",
    "use",
    "as",
    "struct",
    "and",
    "or",
    "not",
    "is",
    "true",
    "false",
    "none",
    "lambda",
    "try",
    "except",
    "finally",
    "raise",
    "with",
    "assert",
    "global",
    "nonlocal",
    "del",
    "del x",
    "del xs[0], d['k']",
    "{1, 2}",
    "{x for x in s}",
    "\nelse:",
    "parallel",
    "yield",
    "yield from",
    "from",
    "(x for x in xs)",
    "(yield)",
    "x",
    "foo",
    "_a1",
    "héllo",
    "0",
    "42",
    "1_000",
    "0xff",
    "0o17",
    "0b1",
    "3.14",
    "1e-9",
    "1.",
    ".5",
    "2..5",
    "9223372036854775808",
    "-9223372036854775808",
    "\"s\"",
    "'t'",
    "\"\"\"tri\nple\"\"\"",
    "r\"\\d\"",
    "f\"{x}\"",
    "f\"{x:.2f}\"",
    "f\"{x=}\"",
    "f\"{{\"",
    "f\"{\"",
    "f\"}\"",
    "f'{a!r:>{w}}'",
    "\"\\u{263A}\"",
    "\"\\x4\"",
    "'unterminated",
    "\"\"\"open",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    ";",
    ".",
    "..",
    "->",
    "@",
    "=",
    "+",
    "-",
    "*",
    "**",
    "/",
    "//",
    "%",
    "&",
    "|",
    "^",
    "~",
    "<<",
    ">>",
    "|>",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "+=",
    "-=",
    "*=",
    "/=",
    "//=",
    "%=",
    "@=",
    "**=",
    "&=",
    "|=",
    "^=",
    "<<=",
    ">>=",
    "\n",
    "\n",
    "\n    ",
    "\n        ",
    "\n  ",
    "\t",
    "\\\n",
    "\\",
    "#c\n",
    " ",
    " ",
    " ",
    "!",
    "?",
    "$",
    "\r\n",
    "→",
];

/// A tiny deterministic generator (xorshift64*), so the duration fuzzer
/// needs no extra dependency and failures can be replayed from the seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Applies 1–4 random mutations (delete, insert piece, duplicate, swap,
/// insert bytes copied from elsewhere) to `src`.
fn mutate(src: &str, rng: &mut Rng) -> String {
    let mut b: Vec<u8> = src.as_bytes().to_vec();
    let n = 1 + rng.below(4);
    for _ in 0..n {
        let len = b.len();
        let i = rng.below(len + 1);
        let j = (i + rng.below(40)).min(len);
        match rng.below(6) {
            0 => {
                b.drain(i..j);
            }
            1 => {
                let p = PIECES[rng.below(PIECES.len())].as_bytes();
                b.splice(i..i, p.iter().copied());
            }
            2 => {
                let chunk: Vec<u8> = b[i..j].to_vec();
                b.splice(j..j, chunk);
            }
            3 => {
                let k = rng.below(len + 1);
                let l = (k + rng.below(40)).min(len);
                if j <= k {
                    let first: Vec<u8> = b[i..j].to_vec();
                    let second: Vec<u8> = b[k..l].to_vec();
                    b.splice(k..l, first);
                    b.splice(i..j, second);
                }
            }
            4 => {
                let k = rng.below(len + 1);
                let l = (k + rng.below(20)).min(len);
                let chunk: Vec<u8> = b[k..l].to_vec();
                b.splice(i..i, chunk);
            }
            _ => {
                if i < len {
                    const BYTES: &[u8] = b" \n\t(){}[]:=,.'\"\\#fx0";
                    b[i] = BYTES[rng.below(BYTES.len())];
                }
            }
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

/// Parses and checks the invariants: no panic, spans inside the text,
/// every diagnostic a SyntaxError, an Error node only with a diagnostic.
fn check(src: &str) {
    let (m, d) = parse(FileId(0), src);
    let len = src.len() as u32;
    for diag in &d {
        assert_eq!(diag.kind, apsi_core::error::ErrorKind::SyntaxError);
        let s = diag.primary_span().expect("a span");
        assert!(
            s.start <= s.end && s.end <= len + 1,
            "span {s:?} outside {len} for {src:?}"
        );
        assert!(!diag.message.is_empty());
    }
    parser_common::all_spans(&m, &mut |s| {
        assert!(
            s.start <= s.end && s.end <= len,
            "node span {s:?} outside {len} for {src:?}"
        );
    });
    let printed: String = m.body.iter().map(parser_common::stmt).collect();
    if printed.contains("ERROR") {
        assert!(!d.is_empty(), "an Error node without a diagnostic for {src:?}");
    }
    let _ = is_incomplete(src);
}

/// How many inputs reached the checker, and passed it (the duration fuzz
/// reports them).
static PARSED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static CHECKED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The rest of the front end on a program that parses: the checker (as the
/// REPL runs it, against the prelude's names), then, when it passes, the
/// compiler. Neither may panic; the compiler's early-return marks must stay
/// inside the frame (`ReturnParams { a, n }`: `a < nregs`, `n <= nregs`).
fn front_end(src: &str) {
    use apsi_core::check::scopes::analyze;
    use apsi_core::check::{check_source, CheckEnv, ReplScope};
    use apsi_core::code::{Code, Instr};
    use apsi_core::compile::emit::{compile_module, GlobalEnv, GlobalRef};
    use apsi_core::diagnostic::SourceMap;
    use apsi_core::value::globals::GlobalSlot;
    use std::collections::HashMap;
    use std::sync::Arc;

    struct Env(HashMap<String, Arc<GlobalSlot>>);
    impl GlobalEnv for Env {
        fn resolve(&mut self, name: &str) -> GlobalRef {
            if let Some(v) = apsi_core::builtins::prelude().get(name) {
                return GlobalRef::Const(v.clone());
            }
            GlobalRef::Slot(self.slot_for_write(name))
        }
        fn slot_for_write(&mut self, name: &str) -> Arc<GlobalSlot> {
            self.0
                .entry(name.to_string())
                .or_insert_with(|| Arc::new(GlobalSlot::new(name, false, None)))
                .clone()
        }
    }
    fn marks_in_frame(code: &Code) {
        for i in code.instrs.iter() {
            if let Instr::ReturnParams { a, n } = *i {
                assert!(
                    a < code.nregs && n <= code.nregs,
                    "ReturnParams {{ a: {a}, n: {n} }} in {code:?}"
                );
            }
        }
        for p in code.protos.iter() {
            marks_in_frame(&p.code);
        }
    }

    let sources = Arc::new(SourceMap::new());
    let file = sources.add("fuzz.apsi".to_string(), src);
    let (m, d) = parse(file, src);
    if !d.is_empty() {
        return;
    }
    let prelude = apsi_core::builtins::prelude();
    let env = CheckEnv {
        prelude: prelude.exports.iter().map(|(n, _)| n.to_string()).collect(),
        builtin_modules: Vec::new(),
        allowed: Vec::new(),
        absent_modules: Vec::new(),
        source_readers: prelude.source_readers.iter().map(|r| r.to_string()).collect(),
    };
    let mut scope = ReplScope::new(std::env::temp_dir());
    PARSED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let Ok(program) = check_source(m, file, &env, &mut scope, sources) else {
        return;
    };
    CHECKED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    for unit in &program.units {
        let table = analyze(&unit.ast, &[]);
        if let Ok(proto) = compile_module(&unit.ast, &table, &mut Env(HashMap::new()), false) {
            marks_in_frame(&proto.code);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn mutated_programs_check_and_compile_without_panic(file in 0usize..64, seed in 1u64..u64::MAX) {
        let corpus = corpus();
        let src = &corpus[file % corpus.len()];
        let mut rng = Rng(seed);
        // Light mutations, so that many mutants still parse and reach the checker.
        let m = if seed % 4 == 0 { src.clone() } else { mutate(src, &mut rng) };
        front_end(&m);
    }

    #[test]
    fn random_token_streams_never_panic(idx in proptest::collection::vec(0..PIECES.len(), 0..80)) {
        let src: String = idx.iter().map(|&i| PIECES[i]).collect::<Vec<_>>().join(" ");
        check(&src);
        let tight: String = idx.iter().map(|&i| PIECES[i]).collect();
        check(&tight);
    }

    #[test]
    fn mutated_programs_never_panic(file in 0usize..64, seed in 1u64..u64::MAX) {
        let corpus = corpus();
        let src = &corpus[file % corpus.len()];
        let mut rng = Rng(seed);
        let m = mutate(src, &mut rng);
        check(&m);
    }

    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,200}") {
        check(&s);
    }
}

#[test]
fn mutations_change_programs() {
    // The mutator really mutates (otherwise the property above proves nothing).
    let corpus = corpus();
    let mut rng = Rng(7);
    let changed = (0..50)
        .filter(|i| mutate(&corpus[i % corpus.len()], &mut rng) != corpus[i % corpus.len()])
        .count();
    assert!(changed > 40, "{changed}");
}

#[test]
#[ignore]
fn fuzz_parser_for_duration() {
    let secs: u64 = std::env::var("APSI_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    let seed: u64 = std::env::var("APSI_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9E37_79B9_7F4A_7C15);
    let corpus = corpus();
    let mut rng = Rng(seed);
    let start = std::time::Instant::now();
    let mut count: u64 = 0;
    let mut with_errors: u64 = 0;
    while start.elapsed().as_secs() < secs {
        for _ in 0..100 {
            let base = &corpus[rng.below(corpus.len())];
            // Sometimes mutate a mutant, to wander further from valid code.
            let mut src = mutate(base, &mut rng);
            if rng.below(3) == 0 {
                src = mutate(&src, &mut rng);
            }
            let result = std::panic::catch_unwind(|| {
                check(&src);
                front_end(&src);
            });
            if result.is_err() {
                let path = std::env::temp_dir().join("apsi_fuzz_failure.apsi");
                let _ = std::fs::write(&path, &src);
                panic!(
                    "parser failed after {count} inputs; input saved to {}:\n{src}",
                    path.display()
                );
            }
            if !parse(FileId(0), &src).1.is_empty() {
                with_errors += 1;
            }
            count += 1;
        }
    }
    println!(
        "fuzz_parser_for_duration: {count} inputs in {} s without a panic ({with_errors} had syntax errors; \
         {} parsed cleanly and went to the checker, {} passed it and were compiled)",
        start.elapsed().as_secs(),
        PARSED.load(std::sync::atomic::Ordering::Relaxed),
        CHECKED.load(std::sync::atomic::Ordering::Relaxed)
    );
}
