//! Adjoint, transpose and complex conjugate.

use std::sync::LazyLock;

use super::{csr_map, dense_map};
use crate::dispatch::{Dispatcher, Out};
use crate::error::Result;
use crate::gpu::{GpuCsr, GpuDense};
use crate::scalar::c64;
use crate::shape::indptr_len;
use crate::storage::{Csr, Data, Dense, Dia, alloc};

/// `a†` (conjugate transpose). Kernels: Dense, Csr.
pub static ADJOINT: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("adjoint", 1)
        .unary("adjoint_dense", |a: &Dense, _: &()| adjoint_dense(a))
        .unary("adjoint_csr", |a: &Csr, _: &()| transpose_csr(a, true))
        .unary("adjoint_dia", |a: &Dia, _: &()| {
            super::dia::transpose_dia(a, true)
        })
        .unary("adjoint_gpu", |a: &GpuDense, _: &()| a.transpose(true))
        .unary("adjoint_gpucsr", |a: &GpuCsr, _: &()| {
            transpose_gpucsr(a, true)
        })
        .builtin()
});

/// `aᵀ`. Kernels: Dense, Csr.
pub static TRANSPOSE: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("transpose", 1)
        .unary("transpose_dense", |a: &Dense, _: &()| transpose_dense(a))
        .unary("transpose_csr", |a: &Csr, _: &()| transpose_csr(a, false))
        .unary("transpose_dia", |a: &Dia, _: &()| {
            super::dia::transpose_dia(a, false)
        })
        .unary("transpose_gpu", |a: &GpuDense, _: &()| a.transpose(false))
        .unary("transpose_gpucsr", |a: &GpuCsr, _: &()| {
            transpose_gpucsr(a, false)
        })
        .builtin()
});

/// `ā` (entrywise conjugate). Kernels: Dense, Csr.
pub static CONJ: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("conj", 1)
        .unary("conj_dense", |a: &Dense, _: &()| {
            dense_map("conj", a, |x| x.conj())
        })
        .unary("conj_csr", |a: &Csr, _: &()| Ok(csr_map(a, |x| x.conj())))
        .unary("conj_dia", |a: &Dia, _: &()| super::dia::conj_dia(a))
        .unary("conj_gpu", |a: &GpuDense, _: &()| a.conj())
        .unary("conj_gpucsr", |a: &GpuCsr, _: &()| a.conj())
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

/// Dense adjoint: one conjugating pass over the buffer, in the other layout (a column-major
/// input gives a row-major result and the reverse). O(mn), contiguous.
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) if the result cannot be allocated.
pub fn adjoint_dense(a: &Dense) -> Result<Dense> {
    dense_map("adjoint", a, |x| x.conj()).map(Dense::into_transpose)
}

/// Dense transpose: one contiguous copy of the buffer, in the other layout. O(mn); with an
/// owned matrix, [`Dense::into_transpose`] is O(1).
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) if the result cannot be allocated.
pub fn transpose_dense(a: &Dense) -> Result<Dense> {
    dense_map("transpose", a, |x| x).map(Dense::into_transpose)
}

/// Csr transpose (conjugated if `conjugate`), by counting sort over columns. O(nnz + m + n);
/// rows of the result come out sorted.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if `n + 1` row pointers overflow,
/// [`Error::TooLarge`](crate::Error::TooLarge) if they cannot be allocated.
pub fn transpose_csr(a: &Csr, conjugate: bool) -> Result<Csr> {
    if conjugate {
        transpose_csr_map(a, |x| x.conj())
    } else {
        transpose_csr_map(a, |x| x)
    }
}

/// The counting-sort transpose with `f` applied to each value.
fn transpose_csr_map(a: &Csr, f: impl Fn(c64) -> c64) -> Result<Csr> {
    const OP: &str = "transpose";
    let (m, n) = a.shape();
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    let mut indptr = alloc::try_vec(OP, (n, m), indptr_len(OP, (n, m))?, 0usize)?;
    for &c in idx {
        // SAFETY: c < n for a valid Csr, and indptr has n + 1 entries.
        unsafe { *indptr.get_unchecked_mut(c + 1) += 1 };
    }
    for j in 0..n {
        indptr[j + 1] += indptr[j];
    }
    let nnz = idx.len();
    let mut next = indptr[..n].to_vec();
    // Written once each below, so no zero fill first.
    let mut indices = Vec::<usize>::with_capacity(nnz);
    let mut data = Vec::<c64>::with_capacity(nnz);
    let (out_idx, out_val) = (
        &mut indices.spare_capacity_mut()[..nnz],
        &mut data.spare_capacity_mut()[..nnz],
    );
    for i in 0..m {
        let (lo, hi) = (p[i], p[i + 1]);
        for (&c, &v) in idx[lo..hi].iter().zip(&val[lo..hi]) {
            // SAFETY: c < n (a valid Csr's columns are in range; `next` has n slots), and
            // next[c] < indptr[c + 1] ≤ nnz until column c's last entry is placed (its count
            // was taken above), so the slot indexes both buffers of length nnz.
            // The cursor is read once and advanced before the writes, so the compiler need not
            // reload it after them.
            unsafe {
                let slot = *next.get_unchecked(c);
                *next.get_unchecked_mut(c) = slot + 1;
                out_idx.get_unchecked_mut(slot).write(i);
                out_val.get_unchecked_mut(slot).write(f(v));
            }
        }
    }
    // Every slot was written: column c's slots run from indptr[c] to indptr[c + 1] (its count of
    // entries), and these ranges partition 0..nnz.
    debug_assert!((0..n).all(|c| next[c] == indptr[c + 1]));
    // SAFETY: all `nnz` elements of both buffers are initialised (above), and the capacity is nnz.
    unsafe {
        indices.set_len(nnz);
        data.set_len(nnz);
    }
    // SAFETY: `indptr` counts each column's entries (n + 1 pointers from 0 to nnz); rows of a
    // are visited in increasing order, so every result row receives its columns (rows of a,
    // below m) strictly increasing.
    Ok(unsafe { Csr::from_parts_unchecked((n, m), indptr, indices, data) })
}

/// `aᵀ` or `aᴴ` of a GpuCsr: cuSPARSE `csr2cscEx2`.
pub(crate) fn transpose_gpucsr(a: &GpuCsr, conj: bool) -> Result<GpuCsr> {
    if crate::gpu::sparse_available() {
        return a.transpose(conj);
    }
    GpuCsr::from_csr(&transpose_csr(&a.to_csr()?, conj)?)
}
