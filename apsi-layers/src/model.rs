//! Models as a whole: the parameters of a layer, a `Sequential` or a struct
//! model in order and by name, reading and replacing them, and the model
//! functions of LAYERS.md (`params`, `named_params`, `num_params`,
//! `set_params`, `apply`, `output_shape`, `summary`).

use crate::layer::{forward_value, item_str, layer_of, out_shape_value, tensor_arg};
use crate::ops;
use apsi_core::api::tensor::{as_tensor, shape_str, tensor_value, Tensor};
use apsi_core::api::{err, Args, Caller, ErrorKind, Kwargs, VResult, Value};

/// Where a parameter lives: slot `index` of a layer's own parameters, or a
/// tensor field of a struct model (field `index`), or item `index` of a
/// list held by a struct field.
#[derive(Clone)]
pub enum Owner {
    Layer(Value),
    Field(Value),
    Item(Value),
}

#[derive(Clone)]
pub struct Param {
    pub name: String,
    pub owner: Owner,
    pub index: usize,
}

impl Param {
    /// The tensor in this slot now.
    pub fn get(&self) -> VResult<Tensor> {
        let t = match &self.owner {
            Owner::Layer(v) => layer_of(v).and_then(|l| l.param(self.index)),
            Owner::Field(Value::Struct(s)) => s.fields.read().get(self.index).and_then(as_tensor),
            Owner::Item(Value::List(l)) => l.items.read().get(self.index).and_then(as_tensor),
            _ => None,
        };
        t.ok_or_else(|| err(ErrorKind::ValueError, format!("parameter '{}' is gone", self.name)))
    }

    /// Puts `t` in this slot (the caller keeps the storage rule: see `Swap`).
    fn put(&self, t: Tensor) {
        match &self.owner {
            Owner::Layer(v) => {
                if let Some(l) = layer_of(v) {
                    if let Some(p) = l.params.write().get_mut(self.index) {
                        *p = t;
                    }
                }
            }
            Owner::Field(Value::Struct(s)) => {
                if let Some(f) = s.fields.write().get_mut(self.index) {
                    *f = tensor_value(t);
                }
            }
            Owner::Item(Value::List(l)) => {
                if let Some(f) = l.items.write().get_mut(self.index) {
                    *f = tensor_value(t);
                }
            }
            _ => {}
        }
    }
}

/// Every parameter of `m`, in order, named as PyTorch's `state_dict` names them.
pub fn collect(m: &Value) -> VResult<Vec<Param>> {
    let mut out = Vec::new();
    walk(m, "", &mut out, 0)?;
    Ok(out)
}

fn walk(m: &Value, prefix: &str, out: &mut Vec<Param>, depth: usize) -> VResult<()> {
    if depth > 200 {
        return Err(err(ErrorKind::RecursionError, "the model nests deeper than 200 levels"));
    }
    if let Some(l) = layer_of(m) {
        for (i, n) in l.param_names().iter().enumerate() {
            out.push(Param {
                name: format!("{prefix}{n}"),
                owner: Owner::Layer(m.clone()),
                index: i,
            });
        }
        for (name, child) in l.children() {
            walk(&child, &format!("{prefix}{name}."), out, depth + 1)?;
        }
        return Ok(());
    }
    if let Value::Struct(s) = m {
        let fields: Vec<Value> = s.fields.read().iter().cloned().collect();
        for (i, (f, v)) in s.ty.fields.iter().zip(fields).enumerate() {
            let name = format!("{prefix}{}", f.name);
            if as_tensor(&v).is_some() {
                out.push(Param {
                    name,
                    owner: Owner::Field(m.clone()),
                    index: i,
                });
            } else {
                held(&v, &name, out, depth)?;
            }
        }
    }
    Ok(())
}

/// A struct field's value: a layer or model, or a list/tuple of them and tensors.
fn held(v: &Value, name: &str, out: &mut Vec<Param>, depth: usize) -> VResult<()> {
    match v {
        Value::List(l) => {
            let items: Vec<Value> = l.items.read().clone();
            for (j, item) in items.iter().enumerate() {
                if as_tensor(item).is_some() {
                    out.push(Param {
                        name: format!("{name}.{j}"),
                        owner: Owner::Item(v.clone()),
                        index: j,
                    });
                } else {
                    held(item, &format!("{name}.{j}"), out, depth + 1)?;
                }
            }
            Ok(())
        }
        Value::Tuple(t) => {
            for (j, item) in t.0.iter().enumerate() {
                if as_tensor(item).is_some() {
                    return Err(err(
                        ErrorKind::TypeError,
                        format!(
                            "model field '{name}' holds a tensor in a tuple: use a list, whose items can be trained"
                        ),
                    ));
                }
                held(item, &format!("{name}.{j}"), out, depth + 1)?;
            }
            Ok(())
        }
        Value::Struct(_) | Value::Object(_) => walk(v, &format!("{name}."), out, depth + 1),
        _ => Ok(()),
    }
}

/// Whether `m` is something the model functions take.
pub fn is_model(m: &Value) -> bool {
    layer_of(m).is_some() || matches!(m, Value::Struct(s) if s.ty.methods.contains_key("forward"))
}

pub fn expect_model<'a>(who: &str, m: &'a Value) -> VResult<&'a Value> {
    if is_model(m) {
        Ok(m)
    } else {
        Err(err(
            ErrorKind::TypeError,
            format!(
                "{who}() needs a model (a layer, a Sequential, or a struct with forward(self, x)), not {}",
                m.type_name()
            ),
        ))
    }
}

/// Traced copies of the parameters in their slots for one computation;
/// the plain tensors come back when this is dropped (also on an error).
/// Both share storage, so an optimizer's in-place write after the swap
/// ends is seen by the model.
pub struct Swap {
    saved: Vec<(Param, Tensor)>,
}

impl Swap {
    /// Puts `with[i]` in slot `params[i]`.
    pub fn new(params: &[Param], with: &[Tensor]) -> VResult<Swap> {
        let mut saved = Vec::with_capacity(params.len());
        for (p, t) in params.iter().zip(with) {
            saved.push((p.clone(), p.get()?));
            p.put(t.clone());
        }
        Ok(Swap { saved })
    }
}

impl Drop for Swap {
    fn drop(&mut self) {
        for (p, t) in self.saved.drain(..).rev() {
            p.put(t);
        }
    }
}

pub fn params_value(m: &Value) -> VResult<Value> {
    let ps = collect(m)?;
    let ts = ps
        .iter()
        .map(|p| p.get().map(tensor_value))
        .collect::<VResult<Vec<_>>>()?;
    Ok(Value::list(ts))
}

pub fn f_params(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("params", args, kw, 1, &["model"])?;
    params_value(expect_model("params", a.req(0)?)?)
}

pub fn m_params(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("params", args, kw, 1, &["self"])?;
    params_value(a.req(0)?)
}

pub fn named_value(m: &Value) -> VResult<Value> {
    let ps = collect(m)?;
    let items = ps
        .iter()
        .map(|p| Ok(Value::tuple(vec![Value::str(p.name.clone()), tensor_value(p.get()?)])))
        .collect::<VResult<Vec<_>>>()?;
    Ok(Value::list(items))
}

pub fn f_named_params(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("named_params", args, kw, 1, &["model"])?;
    named_value(expect_model("named_params", a.req(0)?)?)
}

pub fn m_named_params(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("named_params", args, kw, 1, &["self"])?;
    named_value(a.req(0)?)
}

pub fn f_num_params(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("num_params", args, kw, 1, &["model"])?;
    let ps = collect(expect_model("num_params", a.req(0)?)?)?;
    let mut n = 0usize;
    for p in &ps {
        n += p.get()?.size();
    }
    Ok(Value::Int(n as i64))
}

/// A list of tensors, each checked against the model's parameter shapes.
pub fn tensor_list(c: &mut dyn Caller, who: &str, v: &Value, ps: &[Param]) -> VResult<Vec<Tensor>> {
    let items: Vec<Value> = match v {
        Value::List(l) => l.items.read().clone(),
        Value::Tuple(t) => t.0.to_vec(),
        other => {
            return Err(err(
                ErrorKind::TypeError,
                format!("{who}() needs a list of tensors, not {}", other.type_name()),
            ))
        }
    };
    if items.len() != ps.len() {
        return Err(err(
            ErrorKind::ValueError,
            format!(
                "{who}(): the model has {} parameters, {} tensors were given",
                ps.len(),
                items.len()
            ),
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    for (v, p) in items.iter().zip(ps) {
        let t = tensor_arg(c, who, v)?;
        let want = p.get()?;
        if t.shape() != want.shape() {
            return Err(err(
                ErrorKind::ShapeError,
                format!(
                    "{who}(): '{}' is {} in the model but the tensor given is {}",
                    p.name,
                    shape_str(want.shape()),
                    shape_str(t.shape())
                ),
            ));
        }
        out.push(t);
    }
    Ok(out)
}

pub fn f_set_params(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("set_params", args, kw, 2, &["model", "values"])?;
    let ps = collect(expect_model("set_params", a.req(0)?)?)?;
    let ts = tensor_list(c, "set_params", a.req(1)?, &ps)?;
    for (p, t) in ps.iter().zip(&ts) {
        ops::write_into(&p.get()?, t)?;
    }
    Ok(Value::None)
}

/// `apply(m, ps, x)`: `m(x)` with `ps` in place of the parameters
/// (differentiable in `ps`).
pub fn f_apply(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("apply", args, kw, 3, &["model", "params", "x"])?;
    let m = expect_model("apply", a.req(0)?)?;
    let ps = collect(m)?;
    let mut ts = tensor_list(c, "apply", a.req(1)?, &ps)?;
    for (t, p) in ts.iter_mut().zip(&ps) {
        let dt = p.get()?.dtype;
        *t = ops::cast(t, dt)?;
    }
    let x = tensor_arg(c, "apply", a.req(2)?)?;
    let _swap = Swap::new(&ps, &ts)?;
    Ok(tensor_value(forward_value(c, m, x, None)?))
}

/// A shape argument: a tuple or list of ints.
pub fn shape_arg(who: &str, v: &Value) -> VResult<Vec<usize>> {
    let items: Vec<Value> = match v {
        Value::Tuple(t) => t.0.to_vec(),
        Value::List(l) => l.items.read().clone(),
        Value::Int(n) => vec![Value::Int(*n)],
        other => {
            return Err(err(
                ErrorKind::TypeError,
                format!("{who}() needs a shape (a tuple of ints), not {}", other.type_name()),
            ))
        }
    };
    items
        .iter()
        .map(|v| match v {
            Value::Int(n) if *n >= 0 => Ok(*n as usize),
            other => Err(err(
                ErrorKind::TypeError,
                format!(
                    "{who}(): a shape holds sizes (ints >= 0), found {}",
                    apsi_core::api::repr_of(other)
                ),
            )),
        })
        .collect()
}

fn shape_value(s: &[usize]) -> Value {
    Value::tuple(s.iter().map(|&d| Value::Int(d as i64)).collect())
}

pub fn f_output_shape(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("output_shape", args, kw, 2, &["model", "shape"])?;
    let m = expect_model("output_shape", a.req(0)?)?;
    let s = shape_arg("output_shape", a.req(1)?)?;
    Ok(shape_value(&out_shape_value(c, m, &s, None)?))
}

pub fn m_output_shape(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("output_shape", args, kw, 2, &["self", "shape"])?;
    let s = shape_arg("output_shape", a.req(1)?)?;
    Ok(shape_value(&out_shape_value(c, a.req(0)?, &s, None)?))
}

/// `summary(m, shape)`: one row per layer, then the total.
pub fn f_summary(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("summary", args, kw, 2, &["model", "shape"])?;
    let m = expect_model("summary", a.req(0)?)?.clone();
    let s = shape_arg("summary", a.req(1)?)?;
    let mut rows: Vec<[String; 4]> = vec![["layer".into(), "type".into(), "output shape".into(), "params".into()]];
    let mut total = 0usize;
    let items: Vec<(String, Value)> = match layer_of(&m).map(|l| &l.kind) {
        Some(crate::layer::Kind::Sequential(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (i.to_string(), v.clone()))
            .collect(),
        _ => vec![("".to_string(), m.clone())],
    };
    let mut shape = s;
    for (path, v) in items {
        shape = out_shape_value(c, &v, &shape, if path.is_empty() { None } else { Some(&path) })?;
        let n: usize = collect(&v)?
            .iter()
            .map(|p| p.get().map(|t| t.size()))
            .sum::<VResult<usize>>()?;
        total += n;
        let kind = match layer_of(&v) {
            Some(l) => l.describe(),
            None => item_str(&v),
        };
        rows.push([path, kind, shape_str(&shape), n.to_string()]);
    }
    use crate::table::{lines, Align};
    let width = (0..4)
        .map(|k| rows.iter().map(|r| r[k].chars().count()).max().unwrap_or(0))
        .sum::<usize>()
        + 6;
    let mut text = String::new();
    for (i, line) in lines(&rows, &[Align::Left, Align::Left, Align::Left, Align::Right])
        .into_iter()
        .enumerate()
    {
        text.push_str(&line);
        text.push('\n');
        if i == 0 {
            text.push_str(&"-".repeat(width));
            text.push('\n');
        }
    }
    text.push_str(&format!("total: {total} parameters\n"));
    c.write_out(&text)?;
    Ok(Value::None)
}
