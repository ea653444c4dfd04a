//! Products with a dense left operand and a Csr right one, `a·b` and `a·b†`, without
//! converting the Csr operand: a bra times an operator of 10⁶ dimensions is a pass over the
//! operator's stored entries, not a dense copy of it.
//!
//! Both kernels return a row-major [`Dense`]: each result row is built from one row of `a`
//! and every row of `b`, so a row is the unit a worker writes. Rows run in parallel; a single
//! row (a bra) is split into column ranges instead.

use std::ops::Range;

use rayon::prelude::*;

use crate::engine::{self, Entries, Family, OutColumns};
use crate::error::Result;
use crate::scalar::{ZERO, c64};
use crate::shape::{matmul_dag_shapes, matmul_shapes};
use crate::storage::{Csr, Dense, Layout, alloc};

/// Dense·Csr → Dense (row-major). O(m·nnz(b) + m·n) for an m-row `a`.
///
/// A column-major `a` of several rows gives a column-major result, one axpy per stored entry
/// `b[k, j]`: `out[:, j] += b[k, j]·a[:, k]` (scipy's order for a Fortran array times a sparse
/// matrix, through `bᵀ` as Csc). Otherwise (a bra, a row-major `a`) result row `i` is
/// `Σₖ a[i, k]·(row k of b)`: the rows of `b` scattered into one contiguous row, and the result
/// is row-major. Every stored entry of `b` is used once per row of `a`; zeros of `a` are not
/// skipped, so `0·∞` gives NaN as in scipy.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if `a`'s columns do not match `b`'s rows;
/// [`Error::TooLarge`](crate::Error::TooLarge) if the m × n result does not fit.
///
/// ```
/// use polymat::ops::matmul::dense_csr::matmul_dense_csr;
/// use polymat::{Csr, Dense, c64};
///
/// // ⟨ψ|·σx for ⟨ψ| = (1, 2): (2, 1).
/// let one = c64::new(1.0, 0.0);
/// let sx = Csr::from_triplets((2, 2), &[0, 1], &[1, 0], &[one, one])?;
/// let bra = Dense::from_rows(&[[one, c64::new(2.0, 0.0)]])?;
/// let out = matmul_dense_csr(&bra, &sx)?;
/// assert_eq!((out.get(0, 0), out.get(0, 1)), (c64::new(2.0, 0.0), one));
/// # Ok::<(), polymat::Error>(())
/// ```
pub fn matmul_dense_csr(a: &Dense, b: &Csr) -> Result<Dense> {
    matmul_shapes("matmul", a.shape(), b.shape())?;
    let m = a.shape().0;
    let n = b.shape().1;
    let workers = engine::workers(Family::CsrRows, m.saturating_mul(b.nnz().max(n)));
    if a.layout() == Layout::ColMajor && m >= AXPY_MIN_ROWS {
        return axpy_columns(a, b, workers);
    }
    // The buffer is n × m: its column i is result row i, each slice a segment of one.
    // SAFETY: `scatter_rows` initialises every element of every slice it is handed.
    let mat = unsafe {
        alloc::build_mat("matmul", n, m, workers, |cols, i0, rows| {
            scatter_rows(a, b, cols, i0, rows);
        })
    }?;
    Ok(Dense::with_layout(mat, Layout::RowMajor))
}

/// Dense·Csr† → Dense (row-major), without forming `b†`. O(m·nnz(b)) for an m-row `a`.
///
/// Entry `(i, j)` is the sparse dot `Σ a[i, k]·conj(b[j, k])` over row `j` of `b`'s stored
/// entries.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) unless `a` and `b` have the same number of columns;
/// [`Error::TooLarge`](crate::Error::TooLarge) as [`matmul_dense_csr`].
///
/// ```
/// use polymat::ops::matmul::dense_csr::matmul_dag_dense_csr;
/// use polymat::{Csr, Dense, c64};
///
/// let i = c64::new(0.0, 1.0);
/// let b = Csr::from_triplets((1, 2), &[0], &[1], &[i])?; // (0, i)
/// let a = Dense::from_rows(&[[c64::new(0.0, 0.0), c64::new(3.0, 0.0)]])?;
/// assert_eq!(matmul_dag_dense_csr(&a, &b)?.get(0, 0), c64::new(0.0, -3.0));
/// # Ok::<(), polymat::Error>(())
/// ```
pub fn matmul_dag_dense_csr(a: &Dense, b: &Csr) -> Result<Dense> {
    matmul_dag_shapes("matmul_dag", a.shape(), b.shape())?;
    let m = a.shape().0;
    let n = b.shape().0;
    let workers = engine::workers(Family::CsrRows, m.saturating_mul(b.nnz().max(n)));
    // SAFETY: `dot_rows` writes every element of every slice it is handed.
    let mat = unsafe {
        alloc::build_mat("matmul_dag", n, m, workers, |cols, i0, rows| {
            dot_rows(a, b, cols, i0, rows);
        })
    }?;
    Ok(Dense::with_layout(mat, Layout::RowMajor))
}

/// From this many rows a column-major `a` takes the axpy form of [`matmul_dense_csr`]; below,
/// an axpy is too short to beat a scalar scatter per row.
const AXPY_MIN_ROWS: usize = 4;

/// `a·b` for column-major `a` into a zeroed column-major result: for each stored entry
/// `b[k, j]`, `out[rows, j] += b[k, j]·a[rows, k]`, the rows split among `workers` (each
/// worker passes over all of `b` for its own rows).
fn axpy_columns(a: &Dense, b: &Csr, workers: usize) -> Result<Dense> {
    let (m, n) = (a.shape().0, b.shape().1);
    let mut out = Dense::zeros_for("matmul", m, n)?;
    if n == 0 {
        return Ok(out);
    }
    // No copy: `a` is column-major (see above).
    let am = a.col_major("matmul")?;
    // A fresh column-major matrix: its buffer is the matrix.
    let mat = out.buffer_mut();
    let stride = usize::try_from(mat.col_stride()).unwrap_or(m);
    let base = Entries(mat.as_ptr_mut());
    let (p, idx, val) = (b.indptr(), b.indices(), b.data());
    let run = |rows: Range<usize>| {
        for k in 0..b.shape().0 {
            let ak = &am.col_as_slice(k)[rows.clone()];
            for (&j, &v) in idx[p[k]..p[k + 1]].iter().zip(&val[p[k]..p[k + 1]]) {
                // SAFETY: column j < n of the m × n result starts at j·stride and holds m
                // entries, rows ⊆ 0..m; each worker writes only its own rows, and the result is
                // not read until every worker ends.
                let col = unsafe {
                    std::slice::from_raw_parts_mut(
                        base.get().add(j * stride + rows.start),
                        rows.len(),
                    )
                };
                // out += v·a[:, k], as out −= (−v)·a[:, k] (negation is exact).
                crate::simd::sub_scaled(col, -v, ak);
            }
        }
    };
    if workers > 1 {
        let per = m.div_ceil(workers);
        (0..m.div_ceil(per))
            .into_par_iter()
            .for_each(|w| run(engine::piece(w, per, m)));
    } else {
        run(0..m);
    }
    Ok(out)
}

/// Row `i` of `a` as a slice: the buffer's own row when `a` is row-major, else gathered into
/// `scratch` (one strided pass per result row, against the row's `nnz(b)` products).
fn row_of<'a>(a: &'a Dense, i: usize, scratch: &'a mut Vec<c64>) -> &'a [c64] {
    if a.layout() == Layout::RowMajor {
        return a.buffer_col(i);
    }
    scratch.clear();
    // Column-major: buffer column k is column k.
    scratch.extend((0..a.shape().1).map(|k| a.buffer_col(k)[i]));
    scratch
}

/// The stored entries of row `k` of `b` whose columns lie in `cols`: the whole row when
/// `cols` spans every column, else a binary search for each end (the rows are sorted).
#[inline]
fn row_in<'b>(b: &'b Csr, k: usize, cols: &Range<usize>) -> (&'b [usize], &'b [c64]) {
    let span = b.indptr()[k]..b.indptr()[k + 1];
    let (idx, val) = (&b.indices()[span.clone()], &b.data()[span]);
    if cols.start == 0 && cols.end == b.shape().1 {
        return (idx, val);
    }
    let lo = idx.partition_point(|&j| j < cols.start);
    let hi = lo + idx[lo..].partition_point(|&j| j < cols.end);
    (&idx[lo..hi], &val[lo..hi])
}

/// Result rows `i0..` of `a·b`, columns `cols` of each, into `rows`.
fn scatter_rows(a: &Dense, b: &Csr, cols: Range<usize>, i0: usize, rows: &mut OutColumns<'_>) {
    let mut scratch = Vec::new();
    for (t, out) in rows.iter_mut().enumerate() {
        let out = engine::zeroed(out);
        let ai = row_of(a, i0 + t, &mut scratch);
        for (k, &s) in ai.iter().enumerate() {
            let (idx, val) = row_in(b, k, &cols);
            for (&j, &v) in idx.iter().zip(val) {
                // j ∈ cols (`row_in`), and `out` spans exactly `cols`.
                out[j - cols.start] += s * v;
            }
        }
    }
}

/// Result rows `i0..` of `a·b†`, columns `cols` (rows of `b`) of each, into `rows`.
fn dot_rows(a: &Dense, b: &Csr, cols: Range<usize>, i0: usize, rows: &mut OutColumns<'_>) {
    let (p, idx, val) = (b.indptr(), b.indices(), b.data());
    let mut scratch = Vec::new();
    for (t, out) in rows.iter_mut().enumerate() {
        let ai = row_of(a, i0 + t, &mut scratch);
        for (o, j) in out.iter_mut().zip(cols.clone()) {
            let mut sum = ZERO;
            for (&k, v) in idx[p[j]..p[j + 1]].iter().zip(&val[p[j]..p[j + 1]]) {
                // k < b's columns = a's columns (checked shapes): inside row i of a.
                sum += ai[k] * v.conj();
            }
            o.write(sum);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `rows × cols` Csr with a few stored entries per row (some rows empty), and a dense
    /// matrix of the same values.
    fn operand(rows: usize, cols: usize) -> (Csr, Dense) {
        let (mut r, mut c, mut v) = (vec![], vec![], vec![]);
        for i in 0..rows {
            for j in (0..cols).filter(|j| (i * 7 + j * 3) % 5 == 0 && i % 4 != 1) {
                r.push(i);
                c.push(j);
                v.push(c64::new(i as f64 - j as f64, 0.5 * j as f64 + 1.0));
            }
        }
        let csr = Csr::from_triplets((rows, cols), &r, &c, &v).unwrap();
        let dense = Dense::from_fn(rows, cols, |i, j| {
            (0..r.len())
                .find(|&e| r[e] == i && c[e] == j)
                .map_or(ZERO, |e| v[e])
        });
        (csr, dense)
    }

    /// Both kernels against the definition, for bras, several rows, both layouts of `a`,
    /// serial and split over workers (a single row split into column ranges).
    #[test]
    fn dense_times_csr_and_its_adjoint_match_the_definition() {
        for (m, k, n) in [
            (1, 1, 1),
            (1, 9, 13),
            (3, 9, 13),
            (20, 6, 4),
            (2, 0, 3),
            (0, 4, 4),
        ] {
            let v: Vec<c64> = (0..m * k)
                .map(|t| c64::new((t as f64).sin(), (0.3 * t as f64).cos()))
                .collect();
            let (b, bd) = operand(k, n);
            let (bt, btd) = operand(n, k);
            for a in [
                Dense::from_col_major(m, k, &v).unwrap(),
                Dense::from_row_major(m, k, &v).unwrap(),
            ] {
                for force in [false, true] {
                    crate::engine::set_force_parallel(force);
                    let ab = matmul_dense_csr(&a, &b).unwrap();
                    let abt = matmul_dag_dense_csr(&a, &bt).unwrap();
                    crate::engine::set_force_parallel(false);
                    assert_eq!((ab.shape(), abt.shape()), ((m, n), (m, n)));
                    for i in 0..m {
                        for j in 0..n {
                            let want: c64 = (0..k).map(|t| a.get(i, t) * bd.get(t, j)).sum();
                            let want_dag: c64 =
                                (0..k).map(|t| a.get(i, t) * btd.get(j, t).conj()).sum();
                            assert!((ab.get(i, j) - want).norm() < 1e-12, "{m}×{k}·{k}×{n}");
                            assert!((abt.get(i, j) - want_dag).norm() < 1e-12, "dag {m}×{k}");
                        }
                    }
                }
            }
        }
        let a = Dense::zeros(2, 3);
        let (b, _) = operand(4, 2);
        assert!(matmul_dense_csr(&a, &b).is_err());
        assert!(matmul_dag_dense_csr(&a, &b).is_err());
    }
}
