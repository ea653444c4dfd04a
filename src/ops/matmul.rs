//! Matrix products.

use std::sync::LazyLock;

use faer::Accum;
use faer::linalg::matmul::matmul as faer_matmul;

use super::{ONE, ZERO};
use crate::dispatch::{Dispatcher, Out, Specialisation};
use crate::engine;
use crate::error::{Error, Result};
use crate::storage::{Csr, Data, Dense};

/// `a·b`. Kernels: Dense·Dense → Dense, Csr·Csr → Csr, Csr·Dense → Dense.
///
/// Dense·Csr has no kernel of its own: it converts the Csr operand (see
/// `examples/custom_specialisation.rs`, which adds one).
pub static MATMUL: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("matmul", 2)
        .check(|op, args, _| matmul_shapes(op, args[0].shape(), args[1].shape()))
        .specialisation(Specialisation::binary(
            "matmul_dense",
            |a: &Dense, b: &Dense, _: &()| matmul_dense(a, b),
        ))
        .specialisation(Specialisation::binary(
            "matmul_csr",
            |a: &Csr, b: &Csr, _: &()| matmul_csr(a, b),
        ))
        .specialisation(Specialisation::binary(
            "matmul_csr_dense",
            |a: &Csr, b: &Dense, _: &()| matmul_csr_dense(a, b),
        ))
        .builtin()
});

/// The columns of `a` must match the rows of `b`.
pub(crate) fn matmul_shapes(op: &str, a: (usize, usize), b: (usize, usize)) -> Result<()> {
    if a.1 == b.0 {
        Ok(())
    } else {
        Err(Error::shape(
            op,
            &[a, b],
            "the left operand's columns must match the right operand's rows",
        ))
    }
}

/// The matrix product `a·b`.
///
/// # Errors
/// [`Error::Shape`] if `a`'s columns do not match `b`'s rows.
///
/// ```
/// use polymat::{Csr, Dense, Out, c64};
/// let x = Csr::from_triplets((2, 2), &[0, 1], &[1, 0], &[c64::new(1.0, 0.0); 2]).unwrap();
/// let y = Dense::from_fn(2, 1, |i, _| c64::new(i as f64 + 1.0, 0.0));
/// let z = polymat::matmul(&x.into(), &y.into(), Out::Auto).unwrap();
/// let z = z.downcast_ref::<Dense>().unwrap();
/// assert_eq!((z.get(0, 0), z.get(1, 0)), (c64::new(2.0, 0.0), c64::new(1.0, 0.0)));
/// ```
pub fn matmul(a: &Data, b: &Data, out: Out) -> Result<Data> {
    MATMUL.call(&[a, b], out, &())
}

/// Dense·Dense with `faer`. O(mkn); parallel above the engine's threshold.
///
/// # Errors
/// [`Error::Shape`] on mismatched inner dimensions.
pub fn matmul_dense(a: &Dense, b: &Dense) -> Result<Dense> {
    matmul_shapes("matmul", a.shape(), b.shape())?;
    let (m, k) = a.shape();
    let n = b.shape().1;
    let mut out = Dense::zeros(m, n);
    faer_matmul(
        out.as_mat_mut(),
        Accum::Replace,
        a.as_ref(),
        b.as_ref(),
        ONE,
        engine::matmul_par(m * k * n),
    );
    Ok(out)
}

/// Csr·Csr → Csr (Gustavson's algorithm, one dense accumulator row). O(flops + m + n).
///
/// # Errors
/// [`Error::Shape`] on mismatched inner dimensions.
pub fn matmul_csr(a: &Csr, b: &Csr) -> Result<Csr> {
    matmul_shapes("matmul", a.shape(), b.shape())?;
    let (m, _) = a.shape();
    let n = b.shape().1;
    let (pa, ia, da) = (a.indptr(), a.indices(), a.data());
    let (pb, ib, db) = (b.indptr(), b.indices(), b.data());
    let mut acc = vec![ZERO; n];
    // `mark[j] == i + 1` when column j is already in row i's pattern.
    let mut mark = vec![0usize; n];
    let mut pattern: Vec<usize> = Vec::new();
    let mut indptr = Vec::with_capacity(m + 1);
    let mut indices = Vec::with_capacity(a.nnz() + b.nnz());
    let mut data = Vec::with_capacity(a.nnz() + b.nnz());
    indptr.push(0);
    for i in 0..m {
        pattern.clear();
        for ka in pa[i]..pa[i + 1] {
            let (r, va) = (ia[ka], da[ka]);
            for kb in pb[r]..pb[r + 1] {
                let j = ib[kb];
                if mark[j] != i + 1 {
                    mark[j] = i + 1;
                    acc[j] = ZERO;
                    pattern.push(j);
                }
                acc[j] += va * db[kb];
            }
        }
        pattern.sort_unstable();
        for &j in &pattern {
            indices.push(j);
            data.push(acc[j]);
        }
        indptr.push(indices.len());
    }
    Ok(Csr::from_parts((m, n), indptr, indices, data))
}

/// Csr·Dense → Dense, column by column of the result. O(nnz(a)·n).
///
/// # Errors
/// [`Error::Shape`] on mismatched inner dimensions.
pub fn matmul_csr_dense(a: &Csr, b: &Dense) -> Result<Dense> {
    matmul_shapes("matmul", a.shape(), b.shape())?;
    let m = a.shape().0;
    let n = b.shape().1;
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    let mut out = Dense::zeros(m, n);
    for j in 0..n {
        let bj = b.col(j);
        let oj = out.col_mut(j);
        for (i, o) in oj.iter_mut().enumerate() {
            let mut s = ZERO;
            for k in p[i]..p[i + 1] {
                s += val[k] * bj[idx[k]];
            }
            *o = s;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::c64;

    #[test]
    fn csr_product_matches_dense() {
        let a = Csr::from_triplets(
            (3, 2),
            &[0, 0, 2],
            &[0, 1, 1],
            &[c64::new(1.0, 1.0), c64::new(2.0, 0.0), c64::new(0.0, 3.0)],
        )
        .unwrap();
        let b = Csr::from_triplets(
            (2, 3),
            &[0, 1, 1],
            &[2, 0, 2],
            &[c64::new(1.0, 0.0), c64::new(4.0, 0.0), c64::new(0.0, -1.0)],
        )
        .unwrap();
        let c = matmul_csr(&a, &b).unwrap();
        assert!(c.as_csmat().check_compressed_structure().is_ok());
        let (ad, bd) = (
            crate::convert::builtin::csr_to_dense(&a).unwrap(),
            crate::convert::builtin::csr_to_dense(&b).unwrap(),
        );
        let cd = matmul_dense(&ad, &bd).unwrap();
        for i in 0..3 {
            for j in 0..3 {
                assert!((c.get(i, j) - cd.get(i, j)).norm() < 1e-14);
            }
        }
    }

    #[test]
    fn inner_dimension_mismatch() {
        let e = matmul_dense(&Dense::zeros(2, 3), &Dense::zeros(2, 3)).unwrap_err();
        assert!(matches!(e, Error::Shape { .. }));
    }
}
