//! Adding your own kernel to a built-in operation.
//!
//! `matmul` for (Dense, Csr) → Dense is indirect out of the box: the Csr operand is converted
//! to Dense. Adding a kernel for that pair makes it direct, and (Dense, Csr) → Csr then goes
//! through the new kernel too (converting only its result).
//!
//! Run with `cargo run --release --example custom_specialisation`.

use polymat::ops::MATMUL;
use polymat::{Csr, Dense, Error, Kind, Out, Result, Specialisation};

/// Dense·Csr → Dense: for each stored entry b[k, j], add b[k, j]·a[:, k] to column j.
fn matmul_dense_csr(a: &Dense, b: &Csr) -> Result<Dense> {
    if a.shape().1 != b.shape().0 {
        return Err(Error::Shape {
            op: "matmul".into(),
            shapes: vec![a.shape(), b.shape()],
            requirement: "the left operand's columns must match the right operand's rows".into(),
        });
    }
    let (m, n) = (a.shape().0, b.shape().1);
    let mut out = Dense::zeros(m, n);
    let (p, idx, val) = (b.indptr(), b.indices(), b.data());
    for k in 0..b.shape().0 {
        let ak = a.col(k);
        for e in p[k]..p[k + 1] {
            let (j, v) = (idx[e], val[e]);
            for (o, x) in out.col_mut(j).iter_mut().zip(ak) {
                *o += v * x;
            }
        }
    }
    Ok(out)
}

pub fn run() -> Result<()> {
    let before = MATMUL.get(&[Kind::DENSE, Kind::CSR], Out::Dense)?;
    println!("before: {before}");
    assert!(!before.is_direct());

    MATMUL.add_specialisation(Specialisation::binary(
        "matmul_dense_csr",
        |a: &Dense, b: &Csr, _: &()| matmul_dense_csr(a, b),
    ))?;

    let after = MATMUL.get(&[Kind::DENSE, Kind::CSR], Out::Dense)?;
    println!("after:  {after}");
    assert!(after.is_direct());
    assert_eq!(after.kernel_name(), "matmul_dense_csr");

    let to_csr = MATMUL.get(&[Kind::DENSE, Kind::CSR], Out::Csr)?;
    println!("and:    {to_csr} via {}", to_csr.kernel_name());
    assert_eq!(to_csr.kernel_name(), "matmul_dense_csr");
    println!("{}", MATMUL.explain(&[Kind::DENSE, Kind::CSR], Out::Csr)?);

    // The handle kept from before still describes (and runs) the old path.
    assert!(!before.is_direct());

    // Same values either way.
    let a = Dense::from_fn(3, 4, |i, j| polymat::c64::new(i as f64, j as f64)).into();
    let b = Csr::from_triplets(
        (4, 2),
        &[0, 3, 2],
        &[1, 0, 1],
        &[polymat::c64::new(1.0, -1.0); 3],
    )?
    .into();
    let fast = polymat::matmul(&a, &b, Out::Dense)?;
    let reference = MATMUL.call(&[&a, &polymat::to(Kind::DENSE, &b)?], Out::Dense, &())?;
    assert!(polymat::isequal(&fast, &reference, 1e-12, 0.0)?);
    println!("Dense·Csr = {fast}, equal to the Dense·Dense result");
    Ok(())
}

#[allow(dead_code)]
fn main() -> Result<()> {
    run()
}
