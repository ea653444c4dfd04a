//! Unit tests of the Dia kernels against naive loops on Dense.

use super::*;
use crate::convert::dia::{dense_to_dia, dia_to_dense};
use crate::ops::kron::kron_dia;
use crate::scalar::ONE;
use crate::storage::Dense;

fn banded(m: usize, n: usize, offsets: &[isize], seed: u64) -> Dense {
    let mut s = seed;
    Dense::from_fn(m, n, |i, j| {
        let o = j as isize - i as isize;
        if offsets.contains(&o) {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            c64::new(
                (s >> 40) as f64 / 1e6 - 8.0,
                (s >> 20 & 0xff) as f64 - 100.0,
            )
        } else {
            ZERO
        }
    })
}

fn naive(a: &Dense, b: &Dense) -> Dense {
    let (m, k) = a.shape();
    let n = b.shape().1;
    Dense::from_fn(m, n, |i, j| (0..k).map(|t| a.get(i, t) * b.get(t, j)).sum())
}

fn close(a: &Dense, b: &Dense) {
    assert_eq!(a.shape(), b.shape());
    for j in 0..a.shape().1 {
        for i in 0..a.shape().0 {
            assert!(
                (a.get(i, j) - b.get(i, j)).norm() < 1e-9,
                "({i}, {j}): {} vs {}",
                a.get(i, j),
                b.get(i, j)
            );
        }
    }
}

#[test]
fn blocked_product_crosses_row_blocks() {
    // More rows than one block of matmul_dia_dense, diagonals far above and below.
    let a = banded(2500, 2300, &[-1500, -3, 0, 2, 1000], 3);
    let b = banded(2300, 2, &[0, -1, -1000], 4);
    let ad = dense_to_dia(&a).unwrap();
    close(&matmul_dia_dense(&ad, &b).unwrap(), &naive(&a, &b));
    // Hermitian check and expectation on a square operator of the same kind, with
    // diagonals longer than the chunks of the fast comparison.
    let sq = dense_to_dia(&banded(2100, 2100, &[-1500, -3, 0, 2, 1000], 5)).unwrap();
    let h = add_dia(&sq, &transpose_dia(&sq, true).unwrap(), ONE).unwrap();
    assert!(isherm_dia(&h, 1e-12));
    assert!(!isherm_dia(&sq, 1e-12));
    let psi = banded(2100, 1, &[0, -1, -7, -2000], 6);
    let hpsi = naive(&dia_to_dense(&h).unwrap(), &psi);
    let want: c64 = (0..2100)
        .map(|i| psi.get(i, 0).conj() * hpsi.get(i, 0))
        .sum();
    let got = expect_dia_dense(&h, &psi).unwrap();
    assert!((got - want).norm() < 1e-6 * want.norm(), "{got} vs {want}");
}

#[test]
fn products_match_naive_loops() {
    for (m, k, n) in [(5, 5, 5), (4, 6, 3), (6, 3, 7), (1, 1, 1), (3, 8, 2)] {
        let a = banded(m, k, &[-2, 0, 1, 3], 1);
        let b = banded(k, n, &[-1, 0, 2], 2);
        let (ad, bd) = (dense_to_dia(&a).unwrap(), dense_to_dia(&b).unwrap());
        let want = naive(&a, &b);
        close(&matmul_dia_dense(&ad, &b).unwrap(), &want);
        close(&matmul_dense_dia(&a, &bd).unwrap(), &want);
        close(
            &dia_to_dense(&matmul_dia(&ad, &bd).unwrap()).unwrap(),
            &want,
        );
    }
}

#[test]
fn kron_transpose_and_sums() {
    let a = banded(3, 4, &[-1, 0, 2], 3);
    let b = banded(2, 2, &[-1, 1], 4);
    let r = banded(2, 3, &[0, 1], 5);
    let (ad, bd, rd) = (
        dense_to_dia(&a).unwrap(),
        dense_to_dia(&b).unwrap(),
        dense_to_dia(&r).unwrap(),
    );
    let kron = |x: &Dense, y: &Dense| {
        let (p, q) = y.shape();
        Dense::from_fn(x.shape().0 * p, x.shape().1 * q, |i, j| {
            x.get(i / p, j / q) * y.get(i % p, j % q)
        })
    };
    close(
        &dia_to_dense(&kron_dia(&ad, &bd).unwrap()).unwrap(),
        &kron(&a, &b),
    );
    close(
        &dia_to_dense(&kron_dia(&ad, &rd).unwrap()).unwrap(),
        &kron(&a, &r),
    );
    let at = dia_to_dense(&transpose_dia(&ad, true).unwrap()).unwrap();
    close(&at, &Dense::from_fn(4, 3, |i, j| a.get(j, i).conj()));
    let s = dia_to_dense(
        &add_dia(
            &ad,
            &dense_to_dia(&banded(3, 4, &[0, 1], 6)).unwrap(),
            c64::new(0.0, 2.0),
        )
        .unwrap(),
    )
    .unwrap();
    let b2 = banded(3, 4, &[0, 1], 6);
    close(
        &s,
        &Dense::from_fn(3, 4, |i, j| a.get(i, j) + c64::new(0.0, 2.0) * b2.get(i, j)),
    );
    assert_eq!(
        add_dia(&ad, &ad, c64::new(-1.0, 0.0))
            .unwrap()
            .num_diagonals(),
        0
    );
}

#[test]
fn reductions() {
    let a = banded(4, 4, &[-1, 0, 1], 7);
    let ad = dense_to_dia(&a).unwrap();
    let tr: c64 = (0..4).map(|i| a.get(i, i)).sum();
    assert!((trace_dia(&ad).unwrap() - tr).norm() < 1e-12);
    let h = add_dia(&ad, &transpose_dia(&ad, true).unwrap(), ONE).unwrap();
    assert!(isherm_dia(&h, 1e-12));
    assert!(!isherm_dia(&ad, 1e-12));
    assert!(iszero_dia(&mul_dia(&ad, ZERO).unwrap(), 0.0));
    let psi = Dense::from_fn(4, 1, |i, _| c64::new(i as f64, 1.0));
    let want: c64 = (0..4)
        .flat_map(|i| (0..4).map(move |j| (i, j)))
        .map(|(i, j)| psi.get(i, 0).conj() * a.get(i, j) * psi.get(j, 0))
        .sum();
    assert!((expect_dia_dense(&ad, &psi).unwrap() - want).norm() < 1e-9);
}

/// The Dia norms equal the Csr kernels' on the same matrix, the 1-norm and the max bit for
/// bit (each column summed in the same order), shifted or not, with or without a main
/// diagonal, square or not; NaN comes through.
#[test]
fn norms_match_the_csr_kernels() {
    use crate::convert::builtin::dense_to_csr;
    use crate::ops::norm;
    let mu = c64::new(0.5, -2.0);
    for (m, n, offsets) in [
        (7usize, 7usize, &[-2isize, 0, 3][..]),
        (7, 7, &[-6, -1, 2, 6][..]),
        (5, 9, &[-4, 1, 8][..]),
        (9, 4, &[-8, -3, 0][..]),
        (3, 3, &[][..]),
        (0, 0, &[][..]),
    ] {
        let d = banded(m, n, offsets, 5);
        let a = dense_to_dia(&d).unwrap();
        let c = dense_to_csr(&d).unwrap();
        assert_eq!(
            one_dia(&a, ZERO).unwrap().to_bits(),
            norm::one_csr(&c).to_bits()
        );
        assert_eq!(max_dia(&a).to_bits(), norm::max_csr(&c).to_bits());
        // Summed diagonal by diagonal, not row by row: equal to rounding.
        let (f, g) = (frobenius_dia(&a), norm::frobenius_csr(&c));
        assert!((f - g).abs() <= 4.0 * f64::EPSILON * g, "{f} vs {g}");
        if m == n {
            let want = norm::one_shifted_csr(&c, mu).unwrap();
            assert_eq!(
                one_dia(&a, mu).unwrap().to_bits(),
                want.to_bits(),
                "{offsets:?}"
            );
        }
    }
    let nan = dense_to_dia(&Dense::from_fn(3, 3, |i, j| {
        if i == j && i == 1 {
            c64::new(f64::NAN, 0.0)
        } else {
            ZERO
        }
    }))
    .unwrap();
    assert!(one_dia(&nan, ZERO).unwrap().is_nan());
    assert!(max_dia(&nan).is_nan());
    assert!(frobenius_dia(&nan).is_nan());
}

/// `isequal` of two Dia (and `isdiag` of one) answers as the Csr kernel on the same matrices:
/// shared diagonals that differ or agree within the tolerances, diagonals stored on one side
/// only (zero or not), NaN, and a shape mismatch as an error.
#[test]
fn isequal_matches_the_csr_kernel() {
    use crate::convert::builtin::dense_to_csr;
    use crate::ops::{Tol, compare::isequal_csr};
    let base = banded(8, 8, &[-3, 0, 2], 9);
    let variants = [
        base.clone(),
        Dense::from_fn(8, 8, |i, j| base.get(i, j) * c64::new(1.0 + 1e-9, 0.0)),
        Dense::from_fn(8, 8, |i, j| {
            base.get(i, j)
                + if j == i + 5 {
                    c64::new(1e-13, 0.0)
                } else {
                    ZERO
                }
        }),
        Dense::from_fn(8, 8, |i, j| {
            base.get(i, j) + if i == j + 7 { c64::new(0.0, 3.0) } else { ZERO }
        }),
        Dense::from_fn(8, 8, |i, j| if j == i + 2 { ZERO } else { base.get(i, j) }),
        Dense::from_fn(8, 8, |i, j| {
            if i == 4 && j == 4 {
                c64::new(f64::NAN, 0.0)
            } else {
                base.get(i, j)
            }
        }),
    ];
    let mut answers = [0usize; 2];
    for x in &variants {
        for y in &variants {
            let (a, b) = (dense_to_dia(x).unwrap(), dense_to_dia(y).unwrap());
            let (c, d) = (dense_to_csr(x).unwrap(), dense_to_csr(y).unwrap());
            for tol in [
                Tol {
                    atol: 0.0,
                    rtol: 0.0,
                },
                Tol {
                    atol: 1e-12,
                    rtol: 0.0,
                },
                Tol {
                    atol: 1e-12,
                    rtol: 1e-7,
                },
                Tol {
                    atol: 100.0,
                    rtol: 0.0,
                },
            ] {
                let want = isequal_csr(&c, &d, tol).unwrap();
                assert_eq!(isequal_dia(&a, &b, tol).unwrap(), want, "{tol:?}");
                answers[usize::from(want)] += 1;
            }
        }
    }
    assert!(answers[0] > 20 && answers[1] > 20, "{answers:?}");
    // isdiag likewise.
    for x in &variants {
        let (a, c) = (dense_to_dia(x).unwrap(), dense_to_csr(x).unwrap());
        for atol in [0.0, 1e-12, 1e3] {
            let want = crate::ops::compare::isdiag_csr(&c, atol);
            assert_eq!(isdiag_dia(&a, atol), want, "{atol}");
        }
    }
    let d = dense_to_dia(&banded(6, 4, &[0], 2)).unwrap();
    assert!(isdiag_dia(&d, 0.0));
    let other = dense_to_dia(&banded(8, 7, &[0], 1)).unwrap();
    assert!(isequal_dia(&dense_to_dia(&base).unwrap(), &other, Tol::default()).is_err());
}
