//! The XXZ spin chain shared by the examples and the spin-chain benchmark: H = Σᵢ J (XᵢXᵢ₊₁ +
//! YᵢYᵢ₊₁) + Δ ZᵢZᵢ₊₁ with open ends, built as Csr from Pauli products with `kron` and `add`.
#![allow(dead_code)]

use polymat::{Csr, Data, Out, c64};

/// The Pauli matrix `'x'`, `'y'` or `'z'` as a 2×2 Csr.
pub fn pauli(name: char) -> polymat::Result<Data> {
    let (o, i) = (c64::new(1.0, 0.0), c64::new(0.0, 1.0));
    let (rows, cols, vals) = match name {
        'x' => ([0, 1], [1, 0], [o, o]),
        'y' => ([0, 1], [1, 0], [-i, i]),
        _ => ([0, 1], [0, 1], [o, -o]),
    };
    Ok(Csr::from_triplets((2, 2), &rows, &cols, &vals)?.into())
}

/// The XXZ Hamiltonian of `n` spins with couplings `j` and `delta`.
pub fn xxz(n: usize, j: f64, delta: f64) -> polymat::Result<Data> {
    let dim = 1 << n;
    let mut h = polymat::zeros(dim, dim, Out::Csr)?;
    for (p, c) in [('x', j), ('y', j), ('z', delta)] {
        let p = pauli(p)?;
        let pp = polymat::kron(&p, &p, Out::Csr)?;
        for i in 0..n - 1 {
            let left = polymat::identity(1 << i, Out::Csr)?;
            let right = polymat::identity(1 << (n - i - 2), Out::Csr)?;
            let term = polymat::kron(&polymat::kron(&left, &pp, Out::Csr)?, &right, Out::Csr)?;
            h = polymat::add_scaled(&h, &term, c64::new(c, 0.0), Out::Csr)?;
        }
    }
    Ok(h)
}

/// The same Hamiltonian as a Kronecker sum: `3(N − 1)` two-site Pauli products held as their
/// 2×2 factors, never formed (`polymat::KronSum`).
pub fn xxz_lazy(n: usize, j: f64, delta: f64) -> polymat::Result<Data> {
    let mut h = polymat::KronSum::new(&vec![2; n])?;
    for (p, c) in [('x', j), ('y', j), ('z', delta)] {
        let p = pauli(p)?;
        for i in 0..n - 1 {
            h.push_term(c64::new(c, 0.0), [(i, p.clone()), (i + 1, p.clone())])?;
        }
    }
    Ok(h.into())
}
