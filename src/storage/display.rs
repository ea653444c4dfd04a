//! Printing entries the way numpy's `str` does, for `Display` of the built-in kinds.
//!
//! * An entry prints as `re` when its imaginary part is zero, else as `re+imi` (`0+2i`, `1-0.5i`);
//!   reals with up to 8 decimals, trailing zeros trimmed (numpy's default precision), and in
//!   exponent form outside `1e-4 ≤ |x| < 1e8` (`1.5e-10`). A precision (`{:.3}`) replaces the 8.
//! * A matrix prints on one line when that fits in [`LINE_WIDTH`] characters
//!   (`[[0+2i, 0], [0, 0-2i]]`), else one row per line with aligned columns.
//! * Above [`THRESHOLD`] entries only the first and last [`EDGE_ITEMS`] rows and columns print,
//!   with `...` between them, so printing a 10⁹-dimensional operator costs O(1) lookups.
//! * The alternate form (`{:#}`) prints the summary instead: `Dense(2×2)`, `Csr(2×3, nnz=2)`.

use std::fmt::{self, Write as _};

use crate::scalar::c64;

/// Matrices with more entries than this print truncated (numpy's `threshold`).
pub const THRESHOLD: usize = 1000;
/// Rows and columns kept at each edge of a truncated matrix (numpy's `edgeitems`).
pub const EDGE_ITEMS: usize = 3;
/// The one-line form is used when it is at most this long (numpy's `linewidth`).
pub const LINE_WIDTH: usize = 75;
/// Decimals printed when the formatter gives no precision (numpy's `precision`).
pub const PRECISION: usize = 8;

/// Formats one real number: integers without a point, others with up to `precision` decimals
/// (trailing zeros trimmed), exponent form for very small or very large magnitudes.
fn real(x: f64, precision: usize, out: &mut String) {
    if !x.is_finite() {
        let _ = write!(
            out,
            "{}",
            if x.is_nan() {
                "NaN".into()
            } else {
                x.to_string()
            }
        );
        return;
    }
    let a = x.abs();
    if a != 0.0 && !(1e-4..1e8).contains(&a) {
        let s = format!("{x:.precision$e}");
        // "1.50000000e-10" -> "1.5e-10"
        match s.split_once('e') {
            Some((mantissa, exp)) => {
                out.push_str(trim_zeros(mantissa));
                out.push('e');
                out.push_str(exp);
            }
            None => out.push_str(&s),
        }
        return;
    }
    let s = format!("{x:.precision$}");
    let t = trim_zeros(&s);
    // "-0" from a tiny negative rounded away reads as zero.
    out.push_str(if t == "-0" { "0" } else { t });
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Formats one entry: `re` if the imaginary part is zero, else `re±|im|i`.
pub(crate) fn entry(z: c64, precision: usize) -> String {
    let mut s = String::new();
    real(z.re, precision, &mut s);
    if z.im != 0.0 {
        let mut im = String::new();
        real(z.im, precision, &mut im);
        if im == "0" {
            // The imaginary part rounds to zero at this precision.
            return s;
        }
        if !im.starts_with('-') {
            s.push('+');
        }
        s.push_str(&im);
        s.push('i');
    }
    s
}

/// The indices printed along one axis of length `n`: all of them, or the edges with a gap
/// (`None`) between.
fn axis(n: usize, truncate: bool) -> Vec<Option<usize>> {
    if !truncate || n <= 2 * EDGE_ITEMS {
        (0..n).map(Some).collect()
    } else {
        (0..EDGE_ITEMS)
            .map(Some)
            .chain(std::iter::once(None))
            .chain((n - EDGE_ITEMS..n).map(Some))
            .collect()
    }
}

/// Writes the entries of a `rows × cols` matrix whose entry `(i, j)` is `get(i, j)`.
pub(crate) fn matrix(
    f: &mut fmt::Formatter<'_>,
    shape: (usize, usize),
    get: impl Fn(usize, usize) -> c64,
) -> fmt::Result {
    let (rows, cols) = shape;
    let precision = f.precision().unwrap_or(PRECISION);
    let truncate = rows.checked_mul(cols).is_none_or(|n| n > THRESHOLD);
    let row_idx = axis(rows, truncate);
    let col_idx = axis(cols, truncate);
    if rows == 0 || cols == 0 {
        // numpy prints `[]` for any empty array; the shape tells the rest.
        return write!(f, "[]");
    }
    // One entry per printed cell; `None` is the row gap of a truncated matrix.
    let cells: Vec<Option<Vec<String>>> = row_idx
        .iter()
        .map(|i| {
            i.map(|i| {
                col_idx
                    .iter()
                    .map(|j| match j {
                        Some(j) => entry(get(i, *j), precision),
                        None => "...".to_owned(),
                    })
                    .collect()
            })
        })
        .collect();
    let one_line = {
        let rows: Vec<String> = cells
            .iter()
            .map(|row| match row {
                Some(r) => format!("[{}]", r.join(", ")),
                None => "...".to_owned(),
            })
            .collect();
        format!("[{}]", rows.join(", "))
    };
    if one_line.chars().count() <= LINE_WIDTH {
        return f.write_str(&one_line);
    }
    // One row per line, each column right-aligned to its widest entry (as numpy does); the
    // row gap is a line of its own.
    let widths: Vec<usize> = (0..col_idx.len())
        .map(|j| {
            cells
                .iter()
                .flatten()
                .map(|r| r[j].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    f.write_str("[")?;
    for (k, row) in cells.iter().enumerate() {
        if k > 0 {
            f.write_str(",\n ")?;
        }
        let Some(row) = row else {
            f.write_str("...")?;
            continue;
        };
        f.write_str("[")?;
        for (j, cell) in row.iter().enumerate() {
            if j > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{cell:>w$}", w = widths[j])?;
        }
        f.write_str("]")?;
    }
    f.write_str("]")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(re: f64, im: f64) -> String {
        entry(c64::new(re, im), PRECISION)
    }

    #[test]
    fn entries_read_like_numbers() {
        assert_eq!(e(0.0, 0.0), "0");
        assert_eq!(e(0.0, 2.0), "0+2i");
        assert_eq!(e(0.0, -2.0), "0-2i");
        assert_eq!(e(1.0, 0.0), "1");
        assert_eq!(e(-0.5, 0.25), "-0.5+0.25i");
        assert_eq!(e(0.1 + 0.2, 0.0), "0.3");
        assert_eq!(e(1.0 / 3.0, 0.0), "0.33333333");
        assert_eq!(e(1.5e-10, 0.0), "1.5e-10");
        assert_eq!(e(2e9, -1e-12), "2e9-1e-12i");
        assert_eq!(e(f64::NAN, f64::INFINITY), "NaN+infi");
        assert_eq!(e(f64::NEG_INFINITY, 0.0), "-inf");
        assert_eq!(e(-1e-12 * 0.0, 0.0), "0");
        assert_eq!(entry(c64::new(1.0 / 3.0, 1e-9), 3), "0.333+1e-9i");
    }

    struct M(usize, usize);
    impl fmt::Display for M {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            matrix(f, (self.0, self.1), |i, j| {
                c64::new(i.wrapping_mul(10).wrapping_add(j) as f64, 0.0)
            })
        }
    }

    #[test]
    fn small_prints_on_one_line_larger_aligned_huge_truncated() {
        assert_eq!(M(2, 2).to_string(), "[[0, 1], [10, 11]]");
        assert_eq!(M(0, 5).to_string(), "[]");
        let six = M(6, 6).to_string();
        assert_eq!(six.lines().count(), 6);
        assert!(
            six.starts_with("[[ 0,  1,  2,  3,  4,  5],\n [10, 11,"),
            "{six}"
        );
        let huge = M(usize::MAX, usize::MAX).to_string();
        assert_eq!(huge.lines().count(), 7);
        assert!(huge.contains("..."));
        let wide = M(1, 2000).to_string();
        assert_eq!(wide, "[[0, 1, 2, ..., 1997, 1998, 1999]]");
    }
}
