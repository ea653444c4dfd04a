//! Tests of the products: Dense·Dense (register kernel, three real products), Csr·Dense and
//! Csr·Csr.

use super::*;
use crate::error::Error;
use crate::scalar::ZERO;

/// Products from `gemm3m::MIN_WORK` multiply-adds go through three real products: equal
/// to faer's complex product within rounding in both layouts; a NaN or infinity in an
/// input keeps the complex product (and its special values), bit for bit.
#[test]
fn large_products_use_three_real_ones_where_values_allow() {
    let n = 130;
    assert!(n * n * n >= gemm3m::MIN_WORK);
    let f = |i: usize, j: usize| {
        c64::new(
            ((i * 7 + j * 3) % 11) as f64 - 5.0,
            ((i + 2 * j) % 5) as f64 * 0.25,
        )
    };
    let (a, b) = (
        Dense::from_fn(n, n, f),
        Dense::from_fn(n, n, |i, j| f(j, i + 1)),
    );
    let reference = |a: &Dense, b: &Dense| {
        let mut c = faer::Mat::<c64>::zeros(n, n);
        faer_matmul(
            c.as_mut(),
            Accum::Replace,
            a.as_ref(),
            b.as_ref(),
            ONE,
            faer::Par::Seq,
        );
        c
    };
    let want = reference(&a, &b);
    for (x, y) in [
        (a.clone(), b.clone()),
        (
            a.clone().into_layout(Layout::RowMajor).unwrap(),
            b.clone().into_layout(Layout::RowMajor).unwrap(),
        ),
    ] {
        let got = matmul_dense(&x, &y).unwrap();
        for j in 0..n {
            for i in 0..n {
                assert!((got.get(i, j) - want[(i, j)]).norm() <= 1e-12, "({i}, {j})");
            }
        }
    }
    let mut bad = a.as_ref().to_owned();
    bad[(3, 4)] = c64::new(f64::INFINITY, 0.0);
    bad[(9, 1)] = c64::new(0.0, f64::NAN);
    let bad = Dense::from(bad);
    let (got, want) = (matmul_dense(&bad, &b).unwrap(), reference(&bad, &b));
    let bits = |z: c64| (z.re.to_bits(), z.im.to_bits());
    assert!((0..n).all(|j| (0..n).all(|i| bits(got.get(i, j)) == bits(want[(i, j)]))));
}

/// Dense·Dense on both sides of the register kernel's limits (12 rows, 64 inner entries),
/// with either layout of B and a row-major A (which goes to faer): the definition to
/// rounding.
#[test]
fn dense_products_across_the_small_kernel_limits() {
    let v = |i: usize, j: usize, s: usize| {
        let h = (i * 131 + j * 71 + s * 17) % 97;
        c64::new(h as f64 / 13.0 - 3.0, (h % 11) as f64 - 5.0)
    };
    for (m, k, n) in [
        (1, 1, 1),
        (2, 3, 2),
        (11, 64, 3),
        (12, 64, 5),
        (12, 65, 2),
        (13, 4, 3),
        (3, 2, 0),
    ] {
        let a = Dense::from_fn(m, k, |i, j| v(i, j, 1));
        let b = Dense::from_fn(k, n, |i, j| v(i, j, 2));
        let layouts = [
            (a.clone(), b.clone()),
            (a.clone(), b.clone().into_layout(Layout::RowMajor).unwrap()),
            (a.clone().into_layout(Layout::RowMajor).unwrap(), b.clone()),
        ];
        for (x, y) in layouts {
            let c = matmul_dense(&x, &y).unwrap();
            assert_eq!(c.shape(), (m, n));
            for i in 0..m {
                for j in 0..n {
                    let want: c64 = (0..k).map(|t| a.get(i, t) * b.get(t, j)).sum();
                    let err = (c.get(i, j) - want).norm();
                    assert!(
                        err <= 1e-12 * (k as f64),
                        "{m}×{k}·{k}×{n} ({i}, {j}): {err}"
                    );
                }
            }
        }
    }
}

/// Csr·Dense of small Csr operators that store every entry (plain dots up to 8 multiply-adds,
/// then the register kernel on a padded copy of a) and of partly stored ones (the row dots),
/// against the sum over a's stored entries: odd and even row counts, at and past the kernel's
/// 12 rows and 64 inner entries, one column and several, both layouts of b. An infinity in b
/// reaches only the rows that store its row's column: a structural zero adds nothing (no
/// 0·∞ = NaN).
#[test]
fn small_csr_dense_products_match_the_definition() {
    let v = |i: usize, j: usize, s: usize| {
        let h = (i * 131 + j * 71 + s * 17) % 97;
        c64::new(h as f64 / 13.0 - 3.0, (h % 11) as f64 - 5.0)
    };
    // (m, k, n, every, infinite): entry (i, j) of a stored when (i + j) % every == 0; with
    // `infinite`, b(1, 0) is +∞.
    for (m, k, n, every, infinite) in [
        (1, 1, 2, 1, false),
        (2, 2, 2, 1, false),
        (2, 2, 2, 1, true),
        (2, 2, 2, 2, true),
        (1, 4, 2, 1, false),
        (4, 1, 2, 1, false),
        (2, 1, 4, 1, false),
        (3, 4, 2, 1, false),
        (7, 7, 7, 1, false),
        (10, 10, 10, 1, false),
        (10, 10, 10, 1, true),
        (10, 10, 1, 1, false),
        (12, 64, 3, 1, false),
        (12, 64, 3, 2, false),
        (10, 10, 4, 2, true),
        (11, 9, 4, 3, false),
        (13, 5, 3, 1, false),
        (12, 65, 2, 1, false),
    ] {
        let (mut r, mut c, mut x) = (vec![], vec![], vec![]);
        for (i, j) in (0..m).flat_map(|i| (0..k).map(move |j| (i, j))) {
            if (i + j) % every == 0 {
                r.push(i);
                c.push(j);
                x.push(v(i, j, 1));
            }
        }
        let a = Csr::from_triplets((m, k), &r, &c, &x).unwrap();
        let b = Dense::from_fn(k, n, |i, j| match (i, j) {
            (1, 0) if infinite => c64::new(f64::INFINITY, 0.0),
            _ => v(i, j, 2),
        });
        let (p, idx, val) = (a.indptr(), a.indices(), a.data());
        for y in [b.clone(), b.clone().into_layout(Layout::RowMajor).unwrap()] {
            let got = matmul_csr_dense(&a, &y).unwrap();
            for (i, j) in (0..m).flat_map(|i| (0..n).map(move |j| (i, j))) {
                let want: c64 = (p[i]..p[i + 1]).map(|t| val[t] * b.get(idx[t], j)).sum();
                let (g, case) = (got.get(i, j), format!("{m}×{k}·{k}×{n}/{every} ({i}, {j})"));
                if want.is_finite() {
                    assert!(
                        (g - want).norm() <= 1e-12 * k as f64,
                        "{case}: {g} against {want}"
                    );
                } else {
                    assert!(!g.is_finite(), "{case}: {g} against {want}");
                }
            }
        }
    }
}

#[test]
fn csr_product_matches_dense() {
    let a = Csr::from_triplets(
        (3, 2),
        &[0, 0, 2],
        &[0, 1, 1],
        &[c64::new(1.0, 1.0), c64::new(2.0, 0.0), c64::new(0.0, 3.0)],
    )
    .unwrap();
    let b = Csr::from_triplets(
        (2, 3),
        &[0, 1, 1],
        &[2, 0, 2],
        &[c64::new(1.0, 0.0), c64::new(4.0, 0.0), c64::new(0.0, -1.0)],
    )
    .unwrap();
    let c = matmul_csr(&a, &b).unwrap();
    assert!(c.as_csmat().check_compressed_structure().is_ok());
    let (ad, bd) = (
        crate::convert::builtin::csr_to_dense(&a).unwrap(),
        crate::convert::builtin::csr_to_dense(&b).unwrap(),
    );
    let cd = matmul_dense(&ad, &bd).unwrap();
    for i in 0..3 {
        for j in 0..3 {
            assert!((c.get(i, j) - cd.get(i, j)).norm() < 1e-14);
        }
    }
}

/// Every row emission path (narrow span, non-zero-word walk, sort) must give sorted,
/// summed rows equal to the naive triple loop.
#[test]
fn csr_product_every_emission_path() {
    let (m, k, n) = (7, 5, 1000);
    let (mut ar, mut ac, mut av) = (vec![], vec![], vec![]);
    for i in 0..m {
        for r in 0..k {
            // Row 6 is b's row 1 alone: 10 columns in 2 words (the narrow-span scan).
            if (i < 6 && (i + r) % 3 != 1) || (i == 6 && r == 1) {
                ar.push(i);
                ac.push(r);
                av.push(c64::new((i + 1) as f64, r as f64 - 2.0));
            }
        }
    }
    // Row 0 of b: two far-apart columns (rows of c without b's row 4 sort); row 1: a
    // block; rows 2–3: columns shared with the others, so products collide and sum; row 4:
    // 70 columns spread over the whole width (rows of c with it walk the non-zero words).
    let spread: Vec<usize> = (0..70).map(|t| t * 13 + 5).collect();
    let cols: [&[usize]; 5] = [
        &[999, 3],
        &[64, 65, 66, 67, 68, 69, 70, 71, 72, 130],
        &[3, 999, 500],
        &[70, 3],
        &spread,
    ];
    let (mut br, mut bc, mut bv) = (vec![], vec![], vec![]);
    for (r, cs) in cols.iter().enumerate() {
        for &c in *cs {
            br.push(r);
            bc.push(c);
            bv.push(c64::new(c as f64 / 100.0, (r + 1) as f64));
        }
    }
    let a = Csr::from_triplets((m, k), &ar, &ac, &av).unwrap();
    let b = Csr::from_triplets((k, n), &br, &bc, &bv).unwrap();
    let c = matmul_csr(&a, &b).unwrap();
    assert!(c.as_csmat().check_compressed_structure().is_ok());
    let mut want = vec![vec![ZERO; n]; m];
    for (&i, (&r, &x)) in ar.iter().zip(ac.iter().zip(&av)) {
        for (&rb, (&j, &y)) in br.iter().zip(bc.iter().zip(&bv)) {
            if rb == r {
                want[i][j] += x * y;
            }
        }
    }
    for (i, row) in want.iter().enumerate() {
        for (j, w) in row.iter().enumerate() {
            assert!((c.get(i, j) - w).norm() < 1e-12, "({i}, {j})");
        }
    }
    // An all-empty row in the middle and an empty product.
    let z = Csr::from_triplets((3, 5), &[0, 2], &[4, 0], &[ZERO, ZERO]).unwrap();
    assert_eq!(matmul_csr(&z, &b).unwrap().shape(), (3, n));
}

#[test]
fn inner_dimension_mismatch() {
    let e = matmul_dense(&Dense::zeros(2, 3), &Dense::zeros(2, 3)).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }));
}

/// A wide `a·b†` goes through the columns `b` stores: the same Csr matrix (pattern and bits)
/// as through `b`'s whole adjoint, on random patterns with some columns stored by `a` alone,
/// some by `b` alone, and rows of either left empty.
#[test]
fn wide_matmul_dag_matches_the_whole_adjoint_bit_for_bit() {
    let mut next = crate::testing::xorshift(0x9e37_79b9_7f4a_7c15_u64);
    for (m, p, cols, per_row) in [
        (1, 1, 5000, 3),
        (4, 3, 6000, 5),
        (9, 7, 20_000, 9),
        (2, 5, 800, 0),
    ] {
        let random = |rows: usize, next: &mut dyn FnMut() -> u64| {
            let (mut r, mut c, mut v) = (vec![], vec![], vec![]);
            for i in 0..rows {
                // Columns from a small common range (shared between a and b) or anywhere.
                for _ in 0..(next() as usize % (per_row + 1)) {
                    let col = if next() & 1 == 0 {
                        next() as usize % 40
                    } else {
                        next() as usize % cols
                    };
                    let x = |n: u64| (n % 1000) as f64 / 7.0 - 60.0;
                    r.push(i);
                    c.push(col);
                    v.push(c64::new(x(next()), x(next())));
                }
            }
            Csr::from_triplets((rows, cols), &r, &c, &v).unwrap()
        };
        let a = random(m, &mut next);
        let b = random(p, &mut next);
        assert!(
            cols / WIDE_COLUMNS_PER_ENTRY > a.nnz() + b.nnz(),
            "takes the wide path"
        );
        let wide = matmul_dag_csr(&a, &b).unwrap();
        let whole = matmul_csr(&a, &transpose_csr(&b, true).unwrap()).unwrap();
        assert_eq!(wide.shape(), (m, p));
        assert_eq!(wide.indptr(), whole.indptr());
        assert_eq!(wide.indices(), whole.indices());
        let bits = |x: &Csr| -> Vec<(u64, u64)> {
            x.data()
                .iter()
                .map(|z| (z.re.to_bits(), z.im.to_bits()))
                .collect()
        };
        assert_eq!(bits(&wide), bits(&whole));
    }
}

/// `a·b†` of operands with 2⁴⁰ columns: `b`'s adjoint would need 2⁴⁰ + 1 row pointers; the
/// product is formed from the stored entries, and a 3 × 2 result matches the definition.
#[test]
fn matmul_dag_of_operands_too_wide_to_transpose() {
    let n = 1usize << 40;
    let v = |re: f64, im: f64| c64::new(re, im);
    let a = Csr::from_triplets(
        (3, n),
        &[0, 0, 1, 2, 2],
        &[3, n - 1, 1 << 35, 3, 9],
        &[
            v(1.0, 0.0),
            v(2.0, 1.0),
            v(-1.0, 0.0),
            v(0.5, 0.5),
            v(4.0, 0.0),
        ],
    )
    .unwrap();
    let b = Csr::from_triplets(
        (2, n),
        &[0, 0, 1, 1],
        &[3, 1 << 35, n - 1, 8],
        &[v(0.0, 2.0), v(3.0, 0.0), v(1.0, -1.0), v(7.0, 0.0)],
    )
    .unwrap();
    assert!(
        transpose_csr(&b, true).is_err(),
        "the adjoint cannot be stored"
    );
    let c = matmul_dag_csr(&a, &b).unwrap();
    assert_eq!(c.shape(), (3, 2));
    let want = |i: usize, j: usize| -> c64 {
        let (row_a, row_b) = (
            a.indices()[a.indptr()[i]..a.indptr()[i + 1]]
                .iter()
                .zip(&a.data()[a.indptr()[i]..]),
            (b.indptr()[j]..b.indptr()[j + 1]).map(|k| (b.indices()[k], b.data()[k])),
        );
        let row_b: Vec<(usize, c64)> = row_b.collect();
        row_a
            .map(|(&c, &x)| {
                row_b
                    .iter()
                    .filter(|e| e.0 == c)
                    .map(|e| x * e.1.conj())
                    .sum::<c64>()
            })
            .sum()
    };
    for i in 0..3 {
        for j in 0..2 {
            assert_eq!(c.get(i, j), want(i, j), "({i}, {j})");
        }
    }
    // Row 0: 1·conj(2i) (column 3) + (2 + i)·conj(1 − i) (column n − 1); row 1: −1·3.
    assert_eq!(c.get(0, 0), v(0.0, -2.0));
    assert_eq!(c.get(0, 1), v(1.0, 3.0));
    assert_eq!(c.get(1, 0), v(-3.0, 0.0));
    assert_eq!(c.get(2, 1), v(0.0, 0.0));
}
