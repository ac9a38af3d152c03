//! A stable merge sort whose comparison may fail (it calls `ops::order`,
//! which raises `TypeError` for values without an order). Rust's own sorts
//! may panic when a comparison is not a total order (NaN); this one never
//! panics and stops at the first error.

use crate::vm::value::VResult;
use std::cmp::Ordering;

/// Sorts `items` stably by `cmp`.
pub(crate) fn merge_sort<T: Clone>(items: &mut [T], cmp: &mut dyn FnMut(&T, &T) -> VResult<Ordering>) -> VResult<()> {
    let n = items.len();
    if n < 2 {
        return Ok(());
    }
    // Insertion sort for short runs.
    if n <= 16 {
        for i in 1..n {
            let mut j = i;
            while j > 0 && cmp(&items[j - 1], &items[j])? == Ordering::Greater {
                items.swap(j - 1, j);
                j -= 1;
            }
        }
        return Ok(());
    }
    let mid = n / 2;
    merge_sort(&mut items[..mid], cmp)?;
    merge_sort(&mut items[mid..], cmp)?;
    let left: Vec<T> = items[..mid].to_vec();
    let right: Vec<T> = items[mid..].to_vec();
    let (mut i, mut j, mut k) = (0, 0, 0);
    while i < left.len() && j < right.len() {
        // Take from the right only when strictly smaller: stability.
        if cmp(&left[i], &right[j])? == Ordering::Greater {
            items[k] = right[j].clone();
            j += 1;
        } else {
            items[k] = left[i].clone();
            i += 1;
        }
        k += 1;
    }
    while i < left.len() {
        items[k] = left[i].clone();
        i += 1;
        k += 1;
    }
    while j < right.len() {
        items[k] = right[j].clone();
        j += 1;
        k += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::ops::Must;

    #[test]
    fn sorts_stably() {
        let mut v: Vec<(i32, usize)> = (0..100).map(|i| ((i * 37 % 11) as i32, i)).collect();
        merge_sort(&mut v, &mut |a, b| Ok(a.0.cmp(&b.0))).must();
        for w in v.windows(2) {
            assert!(w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 < w[1].1));
        }
    }

    #[test]
    fn inconsistent_orders_do_not_panic() {
        let mut v: Vec<f64> = (0..200)
            .map(|i| if i % 7 == 0 { f64::NAN } else { (i * 13 % 17) as f64 })
            .collect();
        merge_sort(&mut v, &mut |a, b| Ok(a.partial_cmp(b).unwrap_or(Ordering::Equal))).must();
    }
}
