//! Reshaping: `reshape` (row-major), `column_stack` / `column_unstack` (column-major) and
//! `split_columns`.

use std::sync::LazyLock;

use super::transpose::transpose_csr;
use crate::dispatch::{Dispatcher, Out};
use crate::error::{Error, Result};
use crate::gpu::GpuDense;
use crate::scalar::ZERO;
use crate::shape::{entries, indptr_len, reshape_shape};
use crate::storage::alloc;
use crate::storage::{Csr, Data, Dense, Dia, Kind};

/// Reshape to `(rows, cols)` in row-major (C) order, numpy's default. Kernels: Dense, Csr.
pub static RESHAPE: LazyLock<Dispatcher<(usize, usize)>> = LazyLock::new(|| {
    Dispatcher::builder("reshape", 1)
        .result_shape(|_, to| Some(*to))
        .check(|op, args, to| reshape_shape(op, args[0].shape(), *to))
        .unary("reshape_dense", |a: &Dense, to: &(usize, usize)| {
            reshape_dense(a, *to)
        })
        .unary("reshape_csr", |a: &Csr, to: &(usize, usize)| {
            reshape_csr(a, *to)
        })
        .unary("reshape_gpu", |a: &GpuDense, to: &(usize, usize)| {
            a.reshape(*to)
        })
        .builtin()
});

/// The same entries in row-major order, laid out as `rows × cols`: entry `(i, j)` of an
/// m×n input lands at flat position `i·n + j` of the result. Like numpy's `reshape`.
///
/// # Errors
/// [`Error::Shape`] if `rows·cols` differs from the number of entries.
///
/// ```
/// use polymat::{Dense, Out, c64};
/// let a = Dense::from_fn(2, 3, |i, j| c64::new((3 * i + j) as f64, 0.0));
/// let r = polymat::reshape(&a.into(), (3, 2), Out::Auto).unwrap();
/// let r = r.downcast_ref::<Dense>().unwrap();
/// assert_eq!(r.get(1, 0), c64::new(2.0, 0.0)); // flat position 2
/// assert!(polymat::reshape(&Dense::zeros(2, 3).into(), (4, 2), Out::Auto).is_err());
/// ```
#[inline]
pub fn reshape(a: &Data, to: (usize, usize), out: Out) -> Result<Data> {
    RESHAPE.call(&[a], out, &to)
}

/// Dense kernel of [`reshape()`]. O(mn).
///
/// # Errors
/// [`Error::Shape`] as [`reshape()`].
pub fn reshape_dense(a: &Dense, to: (usize, usize)) -> Result<Dense> {
    reshape_shape("reshape", a.shape(), to)?;
    let n = a.shape().1;
    let src = a.as_ref();
    // Entries exist only when every dimension is nonzero, so `flat` stays below m·n.
    // A bra made row-major, unpadded (`Dense`'s docs, "Memory of a one-row matrix").
    Dense::from_fn_public("reshape", to.0, to.1, |i, j| {
        let flat = i * to.1 + j;
        src[(flat / n, flat % n)]
    })
}

/// Csr kernel of [`reshape()`]. Row-major order is preserved, so no sort is needed.
/// O(nnz + rows).
///
/// # Errors
/// [`Error::Shape`] as [`reshape()`].
pub fn reshape_csr(a: &Csr, to: (usize, usize)) -> Result<Csr> {
    reshape_shape("reshape", a.shape(), to)?;
    let (m, n) = a.shape();
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    let mut indptr = alloc::try_vec("reshape", to, indptr_len("reshape", to)?, 0usize)?;
    let mut indices = Vec::with_capacity(idx.len());
    // A stored entry (i, c) has i < m and c < n, so i·n + c < m·n, which fits (checked above).
    for i in 0..m {
        for &c in &idx[p[i]..p[i + 1]] {
            let flat = i * n + c;
            indptr[flat / to.1 + 1] += 1;
            indices.push(flat % to.1);
        }
    }
    for r in 0..to.0 {
        indptr[r + 1] += indptr[r];
    }
    // SAFETY: `indptr` counts the entries of each new row (to.0 + 1 pointers from 0 to nnz);
    // entries are visited in row-major order, so within a new row the flat positions, and
    // with them the new columns (below to.1), strictly increase.
    Ok(unsafe { Csr::from_parts_unchecked(to, indptr, indices, val.to_vec()) })
}

/// Stack the columns into one m·n×1 column (`vec`). Kernels: Dense, Csr.
pub static COLUMN_STACK: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("column_stack", 1)
        .result_shape(|args, _| {
            let (m, n) = args[0].shape();
            Some((m.checked_mul(n)?, 1))
        })
        .unary("column_stack_dense", |a: &Dense, _: &()| {
            column_stack_dense(a)
        })
        .unary("column_stack_csr", |a: &Csr, _: &()| column_stack_csr(a))
        .unary("column_stack_gpu", |a: &GpuDense, _: &()| {
            let len = entries("column_stack", a.shape())?;
            a.relabel("column_stack", len, 1)
        })
        .builtin()
});

/// `vec(a)`: the columns of the m×n matrix `a` one below the other, an m·n×1 column whose
/// entry `i + m·j` is `a[i, j]`. The inverse of [`column_unstack`].
///
/// # Errors
/// [`Error::Shape`] if `m·n` overflows, [`Error::TooLarge`] if the result cannot be
/// allocated; conversion errors for other kinds.
///
/// ```
/// use polymat::{Dense, Out, c64};
/// let a = Dense::from_fn(2, 2, |i, j| c64::new((i + 2 * j) as f64, 0.0));
/// let v = polymat::column_stack(&a.into(), Out::Csr).unwrap();
/// assert_eq!(v.shape(), (4, 1));
/// let back = polymat::column_unstack(&v, 2, Out::Dense).unwrap();
/// assert_eq!(back.downcast_ref::<Dense>().unwrap().get(1, 1), c64::new(3.0, 0.0));
/// ```
#[inline]
pub fn column_stack(a: &Data, out: Out) -> Result<Data> {
    COLUMN_STACK.call(&[a], out, &())
}

/// Dense kernel of [`column_stack`]. O(mn).
///
/// # Errors
/// As [`column_stack`].
pub fn column_stack_dense(a: &Dense) -> Result<Dense> {
    let (m, n) = a.shape();
    let len = entries("column_stack", (m, n))?;
    let mut out = Dense::zeros_for("column_stack", len, 1)?;
    if len == 0 {
        return Ok(out);
    }
    let src = a.col_major("column_stack")?;
    // A fresh column-major column: its buffer's one column is the result.
    let dst = out.buffer_mut().col_as_slice_mut(0);
    for j in 0..n {
        dst[j * m..(j + 1) * m].copy_from_slice(src.col_as_slice(j));
    }
    Ok(out)
}

/// Csr kernel of [`column_stack`], through a transpose so the stacked rows come out sorted.
/// O(nnz + m·n) (the result has one row per entry).
///
/// # Errors
/// As [`column_stack`].
pub fn column_stack_csr(a: &Csr) -> Result<Csr> {
    const OP: &str = "column_stack";
    let (m, n) = a.shape();
    let len = entries(OP, (m, n))?;
    let mut indptr = alloc::try_vec(OP, (len, 1), indptr_len(OP, (len, 1))?, 0usize)?;
    let t = transpose_csr(a, false)?; // row j of t is column j of a, sorted
    let (p, idx, val) = (t.indptr(), t.indices(), t.data());
    for j in 0..n {
        for &i in &idx[p[j]..p[j + 1]] {
            indptr[j * m + i + 1] += 1;
        }
    }
    for r in 0..len {
        indptr[r + 1] += indptr[r];
    }
    // SAFETY: `len + 1` pointers counting one entry at each stored position j·m + i (< m·n),
    // so every row holds at most the single column 0.
    Ok(unsafe { Csr::from_parts_unchecked((len, 1), indptr, vec![0; val.len()], val.to_vec()) })
}

/// Undo [`column_stack`]: an m·n×1 column to an m×n matrix. Kernels: Dense, Csr.
pub static COLUMN_UNSTACK: LazyLock<Dispatcher<usize>> = LazyLock::new(|| {
    Dispatcher::builder("column_unstack", 1)
        .check(|op, args, rows| unstack_shape(op, args[0].shape(), *rows).map(|_| ()))
        .result_shape(|args, &rows| {
            let cols = unstack_shape("column_unstack", args[0].shape(), rows).ok()?;
            Some((rows, cols))
        })
        .unary("column_unstack_dense", |a: &Dense, rows: &usize| {
            column_unstack_dense(a, *rows)
        })
        .unary("column_unstack_csr", |a: &Csr, rows: &usize| {
            column_unstack_csr(a, *rows)
        })
        .unary("column_unstack_gpu", |a: &GpuDense, rows: &usize| {
            let cols = unstack_shape("column_unstack", a.shape(), *rows)?;
            a.relabel("column_unstack", *rows, cols)
        })
        .builtin()
});

/// The input must be a column whose length `rows` divides; returns the column count.
fn unstack_shape(op: &str, shape: (usize, usize), rows: usize) -> Result<usize> {
    if shape.1 == 1 && rows > 0 && shape.0.is_multiple_of(rows) {
        Ok(shape.0 / rows)
    } else {
        Err(Error::shape(
            op,
            &[shape],
            format!("the input must be a column whose length is a multiple of rows = {rows}"),
        ))
    }
}

/// The m·n×1 column `a` as an m×n matrix with `m = rows`, column-major: entry `k` goes to
/// `(k mod m, k div m)`.
///
/// # Errors
/// [`Error::Shape`] unless `a` is a column whose length is a nonzero multiple of `rows`
/// (an empty column unstacks to `rows × 0`).
#[inline]
pub fn column_unstack(a: &Data, rows: usize, out: Out) -> Result<Data> {
    COLUMN_UNSTACK.call(&[a], out, &rows)
}

/// Dense kernel of [`column_unstack`]. O(mn).
///
/// # Errors
/// [`Error::Shape`] as [`column_unstack`].
pub fn column_unstack_dense(a: &Dense, rows: usize) -> Result<Dense> {
    let cols = unstack_shape("column_unstack", a.shape(), rows)?;
    Dense::from_col_major(rows, cols, a.col_major("column_unstack")?.col_as_slice(0))
}

/// Csr kernel of [`column_unstack`], a counting sort by row. O(nnz + m·n).
///
/// # Errors
/// [`Error::Shape`] as [`column_unstack`].
pub fn column_unstack_csr(a: &Csr, rows: usize) -> Result<Csr> {
    const OP: &str = "column_unstack";
    let cols = unstack_shape(OP, a.shape(), rows)?;
    let (p, val) = (a.indptr(), a.data());
    let mut indptr = alloc::try_vec(OP, (rows, cols), indptr_len(OP, (rows, cols))?, 0usize)?;
    for k in 0..a.shape().0 {
        indptr[k % rows + 1] += p[k + 1] - p[k];
    }
    for r in 0..rows {
        indptr[r + 1] += indptr[r];
    }
    let mut next = indptr[..rows].to_vec();
    let mut indices = vec![0usize; val.len()];
    let mut data = vec![ZERO; val.len()];
    // Stacked rows in increasing k visit each output row's columns in increasing order.
    for k in 0..a.shape().0 {
        for &v in &val[p[k]..p[k + 1]] {
            let slot = &mut next[k % rows];
            indices[*slot] = k / rows;
            data[*slot] = v;
            *slot += 1;
        }
    }
    // SAFETY: `indptr` counts each output row's entries (rows + 1 pointers, 0 to nnz); the
    // stacked rows are visited in increasing k, so each output row gets its columns k / rows
    // (< cols) in strictly increasing order.
    Ok(unsafe { Csr::from_parts_unchecked((rows, cols), indptr, indices, data) })
}

/// The columns of a matrix as separate m×1 matrices. Kernels: Dense, Csr.
pub static SPLIT_COLUMNS: LazyLock<Dispatcher<(), Vec<Data>>> = LazyLock::new(|| {
    Dispatcher::builder("split_columns", 1)
        .unary("split_columns_dense", |a: &Dense, _: &()| {
            split_columns_dense(a)
        })
        .unary("split_columns_csr", |a: &Csr, _: &()| split_columns_csr(a))
        .unary("split_columns_dia", |a: &Dia, _: &()| {
            crate::ops::dia::split_columns_dia(a)
        })
        // GPU data stays on the GPU: the columns go through host memory and back.
        .unary("split_columns_gpu", |a: &GpuDense, _: &()| {
            split_columns_dense(&a.to_dense()?)?
                .iter()
                .map(|c| c.to(Kind::GPU_DENSE))
                .collect::<Result<Vec<Data>>>()
        })
        .builtin()
});

/// The n columns of an m×n matrix, each an m×1 matrix of the input's kind (Dense, Csr or
/// GpuDense; other kinds are converted to the cheapest of Dense and Csr).
///
/// # Errors
/// [`Error::TooLarge`] if the columns cannot be listed in memory; conversion errors for
/// other kinds.
///
/// ```
/// use polymat::Csr;
/// let cols = polymat::split_columns(&Csr::identity(3).into()).unwrap();
/// assert_eq!(cols.len(), 3);
/// assert_eq!(format!("{:#}", cols[2]), "Csr(3×1, nnz=1)");
/// ```
#[inline]
pub fn split_columns(a: &Data) -> Result<Vec<Data>> {
    SPLIT_COLUMNS.call(&[a], Out::Auto, &())
}

/// Dense kernel of [`split_columns`]. O(mn).
///
/// # Errors
/// As [`split_columns`].
pub fn split_columns_dense(a: &Dense) -> Result<Vec<Data>> {
    const OP: &str = "split_columns";
    let (m, n) = a.shape();
    // Each column: its buffer, the `Arc` holding it (two allocations) and its `Data`.
    let each = alloc::dense_bytes((m, 1)) + alloc::COLUMN_BYTES;
    alloc::check_parts(OP, (m, n), n, each, 2, 0)?;
    let mut out = alloc::try_with_capacity(OP, (m, n), n)?;
    let src = if m == 0 { None } else { Some(a.col_major(OP)?) };
    for j in 0..n {
        let col = match src {
            None => Dense::zeros_for(OP, 0, 1)?,
            Some(src) => Dense::from_col_major(m, 1, src.col_as_slice(j))?,
        };
        out.push(col.into());
    }
    Ok(out)
}

/// Csr kernel of [`split_columns`], through one transpose. O(nnz + m·n).
///
/// # Errors
/// As [`split_columns`].
pub fn split_columns_csr(a: &Csr) -> Result<Vec<Data>> {
    const OP: &str = "split_columns";
    let (m, n) = a.shape();
    // Each column: m + 1 row pointers, three arrays and an `Arc` (four allocations) and its
    // `Data`; shared: the stored entries (once in the columns, once in the transpose) and the
    // transpose's row pointers.
    let nnz = a.nnz();
    let each = alloc::csr::csr_bytes(m.saturating_add(1), 0) + alloc::COLUMN_BYTES;
    let shared = alloc::csr::csr_bytes(n.saturating_add(1), nnz)
        .saturating_add(alloc::csr::csr_bytes(0, nnz));
    alloc::check_parts(OP, (m, n), n, each, 4, shared)?;
    let mut out = alloc::try_with_capacity(OP, (m, n), n)?;
    let t = transpose_csr(a, false)?;
    let (p, idx, val) = (t.indptr(), t.indices(), t.data());
    for j in 0..n {
        let mut indptr = alloc::try_vec(OP, (m, 1), indptr_len(OP, (m, 1))?, 0usize)?;
        for &i in &idx[p[j]..p[j + 1]] {
            indptr[i + 1] = 1;
        }
        for r in 0..m {
            indptr[r + 1] += indptr[r];
        }
        let len = p[j + 1] - p[j];
        // SAFETY: row j of the transpose lists column j's rows, sorted and unique, so every
        // row of the m×1 result holds at most the single column 0.
        let col = unsafe {
            Csr::from_parts_unchecked((m, 1), indptr, vec![0; len], val[p[j]..p[j + 1]].to_vec())
        };
        out.push(col.into());
    }
    Ok(out)
}
