//! A brand-new operation, `add_square(a, b) = a + b·b`, with a Dense and a Csr kernel. It
//! works for every combination of kinds, the user's `MainDiagonal` kind included.
//!
//! Run with `cargo run --release --example custom_dispatcher`.

#[path = "common/main_diagonal.rs"]
mod main_diagonal;

use polymat::ops::add::{add_csr, add_dense};
use polymat::ops::matmul::{matmul_csr, matmul_dense};
use polymat::{Csr, Data, Dense, Dispatcher, Error, Kind, Out, Result, Specialisation, c64};

const ONE: c64 = c64::new(1.0, 0.0);

/// Builds the dispatcher: a shape check, the result's shape (so that a Dense output too large
/// to make is refused before a kernel runs) and one kernel per built-in kind.
pub fn add_square() -> Result<Dispatcher<()>> {
    Dispatcher::builder("add_square", 2)
        .check(|op, args, _| {
            let (a, b) = (args[0].shape(), args[1].shape());
            if b.0 == b.1 && a == b {
                Ok(())
            } else {
                Err(Error::Shape {
                    op: op.into(),
                    shapes: vec![a, b],
                    requirement: "b must be square and a the same shape as b".into(),
                })
            }
        })
        .result_shape(|args, _| Some(args[0].shape()))
        .specialisation(Specialisation::binary(
            "add_square_dense",
            |a: &Dense, b: &Dense, _: &()| add_dense(a, &matmul_dense(b, b)?, ONE),
        ))
        .specialisation(Specialisation::binary(
            "add_square_csr",
            |a: &Csr, b: &Csr, _: &()| add_csr(a, &matmul_csr(b, b)?, ONE),
        ))
        .build()
}

pub fn run() -> Result<()> {
    let main_diagonal_kind = main_diagonal::register()?;
    let op = add_square()?;
    let n = 4;
    let dense: Data = Dense::from_fn(n, n, |i, j| {
        c64::new(i as f64 - j as f64, (i * j) as f64 / 4.0)
    })
    .into();
    let csr: Data = Csr::from_triplets(
        (n, n),
        &[0, 1, 3],
        &[3, 1, 0],
        &[c64::new(1.0, 1.0), ONE, c64::new(0.0, -2.0)],
    )?
    .into();
    let dg: Data = Data::new(main_diagonal::MainDiagonal {
        values: (0..n).map(|k| c64::new(k as f64, 1.0)).collect(),
    })?;

    for a in [&dense, &csr, &dg] {
        for b in [&dense, &csr, &dg] {
            let got = op.call(&[a, b], Out::Auto, &())?;
            // Reference: the same formula through the built-in operations.
            let want = polymat::add(a, &polymat::matmul(b, b, Out::Auto)?, Out::Auto)?;
            assert!(polymat::isequal(&got, &want, 1e-12, 1e-12)?);
            let path = op.get(&[a.kind(), b.kind()], Out::Auto)?;
            println!("{:>5} ⊕ {:<5} -> {got:<16} {path}", a.kind(), b.kind());
        }
    }
    assert!(op.get(&[Kind::CSR, Kind::CSR], Out::Csr)?.is_direct());
    assert!(
        !op.get(&[main_diagonal_kind, Kind::DENSE], Out::Auto)?
            .is_direct()
    );
    let err = op
        .call(&[&dense, &Dense::zeros(2, 3).into()], Out::Auto, &())
        .unwrap_err();
    println!("{err}");
    // A sparse operator of 2²⁰ dimensions: the Csr kernel serves it, and a Dense result
    // (16 TiB) is refused before the product is formed.
    let big: Data = Csr::try_identity(1 << 20)?.into();
    let sparse = op.call(&[&big, &big], Out::Auto, &())?;
    println!("{sparse:#}");
    let err = op.call(&[&big, &big], Out::Dense, &()).unwrap_err();
    assert!(matches!(err, Error::TooLarge { ref op, .. } if op == "add_square"));
    println!("{err}");
    Ok(())
}

#[allow(dead_code)]
fn main() -> Result<()> {
    run()
}
