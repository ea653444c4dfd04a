//! Where a Csr·Csr product's rows are written: the reserved capacity of the result's arrays,
//! through ordinary or non-temporal stores.

use std::mem::MaybeUninit;

use crate::scalar::{ZERO, c64};

/// Products that reserve at least this many bytes for their column indices and values write
/// them with non-temporal stores ([`Emit::stream`]).
///
/// The result is written once, in order, and not read again by the kernel; ordinary stores
/// first read each of its lines for ownership and push the accumulator and b's rows out of
/// the caches. `profile_op matmul csr N` (10 random columns per row, so about 100 entries a
/// result row; malloc reusing its memory), ordinary → non-temporal, per call: n = 10⁴
/// (24 MB reserved) 9.35–9.54 → 7.24–7.43 ms, 2·10⁴ 22.1 → 16.0 ms, 7000 (17 MB) 5.49 →
/// 5.06 ms; 5000 (12 MB) 3.58 → 3.66 ms and 1000 (2.4 MB) 0.303 → 0.314 ms, no gain, so they
/// stay ordinary (docs/benchmarks.md).
pub(super) const STREAM_EMIT_BYTES: usize = 16 << 20;

/// The rows of a Csr·Csr product being written into the reserved capacity of its arrays.
pub(super) struct Emit<'a> {
    pub(super) indices: &'a mut [std::mem::MaybeUninit<usize>],
    pub(super) data: &'a mut [std::mem::MaybeUninit<c64>],
    /// Entries written so far (the next row pointer).
    pub(super) len: usize,
    /// Write through non-temporal stores (then `data` starts on a 16-byte boundary, and the
    /// writer calls [`simd::nontemporal::fence`](crate::simd::nontemporal::fence) after the last row).
    pub(super) stream: bool,
}

impl<'a> Emit<'a> {
    /// An emitter into the spare capacity of `indices` and `data`, streaming if they reserve
    /// at least [`STREAM_EMIT_BYTES`] and the values start on a 16-byte boundary.
    pub(super) fn new(indices: &'a mut Vec<usize>, data: &'a mut Vec<c64>) -> Self {
        let bytes = data
            .capacity()
            .saturating_mul(std::mem::size_of::<c64>() + std::mem::size_of::<usize>());
        let stream = bytes >= STREAM_EMIT_BYTES && data.as_ptr().cast::<u8>().align_offset(16) == 0;
        Emit {
            indices: indices.spare_capacity_mut(),
            data: data.spare_capacity_mut(),
            len: 0,
            stream,
        }
    }

    /// An emitter into two slices of equal length (a worker's part of the result), through
    /// non-temporal stores if `stream` (then `data` must start on a 16-byte boundary).
    pub(super) fn over(
        indices: &'a mut [MaybeUninit<usize>],
        data: &'a mut [MaybeUninit<c64>],
        stream: bool,
    ) -> Self {
        assert_eq!(indices.len(), data.len(), "Emit::over: lengths");
        assert!(
            !stream || data.as_ptr().cast::<u8>().align_offset(16) == 0,
            "Emit::over: streamed values start on a 16-byte boundary"
        );
        Emit {
            indices,
            data,
            len: 0,
            stream,
        }
    }

    /// Writes column `j` with value `v`, unless `v` is exactly zero. Branch-free: the slot is
    /// written either way and kept only for a non-zero.
    #[inline(always)]
    pub(super) fn entry(&mut self, j: usize, v: c64) {
        if self.stream {
            self.entry_as::<true>(j, v);
        } else {
            self.entry_as::<false>(j, v);
        }
    }

    /// [`entry`](Self::entry) with the choice of stores made by the caller: `STREAM` is
    /// `self.stream`.
    #[inline(always)]
    fn entry_as<const STREAM: bool>(&mut self, j: usize, v: c64) {
        debug_assert_eq!(STREAM, self.stream);
        // SAFETY: `matmul_csr` reserved one slot per multiply-add (or m·n), and emits each
        // column of a row's pattern once, so at most that many entries are written: `len` is
        // below both lengths whenever an entry is written. A worker of `parallel` gets as many
        // slots as its rows have distinct columns (`parallel::count_rows`), the same bound.
        // A streamed `data` starts on a 16-byte boundary (`new`, `over`), so every `c64` slot
        // does; `usize` slots are aligned.
        unsafe {
            if STREAM {
                let (i, d) = (self.indices.as_mut_ptr(), self.data.as_mut_ptr());
                crate::simd::nontemporal::put_index(i.add(self.len).cast::<usize>(), j);
                crate::simd::nontemporal::put_value(d.add(self.len).cast::<c64>(), v);
            } else {
                self.indices.get_unchecked_mut(self.len).write(j);
                self.data.get_unchecked_mut(self.len).write(v);
            }
        }
        self.len += usize::from(v != ZERO);
    }

    /// Writes the columns marked in word `w` of a row's bitset (`bits`), in increasing order,
    /// with their accumulated values, zeroing those accumulators. The choice of stores is
    /// made once per word, not per entry (a branch per entry cost a 5000 × 5000 product 5 %).
    #[inline(always)]
    pub(super) fn word(&mut self, w: usize, bits: u64, acc: &mut [c64]) {
        if self.stream {
            self.word_as::<true>(w, bits, acc);
        } else {
            self.word_as::<false>(w, bits, acc);
        }
    }

    /// Writes the columns `cols` (increasing) with their accumulated values, zeroing those
    /// accumulators; the choice of stores is made once for the list.
    #[inline(always)]
    pub(super) fn columns(&mut self, cols: &[usize], acc: &mut [c64]) {
        if self.stream {
            self.columns_as::<true>(cols, acc);
        } else {
            self.columns_as::<false>(cols, acc);
        }
    }

    /// [`columns`](Self::columns) with the choice of stores made: `STREAM` is `self.stream`.
    #[inline(always)]
    fn columns_as<const STREAM: bool>(&mut self, cols: &[usize], acc: &mut [c64]) {
        let mut out = Emit {
            indices: &mut *self.indices,
            data: &mut *self.data,
            len: self.len,
            stream: self.stream,
        };
        for &j in cols {
            out.entry_as::<STREAM>(j, std::mem::replace(&mut acc[j], ZERO));
        }
        self.len = out.len;
    }

    /// [`word`](Self::word) with the choice of stores made: `STREAM` is `self.stream`.
    ///
    /// The count is kept in a local across the word (the compiler cannot tell that the
    /// entries' writes leave `self.len` alone, and would store it once per entry).
    #[inline(always)]
    fn word_as<const STREAM: bool>(&mut self, w: usize, mut bits: u64, acc: &mut [c64]) {
        let mut out = Emit {
            indices: &mut *self.indices,
            data: &mut *self.data,
            len: self.len,
            stream: self.stream,
        };
        while bits != 0 {
            let j = w * 64 + bits.trailing_zeros() as usize;
            out.entry_as::<STREAM>(j, std::mem::replace(&mut acc[j], ZERO));
            bits &= bits - 1;
        }
        self.len = out.len;
    }
}
