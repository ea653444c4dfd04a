//! The work arrays of a Csr·Csr product's row kernel, one set per worker, and the row
//! pointers it writes.

use std::mem::MaybeUninit;

use crate::error::Result;
use crate::scalar::c64;
use crate::storage::{Csr, alloc};

/// The work arrays of [`gustavson_rows`](super::gustavson_rows) for one worker (see [`Scratch`]).
pub(super) struct ScratchBuffers {
    pub(super) acc: Vec<c64>,
    pub(super) seen: Vec<u64>,
    pub(super) pattern: Vec<usize>,
    pub(super) words: Vec<u64>,
}

impl ScratchBuffers {
    /// Zeroed arrays for rows of a·b none of which has more than `products` multiply-adds:
    /// one accumulator per column of b, one bit per column, and room for the longest row's
    /// distinct columns.
    ///
    /// # Errors
    /// [`Error::TooLarge`](crate::Error::TooLarge) if the accumulator cannot be allocated.
    pub(super) fn new(a: &Csr, b: &Csr, products: usize) -> Result<ScratchBuffers> {
        let n = b.shape().1;
        let acc = alloc::try_zeros("matmul", (a.shape().0, n), n)?;
        // Bit j of `seen` is set while column j is in the current row's pattern.
        let seen = vec![0u64; n.div_ceil(64)];
        // A row's distinct columns, in the order met (at most its products, at most n), with
        // one slot more for the write the branch-free append makes after the last fresh
        // column and three more for `list_columns`' writes past a word's last bit.
        let pattern = vec![0usize; products.min(n).saturating_add(4)];
        let words = vec![0u64; seen.len().div_ceil(64)];
        Ok(ScratchBuffers {
            acc,
            seen,
            pattern,
            words,
        })
    }

    /// The arrays as [`gustavson_rows`](super::gustavson_rows) takes them.
    pub(super) fn scratch(&mut self) -> Scratch<'_> {
        Scratch {
            acc: &mut self.acc,
            seen: &mut self.seen,
            pattern: &mut self.pattern,
            words: &mut self.words,
        }
    }
}

/// Where [`gustavson_rows`](super::gustavson_rows) writes its row pointers: one slot per row of its range, each the
/// entries its emitter has written so far plus `base` (where the emitter's slice starts in
/// the result).
pub(super) struct RowPointers<'a> {
    pub(super) slots: &'a mut [MaybeUninit<usize>],
    /// Slots written so far.
    pub(super) next: usize,
    pub(super) base: usize,
}

impl RowPointers<'_> {
    /// Slots not yet written.
    pub(super) fn room(&self) -> usize {
        self.slots.len() - self.next
    }

    /// Writes the next row pointer: `len` entries emitted, plus the base.
    ///
    /// # Safety
    /// A slot is left ([`room`](Self::room) > 0).
    #[inline(always)]
    pub(super) unsafe fn push(&mut self, len: usize) {
        debug_assert!(self.next < self.slots.len());
        // SAFETY: next < slots.len() (the caller's contract).
        unsafe { self.slots.get_unchecked_mut(self.next) }.write(self.base + len);
        self.next += 1;
    }
}

/// The per-row work arrays of [`gustavson_rows`](super::gustavson_rows), all-zero between rows.
pub(super) struct Scratch<'a> {
    /// One accumulator per column of b (zeroed again as each entry is emitted).
    pub(super) acc: &'a mut [c64],
    /// One bit per column of b: set while the column is in the current row's pattern.
    pub(super) seen: &'a mut [u64],
    /// Room for the largest row's distinct columns.
    pub(super) pattern: &'a mut [usize],
    /// Bit w of `words[w / 64]` is set while word w of `seen` is non-zero; only filled for the
    /// rows that walk their non-zero words.
    pub(super) words: &'a mut [u64],
}
