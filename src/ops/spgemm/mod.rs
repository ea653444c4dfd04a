//! Csr·Csr → Csr: Gustavson's row-by-row product, re-exported as
//! [`matmul::matmul_csr`](super::matmul::matmul_csr) and registered in the `matmul` dispatcher.

use std::mem::MaybeUninit;
use std::ops::Range;

use crate::engine::{self, Family};
use crate::error::Result;
use crate::scalar::{ZERO, c64};
use crate::shape::{indptr_len, matmul_shapes};
use crate::storage::{Csr, alloc};

/// Csr·Csr → Csr (Gustavson's algorithm, one dense accumulator row). O(flops + m·(1 + n/4096)).
///
/// The output arrays are reserved once, at the product's multiply-add count (an upper bound on
/// its non-zeros). A two-level bitset marks each row's columns, and a row is emitted in column
/// order in one of three ways: a row whose columns span fewer than three 64-column words per
/// entry (banded, dense or random rows; rows with twice as many products as words spanned,
/// known before their products, scan their span) lists its columns from masks of the span's
/// non-zero words; a longer spread-out row walks a summary bitset of those words; a short
/// spread-out row (≤ 64 entries) sorts its columns.
///
/// When the accumulator (one entry per column of `b`) would be much larger than the work, each
/// row's products are sorted and merged instead, so the memory is O(flops), whatever `n`.
/// Entries that come out exactly zero are not stored.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) on mismatched inner dimensions, [`Error::TooLarge`](crate::Error::TooLarge) if the result
/// cannot be allocated.
pub fn matmul_csr(a: &Csr, b: &Csr) -> Result<Csr> {
    const OP: &str = "matmul";
    matmul_shapes(OP, a.shape(), b.shape())?;
    let (m, _) = a.shape();
    let n = b.shape().1;
    let (ia, pb) = (a.indices(), b.indptr());
    // A small product with at most 64 columns: m·n bounds its entries, so the count of its
    // multiply-adds (a pass over a's entries, a seventh of a 10 × 10 tridiagonal product's
    // instructions) is not made; the narrow kernel below needs neither count.
    let small = n <= 64 && m.saturating_mul(n) <= SMALL_NARROW;
    // The multiply-add count: the length of the row of b each entry of a selects, summed in
    // one flat pass over a's columns (row by row, with each row's largest kept, it was a
    // seventh of a tridiagonal product's instructions at n = 1000).
    let mut flops = 0usize;
    if !small {
        for &r in ia {
            // SAFETY: r is a column of a, below its column count, which is b's row count
            // (`matmul_shapes`), so r + 1 < pb.len() (the Csr invariants).
            let len = unsafe { pb.get_unchecked(r + 1) - pb.get_unchecked(r) };
            flops = flops.saturating_add(len);
        }
    }
    let cap = if small {
        m * n
    } else {
        flops.min(m.saturating_mul(n))
    };
    let sorted = !small && n > flops.saturating_add(m).saturating_mul(4).max(1 << 16);
    if !sorted && n > 64 && flops >= PARALLEL_PRODUCTS {
        let workers = engine::workers(Family::CsrRows, flops.saturating_mul(UNITS_PER_PRODUCT))
            .min(accumulators_allowed(flops, n));
        if workers > 1 && m > 1 {
            return parallel::matmul_rows(a, b, flops, workers);
        }
    }
    let (mut indptr, mut indices, mut data) =
        alloc::csr_buffers(OP, (m, n), indptr_len(OP, (m, n))?, cap)?;
    indptr.push(0);
    if sorted {
        matmul_csr_sorted(a, b, &mut indptr, &mut indices, &mut data);
        crate::storage::csr_build::drop_exact_zeros(&mut indptr, &mut indices, &mut data);
        // SAFETY: one pointer per row after the leading 0; each row's columns were sorted and
        // merged (strictly increasing), and are columns of b (below n).
        return Ok(unsafe { Csr::from_parts_unchecked((m, n), indptr, indices, data) });
    }
    if n <= 64 {
        // The accumulator on the stack: no allocation for small products.
        let mut acc = [ZERO; 64];
        let mut out = Emit {
            indices: indices.spare_capacity_mut(),
            data: data.spare_capacity_mut(),
            len: 0,
            stream: false,
        };
        gustavson_narrow(a, b, &mut acc[..n], &mut out, &mut indptr);
        let nnz = out.len;
        // SAFETY: `Emit` initialised the first `nnz` elements of both spare capacities.
        unsafe {
            indices.set_len(nnz);
            data.set_len(nnz);
        }
        // SAFETY: as below; a row's columns are the set bits of one word, emitted in order.
        return Ok(unsafe { Csr::from_parts_unchecked((m, n), indptr, indices, data) });
    }
    // A row's products are at most all products, and at most the longest row of a times the
    // longest row of b.
    let longest = |p: &[usize]| p.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    let row_max = longest(a.indptr()).saturating_mul(longest(pb)).min(flops);
    let mut buffers = ScratchBuffers::new(a, b, row_max)?;
    // The rows are written straight into the reserved capacity: a row's pattern has at most
    // as many columns as it has products, so `cap` (the multiply-add count, or m·n) is never
    // passed. Exact zeros are skipped as they are written, without a second pass.
    let mut out = Emit::new(&mut indices, &mut data);
    let mut ptrs = RowPointers {
        slots: &mut indptr.spare_capacity_mut()[..m],
        next: 0,
        base: 0,
    };
    gustavson_rows(a, b, 0..m, &mut buffers.scratch(), &mut out, &mut ptrs);
    assert_eq!(ptrs.next, m, "gustavson_rows: one pointer per row");
    if out.stream {
        crate::simd::nontemporal::fence();
    }
    let nnz = out.len;
    // SAFETY: `Emit` initialised the first `nnz` elements of both spare capacities, in order;
    // `gustavson_rows` wrote the m row pointers after the leading 0 (asserted), within the
    // capacity `csr_buffers` reserved (m + 1).
    unsafe {
        indices.set_len(nnz);
        data.set_len(nnz);
        indptr.set_len(m + 1);
    }
    // SAFETY: one pointer per row after the leading 0; every emission path writes a row's
    // pattern (columns of b, below n, each once thanks to `seen`) in increasing order.
    Ok(unsafe { Csr::from_parts_unchecked((m, n), indptr, indices, data) })
}

mod parallel;

/// Each multiply-add of a Csr·Csr product counts this many units of the Csr row kernels'
/// work ([`engine::thresholds::CSR_ROWS`]), so that the defaults put it on two workers from
/// 2¹⁶ multiply-adds. Two workers against one (`profile_op matmul`, forced parallel; the
/// study is in `docs/benchmarks/per_operation.md`): random products with 10 a row (`rand10`, 100 multiply-adds a row) 0.93× at
/// n = 400 (4·10⁴), 1.09× at 600, 1.15× at 800, 1.53× at 1000 and 1.5–1.8× above;
/// tridiagonal products (9 a row) 0.84× at n = 3000, 1.06–1.10× at 5000–7000, 1.26× at
/// 10⁴, 1.3× at 6·10⁴–10⁶. A multiply-add costs about 2.4 ns on one thread in both, more
/// than a stored entry of Csr·ket, which CSR_ROWS was measured on.
const UNITS_PER_PRODUCT: usize = 8;

/// Csr·Csr products with fewer multiply-adds (about 80 µs on one thread) stay serial whatever
/// the thresholds in force: a calibration that lowers [`engine::thresholds::CSR_ROWS`] for
/// Csr·ket (to thousands of entries on many-core hosts) must not hand a product of a few microseconds to rayon,
/// whose hand-off costs 15–20 µs.
const PARALLEL_PRODUCTS: usize = 1 << 15;

/// How many workers' accumulator rows (one entry per column of b, each) a product of `flops`
/// multiply-adds with `n` columns may hold at once: together no more bytes than the serial
/// kernel reserves for the result (one index and value per multiply-add), and at least one.
/// A wide product with few multiply-adds a column (10⁶ of them over 8·10⁶ columns: a 128 MB
/// accumulator against a 24 MB reservation) stays on one worker rather than holding one
/// accumulator per thread.
fn accumulators_allowed(flops: usize, n: usize) -> usize {
    let reserved = flops.saturating_mul(std::mem::size_of::<(usize, c64)>());
    let per_worker = n.saturating_mul(std::mem::size_of::<c64>()).max(1);
    (reserved / per_worker).max(1)
}

/// Products with at most 64 columns and at most this many result entries (m·n) reserve m·n
/// entries instead of counting their multiply-adds first: a result keeps at most 6 KiB it does
/// not use (a 10 × 10 tridiagonal product 5 485 → 4 674 instructions a call).
const SMALL_NARROW: usize = 256;

/// The work arrays of [`gustavson_rows`] for one worker (see [`Scratch`]).
struct ScratchBuffers {
    acc: Vec<c64>,
    seen: Vec<u64>,
    pattern: Vec<usize>,
    words: Vec<u64>,
}

impl ScratchBuffers {
    /// Zeroed arrays for rows of a·b none of which has more than `products` multiply-adds:
    /// one accumulator per column of b, one bit per column, and room for the longest row's
    /// distinct columns.
    ///
    /// # Errors
    /// [`Error::TooLarge`](crate::Error::TooLarge) if the accumulator cannot be allocated.
    fn new(a: &Csr, b: &Csr, products: usize) -> Result<ScratchBuffers> {
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

    /// The arrays as [`gustavson_rows`] takes them.
    fn scratch(&mut self) -> Scratch<'_> {
        Scratch {
            acc: &mut self.acc,
            seen: &mut self.seen,
            pattern: &mut self.pattern,
            words: &mut self.words,
        }
    }
}

/// Where [`gustavson_rows`] writes its row pointers: one slot per row of its range, each the
/// entries its emitter has written so far plus `base` (where the emitter's slice starts in
/// the result).
struct RowPointers<'a> {
    slots: &'a mut [MaybeUninit<usize>],
    /// Slots written so far.
    next: usize,
    base: usize,
}

impl RowPointers<'_> {
    /// Slots not yet written.
    fn room(&self) -> usize {
        self.slots.len() - self.next
    }

    /// Writes the next row pointer: `len` entries emitted, plus the base.
    ///
    /// # Safety
    /// A slot is left ([`room`](Self::room) > 0).
    #[inline(always)]
    unsafe fn push(&mut self, len: usize) {
        debug_assert!(self.next < self.slots.len());
        // SAFETY: next < slots.len() (the caller's contract).
        unsafe { self.slots.get_unchecked_mut(self.next) }.write(self.base + len);
        self.next += 1;
    }
}

/// The per-row work arrays of [`gustavson_rows`], all-zero between rows.
struct Scratch<'a> {
    /// One accumulator per column of b (zeroed again as each entry is emitted).
    acc: &'a mut [c64],
    /// One bit per column of b: set while the column is in the current row's pattern.
    seen: &'a mut [u64],
    /// Room for the largest row's distinct columns.
    pattern: &'a mut [usize],
    /// Bit w of `words[w / 64]` is set while word w of `seen` is non-zero; only filled for the
    /// rows that walk their non-zero words.
    words: &'a mut [u64],
}

crate::simd::avx2_fn! {
    /// The rows `rows` of a·b, written through `out`, one row pointer per row pushed to
    /// `indptr`.
    ///
    /// The row's span of 64-column words is bounded first, from the first and last column of
    /// each row of b taken (sorted rows), once per entry of a, not per product. A span of one
    /// or two words keeps the pattern in a register; a row with at least twice as many
    /// products as words in its span goes to [`span_row`] (the products mark bits, the span
    /// is scanned). Otherwise the accumulation is branch-free: each product marks its column
    /// in `seen`, appends the column to `pattern` (advancing only when the bit was clear) and
    /// adds into `acc`, which the emission zeroes again. A row whose span has fewer than
    /// [`MASK_SCAN_WORDS_PER_ENTRY`] words per entry lists its columns in order
    /// ([`list_columns`]) and emits them; a longer spread-out row marks its non-zero words in
    /// a summary bitset and walks those; a short spread-out row (≤ 64 entries) sorts its
    /// columns.
    fn gustavson_rows(
        a: &Csr,
        b: &Csr,
        rows: Range<usize>,
        scratch: &mut Scratch<'_>,
        out: &mut Emit<'_>,
        indptr: &mut RowPointers<'_>,
    ) {
        let (pa, ia, da) = (a.indptr(), a.indices(), a.data());
        let (pb, ib, db) = (b.indptr(), b.indices(), b.data());
        // The unchecked reads of b's rows below rely on this (`matmul_csr` checked it).
        assert_eq!(a.shape().1, b.shape().0, "gustavson_rows: shapes");
        let Scratch {
            acc,
            seen,
            pattern,
            words,
        } = scratch;
        // One pointer per row below (the pushes' contract).
        assert!(indptr.room() >= rows.len(), "gustavson_rows: row pointers");
        for i in rows {
            // The row's first and last product column (b's rows are sorted): a row whose
            // products fall within one or two aligned words (banded operators) keeps its
            // pattern in a register, as `gustavson_narrow` does.
            let (mut first, mut last) = (usize::MAX, 0);
            for &r in &ia[pa[i]..pa[i + 1]] {
                // SAFETY: r < a's column count = b's row count (asserted), so r + 1 < pb.len();
                // b's row pointers are non-decreasing up to nnz(b), the length of `ib`, so
                // b0 and b1 − 1 index `ib` when b0 < b1.
                unsafe {
                    let (b0, b1) = (*pb.get_unchecked(r), *pb.get_unchecked(r + 1));
                    if b0 < b1 {
                        first = first.min(*ib.get_unchecked(b0));
                        last = last.max(*ib.get_unchecked(b1 - 1));
                    }
                }
            }
            let base = first / 64 * 64;
            let row = (&ia[pa[i]..pa[i + 1]], &da[pa[i]..pa[i + 1]]);
            if first <= last && last - base < 64 {
                // Within one aligned word (most rows of a banded product): a 64-bit pattern,
                // one shift per product instead of the 128-bit one's five instructions.
                let mut bits = 0u64;
                // base ≤ first ≤ j ≤ last < base + 64.
                add_row_products(row, b, acc, |j| bits |= 1 << (j - base));
                out.word(base / 64, bits, acc);
                // SAFETY: one push per row of `rows`, for which there is room (asserted).
                unsafe { indptr.push(out.len) };
                continue;
            }
            if first <= last && last - base < 128 {
                let mut bits = 0u128;
                // base ≤ first ≤ j ≤ last < base + 128.
                add_row_products(row, b, acc, |j| bits |= 1 << (j - base));
                out.word(base / 64, bits as u64, acc);
                out.word(base / 64 + 1, (bits >> 64) as u64, acc);
                // SAFETY: one push per row of `rows`, for which there is room (asserted).
                unsafe { indptr.push(out.len) };
                continue;
            }
            let words_spanned = (last / 64).wrapping_sub(base / 64).wrapping_add(1);
            // A second pass over the row of a (its first and last columns were the first):
            // summed in that loop, the products cost the tridiagonal product 2 % more
            // instructions (every row pays it; only these wider rows need it).
            let products = || row.0.iter().map(|&r| pb[r + 1] - pb[r]).sum::<usize>();
            if first <= last && 2 * words_spanned <= products() {
                // Twice as many products as words in the span: the row will likely fill more
                // columns than the span has words, so it scans the span.
                span_row(row, b, acc, seen, (base / 64, words_spanned), out);
                // SAFETY: one push per row of `rows`, for which there is room (asserted).
                unsafe { indptr.push(out.len) };
                continue;
            }
            let mut len = 0;
            let (mut lo, mut hi) = (usize::MAX, 0);
            for ka in pa[i]..pa[i + 1] {
                let (r, va) = (ia[ka], da[ka]);
                let (b0, b1) = (pb[r], pb[r + 1]);
                if b0 == b1 {
                    continue;
                }
                lo = lo.min(ib[b0] / 64);
                hi = hi.max(ib[b1 - 1] / 64);
                for (&j, &vb) in ib[b0..b1].iter().zip(&db[b0..b1]) {
                    let (w, bit) = (j / 64, 1u64 << (j % 64));
                    // SAFETY: j < n (the Csr invariant of b), so w < seen.len() = ⌈n/64⌉ and
                    // j < acc.len() = n. `len` counts the distinct columns among the row's
                    // earlier products: fewer than its products (≤ row_max) and at most n, so
                    // len < pattern.len() = min(row_max, n) + 4.
                    unsafe {
                        let s = seen.get_unchecked_mut(w);
                        let fresh = *s & bit == 0;
                        *s |= bit;
                        *pattern.get_unchecked_mut(len) = j;
                        len += usize::from(fresh);
                        *acc.get_unchecked_mut(j) += va * vb;
                    }
                }
            }
            if len == 0 {
                // SAFETY: one push per row of `rows`, for which there is room (asserted).
                unsafe { indptr.push(out.len) };
                continue;
            }
            if hi - lo < MASK_SCAN_WORDS_PER_ENTRY.saturating_mul(len) {
                // At most three words per entry (rand10 rows at n = 10⁴: 99 entries over 157
                // words): the row's columns are listed in order (masks of the span's non-zero
                // words, each word's bits written out), then emitted in one counted loop.
                let listed = list_columns(seen, (lo, hi), pattern);
                debug_assert_eq!(listed, len);
                out.columns(&pattern[..len], acc);
            } else if len > 64 {
                // Long and spread out: walk only the non-zero words, clearing both levels.
                for &j in &pattern[..len] {
                    words[j / 4096] |= 1 << ((j / 64) % 64);
                }
                for (s, summary) in words[lo / 64..=hi / 64].iter_mut().enumerate() {
                    let s = s + lo / 64;
                    let mut nonzero = std::mem::take(summary);
                    while nonzero != 0 {
                        let w = s * 64 + nonzero.trailing_zeros() as usize;
                        out.word(w, std::mem::take(&mut seen[w]), acc);
                        nonzero &= nonzero - 1;
                    }
                }
            } else {
                let row = &mut pattern[..len];
                row.sort_unstable();
                for &j in row.iter() {
                    seen[j / 64] = 0;
                    out.entry(j, std::mem::replace(&mut acc[j], ZERO));
                }
            }
            // SAFETY: one push per row of `rows`, for which there is room (asserted).
            unsafe { indptr.push(out.len) };
        }
    }
}

crate::simd::avx2_fn! {
    #[inline(never)]
    /// One row of [`gustavson_rows`] whose products are at least twice the 64-column words
    /// they span (a random row of n = 1000: 100 products over 16 words): the products only
    /// mark their bits in `seen` and add into `acc` (no list of the row's columns, no count of
    /// the fresh ones), then the span's words (`span`: the first, and how many) are emitted in
    /// order, cleared. Against the general walk, 5.72 → 4.77 M instructions for a rand10
    /// product at n = 1000. Not inlined: in the kernel's own body it made the one- and
    /// two-word rows' code slower (n = 100 products +5 % instructions).
    ///
    /// Every product's column must lie in the span (the row's first and last column bound
    /// it).
    fn span_row(
        row: (&[usize], &[c64]),
        b: &Csr,
        acc: &mut [c64],
        seen: &mut [u64],
        span: (usize, usize),
        out: &mut Emit<'_>,
    ) {
        assert!(seen.len() >= b.shape().1.div_ceil(64), "span_row: bitset");
        add_row_products(row, b, acc, |j| {
            // SAFETY: j < n (the Csr invariant of b), so j / 64 < ⌈n/64⌉ ≤ seen.len()
            // (asserted above).
            unsafe { *seen.get_unchecked_mut(j / 64) |= 1 << (j % 64) }
        });
        let (lo, words) = span;
        for (w, word) in seen[lo..lo + words].iter_mut().enumerate() {
            out.word(lo + w, std::mem::take(word), acc);
        }
    }
}

/// In [`gustavson_rows`], a row whose 64-column words span fewer than this many per entry is
/// listed in column order by [`list_columns`] and then emitted, rather than through a summary
/// bitset built from its column list, or by sorting that list. One thread, random products
/// (p random columns per row, a and b alike), before → after, medians of 1.5 s: n = 5000,
/// p = 10 (79 words, 99 entries a row, which scanned the span a branch per word)
/// 3.06 → 1.88–1.97 ms; n = 10⁴ (157 words) 5.46–5.78 → 4.45 ms; 15 000 (235 words) 7.6 →
/// 7.0 ms; 2·10⁴ (313 words) level at 3, 3 % slower at 4; 4·10⁴ and p = 5 at n = 10⁴ (6.3
/// words an entry) 6–25 % slower at 8.
const MASK_SCAN_WORDS_PER_ENTRY: usize = 3;

/// Bit k set where `words[k]` is non-zero, for at most 64 words (branch-free, so it
/// vectorises).
#[inline(always)]
fn nonzero_words(words: &[u64]) -> u64 {
    debug_assert!(words.len() <= 64);
    let mut mask = 0;
    for (k, &w) in words.iter().enumerate() {
        mask |= u64::from(w != 0) << k;
    }
    mask
}

/// Writes the columns marked in `seen[lo..=hi]` (`span`) to the front of `list`, in
/// increasing order, clears those words, and returns how many there were.
///
/// Each run of up to 64 words gives a mask of its non-zero words ([`nonzero_words`]); each
/// such word's bits are written out four at a time without a branch (slots past the word's
/// last bit get junk that the next word overwrites), with a loop only for a word's fifth bit
/// on, as simdjson flattens its bitsets. (Walking the words bit by bit took a branch per bit
/// and per word, mispredicted on random rows.)
///
/// # Panics
/// If `span` is not within `seen`, or `list` has fewer than 3 slots more than the columns
/// marked (a bug in the caller).
#[inline(always)]
fn list_columns(seen: &mut [u64], span: (usize, usize), list: &mut [usize]) -> usize {
    let (lo, hi) = span;
    let mut pos = 0;
    let mut w0 = lo;
    while w0 <= hi {
        let end = (w0 + 64).min(hi + 1);
        let mut nonzero = nonzero_words(&seen[w0..end]);
        while nonzero != 0 {
            let w = w0 + nonzero.trailing_zeros() as usize;
            let mut bits = std::mem::take(&mut seen[w]);
            let count = bits.count_ones() as usize;
            let slots = &mut list[pos..pos + count.max(4)];
            for slot in &mut slots[..4] {
                *slot = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits.wrapping_sub(1);
            }
            for slot in &mut slots[4..] {
                *slot = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits.wrapping_sub(1);
            }
            pos += count;
            nonzero &= nonzero - 1;
        }
        w0 = end;
    }
    pos
}

/// `acc[j] += a[i, r]·b[r, j]` for every entry (r, a[i, r]) of `row` (the columns and values of
/// a row of a) and every stored b[r, j], each column j also handed to `mark`. Inlined into the
/// AVX2 instance of its caller.
///
/// # Panics
/// If `acc` has fewer entries than b has columns (a bug in the caller).
#[inline(always)]
fn add_row_products(
    row: (&[usize], &[c64]),
    b: &Csr,
    acc: &mut [c64],
    mut mark: impl FnMut(usize),
) {
    assert!(acc.len() >= b.shape().1, "add_row_products: accumulator");
    let (pb, ib, db) = (b.indptr(), b.indices(), b.data());
    for (&r, &va) in row.0.iter().zip(row.1) {
        // The checked row read cost 8 of a tridiagonal product's 25 instructions an entry of a.
        assert!(
            r < b.shape().0,
            "add_row_products: a column of a beyond b's rows"
        );
        // SAFETY: r + 1 < pb.len() (just asserted); b's row pointers are non-decreasing up to
        // nnz(b), the length of `ib` and `db` (the Csr invariants).
        let (bi, bv) = unsafe {
            let (b0, b1) = (*pb.get_unchecked(r), *pb.get_unchecked(r + 1));
            (ib.get_unchecked(b0..b1), db.get_unchecked(b0..b1))
        };
        for (&j, &vb) in bi.iter().zip(bv) {
            mark(j);
            // SAFETY: j is below b's column count (the Csr invariant), at most acc.len()
            // (asserted above).
            unsafe { *acc.get_unchecked_mut(j) += va * vb };
        }
    }
}

/// In [`gustavson_narrow`], rows of b with at least this many entries at consecutive columns
/// are added into the accumulator as one vector run (`simd::add_scaled_run`) on the AVX2 path:
/// 10 × 10 with every entry stored 1.59 → 1.08 µs (23 300 → 18 500 instructions). Shorter
/// rows (a tridiagonal's 2 and 3) were slower that way (0.46 → 0.51 µs), so they go one
/// product at a time. The same check in the general kernel's two-word rows cost 4–7 % on
/// 100 × 100 products whose rows are not consecutive, so it is not made there.
#[cfg(target_arch = "x86_64")]
const RUN: usize = 4;

crate::simd::avx2_fn! {
    /// [`gustavson_rows`] for a `b` of at most 64 columns: a row's pattern is one word held in
    /// a register, and its set bits, lowest first, are the emission order. The general
    /// kernel's pattern list and bitset in memory made each product wait on the previous
    /// product's store to the same word (2.0× the instructions at n = 10).
    fn gustavson_narrow(
        a: &Csr,
        b: &Csr,
        acc: &mut [c64],
        out: &mut Emit<'_>,
        indptr: &mut Vec<usize>,
    ) {
        let (pa, ia, da) = (a.indptr(), a.indices(), a.data());
        let (pb, ib, db) = (b.indptr(), b.indices(), b.data());
        // The unchecked reads below rely on these (`matmul_csr` checked the shapes).
        assert!(
            a.shape().1 == b.shape().0 && b.shape().1 <= 64 && acc.len() == b.shape().1,
            "gustavson_narrow: shapes"
        );
        #[cfg(target_arch = "x86_64")]
        let runs = crate::simd::avx2();
        for i in 0..a.shape().0 {
            let mut pattern = 0u64;
            for (&r, &va) in ia[pa[i]..pa[i + 1]].iter().zip(&da[pa[i]..pa[i + 1]]) {
                // SAFETY: r is a column of a, below its column count, b's row count (asserted),
                // so r + 1 < pb.len(); b's row pointers increase up to nnz(b), the length of
                // `ib` and `db` (the Csr invariants).
                let (bi, bv) = unsafe {
                    let (b0, b1) = (*pb.get_unchecked(r), *pb.get_unchecked(r + 1));
                    (ib.get_unchecked(b0..b1), db.get_unchecked(b0..b1))
                };
                #[cfg(target_arch = "x86_64")]
                if runs && bi.len() >= RUN && bi[bi.len() - 1] - bi[0] == bi.len() - 1 {
                    // Consecutive columns j0..j0 + len (sorted, distinct): one vector run.
                    let (j0, len) = (bi[0], bi.len());
                    pattern |= (u64::MAX >> (64 - len)) << j0;
                    // SAFETY: the CPU has AVX2 and FMA (`runs`); j0 + len ≤ n = acc.len()
                    // (b's columns are below n), and `acc` does not overlap b's values.
                    unsafe {
                        crate::simd::add_scaled_run(acc.as_mut_ptr().add(j0), va, bv);
                    }
                    continue;
                }
                for (&j, &vb) in bi.iter().zip(bv) {
                    pattern |= 1 << (j % 64);
                    // SAFETY: j < n = acc.len() (the Csr invariant of b).
                    unsafe { *acc.get_unchecked_mut(j) += va * vb };
                }
            }
            out.word(0, pattern, acc);
            indptr.push(out.len);
        }
    }
}

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
const STREAM_EMIT_BYTES: usize = 16 << 20;

/// The rows of a Csr·Csr product being written into the reserved capacity of its arrays.
struct Emit<'a> {
    indices: &'a mut [std::mem::MaybeUninit<usize>],
    data: &'a mut [std::mem::MaybeUninit<c64>],
    /// Entries written so far (the next row pointer).
    len: usize,
    /// Write through non-temporal stores (then `data` starts on a 16-byte boundary, and the
    /// writer calls [`simd::nontemporal::fence`](crate::simd::nontemporal::fence) after the last row).
    stream: bool,
}

impl<'a> Emit<'a> {
    /// An emitter into the spare capacity of `indices` and `data`, streaming if they reserve
    /// at least [`STREAM_EMIT_BYTES`] and the values start on a 16-byte boundary.
    fn new(indices: &'a mut Vec<usize>, data: &'a mut Vec<c64>) -> Self {
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
    fn over(
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
    fn entry(&mut self, j: usize, v: c64) {
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
    fn word(&mut self, w: usize, bits: u64, acc: &mut [c64]) {
        if self.stream {
            self.word_as::<true>(w, bits, acc);
        } else {
            self.word_as::<false>(w, bits, acc);
        }
    }

    /// Writes the columns `cols` (increasing) with their accumulated values, zeroing those
    /// accumulators; the choice of stores is made once for the list.
    #[inline(always)]
    fn columns(&mut self, cols: &[usize], acc: &mut [c64]) {
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

/// Row by row: the products of row i, sorted by column and merged. For products whose columns
/// are so many that an accumulator row would cost more than the work itself.
fn matmul_csr_sorted(
    a: &Csr,
    b: &Csr,
    indptr: &mut Vec<usize>,
    indices: &mut Vec<usize>,
    data: &mut Vec<c64>,
) {
    let (pa, ia, da) = (a.indptr(), a.indices(), a.data());
    let (pb, ib, db) = (b.indptr(), b.indices(), b.data());
    let mut row: Vec<(usize, c64)> = Vec::new();
    for i in 0..a.shape().0 {
        row.clear();
        for ka in pa[i]..pa[i + 1] {
            let (r, va) = (ia[ka], da[ka]);
            row.extend((pb[r]..pb[r + 1]).map(|kb| (ib[kb], va * db[kb])));
        }
        crate::storage::csr_build::push_merged_row(&mut row, indices, data);
        indptr.push(indices.len());
    }
}

#[cfg(test)]
mod tests;
