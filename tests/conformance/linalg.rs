//! Linear algebra: powers, exponentials, inverses, solves, decompositions, matrix functions.

use super::common::{self, *};
use super::harness::*;
use polymat::ops::{self, EigOrder, EigsOptions, SolveMethod};
use polymat::{Error, Out, c64};

/// Square inputs shifted by `n·I` (well conditioned, spectrum in the right half-plane).
fn dominant(_: usize, r: Ref) -> Ref {
    let n = r.len() as f64;
    shift(r, n)
}

fn pow_ref(a: &Ref, k: u32) -> Ref {
    (0..k).fold(eye(a.len()), |acc, _| matmul(&acc, a))
}

/// exp(a) by a 40-term Taylor series after scaling by 2^-s and squaring (naive loops).
fn expm_ref(a: &Ref) -> Ref {
    let norm: f64 = transpose(a)
        .iter()
        .map(|c| c.iter().map(|x| x.norm()).sum::<f64>())
        .fold(0.0, f64::max);
    let s = if norm > 0.5 {
        (norm / 0.5).log2().ceil() as i32
    } else {
        0
    };
    let x = scale(a, c64::new(2f64.powi(-s), 0.0));
    let mut term = eye(a.len());
    let mut sum = eye(a.len());
    for k in 1..40 {
        term = scale(&matmul(&term, &x), c64::new(1.0 / k as f64, 0.0));
        sum = common::zip(&sum, &term, |p, q| p + q);
    }
    for _ in 0..s {
        sum = matmul(&sum, &sum);
    }
    sum
}

#[test]
fn linear_algebra() {
    let mut total = 0;
    total += run(&Op::matrix(
        "pow",
        1,
        &|r| square(r[0]).then(|| Val::M(pow_ref(r[0], 3))),
        &|d, out| mat(polymat::pow(d[0], 3, out), out),
    )
    .prep(&|_, r| scale(&r, c64::new(0.1, 0.0))));
    total += run(&Op::matrix(
        "expm",
        1,
        &|r| square(r[0]).then(|| Val::M(expm_ref(r[0]))),
        &|d, out| mat(polymat::expm(d[0], out), out),
    )
    .prep(&|_, r| {
        let k = 1.0 / r.len() as f64;
        scale(&r, c64::new(k, 0.0))
    }));
    // exp(t·a)·v for a complex t, against the naive exp(t·a) times v.
    let t = c64::new(0.3, -0.7);
    total += run(&Op::matrix(
        "expm_multiply",
        2,
        &|r| {
            (square(r[0]) && r[1].len() == r[0].len())
                .then(|| Val::M(matmul(&expm_ref(&scale(r[0], t)), r[1])))
        },
        &|d, out| mat(polymat::expm_multiply(d[0], d[1], t, out), out),
    )
    .prep(&|i, r| {
        if i == 0 {
            let k = 1.0 / r.len() as f64;
            scale(&r, c64::new(k, 0.0))
        } else {
            r
        }
    }));
    total += run(&Op::matrix(
        "inv",
        1,
        &|r| square(r[0]).then(|| Val::M(eye(r[0].len()))),
        &|d, out| {
            let x = polymat::inv(d[0], out)?;
            if let Some(k) = out.kind() {
                assert_eq!(x.kind(), k);
            }
            Ok(Val::M(matmul(&common::to_ref(d[0]), &common::to_ref(&x))))
        },
    )
    .prep(&dominant));
    total += run(&Op::matrix(
        "solve",
        2,
        &|r| {
            let (a, b) = (shape(r[0]), shape(r[1]));
            (a.0 == a.1 && a.0 == b.0).then(|| Val::M(r[1].clone()))
        },
        &|d, out| {
            let x = polymat::solve(d[0], d[1], SolveMethod::Lu, out)?;
            if let Some(k) = out.kind() {
                assert_eq!(x.kind(), k);
            }
            Ok(Val::M(matmul(&common::to_ref(d[0]), &common::to_ref(&x))))
        },
    )
    .prep(&|i, r| if i == 0 { dominant(i, r) } else { r }));
    total += run(&Op::matrix(
        "sqrtm",
        1,
        &|r| square(r[0]).then(|| Val::M(r[0].clone())),
        &|d, out| {
            let x = common::to_ref(&polymat::sqrtm(d[0], out)?);
            Ok(Val::M(matmul(&x, &x)))
        },
    )
    .prep(&dominant));
    total += run(&Op::matrix(
        "logm",
        1,
        &|r| square(r[0]).then(|| Val::M(r[0].clone())),
        &|d, out| {
            let l = polymat::logm(d[0], out)?;
            if let Some(k) = out.kind() {
                assert_eq!(l.kind(), k);
            }
            Ok(Val::M(expm_ref(&common::to_ref(&l))))
        },
    )
    .prep(&dominant));
    for order in [EigOrder::Low, EigOrder::High] {
        total += run(&Op::value(
            "eigs",
            1,
            &|r| square(r[0]).then(|| Val::M(zeros(r[0].len(), r[0].len()))),
            &|d, _| {
                let opts = EigsOptions::default().order(order);
                let e = polymat::eigs(d[0], opts)?;
                let sorted = e.values.windows(2).all(|w| match order {
                    EigOrder::Low => w[0].re <= w[1].re,
                    EigOrder::High => w[0].re >= w[1].re,
                });
                assert!(sorted, "eigenvalues out of order: {:?}", e.values);
                let v = common::to_ref(&e.vectors.expect("vectors requested").into());
                let (a, n) = (common::to_ref(d[0]), e.values.len());
                let av = matmul(&a, &v);
                let trace_sum: c64 = e.values.iter().sum();
                assert!(close(trace_sum, common::trace(&a)), "Σλ = Tr a");
                Ok(Val::M(
                    (0..n)
                        .map(|i| (0..n).map(|j| av[i][j] - v[i][j] * e.values[j]).collect())
                        .collect(),
                ))
            },
        ));
    }
    total += run(&Op::value(
        "svd",
        1,
        &|r| Some(Val::M(r[0].clone())),
        &|d, _| {
            let f = polymat::svd(d[0], true)?;
            assert!(
                f.s.windows(2).all(|w| w[0] >= w[1]),
                "singular values nonincreasing"
            );
            let values_only = polymat::svd(d[0], false)?;
            for (x, y) in f.s.iter().zip(&values_only.s) {
                assert!((x - y).abs() <= ATOL + RTOL * y.abs());
            }
            let u = common::to_ref(&f.u.expect("u").into());
            let vh = common::to_ref(&f.vh.expect("vh").into());
            let us: Ref = u
                .iter()
                .map(|row| row.iter().zip(&f.s).map(|(x, s)| x * s).collect())
                .collect();
            Ok(Val::M(matmul(&us, &vh)))
        },
    ));
    println!("linear_algebra total: {total}");
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
            for out in [Out::Auto, Out::Dense, Out::Csr, Out::Dia] {
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
