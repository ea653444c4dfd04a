//! The [`Layout`] flag of a [`Dense`](crate::Dense) buffer, and the `Dense` methods that read
//! or change it.

use std::borrow::Cow;
use std::sync::OnceLock;

use faer::{Mat, MatMut, MatRef};
use rayon::prelude::*;

use super::{Dense, alloc};
use crate::engine::{self, Family};
use crate::error::Result;
use crate::scalar::c64;

/// The order of a [`Dense`](crate::Dense) buffer (QuTiP's `fortran` flag).
///
/// Most results are column-major, faer's order. [`transpose`](crate::transpose()) and
/// [`adjoint`](crate::adjoint) of a Dense return the other layout, so they cost one contiguous
/// pass (or nothing, through [`Dense::into_transpose`](crate::Dense::into_transpose)) instead of a strided transposing copy.
/// Every kernel accepts both layouts; see [`Dense`](crate::Dense) for where they normalise.
///
/// ```
/// use polymat::{Dense, Layout, Out, c64};
///
/// let a = Dense::from_row_major(2, 3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0].map(|x| c64::new(x, 0.0)))?;
/// assert_eq!(a.layout(), Layout::RowMajor);
/// assert_eq!(a.get(1, 0), c64::new(4.0, 0.0));
/// let t = polymat::transpose(&a.clone().into(), Out::Dense)?;
/// assert_eq!(t.downcast_ref::<Dense>().unwrap().layout(), Layout::ColMajor);
/// # Ok::<(), polymat::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Columns are contiguous (Fortran order, faer's and LAPACK's).
    ColMajor,
    /// Rows are contiguous (C order, numpy's default).
    RowMajor,
}

impl Layout {
    /// The other layout.
    pub fn flipped(self) -> Layout {
        match self {
            Layout::ColMajor => Layout::RowMajor,
            Layout::RowMajor => Layout::ColMajor,
        }
    }
}

impl Dense {
    /// The layout of the buffer.
    #[inline]
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The buffer as a column-major faer matrix: the matrix itself when column-major, its
    /// transpose when row-major. With [`layout`](Dense::layout), this is all a kernel needs to
    /// walk either layout contiguously.
    #[inline]
    pub fn buffer(&self) -> MatRef<'_, c64> {
        self.buf.as_ref()
    }

    /// Column `j` of the [`buffer`](Dense::buffer): column `j` of a column-major matrix, row
    /// `j` of a row-major one.
    #[inline]
    pub(crate) fn buffer_col(&self, j: usize) -> &[c64] {
        self.buf.col_as_slice(j)
    }

    /// The entries of a vector held in one buffer column (a column-major ket, a row-major bra),
    /// in order. `None` for anything else, among them a vector in a one-row buffer, whose
    /// entries faer lays out a column stride apart (4 for any one-row `Mat` of faer 0.24).
    #[inline]
    pub(crate) fn vector_slice(&self) -> Option<&[c64]> {
        (self.buf.ncols() == 1).then(|| self.buf.col_as_slice(0))
    }

    /// The entries of a vector in order, as one slice: [`vector_slice`](Dense::vector_slice)
    /// when it is held in one buffer column, else gathered into a fresh vector (a column-major
    /// bra, a row-major ket: entries a column stride apart), allocated fallibly naming `op`.
    pub(crate) fn vector_entries(&self, op: &str) -> Result<Cow<'_, [c64]>> {
        if let Some(v) = self.vector_slice() {
            return Ok(Cow::Borrowed(v));
        }
        let len = self.buf.nrows().saturating_mul(self.buf.ncols());
        let mut v = alloc::try_with_capacity(op, self.shape(), len)?;
        v.extend(self.entries().copied());
        Ok(Cow::Owned(v))
    }

    /// Rows `rows` of buffer columns `j0..j0 + count`, one slice each. The bounds are checked
    /// once for all of them (a kernel's column loop otherwise pays [`buffer_col`]'s checks and
    /// a slicing check per column: a third of a 10 × 10 elementwise map).
    ///
    /// # Panics
    /// If `rows` or the columns pass the buffer's bounds (a bug in the caller).
    ///
    /// [`buffer_col`]: Dense::buffer_col
    #[inline]
    pub(crate) fn buffer_cols(
        &self,
        rows: std::ops::Range<usize>,
        j0: usize,
        count: usize,
    ) -> impl Iterator<Item = &[c64]> + '_ {
        let (m, n) = (self.buf.nrows(), self.buf.ncols());
        assert!(
            rows.start <= rows.end
                && rows.end <= m
                && j0.checked_add(count).is_some_and(|e| e <= n),
            "buffer_cols: rows {rows:?}, columns {j0}..+{count} of a {m} × {n} buffer"
        );
        let stride = usize::try_from(self.buf.col_stride()).unwrap_or(m);
        let base = self.buf.as_ptr();
        let (start, len) = (rows.start, rows.len());
        // SAFETY: column j < n of the buffer occupies [j·stride, j·stride + m) of its
        // allocation, initialised (a Dense's entries always are), and rows ⊆ 0..m (checked
        // above); the slices are shared borrows of `self`.
        (j0..j0 + count)
            .map(move |j| unsafe { std::slice::from_raw_parts(base.add(j * stride + start), len) })
    }

    /// The buffer, mutably, in its layout (any column-major copy is dropped: it would go
    /// stale). Entry `(i, j)` of the matrix is buffer entry `(i, j)` when column-major, `(j, i)`
    /// when row-major.
    #[inline]
    pub(crate) fn buffer_mut(&mut self) -> &mut Mat<c64> {
        self.cols = OnceLock::new();
        &mut self.buf
    }

    /// Whether a column-major copy of a row-major matrix is held (for tests of the paths that
    /// must not make one).
    #[cfg(all(test, feature = "serde"))]
    pub(crate) fn holds_col_major_copy(&self) -> bool {
        self.cols.get().is_some()
    }

    /// The matrix as a strided mutable `faer` view of its shape, in either layout (any
    /// column-major copy is dropped: it would go stale). For kernels that write a fresh
    /// result made by [`Dense::zeros_public`], which may be a row-major bra.
    #[inline]
    pub(crate) fn view_mut(&mut self) -> MatMut<'_, c64> {
        self.cols = OnceLock::new();
        match self.layout {
            Layout::ColMajor => self.buf.as_mut(),
            Layout::RowMajor => self.buf.as_mut().transpose_mut(),
        }
    }

    /// Every entry once, in buffer order (column by column when column-major, row by row when
    /// row-major), without a copy: for reductions that do not care where an entry sits.
    pub(crate) fn entries(&self) -> impl Iterator<Item = &c64> + Clone + '_ {
        let n = if self.buf.nrows() == 0 {
            0
        } else {
            self.buf.ncols()
        };
        (0..n).flat_map(move |j| self.buf.col_as_slice(j))
    }

    /// The transpose, by flipping the layout: O(1), no copy.
    ///
    /// ```
    /// use polymat::{Dense, Layout, c64};
    /// let a = Dense::from_fn(2, 3, |i, j| c64::new((10 * i + j) as f64, 0.0));
    /// let t = a.into_transpose();
    /// assert_eq!((t.shape(), t.layout()), ((3, 2), Layout::RowMajor));
    /// assert_eq!(t.get(2, 1), c64::new(12.0, 0.0));
    /// ```
    pub fn into_transpose(self) -> Dense {
        let mut d = self;
        d.layout = d.layout.flipped();
        d.cols = OnceLock::new();
        d
    }

    /// The same buffer read in `layout`: `self` when that is its layout, else its transpose
    /// ([`Dense::into_transpose`]).
    pub(crate) fn relabelled(self, layout: Layout) -> Dense {
        if self.layout == layout {
            self
        } else {
            self.into_transpose()
        }
    }

    /// The same matrix in `layout`: `self` unchanged when it already is, else one transposing
    /// copy.
    ///
    /// # Errors
    /// [`Error::TooLarge`](crate::Error::TooLarge) if the copy cannot be allocated.
    pub fn into_layout(self, layout: Layout) -> Result<Dense> {
        if self.layout == layout {
            return Ok(self);
        }
        let mut d = self;
        let t = d.transposed_buffer("Dense::into_layout")?;
        d.buf = t;
        d.layout = layout;
        d.cols = OnceLock::new();
        Ok(d)
    }

    /// A matrix from a row-major buffer of length `rows * cols`, kept row-major (one
    /// contiguous copy, no reordering).
    ///
    /// # Errors
    /// [`Error::InvalidDense`](crate::Error::InvalidDense) if the length does not match, [`Error::TooLarge`](crate::Error::TooLarge) as for
    /// [`Dense::try_zeros`].
    pub fn from_row_major(rows: usize, cols: usize, values: &[c64]) -> Result<Dense> {
        // The row-major buffer is the column-major cols × rows matrix of the same values.
        Dense::buffer_from("Dense::from_row_major", (rows, cols), (cols, rows), values)
            .map(|buf| Dense::with_layout(buf, Layout::RowMajor))
    }

    /// The buffer transposed into new column-major memory (the other layout's buffer):
    /// [`transpose_values`] over the buffer read row by row, split by result columns across
    /// workers above the engine's transpose threshold. Against faer's copy of the transposed
    /// view it replaced, `into_layout` of a clone on one thread, µs a call: 10 × 10
    /// 0.38–0.40 → 0.21, 100 × 100 9.5 → 8.1–8.2, 700 × 700 1 600–1 720 → 1 410–1 550
    /// (docs/benchmarks.md).
    fn transposed_buffer(&self, op: &str) -> Result<Mat<c64>> {
        let (c, r) = (self.buf.nrows(), self.buf.ncols());
        if r == 0 || c == 0 {
            return alloc::empty_mat(r, c);
        }
        // Fallible, and checked against the dense limit and the memory available (faer's
        // `to_owned` it replaced panicked on a failed allocation).
        let mut out = alloc::reserve_mat(op, r, c).map_err(alloc::for_shape(self.shape()))?;
        // SAFETY: `out` was reserved for r × c (`reserve_mat`); every entry is written below
        // before anything reads it, and c64 has no drop glue.
        unsafe { out.set_dims(r, c) };
        // An owned Mat's column stride is its row capacity: at least its row count, never
        // negative.
        let (src_ld, dst_ld) = (
            self.buf.col_stride().unsigned_abs(),
            out.col_stride().unsigned_abs(),
        );
        let src = self.buf.as_ref();
        // Result columns j0..j0 + cols into `dst` (result column j0 at `dst`).
        let copy = |j0: usize, cols: usize, dst: *mut c64| {
            // SAFETY: entry (i, j) of the result is buf[j, i], at j + i·src_ld of the buffer
            // (i < r of its columns, j < c of its rows), so from element j0 the buffer read
            // row by row is result columns j0.. row-major with row stride src_ld; `dst` is
            // those columns of `out` (r rows, column stride dst_ld ≥ r); distinct allocations.
            unsafe {
                transpose_values(
                    (src.as_ptr().add(j0), src_ld),
                    (r, cols),
                    (dst, dst_ld),
                    |x| x,
                );
            }
        };
        let workers = engine::workers(Family::Transpose, r * c);
        if workers == 1 {
            copy(0, c, out.as_ptr_mut());
        } else {
            // Chunks of exactly `per` result columns (the last may be shorter): chunk k starts
            // at k·per.
            let per = c.div_ceil(workers);
            out.as_mut()
                .par_col_chunks_mut(per)
                .enumerate()
                .for_each(|(k, dst)| copy(k * per, dst.ncols(), dst.as_ptr_mut()));
        }
        Ok(out)
    }

    /// The matrix column-major: the buffer itself, or the copy made once for a row-major one
    /// (kept beside the buffer for the next call). Every column accessor comes here; `op`
    /// names the operation in the error.
    ///
    /// # Errors
    /// [`Error::TooLarge`](crate::Error::TooLarge) if that copy cannot be allocated.
    #[inline]
    pub(crate) fn col_major(&self, op: &'static str) -> Result<&Mat<c64>> {
        match self.layout {
            Layout::ColMajor => Ok(&self.buf),
            Layout::RowMajor => self.col_major_copy(op),
        }
    }

    /// A row-major matrix's column-major copy, made on the first call.
    #[cold]
    fn col_major_copy(&self, op: &'static str) -> Result<&Mat<c64>> {
        if let Some(m) = self.cols.get() {
            return Ok(m);
        }
        // `OnceLock::get_or_try_init` is not stable: the copy is made outside the lock, and a
        // thread that loses the race to store it drops its own.
        let m = Box::new(self.transposed_buffer(op)?);
        Ok(self.cols.get_or_init(|| m))
    }

    /// Converts a row-major matrix to column-major in place (no-op when it already is) and
    /// returns the buffer: the `&mut` and by-value column accessors come here.
    ///
    /// # Errors
    /// [`Error::TooLarge`](crate::Error::TooLarge) if a row-major matrix's copy cannot be
    /// allocated (the matrix is then unchanged).
    pub(crate) fn col_major_mut(&mut self, op: &'static str) -> Result<&mut Mat<c64>> {
        if self.layout == Layout::RowMajor {
            let cm = match self.cols.take() {
                Some(m) => *m,
                None => self.transposed_buffer(op)?,
            };
            self.buf = cm;
            self.layout = Layout::ColMajor;
        }
        Ok(&mut self.buf)
    }
}

/// The row-major `m × n` values at `src` (row `i` at `src + i·src_stride`) written
/// transposed, column-major with column stride `dst_stride` at `dst`
/// (`dst[j·dst_stride + i] = f(src[i·src_stride + j])`): the copy behind a Csr that stores
/// every entry (its values are the matrix row-major) becoming a column-major Dense or its own
/// transpose, and behind a row-major Dense becoming column-major.
///
/// `BLOCK` columns at a time: one contiguous read of `BLOCK` values per row, as many output
/// columns written in step (the block's loop unrolled); the last `n mod BLOCK` columns one
/// at a time, each a strided read and a contiguous write.
///
/// # Safety
/// `src` is valid for reads at every `i·src_stride + j`, `dst` for writes at every
/// `j·dst_stride + i` (`i < m`, `j < n`; `dst_stride ≥ m` for distinct slots), and the two do
/// not overlap.
pub(crate) unsafe fn transpose_values(
    (src, src_stride): (*const c64, usize),
    (m, n): (usize, usize),
    (dst, dst_stride): (*mut c64, usize),
    f: impl Fn(c64) -> c64,
) {
    const BLOCK: usize = 8;
    let blocked = n - n % BLOCK;
    for j0 in (0..blocked).step_by(BLOCK) {
        for i in 0..m {
            for t in 0..BLOCK {
                // SAFETY: i < m and j0 + t < n: i·src_stride + j0 + t is a value of `src`,
                // (j0 + t)·dst_stride + i a slot of `dst` (the caller's contract).
                unsafe {
                    let x = *src.add(i * src_stride + j0 + t);
                    dst.add((j0 + t) * dst_stride + i).write(f(x));
                }
            }
        }
    }
    for j in blocked..n {
        for i in 0..m {
            // SAFETY: as above, with j < n.
            unsafe {
                dst.add(j * dst_stride + i)
                    .write(f(*src.add(i * src_stride + j)))
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every slot of the m × n result is written with f of its entry, read from rows a
    /// stride apart (two values past each row that must not be read into it), and the padding
    /// below each column (a stride above m) is left alone; shapes on both sides of the
    /// 8-column blocks, empty ones included.
    #[test]
    fn transpose_values_writes_each_slot_once() {
        let sentinel = c64::new(-99.0, 99.0);
        for (m, n) in [
            (0, 0),
            (0, 5),
            (5, 0),
            (1, 1),
            (3, 8),
            (8, 3),
            (5, 17),
            (16, 16),
        ] {
            let row = n + 2;
            let src: Vec<c64> = (0..m * row)
                .map(|k| c64::new(k as f64, 1.0 + k as f64))
                .collect();
            let stride = m + 3;
            let mut dst = vec![sentinel; stride * n];
            // SAFETY: src holds m rows of `row` values; dst holds stride·n ≥ every
            // j·stride + i + 1; distinct buffers.
            unsafe {
                transpose_values(
                    (src.as_ptr(), row),
                    (m, n),
                    (dst.as_mut_ptr(), stride),
                    |x| x.conj(),
                )
            };
            for j in 0..n {
                for i in 0..stride {
                    let want = if i < m {
                        src[i * row + j].conj()
                    } else {
                        sentinel
                    };
                    assert_eq!(dst[j * stride + i], want, "({i}, {j}) of {m}×{n}");
                }
            }
        }
    }

    fn numbered(rows: usize, cols: usize) -> Dense {
        Dense::from_fn(rows, cols, |i, j| {
            c64::new((10 * i + j) as f64, -(j as f64))
        })
    }

    #[test]
    fn row_major_holds_the_same_matrix() {
        let a = numbered(3, 4);
        let flat: Vec<c64> = a.to_rows().into_iter().flatten().collect();
        let r = Dense::from_row_major(3, 4, &flat).unwrap();
        assert_eq!((r.layout(), r.shape()), (Layout::RowMajor, (3, 4)));
        assert_eq!(r.to_rows(), a.to_rows());
        assert_eq!(r, a);
        assert_eq!(r.nnz(), a.nnz());
        assert_eq!(r.to_string(), a.to_string());
        assert_eq!(r.as_ref(), a.as_ref());
        assert!(Dense::from_row_major(3, 3, &flat).is_err());
        assert!(Dense::from_row_major(usize::MAX, 2, &flat).is_err());
    }

    /// Changing layout copies every entry, on one worker and split over several (the copy by
    /// column chunks), for shapes whose buffers are padded (faer rounds the row capacity up
    /// to 4) and whose column counts fall on either side of the copy's 8-column blocks; a
    /// recycled buffer of the result's shape holds an earlier matrix's values first.
    #[test]
    fn layout_changes_copy_every_entry() {
        for (m, n) in [(1, 1), (3, 17), (17, 3), (10, 10), (33, 65)] {
            for force in [false, true] {
                for layout in [Layout::RowMajor, Layout::ColMajor] {
                    drop(Dense::from_fn(m, n, |_, _| c64::new(7.0, -7.0)));
                    let a = numbered(m, n);
                    let a = a.clone().into_layout(layout.flipped()).unwrap();
                    engine::set_force_parallel(force);
                    let b = a.clone().into_layout(layout);
                    let c = a.as_mat().clone();
                    engine::set_force_parallel(false);
                    let b = b.unwrap();
                    assert_eq!(b.layout(), layout);
                    for i in 0..m {
                        for j in 0..n {
                            let want = c64::new((10 * i + j) as f64, -(j as f64));
                            assert_eq!((b.get(i, j), c[(i, j)]), (want, want), "({i}, {j})");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn into_transpose_flips_the_flag_without_a_copy() {
        let a = numbered(2, 5);
        let copy = a.clone();
        let ptr = copy.buffer().as_ptr();
        let t = copy.into_transpose();
        assert_eq!((t.layout(), t.shape()), (Layout::RowMajor, (5, 2)));
        assert_eq!(t.buffer().as_ptr(), ptr);
        for i in 0..5 {
            for j in 0..2 {
                assert_eq!(t.get(i, j), a.get(j, i));
            }
        }
        assert_eq!(t.clone().layout(), Layout::RowMajor);
        assert_eq!(t.into_transpose(), a);
    }

    #[test]
    fn column_accessors_normalise_a_row_major_matrix() {
        let a = numbered(3, 2);
        let t = a.clone().into_transpose().into_transpose(); // column-major again
        assert_eq!(t.layout(), Layout::ColMajor);
        let r = a.clone().into_layout(Layout::RowMajor).unwrap();
        assert_eq!(r.layout(), Layout::RowMajor);
        // Shared access: a column-major copy beside the buffer, made once.
        assert_eq!(r.col(1), a.col(1));
        assert_eq!(r.col(1).as_ptr(), r.col(1).as_ptr());
        assert_eq!(
            r.columns().collect::<Vec<_>>(),
            a.columns().collect::<Vec<_>>()
        );
        assert_eq!(r.as_mat(), a.as_mat());
        assert_eq!(r.layout(), Layout::RowMajor);
        // Mutable access converts in place.
        let mut m = r.clone();
        m.col_mut(0)[2] = c64::new(7.0, 0.0);
        assert_eq!(
            (m.layout(), m.get(2, 0)),
            (Layout::ColMajor, c64::new(7.0, 0.0))
        );
        assert_eq!(r.clone().into_mat(), a.clone().into_mat());
        assert_eq!(
            r.into_layout(Layout::ColMajor).unwrap().layout(),
            Layout::ColMajor
        );
    }

    #[test]
    fn empty_shapes_in_either_layout() {
        let wide = Dense::try_zeros(0, usize::MAX).unwrap();
        let tall = wide.clone().into_transpose();
        assert_eq!(
            (tall.shape(), tall.layout()),
            ((usize::MAX, 0), Layout::RowMajor)
        );
        assert_eq!(tall.nnz(), 0);
        assert_eq!(tall.columns().count(), 0);
        assert_eq!(tall.entries().count(), 0);
        assert_eq!(tall.clone(), tall);
    }
}
