//! Graph helpers (LAYERS.md §2): `scatter_reduce` with PyTorch's semantics
//! (the core's tensor operation, differentiable in `x` and `src`).

use crate::layer::tensor_arg;
use apsi_core::api::tensor::{scatter_reduce, tensor_value};
use apsi_core::api::{err, Args, Caller, ErrorKind, Kwargs, VResult, Value};

/// `scatter_reduce(x, dim, index, src, reduce, include_self=true)`.
pub fn f_scatter_reduce(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new(
        "scatter_reduce",
        args,
        kw,
        5,
        &["x", "dim", "index", "src", "reduce", "include_self"],
    )?;
    let x = tensor_arg(c, "scatter_reduce", a.req(0)?)?;
    let dim = a.int(1)?;
    let nd = x.ndim() as i64;
    let d = if dim < 0 { dim + nd } else { dim };
    if d < 0 || (d >= nd && nd > 0) || (nd == 0 && d != 0) {
        return Err(err(
            ErrorKind::IndexError,
            format!("scatter_reduce: dim {dim} is out of range for a tensor of {nd} dimensions"),
        ));
    }
    let index = tensor_arg(c, "scatter_reduce", a.req(2)?)?;
    let src = tensor_arg(c, "scatter_reduce", a.req(3)?)?;
    let reduce = a.str(4)?;
    let include_self = a.bool_or(5, true)?;
    Ok(tensor_value(scatter_reduce(
        &x,
        d as usize,
        &index,
        &src,
        reduce,
        include_self,
    )?))
}
