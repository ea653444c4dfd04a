//! Products, expectation values, norms, predicates, tidyup and constructors: every
//! combination of input kinds against naive loops or closed forms (atol 1e-10, rtol 1e-7).

mod common;

use common::*;
use polymat::ops::{self, norm};
use polymat::{Data, Error, Out, c64};

fn conj_t(a: &Ref) -> Ref {
    map(&transpose(a), |x| x.conj())
}

fn dot(a: &[c64], b: &[c64]) -> c64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn col(a: &Ref) -> Vec<c64> {
    a.iter().map(|r| r[0]).collect()
}

#[test]
fn inner_and_inner_op() {
    let mut rng = Rng::new(11);
    for n in [1, 2, 7] {
        let bra = random_ref(&mut rng, 1, n, 0.7);
        let ket = random_ref(&mut rng, n, 1, 0.7);
        let ket2 = random_ref(&mut rng, n, 1, 0.7);
        let op = random_ref(&mut rng, n, n, 0.5);
        let want_bra = dot(&bra[0], &col(&ket2));
        let want_ket: c64 = col(&ket)
            .iter()
            .zip(col(&ket2))
            .map(|(a, b)| a.conj() * b)
            .sum();
        let opk = matmul(&op, &ket2);
        for ka in KINDS {
            for kb in KINDS {
                let got = ops::inner(&make(&bra, ka), &make(&ket2, kb)).unwrap();
                assert!(close(got, want_bra), "inner bra ({ka}, {kb})");
                if n > 1 {
                    let got = ops::inner(&make(&ket, ka), &make(&ket2, kb)).unwrap();
                    assert!(close(got, want_ket), "inner ket ({ka}, {kb})");
                }
                for ko in KINDS {
                    let got =
                        ops::inner_op(&make(&bra, ka), &make(&op, ko), &make(&ket2, kb)).unwrap();
                    assert!(
                        close(got, dot(&bra[0], &col(&opk))),
                        "inner_op bra ({ka}, {ko}, {kb})"
                    );
                    if n > 1 {
                        let got = ops::inner_op(&make(&ket, ka), &make(&op, ko), &make(&ket2, kb))
                            .unwrap();
                        let want: c64 = col(&ket)
                            .iter()
                            .zip(col(&opk))
                            .map(|(a, b)| a.conj() * b)
                            .sum();
                        assert!(close(got, want), "inner_op ket ({ka}, {ko}, {kb})");
                    }
                }
            }
        }
    }
}

#[test]
fn expect_ket_and_density_matrix() {
    let mut rng = Rng::new(12);
    for n in [1, 3, 8] {
        let op = random_ref(&mut rng, n, n, 0.6);
        let psi = random_ref(&mut rng, n, 1, 0.8);
        let rho = random_ref(&mut rng, n, n, 0.6);
        let want_ket = {
            let opsi = matmul(&op, &psi);
            col(&psi)
                .iter()
                .zip(col(&opsi))
                .map(|(a, b)| a.conj() * b)
                .sum::<c64>()
        };
        let want_dm = trace(&matmul(&op, &rho));
        for ko in KINDS {
            for ks in KINDS {
                let got = ops::expect(&make(&op, ko), &make(&psi, ks)).unwrap();
                assert!(
                    close(got, want_ket),
                    "expect ket n={n} ({ko}, {ks}): {got} vs {want_ket}"
                );
                let got = ops::expect(&make(&op, ko), &make(&rho, ks)).unwrap();
                if n > 1 {
                    assert!(close(got, want_dm), "expect dm n={n} ({ko}, {ks})");
                }
            }
        }
    }
}

#[test]
fn matmul_dag_and_project() {
    let mut rng = Rng::new(13);
    let a = random_ref(&mut rng, 4, 6, 0.5);
    let b = random_ref(&mut rng, 3, 6, 0.5);
    let ket = random_ref(&mut rng, 5, 1, 0.7);
    let bra = conj_t(&ket);
    for ka in KINDS {
        for kb in KINDS {
            for out in [Out::Auto, Out::Dense, Out::Csr] {
                let got = ops::matmul_dag(&make(&a, ka), &make(&b, kb), out).unwrap();
                assert_data_close(&got, &matmul(&a, &conj_t(&b)), "matmul_dag");
            }
        }
        let want = matmul(&ket, &bra);
        assert_data_close(
            &ops::project(&make(&ket, ka), Out::Auto).unwrap(),
            &want,
            "project ket",
        );
        assert_data_close(
            &ops::project(&make(&bra, ka), Out::Auto).unwrap(),
            &want,
            "project bra",
        );
    }
}

#[test]
fn norms() {
    let mut rng = Rng::new(14);
    let a = random_ref(&mut rng, 5, 4, 0.6);
    let v = random_ref(&mut rng, 6, 1, 0.8);
    let fro = a.iter().flatten().map(|x| x.norm_sqr()).sum::<f64>().sqrt();
    let mx = a.iter().flatten().map(|x| x.norm()).fold(0.0, f64::max);
    let one = (0..4)
        .map(|j| (0..5).map(|i| a[i][j].norm()).sum::<f64>())
        .fold(0.0, f64::max);
    // Closed forms for the trace norm: rank one u·v† gives ‖u‖‖v‖; a diagonal gives Σ|dᵢ|.
    let u = random_ref(&mut rng, 4, 1, 1.0);
    let w = random_ref(&mut rng, 3, 1, 1.0);
    let rank1 = matmul(&u, &conj_t(&w));
    let nrm = |x: &Ref| x.iter().flatten().map(|z| z.norm_sqr()).sum::<f64>().sqrt();
    let d: Vec<c64> = (0..5).map(|_| rng.c()).collect();
    let dm: Ref = (0..5)
        .map(|i| {
            (0..5)
                .map(|j| if i == j { d[i] } else { c64::new(0.0, 0.0) })
                .collect()
        })
        .collect();
    let rel = |x: f64, y: f64| (x - y).abs() <= 1e-10 + 1e-7 * y.abs();
    for k in KINDS {
        assert!(
            rel(norm::frobenius(&make(&a, k)).unwrap(), fro),
            "frobenius {k}"
        );
        assert!(rel(norm::max(&make(&a, k)).unwrap(), mx), "max {k}");
        assert!(rel(norm::one(&make(&a, k)).unwrap(), one), "one {k}");
        assert!(rel(norm::l2(&make(&v, k)).unwrap(), nrm(&v)), "l2 {k}");
        assert!(
            rel(norm::l2(&make(&transpose(&v), k)).unwrap(), nrm(&v)),
            "l2 bra {k}"
        );
        assert!(matches!(norm::l2(&make(&a, k)), Err(Error::Shape { .. })));
        assert!(
            rel(norm::trace(&make(&rank1, k)).unwrap(), nrm(&u) * nrm(&w)),
            "trace rank1 {k}"
        );
        assert!(
            rel(
                norm::trace(&make(&dm, k)).unwrap(),
                d.iter().map(|x| x.norm()).sum()
            ),
            "trace diag {k}"
        );
    }
}

#[test]
fn predicates_and_tidyup() {
    let mut rng = Rng::new(15);
    let a = random_ref(&mut rng, 5, 5, 0.6);
    let h = zip(&a, &conj_t(&a), |x, y| x + y);
    let mut almost = h.clone();
    almost[1][3] += c64::new(1e-9, 0.0);
    for k in KINDS {
        assert!(ops::isherm(&make(&h, k), 0.0).unwrap(), "isherm {k}");
        assert!(
            !ops::isherm(&make(&almost, k), 1e-12).unwrap(),
            "isherm tol {k}"
        );
        assert!(
            ops::isherm(&make(&almost, k), 1e-8).unwrap(),
            "isherm loose {k}"
        );
        assert!(!ops::isherm(&make(&random_ref(&mut rng, 2, 3, 1.0), k), 1.0).unwrap());
        assert!(ops::isdiag(&make(&eye(4), k), 0.0).unwrap());
        let mut off = eye(4);
        off[0][2] = c64::new(0.0, 1e-3);
        assert!(!ops::isdiag(&make(&off, k), 0.0).unwrap(), "isdiag {k}");
        assert!(ops::isdiag(&make(&off, k), 1e-2).unwrap(), "isdiag tol {k}");
        let noisy = map(&a, |x| {
            c64::new(x.re, 1e-14)
                + c64::new(if x.re.abs() < 0.5 { -x.re + 1e-13 } else { 0.0 }, 0.0)
        });
        let want = map(&noisy, |x| {
            c64::new(
                if x.re.abs() < 1e-12 { 0.0 } else { x.re },
                if x.im.abs() < 1e-12 { 0.0 } else { x.im },
            )
        });
        for out in [Out::Auto, Out::Dense, Out::Csr] {
            assert_data_close(
                &ops::tidyup(&make(&noisy, k), 1e-12, out).unwrap(),
                &want,
                "tidyup",
            );
        }
    }
}

#[test]
fn constructors() {
    let one = c64::new(1.0, 0.0);
    let two = c64::new(2.0, 0.0);
    for out in [Out::Auto, Out::Dense, Out::Csr] {
        let d = ops::diag(
            vec![vec![one, two, one], vec![two, two]],
            vec![0, -1],
            (3, 3),
            out,
        )
        .unwrap();
        let want: Ref = vec![
            vec![one, c64::new(0.0, 0.0), c64::new(0.0, 0.0)],
            vec![two, two, c64::new(0.0, 0.0)],
            vec![c64::new(0.0, 0.0), two, one],
        ];
        assert_data_close(&d, &want, "diag");
        let r = ops::diag(vec![vec![one, one]], vec![2], (2, 4), out).unwrap();
        assert_eq!(to_ref(&r)[1][3], one);
        let e = ops::one_element((2, 3), (1, 0), two, out).unwrap();
        assert_eq!(to_ref(&e)[1][0], two);
        assert_eq!(
            to_ref(&e)
                .iter()
                .flatten()
                .filter(|x| x.norm() > 0.0)
                .count(),
            1
        );
    }
    assert!(ops::diag(vec![vec![one]], vec![0], (3, 3), Out::Auto).is_err());
    assert!(ops::diag(vec![vec![one]], vec![0, 1], (1, 1), Out::Auto).is_err());
    assert!(ops::one_element((2, 2), (2, 0), one, Out::Auto).is_err());
    for k in KINDS {
        let x = make(&eye(3), k);
        assert_eq!(ops::zeros_like(&x, Out::Auto).unwrap().kind(), k);
        assert_data_close(
            &ops::identity_like(&x, Out::Auto).unwrap(),
            &eye(3),
            "identity_like",
        );
        assert!(matches!(
            ops::identity_like(
                &make(&random_ref(&mut Rng::new(1), 2, 3, 1.0), k),
                Out::Auto
            ),
            Err(Error::Shape { .. })
        ));
    }
}

#[test]
fn bad_shapes() {
    let mut rng = Rng::new(16);
    let sq = random_ref(&mut rng, 3, 3, 1.0);
    let ket4 = random_ref(&mut rng, 4, 1, 1.0);
    let wide = random_ref(&mut rng, 2, 3, 1.0);
    for ka in KINDS {
        for kb in KINDS {
            let shape_err = |r: polymat::Result<c64>| matches!(r, Err(Error::Shape { .. }));
            assert!(shape_err(ops::inner(&make(&sq, ka), &make(&ket4, kb))));
            assert!(shape_err(ops::inner(
                &make(&ket4, ka),
                &make(&transpose(&ket4), kb)
            )));
            assert!(shape_err(ops::expect(&make(&sq, ka), &make(&ket4, kb))));
            assert!(shape_err(ops::expect(&make(&wide, ka), &make(&wide, kb))));
            assert!(shape_err(ops::inner_op(
                &make(&ket4, ka),
                &make(&sq, kb),
                &make(&ket4, ka)
            )));
            let r: polymat::Result<Data> =
                ops::matmul_dag(&make(&sq, ka), &make(&ket4, kb), Out::Auto);
            assert!(matches!(r, Err(Error::Shape { .. })));
            assert!(matches!(
                ops::project(&make(&sq, ka), Out::Auto),
                Err(Error::Shape { .. })
            ));
        }
    }
}

/// exp(A) by a plain Taylor series with scaling and squaring, in naive loops.
fn expm_taylor(a: &Ref) -> Ref {
    let n = a.len();
    let norm: f64 = a.iter().flatten().map(|x| x.norm()).sum();
    let s = (norm / 0.25).log2().ceil().max(0.0) as i32;
    let scaled = map(a, |x| x * 0.5f64.powi(s));
    let mut term = eye(n);
    let mut sum = eye(n);
    for k in 1..40 {
        term = map(&matmul(&term, &scaled), |x| x / k as f64);
        sum = zip(&sum, &term, |x, y| x + y);
    }
    for _ in 0..s {
        sum = matmul(&sum, &sum);
    }
    sum
}

#[test]
fn expm_against_taylor_and_closed_forms() {
    let mut rng = Rng::new(17);
    // Norms spanning every Padé degree and the scaling branch.
    for (n, scale) in [
        (1, 1.0),
        (2, 0.001),
        (3, 0.05),
        (4, 0.3),
        (5, 0.5),
        (6, 1.0),
        (8, 3.0),
        (5, 20.0),
    ] {
        let a = map(&random_ref(&mut rng, n, n, 0.7), |x| x * scale);
        let want = expm_taylor(&a);
        for k in KINDS {
            for out in [Out::Auto, Out::Dense, Out::Csr] {
                let got = ops::expm(&make(&a, k), out).unwrap();
                if let Some(kind) = out.kind() {
                    assert_eq!(got.kind(), kind);
                }
                let g = to_ref(&got);
                let tol = 1e-10 * want.iter().flatten().map(|x| x.norm()).fold(1.0, f64::max);
                for (gr, wr) in g.iter().zip(&want) {
                    for (x, y) in gr.iter().zip(wr) {
                        assert!(
                            (x - y).norm() <= tol + 1e-7 * y.norm(),
                            "expm n={n} scale={scale} {k}: {x} vs {y}"
                        );
                    }
                }
            }
        }
    }
    let one = c64::new(1.0, 0.0);
    let z = c64::new(0.0, 0.0);
    // Nilpotent: exp([[0, 1], [0, 0]]) = [[1, 1], [0, 1]].
    assert_data_close(
        &ops::expm(
            &make(&vec![vec![z, one], vec![z, z]], polymat::Kind::CSR),
            Out::Auto,
        )
        .unwrap(),
        &vec![vec![one, one], vec![z, one]],
        "nilpotent",
    );
    // Diagonal: exp(diag(d)) = diag(exp(d)), with a large entry to force squaring.
    let d = [
        c64::new(-30.0, 2.0),
        c64::new(0.5, -1.0),
        c64::new(3.0, 0.0),
    ];
    let dm: Ref = (0..3)
        .map(|i| (0..3).map(|j| if i == j { d[i] } else { z }).collect())
        .collect();
    let want: Ref = (0..3)
        .map(|i| {
            (0..3)
                .map(|j| if i == j { d[i].exp() } else { z })
                .collect()
        })
        .collect();
    assert_data_close(
        &ops::expm(&make(&dm, polymat::Kind::DENSE), Out::Auto).unwrap(),
        &want,
        "diag",
    );
    assert!(matches!(
        ops::expm(
            &make(&random_ref(&mut rng, 2, 3, 1.0), polymat::Kind::DENSE),
            Out::Auto
        ),
        Err(Error::Shape { .. })
    ));
}
