//! `use plot` (docs/PLOT.md): figures of line, scatter, histogram, bar,
//! error-bar and image plots, in a grid of panels, saved as PNG or SVG.
//! Drawing is plotters' (pure Rust); text uses DejaVu Sans, embedded in
//! this crate (`fonts/`), so no system font library is needed.
//!
//! - [`figure`]: the `Figure` and `Axes` values and their methods.
//! - [`model`]: what a figure holds, and the axis ranges.
//! - [`render`]: drawing with plotters (PNG bytes, SVG text).
//! - [`input`]: tensors and lists as numbers; [`style`]: colours, markers,
//!   colour maps; [`hist`]: bins; [`history`]: `fit` histories.

pub mod figure;
pub mod hist;
pub mod history;
pub mod input;
pub mod model;
pub mod render;
pub mod style;

use apsi_core::api::{Args, Caller, Kwargs, ModuleBuilder, ModuleDescriptor, VResult, Value};

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The default figure size in pixels (matplotlib's 6.4 x 4.8 inches at 100 dpi).
pub const DEFAULT_SIZE: (i64, i64) = (640, 480);

/// `figure(width=640, height=480)`.
fn f_figure(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("figure", args, kw, 0, &["width", "height"])?;
    let w = a.int_or(0, DEFAULT_SIZE.0)?;
    let h = a.int_or(1, DEFAULT_SIZE.1)?;
    figure::new_figure("figure", w, h)
}

/// `subplots(rows=1, cols=1, width=640, height=480)`: a figure already
/// divided into a grid (panel 1 current).
fn f_subplots(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("subplots", args, kw, 0, &["rows", "cols", "width", "height"])?;
    let (rows, cols) = (a.int_or(0, 1)?, a.int_or(1, 1)?);
    let f = figure::new_figure("subplots", a.int_or(2, DEFAULT_SIZE.0)?, a.int_or(3, DEFAULT_SIZE.1)?)?;
    if let Some(h) = figure::as_handle(&f) {
        figure::set_grid("subplots", &mut h.state(), rows, cols)?;
    }
    Ok(f)
}

/// `plot_history(h, width=640, height=480)`: a new figure of a `fit` history.
fn f_plot_history(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("plot_history", args, kw, 1, &["history", "width", "height"])?;
    let f = figure::new_figure(
        "plot_history",
        a.int_or(1, DEFAULT_SIZE.0)?,
        a.int_or(2, DEFAULT_SIZE.1)?,
    )?;
    if let Some(h) = figure::as_handle(&f) {
        history::plot_history_into(c, h, a.req(0)?, &[])?;
    }
    Ok(f)
}

/// The PNG bytes of a `Figure` (or of the figure an `Axes` belongs to);
/// `None` for any other value, or when drawing fails. What a notebook
/// front end calls to show a figure inline without going through Apsi
/// (`fig._repr_png_()` is the same from Apsi).
pub fn png_of(value: &Value) -> Option<Vec<u8>> {
    let h = figure::as_handle(value)?;
    let st = h.state().clone();
    render::png(&st).ok()
}

/// The SVG document of a `Figure` (see [`png_of`]).
pub fn svg_of(value: &Value) -> Option<String> {
    let h = figure::as_handle(value)?;
    let st = h.state().clone();
    render::svg(&st).ok()
}

/// The `plot` module, ready to install into a runtime.
pub fn module() -> ModuleDescriptor {
    ModuleBuilder::new("plot", VERSION, "^2.1")
        .function("figure", f_figure)
        .function("subplots", f_subplots)
        .function("plot_history", f_plot_history)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use apsi_core::api::{Caller, NoCaller};

    #[test]
    fn the_module_makes_figures() {
        let m = module();
        assert_eq!(m.name, "plot");
        let f = NoCaller.call(m.get("figure").unwrap(), &[], &[]).unwrap();
        assert_eq!(f.type_name(), "Figure");
        let png = png_of(&f).unwrap();
        assert_eq!(&png[16..24], &[0, 0, 2, 128, 0, 0, 1, 224]);
        assert!(png_of(&Value::Int(1)).is_none());
    }
}
