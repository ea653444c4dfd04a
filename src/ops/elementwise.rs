//! The builders the Dense elementwise kernels share: maps and zips of one or two operands
//! (entry by entry through a closure, or column by column through a kernel of their own) and
//! the copy, each writing its result once, vectorised and, above the engine's elementwise
//! threshold, parallel.

use crate::engine::{self, Family, OutColumns};
use crate::error::Result;
use crate::scalar::c64;
use crate::simd;
use crate::storage::{Dense, Layout, alloc};

/// A new Dense with entries `f(a[i, j], b[i, j])`, written once, vectorised and, above the
/// engine's elementwise threshold, parallel. Operands of one layout are walked as their
/// buffers and the result keeps that layout; mixed layouts give a column-major result, the
/// row-major operand read through its strided view.
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) naming `op` if the result cannot be allocated.
#[inline]
pub(crate) fn dense_zip(
    op: &str,
    a: &Dense,
    b: &Dense,
    f: impl Fn(c64, c64) -> c64 + Sync,
) -> Result<Dense> {
    let (m, n) = a.shape();
    let workers = engine::workers(Family::Elementwise, m.saturating_mul(n));
    if a.layout() == b.layout() {
        let (bm, bn) = (a.buffer().nrows(), a.buffer().ncols());
        let stream = engine::streams(bm, bn, 2);
        // SAFETY: the closure writes every element of every column slice it is handed (the
        // zip runs over the whole output slice: both buffers have the output buffer's shape).
        let mat = unsafe {
            alloc::build_mat(op, bm, bn, workers, |rows, j0, cols| {
                zip_cols(a, b, &f, stream, rows, j0, cols);
            })
        }?;
        return Ok(Dense::with_layout(mat, a.layout()));
    }
    // Mixed layouts: a column-major result. Row by row within each block of result columns,
    // so the row-major operand's row segment is read contiguously and the column-major
    // operand and the result are walked as a few parallel column streams.
    let (cm, rm, swapped) = if a.layout() == Layout::ColMajor {
        (a, b, false)
    } else {
        (b, a, true)
    };
    // SAFETY: `zip_mixed` writes every element of every column slice: `rows` indexes each
    // output slice exactly (all have the output's row count).
    let mat = unsafe {
        alloc::build_mat(op, m, n, workers, |rows, j0, cols| {
            zip_mixed(cm, rm, swapped, &f, rows, j0, cols);
        })
    }?;
    Ok(Dense::new(mat))
}

crate::simd::avx2_fn! {
    /// Rows `rows` of columns `j0..` of `f(a, b)` entry by entry, `a` and `b` in the same
    /// layout (walked as buffers), into `cols`; through non-temporal stores if `stream`
    /// ([`simd::nontemporal`]).
    fn zip_cols(
        a: &Dense,
        b: &Dense,
        f: &impl Fn(c64, c64) -> c64,
        stream: bool,
        rows: std::ops::Range<usize>,
        j0: usize,
        cols: &mut OutColumns<'_>,
    ) {
        let xs = a.buffer_cols(rows.clone(), j0, cols.len());
        let ys = b.buffer_cols(rows, j0, cols.len());
        if stream {
            for ((out, x), y) in cols.iter_mut().zip(xs).zip(ys) {
                simd::nontemporal::zip(out, x, y, f);
            }
            simd::nontemporal::fence();
            return;
        }
        for ((out, x), y) in cols.iter_mut().zip(xs).zip(ys) {
            for ((o, x), y) in out.iter_mut().zip(x).zip(y) {
                o.write(f(*x, *y));
            }
        }
    }
}

crate::simd::avx2_fn! {
    /// Rows `rows` of columns `j0..` of the column-major result of `f` on column-major `cm`
    /// and row-major `rm` (arguments in that order, or swapped), row by row so that `rm`'s row
    /// segment is read contiguously.
    fn zip_mixed(
        cm: &Dense,
        rm: &Dense,
        swapped: bool,
        f: &impl Fn(c64, c64) -> c64,
        rows: std::ops::Range<usize>,
        j0: usize,
        cols: &mut OutColumns<'_>,
    ) {
        let w = cols.len();
        let cc: Vec<&[c64]> = (j0..j0 + w).map(|j| cm.buffer_col(j)).collect();
        for i in rows.clone() {
            let r = &rm.buffer_col(i)[j0..j0 + w];
            for (k, out) in cols.iter_mut().enumerate() {
                // SAFETY: i is one of `rows`, below the row count m of `cm`'s columns and of
                // every output slice (which holds exactly `rows`); k < w = cols.len() = cc.len().
                let c = unsafe { *cc.get_unchecked(k).get_unchecked(i) };
                let v = if swapped { f(r[k], c) } else { f(c, r[k]) };
                // SAFETY: as above, i − rows.start < rows.len() = out.len().
                unsafe { out.get_unchecked_mut(i - rows.start).write(v) };
            }
        }
    }
}

/// A new Dense with `f` applied to every entry (written once over the buffer, vectorised,
/// parallel above the elementwise threshold); the result keeps the input's layout.
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) naming `op` if the result cannot be allocated.
#[inline]
pub(crate) fn dense_map(op: &str, a: &Dense, f: impl Fn(c64) -> c64 + Sync) -> Result<Dense> {
    let (m, n) = (a.buffer().nrows(), a.buffer().ncols());
    let workers = engine::workers(Family::Elementwise, m.saturating_mul(n));
    let stream = engine::streams(m, n, 1);
    // SAFETY: the closure writes every element of every column slice it is handed (the input
    // column segment has the same length as the output slice).
    let mat = unsafe {
        alloc::build_mat(op, m, n, workers, |rows, j0, cols| {
            map_cols(a, &f, stream, rows, j0, cols);
        })
    }?;
    Ok(Dense::with_layout(mat, a.layout()))
}

/// The entrywise conjugate (`Flip::Imag`) or negation (`Flip::Both`) of `a`'s buffer, labelled
/// `layout`: `a.layout()` for `conj` and `neg`, the other one for `adjoint` (the same buffer
/// read in the other layout is the transpose). Built in that layout rather than relabelled
/// by [`Dense::into_transpose`] afterwards: that second move of the 128-byte `Dense` stalled
/// on store forwarding and cost `adjoint` 10 × 10 about 10 % (0.103–0.105 → 0.092–0.095 µs a
/// call, `profile_op`, one thread). [`dense_map`], except
/// on one thread without streaming stores, where one call of [`simd::flip_cols`] writes every
/// column (no column slices handed out, one `xor` per two entries). 10 × 10 `adjoint`:
/// 1 857 → 1 295 instructions, 0.21–0.29 → 0.16–0.19 µs a call (docs/benchmarks.md).
pub(crate) fn dense_flip(op: &str, a: &Dense, flip: simd::Flip, layout: Layout) -> Result<Dense> {
    let Some(ss) = serial_block(a) else {
        let d = match flip {
            simd::Flip::Imag => dense_map(op, a, simd::conj),
            simd::Flip::Both => dense_map(op, a, |x| -x),
        };
        return d.map(|d| d.relabelled(layout));
    };
    // SAFETY: `serial_block` gave `ss`, the column stride of a's buffer (unit row stride);
    // `flip_cols` writes every entry of the block it is given.
    unsafe {
        block_from(op, a, ss, layout, |src, dst, shape| {
            simd::flip_cols(src.0, src.1, dst.0, dst.1, shape, flip);
        })
    }
}

/// `s·a`: [`dense_map_cols`] with `scale_into` per column, except on one thread without
/// streaming stores, where one call of [`simd::scale_cols`] writes every column, as
/// [`dense_flip`] does for the sign flips (10 × 10 115–122 → 84–92 ns a call).
pub(crate) fn dense_scale(op: &str, a: &Dense, s: c64) -> Result<Dense> {
    let Some(ss) = serial_block(a) else {
        // SAFETY: `scale_into` writes every element of `out`, as long as `x`.
        return unsafe { dense_map_cols(op, a, |x, out| simd::scale_into(out, s, x)) };
    };
    // SAFETY: `serial_block` gave `ss`, the column stride of a's buffer (unit row stride);
    // `scale_cols` writes every entry of the block it is given.
    unsafe {
        block_from(op, a, ss, a.layout(), |src, dst, shape| {
            simd::scale_cols(src, dst, shape, s);
        })
    }
}

/// The column stride of a's buffer where a one-operand map is best made by one call over the
/// whole block ([`block_from`]): a non-empty result made on one thread, without streaming
/// stores, from a buffer of unit row stride. `None` otherwise.
#[inline]
fn serial_block(a: &Dense) -> Option<usize> {
    let src = a.buffer();
    let (m, n) = (src.nrows(), src.ncols());
    let serial = m > 0
        && n > 0
        && engine::workers(Family::Elementwise, m.saturating_mul(n)) == 1
        && !engine::streams(m, n, 1)
        && src.row_stride() == 1;
    usize::try_from(src.col_stride()).ok().filter(|_| serial)
}

/// A new Dense labelled `layout` whose block `fill` writes in one call: `fill((src, ss), (dst,
/// ds), (m, n))` with a's buffer and the fresh one, each with its column stride.
///
/// # Safety
/// `ss` is the column stride of a's buffer, whose row stride is 1 ([`serial_block`]); `fill`
/// writes every entry `dst[i + j·ds]`, `i < m`, `j < n`, reading only `src[i + j·ss]`.
unsafe fn block_from(
    op: &str,
    a: &Dense,
    ss: usize,
    layout: Layout,
    fill: impl FnOnce((*const c64, usize), (*mut c64, usize), (usize, usize)),
) -> Result<Dense> {
    let src = a.buffer();
    let (m, n) = (src.nrows(), src.ncols());
    let mut mat = alloc::reserve_mat(op, m, n)?;
    let ds = usize::try_from(mat.col_stride()).unwrap_or(m);
    // SAFETY: `src` is a's m × n buffer with unit row stride and column stride `ss` (the
    // contract), and `mat` has room for m × n at column stride `ds` (an owned Mat's stride is
    // its row capacity, reserved for m rows); the fresh buffer does not overlap a's. `fill`
    // writes every entry before the dimensions are set, and c64 has no drop glue.
    unsafe {
        fill((src.as_ptr(), ss), (mat.as_ptr_mut(), ds), (m, n));
        mat.set_dims(m, n);
    }
    Ok(Dense::with_layout(mat, layout))
}

/// `a + b` (or `a − b` if `sub`) of operands of one shape: [`dense_zip`], except for operands
/// of one layout on one thread without streaming stores, where one call of
/// [`simd::sum_cols`] writes every column (no column slices handed out, one vector add per
/// two entries), as [`dense_flip`] does for one operand.
pub(crate) fn dense_sum(op: &str, a: &Dense, b: &Dense, sub: bool) -> Result<Dense> {
    let (m, n) = (a.buffer().nrows(), a.buffer().ncols());
    let (x, y) = (a.buffer(), b.buffer());
    let serial = m > 0
        && n > 0
        && a.layout() == b.layout()
        && (m, n) == (y.nrows(), y.ncols())
        && x.row_stride() == 1
        && y.row_stride() == 1
        && engine::workers(Family::Elementwise, m.saturating_mul(n)) == 1
        && !engine::streams(m, n, 2);
    let (Some(xs), Some(ys)) = (
        usize::try_from(x.col_stride()).ok().filter(|_| serial),
        usize::try_from(y.col_stride()).ok(),
    ) else {
        return dense_sum_zip(op, a, b, sub);
    };
    let mut mat = alloc::reserve_mat(op, m, n)?;
    let ds = usize::try_from(mat.col_stride()).unwrap_or(m);
    // SAFETY: `x` and `y` are m × n buffers with unit row stride and column strides `xs`,
    // `ys` (checked above), and `mat` has room for m × n at column stride `ds` (an owned
    // Mat's stride is its row capacity, reserved for m rows); the fresh buffer overlaps
    // neither input. Every entry is written before the dimensions are set, and c64 has no
    // drop glue.
    unsafe {
        simd::sum_cols(
            (x.as_ptr(), xs),
            (y.as_ptr(), ys),
            (mat.as_ptr_mut(), ds),
            (m, n),
            sub,
        );
        mat.set_dims(m, n);
    }
    Ok(Dense::with_layout(mat, a.layout()))
}

/// [`dense_sum`]'s general path.
fn dense_sum_zip(op: &str, a: &Dense, b: &Dense, sub: bool) -> Result<Dense> {
    if sub {
        dense_zip(op, a, b, |x, y| x - y)
    } else {
        dense_zip(op, a, b, |x, y| x + y)
    }
}

/// A copy of `a`'s buffer labelled `layout`: with `a.layout()` a copy of `a`, with the other
/// layout its transpose (built in that layout, as [`dense_flip`] is: `transpose` 10 × 10
/// 0.102–0.105 → 0.093 µs a call). One `memcpy` per buffer column, or where the engine streams a pass of that size (`engine::streams`), the identity map with its
/// non-temporal stores (on one thread on Intel CPUs, `memcpy` still: `engine::copy_by_memcpy`).
///
/// glibc's `memcpy` (`rep movsb` for a column of 2 KiB or more) beat the
/// `dense_map` loop it replaced for `transpose` at n = 1000 (0.98–1.00 against 1.08–1.30 ms
/// per call, one thread, same run) and tied it at n = 10 and 100. `#[inline]` (with
/// `transpose_dense`): built into the dispatcher's closure, `transpose` 10 × 10 took
/// 0.077 → 0.072 µs a call and 2 × 2 0.058 → 0.052 µs (`profile_op`, one thread).
#[inline]
pub(crate) fn dense_copy(op: &str, a: &Dense, layout: Layout) -> Result<Dense> {
    let (m, n) = (a.buffer().nrows(), a.buffer().ncols());
    let workers = engine::workers(Family::Elementwise, m.saturating_mul(n));
    if engine::streams(m, n, 1) && !(workers == 1 && engine::copy_by_memcpy()) {
        // A result too large for the cache: the map's non-temporal stores, except where
        // glibc's `memcpy` is the faster large copy (`engine::copy_by_memcpy`). In the
        // side-by-side at n = 10⁴ (1.6 GB, memory reused by malloc) the streaming map took
        // about a quarter of `memcpy`'s time on one CPU family and `memcpy` 0.4–0.8 of the
        // map's on the other (docs/benchmarks/per_operation.md).
        return dense_map(op, a, |x| x).map(|d| d.relabelled(layout));
    }
    if workers == 1 {
        // One thread: one `memcpy` of the whole buffer when both have the same column stride
        // (they do, being reserved alike), padding included: at 10 × 10 one call instead of
        // ten and no column blocks (1 580 → 1 150 instructions per `transpose`).
        if let Some(mat) = alloc::copy_whole(op, a.buffer())? {
            return Ok(Dense::with_layout(mat, layout));
        }
    }
    // SAFETY: the closure writes every element of every column slice it is handed: each is
    // filled by one copy of the input column segment of the same length; the fresh output
    // buffer does not overlap the input, and `MaybeUninit<c64>` has the layout of `c64`.
    let mat = unsafe {
        alloc::build_mat(op, m, n, workers, |rows, j0, cols| {
            let srcs = a.buffer_cols(rows, j0, cols.len());
            for (out, src) in cols.iter_mut().zip(srcs) {
                let len = src.len().min(out.len());
                debug_assert_eq!(src.len(), out.len());
                std::ptr::copy_nonoverlapping(src.as_ptr(), out.as_mut_ptr().cast(), len);
            }
        })
    }?;
    Ok(Dense::with_layout(mat, layout))
}

/// A new Dense in `a`'s layout whose every buffer column segment is `col(input segment,
/// output segment)`: for maps with a kernel of their own per column (`mul`'s scaling).
///
/// # Safety
/// `col` must write every element of the output segment it is given (as long as the input's).
pub(crate) unsafe fn dense_map_cols(
    op: &str,
    a: &Dense,
    col: impl Fn(&[c64], &mut [std::mem::MaybeUninit<c64>]) + Sync,
) -> Result<Dense> {
    let (m, n) = (a.buffer().nrows(), a.buffer().ncols());
    let workers = engine::workers(Family::Elementwise, m.saturating_mul(n));
    // SAFETY: `col` writes every element of every output segment (this function's contract).
    let mat = unsafe {
        alloc::build_mat(op, m, n, workers, |rows, j0, cols| {
            let xs = a.buffer_cols(rows, j0, cols.len());
            for (out, x) in cols.iter_mut().zip(xs) {
                col(x, out);
            }
        })
    }?;
    Ok(Dense::with_layout(mat, a.layout()))
}

/// [`dense_map_cols`] with two operands of the same shape and layout: `col(a segment,
/// b segment, output segment)` (`add` with a scale).
///
/// # Safety
/// As [`dense_map_cols`]; and `a` and `b` have the same shape and layout.
pub(crate) unsafe fn dense_zip_cols(
    op: &str,
    a: &Dense,
    b: &Dense,
    col: impl Fn(&[c64], &[c64], &mut [std::mem::MaybeUninit<c64>]) + Sync,
) -> Result<Dense> {
    debug_assert!(a.shape() == b.shape() && a.layout() == b.layout());
    let (m, n) = (a.buffer().nrows(), a.buffer().ncols());
    let workers = engine::workers(Family::Elementwise, m.saturating_mul(n));
    // SAFETY: `col` writes every element of every output segment (this function's contract).
    let mat = unsafe {
        alloc::build_mat(op, m, n, workers, |rows, j0, cols| {
            let xs = a.buffer_cols(rows.clone(), j0, cols.len());
            let ys = b.buffer_cols(rows, j0, cols.len());
            for ((out, x), y) in cols.iter_mut().zip(xs).zip(ys) {
                col(x, y, out);
            }
        })
    }?;
    Ok(Dense::with_layout(mat, a.layout()))
}

crate::simd::avx2_fn! {
    /// Rows `rows` of columns `j0..` of `f` applied to `a`'s buffer, into `cols`; through
    /// non-temporal stores if `stream` ([`simd::nontemporal`]).
    fn map_cols(
        a: &Dense,
        f: &impl Fn(c64) -> c64,
        stream: bool,
        rows: std::ops::Range<usize>,
        j0: usize,
        cols: &mut OutColumns<'_>,
    ) {
        let xs = a.buffer_cols(rows, j0, cols.len());
        if stream {
            for (out, x) in cols.iter_mut().zip(xs) {
                simd::nontemporal::map(out, x, f);
            }
            simd::nontemporal::fence();
            return;
        }
        for (out, x) in cols.iter_mut().zip(xs) {
            for (o, x) in out.iter_mut().zip(x) {
                o.write(f(*x));
            }
        }
    }
}
