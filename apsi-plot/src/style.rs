//! Colours, the colour cycle, colour maps, markers and line styles, named
//! as matplotlib names them.

use apsi_core::api::{err, ErrorKind, VResult, Value};

/// An RGB colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

/// matplotlib's default colour cycle (`tab10`): `C0` … `C9`.
pub const CYCLE: [Rgb; 10] = [
    Rgb(0x1f, 0x77, 0xb4),
    Rgb(0xff, 0x7f, 0x0e),
    Rgb(0x2c, 0xa0, 0x2c),
    Rgb(0xd6, 0x27, 0x28),
    Rgb(0x94, 0x67, 0xbd),
    Rgb(0x8c, 0x56, 0x4b),
    Rgb(0xe3, 0x77, 0xc2),
    Rgb(0x7f, 0x7f, 0x7f),
    Rgb(0xbc, 0xbd, 0x22),
    Rgb(0x17, 0xbe, 0xcf),
];

const NAMED: &[(&str, Rgb)] = &[
    ("b", CYCLE[0]),
    ("g", Rgb(0, 128, 0)),
    ("r", Rgb(255, 0, 0)),
    ("c", Rgb(0, 191, 191)),
    ("m", Rgb(191, 0, 191)),
    ("y", Rgb(191, 191, 0)),
    ("k", Rgb(0, 0, 0)),
    ("w", Rgb(255, 255, 255)),
    ("blue", CYCLE[0]),
    ("orange", CYCLE[1]),
    ("green", CYCLE[2]),
    ("red", CYCLE[3]),
    ("purple", CYCLE[4]),
    ("brown", CYCLE[5]),
    ("pink", CYCLE[6]),
    ("gray", CYCLE[7]),
    ("grey", CYCLE[7]),
    ("olive", CYCLE[8]),
    ("cyan", CYCLE[9]),
    ("black", Rgb(0, 0, 0)),
    ("white", Rgb(255, 255, 255)),
    ("yellow", Rgb(255, 215, 0)),
    ("magenta", Rgb(191, 0, 191)),
    ("navy", Rgb(0, 0, 128)),
    ("teal", Rgb(0, 128, 128)),
];

/// A colour from `color=`: a name (`"red"`, `"k"`), `"C0"`…`"C9"`,
/// `"#rrggbb"`, or an `(r, g, b)` tuple of floats in 0..1.
pub fn color(who: &str, v: &Value) -> VResult<Rgb> {
    let bad = |what: String| {
        err(
            ErrorKind::ValueError,
            format!(
                "{who}(): color must be a name such as \"red\", \"C0\"…\"C9\", \"#rrggbb\" or an (r, g, b) tuple of numbers in 0..1, not {what}"
            ),
        )
    };
    match v {
        Value::Str(s) => {
            let s = s.as_str().trim().to_ascii_lowercase();
            if let Some((_, c)) = NAMED.iter().find(|(n, _)| *n == s) {
                return Ok(*c);
            }
            if let Some(d) = s.strip_prefix('c') {
                if let Ok(i) = d.parse::<usize>() {
                    return Ok(CYCLE[i % CYCLE.len()]);
                }
            }
            if let Some(h) = s.strip_prefix('#') {
                if h.len() == 6 && h.chars().all(|c| c.is_ascii_hexdigit()) {
                    let p = |i: usize| u8::from_str_radix(&h[i..i + 2], 16).unwrap_or(0);
                    return Ok(Rgb(p(0), p(2), p(4)));
                }
            }
            Err(bad(format!("{s:?}")))
        }
        Value::Tuple(t) if t.0.len() == 3 || t.0.len() == 4 => {
            let mut c = [0u8; 3];
            for (i, x) in t.0.iter().take(3).enumerate() {
                match crate::input::number(x) {
                    Some(f) if (0.0..=1.0).contains(&f) => c[i] = (f * 255.0).round() as u8,
                    _ => return Err(bad(format!("a tuple whose item {i} is not a number in 0..1"))),
                }
            }
            Ok(Rgb(c[0], c[1], c[2]))
        }
        other => Err(bad(other.type_name().to_string())),
    }
}

/// A point marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    Circle,
    Square,
    Triangle,
    Cross,
    Plus,
}

/// `marker=`: `"o"` (circle), `"s"` (square), `"^"` (triangle), `"x"`,
/// `"+"`; `none`/`""` is no marker.
pub fn marker(who: &str, v: Option<&Value>) -> VResult<Option<Marker>> {
    let Some(v) = v else { return Ok(None) };
    let s = match v {
        Value::None => return Ok(None),
        Value::Str(s) => s.as_str().to_string(),
        other => return Err(crate::input::wrong(who, "marker", "a str such as \"o\"", other)),
    };
    Ok(Some(match s.as_str() {
        "" | "none" | "None" => return Ok(None),
        "o" | "." => Marker::Circle,
        "s" => Marker::Square,
        "^" => Marker::Triangle,
        "x" => Marker::Cross,
        "+" => Marker::Plus,
        _ => {
            return Err(err(
                ErrorKind::ValueError,
                format!("{who}(): marker must be one of \"o\", \"s\", \"^\", \"x\", \"+\" or \"\" (none), not {s:?}"),
            ))
        }
    }))
}

/// How a line is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineStyle {
    Solid,
    Dashed,
    Dotted,
    None,
}

/// `linestyle=`: `"-"` (solid), `"--"` (dashed), `":"` (dotted), `""` or
/// `"none"` (no line).
pub fn linestyle(who: &str, v: Option<&Value>, default: LineStyle) -> VResult<LineStyle> {
    let Some(v) = v else { return Ok(default) };
    let s = match v {
        Value::None => return Ok(LineStyle::None),
        Value::Str(s) => s.as_str().to_string(),
        other => return Err(crate::input::wrong(who, "linestyle", "a str such as \"--\"", other)),
    };
    Ok(match s.as_str() {
        "-" | "solid" => LineStyle::Solid,
        "--" | "dashed" => LineStyle::Dashed,
        ":" | "dotted" => LineStyle::Dotted,
        "" | "none" | "None" => LineStyle::None,
        _ => {
            return Err(err(
                ErrorKind::ValueError,
                format!("{who}(): linestyle must be \"-\", \"--\", \":\" or \"\" (none), not {s:?}"),
            ))
        }
    })
}

/// A colour map: a name and its colour at t in 0..1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmap {
    Viridis,
    Plasma,
    Gray,
    Hot,
    Coolwarm,
}

pub const CMAP_NAMES: &str = "\"viridis\", \"plasma\", \"gray\", \"hot\" or \"coolwarm\"";

pub fn cmap(who: &str, v: Option<&Value>) -> VResult<Cmap> {
    let s = match v {
        None | Some(Value::None) => return Ok(Cmap::Viridis),
        Some(Value::Str(s)) => s.as_str().to_string(),
        Some(other) => {
            return Err(crate::input::wrong(
                who,
                "cmap",
                "a colour map name such as \"viridis\"",
                other,
            ))
        }
    };
    Ok(match s.as_str() {
        "viridis" => Cmap::Viridis,
        "plasma" => Cmap::Plasma,
        "gray" | "grey" | "Greys_r" => Cmap::Gray,
        "hot" => Cmap::Hot,
        "coolwarm" => Cmap::Coolwarm,
        _ => {
            return Err(err(
                ErrorKind::ValueError,
                format!("{who}(): cmap must be {CMAP_NAMES}, not {s:?}"),
            ))
        }
    })
}

const VIRIDIS: [u32; 9] = [
    0x440154, 0x472c7a, 0x3b518b, 0x2c718e, 0x21908d, 0x27ad81, 0x5cc863, 0xaadc32, 0xfde725,
];
const PLASMA: [u32; 9] = [
    0x0d0887, 0x4c02a1, 0x7e03a8, 0xa92395, 0xcc4778, 0xe56b5d, 0xf89441, 0xfdc328, 0xf0f921,
];
const COOLWARM: [u32; 7] = [0x3b4cc0, 0x6f92f3, 0xaac7fd, 0xdddddd, 0xf7b89c, 0xe7745b, 0xb40426];

fn between(stops: &[u32], t: f64) -> Rgb {
    let n = stops.len() - 1;
    let x = t * n as f64;
    let i = (x.floor() as usize).min(n - 1);
    let f = x - i as f64;
    let ch = |c: u32, s: u32| ((c >> s) & 0xff) as f64;
    let mix = |s: u32| (ch(stops[i], s) * (1.0 - f) + ch(stops[i + 1], s) * f).round() as u8;
    Rgb(mix(16), mix(8), mix(0))
}

impl Cmap {
    /// The colour at `t` (clamped to 0..1; NaN is 0).
    pub fn at(self, t: f64) -> Rgb {
        let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
        let u = |x: f64| (x.clamp(0.0, 1.0) * 255.0).round() as u8;
        match self {
            Cmap::Viridis => between(&VIRIDIS, t),
            Cmap::Plasma => between(&PLASMA, t),
            Cmap::Coolwarm => between(&COOLWARM, t),
            Cmap::Gray => Rgb(u(t), u(t), u(t)),
            Cmap::Hot => Rgb(u(t * 3.0), u(t * 3.0 - 1.0), u(t * 3.0 - 2.0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_parse() {
        assert_eq!(color("f", &Value::str("C1")).unwrap(), CYCLE[1]);
        assert_eq!(color("f", &Value::str("#ff0080")).unwrap(), Rgb(255, 0, 128));
        assert_eq!(color("f", &Value::str("k")).unwrap(), Rgb(0, 0, 0));
        let e = color("f", &Value::str("mauve")).unwrap_err();
        assert_eq!(e.kind, ErrorKind::ValueError);
        assert!(e.message.contains("not \"mauve\""), "{}", e.message);
    }

    #[test]
    fn colour_maps_end_where_matplotlib_ends() {
        assert_eq!(Cmap::Viridis.at(0.0), Rgb(0x44, 0x01, 0x54));
        assert_eq!(Cmap::Viridis.at(1.0), Rgb(0xfd, 0xe7, 0x25));
        assert_eq!(Cmap::Viridis.at(f64::NAN), Cmap::Viridis.at(0.0));
        assert_eq!(Cmap::Hot.at(1.0), Rgb(255, 255, 255));
        assert_eq!(Cmap::Gray.at(0.5), Rgb(128, 128, 128));
    }
}
