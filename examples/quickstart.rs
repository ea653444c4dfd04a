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
    println!("inputs: sx = {sx}, sy = {sy}, rho = {rho}, ket = {ket}");

    // Csr + Csr stays sparse; Csr + Dense has its own mixed kernel.
    let s = polymat::add(&sx, &sy, Out::Auto)?;
    println!(
        "\nsx + sy            = {s}  {:?}",
        s.downcast_ref::<Csr>().map(|c| c.data().to_vec())
    );
    let m = polymat::add(&sx, &rho, Out::Auto)?;
    println!("sx + rho           = {m}");
    println!("  {}", ADD.get(&[Kind::CSR, Kind::DENSE], Out::Auto)?);

    // Asking for a Csr result converts the mixed kernel's Dense output.
    let mc = polymat::add(&sx, &rho, Out::Csr)?;
    println!("sx + rho (Out::Csr) = {mc}");
    println!("{}", ADD.explain(&[Kind::CSR, Kind::DENSE], Out::Csr)?);

    // Products: Csr·Dense is direct; Dense·Csr converts the Csr operand.
    let flipped = polymat::matmul(&sx, &ket, Out::Auto)?;
    println!(
        "\nsx · ket           = {flipped} {:?}",
        flipped.downcast_ref::<Dense>().map(|d| d.to_rows())
    );
    let prod = polymat::matmul(&rho, &sx, Out::Auto)?;
    println!("rho · sx           = {prod}");
    println!("{}", MATMUL.explain(&[Kind::DENSE, Kind::CSR], Out::Auto)?);

    // [sx, sy] = 2i sz
    let comm = polymat::sub(
        &polymat::matmul(&sx, &sy, Out::Auto)?,
        &polymat::matmul(&sy, &sx, Out::Auto)?,
        Out::Dense,
    )?;
    let comm = comm.downcast_ref::<Dense>().expect("asked for Dense");
    println!("\n[sx, sy] = {:?}", comm.to_rows());
    assert_eq!(comm.get(0, 0), 2.0 * i);
    assert_eq!(comm.get(1, 1), -2.0 * i);
    println!("Tr(rho) = {}", polymat::trace(&rho)?);
    Ok(())
}
