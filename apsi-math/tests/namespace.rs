//! `use math` binds only `math` (LANGUAGE.md §8): its names never become
//! unqualified, so the prelude's keep their meaning and `fsum` alone is
//! unknown.

use apsi_testkit::{Failure, Program};

fn run(src: &str) -> apsi_testkit::Outcome {
    Program::new("ns", src).modules(vec![apsi_math::module()]).run()
}

#[test]
fn prelude_names_keep_their_meaning() {
    let o = run("use math\nprint(floor(2.5), math.floor(2.5), sqrt(4.0), math.pi == pi)\n");
    assert_eq!(o.rendered_error(), None);
    assert_eq!(o.out, "2 2 2.0 true\n");
}

#[test]
fn an_export_alone_is_unknown() {
    let o = run("use math\nprint(fsum([1.0]))\n");
    match &o.result {
        Err(Failure::Check(ds)) => assert!(
            ds.iter().any(|d| d.message.contains("fsum")),
            "{:?}",
            o.rendered_error()
        ),
        other => panic!("expected a check failure, found {other:?}"),
    }
}

#[test]
fn an_alias_and_a_function_level_use_work() {
    let o = run("use math as m\ndef f():\n    use math\n    return math.isqrt(17)\nprint(m.gcd(12, 18), f())\n");
    assert_eq!(o.rendered_error(), None);
    assert_eq!(o.out, "6 4\n");
}
