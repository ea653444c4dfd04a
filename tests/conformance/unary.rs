//! Elementwise and structural operations on one operand.

use super::common::{self, *};
use super::harness::*;
use polymat::{Data, Out, c64};

#[test]
fn unary_elementwise() {
    let mut total = 0;
    type Unary = (
        &'static str,
        fn(c64) -> c64,
        fn(&Data, Out) -> polymat::Result<Data>,
    );
    let unary: [Unary; 3] = [
        ("neg", |x| -x, polymat::neg),
        ("conj", |x| x.conj(), polymat::conj),
        ("mul", |x| x * S, |d, out| polymat::mul(d, S, out)),
    ];
    for (name, f, g) in unary {
        total += run(&Op::matrix(
            name,
            1,
            &|r| Some(Val::M(common::map(r[0], f))),
            &|d, out| mat(g(d[0], out), out),
        ));
    }
    total += run(&Op::matrix(
        "transpose",
        1,
        &|r| Some(Val::M(transpose(r[0]))),
        &|d, out| mat(polymat::transpose(d[0], out), out),
    ));
    total += run(&Op::matrix(
        "adjoint",
        1,
        &|r| Some(Val::M(adj(r[0]))),
        &|d, out| mat(polymat::adjoint(d[0], out), out),
    ));
    total += run(&Op::matrix(
        "tidyup",
        1,
        &|r| {
            let t = |x: f64| if x.abs() < 0.3 { 0.0 } else { x };
            Some(Val::M(common::map(r[0], |x| c64::new(t(x.re), t(x.im)))))
        },
        &|d, out| mat(polymat::tidyup(d[0], 0.3, out), out),
    ));
    total += run(&Op::value(
        "imul",
        1,
        &|r| Some(Val::M(scale(r[0], S))),
        &|d, _| {
            let mut a = d[0].clone();
            polymat::imul(&mut a, S)?;
            assert_eq!(a.kind(), d[0].kind());
            Ok(Val::M(common::to_ref(&a)))
        },
    ));
    println!("unary_elementwise total: {total}");
}

#[test]
fn unary_operations() {
    let mut rng = Rng::new(3);
    for (m, n, d) in [
        (1, 1, 1.0),
        (5, 5, 0.4),
        (3, 8, 0.5),
        (8, 1, 0.7),
        (4, 4, 0.0),
    ] {
        let a = random_ref(&mut rng, m, n, d);
        let s = rng.c();
        unary_cases(&a, |x, out, w| {
            check(
                &polymat::mul(x, s, out).unwrap(),
                out,
                &map(&a, |p| s * p),
                &format!("mul {w}"),
            );
            check(
                &polymat::mul(x, c64::new(0.0, 0.0), out).unwrap(),
                out,
                &map(&a, |_| c64::new(0.0, 0.0)),
                &format!("mul0 {w}"),
            );
            check(
                &polymat::neg(x, out).unwrap(),
                out,
                &map(&a, |p| -p),
                &format!("neg {w}"),
            );
            check(
                &polymat::conj(x, out).unwrap(),
                out,
                &map(&a, |p| p.conj()),
                &format!("conj {w}"),
            );
            check(
                &polymat::transpose(x, out).unwrap(),
                out,
                &transpose(&a),
                &format!("transpose {w}"),
            );
            check(
                &polymat::adjoint(x, out).unwrap(),
                out,
                &map(&transpose(&a), |p| p.conj()),
                &format!("adjoint {w}"),
            );
        });
    }
}

#[test]
fn trace_and_pow() {
    let mut rng = Rng::new(4);
    for (n, d) in [(1, 1.0), (2, 1.0), (5, 0.5), (7, 0.3)] {
        let a = map(&random_ref(&mut rng, n, n, d), |x| x * 0.7);
        for k in KINDS {
            let x = make(&a, k);
            let t = polymat::trace(&x).unwrap();
            assert!(close(t, trace(&a)), "trace {k}");
        }
        let mut want = eye(n);
        for p in 0..=7u32 {
            unary_cases(&a, |x, out, w| {
                check(
                    &polymat::pow(x, p, out).unwrap(),
                    out,
                    &want,
                    &format!("pow {p} {w}"),
                );
            });
            want = matmul(&want, &a);
        }
    }
}
