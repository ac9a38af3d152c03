//! Rendering tests: each plot type drawn to PNG and compared with the
//! reference image in `tests/reference/` within a tolerance (mean channel
//! difference and share of clearly different pixels), and its SVG parsed
//! as XML. `APSI_PLOT_BLESS=1 cargo test -p apsi-plot --test rendering`
//! rewrites the references (look at every one before committing it).

mod common;
use common::*;

use apsi_core::api::Value;
use std::path::PathBuf;

/// Mean absolute difference per channel (0..255) allowed.
const MEAN_TOLERANCE: f64 = 1.5;
/// Share of pixels allowed to differ by more than 64 in some channel.
const PIXEL_TOLERANCE: f64 = 0.005;

fn reference(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/reference")
        .join(format!("{name}.png"))
}

fn decode(bytes: &[u8]) -> image::RgbImage {
    image::load_from_memory_with_format(bytes, image::ImageFormat::Png)
        .expect("a PNG")
        .to_rgb8()
}

/// (mean channel difference, share of pixels differing by more than 64).
fn difference(a: &image::RgbImage, b: &image::RgbImage) -> (f64, f64) {
    let mut sum = 0u64;
    let mut far = 0usize;
    for (p, q) in a.pixels().zip(b.pixels()) {
        let d = (0..3).map(|i| (i32::from(p[i]) - i32::from(q[i])).unsigned_abs());
        let (s, m) = d.fold((0u32, 0u32), |(s, m), x| (s + x, m.max(x)));
        sum += u64::from(s);
        if m > 64 {
            far += 1;
        }
    }
    let n = (a.width() * a.height()) as f64;
    (sum as f64 / (n * 3.0), far as f64 / n)
}

/// Compares `fig`'s PNG with the reference `name` (or writes it when
/// blessing), and checks its SVG is well-formed XML of the right size.
fn check(name: &str, fig: &Value) {
    let png = apsi_plot::png_of(fig).expect("the figure draws");
    let got = decode(&png);
    let path = reference(name);
    if std::env::var_os("APSI_PLOT_BLESS").is_some() {
        std::fs::write(&path, &png).unwrap();
    }
    let want = decode(
        &std::fs::read(&path)
            .unwrap_or_else(|_| panic!("no reference image {} (APSI_PLOT_BLESS=1 writes it)", path.display())),
    );
    assert_eq!(got.dimensions(), want.dimensions(), "{name}: size");
    let (mean, share) = difference(&got, &want);
    assert!(
        mean <= MEAN_TOLERANCE && share <= PIXEL_TOLERANCE,
        "{name}: differs from its reference: mean channel difference {mean:.3} (at most {MEAN_TOLERANCE}), \
         {:.3}% of pixels far off (at most {}%)",
        share * 100.0,
        PIXEL_TOLERANCE * 100.0
    );
    let svg = apsi_plot::svg_of(fig).expect("the figure draws as SVG");
    let doc = roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("{name}: the SVG is not XML: {e}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(root.attribute("width"), Some(got.width().to_string().as_str()));
    assert_eq!(root.attribute("height"), Some(got.height().to_string().as_str()));
    assert!(
        doc.descendants().any(|n| n.has_tag_name("text")),
        "{name}: the SVG has no text"
    );
}

#[test]
fn the_comparison_can_fail() {
    let a = figure(200, 150);
    let b = figure(200, 150);
    ok(&b, "plot", &[nums(&[0.0, 1.0, 0.0])], &[]);
    let (mean, share) = difference(
        &decode(&apsi_plot::png_of(&a).unwrap()),
        &decode(&apsi_plot::png_of(&b).unwrap()),
    );
    assert!(
        mean > MEAN_TOLERANCE || share > PIXEL_TOLERANCE,
        "a line is a visible difference ({mean}, {share})"
    );
    let (mean, share) = difference(
        &decode(&apsi_plot::png_of(&a).unwrap()),
        &decode(&apsi_plot::png_of(&a).unwrap()),
    );
    assert_eq!((mean, share), (0.0, 0.0));
}

#[test]
#[allow(clippy::approx_constant)] // 6.28, as the issue's example has it
fn the_issue_example() {
    // fig = figure(640, 480); xs = linspace(0.0, 6.28, 100)
    // fig.plot(xs, sin(xs), label="sin"); fig.title("sine")
    let fig = figure(640, 480);
    let xs = linspace(0.0, 6.28, 100);
    let ys: Vec<f64> = xs.iter().map(|x| x.sin()).collect();
    ok(&fig, "plot", &[nums(&xs), nums(&ys)], &[("label", s("sin"))]);
    ok(&fig, "title", &[s("sine")], &[]);
    let png = apsi_plot::png_of(&fig).unwrap();
    assert_eq!(decode(&png).dimensions(), (640, 480));
    check("sine", &fig);
}

#[test]
fn lines_with_legend_title_and_labels() {
    let fig = figure(640, 480);
    let xs = linspace(0.0, std::f64::consts::TAU, 60);
    let f = |g: fn(f64) -> f64| nums(&xs.iter().map(|x| g(*x)).collect::<Vec<_>>());
    ok(&fig, "plot", &[nums(&xs), f(f64::sin)], &[("label", s("sin(x)"))]);
    ok(
        &fig,
        "plot",
        &[nums(&xs), f(f64::cos)],
        &[("label", s("cos(x)")), ("linestyle", s("--"))],
    );
    ok(
        &fig,
        "plot",
        &[nums(&xs), f(|x| 0.5 * (x / 2.0).sin())],
        &[("label", s("dotted")), ("linestyle", s(":")), ("color", s("k"))],
    );
    let some: Vec<f64> = xs.iter().step_by(6).copied().collect();
    ok(
        &fig,
        "plot",
        &[
            nums(&some),
            nums(&some.iter().map(|x| -0.5 * (x / 2.0).sin()).collect::<Vec<_>>()),
        ],
        &[("label", s("markers only")), ("linestyle", s("")), ("marker", s("s"))],
    );
    ok(&fig, "title", &[s("Trigonometry")], &[]);
    ok(&fig, "xlabel", &[s("angle (radians)")], &[]);
    ok(&fig, "ylabel", &[s("value")], &[]);
    ok(&fig, "legend", &[], &[("loc", s("lower left"))]);
    check("lines", &fig);
}

#[test]
fn scatter() {
    let fig = figure(480, 400);
    let mut r = Lcg(7);
    for (i, (marker, label)) in [("o", "circles"), ("^", "triangles"), ("s", "squares")]
        .iter()
        .enumerate()
    {
        let x: Vec<f64> = (0..40).map(|_| r.normal() + 3.0 * i as f64).collect();
        let y: Vec<f64> = (0..40).map(|_| r.normal() + i as f64).collect();
        ok(
            &fig,
            "scatter",
            &[nums(&x), nums(&y)],
            &[("marker", s(marker)), ("label", s(label))],
        );
    }
    ok(&fig, "title", &[s("Three clusters")], &[]);
    ok(&fig, "legend", &[], &[]);
    check("scatter", &fig);
}

#[test]
fn histogram() {
    let fig = figure(480, 360);
    let mut r = Lcg(11);
    let a: Vec<f64> = (0..2000).map(|_| r.normal()).collect();
    let b: Vec<f64> = (0..2000).map(|_| 0.7 * r.normal() + 2.0).collect();
    ok(
        &fig,
        "hist",
        &[nums(&a)],
        &[("bins", Value::Int(30)), ("label", s("N(0, 1)"))],
    );
    ok(
        &fig,
        "hist",
        &[nums(&b)],
        &[("bins", Value::Int(30)), ("label", s("N(2, 0.7)"))],
    );
    ok(&fig, "title", &[s("Histograms")], &[]);
    ok(&fig, "xlabel", &[s("x")], &[]);
    ok(&fig, "ylabel", &[s("count")], &[]);
    ok(&fig, "legend", &[], &[]);
    check("hist", &fig);
}

#[test]
fn bars_by_category() {
    let fig = figure(480, 360);
    let cats = Value::list(["apples", "pears", "plums", "figs"].iter().map(|c| s(c)).collect());
    ok(
        &fig,
        "bar",
        &[cats, nums(&[12.0, 7.5, 3.0, 9.0])],
        &[("label", s("2025"))],
    );
    ok(&fig, "title", &[s("Fruit sold")], &[]);
    ok(&fig, "ylabel", &[s("tonnes")], &[]);
    ok(&fig, "legend", &[], &[]);
    check("bar", &fig);
}

#[test]
fn error_bars() {
    let fig = figure(480, 360);
    let x: Vec<f64> = (1..=8).map(f64::from).collect();
    let y: Vec<f64> = x.iter().map(|v| 2.0 + 0.6 * v + (v * 1.7).sin()).collect();
    let e: Vec<f64> = x.iter().map(|v| 0.3 + 0.1 * v).collect();
    ok(
        &fig,
        "errorbar",
        &[nums(&x), nums(&y)],
        &[("yerr", nums(&e)), ("label", s("measured")), ("linestyle", s(""))],
    );
    ok(
        &fig,
        "plot",
        &[nums(&x), nums(&x.iter().map(|v| 2.0 + 0.6 * v).collect::<Vec<_>>())],
        &[("label", s("model"))],
    );
    ok(
        &fig,
        "errorbar",
        &[nums(&[4.5]), nums(&[1.0])],
        &[
            ("xerr", Value::Float(1.5)),
            ("yerr", Value::Float(0.5)),
            ("color", s("red")),
        ],
    );
    ok(&fig, "title", &[s("Error bars")], &[]);
    ok(&fig, "legend", &[], &[("loc", s("upper left"))]);
    check("errorbar", &fig);
}

#[test]
fn image_with_colour_bar() {
    let fig = figure(520, 400);
    let (rows, cols) = (24usize, 36usize);
    let z: Vec<Value> = (0..rows)
        .map(|r| {
            nums(
                &(0..cols)
                    .map(|c| (r as f64 / 4.0).sin() * (c as f64 / 6.0).cos() + r as f64 / 24.0)
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    ok(&fig, "imshow", &[Value::list(z)], &[]);
    ok(&fig, "title", &[s("imshow, viridis")], &[]);
    ok(&fig, "xlabel", &[s("column")], &[]);
    ok(&fig, "ylabel", &[s("row")], &[]);
    check("imshow", &fig);
}

#[test]
fn a_grid_of_subplots() {
    let fig = figure(800, 600);
    ok(&fig, "suptitle", &[s("Four panels")], &[]);
    let xs = linspace(0.0, 10.0, 50);
    let a = ok(&fig, "subplot", &[Value::Int(2), Value::Int(2), Value::Int(1)], &[]);
    ok(
        &a,
        "plot",
        &[nums(&xs), nums(&xs.iter().map(|x| x.sqrt()).collect::<Vec<_>>())],
        &[],
    );
    ok(&a, "title", &[s("sqrt")], &[]);
    let b = ok(&fig, "subplot", &[Value::Int(2), Value::Int(2), Value::Int(2)], &[]);
    let mut r = Lcg(3);
    let (x, y): (Vec<f64>, Vec<f64>) = (0..60).map(|_| (r.next(), r.next())).unzip();
    ok(&b, "scatter", &[nums(&x), nums(&y)], &[("color", s("C1"))]);
    ok(&b, "title", &[s("uniform")], &[]);
    ok(&fig, "subplot", &[Value::Int(2), Value::Int(2), Value::Int(3)], &[]);
    let n: Vec<f64> = (0..500).map(|_| r.normal()).collect();
    ok(
        &fig,
        "hist",
        &[nums(&n)],
        &[("bins", Value::Int(15)), ("color", s("C2"))],
    );
    ok(&fig, "title", &[s("normal")], &[]);
    let d = ok(&fig, "subplot", &[Value::Int(2), Value::Int(2), Value::Int(4)], &[]);
    ok(
        &d,
        "bar",
        &[nums(&[1.0, 2.0, 3.0]), nums(&[3.0, 1.0, 2.0])],
        &[("color", s("C3"))],
    );
    ok(&d, "title", &[s("bars")], &[]);
    check("subplots", &fig);
}

#[test]
fn log_axes() {
    let fig = figure(800, 360);
    let xs = linspace(0.0, 10.0, 50);
    let a = ok(&fig, "subplot", &[Value::Int(1), Value::Int(2), Value::Int(1)], &[]);
    ok(
        &a,
        "plot",
        &[nums(&xs), nums(&xs.iter().map(|x| x.exp()).collect::<Vec<_>>())],
        &[("label", s("exp(x)"))],
    );
    ok(&a, "yscale", &[s("log")], &[]);
    ok(&a, "title", &[s("semilog y")], &[]);
    ok(&a, "legend", &[], &[("loc", s("upper left"))]);
    let b = ok(&fig, "subplot", &[Value::Int(1), Value::Int(2), Value::Int(2)], &[]);
    let ps: Vec<f64> = (0..30).map(|i| 10f64.powf(i as f64 / 10.0)).collect();
    ok(
        &b,
        "plot",
        &[nums(&ps), nums(&ps.iter().map(|x| x * x).collect::<Vec<_>>())],
        &[("marker", s("o"))],
    );
    ok(&b, "xscale", &[s("log")], &[]);
    ok(&b, "yscale", &[s("log")], &[]);
    ok(&b, "title", &[s("log-log: x^2")], &[]);
    ok(&b, "xlabel", &[s("x")], &[]);
    check("log", &fig);
}

#[test]
fn a_training_history() {
    // What `use layers`' fit returns, read by field name: here a dict with
    // the same fields (the e2e test feeds a real History).
    let loss: Vec<f64> = (1..=12).map(|e| 1.0 / f64::from(e).sqrt()).collect();
    let val: Vec<f64> = loss
        .iter()
        .enumerate()
        .map(|(i, l)| l + 0.05 + 0.01 * i as f64)
        .collect();
    let acc: Vec<f64> = (1..=12).map(|e| 1.0 - 0.5 / f64::from(e)).collect();
    let d = apsi_core::api::DictMap::new();
    let h = Value::dict(d);
    if let Value::Dict(o) = &h {
        let mut w = o.map.write();
        let metrics = Value::dict(apsi_core::api::DictMap::new());
        if let Value::Dict(m) = &metrics {
            m.map
                .write()
                .insert(apsi_core::api::hash_key(&s("accuracy")).unwrap(), nums(&acc));
        }
        for (k, v) in [("loss", nums(&loss)), ("val_loss", nums(&val)), ("metrics", metrics)] {
            w.insert(apsi_core::api::hash_key(&s(k)).unwrap(), v);
        }
    }
    let fig = module_fn("plot_history", &[h], &[]).unwrap();
    check("history", &fig);
}
