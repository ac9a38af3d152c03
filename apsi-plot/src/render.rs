//! Drawing a figure with plotters: into an RGB buffer encoded as PNG, or
//! into an SVG document. Text is laid out with the embedded DejaVu Sans
//! (registered once as plotters' "sans-serif" through its `ab_glyph`
//! feature), so no system font library is needed.

use crate::model::{usable, FigState, Loc, Panel, Series};
use crate::style::{LineStyle, Marker, Rgb};
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::element::{DashedPathElement, Drawable, DynElement, ErrorBar, PointCollection};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{register_font, FontStyle};
use plotters_backend::{BackendCoord, DrawingErrorKind};
use std::sync::OnceLock;

static FONT_BYTES: &[u8] = include_bytes!("../fonts/DejaVuSans.ttf");
const FONT: &str = "sans-serif";
const TITLE_PX: u32 = 18;
const DESC_PX: u32 = 15;
const TICK_PX: u32 = 13;

/// Registers the embedded font (once per process); false when it failed.
fn fonts() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| register_font(FONT, FontStyle::Normal, FONT_BYTES).is_ok())
}

fn rgb(c: Rgb) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

/// Runs a drawing, turning a panic inside plotters (which its checks
/// should never let happen) into an error instead of unwinding into Apsi.
fn guarded<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    if !fonts() {
        return Err("the embedded font could not be loaded".into());
    }
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => Err("the plotting library failed on this figure".into()),
    }
}

/// The figure as the bytes of a PNG file.
pub fn png(st: &FigState) -> Result<Vec<u8>, String> {
    let (w, h) = (st.width, st.height);
    let mut buf = vec![255u8; w as usize * h as usize * 3];
    guarded(|| {
        let root = BitMapBackend::with_buffer(&mut buf, (w, h)).into_drawing_area();
        draw(st, &root)?;
        root.present().map_err(|e| e.to_string())
    })?;
    let mut out = Vec::new();
    use image::ImageEncoder;
    image::codecs::png::PngEncoder::new(&mut out)
        .write_image(&buf, w, h, image::ColorType::Rgb8)
        .map_err(|e| e.to_string())?;
    Ok(out)
}

/// The figure as an SVG document.
pub fn svg(st: &FigState) -> Result<String, String> {
    let mut s = String::new();
    guarded(|| {
        let root = SVGBackend::with_string(&mut s, (st.width, st.height)).into_drawing_area();
        draw(st, &root)?;
        root.present().map_err(|e| e.to_string())
    })?;
    Ok(s)
}

fn e2s<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

fn draw<DB: DrawingBackend>(st: &FigState, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
    root.fill(&WHITE).map_err(e2s)?;
    let area = match &st.suptitle {
        Some(t) => root.titled(t, (FONT, TITLE_PX + 2)).map_err(e2s)?,
        None => root.clone(),
    };
    let cells = area.split_evenly((st.rows, st.cols));
    for (p, cell) in st.panels.iter().zip(cells.iter()) {
        draw_panel(p, cell)?;
    }
    Ok(())
}

/// Pixels left of the plot for the y tick labels (and the y label).
fn y_area(p: &Panel) -> u32 {
    62 + if p.ylabel.is_some() { 22 } else { 0 }
}

/// Pixels below the plot for the x tick labels (and the x label).
fn x_area(p: &Panel) -> u32 {
    30 + if p.xlabel.is_some() { 22 } else { 0 }
}

fn draw_panel<DB: DrawingBackend>(p: &Panel, cell: &DrawingArea<DB, Shift>) -> Result<(), String> {
    let area = match &p.title {
        Some(t) => cell.titled(t, (FONT, TITLE_PX)).map_err(e2s)?,
        None => cell.clone(),
    };
    let ((x0, x1), (y0, y1)) = p.ranges();
    let bar = match p.image() {
        Some(img @ Series::Image { colorbar: true, .. }) => Some(img),
        _ => None,
    };
    let (main, strip) = match bar {
        Some(_) => {
            let w = area.dim_in_pixel().0;
            let (m, s) = area.split_horizontally(w.saturating_sub(85).max(w / 2));
            (m, Some(s))
        }
        None => (area, None),
    };
    let ylo = y0;
    let rows = match (p.xlog, p.ylog) {
        (false, false) => chart(p, &main, x0..x1, y0..y1, ylo)?,
        (true, false) => chart(p, &main, (x0..x1).log_scale(), y0..y1, ylo)?,
        (false, true) => chart(p, &main, x0..x1, (y0..y1).log_scale(), ylo)?,
        (true, true) => chart(p, &main, (x0..x1).log_scale(), (y0..y1).log_scale(), ylo)?,
    };
    if let (Some(Series::Image { cmap, vmin, vmax, .. }), Some(strip)) = (bar, strip) {
        colorbar(&strip, rows, *cmap, *vmin, *vmax)?;
    }
    Ok(())
}

/// A tick label: up to 6 significant digits without trailing zeros;
/// powers of ten written out from 1e-3 to 1e5, scientific beyond.
pub fn tick(v: f64) -> String {
    if v == 0.0 || v.abs() < 1e-12 {
        return "0".into();
    }
    let a = v.abs();
    if !(1e-3..1e5).contains(&a) {
        let s = format!("{v:.2e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let m = m.trim_end_matches('0').trim_end_matches('.');
        return format!("{m}e{e}");
    }
    let digits = (5 - a.log10().floor() as i32).clamp(0, 9) as usize;
    let s = format!("{v:.digits$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

/// How many tick labels fit along `px` pixels.
fn label_count(px: u32, per: u32) -> usize {
    (px / per).clamp(2, 10) as usize
}

/// Draws one panel's axes and series; returns the plot's pixel rows
/// (absolute), which the colour bar lines up with.
fn chart<DB, X, Y>(
    p: &Panel,
    area: &DrawingArea<DB, Shift>,
    xs: X,
    ys: Y,
    ylo: f64,
) -> Result<std::ops::Range<i32>, String>
where
    DB: DrawingBackend,
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let flip = p.image().is_some();
    let mut ch = ChartBuilder::on(area)
        .margin(10)
        .margin_right(18)
        .x_label_area_size(x_area(p))
        .y_label_area_size(y_area(p))
        .build_cartesian_2d(xs, ys)
        .map_err(e2s)?;
    let (w, h) = ch.plotting_area().dim_in_pixel();
    let cats = p.categories.clone();
    let fx = move |v: &f64| match &cats {
        Some(names) => {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < names.len() {
                names[i as usize].clone()
            } else {
                String::new()
            }
        }
        None => tick(*v),
    };
    let fy = move |v: &f64| {
        if flip {
            // Image rows count down from the top: row r is drawn at y = -r.
            if (v - v.round()).abs() < 1e-6 {
                tick(-v.round())
            } else {
                String::new()
            }
        } else {
            tick(*v)
        }
    };
    let nx = match &p.categories {
        Some(n) => n.len().clamp(1, 40),
        None => label_count(w, 55),
    };
    let mut mesh = ch.configure_mesh();
    mesh.x_labels(nx)
        .y_labels(label_count(h, 30))
        .x_label_formatter(&fx)
        .y_label_formatter(&fy)
        .label_style((FONT, TICK_PX))
        .axis_desc_style((FONT, DESC_PX))
        .axis_style(RGBColor(60, 60, 60));
    if let Some(t) = &p.xlabel {
        mesh.x_desc(t.as_str());
    }
    if let Some(t) = &p.ylabel {
        mesh.y_desc(t.as_str());
    }
    if p.grid.unwrap_or(!flip) {
        mesh.bold_line_style(RGBColor(225, 225, 225))
            .light_line_style(TRANSPARENT);
    } else {
        mesh.disable_mesh();
    }
    mesh.draw().map_err(e2s)?;

    let (xlog, ylog) = (p.xlog, p.ylog);
    let ok = move |x: f64, y: f64| usable(x, xlog) && usable(y, ylog);
    let fy = |y: f64| if flip { -y } else { y };
    for s in &p.series {
        match s {
            Series::Line {
                x,
                y,
                color,
                width,
                style,
                marker,
                label,
            } => {
                let pts: Vec<(f64, f64)> = x.iter().zip(y).map(|(a, b)| (*a, fy(*b))).collect();
                let st = ShapeStyle {
                    color: rgb(*color).to_rgba(),
                    filled: false,
                    stroke_width: *width,
                };
                let r = (*width + 2).max(3);
                draw_line(&mut ch, &pts, ok, st, *style, *marker, r, label.as_deref())?;
            }
            Series::Scatter {
                x,
                y,
                color,
                radius,
                marker,
                label,
            } => {
                let pts: Vec<(f64, f64)> = x
                    .iter()
                    .zip(y)
                    .map(|(a, b)| (*a, fy(*b)))
                    .filter(|(a, b)| ok(*a, *b))
                    .collect();
                let (c, m, r) = (rgb(*color), *marker, *radius);
                let anno = ch
                    .draw_series(pts.into_iter().map(move |pt| Glyph::marker(pt, m, r, c)))
                    .map_err(e2s)?;
                if let Some(l) = label {
                    anno.label(l.as_str()).legend(move |(x, y)| Glyph {
                        at: (x, y),
                        line: None,
                        dash: None,
                        marker: Some((m, r.min(6) as i32, c, 10)),
                        swatch: None,
                    });
                }
            }
            Series::Bars {
                left,
                right,
                bottom,
                top,
                color,
                label,
            } => {
                let c = rgb(*color);
                let mut rects = Vec::new();
                let mut edges = Vec::new();
                for i in 0..left.len() {
                    let b = if ylog { bottom[i].max(ylo) } else { bottom[i] };
                    let (l, r, t) = (left[i], right[i], top[i]);
                    if !(ok(l, b) && ok(r, t)) || t == b {
                        continue;
                    }
                    let (b, t) = (fy(b), fy(t));
                    rects.push(Rectangle::new([(l, b), (r, t)], c.filled()));
                    let px = ch.backend_coord(&(r, t)).0 - ch.backend_coord(&(l, t)).0;
                    if px >= 6 {
                        edges.push(Rectangle::new([(l, b), (r, t)], WHITE.stroke_width(1)));
                    }
                }
                let anno = ch.draw_series(rects).map_err(e2s)?;
                if let Some(l) = label {
                    anno.label(l.as_str()).legend(move |(x, y)| Glyph {
                        at: (x, y),
                        line: None,
                        dash: None,
                        marker: None,
                        swatch: Some(c),
                    });
                }
                ch.draw_series(edges).map_err(e2s)?;
            }
            Series::ErrorBar {
                x,
                y,
                ylo: elo,
                yhi: ehi,
                xlo,
                xhi,
                color,
                style,
                label,
            } => {
                let c = rgb(*color);
                let bar = c.stroke_width(1);
                let mut bars: Vec<DynElement<'_, DB, (f64, f64)>> = Vec::new();
                for i in 0..x.len() {
                    if !ok(x[i], y[i]) {
                        continue;
                    }
                    if let (Some(lo), Some(hi)) = (elo, ehi) {
                        if ok(x[i], lo[i]) && ok(x[i], hi[i]) {
                            bars.push(ErrorBar::new_vertical(x[i], fy(lo[i]), fy(y[i]), fy(hi[i]), bar, 8).into_dyn());
                        }
                    }
                    if let (Some(lo), Some(hi)) = (xlo, xhi) {
                        if ok(lo[i], y[i]) && ok(hi[i], y[i]) {
                            bars.push(ErrorBar::new_horizontal(fy(y[i]), lo[i], x[i], hi[i], bar, 8).into_dyn());
                        }
                    }
                }
                ch.draw_series(bars).map_err(e2s)?;
                let pts: Vec<(f64, f64)> = x.iter().zip(y).map(|(a, b)| (*a, fy(*b))).collect();
                let st = ShapeStyle {
                    color: c.to_rgba(),
                    filled: false,
                    stroke_width: 2,
                };
                draw_line(&mut ch, &pts, ok, st, *style, Some(Marker::Circle), 4, label.as_deref())?;
            }
            Series::Image {
                rows,
                cols,
                data,
                cmap,
                vmin,
                vmax,
                ..
            } => {
                let span = vmax - vmin;
                let cells = (0..*rows)
                    .flat_map(|r| (0..*cols).map(move |c| (r, c)))
                    .filter_map(|(r, c)| {
                        let v = data[r * cols + c];
                        if v.is_nan() {
                            return None;
                        }
                        let t = if span > 0.0 { (v - vmin) / span } else { 0.5 };
                        let (x, y) = (c as f64, -(r as f64));
                        Some(Rectangle::new(
                            [(x - 0.5, y + 0.5), (x + 0.5, y - 0.5)],
                            rgb(cmap.at(t)).filled(),
                        ))
                    });
                ch.draw_series(cells).map_err(e2s)?;
            }
        }
    }
    let labelled = p.series.iter().any(|s| s.label().is_some());
    if let (Some(loc), true) = (p.legend, labelled) {
        let loc = if loc == Loc::Best {
            best_corner(p, &ch, flip)
        } else {
            loc
        };
        let pos = match loc {
            Loc::Best | Loc::UpperRight => SeriesLabelPosition::UpperRight,
            Loc::UpperLeft => SeriesLabelPosition::UpperLeft,
            Loc::LowerLeft => SeriesLabelPosition::LowerLeft,
            Loc::LowerRight => SeriesLabelPosition::LowerRight,
        };
        ch.configure_series_labels()
            .position(pos)
            .margin(8)
            .legend_area_size(26)
            .label_font((FONT, TICK_PX))
            .background_style(WHITE.mix(0.9))
            .border_style(RGBColor(200, 200, 200))
            .draw()
            .map_err(e2s)?;
    }
    // A frame all round the plot, as matplotlib's.
    let (px, py) = ch.plotting_area().get_pixel_range();
    let (bx, by) = area.get_base_pixel();
    area.draw(&Rectangle::new(
        [(px.start - bx, py.start - by), (px.end - 1 - bx, py.end - 1 - by)],
        RGBColor(60, 60, 60).stroke_width(1),
    ))
    .map_err(e2s)?;
    Ok(py)
}

type Chart<'a, DB, X, Y> = ChartContext<'a, DB, Cartesian2d<X, Y>>;

/// The legend corner covering the fewest data points (ties: upper right,
/// upper left, lower left, lower right), for a legend box sized from
/// the labels.
fn best_corner<DB, X, Y>(p: &Panel, ch: &Chart<'_, DB, X, Y>, flip: bool) -> Loc
where
    DB: DrawingBackend,
    X: plotters::coord::ranged1d::Ranged<ValueType = f64>,
    Y: plotters::coord::ranged1d::Ranged<ValueType = f64>,
{
    let labels: Vec<&str> = p.series.iter().filter_map(|s| s.label()).collect();
    let w = 50 + 8 * labels.iter().map(|l| l.chars().count()).max().unwrap_or(0) as i32;
    let h = 12 + 18 * labels.len() as i32;
    let (px, py) = ch.plotting_area().get_pixel_range();
    let fy = |y: f64| if flip { -y } else { y };
    let mut pts: Vec<(f64, f64)> = Vec::new();
    for s in &p.series {
        match s {
            Series::Line { x, y, .. } | Series::Scatter { x, y, .. } | Series::ErrorBar { x, y, .. } => {
                pts.extend(x.iter().zip(y).map(|(a, b)| (*a, fy(*b))));
                if let Series::Line { x, y, .. } = s {
                    // Midpoints too, so that a line crossing a corner counts.
                    pts.extend(
                        x.windows(2)
                            .zip(y.windows(2))
                            .map(|(a, b)| ((a[0] + a[1]) / 2.0, fy((b[0] + b[1]) / 2.0))),
                    );
                }
            }
            Series::Bars {
                left,
                right,
                bottom,
                top,
                ..
            } => {
                for i in 0..left.len() {
                    for f in [0.0, 0.25, 0.5, 0.75, 1.0] {
                        let y = fy(bottom[i] + (top[i] - bottom[i]) * f);
                        pts.extend([(left[i], y), ((left[i] + right[i]) / 2.0, y), (right[i], y)]);
                    }
                }
            }
            Series::Image { .. } => {}
        }
    }
    let (xlog, ylog) = (p.xlog, p.ylog);
    let pix: Vec<(i32, i32)> = pts
        .iter()
        .filter(|(x, y)| usable(*x, xlog) && usable(*y, ylog))
        .map(|pt| ch.backend_coord(pt))
        .collect();
    let m = 8;
    let corners = [
        (Loc::UpperRight, px.end - m - w, py.start + m),
        (Loc::UpperLeft, px.start + m, py.start + m),
        (Loc::LowerLeft, px.start + m, py.end - m - h),
        (Loc::LowerRight, px.end - m - w, py.end - m - h),
    ];
    let mut best = (usize::MAX, Loc::UpperRight);
    for (loc, x0, y0) in corners {
        let n = pix
            .iter()
            .filter(|(x, y)| *x >= x0 && *x <= x0 + w && *y >= y0 && *y <= y0 + h)
            .count();
        if n < best.0 {
            best = (n, loc);
        }
    }
    best.1
}

/// A polyline broken where a point cannot be drawn, its markers, and its
/// legend entry.
#[allow(clippy::too_many_arguments)]
fn draw_line<DB, X, Y>(
    ch: &mut Chart<'_, DB, X, Y>,
    pts: &[(f64, f64)],
    ok: impl Fn(f64, f64) -> bool,
    st: ShapeStyle,
    style: LineStyle,
    marker: Option<Marker>,
    r: u32,
    label: Option<&str>,
) -> Result<(), String>
where
    DB: DrawingBackend,
    X: plotters::coord::ranged1d::Ranged<ValueType = f64>,
    Y: plotters::coord::ranged1d::Ranged<ValueType = f64>,
{
    let mut segs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for &(x, y) in pts {
        if ok(x, y) {
            if let Some(s) = segs.last_mut() {
                s.push((x, y));
            }
        } else if segs.last().is_some_and(|s| !s.is_empty()) {
            segs.push(Vec::new());
        }
    }
    segs.retain(|s| !s.is_empty());
    let (dash, gap) = match style {
        LineStyle::Dashed => (Some(6 + 2 * st.stroke_width), 4 + st.stroke_width),
        LineStyle::Dotted => (Some(st.stroke_width.max(2)), 2 + st.stroke_width),
        _ => (None, 0),
    };
    let lines: Vec<DynElement<'_, DB, (f64, f64)>> = match (style, dash) {
        (LineStyle::None, _) => Vec::new(),
        (_, Some(d)) => segs
            .iter()
            .map(|s| DashedPathElement::new(s.clone(), d, gap, st).into_dyn())
            .collect(),
        (_, None) => segs
            .iter()
            .map(|s| PathElement::new(s.clone(), st).into_dyn())
            .collect(),
    };
    let anno = ch.draw_series(lines).map_err(e2s)?;
    let c = st.color;
    let color = RGBColor(c.0, c.1, c.2);
    if let Some(l) = label {
        let no_line = style == LineStyle::None;
        anno.label(l).legend(move |(x, y)| Glyph {
            // A short line (none for points only) with the marker in its middle.
            at: (x, y),
            line: (!no_line).then_some(st),
            dash: dash.map(|d| (d as i32, gap as i32)),
            marker: marker.map(|m| (m, r.min(5) as i32, color, 10)),
            swatch: None,
        });
    }
    if let Some(m) = marker {
        let pts: Vec<(f64, f64)> = segs.into_iter().flatten().collect();
        ch.draw_series(pts.into_iter().map(|pt| Glyph::marker(pt, m, r, color)))
            .map_err(e2s)?;
    }
    Ok(())
}

/// A marker, or a legend entry's picture (a short line, a marker, a
/// colour swatch), drawn with the back end's primitives at one point.
/// (plotters' composed elements cannot be made dynamic for a back end
/// that borrows its buffer, so markers are one element of our own.)
struct Glyph<C> {
    at: C,
    /// A 20-px line from the point rightwards, dashed when `dash` gives
    /// (dash, gap) lengths.
    line: Option<ShapeStyle>,
    dash: Option<(i32, i32)>,
    /// A marker: shape, radius in pixels, colour, x offset in pixels.
    marker: Option<(Marker, i32, RGBColor, i32)>,
    /// A filled 16x10 rectangle right of the point.
    swatch: Option<RGBColor>,
}

impl<C> Glyph<C> {
    fn marker(at: C, m: Marker, r: u32, c: RGBColor) -> Glyph<C> {
        Glyph {
            at,
            line: None,
            dash: None,
            marker: Some((m, r as i32, c, 0)),
            swatch: None,
        }
    }
}

impl<'a, C: 'a> PointCollection<'a, C> for &'a Glyph<C> {
    type Point = &'a C;
    type IntoIter = std::iter::Once<&'a C>;
    fn point_iter(self) -> Self::IntoIter {
        std::iter::once(&self.at)
    }
}

impl<C, DB: DrawingBackend> Drawable<DB> for Glyph<C> {
    fn draw<I: Iterator<Item = BackendCoord>>(
        &self,
        mut pos: I,
        b: &mut DB,
        _: (u32, u32),
    ) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        let Some((x, y)) = pos.next() else { return Ok(()) };
        if let Some(st) = &self.line {
            match self.dash {
                Some((d, g)) if d > 0 => {
                    let mut a = 0;
                    while a < 20 {
                        b.draw_line((x + a, y), (x + (a + d).min(20), y), st)?;
                        a += d + g.max(1);
                    }
                }
                _ => b.draw_line((x, y), (x + 20, y), st)?,
            }
        }
        if let Some(c) = self.swatch {
            b.draw_rect((x + 2, y - 5), (x + 18, y + 5), &c, true)?;
        }
        if let Some((m, r, c, dx)) = self.marker {
            let x = x + dx;
            let thick = c.stroke_width(2);
            match m {
                Marker::Circle => b.draw_circle((x, y), r as u32, &c, true)?,
                Marker::Square => b.draw_rect((x - r, y - r), (x + r, y + r), &c, true)?,
                Marker::Triangle => {
                    let h = (f64::from(r) * 0.87).round() as i32;
                    b.fill_polygon(vec![(x, y - r), (x - h, y + r / 2), (x + h, y + r / 2)], &c)?
                }
                Marker::Cross => {
                    b.draw_line((x - r, y - r), (x + r, y + r), &thick)?;
                    b.draw_line((x - r, y + r), (x + r, y - r), &thick)?;
                }
                Marker::Plus => {
                    b.draw_line((x - r, y), (x + r, y), &thick)?;
                    b.draw_line((x, y - r), (x, y + r), &thick)?;
                }
            }
        }
        Ok(())
    }
}

/// About `n` round tick values from `lo` to `hi` (steps of 1, 2, 2.5 or
/// 5 times a power of ten).
pub fn nice_ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let span = hi - lo;
    if !(span > 0.0 && span.is_finite()) {
        return vec![lo];
    }
    let raw = span / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() * step;
    (0..=50)
        .map(|i| first + step * i as f64)
        .take_while(|v| *v <= hi + step * 1e-9)
        .map(|v| if v.abs() < step * 1e-9 { 0.0 } else { v })
        .collect()
}

/// The colour bar beside an image: the map from `vmin` (bottom) to `vmax`
/// (top) over the plot's pixel rows `rows`, with tick labels at its right.
fn colorbar<DB: DrawingBackend>(
    strip: &DrawingArea<DB, Shift>,
    rows: std::ops::Range<i32>,
    cmap: crate::style::Cmap,
    vmin: f64,
    vmax: f64,
) -> Result<(), String> {
    let (_, by) = strip.get_base_pixel();
    let (top, bottom) = (rows.start - by, rows.end - 1 - by);
    let h = bottom - top;
    if h < 4 {
        return Ok(());
    }
    let (x0, x1) = (6, 24);
    for y in top..=bottom {
        let t = f64::from(bottom - y) / f64::from(h);
        let c = cmap.at(if vmax > vmin { t } else { 0.5 });
        strip
            .draw(&PathElement::new(vec![(x0, y), (x1, y)], rgb(c).stroke_width(1)))
            .map_err(e2s)?;
    }
    let axis = RGBColor(60, 60, 60);
    strip
        .draw(&Rectangle::new([(x0, top), (x1, bottom)], axis.stroke_width(1)))
        .map_err(e2s)?;
    let (lo, hi) = if vmax > vmin {
        (vmin, vmax)
    } else {
        (vmin - 0.5, vmin + 0.5)
    };
    let text = TextStyle::from((FONT, TICK_PX).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for v in nice_ticks(lo, hi, (h / 40).clamp(2, 8) as usize) {
        let y = bottom - ((v - lo) / (hi - lo) * f64::from(h)).round() as i32;
        strip
            .draw(&PathElement::new(vec![(x1, y), (x1 + 4, y)], axis.stroke_width(1)))
            .map_err(e2s)?;
        strip.draw_text(&tick(v), &text, (x1 + 7, y)).map_err(e2s)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(tick(0.0), "0");
        assert_eq!(tick(-0.0), "0");
        assert_eq!(tick(1.0), "1");
        assert_eq!(tick(0.25), "0.25");
        assert_eq!(tick(2.5000000001), "2.5");
        assert_eq!(tick(-3.0), "-3");
        assert_eq!(tick(100000.0), "1e5");
        assert_eq!(tick(0.0001), "1e-4");
        assert_eq!(tick(12345.0), "12345");
        assert_eq!(tick(1.5e-7), "1.5e-7");
    }

    #[test]
    fn ticks_are_round() {
        let t: Vec<String> = nice_ticks(0.0, 1.0, 5).iter().map(|v| tick(*v)).collect();
        assert_eq!(t, ["0", "0.2", "0.4", "0.6", "0.8", "1"]);
        assert_eq!(nice_ticks(-0.7, 1.8, 5), vec![-0.5, 0.0, 0.5, 1.0, 1.5]);
        assert_eq!(nice_ticks(3.0, 3.0, 5), vec![3.0]);
    }

    #[test]
    fn an_empty_figure_draws() {
        let st = FigState::new(64, 48);
        let png = png(&st).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        assert!(svg(&st).unwrap().starts_with("<svg"));
    }
}
