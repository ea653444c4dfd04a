//! polymat's side of `benches/spin_chain/compare.py`: builds the XXZ chain of N spins (as
//! `tests/fixtures/spin_chain.py` does, with the same start state) and times one operation.
//!
//! ```sh
//! cargo run --profile bench --example chain_bench -- N OP REPS
//! ```
//!
//! OP is `eigs` (the 4 lowest eigenvalues, no vectors), `expm_multiply` (exp(−0.5i·H)·ψ),
//! `matvec` (H·ψ) or `build` (H itself: 3(N − 1) Kronecker products and sums). Prints the
//! median seconds per call over REPS calls, then the minimum. With `--kron-sum` H is the
//! lazy Kronecker sum of its Pauli products (`KronSum`) instead of a stored Csr; with `--mem`
//! the bytes H holds and the peak resident memory (MB) follow on the same line.

#[path = "../../examples/common/peak.rs"]
mod peak;
#[path = "../../examples/common/xxz.rs"]
mod xxz;

use std::time::Instant;

use peak::peak_mb;
use polymat::ops::{EigOrder, EigsOptions};
use polymat::{Data, Dense, Out, c64};

fn start(dim: usize) -> polymat::Result<Data> {
    let v = Dense::from_fn(dim, 1, |k, _| {
        c64::new((0.1 * k as f64).cos(), (0.37 * k as f64).sin())
    });
    let norm = polymat::ops::norm::l2(&v.clone().into())?;
    polymat::mul(&v.into(), c64::new(1.0 / norm, 0.0), Out::Auto)
}

fn main() -> polymat::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(12);
    let op = args.get(2).map_or("eigs", String::as_str).to_owned();
    let reps: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(5).max(1);
    let mut times = Vec::with_capacity(reps);
    if op == "build" {
        for _ in 0..reps {
            let t = Instant::now();
            drop(std::hint::black_box(xxz::xxz(n, 1.0, 0.7)?));
            times.push(t.elapsed().as_secs_f64());
        }
        return report(times);
    }
    let lazy = args.iter().any(|a| a == "--kron-sum");
    let h = if lazy {
        xxz::xxz_lazy(n, 1.0, 0.7)?
    } else {
        xxz::xxz(n, 1.0, 0.7)?
    };
    // What H holds: a Csr's three arrays, or a Kronecker sum's 2×2 factors.
    let held = h.as_csr().map_or(3 * (n - 1) * 2 * 64, |c| {
        c.nnz() * 24 + (c.shape().0 + 1) * 8
    });
    let psi = start(1 << n)?;
    let opts = EigsOptions::default()
        .count(4)
        .order(EigOrder::Low)
        .vectors(false);
    for _ in 0..reps {
        let t = Instant::now();
        match op.as_str() {
            "eigs" => drop(std::hint::black_box(polymat::eigs(&h, opts)?)),
            "expm_multiply" => drop(std::hint::black_box(polymat::expm_multiply(
                &h,
                &psi,
                c64::new(0.0, -0.5),
                Out::Auto,
            )?)),
            _ => drop(std::hint::black_box(polymat::matmul(&h, &psi, Out::Auto)?)),
        }
        times.push(t.elapsed().as_secs_f64());
    }
    if args.iter().any(|a| a == "--mem") {
        times.sort_by(f64::total_cmp);
        println!(
            "{:.9} {:.9} {held} {:.0}",
            times[times.len() / 2],
            times[0],
            peak_mb().unwrap_or(f64::NAN)
        );
        return Ok(());
    }
    report(times)
}

/// Prints the median and the minimum of `times` (at least one).
fn report(mut times: Vec<f64>) -> polymat::Result<()> {
    times.sort_by(f64::total_cmp);
    println!("{:.9} {:.9}", times[times.len() / 2], times[0]);
    Ok(())
}
