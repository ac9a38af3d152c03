//! Every conformance program and spec example parses without a diagnostic.

mod parser_common;

use apsi_core::diagnostic::FileId;
use apsi_core::syntax::parse;
use std::path::Path;

pub fn fixture_files() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/parser");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("fixtures folder") {
        let p = entry.expect("entry").path();
        if p.extension().and_then(|e| e.to_str()) == Some("apsi") {
            let text = std::fs::read_to_string(&p).expect("read fixture");
            out.push((p.file_name().unwrap().to_string_lossy().to_string(), text));
        }
    }
    out.sort();
    out
}

#[test]
fn all_fixtures_parse_cleanly() {
    let files = fixture_files();
    assert!(files.len() >= 30, "fixtures missing: {}", files.len());
    for (name, text) in files {
        let (m, d) = parse(FileId(0), &text);
        assert!(d.is_empty(), "{name}: {:#?}", d);
        assert!(!m.body.is_empty(), "{name}: empty body");
        // Every span lies in the text and starts on a character boundary.
        parser_common::all_spans(&m, &mut |s| {
            assert!(s.start <= s.end && s.end as usize <= text.len(), "{name}: {s:?}");
            assert!(
                text.is_char_boundary(s.start as usize) && text.is_char_boundary(s.end as usize),
                "{name}: {s:?}"
            );
        });
    }
}
