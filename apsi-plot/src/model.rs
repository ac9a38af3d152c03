//! What a figure holds: panels in a grid, each with its series and
//! decorations, and the axis ranges they need. No drawing here (see
//! `render`), so the ranges are tested on their own.

use crate::style::{Cmap, LineStyle, Marker, Rgb};

/// One thing drawn in a panel.
#[derive(Clone, Debug)]
pub enum Series {
    /// `plot`: a polyline (broken where a value is not finite) and markers.
    Line {
        x: Vec<f64>,
        y: Vec<f64>,
        color: Rgb,
        width: u32,
        style: LineStyle,
        marker: Option<Marker>,
        label: Option<String>,
    },
    /// `scatter`.
    Scatter {
        x: Vec<f64>,
        y: Vec<f64>,
        color: Rgb,
        radius: u32,
        marker: Marker,
        label: Option<String>,
    },
    /// `bar` and `hist`: rectangles from `left[i]` to `right[i]`, `bottom[i]` to `top[i]`.
    Bars {
        left: Vec<f64>,
        right: Vec<f64>,
        bottom: Vec<f64>,
        top: Vec<f64>,
        color: Rgb,
        label: Option<String>,
    },
    /// `errorbar`: points with vertical and/or horizontal error bars
    /// (`lo`/`hi` are the bar ends), joined by a line unless `style` is none.
    ErrorBar {
        x: Vec<f64>,
        y: Vec<f64>,
        ylo: Option<Vec<f64>>,
        yhi: Option<Vec<f64>>,
        xlo: Option<Vec<f64>>,
        xhi: Option<Vec<f64>>,
        color: Rgb,
        style: LineStyle,
        label: Option<String>,
    },
    /// `imshow`: `rows` x `cols` cells, row 0 at the top.
    Image {
        rows: usize,
        cols: usize,
        data: Vec<f64>,
        cmap: Cmap,
        vmin: f64,
        vmax: f64,
        colorbar: bool,
    },
}

impl Series {
    pub fn label(&self) -> Option<&str> {
        match self {
            Series::Line { label, .. }
            | Series::Scatter { label, .. }
            | Series::Bars { label, .. }
            | Series::ErrorBar { label, .. } => label.as_deref(),
            Series::Image { .. } => None,
        }
    }
}

/// Where the legend goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loc {
    /// The corner that hides the fewest data points (matplotlib's "best").
    Best,
    UpperRight,
    UpperLeft,
    LowerLeft,
    LowerRight,
}

/// One panel (matplotlib's axes).
#[derive(Clone, Debug, Default)]
pub struct Panel {
    pub series: Vec<Series>,
    pub title: Option<String>,
    pub xlabel: Option<String>,
    pub ylabel: Option<String>,
    pub xlog: bool,
    pub ylog: bool,
    pub legend: Option<Loc>,
    pub grid: Option<bool>,
    /// Category names of a `bar` on strings: tick `i` is named `names[i]`.
    pub categories: Option<Vec<String>>,
    /// How many colours of the cycle this panel has used.
    pub cycle: usize,
}

impl Panel {
    pub fn next_color(&mut self) -> Rgb {
        let c = crate::style::CYCLE[self.cycle % crate::style::CYCLE.len()];
        self.cycle += 1;
        c
    }

    pub fn image(&self) -> Option<&Series> {
        self.series.iter().find(|s| matches!(s, Series::Image { .. }))
    }

    /// The x and y ranges to draw: every finite value of every series
    /// (positive ones only on a log axis) with matplotlib's 5% margins;
    /// an image's cells exactly; a range never empty and never reaching 0
    /// or below on a log axis. In a panel with an image, y is drawn
    /// negated (row r at y = -r, so row 0 is at the top), and the range
    /// is of the negated values.
    pub fn ranges(&self) -> ((f64, f64), (f64, f64)) {
        let mut xs = Extent::new(self.xlog);
        let mut ys = Extent::new(self.ylog);
        let flip = if self.image().is_some() { -1.0 } else { 1.0 };
        let mut x_sticky = false;
        let mut y_sticky = false;
        for s in &self.series {
            match s {
                Series::Line { x, y, .. } | Series::Scatter { x, y, .. } => {
                    for (a, b) in x.iter().zip(y) {
                        if xs.ok(*a) && ys.ok(*b) {
                            xs.add(*a);
                            ys.add(flip * *b);
                        }
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
                        xs.add(left[i]);
                        xs.add(right[i]);
                        ys.add(flip * top[i]);
                        ys.add(flip * bottom[i]);
                    }
                    y_sticky = true;
                }
                Series::ErrorBar {
                    x,
                    y,
                    ylo,
                    yhi,
                    xlo,
                    xhi,
                    ..
                } => {
                    for i in 0..x.len() {
                        xs.add(x[i]);
                        ys.add(flip * y[i]);
                        for v in [ylo, yhi].into_iter().flatten() {
                            ys.add(flip * v[i]);
                        }
                        for v in [xlo, xhi].into_iter().flatten() {
                            xs.add(v[i]);
                        }
                    }
                }
                Series::Image { rows, cols, .. } => {
                    xs.add(-0.5);
                    xs.add(*cols as f64 - 0.5);
                    ys.add(0.5);
                    ys.add(0.5 - *rows as f64);
                    x_sticky = true;
                    y_sticky = true;
                }
            }
        }
        let exact = flip < 0.0;
        (xs.finish(x_sticky, exact), ys.finish(y_sticky, exact))
    }
}

/// Whether `v` is drawn on an axis: finite, of magnitude below 1e300
/// (so that every span and margin stays finite), and positive on a log
/// axis. Other values are skipped (a line breaks there).
pub fn usable(v: f64, log: bool) -> bool {
    v.is_finite() && v.abs() < 1e300 && (!log || v > 1e-300)
}

/// The smallest and largest value seen on one axis.
struct Extent {
    log: bool,
    lo: f64,
    hi: f64,
}

impl Extent {
    fn new(log: bool) -> Extent {
        Extent {
            log,
            lo: f64::INFINITY,
            hi: f64::NEG_INFINITY,
        }
    }
    fn ok(&self, v: f64) -> bool {
        usable(v, self.log)
    }
    fn add(&mut self, v: f64) {
        if self.ok(v) {
            self.lo = self.lo.min(v);
            self.hi = self.hi.max(v);
        }
    }
    /// The drawn range: `sticky` data (bars, images) get no margin at
    /// their ends (bars start at the axis, as matplotlib's do).
    /// `exact`: no margins at all (a panel showing an image).
    fn finish(self, sticky: bool, exact: bool) -> (f64, f64) {
        if self.lo > self.hi {
            return if self.log { (1.0, 10.0) } else { (0.0, 1.0) };
        }
        if exact && self.lo < self.hi {
            return (self.lo, self.hi);
        }
        if self.log {
            let (a, b) = (self.lo.log10(), self.hi.log10());
            let (a, b) = pad(a, b, sticky, 1.0);
            // Ticks (and their labels) sit at powers of ten: a span that
            // holds fewer than two of them is widened to the decades
            // around it, or the axis would have no labelled tick.
            // (Slightly past them, so that rounding in the log of an end
            // cannot drop its tick.)
            if b.floor() - a.ceil() < 1.0 {
                let (lo, hi) = (a.floor(), b.ceil().max(a.floor() + 1.0));
                return (10f64.powf(lo - 0.01), 10f64.powf(hi + 0.01));
            }
            return (10f64.powf(a), 10f64.powf(b));
        }
        pad(self.lo, self.hi, sticky, 0.5)
    }
}

/// `lo..hi` with 5% margins; a zero-width span becomes `v ± unit` (or
/// ±10% of v). `sticky` keeps an end that is already 0 (bars) or the
/// whole range (images) unpadded.
fn pad(lo: f64, hi: f64, sticky: bool, unit: f64) -> (f64, f64) {
    if hi - lo <= 0.0 {
        let d = if lo == 0.0 { unit } else { lo.abs() * 0.1 };
        return (lo - d, hi + d);
    }
    let m = (hi - lo) * 0.05;
    if sticky {
        let lo2 = if lo == 0.0 { lo } else { lo - m };
        let hi2 = if hi == 0.0 { hi } else { hi + m };
        return (lo2, hi2);
    }
    (lo - m, hi + m)
}

/// A figure: its size in pixels, its grid and panels, and the panel the
/// figure's own methods draw into.
#[derive(Clone, Debug)]
pub struct FigState {
    pub width: u32,
    pub height: u32,
    pub rows: usize,
    pub cols: usize,
    pub panels: Vec<Panel>,
    pub current: usize,
    pub suptitle: Option<String>,
}

impl FigState {
    pub fn new(width: u32, height: u32) -> FigState {
        FigState {
            width,
            height,
            rows: 1,
            cols: 1,
            panels: vec![Panel::default()],
            current: 0,
            suptitle: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(x: Vec<f64>, y: Vec<f64>) -> Series {
        Series::Line {
            x,
            y,
            color: Rgb(0, 0, 0),
            width: 2,
            style: LineStyle::Solid,
            marker: None,
            label: None,
        }
    }

    #[test]
    fn ranges_have_margins_and_are_never_empty() {
        let mut p = Panel::default();
        p.series.push(line(vec![0.0, 10.0], vec![1.0, 1.0]));
        let ((x0, x1), (y0, y1)) = p.ranges();
        assert!((x0 + 0.5).abs() < 1e-12 && (x1 - 10.5).abs() < 1e-12);
        assert!(y0 < 1.0 && y1 > 1.0, "all-equal values get a span: {y0} {y1}");
        let empty = Panel::default();
        assert_eq!(empty.ranges(), ((0.0, 1.0), (0.0, 1.0)));
    }

    #[test]
    fn log_axes_skip_what_they_cannot_show() {
        let mut p = Panel {
            ylog: true,
            ..Panel::default()
        };
        p.series.push(line(vec![1.0, 2.0, 3.0], vec![-1.0, 0.0, 100.0]));
        let (_, (y0, y1)) = p.ranges();
        assert!(y0 > 0.0 && y0 < 100.0 && y1 > 100.0, "{y0} {y1}");
        p.series = vec![line(vec![1.0], vec![-5.0])];
        assert_eq!(p.ranges().1, (1.0, 10.0));
    }

    #[test]
    fn a_log_axis_within_one_decade_widens_to_its_decades() {
        let mut p = Panel {
            ylog: true,
            ..Panel::default()
        };
        // A loss curve from 0.69 down to 0.12: no power of ten inside.
        p.series.push(line(vec![0.0, 1.0], vec![0.69, 0.12]));
        let (y0, y1) = p.ranges().1;
        assert!(y0 < 0.1 && y0 > 0.095 && y1 > 1.0 && y1 < 1.05, "{y0} {y1}");
        // Two decades or more keep matplotlib's 5% margins.
        p.series = vec![line(vec![0.0, 1.0], vec![1.0, 1000.0])];
        let (y0, y1) = p.ranges().1;
        assert!(y0 < 1.0 && y0 > 0.5 && y1 > 1000.0 && y1 < 2000.0, "{y0} {y1}");
    }

    #[test]
    fn huge_and_non_finite_values_give_finite_ranges() {
        let mut p = Panel::default();
        p.series
            .push(line(vec![-1.7e308, 1.7e308], vec![f64::NAN, f64::INFINITY]));
        assert_eq!(p.ranges(), ((0.0, 1.0), (0.0, 1.0)));
        p.series.push(line(vec![-9e299, 9e299], vec![9e299, 9e299]));
        let ((x0, x1), (y0, y1)) = p.ranges();
        assert!((x1 - x0).is_finite() && x0 < x1 && (y1 - y0).is_finite() && y0 < y1);
    }

    #[test]
    fn an_image_fills_its_panel_row_0_on_top() {
        let mut p = Panel::default();
        p.series.push(Series::Image {
            rows: 3,
            cols: 4,
            data: vec![0.0; 12],
            cmap: Cmap::Viridis,
            vmin: 0.0,
            vmax: 1.0,
            colorbar: true,
        });
        assert_eq!(p.ranges(), ((-0.5, 3.5), (-2.5, 0.5)));
    }

    #[test]
    fn bars_sit_on_zero() {
        let mut p = Panel::default();
        p.series.push(Series::Bars {
            left: vec![0.0],
            right: vec![1.0],
            bottom: vec![0.0],
            top: vec![4.0],
            color: Rgb(0, 0, 0),
            label: None,
        });
        let (_, (y0, y1)) = p.ranges();
        assert_eq!(y0, 0.0);
        assert!((y1 - 4.2).abs() < 1e-12);
    }
}
