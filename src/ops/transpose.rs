//! Adjoint, transpose and complex conjugate.

use std::sync::LazyLock;

use super::{csr_map, dense_map};
use crate::dispatch::{Dispatcher, Out, Specialisation};
use crate::error::Result;
use crate::storage::{Csr, Data, Dense};

/// `a†` (conjugate transpose). Kernels: Dense, Csr.
pub static ADJOINT: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("adjoint", 1)
        .specialisation(Specialisation::unary(
            "adjoint_dense",
            |a: &Dense, _: &()| Ok(adjoint_dense(a)),
        ))
        .specialisation(Specialisation::unary("adjoint_csr", |a: &Csr, _: &()| {
            Ok(transpose_csr(a, true))
        }))
        .builtin()
});

/// `aᵀ`. Kernels: Dense, Csr.
pub static TRANSPOSE: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("transpose", 1)
        .specialisation(Specialisation::unary(
            "transpose_dense",
            |a: &Dense, _: &()| Ok(transpose_dense(a)),
        ))
        .specialisation(Specialisation::unary("transpose_csr", |a: &Csr, _: &()| {
            Ok(transpose_csr(a, false))
        }))
        .builtin()
});

/// `ā` (entrywise conjugate). Kernels: Dense, Csr.
pub static CONJ: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("conj", 1)
        .specialisation(Specialisation::unary("conj_dense", |a: &Dense, _: &()| {
            Ok(dense_map(a, |x| x.conj()))
        }))
        .specialisation(Specialisation::unary("conj_csr", |a: &Csr, _: &()| {
            Ok(csr_map(a, |x| x.conj()))
        }))
        .builtin()
});

/// The conjugate transpose.
///
/// # Errors
/// Only those of the conversions `out` asks for.
///
/// ```
/// use polymat::{Dense, Out, c64};
/// let a = Dense::from_rows(&[[c64::new(0.0, 0.0), c64::new(1.0, 2.0)]]).unwrap();
/// let h = polymat::adjoint(&a.into(), Out::Auto).unwrap();
/// assert_eq!(h.shape(), (2, 1));
/// assert_eq!(h.downcast_ref::<Dense>().unwrap().get(1, 0), c64::new(1.0, -2.0));
/// ```
pub fn adjoint(a: &Data, out: Out) -> Result<Data> {
    ADJOINT.call(&[a], out, &())
}

/// The transpose.
///
/// # Errors
/// Only those of the conversions `out` asks for.
///
/// ```
/// use polymat::{Csr, Out, c64};
/// let a = Csr::from_triplets((1, 2), &[0], &[1], &[c64::new(1.0, 2.0)]).unwrap();
/// let t = polymat::transpose(&a.into(), Out::Auto).unwrap();
/// assert_eq!(t.downcast_ref::<Csr>().unwrap().get(1, 0), c64::new(1.0, 2.0));
/// ```
pub fn transpose(a: &Data, out: Out) -> Result<Data> {
    TRANSPOSE.call(&[a], out, &())
}

/// The entrywise complex conjugate.
///
/// # Errors
/// Only those of the conversions `out` asks for.
///
/// ```
/// use polymat::{Dense, Out, c64};
/// let a = Dense::from_fn(1, 1, |_, _| c64::new(1.0, 2.0));
/// let c = polymat::conj(&a.into(), Out::Auto).unwrap();
/// assert_eq!(c.downcast_ref::<Dense>().unwrap().get(0, 0), c64::new(1.0, -2.0));
/// ```
pub fn conj(a: &Data, out: Out) -> Result<Data> {
    CONJ.call(&[a], out, &())
}

/// Dense adjoint. O(mn).
pub fn adjoint_dense(a: &Dense) -> Dense {
    Dense::new(a.as_ref().adjoint().to_owned())
}

/// Dense transpose. O(mn).
pub fn transpose_dense(a: &Dense) -> Dense {
    Dense::new(a.as_ref().transpose().to_owned())
}

/// Csr transpose (conjugated if `conjugate`), by counting sort over columns. O(nnz + m + n);
/// rows of the result come out sorted.
pub fn transpose_csr(a: &Csr, conjugate: bool) -> Csr {
    let (m, n) = a.shape();
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    let mut indptr = vec![0usize; n + 1];
    for &c in idx {
        indptr[c + 1] += 1;
    }
    for j in 0..n {
        indptr[j + 1] += indptr[j];
    }
    let mut next = indptr[..n].to_vec();
    let mut indices = vec![0usize; idx.len()];
    let mut data = vec![super::ZERO; idx.len()];
    for i in 0..m {
        for k in p[i]..p[i + 1] {
            let slot = &mut next[idx[k]];
            indices[*slot] = i;
            data[*slot] = if conjugate { val[k].conj() } else { val[k] };
            *slot += 1;
        }
    }
    Csr::from_parts((n, m), indptr, indices, data)
}
