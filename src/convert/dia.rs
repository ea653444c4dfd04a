//! The converters between [`Dia`] and the other built-in kinds.
//!
//! Weights, next to Csr → Dense 1.0 and Dense → Csr 1.4, from the measurement in
//! `docs/benchmarks.md` ("Dia"): Dia → Csr 0.5 (O(nnz), 0.01–0.3× the time of Csr → Dense at
//! the same n), Dia → Dense 1.0 (0.9–1.1×), Csr → Dia 1.4 (0.02–1.4×; a scattered pattern has up
//! to rows + cols − 1 diagonals, so mixed Csr and Dia operands meet in Csr), Dense → Dia 1.5
//! (1.0–2.7×; above Dense → Csr, so `Out::Group(Group::SPARSE)` from Dense picks Csr).

use super::{Batch, Conversion, Group};
use crate::error::{Error, Result};
use crate::scalar::{ZERO, c64};
use crate::shape::indptr_len;
use crate::storage::{Csr, Dense, Dia, alloc, valid_cols};

/// Registers Dia (kind 3), its conversions and its group.
pub(super) fn register(b: &mut Batch) {
    b.register_type::<Dia>("Dia", &["dia"])
        .add_conversion(Conversion::new(dia_to_csr, 0.5))
        .add_conversion(Conversion::new(csr_to_dia, 1.4))
        .add_conversion(Conversion::new(dia_to_dense, 1.0))
        .add_conversion(Conversion::new(dense_to_dia, 1.5))
        .add_to_group::<Dia>(Group::SPARSE);
}

/// Checks that `k` diagonals of `cols` columns fit the dense limit: a Dia is as large as a
/// dense matrix of `k` rows, and a scattered pattern has up to `rows + cols − 1` diagonals.
fn check_size(op: &str, shape: (usize, usize), k: usize) -> Result<()> {
    alloc::check_dense(op, (k, shape.1)).map_err(|e| match e {
        Error::TooLarge { bytes, limit, .. } => Error::TooLarge {
            op: op.to_owned(),
            shape,
            bytes,
            limit,
            reason: format!("its {k} diagonals of {} columns", shape.1),
        },
        e => e,
    })
}

/// Builds a Dia from sorted unique `offsets` and a function that fills the data.
fn build(
    op: &str,
    shape: (usize, usize),
    offsets: Vec<isize>,
    fill: impl FnOnce(&mut [c64], &[isize]),
) -> Result<Dia> {
    check_size(op, shape, offsets.len())?;
    let len = offsets.len().saturating_mul(shape.1);
    let mut data = alloc::try_vec(op, shape, len, ZERO)?;
    fill(&mut data, &offsets);
    // SAFETY: `offsets` comes sorted and deduplicated from the caller's entries, each the
    // offset of an entry inside the matrix; `data` has offsets.len() × cols values.
    Ok(unsafe { Dia::from_parts_unchecked(shape, offsets, data) })
}

/// The offset `j − i` of entry `(i, j)`, if it fits an `isize` (every stored diagonal does).
fn offset_of(op: &str, i: usize, j: usize) -> Result<isize> {
    isize::try_from(j as i128 - i as i128).map_err(|_| Error::Unrepresentable {
        kind: "Dia".into(),
        what: format!("entry ({i}, {j})"),
        reason: format!("{op}: its diagonal offset does not fit an isize"),
    })
}

/// Dia → Csr, row by row with the diagonals in increasing order (so columns come out sorted).
/// Exact zeros are not stored (as scipy's `tocsr`), and the arrays are sized by a count of the
/// non-zeros first: sized by the diagonals' lengths, the XXZ chain's Hamiltonian at N = 18
/// (35 diagonals, a quarter of their entries non-zero) took 206 MB for its 57 MB.
/// O(rows · diagonals).
pub(crate) fn dia_to_csr(a: &Dia) -> Result<Csr> {
    const OP: &str = "to Csr";
    let (m, n) = a.shape();
    let offsets = a.offsets();
    let nnz = offsets
        .iter()
        .enumerate()
        .map(|(k, &o)| {
            let row = &a.data()[k * n..(k + 1) * n];
            row[valid_cols((m, n), o)]
                .iter()
                .filter(|&&v| v != ZERO)
                .count()
        })
        .sum();
    let (mut indptr, mut indices, mut data) =
        alloc::csr::csr_buffers(OP, (m, n), indptr_len(OP, (m, n))?, nnz)?;
    indptr.push(0);
    if !offsets.is_empty() {
        // Rows past the last one any diagonal reaches are empty.
        for i in 0..m {
            for (k, &o) in offsets.iter().enumerate() {
                let j = i as i128 + o as i128;
                if j < 0 || j >= n as i128 {
                    continue;
                }
                let j = j as usize;
                let v = a.data()[k * n + j];
                if v != ZERO {
                    indices.push(j);
                    data.push(v);
                }
            }
            indptr.push(indices.len());
        }
    } else {
        indptr.resize(indptr_len(OP, (m, n))?, 0);
    }
    // SAFETY: m + 1 pointers from 0 to nnz, columns in range and strictly increasing per row
    // (offsets increase).
    Ok(unsafe { Csr::from_parts_unchecked((m, n), indptr, indices, data) })
}

/// Csr → Dia: one diagonal per distinct offset among the stored entries. O(nnz log nnz).
///
/// # Errors
/// [`Error::TooLarge`] when the diagonals (as many as `rows + cols − 1` for a scattered
/// pattern) pass the dense limit.
pub(crate) fn csr_to_dia(a: &Csr) -> Result<Dia> {
    const OP: &str = "to Dia";
    let (m, n) = a.shape();
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    let mut offsets = alloc::try_with_capacity(OP, (m, n), a.nnz())?;
    for i in 0..m {
        for &j in &idx[p[i]..p[i + 1]] {
            offsets.push(offset_of(OP, i, j)?);
        }
    }
    offsets.sort_unstable();
    offsets.dedup();
    // The Dia keeps this vector: without the room for one offset per entry (19 MB for the
    // chain's H at N = 18, whose 35 diagonals need 280 bytes).
    offsets.shrink_to_fit();
    build(OP, (m, n), offsets, |data, offsets| {
        for i in 0..m {
            for k in p[i]..p[i + 1] {
                let j = idx[k];
                // Fits: offset_of accepted every entry above.
                let o = (j as i128 - i as i128) as isize;
                if let Ok(d) = offsets.binary_search(&o) {
                    data[d * n + j] = val[k];
                }
            }
        }
    })
}

/// Dia → Dense. O(rows · cols + stored entries).
///
/// # Errors
/// [`Error::TooLarge`] over the dense limit.
pub(crate) fn dia_to_dense(a: &Dia) -> Result<Dense> {
    let (m, n) = a.shape();
    // A bra row-major, unpadded (`Dense`'s docs, "Memory of a one-row matrix").
    let mut d = Dense::zeros_public("to Dense", m, n)?;
    let mut mat = d.view_mut();
    for (k, &o) in a.offsets().iter().enumerate() {
        let row = &a.data()[k * n..(k + 1) * n];
        for j in valid_cols((m, n), o) {
            mat[(j.wrapping_sub(o as usize), j)] = row[j];
        }
    }
    Ok(d)
}

/// Dense → Dia: one diagonal per offset with a non-zero entry. O(rows · cols).
pub(crate) fn dense_to_dia(a: &Dense) -> Result<Dia> {
    const OP: &str = "to Dia";
    let (m, n) = a.shape();
    if m == 0 || n == 0 {
        return Ok(Dia::zeros(m, n));
    }
    // Offset o ↦ slot o + (m − 1), in 0..m + n − 1.
    let mut seen = alloc::try_vec(OP, (m, n), m - 1 + n, false)?;
    let cols = a.col_major(OP)?;
    for j in 0..n {
        let col = cols.col_as_slice(j);
        for (i, v) in col.iter().enumerate() {
            if *v != ZERO {
                seen[j + (m - 1) - i] = true;
            }
        }
    }
    let offsets: Vec<isize> = seen
        .iter()
        .enumerate()
        .filter(|(_, s)| **s)
        .map(|(s, _)| offset_of(OP, m - 1, s))
        .collect::<Result<_>>()?;
    build(OP, (m, n), offsets, |data, offsets| {
        for (k, &o) in offsets.iter().enumerate() {
            for j in valid_cols((m, n), o) {
                data[k * n + j] = a.get(j.wrapping_sub(o as usize), j);
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(x: f64) -> c64 {
        c64::new(x, 0.0)
    }

    #[test]
    fn round_trips_are_exact() {
        let d = Dense::from_rows(&[
            [c(1.0), c(0.0), c(2.0), c(0.0)],
            [c(0.0), c(3.0), c(0.0), c(4.0)],
            [c(5.0), c(0.0), c(0.0), c(0.0)],
        ])
        .unwrap();
        let dia = dense_to_dia(&d).unwrap();
        assert_eq!(dia.offsets(), &[-2, 0, 2]);
        assert_eq!(dia_to_dense(&dia).unwrap(), d);
        let csr = dia_to_csr(&dia).unwrap();
        assert_eq!(csr.nnz(), 5);
        assert_eq!(csr_to_dia(&csr).unwrap(), dia);
        assert_eq!(dense_to_dia(&Dense::zeros(0, 3)).unwrap().shape(), (0, 3));
        assert_eq!(
            dia_to_csr(&Dia::zeros(3, 2)).unwrap().indptr(),
            &[0, 0, 0, 0]
        );
    }

    #[test]
    fn scattered_patterns_past_the_limit_are_refused() {
        // Entries at (0, n−1) and (n−1, 0) of a huge Csr: 2 diagonals of n columns each.
        let n = 1usize << 40;
        let csr = Csr::from_triplets((2, n), &[0, 1], &[n - 1, 0], &[c(1.0), c(1.0)]).unwrap();
        assert!(matches!(csr_to_dia(&csr), Err(Error::TooLarge { .. })));
    }
}
