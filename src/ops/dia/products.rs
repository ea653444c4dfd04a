//! Products of Dia: with Dense on either side, with Dia, and Kronecker products.

use super::{Builder, block_cols, diagonals, row_of};
use crate::error::{Error, Result};
use crate::scalar::{ZERO, c64};
use crate::shape::matmul_shapes;
use crate::storage::{Dense, Dia, valid_cols};

/// `a·b` for Dia `a` and Dense `b`: each diagonal adds a shifted, scaled copy of `b`'s rows.
/// O(stored entries · cols(b)), contiguous in every column.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) for incompatible shapes, [`Error::TooLarge`](crate::Error::TooLarge) for the result.
pub fn matmul_dia_dense(a: &Dia, b: &Dense) -> Result<Dense> {
    matmul_shapes("matmul", a.shape(), b.shape())?;
    let (m, _) = a.shape();
    let n = b.shape().1;
    if Dense::is_held_bra((m, n)) {
        // One row: its stored entries (j, a[0, j]) times b's rows, into a row-major bra
        // (`Dense`'s docs, "Memory of a one-row matrix"); each entry the same sum, in the same
        // order, as below.
        let row: Vec<(usize, c64)> = diagonals(a)
            .filter_map(|(o, r)| block_cols(a.shape(), o, 0, 1).map(|(j, _)| (j, r[j])))
            .collect();
        let mut out = Dense::zeros_public("matmul", 1, n)?;
        let (bv, mut v) = (b.as_ref(), out.view_mut());
        for c in 0..n {
            for &(j, x) in &row {
                v[(0, c)] += x * bv[(j, c)];
            }
        }
        return Ok(out);
    }
    let mut out = Dense::zeros_for("matmul", m, n)?;
    if m == 0 || n == 0 || a.num_diagonals() == 0 {
        // Nothing to add (and no loop over the columns of an empty-but-wide result).
        return Ok(out);
    }
    // Output rows in blocks that stay in L1 while every diagonal adds its part.
    const BLOCK: usize = 4096;
    let bm = b.col_major("matmul")?;
    // `out` is a fresh column-major matrix: its buffer is the matrix.
    let om = out.buffer_mut();
    for c in 0..n {
        let (bc, oc) = (bm.col_as_slice(c), om.col_as_slice_mut(c));
        for i0 in (0..m).step_by(BLOCK) {
            let i1 = (i0 + BLOCK).min(m);
            for (o, r) in diagonals(a) {
                let Some((lo, hi)) = block_cols(a.shape(), o, i0, i1) else {
                    continue;
                };
                let dst = &mut oc[row_of(lo, o)..row_of(hi, o)];
                for ((d, x), y) in dst.iter_mut().zip(&r[lo..hi]).zip(&bc[lo..hi]) {
                    *d += x * y;
                }
            }
        }
    }
    Ok(out)
}

/// `a·b` for Dense `a` and Dia `b`: column `j` of the result gathers `b[j − o, j]`-scaled
/// columns of `a`. O(stored entries · rows(a)).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) for incompatible shapes, [`Error::TooLarge`](crate::Error::TooLarge) for the result.
pub fn matmul_dense_dia(a: &Dense, b: &Dia) -> Result<Dense> {
    matmul_shapes("matmul", a.shape(), b.shape())?;
    let m = a.shape().0;
    let n = b.shape().1;
    if Dense::is_held_bra((m, n)) {
        // A bra times b, into a row-major bra (`Dense`'s docs, "Memory of a one-row matrix"),
        // read in place; each entry the same sum, in the same order, as below.
        let mut out = Dense::zeros_public("matmul", 1, n)?;
        let (av, mut v) = (a.as_ref(), out.view_mut());
        for (o, r) in diagonals(b) {
            for j in valid_cols(b.shape(), o) {
                let s = r[j];
                if s != ZERO {
                    v[(0, j)] += s * av[(0, row_of(j, o))];
                }
            }
        }
        return Ok(out);
    }
    let mut out = Dense::zeros_for("matmul", m, n)?;
    if m == 0 {
        return Ok(out);
    }
    let am = a.col_major("matmul")?;
    // `out` is a fresh column-major matrix: its buffer is the matrix.
    let om = out.buffer_mut();
    for (o, r) in diagonals(b) {
        for j in valid_cols(b.shape(), o) {
            let s = r[j];
            if s == ZERO {
                continue;
            }
            let src = am.col_as_slice(row_of(j, o));
            for (d, x) in om.col_as_slice_mut(j).iter_mut().zip(src) {
                *d += s * x;
            }
        }
    }
    Ok(out)
}

/// `a·b` of two Dia: diagonal `oa` of `a` times diagonal `ob` of `b` lands on `oa + ob`.
/// O(diagonals(a) · diagonals(b) · cols).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) for incompatible shapes, [`Error::TooLarge`](crate::Error::TooLarge) for the result.
pub fn matmul_dia(a: &Dia, b: &Dia) -> Result<Dia> {
    const OP: &str = "matmul";
    matmul_shapes(OP, a.shape(), b.shape())?;
    let shape = (a.shape().0, b.shape().1);
    // The pairs of diagonals that meet, with the columns l where they do.
    let mut pairs = Vec::new();
    for (ka, (oa, _)) in diagonals(a).enumerate() {
        let ja = valid_cols(a.shape(), oa);
        for (kb, (ob, _)) in diagonals(b).enumerate() {
            // C[l − oa − ob, l] += A[j − oa, j] · B[j, l] with j = l − ob.
            // l is a valid column of b's diagonal and j = l − ob one of a's.
            let lb = valid_cols(b.shape(), ob);
            let lo = (lb.start as i128).max(ja.start as i128 + ob as i128);
            let hi = (lb.end as i128).min(ja.end as i128 + ob as i128);
            if lo >= hi {
                continue;
            }
            let Some(oc) = oa.checked_add(ob) else {
                return Err(Error::shape(
                    OP,
                    &[a.shape(), b.shape()],
                    "the result's diagonal offsets overflow",
                ));
            };
            pairs.push((oc, ka, kb, lo as usize, hi as usize));
        }
    }
    let mut offsets: Vec<isize> = pairs.iter().map(|p| p.0).collect();
    offsets.sort_unstable();
    offsets.dedup();
    let mut out = Builder::new(OP, shape, offsets)?;
    let (na, nb) = (a.shape().1, b.shape().1);
    for (oc, ka, kb, lo, hi) in pairs {
        let k = out.offsets.binary_search(&oc).unwrap_or_default();
        let ob = b.offsets()[kb];
        let ra = &a.data()[ka * na..(ka + 1) * na];
        let rb = &b.data()[kb * nb..(kb + 1) * nb];
        let src_a = &ra[row_of(lo, ob)..row_of(hi, ob)];
        for ((d, x), y) in out.row_mut(k)[lo..hi]
            .iter_mut()
            .zip(src_a)
            .zip(&rb[lo..hi])
        {
            *d += x * y;
        }
    }
    Ok(out.finish_compact())
}
