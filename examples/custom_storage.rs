//! A user storage type (`MainDiagonal`, a matrix that is only its main diagonal) registered with only two conversions,
//! to and from Dense. Every operation then works on it, alone and mixed with Csr and Dense,
//! and one direct `MainDiagonal + MainDiagonal` kernel makes that path direct.
//!
//! Run with `cargo run --release --example custom_storage`.

#[path = "common/main_diagonal.rs"]
mod main_diagonal;

use main_diagonal::MainDiagonal;
use polymat::ops::ADD;
use polymat::{Csr, Data, Dense, Out, Result, Specialisation, c64};

pub fn run() -> Result<()> {
    let kind = main_diagonal::register()?;
    println!("registered {kind} with kind index {}", kind.index());

    let d: Data = Data::new(MainDiagonal {
        values: vec![c64::new(1.0, 0.0), c64::new(2.0, 0.0), c64::new(0.0, 3.0)],
    })?;
    let s: Data = Csr::from_triplets((3, 3), &[0, 2], &[2, 0], &[c64::new(1.0, 0.0); 2])?.into();
    let m: Data = Dense::from_fn(3, 3, |i, j| c64::new((i + 2 * j) as f64, 0.5)).into();
    let dd = polymat::to(polymat::Kind::DENSE, &d)?;

    // Every operation, with MainDiagonal alone and mixed, equals the Dense computation.
    let same = |x: &Data, y: &Data| polymat::isequal(x, y, 1e-12, 1e-12);
    for (name, got, want) in [
        (
            "d + d",
            polymat::add(&d, &d, Out::Auto)?,
            polymat::add(&dd, &dd, Out::Auto)?,
        ),
        (
            "d + s",
            polymat::add(&d, &s, Out::Auto)?,
            polymat::add(&dd, &s, Out::Auto)?,
        ),
        (
            "m - d",
            polymat::sub(&m, &d, Out::Auto)?,
            polymat::sub(&m, &dd, Out::Auto)?,
        ),
        (
            "d · m",
            polymat::matmul(&d, &m, Out::Auto)?,
            polymat::matmul(&dd, &m, Out::Auto)?,
        ),
        (
            "s · d",
            polymat::matmul(&s, &d, Out::Csr)?,
            polymat::matmul(&s, &dd, Out::Csr)?,
        ),
        (
            "d ⊗ s",
            polymat::kron(&d, &s, Out::Auto)?,
            polymat::kron(&dd, &s, Out::Auto)?,
        ),
        (
            "d ∘ m",
            polymat::multiply(&d, &m, Out::Auto)?,
            polymat::multiply(&dd, &m, Out::Auto)?,
        ),
        (
            "d†",
            polymat::adjoint(&d, Out::Auto)?,
            polymat::adjoint(&dd, Out::Auto)?,
        ),
        (
            "d³",
            polymat::pow(&d, 3, Out::Auto)?,
            polymat::pow(&dd, 3, Out::Auto)?,
        ),
        (
            "2i·d",
            polymat::mul(&d, c64::new(0.0, 2.0), Out::Auto)?,
            polymat::mul(&dd, c64::new(0.0, 2.0), Out::Auto)?,
        ),
    ] {
        assert!(same(&got, &want)?, "{name} differs");
        println!("{name:6} = {got}");
    }
    assert_eq!(polymat::trace(&d)?, c64::new(3.0, 3.0));

    // Results can be asked for in the new kind when they fit it...
    let back = polymat::mul(&d, c64::new(2.0, 0.0), Out::Kind(kind))?;
    assert_eq!(
        back.downcast_ref::<MainDiagonal>().map(|x| x.values[1]),
        Some(c64::new(4.0, 0.0))
    );
    // ...and are refused, with an error, when they do not.
    let err = polymat::add(&d, &s, Out::Kind(kind)).unwrap_err();
    println!("d + s as MainDiagonal: {err}");

    // One direct kernel makes MainDiagonal + MainDiagonal direct.
    let path = ADD.get(&[kind, kind], Out::Auto)?;
    println!("before: {path}");
    assert!(!path.is_direct());
    ADD.add_specialisation(Specialisation::binary(
        "add_main_diagonal",
        |a: &MainDiagonal, b: &MainDiagonal, s: &c64| {
            // ADD checks the shapes before it calls any kernel.
            Ok(MainDiagonal {
                values: a
                    .values
                    .iter()
                    .zip(&b.values)
                    .map(|(x, y)| x + s * y)
                    .collect(),
            })
        },
    ))?;
    let path = ADD.get(&[kind, kind], Out::Auto)?;
    println!("after:  {path}");
    assert!(path.is_direct());
    let sum = polymat::add(&d, &d, Out::Auto)?;
    assert_eq!(sum.kind(), kind);
    assert!(same(&sum, &polymat::add(&dd, &dd, Out::Auto)?)?);
    Ok(())
}

#[allow(dead_code)]
fn main() -> Result<()> {
    run()
}
