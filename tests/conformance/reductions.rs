//! Reductions and predicates: traces, norms, comparisons, tidyup.

use super::common::{self, *};
use super::harness::*;
use polymat::ops::{self, norm};
use polymat::{Error, Out, c64};

#[test]
fn reductions_and_predicates() {
    let mut total = 0;
    total += run(&Op::value(
        "trace",
        1,
        &|r| square(r[0]).then(|| Val::S(common::trace(r[0]))),
        &|d, _| polymat::trace(d[0]).map(Val::S),
    ));
    total += run(&Op::value(
        "trace_oper_ket",
        1,
        &|r| {
            let (m, k) = shape(r[0]);
            let n = (m as f64).sqrt().round() as usize;
            (k == 1 && n * n == m).then(|| Val::S((0..n).map(|i| r[0][i * (n + 1)][0]).sum()))
        },
        &|d, _| polymat::trace_oper_ket(d[0]).map(Val::S),
    ));
    let re = |x: f64| Val::S(c64::new(x, 0.0));
    total += run(&Op::value(
        "norm::frobenius",
        1,
        &|r| Some(re(entries(r[0]).map(|x| x.norm_sqr()).sum::<f64>().sqrt())),
        &|d, _| polymat::ops::norm::frobenius(d[0]).map(re),
    ));
    total += run(&Op::value(
        "norm::l2",
        1,
        &|r| {
            let (m, n) = shape(r[0]);
            (m == 1 || n == 1).then(|| re(entries(r[0]).map(|x| x.norm_sqr()).sum::<f64>().sqrt()))
        },
        &|d, _| polymat::ops::norm::l2(d[0]).map(re),
    ));
    total += run(&Op::value(
        "norm::max",
        1,
        &|r| Some(re(entries(r[0]).map(|x| x.norm()).fold(0.0, f64::max))),
        &|d, _| polymat::ops::norm::max(d[0]).map(re),
    ));
    total += run(&Op::value(
        "norm::one",
        1,
        &|r| {
            let t = transpose(r[0]);
            Some(re(t
                .iter()
                .map(|c| c.iter().map(|x| x.norm()).sum::<f64>())
                .fold(0.0, f64::max)))
        },
        &|d, _| polymat::ops::norm::one(d[0]).map(re),
    ));
    total += run(&Op::value(
        "mean_nonzero",
        1,
        &|r| {
            let nz: Vec<c64> = entries(r[0]).filter(|x| *x != c64::new(0.0, 0.0)).collect();
            let k = nz.len().max(1) as f64;
            Some(Val::S(nz.iter().sum::<c64>() / k))
        },
        &|d, _| polymat::mean_nonzero(d[0]).map(Val::S),
    ));
    total += run(&Op::value(
        "mean_abs_nonzero",
        1,
        &|r| {
            let nz: Vec<f64> = entries(r[0])
                .filter(|x| *x != c64::new(0.0, 0.0))
                .map(|x| x.norm())
                .collect();
            Some(re(nz.iter().sum::<f64>() / nz.len().max(1) as f64))
        },
        &|d, _| polymat::mean_abs_nonzero(d[0]).map(re),
    ));
    total += run(&Op::value(
        "iszero",
        1,
        &|r| Some(Val::B(entries(r[0]).all(|x| x.norm() <= 1e-12))),
        &|d, _| polymat::iszero(d[0], 1e-12).map(Val::B),
    ));
    // Hermitian and diagonal inputs are made for half the arguments so both answers occur.
    let herm_prep = |_: usize, r: Ref| {
        if square(&r) && r.len() > 1 && r[0][1].re > 0.0 {
            common::zip(&r, &adj(&r), |x, y| x + y)
        } else {
            r
        }
    };
    // QuTiP: a non-square matrix is simply not Hermitian.
    total += run(&Op::value(
        "isherm",
        1,
        &|r| {
            let a = adj(r[0]);
            Some(Val::B(
                square(r[0])
                    && entries(r[0])
                        .zip(entries(&a))
                        .all(|(x, y)| (x - y).norm() <= 1e-12),
            ))
        },
        &|d, _| polymat::isherm(d[0], 1e-12).map(Val::B),
    )
    .prep(&herm_prep));
    total += run(&Op::value(
        "isdiag",
        1,
        &|r| {
            Some(Val::B(r[0].iter().enumerate().all(|(i, row)| {
                row.iter()
                    .enumerate()
                    .all(|(j, x)| i == j || x.norm() <= 1e-12)
            })))
        },
        &|d, _| polymat::isdiag(d[0], 1e-12).map(Val::B),
    )
    .prep(&|_, r: Ref| {
        if r.len() > 1 && r[0].len() > 1 && r[1][0].re > 0.0 {
            let mut d = r.clone();
            for (i, row) in d.iter_mut().enumerate() {
                for (j, x) in row.iter_mut().enumerate() {
                    if i != j {
                        *x = c64::new(0.0, 0.0);
                    }
                }
            }
            d
        } else {
            r
        }
    }));
    println!("reductions_and_predicates total: {total}");
}

#[test]
fn comparisons() {
    let mut rng = Rng::new(5);
    let mut a = random_ref(&mut rng, 6, 4, 0.5);
    a[2][3] = c64::new(0.5, 0.5);
    let mut b = a.clone();
    b[2][3] += c64::new(1e-6, 0.0);
    for ka in KINDS {
        assert!(!polymat::iszero(&make(&a, ka), 1e-3).unwrap());
        assert!(polymat::iszero(&make(&map(&a, |x| x * 1e-12), ka), 1e-11).unwrap());
        for kb in KINDS {
            let (x, y) = (make(&a, ka), make(&b, kb));
            assert!(polymat::isequal(&x, &x, 0.0, 0.0).unwrap(), "({ka}, {kb})");
            assert!(
                !polymat::isequal(&x, &y, 1e-9, 0.0).unwrap(),
                "({ka}, {kb}) atol"
            );
            assert!(
                polymat::isequal(&x, &y, 2e-6, 0.0).unwrap(),
                "({ka}, {kb}) atol ok"
            );
            assert!(
                polymat::isequal(&x, &y, 0.0, 1e-4).unwrap(),
                "({ka}, {kb}) rtol"
            );
        }
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
        for out in [Out::Auto, Out::Dense, Out::Csr, Out::Dia] {
            assert_data_close(
                &ops::tidyup(&make(&noisy, k), 1e-12, out).unwrap(),
                &want,
                "tidyup",
            );
        }
    }
}
