//! Training histories (`use layers`' `fit` returns a `History` struct with
//! `loss`, `val_loss` and `metrics` fields), read by field name so that
//! this crate does not depend on `apsi-layers`: any struct or dict with a
//! `loss` list of numbers plots.

use crate::figure::{set_grid, Handle};
use crate::input::floats;
use crate::model::{Loc, Panel, Series};
use crate::style::LineStyle;
use apsi_core::api::{err, Caller, ErrorKind, Kwargs, VResult, Value};

/// Field (of a struct) or key (of a dict) `name`.
fn field(v: &Value, name: &str) -> Option<Value> {
    match v {
        Value::Struct(s) => {
            let i = s.ty.field_index(name)?;
            s.fields.read().get(i).cloned()
        }
        Value::Dict(d) => d
            .map
            .read()
            .iter()
            .find(|(k, _)| matches!(k.value(), Value::Str(s) if s.as_str() == name))
            .map(|(_, v)| v.clone()),
        _ => None,
    }
}

/// Whether `v` is a training history: a struct or dict with a `loss` list.
pub fn looks_like_history(v: &Value) -> bool {
    matches!(v, Value::Struct(_) | Value::Dict(_)) && matches!(field(v, "loss"), Some(Value::List(_)))
}

/// The (name, values) curves of `metrics` (a dict of lists), in order.
fn metrics(v: &Value) -> VResult<Vec<(String, Vec<f64>)>> {
    let mut out = Vec::new();
    if let Some(Value::Dict(d)) = field(v, "metrics") {
        let entries: Vec<(Value, Value)> = d
            .map
            .read()
            .iter()
            .map(|(k, v)| (k.value().clone(), v.clone()))
            .collect();
        for (k, vals) in entries {
            let name = match k {
                Value::Str(s) => s.as_str().to_string(),
                other => other.type_name().to_string(),
            };
            if matches!(&vals, Value::List(l) if l.items.read().is_empty()) {
                continue;
            }
            out.push((name, floats("plot_history", "metrics", &vals)?));
        }
    }
    Ok(out)
}

fn curve(p: &mut Panel, name: &str, y: Vec<f64>) {
    let color = p.next_color();
    p.series.push(Series::Line {
        x: (1..=y.len()).map(|i| i as f64).collect(),
        marker: (y.len() <= 30).then_some(crate::style::Marker::Circle),
        y,
        color,
        width: 2,
        style: LineStyle::Solid,
        label: Some(name.to_string()),
    });
}

/// `fig.plot_history(h)` / `fig.plot(h)`: `loss` (and `val_loss` when
/// there is one) against the epoch, labelled, with a legend. When the
/// history has metrics and this is a figure of one empty-or-not panel,
/// the figure becomes a 1x2 grid and the metrics go in the second panel.
pub fn plot_history_into(_c: &mut dyn Caller, h: &Handle, v: &Value, kw: Kwargs) -> VResult<Value> {
    if let Some((k, _)) = kw.first() {
        return Err(err(
            ErrorKind::TypeError,
            format!("plot_history() got an unexpected keyword argument '{k}'"),
        ));
    }
    if !looks_like_history(v) {
        return Err(err(
            ErrorKind::TypeError,
            format!(
                "plot_history() needs a training history (what layers.fit returns: a value with a 'loss' list), not {}",
                v.type_name()
            ),
        ));
    }
    let loss = match field(v, "loss") {
        Some(l) => floats("plot_history", "loss", &l)?,
        None => return Err(err(ErrorKind::TypeError, "plot_history(): the history has no 'loss'")),
    };
    let val = match field(v, "val_loss") {
        Some(l @ Value::List(_)) if !matches!(&l, Value::List(x) if x.items.read().is_empty()) => {
            Some(floats("plot_history", "val_loss", &l)?)
        }
        _ => None,
    };
    let metrics = metrics(v)?;
    let mut st = h.fig.lock().unwrap_or_else(|e| e.into_inner());
    let split = !metrics.is_empty() && h.panel.is_none() && st.rows * st.cols == 1;
    if split {
        set_grid("plot_history", &mut st, 1, 2)?;
    }
    let i = h.panel.unwrap_or(st.current).min(st.panels.len() - 1);
    let p = &mut st.panels[i];
    curve(p, "loss", loss);
    if let Some(v) = val {
        curve(p, "val_loss", v);
    }
    p.xlabel.get_or_insert_with(|| "epoch".into());
    p.ylabel.get_or_insert_with(|| "loss".into());
    p.title.get_or_insert_with(|| "loss".into());
    p.legend.get_or_insert(Loc::Best);
    if split {
        let p = &mut st.panels[1];
        for (name, ys) in metrics {
            curve(p, &name, ys);
        }
        p.xlabel = Some("epoch".into());
        p.title = Some("metrics".into());
        p.legend = Some(Loc::Best);
    }
    Ok(Value::None)
}
