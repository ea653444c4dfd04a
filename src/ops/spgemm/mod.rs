//! Csr·Csr → Csr: Gustavson's row-by-row product, re-exported as
//! [`matmul::matmul_csr`](super::matmul::matmul_csr) and registered in the `matmul` dispatcher.

use crate::engine::{self, Family};
use crate::error::Result;
use crate::scalar::{ZERO, c64};
use crate::shape::{indptr_len, matmul_shapes};
use crate::storage::{Csr, alloc};

mod emit;
mod parallel;
mod rows;
mod scratch;

use emit::Emit;
use rows::gustavson_rows;
use scratch::{RowPointers, ScratchBuffers};

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
        alloc::csr::csr_buffers(OP, (m, n), indptr_len(OP, (m, n))?, cap)?;
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
