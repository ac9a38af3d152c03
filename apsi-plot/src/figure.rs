//! The `Figure` value and its methods, and `Axes` (one panel of a figure's
//! grid, from `fig.subplot(rows, cols, index)`): the same drawing methods,
//! aimed at that panel. A figure's own drawing methods draw into its
//! current panel (the last one `subplot` selected; the only one at first).

use crate::input::{floats, matrix, number, same_len, strings, wrong};
use crate::model::{FigState, Loc, Panel, Series};
use crate::style::{self, LineStyle, Marker};
use apsi_core::api::{
    err, method_of, native, object, ApsiObject, Args, Caller, ErrorKind, Kwargs, NativeFnPtr, VResult, Value,
};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// A figure, or one panel of it (`panel` is `Some`).
pub struct Handle {
    pub fig: Arc<Mutex<FigState>>,
    pub panel: Option<usize>,
}

impl Handle {
    pub fn state(&self) -> MutexGuard<'_, FigState> {
        self.fig.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub const MIN_SIDE: i64 = 16;
pub const MAX_SIDE: i64 = 8192;

/// A new figure value of `width` x `height` pixels (checked).
pub fn new_figure(who: &str, width: i64, height: i64) -> VResult<Value> {
    for (name, v) in [("width", width), ("height", height)] {
        if !(MIN_SIDE..=MAX_SIDE).contains(&v) {
            return Err(err(
                ErrorKind::ValueError,
                format!("{who}(): {name} must be between {MIN_SIDE} and {MAX_SIDE} pixels, not {v}"),
            ));
        }
    }
    Ok(object(Handle {
        fig: Arc::new(Mutex::new(FigState::new(width as u32, height as u32))),
        panel: None,
    }))
}

/// The figure or axes a value is, if it is one.
pub fn as_handle(v: &Value) -> Option<&Handle> {
    match v {
        Value::Object(o) => o.0.as_any().downcast_ref::<Handle>(),
        _ => None,
    }
}

fn this<'a>(who: &str, args: &'a [Value]) -> VResult<(&'a Handle, &'a [Value])> {
    match args.split_first() {
        Some((h, rest)) => match as_handle(h) {
            Some(h) => Ok((h, rest)),
            None => Err(err(
                ErrorKind::TypeError,
                format!("{who}() needs a Figure or Axes, not {}", h.type_name()),
            )),
        },
        None => Err(err(
            ErrorKind::TypeError,
            format!("{who}() was called without its Figure"),
        )),
    }
}

/// Runs `f` on the panel a method of `h` draws into.
fn with_panel<R>(h: &Handle, f: impl FnOnce(&mut Panel) -> R) -> R {
    let mut st = h.state();
    let i = h.panel.unwrap_or(st.current).min(st.panels.len() - 1);
    f(&mut st.panels[i])
}

fn label_arg(who: &str, v: Option<&Value>) -> VResult<Option<String>> {
    match v {
        None | Some(Value::None) => Ok(None),
        Some(Value::Str(s)) => Ok(Some(s.as_str().to_string())),
        Some(other) => Err(wrong(who, "label", "a str", other)),
    }
}

fn text_arg(a: &Args, i: usize) -> VResult<String> {
    match a.req(i)? {
        Value::Str(s) => Ok(s.as_str().to_string()),
        other => Err(a.wrong(i, "a str", other)),
    }
}

fn color_or_next(who: &str, v: Option<&Value>, p: &mut Panel) -> VResult<style::Rgb> {
    match v {
        None | Some(Value::None) => Ok(p.next_color()),
        Some(v) => style::color(who, v),
    }
}

fn positive(a: &Args, i: usize, default: f64) -> VResult<f64> {
    match a.float_opt(i)? {
        None => Ok(default),
        Some(v) if v.is_finite() && v > 0.0 => Ok(v),
        Some(v) => Err(err(
            ErrorKind::ValueError,
            format!("{}(): {} must be a positive number, not {v}", a.name, a.param(i)),
        )),
    }
}

/// `fig.plot(x, y=none, label=, color=, linewidth=1.5, linestyle="-", marker=none)`.
/// One argument plots it against 0, 1, 2, …; a `fit` History plots its
/// losses (`plot_history`).
fn m_plot(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (h, rest) = this("plot", args)?;
    if let Some(first) = rest.first() {
        if crate::history::looks_like_history(first) && rest.len() == 1 {
            return crate::history::plot_history_into(c, h, first, kw);
        }
    }
    let a = Args::new(
        "plot",
        rest,
        kw,
        1,
        &["x", "y", "label", "color", "linewidth", "linestyle", "marker"],
    )?;
    let (x, y) = match a.opt(1) {
        Some(yv) => {
            let x = floats("plot", "x", a.req(0)?)?;
            let y = floats("plot", "y", yv)?;
            same_len("plot", &x, &y, "x", "y")?;
            (x, y)
        }
        None => {
            let y = floats("plot", "x", a.req(0)?)?;
            ((0..y.len()).map(|i| i as f64).collect(), y)
        }
    };
    let label = label_arg("plot", a.opt(2))?;
    let lw = positive(&a, 4, 1.5)?;
    let style = style::linestyle("plot", a.get(5), LineStyle::Solid)?;
    let marker = style::marker("plot", a.get(6))?;
    let width = line_px(lw);
    with_panel(h, |p| {
        let color = color_or_next("plot", a.opt(3), p)?;
        p.series.push(Series::Line {
            x,
            y,
            color,
            width,
            style,
            marker,
            label,
        });
        Ok(Value::None)
    })
}

/// A line width in points as whole pixels (1.5 pt → 2 px, as at 100 dpi).
fn line_px(lw: f64) -> u32 {
    (lw * 100.0 / 72.0).round().clamp(1.0, 50.0) as u32
}

/// `fig.scatter(x, y, s=20, color=, label=, marker="o")`: `s` is the
/// marker's area in points², as matplotlib's.
fn m_scatter(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (h, rest) = this("scatter", args)?;
    let a = Args::new("scatter", rest, kw, 2, &["x", "y", "s", "color", "label", "marker"])?;
    let x = floats("scatter", "x", a.req(0)?)?;
    let y = floats("scatter", "y", a.req(1)?)?;
    same_len("scatter", &x, &y, "x", "y")?;
    let s = positive(&a, 2, 20.0)?;
    let radius = (s.sqrt() * 100.0 / 72.0 / 2.0).round().clamp(1.0, 100.0) as u32;
    let label = label_arg("scatter", a.opt(4))?;
    let marker = style::marker("scatter", a.get(5))?.unwrap_or(Marker::Circle);
    with_panel(h, |p| {
        let color = color_or_next("scatter", a.opt(3), p)?;
        p.series.push(Series::Scatter {
            x,
            y,
            color,
            radius,
            marker,
            label,
        });
        Ok(Value::None)
    })
}

/// `fig.hist(x, bins=10, range=none, density=false, color=, label=)`.
fn m_hist(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (h, rest) = this("hist", args)?;
    let a = Args::new(
        "hist",
        rest,
        kw,
        1,
        &["x", "bins", "range", "density", "color", "label"],
    )?;
    let x: Vec<f64> = floats("hist", "x", a.req(0)?)?
        .into_iter()
        .filter(|v| v.is_finite())
        .collect();
    if x.is_empty() {
        return Err(err(ErrorKind::ValueError, "hist(): x has no finite values to count"));
    }
    let range = match a.opt(2) {
        None => None,
        Some(v) => {
            let r = floats("hist", "range", v)?;
            if r.len() != 2 || !(r[0].is_finite() && r[1].is_finite() && r[0] < r[1]) {
                return Err(err(
                    ErrorKind::ValueError,
                    "hist(): range must be (lo, hi) with finite lo < hi",
                ));
            }
            Some((r[0], r[1]))
        }
    };
    let edges = match a.opt(1) {
        None => crate::hist::even_edges(&x, 10, range),
        Some(Value::Int(n)) => {
            if !(1..=10_000).contains(n) {
                return Err(err(
                    ErrorKind::ValueError,
                    format!("hist(): bins must be between 1 and 10000, not {n}"),
                ));
            }
            crate::hist::even_edges(&x, *n as usize, range)
        }
        Some(v @ (Value::List(_) | Value::Tuple(_))) => {
            let e = floats("hist", "bins", v)?;
            if e.len() < 2 || e.iter().any(|v| !v.is_finite()) || e.windows(2).any(|w| w[0] >= w[1]) {
                return Err(err(
                    ErrorKind::ValueError,
                    "hist(): bins given as edges must be at least 2 finite, increasing numbers",
                ));
            }
            e
        }
        Some(other) => return Err(a.wrong(1, "an int or a list of bin edges", other)),
    };
    let density = a.flag(3)?;
    let label = label_arg("hist", a.opt(5))?;
    let top = crate::hist::counts(&x, &edges, density);
    with_panel(h, |p| {
        let color = color_or_next("hist", a.opt(4), p)?;
        let n = top.len();
        p.series.push(Series::Bars {
            left: edges[..n].to_vec(),
            right: edges[1..].to_vec(),
            bottom: vec![0.0; n],
            top,
            color,
            label,
        });
        Ok(Value::None)
    })
}

/// A number or a sequence of `n` numbers.
fn scalar_or_seq(who: &str, param: &str, v: &Value, n: usize) -> VResult<Vec<f64>> {
    if matches!(v, Value::Int(_) | Value::Float(_) | Value::Bool(_)) {
        if let Some(f) = number(v) {
            return Ok(vec![f; n]);
        }
    }
    let xs = floats(who, param, v)?;
    if xs.len() != n {
        return Err(err(
            ErrorKind::ShapeError,
            format!("{who}(): '{param}' has {} values but there are {n} points", xs.len()),
        ));
    }
    Ok(xs)
}

/// `fig.bar(x, height, width=0.8, bottom=0, color=, label=)`; `x` may be
/// a list of category names.
fn m_bar(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (h, rest) = this("bar", args)?;
    let a = Args::new(
        "bar",
        rest,
        kw,
        2,
        &["x", "height", "width", "bottom", "color", "label"],
    )?;
    let xv = a.req(0)?;
    let names = strings(xv);
    let x = match &names {
        Some(n) => (0..n.len()).map(|i| i as f64).collect(),
        None => floats("bar", "x", xv)?,
    };
    let height = scalar_or_seq("bar", "height", a.req(1)?, x.len())?;
    let width = positive(&a, 2, 0.8)?;
    let bottom = match a.opt(3) {
        None => vec![0.0; x.len()],
        Some(v) => scalar_or_seq("bar", "bottom", v, x.len())?,
    };
    let label = label_arg("bar", a.opt(5))?;
    with_panel(h, |p| {
        let color = color_or_next("bar", a.opt(4), p)?;
        if names.is_some() {
            p.categories = names;
        }
        p.series.push(Series::Bars {
            left: x.iter().map(|v| v - width / 2.0).collect(),
            right: x.iter().map(|v| v + width / 2.0).collect(),
            top: bottom.iter().zip(&height).map(|(b, h)| b + h).collect(),
            bottom,
            color,
            label,
        });
        Ok(Value::None)
    })
}

/// Error sizes: a number, `n` numbers, or `[lower, upper]` (two rows of
/// `n`); none may be negative. Returns (lower, upper).
fn errors(who: &str, param: &str, v: &Value, n: usize) -> VResult<(Vec<f64>, Vec<f64>)> {
    let two_rows = match v {
        Value::List(_) | Value::Tuple(_) => matrix(who, param, v).ok().filter(|(r, c, _)| *r == 2 && *c == n),
        other => apsi_core::api::tensor::as_tensor(other)
            .filter(|t| t.ndim() == 2)
            .and_then(|_| matrix(who, param, other).ok())
            .filter(|(r, c, _)| *r == 2 && *c == n),
    };
    let (lo, hi) = match two_rows {
        Some((_, _, d)) => (d[..n].to_vec(), d[n..].to_vec()),
        None => {
            let e = scalar_or_seq(who, param, v, n)?;
            (e.clone(), e)
        }
    };
    if lo.iter().chain(&hi).any(|e| *e < 0.0) {
        return Err(err(
            ErrorKind::ValueError,
            format!("{who}(): '{param}' must not contain negative values"),
        ));
    }
    Ok((lo, hi))
}

/// `fig.errorbar(x, y, yerr=none, xerr=none, color=, label=, linestyle="-", capsize=3)`.
fn m_errorbar(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (h, rest) = this("errorbar", args)?;
    let a = Args::new(
        "errorbar",
        rest,
        kw,
        2,
        &["x", "y", "yerr", "xerr", "color", "label", "linestyle"],
    )?;
    let x = floats("errorbar", "x", a.req(0)?)?;
    let y = floats("errorbar", "y", a.req(1)?)?;
    same_len("errorbar", &x, &y, "x", "y")?;
    let n = x.len();
    let (ylo, yhi) = match a.opt(2) {
        None => (None, None),
        Some(v) => {
            let (lo, hi) = errors("errorbar", "yerr", v, n)?;
            (
                Some(y.iter().zip(&lo).map(|(v, e)| v - e).collect()),
                Some(y.iter().zip(&hi).map(|(v, e)| v + e).collect()),
            )
        }
    };
    let (xlo, xhi) = match a.opt(3) {
        None => (None, None),
        Some(v) => {
            let (lo, hi) = errors("errorbar", "xerr", v, n)?;
            (
                Some(x.iter().zip(&lo).map(|(v, e)| v - e).collect()),
                Some(x.iter().zip(&hi).map(|(v, e)| v + e).collect()),
            )
        }
    };
    let label = label_arg("errorbar", a.opt(5))?;
    let style = style::linestyle("errorbar", a.get(6), LineStyle::Solid)?;
    with_panel(h, |p| {
        let color = color_or_next("errorbar", a.opt(4), p)?;
        p.series.push(Series::ErrorBar {
            x,
            y,
            ylo,
            yhi,
            xlo,
            xhi,
            color,
            style,
            label,
        });
        Ok(Value::None)
    })
}

/// `fig.imshow(z, cmap="viridis", vmin=none, vmax=none, colorbar=true)`:
/// a 2-D tensor (or list of rows) as coloured cells, row 0 at the top,
/// with a colour bar at the right.
fn m_imshow(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (h, rest) = this("imshow", args)?;
    let a = Args::new("imshow", rest, kw, 1, &["z", "cmap", "vmin", "vmax", "colorbar"])?;
    let (rows, cols, data) = matrix("imshow", "z", a.req(0)?)?;
    let cmap = style::cmap("imshow", a.get(1))?;
    let finite = data.iter().copied().filter(|v| v.is_finite());
    let lo = finite.clone().fold(f64::INFINITY, f64::min);
    let hi = finite.fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if lo <= hi { (lo, hi) } else { (0.0, 1.0) };
    let vmin = a.float_opt(2)?.unwrap_or(lo);
    let vmax = a.float_opt(3)?.unwrap_or(hi);
    if !(vmin.is_finite() && vmax.is_finite() && vmin <= vmax) {
        return Err(err(
            ErrorKind::ValueError,
            format!("imshow(): vmin and vmax must be finite with vmin <= vmax (got {vmin} and {vmax})"),
        ));
    }
    let colorbar = a.bool_or(4, true)?;
    with_panel(h, |p| {
        if p.xlog || p.ylog {
            return Err(err(
                ErrorKind::ValueError,
                "imshow(): this panel has a log axis; an image needs linear axes",
            ));
        }
        p.series.retain(|s| !matches!(s, Series::Image { .. }));
        p.series.push(Series::Image {
            rows,
            cols,
            data,
            cmap,
            vmin,
            vmax,
            colorbar,
        });
        Ok(Value::None)
    })
}

fn set_text(who: &'static str, args: &[Value], kw: Kwargs, put: fn(&mut Panel, String)) -> VResult<Value> {
    let (h, rest) = this(who, args)?;
    let a = Args::new(who, rest, kw, 1, &["text"])?;
    let t = text_arg(&a, 0)?;
    with_panel(h, |p| put(p, t));
    Ok(Value::None)
}

fn m_title(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    set_text("title", args, kw, |p, t| p.title = Some(t))
}
fn m_xlabel(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    set_text("xlabel", args, kw, |p, t| p.xlabel = Some(t))
}
fn m_ylabel(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    set_text("ylabel", args, kw, |p, t| p.ylabel = Some(t))
}

/// `fig.suptitle(text)`: a title over the whole figure.
fn m_suptitle(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (h, rest) = this("suptitle", args)?;
    let a = Args::new("suptitle", rest, kw, 1, &["text"])?;
    let t = text_arg(&a, 0)?;
    h.state().suptitle = Some(t);
    Ok(Value::None)
}

/// `fig.legend(loc="best")`: shows the labelled series' legend.
fn m_legend(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (h, rest) = this("legend", args)?;
    let a = Args::new("legend", rest, kw, 0, &["loc"])?;
    let loc = match a.opt(0) {
        None => Loc::Best,
        Some(Value::Str(s)) => match s.as_str() {
            "best" => Loc::Best,
            "upper right" => Loc::UpperRight,
            "upper left" => Loc::UpperLeft,
            "lower left" => Loc::LowerLeft,
            "lower right" => Loc::LowerRight,
            other => {
                return Err(err(
                    ErrorKind::ValueError,
                    format!(
                        "legend(): loc must be \"best\", \"upper right\", \"upper left\", \"lower left\" or \"lower right\", not {other:?}"
                    ),
                ))
            }
        },
        Some(other) => return Err(a.wrong(0, "a str such as \"upper left\"", other)),
    };
    with_panel(h, |p| p.legend = Some(loc));
    Ok(Value::None)
}

fn scale(who: &'static str, args: &[Value], kw: Kwargs, y: bool) -> VResult<Value> {
    let (h, rest) = this(who, args)?;
    let a = Args::new(who, rest, kw, 1, &["value"])?;
    let log = match a.str(0)? {
        "log" => true,
        "linear" => false,
        other => {
            return Err(err(
                ErrorKind::ValueError,
                format!("{who}(): the scale must be \"linear\" or \"log\", not {other:?}"),
            ))
        }
    };
    with_panel(h, |p| {
        if log && p.image().is_some() {
            return Err(err(
                ErrorKind::ValueError,
                format!("{who}(): this panel shows an image; an image needs linear axes"),
            ));
        }
        if y {
            p.ylog = log;
        } else {
            p.xlog = log;
        }
        Ok(Value::None)
    })
}

fn m_xscale(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    scale("xscale", args, kw, false)
}
fn m_yscale(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    scale("yscale", args, kw, true)
}

/// `fig.grid(visible=true)`.
fn m_grid(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (h, rest) = this("grid", args)?;
    let a = Args::new("grid", rest, kw, 0, &["visible"])?;
    let on = a.bool_or(0, true)?;
    with_panel(h, |p| p.grid = Some(on));
    Ok(Value::None)
}

/// Sets a figure's grid to `rows` x `cols` panels (keeping panels whose
/// index still exists; refusing to drop one that has something drawn).
pub fn set_grid(who: &str, st: &mut FigState, rows: i64, cols: i64) -> VResult<()> {
    if !(1..=10).contains(&rows) || !(1..=10).contains(&cols) {
        return Err(err(
            ErrorKind::ValueError,
            format!("{who}(): rows and cols must be between 1 and 10, not {rows} and {cols}"),
        ));
    }
    let (rows, cols) = (rows as usize, cols as usize);
    if (rows, cols) == (st.rows, st.cols) {
        return Ok(());
    }
    let n = rows * cols;
    if let Some(i) = (n..st.panels.len()).find(|&i| !st.panels[i].series.is_empty()) {
        return Err(err(
            ErrorKind::ValueError,
            format!(
                "{who}(): a {rows}x{cols} grid has {n} panels, but panel {} of the {}x{} grid has been drawn in",
                i + 1,
                st.rows,
                st.cols
            ),
        ));
    }
    st.panels.resize_with(n, Panel::default);
    st.rows = rows;
    st.cols = cols;
    st.current = st.current.min(n - 1);
    Ok(())
}

/// `fig.subplot(rows, cols, index)`: divides the figure into a grid and
/// makes panel `index` (1-based, row by row, as matplotlib's) current;
/// returns it as an `Axes`.
fn m_subplot(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (h, rest) = this("subplot", args)?;
    let a = Args::new("subplot", rest, kw, 3, &["rows", "cols", "index"])?;
    let (rows, cols, index) = (a.int(0)?, a.int(1)?, a.int(2)?);
    let mut st = h.state();
    set_grid("subplot", &mut st, rows, cols)?;
    let n = (rows * cols) as usize;
    if index < 1 || index as usize > n {
        return Err(err(
            ErrorKind::IndexError,
            format!("subplot(): index must be between 1 and {n} for a {rows}x{cols} grid, not {index}"),
        ));
    }
    st.current = index as usize - 1;
    drop(st);
    Ok(object(Handle {
        fig: h.fig.clone(),
        panel: Some(index as usize - 1),
    }))
}

fn render_err(e: String) -> apsi_core::api::Exc {
    err(ErrorKind::ValueError, format!("the figure could not be drawn: {e}"))
}

/// `fig.save(path)`: PNG or SVG by the path's extension.
fn m_save(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (h, rest) = this("save", args)?;
    let a = Args::new("save", rest, kw, 1, &["path"])?;
    let path = a.str(0)?;
    let ext = std::path::Path::new(path)
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let st = h.state().clone();
    let bytes = match ext.as_str() {
        "png" => crate::render::png(&st).map_err(render_err)?,
        "svg" => crate::render::svg(&st).map_err(render_err)?.into_bytes(),
        _ => {
            return Err(err(
                ErrorKind::ValueError,
                format!(
                    "save(): the file name must end in .png or .svg, not {}",
                    if ext.is_empty() {
                        format!("{path:?} (no extension)")
                    } else {
                        format!(".{ext}")
                    }
                ),
            ))
        }
    };
    std::fs::write(path, bytes).map_err(|e| err(ErrorKind::IOError, format!("save(): cannot write {path:?}: {e}")))?;
    Ok(Value::None)
}

/// `fig._repr_png_()`: the PNG file's bytes (what a notebook shows).
fn m_repr_png(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (h, rest) = this("_repr_png_", args)?;
    Args::new("_repr_png_", rest, kw, 0, &[])?;
    let st = h.state().clone();
    Ok(Value::bytes(crate::render::png(&st).map_err(render_err)?))
}

/// `fig._repr_svg_()`: the SVG document as a str.
fn m_repr_svg(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (h, rest) = this("_repr_svg_", args)?;
    Args::new("_repr_svg_", rest, kw, 0, &[])?;
    let st = h.state().clone();
    Ok(Value::str(crate::render::svg(&st).map_err(render_err)?))
}

fn m_plot_history(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (h, rest) = this("plot_history", args)?;
    let a = Args::new("plot_history", rest, &[], 1, &["history"])?;
    crate::history::plot_history_into(c, h, a.req(0)?, kw)
}

const PANEL_METHODS: &[(&str, NativeFnPtr)] = &[
    ("plot", m_plot),
    ("scatter", m_scatter),
    ("hist", m_hist),
    ("bar", m_bar),
    ("errorbar", m_errorbar),
    ("imshow", m_imshow),
    ("heatmap", m_imshow),
    ("title", m_title),
    ("xlabel", m_xlabel),
    ("ylabel", m_ylabel),
    ("legend", m_legend),
    ("xscale", m_xscale),
    ("yscale", m_yscale),
    ("grid", m_grid),
    ("plot_history", m_plot_history),
];

const FIGURE_METHODS: &[(&str, NativeFnPtr)] = &[
    ("subplot", m_subplot),
    ("suptitle", m_suptitle),
    ("save", m_save),
    ("_repr_png_", m_repr_png),
    ("_repr_svg_", m_repr_svg),
];

fn table(figure: bool) -> &'static [(&'static str, Value)] {
    static FIG: OnceLock<Vec<(&'static str, Value)>> = OnceLock::new();
    static AXES: OnceLock<Vec<(&'static str, Value)>> = OnceLock::new();
    let build = |with_fig: bool| {
        let mut v: Vec<(&'static str, Value)> = PANEL_METHODS.iter().map(|(n, f)| (*n, native(n, *f))).collect();
        if with_fig {
            v.extend(FIGURE_METHODS.iter().map(|(n, f)| (*n, native(n, *f))));
        }
        v
    };
    if figure {
        FIG.get_or_init(|| build(true))
    } else {
        AXES.get_or_init(|| build(false))
    }
}

impl ApsiObject for Handle {
    fn type_name(&self) -> &str {
        if self.panel.is_some() {
            "Axes"
        } else {
            "Figure"
        }
    }
    fn to_str(&self) -> String {
        let st = self.state();
        match self.panel {
            Some(i) => format!("<Axes {} of a {}x{} grid>", i + 1, st.rows, st.cols),
            None => format!(
                "<Figure {}x{} with {}x{} panels>",
                st.width, st.height, st.rows, st.cols
            ),
        }
    }
    fn get_attr(&self, this: &Value, name: &str) -> Option<VResult<Value>> {
        match name {
            "width" if self.panel.is_none() => Some(Ok(Value::Int(i64::from(self.state().width)))),
            "height" if self.panel.is_none() => Some(Ok(Value::Int(i64::from(self.state().height)))),
            _ => method_of(this, table(self.panel.is_none()), name),
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apsi_core::api::{Caller, NoCaller};

    fn call(f: &Value, m: &str, args: &[Value], kw: &[(Arc<str>, Value)]) -> VResult<Value> {
        let bound = match f {
            Value::Object(o) => o.0.get_attr(f, m).expect("method")?,
            _ => panic!("not an object"),
        };
        NoCaller.call(&bound, args, kw)
    }

    fn nums(xs: &[f64]) -> Value {
        Value::list(xs.iter().map(|&x| Value::Float(x)).collect())
    }

    #[test]
    fn methods_check_their_arguments() {
        let f = new_figure("figure", 100, 80).unwrap();
        let e = call(&f, "plot", &[nums(&[1.0, 2.0]), nums(&[1.0])], &[]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::ShapeError);
        assert!(e.message.contains("'x' has 2 values and 'y' has 1"), "{}", e.message);
        let e = call(&f, "plot", &[nums(&[1.0])], &[("colour".into(), Value::str("red"))]).unwrap_err();
        assert_eq!(e.message, "plot() got an unexpected keyword argument 'colour'");
        let e = call(&f, "imshow", &[nums(&[1.0, 2.0])], &[]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::TypeError);
        let e = call(&f, "save", &[Value::str("x.jpg")], &[]).unwrap_err();
        assert_eq!(e.message, "save(): the file name must end in .png or .svg, not .jpg");
        let e = call(&f, "subplot", &[Value::Int(2), Value::Int(2), Value::Int(5)], &[]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::IndexError);
        let e = call(&f, "xscale", &[Value::str("logit")], &[]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::ValueError);
        let e = new_figure("figure", 0, 80).unwrap_err();
        assert_eq!(e.message, "figure(): width must be between 16 and 8192 pixels, not 0");
    }

    #[test]
    fn subplots_share_the_figure() {
        let f = new_figure("figure", 200, 100).unwrap();
        let ax = call(&f, "subplot", &[Value::Int(1), Value::Int(2), Value::Int(2)], &[]).unwrap();
        call(&ax, "plot", &[nums(&[1.0, 2.0])], &[]).unwrap();
        let h = as_handle(&f).unwrap();
        let st = h.state();
        assert_eq!((st.rows, st.cols, st.current), (1, 2, 1));
        assert_eq!(st.panels[1].series.len(), 1);
        assert!(st.panels[0].series.is_empty());
    }

    #[test]
    fn a_shrinking_grid_keeps_what_was_drawn() {
        let f = new_figure("figure", 200, 100).unwrap();
        call(&f, "subplot", &[Value::Int(2), Value::Int(2), Value::Int(4)], &[]).unwrap();
        call(&f, "plot", &[nums(&[1.0, 2.0])], &[]).unwrap();
        let e = call(&f, "subplot", &[Value::Int(1), Value::Int(2), Value::Int(1)], &[]).unwrap_err();
        assert!(e.message.contains("panel 4 of the 2x2 grid"), "{}", e.message);
    }

    #[test]
    fn bar_categories_and_errorbars() {
        let f = new_figure("figure", 200, 100).unwrap();
        let cats = Value::list(vec![Value::str("a"), Value::str("b")]);
        call(&f, "bar", &[cats, Value::Int(3)], &[]).unwrap();
        let e = call(
            &f,
            "errorbar",
            &[nums(&[1.0, 2.0]), nums(&[1.0, 2.0])],
            &[("yerr".into(), nums(&[-1.0, 1.0]))],
        )
        .unwrap_err();
        assert!(e.message.contains("negative"), "{}", e.message);
        let st = as_handle(&f).unwrap().state().clone();
        assert_eq!(
            st.panels[0].categories.as_deref(),
            Some(&["a".to_string(), "b".to_string()][..])
        );
    }
}
