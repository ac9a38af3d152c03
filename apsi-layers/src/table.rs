//! Plain-text tables, for what `summary` and `check_torch` print.

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// The rows as lines: each column padded to its widest cell (counted in
/// characters) and aligned as `align` says, columns two spaces apart,
/// trailing spaces trimmed.
pub fn lines<R: AsRef<[String]>>(rows: &[R], align: &[Align]) -> Vec<String> {
    let widths: Vec<usize> = (0..align.len())
        .map(|k| {
            rows.iter()
                .map(|r| r.as_ref().get(k).map_or(0, |c| c.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    rows.iter()
        .map(|r| {
            let cells: Vec<String> = r
                .as_ref()
                .iter()
                .zip(align.iter().zip(&widths))
                .map(|(c, (a, &w))| match a {
                    Align::Left => format!("{c:<w$}"),
                    Align::Right => format!("{c:>w$}"),
                })
                .collect();
            cells.join("  ").trim_end().to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_padded_aligned_and_trimmed() {
        let rows = vec![
            vec!["layer".to_string(), "n".to_string(), "".to_string()],
            vec!["Dense".to_string(), "1234".to_string(), "✓".to_string()],
        ];
        assert_eq!(
            lines(&rows, &[Align::Left, Align::Right, Align::Left]),
            vec!["layer     n".to_string(), "Dense  1234  ✓".to_string()]
        );
    }
}
