//! Wall-time figures as every timing tool of Apsi reports them: the
//! prelude's `bench` and `@timed`, `apsi bench`, `apsi run --time` and the
//! REPL's `:time`/`:bench` (one summary, one way of writing a duration).

/// best / median / mean / worst of a set of runs, in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub best: f64,
    pub median: f64,
    pub mean: f64,
    pub worst: f64,
}

impl Summary {
    /// The summary of `times` (seconds, any order); `None` when empty.
    pub fn of(times: &[f64]) -> Option<Summary> {
        if times.is_empty() {
            return None;
        }
        let mut t = times.to_vec();
        t.sort_by(|x, y| x.total_cmp(y));
        let mid = t.len() / 2;
        let median = if t.len() % 2 == 1 {
            t[mid]
        } else {
            (t[mid - 1] + t[mid]) / 2.0
        };
        Some(Summary {
            n: t.len(),
            best: t[0],
            median,
            mean: t.iter().sum::<f64>() / t.len() as f64,
            worst: t[t.len() - 1],
        })
    }

    /// `5 runs: best 1.203 ms, median 1.250 ms, mean 1.262 ms, worst 1.390 ms`
    pub fn line(&self) -> String {
        format!(
            "{} run{}: best {}, median {}, mean {}, worst {}",
            self.n,
            if self.n == 1 { "" } else { "s" },
            fmt_seconds(self.best),
            fmt_seconds(self.median),
            fmt_seconds(self.mean),
            fmt_seconds(self.worst)
        )
    }

    /// `{"runs": 5, "best_s": …, "median_s": …, "mean_s": …, "worst_s": …}`
    pub fn json(&self) -> String {
        format!(
            "{{\"runs\": {}, \"best_s\": {:e}, \"median_s\": {:e}, \"mean_s\": {:e}, \"worst_s\": {:e}}}",
            self.n, self.best, self.median, self.mean, self.worst
        )
    }
}

/// A duration in the unit that suits it: `1.234 s`, `12.345 ms`, `3.210 µs`.
pub fn fmt_seconds(s: f64) -> String {
    if !s.is_finite() {
        return format!("{s} s");
    }
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.3} µs", s * 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_runs() {
        let s = Summary::of(&[0.004, 0.001, 0.003, 0.002]).unwrap();
        assert_eq!((s.n, s.best, s.worst), (4, 0.001, 0.004));
        assert!((s.median - 0.0025).abs() < 1e-12);
        assert!((s.mean - 0.0025).abs() < 1e-12);
        assert_eq!(
            s.line(),
            "4 runs: best 1.000 ms, median 2.500 ms, mean 2.500 ms, worst 4.000 ms"
        );
        assert!(s.json().starts_with("{\"runs\": 4, \"best_s\": 1e-3"), "{}", s.json());
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(
            Summary::of(&[2.0]).unwrap().line(),
            "1 run: best 2.000 s, median 2.000 s, mean 2.000 s, worst 2.000 s"
        );
    }

    #[test]
    fn units() {
        assert_eq!(fmt_seconds(1.5), "1.500 s");
        assert_eq!(fmt_seconds(0.0125), "12.500 ms");
        assert_eq!(fmt_seconds(0.0000032), "3.200 µs");
    }
}
