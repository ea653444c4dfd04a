//! Kronecker (tensor) product.

use std::sync::LazyLock;

use super::dia::{Builder, diagonals};
use crate::convert::builtin::dense_to_csr;
use crate::convert::dia::{csr_to_dia, dia_to_csr};
use crate::dispatch::{Dispatcher, Out};
use crate::engine::{self, Family, OutColumns};
use crate::error::Result;
use crate::gpu::{GpuCsr, GpuDense};
use crate::shape::kron_shape;
use crate::storage::{Csr, Data, Dense, Dia, alloc, valid_cols};

mod csr;

pub use csr::kron_csr;

/// `a ⊗ b`. Kernels: Dense⊗Dense, Csr⊗Csr, and Dense⊗Csr, Csr⊗Dense → Csr (the Dense factor
/// converted to Csr: a small dense factor next to a large sparse one never densifies the
/// sparse one).
pub static KRON: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("kron", 2)
        .result_shape(|args, _| kron_shape("kron", args[0].shape(), args[1].shape()).ok())
        .check(|op, args, _| kron_shape(op, args[0].shape(), args[1].shape()).map(|_| ()))
        .binary("kron_dense", |a: &Dense, b: &Dense, _: &()| {
            kron_dense(a, b)
        })
        .binary("kron_csr", |a: &Csr, b: &Csr, _: &()| kron_csr(a, b))
        .binary("kron_dense_csr", |a: &Dense, b: &Csr, _: &()| {
            kron_csr(&dense_to_csr(a)?, b)
        })
        .binary("kron_csr_dense", |a: &Csr, b: &Dense, _: &()| {
            kron_csr(a, &dense_to_csr(b)?)
        })
        .binary("kron_dia", |a: &Dia, b: &Dia, _: &()| kron_dia(a, b))
        .binary("kron_gpu", |a: &GpuDense, b: &GpuDense, _: &()| a.kron(b))
        .binary("kron_gpucsr", |a: &GpuCsr, b: &GpuCsr, _: &()| a.kron(b))
        .builtin()
});

/// The Kronecker product: block `(i, j)` of the result is `a[i, j]·b`.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) only if the result's size would overflow.
///
/// ```
/// use polymat::{Csr, Out};
/// let k = polymat::kron(&Csr::identity(2).into(), &Csr::identity(3).into(), Out::Auto).unwrap();
/// assert_eq!(format!("{k:#}"), "Csr(6×6, nnz=6)");
/// ```
#[inline]
pub fn kron(a: &Data, b: &Data, out: Out) -> Result<Data> {
    KRON.call(&[a, b], out, &())
}

/// Dense⊗Dense with `faer`. O(size of the result).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if the result's size overflows.
pub fn kron_dense(a: &Dense, b: &Dense) -> Result<Dense> {
    let (r, c) = kron_shape("kron", a.shape(), b.shape())?;
    if Dense::is_held_bra((r, c)) {
        return kron_bras(a, b, c);
    }
    let workers = engine::workers(Family::Elementwise, r.saturating_mul(c));
    // Column ja·nb + jb of the result is a[:, ja] ⊗ b[:, jb]: runs of b's column scaled by
    // a's entries, written once.
    // SAFETY: every output slice is covered: the runs [i, end) step through `rows` from its
    // start to its end, and each run is written in full (b's column has mb ≥ end − i entries
    // from ib on, since end ≤ (ia + 1)·mb).
    let mat = unsafe {
        alloc::build_mat("kron", r, c, workers, |rows, j0, cols| {
            kron_cols(a, b, rows, j0, cols);
        })
    }?;
    Ok(Dense::new(mat))
}

/// a ⊗ b of two bras (c entries): row-major, its entries in one buffer column (column-major,
/// faer pads a one-row buffer to four rows: `Dense`'s docs). Entry ja·nb + jb is
/// a[ja]·b[jb], the product [`kron_cols`] takes.
fn kron_bras(a: &Dense, b: &Dense, c: usize) -> Result<Dense> {
    let bv = b.vector_entries("kron")?;
    // SAFETY: the loop below writes every entry: c = a's entries × b's entries, one chunk of
    // b's length for each entry of a (c > 1, so b has at least one entry).
    let mut out = unsafe { alloc::unfilled_mat("kron", c, 1) }.map_err(alloc::for_shape((1, c)))?;
    for (chunk, x) in out
        .col_as_slice_mut(0)
        .chunks_exact_mut(bv.len())
        .zip(a.entries())
    {
        for (o, y) in chunk.iter_mut().zip(bv.iter()) {
            *o = x * y;
        }
    }
    Ok(Dense::bra_from_column(out))
}

crate::simd::avx2_fn! {
    /// Rows `rows` of columns `j0..` of a ⊗ b (both column-major) into `cols`: column
    /// ja·nb + jb is a[:, ja] ⊗ b[:, jb], runs of b's column scaled by a's entries.
    fn kron_cols(
        a: &Dense,
        b: &Dense,
        rows: std::ops::Range<usize>,
        j0: usize,
        cols: &mut OutColumns<'_>,
    ) {
        let (mb, nb) = b.shape();
        for (k, out) in cols.iter_mut().enumerate() {
            let (acol, bcol) = (a.col((j0 + k) / nb), b.col((j0 + k) % nb));
            let mut i = rows.start;
            while i < rows.end {
                let (ia, ib) = (i / mb, i % mb);
                let end = ((ia + 1) * mb).min(rows.end);
                let av = acol[ia];
                let dst = &mut out[i - rows.start..end - rows.start];
                for (o, bv) in dst.iter_mut().zip(&bcol[ib..]) {
                    o.write(av * bv);
                }
                i = end;
            }
        }
    }
}
/// `aᵀ ⊗ b`, the building block of superoperators (`vec(b·X·a) = (aᵀ ⊗ b)·vec(X)`).
/// Kernels: Dense, Csr, (Dense, Csr) and (Csr, Dense) → Csr, GpuDense.
pub static KRON_TRANSPOSE: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("kron_transpose", 2)
        .result_shape(|args, _| {
            let (m, n) = args[0].shape();
            kron_shape("kron_transpose", (n, m), args[1].shape()).ok()
        })
        .check(|op, args, _| {
            let (m, n) = args[0].shape();
            kron_shape(op, (n, m), args[1].shape()).map(|_| ())
        })
        .binary("kron_transpose_dense", |a: &Dense, b: &Dense, _: &()| {
            kron_transpose_dense(a, b)
        })
        .binary("kron_transpose_csr", |a: &Csr, b: &Csr, _: &()| {
            kron_csr(&super::transpose::transpose_csr(a, false)?, b)
        })
        // A Dense factor is converted to Csr (never the Csr one to Dense), as in `KRON`.
        .binary("kron_transpose_dense_csr", |a: &Dense, b: &Csr, _: &()| {
            kron_csr(
                &super::transpose::transpose_csr(&dense_to_csr(a)?, false)?,
                b,
            )
        })
        .binary("kron_transpose_csr_dense", |a: &Csr, b: &Dense, _: &()| {
            kron_csr(
                &super::transpose::transpose_csr(a, false)?,
                &dense_to_csr(b)?,
            )
        })
        .binary(
            "kron_transpose_gpu",
            |a: &GpuDense, b: &GpuDense, _: &()| a.kron_transpose(b),
        )
        .builtin()
});

/// The Kronecker product of `a`'s transpose with `b`, without forming `aᵀ` for Dense inputs.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) only if the result's size would overflow.
///
/// ```
/// use polymat::{Dense, Out, c64};
/// let a = Dense::from_fn(1, 2, |_, j| c64::new(j as f64 + 1.0, 0.0)); // a row
/// let k = polymat::kron_transpose(&a.into(), &Dense::identity(1).into(), Out::Auto).unwrap();
/// assert_eq!(k.shape(), (2, 1));
/// ```
#[inline]
pub fn kron_transpose(a: &Data, b: &Data, out: Out) -> Result<Data> {
    KRON_TRANSPOSE.call(&[a, b], out, &())
}

/// Dense kernel of [`kron_transpose`], faer's `kron` on a transposed view. O(size of result).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if the result's size overflows.
pub fn kron_transpose_dense(a: &Dense, b: &Dense) -> Result<Dense> {
    let (m, n) = a.shape();
    let (r, c) = kron_shape("kron_transpose", (n, m), b.shape())?;
    // A bra row-major, unpadded (`Dense`'s docs, "Memory of a one-row matrix").
    let mut out = Dense::zeros_public("kron_transpose", r, c)?;
    if r == 0 || c == 0 {
        return Ok(out);
    }
    faer::linalg::kron::kron(out.view_mut(), a.as_ref().transpose(), b.as_ref());
    Ok(out)
}

/// `a ⊗ b`. For square `b` (the usual case: local operators on a subsystem) diagonal `oa` of
/// `a` and `ob` of `b` make diagonal `oa·p + ob` (`p` = size of `b`), so the result has at
/// most diagonals(a) · diagonals(b) diagonals; a rectangular `b` scatters the diagonals and
/// goes through Csr.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if the result's shape overflows, [`Error::TooLarge`](crate::Error::TooLarge) for the result.
pub fn kron_dia(a: &Dia, b: &Dia) -> Result<Dia> {
    const OP: &str = "kron";
    let shape = kron_shape(OP, a.shape(), b.shape())?;
    let (p, q) = b.shape();
    if p != q {
        let csr = kron_csr(&dia_to_csr(a)?, &dia_to_csr(b)?)?;
        return csr_to_dia(&csr);
    }
    // Pairs can share a result offset (oa·p + ob = oa'·p + ob' when |ob − ob'| = p), never a
    // result entry: each entry of a ⊗ b is one product.
    let mut offsets = Vec::with_capacity(a.num_diagonals().saturating_mul(b.num_diagonals()));
    for &oa in a.offsets() {
        for &ob in b.offsets() {
            let oc = (oa as i128) * (p as i128) + ob as i128;
            let Ok(oc) = isize::try_from(oc) else {
                return Err(crate::error::Error::shape(
                    OP,
                    &[a.shape(), b.shape()],
                    "the result's diagonal offsets overflow",
                ));
            };
            offsets.push(oc);
        }
    }
    offsets.sort_unstable();
    offsets.dedup();
    let mut out = Builder::new(OP, shape, offsets)?;
    for (oa, ra) in diagonals(a) {
        for (ob, rb) in diagonals(b) {
            let oc = ((oa as i128) * (p as i128) + ob as i128) as isize; // checked above
            let k = out.offsets.binary_search(&oc).unwrap_or_default();
            let row = out.row_mut(k);
            let jb = valid_cols(b.shape(), ob);
            for j1 in valid_cols(a.shape(), oa) {
                let x = ra[j1];
                let base = j1 * p;
                for (d, y) in row[base + jb.start..base + jb.end]
                    .iter_mut()
                    .zip(&rb[jb.clone()])
                {
                    *d += x * y;
                }
            }
        }
    }
    Ok(out.finish())
}
