//! Elementwise operations on two operands of the same shape.

use super::common::{self, *};
use super::harness::*;
use polymat::{Out, c64};

#[test]
fn binary_same_shape() {
    let mut total = 0;
    total += run(&Op::matrix(
        "add",
        2,
        &|r| same(r[0], r[1]).then(|| Val::M(common::zip(r[0], r[1], |x, y| x + y))),
        &|d, out| mat(polymat::add(d[0], d[1], out), out),
    ));
    total += run(&Op::matrix(
        "add_scaled",
        2,
        &|r| same(r[0], r[1]).then(|| Val::M(common::zip(r[0], r[1], |x, y| x + S * y))),
        &|d, out| mat(polymat::add_scaled(d[0], d[1], S, out), out),
    ));
    total += run(&Op::matrix(
        "sub",
        2,
        &|r| same(r[0], r[1]).then(|| Val::M(common::zip(r[0], r[1], |x, y| x - y))),
        &|d, out| mat(polymat::sub(d[0], d[1], out), out),
    ));
    total += run(&Op::matrix(
        "multiply",
        2,
        &|r| same(r[0], r[1]).then(|| Val::M(common::zip(r[0], r[1], |x, y| x * y))),
        &|d, out| mat(polymat::multiply(d[0], d[1], out), out),
    ));
    total += run(&Op::value(
        "isequal",
        2,
        &|r| {
            same(r[0], r[1])
                .then(|| Val::B(entries(r[0]).zip(entries(r[1])).all(|(x, y)| close(x, y))))
        },
        &|d, _| polymat::isequal(d[0], d[1], ATOL, RTOL).map(Val::B),
    ));
    total += run(&Op::value(
        "iadd",
        2,
        &|r| same(r[0], r[1]).then(|| Val::M(common::zip(r[0], r[1], |x, y| x + S * y))),
        &|d, _| {
            let mut a = d[0].clone(); // shared with the suite's copy: exercises the fallback
            let kind = a.kind();
            polymat::iadd(&mut a, d[1], S)?;
            assert_eq!(a.kind(), kind, "iadd keeps the kind");
            let mut fresh = polymat::to(kind, &polymat::add(d[0], d[0], Out::Auto)?)?;
            polymat::imul(&mut fresh, c64::new(0.5, 0.0))?; // fresh = d[0], unshared
            polymat::iadd(&mut fresh, d[1], S)?;
            assert_val(
                &Val::M(common::to_ref(&fresh)),
                &Val::M(common::to_ref(&a)),
                "iadd in place vs fallback",
            );
            Ok(Val::M(common::to_ref(&a)))
        },
    ));
    println!("binary_same_shape total: {total}");
}

#[test]
fn add_sub_and_scaled_add_every_kind() {
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
