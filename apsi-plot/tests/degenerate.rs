//! Inputs that could trip the plotting library (all-equal values, NaN and
//! inf, log axes of non-positive values, tiny figures, huge values) draw
//! or fail with an Apsi error; none may panic. A panic hook counts panics
//! (even ones the renderer's guard would catch), so this file fails on any.

mod common;
use common::*;

use apsi_core::api::{ErrorKind, Value};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Draws something into a figure.
type Build = Box<dyn Fn(&Value)>;

static PANICS: AtomicUsize = AtomicUsize::new(0);

fn count_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            prev(info);
        }));
    });
}

fn draws(fig: &Value) {
    let png = apsi_plot::png_of(fig).expect("draws as PNG");
    assert_eq!(&png[1..4], b"PNG");
    let svg = apsi_plot::svg_of(fig).expect("draws as SVG");
    roxmltree::Document::parse(&svg).expect("SVG is XML");
}

#[test]
fn awkward_data_draws_without_panicking() {
    count_panics();
    let nan = f64::NAN;
    let inf = f64::INFINITY;
    let cases: Vec<(&str, Build)> = vec![
        (
            "all equal",
            Box::new(|f| {
                ok(f, "plot", &[nums(&[2.0, 2.0, 2.0]), nums(&[5.0, 5.0, 5.0])], &[]);
            }),
        ),
        (
            "one point",
            Box::new(|f| {
                ok(f, "scatter", &[nums(&[0.0]), nums(&[0.0])], &[]);
            }),
        ),
        (
            "nan and inf",
            Box::new(move |f| {
                ok(
                    f,
                    "plot",
                    &[nums(&[1.0, 2.0, 3.0, 4.0]), nums(&[1.0, nan, inf, 2.0])],
                    &[],
                );
                ok(f, "scatter", &[nums(&[nan]), nums(&[nan])], &[]);
            }),
        ),
        (
            "only nan",
            Box::new(move |f| {
                ok(f, "plot", &[nums(&[nan, nan])], &[("label", s("x"))]);
                ok(f, "legend", &[], &[]);
            }),
        ),
        (
            "log of non-positive",
            Box::new(|f| {
                ok(f, "plot", &[nums(&[-1.0, 0.0, 1.0]), nums(&[0.0, -5.0, 0.0])], &[]);
                ok(f, "xscale", &[s("log")], &[]);
                ok(f, "yscale", &[s("log")], &[]);
            }),
        ),
        (
            "log bars",
            Box::new(|f| {
                ok(f, "hist", &[nums(&[1.0, 1.0, 2.0, 3.0, 3.0, 3.0])], &[]);
                ok(f, "yscale", &[s("log")], &[]);
            }),
        ),
        (
            "huge values",
            Box::new(|f| {
                ok(
                    f,
                    "plot",
                    &[nums(&[-1.7e308, 0.0, 1.7e308]), nums(&[1e299, -1e299, 1e-300])],
                    &[],
                );
            }),
        ),
        (
            "constant image",
            Box::new(|f| {
                ok(f, "imshow", &[Value::list(vec![nums(&[3.0])])], &[]);
            }),
        ),
        (
            "image of nan",
            Box::new(move |f| {
                ok(
                    f,
                    "imshow",
                    &[Value::list(vec![nums(&[nan, inf]), nums(&[-inf, 1.0])])],
                    &[],
                );
            }),
        ),
        (
            "hist of one value",
            Box::new(|f| {
                ok(f, "hist", &[nums(&[4.0, 4.0])], &[("bins", Value::Int(1))]);
            }),
        ),
        (
            "zero-height bars",
            Box::new(|f| {
                ok(f, "bar", &[nums(&[0.0, 1.0]), nums(&[0.0, 0.0])], &[]);
            }),
        ),
        (
            "long labels",
            Box::new(|f| {
                ok(
                    f,
                    "plot",
                    &[nums(&[1e-9, 2e-9]), nums(&[123456789.0, 123456790.0])],
                    &[],
                );
                ok(f, "title", &[s(&"a very long title ".repeat(20))], &[]);
                ok(f, "xlabel", &[s("x")], &[]);
                ok(f, "ylabel", &[s("y")], &[]);
            }),
        ),
        ("empty", Box::new(|_| {})),
    ];
    for (name, build) in &cases {
        for (w, h) in [(640, 480), (16, 16), (40, 300), (300, 40)] {
            let f = figure(w, h);
            build(&f);
            // A tiny figure may not have room to draw (an error), but it
            // must not panic; a normal one must draw.
            let png = apsi_plot::png_of(&f);
            let svg = apsi_plot::svg_of(&f);
            if (w, h) == (640, 480) {
                assert!(png.is_some() && svg.is_some(), "{name}: does not draw");
                draws(&f);
            }
            assert_eq!(PANICS.load(Ordering::SeqCst), 0, "{name} at {w}x{h} panicked");
        }
    }
}

#[test]
fn errors_are_apsi_errors() {
    let f = figure(100, 100);
    let e = call(&f, "plot", &[nums(&[])], &[]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::ValueError);
    assert_eq!(e.message, "plot() argument 'x' is empty: there is nothing to plot");
    let e = call(&f, "hist", &[nums(&[f64::NAN])], &[]).unwrap_err();
    assert_eq!(e.message, "hist(): x has no finite values to count");
    let e = call(&f, "scatter", &[s("abc"), nums(&[1.0])], &[]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::TypeError);
    assert_eq!(
        e.message,
        "scatter() argument 'x' must be a 1-D tensor or a list of numbers, not str"
    );
    let e = call(&f, "plot", &[nums(&[1.0])], &[("color", s("chartreuse-ish"))]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::ValueError);
    let e = call(&f, "imshow", &[nums(&[1.0])], &[("cmap", s("jet"))]).unwrap_err();
    assert!(
        e.message.contains("must be a 2-D tensor or a list of lists"),
        "{}",
        e.message
    );
    let e = call(&f, "save", &[s("/no/such/dir/x.png")], &[]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::IOError);
    assert!(
        e.message.starts_with("save(): cannot write \"/no/such/dir/x.png\""),
        "{}",
        e.message
    );
    let e = call(&f, "save", &[s("noext")], &[]).unwrap_err();
    assert_eq!(
        e.message,
        "save(): the file name must end in .png or .svg, not \"noext\" (no extension)"
    );
    let e = call(&f, "plot_history", &[Value::Int(3)], &[]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::TypeError);
    let e = call(&f, "hist", &[nums(&[1.0])], &[("bins", Value::Int(0))]).unwrap_err();
    assert_eq!(e.message, "hist(): bins must be between 1 and 10000, not 0");
}

#[test]
fn save_writes_png_and_svg() {
    let dir = std::env::temp_dir().join(format!("apsi-plot-save-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = figure(320, 200);
    ok(&f, "plot", &[nums(&[1.0, 3.0, 2.0])], &[]);
    let png = dir.join("a.png");
    let svg = dir.join("a.SVG");
    ok(&f, "save", &[s(png.to_str().unwrap())], &[]);
    ok(&f, "save", &[s(svg.to_str().unwrap())], &[]);
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(&bytes[16..24], &[0, 0, 1, 64, 0, 0, 0, 200]);
    let text = std::fs::read_to_string(&svg).unwrap();
    roxmltree::Document::parse(&text).unwrap();
    let repr = ok(&f, "_repr_png_", &[], &[]);
    match repr {
        Value::Bytes(b) => assert_eq!(&b.0[..], &bytes[..]),
        other => panic!("_repr_png_ gave {}", other.type_name()),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
