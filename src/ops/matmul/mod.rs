//! Matrix products: `matmul` (a·b) and `matmul_dag` (a·b†).

use std::mem::MaybeUninit;
use std::sync::LazyLock;

use faer::linalg::matmul::matmul as faer_matmul;
use faer::{Accum, MatRef};
use rayon::prelude::*;

mod csr_dense;
pub mod dense_csr;
pub(crate) mod gemm3m;
mod registers;
pub(crate) mod super_op;

pub use super::spgemm::matmul_csr;
use super::transpose::transpose_csr;
use crate::dispatch::{Dispatcher, Out};
use crate::engine::{self, Family};
use crate::error::Result;
use crate::gpu::{GpuCsr, GpuDense};
use crate::scalar::ONE;
use crate::scalar::c64;
use crate::shape::{matmul_dag_shapes, matmul_shapes};
use crate::simd::gemm::{self, MAX_INNER, MAX_ROWS};
use crate::storage::{Csr, Data, Dense, Dia, KronSum, Layout, SuperOp, alloc};
pub use csr_dense::matmul_csr_dense;
use registers::{bra_times, one_row_past_registers, register_product};

/// `a·b`. Kernels: Dense·Dense → Dense, Csr·Csr → Csr, Csr·Dense → Dense, Dense·Csr → Dense
/// (row-major, [`matmul_dense_csr`](dense_csr::matmul_dense_csr): a bra times a large
/// operator never densifies the operator), Dia·Dense, Dense·Dia, Dia·Dia.
pub static MATMUL: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("matmul", 2)
        .result_shape(|args, _| Some((args[0].shape().0, args[1].shape().1)))
        .check(|op, args, _| matmul_shapes(op, args[0].shape(), args[1].shape()))
        .binary("matmul_dense", |a: &Dense, b: &Dense, _: &()| {
            matmul_dense(a, b)
        })
        .binary("matmul_csr", |a: &Csr, b: &Csr, _: &()| matmul_csr(a, b))
        .binary("matmul_csr_dense", |a: &Csr, b: &Dense, _: &()| {
            matmul_csr_dense(a, b)
        })
        .binary("matmul_dense_csr", |a: &Dense, b: &Csr, _: &()| {
            dense_csr::matmul_dense_csr(a, b)
        })
        .binary("matmul_dia_dense", |a: &Dia, b: &Dense, _: &()| {
            super::dia::matmul_dia_dense(a, b)
        })
        .binary("matmul_dense_dia", |a: &Dense, b: &Dia, _: &()| {
            super::dia::matmul_dense_dia(a, b)
        })
        .binary("matmul_dia", |a: &Dia, b: &Dia, _: &()| {
            super::dia::matmul_dia(a, b)
        })
        .binary("matmul_gpu", |a: &GpuDense, b: &GpuDense, _: &()| {
            a.matmul(b)
        })
        .binary("matmul_gpucsr_gpu", |a: &GpuCsr, b: &GpuDense, _: &()| {
            matmul_gpucsr_dense(a, b)
        })
        .binary("matmul_gpucsr_host", |a: &GpuCsr, b: &GpuCsr, _: &()| {
            matmul_gpucsr(a, b)
        })
        .binary("matmul_kronsum_dense", |a: &KronSum, b: &Dense, _: &()| {
            super::lazy::kron_sum::matmul_kron_sum_dense(a, b)
        })
        .binary("matmul_dense_kronsum", |a: &Dense, b: &KronSum, _: &()| {
            matmul_dense_kron_sum(a, b)
        })
        .binary("matmul_kronsum", |a: &KronSum, b: &KronSum, _: &()| {
            a.times(b, |x, y| matmul(x, y, Out::Auto))
        })
        .binary("matmul_superop_dense", |a: &SuperOp, b: &Dense, _: &()| {
            super_op::matmul_super_op_dense(a, b)
        })
        .binary("matmul_superop_gpu", |a: &SuperOp, b: &GpuDense, _: &()| {
            super_op::apply_dispatched(a, &Data::from(b.try_clone()?))
        })
        .binary("matmul_superop", |a: &SuperOp, b: &SuperOp, _: &()| {
            super_op::compose(a, b)
        })
        .builtin()
});

/// The matrix product `a·b`.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if `a`'s columns do not match `b`'s rows.
///
/// ```
/// use polymat::{Csr, Dense, Out, c64};
/// let x = Csr::from_triplets((2, 2), &[0, 1], &[1, 0], &[c64::new(1.0, 0.0); 2]).unwrap();
/// let y = Dense::from_fn(2, 1, |i, _| c64::new(i as f64 + 1.0, 0.0));
/// let z = polymat::matmul(&x.into(), &y.into(), Out::Auto).unwrap();
/// let z = z.downcast_ref::<Dense>().unwrap();
/// assert_eq!((z.get(0, 0), z.get(1, 0)), (c64::new(2.0, 0.0), c64::new(1.0, 0.0)));
/// ```
#[inline]
pub fn matmul(a: &Data, b: &Data, out: Out) -> Result<Data> {
    MATMUL.call(&[a, b], out, &())
}

/// `b·a` for a Dense `b` and a Kronecker sum `a`: `(aᵀ·bᵀ)ᵀ`, the transposes of `b` and of the
/// result copied, `aᵀ` lazy.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if `b`'s columns do not match `a`'s rows.
pub fn matmul_dense_kron_sum(b: &Dense, a: &KronSum) -> Result<Dense> {
    matmul_shapes("matmul", b.shape(), a.shape())?;
    let at = a.map(|c| c, |f| super::transpose::transpose(f, Out::Auto))?;
    let bt = super::transpose::transpose_dense(b)?.into_layout(Layout::ColMajor)?;
    let y = super::lazy::kron_sum::matmul_kron_sum_dense(&at, &bt)?;
    super::transpose::transpose_dense(&y)
}

/// `a·b†`. Kernels: Dense, Csr, Dense·Csr† → Dense (no adjoint of the Csr operand is formed),
/// Csr·Dense† → Dense (through the dense operand's adjoint).
pub static MATMUL_DAG: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("matmul_dag", 2)
        .result_shape(|args, _| Some((args[0].shape().0, args[1].shape().0)))
        .check(|op, a, _| matmul_dag_shapes(op, a[0].shape(), a[1].shape()))
        .binary("matmul_dag_dense", |a: &Dense, b: &Dense, _: &()| {
            matmul_dag_dense(a, b)
        })
        .binary("matmul_dag_csr", |a: &Csr, b: &Csr, _: &()| {
            matmul_dag_csr(a, b)
        })
        .binary("matmul_dag_dense_csr", |a: &Dense, b: &Csr, _: &()| {
            dense_csr::matmul_dag_dense_csr(a, b)
        })
        // Csr·Dense†: the adjoint of the dense operand (as large as the result's other side),
        // never a dense copy of the Csr one.
        .binary("matmul_dag_csr_dense", |a: &Csr, b: &Dense, _: &()| {
            matmul_csr_dense(a, &super::transpose::adjoint_dense(b)?)
        })
        .binary("matmul_dag_gpu", |a: &GpuDense, b: &GpuDense, _: &()| {
            a.matmul_dag(b)
        })
        .builtin()
});

/// `a·b†`.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) unless `a` and `b` have the same number of columns.
///
/// ```
/// use polymat::{Dense, Out, c64};
/// let a = Dense::from_fn(2, 3, |i, j| c64::new(i as f64, j as f64)).into();
/// let p = polymat::ops::matmul_dag(&a, &a, Out::Auto).unwrap();
/// assert_eq!(p.shape(), (2, 2));
/// ```
#[inline]
pub fn matmul_dag(a: &Data, b: &Data, out: Out) -> Result<Data> {
    MATMUL_DAG.call(&[a, b], out, &())
}

/// Dense·Dense with `faer` (with registers for results of at most 12 rows). O(mkn); parallel
/// above the engine's threshold.
///
/// From 2²¹ multiply-adds (n = 128), when every dimension is at least 32 and every part of both
/// inputs is finite and at most 2⁴⁸⁰, the product is three real `faer` products (the "3M"
/// method, about 0.8 of the time of the complex one): its error is bounded normwise like the
/// complex product's, with a larger constant for the imaginary parts, and results differ from
/// the complex product's by rounding. Inputs with NaN, infinities or huge values keep the
/// complex product.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) on mismatched inner dimensions.
pub fn matmul_dense(a: &Dense, b: &Dense) -> Result<Dense> {
    matmul_shapes("matmul", a.shape(), b.shape())?;
    let (m, k) = a.shape();
    let n = b.shape().1;
    if m == 0 || n == 0 || k == 0 {
        return Dense::zeros_public("matmul", m, n);
    }
    let work = m.saturating_mul(k).saturating_mul(n);
    let serial = engine::workers(Family::Matmul, work) == 1;
    // At most 12 rows: each result column in registers (simd::gemm), 1.3–2.3× faster than
    // faer's gemm for square n = 8–12 (docs/benchmarks.md), written once into an
    // uninitialised result; A read in place when its row count is even. Kets too: one column
    // in registers beats the column axpys of `dense_gemv` at these sizes. Not a bra past
    // 64 products (one row: each result column a short dot; faer's bᵀ·aᵀ below, the bra
    // gathered, is level at 8 × 8 and 1.6× faster at 16 × 16, docs/benchmarks.md).
    if serial && a.layout() == Layout::ColMajor && !one_row_past_registers(m, k, n, 64) {
        let mut buf = [MaybeUninit::uninit(); MAX_ROWS * MAX_INNER];
        if let Some(ap) = gemm::Operand::of(a.buffer(), &mut buf, |c| a.buffer_col(c)) {
            return register_product(&ap, b);
        }
    }
    if n == 1 {
        let x = b.col_major("matmul")?.col_as_slice(0);
        let mut out = Dense::zeros_for("matmul", m, n)?;
        // A fresh column-major column: its buffer's one column is the result.
        let workers = engine::workers(Family::Matmul, work);
        dense_gemv(a, x, out.buffer_mut().col_as_slice_mut(0), workers);
        return Ok(out);
    }
    if m == 1 {
        // A bra times a matrix: the result row-major, its n entries in one buffer column
        // (column-major, faer pads the one row to four: `Dense`'s docs), computed as bᵀ·aᵀ.
        // A column-major bra's entries are four apart in its padded buffer: gathered first
        // (faer's product with that stride is 3× slower at 1 000 × 1 000).
        let x = a.vector_entries("matmul")?;
        return bra_times(MatRef::from_column_major_slice(&x, k, 1), b, work);
    }
    // Not zero-filled (at n = 1000 a 16 MB pass): both products below write every entry.
    // SAFETY: `gemm_3m` writes all of `out` when it returns true and nothing otherwise, and
    // faer's product under `Accum::Replace` writes every entry without reading any (with
    // k = 0 it fills zeros), so every entry is written before the result is read.
    let mut out = Dense::from(unsafe { alloc::unfilled_mat("matmul", m, n)? });
    engine::product(work, |par| {
        // Large products: three real ones where that applies (finite, moderate values).
        if work >= gemm3m::MIN_WORK
            && gemm3m::gemm_3m(out.buffer_mut().as_mut(), a.as_ref(), b.as_ref(), par)
        {
            return;
        }
        faer_matmul(
            // A fresh column-major matrix: its buffer is the matrix.
            out.buffer_mut(),
            Accum::Replace,
            a.as_ref(),
            b.as_ref(),
            ONE,
            par,
        );
    });
    Ok(out)
}

/// `y ← y + a·x` for column-major `a` (`y = a·x` for row-major `a`): the matrix–vector
/// product of Dense·ket, `matmul_dag` and `expect`. Column-major: column axpys in row blocks
/// ([`crate::simd::gemv_cols`], what BLAS zgemv does); faer's gemm with one column ran at half
/// the speed of OpenBLAS's zgemv (docs/benchmarks.md). Row-major: one dot product per
/// contiguous row, yᵢ = rowᵢᵀ · x (faer's row-major gemv ran at half that speed too).
/// `x` has a's column count and `y` its row count.
///
/// On `workers` > 1 the rows are split into one contiguous range per worker (a multiple of
/// eight rows each), every worker streaming its rows of every column. Each row is computed by
/// the same operations in the same order whatever the split, so the result has the same bits
/// on any number of workers. (faer's parallel product, used before for these sizes, reached
/// 77–88 % of a streaming read on two threads.)
pub(crate) fn dense_gemv(a: &Dense, x: &[c64], y: &mut [c64], workers: usize) {
    let m = y.len();
    let per = m.div_ceil(workers.max(1)).next_multiple_of(8);
    if workers <= 1 || per >= m {
        return gemv_rows(a, x, y, 0);
    }
    y.par_chunks_mut(per)
        .enumerate()
        .for_each(|(c, part)| gemv_rows(a, x, part, c * per));
}

/// Rows `r0..r0 + y.len()` of [`dense_gemv`]: for a column-major `a`, `y ← y + a·x` by
/// [`crate::simd::gemv_cols`] on those rows of every column; for a row-major `a`, `y = a·x`
/// by one dot per row (`simd::dot`, not conjugated: no conjugated copy of x, which for a
/// bra of 10⁷ entries was most of the call).
fn gemv_rows(a: &Dense, x: &[c64], y: &mut [c64], r0: usize) {
    if a.layout() == Layout::RowMajor {
        for (i, yi) in y.iter_mut().enumerate() {
            *yi = crate::simd::dot(a.buffer_col(r0 + i), x);
        }
        return;
    }
    let rows = r0..r0 + y.len();
    // Up to 32 columns, their slices sit on the stack: a small product allocates nothing.
    let k = a.shape().1;
    let (mut stack, heap): ([&[c64]; 32], Vec<&[c64]>);
    let cols: &[&[c64]] = if k <= 32 {
        stack = [&[]; 32];
        for (j, c) in stack[..k].iter_mut().enumerate() {
            *c = &a.buffer_col(j)[rows.clone()];
        }
        &stack[..k]
    } else {
        heap = (0..k).map(|j| &a.buffer_col(j)[rows.clone()]).collect();
        &heap
    };
    crate::simd::gemv_cols(y, cols, x);
}

/// Dense `a·b†` with `faer` (no explicit adjoint is formed). O(mkn).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) unless the column counts match.
pub fn matmul_dag_dense(a: &Dense, b: &Dense) -> Result<Dense> {
    matmul_dag_shapes("matmul_dag", a.shape(), b.shape())?;
    let (m, k) = a.shape();
    let n = b.shape().0;
    // A bra row-major, unpadded (`Dense`'s docs, "Memory of a one-row matrix"); the
    // matrix–vector branch below makes a ket, column-major.
    let mut out = Dense::zeros_public("matmul_dag", m, n)?;
    if m == 0 || n == 0 || k == 0 {
        return Ok(out);
    }
    let work = m.saturating_mul(k).saturating_mul(n);
    if n == 1 && a.layout() == Layout::ColMajor {
        // Matrix–vector ([`dense_gemv`]); b is 1×k: the vector is its conjugated row.
        let row = b.as_ref();
        let x: Vec<c64> = (0..k).map(|j| row[(0, j)].conj()).collect();
        let workers = engine::workers(Family::Matmul, work);
        dense_gemv(a, &x, out.buffer_mut().col_as_slice_mut(0), workers);
        return Ok(out);
    }
    engine::product(work, |par| {
        faer_matmul(
            out.view_mut(),
            Accum::Replace,
            a.as_ref(),
            b.as_ref().adjoint(),
            ONE,
            par,
        );
    });
    Ok(out)
}

/// Csr `a·b†`: the product with `b`'s adjoint, formed as a Csr matrix.
///
/// Where the operands are wide (more columns than [`WIDE_COLUMNS_PER_ENTRY`] per stored entry
/// of both), the adjoint's row pointers (one per column of `b`) would cost more than the
/// product: for two bras of 1 × 2⁴⁰ they cannot be allocated at all. There both operands are
/// first restricted to the columns `b` stores (renumbered in increasing order), which leaves
/// every entry of the result, and the order of the sum that makes it, as it was. O(nnz log nnz)
/// extra for that step; memory O(nnz(a) + nnz(b) + rows), never O(columns).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) unless the column counts match;
/// [`Error::TooLarge`](crate::Error::TooLarge) if the result does not fit.
///
/// ```
/// use polymat::{Csr, c64};
/// // Two bras of 2⁴⁰ entries with three stored each: their adjoints cannot be stored as Csr.
/// let n = 1usize << 40;
/// let v = |x: f64| c64::new(x, 0.0);
/// let i = c64::new(0.0, 1.0);
/// let a = Csr::from_triplets((1, n), &[0; 3], &[7, 1 << 30, n - 1], &[v(1.0), v(2.0), v(3.0)]);
/// let b = Csr::from_triplets((1, n), &[0; 3], &[7, 5, n - 1], &[i, v(4.0), v(2.0)]);
/// let (a, b) = (a.unwrap(), b.unwrap());
/// let p = polymat::ops::matmul::matmul_dag_csr(&a, &b).unwrap();
/// assert_eq!(p.shape(), (1, 1));
/// assert_eq!(p.get(0, 0), c64::new(6.0, -1.0)); // 1·conj(i) + 3·2
/// ```
pub fn matmul_dag_csr(a: &Csr, b: &Csr) -> Result<Csr> {
    matmul_dag_shapes("matmul_dag", a.shape(), b.shape())?;
    let entries = a.nnz().saturating_add(b.nnz());
    if b.shape().1 / WIDE_COLUMNS_PER_ENTRY > entries.max(1) {
        let (a, b) = restrict_to_stored_columns(a, b)?;
        return matmul_csr(&a, &transpose_csr(&b, true)?);
    }
    matmul_csr(a, &transpose_csr(b, true)?)
}

/// [`matmul_dag_csr`] restricts its operands to the columns `b` stores when `b` has more than
/// this many columns per stored entry of `a` and `b` together.
pub const WIDE_COLUMNS_PER_ENTRY: usize = 8;

/// `a` and `b` (with equal column counts) restricted to the columns where `b` stores an entry,
/// renumbered in increasing order: `(a', b')` with `a'·b'† = a·b†`, entry by entry and term by
/// term (a column of `a` that `b` does not store adds nothing to any entry, and the renumbering
/// keeps the columns' order). Both results have as many columns as `b` stores distinct ones.
fn restrict_to_stored_columns(a: &Csr, b: &Csr) -> Result<(Csr, Csr)> {
    const OP: &str = "matmul_dag";
    let mut kept: Vec<usize> = alloc::try_with_capacity(OP, b.shape(), b.nnz())?;
    kept.extend_from_slice(b.indices());
    kept.sort_unstable();
    kept.dedup();
    let width = kept.len();
    let renumber = |c: usize| kept.binary_search(&c);
    let b_indices: Vec<usize> = {
        let mut v = alloc::try_with_capacity(OP, b.shape(), b.nnz())?;
        v.extend(b.indices().iter().map(|&c| renumber(c).unwrap_or_default()));
        v
    };
    let mut b_indptr = alloc::try_with_capacity(OP, b.shape(), b.indptr().len())?;
    b_indptr.extend_from_slice(b.indptr());
    let mut b_data = alloc::try_with_capacity(OP, b.shape(), b.nnz())?;
    b_data.extend_from_slice(b.data());
    let (m, _) = a.shape();
    let mut a_indptr: Vec<usize> = alloc::try_with_capacity(OP, a.shape(), a.indptr().len())?;
    let mut a_indices: Vec<usize> = alloc::try_with_capacity(OP, a.shape(), a.nnz())?;
    let mut a_data: Vec<c64> = alloc::try_with_capacity(OP, a.shape(), a.nnz())?;
    a_indptr.push(0);
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    for i in 0..m {
        for k in p[i]..p[i + 1] {
            if let Ok(c) = renumber(idx[k]) {
                a_indices.push(c);
                a_data.push(val[k]);
            }
        }
        a_indptr.push(a_indices.len());
    }
    // SAFETY: `kept` is sorted and free of duplicates, so `renumber` is strictly increasing on
    // the columns it finds: each row's columns stay strictly increasing, and below `width`.
    // `b`'s columns are all in `kept` (every one is found); `a`'s rows keep the entries whose
    // column was found, and `a_indptr` counts them row by row, m + 1 pointers from 0 to their
    // number. `b`'s row pointers and values are unchanged.
    unsafe {
        Ok((
            Csr::from_parts_unchecked((m, width), a_indptr, a_indices, a_data),
            Csr::from_parts_unchecked((b.shape().0, width), b_indptr, b_indices, b_data),
        ))
    }
}

/// GpuCsr·GpuDense: cuSPARSE SpMV (one column) or SpMM.
pub(crate) fn matmul_gpucsr_dense(a: &GpuCsr, b: &GpuDense) -> Result<GpuDense> {
    if crate::gpu::sparse_available() {
        return a.matmul_dense(b);
    }
    let c = matmul_csr_dense(&a.to_csr()?, &b.to_dense()?)?;
    GpuDense::from_dense(&c)
}

/// GpuCsr·GpuCsr: the Csr kernel on the host, the product uploaded (cuSPARSE's SpGEMM is not
/// used yet). Registered so that a sparse product stays sparse: without it the dispatcher would
/// densify the right operand on the GPU for SpMM, which fails past the dense limit.
pub(crate) fn matmul_gpucsr(a: &GpuCsr, b: &GpuCsr) -> Result<GpuCsr> {
    GpuCsr::from_csr(&matmul_csr(&a.to_csr()?, &b.to_csr()?)?)
}

#[cfg(test)]
mod tests;
