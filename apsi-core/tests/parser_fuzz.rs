//! Robustness: random token streams and random mutations of real programs
//! never panic, always return, and keep the diagnostics consistent.
//! `fuzz_parser_for_duration` (ignored) runs mutations for APSI_FUZZ_SECS
//! seconds (default 600) and prints how many inputs it ran.

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
    "parallel",
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

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
            let result = std::panic::catch_unwind(|| check(&src));
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
        "fuzz_parser_for_duration: {count} inputs in {} s without a panic ({with_errors} had syntax errors)",
        start.elapsed().as_secs()
    );
}
