//! Csr → Dense: the scatter of the stored entries into a zeroed column-major matrix, or, for a
//! result larger than the cache, one streaming pass column by column from the entries sorted by
//! column ([`ColumnPattern`]).

use faer::Mat;
use rayon::prelude::*;

use super::conversion::BoxedResult;
use crate::engine::{self, Entries, Family};
use crate::error::Result;
use crate::scalar::c64;
use crate::storage::{Csr, Data, Dense, Kind, alloc};

/// The zero fill of the parallel path is split into pieces of this many entries (1 MiB) or
/// more, four per worker at least.
const ZERO_PIECE: usize = 1 << 16;

/// The built-in Csr → Dense converter: [`csr_to_dense`] into a [`Data`], but a bra (one row,
/// several columns) row-major ([`csr_row_to_dense`]), without faer's padding.
/// On one thread the result goes from the kernel into the `Data`'s allocation directly
/// ([`Data::with_kind_in_place`]). With the `Dense` returned through the converter's `Result`
/// and wrapped after, each move reloaded narrow stores as wide loads (stalls): a 2 × 2
/// conversion took 81 → 59 ns, 10 × 10 103 → 82 ns (one thread, medians).
///
/// # Errors
/// As [`csr_to_dense`].
pub(crate) fn csr_to_dense_data(a: &Csr) -> BoxedResult<Data> {
    let (m, n) = a.shape();
    if Dense::is_held_bra((m, n)) {
        return Ok(Data::from(csr_row_to_dense(a)?));
    }
    if one_thread(m, n) {
        return Ok(Data::with_kind_in_place(
            Kind::DENSE,
            csr_to_dense_serial(a, alloc::reserve_mat("to Dense", m, n)?),
        ));
    }
    Ok(Data::from(csr_to_dense(a)?))
}

/// Scatters the stored entries into a zeroed column-major matrix (on one thread: one
/// zero fill, [`csr_to_dense_serial`]; else zeroed in contiguous pieces, streamed or by
/// `memset`, and scattered by row blocks in parallel above the engine's Csr threshold). A
/// result the engine streams is written by ranges of columns instead, each in one pass
/// ([`ColumnPattern`]). O(rows·cols + nnz).
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) if the dense result passes the dense limit:
/// a large Csr is never densified by accident.
pub(crate) fn csr_to_dense(a: &Csr) -> Result<Dense> {
    let (m, n) = a.shape();
    if one_thread(m, n) {
        return Ok(csr_to_dense_serial(
            a,
            alloc::reserve_mat("to Dense", m, n)?,
        ));
    }
    if m == 0 || n == 0 {
        return Ok(Dense::new(alloc::zeros_mat("to Dense", m, n)?));
    }
    let workers = engine::workers(Family::Elementwise, m.saturating_mul(n));
    let mut mat = alloc::reserve_mat("to Dense", m, n)?;
    // SAFETY: `mat` was reserved for m × n; every entry is zeroed below before anything reads
    // the matrix, and c64 has no drop glue.
    unsafe { mat.set_dims(m, n) };
    let stride = usize::try_from(mat.col_stride()).unwrap_or(m);
    let base = Entries(mat.as_ptr_mut());
    if let Some(pattern) = ColumnPattern::streamed(a) {
        // Each worker streams a contiguous range of columns (a quarter of its share at most).
        let block = n.div_ceil(workers * 4).max(1);
        (0..n.div_ceil(block)).into_par_iter().for_each(|b| {
            let cols = b * block..((b + 1) * block).min(n);
            // SAFETY: `base` is the m × n matrix of column stride `stride`; the column ranges
            // are disjoint, and nothing reads the matrix until every worker is done.
            unsafe { pattern.write(base.get(), stride, cols) };
        });
        return Ok(Dense::new(mat));
    }
    // The zero fill by contiguous pieces (padding between columns included, as on one
    // thread): non-temporal stores where the result passes the engine's streaming size, else
    // `memset`. Column by column with ordinary vector stores, two threads took 2–3 times as
    // long as one thread's single `memset` from 3000 × 3000 up (every line read before it is
    // written; docs/benchmarks.md).
    let total = stride * (n - 1) + m;
    let piece = total.div_ceil(workers * 4).max(ZERO_PIECE);
    let stream = engine::streams(m, n, 0);
    (0..total.div_ceil(piece)).into_par_iter().for_each(|k| {
        let (start, len) = (k * piece, piece.min(total - k * piece));
        // SAFETY: [start, start + len) lies within the first `total` entries of the allocation
        // (reserved for n columns of stride `stride`); the pieces are disjoint, and all-zero
        // bytes are the complex number 0.
        unsafe {
            if stream {
                let out = std::slice::from_raw_parts_mut(base.get().add(start).cast(), len);
                crate::simd::nontemporal::zeros(out);
                crate::simd::nontemporal::fence();
            } else {
                std::ptr::write_bytes(base.get().add(start), 0, len);
            }
        }
    });
    // SAFETY: `base` is the m × n matrix of column stride `stride` (a's shape); each row is
    // written by one worker only, and nothing reads the matrix until the scatter ends.
    let scatter =
        |rows: std::ops::Range<usize>| unsafe { scatter_rows(a, base.get(), stride, rows) };
    let scatter_workers = engine::workers(Family::CsrRows, a.nnz());
    if scatter_workers > 1 {
        // Row blocks in parallel: each worker writes only the entries of its own rows.
        let block = m.div_ceil(scatter_workers * 4).max(1);
        (0..m.div_ceil(block))
            .into_par_iter()
            .for_each(|b| scatter(b * block..((b + 1) * block).min(m)));
    } else {
        scatter(0..m);
    }
    Ok(Dense::new(mat))
}

/// A one-row Csr (a bra) as a row-major Dense: its entries scattered into one zeroed buffer
/// column. Column-major, faer would pad the one row to four, four entries of memory for each
/// (`Dense`'s docs, "Memory of a one-row matrix").
fn csr_row_to_dense(a: &Csr) -> Result<Dense> {
    let mut bra = Dense::zeros_public("to Dense", 1, a.shape().1)?;
    // The bra's entries, in order, are its buffer's one column.
    let col = bra.buffer_mut().col_as_slice_mut(0);
    for (&c, &v) in a.indices().iter().zip(a.data()) {
        // c < n: a column of a valid Csr.
        col[c] = v;
    }
    Ok(bra)
}

/// Whether a non-empty m × n result is made on one thread ([`csr_to_dense_serial`]), the
/// test both [`csr_to_dense`] and [`csr_to_dense_data`] start with.
#[inline(always)]
fn one_thread(m: usize, n: usize) -> bool {
    m > 0 && n > 0 && engine::workers(Family::Elementwise, m.saturating_mul(n)) == 1
}

/// Csr → Dense on one thread, into `mat` (reserved for a's shape; for 256 entries or fewer
/// usually a recycled buffer): one zero fill over the columns, then the scatter (a result the
/// engine streams: one pass, [`ColumnPattern`]); a Csr that
/// stores every entry is its values copied transposed instead (no zero fill, no column
/// indices read: 10 × 10 0.214 → 0.170 µs a conversion, 100 × 100 10 → 4.3 µs). The
/// column-block machinery of [`engine::dense_build`] cost more than the work at small sizes
/// (10 × 10 with 10 per row 0.43–0.44 → 0.29–0.34 µs, 250 × 250 34–38 → 25.5–27 µs), and at
/// n = 1000 one zero fill ahead of the scatter is faster than its stores mixed with the
/// scatter's were: against QuTiP in the side-by-side, 0.83–1.11× → 1.00–1.02× in two runs
/// each.
fn csr_to_dense_serial(a: &Csr, mut mat: Mat<c64>) -> Dense {
    let (m, n) = a.shape();
    // SAFETY: `mat` was reserved for m × n (`alloc::reserve_mat`); every entry is zeroed
    // below before anything reads the matrix, and c64 has no drop glue.
    unsafe { mat.set_dims(m, n) };
    let stride = usize::try_from(mat.col_stride()).unwrap_or(m);
    if a.stores_every_entry() {
        let base = mat.as_ptr_mut();
        // SAFETY: every entry is stored, so `a`'s values are the m × n matrix row-major (rows
        // 0..n each, sorted); `base` is the m × n matrix of column stride `stride`.
        unsafe {
            crate::storage::transpose_values((a.data().as_ptr(), n), (m, n), (base, stride), |x| x)
        };
        return Dense::new(mat);
    }
    if let Some(pattern) = ColumnPattern::streamed(a) {
        // SAFETY: `mat.as_ptr_mut()` is the m × n matrix of column stride `stride`, written
        // only here.
        unsafe { pattern.write(mat.as_ptr_mut(), stride, 0..n) };
        return Dense::new(mat);
    }
    // One zero fill over the columns (`alloc::zero_fill` chooses the stores), then the
    // scatter.
    alloc::zero_fill(&mut mat);
    let base = mat.as_ptr_mut();
    // SAFETY: `base` is the m × n matrix of column stride `stride`, written only here.
    unsafe { scatter_rows(a, base, stride, 0..m) };
    Dense::new(mat)
}

/// The stored entries of a Csr by column, each column's in row order (a counting sort of the
/// column indices, as for a transpose): what a result too large for the cache needs to be
/// written in one streaming pass, zeros and entries together, column after column. The zero
/// fill and then the scatter write the result's lines twice instead, and every stored entry
/// is a cache miss in the second pass. With 10 entries a row, pages reused by malloc, medians
/// of seven runs: 10⁴ × 10⁴ 22.8–23.9 → 20.9 ms on one thread (QuTiP 22.3 ms
/// in the last side-by-side), 20.0–20.9 → 14.2–18.1 ms on two; 3000 × 3000 2.30 → 2.03 ms.
struct ColumnPattern {
    /// The result's row count.
    m: usize,
    /// Column `j`'s entries are `rows[ptrs[j]..ptrs[j + 1]]` (increasing) and the same range
    /// of `vals`.
    ptrs: Vec<usize>,
    rows: Vec<usize>,
    vals: Vec<c64>,
}

impl ColumnPattern {
    /// The column pattern of `a` where its dense result is one the engine streams
    /// ([`engine::streams`]: larger than the cache keeps). `None` for smaller results, which
    /// stay in cache through the zero fill and the scatter; when the pattern would take more
    /// than an eighth of the result's bytes (a Csr with more than one stored entry in 12); or
    /// when its arrays cannot be allocated (the zero fill and the scatter need none).
    #[inline]
    fn streamed(a: &Csr) -> Option<ColumnPattern> {
        let (m, n) = a.shape();
        if !engine::streams(m, n, 0) {
            return None;
        }
        Self::build(a, 8)
    }

    /// The column pattern of `a`, unless it takes more than `1 / share` of its dense result's
    /// bytes or its arrays cannot be allocated.
    #[cold]
    #[inline(never)]
    fn build(a: &Csr, share: u128) -> Option<ColumnPattern> {
        let ((m, n), nnz) = (a.shape(), a.nnz());
        let word = std::mem::size_of::<usize>() as u128;
        let bytes =
            (nnz as u128) * (word + std::mem::size_of::<c64>() as u128) + (n as u128 + 2) * word;
        if bytes.saturating_mul(share) > alloc::dense_bytes((m, n)) {
            return None;
        }
        let op = "to Dense";
        // SAFETY: a valid Csr's column indices are below n.
        let mut ptrs = unsafe { alloc::csr::counting_cursors(op, (m, n), a.indices(), n) }.ok()?;
        let mut rows = alloc::try_with_capacity::<usize>(op, (m, n), nnz).ok()?;
        let mut vals = alloc::try_with_capacity::<c64>(op, (m, n), nnz).ok()?;
        let (p, idx, val) = (a.indptr(), a.indices(), a.data());
        let (r, v) = (rows.as_mut_ptr(), vals.as_mut_ptr());
        for i in 0..m {
            // SAFETY: i + 1 ≤ m < p.len(); a valid Csr's row pointers are non-decreasing and at
            // most nnz (the length of `indices` and `data`), and its column indices are below
            // n, so `ptrs[c + 1]` exists (n + 2 entries). Each column's cursor starts at the
            // column's first slot and stays below the next column's start after its last
            // entry, so every slot of `rows` and `vals` below nnz is written exactly once.
            unsafe {
                for k in *p.get_unchecked(i)..*p.get_unchecked(i + 1) {
                    let cursor = ptrs.get_unchecked_mut(*idx.get_unchecked(k) + 1);
                    r.add(*cursor).write(i);
                    v.add(*cursor).write(*val.get_unchecked(k));
                    *cursor += 1;
                }
            }
        }
        // SAFETY: the loop above wrote all nnz slots (reserved for nnz).
        unsafe {
            rows.set_len(nnz);
            vals.set_len(nnz);
        }
        // Entry j + 1 is now the end of column j: the first n + 1 are the column pointers.
        ptrs.truncate(n + 1);
        Some(ColumnPattern {
            m,
            ptrs,
            rows,
            vals,
        })
    }

    /// Writes columns `cols` of the m × n result at `base` whole, zeros and entries, by
    /// non-temporal stores: each column's `stride` slots (the padding after it included, as
    /// [`alloc::zero_fill`] writes it), the last column's m. Fenced at the end.
    ///
    /// # Safety
    /// `base` points to a matrix of the pattern's shape, m × n, with column stride `stride`
    /// (at least m); `cols` lies in 0..n; nothing else reads or writes these columns during
    /// the call.
    unsafe fn write(&self, base: *mut c64, stride: usize, cols: std::ops::Range<usize>) {
        let (m, n) = (self.m, self.ptrs.len() - 1);
        for j in cols {
            let len = if j + 1 == n { m } else { stride };
            let (lo, hi) = (self.ptrs[j], self.ptrs[j + 1]);
            // SAFETY: column j's `len` slots lie in the matrix (the caller's contract); its
            // rows increase strictly (a Csr's columns within a row are distinct, and rows are
            // visited in order) and are below m ≤ len; `vals` has the same range.
            unsafe {
                let out = std::slice::from_raw_parts_mut(base.add(j * stride).cast(), len);
                crate::simd::nontemporal::sparse(out, &self.rows[lo..hi], &self.vals[lo..hi]);
            }
        }
        crate::simd::nontemporal::fence();
    }
}

/// Writes the stored entries of rows `rows` of `a` into the column-major matrix at `base`:
/// row i's entries straight into their columns.
///
/// # Safety
/// `base` points to a matrix of a's shape with column stride `stride` (at least its row count),
/// and nothing else reads or writes rows `rows` of it during the call.
unsafe fn scatter_rows(a: &Csr, base: *mut c64, stride: usize, rows: std::ops::Range<usize>) {
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    // Checked once here rather than per row and entry: at 10 × 10 with 10 entries per row the
    // per-row slicing checks and the zipped iterators took a fifth of the conversion.
    let rows = rows.start..rows.end.min(p.len().saturating_sub(1));
    let (idx, val) = (idx.as_ptr(), val.as_ptr());
    for i in rows {
        // SAFETY: i + 1 < p.len() (the range was clipped above). A valid Csr's row pointers
        // are non-decreasing and at most nnz, the length of `indices` and `data`, so every
        // k in lo..hi reads inside both; i < m and c < n (the Csr invariant), so the offset is
        // inside the m × n matrix of column stride `stride` (the caller's contract).
        unsafe {
            let (lo, hi) = (*p.get_unchecked(i), *p.get_unchecked(i + 1));
            let row = base.add(i);
            for k in lo..hi {
                *row.add(*idx.add(k) * stride) = *val.add(k);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both paths (serial, and split over workers), with padded columns (faer rounds the row
    /// capacity up to 4), into a recycled buffer that still holds an earlier matrix's values:
    /// every entry is the Csr's, zeros included.
    #[test]
    fn serial_and_parallel_paths_match_the_definition() {
        for (m, n) in [
            (1, 1),
            (2, 3),
            (5, 7),
            (10, 10),
            (3, 17),
            (256, 256),
            (257, 255),
        ] {
            let (mut r, mut c, mut v) = (vec![], vec![], vec![]);
            for i in 0..m {
                for j in [(i * 3) % n, (i * 5 + 1) % n] {
                    r.push(i);
                    c.push(j);
                    v.push(c64::new(i as f64 + 1.0, j as f64));
                }
            }
            let a = Csr::from_triplets((m, n), &r, &c, &v).unwrap();
            for force in [false, true] {
                // A dropped Dense of this shape leaves its buffer (full of non-zeros) in the
                // pool (at most 256 entries) or, larger, usually at the allocator's front.
                drop(Dense::from_fn(m, n, |_, _| c64::new(7.0, -7.0)));
                engine::set_force_parallel(force);
                let d = csr_to_dense(&a);
                engine::set_force_parallel(false);
                let d = d.unwrap();
                assert_eq!(d.shape(), (m, n));
                for i in 0..m {
                    for j in 0..n {
                        assert_eq!(d.get(i, j), a.get(i, j), "({i}, {j}) of {m}×{n}");
                    }
                }
            }
        }
    }

    /// The column pattern writes every slot of its columns (padding included) with the entry
    /// or 0, over a buffer full of other values: columns starting on 32-byte boundaries and
    /// 16 bytes past them (odd strides), entries in the first and last rows, side by side,
    /// alone in their 32-byte unit, empty rows and columns; with AVX and as a CPU without it;
    /// split into column ranges as the workers write it.
    #[test]
    fn column_pattern_writes_every_slot() {
        for (m, n, stride) in [(1, 1, 1), (5, 3, 5), (9, 7, 10), (9, 7, 11), (40, 13, 41)] {
            let (mut r, mut c, mut v) = (vec![], vec![], vec![]);
            for i in (0..m).filter(|i| i % 3 != 1) {
                for j in (0..n).filter(|j| (i * 5 + j * 2) % 7 < 2 || i + 1 == m) {
                    r.push(i);
                    c.push(j);
                    v.push(c64::new(i as f64 + 1.0, -(j as f64) - 1.0));
                }
            }
            let a = Csr::from_triplets((m, n), &r, &c, &v).unwrap();
            let pattern = ColumnPattern::build(&a, 0).unwrap();
            let len = stride * (n - 1) + m;
            // A buffer on a 64-byte boundary, from which the matrix starts at `skip` slots.
            for skip in [0, 1, 2] {
                let mut buf = vec![c64::new(7.0, -7.0); len + skip + 4];
                let at = buf.as_ptr().cast::<u8>().align_offset(64) / 16;
                let base = buf[at + skip..].as_mut_ptr();
                for (baseline, split) in [(false, false), (true, false), (false, true)] {
                    // SAFETY: the m × n matrix of column stride `stride` lies in `buf` from
                    // `base` (len + skip + 4 slots, `at` < 4); nothing else touches it.
                    let write = |cols| unsafe { pattern.write(base, stride, cols) };
                    let run = || {
                        if split {
                            write(0..n / 2);
                            write(n / 2..n);
                        } else {
                            write(0..n);
                        }
                    };
                    if baseline {
                        crate::simd::baseline(run);
                    } else {
                        run();
                    }
                    for j in 0..n {
                        let rows = if j + 1 == n { m } else { stride };
                        for i in 0..rows {
                            // SAFETY: slot (i, j) lies in `buf` (above).
                            let got = unsafe { *base.add(j * stride + i) };
                            let want = if i < m {
                                a.get(i, j)
                            } else {
                                c64::new(0.0, 0.0)
                            };
                            assert_eq!(got, want, "({i}, {j}) of {m}×{n}, stride {stride}");
                        }
                    }
                    buf[at + skip..].fill(c64::new(7.0, -7.0));
                }
            }
        }
    }

    /// A Csr that stores every entry takes the transposing copy of its values (no zero fill
    /// first): into a recycled buffer that still holds an earlier matrix's values, with shapes
    /// on both sides of the copy's 8-column blocks, stored zeros included.
    #[test]
    fn fully_stored_csr_is_copied_in_full() {
        for (m, n) in [(1, 1), (1, 9), (9, 1), (7, 30), (8, 16), (17, 9), (10, 10)] {
            drop(Dense::from_fn(m, n, |_, _| c64::new(7.0, -7.0)));
            let rows: Vec<Vec<c64>> = (0..m)
                .map(|i| {
                    (0..n)
                        .map(|j| c64::new(i as f64 + 1.0, j as f64 - 0.5))
                        .collect()
                })
                .collect();
            let mut a = Csr::from_rows(&rows).unwrap();
            a.data_mut()[0] = c64::new(0.0, 0.0);
            assert_eq!(a.nnz(), m * n);
            let d = csr_to_dense(&a).unwrap();
            assert_eq!(d.shape(), (m, n));
            for i in 0..m {
                for j in 0..n {
                    assert_eq!(d.get(i, j), a.get(i, j), "({i}, {j}) of {m}×{n}");
                }
            }
        }
    }
}
