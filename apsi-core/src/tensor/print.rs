//! Printing tensors (LANGUAGE.md §3): `tensor([1.0, 2.5])` for f64, with
//! `dtype=…` otherwise; one row per line for 2-D and up (aligned under the
//! first row, elements right-aligned to the widest so columns line up, blank
//! lines between blocks as NumPy does); past 1,000
//! elements every axis shows its first and last 3 entries around `...`; an
//! empty tensor of 2 or more axes is `tensor([], shape=(2, 0))`.

use super::core::Tensor;
use super::dtype::DType;
use crate::format::{f32_repr, float_repr};

/// Past this many elements a tensor prints summarized.
pub const THRESHOLD: usize = 1000;
/// How many first and last entries of each axis a summarized tensor shows.
pub const EDGE: usize = 3;

/// Every element's text, as `print` writes it, in row-major order.
pub fn elem_strings(t: &Tensor) -> Vec<String> {
    match t.dtype {
        DType::F64 => t.to_vec::<f64>().into_iter().map(float_repr).collect(),
        d if d.is_float() => t.to_vec::<f32>().into_iter().map(f32_repr).collect(),
        DType::Bool => t
            .to_vec::<bool>()
            .into_iter()
            .map(|b| if b { "true".into() } else { "false".into() })
            .collect(),
        _ => t.to_vec::<i64>().into_iter().map(|i| i.to_string()).collect(),
    }
}

/// The text of a tensor as `print` shows it.
pub fn tensor_str(t: &Tensor) -> String {
    let prefix = "tensor(";
    let body = if t.ndim() == 0 {
        elem_strings(t).into_iter().next().unwrap_or_default()
    } else if t.size() == 0 && t.ndim() >= 2 {
        // As NumPy: no rows are walked (an axis may be huge), the shape is named.
        let dims: Vec<String> = t.shape().iter().map(|d| d.to_string()).collect();
        format!("[], shape=({})", dims.join(", "))
    } else {
        let summarize = t.size() > THRESHOLD;
        let mut elems = elem_strings(t);
        if t.ndim() >= 2 {
            // Columns line up: every element right-aligned to the widest.
            let w = elems.iter().map(|s| s.chars().count()).max().unwrap_or(0);
            for s in elems.iter_mut() {
                let pad = w - s.chars().count();
                if pad > 0 {
                    *s = format!("{}{s}", " ".repeat(pad));
                }
            }
        }
        let mut out = String::new();
        block(&elems, t.shape(), 0, 0, summarize, prefix.len(), &mut out);
        out
    };
    if t.dtype == DType::F64 {
        format!("{prefix}{body})")
    } else {
        format!("{prefix}{body}, dtype={})", t.dtype.name())
    }
}

/// Writes the block of `shape` starting at flat element `start`.
fn block(
    elems: &[String],
    shape: &[usize],
    depth: usize,
    start: usize,
    summarize: bool,
    indent: usize,
    out: &mut String,
) {
    let n = shape[depth];
    let inner: usize = shape[depth + 1..].iter().product();
    let last = depth + 1 == shape.len();
    let picks: Vec<Option<usize>> = if summarize && n > 2 * EDGE {
        (0..EDGE)
            .map(Some)
            .chain(std::iter::once(None))
            .chain((n - EDGE..n).map(Some))
            .collect()
    } else {
        (0..n).map(Some).collect()
    };
    out.push('[');
    for (k, p) in picks.iter().enumerate() {
        if k > 0 {
            out.push(',');
            if last {
                out.push(' ');
            } else {
                let blank = shape.len() - depth - 2;
                for _ in 0..=blank {
                    out.push('\n');
                }
                out.push_str(&" ".repeat(indent + depth + 1));
            }
        }
        match p {
            None => out.push_str("..."),
            Some(i) => {
                if last {
                    out.push_str(elems.get(start + i).map(|s| s.as_str()).unwrap_or(""));
                } else {
                    block(elems, shape, depth + 1, start + i * inner, summarize, indent, out);
                }
            }
        }
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_like_the_spec() {
        let t = Tensor::from_vec(vec![1.0f64, 2.5], vec![2]);
        assert_eq!(tensor_str(&t), "tensor([1.0, 2.5])");
        let i = Tensor::from_vec(vec![1i64, 2, 3, 4], vec![2, 2]);
        assert_eq!(tensor_str(&i), "tensor([[1, 2],\n        [3, 4]], dtype=i64)");
        let f = Tensor::from_vec(vec![0.1f32, 1e-5], vec![2]);
        assert_eq!(tensor_str(&f), "tensor([0.1, 1e-05], dtype=f32)");
        let p = Tensor::from_vec(vec![1.0f64, -2.5, 10.0, 4.0], vec![2, 2]);
        assert_eq!(tensor_str(&p), "tensor([[ 1.0, -2.5],\n        [10.0,  4.0]])");
        let c = Tensor::from_vec((0..8i64).collect(), vec![2, 2, 2]);
        assert_eq!(
            tensor_str(&c),
            "tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n         [6, 7]]], dtype=i64)"
        );
    }

    #[test]
    fn empty_tensors_name_their_shape_and_walk_no_axis() {
        let e = Tensor::from_vec(Vec::<f64>::new(), vec![0]);
        assert_eq!(tensor_str(&e), "tensor([])");
        let e = Tensor::from_vec(Vec::<i64>::new(), vec![2, 0]);
        assert_eq!(tensor_str(&e), "tensor([], shape=(2, 0), dtype=i64)");
        // An axis of 2^62 rows of nothing: printed at once, nothing allocated per row.
        let e = Tensor::from_vec(Vec::<f64>::new(), vec![1 << 62, 0]);
        assert_eq!(tensor_str(&e), "tensor([], shape=(4611686018427387904, 0))");
    }

    #[test]
    fn abbreviates_past_a_thousand() {
        let t = Tensor::from_vec((0..2000i64).collect(), vec![2000]);
        assert_eq!(tensor_str(&t), "tensor([0, 1, 2, ..., 1997, 1998, 1999], dtype=i64)");
    }
}
