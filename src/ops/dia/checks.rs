//! Reductions, predicates, column splits and constructors of Dia.

use super::{Builder, all_within, block_cols, diagonals, row_of};
use crate::error::Result;
use crate::ops::tolerance::Near;
use crate::scalar::{ONE, ZERO, c64};
use crate::shape::{expect_shapes, square};
use crate::storage::{Data, Dense, Dia, alloc, valid_cols};

/// Dia kernel of [`split_columns`](crate::split_columns): each column as an m×1 `Dia`
/// (entry `(i, 0)` lies on diagonal `−i`). O(n·diagonals).
///
/// # Errors
/// As [`split_columns`](crate::split_columns).
pub fn split_columns_dia(a: &Dia) -> Result<Vec<Data>> {
    const OP: &str = "split_columns";
    let (m, n) = a.shape();
    // Each column: its offsets and values (one of each per diagonal at most) and an `Arc`
    // (three allocations) and its `Data`.
    let per_diagonal = (std::mem::size_of::<isize>() + std::mem::size_of::<c64>()) as u128;
    let each = per_diagonal * a.offsets().len() as u128 + crate::storage::alloc::COLUMN_BYTES;
    alloc::check_parts(OP, (m, n), n, each, 3, 0)?;
    let mut out = alloc::try_with_capacity(OP, (m, n), n)?;
    for j in 0..n {
        let (mut offsets, mut values) = (Vec::new(), Vec::new());
        // Offsets in decreasing order give rows in increasing order; Dia::new sorts them.
        for (o, r) in diagonals(a) {
            if valid_cols(a.shape(), o).contains(&j) {
                offsets.push(-(row_of(j, o) as isize));
                values.push(r[j]);
            }
        }
        out.push(Dia::new((m, 1), offsets, values)?.into());
    }
    Ok(out)
}

/// `Tr a`: the main diagonal's sum. O(n).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if `a` is not square.
pub fn trace_dia(a: &Dia) -> Result<c64> {
    square("trace", a.shape())?;
    Ok(a.diagonal(0).map_or(ZERO, |d| d.iter().sum()))
}

/// `⟨ψ|A|ψ⟩` for a ket, `Tr(A·ρ)` for an operator state. O(stored entries) for a ket.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) unless `op` is n×n and `state` n×1 or n×n.
pub fn expect_dia_dense(op: &Dia, state: &Dense) -> Result<c64> {
    expect_shapes("expect", op.shape(), state.shape())?;
    let mut total = ZERO;
    if state.shape().1 == 1 {
        // ⟨ψ|A|ψ⟩ = Σ_i conj(ψ_i)·(Aψ)_i, with Aψ built a block of rows at a time in a small
        // buffer (one complex product per stored entry, as the Csr kernel).
        let psi = state.col_major("expect")?.col_as_slice(0);
        let m = op.shape().0;
        if m <= 64 {
            // Too small for the buffer to pay: Σ_j conj(ψ[j − o]) · A[j − o, j] · ψ[j].
            for (o, r) in diagonals(op) {
                let js = valid_cols(op.shape(), o);
                let left = &psi[row_of(js.start, o)..row_of(js.end, o)];
                for ((l, x), y) in left.iter().zip(&r[js.clone()]).zip(&psi[js]) {
                    total += l.conj() * (x * y);
                }
            }
            return Ok(total);
        }
        const BLOCK: usize = 1024;
        let mut buf = [ZERO; BLOCK];
        for i0 in (0..m).step_by(BLOCK) {
            let i1 = (i0 + BLOCK).min(m);
            let acc = &mut buf[..i1 - i0];
            acc.fill(ZERO);
            for (o, r) in diagonals(op) {
                let Some((lo, hi)) = block_cols(op.shape(), o, i0, i1) else {
                    continue;
                };
                let dst = &mut acc[row_of(lo, o) - i0..row_of(hi, o) - i0];
                for ((d, x), y) in dst.iter_mut().zip(&r[lo..hi]).zip(&psi[lo..hi]) {
                    *d += x * y;
                }
            }
            for (l, y) in psi[i0..i1].iter().zip(acc.iter()) {
                total += l.conj() * y;
            }
        }
    } else {
        // Σ A[i, j] ρ[j, i] with i = j − o.
        for (o, r) in diagonals(op) {
            for j in valid_cols(op.shape(), o) {
                total += r[j] * state.col(row_of(j, o))[j];
            }
        }
    }
    Ok(total)
}

/// Whether every stored entry has modulus at most `atol`.
pub fn iszero_dia(a: &Dia, atol: f64) -> bool {
    let near = Near::new(atol);
    diagonals(a).all(|(o, r)| r[valid_cols(a.shape(), o)].iter().all(|x| near.within(*x)))
}

/// Whether `a = a†` within `atol`: diagonal `o` against the conjugate of diagonal `−o`.
/// A non-square matrix is not Hermitian (QuTiP).
pub fn isherm_dia(a: &Dia, atol: f64) -> bool {
    let shape = a.shape();
    if shape.0 != shape.1 {
        return false;
    }
    let n = shape.1;
    let near = Near::new(atol);
    for (o, r) in diagonals(a) {
        let partner = a.offsets().binary_search(&-o).ok();
        let js = valid_cols(shape, o);
        match partner {
            // Each pair {o, −o} is checked once, from o ≥ 0.
            Some(_) if o < 0 => continue,
            // The main diagonal against itself: x − conj(x) = (Re x − Re x) + 2i·Im x, NaN
            // when Re x is not finite (as the Dense check finds).
            Some(_) if o == 0 => {
                if !r[js]
                    .iter()
                    .all(|x| x.re.is_finite() && (2.0 * x.im).abs() <= atol)
                {
                    return false;
                }
            }
            Some(k) => {
                // a[j − o, j] against conj(a[j, j − o]), stored at column j − o of diagonal −o.
                let p = &a.data()[k * n..(k + 1) * n];
                let mirror = &p[row_of(js.start, o)..row_of(js.end, o)];
                if !all_within(&r[js], mirror, &near) {
                    return false;
                }
            }
            None => {
                if !r[js].iter().all(|x| near.within(*x)) {
                    return false;
                }
            }
        }
    }
    true
}

/// Whether `a ≈ b` within `tol` entry by entry (`|a − b| ≤ atol + rtol·|b|`), over the union
/// of the two offset lists (a diagonal stored on one side only is compared with zeros),
/// without converting either operand. O(stored entries).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if the shapes differ.
pub fn isequal_dia(a: &Dia, b: &Dia, tol: crate::ops::tolerance::Tol) -> Result<bool> {
    crate::shape::same_shape("isequal", a.shape(), b.shape())?;
    let shape = a.shape();
    let close = crate::ops::tolerance::close;
    let (mut x, mut y) = (diagonals(a).peekable(), diagonals(b).peekable());
    loop {
        let (pa, pb) = (x.peek().map(|d| d.0), y.peek().map(|d| d.0));
        let ok = match (pa, pb) {
            (None, None) => return Ok(true),
            (Some(o), q) if q.is_none_or(|q| o < q) => {
                let (o, r) = x.next().unwrap_or_default();
                r[valid_cols(shape, o)].iter().all(|&v| close(v, ZERO, tol))
            }
            (p, Some(o)) if p.is_none_or(|p| o < p) => {
                let (o, r) = y.next().unwrap_or_default();
                r[valid_cols(shape, o)].iter().all(|&v| close(ZERO, v, tol))
            }
            _ => {
                let ((o, r), (_, s)) = (x.next().unwrap_or_default(), y.next().unwrap_or_default());
                let js = valid_cols(shape, o);
                r[js.clone()]
                    .iter()
                    .zip(&s[js])
                    .all(|(&u, &v)| close(u, v, tol))
            }
        };
        if !ok {
            return Ok(false);
        }
    }
}

/// Whether every entry off the main diagonal has modulus ≤ `atol` (false for NaN).
/// O(stored entries), no conversion.
pub fn isdiag_dia(a: &Dia, atol: f64) -> bool {
    let shape = a.shape();
    diagonals(a)
        .filter(|&(o, _)| o != 0)
        .all(|(o, r)| r[valid_cols(shape, o)].iter().all(|x| x.norm() <= atol))
}

/// `s·I` as a Dia.
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) if the diagonal cannot be allocated.
pub fn identity_dia(n: usize, s: c64) -> Result<Dia> {
    if s == ONE {
        return Dia::try_identity(n);
    }
    Dia::try_scaled_identity(n, s)
}

/// The Dia of `ops::diag`'s diagonals (entries of a repeated offset are summed).
///
/// # Errors
/// As [`diag`](crate::ops::diag).
pub fn diag_dia(p: &crate::storage::Diagonals) -> Result<Dia> {
    const OP: &str = "diag";
    p.triplets(OP)?;
    let shape = p.shape;
    let mut offsets = p.offsets.clone();
    offsets.sort_unstable();
    offsets.dedup();
    let mut out = Builder::new(OP, shape, offsets)?;
    for (d, &o) in p.diagonals.iter().zip(&p.offsets) {
        let k = out.offsets.binary_search(&o).unwrap_or_default();
        let js = valid_cols(shape, o);
        for (x, v) in out.row_mut(k)[js].iter_mut().zip(d) {
            *x += v;
        }
    }
    Ok(out.finish_compact())
}
