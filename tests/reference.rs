//! Every operation, for every combination of input kinds and every output choice, against an
//! independent naive dense computation (atol 1e-10, rtol 1e-7).

mod common;

use common::*;
use polymat::{Data, Error, Kind, Out, c64};

const OUTS: [Out; 3] = [Out::Auto, Out::Dense, Out::Csr];

/// Checks the result's values, and its kind when one was requested.
fn check(got: &Data, out: Out, want: &Ref, what: &str) {
    if let Some(k) = out.kind() {
        assert_eq!(got.kind(), k, "{what}: result kind");
    }
    assert_data_close(got, want, what);
}

/// Runs `f` over every pair of input kinds and every output.
fn binary_cases(a: &Ref, b: &Ref, mut f: impl FnMut(&Data, &Data, Out, String)) {
    for ka in KINDS {
        for kb in KINDS {
            for out in OUTS {
                f(
                    &make(a, ka),
                    &make(b, kb),
                    out,
                    format!("({ka}, {kb}) -> {out}"),
                );
            }
        }
    }
}

fn unary_cases(a: &Ref, mut f: impl FnMut(&Data, Out, String)) {
    for ka in KINDS {
        for out in OUTS {
            f(&make(a, ka), out, format!("({ka}) -> {out}"));
        }
    }
}

#[test]
fn add_sub_and_scaled_add() {
    let mut rng = Rng::new(1);
    for (m, n, d) in [
        (1, 1, 1.0),
        (6, 6, 0.3),
        (4, 9, 0.5),
        (1, 7, 0.8),
        (7, 1, 0.0),
    ] {
        let a = random_ref(&mut rng, m, n, d);
        let b = random_ref(&mut rng, m, n, d);
        let s = rng.c();
        binary_cases(&a, &b, |x, y, out, w| {
            check(
                &polymat::add(x, y, out).unwrap(),
                out,
                &zip(&a, &b, |p, q| p + q),
                &format!("add {w}"),
            );
            check(
                &polymat::sub(x, y, out).unwrap(),
                out,
                &zip(&a, &b, |p, q| p - q),
                &format!("sub {w}"),
            );
            check(
                &polymat::add_scaled(x, y, s, out).unwrap(),
                out,
                &zip(&a, &b, |p, q| p + s * q),
                &format!("add_scaled {w}"),
            );
            check(
                &polymat::multiply(x, y, out).unwrap(),
                out,
                &zip(&a, &b, |p, q| p * q),
                &format!("multiply {w}"),
            );
        });
    }
}

#[test]
fn products() {
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
fn constructors() {
    for out in [Out::Dense, Out::Csr] {
        let z = polymat::zeros(3, 4, out).unwrap();
        check(&z, out, &vec![vec![c64::new(0.0, 0.0); 4]; 3], "zeros");
        let i = polymat::identity(5, out).unwrap();
        check(&i, out, &eye(5), "identity");
    }
    assert_eq!(polymat::zeros(2, 2, Out::Auto).unwrap().kind(), Kind::CSR);
    assert_eq!(polymat::identity(2, Out::Auto).unwrap().kind(), Kind::CSR);
}

#[test]
fn every_bad_shape_is_a_shape_error() {
    let mut rng = Rng::new(6);
    let a = random_ref(&mut rng, 2, 3, 0.5);
    let b = random_ref(&mut rng, 3, 3, 0.5);
    let is_shape = |r: polymat::Result<Data>, what: &str| match r {
        Err(Error::Shape { op, shapes, .. }) => {
            assert!(what.starts_with(&op), "{what}: op {op}");
            assert!(!shapes.is_empty());
        }
        other => panic!("{what}: expected a shape error, got {other:?}"),
    };
    for ka in KINDS {
        for kb in KINDS {
            let (x, y) = (make(&a, ka), make(&b, kb));
            for out in OUTS {
                is_shape(polymat::add(&x, &y, out), "add");
                is_shape(polymat::sub(&x, &y, out), "sub");
                is_shape(polymat::multiply(&x, &y, out), "multiply");
                is_shape(polymat::matmul(&y, &x, out), "matmul");
                is_shape(polymat::pow(&x, 2, out), "pow");
            }
            assert!(matches!(
                polymat::isequal(&x, &y, 0.0, 0.0),
                Err(Error::Shape { .. })
            ));
            assert!(matches!(polymat::trace(&x), Err(Error::Shape { .. })));
        }
    }
}
