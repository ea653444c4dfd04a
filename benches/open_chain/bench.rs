//! polymat's side of `benches/open_chain/compare.py`: the dissipative XXZ chain of
//! `examples/open_chain.rs` with the lazy Liouvillian, timed step by step.
//!
//! ```sh
//! cargo run --release --example open_bench -- N [--steady] [--points]
//! ```
//!
//! Prints one line of `key=value` pairs: `build` (seconds to make L, lazy), `evolve` (one
//! `expm_multiply` of vec ρ₀ to t = 1), `z1` (⟨Z₀⟩ at t = 1), with `--points` `points` (four
//! steps of 0.25, as `mesolve` at 5 points), with `--steady` `steady` (seconds) and `zss`
//! (⟨Z₀⟩ of the steady state), then `peak_mb` (the process's peak resident memory).

#[path = "../../examples/common/open_chain.rs"]
mod chain;
#[path = "../../examples/common/peak.rs"]
mod peak;

use std::time::Instant;

use polymat::ops::SteadyState;

fn main() -> polymat::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .filter(|n| (2..=14).contains(n))
        .unwrap_or(8);
    let t = Instant::now();
    let l = chain::liouvillian(n)?;
    let z0 = chain::z0_pre(n)?;
    let build = t.elapsed().as_secs_f64();
    let rho0 = chain::rho0(n)?;
    let t = Instant::now();
    let rho1 = chain::step(&l, &rho0, 1.0)?;
    let evolve = t.elapsed().as_secs_f64();
    let z1 = chain::z0_of(&z0, &rho1)?;
    drop(rho1);
    let mut line = format!("n={n} build={build:.6} evolve={evolve:.6} z1={z1:.12}");
    if args.iter().any(|a| a == "--points") {
        let t = Instant::now();
        let mut rho = rho0.clone();
        for _ in 0..4 {
            rho = chain::step(&l, &rho, 0.25)?;
        }
        line += &format!(" points={:.6}", t.elapsed().as_secs_f64());
    }
    if args.iter().any(|a| a == "--steady") {
        let t = Instant::now();
        let ss = polymat::steadystate(&l, &SteadyState::default())?;
        let z = polymat::expect(&chain::z0(n)?, &ss)?.re;
        line += &format!(" steady={:.6} zss={z:.12}", t.elapsed().as_secs_f64());
    }
    line += &format!(" peak_mb={:.0}", peak::peak_mb().unwrap_or(f64::NAN));
    println!("{line}");
    Ok(())
}
