//! The XXZ spin chain: a sparse operator built from Pauli matrices with `kron` and `add`, its
//! lowest eigenvalues by the Krylov path of `eigs`, and a time evolution with `expm_multiply`,
//! none of which ever forms a dense 2ᴺ×2ᴺ matrix.
//!
//! ```sh
//! cargo run --release --example spin_chain          # N = 14: about a second
//! cargo run --release --example spin_chain -- 20    # N = 20: dimension 1 048 576, ~1 min
//! cargo run --release --example spin_chain -- 24 --kron-sum   # H never stored: ~6 GB
//! ```
//!
//! With `--kron-sum` H is a `KronSum` of its `3(N − 1)` Pauli products, applied by mode
//! products without ever being formed (at N = 24 the stored Csr holds 2.2·10⁸ entries, 5 GB;
//! the Kronecker sum a few hundred bytes), and the time evolution is skipped unless
//! `--evolve` is given.
//!
//! H = Σᵢ J (XᵢXᵢ₊₁ + YᵢYᵢ₊₁) + Δ ZᵢZᵢ₊₁ with J = 1, Δ = 0.7 and open ends. The start state is
//! a fixed pseudo-random vector; the program prints ⟨Z₀⟩(t) for t = 0, 0.1, …, 0.5, the time of
//! each step and the peak memory of the process.

#[path = "common/xxz.rs"]
mod xxz;

use std::time::Instant;

use polymat::ops::{EigOrder, EigsOptions};
use polymat::{Csr, Data, Dense, Out, c64};

/// Z on site 0 of `n`.
fn z0(n: usize) -> polymat::Result<Data> {
    polymat::kron(
        &xxz::pauli('z')?,
        &polymat::identity(1 << (n - 1), Out::Csr)?,
        Out::Csr,
    )
}

/// The start state ψₖ ∝ cos(0.1k) + i sin(0.37k).
fn start(dim: usize) -> polymat::Result<Data> {
    let v = Dense::from_fn(dim, 1, |k, _| {
        c64::new((0.1 * k as f64).cos(), (0.37 * k as f64).sin())
    });
    let norm = polymat::ops::norm::l2(&v.clone().into())?;
    polymat::mul(&v.into(), c64::new(1.0 / norm, 0.0), Out::Auto)
}

/// Peak resident memory of this process, from /proc (Linux), in MB.
fn peak_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

fn main() -> polymat::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .filter(|n| (2..=26).contains(n))
        .unwrap_or(14);
    let lazy = std::env::args().any(|a| a == "--kron-sum");
    let t0 = Instant::now();
    let h = if lazy {
        xxz::xxz_lazy(n, 1.0, 0.7)?
    } else {
        xxz::xxz(n, 1.0, 0.7)?
    };
    match h.downcast_ref::<Csr>() {
        Some(c) => println!(
            "XXZ chain, N = {n}: {}×{} Csr, {} stored entries, built in {:.2?}",
            1usize << n,
            1usize << n,
            c.nnz(),
            t0.elapsed()
        ),
        None => println!("XXZ chain, N = {n}: {h:#}, built in {:.2?}", t0.elapsed()),
    }

    let t1 = Instant::now();
    let opts = EigsOptions {
        count: Some(4),
        order: EigOrder::Low,
        vectors: false,
        hermitian: Some(true),
        ..Default::default()
    };
    let e = polymat::eigs(&h, opts)?;
    let vals: Vec<String> = e.values.iter().map(|v| format!("{:.10}", v.re)).collect();
    println!(
        "4 lowest eigenvalues ({:.2?}): {}",
        t1.elapsed(),
        vals.join(", ")
    );

    if lazy && !std::env::args().any(|a| a == "--evolve") {
        if let Some(mb) = peak_mb() {
            println!("peak memory: {mb:.0} MB");
        }
        return Ok(());
    }
    let z = z0(n)?;
    let mut psi = start(1 << n)?;
    let dt = c64::new(0.0, -0.1);
    let t2 = Instant::now();
    println!("  t    <Z0>(t)");
    for step in 0..=5 {
        if step > 0 {
            psi = polymat::expm_multiply(&h, &psi, dt, Out::Auto)?;
        }
        println!(
            "  {:.1}  {:+.12}",
            0.1 * step as f64,
            polymat::expect(&z, &psi)?.re
        );
    }
    println!("time evolution: {:.2?}", t2.elapsed());
    if let Some(mb) = peak_mb() {
        println!("peak memory: {mb:.0} MB");
    }
    Ok(())
}
