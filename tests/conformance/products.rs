//! Products: matmul, matmul_dag, kron, inner, inner_op, expect, project.

use super::common::{self, *};
use super::harness::*;
use polymat::ops::{self};
use polymat::{Out, c64};

#[test]
fn products() {
    let mut total = 0;
    total += run(&Op::matrix(
        "matmul",
        2,
        &|r| (shape(r[0]).1 == shape(r[1]).0).then(|| Val::M(matmul(r[0], r[1]))),
        &|d, out| mat(polymat::matmul(d[0], d[1], out), out),
    ));
    total += run(&Op::matrix(
        "matmul_dag",
        2,
        &|r| (shape(r[0]).1 == shape(r[1]).1).then(|| Val::M(matmul(r[0], &adj(r[1])))),
        &|d, out| mat(polymat::matmul_dag(d[0], d[1], out), out),
    ));
    total += run(&Op::matrix(
        "matmul_outer",
        2,
        &|r| (shape(r[0]).1 == 1 && shape(r[1]).0 == 1).then(|| Val::M(matmul(r[0], r[1]))),
        &|d, out| mat(polymat::matmul_outer(d[0], d[1], out), out),
    ));
    total += run(&Op::value(
        "inner",
        2,
        &|r| {
            let k = shape(r[1]);
            let lv = bra_entries(r[0])?;
            (k.1 == 1 && k.0 == lv.len())
                .then(|| Val::S(lv.iter().zip(entries(r[1])).map(|(x, y)| x * y).sum()))
        },
        &|d, _| polymat::inner(d[0], d[1]).map(Val::S),
    ));
    total += run(&Op::value(
        "expect",
        2,
        &|r| {
            let (o, s) = (shape(r[0]), shape(r[1]));
            (o.0 == o.1 && s.0 == o.0 && (s.1 == 1 || s.1 == o.0)).then(|| {
                if s.1 == 1 {
                    let ov = matmul(r[0], r[1]);
                    Val::S(
                        entries(r[1])
                            .zip(entries(&ov))
                            .map(|(x, y)| x.conj() * y)
                            .sum(),
                    )
                } else {
                    Val::S(common::trace(&matmul(r[0], r[1])))
                }
            })
        },
        &|d, _| polymat::expect(d[0], d[1]).map(Val::S),
    ));
    total += run(&Op::value(
        "expect_super",
        2,
        &|r| {
            let (s, v) = (shape(r[0]), shape(r[1]));
            let n = (v.0 as f64).sqrt().round() as usize;
            (v.1 == 1 && n * n == v.0 && s == (v.0, v.0)).then(|| {
                let sv = matmul(r[0], r[1]);
                Val::S((0..n).map(|i| sv[i * (n + 1)][0]).sum())
            })
        },
        &|d, _| polymat::expect_super(d[0], d[1]).map(Val::S),
    ));
    total += run(&Op::value(
        "inner_op",
        3,
        &|r| {
            let (o, k) = (shape(r[1]), shape(r[2]));
            let lv = bra_entries(r[0])?;
            (lv.len() == o.0 && k.1 == 1 && k.0 == o.1).then(|| {
                let ok = matmul(r[1], r[2]);
                Val::S(lv.iter().zip(entries(&ok)).map(|(x, y)| x * y).sum())
            })
        },
        &|d, _| polymat::inner_op(d[0], d[1], d[2]).map(Val::S),
    ));
    println!("products total: {total}");
}

#[test]
fn kronecker() {
    let mut total = 0;
    total += run(
        &Op::matrix("kron", 2, &|r| Some(Val::M(kron(r[0], r[1]))), &|d, out| {
            mat(polymat::kron(d[0], d[1], out), out)
        })
        .n(N_KRON),
    );
    total += run(&Op::matrix(
        "kron_transpose",
        2,
        &|r| Some(Val::M(kron(&transpose(r[0]), r[1]))),
        &|d, out| mat(polymat::kron_transpose(d[0], d[1], out), out),
    )
    .n(N_KRON));
    println!("kronecker total: {total}");
}

#[test]
fn products_every_kind() {
    let mut rng = Rng::new(2);
    for (m, k, n, d) in [
        (1, 1, 1, 1.0),
        (5, 7, 3, 0.4),
        (6, 6, 6, 0.2),
        (1, 8, 1, 0.9),
        (8, 1, 8, 1.0),
        (3, 3, 3, 0.0),
    ] {
        let a = random_ref(&mut rng, m, k, d);
        let b = random_ref(&mut rng, k, n, d);
        binary_cases(&a, &b, |x, y, out, w| {
            check(
                &polymat::matmul(x, y, out).unwrap(),
                out,
                &matmul(&a, &b),
                &format!("matmul {w}"),
            );
        });
    }
    for (ma, na, mb, nb) in [(1, 1, 1, 1), (2, 3, 3, 2), (3, 3, 2, 2), (1, 4, 3, 1)] {
        let a = random_ref(&mut rng, ma, na, 0.6);
        let b = random_ref(&mut rng, mb, nb, 0.6);
        binary_cases(&a, &b, |x, y, out, w| {
            check(
                &polymat::kron(x, y, out).unwrap(),
                out,
                &kron(&a, &b),
                &format!("kron {w}"),
            );
        });
    }
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
            for out in [Out::Auto, Out::Dense, Out::Csr, Out::Dia] {
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
