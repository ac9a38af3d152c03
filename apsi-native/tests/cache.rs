//! One compiled version per signature: a second call compiles nothing.
//! (Its own test binary, so no other test compiles concurrently.)

mod common;

#[test]
fn second_call_of_a_signature_does_not_compile() {
    let before = apsi_native::func::total_compiles();
    let (out, err) = common::run_src(
        "cache",
        "@native\ndef f(x):\n    return x + 1\n\nprint(f(1), f(2), f(3), f(1.5), f(2.5))\n",
    );
    assert_eq!(err, None);
    assert_eq!(out, "2 3 4 2.5 3.5\n");
    assert_eq!(apsi_native::func::total_compiles() - before, 2);
}
