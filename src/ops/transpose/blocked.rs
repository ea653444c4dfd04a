//! The Csr transpose of large scattered patterns by column blocks: a radix partition of the
//! entries by block of result rows, then a counting sort inside each block while its slice of
//! the result sits in the cache.
//!
//! The counting sort of [`super::transpose_csr`] stores every entry at its column's cursor:
//! on a scattered pattern that is a random store per entry into the whole result (24 bytes an
//! entry), and once the result outgrows the L2 cache each store waits on a line from the L3
//! cache or memory. Here the entries are first moved, in row order, to their block's range of
//! the result (a few hundred sequential streams at most), then each block is sorted by
//! column inside its own range, a slice of about [`BLOCK_ENTRIES`] entries that the copy into
//! a scratch buffer has just brought into the cache. Both passes split over workers: the
//! partition by ranges of rows (each with its own offsets into every block, from a count per
//! range and block), the sort by groups of blocks. Measured in `docs/benchmarks.md`, "Csr
//! transpose by column blocks".

use rayon::prelude::*;

use crate::engine::{self, Family};
use crate::error::Result;
use crate::scalar::c64;
use crate::shape::indptr_len;
use crate::storage::{Csr, alloc};

/// From this many stored entries, scattered patterns are transposed by blocks (except on Intel
/// CPUs, [`BLOCKED_FROM_INTEL`]); below it the result fits the caches that the plain counting
/// sort's random stores hit. Measured on an AMD EPYC with 10 entries a row on one thread
/// (docs/benchmarks/per_operation.md): the blocks lost up to about 4.5·10⁵ entries (10⁵: 290
/// against 179 µs) and won from there (5·10⁵ 1.92 against 2.14 ms, 10⁶ 4.5 against 6.6 ms).
pub(super) const BLOCKED_FROM: usize = 1 << 19;

/// [`BLOCKED_FROM`] on Intel CPUs, where the counting sort's random stores wait longer once
/// the result leaves the L2 cache: on an Intel Xeon (Emerald Rapids, one thread, 10 entries
/// a row, the fastest of batches, alternated; the counting sort in its Intel order, slots then
/// both stores) the blocks lost at 2·10⁵ entries (1.75–1.76 against 1.61 ms), tied at
/// 2.6·10⁵, and won from 3·10⁵ (2.67–2.73 against 2.69–2.85 ms; 4·10⁵ 3.77–3.79 against
/// 4.11–4.27 ms).
pub(super) const BLOCKED_FROM_INTEL: usize = 1 << 18;

/// The entries from which scattered patterns are transposed by blocks on this CPU.
pub(super) fn blocked_from() -> usize {
    if crate::simd::intel() {
        BLOCKED_FROM_INTEL
    } else {
        BLOCKED_FROM
    }
}

/// Only patterns with at least this many columns: with fewer, each column's stream of the
/// counting sort is long and its lines stay in the caches (10⁶ rows, 10 a row: at 1000 columns
/// two workers by blocks ran 59 against the counting sort's 47 ms; at 4096 columns one worker
/// 54 against 55 ms and two 30 against 55 ms).
pub(super) const BLOCKED_MIN_COLUMNS: usize = 1 << 12;

/// The entries a block aims at (24 bytes each in the result): its slice of the result stays
/// in the L2 cache while it is sorted. At 10⁶ entries blocks of 4096–8192 ran 5.0 ms, of 2048
/// 6.3 ms and of 16 384 6.7 ms.
const BLOCK_ENTRIES: usize = 1 << 13;

/// At most this many blocks: each is a stream of stores in the partition pass, and past a few
/// hundred streams their lines no longer stay in the caches (10⁷ entries: 977 blocks ran 90 ms,
/// 245 blocks 67 ms). Larger matrices get larger blocks.
const MAX_BLOCKS: usize = 256;

/// A pattern whose largest block holds more than this many times the entries a block aims at
/// (a few very full columns) is left to the counting sort: the scratch buffers are as large
/// as that block.
const MAX_SKEW: usize = 16;

/// The scratch buffers may always hold this many entries in all (1.5 MiB), whatever the
/// share of the result that is (see [`by_blocks`]).
const MIN_SCRATCH: usize = 1 << 16;

/// A pointer shared by the workers of one pass, each writing its own disjoint slots.
#[derive(Clone, Copy)]
struct Shared<T>(*mut T);

// SAFETY: the workers that share a `Shared` write disjoint elements through it (the
// partition's ranges and the blocks' slices are disjoint), and the owner waits for them all.
unsafe impl<T> Send for Shared<T> {}
// SAFETY: as for `Send`.
unsafe impl<T> Sync for Shared<T> {}

impl<T> Shared<T> {
    /// The pointer (a method, so that closures capture the `Sync` wrapper, not the field).
    #[inline(always)]
    fn get(self) -> *mut T {
        self.0
    }
}

/// One group's scratch buffers for the sort: a block's packed entries (row and column in one
/// word) and values, copied out of its slice, and its columns' cursors.
struct Scratch {
    packed: Vec<usize>,
    vals: Vec<c64>,
    cursors: Vec<u32>,
}

/// The block layout of an m × n pattern: blocks of `2^shift` consecutive columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Blocks {
    /// log₂ of the columns a block spans.
    shift: u32,
    /// The number of blocks, `ceil(n / 2^shift)`.
    count: usize,
    /// The entries a block aims at; a block holding more than [`MAX_SKEW`] times this many
    /// sends the pattern back to the counting sort.
    target: usize,
}

impl Blocks {
    /// Blocks of a power-of-two width that hold about `max(BLOCK_ENTRIES, nnz / MAX_BLOCKS)`
    /// entries on average (when the entries spread evenly over the columns), so at most
    /// [`MAX_BLOCKS`] of them. `1 ≤ n < 2³²`.
    fn new(n: usize, nnz: usize) -> Blocks {
        let target = BLOCK_ENTRIES.max(nnz.div_ceil(MAX_BLOCKS));
        let blocks = nnz.div_ceil(target).max(1);
        // n < 2³², so the power of two does not overflow.
        Blocks::of_width(n, n.div_ceil(blocks).next_power_of_two(), target)
    }

    /// Blocks of `width` columns (a power of two) over n ≥ 1 columns.
    fn of_width(n: usize, width: usize, target: usize) -> Blocks {
        let shift = width.trailing_zeros();
        Blocks {
            shift,
            count: ((n - 1) >> shift) + 1,
            target,
        }
    }
}

/// `aᵀ` with `f` applied to each value, by column blocks; `None` when the pattern does not
/// suit them (dimensions from 2³², a block more than [`MAX_SKEW`] times its target, or
/// scratch buffers that cannot be allocated), before anything is written: the caller then
/// takes the counting sort. The caller has checked that `a` is scattered, with at least
/// [`blocked_from`] entries and [`BLOCKED_MIN_COLUMNS`] columns.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) and [`Error::TooLarge`](crate::Error::TooLarge) as
/// the counting sort's.
pub(super) fn transpose_blocked(a: &Csr, f: impl Fn(c64) -> c64 + Sync) -> Result<Option<Csr>> {
    let ((m, n), nnz) = (a.shape(), a.nnz());
    if !fits(m, n) {
        return Ok(None);
    }
    let workers = engine::workers(Family::Transpose, nnz);
    by_blocks(a, f, Blocks::new(n, nnz), workers)
}

/// Whether an m × n pattern can be transposed by blocks: a row and a column share one 64-bit
/// word in the partition pass, and there is at least one column.
fn fits(m: usize, n: usize) -> bool {
    usize::BITS == 64 && u32::try_from(m).is_ok() && u32::try_from(n).is_ok() && n > 0
}

/// [`transpose_blocked`] with the blocks and the workers given (1 or more; the tests try
/// several of each); `None` also for a shape that does not [`fits`].
fn by_blocks(
    a: &Csr,
    f: impl Fn(c64) -> c64 + Sync,
    blocks: Blocks,
    workers: usize,
) -> Result<Option<Csr>> {
    const OP: &str = "transpose";
    let ((m, n), p, idx, val) = (a.shape(), a.indptr(), a.indices(), a.data());
    if !fits(m, n) {
        return Ok(None);
    }
    let nnz = idx.len();
    let (shift, nb) = (blocks.shift, blocks.count);
    let workers = workers.max(1);
    // Ranges of rows with about nnz / workers entries each: range t is rows[t]..rows[t + 1]
    // (trailing empty rows hold no entries to place).
    let rows = crate::storage::csr_build::even_split(&p[..m], nnz, workers);
    let ranges = workers;
    // counts[t·nb + b]: the entries of row range t in block b.
    let mut counts: Vec<usize> = alloc::try_vec(OP, (n, m), ranges * nb, 0)?;
    let count_range = |(t, row): (usize, &mut [usize])| {
        for &c in &idx[p[rows[t]]..p[rows[t + 1]]] {
            row[c >> shift] += 1;
        }
    };
    if ranges > 1 {
        counts.par_chunks_mut(nb).enumerate().for_each(count_range);
    } else {
        counts.chunks_mut(nb).enumerate().for_each(count_range);
    }
    // Each block's start in the result (bstart[nb] = nnz), and the counts turned into each
    // range's offset inside its block's slice (ranges in row order).
    let mut bstart: Vec<usize> = alloc::try_with_capacity(OP, (n, m), nb + 1)?;
    let mut at = 0usize;
    let mut largest = 0usize;
    for b in 0..nb {
        bstart.push(at);
        let before = at;
        for t in 0..ranges {
            let cell = &mut counts[t * nb + b];
            let c = *cell;
            *cell = at;
            at += c;
        }
        largest = largest.max(at - before);
    }
    bstart.push(at);
    debug_assert_eq!(at, nnz);
    if largest > MAX_SKEW.saturating_mul(blocks.target) || u32::try_from(largest).is_err() {
        return Ok(None);
    }
    // Groups of consecutive blocks for the sort, about nnz / workers entries each: group g is
    // blocks groups[g]..groups[g + 1].
    // The last group ends at the last block, empty ones included (their row pointers too).
    let groups = crate::storage::csr_build::even_split(&bstart[..nb], nnz, workers);
    let width = 1usize << shift;
    // Each group's largest block: its scratch holds that many entries.
    let most: Vec<usize> = (0..workers)
        .map(|g| {
            (groups[g]..groups[g + 1])
                .map(|b| bstart[b + 1] - bstart[b])
                .max()
                .unwrap_or(0)
        })
        .collect();
    // The scratch beside the result stays within the counting sort's own extra array (4 bytes
    // an entry: a sixth of the 24 the result takes), or twice each worker's share of blocks of
    // the target size (many workers): at 10⁹ entries, one uneven block per worker must not add
    // gigabytes. Its bytes are checked against the memory available with the result's.
    let entries: usize = most.iter().sum();
    let bytes = entries as u128
        * (std::mem::size_of::<usize>() + std::mem::size_of::<c64>()) as u128
        + (workers * width.min(n)) as u128 * 4;
    let allowed = (nnz / 6)
        .max(MIN_SCRATCH)
        .max(workers.saturating_mul(blocks.target).saturating_mul(2));
    if entries > allowed
        || alloc::check_memory(
            OP,
            (n, m),
            bytes + alloc::csr::csr_bytes(n.saturating_add(1), nnz),
        )
        .is_err()
    {
        return Ok(None);
    }
    // One scratch set per group: the block's packed entries and values, and its cursors.
    let mut scratch = Vec::new();
    for &most in &most {
        let (mut ti, mut tv, mut cur) = (Vec::<usize>::new(), Vec::<c64>::new(), Vec::<u32>::new());
        if ti.try_reserve_exact(most).is_err()
            || tv.try_reserve_exact(most).is_err()
            || cur.try_reserve_exact(width.min(n)).is_err()
        {
            return Ok(None);
        }
        scratch.push(Scratch {
            packed: ti,
            vals: tv,
            cursors: cur,
        });
    }
    let len = indptr_len(OP, (n, m))?;
    let (mut indptr, mut indices, mut data) = alloc::csr::csr_buffers(OP, (n, m), len, nnz)?;
    let (oi, ov, op) = (
        Shared(indices.as_mut_ptr()),
        Shared(data.as_mut_ptr()),
        Shared(indptr.as_mut_ptr()),
    );

    // The partition: range t's entries, in row order, each to its block's next slot, as the
    // row and column in one word and the mapped value.
    let partition = |(t, next): (usize, &mut [usize])| {
        let (oi, ov) = (oi.get(), ov.get());
        let next = next.as_mut_ptr();
        for i in rows[t]..rows[t + 1] {
            for k in p[i]..p[i + 1] {
                // SAFETY: k < nnz (a valid Csr's row pointers); c < n, so c >> shift < nb, the
                // length of `next`; the slot is range t's next one in block c >> shift, below
                // that block's end (its counts), so inside both buffers of nnz elements and
                // written by no other entry or worker.
                unsafe {
                    let c = *idx.get_unchecked(k);
                    let s = *next.add(c >> shift);
                    *next.add(c >> shift) = s + 1;
                    oi.add(s).write((i << 32) | c);
                    ov.add(s).write(f(*val.get_unchecked(k)));
                }
            }
        }
    };
    // The sort of group g's blocks, each inside its own slice; writes the row pointers of the
    // block's columns.
    let sort = |(g, scratch): (usize, &mut Scratch)| {
        let Scratch {
            packed: ti,
            vals: tv,
            cursors: cur,
        } = scratch;
        let (oi, ov, op) = (oi.get(), ov.get(), op.get());
        for b in groups[g]..groups[g + 1] {
            let (lo, hi) = (bstart[b], bstart[b + 1]);
            let c0 = b << shift;
            let cols = width.min(n - c0);
            let len = hi - lo;
            cur.clear();
            cur.resize(cols, 0);
            // SAFETY: lo..hi is block b's slice of both buffers, all written by the partition
            // and touched by no other group; the scratch buffers hold at least the largest
            // block of the group (reserved above), and `len` of them are written here.
            unsafe {
                std::ptr::copy_nonoverlapping(oi.add(lo), ti.as_mut_ptr(), len);
                std::ptr::copy_nonoverlapping(ov.add(lo), tv.as_mut_ptr(), len);
                ti.set_len(len);
                tv.set_len(len);
            }
            for &w in ti.iter() {
                // The column sits in the low 32 bits, from c0 to c0 + cols.
                cur[(w & 0xFFFF_FFFF) - c0] += 1;
            }
            let mut start = 0u32;
            for (j, cell) in cur.iter_mut().enumerate() {
                // SAFETY: c0 + j < n, inside the n + 1 row pointers; block b's columns are
                // written by this group only.
                unsafe { op.add(c0 + j).write(lo + start as usize) };
                let count = *cell;
                *cell = start;
                // A block holds fewer than 2³² entries (checked with the skew).
                start += count;
            }
            let cur = cur.as_mut_ptr();
            for (&w, &v) in ti.iter().zip(tv.iter()) {
                // SAFETY: the column is c0 + j with j < cols, the length of `cur`; cur[j] runs
                // from column j's start to its end inside the block (its count), so the slot
                // lo + cur[j] is inside block b's slice and taken by this entry alone.
                unsafe {
                    let j = (w & 0xFFFF_FFFF) - c0;
                    let s = *cur.add(j);
                    *cur.add(j) = s + 1;
                    oi.add(lo + s as usize).write(w >> 32);
                    ov.add(lo + s as usize).write(v);
                }
            }
        }
    };
    if workers > 1 {
        counts.par_chunks_mut(nb).enumerate().for_each(partition);
        scratch.par_iter_mut().enumerate().for_each(sort);
    } else {
        counts.chunks_mut(nb).enumerate().for_each(partition);
        scratch.iter_mut().enumerate().for_each(sort);
    }
    // SAFETY: every block wrote the row pointers of its columns, and the blocks' columns cover
    // 0..n; the last pointer is nnz. Every slot of both buffers was written by the sort (each
    // block's counts fill its slice). The capacities are n + 1 and nnz.
    unsafe {
        indptr.as_mut_ptr().add(n).write(nnz);
        indptr.set_len(len);
        indices.set_len(nnz);
        data.set_len(nnz);
    }
    debug_assert!(indptr.windows(2).all(|w| w[0] <= w[1]));
    // SAFETY: row c of the result holds the rows i of a's entries in column c, each once
    // (the partition keeps row order within a block, and the sort within a column), so
    // strictly increasing and below m; the pointers count them, from 0 to nnz.
    Ok(Some(unsafe {
        Csr::from_parts_unchecked((n, m), indptr, indices, data)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::xorshift;

    /// Random entries in an m × n pattern, `per` a row on average, with the columns of
    /// `empty` left out (whole blocks among them).
    fn pattern(m: usize, n: usize, per: usize, empty: &[std::ops::Range<usize>], seed: u64) -> Csr {
        let mut next = xorshift(seed);
        let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
        for i in 0..m {
            for _ in 0..(next() as usize % (2 * per + 1)) {
                let c = next() as usize % n;
                if empty.iter().any(|r| r.contains(&c)) {
                    continue;
                }
                rows.push(i);
                cols.push(c);
                vals.push(c64::new(next() as f64 / 1e19, -(i as f64)));
            }
        }
        // Duplicates are summed by the triplet constructor.
        Csr::from_triplets((m, n), &rows, &cols, &vals).unwrap()
    }

    /// The blocked transpose equals the counting sort's, array for array, for widths of one
    /// column to more than all, one to eight workers, rectangular shapes, and empty rows,
    /// columns and whole blocks (at the start, the middle and the end, whose row pointers the
    /// sort writes without entries).
    #[test]
    fn blocked_transpose_equals_the_counting_sort() {
        let cases: [(usize, usize, usize, Vec<std::ops::Range<usize>>); 6] = [
            (200, 300, 6, vec![]),
            (300, 200, 6, vec![0..17, 100..140, 180..200]),
            (1, 500, 40, vec![]),
            (500, 1, 1, vec![]),
            (64, 64, 64, vec![3..4, 32..48]),
            (1000, 777, 3, vec![5..6, 700..777]),
        ];
        for (case, (m, n, per, empty)) in cases.into_iter().enumerate() {
            let a = pattern(m, n, per, &empty, case as u64 + 1);
            for conj in [false, true] {
                let want = if conj {
                    super::super::transpose_csr_map(&a, crate::simd::conj)
                } else {
                    super::super::transpose_csr_map(&a, |x| x)
                }
                .unwrap();
                for width in [1, 4, 32, 1024] {
                    for workers in [1, 2, 3, 8] {
                        let blocks = Blocks::of_width(n, width, usize::MAX / MAX_SKEW);
                        let got = if conj {
                            by_blocks(&a, crate::simd::conj, blocks, workers)
                        } else {
                            by_blocks(&a, |x| x, blocks, workers)
                        }
                        .unwrap()
                        .expect("no skew limit");
                        let what = format!("{m}×{n}, width {width}, {workers} workers");
                        assert_eq!(got.indptr(), want.indptr(), "{what}");
                        assert_eq!(got.indices(), want.indices(), "{what}");
                        assert_eq!(got.data(), want.data(), "{what}");
                        assert!(got.as_csmat().check_compressed_structure().is_ok());
                    }
                }
            }
        }
    }

    /// A block with more than `MAX_SKEW` times its target is refused (the counting sort takes
    /// the pattern), one at the limit is not.
    #[test]
    fn a_skewed_pattern_is_left_to_the_counting_sort() {
        // Column 0 full: 100 entries in block 0, the others' few spread over the rest.
        let (m, n) = (100, 64);
        let (mut rows, mut cols) = (vec![], vec![]);
        for i in 0..m {
            rows.push(i);
            cols.push(0);
            if i % 10 == 0 {
                rows.push(i);
                cols.push(8 + i % 50);
            }
        }
        let vals = vec![c64::new(1.0, 2.0); rows.len()];
        let a = Csr::from_triplets((m, n), &rows, &cols, &vals).unwrap();
        // Block 0 (columns 0..8) holds exactly 100 entries.
        let at = |target| Blocks::of_width(n, 8, target);
        assert!(by_blocks(&a, |x| x, at(6), 2).unwrap().is_none());
        let t = by_blocks(&a, |x| x, at(7), 2).unwrap().unwrap();
        assert_eq!(t, super::super::transpose_csr(&a, false).unwrap());
    }

    /// Blocks each within the skew limit but, one per worker, more scratch in all than the
    /// counting sort's own extra array: left to the counting sort on eight workers, taken on
    /// one.
    #[test]
    fn the_scratch_beside_the_result_is_capped() {
        // Eight blocks of 8 columns, 15 000 entries each (one per row in every block).
        let (m, n) = (15_000, 64);
        let (mut rows, mut cols) = (vec![], vec![]);
        for i in 0..m {
            for b in 0..8 {
                rows.push(i);
                cols.push(8 * b + i % 8);
            }
        }
        let vals = vec![c64::new(0.5, -1.0); rows.len()];
        let a = Csr::from_triplets((m, n), &rows, &cols, &vals).unwrap();
        let blocks = Blocks::of_width(n, 8, 1000);
        // 8 · 15 000 entries of scratch against max(nnz / 6, MIN_SCRATCH, 2 · 8 · 1000).
        assert!(8 * 15_000 > (a.nnz() / 6).max(MIN_SCRATCH).max(16_000));
        assert!(by_blocks(&a, |x| x, blocks, 8).unwrap().is_none());
        let t = by_blocks(&a, |x| x, blocks, 1).unwrap().unwrap();
        assert_eq!(t, super::super::transpose_csr(&a, false).unwrap());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]

        /// Any pattern, any power-of-two width, any number of workers: the counting sort's
        /// arrays, conjugated or not.
        #[test]
        fn blocked_equals_the_counting_sort_on_any_pattern(
            (m, n) in (1usize..40, 1usize..70),
            entries in proptest::collection::vec((0usize..1000, 0usize..1000, -3i8..4), 0..300),
            log_width in 0u32..8,
            workers in 1usize..6,
            conj: bool,
        ) {
            let (rows, cols): (Vec<usize>, Vec<usize>) =
                entries.iter().map(|&(i, j, _)| (i % m, j % n)).unzip();
            let vals: Vec<c64> = entries
                .iter()
                .map(|&(i, _, v)| c64::new(f64::from(v), i as f64 / 7.0))
                .collect();
            let a = Csr::from_triplets((m, n), &rows, &cols, &vals).unwrap();
            let blocks = Blocks::of_width(n, 1 << log_width, usize::MAX / MAX_SKEW);
            let (got, want) = if conj {
                (
                    by_blocks(&a, crate::simd::conj, blocks, workers),
                    super::super::transpose_csr_map(&a, crate::simd::conj),
                )
            } else {
                (by_blocks(&a, |x| x, blocks, workers), super::super::transpose_csr_map(&a, |x| x))
            };
            let (got, want) = (got.unwrap().expect("no skew limit"), want.unwrap());
            proptest::prop_assert_eq!(got.indptr(), want.indptr());
            proptest::prop_assert_eq!(got.indices(), want.indices());
            proptest::prop_assert_eq!(got.data(), want.data());
        }
    }

    /// The layout of `Blocks::new`: power-of-two widths covering the columns, at most
    /// `MAX_BLOCKS` blocks, about `BLOCK_ENTRIES` entries each while that keeps them few.
    #[test]
    fn blocks_cover_the_columns() {
        for (n, nnz) in [
            (1, 0),
            (1, 1 << 30),
            (4096, 1 << 19),
            (100_000, 1_000_000),
            (1_000_000, 10_000_000),
            (u32::MAX as usize, 1 << 40),
            (5, 1 << 19),
        ] {
            let b = Blocks::new(n, nnz);
            let width = 1usize << b.shift;
            assert!(b.count >= 1 && b.count <= MAX_BLOCKS, "{n}, {nnz}: {b:?}");
            assert!(
                b.count * width >= n && (b.count - 1) * width < n,
                "{n}, {nnz}: {b:?}"
            );
            assert!(b.target >= BLOCK_ENTRIES && b.target.saturating_mul(MAX_BLOCKS) >= nnz);
        }
        // 10⁶ entries over 10⁵ columns: 98 blocks of 1024 columns, about 10⁴ entries each.
        assert_eq!(Blocks::new(100_000, 1_000_000).shift, 10);
        assert!(!fits(1 << 32, 5) && !fits(5, 1 << 32) && !fits(5, 0) && fits(5, 1));
    }
}
