//! Matrix Market (`.mtx`) reading; writing is in `mtx_write.rs`.
//!
//! Written here rather than on `sprs::io`: sprs reads only the `coordinate` format, sizes its
//! buffers from the header's entry count (a corrupt count aborts the process), and its writer
//! has no `array` form; polymat needs both formats, the `hermitian` symmetry and errors with
//! line numbers.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use super::{at_path, io_error, stream_error};
use crate::error::{Error, Result};
use crate::scalar::{ZERO, c64};
use crate::storage::{Csr, Data, Dense, alloc};

const FORMAT: &str = "Matrix Market";

/// Entries reserved up front, whatever the header announces; vectors grow as entries arrive.
const RESERVE_CAP: usize = 1 << 16;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Layout {
    Coordinate,
    Array,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Field {
    Real,
    Integer,
    Complex,
    Pattern,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Symmetry {
    General,
    Symmetric,
    SkewSymmetric,
    Hermitian,
}

fn format_error(line: usize, reason: impl Into<String>) -> Error {
    Error::Format {
        format: FORMAT,
        line: Some(line),
        reason: reason.into(),
    }
}

/// Reads lines, counting them, skipping comments (`%…`) and blank lines.
struct Lines<R> {
    reader: R,
    buf: String,
    line: usize,
    op: &'static str,
}

impl<R: BufRead> Lines<R> {
    /// Moves to the next line with content (false at the end); [`Lines::text`] reads it.
    fn next_content(&mut self) -> Result<bool> {
        loop {
            self.buf.clear();
            let n = self
                .reader
                .read_line(&mut self.buf)
                .map_err(|e| match e.kind() {
                    std::io::ErrorKind::InvalidData => {
                        format_error(self.line + 1, "the file is not valid UTF-8 text")
                    }
                    _ => stream_error(self.op, &e),
                })?;
            if n == 0 {
                return Ok(false);
            }
            self.line += 1;
            let t = self.buf.trim();
            if !t.is_empty() && !t.starts_with('%') {
                return Ok(true);
            }
        }
    }

    /// The current line, trimmed.
    fn text(&self) -> &str {
        self.buf.trim()
    }
}

fn parse_header(line: &str) -> std::result::Result<(Layout, Field, Symmetry), String> {
    let mut words = line.split_whitespace();
    let banner = words.next().unwrap_or("");
    if !banner.eq_ignore_ascii_case("%%MatrixMarket") {
        return Err("the first line must start with %%MatrixMarket".to_owned());
    }
    let lower: Vec<String> = words.map(str::to_ascii_lowercase).collect();
    let [object, format, field, symmetry] = lower.as_slice() else {
        return Err(format!(
            "the header needs 4 words after %%MatrixMarket (object format field symmetry), got {}",
            lower.len()
        ));
    };
    if object != "matrix" {
        return Err(format!(
            "object `{object}` is not supported (only `matrix`)"
        ));
    }
    let layout = match format.as_str() {
        "coordinate" => Layout::Coordinate,
        "array" => Layout::Array,
        f => return Err(format!("unknown format `{f}` (coordinate or array)")),
    };
    let field = match field.as_str() {
        "real" | "double" => Field::Real,
        "integer" => Field::Integer,
        "complex" => Field::Complex,
        "pattern" => Field::Pattern,
        f => {
            return Err(format!(
                "unknown field `{f}` (real, double, integer, complex, pattern)"
            ));
        }
    };
    let symmetry = match symmetry.as_str() {
        "general" => Symmetry::General,
        "symmetric" => Symmetry::Symmetric,
        "skew-symmetric" => Symmetry::SkewSymmetric,
        "hermitian" => Symmetry::Hermitian,
        s => {
            return Err(format!(
                "unknown symmetry `{s}` (general, symmetric, skew-symmetric, hermitian)"
            ));
        }
    };
    if layout == Layout::Array && field == Field::Pattern {
        return Err("the array format cannot have the pattern field".to_owned());
    }
    if symmetry == Symmetry::Hermitian && field != Field::Complex {
        return Err("the hermitian symmetry needs the complex field".to_owned());
    }
    Ok((layout, field, symmetry))
}

/// Parses a real number, also in Fortran's `1.5D+03` form.
fn parse_real(s: &str) -> Option<f64> {
    s.parse::<f64>()
        .ok()
        .or_else(|| s.replace(['D', 'd'], "e").parse::<f64>().ok())
}

fn parse_usize(s: &str, what: &str, line: usize) -> Result<usize> {
    s.parse::<usize>()
        .map_err(|_| format_error(line, format!("{what} `{s}` is not a non-negative integer")))
}

/// Parses the value tokens of one entry for `field`.
fn parse_value<'a>(
    field: Field,
    mut tokens: impl Iterator<Item = &'a str>,
    line: usize,
) -> Result<c64> {
    let mut real = |what: &str| -> Result<f64> {
        let t = tokens
            .next()
            .ok_or_else(|| format_error(line, format!("the entry has no {what}")))?;
        match field {
            Field::Integer => t
                .parse::<i64>()
                .map(|v| v as f64)
                .map_err(|_| format_error(line, format!("`{t}` is not an integer"))),
            _ => parse_real(t).ok_or_else(|| format_error(line, format!("`{t}` is not a number"))),
        }
    };
    let v = match field {
        Field::Pattern => c64::new(1.0, 0.0),
        Field::Real | Field::Integer => c64::new(real("value")?, 0.0),
        Field::Complex => {
            let re = real("real part")?;
            c64::new(re, real("imaginary part")?)
        }
    };
    if let Some(extra) = tokens.next() {
        return Err(format_error(
            line,
            format!("unexpected `{extra}` after the entry's value"),
        ));
    }
    Ok(v)
}

/// The entry mirrored across the diagonal under `symmetry`, if it has one.
fn mirror(symmetry: Symmetry, v: c64) -> Option<c64> {
    match symmetry {
        Symmetry::General => None,
        Symmetry::Symmetric => Some(v),
        Symmetry::SkewSymmetric => Some(-v),
        Symmetry::Hermitian => Some(v.conj()),
    }
}

/// Checks a diagonal entry against the symmetry.
fn check_diagonal(symmetry: Symmetry, v: c64, line: usize) -> Result<()> {
    match symmetry {
        Symmetry::SkewSymmetric if v != ZERO => Err(format_error(
            line,
            "a skew-symmetric matrix has a nonzero diagonal entry",
        )),
        Symmetry::Hermitian if v.im != 0.0 => Err(format_error(
            line,
            format!("a hermitian matrix has diagonal entry {v} with an imaginary part"),
        )),
        _ => Ok(()),
    }
}

/// Reads a Matrix Market file: `coordinate` as a [`Csr`], `array` as a [`Dense`].
///
/// Symmetric, skew-symmetric and hermitian files store one triangle; the other is filled in.
/// Duplicate coordinate entries are summed (as scipy does). See [`io`](crate::io) for the
/// formats and the checks.
///
/// # Errors
/// [`Error::Io`] if the file cannot be read, [`Error::Format`] (with the line) if it is not
/// valid Matrix Market, [`Error::TooLarge`] if an `array` file is over the dense limit or a
/// `coordinate` one's index arrays cannot be allocated.
///
/// ```no_run
/// let h = polymat::io::read_matrix_market("hamiltonian.mtx")?;
/// println!("{h:#}");
/// # Ok::<(), polymat::Error>(())
/// ```
pub fn read_matrix_market(path: impl AsRef<Path>) -> Result<Data> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|e| io_error("read_matrix_market", path, &e))?;
    read_from(BufReader::new(file), "read_matrix_market").map_err(|e| at_path(e, path))
}

/// [`read_matrix_market`] from any buffered reader (a file, a decompressor, a byte slice).
///
/// # Errors
/// As [`read_matrix_market`].
///
/// ```
/// let text = "%%MatrixMarket matrix coordinate complex hermitian\n\
///             % sigma_y\n\
///             2 2 1\n\
///             2 1 0 1\n";
/// let sy = polymat::io::read_matrix_market_from(text.as_bytes())?;
/// assert_eq!(sy.to_string(), "[[0, 0-1i], [0+1i, 0]]");
/// # Ok::<(), polymat::Error>(())
/// ```
pub fn read_matrix_market_from(reader: impl BufRead) -> Result<Data> {
    read_from(reader, "read_matrix_market")
}

fn read_from(reader: impl BufRead, op: &'static str) -> Result<Data> {
    let mut lines = Lines {
        reader,
        buf: String::new(),
        line: 0,
        op,
    };
    // The header is the first line, a comment to `next_content`: read it directly.
    lines.buf.clear();
    lines
        .reader
        .read_line(&mut lines.buf)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => format_error(1, "the file is not valid UTF-8 text"),
            _ => stream_error(op, &e),
        })?;
    lines.line = 1;
    if lines.buf.is_empty() {
        return Err(format_error(1, "the file is empty"));
    }
    let (layout, field, symmetry) =
        parse_header(lines.buf.trim()).map_err(|reason| format_error(1, reason))?;

    if !lines.next_content()? {
        return Err(format_error(
            lines.line + 1,
            "the file ends before the size line",
        ));
    }
    let size_line = lines.line;
    let size = lines.text();
    let dims: Vec<&str> = size.split_whitespace().collect();
    let want = if layout == Layout::Coordinate { 3 } else { 2 };
    if dims.len() != want {
        return Err(format_error(
            size_line,
            format!(
                "the size line needs {want} numbers ({}), got `{size}`",
                if want == 3 {
                    "rows columns entries"
                } else {
                    "rows columns"
                }
            ),
        ));
    }
    let rows = parse_usize(dims[0], "the row count", size_line)?;
    let cols = parse_usize(dims[1], "the column count", size_line)?;
    let entries = match layout {
        Layout::Coordinate => Some(parse_usize(dims[2], "the entry count", size_line)?),
        Layout::Array => None,
    };
    if symmetry != Symmetry::General && rows != cols {
        return Err(format_error(
            size_line,
            format!("a {symmetry:?} matrix must be square, this one is {rows}×{cols}"),
        ));
    }
    match entries {
        Some(n) => read_coordinate(&mut lines, (rows, cols), n, field, symmetry),
        None => read_array(&mut lines, (rows, cols), field, symmetry),
    }
}

fn read_coordinate<R: BufRead>(
    lines: &mut Lines<R>,
    shape: (usize, usize),
    entries: usize,
    field: Field,
    symmetry: Symmetry,
) -> Result<Data> {
    let cap = entries.min(RESERVE_CAP);
    let (mut ri, mut ci, mut vals) = (
        alloc::try_with_capacity::<usize>(lines.op, shape, cap)?,
        alloc::try_with_capacity::<usize>(lines.op, shape, cap)?,
        alloc::try_with_capacity::<c64>(lines.op, shape, cap)?,
    );
    let op = lines.op;
    let mut push = |i: usize, j: usize, v: c64| -> Result<()> {
        let len = ri.len();
        if len == ri.capacity() || len == ci.capacity() || len == vals.capacity() {
            // Grow fallibly (doubling): a refused allocation is an error, not an abort.
            let extra = len.max(16);
            ri.try_reserve(extra)
                .and_then(|()| ci.try_reserve(extra))
                .and_then(|()| vals.try_reserve(extra))
                .map_err(|_| Error::TooLarge {
                    op: op.to_owned(),
                    shape,
                    bytes: (len as u128).saturating_mul(2 * 32),
                    limit: None,
                    reason: "the allocator refused the entry arrays".to_owned(),
                })?;
        }
        ri.push(i);
        ci.push(j);
        vals.push(v);
        Ok(())
    };
    for k in 0..entries {
        if !lines.next_content()? {
            return Err(format_error(
                lines.line,
                format!("the file ends after {k} of {entries} entries"),
            ));
        }
        let (line, text) = (lines.line, lines.text());
        let mut tokens = text.split_whitespace();
        let mut index = |what: &str, n: usize| -> Result<usize> {
            let t = tokens
                .next()
                .ok_or_else(|| format_error(line, format!("the entry has no {what} index")))?;
            let i = parse_usize(t, &format!("the {what} index"), line)?;
            if i == 0 || i > n {
                return Err(format_error(
                    line,
                    format!("{what} index {i} is out of range 1..={n}"),
                ));
            }
            Ok(i - 1)
        };
        let i = index("row", shape.0)?;
        let j = index("column", shape.1)?;
        let v = parse_value(field, tokens, line)?;
        if i == j {
            check_diagonal(symmetry, v, line)?;
        }
        push(i, j, v)?;
        if i != j
            && let Some(m) = mirror(symmetry, v)
        {
            push(j, i, m)?;
        }
    }
    if lines.next_content()? {
        return Err(format_error(
            lines.line,
            format!("more entries than the {entries} the size line announces"),
        ));
    }
    Ok(Csr::from_triplets(shape, &ri, &ci, &vals)?.into())
}

fn read_array<R: BufRead>(
    lines: &mut Lines<R>,
    shape: (usize, usize),
    field: Field,
    symmetry: Symmetry,
) -> Result<Data> {
    let (rows, cols) = shape;
    // A bra row-major, unpadded (`Dense`'s docs, "Memory of a one-row matrix").
    let mut d = Dense::zeros_public(lines.op, rows, cols)?;
    let mut mat = d.view_mut();
    // Column-major; symmetric files hold the lower triangle (strictly lower when skew).
    for j in 0..cols {
        let first = match symmetry {
            Symmetry::General => 0,
            Symmetry::SkewSymmetric => j + 1,
            Symmetry::Symmetric | Symmetry::Hermitian => j,
        };
        for i in first..rows {
            if !lines.next_content()? {
                return Err(format_error(
                    lines.line,
                    format!(
                        "the file ends before entry ({}, {}) of the array",
                        i + 1,
                        j + 1
                    ),
                ));
            }
            let (line, text) = (lines.line, lines.text());
            let v = parse_value(field, text.split_whitespace(), line)?;
            if i == j {
                check_diagonal(symmetry, v, line)?;
            }
            mat[(i, j)] = v;
            if i != j
                && let Some(m) = mirror(symmetry, v)
            {
                mat[(j, i)] = m;
            }
        }
    }
    if lines.next_content()? {
        return Err(format_error(
            lines.line,
            format!("more values than the {rows}×{cols} array holds"),
        ));
    }
    Ok(d.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Data> {
        read_matrix_market_from(text.as_bytes())
    }

    fn reason(text: &str) -> String {
        read(text).unwrap_err().to_string()
    }

    #[test]
    fn symmetries_fill_the_other_triangle() {
        let sym = read("%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n2 1 5\n3 3 -1\n")
            .unwrap();
        assert_eq!(sym.to_string(), "[[0, 5, 0], [5, 0, 0], [0, 0, -1]]");
        let skew = read("%%MatrixMarket matrix array integer skew-symmetric\n2 2\n7\n").unwrap();
        assert_eq!(skew.to_string(), "[[0, -7], [7, 0]]");
        let herm =
            read("%%MatrixMarket matrix array complex hermitian\n2 2\n1 0\n2 3\n4 0\n").unwrap();
        assert_eq!(herm.to_string(), "[[1, 2-3i], [2+3i, 4]]");
        let pattern =
            read("%%MatrixMarket matrix coordinate pattern general\n% c\n\n2 3 2\n1 3\n2 1\n")
                .unwrap();
        assert_eq!(pattern.to_string(), "[[0, 0, 1], [1, 0, 0]]");
        let fortran = read("%%matrixmarket MATRIX Array Double General\n1 1\n1.5D+01\n").unwrap();
        assert_eq!(fortran.to_string(), "[[15]]");
    }

    #[test]
    fn malformed_files_are_errors_with_lines() {
        let h = "%%MatrixMarket matrix coordinate real general\n";
        for (text, want) in [
            ("", "the file is empty"),
            ("hello\n", "must start with %%MatrixMarket"),
            ("%%MatrixMarket matrix coordinate real\n", "needs 4 words"),
            (
                "%%MatrixMarket vector coordinate real general\n",
                "object `vector`",
            ),
            (
                "%%MatrixMarket matrix array pattern general\n",
                "cannot have the pattern",
            ),
            (
                "%%MatrixMarket matrix array real hermitian\n",
                "needs the complex field",
            ),
            (h, "ends before the size line"),
            (&format!("{h}2 2\n"), "needs 3 numbers"),
            (&format!("{h}2 -2 1\n"), "line 2: the column count `-2`"),
            (
                &format!("{h}2 2 2\n1 1 1\n"),
                "line 3: the file ends after 1 of 2",
            ),
            (
                &format!("{h}2 2 1\n3 1 1\n"),
                "line 3: row index 3 is out of range 1..=2",
            ),
            (
                &format!("{h}2 2 1\n1 0 1\n"),
                "column index 0 is out of range",
            ),
            (&format!("{h}2 2 1\n1 1 x\n"), "`x` is not a number"),
            (&format!("{h}2 2 1\n1 1\n"), "the entry has no value"),
            (&format!("{h}2 2 1\n1 1 1 2\n"), "unexpected `2`"),
            (
                &format!("{h}2 2 1\n1 1 1\n2 2 1\n"),
                "line 4: more entries than the 1",
            ),
            (
                "%%MatrixMarket matrix coordinate real symmetric\n2 3 0\n",
                "must be square, this one is 2×3",
            ),
            (
                "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n1 1 1\n",
                "nonzero diagonal",
            ),
            (
                "%%MatrixMarket matrix coordinate complex hermitian\n2 2 1\n1 1 1 1\n",
                "with an imaginary part",
            ),
            (
                "%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 1.5\n",
                "not an integer",
            ),
            (
                "%%MatrixMarket matrix array real general\n2 1\n1\n",
                "ends before entry (2, 1)",
            ),
            (
                "%%MatrixMarket matrix array real general\n1 1\n1\n2\n",
                "more values than",
            ),
        ] {
            let got = reason(text);
            assert!(got.contains(want), "{text:?}: {got} lacks {want}");
            assert!(got.starts_with("Matrix Market"), "{got}");
        }
    }

    #[test]
    fn huge_headers_allocate_nothing_up_front() {
        // 10^18 announced entries, none present: an error after the one line, not an abort.
        let err =
            reason("%%MatrixMarket matrix coordinate real general\n5 5 1000000000000000000\n");
        assert!(err.contains("ends after 0 of 1000000000000000000"), "{err}");
        // A dense array over the dense limit is refused before reading a value.
        let err = read("%%MatrixMarket matrix array real general\n100000000 100000000\n");
        assert!(matches!(err, Err(Error::TooLarge { .. })), "{err:?}");
    }
}
