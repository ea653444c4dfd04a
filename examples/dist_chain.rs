//! The XXZ chain on several processes: `DistCsr` and `DistDense` (feature `mpi`) through the
//! same calls as on one machine, checked against the single-process results.
//!
//! ```sh
//! cargo build --release --features mpi --example dist_chain
//! mpirun -n 4 target/release/examples/dist_chain        # add --oversubscribe as needed
//! mpirun -n 4 target/release/examples/dist_chain 14     # N = 14 spins (default 11)
//! ```
//!
//! Every rank builds the global Csr (as an SPMD program does), takes its rows, and runs
//! `matmul`, `add`, `inner`, `expect`, the norms, `eigs` (Krylov, 4 lowest) and
//! `expm_multiply` on the distributed kinds; rank 0 prints the comparison. Exits with status 1
//! if any result differs from the single-process one beyond 1e-10 (1e-8 for eigenvalues).

#[path = "common/xxz.rs"]
mod xxz;

use polymat::dist::{self, DistCsr, DistDense};
use polymat::ops::{EigOrder, EigsOptions, norm};
use polymat::{Csr, Data, Dense, Kind, Out, c64};

fn main() -> polymat::Result<()> {
    let mpi = dist::init()?;
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(11);
    let dim = 1usize << n;
    let h = xxz::xxz(n, 1.0, 0.7)?;
    let psi: Data = Dense::from_fn(dim, 1, |k, _| {
        c64::new((0.1 * k as f64).cos(), (0.37 * k as f64).sin()) / (dim as f64).sqrt()
    })
    .into();

    // The distributed operator and state, through the public API only.
    let hd = Data::new(DistCsr::from_global(&polymat::to_type::<Csr>(&h)?)?)?;
    let psid = Data::new(DistDense::from_global(&polymat::to_type::<Dense>(&psi)?)?)?;
    let gather = |d: &Data| -> polymat::Result<Dense> {
        d.downcast_ref::<DistDense>()
            .ok_or_else(|| polymat::Error::InvalidArgument {
                op: "dist_chain".into(),
                reason: format!("expected a DistDense, got {}", d.kind()),
            })?
            .gather()
    };
    let mut worst: Vec<(&str, f64, f64)> = Vec::new();
    let diff = |a: &Dense, b: &Dense| -> f64 {
        (0..a.shape().0)
            .map(|i| (a.get(i, 0) - b.get(i, 0)).norm())
            .fold(0.0, f64::max)
    };

    // H·ψ: a Dense ψ is split on the way in; the result stays distributed (sticky group).
    let y = polymat::matmul(&hd, &psi, Out::Auto)?;
    let y_ref: Dense = polymat::to_type(&polymat::matmul(&h, &psi, Out::Auto)?)?;
    worst.push(("matmul", diff(&gather(&y)?, &y_ref), 1e-10));

    // add, inner, expect, norms, trace.
    let s = polymat::add_scaled(&y, &psid, c64::new(0.5, -1.0), Out::Auto)?;
    let s_ref: Dense = polymat::to_type(&polymat::add_scaled(
        &y_ref.clone().into(),
        &psi,
        c64::new(0.5, -1.0),
        Out::Auto,
    )?)?;
    worst.push(("add", diff(&gather(&s)?, &s_ref), 1e-10));
    let scalar =
        |name, got: c64, want: c64| (name, (got - want).norm(), 1e-10 * (1.0 + want.norm()));
    worst.push(scalar(
        "inner",
        polymat::inner(&psid, &y)?,
        polymat::inner(&psi, &y_ref.clone().into())?,
    ));
    worst.push(scalar(
        "expect",
        polymat::expect(&hd, &psid)?,
        polymat::expect(&h, &psi)?,
    ));
    worst.push(scalar("trace", polymat::trace(&hd)?, polymat::trace(&h)?));
    for (name, got, want) in [
        ("norm_l2", norm::l2(&y)?, norm::l2(&y_ref.clone().into())?),
        ("norm_one(H)", norm::one(&hd)?, norm::one(&h)?),
        ("norm_max(H)", norm::max(&hd)?, norm::max(&h)?),
        ("frobenius(H)", norm::frobenius(&hd)?, norm::frobenius(&h)?),
    ] {
        worst.push((name, (got - want).abs(), 1e-10 * (1.0 + want.abs())));
    }

    // The Krylov eigensolver and expm_multiply, unchanged: they see DistCsr and DistDense
    // through the dispatchers.
    let opts = || EigsOptions {
        count: Some(4),
        order: EigOrder::Low,
        vectors: false,
        ..Default::default()
    };
    let e = polymat::eigs(&hd, opts())?;
    let e_ref = polymat::eigs(&h, opts())?;
    let de = e
        .values
        .iter()
        .zip(&e_ref.values)
        .map(|(a, b)| (a - b).norm())
        .fold(0.0, f64::max);
    worst.push(("eigs (4 lowest)", de, 1e-8));
    let t = c64::new(0.0, -0.5);
    let ev = polymat::expm_multiply(&hd, &psi, t, Out::Auto)?;
    let ev_ref: Dense = polymat::to_type(&polymat::expm_multiply(&h, &psi, t, Out::Auto)?)?;
    worst.push(("expm_multiply", diff(&gather(&ev)?, &ev_ref), 1e-10));

    // No silent gather: an operation without a distributed kernel is an error.
    let refused = polymat::transpose(&hd, Out::Auto).is_err() && ev.kind() != Kind::DENSE;

    // NaN counts as a failure.
    let failed = worst.iter().any(|(_, d, tol)| d.is_nan() || d > tol) || !refused;
    if mpi.rank() == 0 {
        println!("XXZ chain N = {n} ({dim}×{dim}) on {} ranks:", mpi.size());
        for (name, d, tol) in &worst {
            println!("  {name:<16} |distributed − single| = {d:.2e}  (tolerance {tol:.0e})");
        }
        println!(
            "  4 lowest: {:.10?}",
            e.values.iter().map(|v| v.re).collect::<Vec<_>>()
        );
        println!("  transpose of a DistCsr refused (no silent gather): {refused}");
        println!("{}", if failed { "FAILED" } else { "all equal" });
    }
    drop(mpi);
    if failed {
        std::process::exit(1);
    }
    Ok(())
}
