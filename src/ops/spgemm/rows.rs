//! The row kernel of a Csr·Csr product: Gustavson's accumulation row by row, each row's
//! columns emitted in order by the cheapest of four ways for its shape.

use std::ops::Range;

use super::emit::Emit;
use super::scratch::{RowPointers, Scratch};
use crate::scalar::{ZERO, c64};
use crate::storage::Csr;

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
    pub(super) fn gustavson_rows(
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
pub(super) fn list_columns(seen: &mut [u64], span: (usize, usize), list: &mut [usize]) -> usize {
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
