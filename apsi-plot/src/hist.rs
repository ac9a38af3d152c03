//! Histogram bins and counts, as NumPy's `histogram` computes them.

/// `n` equal bins over `range`, or over the data's min..max (a single
/// value v gets v-0.5..v+0.5, as NumPy's).
pub fn even_edges(x: &[f64], n: usize, range: Option<(f64, f64)>) -> Vec<f64> {
    let (lo, hi) = range.unwrap_or_else(|| {
        let lo = x.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if lo < hi {
            (lo, hi)
        } else {
            (lo - 0.5, hi + 0.5)
        }
    });
    let step = (hi - lo) / n as f64;
    let mut e: Vec<f64> = (0..=n).map(|i| lo + step * i as f64).collect();
    e[n] = hi;
    e
}

/// The count in each bin `[e[i], e[i+1])` (the last bin includes its right
/// edge); values outside the edges are not counted. With `density` the
/// counts are divided by (total counted × bin width), so the bars' area is 1.
pub fn counts(x: &[f64], edges: &[f64], density: bool) -> Vec<f64> {
    let n = edges.len() - 1;
    let mut c = vec![0.0; n];
    let (lo, hi) = (edges[0], edges[n]);
    for &v in x {
        if !(v >= lo && v <= hi) {
            continue;
        }
        // The first edge greater than v, less one; the right edge counts in the last bin.
        let i = edges.partition_point(|e| *e <= v).saturating_sub(1).min(n - 1);
        c[i] += 1.0;
    }
    if density {
        let total: f64 = c.iter().sum();
        if total > 0.0 {
            for (i, v) in c.iter_mut().enumerate() {
                *v /= total * (edges[i + 1] - edges[i]);
            }
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_as_numpy() {
        let x = [1.0, 2.0, 2.0, 3.0, 4.0];
        let e = even_edges(&x, 3, None);
        assert_eq!(e, vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(counts(&x, &e, false), vec![1.0, 2.0, 2.0]);
        let d = counts(&x, &e, true);
        assert!((d.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!(even_edges(&[5.0], 2, None), vec![4.5, 5.0, 5.5]);
        assert_eq!(counts(&[0.0, 9.0], &[1.0, 2.0], false), vec![0.0]);
    }
}
