//! Optimizers and learning-rate schedules (LAYERS.md §4), with PyTorch's
//! formulas step for step (`torch.optim.SGD`, `Adam`, `AdamW`, single-tensor
//! form), computed in each parameter's own dtype.

use crate::layer::tensor_arg;
use crate::ops;
use apsi_core::api::tensor::{self as t, as_tensor, shape_str, DType, Tensor};
use apsi_core::api::{err, method_of, native, repr_of, ApsiObject, Args, Caller, ErrorKind, Kwargs, VResult, Value};
use parking_lot::Mutex;
use std::sync::OnceLock;

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Schedule {
    Cosine {
        total: u64,
        min_lr: f64,
        warmup: u64,
        per_step: bool,
    },
    Step {
        every: u64,
        gamma: f64,
        per_step: bool,
    },
}

impl Schedule {
    fn per_step(&self) -> bool {
        match self {
            Schedule::Cosine { per_step, .. } | Schedule::Step { per_step, .. } => *per_step,
        }
    }

    /// The learning rate after `k` epochs or steps, from the base `lr`.
    pub fn lr(&self, lr: f64, k: u64) -> f64 {
        match *self {
            Schedule::Cosine {
                total, min_lr, warmup, ..
            } => {
                if k < warmup {
                    return lr * (k + 1) as f64 / warmup as f64;
                }
                let t = total.saturating_sub(warmup);
                if t == 0 {
                    return min_lr;
                }
                let j = (k - warmup).min(t);
                min_lr + (lr - min_lr) * (1.0 + (std::f64::consts::PI * j as f64 / t as f64).cos()) / 2.0
            }
            Schedule::Step { every, gamma, .. } => lr * gamma.powi((k / every.max(1)) as i32),
        }
    }

    fn describe(&self) -> String {
        match *self {
            Schedule::Cosine {
                total,
                min_lr,
                warmup,
                per_step,
            } => {
                let mut s = format!("cosine_lr({total}");
                if min_lr != 0.0 {
                    s.push_str(&format!(", min_lr={}", repr_of(&Value::Float(min_lr))));
                }
                if warmup != 0 {
                    s.push_str(&format!(", warmup={warmup}"));
                }
                if per_step {
                    s.push_str(", per=\"step\"");
                }
                s.push(')');
                s
            }
            Schedule::Step { every, gamma, per_step } => {
                let mut s = format!("step_lr({every}");
                if gamma != 0.1 {
                    s.push_str(&format!(", gamma={}", repr_of(&Value::Float(gamma))));
                }
                if per_step {
                    s.push_str(", per=\"step\"");
                }
                s.push(')');
                s
            }
        }
    }
}

pub struct ScheduleObj(pub Schedule);

impl ApsiObject for ScheduleObj {
    fn type_name(&self) -> &str {
        "Schedule"
    }
    fn to_str(&self) -> String {
        self.0.describe()
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn per_arg(a: &Args, i: usize, who: &str) -> VResult<bool> {
    match a.opt(i) {
        None => Ok(false),
        Some(Value::Str(s)) if s.as_str() == "epoch" => Ok(false),
        Some(Value::Str(s)) if s.as_str() == "step" => Ok(true),
        Some(other) => Err(err(
            ErrorKind::ValueError,
            format!("{who}: per must be \"epoch\" or \"step\", not {}", repr_of(other)),
        )),
    }
}

fn count_arg(a: &Args, i: usize, who: &str, what: &str, min: i64) -> VResult<u64> {
    let n = a.int(i)?;
    if n < min {
        return Err(err(
            ErrorKind::ValueError,
            format!("{who}: {what} must be >= {min}, not {n}"),
        ));
    }
    Ok(n as u64)
}

pub fn f_cosine_lr(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("cosine_lr", args, kw, 1, &["total", "min_lr", "warmup", "per"])?;
    let total = count_arg(&a, 0, "cosine_lr", "total", 1)?;
    let warmup = match a.opt(2) {
        Some(_) => count_arg(&a, 2, "cosine_lr", "warmup", 0)?,
        None => 0,
    };
    Ok(apsi_core::api::object(ScheduleObj(Schedule::Cosine {
        total,
        min_lr: a.float_opt(1)?.unwrap_or(0.0),
        warmup,
        per_step: per_arg(&a, 3, "cosine_lr")?,
    })))
}

pub fn f_step_lr(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("step_lr", args, kw, 1, &["every", "gamma", "per"])?;
    Ok(apsi_core::api::object(ScheduleObj(Schedule::Step {
        every: count_arg(&a, 0, "step_lr", "every", 1)?,
        gamma: a.float_opt(1)?.unwrap_or(0.1),
        per_step: per_arg(&a, 2, "step_lr")?,
    })))
}

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Algo {
    Sgd { momentum: f64, nesterov: bool },
    Adam { b1: f64, b2: f64, eps: f64 },
    AdamW { b1: f64, b2: f64, eps: f64 },
}

/// Per-parameter state, in the parameter's dtype.
enum Buf {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

struct Slot {
    shape: Vec<usize>,
    dtype: DType,
    /// momentum buffer (SGD) or first moment (Adam)
    m: Option<Buf>,
    /// second moment (Adam)
    v: Option<Buf>,
}

struct State {
    steps: u64,
    epochs: u64,
    slots: Vec<Slot>,
}

pub struct Optimizer {
    pub algo: Algo,
    pub lr: f64,
    pub weight_decay: f64,
    pub schedule: Option<Schedule>,
    state: Mutex<State>,
}

/// A float type the update runs in.
trait Fl:
    Copy
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
{
    fn of(x: f64) -> Self;
    fn sqrt(self) -> Self;
    /// A state buffer of this type, moved out as it is (none: empty).
    fn from_buf(b: Option<Buf>) -> Vec<Self>;
    fn into_buf(v: Vec<Self>) -> Buf;
    /// This type's elements of a parameter's buffer, if it holds this type.
    fn elems(b: &mut t::Buffer) -> Option<&mut [Self]>;
}
/// `Fl` for one float type and its `Buf`/`Buffer` variant.
macro_rules! fl_impl {
    ($t:ty, $variant:ident) => {
        impl Fl for $t {
            fn of(x: f64) -> $t {
                x as $t
            }
            fn sqrt(self) -> $t {
                <$t>::sqrt(self)
            }
            fn from_buf(b: Option<Buf>) -> Vec<$t> {
                match b {
                    Some(Buf::$variant(v)) => v,
                    _ => Vec::new(),
                }
            }
            fn into_buf(v: Vec<$t>) -> Buf {
                Buf::$variant(v)
            }
            fn elems(b: &mut t::Buffer) -> Option<&mut [$t]> {
                match b {
                    t::Buffer::$variant(e) => Some(&mut e[..]),
                    _ => None,
                }
            }
        }
    };
}
fl_impl!(f32, F32);
fl_impl!(f64, F64);

impl Optimizer {
    /// The learning rate the next step uses.
    pub fn current_lr(&self) -> f64 {
        let s = self.state.lock();
        match self.schedule {
            Some(sc) => sc.lr(self.lr, if sc.per_step() { s.steps } else { s.epochs }),
            None => self.lr,
        }
    }

    pub fn end_epoch(&self) {
        self.state.lock().epochs += 1;
    }

    pub fn steps(&self) -> u64 {
        self.state.lock().steps
    }

    /// The (steps, epochs) counts the schedule reads.
    pub fn counts(&self) -> (u64, u64) {
        let s = self.state.lock();
        (s.steps, s.epochs)
    }

    /// After training elsewhere (the torch backend, whose optimizer kept
    /// its own moments): the counts it reached. The moments kept here no
    /// longer belong to the weights, so they are dropped.
    pub fn trained_elsewhere(&self, steps: u64, epochs: u64) {
        let mut s = self.state.lock();
        s.steps = steps;
        s.epochs = epochs;
        s.slots.clear();
    }

    /// One update of `params` (in place) from `grads`; a missing gradient
    /// leaves its parameter (and its state) as they are.
    pub fn step(&self, params: &[Tensor], grads: &[Option<Tensor>]) -> VResult<()> {
        if params.len() != grads.len() {
            return Err(err(
                ErrorKind::ValueError,
                format!("step(): {} parameters but {} gradients", params.len(), grads.len()),
            ));
        }
        let lr = self.current_lr();
        let mut st = self.state.lock();
        if st.slots.is_empty() {
            st.slots = params
                .iter()
                .map(|p| Slot {
                    shape: p.shape().to_vec(),
                    dtype: p.dtype,
                    m: None,
                    v: None,
                })
                .collect();
        } else if st.slots.len() != params.len()
            || st
                .slots
                .iter()
                .zip(params)
                .any(|(s, p)| s.shape != p.shape() || s.dtype != p.dtype)
        {
            return Err(err(
                ErrorKind::ValueError,
                "this optimizer belongs to another list of parameters (its state is kept by position): make one optimizer per model",
            ));
        }
        let t = st.steps + 1;
        for (i, (p, g)) in params.iter().zip(grads).enumerate() {
            let Some(g) = g else { continue };
            if g.shape() != p.shape() {
                return Err(err(
                    ErrorKind::ShapeError,
                    format!(
                        "step(): parameter {i} is {} but its gradient is {}",
                        shape_str(p.shape()),
                        shape_str(g.shape())
                    ),
                ));
            }
            let slot = &mut st.slots[i];
            match p.dtype {
                DType::F32 => self.update::<f32>(p, g, slot, lr, t)?,
                DType::F64 => self.update::<f64>(p, g, slot, lr, t)?,
                d => {
                    return Err(err(
                        ErrorKind::TypeError,
                        format!("step(): parameters must be f32 or f64 tensors, found {}", d.name()),
                    ))
                }
            }
        }
        st.steps = t;
        Ok(())
    }

    fn update<T: Fl + apsi_core::api::tensor::Scalar>(
        &self,
        p: &Tensor,
        g: &Tensor,
        slot: &mut Slot,
        lr: f64,
        t: u64,
    ) -> VResult<()> {
        let mut w: Vec<T> = p.to_vec();
        let g: Vec<T> = g.to_vec();
        let n = w.len();
        let wd = T::of(self.weight_decay);
        let lr_t = T::of(lr);
        let mut m = T::from_buf(slot.m.take());
        let mut v = T::from_buf(slot.v.take());
        match self.algo {
            Algo::Sgd { momentum, nesterov } => {
                let mu = T::of(momentum);
                let first = m.is_empty();
                if momentum != 0.0 && first {
                    m = vec![T::of(0.0); n];
                }
                for k in 0..n {
                    let mut d = g[k];
                    if self.weight_decay != 0.0 {
                        d = d + wd * w[k];
                    }
                    if momentum != 0.0 {
                        m[k] = if first { d } else { mu * m[k] + d };
                        d = if nesterov { d + mu * m[k] } else { m[k] };
                    }
                    w[k] = w[k] - lr_t * d;
                }
            }
            Algo::Adam { b1, b2, eps } | Algo::AdamW { b1, b2, eps } => {
                let decoupled = matches!(self.algo, Algo::AdamW { .. });
                if m.is_empty() {
                    m = vec![T::of(0.0); n];
                    v = vec![T::of(0.0); n];
                }
                let bc1 = 1.0 - b1.powi(t as i32);
                let bc2 = 1.0 - b2.powi(t as i32);
                let step_size = T::of(lr / bc1);
                let bc2_sqrt = T::of(bc2.sqrt());
                let (one_b1, b2t, one_b2, e) = (T::of(1.0 - b1), T::of(b2), T::of(1.0 - b2), T::of(eps));
                let shrink = T::of(1.0 - lr * self.weight_decay);
                let coupled = !decoupled && self.weight_decay != 0.0;
                // Zipped slices (no index checks), so the loop vectorises.
                let rows = w.iter_mut().zip(&g).zip(m.iter_mut().zip(v.iter_mut()));
                for ((w, &g), (m, v)) in rows {
                    let mut d = g;
                    if decoupled {
                        *w = *w * shrink;
                    } else if coupled {
                        d = d + wd * *w;
                    }
                    // torch: exp_avg.lerp_(grad, 1 - beta1)
                    *m = *m + one_b1 * (d - *m);
                    *v = *v * b2t + one_b2 * d * d;
                    let denom = v.sqrt() / bc2_sqrt + e;
                    *w = *w - step_size * (*m / denom);
                }
            }
        }
        let back = |x: Vec<T>| (!x.is_empty()).then(|| T::into_buf(x));
        slot.m = back(m);
        slot.v = back(v);
        // A contiguous parameter (every layer's) takes the new values in one copy.
        if p.layout.is_contiguous() {
            let off = p.layout.offset;
            let done = p
                .storage
                .write(|b| match T::elems(b).and_then(|e| e.get_mut(off..off + n)) {
                    Some(dst) => {
                        dst.copy_from_slice(&w);
                        true
                    }
                    None => false,
                });
            if done {
                return Ok(());
            }
        }
        let vals: Vec<f64> = w.iter().map(|x| x.to_f64()).collect();
        ops::write_f64(p, &vals)
    }

    fn describe(&self) -> String {
        let (name, mut parts) = match self.algo {
            Algo::Sgd { momentum, nesterov } => {
                let mut v = vec![format!("lr={}", repr_of(&Value::Float(self.lr)))];
                if momentum != 0.0 {
                    v.push(format!("momentum={}", repr_of(&Value::Float(momentum))));
                }
                if nesterov {
                    v.push("nesterov=true".into());
                }
                ("SGD", v)
            }
            Algo::Adam { .. } => ("Adam", vec![format!("lr={}", repr_of(&Value::Float(self.lr)))]),
            Algo::AdamW { .. } => ("AdamW", vec![format!("lr={}", repr_of(&Value::Float(self.lr)))]),
        };
        if self.weight_decay != 0.0 && !matches!(self.algo, Algo::AdamW { .. })
            || matches!(self.algo, Algo::AdamW { .. }) && self.weight_decay != 0.01
        {
            parts.push(format!("weight_decay={}", repr_of(&Value::Float(self.weight_decay))));
        }
        if let Some(s) = self.schedule {
            parts.push(format!("schedule={}", s.describe()));
        }
        format!("{name}({})", parts.join(", "))
    }
}

/// The optimizer a value holds, if it is one.
pub fn optimizer_of(v: &Value) -> Option<&Optimizer> {
    match v {
        Value::Object(o) => o.0.as_any().downcast_ref::<Optimizer>(),
        _ => None,
    }
}

fn methods() -> &'static [(&'static str, Value)] {
    static M: OnceLock<Vec<(&'static str, Value)>> = OnceLock::new();
    M.get_or_init(|| {
        vec![
            ("step", native("step", m_step)),
            ("end_epoch", native("end_epoch", m_end_epoch)),
        ]
    })
}

fn this(args: &[Value]) -> VResult<&Optimizer> {
    args.first().and_then(optimizer_of).ok_or_else(|| {
        err(
            ErrorKind::TypeError,
            "an optimizer method was called without its optimizer",
        )
    })
}

fn tensors(who: &str, v: &Value) -> VResult<Vec<Value>> {
    match v {
        Value::List(l) => Ok(l.items.read().clone()),
        Value::Tuple(t) => Ok(t.0.to_vec()),
        other => Err(err(
            ErrorKind::TypeError,
            format!("{who}: expected a list of tensors, not {}", other.type_name()),
        )),
    }
}

/// `opt.step(params, grads)`.
fn m_step(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("step", args, kw, 3, &["self", "params", "grads"])?;
    let opt = this(args)?;
    let ps = tensors("step(): params", a.req(1)?)?;
    let gs = tensors("step(): grads", a.req(2)?)?;
    let mut pt = Vec::with_capacity(ps.len());
    for p in &ps {
        pt.push(as_tensor(p).ok_or_else(|| {
            err(
                ErrorKind::TypeError,
                format!("step(): params must be tensors, found {}", p.type_name()),
            )
        })?);
    }
    let mut gt = Vec::with_capacity(gs.len());
    for g in &gs {
        gt.push(match g {
            Value::None => None,
            other => Some(tensor_arg(c, "step(): grads", other)?),
        });
    }
    opt.step(&pt, &gt)?;
    Ok(Value::None)
}

fn m_end_epoch(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("end_epoch", args, kw, 1, &["self"])?;
    this(args)?.end_epoch();
    Ok(Value::None)
}

impl ApsiObject for Optimizer {
    fn type_name(&self) -> &str {
        match self.algo {
            Algo::Sgd { .. } => "SGD",
            Algo::Adam { .. } => "Adam",
            Algo::AdamW { .. } => "AdamW",
        }
    }
    fn to_str(&self) -> String {
        self.describe()
    }
    fn get_attr(&self, this: &Value, name: &str) -> Option<VResult<Value>> {
        match name {
            "lr" => Some(Ok(Value::Float(self.current_lr()))),
            "steps" => Some(Ok(Value::Int(self.steps() as i64))),
            "epochs" => Some(Ok(Value::Int(self.state.lock().epochs as i64))),
            "weight_decay" => Some(Ok(Value::Float(self.weight_decay))),
            _ => method_of(this, methods(), name),
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn schedule_arg(a: &Args, i: usize, who: &str) -> VResult<Option<Schedule>> {
    match a.opt(i) {
        None => Ok(None),
        Some(Value::Object(o)) if o.0.as_any().downcast_ref::<ScheduleObj>().is_some() => {
            Ok(o.0.as_any().downcast_ref::<ScheduleObj>().map(|s| s.0))
        }
        Some(other) => Err(err(
            ErrorKind::TypeError,
            format!(
                "{who}: schedule must be cosine_lr(…) or step_lr(…), not {}",
                other.type_name()
            ),
        )),
    }
}

fn positive(who: &str, what: &str, x: f64) -> VResult<f64> {
    if x.is_finite() && x >= 0.0 {
        Ok(x)
    } else {
        Err(err(
            ErrorKind::ValueError,
            format!("{who}: {what} must be a number >= 0, not {x}"),
        ))
    }
}

fn betas(a: &Args, i: usize, who: &str) -> VResult<(f64, f64)> {
    match a.opt(i) {
        None => Ok((0.9, 0.999)),
        Some(Value::Tuple(t)) if t.0.len() == 2 => {
            let f = |v: &Value| match v {
                Value::Float(x) => Ok(*x),
                Value::Int(n) => Ok(*n as f64),
                other => Err(a.wrong(i, "a pair of numbers", other)),
            };
            let (b1, b2) = (f(&t.0[0])?, f(&t.0[1])?);
            for b in [b1, b2] {
                if !(0.0..1.0).contains(&b) {
                    return Err(err(
                        ErrorKind::ValueError,
                        format!("{who}: betas must be in [0, 1), found {b}"),
                    ));
                }
            }
            Ok((b1, b2))
        }
        Some(other) => Err(a.wrong(i, "a pair of numbers", other)),
    }
}

fn make(algo: Algo, lr: f64, weight_decay: f64, schedule: Option<Schedule>) -> Value {
    apsi_core::api::object(Optimizer {
        algo,
        lr,
        weight_decay,
        schedule,
        state: Mutex::new(State {
            steps: 0,
            epochs: 0,
            slots: Vec::new(),
        }),
    })
}

pub fn f_sgd(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional(
        "SGD",
        args,
        kw,
        &["lr", "momentum", "nesterov", "weight_decay", "schedule"],
    )?;
    let lr = positive("SGD", "lr", a.float_opt(0)?.unwrap_or(0.01))?;
    let momentum = positive("SGD", "momentum", a.float_opt(1)?.unwrap_or(0.0))?;
    let nesterov = a.flag(2)?;
    if nesterov && momentum == 0.0 {
        return Err(err(ErrorKind::ValueError, "SGD: nesterov=true needs a momentum > 0"));
    }
    let wd = positive("SGD", "weight_decay", a.float_opt(3)?.unwrap_or(0.0))?;
    Ok(make(
        Algo::Sgd { momentum, nesterov },
        lr,
        wd,
        schedule_arg(&a, 4, "SGD")?,
    ))
}

fn adam_like(name: &'static str, args: &[Value], kw: Kwargs, wd_default: f64, decoupled: bool) -> VResult<Value> {
    let a = Args::optional(name, args, kw, &["lr", "betas", "eps", "weight_decay", "schedule"])?;
    let lr = positive(name, "lr", a.float_opt(0)?.unwrap_or(0.001))?;
    let (b1, b2) = betas(&a, 1, name)?;
    let eps = positive(name, "eps", a.float_opt(2)?.unwrap_or(1e-8))?;
    let wd = positive(name, "weight_decay", a.float_opt(3)?.unwrap_or(wd_default))?;
    let algo = if decoupled {
        Algo::AdamW { b1, b2, eps }
    } else {
        Algo::Adam { b1, b2, eps }
    };
    Ok(make(algo, lr, wd, schedule_arg(&a, 4, name)?))
}

pub fn f_adam(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    adam_like("Adam", args, kw, 0.0, false)
}

pub fn f_adamw(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    adam_like("AdamW", args, kw, 0.01, true)
}

/// The default optimizer of `fit`: `Adam()`.
pub fn default_adam() -> Value {
    make(
        Algo::Adam {
            b1: 0.9,
            b2: 0.999,
            eps: 1e-8,
        },
        0.001,
        0.0,
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn cosine_and_step_schedules_follow_pytorch() {
        let c = Schedule::Cosine {
            total: 4,
            min_lr: 0.0,
            warmup: 0,
            per_step: false,
        };
        let got: Vec<f64> = (0..6).map(|k| c.lr(0.1, k)).collect();
        let want = [0.1, 0.0853553390593274, 0.05, 0.014644660940672627, 0.0, 0.0];
        for (g, w) in got.iter().zip(want) {
            assert!(close(*g, w), "{got:?}");
        }
        let w = Schedule::Cosine {
            total: 6,
            min_lr: 0.0,
            warmup: 2,
            per_step: true,
        };
        assert!(close(w.lr(0.1, 0), 0.05) && close(w.lr(0.1, 1), 0.1) && close(w.lr(0.1, 2), 0.1));
        let s = Schedule::Step {
            every: 2,
            gamma: 0.5,
            per_step: false,
        };
        let got: Vec<f64> = (0..6).map(|k| s.lr(1.0, k)).collect();
        assert_eq!(got, [1.0, 1.0, 0.5, 0.5, 0.25, 0.25]);
    }

    fn opt(algo: Algo, lr: f64, wd: f64) -> Optimizer {
        Optimizer {
            algo,
            lr,
            weight_decay: wd,
            schedule: None,
            state: Mutex::new(State {
                steps: 0,
                epochs: 0,
                slots: Vec::new(),
            }),
        }
    }

    #[test]
    fn adam_steps_equal_the_textbook_formula_in_f64() {
        let o = opt(
            Algo::Adam {
                b1: 0.9,
                b2: 0.999,
                eps: 1e-8,
            },
            0.1,
            0.0,
        );
        let p = Tensor::from_vec(vec![1.0f64, -2.0], vec![2]);
        let grads = [[0.5, -1.0], [0.25, 3.0]];
        let (mut m, mut v, mut w) = ([0.0f64; 2], [0.0f64; 2], [1.0f64, -2.0]);
        for (t, g) in grads.iter().enumerate() {
            o.step(std::slice::from_ref(&p), &[Some(Tensor::from_vec(g.to_vec(), vec![2]))])
                .unwrap();
            let t = (t + 1) as i32;
            for k in 0..2 {
                m[k] = 0.9 * m[k] + 0.1 * g[k];
                v[k] = 0.999 * v[k] + 0.001 * g[k] * g[k];
                let mh = m[k] / (1.0 - 0.9f64.powi(t));
                let vh = v[k] / (1.0 - 0.999f64.powi(t));
                w[k] -= 0.1 * mh / (vh.sqrt() + 1e-8);
            }
        }
        let got: Vec<f64> = p.to_vec();
        for k in 0..2 {
            assert!((got[k] - w[k]).abs() < 1e-12, "{got:?} {w:?}");
        }
        assert_eq!(o.steps(), 2);
    }

    #[test]
    fn sgd_momentum_and_nesterov_and_weight_decay() {
        let o = opt(
            Algo::Sgd {
                momentum: 0.9,
                nesterov: true,
            },
            0.1,
            0.01,
        );
        let p = Tensor::from_vec(vec![1.0f64], vec![1]);
        let (mut w, mut b) = (1.0f64, 0.0f64);
        for t in 0..3 {
            let g = 0.5 * (t as f64 + 1.0);
            o.step(std::slice::from_ref(&p), &[Some(Tensor::from_vec(vec![g], vec![1]))])
                .unwrap();
            let d = g + 0.01 * w;
            b = if t == 0 { d } else { 0.9 * b + d };
            w -= 0.1 * (d + 0.9 * b);
        }
        assert!(close(p.to_vec::<f64>()[0], w));
        // a gradient that is missing leaves the parameter alone
        o.step(std::slice::from_ref(&p), &[None]).unwrap();
        assert!(close(p.to_vec::<f64>()[0], w));
    }

    #[test]
    fn f32_parameters_update_in_f32() {
        let o = opt(
            Algo::AdamW {
                b1: 0.9,
                b2: 0.999,
                eps: 1e-8,
            },
            0.01,
            0.1,
        );
        let p = Tensor::from_vec(vec![0.3f32, 0.7], vec![2]);
        o.step(
            std::slice::from_ref(&p),
            &[Some(Tensor::from_vec(vec![1.0f32, -1.0], vec![2]))],
        )
        .unwrap();
        assert_eq!(p.dtype, DType::F32);
        let got: Vec<f32> = p.to_vec();
        // first Adam step moves each weight by lr·sign(g), after the decay
        assert!((got[0] - (0.3 * (1.0 - 0.001) - 0.01)).abs() < 1e-6, "{got:?}");
        assert!((got[1] - (0.7 * (1.0 - 0.001) + 0.01)).abs() < 1e-6, "{got:?}");
    }
}
