//! Large complex products by three real ones (the "3M" method): `(Ar + iAi)(Br + iBi)` with
//! `T1 = Ar·Br`, `T2 = Ai·Bi`, `T3 = (Ar + Ai)(Br + Bi)`, then `Re = T1 − T2` and
//! `Im = T3 − T1 − T2`.
//!
//! Three real products do 6mkn flops against the complex product's 8mkn, and faer's real
//! kernel runs at about the complex kernel's flop rate, so from a few hundred rows the product
//! takes about 0.8 of the time (docs/benchmarks.md). This is what closes the gap to numpy's
//! OpenBLAS `zgemm` on the development VM, which faer's complex kernel did not.
//!
//! Accuracy: the error of an entry is bounded by about k·u·Σₜ (|Re aᵢₜ| + |Im aᵢₜ|)·
//! (|Re bₜⱼ| + |Im bₜⱼ|) (u the unit roundoff): normwise like the complex product's, with a
//! constant a few times larger for the imaginary part, which loses relative accuracy where it
//! is much smaller than the real part (Higham, *Accuracy and Stability of Numerical
//! Algorithms*, 2nd ed., §23.2.4). To keep the special values of the complex product, the method
//! is only used when every part of both inputs is finite and at most 2⁴⁸⁰ in magnitude (so no
//! sum or product overflows where the complex product would not); otherwise, and when its
//! scratch (three times the result, or more for long inner dimensions) does not fit within
//! [`crate::dense_limit`] or cannot be allocated, the caller runs the complex product.

use faer::linalg::matmul::matmul;
use faer::reborrow::ReborrowMut;
use faer::{Accum, ContiguousFwd, Mat, MatMut, MatRef, Par};
use rayon::prelude::*;

use crate::scalar::c64;

/// Products of at least this many complex multiply-adds (m·k·n) use the 3M method: from
/// n = 128 (this value) it was 7–15 % faster on the development VM, at n = 100 level, at n = 64
/// 10 % slower (docs/benchmarks.md).
pub(crate) const MIN_WORK: usize = 1 << 21;

/// Products with a dimension below this keep the complex product: the split and combine
/// passes (O(mk + kn + mn)) are then not small against the product, and the 3M gain was only
/// measured on square shapes.
pub(crate) const MIN_DIM: usize = 32;

/// The largest magnitude of a part for which the method is used (2⁴⁸⁰).
const BOUND: f64 = f64::from_bits((1023 + 480) << 52);

/// `out ← a·b` by three real products; returns `false` where the method does not apply: a
/// dimension below [`MIN_DIM`], a non-finite or huge part, inputs with no unit stride, an `out`
/// whose columns are not contiguous, or scratch memory over the dense limit or refused. These
/// are decided before `out` is written; the one later `false` (a scratch matrix whose columns
/// are not contiguous, which faer's `Mat` never has) comes after its real parts. Callers run
/// the complex product with `Accum::Replace` on `false`, so what `out` holds then is
/// overwritten.
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
fn three_products(out: MatMut<'_, c64>, a: MatRef<'_, c64>, b: MatRef<'_, c64>, par: Par) -> bool {
    let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
    if b.nrows() != k || out.nrows() != m || out.ncols() != n || m == 0 || n == 0 || k == 0 {
        return false;
    }
    let scratch = [m.checked_mul(k), k.checked_mul(n), m.checked_mul(n)]
        .into_iter()
        .try_fold(0usize, |s, x| s.checked_add(x?.checked_mul(16)?));
    if scratch.is_none_or(|bytes| bytes > crate::engine::dense_limit()) {
        return false;
    }
    let Some(mut out) = out.try_as_col_major_mut() else {
        return false;
    };
    let (Some(pa), Some(pb)) = (Parts::split(a, par), Parts::split(b, par)) else {
        return false;
    };
    let (Some(mut t1), Some(mut t2)) = (zeros(m, n), zeros(m, n)) else {
        return false;
    };
    matmul(t1.as_mut(), Accum::Replace, pa.re(), pb.re(), 1.0, par);
    matmul(t2.as_mut(), Accum::Replace, pa.im(), pb.im(), 1.0, par);
    // Re = T1 − T2 into `out`; T1 + T2 kept in `t1`.
    let real = |mut o: MatMut<'_, c64, usize, usize, ContiguousFwd>,
                mut x: MatMut<'_, f64, usize, usize, ContiguousFwd>,
                y: MatRef<'_, f64, usize, usize, ContiguousFwd>| {
        for j in 0..o.ncols() {
            let (o, x, y) = (
                o.rb_mut().col_mut(j).as_slice_mut(),
                x.rb_mut().col_mut(j).as_slice_mut(),
                y.col(j).as_slice(),
            );
            for ((o, x), &y) in o.iter_mut().zip(x).zip(y) {
                *o = c64::new(*x - y, 0.0);
                *x += y;
            }
        }
    };
    let (Some(x), Some(y)) = (
        t1.as_mut().try_as_col_major_mut(),
        t2.as_ref().try_as_col_major(),
    ) else {
        return false;
    };
    match par {
        Par::Seq => real(out.rb_mut(), x, y),
        Par::Rayon(t) => {
            let t = t.get();
            out.rb_mut()
                .par_col_partition_mut(t)
                .zip(x.par_col_partition_mut(t))
                .zip(y.par_col_partition(t))
                .for_each(|((o, x), y)| real(o, x, y));
        }
    }
    let (sa, sb) = (pa.sum(par), pb.sum(par));
    matmul(t2.as_mut(), Accum::Replace, sa.view(), sb.view(), 1.0, par);
    // Im = T3 − (T1 + T2).
    let imag = |mut o: MatMut<'_, c64, usize, usize, ContiguousFwd>,
                x: MatRef<'_, f64, usize, usize, ContiguousFwd>,
                z: MatRef<'_, f64, usize, usize, ContiguousFwd>| {
        for j in 0..o.ncols() {
            let (o, x, z) = (
                o.rb_mut().col_mut(j).as_slice_mut(),
                x.col(j).as_slice(),
                z.col(j).as_slice(),
            );
            for ((o, &x), &z) in o.iter_mut().zip(x).zip(z) {
                o.im = z - x;
            }
        }
    };
    let (Some(x), Some(z)) = (
        t1.as_ref().try_as_col_major(),
        t2.as_ref().try_as_col_major(),
    ) else {
        return false;
    };
    match par {
        Par::Seq => imag(out, x, z),
        Par::Rayon(t) => {
            let t = t.get();
            out.par_col_partition_mut(t)
                .zip(x.par_col_partition(t))
                .zip(z.par_col_partition(t))
                .for_each(|((o, x), z)| imag(o, x, z));
        }
    }
    true
}

/// A zero real matrix, allocated fallibly.
fn zeros(rows: usize, cols: usize) -> Option<Mat<f64>> {
    let mut mat = Mat::<f64>::new();
    mat.try_reserve(rows, cols).ok()?;
    mat.resize_with(rows, cols, |_, _| 0.0);
    Some(mat)
}

/// The real and imaginary parts of a complex matrix, stored in the orientation in which the
/// source's columns (or rows, then `transposed`) are contiguous.
struct Parts {
    re: Mat<f64>,
    im: Mat<f64>,
    transposed: bool,
}

impl Parts {
    /// `None` if a part is non-finite or above [`BOUND`], if neither stride of `v` is 1, or if
    /// the allocator refuses.
    fn split(v: MatRef<'_, c64>, par: Par) -> Option<Parts> {
        let (v, transposed) = match (v.try_as_col_major(), v.transpose().try_as_col_major()) {
            (Some(v), _) => (v, false),
            (None, Some(t)) => (t, true),
            (None, None) => return None,
        };
        let (rows, cols) = (v.nrows(), v.ncols());
        let (mut re, mut im) = (zeros(rows, cols)?, zeros(rows, cols)?);
        // Whether every part of the block is finite and at most BOUND.
        let block = |v: MatRef<'_, c64, usize, usize, ContiguousFwd>,
                     mut re: MatMut<'_, f64, usize, usize, ContiguousFwd>,
                     mut im: MatMut<'_, f64, usize, usize, ContiguousFwd>| {
            let mut within = true;
            for j in 0..v.ncols() {
                let (src, r, i) = (
                    v.col(j).as_slice(),
                    re.rb_mut().col_mut(j).as_slice_mut(),
                    im.rb_mut().col_mut(j).as_slice_mut(),
                );
                for ((r, i), z) in r.iter_mut().zip(i).zip(src) {
                    (*r, *i) = (z.re, z.im);
                    // `<=` is false for NaN as well as for infinities and huge parts.
                    within &= z.re.abs() <= BOUND && z.im.abs() <= BOUND;
                }
            }
            within
        };
        let (r, i) = (
            re.as_mut().try_as_col_major_mut()?,
            im.as_mut().try_as_col_major_mut()?,
        );
        let within = match par {
            Par::Seq => block(v, r, i),
            Par::Rayon(t) => {
                let t = t.get();
                v.par_col_partition(t)
                    .zip(r.par_col_partition_mut(t))
                    .zip(i.par_col_partition_mut(t))
                    .map(|((v, r), i)| block(v, r, i))
                    .reduce(|| true, |x, y| x && y)
            }
        };
        within.then_some(Parts { re, im, transposed })
    }

    fn orient<'a>(&self, m: &'a Mat<f64>) -> MatRef<'a, f64> {
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

    /// `re + im`, overwriting `re`.
    fn sum(mut self, par: Par) -> Summed {
        let add = |mut r: MatMut<'_, f64>, i: MatRef<'_, f64>| {
            for j in 0..r.ncols() {
                for (r, &i) in r.rb_mut().col_mut(j).iter_mut().zip(i.col(j).iter()) {
                    *r += i;
                }
            }
        };
        match par {
            Par::Seq => add(self.re.as_mut(), self.im.as_ref()),
            Par::Rayon(t) => {
                let t = t.get();
                self.re
                    .as_mut()
                    .par_col_partition_mut(t)
                    .zip(self.im.as_ref().par_col_partition(t))
                    .for_each(|(r, i)| add(r, i));
            }
        }
        Summed {
            sum: self.re,
            transposed: self.transposed,
        }
    }
}

/// `re + im` of a [`Parts`], in its orientation.
struct Summed {
    sum: Mat<f64>,
    transposed: bool,
}

impl Summed {
    fn view(&self) -> MatRef<'_, f64> {
        if self.transposed {
            self.sum.as_ref().transpose()
        } else {
            self.sum.as_ref()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                let mut got = Mat::<c64>::zeros(m, n);
                assert!(three_products(got.as_mut(), x, y, Par::Seq), "{m}×{k}×{n}");
                // The column blocks of the parallel passes give the serial result.
                let mut split = Mat::<c64>::zeros(m, n);
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
