//! Sparse and dense matrices added and multiplied through the dispatcher, with the chosen
//! specialisation explained.
//!
//! Run with `cargo run --release --example quickstart`.

use polymat::ops::{ADD, MATMUL};
use polymat::{Csr, Data, Dense, Kind, Out, Result, c64};

fn main() -> Result<()> {
    let one = c64::new(1.0, 0.0);
    let i = c64::new(0.0, 1.0);

    // σx and σy as sparse matrices, a 2×2 dense matrix, a dense ket.
    let sx: Data = Csr::from_triplets((2, 2), &[0, 1], &[1, 0], &[one, one])?.into();
    let sy: Data = Csr::from_triplets((2, 2), &[0, 1], &[1, 0], &[-i, i])?.into();
    let rho: Data = Dense::from_rows(&[
        [c64::new(0.75, 0.0), c64::new(0.0, 0.25)],
        [c64::new(0.0, -0.25), c64::new(0.25, 0.0)],
    ])?
    .into();
    let ket: Data = Dense::from_rows(&[[one], [c64::new(0.0, 0.0)]])?.into();
    // `{}` prints the entries, `{:#}` the kind and shape.
    println!("sx  = {sx}   ({sx:#})");
    println!("sy  = {sy}   ({sy:#})");
    println!("rho = {rho}   ({rho:#})");
    println!("ket = {ket}   ({ket:#})");

    // Operators: Csr + Csr stays sparse; Csr + Dense has its own mixed kernel.
    let s = (&sx + &sy)?;
    println!("\nsx + sy  = {s}   ({s:#})");
    let m = (&sx + &rho)?;
    println!("sx + rho = {m}   ({m:#})");
    println!("  {}", ADD.get(&[Kind::CSR, Kind::DENSE], Out::Auto)?);

    // Named functions take the output kind: asking for Csr converts the mixed kernel's output.
    let mc = polymat::add(&sx, &rho, Out::Csr)?;
    println!("add(sx, rho, Out::Csr) = {mc:#}");
    println!("{}", ADD.explain(&[Kind::CSR, Kind::DENSE], Out::Csr)?);

    // Products: Csr·Dense and Dense·Csr are direct (neither densifies the Csr operand);
    // asking for a Csr result converts the kernel's Dense one.
    let flipped = polymat::matmul(&sx, &ket, Out::Auto)?;
    println!("\nsx · ket = {flipped}   ({flipped:#})");
    let prod = polymat::matmul(&rho, &sx, Out::Auto)?;
    println!("rho · sx = {prod}");
    println!("{}", MATMUL.explain(&[Kind::DENSE, Kind::CSR], Out::Csr)?);

    // [sx, sy] = 2i sz
    let comm = (&polymat::matmul(&sx, &sy, Out::Auto)? - &polymat::matmul(&sy, &sx, Out::Auto)?)?;
    println!("\n[sx, sy] = {comm}");
    let sz2i = Dense::from_rows(&[[2.0 * i, 0.0 * i], [0.0 * i, -2.0 * i]])?.into();
    assert!(polymat::isequal(&comm, &sz2i, 0.0, 0.0)?);
    println!("Tr(rho)  = {}", polymat::trace(&rho)?);
    Ok(())
}
