//! An open quantum system too large to store its generator: the XXZ chain with decay on every
//! site, evolved as a density matrix. The Lindblad superoperator (4ᴺ × 4ᴺ) is a lazy
//! `SuperOp` whose factors are Kronecker sums of 2×2 local operators; only ρ is stored.
//!
//! ```sh
//! cargo run --release --example open_chain          # N = 8: a fraction of a second
//! cargo run --release --example open_chain -- 10    # N = 10: dim L = 1 048 576
//! cargo run --release --example open_chain -- 13 --no-steady   # dim L = 6.7·10⁷, ~9 GB
//! ```
//!
//! Prints ⟨Z₀⟩(t) for t = 0, 0.25, 0.5, 0.75, 1 (one `t  value` line each, with the step's
//! time), the steady state's ⟨Z₀⟩ (GMRES with the trace condition, as QuTiP's
//! `steadystate`), and the peak memory. QuTiP's `liouvillian(H, c_ops)` stores 13 107 199
//! entries at N = 10 and about 10⁹ at N = 13.

#[path = "common/open_chain.rs"]
mod chain;
#[path = "common/peak.rs"]
mod peak;

use std::time::Instant;

use polymat::ops::SteadyState;

fn main() -> polymat::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .filter(|n| (2..=14).contains(n))
        .unwrap_or(8);
    let steady = !std::env::args().any(|a| a == "--no-steady");

    let t0 = Instant::now();
    let l = chain::liouvillian(n)?;
    let z0 = chain::z0_pre(n)?;
    let mut rho = chain::rho0(n)?;
    println!(
        "dissipative XXZ chain, N = {n}: L is {}×{} ({l:#}), built in {:.2?}",
        l.shape().0,
        l.shape().1,
        t0.elapsed()
    );
    println!("  t     <Z0>(t)              step time");
    println!("  0.00  {:+.12}", chain::z0_of(&z0, &rho)?);
    for k in 1..=4 {
        let t = Instant::now();
        rho = chain::step(&l, &rho, 0.25)?;
        println!(
            "  {:.2}  {:+.12}    {:.2?}",
            0.25 * k as f64,
            chain::z0_of(&z0, &rho)?,
            t.elapsed()
        );
    }
    if steady {
        let t = Instant::now();
        let ss = polymat::steadystate(&l, &SteadyState::default())?;
        let z = polymat::expect(&chain::z0(n)?, &ss)?.re;
        println!("steady state <Z0> = {z:+.12} ({:.2?})", t.elapsed());
    }
    if let Some(mb) = peak::peak_mb() {
        println!("peak memory: {mb:.0} MB");
    }
    Ok(())
}
