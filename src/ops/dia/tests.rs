//! Unit tests of the Dia kernels against naive loops on Dense.

use super::*;
use crate::convert::dia::{dense_to_dia, dia_to_dense};
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
