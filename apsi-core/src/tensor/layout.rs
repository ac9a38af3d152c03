//! Shapes, strides and offsets: how a view maps indices to storage.

use crate::error::ErrorKind;
use crate::value::{err, Exc};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub shape: Vec<usize>,
    /// In elements; may be negative (reversed slices) or 0 (broadcast).
    pub strides: Vec<isize>,
    pub offset: usize,
}

pub fn row_major_strides(shape: &[usize]) -> Vec<isize> {
    let mut s = vec![0isize; shape.len()];
    let mut acc = 1isize;
    for i in (0..shape.len()).rev() {
        s[i] = acc;
        acc = acc.saturating_mul(shape[i].max(1) as isize);
    }
    s
}

/// The element count of a shape, or an error when it overflows. The
/// product of the non-zero axes must fit too, since strides are computed
/// from it even when another axis is 0 (`(0, 2**62, 2**62)` is refused).
pub fn checked_size(shape: &[usize]) -> Result<usize, Exc> {
    let nonzero = shape
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .filter(|&p| p <= isize::MAX as usize);
    let n = nonzero
        .and_then(|_| shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d)))
        .ok_or_else(|| {
            err(
                ErrorKind::MemoryError,
                format!(
                    "a tensor of shape {} is too large: its size overflows",
                    shape_str(shape)
                ),
            )
        })?;
    // The description is formatted only for a size check_alloc examines
    // (this runs for every new tensor).
    if n > CHECK_FROM {
        check_alloc(n, &format!("a tensor of shape {}", shape_str(shape)))?;
    }
    Ok(n)
}

/// Elements up to which [`check_alloc`] accepts a request without looking.
const CHECK_FROM: usize = 1 << 20;

/// Refuses (with a `MemoryError`, not an abort or the kernel's OOM killer)
/// `n` elements the machine cannot hold, counted at the widest element
/// type (8 bytes): more than its memory and swap (or a lower cgroup
/// limit), or an address-space reservation the allocator refuses. The
/// allocator's own reservation is not enough on its own: it may reserve
/// without committing (overcommit), and filling the memory then kills
/// the process.
pub fn check_alloc(n: usize, what: &str) -> Result<(), Exc> {
    if n <= CHECK_FROM {
        return Ok(());
    }
    let bytes = n
        .checked_mul(8)
        .ok_or_else(|| err(ErrorKind::MemoryError, format!("{what} is too large")))?;
    let too_large = || {
        err(
            ErrorKind::MemoryError,
            format!(
                "{what} is too large for this machine's memory ({:.1} GiB at 8 bytes per element)",
                bytes as f64 / (1u64 << 30) as f64
            ),
        )
    };
    if memory_limit().is_some_and(|limit| bytes as u64 > limit) {
        return Err(too_large());
    }
    let mut probe: Vec<u8> = Vec::new();
    probe.try_reserve_exact(bytes).map_err(|_| too_large())
}

/// The most memory this process could be given: RAM plus swap from
/// `/proc/meminfo`, or a lower cgroup v2 limit; `None` where unknown.
fn memory_limit() -> Option<u64> {
    static LIMIT: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        let info = std::fs::read_to_string("/proc/meminfo").ok()?;
        let field = |name: &str| -> Option<u64> {
            let line = info.lines().find(|l| l.starts_with(name))?;
            let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            kb.checked_mul(1024)
        };
        let total = field("MemTotal:")?.saturating_add(field("SwapTotal:").unwrap_or(0));
        let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok());
        Some(cgroup.map_or(total, |c| c.min(total)))
    })
}

/// A shape as Python prints a tuple: `(2, 3)`, `(3,)`, `()`.
pub fn shape_str(shape: &[usize]) -> String {
    match shape.len() {
        0 => "()".into(),
        1 => format!("({},)", shape[0]),
        _ => format!(
            "({})",
            shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")
        ),
    }
}

impl Layout {
    pub fn contiguous(shape: Vec<usize>) -> Layout {
        let strides = row_major_strides(&shape);
        Layout {
            shape,
            strides,
            offset: 0,
        }
    }

    pub fn size(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Row-major and gap-free (dimensions of length 1 may have any stride).
    pub fn is_contiguous(&self) -> bool {
        let mut acc = 1isize;
        for i in (0..self.shape.len()).rev() {
            if self.shape[i] != 1 {
                if self.strides[i] != acc {
                    return false;
                }
                acc *= self.shape[i] as isize;
            }
        }
        true
    }

    /// The strides that read this layout as if broadcast to `out` (0 on
    /// stretched and missing leading dimensions). `out` must be a broadcast
    /// of this shape.
    pub fn broadcast_strides(&self, out: &[usize]) -> Vec<isize> {
        let lead = out.len() - self.shape.len();
        let mut s = vec![0isize; out.len()];
        for (i, (&d, &st)) in self.shape.iter().zip(&self.strides).enumerate() {
            s[lead + i] = if d == 1 { 0 } else { st };
        }
        s
    }

    pub fn permuted(&self, perm: &[usize]) -> Layout {
        Layout {
            shape: perm.iter().map(|&p| self.shape[p]).collect(),
            strides: perm.iter().map(|&p| self.strides[p]).collect(),
            offset: self.offset,
        }
    }

    /// Storage offsets of every element in row-major order.
    pub fn offsets(&self) -> Vec<usize> {
        let mut v = Vec::with_capacity(self.size());
        for_each_offset(&self.shape, &self.strides, self.offset, |o| v.push(o));
        v
    }
}

/// NumPy's broadcast of two shapes, or a `ShapeError` naming both.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Vec<usize>, Exc> {
    let n = a.len().max(b.len());
    let mut out = vec![0usize; n];
    for i in 0..n {
        let da = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let db = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(err(
                ErrorKind::ShapeError,
                format!(
                    "shapes {} and {} cannot be broadcast together",
                    shape_str(a),
                    shape_str(b)
                ),
            ));
        };
    }
    Ok(out)
}

/// Calls `f` with the storage offset where each row of a strided view
/// starts (a row runs along the last axis), in row-major order; nothing for
/// a view with no axes or no elements. The zero may be in the last axis
/// alone: a `(2**40, 0)` view has 2**40 rows, all empty, and none is walked.
pub fn for_each_row(shape: &[usize], strides: &[isize], offset: usize, f: impl FnMut(usize)) {
    let Some((&last, outer)) = shape.split_last() else {
        return;
    };
    if last > 0 {
        for_each_offset(outer, &strides[..outer.len()], offset, f);
    }
}

/// Calls `f` with the storage offset of every element of a strided view, in
/// row-major order of `shape`.
#[inline]
pub fn for_each_offset(shape: &[usize], strides: &[isize], offset: usize, mut f: impl FnMut(usize)) {
    let n = shape.len();
    if shape.contains(&0) {
        return;
    }
    if n == 0 {
        f(offset);
        return;
    }
    let last = shape[n - 1];
    let ls = strides[n - 1];
    let mut idx = vec![0usize; n];
    let mut base = offset as isize;
    loop {
        let mut o = base;
        for _ in 0..last {
            f(o as usize);
            o += ls;
        }
        // advance the outer index
        let mut d = n - 1;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            base += strides[d];
            if idx[d] < shape[d] {
                break;
            }
            base -= strides[d] * shape[d] as isize;
            idx[d] = 0;
        }
    }
}

/// Walks two strided views of one `shape` together: calls `f` with the
/// storage offsets of the same element in each, in row-major order.
#[inline]
pub fn for_each_offset2(
    shape: &[usize],
    (sa, oa): (&[isize], usize),
    (sb, ob): (&[isize], usize),
    mut f: impl FnMut(usize, usize),
) {
    let n = shape.len();
    if shape.contains(&0) {
        return;
    }
    if n == 0 {
        f(oa, ob);
        return;
    }
    let last = shape[n - 1];
    let (la, lb) = (sa[n - 1], sb[n - 1]);
    let mut idx = vec![0usize; n];
    let (mut ba, mut bb) = (oa as isize, ob as isize);
    loop {
        let (mut a, mut b) = (ba, bb);
        for _ in 0..last {
            f(a as usize, b as usize);
            a += la;
            b += lb;
        }
        let mut d = n - 1;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            ba += sa[d];
            bb += sb[d];
            if idx[d] < shape[d] {
                break;
            }
            ba -= sa[d] * shape[d] as isize;
            bb -= sb[d] * shape[d] as isize;
            idx[d] = 0;
        }
    }
}

/// Normalises an axis (negative counts from the end) against `ndim`.
pub fn norm_axis(axis: i64, ndim: usize) -> Result<usize, Exc> {
    let n = ndim as i64;
    let a = if axis < 0 { axis + n } else { axis };
    if a < 0 || a >= n.max(if ndim == 0 { 0 } else { 1 }) || (ndim == 0) {
        return Err(err(
            ErrorKind::IndexError,
            format!("axis {axis} is out of bounds for a tensor of dimension {ndim}"),
        ));
    }
    Ok(a as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_matches_numpy() {
        assert_eq!(broadcast_shapes(&[2, 1], &[3]).ok(), Some(vec![2, 3]));
        assert_eq!(broadcast_shapes(&[], &[4]).ok(), Some(vec![4]));
        let e = broadcast_shapes(&[2], &[3]).err().map(|e| e.message.clone());
        assert_eq!(e.as_deref(), Some("shapes (2,) and (3,) cannot be broadcast together"));
    }

    #[test]
    fn offsets_walk_strided_views() {
        let l = Layout {
            shape: vec![2, 2],
            strides: vec![1, 2],
            offset: 0,
        };
        assert_eq!(l.offsets(), vec![0, 2, 1, 3]);
        let r = Layout {
            shape: vec![3],
            strides: vec![-1],
            offset: 2,
        };
        assert_eq!(r.offsets(), vec![2, 1, 0]);
        assert!(!l.is_contiguous());
        assert!(Layout::contiguous(vec![2, 3]).is_contiguous());
    }

    #[test]
    fn axes_normalise() {
        assert_eq!(norm_axis(-1, 2).ok(), Some(1));
        assert!(norm_axis(2, 2).is_err());
        assert!(norm_axis(0, 0).is_err());
    }
}
