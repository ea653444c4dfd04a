//! The matrix exponential from products only: the degree-selected Taylor approximations of
//! Bader, Blanes and Casas, "Computing the Matrix Exponential with an Optimized Taylor Polynomial
//! Approximation", *Mathematics* 7 (2019) 1174, doi:10.3390/math7121174 — the algorithm behind
//! `torch.linalg.matrix_exp`.
//!
//! The 1-norm picks the cheapest of T₁, T₂, T₄, T₈, T₁₂, T₁₈ whose backward-error bound θ
//! (double precision, the paper's table) covers it; beyond θ₁₈ the matrix is scaled by 2⁻ˢ and
//! T₁₈ squared `s` times. T₈, T₁₂ and T₁₈ are evaluated with 3, 4 and 5 products instead of the
//! 4, 5 and 7 of Paterson–Stockmeyer. The evaluation is written once against [`Powers`], so the
//! GPU runs it on cuBLAS products and the unit tests run the same code on the CPU.

// The coefficients are written as the paper publishes them.
#![allow(clippy::excessive_precision)]

use crate::error::Result;

/// What the evaluation needs from a square matrix type.
pub(crate) trait Powers: Sized {
    /// `self · other`.
    fn mul(&self, other: &Self) -> Result<Self>;
    /// `self · other + acc`, in `acc`'s storage where the type can (the GPU: Zgemm with β = 1),
    /// so the sum is not a pass of its own.
    fn mul_add(&self, other: &Self, acc: Self) -> Result<Self>;
    /// `c₀·I + Σ cᵢ·xᵢ` over one or more terms (five at most here), all of the same shape.
    fn comb(c0: f64, terms: &[(f64, &Self)]) -> Result<Self>;
    /// One combination per row of `coefs` of the same four terms, `row[0]·I + Σₜ row[t + 1]·xₜ`
    /// (at most five rows), where the type can in one pass that reads each term once.
    fn combs(xs: [&Self; 4], coefs: &[[f64; 5]]) -> Result<Vec<Self>>;
}

/// θ for each degree (1, 2, 4, 8, 12, 18): the largest 1-norm for which the approximation's relative backward error
/// stays below the unit roundoff of doubles (the paper's values for double precision).
pub(crate) const THETAS: [f64; 6] = [
    2.220446049250313e-16,
    2.580956802971767e-08,
    3.397168839976962e-04,
    4.991228871115323e-02,
    2.996158913811580e-01,
    1.090863719290036e+00,
];

/// The degree and number of squarings for a matrix of 1-norm `norm` (finite, ≥ 0).
///
/// Returns `(index of the degree in 1, 2, 4, 8, 12, 18; squarings)`.
pub(crate) fn plan(norm: f64) -> (usize, u32) {
    if let Some(i) = THETAS.iter().position(|&t| norm <= t) {
        return (i, 0);
    }
    // norm > θ₁₈: the smallest s with norm / 2ˢ ≤ θ₁₈ (at most 1077 for a finite norm).
    let s = (norm / THETAS[5]).log2().ceil().max(0.0) as u32;
    (5, s)
}

/// `T_d(a)` for the degree d = (1, 2, 4, 8, 12, 18)[index].
pub(crate) fn taylor<M: Powers>(a: &M, index: usize) -> Result<M> {
    match index {
        0 => M::comb(1.0, &[(1.0, a)]),
        1 => {
            let a2 = a.mul(a)?;
            M::comb(1.0, &[(1.0, a), (0.5, &a2)])
        }
        2 => {
            // I + A + A²·(I/2 + A/6 + A²/24)
            let a2 = a.mul(a)?;
            let inner = M::comb(0.5, &[(1.0 / 6.0, a), (1.0 / 24.0, &a2)])?;
            let tail = a2.mul(&inner)?;
            M::comb(1.0, &[(1.0, a), (1.0, &tail)])
        }
        3 => t8(a),
        4 => t12(a),
        _ => t18(a),
    }
}

/// `exp(a)`: [`plan`] from `norm` (the 1-norm of `a`), scale, evaluate, square. `scale(a, f)`
/// returns `f·a`.
pub(crate) fn expm<M: Powers>(a: &M, norm: f64, scale: impl Fn(&M, f64) -> Result<M>) -> Result<M> {
    let (index, s) = plan(norm);
    let mut e = if s == 0 {
        taylor(a, index)?
    } else {
        taylor(&scale(a, 0.5f64.powi(s as i32))?, index)?
    };
    for _ in 0..s {
        e = e.mul(&e)?;
    }
    Ok(e)
}

/// T₈ in 3 products (the paper's eq. (10)); it is exactly the degree-8 Taylor polynomial.
fn t8<M: Powers>(a: &M) -> Result<M> {
    let r = 177f64.sqrt();
    let x3 = 2.0 / 3.0;
    let x1 = x3 * (1.0 + r) / 88.0;
    let x2 = x3 * (1.0 + r) / 352.0;
    let x4 = (-271.0 + 29.0 * r) / (315.0 * x3);
    let x5 = (-11.0 + 11.0 * r) / (1260.0 * x3);
    let x6 = (-99.0 + 11.0 * r) / (5040.0 * x3);
    // x₃² here: with x₃ alone (as some implementations have it) the degree 5–8 coefficients
    // miss 1/k! and the error at θ₈ is 10⁻¹⁰ (the unit test below catches it).
    let x7 = (89.0 - r) / (5040.0 * x3 * x3);
    let y2 = (857.0 - 58.0 * r) / 630.0;
    let a2 = a.mul(a)?;
    let a4 = a2.mul(&M::comb(0.0, &[(x1, a), (x2, &a2)])?)?;
    let left = M::comb(0.0, &[(x3, &a2), (1.0, &a4)])?;
    let right = M::comb(x4, &[(x5, a), (x6, &a2), (x7, &a4)])?;
    let a8 = left.mul(&right)?;
    M::comb(1.0, &[(1.0, a), (y2, &a2), (1.0, &a8)])
}

/// The coefficients of T₁₂: row i gives Bᵢ over (I, A, A², A³) (the paper's Table 3).
const B12: [[f64; 4]; 4] = [
    [
        9.0198e-16,
        0.46932117595418237389,
        -0.20099424927047284052,
        -0.04623946134063071740,
    ],
    [
        5.31597895759871264183,
        1.19926790417132231573,
        0.01179296240992997031,
        0.01108844528519167989,
    ],
    [
        0.18188869982170434744,
        0.05502798439925399070,
        0.09351590770535414968,
        0.00610700528898058230,
    ],
    [
        -2.0861320e-13,
        -0.13181061013830184015,
        -0.02027855540589259079,
        -0.00675951846863086359,
    ],
];

/// T₁₂ in 4 products: A⁶ = B₂ + B₃², T₁₂ = B₀ + (B₁ + A⁶)·A⁶.
///
/// As in [`t18`], the four Bᵢ come from one pass ([`Powers::combs`]; A³ stands in as a fourth
/// term with coefficient 0, read from the same addresses as the third) and the sums with a
/// product are accumulated by the product.
fn t12<M: Powers>(a: &M) -> Result<M> {
    let a2 = a.mul(a)?;
    let a3 = a2.mul(a)?;
    let rows = B12.map(|[c0, c1, c2, c3]| [c0, c1, c2, c3, 0.0]);
    let mut b = M::combs([a, &a2, &a3, &a3], &rows)?.into_iter();
    let (Some(b0), Some(b1), Some(b2), Some(b3)) = (b.next(), b.next(), b.next(), b.next()) else {
        return Err(incomplete());
    };
    let a6 = b3.mul_add(&b3, b2)?;
    let left = M::comb(0.0, &[(1.0, &b1), (1.0, &a6)])?;
    left.mul_add(&a6, b0)
}

/// The error of a [`Powers::combs`] that returned fewer matrices than rows (a broken
/// implementation, not an input).
fn incomplete() -> crate::error::Error {
    crate::error::Error::argument("expm", "the Taylor combinations came back incomplete")
}

/// The coefficients of T₁₈: row i gives Bᵢ over (I, A, A², A³, A⁶) (the paper's eq. (12)).
const B18: [[f64; 5]; 5] = [
    [
        0.0,
        -1.00365581030144618291e-01,
        -8.02924648241156932449e-03,
        -8.92138498045729985177e-04,
        0.0,
    ],
    [
        0.0,
        3.97849749499645077844e-01,
        1.36783778460411720168e+00,
        4.98289622525382669416e-01,
        -6.37898194594723280150e-04,
    ],
    [
        -1.09676396052962061844e+01,
        1.68015813878906206114e+00,
        5.71779846478865511061e-02,
        -6.98210122488052056106e-03,
        3.34975017086070470649e-05,
    ],
    [
        -9.04316832390810593223e-02,
        -6.76404519071381882256e-02,
        6.75961301770459654925e-02,
        2.95552570429315521194e-02,
        -1.39180257516060693404e-05,
    ],
    [
        0.0,
        0.0,
        -9.23364619367118555360e-02,
        -1.69364939002081722752e-02,
        -1.40086798182036094347e-05,
    ],
];

/// T₁₈ in 5 products: A⁹ = B₀·B₄ + B₃, T₁₈ = B₁ + (B₂ + A⁹)·A⁹.
///
/// The five Bᵢ come from one pass over A, A², A³, A⁶ ([`Powers::combs`]), and both sums with a
/// product are accumulated by the product ([`Powers::mul_add`]). Against a combination per Bᵢ
/// with the product added as a fifth term (34 passes over an n × n matrix, with the norms),
/// this moves 16 (docs/benchmarks/gpu.md).
fn t18<M: Powers>(a: &M) -> Result<M> {
    let a2 = a.mul(a)?;
    let a3 = a2.mul(a)?;
    let a6 = a3.mul(&a3)?;
    let mut b = M::combs([a, &a2, &a3, &a6], &B18)?.into_iter();
    let (Some(b0), Some(b1), Some(b2), Some(b3), Some(b4)) =
        (b.next(), b.next(), b.next(), b.next(), b.next())
    else {
        return Err(incomplete());
    };
    let a9 = b0.mul_add(&b4, b3)?;
    let left = M::comb(0.0, &[(1.0, &b2), (1.0, &a9)])?;
    left.mul_add(&a9, b1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scalar::c64;
    use std::cell::Cell;

    /// The Taylor degrees, in order of cost.
    const DEGREES: [u32; 6] = [1, 2, 4, 8, 12, 18];
    /// Products each degree costs (before squarings).
    const PRODUCTS: [u32; 6] = [0, 1, 2, 3, 4, 5];

    /// A small dense matrix for the tests, column-major, counting its products.
    #[derive(Clone, Debug)]
    struct M {
        n: usize,
        v: Vec<c64>,
    }

    thread_local! {
        static PRODUCTS_DONE: Cell<u32> = const { Cell::new(0) };
    }

    impl M {
        fn norm1(&self) -> f64 {
            (0..self.n)
                .map(|j| {
                    (0..self.n)
                        .map(|i| self.v[i + j * self.n].norm())
                        .sum::<f64>()
                })
                .fold(0.0, f64::max)
        }
        fn scaled(&self, f: f64) -> M {
            M {
                n: self.n,
                v: self.v.iter().map(|z| z * f).collect(),
            }
        }
    }

    impl Powers for M {
        fn mul(&self, o: &M) -> Result<M> {
            PRODUCTS_DONE.with(|c| c.set(c.get() + 1));
            let n = self.n;
            let mut v = vec![c64::new(0.0, 0.0); n * n];
            for j in 0..n {
                for k in 0..n {
                    let b = o.v[k + j * n];
                    for i in 0..n {
                        v[i + j * n] += self.v[i + k * n] * b;
                    }
                }
            }
            Ok(M { n, v })
        }
        fn mul_add(&self, o: &M, acc: M) -> Result<M> {
            let p = self.mul(o)?;
            M::comb(0.0, &[(1.0, &p), (1.0, &acc)])
        }
        fn combs(xs: [&M; 4], coefs: &[[f64; 5]]) -> Result<Vec<M>> {
            assert!((1..=5).contains(&coefs.len()), "{} rows", coefs.len());
            coefs
                .iter()
                .map(|c| {
                    M::comb(
                        c[0],
                        &[(c[1], xs[0]), (c[2], xs[1]), (c[3], xs[2]), (c[4], xs[3])],
                    )
                })
                .collect()
        }
        fn comb(c0: f64, terms: &[(f64, &M)]) -> Result<M> {
            assert!((1..=5).contains(&terms.len()), "{} terms", terms.len());
            let n = terms[0].1.n;
            let mut v = vec![c64::new(0.0, 0.0); n * n];
            for (c, x) in terms {
                for (o, z) in v.iter_mut().zip(&x.v) {
                    *o += z * c;
                }
            }
            for i in 0..n {
                v[i + i * n] += c0;
            }
            Ok(M { n, v })
        }
    }

    /// exp(a) by plain Taylor of degree 30 after scaling to norm ≤ 1/2: accurate to about
    /// 1e-16 relative, slow, independent of the code under test.
    fn reference(a: &M) -> M {
        let s = (a.norm1() / 0.5).log2().ceil().max(0.0) as i32;
        let x = a.scaled(0.5f64.powi(s));
        let mut term = M::comb(1.0, &[(0.0, &x)]).unwrap();
        let mut sum = term.clone();
        for k in 1..=30 {
            term = term.mul(&x).unwrap().scaled(1.0 / k as f64);
            sum = M::comb(0.0, &[(1.0, &sum), (1.0, &term)]).unwrap();
        }
        for _ in 0..s {
            sum = sum.mul(&sum).unwrap();
        }
        sum
    }

    fn random(n: usize, seed: u64) -> M {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move || {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        };
        M {
            n,
            v: (0..n * n).map(|_| c64::new(next(), next())).collect(),
        }
    }

    #[test]
    fn plan_picks_the_cheapest_degree_that_covers_the_norm() {
        assert_eq!(plan(0.0), (0, 0));
        assert_eq!(plan(1e-20), (0, 0));
        assert_eq!(plan(1e-10), (1, 0));
        assert_eq!(plan(1e-4), (2, 0));
        assert_eq!(plan(0.04), (3, 0));
        assert_eq!(plan(0.2), (4, 0));
        assert_eq!(plan(1.0), (5, 0));
        assert_eq!(plan(THETAS[5]), (5, 0));
        assert_eq!(plan(2.0 * THETAS[5]), (5, 1));
        assert_eq!(plan(2.1 * THETAS[5]), (5, 2));
        assert_eq!(plan(f64::MAX).0, 5);
        assert!(plan(f64::MAX).1 <= 1100);
    }

    #[test]
    fn every_degree_matches_the_reference_at_its_threshold() {
        // At each θ (the worst case of its interval) and beyond θ₁₈, for n = 1, 6, 12.
        let mut norms: Vec<f64> = THETAS.to_vec();
        norms.extend([0.7, 3.0, 40.0]);
        for n in [1, 6, 12] {
            for (k, &target) in norms.iter().enumerate() {
                let r = random(n, 100 + k as u64 + 7 * n as u64);
                let a = r.scaled(target / r.norm1());
                let (index, s) = plan(a.norm1());
                PRODUCTS_DONE.with(|c| c.set(0));
                let got = expm(&a, a.norm1(), |m, f| Ok(m.scaled(f))).unwrap();
                let used = PRODUCTS_DONE.with(|c| c.get());
                assert_eq!(used, PRODUCTS[index] + s, "products at norm {target}");
                let want = reference(&a);
                let scale = want.norm1().max(1.0);
                let err = got
                    .v
                    .iter()
                    .zip(&want.v)
                    .map(|(x, y)| (x - y).norm())
                    .fold(0.0, f64::max);
                assert!(
                    err <= 1e-13 * scale,
                    "n = {n}, ‖a‖₁ = {target}: degree {}, {s} squarings, error {err:e}",
                    DEGREES[index]
                );
            }
        }
    }

    #[test]
    fn t18_costs_five_products_at_norm_one() {
        // The bench's case (‖a‖₁ ≈ 1): 5 products, where Paterson–Stockmeyer took 7.
        let (index, s) = plan(1.0);
        assert_eq!((DEGREES[index], PRODUCTS[index], s), (18, 5, 0));
    }
}
