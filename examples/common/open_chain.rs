//! The dissipative XXZ chain shared by the open-system example, test and benchmark, built from
//! its local operators as lazy kinds: H a Kronecker sum of two-site Pauli products, each
//! collapse operator √γ·σ⁻ₖ a one-term Kronecker sum, the Liouvillian a lazy superoperator.
//! Nothing of size 4ᴺ is ever stored but the state.
#![allow(dead_code)]

use polymat::{Csr, Data, Dense, KronSum, Out, c64};

/// J, Δ of the chain and γ of the decay (QuTiP's `sigmam()` on every site).
pub const J: f64 = 1.0;
/// The anisotropy Δ.
pub const DELTA: f64 = 0.7;
/// The decay rate γ.
pub const GAMMA: f64 = 0.1;

/// A 2×2 Csr from its rows.
fn two(m: [[c64; 2]; 2]) -> polymat::Result<Data> {
    Ok(Csr::from_rows(&m)?.into())
}

/// σx, σy, σz, σ⁻ (QuTiP's conventions: σ⁻ = [[0, 0], [1, 0]], |0⟩ is up).
pub fn paulis() -> polymat::Result<[Data; 4]> {
    let (o, z, i) = (c64::new(1.0, 0.0), c64::new(0.0, 0.0), c64::new(0.0, 1.0));
    Ok([
        two([[z, o], [o, z]])?,
        two([[z, -i], [i, z]])?,
        two([[o, z], [z, -o]])?,
        two([[z, z], [o, z]])?,
    ])
}

/// H = Σₖ J(XₖXₖ₊₁ + YₖYₖ₊₁) + Δ ZₖZₖ₊₁ on `n` spins, open ends, as a Kronecker sum.
pub fn hamiltonian(n: usize) -> polymat::Result<KronSum> {
    let [x, y, z, _] = paulis()?;
    let mut h = KronSum::new(&vec![2; n])?;
    for k in 0..n - 1 {
        for (p, c) in [(&x, J), (&y, J), (&z, DELTA)] {
            h.push_term(c64::new(c, 0.0), [(k, p.clone()), (k + 1, p.clone())])?;
        }
    }
    Ok(h)
}

/// √γ·σ⁻ₖ for every site k.
pub fn collapse_ops(n: usize) -> polymat::Result<Vec<Data>> {
    let [.., sm] = paulis()?;
    (0..n)
        .map(|k| {
            Ok(KronSum::new(&vec![2; n])?
                .with_term(c64::new(GAMMA.sqrt(), 0.0), [(k, sm.clone())])?
                .into())
        })
        .collect()
}

/// Z on site 0 (the leftmost factor).
pub fn z0(n: usize) -> polymat::Result<Data> {
    let [_, _, z, _] = paulis()?;
    Ok(KronSum::new(&vec![2; n])?
        .with_term(c64::new(1.0, 0.0), [(0, z)])?
        .into())
}

/// The Liouvillian −i[H, ·] + Σₖ D[√γ σ⁻ₖ], lazy.
pub fn liouvillian(n: usize) -> polymat::Result<Data> {
    polymat::liouvillian(Some(&hamiltonian(n)?.into()), &collapse_ops(n)?)
}

/// vec ρ₀ of ρ₀ = |ψ⟩⟨ψ|, ψₖ ∝ cos(0.1k) + i·sin(0.37k): entry j·2ᴺ + i is ψᵢ·ψ̄ⱼ (columns
/// stacked, QuTiP's `operator_to_vector`).
pub fn rho0(n: usize) -> polymat::Result<Data> {
    let dim = 1usize << n;
    let psi: Vec<c64> = (0..dim)
        .map(|k| c64::new((0.1 * k as f64).cos(), (0.37 * k as f64).sin()))
        .collect();
    let norm2: f64 = psi.iter().map(|z| z.norm_sqr()).sum();
    Ok(Dense::try_from_fn(dim * dim, 1, |r, _| {
        let (i, j) = (r % dim, r / dim);
        psi[i] * psi[j].conj() / norm2
    })?
    .into())
}

/// ⟨Z₀⟩ = Tr(Z₀·ρ) of a state given as vec ρ: `expect_super` of `spre(Z₀)`, one lazy product.
pub fn z0_of(z0_pre: &Data, rho: &Data) -> polymat::Result<f64> {
    Ok(polymat::expect_super(z0_pre, rho)?.re)
}

/// `spre(Z₀)` for [`z0_of`].
pub fn z0_pre(n: usize) -> polymat::Result<Data> {
    polymat::spre(&z0(n)?)
}

/// The state after a step of `dt`: exp(dt·L)·vec ρ.
pub fn step(l: &Data, rho: &Data, dt: f64) -> polymat::Result<Data> {
    polymat::expm_multiply(l, rho, c64::new(dt, 0.0), Out::Auto)
}
