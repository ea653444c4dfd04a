//! Csr⊗Csr → Csr, re-exported as [`kron::kron_csr`](super::kron_csr): rows written in order
//! without a sort, by several workers for large results.

use std::mem::MaybeUninit;

use rayon::prelude::*;

use crate::engine::{self, Family};
use crate::error::Result;
use crate::scalar::c64;
use crate::shape::{indptr_len, kron_shape, product};
use crate::storage::{Csr, alloc};

/// Csr⊗Csr; rows come out sorted without a sort. O(nnz(a)·nnz(b) + rows). Products that are
/// exactly zero (an explicit zero in an operand, or underflow) are not stored.
///
/// A result of many entries (twice the engine's threshold for Csr row kernels,
/// `engine::thresholds::CSR_ROWS`) is written by several threads, each taking a run of a's
/// rows with an equal share of the entries; the result is the serial one to the bit.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if the result's size overflows, [`Error::TooLarge`](crate::Error::TooLarge)
/// if it cannot be allocated.
pub fn kron_csr(a: &Csr, b: &Csr) -> Result<Csr> {
    const OP: &str = "kron";
    let shape = kron_shape(OP, a.shape(), b.shape())?;
    let nnz = product(OP, &[a.shape(), b.shape()], a.nnz(), b.nnz())?;
    let rows = indptr_len(OP, shape)?;
    let (mut indptr, mut indices, mut data) = alloc::csr::csr_buffers(OP, shape, rows, nnz)?;
    kron_csr_fill(
        a,
        b,
        &mut indices.spare_capacity_mut()[..nnz],
        &mut data.spare_capacity_mut()[..nnz],
        &mut indptr.spare_capacity_mut()[..rows],
    );
    // SAFETY: all nnz entries of both buffers and all `rows` row pointers were written above.
    unsafe {
        indptr.set_len(rows);
        indices.set_len(nnz);
        data.set_len(nnz);
    }
    // Products of non-zero values are non-zero unless they underflow: the scan over the result
    // (as long as the fill itself) is only needed when an input allows an exact zero.
    if !crate::storage::csr_build::products_nonzero(a.data(), b.data()) {
        crate::storage::csr_build::drop_exact_zeros(&mut indptr, &mut indices, &mut data);
    }
    // SAFETY: one pointer per result row (i·mb + k, in increasing order) after the leading 0
    // (`kron_csr_blocks`); within a row the columns ia[x]·nb + c increase strictly, since a's
    // columns increase from one run to the next and each run's b columns (below nb) increase.
    Ok(unsafe { Csr::from_parts_unchecked(shape, indptr, indices, data) })
}

/// The entries of a ⊗ b in row order into `indices` and `data` (each nnz(a)·nnz(b) long) and
/// its row pointers into `indptr` (ma·mb + 1 long); every slot of the three is written.
///
/// Each run (one entry of a times one row of b) is written in place without a capacity check
/// (1.5× faster than `extend` per run for tridiagonal factors). The AVX2 path writes a run two
/// entries at a time, values and columns in one loop (`simd::scale_run`, inlined into the
/// walk: 10 × 10 full factors 9.5–9.7 → 6.1–6.2 µs, tridiagonal 1.79–1.84 → 1.31–1.43 µs
/// against the compiler's vectorisation of the scalar loop), and holds a row of b of 2 to 4
/// entries (up to 10 when the result stays in the cache) in registers across the runs of a
/// block (`simd::kron_block`); its products are the
/// scalar ones to the bit (NaN as NaN). With the row pointers written in place instead of
/// pushed and the branch-free [`crate::storage::csr_build::products_nonzero`]: tridiagonal factors, result
/// 100 × 100 1.27–1.30 → 0.94–0.95 µs, 10⁴ × 10⁴ 115 → 85 µs (rows of 10: +3 % instructions).
/// When every row of b holds at most 3 entries, a row of a of 2 or 3 is held in registers
/// across the whole of b instead (`simd::kron_short_rows`): tridiagonal factors, result
/// 100 × 100 682 → 544 ns a call, 10⁴ × 10⁴ 63.6 → 49.6 µs.
fn kron_csr_fill(
    a: &Csr,
    b: &Csr,
    indices: &mut [MaybeUninit<usize>],
    data: &mut [MaybeUninit<c64>],
    indptr: &mut [MaybeUninit<usize>],
) {
    let (first, rest) = indptr
        .split_first_mut()
        .expect("kron_csr_fill: row pointers");
    first.write(0);
    let ma = a.shape().0;
    // A Csr row kernel, each written entry half a unit of its work: measured on two cores
    // (docs/benchmarks/tensor_and_dia.md), two threads pay from 2¹⁸–2¹⁹ entries with the heap reused (1.47–1.81× at 520 000), but
    // only from 2²⁰ when every result is a fresh mapping faulted in by both workers
    // (0.84–0.89× at 390 000–780 000, 1.66–1.68× from 1 040 000): 2²⁰ for CSR_ROWS's 2¹⁹.
    let workers = engine::workers(Family::CsrRows, indices.len() / 2);
    if workers <= 1 || ma < 2 {
        return kron_csr_rows(a, b, 0..ma, indices, data, rest);
    }
    // Pieces of a's rows with about equal shares of the result (a's entries times nnz(b)),
    // four a worker so that uneven rows even out; each piece writes its own slices.
    let (pa, mb, nnz_b) = (a.indptr(), b.shape().0, b.nnz());
    let pieces = workers.saturating_mul(4).min(ma);
    let mut parts = Vec::with_capacity(pieces);
    let (mut idx, mut val, mut ptr) = (indices, data, rest);
    let mut i0 = 0;
    for p in 1..=pieces {
        let target = (a.nnz() as u128 * p as u128 / pieces as u128) as usize;
        let i1 = if p == pieces {
            ma
        } else {
            pa.partition_point(|&x| x < target).clamp(i0, ma)
        };
        let len = (pa[i1] - pa[i0]) * nnz_b;
        let (piece_idx, rest_idx) = std::mem::take(&mut idx).split_at_mut(len);
        let (piece_val, rest_val) = std::mem::take(&mut val).split_at_mut(len);
        let (piece_ptr, rest_ptr) = std::mem::take(&mut ptr).split_at_mut((i1 - i0) * mb);
        (idx, val, ptr) = (rest_idx, rest_val, rest_ptr);
        if i1 > i0 {
            parts.push((i0..i1, piece_idx, piece_val, piece_ptr));
        }
        i0 = i1;
    }
    parts
        .into_par_iter()
        .for_each(|(rows, idx, val, ptr)| kron_csr_rows(a, b, rows, idx, val, ptr));
}

/// Rows `rows` of a's block rows of a ⊗ b: their entries into `indices` and `data` (each
/// (pa\[rows.end\] − pa\[rows.start\])·nnz(b) long) and their row pointers into `indptr`
/// (rows.len()·mb long: the pointers after result rows rows.start·mb .. rows.end·mb); every
/// slot of the three is written.
fn kron_csr_rows(
    a: &Csr,
    b: &Csr,
    rows: std::ops::Range<usize>,
    indices: &mut [MaybeUninit<usize>],
    data: &mut [MaybeUninit<c64>],
    indptr: &mut [MaybeUninit<usize>],
) {
    let pa = a.indptr();
    let nnz = indices.len().min(data.len());
    assert!(
        (pa[rows.end] - pa[rows.start]).checked_mul(b.nnz()) == Some(nnz),
        "kron_csr_rows: buffers of the wrong length"
    );
    let (out_idx, out_val) = (
        indices.as_mut_ptr().cast::<usize>(),
        data.as_mut_ptr().cast::<c64>(),
    );
    #[cfg(target_arch = "x86_64")]
    if crate::simd::avx2() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above); both buffers hold the rows'
        // entries (asserted).
        return unsafe { kron_csr_fill_v3(a, b, rows, out_idx, out_val, indptr) };
    }
    // With `step` = b's column count, a block of a's row times b's; with 1, the roles swapped.
    let runs = |pos: usize, step: usize, (ra, rv): Row<'_>, (bi, bv): Row<'_>| {
        let mut pos = pos;
        for (&ca, &va) in ra.iter().zip(rv) {
            for (k, (&c, &v)) in bi.iter().zip(bv).enumerate() {
                // SAFETY: `kron_csr_blocks` hands out disjoint blocks covering the rows'
                // entries, the length of both buffers (asserted), so pos + k is in bounds.
                unsafe {
                    out_idx.add(pos + k).write(ca * step + c);
                    out_val.add(pos + k).write(va * v);
                }
            }
            pos += bv.len();
        }
    };
    let nb = b.shape().1;
    let block = |pos, a_row: Row<'_>, b_row: Row<'_>| runs(pos, nb, a_row, b_row);
    let swapped = |pos, b_col: Row<'_>, a_row: Row<'_>| runs(pos, 1, b_col, a_row);
    kron_csr_blocks(
        a,
        b,
        rows,
        indptr,
        block,
        swapped,
        |pos, s, x, idx, base| {
            for (k, (&v, &c)) in x.iter().zip(idx).enumerate() {
                // SAFETY: `kron_csr_blocks` hands out disjoint runs inside the rows' entries, the
                // length of both buffers (asserted).
                unsafe {
                    out_idx.add(pos + k).write(base + c);
                    out_val.add(pos + k).write(s * v);
                }
            }
        },
        |_, _, _, _| None,
    )
}

/// Results of at most this many entries (24 bytes each: 3 MiB, about the L2 of one core
/// with room for the factors) let `simd::kron_block` hold rows of b of 5 to 10 entries in
/// registers.
#[cfg(target_arch = "x86_64")]
const LONG_ROWS_MAX_ENTRIES: usize = 1 << 17;

/// [`kron_csr_rows`] on the AVX2 path.
///
/// # Safety
/// The CPU has AVX2 and FMA; `out_idx` and `out_val` are valid for the rows' entries
/// ((pa\[rows.end\] − pa\[rows.start\])·nnz(b) writes).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn kron_csr_fill_v3(
    a: &Csr,
    b: &Csr,
    rows: std::ops::Range<usize>,
    out_idx: *mut usize,
    out_val: *mut c64,
    indptr: &mut [MaybeUninit<usize>],
) {
    // Rows of b of 5 to 10 entries held in registers pay while the result stays in the cache
    // (`simd::kron_block`).
    let long_rows = a.nnz().saturating_mul(b.nnz()) <= LONG_ROWS_MAX_ENTRIES;
    // Every row of b short (banded factors): rows of a of 2 or 3 entries hold their values in
    // registers across b's rows (`simd::kron_short_rows`). Found at the first such row of a,
    // so that a factor whose rows of a all hold one entry (I ⊗ H) skips the pass over b.
    let mut short_b = None;
    let nb = b.shape().1;
    kron_csr_blocks(
        a,
        b,
        rows,
        indptr,
        |pos, (ra, rv), (bi, bv)| {
            // SAFETY: this function's features; the block pos..pos + ra.len()·bv.len() is in
            // bounds (see the scalar path), the outputs do not overlap the inputs, and every
            // column ra[x]·nb + bi[y] is one of the result's.
            unsafe {
                crate::simd::kron_block(
                    out_val.add(pos),
                    out_idx.add(pos),
                    nb,
                    (ra, rv),
                    (bi, bv),
                    long_rows,
                )
            }
        },
        |pos, b_col, a_row| {
            // SAFETY: this function's features; the block pos..pos + nnz(b)·a_row.len() is in
            // bounds (see the scalar path), the outputs do not overlap the inputs, and every
            // column b's column + a's column·nb is one of the result's.
            unsafe {
                crate::simd::kron_block_swapped(out_val.add(pos), out_idx.add(pos), b_col, a_row)
            }
        },
        |pos, s, x, idx, base| {
            // SAFETY: this function's features; the run pos..pos + x.len() is in bounds (see
            // the scalar path), `idx` is as long as `x`, the outputs do not overlap the
            // inputs, and every column base + idx[k] is below the result's column count.
            unsafe { crate::simd::scale_run(out_val.add(pos), out_idx.add(pos), s, x, idx, base) }
        },
        |pos, (ra, rv), ptrs, first| {
            if !(2..=3).contains(&ra.len())
                || !*short_b.get_or_insert_with(|| {
                    let mut rows = b.indptr().windows(2);
                    rows.all(|w| w[1] - w[0] <= crate::simd::SHORT_ROW)
                })
            {
                return None;
            }
            let b_parts = (b.indptr(), b.indices(), b.data());
            // SAFETY: this function's features; b's rows hold at most SHORT_ROW entries
            // (`short_b`), `ptrs` has one slot per row of b (`kron_csr_blocks`), the block row
            // pos..pos + ra.len()·nnz(b) is in bounds (see the scalar path), the outputs do
            // not overlap the inputs, and every column ra[x]·nb + b's column is one of the
            // result's.
            unsafe {
                let (vals, cols) = (out_val.add(pos), out_idx.add(pos));
                crate::simd::kron_short_rows(vals, cols, nb, (ra, rv), b_parts, ptrs, first)
            }
        },
    )
}

/// Rows of a of at most this many entries take the one-block-per-row path when every row of b
/// holds one entry (`kron_csr_blocks`): their columns times nb are kept on the stack.
const ROW_CHUNK: usize = 64;

/// A row of a Csr factor as the writers of [`kron_csr_blocks`] take it: columns and values.
type Row<'a> = (&'a [usize], &'a [c64]);

/// Walks the block rows `rows` of a ⊗ b (those of a's rows `rows`) in row order, writing
/// their rows.len()·mb row pointers to `indptr` (the pointer after each of their rows, as the
/// whole result's; panics if `indptr` has another length) and handing the entries to three
/// writers, which between them write each position of `0..(pa[rows.end] −
/// pa[rows.start])·nnz(b)` once (positions relative to the first of these rows' entries):
///
/// - `block(pos, (ra, rv), (bi, bv))` writes, at `pos..pos + ra.len()·bv.len()`, one run
///   per entry (ca, va) of a's row: the values `va · bv` with columns `ca·nb + bi`;
/// - `swapped(pos, (bi, bv), (ac, av))` writes, at `pos..pos + bi.len()·av.len()`, one run per
///   entry (c, v) of b: the values `v · av` with columns `c + ac` (b's values times a's: the
///   same bits as a's times b's but for a NaN's payload);
/// - `run(pos, s, x, idx, base)` writes, at `pos..pos + x.len()`, the values `s · x` and the
///   columns `base + idx` (`idx.len() == x.len()`);
/// - `short(pos, (ra, rv), ptrs, first)` may write a whole block row, the `block`s of a's row
///   with each row of b in turn from `pos`, and `ptrs[k] = first + the entries written up to
///   b's row k`; it returns `Some(entries written)` if it did, `None` (having written nothing)
///   to leave the row to `block`.
///
/// The rows of the result are row k of b's block for each row i of a. Two shapes of factor,
/// those of tensor products of local operators (identities, Pauli matrices, diagonal and
/// permutation factors), make fewer and longer writes than one block per row of the result:
///
/// - **A row of a with one entry** (ca, va): the mb rows of its block row are `va · b` with
///   columns shifted by ca·nb, one `run` over all of b's entries. `I ⊗ B` and `σx ⊗ B` are
///   nnz(a) such runs.
/// - **Every row of b with one entry** (bi\[k], bv\[k]): row (i, k) of the result is a's row i
///   scaled by bv\[k], with columns `ra·nb + bi[k]`. The mb rows of the block row are one
///   `swapped` block: runs of a's row (its columns times nb, computed once) for the entries of
///   b. Rows of a longer than [`ROW_CHUNK`] take the general path.
///
/// Every other row of a is offered to `short` whole, and makes one `block` per row of b where
/// `short` declines it.
#[inline(always)]
// The walk and its four writers, each a closure the two fills (AVX2, portable) inline.
#[allow(clippy::too_many_arguments)]
fn kron_csr_blocks(
    a: &Csr,
    b: &Csr,
    rows: std::ops::Range<usize>,
    indptr: &mut [MaybeUninit<usize>],
    mut block: impl FnMut(usize, Row<'_>, Row<'_>),
    mut swapped: impl FnMut(usize, Row<'_>, Row<'_>),
    mut run: impl FnMut(usize, c64, &[c64], &[usize], usize),
    mut short: impl FnMut(usize, Row<'_>, &mut [MaybeUninit<usize>], usize) -> Option<usize>,
) {
    let (ma, mb) = (a.shape().0, b.shape().0);
    let nb = b.shape().1;
    let (pa, ia, da) = (a.indptr(), a.indices(), a.data());
    let (pb, ib, db) = (b.indptr(), b.indices(), b.data());
    assert!(
        rows.start <= rows.end && rows.end <= ma,
        "kron_csr_blocks: rows of a"
    );
    assert_eq!(
        indptr.len(),
        rows.len() * mb,
        "kron_csr_blocks: row pointers"
    );
    assert_eq!(pb.len(), mb + 1, "kron_csr_blocks: b's row pointers");
    // One entry in every row of b: its row pointers are 0, 1, …, mb.
    let b_single = pb.iter().enumerate().all(|(k, &p)| p == k);
    // The row pointers count the whole result's entries: those of a's rows before `rows`.
    let base = pa[rows.start] * db.len();
    let mut pos = 0usize;
    // Not zeroed (512 bytes on every call, for a path most calls do not take): only the
    // first ra.len() entries are ever read, after being written.
    let mut scaled = [MaybeUninit::<usize>::uninit(); ROW_CHUNK];
    for (i, out) in rows.zip(indptr.chunks_exact_mut(mb.max(1))) {
        let (ra, rv) = (&ia[pa[i]..pa[i + 1]], &da[pa[i]..pa[i + 1]]);
        let len = ra.len();
        if let ([ca], [va]) = (ra, rv) {
            // The whole of b, scaled by va, columns shifted by ca·nb.
            run(pos, *va, db, ib, ca * nb);
            for (ptr, &p) in out.iter_mut().zip(&pb[1..]) {
                ptr.write(base + pos + p);
            }
            pos += db.len();
        } else if b_single && (2..=ROW_CHUNK).contains(&len) {
            for (s, &c) in scaled.iter_mut().zip(ra) {
                s.write(c * nb);
            }
            // SAFETY: the first len ≤ ROW_CHUNK entries were written just above (`ra` has len
            // entries); `MaybeUninit<usize>` has the layout of `usize`.
            let scaled =
                unsafe { std::slice::from_raw_parts(scaled.as_ptr().cast::<usize>(), len) };
            // Row (i, k): b's entry k times a's row, columns ib[k] + ra·nb.
            swapped(pos, (ib, db), (scaled, rv));
            for ptr in out.iter_mut() {
                pos += len;
                ptr.write(base + pos);
            }
        } else if let Some(written) = short(pos, (ra, rv), &mut *out, base + pos) {
            pos += written;
        } else {
            for (k, ptr) in out.iter_mut().enumerate() {
                // SAFETY: k < mb, so k + 1 < pb.len() (asserted); a valid Csr's row pointers
                // are non-decreasing and at most nnz(b), the length of `ib` and `db`.
                let (bi, bv) = unsafe {
                    let (b0, b1) = (*pb.get_unchecked(k), *pb.get_unchecked(k + 1));
                    (ib.get_unchecked(b0..b1), db.get_unchecked(b0..b1))
                };
                block(pos, (ra, rv), (bi, bv));
                pos += len * bv.len();
                ptr.write(base + pos);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scalar::c64;

    fn csr(values: &[c64]) -> Csr {
        let n = values.len();
        let idx: Vec<usize> = (0..n).collect();
        Csr::from_triplets((n, n), &idx, &idx, values).unwrap()
    }

    #[test]
    fn products_that_cannot_vanish_skip_the_zero_scan() {
        let z = |re, im| c64::new(re, im);
        assert!(crate::storage::csr_build::products_nonzero(
            &[z(1.0, 1.0)],
            &[z(1.0, -1.0)]
        ));
        assert!(crate::storage::csr_build::products_nonzero(
            &[z(0.0, 1e-140)],
            &[z(1e-140, 0.0)]
        ));
        // An exact zero, or partial products that underflow, need the scan.
        assert!(!crate::storage::csr_build::products_nonzero(
            &[z(0.0, 0.0)],
            &[z(1.0, 0.0)]
        ));
        assert!(!crate::storage::csr_build::products_nonzero(
            &[z(1e-200, 0.0)],
            &[z(0.0, 1e-200)]
        ));
        assert!(crate::storage::csr_build::products_nonzero(
            &[z(f64::NAN, 0.0)],
            &[z(1.0, 0.0)]
        ));
    }

    /// Entries drawn from signed zeros, infinities, subnormals, NaN and ordinary values.
    fn special(k: usize) -> c64 {
        let special = [1.5, -0.0, f64::INFINITY, 1e-310, -2.25, f64::NAN, 3.0, 0.5];
        c64::new(special[k % 8], special[(k * 5 + 3) % 8])
    }

    /// `kron_csr` on both instances of the fill (AVX2, the scalar loop) against the
    /// definition, to the bit (NaN as NaN: the vector `addsub` and the scalar difference may
    /// give it another sign, and a run scaled by b's entry multiplies in the other order), and
    /// the two instances against each other.
    fn check_against_definition(a: &Csr, b: &Csr) {
        let fast = kron_csr(a, b).unwrap();
        let slow = crate::simd::baseline(|| kron_csr(a, b)).unwrap();
        let part = |x: f64| if x.is_nan() { u64::MAX } else { x.to_bits() };
        // Every pair of stored entries whose product is not an exact zero (subnormal products
        // underflow) is stored, with the product's bits.
        let zero = c64::new(0.0, 0.0);
        let kept = a
            .data()
            .iter()
            .flat_map(|&x| b.data().iter().map(move |&y| x * y));
        let kept = kept.filter(|&z| z != zero).count();
        let ((ma, na), (mb, nb)) = (a.shape(), b.shape());
        for k in [&fast, &slow] {
            assert_eq!(k.shape(), (ma * mb, na * nb));
            assert_eq!(k.nnz(), kept);
            for i in 0..ma * mb {
                let row = &k.indices()[k.indptr()[i]..k.indptr()[i + 1]];
                assert!(row.windows(2).all(|w| w[0] < w[1]), "row {i}: {row:?}");
                for p in k.indptr()[i]..k.indptr()[i + 1] {
                    let (j, v) = (k.indices()[p], k.data()[p]);
                    let want = a.get(i / mb, j / nb) * b.get(i % mb, j % nb);
                    let same = (part(v.re), part(v.im)) == (part(want.re), part(want.im));
                    assert!(same, "({i}, {j}): {v} against {want}");
                }
            }
        }
        assert_eq!(fast.indptr(), slow.indptr());
        assert_eq!(fast.indices(), slow.indices());
        let parts =
            |k: &Csr| -> Vec<_> { k.data().iter().map(|z| (part(z.re), part(z.im))).collect() };
        assert_eq!(parts(&fast), parts(&slow));
    }

    /// Both instances of the fill against the definition: rows of b of every length from 0
    /// to 5 (odd runs end in the one-entry tail), rows of a of 0 to 4 entries, rectangular
    /// factors.
    #[test]
    fn kron_csr_fill_matches_the_definition_on_both_instances() {
        // b: 6 × 7, row r holding r entries (0..=5) at scattered columns.
        let (mut bi, mut bj, mut bv) = (vec![], vec![], vec![]);
        for r in 0..6 {
            for t in 0..r {
                bi.push(r);
                bj.push((t * 3 + r) % 7);
                bv.push(special(bv.len()));
            }
        }
        let b = Csr::from_triplets((6, 7), &bi, &bj, &bv).unwrap();
        // a: rows of 3, 0, 2, 1 and 4 entries, so that every unrolled instance of the AVX2
        // block (a's row of 2 or 3 entries, b's of 2 or 3) and the looped ones meet.
        let a = Csr::from_triplets(
            (5, 4),
            &[0, 0, 0, 2, 2, 3, 4, 4, 4, 4],
            &[0, 1, 3, 2, 3, 1, 0, 1, 2, 3],
            &(0..10).map(|k| special(k * 3 + 1)).collect::<Vec<_>>(),
        )
        .unwrap();
        check_against_definition(&a, &b);
        check_against_definition(&b, &a);
        // b's rows of 0 to 3 entries only (`simd::SHORT_ROW`): a's rows of 2 and 3 entries
        // take the block row held in registers (`simd::kron_short_rows`), in several orders of
        // b's row lengths (1 and 3 end in the one-entry tail, 0 writes nothing).
        for lengths in [[3, 0, 2, 1], [1, 3, 3, 2], [2, 2, 0, 3], [0, 1, 1, 0]] {
            let (mut si, mut sj, mut sv) = (vec![], vec![], vec![]);
            for (r, len) in lengths.into_iter().enumerate() {
                for t in 0..len {
                    si.push(r);
                    sj.push((t * 2 + r) % 5);
                    sv.push(special(sv.len() * 3 + r + 1));
                }
            }
            let short = Csr::from_triplets((4, 5), &si, &sj, &sv).unwrap();
            check_against_definition(&a, &short);
            check_against_definition(&short, &a);
            check_against_definition(&short, &short);
        }
    }

    /// The two other paths of `kron_csr_blocks`: rows of a with one entry (the whole of b in
    /// one run), and b with one entry in every row (one block per row of a, roles swapped), with
    /// rows of a of 0 to 5, 64 (`ROW_CHUNK`) and 70 entries (past it: the block path),
    /// identities, a Pauli-like permutation and rectangular factors, both orders.
    #[test]
    fn kron_runs_of_one_entry_rows_match_the_definition() {
        // A permutation-like 5 × 6 factor with one entry a row (special values).
        let p = Csr::from_triplets(
            (5, 6),
            &[0, 1, 2, 3, 4],
            &[4, 0, 5, 2, 1],
            &(0..5).map(|k| special(k * 7 + 2)).collect::<Vec<_>>(),
        )
        .unwrap();
        // Rows of 0 to 5, 64 and 70 entries over 71 columns.
        let (mut ai, mut aj, mut av) = (vec![], vec![], vec![]);
        for (r, len) in [0usize, 1, 2, 3, 4, 5, ROW_CHUNK, 70]
            .into_iter()
            .enumerate()
        {
            for t in 0..len {
                ai.push(r);
                aj.push((t * 5 + r) % 71);
                av.push(special(av.len() * 3 + r));
            }
        }
        let a = Csr::from_triplets((8, 71), &ai, &aj, &av).unwrap();
        let sx = Csr::from_triplets(
            (2, 2),
            &[0, 1],
            &[1, 0],
            &[c64::new(1.0, 0.0), c64::new(-0.0, 1.0)],
        )
        .unwrap();
        let tri = Csr::from_triplets(
            (3, 3),
            &[0, 0, 1, 1, 1, 2, 2],
            &[0, 1, 0, 1, 2, 1, 2],
            &(0..7).map(|k| special(k + 5)).collect::<Vec<_>>(),
        )
        .unwrap();
        let factors = [p, a, sx, tri, Csr::identity(3), Csr::identity(1)];
        for x in &factors {
            for y in &factors {
                check_against_definition(x, y);
            }
        }
    }

    /// Factors with no rows, no columns or no entries: the right shape, every row pointer
    /// written (all zero), no entries; an empty row of a between full ones keeps its block of
    /// rows empty.
    #[test]
    fn kron_csr_of_empty_factors_and_rows() {
        let one = c64::new(2.0, -1.0);
        let full = |m: usize, n: usize| {
            let (r, c): (Vec<usize>, Vec<usize>) =
                (0..m * n).map(|k| (k / n.max(1), k % n.max(1))).unzip();
            Csr::from_triplets((m, n), &r, &c, &vec![one; m * n]).unwrap()
        };
        for ((ma, na), (mb, nb)) in [
            ((0, 3), (2, 2)),
            ((2, 2), (0, 3)),
            ((3, 0), (2, 2)),
            ((2, 2), (3, 0)),
            ((0, 0), (0, 0)),
        ] {
            let k = kron_csr(&full(ma, na), &full(mb, nb)).unwrap();
            assert_eq!(k.shape(), (ma * mb, na * nb));
            assert_eq!(k.nnz(), 0);
            assert_eq!(k.indptr(), vec![0; ma * mb + 1].as_slice());
        }
        let zeros = Csr::from_triplets((2, 2), &[], &[], &[]).unwrap();
        assert_eq!(kron_csr(&zeros, &full(3, 3)).unwrap().indptr(), &[0; 7]);
        // a with its middle row empty.
        let a = Csr::from_triplets((3, 2), &[0, 2], &[1, 0], &[one, one]).unwrap();
        let k = kron_csr(&a, &full(2, 3)).unwrap();
        assert_eq!(k.indptr(), &[0, 3, 6, 6, 6, 9, 12]);
        assert_eq!(k.indices(), &[3, 4, 5, 3, 4, 5, 0, 1, 2, 0, 1, 2]);
        assert!(k.data().iter().all(|&v| v == one * one));
    }

    #[test]
    fn kron_drops_products_that_underflow_to_zero() {
        let tiny = c64::new(1e-200, 0.0);
        let a = csr(&[tiny, c64::new(1.0, 0.0)]);
        let k = kron_csr(&a, &a).unwrap();
        // 1e-200 · 1e-200 underflows to 0 and is not stored; the other three products are.
        assert_eq!(k.nnz(), 3);
        assert_eq!(k.get(0, 0), c64::new(0.0, 0.0));
        assert_eq!(k.get(1, 1), tiny);
        // Without tiny values the scan is skipped and every product is kept.
        let b = csr(&[c64::new(2.0, 0.0), c64::new(0.0, 3.0)]);
        let k = kron_csr(&b, &b).unwrap();
        assert_eq!(k.nnz(), 4);
        assert_eq!(k.get(3, 3), c64::new(-9.0, 0.0));
    }
}
