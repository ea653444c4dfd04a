//! Block operations: extract a block, overwrite a block, build a matrix from blocks.

use std::ops::Range;
use std::sync::LazyLock;

use crate::convert::{registry, to_type};
use crate::dispatch::{Dispatcher, Out};
use crate::error::{Error, Result};
use crate::gpu::GpuDense;
use crate::storage::{Csr, Data, Dense, Kind, alloc};

/// The rows and columns of a block, for [`block_extract`].
pub type BlockRange = (Range<usize>, Range<usize>);

/// The block `a[rows, cols]`. Kernels: Dense, Csr, GpuDense.
pub static BLOCK_EXTRACT: LazyLock<Dispatcher<BlockRange>> = LazyLock::new(|| {
    Dispatcher::builder("block_extract", 1)
        .result_shape(|_, r: &BlockRange| Some((r.0.len(), r.1.len())))
        .check(|op, args, r| check_range(op, args[0].shape(), r))
        .unary("block_extract_dense", |a: &Dense, r: &BlockRange| {
            block_extract_dense(a, r)
        })
        .unary("block_extract_csr", |a: &Csr, r: &BlockRange| {
            block_extract_csr(a, r)
        })
        .unary("block_extract_gpu", |a: &GpuDense, r: &BlockRange| {
            a.block(&r.0, &r.1)
        })
        .builtin()
});

fn check_range(op: &str, shape: (usize, usize), (rows, cols): &BlockRange) -> Result<()> {
    if rows.start <= rows.end
        && rows.end <= shape.0
        && cols.start <= cols.end
        && cols.end <= shape.1
    {
        Ok(())
    } else {
        Err(Error::shape(
            op,
            &[shape],
            format!("the block rows {rows:?} and columns {cols:?} must lie inside the matrix"),
        ))
    }
}

/// A copy of the block `a[rows, cols]` (half-open ranges), of the input's kind.
///
/// # Errors
/// [`Error::Shape`] if a range is reversed or reaches outside `a`.
///
/// ```
/// use polymat::{Dense, Out, c64};
/// let a = Dense::from_fn(4, 4, |i, j| c64::new((4 * i + j) as f64, 0.0));
/// let b = polymat::block_extract(&a.into(), (1..3, 2..4), Out::Auto).unwrap();
/// assert_eq!(b.shape(), (2, 2));
/// assert_eq!(b.downcast_ref::<Dense>().unwrap().get(0, 0), c64::new(6.0, 0.0));
/// ```
#[inline]
pub fn block_extract(a: &Data, range: BlockRange, out: Out) -> Result<Data> {
    BLOCK_EXTRACT.call(&[a], out, &range)
}

/// Dense kernel of [`block_extract`]. O(size of the block).
///
/// # Errors
/// As [`block_extract`].
pub fn block_extract_dense(a: &Dense, range: &BlockRange) -> Result<Dense> {
    check_range("block_extract", a.shape(), range)?;
    let (rows, cols) = range;
    if rows.is_empty() || cols.is_empty() {
        return Dense::zeros_public("block_extract", rows.len(), cols.len());
    }
    if rows.len() == 1 {
        // One row (a bra when several columns): made row-major, unpadded (`Dense`'s docs,
        // "Memory of a one-row matrix"), and allocated fallibly.
        let src = a.as_ref();
        return Dense::from_fn_public("block_extract", 1, cols.len(), |_, j| {
            src[(rows.start, cols.start + j)]
        });
    }
    Ok(Dense::new(
        a.as_ref()
            .submatrix(rows.start, cols.start, rows.len(), cols.len())
            .to_owned(),
    ))
}

/// Csr kernel of [`block_extract`], two binary searches per row. O(rows·log + entries kept).
///
/// # Errors
/// As [`block_extract`].
pub fn block_extract_csr(a: &Csr, range: &BlockRange) -> Result<Csr> {
    check_range("block_extract", a.shape(), range)?;
    let (rows, cols) = range;
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    let mut indptr = Vec::with_capacity(rows.len() + 1);
    let (mut indices, mut data) = (Vec::new(), Vec::new());
    indptr.push(0);
    for i in rows.clone() {
        let row = &idx[p[i]..p[i + 1]];
        let lo = row.partition_point(|&c| c < cols.start);
        let hi = row.partition_point(|&c| c < cols.end);
        indices.extend(row[lo..hi].iter().map(|&c| c - cols.start));
        data.extend_from_slice(&val[p[i] + lo..p[i] + hi]);
        indptr.push(indices.len());
    }
    // SAFETY: one pointer per kept row after the leading 0; each row keeps a contiguous,
    // sorted run of a's columns, shifted down by cols.start, so below cols.len().
    Ok(unsafe { Csr::from_parts_unchecked((rows.len(), cols.len()), indptr, indices, data) })
}

/// A copy of `a` with `block` written at `(above, before)`. Kernels: (Dense, Dense),
/// (Dense, Csr), (Csr, Csr), (Csr, Dense) → Csr (the block converted), (GpuDense, GpuDense).
pub static BLOCK_OVERWRITE: LazyLock<Dispatcher<(usize, usize)>> = LazyLock::new(|| {
    Dispatcher::builder("block_overwrite", 2)
        .result_shape(crate::dispatch::checks::first_shape)
        .check(|op, args, at| check_fits(op, args[0].shape(), args[1].shape(), *at))
        .binary(
            "block_overwrite_dense",
            |a: &Dense, b: &Dense, at: &(usize, usize)| block_overwrite_dense(a, b.as_ref(), *at),
        )
        .binary(
            "block_overwrite_dense_csr",
            |a: &Dense, b: &Csr, at: &(usize, usize)| {
                block_overwrite_dense(a, crate::convert::builtin::csr_to_dense(b)?.as_ref(), *at)
            },
        )
        .binary(
            "block_overwrite_csr",
            |a: &Csr, b: &Csr, at: &(usize, usize)| block_overwrite_csr(a, b, *at),
        )
        // A dense block into a Csr matrix: the block is converted, the matrix stays sparse.
        .binary(
            "block_overwrite_csr_dense",
            |a: &Csr, b: &Dense, at: &(usize, usize)| {
                block_overwrite_csr(a, &crate::convert::builtin::dense_to_csr(b)?, *at)
            },
        )
        .binary(
            "block_overwrite_gpu",
            |a: &GpuDense, b: &GpuDense, at: &(usize, usize)| a.overwrite_block(b, *at),
        )
        .builtin()
});

fn check_fits(op: &str, a: (usize, usize), b: (usize, usize), at: (usize, usize)) -> Result<()> {
    let fits = |x: usize, len: usize, max: usize| x.checked_add(len).is_some_and(|e| e <= max);
    if fits(at.0, b.0, a.0) && fits(at.1, b.1, a.1) {
        Ok(())
    } else {
        Err(Error::shape(
            op,
            &[a, b],
            format!(
                "the block placed at row {}, column {} must lie inside the matrix",
                at.0, at.1
            ),
        ))
    }
}

/// A copy of `a` whose block starting at row `above` and column `before` is replaced by
/// `block` (QuTiP's `block_overwrite(data, block, above, before)`). Entries of `a` inside the
/// block are dropped, also where `block` is zero.
///
/// # Errors
/// [`Error::Shape`] if the block does not fit inside `a` at that position.
///
/// ```
/// use polymat::{Csr, Out, c64};
/// let a: polymat::Data = Csr::zeros(3, 3).into();
/// let b: polymat::Data = Csr::identity(2).into();
/// let c = polymat::block_overwrite(&a, &b, (1, 1), Out::Auto).unwrap();
/// assert_eq!(c.downcast_ref::<Csr>().unwrap().get(2, 2), c64::new(1.0, 0.0));
/// assert!(polymat::block_overwrite(&a, &b, (2, 0), Out::Auto).is_err());
/// ```
#[inline]
pub fn block_overwrite(a: &Data, block: &Data, at: (usize, usize), out: Out) -> Result<Data> {
    BLOCK_OVERWRITE.call(&[a, block], out, &at)
}

/// Dense kernel of [`block_overwrite`]. O(size of `a`).
///
/// # Errors
/// As [`block_overwrite`].
pub fn block_overwrite_dense(
    a: &Dense,
    block: faer::MatRef<'_, crate::scalar::c64>,
    at: (usize, usize),
) -> Result<Dense> {
    check_fits(
        "block_overwrite",
        a.shape(),
        (block.nrows(), block.ncols()),
        at,
    )?;
    let mut out = a.clone();
    if block.nrows() == 0 || block.ncols() == 0 {
        return Ok(out);
    }
    out.col_major_mut("block_overwrite")?
        .as_mut()
        .submatrix_mut(at.0, at.1, block.nrows(), block.ncols())
        .copy_from(block);
    Ok(out)
}

/// Csr kernel of [`block_overwrite`]: rows crossing the block are merged in column order.
/// O(nnz(a) + nnz(block) + rows).
///
/// # Errors
/// As [`block_overwrite`].
pub fn block_overwrite_csr(a: &Csr, block: &Csr, at: (usize, usize)) -> Result<Csr> {
    check_fits("block_overwrite", a.shape(), block.shape(), at)?;
    let (bm, bn) = block.shape();
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    let (bp, bi, bv) = (block.indptr(), block.indices(), block.data());
    let mut indptr = Vec::with_capacity(a.shape().0 + 1);
    let cap = a.nnz() + block.nnz();
    let (mut indices, mut data) = (Vec::with_capacity(cap), Vec::with_capacity(cap));
    indptr.push(0);
    for i in 0..a.shape().0 {
        let (row, rv) = (&idx[p[i]..p[i + 1]], &val[p[i]..p[i + 1]]);
        if (at.0..at.0 + bm).contains(&i) {
            let lo = row.partition_point(|&c| c < at.1);
            let hi = row.partition_point(|&c| c < at.1 + bn);
            indices.extend_from_slice(&row[..lo]);
            data.extend_from_slice(&rv[..lo]);
            let r = i - at.0;
            indices.extend(bi[bp[r]..bp[r + 1]].iter().map(|&c| c + at.1));
            data.extend_from_slice(&bv[bp[r]..bp[r + 1]]);
            indices.extend_from_slice(&row[hi..]);
            data.extend_from_slice(&rv[hi..]);
        } else {
            indices.extend_from_slice(row);
            data.extend_from_slice(rv);
        }
        indptr.push(indices.len());
    }
    // SAFETY: one pointer per row after the leading 0; a row crossing the block keeps a's
    // columns below at.1, then the block's (sorted, shifted into [at.1, at.1 + bn)), then a's
    // from at.1 + bn on, so it stays strictly increasing and below ncols (`check_fits`).
    Ok(unsafe { Csr::from_parts_unchecked(a.shape(), indptr, indices, data) })
}

/// One block of a [`block_build`]: its position in the grid of blocks and its value.
#[derive(Clone, Copy, Debug)]
pub struct Block<'a> {
    /// The block row.
    pub row: usize,
    /// The block column.
    pub col: usize,
    /// The block's value; its shape must be `heights[row] × widths[col]`.
    pub data: &'a Data,
}

/// A matrix assembled from blocks on a grid (QuTiP's `block_build`): block row `r` is
/// `heights[r]` rows tall, block column `c` is `widths[c]` columns wide, and the blocks not
/// given are zero.
///
/// `Out::Auto` gives Dense if every block is Dense and Csr otherwise; `Out::Dense` and
/// `Out::Csr` are built directly; any other kind is built as Csr and converted.
///
/// # Errors
/// [`Error::Shape`] if a block's shape does not match its slot;
/// [`Error::InvalidArgument`] if a position is outside the grid or given twice.
///
/// ```
/// use polymat::{Csr, Dense, Out, c64};
/// use polymat::ops::Block;
/// let i2: polymat::Data = Csr::identity(2).into();
/// let x: polymat::Data = Dense::from_fn(2, 1, |_, _| c64::new(5.0, 0.0)).into();
/// let blocks = [Block { row: 0, col: 0, data: &i2 }, Block { row: 1, col: 1, data: &x }];
/// let m = polymat::block_build(&blocks, &[2, 2], &[2, 1], Out::Dense).unwrap();
/// assert_eq!(m.shape(), (4, 3));
/// assert_eq!(m.downcast_ref::<Dense>().unwrap().get(3, 2), c64::new(5.0, 0.0));
/// ```
pub fn block_build(
    blocks: &[Block<'_>],
    heights: &[usize],
    widths: &[usize],
    out: Out,
) -> Result<Data> {
    const OP: &str = "block_build";
    let offsets = |sizes: &[usize]| -> Result<Vec<usize>> {
        let mut acc = vec![0usize];
        for &s in sizes {
            let last = acc[acc.len() - 1];
            acc.push(
                last.checked_add(s)
                    .ok_or_else(|| Error::argument(OP, "the total size overflows usize"))?,
            );
        }
        Ok(acc)
    };
    let (row_at, col_at) = (offsets(heights)?, offsets(widths)?);
    let shape = (row_at[heights.len()], col_at[widths.len()]);
    let mut taken = std::collections::HashSet::new();
    for b in blocks {
        if b.row >= heights.len() || b.col >= widths.len() {
            return Err(Error::argument(
                OP,
                format!(
                    "block position ({}, {}) is outside the {}×{} grid",
                    b.row,
                    b.col,
                    heights.len(),
                    widths.len()
                ),
            ));
        }
        if !taken.insert((b.row, b.col)) {
            return Err(Error::argument(
                OP,
                format!("block position ({}, {}) is given twice", b.row, b.col),
            ));
        }
        let want = (heights[b.row], widths[b.col]);
        if b.data.shape() != want {
            return Err(Error::shape(
                OP,
                &[b.data.shape(), want],
                format!(
                    "block ({}, {}) must have the shape of its slot",
                    b.row, b.col
                ),
            ));
        }
    }
    let dense = match out {
        Out::Auto => blocks.iter().all(|b| b.data.kind() == Kind::DENSE),
        _ => out.kind() == Some(Kind::DENSE),
    };
    if dense {
        // A bra row-major, unpadded (`Dense`'s docs, "Memory of a one-row matrix").
        let mut m = Dense::zeros_public(OP, shape.0, shape.1)?;
        for b in blocks {
            let v = to_type::<Dense>(b.data)?;
            m.view_mut()
                .submatrix_mut(row_at[b.row], col_at[b.col], v.shape().0, v.shape().1)
                .copy_from(v.as_ref());
        }
        return Ok(m.into());
    }
    // Csr: gather every block's entries row by row of the result.
    let csrs = blocks
        .iter()
        .map(|b| to_type::<Csr>(b.data))
        .collect::<Result<Vec<_>>>()?;
    let mut rows: Vec<Vec<(usize, crate::scalar::c64)>> =
        alloc::try_vec(OP, shape, shape.0, Vec::new())?;
    for (b, c) in blocks.iter().zip(&csrs) {
        let (p, idx, val) = (c.indptr(), c.indices(), c.data());
        for i in 0..c.shape().0 {
            let row = &mut rows[row_at[b.row] + i];
            row.extend((p[i]..p[i + 1]).map(|k| (col_at[b.col] + idx[k], val[k])));
        }
    }
    // Blocks do not overlap, so no entries are summed.
    let m: Data = crate::storage::csr_build::csr_from_row_lists(OP, shape, &mut rows)?.into();
    match out.kind() {
        Some(k) if k != Kind::CSR => registry().convert(&m, k),
        _ => Ok(m),
    }
}
