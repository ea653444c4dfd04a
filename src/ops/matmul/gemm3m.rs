//! Large complex products by three real ones (the "3M" method): `(Ar + iAi)(Br + iBi)` with
//! `T1 = Ar·Br`, `T2 = Ai·Bi`, `T3 = (Ar + Ai)(Br + Bi)`, then `Re = T1 − T2` and
//! `Im = T3 − T1 − T2`.
//!
//! Three real products do 6mkn flops against the complex product's 8mkn, and faer's real
//! kernel runs at about the complex kernel's flop rate, so from a few hundred rows the product
//! takes about 0.8 of the time (docs/benchmarks.md). This is what closes the gap to numpy's
//! OpenBLAS `zgemm` where faer's complex kernel did not.
//!
//! Accuracy: the error of an entry is bounded by about k·u·Σₜ (|Re aᵢₜ| + |Im aᵢₜ|)·
//! (|Re bₜⱼ| + |Im bₜⱼ|) (u the unit roundoff): normwise like the complex product's, with a
//! constant a few times larger for the imaginary part, which loses relative accuracy where it
//! is much smaller than the real part (Higham, *Accuracy and Stability of Numerical
//! Algorithms*, 2nd ed., §23.2.4). To keep the special values of the complex product, the method
//! is only used when every part of both inputs is finite and at most 2⁴⁸⁰ in magnitude (so no
//! sum or product overflows where the complex product would not); otherwise, and when its
//! scratch (4.5 times the result for square factors, more for long inner dimensions) does
//! not fit within [`crate::dense_limit`] or the memory available, or cannot be allocated, the
//! caller runs the complex product.

use std::mem::MaybeUninit;

use faer::linalg::matmul::matmul;
use faer::reborrow::ReborrowMut;
use faer::{Accum, ContiguousFwd, MatMut, MatRef, Par};
use rayon::prelude::*;

use crate::engine::Family;
use crate::scalar::c64;
use crate::storage::scratch::{Spare, unfilled};

/// Products of at least this many complex multiply-adds (m·k·n) use the 3M method: from
/// n = 128 (this value) it was 7–15 % faster, at n = 100 level, at n = 64 10 % slower
/// (docs/benchmarks/per_operation.md).
pub(crate) const MIN_WORK: usize = 1 << 21;

/// Products with a dimension below this keep the complex product: the split and combine
/// passes (O(mk + kn + mn)) are then not small against the product, and the 3M gain was only
/// measured on square shapes.
pub(crate) const MIN_DIM: usize = 32;

/// The largest magnitude of a part for which the method is used (2⁴⁸⁰).
const BOUND: f64 = f64::from_bits((1023 + 480) << 52);

/// `out ← a·b` by three real products; returns `false` where the method does not apply: a
/// dimension below [`MIN_DIM`], a non-finite or huge part, inputs with no unit stride, an `out`
/// whose columns are not contiguous, or scratch memory over the dense limit or refused. All of
/// these are decided before `out` is written, which is then written in full and never read:
/// `out` may hold anything (the caller's fresh, unfilled result). Callers run the complex
/// product with `Accum::Replace` on `false`.
pub(crate) fn gemm_3m(
    out: MatMut<'_, c64>,
    a: MatRef<'_, c64>,
    b: MatRef<'_, c64>,
    par: Par,
) -> bool {
    let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
    m.min(k).min(n) >= MIN_DIM && three_products(out, a, b, par)
}

/// [`gemm_3m`] at any size (the tests' entry point for small shapes).
///
/// Every pass over memory is one of: the split of each input into its real part, imaginary
/// part and their sum (one read of the input), the three products (each written whole by
/// faer, which does not read its destination under `Accum::Replace`) and one combining pass.
/// The scratch is never zero-filled. Against the earlier form (zeroed scratch, the sums and
/// the imaginary part in passes of their own: about twice the bytes moved), the time a call
/// takes beyond its three real products, one thread, paired medians of three alternations:
/// n = 1000 18–24 → 4–17 ms, n = 500 5.3–8.1 → 2.8–4.8 ms (docs/benchmarks.md).
fn three_products(out: MatMut<'_, c64>, a: MatRef<'_, c64>, b: MatRef<'_, c64>, par: Par) -> bool {
    let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
    if b.nrows() != k || out.nrows() != m || out.ncols() != n || m == 0 || n == 0 || k == 0 {
        return false;
    }
    // Three real matrices of each shape: the parts and sums of a and b, the three products.
    let scratch = [m.checked_mul(k), k.checked_mul(n), m.checked_mul(n)]
        .into_iter()
        .try_fold(0usize, |s, x| s.checked_add(x?.checked_mul(24)?));
    // Over the dense limit, or more than the memory available now (Linux grants a reservation
    // it cannot back, and writing it would end the process): the complex product needs none.
    if scratch.is_none_or(|bytes| {
        bytes > crate::engine::dense_limit()
            || crate::storage::alloc::check_memory("matmul", (m, n), bytes as u128).is_err()
    }) {
        return false;
    }
    let Some(out) = out.try_as_col_major_mut() else {
        return false;
    };
    // The split and combine passes are O(mk + kn + mn): each takes the threads only where the
    // engine's element-wise policy would (a parallel region costs a hand-off, ~15–40 µs).
    let pass_par = |entries: usize| match par {
        Par::Rayon(_) if crate::engine::workers(Family::Elementwise, entries) > 1 => par,
        _ => Par::Seq,
    };
    let (Some(pa), Some(pb)) = (
        Parts::split(a, pass_par(m * k)),
        Parts::split(b, pass_par(k * n)),
    ) else {
        return false;
    };
    // SAFETY: under `Accum::Replace` faer writes every entry of the destination and reads
    // none (its documentation; k > 0 here), so the three products are written before they
    // are read.
    let products = unsafe {
        (
            unfilled("matmul", m, n).ok(),
            unfilled("matmul", m, n).ok(),
            unfilled("matmul", m, n).ok(),
        )
    };
    let (Some(mut t1), Some(mut t2), Some(mut t3)) = products else {
        return false;
    };
    real_products(
        [
            (t1.as_mut(), pa.re(), pb.re()),
            (t2.as_mut(), pa.im(), pb.im()),
            (t3.as_mut(), pa.sum(), pb.sum()),
        ],
        par,
    );
    let (Some(x), Some(y), Some(z)) = (
        t1.as_ref().try_as_col_major(),
        t2.as_ref().try_as_col_major(),
        t3.as_ref().try_as_col_major(),
    ) else {
        // faer's `Mat` is always column-major; `out` has not been written.
        return false;
    };
    // Re = T1 − T2, Im = T3 − (T1 + T2): one pass, every entry of `out` written.
    let combine = |mut o: MatMut<'_, c64, usize, usize, ContiguousFwd>,
                   x: MatRef<'_, f64, usize, usize, ContiguousFwd>,
                   y: MatRef<'_, f64, usize, usize, ContiguousFwd>,
                   z: MatRef<'_, f64, usize, usize, ContiguousFwd>| {
        for j in 0..o.ncols() {
            let o = slots(o.rb_mut().col_mut(j));
            let (x, y, z) = (
                x.col(j).as_slice(),
                y.col(j).as_slice(),
                z.col(j).as_slice(),
            );
            for (((o, &x), &y), &z) in o.iter_mut().zip(x).zip(y).zip(z) {
                o.write(c64::new(x - y, z - (x + y)));
            }
        }
    };
    match pass_par(m * n) {
        Par::Seq => combine(out, x, y, z),
        Par::Rayon(t) => {
            let t = t.get();
            out.par_col_partition_mut(t)
                .zip(x.par_col_partition(t))
                .zip(y.par_col_partition(t))
                .zip(z.par_col_partition(t))
                .for_each(|(((o, x), y), z)| combine(o, x, y, z));
        }
    }
    true
}

/// The most rows of `a` one call of faer's real product is given by [`real_products`].
const PIECE_ROWS: usize = 192;

/// Pieces of fewer rows than this are not worth a thread of their own: [`real_products`] then
/// leaves the parallel product to faer.
const MIN_PIECE_ROWS: usize = 32;

/// `dst ← a·b` for each of the three real products, written in full (faer's product under
/// `Accum::Replace`), in pieces of at most [`PIECE_ROWS`] rows of `a` and `dst`: one after
/// another on one thread; on several, the pieces of all three products in one parallel region,
/// each piece a one-thread product.
///
/// Why pieces: faer's real product (`private-gemm-x86`) runs square shapes between about 440
/// and 511 on one thread through its unblocked path, which on a CPU with 2 MiB of L2 per core
/// drops from 85 to 63 GFLOP/s there; and its parallel product
/// gained 1.3–1.6× from a second thread where pieces gain 2.0×. One thread, square, medians of
/// 11 (ms): n = 500 4.42–4.69 → 2.53–2.66, n = 1000 21.4–21.9 → 21.0–22.1, n = 2000
/// 183–198 → 173–184; two threads: n = 500 1.68–1.86 → 1.88–2.01, n = 1000 13.6–15.0 →
/// 10.6–10.7, n = 2000 116–124 → 95–103 (docs/benchmarks.md). Splitting rows leaves every
/// entry's sum over k to faer: at 500, 1000, 300 × 700 and 2000 × 600 every entry came
/// out bit for bit the unsplit product's.
///
/// Why one region: each parallel region is a hand-off to the pool. With a region per product
/// (and per split and combine pass), a 128 × 128 product on two threads took 0.43 ms against
/// 0.19 ms on one, with 33 context switches a call.
fn real_products(products: [(MatMut<'_, f64>, MatRef<'_, f64>, MatRef<'_, f64>); 3], par: Par) {
    let m = products[0].1.nrows();
    let threads = par.degree();
    let pieces = m.div_ceil(PIECE_ROWS).next_multiple_of(threads.max(1));
    // Rows per piece: a multiple of 8 (whole vectors of the microkernel's rows).
    let rows = m.div_ceil(pieces.max(1)).next_multiple_of(8).max(8);
    if threads > 1 {
        if m / threads < MIN_PIECE_ROWS {
            for (dst, a, b) in products {
                matmul(dst, Accum::Replace, a, b, 1.0, par);
            }
            return;
        }
        let [(d1, a1, b1), (d2, a2, b2), (d3, a3, b3)] = products;
        let piece = |d: MatMut<'_, f64>, a: MatRef<'_, f64>, b: MatRef<'_, f64>| {
            matmul(d, Accum::Replace, a, b, 1.0, Par::Seq)
        };
        d1.par_row_chunks_mut(rows)
            .zip(a1.par_row_chunks(rows))
            .map(|(d, a)| (d, a, b1))
            .chain(
                d2.par_row_chunks_mut(rows)
                    .zip(a2.par_row_chunks(rows))
                    .map(|(d, a)| (d, a, b2)),
            )
            .chain(
                d3.par_row_chunks_mut(rows)
                    .zip(a3.par_row_chunks(rows))
                    .map(|(d, a)| (d, a, b3)),
            )
            .for_each(|(d, a, b)| piece(d, a, b));
        return;
    }
    for (mut dst, a, b) in products {
        let mut i = 0;
        while i < m {
            let r = rows.min(m - i);
            matmul(
                dst.rb_mut().subrows_mut(i, r),
                Accum::Replace,
                a.subrows(i, r),
                b,
                1.0,
                Par::Seq,
            );
            i += r;
        }
    }
}

/// A column of a column-major matrix as slots to write (the scratch and the result are
/// written before anything reads them, so they are never viewed as initialised values).
fn slots<'a, T>(col: faer::col::ColMut<'a, T, usize, ContiguousFwd>) -> &'a mut [MaybeUninit<T>] {
    let len = col.nrows();
    // SAFETY: a contiguous column is `len` consecutive `T`s of its matrix's storage, borrowed
    // mutably for 'a through `col`; `MaybeUninit<T>` has the layout of `T` and is never read
    // as a `T` before it is written.
    unsafe { std::slice::from_raw_parts_mut(col.as_ptr_mut().cast(), len) }
}

/// The real part, imaginary part and their sum of a complex matrix, stored in the
/// orientation in which the source's columns (or rows, then `transposed`) are contiguous.
struct Parts {
    re: Spare<f64>,
    im: Spare<f64>,
    sum: Spare<f64>,
    transposed: bool,
}

impl Parts {
    /// `None` if a part is non-finite or above [`BOUND`], if neither stride of `v` is 1, or if
    /// the allocator refuses. One pass over `v` writes all three matrices.
    fn split(v: MatRef<'_, c64>, par: Par) -> Option<Parts> {
        let (v, transposed) = match (v.try_as_col_major(), v.transpose().try_as_col_major()) {
            (Some(v), _) => (v, false),
            (None, Some(t)) => (t, true),
            (None, None) => return None,
        };
        let (rows, cols) = (v.nrows(), v.ncols());
        // SAFETY: `block` writes every entry of the three parts (each column whole, every
        // column once, in one call or split among workers) before they are read.
        let (mut re, mut im, mut sum) = unsafe {
            (
                unfilled("matmul", rows, cols).ok()?,
                unfilled("matmul", rows, cols).ok()?,
                unfilled("matmul", rows, cols).ok()?,
            )
        };
        // Writes the block's three parts; whether every part is finite and at most BOUND.
        let block = |v: MatRef<'_, c64, usize, usize, ContiguousFwd>,
                     mut re: MatMut<'_, f64, usize, usize, ContiguousFwd>,
                     mut im: MatMut<'_, f64, usize, usize, ContiguousFwd>,
                     mut sum: MatMut<'_, f64, usize, usize, ContiguousFwd>| {
            let mut within = true;
            for j in 0..v.ncols() {
                let (src, r, i, s) = (
                    v.col(j).as_slice(),
                    slots(re.rb_mut().col_mut(j)),
                    slots(im.rb_mut().col_mut(j)),
                    slots(sum.rb_mut().col_mut(j)),
                );
                for (((r, i), s), z) in r.iter_mut().zip(i).zip(s).zip(src) {
                    r.write(z.re);
                    i.write(z.im);
                    s.write(z.re + z.im);
                    // `<=` is false for NaN as well as for infinities and huge parts.
                    within &= z.re.abs() <= BOUND && z.im.abs() <= BOUND;
                }
            }
            within
        };
        let (r, i, s) = (
            re.as_mut().try_as_col_major_mut()?,
            im.as_mut().try_as_col_major_mut()?,
            sum.as_mut().try_as_col_major_mut()?,
        );
        let within = match par {
            Par::Seq => block(v, r, i, s),
            Par::Rayon(t) => {
                let t = t.get();
                v.par_col_partition(t)
                    .zip(r.par_col_partition_mut(t))
                    .zip(i.par_col_partition_mut(t))
                    .zip(s.par_col_partition_mut(t))
                    .map(|(((v, r), i), s)| block(v, r, i, s))
                    .reduce(|| true, |x, y| x && y)
            }
        };
        // Every entry of the three was written, whether or not the parts are within bounds.
        within.then_some(Parts {
            re,
            im,
            sum,
            transposed,
        })
    }

    fn orient<'a>(&self, m: &'a Spare<f64>) -> MatRef<'a, f64> {
        if self.transposed {
            m.as_ref().transpose()
        } else {
            m.as_ref()
        }
    }

    fn re(&self) -> MatRef<'_, f64> {
        self.orient(&self.re)
    }

    fn im(&self) -> MatRef<'_, f64> {
        self.orient(&self.im)
    }

    fn sum(&self) -> MatRef<'_, f64> {
        self.orient(&self.sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faer::Mat;

    fn complex_product(a: MatRef<'_, c64>, b: MatRef<'_, c64>) -> Mat<c64> {
        let mut c = Mat::<c64>::zeros(a.nrows(), b.ncols());
        matmul(
            c.as_mut(),
            Accum::Replace,
            a,
            b,
            c64::new(1.0, 0.0),
            Par::Seq,
        );
        c
    }

    fn sample(rows: usize, cols: usize, seed: usize) -> Mat<c64> {
        Mat::from_fn(rows, cols, |i, j| {
            let h = (i * 31 + j * 17 + seed * 7) % 23;
            c64::new(h as f64 / 7.0 - 1.5, ((h * 5 + 3) % 13) as f64 / 3.0 - 2.0)
        })
    }

    /// Against the complex product on rectangular shapes, every orientation of both inputs
    /// (row-major sources are transposed views), within the normwise bound, serial and in
    /// parallel.
    #[test]
    fn three_products_match_the_complex_product() {
        for (m, k, n) in [(1, 1, 1), (7, 5, 9), (13, 1, 4), (1, 6, 1), (33, 17, 20)] {
            let (a, b) = (sample(m, k, 1), sample(k, n, 2));
            // Row-major storage of a and b: the transposes of k × m and n × k matrices.
            let (at, bt) = (sample(k, m, 1), sample(n, k, 2));
            for (x, y) in [
                (a.as_ref(), b.as_ref()),
                (at.as_ref().transpose(), b.as_ref()),
                (a.as_ref(), bt.as_ref().transpose()),
                (at.as_ref().transpose(), bt.as_ref().transpose()),
            ] {
                let want = complex_product(x, y);
                // `out` may hold anything: every entry is written (NaN left would fail below).
                let garbage = c64::new(f64::NAN, f64::NAN);
                let mut got = Mat::<c64>::from_fn(m, n, |_, _| garbage);
                assert!(three_products(got.as_mut(), x, y, Par::Seq), "{m}×{k}×{n}");
                // The column blocks of the parallel passes give the serial result.
                let mut split = Mat::<c64>::from_fn(m, n, |_, _| garbage);
                assert!(three_products(split.as_mut(), x, y, Par::rayon(3)));
                assert!((0..n).all(|j| {
                    (0..m).all(|i| {
                        (split[(i, j)] - got[(i, j)]).norm() <= 1e-14 * (1.0 + got[(i, j)].norm())
                    })
                }));
                for j in 0..n {
                    for i in 0..m {
                        let scale: f64 = (0..k).map(|t| x[(i, t)].norm() * y[(t, j)].norm()).sum();
                        let err = (got[(i, j)] - want[(i, j)]).norm();
                        assert!(
                            err <= 1e-14 * (1.0 + scale),
                            "({i}, {j}) of {m}×{k}×{n}: {err}"
                        );
                    }
                }
            }
        }
    }

    /// Products of one shape in a row take the previous call's scratch, which holds its
    /// values: each result must still be the complex product of its own inputs.
    #[test]
    fn spare_scratch_is_reused_and_rewritten() {
        let (m, k, n) = (40, 33, 36);
        for seed in 0..4 {
            let (a, b) = (sample(m, k, 2 * seed + 1), sample(k, n, 2 * seed + 2));
            let want = complex_product(a.as_ref(), b.as_ref());
            let mut got = Mat::<c64>::from_fn(m, n, |_, _| c64::new(f64::NAN, 0.0));
            assert!(three_products(
                got.as_mut(),
                a.as_ref(),
                b.as_ref(),
                Par::Seq
            ));
            let err = (0..n)
                .flat_map(|j| (0..m).map(move |i| (i, j)))
                .map(|(i, j)| (got[(i, j)] - want[(i, j)]).norm())
                .fold(0.0, f64::max);
            assert!(err <= 1e-12, "call {seed}: {err}");
        }
        // The nine scratch matrices of the last call (parts of a and b, three products).
        let (count, total) = crate::storage::scratch::held::<f64>();
        assert_eq!(count, 9);
        assert!(total <= crate::storage::scratch::SPARE_BYTES);
    }

    /// The pieces of `real_products` cover every row of each of the three products once:
    /// against faer's unsplit product on row counts around the piece size (one piece, a short
    /// last piece, pieces rounded to 8 rows, too few rows per thread), row-major left operands,
    /// serially and on 2 and 3 threads, three different products at once (so no piece lands in
    /// another product's destination). Every entry is written (the destinations start as NaN).
    #[test]
    fn real_product_pieces_cover_every_row() {
        let real = |rows: usize, cols: usize, seed: usize| {
            Mat::<f64>::from_fn(rows, cols, |i, j| {
                ((i * 29 + j * 13 + seed) % 19) as f64 - 9.0
            })
        };
        for m in [1, 31, 63, 64, 191, 192, 193, 200, 385, 500] {
            let (k, n) = (37, 45);
            let lefts: Vec<(Mat<f64>, Mat<f64>)> = (0..3)
                .map(|s| (real(m, k, 2 * s + 1), real(k, m, 2 * s + 1)))
                .collect();
            let rights: Vec<Mat<f64>> = (0..3).map(|s| real(k, n, 2 * s + 2)).collect();
            for transposed in [false, true] {
                let x = |s: usize| {
                    if transposed {
                        lefts[s].1.as_ref().transpose()
                    } else {
                        lefts[s].0.as_ref()
                    }
                };
                let want: Vec<Mat<f64>> = (0..3)
                    .map(|s| {
                        let mut w = Mat::<f64>::zeros(m, n);
                        matmul(
                            w.as_mut(),
                            Accum::Replace,
                            x(s),
                            rights[s].as_ref(),
                            1.0,
                            Par::Seq,
                        );
                        w
                    })
                    .collect();
                for par in [Par::Seq, Par::rayon(2), Par::rayon(3)] {
                    let mut got: Vec<Mat<f64>> = (0..3)
                        .map(|_| Mat::from_fn(m, n, |_, _| f64::NAN))
                        .collect();
                    let [g1, g2, g3] = &mut got[..] else {
                        unreachable!()
                    };
                    real_products(
                        [
                            (g1.as_mut(), x(0), rights[0].as_ref()),
                            (g2.as_mut(), x(1), rights[1].as_ref()),
                            (g3.as_mut(), x(2), rights[2].as_ref()),
                        ],
                        par,
                    );
                    // Small integers: every product and sum is exact, whatever the order.
                    assert!(got == want, "m = {m}, transposed {transposed}, {par:?}");
                }
            }
        }
    }

    /// Non-finite or huge parts and empty shapes decline, leaving `out` untouched, so the
    /// caller's complex product keeps its special values.
    #[test]
    fn declines_where_the_complex_product_must_run() {
        let marker = c64::new(7.0, -7.0);
        for bad in [f64::NAN, f64::INFINITY, -f64::INFINITY, 1e200] {
            let mut a = sample(3, 3, 5);
            a[(1, 2)] = c64::new(0.5, bad);
            let mut out = Mat::<c64>::from_fn(3, 3, |_, _| marker);
            assert!(!three_products(
                out.as_mut(),
                a.as_ref(),
                sample(3, 3, 6).as_ref(),
                Par::Seq
            ));
            assert!(!three_products(
                out.as_mut(),
                sample(3, 3, 6).as_ref(),
                a.as_ref(),
                Par::Seq
            ));
            assert!((0..3).all(|j| (0..3).all(|i| out[(i, j)] == marker)));
        }
        let mut empty = Mat::<c64>::zeros(0, 3);
        assert!(!three_products(
            empty.as_mut(),
            sample(0, 2, 1).as_ref(),
            sample(2, 3, 1).as_ref(),
            Par::Seq
        ));
        // Below MIN_DIM in any dimension the entry point declines; at it, it runs.
        let (a, b) = (sample(MIN_DIM, 40, 1), sample(40, MIN_DIM - 1, 2));
        let mut out = Mat::<c64>::zeros(MIN_DIM, MIN_DIM - 1);
        assert!(!gemm_3m(out.as_mut(), a.as_ref(), b.as_ref(), Par::Seq));
        let (a, b) = (sample(MIN_DIM, 40, 1), sample(40, MIN_DIM, 2));
        let mut out = Mat::<c64>::zeros(MIN_DIM, MIN_DIM);
        assert!(gemm_3m(out.as_mut(), a.as_ref(), b.as_ref(), Par::Seq));
        // Wrong shapes are refused rather than read out of bounds.
        let mut out = Mat::<c64>::zeros(3, 3);
        assert!(!three_products(
            out.as_mut(),
            sample(3, 2, 1).as_ref(),
            sample(3, 3, 1).as_ref(),
            Par::Seq
        ));
    }
}
