//! Fallible allocation: dense matrices against the dense limit, and every large buffer against
//! the memory available now (`engine::memory`) and the allocator. Every buffer whose size comes
//! from a user's shape is allocated here, so a huge shape is an [`Error::TooLarge`], never an
//! abort or a panic.

use std::cell::RefCell;

use faer::Mat;

use crate::engine;
use crate::error::{Error, Result};
use crate::scalar::c64;

pub(crate) mod csr;

/// Bytes of a dense `rows × cols` complex matrix (`u128`: never overflows).
pub(crate) fn dense_bytes(shape: (usize, usize)) -> u128 {
    (shape.0 as u128)
        .saturating_mul(shape.1 as u128)
        .saturating_mul(std::mem::size_of::<c64>() as u128)
}

/// Rows faer reserves for a column of `rows` complex entries: a multiple of four (64 bytes, its
/// alignment for `c64`). A column-major `Dense` of one row so takes four entries of memory per
/// entry, which is why bras are made row-major (`Dense`'s docs, "Memory of a one-row
/// matrix").
const ROW_ALIGN: usize = 4;

/// Bytes faer allocates for a column-major `rows × cols` complex matrix: each column padded to
/// [`ROW_ALIGN`] rows (`u128`: never overflows). What the memory check counts, against
/// [`dense_bytes`] for the dense limit (the entries of the result).
pub(crate) fn dense_alloc_bytes(shape: (usize, usize)) -> u128 {
    (shape.0 as u128)
        .next_multiple_of(ROW_ALIGN as u128)
        .saturating_mul(shape.1 as u128)
        .saturating_mul(std::mem::size_of::<c64>() as u128)
}

/// Checks that a dense `rows × cols` result fits the dense limit.
///
/// # Errors
/// [`Error::TooLarge`] naming `op`, the shape and the bytes.
pub(crate) fn check_dense(op: &str, shape: (usize, usize)) -> Result<()> {
    let bytes = dense_bytes(shape);
    let limit = engine::dense_limit();
    if bytes > limit as u128 {
        return Err(Error::TooLarge {
            op: op.to_owned(),
            shape,
            bytes,
            limit: Some(limit),
            reason: String::new(),
        });
    }
    Ok(())
}

/// Checks that a dense `rows × cols` result fits the dense limit and the memory available now:
/// what [`reserve_mat`] checks before allocating, and what the dispatcher checks before a kernel
/// whose result it then converts to Dense.
///
/// # Errors
/// [`Error::TooLarge`] naming `op`, as [`check_dense`] and [`check_memory`].
#[inline]
pub(crate) fn check_dense_fits(op: &str, shape: (usize, usize)) -> Result<()> {
    check_dense(op, shape)?;
    // The bytes faer will allocate, padding included: a 1 × n result takes 4·n entries.
    check_memory(op, shape, dense_alloc_bytes(shape))
}

/// Checks that `bytes` more can be allocated and written now, against
/// [`engine::available_memory`] less a sixteenth for what else the process and the system
/// need; allocations below [`engine::PROBE_BYTES`] are not checked (nothing is read).
///
/// # Errors
/// [`Error::TooLarge`] naming `op`, the shape, the bytes and the memory available.
#[inline]
pub(crate) fn check_memory(op: &str, shape: (usize, usize), bytes: u128) -> Result<()> {
    if bytes < engine::PROBE_BYTES as u128 {
        return Ok(());
    }
    check_available(op, shape, bytes)
}

#[cold]
#[inline(never)]
fn check_available(op: &str, shape: (usize, usize), bytes: u128) -> Result<()> {
    match engine::available_memory() {
        Some(available) if bytes > u128::from(available - available / 16) => Err(Error::TooLarge {
            op: op.to_owned(),
            shape,
            bytes,
            limit: None,
            reason: format!(
                "more than the {available} bytes of memory available now (MemAvailable and free \
                 swap, within the process's cgroup limits), less a sixteenth kept in reserve"
            ),
        }),
        _ => Ok(()),
    }
}

/// Checks, before a dense algorithm starts, that its workspace fits: about `copies` matrices of
/// `shape` held at once (its intermediates, its result, and what faer allocates inside its
/// decompositions). faer allocates those infallibly: past the memory available the process
/// would abort, or be killed when it writes the pages, instead of returning this error. Each
/// matrix is also held to the dense limit.
///
/// # Errors
/// [`Error::TooLarge`] naming `op` and `shape`, with the bytes of all `copies`.
pub(crate) fn check_workspace(op: &str, shape: (usize, usize), copies: u32) -> Result<()> {
    check_dense(op, shape)?;
    let bytes = dense_alloc_bytes(shape).saturating_mul(u128::from(copies));
    check_memory(op, shape, bytes).map_err(|mut e| {
        if let Error::TooLarge { reason, .. } = &mut e {
            *reason = format!("its workspace, about {copies} matrices of this shape, is {reason}");
        }
        e
    })
}

/// Makes a [`Error::TooLarge`] about a buffer name the matrix it holds: the buffer of a
/// row-major `r × c` matrix is the column-major `c × r` one, and the error should say `r × c`.
/// Other errors pass unchanged.
pub(crate) fn for_shape(shape: (usize, usize)) -> impl FnOnce(Error) -> Error {
    move |e| match e {
        Error::TooLarge {
            op,
            bytes,
            limit,
            reason,
            ..
        } => Error::TooLarge {
            op,
            shape,
            bytes,
            limit,
            reason,
        },
        other => other,
    }
}

/// The smallest block the allocator hands out (glibc: 32 bytes with its header): what a
/// small allocation costs at least.
const MIN_CHUNK: u128 = 32;

/// Checks, as [`check_memory`], a result made of `count` separately allocated parts (the
/// columns of [`split_columns`](crate::split_columns)): each part takes `each` bytes in
/// `allocs` allocations (each at least the allocator's smallest block), plus `shared` bytes
/// for all of them. One part at a time would pass where all of them do not fit.
///
/// # Errors
/// [`Error::TooLarge`] as [`check_memory`].
pub(crate) fn check_parts(
    op: &str,
    shape: (usize, usize),
    count: usize,
    each: u128,
    allocs: u128,
    shared: u128,
) -> Result<()> {
    let part = each.saturating_add(allocs.saturating_mul(MIN_CHUNK));
    check_memory(
        op,
        shape,
        (count as u128).saturating_mul(part).saturating_add(shared),
    )
}

/// An empty matrix of shape `rows × cols` (one of them 0), in O(1): no loop over the other
/// dimension and no memory.
///
/// # Errors
/// [`Error::TooLarge`] for more than about 2⁵⁹ rows: faer rounds the row capacity up to its
/// SIMD width, which overflows there, so it cannot represent such a matrix even empty.
pub(crate) fn empty_mat(rows: usize, cols: usize) -> Result<Mat<c64>> {
    debug_assert!(rows == 0 || cols == 0);
    let mut mat = Mat::<c64>::new();
    mat.try_reserve(rows, cols).map_err(|e| Error::TooLarge {
        op: "Dense".to_owned(),
        shape: (rows, cols),
        bytes: 0,
        limit: None,
        reason: format!("faer cannot represent an empty matrix of this shape ({e:?})"),
    })?;
    // SAFETY: the capacity covers `rows × cols` (reserved above), and a matrix with no entries
    // has nothing to initialise.
    unsafe { mat.set_dims(rows, cols) };
    Ok(mat)
}

/// A `rows × cols` matrix with reserved, uninitialised storage and dimensions 0 × 0: the caller
/// writes every entry and then sets the dimensions. Empty shapes cost O(1).
///
/// Inlined whole, with the pool's [`take`](pool::take): the caller then builds on the recycled
/// `Mat` in registers, instead of loading a returned `Result` in 16-byte pieces over the
/// callee's 8-byte stores (a store-forwarding stall: half of `csr_to_dense`'s samples on a
/// 2 × 2). One thread, a call: `mul` Dense 2 × 2 0.097–0.099 → 0.092–0.093 µs, Csr → Dense
/// 2 × 2 0.097–0.100 → 0.096–0.098, 10 × 10 results level. With the allocation kept out of
/// line (`#[inline(never)]`), the 2 × 2 cases were level with not inlining at all.
///
/// `#[inline(always)]`: with `#[inline]` alone the compiler had stopped inlining it into
/// `csr_to_dense` and `dense_map_cols` by aee720d, and the stall was back. One thread, median
/// of seven runs: Csr → Dense 2 × 2 100 → 92 ns, 10 × 10 122 → 114,
/// `transpose` Dense 10 × 10 87 → 81, `mul` Dense 2 × 2 83 → 78 (its fresh-allocation half
/// kept out of line instead: 100, 115, 84, 80, so inlined whole again).
///
/// # Errors
/// [`Error::TooLarge`] over the dense limit or when the allocator refuses.
#[inline(always)]
pub(crate) fn reserve_mat(op: &str, rows: usize, cols: usize) -> Result<Mat<c64>> {
    if let Some(mat) = pool::take(rows, cols) {
        return Ok(mat);
    }
    check_dense_fits(op, (rows, cols))?;
    let mut mat = Mat::<c64>::new();
    mat.try_reserve(rows, cols).map_err(|e| Error::TooLarge {
        op: op.to_owned(),
        shape: (rows, cols),
        bytes: dense_bytes((rows, cols)),
        limit: None,
        reason: format!("the allocator refused ({e:?})"),
    })?;
    // The reserved block: `col_stride` is the row capacity (at least `rows`), for `cols`
    // columns. Large ones are advised as huge-page candidates (`engine::pages`).
    let stride = usize::try_from(mat.col_stride()).unwrap_or(rows);
    let bytes = stride
        .saturating_mul(cols)
        .saturating_mul(std::mem::size_of::<c64>());
    engine::pages::advise(mat.as_ptr_mut().cast::<u8>(), bytes);
    Ok(mat)
}

/// A copy of `src` in a fresh buffer from [`reserve_mat`], made by one `memcpy` of the whole
/// buffer, padding included (one call instead of one per column, and no entry-by-entry loop):
/// `None` for an empty `src` or when the fresh buffer's column stride differs from `src`'s
/// (the caller then copies column by column).
///
/// # Errors
/// [`reserve_mat`]'s, naming `op`.
#[inline]
pub(crate) fn copy_whole(op: &str, src: faer::MatRef<'_, c64>) -> Result<Option<Mat<c64>>> {
    let (m, n) = (src.nrows(), src.ncols());
    if m == 0 || n == 0 || src.row_stride() != 1 {
        return Ok(None);
    }
    let mut mat = reserve_mat(op, m, n)?;
    let Ok(stride) = usize::try_from(mat.col_stride()) else {
        return Ok(None);
    };
    if src.col_stride() != mat.col_stride() {
        return Ok(None);
    }
    // SAFETY: both buffers are m × n (m, n ≥ 1) with unit row stride and column stride
    // `stride` ≥ m, so each spans stride·(n − 1) + m elements of its own allocation (the fresh
    // one reserved for m × n); they do not overlap. The padding between columns is copied as
    // raw bytes and never read as values; every entry is written, so the dimensions may be set,
    // and c64 has no drop glue.
    unsafe {
        std::ptr::copy_nonoverlapping(src.as_ptr(), mat.as_ptr_mut(), stride * (n - 1) + m);
        mat.set_dims(m, n);
    }
    Ok(Some(mat))
}

/// A `rows × cols` matrix whose entries are not written yet: [`reserve_mat`] with its
/// dimensions set, for a result that a kernel writes in full (faer's products under
/// `Accum::Replace` do, and read nothing of it).
///
/// # Safety
/// The caller writes every entry before anything reads one.
///
/// # Errors
/// As [`reserve_mat`].
pub(crate) unsafe fn unfilled_mat(op: &str, rows: usize, cols: usize) -> Result<Mat<c64>> {
    let mut mat = reserve_mat(op, rows, cols)?;
    // SAFETY: `reserve_mat` gives capacity for rows × cols; every entry is written before it
    // is read (this function's contract), and c64 has no drop glue.
    unsafe { mat.set_dims(rows, cols) };
    Ok(mat)
}

/// The `rows × cols` zero matrix, allocated fallibly; O(1) for an empty shape.
///
/// # Errors
/// As [`reserve_mat`].
pub(crate) fn zeros_mat(op: &str, rows: usize, cols: usize) -> Result<Mat<c64>> {
    if rows == 0 || cols == 0 {
        return empty_mat(rows, cols);
    }
    let mut mat = reserve_mat(op, rows, cols)?;
    // SAFETY: `reserve_mat` gives capacity for rows × cols; every entry is zeroed below before
    // anything reads it, and c64 has no drop glue.
    unsafe { mat.set_dims(rows, cols) };
    zero_fill(&mut mat);
    Ok(mat)
}

/// Writes 0 to every entry of `mat` (whose entries may not be written yet) and to the padding
/// between its columns, as one span. Plain AVX stores for a matrix that stays in cache
/// (`simd::fill`; 100 × 100, 160 KB, as part of a Csr → Dense conversion: 4.31 → 3.61 µs),
/// glibc's `memset` for one the engine streams (10⁴ × 10⁴ took 3 times as long with plain
/// stores) and from 1 MiB up (`engine::fill_by_memset`, where the measurements are).
pub(crate) fn zero_fill(mat: &mut Mat<c64>) {
    let (rows, cols) = (mat.nrows(), mat.ncols());
    if rows == 0 || cols == 0 {
        return;
    }
    let stride = usize::try_from(mat.col_stride()).unwrap_or(rows);
    // The columns and the padding between them: [0, stride·(cols − 1) + rows) of an owned
    // matrix's block (stride ≥ rows, cols columns).
    let len = stride * (cols - 1) + rows;
    let base = mat.as_ptr_mut();
    if engine::streams(rows, cols, 0) || engine::fill_by_memset(len) {
        // SAFETY: [0, len) lies in the allocation (above), and all-zero bytes are 0.
        unsafe { std::ptr::write_bytes(base, 0, len) };
    } else {
        // SAFETY: [0, len) lies in the allocation, and nothing else refers to it while `mat`
        // is borrowed mutably.
        crate::simd::fill::zeros(unsafe { std::slice::from_raw_parts_mut(base.cast(), len) });
    }
}

/// A `rows × cols` matrix with entries `f(i, j)`, allocated fallibly; O(1) for an empty shape.
///
/// # Errors
/// As [`reserve_mat`].
pub(crate) fn mat_from_fn(
    op: &str,
    rows: usize,
    cols: usize,
    mut f: impl FnMut(usize, usize) -> c64,
) -> Result<Mat<c64>> {
    if rows == 0 || cols == 0 {
        return empty_mat(rows, cols);
    }
    let mut mat = reserve_mat(op, rows, cols)?;
    mat.resize_with(rows, cols, &mut f);
    Ok(mat)
}

/// A new `m × n` matrix written exactly once by `fill`, through [`engine::dense_build`]
/// (blocks of columns, parallel when `workers > 1`, vectorised), allocated fallibly.
///
/// # Safety
/// `fill` must initialise every element of every slice it is given (see
/// [`engine::dense_build`]).
///
/// # Errors
/// As [`reserve_mat`].
pub(crate) unsafe fn build_mat<F>(
    op: &str,
    m: usize,
    n: usize,
    workers: usize,
    fill: F,
) -> Result<Mat<c64>>
where
    F: Fn(std::ops::Range<usize>, usize, &mut engine::OutColumns<'_>) + Sync,
{
    if m == 0 || n == 0 {
        return empty_mat(m, n);
    }
    let mat = reserve_mat(op, m, n)?;
    // SAFETY: `mat` has capacity for m × n; `fill` writes every element (our contract).
    Ok(unsafe { engine::dense_build(mat, m, n, workers, fill) })
}

/// A vector of `len` copies of `value`, allocated fallibly.
///
/// # Errors
/// [`Error::TooLarge`] naming `op` and `shape` when the allocator refuses.
pub(crate) fn try_vec<T: Clone>(
    op: &str,
    shape: (usize, usize),
    len: usize,
    value: T,
) -> Result<Vec<T>> {
    let mut v = try_with_capacity(op, shape, len)?;
    v.resize(len, value);
    Ok(v)
}

/// An empty vector with room for `len` elements, allocated fallibly.
///
/// # Errors
/// As [`try_vec`].
#[inline(always)]
pub(crate) fn try_with_capacity<T>(op: &str, shape: (usize, usize), len: usize) -> Result<Vec<T>> {
    let size = std::mem::size_of::<T>();
    // `check_memory` on the length: no 128-bit product on the small calls' path.
    if len >= engine::PROBE_BYTES / size.max(1) {
        check_available(op, shape, len as u128 * size as u128)?;
    }
    reserve(op, shape, len)
}

/// [`try_with_capacity`] without the check of the memory available (for arrays whose sum the
/// caller checked).
#[inline(always)]
fn reserve<T>(op: &str, shape: (usize, usize), len: usize) -> Result<Vec<T>> {
    let size = std::mem::size_of::<T>();
    let Some(v) = alloc_vec::<T>(len) else {
        return Err(refused(op, shape, len as u128 * size as u128));
    };
    // Large sparse arrays too are advised as huge-page candidates (`engine::pages`).
    engine::pages::advise(
        v.as_ptr().cast::<u8>(),
        v.capacity().saturating_mul(std::mem::size_of::<T>()),
    );
    Ok(v)
}

/// `len` complex zeros, allocated fallibly and zeroed by the allocator (`calloc`: a large
/// array comes as fresh zero pages, touched only where used, not written twice).
///
/// # Errors
/// As [`try_vec`].
pub(crate) fn try_zeros(op: &str, shape: (usize, usize), len: usize) -> Result<Vec<c64>> {
    let bytes = len as u128 * std::mem::size_of::<c64>() as u128;
    if len >= engine::PROBE_BYTES / std::mem::size_of::<c64>() {
        check_available(op, shape, bytes)?;
    }
    let Ok(layout) = std::alloc::Layout::array::<c64>(len) else {
        return Err(refused(op, shape, bytes));
    };
    if layout.size() == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: the layout has a non-zero size (checked just above).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<c64>();
    if ptr.is_null() {
        return Err(refused(op, shape, bytes));
    }
    // SAFETY: `ptr` comes from the global allocator with the layout of `len` elements of
    // `c64` (a Vec's layout for that capacity), and all its bytes are zero, which is the bit
    // pattern of `c64` zero (two `f64` +0.0): `len` initialised elements.
    Ok(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

/// `Vec::with_capacity(len)`, or `None` where that would abort (the allocator refuses, or
/// the size passes `isize::MAX` bytes). std's fallible `try_reserve_exact` on an empty vector
/// takes its growth path, about 40 instructions more per call: at n = 10 a Csr `mul` (three
/// arrays) ran 1 854 → 2 039 instructions per call through it.
#[inline(always)]
fn alloc_vec<T>(len: usize) -> Option<Vec<T>> {
    let layout = std::alloc::Layout::array::<T>(len).ok()?;
    if layout.size() == 0 {
        // No memory to allocate: an empty vector (of any capacity for a zero-sized T).
        return Some(Vec::with_capacity(len));
    }
    // SAFETY: the layout has a non-zero size (checked just above).
    let ptr = unsafe { std::alloc::alloc(layout) }.cast::<T>();
    if ptr.is_null() {
        return None;
    }
    // SAFETY: `ptr` comes from the global allocator with the layout of `len` elements of `T`
    // (a Vec's layout for that capacity); the vector starts with no initialised elements.
    Some(unsafe { Vec::from_raw_parts(ptr, 0, len) })
}

/// The error of a refused reservation, out of the callers' hot paths.
#[cold]
#[inline(never)]
pub(crate) fn refused(op: &str, shape: (usize, usize), bytes: u128) -> Error {
    Error::TooLarge {
        op: op.to_owned(),
        shape,
        bytes,
        limit: None,
        reason: "the allocator refused the reservation (or it passes isize::MAX bytes)".to_owned(),
    }
}

/// Recycling of small dense buffers, per thread (issue 15, item 4). faer allocates every `Mat`
/// with the aligned allocator, which costs about 70–90 ns even for a 2×2 matrix (a plain `Vec`
/// of the same size: about 17 ns): more than the arithmetic of any kernel at that size. A
/// dropped [`Dense`](crate::Dense) of at most [`pool::MAX_ENTRIES`] entries gives its buffer
/// to its thread's pool (at most [`pool::CAPACITY`] buffers, at most 64 KiB, the oldest dropped
/// first), and [`reserve_mat`] takes the newest buffer of the same shape from there before
/// asking the allocator.
pub(crate) mod pool {
    use super::{Mat, RefCell, c64};

    /// The largest matrix recycled: 16×16.
    pub(crate) const MAX_ENTRIES: usize = 256;
    /// Buffers kept per thread.
    pub(crate) const CAPACITY: usize = 16;

    thread_local! {
        static POOL: RefCell<Vec<Mat<c64>>> = const { RefCell::new(Vec::new()) };
    }

    /// Keeps `mat`'s buffer for reuse when it is small (and drops it otherwise). Inlined into
    /// `Dense`'s `drop`: where the compiler left it out of line, the matrix was moved into
    /// its argument slot and out again (Csr → Dense 2 × 2, the result dropped each call,
    /// 59 → 70 ns between two builds that differed only in that).
    #[inline]
    pub(crate) fn give(mat: Mat<c64>) {
        let n = mat.nrows() * mat.ncols();
        if n == 0 || n > MAX_ENTRIES {
            return;
        }
        // `try_with`: during thread teardown the pool may be gone; then the buffer is freed.
        let _ = POOL.try_with(|p| {
            if let Ok(mut p) = p.try_borrow_mut() {
                // Full: the oldest buffer goes, so shapes no longer in use cannot clog the
                // pool.
                if p.len() == CAPACITY {
                    p.remove(0);
                }
                p.push(mat);
            }
        });
    }

    /// A recycled buffer with capacity for exactly `rows × cols` and dimensions 0 × 0, if the
    /// thread's pool holds one of that shape.
    #[inline]
    pub(crate) fn take(rows: usize, cols: usize) -> Option<Mat<c64>> {
        let n = rows.checked_mul(cols)?;
        if n == 0 || n > MAX_ENTRIES {
            return None;
        }
        POOL.try_with(|p| {
            let mut p = p.try_borrow_mut().ok()?;
            let k = p
                .iter()
                .rposition(|m| m.nrows() == rows && m.ncols() == cols)?;
            let mut mat = p.swap_remove(k);
            // SAFETY: shrinking the dimensions to 0 × 0 leaves nothing to initialise; the
            // capacity still covers rows × cols, the shape the buffer had.
            unsafe { mat.set_dims(0, 0) };
            Some(mat)
        })
        .ok()
        .flatten()
    }

    /// The number of buffers in this thread's pool (for tests).
    #[cfg(test)]
    pub(crate) fn len() -> usize {
        POOL.with(|p| p.borrow().len())
    }
}

/// Bytes of one column's `Data` and the kind's value it holds, beside the value's arrays (for
/// the memory check of the `split_columns` kernels).
pub(crate) const COLUMN_BYTES: u128 = (std::mem::size_of::<crate::storage::Data>()
    + std::mem::size_of::<crate::storage::Csr>()
    + 16) as u128;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scalar::ZERO;

    /// The memory check counts what faer allocates: each column padded to a multiple of four
    /// rows (a 1 × n matrix takes 4·n entries).
    #[test]
    fn the_memory_check_counts_faers_padding() {
        for rows in 0..=9 {
            for cols in [1, 2, 7] {
                let mut mat = Mat::<c64>::new();
                mat.try_reserve(rows, cols).unwrap();
                let stride = usize::try_from(mat.col_stride()).unwrap();
                if rows > 0 {
                    assert_eq!(
                        dense_alloc_bytes((rows, cols)),
                        (stride * cols * 16) as u128,
                        "{rows} × {cols}"
                    );
                }
            }
        }
        assert_eq!(dense_alloc_bytes((0, 7)), 0);
        assert_eq!(dense_alloc_bytes((1, 1000)), 4 * dense_bytes((1, 1000)));
        assert_eq!(dense_alloc_bytes((1000, 1)), dense_bytes((1000, 1)));
        assert!(dense_alloc_bytes((usize::MAX, usize::MAX)) > 0);
    }

    #[test]
    fn a_buffer_error_names_the_matrix_shape() {
        let err = check_dense("t", (2, usize::MAX)).unwrap_err();
        match for_shape((usize::MAX, 2))(err) {
            Error::TooLarge { op, shape, .. } => {
                assert_eq!((op.as_str(), shape), ("t", (usize::MAX, 2)))
            }
            other => panic!("{other:?}"),
        }
        let other = Error::InvalidDense { reason: "x".into() };
        assert!(matches!(
            for_shape((1, 1))(other),
            Error::InvalidDense { .. }
        ));
    }

    #[test]
    fn vectors_are_reserved_or_refused_never_aborted() {
        let v = alloc_vec::<c64>(7).unwrap();
        assert_eq!((v.len(), v.capacity()), (0, 7));
        assert_eq!(alloc_vec::<usize>(0).unwrap().capacity(), 0);
        assert!(alloc_vec::<()>(5).unwrap().capacity() >= 5);
        // Past isize::MAX bytes: no layout, no call to the allocator.
        assert!(alloc_vec::<u64>(usize::MAX / 4).is_none());
        let e = try_with_capacity::<u64>("t", (1, 1), usize::MAX / 4).unwrap_err();
        assert!(matches!(e, Error::TooLarge { op, .. } if op == "t"));
        // What the allocator refuses (2⁶² bytes: more than a 47-bit address space, whatever
        // the overcommit setting) is `None` as well.
        assert!(alloc_vec::<u8>(1 << 62).is_none());
    }

    /// Zeros from the allocator: empty, small and large (fresh pages), freed and taken again
    /// (a recycled block is zeroed too); past `isize::MAX` bytes an error naming the op.
    #[test]
    fn zeros_are_zero_or_refused() {
        assert!(try_zeros("t", (0, 0), 0).unwrap().is_empty());
        for len in [1, 7, 1000, 1 << 20] {
            let mut v = try_zeros("t", (1, len), len).unwrap();
            assert_eq!(v.len(), len);
            assert!(v.iter().all(|x| *x == ZERO));
            v.fill(c64::new(1.0, -1.0));
            drop(v);
            let v = try_zeros("t", (1, len), len).unwrap();
            assert!(v.iter().all(|x| *x == ZERO), "len {len}, again");
        }
        let e = try_zeros("t", (2, 3), usize::MAX / 8).unwrap_err();
        assert!(matches!(e, Error::TooLarge { op, shape: (2, 3), .. } if op == "t"));
    }

    #[test]
    fn empty_but_wide_is_constant_time() {
        let m = zeros_mat("t", 0, usize::MAX).unwrap();
        assert_eq!((m.nrows(), m.ncols()), (0, usize::MAX));
        let m = mat_from_fn("t", 1 << 40, 0, |_, _| ZERO).unwrap();
        assert_eq!((m.nrows(), m.ncols()), (1 << 40, 0));
        // faer cannot hold 2⁶⁴ − 1 rows even empty: an error, not a panic.
        assert!(matches!(
            zeros_mat("t", usize::MAX, 0),
            Err(Error::TooLarge { .. })
        ));
    }

    #[test]
    fn over_the_limit_is_an_error() {
        let err = zeros_mat("t", 1 << 40, 1 << 40).unwrap_err();
        assert!(
            matches!(err, Error::TooLarge { limit: Some(_), .. }),
            "{err}"
        );
        assert!(try_vec::<u64>("t", (0, 0), usize::MAX / 2, 0).is_err());
        let m = zeros_mat("t", 3, 2).unwrap();
        assert_eq!(m[(2, 1)], ZERO);
    }

    /// Every entry of a zero matrix is 0 even in a recycled buffer that held other values:
    /// pooled shapes (≤ 256 entries) and larger ones, padded columns (faer rounds the row
    /// capacity up), both sides of the zero fill's eight-entry step.
    #[test]
    fn zeros_are_zero_in_recycled_buffers() {
        for (r, c) in [
            (1, 1),
            (3, 5),
            (7, 9),
            (16, 16),
            (33, 17),
            (100, 3),
            (130, 130),
        ] {
            drop(mat_from_fn("t", r, c, |_, _| c64::new(7.0, -7.0)).unwrap());
            let m = zeros_mat("t", r, c).unwrap();
            assert_eq!((m.nrows(), m.ncols()), (r, c));
            for j in 0..c {
                for i in 0..r {
                    assert_eq!(m[(i, j)], ZERO, "({i}, {j}) of {r}×{c}");
                }
            }
        }
    }

    #[test]
    fn small_buffers_are_recycled_by_shape() {
        // A fresh thread: its own, empty pool.
        std::thread::spawn(|| {
            assert_eq!(pool::len(), 0);
            let a = zeros_mat("t", 3, 2).unwrap();
            let ptr = a.as_ptr();
            pool::give(a);
            assert_eq!(pool::len(), 1);
            // Another shape does not take it; the same shape does, with its memory.
            assert!(pool::take(2, 3).is_none());
            let b = mat_from_fn("t", 3, 2, |i, j| c64::new(i as f64, j as f64)).unwrap();
            assert_eq!((b.as_ptr(), pool::len()), (ptr, 0));
            assert_eq!(b[(2, 1)], c64::new(2.0, 1.0));
            // Large or empty buffers are not kept, and the pool is bounded.
            pool::give(zeros_mat("t", 17, 16).unwrap());
            pool::give(zeros_mat("t", 0, 4).unwrap());
            assert_eq!(pool::len(), 0);
            let many: Vec<_> = (0..2 * pool::CAPACITY)
                .map(|_| zeros_mat("t", 2, 2).unwrap())
                .collect();
            many.into_iter().for_each(pool::give);
            assert_eq!(pool::len(), pool::CAPACITY);
            // A full pool of one shape still takes a new shape, dropping its oldest buffer.
            let c = zeros_mat("t", 4, 4).unwrap();
            let ptr = c.as_ptr();
            pool::give(c);
            assert_eq!(pool::len(), pool::CAPACITY);
            assert_eq!(pool::take(4, 4).map(|m| m.as_ptr()), Some(ptr));
        })
        .join()
        .unwrap();
    }

    /// The `VmFlags` of the mapping that holds address `at`, from `/proc/self/smaps`.
    #[cfg(target_os = "linux")]
    fn vm_flags(at: usize) -> String {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        let mut flags = None;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ')
                && let Some((lo, hi)) = range.split_once('-')
                && let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            {
                inside = (lo..hi).contains(&at);
            } else if inside && let Some(f) = line.strip_prefix("VmFlags:") {
                flags = Some(f.to_owned());
            }
        }
        flags.expect("the buffer's mapping is listed")
    }

    /// Dense buffers and sparse arrays of 32 MiB or more lie in mappings Linux has marked for
    /// huge pages (`hg` among their `VmFlags`).
    #[cfg(target_os = "linux")]
    #[test]
    fn large_buffers_are_advised_for_huge_pages() {
        if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists()
            || !crate::engine::huge_pages()
        {
            return; // no transparent huge pages in this kernel, or POLYMAT_HUGE_PAGES=0
        }
        // Under user-mode emulation (qemu-user) the advice never reaches the kernel, and
        // `/proc` is the host's: an x86 `vendor_id` seen from another architecture.
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        if !cfg!(target_arch = "x86_64") && cpuinfo.lines().any(|l| l.starts_with("vendor_id")) {
            return;
        }
        let m = zeros_mat("t", 2048, 1024).unwrap(); // 32 MiB
        let v = try_with_capacity::<c64>("t", (1, 1), 1 << 21).unwrap(); // 32 MiB
        // A page well inside each buffer.
        for at in [
            m.as_ptr() as usize + (8 << 20),
            v.as_ptr() as usize + (8 << 20),
        ] {
            let flags = vm_flags(at);
            assert!(flags.split_whitespace().any(|f| f == "hg"), "{flags}");
        }
    }
}
