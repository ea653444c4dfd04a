//! Adding your own kernel to a built-in operation.
//!
//! `multiply` (the entrywise product `a ∘ b`) for (Csr, Dense) is indirect out of the box: the
//! Csr operand is converted to Dense and the result is Dense. Yet the product is zero wherever
//! the Csr operand stores nothing, so a kernel that keeps its pattern, scaling each stored
//! entry by the dense entry at the same place, returns a Csr and never builds a dense copy.
//! Adding it makes (Csr, Dense) direct, and (Csr, Dense) → Dense goes through it too (converting
//! only its result).
//!
//! Run with `cargo run --release --example custom_specialisation`.

use polymat::ops::MULTIPLY;
use polymat::{Csr, Dense, Error, Kind, Out, Result, Specialisation};

/// Csr ∘ Dense → Csr: each stored entry a[i, j] times b[i, j], on a's pattern.
fn multiply_csr_dense(a: &Csr, b: &Dense) -> Result<Csr> {
    if a.shape() != b.shape() {
        return Err(Error::Shape {
            op: "multiply".into(),
            shapes: vec![a.shape(), b.shape()],
            requirement: "both operands must have the same shape".into(),
        });
    }
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
    for i in 0..a.shape().0 {
        for e in p[i]..p[i + 1] {
            rows.push(i);
            cols.push(idx[e]);
            vals.push(val[e] * b.get(i, idx[e]));
        }
    }
    Csr::from_triplets(a.shape(), &rows, &cols, &vals)
}

pub fn run() -> Result<()> {
    let before = MULTIPLY.get(&[Kind::CSR, Kind::DENSE], Out::Auto)?;
    println!("before: {before}");
    assert!(!before.is_direct());
    assert_eq!(before.kernel_name(), "multiply_dense");

    MULTIPLY.add_specialisation(Specialisation::binary(
        "multiply_csr_dense",
        |a: &Csr, b: &Dense, _: &()| multiply_csr_dense(a, b),
    ))?;

    let after = MULTIPLY.get(&[Kind::CSR, Kind::DENSE], Out::Auto)?;
    println!("after:  {after}");
    assert!(after.is_direct());
    assert_eq!(after.kernel_name(), "multiply_csr_dense");

    let to_csr = MULTIPLY.get(&[Kind::CSR, Kind::DENSE], Out::Csr)?;
    println!("and:    {to_csr} via {}", to_csr.kernel_name());
    assert_eq!(to_csr.kernel_name(), "multiply_csr_dense");
    println!(
        "{}",
        MULTIPLY.explain(&[Kind::CSR, Kind::DENSE], Out::Dense)?
    );

    // The handle kept from before still describes (and runs) the old path.
    assert!(!before.is_direct());

    // Same values either way, and the result is sparse now.
    let a = Csr::from_triplets(
        (3, 4),
        &[0, 2, 2],
        &[1, 0, 3],
        &[polymat::c64::new(1.0, -1.0); 3],
    )?
    .into();
    let b = Dense::from_fn(3, 4, |i, j| polymat::c64::new(i as f64, j as f64)).into();
    let fast = polymat::multiply(&a, &b, Out::Auto)?;
    assert_eq!(fast.kind(), Kind::CSR);
    let reference = before.call(&[&a, &b], &())?;
    assert_eq!(reference.kind(), Kind::DENSE);
    assert!(polymat::isequal(&fast, &reference, 1e-12, 0.0)?);
    println!("Csr ∘ Dense = {fast} ({fast:#}), equal to the Dense ∘ Dense result");
    Ok(())
}

#[allow(dead_code)]
fn main() -> Result<()> {
    run()
}
