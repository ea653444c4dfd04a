//! Scratch matrices kept per thread between calls.
//!
//! Kernels that build n × n intermediates and drop them before they return (the 3M product's
//! parts and real products, `expm`'s powers and Padé terms) allocated and freed them on every
//! call. glibc's malloc hands freed blocks of these sizes back to the kernel (its trim and
//! mmap thresholds), so the next call faulted the same memory in again: 288 page faults a
//! 128 × 128 Dense·Dense, 0.445 against 0.166 ms (docs/benchmarks.md). [`unfilled`] gives a
//! matrix of the shape asked for, the thread's spare one if it has one, and the [`Spare`] goes
//! back to the thread's spares when dropped: at most [`SPARE_BYTES`] per element type and
//! thread, the oldest leaving first.
//!
//! Its twin is [`alloc::pool`](super::alloc::pool), which recycles the buffers of small
//! *results* (at most 16 × 16) when the caller drops the `Dense`; this module keeps a kernel's
//! own intermediates of any size up to the cap. A fresh complex scratch is allocated by
//! [`alloc::unfilled_mat`](super::alloc::unfilled_mat), so it meets the same dense limit,
//! memory check and huge-page advice as a result.

use std::cell::RefCell;
use std::thread::LocalKey;

use faer::Mat;

use super::alloc;
use crate::error::Result;
use crate::scalar::c64;

/// The most bytes of spare matrices one thread keeps, per element type.
pub(crate) const SPARE_BYTES: usize = 64 << 20;

/// An element type with a spare list per thread.
pub(crate) trait Pooled: Copy + 'static {
    /// This thread's spare matrices of this type, oldest first.
    fn spares() -> &'static LocalKey<RefCell<Vec<Mat<Self>>>>;
    /// A fresh `rows × cols` matrix with its dimensions set and its entries not written.
    ///
    /// # Safety
    /// The caller writes every entry before anything reads one.
    unsafe fn fresh(op: &str, rows: usize, cols: usize) -> Result<Mat<Self>>;
}

thread_local! {
    static SPARE_F64: RefCell<Vec<Mat<f64>>> = const { RefCell::new(Vec::new()) };
    static SPARE_C64: RefCell<Vec<Mat<c64>>> = const { RefCell::new(Vec::new()) };
}

impl Pooled for f64 {
    fn spares() -> &'static LocalKey<RefCell<Vec<Mat<f64>>>> {
        &SPARE_F64
    }

    unsafe fn fresh(op: &str, rows: usize, cols: usize) -> Result<Mat<f64>> {
        let mut mat = Mat::<f64>::new();
        mat.try_reserve(rows, cols).map_err(|_| {
            let bytes = (rows as u128) * (cols as u128) * size_of::<f64>() as u128;
            alloc::refused(op, (rows, cols), bytes)
        })?;
        // SAFETY: the capacity covers rows × cols (reserved just above); every entry is
        // written before it is read (this function's contract), and f64 has no drop glue.
        unsafe { mat.set_dims(rows, cols) };
        Ok(mat)
    }
}

impl Pooled for c64 {
    fn spares() -> &'static LocalKey<RefCell<Vec<Mat<c64>>>> {
        &SPARE_C64
    }

    unsafe fn fresh(op: &str, rows: usize, cols: usize) -> Result<Mat<c64>> {
        // SAFETY: this function's contract is `unfilled_mat`'s.
        unsafe { alloc::unfilled_mat(op, rows, cols) }
    }
}

fn bytes<T>(m: &Mat<T>) -> usize {
    m.nrows() * m.ncols() * size_of::<T>()
}

/// A `rows × cols` matrix whose entries are not to be read before they are written: this
/// thread's spare of that shape (holding a previous call's values), else a fresh one
/// ([`Pooled::fresh`]).
///
/// # Safety
/// The caller writes every entry before anything reads one: a fresh matrix's memory is not
/// initialised.
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) naming `op` when a fresh matrix is over the
/// dense limit or refused.
pub(crate) unsafe fn unfilled<T: Pooled>(op: &str, rows: usize, cols: usize) -> Result<Spare<T>> {
    let reused = T::spares()
        .try_with(|s| {
            let mut s = s.try_borrow_mut().ok()?;
            let i = s
                .iter()
                .position(|m| m.nrows() == rows && m.ncols() == cols)?;
            Some(s.swap_remove(i))
        })
        .ok()
        .flatten();
    if let Some(mat) = reused {
        return Ok(Spare(mat));
    }
    // SAFETY: the entries are written before they are read (this function's contract).
    Ok(Spare(unsafe { T::fresh(op, rows, cols) }?))
}

/// A matrix from [`unfilled`]; dropped, it goes back to its thread's spares.
pub(crate) struct Spare<T: Pooled>(Mat<T>);

impl<T: Pooled> Spare<T> {
    /// The matrix, kept by the caller (a kernel's result): it does not go back to the spares.
    pub(crate) fn into_inner(mut self) -> Mat<T> {
        std::mem::replace(&mut self.0, Mat::new())
    }
}

impl<T: Pooled> std::ops::Deref for Spare<T> {
    type Target = Mat<T>;
    fn deref(&self) -> &Mat<T> {
        &self.0
    }
}

impl<T: Pooled> std::ops::DerefMut for Spare<T> {
    fn deref_mut(&mut self) -> &mut Mat<T> {
        &mut self.0
    }
}

impl<T: Pooled> Drop for Spare<T> {
    fn drop(&mut self) {
        let mat = std::mem::replace(&mut self.0, Mat::new());
        let size = bytes(&mat);
        if size == 0 || size > SPARE_BYTES {
            return;
        }
        // During thread teardown, or re-entered: the matrix is simply freed.
        let _ = T::spares().try_with(|s| {
            if let Ok(mut s) = s.try_borrow_mut() {
                let mut total = s.iter().map(bytes).sum::<usize>() + size;
                while total > SPARE_BYTES && !s.is_empty() {
                    total -= bytes(&s.remove(0));
                }
                s.push(mat);
            }
        });
    }
}

/// How many spare matrices of `T` this thread holds, and their bytes (tests).
#[cfg(test)]
pub(crate) fn held<T: Pooled>() -> (usize, usize) {
    T::spares().with(|s| {
        let s = s.borrow();
        (s.len(), s.iter().map(bytes).sum())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spares_come_back_by_shape_and_stay_under_the_cap() {
        // SAFETY: no entry is read; the spares are compared by address.
        let m = unsafe { unfilled::<c64>("t", 30, 20) }.unwrap();
        let p = m.as_ptr();
        drop(m);
        assert_eq!(held::<c64>(), (1, 30 * 20 * 16));
        // The same shape takes the spare; another shape does not.
        // SAFETY: as above, no entry is read.
        let again = unsafe { unfilled::<c64>("t", 30, 20) }.unwrap();
        assert_eq!(again.as_ptr(), p);
        // SAFETY: as above, no entry is read.
        let other = unsafe { unfilled::<c64>("t", 20, 30) }.unwrap();
        assert_ne!(other.as_ptr(), p);
        // A kept result leaves the pool for good.
        let kept = again.into_inner();
        drop(other);
        assert_eq!(held::<c64>().0, 1);
        drop(kept);
        assert_eq!(held::<c64>().0, 1);
        // Past the cap the oldest leave: four 24 MiB matrices keep two.
        for _ in 0..4 {
            // SAFETY: dropped unread.
            drop(unsafe { unfilled::<f64>("t", 1024, 3 * 1024) }.unwrap());
            drop(Spare(Mat::<f64>::zeros(1024, 3 * 1024)));
        }
        let (count, total) = held::<f64>();
        assert!(total <= SPARE_BYTES, "{total}");
        assert_eq!(count, 2);
    }
}
