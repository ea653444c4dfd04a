//! The runs of the Csr Kronecker product and of a Csr·Csr row on the AVX2 path: scaled values
//! and offset columns in one loop (`scale_run`), `acc += s·y` over a run of consecutive
//! columns (`add_scaled_run`), and whole blocks of the Kronecker product with b's row in
//! registers (`kron_block`, `kron_block_swapped`, `kron_short_rows`); every product bit for
//! bit the scalar one.
//!
//! In `std::arch`, x86-64 only: they are inlined into callers compiled by
//! [`avx2_fn!`](super::avx2_fn) (the Kronecker and Csr·Csr fills) and store 128-bit halves
//! and column indices in vector registers, which pulp's portable API does not offer. On
//! aarch64 those callers take their plain loops, which the compiler vectorises for NEON, the
//! baseline there.

#![cfg(target_arch = "x86_64")]

use std::mem::MaybeUninit;

use crate::scalar::c64;

/// One run of a Kronecker product: `vals[k] = s·x[k]` (as [`scale_into`], bit for bit the
/// scalar product) and `cols[k] = base + idx[k]` for every `k < x.len()`, on the AVX2 path.
///
/// Meant to be inlined into a caller compiled for the same features (the Csr Kronecker fill),
/// so that a short run costs no call.
///
/// # Safety
/// The CPU has AVX2 and FMA; `vals` and `cols` are valid for `x.len()` writes and do not
/// overlap `x` or `idx`; `idx.len() >= x.len()`.
#[target_feature(enable = "avx2,fma")]
#[inline]
pub(crate) unsafe fn scale_run(
    vals: *mut c64,
    cols: *mut usize,
    s: c64,
    x: &[c64],
    idx: &[usize],
    base: usize,
) {
    use std::arch::x86_64::*;
    let n = x.len();
    debug_assert!(idx.len() >= n);
    let (px, pi) = (x.as_ptr().cast::<f64>(), idx.as_ptr());
    let (sr, si) = (_mm256_set1_pd(s.re), _mm256_set1_pd(s.im));
    // `usize` is 64 bits on x86-64; the sum wraps as `usize` addition would not, but the
    // caller's columns are below the result's column count, which fits in `usize`.
    let vb = _mm_set1_epi64x(base as i64);
    let mut k = 0;
    while k + 2 <= n {
        // SAFETY: entries k..k + 2 exist in `x` and `idx` and may be written in `vals` and
        // `cols` (the caller's contract); `Complex<f64>` is two packed doubles; unaligned
        // accesses.
        unsafe {
            let r = avx::product(sr, si, _mm256_loadu_pd(px.add(2 * k)));
            _mm256_storeu_pd(vals.add(k).cast::<f64>(), r);
            let c = _mm_loadu_si128(pi.add(k).cast::<__m128i>());
            _mm_storeu_si128(cols.add(k).cast::<__m128i>(), _mm_add_epi64(c, vb));
        }
        k += 2;
    }
    if k < n {
        // SAFETY: as above, for the last entry.
        unsafe {
            vals.add(k).write(s * *x.get_unchecked(k));
            cols.add(k).write(base + *idx.get_unchecked(k));
        }
    }
}

/// `acc[k] += s·y[k]` for every `k < y.len()`, on the AVX2 path: bit for bit the scalar
/// `*acc += s * y` (the product as [`scale_into`]'s, then the sum). For contiguous runs of
/// columns in a sparse accumulation (a Csr·Csr row of b whose columns are consecutive).
///
/// # Safety
/// The CPU has AVX2 and FMA; `acc` is valid for reads and writes of `y.len()` elements and
/// does not overlap `y`.
#[target_feature(enable = "avx2,fma")]
#[inline]
pub(crate) unsafe fn add_scaled_run(acc: *mut c64, s: c64, y: &[c64]) {
    use std::arch::x86_64::*;
    let n = y.len();
    let (py, pa) = (y.as_ptr().cast::<f64>(), acc.cast::<f64>());
    let (sr, si) = (_mm256_set1_pd(s.re), _mm256_set1_pd(s.im));
    let mut k = 0;
    while k + 2 <= n {
        // SAFETY: entries k..k + 2 exist in `y` and `acc` (the caller's contract); unaligned.
        unsafe {
            let sv = avx::product(sr, si, _mm256_loadu_pd(py.add(2 * k)));
            _mm256_storeu_pd(
                pa.add(2 * k),
                _mm256_add_pd(_mm256_loadu_pd(pa.add(2 * k)), sv),
            );
        }
        k += 2;
    }
    if k < n {
        // SAFETY: as above, for the last entry.
        unsafe { *acc.add(k) += s * *y.get_unchecked(k) };
    }
}

/// One block of a Csr Kronecker product (row i of a with row k of b): for each entry x of a's
/// row, the run `vals[x·L + y] = rv[x]·bv[y]`, `cols[x·L + y] = ra[x]·nb + bi[y]` with
/// `L = bv.len()`; every product bit for bit the scalar one.
///
/// Rows of b of 2, 3 or 4 entries (banded factors, the common case) keep b's values, their
/// swapped halves and columns in registers across the block's runs, so a run is two
/// broadcasts, two or four multiplies, one or two `addsub`s and the stores, with no per-run
/// loop. With `long_rows`, rows of 5 to 10 entries do too (one `addsub` per two entries, some
/// of the columns spilled to the stack): the product of two 10 × 10 factors of 10 entries a
/// row 5.58 → 4.94 µs, of two 31 × 31 of about 8.5 45 → 37 µs. The product of two
/// 100 × 100 (a 22 MB result, written at the speed of memory) was 5 % slower that way (0.89
/// against 0.85 ms), so the caller asks for it only when the result stays in the cache.
/// Other rows take [`scale_run`] per run. A block of a row of a of 2 or 3 entries and a
/// row of b of 2 or 3 (tridiagonal factors) runs an instance unrolled for those lengths, with
/// neither a loop over the runs nor a test of their length: the fill of two 10 × 10
/// tridiagonal factors 12 146 → 10 521 instructions (specialised on b's row alone, with a's
/// loop kept, it had cost 5 % more).
///
/// # Safety
/// The CPU has AVX2 and FMA; `vals` and `cols` are valid for `ra.len()·bv.len()` writes and
/// do not overlap the inputs; `rv.len() == ra.len()`, `bi.len() == bv.len()`, and every
/// `ra[x]·nb + bi[y]` fits in `usize`.
#[target_feature(enable = "avx2,fma")]
#[inline]
pub(crate) unsafe fn kron_block(
    vals: *mut c64,
    cols: *mut usize,
    nb: usize,
    (ra, rv): (&[usize], &[c64]),
    (bi, bv): (&[usize], &[c64]),
    long_rows: bool,
) {
    let l = bv.len();
    debug_assert!(rv.len() == ra.len() && bi.len() == l);
    if l < 2 || l > if long_rows { 10 } else { 4 } {
        for (x, (&ca, &va)) in ra.iter().zip(rv).enumerate() {
            // SAFETY: run x lies at x·l..(x + 1)·l inside the block (the caller's contract).
            unsafe { scale_run(vals.add(x * l), cols.add(x * l), va, bv, bi, ca * nb) };
        }
        return;
    }
    // SAFETY: the caller's contract, and l = LB in each arm; a row of a of 2 or 3 entries
    // (banded factors) takes an instance whose runs are unrolled, without a loop or a test of
    // the run's length (LA = 0: any length of a's row).
    unsafe {
        match (ra.len(), l) {
            (2, 2) => kron_runs::<2, 2>(vals, cols, nb, ra, rv, bi, bv),
            (2, 3) => kron_runs::<2, 3>(vals, cols, nb, ra, rv, bi, bv),
            (3, 2) => kron_runs::<3, 2>(vals, cols, nb, ra, rv, bi, bv),
            (3, 3) => kron_runs::<3, 3>(vals, cols, nb, ra, rv, bi, bv),
            (_, 2) => kron_runs::<0, 2>(vals, cols, nb, ra, rv, bi, bv),
            (_, 3) => kron_runs::<0, 3>(vals, cols, nb, ra, rv, bi, bv),
            (_, 4) => kron_runs::<0, 4>(vals, cols, nb, ra, rv, bi, bv),
            (_, 5) => kron_runs::<0, 5>(vals, cols, nb, ra, rv, bi, bv),
            (_, 6) => kron_runs::<0, 6>(vals, cols, nb, ra, rv, bi, bv),
            (_, 7) => kron_runs::<0, 7>(vals, cols, nb, ra, rv, bi, bv),
            (_, 8) => kron_runs::<0, 8>(vals, cols, nb, ra, rv, bi, bv),
            (_, 9) => kron_runs::<0, 9>(vals, cols, nb, ra, rv, bi, bv),
            _ => kron_runs::<0, 10>(vals, cols, nb, ra, rv, bi, bv),
        }
    }
}

/// A block of a Csr Kronecker product with the factors' roles swapped (every row of b holds
/// one entry): for each entry x of `(bi, bv)` (b's entries, one a row of the result), the run
/// `vals[x·L + y] = bv[x]·av[y]`, `cols[x·L + y] = bi[x] + ac[y]` with `L = av.len()` and `ac`
/// a's columns already times b's column count. A row of a of 2 to 4 entries is held in
/// registers across the runs ([`kron_runs`]); longer ones take [`scale_run`] per run. Each
/// product is the scalar `bv[x] * av[y]` to the bit.
///
/// Kept out of line, and away from [`kron_block`]: a second call of that kernel in the Csr
/// fill's walk stopped the compiler from inlining it there (two tridiagonal 10 × 10 factors
/// 0.57 → 0.83 µs a call).
///
/// # Safety
/// The CPU has AVX2 and FMA; `vals` and `cols` are valid for `bi.len()·av.len()` writes and
/// do not overlap the inputs; `bv.len() == bi.len()`, `ac.len() == av.len()`, and every
/// `bi[x] + ac[y]` fits in `usize`.
#[target_feature(enable = "avx2,fma")]
#[inline(never)]
pub(crate) unsafe fn kron_block_swapped(
    vals: *mut c64,
    cols: *mut usize,
    (bi, bv): (&[usize], &[c64]),
    (ac, av): (&[usize], &[c64]),
) {
    let l = av.len();
    debug_assert!(bv.len() == bi.len() && ac.len() == l);
    // SAFETY: the caller's contract; kron_runs with nb = 1 computes the columns bi[x] + ac[y],
    // and l = LB in each arm.
    unsafe {
        match l {
            2 => kron_runs::<0, 2>(vals, cols, 1, bi, bv, ac, av),
            3 => kron_runs::<0, 3>(vals, cols, 1, bi, bv, ac, av),
            4 => kron_runs::<0, 4>(vals, cols, 1, bi, bv, ac, av),
            _ => {
                for (x, (&c, &v)) in bi.iter().zip(bv).enumerate() {
                    scale_run(vals.add(x * l), cols.add(x * l), v, av, ac, c);
                }
            }
        }
    }
}

/// Rows of b of at most this many entries let [`kron_short_rows`] take a block row.
pub(crate) const SHORT_ROW: usize = 3;

/// A whole block row of a Csr Kronecker product for a row of a of 2 or 3 entries and a b
/// whose rows all hold at most [`SHORT_ROW`] entries (banded factors: tridiagonal, `a + a†`):
/// for each row k of b in turn, the [`kron_block`] of a's row with it, then `ptrs[k] = first
/// + the entries written so far`. Returns the number of entries written (ra.len()·nnz(b)), or
/// `None`, having written nothing, for a row of a of another length.
///
/// a's row is held in registers (both parts of each value broadcast, each column times nb)
/// across all of b's rows, where [`kron_block`] takes them again for every block, and a
/// block is picked by b's row length alone (a test, not [`kron_block`]'s jump table on both
/// lengths). Each product is the scalar `ra[x]'s value · b's value` to the bit, as there.
///
/// # Safety
/// The CPU has AVX2 and FMA; `ra.len() == rv.len()`; `(pb, ib, db)` are a valid Csr's row
/// pointers, columns and values with every row of at most [`SHORT_ROW`] entries and
/// `ptrs.len() + 1 == pb.len()`; `vals` and `cols` are valid for ra.len()·nnz(b) writes and
/// do not overlap the inputs; every `ra[x]·nb + ib[y]` fits in `usize`.
#[target_feature(enable = "avx2,fma")]
#[inline]
pub(crate) unsafe fn kron_short_rows(
    vals: *mut c64,
    cols: *mut usize,
    nb: usize,
    a_row: (&[usize], &[c64]),
    b: (&[usize], &[usize], &[c64]),
    ptrs: &mut [MaybeUninit<usize>],
    first: usize,
) -> Option<usize> {
    // SAFETY: the contract, with a's row of LA entries in each arm.
    unsafe {
        match a_row.0.len() {
            2 => Some(short_rows::<2>(vals, cols, nb, a_row, b, ptrs, first)),
            3 => Some(short_rows::<3>(vals, cols, nb, a_row, b, ptrs, first)),
            _ => None,
        }
    }
}

/// [`kron_short_rows`] for a row of a of `LA` entries.
///
/// # Safety
/// As [`kron_short_rows`], with `ra.len() == LA`.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn short_rows<const LA: usize>(
    vals: *mut c64,
    cols: *mut usize,
    nb: usize,
    (ra, rv): (&[usize], &[c64]),
    (pb, ib, db): (&[usize], &[usize], &[c64]),
    ptrs: &mut [MaybeUninit<usize>],
    first: usize,
) -> usize {
    use std::arch::x86_64::*;
    debug_assert!(ra.len() == LA && rv.len() == LA && ptrs.len() + 1 == pb.len());
    let mut sr = [_mm256_setzero_pd(); LA];
    let mut si = [_mm256_setzero_pd(); LA];
    let mut base = [_mm_setzero_si128(); LA];
    for x in 0..LA {
        // SAFETY: x < LA = ra.len() = rv.len() (the contract).
        (sr[x], si[x], base[x]) = unsafe { run_scalar(ra, rv, x, nb) };
    }
    let (po, pc) = (vals.cast::<f64>(), cols);
    let (pv, pi) = (db.as_ptr().cast::<f64>(), ib.as_ptr());
    let mut pos = 0usize;
    let mut b0 = pb[0];
    for (k, ptr) in ptrs.iter_mut().enumerate() {
        // SAFETY: k + 1 < pb.len() (the contract).
        let b1 = unsafe { *pb.get_unchecked(k + 1) };
        let lb = b1 - b0;
        // SAFETY: b's row k is entries b0..b1 (at most SHORT_ROW, inside `ib` and `db`: a
        // valid Csr); the block's LA·lb entries lie at pos.. inside the output (the contract:
        // pos + LA·lb ≤ LA·nnz(b)); unaligned accesses. Run x of the block is a's entry x
        // times b's row, at pos + x·lb.
        unsafe {
            let (po, pc) = (po.add(2 * pos), pc.add(pos));
            if lb >= 2 {
                let v = _mm256_loadu_pd(pv.add(2 * b0));
                let sw = avx::swap(v);
                let c = _mm_loadu_si128(pi.add(b0).cast::<__m128i>());
                for x in 0..LA {
                    let r = avx::product_swapped(sr[x], si[x], v, sw);
                    _mm256_storeu_pd(po.add(2 * x * lb), r);
                    _mm_storeu_si128(pc.add(x * lb).cast(), _mm_add_epi64(c, base[x]));
                }
            }
            if lb % 2 == 1 {
                // The odd last entry (lb = 1 or 3), in the lower halves.
                let t = lb - 1;
                let v = _mm256_castpd128_pd256(_mm_loadu_pd(pv.add(2 * (b0 + t))));
                let sw = avx::swap(v);
                let c = *pi.add(b0 + t);
                for x in 0..LA {
                    let r = avx::product_swapped(sr[x], si[x], v, sw);
                    _mm_storeu_pd(po.add(2 * (x * lb + t)), _mm256_castpd256_pd128(r));
                    let col = _mm_cvtsi128_si64(base[x]) as usize + c;
                    pc.add(x * lb + t).write(col);
                }
            }
        }
        pos += LA * lb;
        ptr.write(first + pos);
        b0 = b1;
    }
    pos
}

/// The runs of [`kron_block`] for a row of b of `LB` (2 to 10) entries and a row of a of `LA`
/// entries (`LA = 0`: as many as `ra` has). b's entries are held in registers in pairs, an
/// odd last one in the lower half of a vector. A block of an even row of 4 or more that
/// starts 16 bytes past a 32-byte boundary goes to [`kron_runs_shifted`]: two 10 × 10
/// factors of 10 a row took 4.83–4.97 µs a call with such a value buffer against 4.16–4.27
/// with an aligned one, and take 4.40–4.55 with it now (`kron` in the side-by-side: 4.89 →
/// 4.47 µs).
///
/// # Safety
/// As [`kron_block`], with `bv.len() == LB` and, for `LA > 0`, `ra.len() == LA`.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn kron_runs<const LA: usize, const LB: usize>(
    vals: *mut c64,
    cols: *mut usize,
    nb: usize,
    ra: &[usize],
    rv: &[c64],
    bi: &[usize],
    bv: &[c64],
) {
    use std::arch::x86_64::*;
    debug_assert!(
        (2..=10).contains(&LB)
            && bv.len() == LB
            && (LA == 0 || ra.len() == LA)
            && rv.len() == ra.len()
    );
    let runs = if LA == 0 { ra.len() } else { LA };
    let (po, pc) = (vals.cast::<f64>(), cols);
    if LB.is_multiple_of(2) && LB >= 4 && (vals as usize) % 32 == 16 {
        // SAFETY: the caller's contract, with LB even.
        return unsafe { kron_runs_shifted::<LB>(po, pc, nb, ra, rv, bi, bv, runs) };
    }
    // Entries 2p and 2p + 1 of b's row in pair p < LB / 2 (values, swapped values); for an
    // odd LB, entry LB − 1 in pair LB / 2, lower half only.
    let pv = bv.as_ptr().cast::<f64>();
    let mut v = [_mm256_setzero_pd(); PAIRS + 1];
    for (p, v) in v.iter_mut().enumerate().take(LB / 2) {
        // SAFETY: entries 2p and 2p + 1 < LB exist; unaligned load.
        *v = unsafe { _mm256_loadu_pd(pv.add(4 * p)) };
    }
    if LB % 2 == 1 {
        // SAFETY: entry LB − 1 exists; the upper half is never stored.
        v[LB / 2] = unsafe { _mm256_castpd128_pd256(_mm_loadu_pd(pv.add(2 * (LB - 1)))) };
    }
    let sw = v.map(|w| avx::swap(w));
    // SAFETY: bi.len() == LB (the contract).
    let c = unsafe { b_cols::<LB>(bi) };
    for x in 0..runs {
        // SAFETY: x < ra.len() = rv.len() (the contract); run x's LB entries lie at
        // po + 2·x·LB / pc + x·LB inside the block; for an odd LB only the lower halves of
        // the last pair's product and columns are stored.
        unsafe {
            let (sr, si, base) = run_scalar(ra, rv, x, nb);
            let (po, pc) = (po.add(2 * x * LB), pc.add(x * LB));
            // Each pair's values and columns stored together: with the columns stored
            // after all the values (`store_cols`), 10 × 10 factors of 10 a row took 6 % longer.
            for p in 0..LB / 2 {
                _mm256_storeu_pd(po.add(4 * p), avx::product_swapped(sr, si, v[p], sw[p]));
                _mm_storeu_si128(pc.add(2 * p).cast(), _mm_add_epi64(c[p], base));
            }
            if LB % 2 == 1 {
                let r = avx::product_swapped(sr, si, v[LB / 2], sw[LB / 2]);
                _mm_storeu_pd(po.add(2 * (LB - 1)), _mm256_castpd256_pd128(r));
                let col = _mm_add_epi64(c[LB / 2], base);
                pc.add(LB - 1).write(_mm_cvtsi128_si64(col) as usize);
            }
        }
    }
}

/// Pairs of b's row in registers: at most five pairs, and an odd last entry.
const PAIRS: usize = 5;

/// b's `LB` (2 to 10) columns in pairs: entries 2p and 2p + 1 in pair p < LB / 2, an odd last
/// one in pair LB / 2 (both lanes).
///
/// # Safety
/// The CPU has AVX2 and FMA; `bi.len() == LB`.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn b_cols<const LB: usize>(bi: &[usize]) -> [std::arch::x86_64::__m128i; PAIRS + 1] {
    use std::arch::x86_64::*;
    let pi = bi.as_ptr();
    let mut c = [_mm_setzero_si128(); PAIRS + 1];
    for (p, c) in c.iter_mut().enumerate().take(LB / 2) {
        // SAFETY: entries 2p and 2p + 1 < LB exist; unaligned load.
        *c = unsafe { _mm_loadu_si128(pi.add(2 * p).cast::<__m128i>()) };
    }
    if LB % 2 == 1 {
        // SAFETY: entry LB − 1 exists.
        c[LB / 2] = unsafe { _mm_set1_epi64x(*pi.add(LB - 1) as i64) };
    }
    c
}

/// A run's `LB` columns `base + b's columns` at `pc` ([`b_cols`]'s pairs, the odd last one
/// alone).
///
/// # Safety
/// The CPU has AVX2 and FMA; `pc` is valid for `LB` writes.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn store_cols<const LB: usize>(
    pc: *mut usize,
    c: &[std::arch::x86_64::__m128i; PAIRS + 1],
    base: std::arch::x86_64::__m128i,
) {
    use std::arch::x86_64::*;
    for (p, c) in c.iter().enumerate().take(LB / 2) {
        // SAFETY: entries 2p and 2p + 1 < LB of the run (the contract); unaligned store.
        unsafe { _mm_storeu_si128(pc.add(2 * p).cast(), _mm_add_epi64(*c, base)) };
    }
    if LB % 2 == 1 {
        let col = _mm_add_epi64(c[LB / 2], base);
        // SAFETY: entry LB − 1 of the run.
        unsafe { pc.add(LB - 1).write(_mm_cvtsi128_si64(col) as usize) };
    }
}

/// Run x's scalar of a, both parts broadcast, and its column base `ra[x]·nb` (`usize` is 64
/// bits on x86-64; the caller's columns fit in it).
///
/// # Safety
/// The CPU has AVX2 and FMA; `x < ra.len()` and `x < rv.len()`.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn run_scalar(
    ra: &[usize],
    rv: &[c64],
    x: usize,
    nb: usize,
) -> (
    std::arch::x86_64::__m256d,
    std::arch::x86_64::__m256d,
    std::arch::x86_64::__m128i,
) {
    use std::arch::x86_64::*;
    // SAFETY: x is below both lengths (the contract).
    let (ca, va) = unsafe { (*ra.get_unchecked(x), *rv.get_unchecked(x)) };
    (
        _mm256_set1_pd(va.re),
        _mm256_set1_pd(va.im),
        _mm_set1_epi64x((ca * nb) as i64),
    )
}

/// [`kron_runs`] for an even `LB` and a block that starts 16 bytes past a 32-byte boundary
/// (half of the value buffers malloc returns): every run starts there too, and its pairs
/// (0, 1), (2, 3), … would split every other 32-byte store across two cache lines. Each run
/// writes entry 0 alone, the pairs (1, 2), (3, 4), … from 32-byte boundaries (b's entries
/// loaded that way, unaligned), and entry LB − 1 alone; the products are the same.
///
/// # Safety
/// As [`kron_runs`], with `po`/`pc` the block's values and columns, `runs == ra.len()`.
#[target_feature(enable = "avx2,fma")]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
unsafe fn kron_runs_shifted<const LB: usize>(
    po: *mut f64,
    pc: *mut usize,
    nb: usize,
    ra: &[usize],
    rv: &[c64],
    bi: &[usize],
    bv: &[c64],
    runs: usize,
) {
    use std::arch::x86_64::*;
    let pv = bv.as_ptr().cast::<f64>();
    // b's entries as this run's stores take them: (0, 1) for entry 0, then (1, 2), (3, 4), …,
    // then (LB − 2, LB − 1) for entry LB − 1.
    let mut v = [_mm256_setzero_pd(); PAIRS + 1];
    // SAFETY: entries 2p + 1 and 2p + 2 < LB exist for p < LB / 2 − 1, entries 0, 1 and
    // LB − 2, LB − 1 as well; unaligned loads.
    unsafe {
        v[0] = _mm256_loadu_pd(pv);
        for p in 0..LB / 2 - 1 {
            v[p + 1] = _mm256_loadu_pd(pv.add(2 * (2 * p + 1)));
        }
        v[LB / 2] = _mm256_loadu_pd(pv.add(2 * (LB - 2)));
    }
    // SAFETY: bi.len() == LB (the contract).
    let c = unsafe { b_cols::<LB>(bi) };
    let sw = v.map(|w| avx::swap(w));
    for x in 0..runs {
        // SAFETY: x < ra.len() = rv.len(); run x's LB entries lie at po + 2·x·LB /
        // pc + x·LB inside the block; only entries 0..LB are stored.
        unsafe {
            let (sr, si, base) = run_scalar(ra, rv, x, nb);
            let (po, pc) = (po.add(2 * x * LB), pc.add(x * LB));
            let first = avx::product_swapped(sr, si, v[0], sw[0]);
            _mm_storeu_pd(po, _mm256_castpd256_pd128(first));
            for p in 0..LB / 2 - 1 {
                let r = avx::product_swapped(sr, si, v[p + 1], sw[p + 1]);
                _mm256_storeu_pd(po.add(2 + 4 * p), r);
            }
            let last = avx::product_swapped(sr, si, v[LB / 2], sw[LB / 2]);
            _mm_storeu_pd(po.add(2 * (LB - 1)), _mm256_extractf128_pd::<1>(last));
            store_cols::<LB>(pc, &c, base);
        }
    }
}

pub(super) mod avx {
    use std::arch::x86_64::*;

    /// `s·v` for two packed entries, `s` given as its broadcast parts: `addsub(re s · v,
    /// im s · swap(v))`, without a fused multiply-add, so each part is the scalar product's.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    pub(in crate::simd) fn product(sr: __m256d, si: __m256d, v: __m256d) -> __m256d {
        product_swapped(sr, si, v, swap(v))
    }

    /// `v` with the two parts of each entry exchanged (`[im, re]`).
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    pub(super) fn swap(v: __m256d) -> __m256d {
        _mm256_permute_pd::<0b0101>(v)
    }

    /// [`product`] with `swap(v)` given (hoisted by a caller that multiplies the same `v`
    /// by many scalars).
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    pub(super) fn product_swapped(sr: __m256d, si: __m256d, v: __m256d, sv: __m256d) -> __m256d {
        _mm256_addsub_pd(_mm256_mul_pd(sr, v), _mm256_mul_pd(si, sv))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every instance of `kron_block` (rows of b of 0 to 12 entries, rows of a of 0 to 4,
    /// rows of 5 to 10 held in registers or not) writes each run's products bit for bit as the
    /// scalar ones (NaN as NaN) and its columns, and nothing past the block.
    #[test]
    fn kron_blocks_of_every_row_length_match_the_definition() {
        if !crate::simd::avx2() {
            return;
        }
        let special = [1.5, -0.0, f64::INFINITY, 1e-310, -2.25, f64::NAN, 3.0, 0.5];
        let value = |k: usize| c64::new(special[k % 8], special[(k * 5 + 3) % 8] + k as f64);
        let same = |g: f64, w: f64| g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
        let nb = 29;
        for lb in 0..=12 {
            let bi: Vec<usize> = (0..lb).map(|t| (t * 2 + 1) % nb).collect();
            let bv: Vec<c64> = (0..lb).map(|t| value(t + 7)).collect();
            for la in 0..=4 {
                let ra: Vec<usize> = (0..la).map(|x| 3 * x + 1).collect();
                let rv: Vec<c64> = (0..la).map(|x| value(3 * x)).collect();
                // The block at offsets 0 and 1 (16 bytes apart): one of the two starts 16
                // bytes past a 32-byte boundary (`kron_runs_shifted` for an even row of b of
                // 4 or more), the other on one.
                for (long_rows, off) in [(false, 0), (false, 1), (true, 0), (true, 1)] {
                    let len = la * lb;
                    // A spare slot past the block (and at offset 1 one before it): each must
                    // keep its marker.
                    let mut vals = vec![c64::new(7.0, 7.0); len + 2];
                    let mut cols = vec![usize::MAX; len + 2];
                    // SAFETY: the CPU has AVX2 and FMA (checked above); both buffers hold
                    // off + la·lb + 1 slots; the columns 3x + 1 and b's below nb fit in usize.
                    unsafe {
                        kron_block(
                            vals.as_mut_ptr().add(off),
                            cols.as_mut_ptr().add(off),
                            nb,
                            (&ra, &rv),
                            (&bi, &bv),
                            long_rows,
                        );
                    }
                    let marks = (c64::new(7.0, 7.0), usize::MAX);
                    if off == 1 {
                        assert_eq!((vals[0], cols[0]), marks, "{lb} {la} before");
                    }
                    let (vals, cols) = (&vals[off..], &cols[off..]);
                    for x in 0..la {
                        for y in 0..lb {
                            let (g, w) = (vals[x * lb + y], rv[x] * bv[y]);
                            let at = format!("{lb} {la} {x} {y} {off}");
                            assert!(same(g.re, w.re) && same(g.im, w.im), "{at}");
                            assert_eq!(cols[x * lb + y], ra[x] * nb + bi[y], "{at}");
                        }
                    }
                    assert_eq!((vals[len], cols[len]), marks, "{lb} {la} {off}");
                }
            }
        }
    }
}
