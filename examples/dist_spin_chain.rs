//! The XXZ chain on several processes (feature `mpi`): each rank builds only its own rows of
//! H from a closure, then `eigs` (4 lowest) and a short time evolution with `expm_multiply` run
//! through the same calls as on one machine.
//!
//! ```sh
//! cargo build --release --features mpi --example dist_spin_chain
//! mpirun -n 4 target/release/examples/dist_spin_chain            # N = 14, checked
//! mpirun -n 4 target/release/examples/dist_spin_chain 20         # N = 20, no check
//! ```
//! (`--oversubscribe` for more ranks than cores, `--allow-run-as-root` as root.)
//!
//! Each rank prints its rows, stored entries, time and peak memory. With `--check` (the default
//! for N ≤ 16) every rank also builds the whole H the single-process way (`kron`, `add`) and the
//! program compares `matmul`, `add`, `inner`, `expect`, `trace`, the norms, `eigs` and
//! `expm_multiply` with it: exit status 1 if any differs by more than 1e-12 (relative).

#[path = "common/peak.rs"]
mod peak;
#[path = "common/xxz.rs"]
mod xxz;

use std::time::Instant;

use peak::peak_mb;
use polymat::mpi::{self, DistCsr, DistDense};
use polymat::ops::{EigOrder, EigsOptions, norm};
use polymat::{Data, Dense, Out, c64};

/// Row `s` of H in the basis of Z eigenstates (site `i` is bit `n − 1 − i`, as `kron` orders
/// them): Δ Σ zᵢzᵢ₊₁ on the diagonal, 2J to the state with an anti-aligned pair swapped.
fn xxz_row(n: usize, j: f64, delta: f64, s: usize) -> Vec<(usize, c64)> {
    let mut out = Vec::with_capacity(n);
    let mut diag = 0.0;
    for i in 0..n - 1 {
        let (a, b) = (n - 1 - i, n - 2 - i);
        let (za, zb) = ((s >> a) & 1, (s >> b) & 1);
        diag += if za == zb { delta } else { -delta };
        if za != zb {
            out.push((s ^ (1 << a) ^ (1 << b), c64::new(2.0 * j, 0.0)));
        }
    }
    out.push((s, c64::new(diag, 0.0)));
    out
}

fn main() -> polymat::Result<()> {
    let mpi = mpi::init()?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(14);
    let check =
        args.iter().any(|a| a == "--check") || (n <= 16 && !args.iter().any(|a| a == "--no-check"));
    let (j, delta) = (1.0, 0.7);
    let dim = 1usize << n;
    let (rank, size) = (mpi.rank(), mpi.size());

    let t0 = Instant::now();
    let hd = DistCsr::from_row_fn(dim, dim, |s| xxz_row(n, j, delta, s))?;
    let (rows, nnz, halo) = (hd.local().shape().0, hd.local().nnz(), hd.halo_len());
    let hd = Data::new(hd)?;
    let build = t0.elapsed();
    let psi: Data = Dense::from_fn(dim, 1, |k, _| {
        c64::new((0.1 * k as f64).cos(), (0.37 * k as f64).sin()) / (dim as f64).sqrt()
    })
    .into();
    // Z on site 0, diagonal: built the same way.
    let z0 = Data::new(DistCsr::from_row_fn(dim, dim, |s| {
        vec![(
            s,
            c64::new(if (s >> (n - 1)) & 1 == 0 { 1.0 } else { -1.0 }, 0.0),
        )]
    })?)?;

    // One product, timed (the unit of every Krylov step).
    let psid = Data::new(DistDense::from_global(&polymat::to_type::<Dense>(&psi)?)?)?;
    let reps = 20;
    let t1 = Instant::now();
    for _ in 0..reps {
        std::hint::black_box(polymat::matmul(&hd, &psid, Out::Auto)?);
    }
    let matvec = t1.elapsed() / reps;

    let t2 = Instant::now();
    let opts = || {
        EigsOptions::default()
            .count(4)
            .order(EigOrder::Low)
            .vectors(false)
    };
    let e = polymat::eigs(&hd, opts())?;
    let eigs_time = t2.elapsed();
    let t3 = Instant::now();
    let mut z_t = Vec::new();
    let mut state = psid.clone();
    for _ in 0..3 {
        state = polymat::expm_multiply(&hd, &state, c64::new(0.0, -0.1), Out::Auto)?;
        z_t.push(polymat::expect(&z0, &state)?.re);
    }
    let evolve = t3.elapsed();

    if rank == 0 {
        println!("XXZ chain N = {n} ({dim}×{dim}) on {size} ranks");
        println!(
            "  4 lowest: {:.10?}",
            e.values.iter().map(|v| v.re).collect::<Vec<_>>()
        );
        println!("  <Z0>(t = 0.1, 0.2, 0.3): {z_t:.10?}");
    }
    println!(
        "  rank {rank}: {rows} rows, {nnz} stored entries, halo {halo}; build {build:.2?}, H·ψ {matvec:.2?}, \
         eigs {eigs_time:.2?}, evolution {evolve:.2?}, peak memory {:.0} MB",
        peak_mb().unwrap_or(f64::NAN)
    );

    let mut failed = false;
    if check {
        let h = xxz::xxz(n, j, delta)?;
        let gather = |d: &Data| -> polymat::Result<Dense> {
            match d.downcast_ref::<DistDense>() {
                Some(x) => x.gather(),
                None => polymat::to_type(d),
            }
        };
        let rel = |got: &Dense, want: &Dense| -> f64 {
            let scale = (0..want.shape().0)
                .map(|i| want.get(i, 0).norm())
                .fold(0.0, f64::max);
            (0..want.shape().0)
                .map(|i| (got.get(i, 0) - want.get(i, 0)).norm())
                .fold(0.0, f64::max)
                / scale.max(1.0)
        };
        let relc = |got: c64, want: c64| (got - want).norm() / want.norm().max(1.0);
        let relf = |got: f64, want: f64| (got - want).abs() / want.abs().max(1.0);
        let y = polymat::matmul(&hd, &psi, Out::Auto)?;
        let y_ref = polymat::matmul(&h, &psi, Out::Auto)?;
        let s = polymat::add_scaled(&y, &psid, c64::new(0.5, -1.0), Out::Auto)?;
        let s_ref = polymat::add_scaled(&y_ref, &psi, c64::new(0.5, -1.0), Out::Auto)?;
        let e_ref = polymat::eigs(&h, opts())?;
        // H ⊗ X: a local operator on one more site; the row blocks of H map to row blocks.
        let x = xxz::pauli('x')?;
        let phi: Data = Dense::from_fn(2 * dim, 1, |k, _| c64::new(1.0, (k % 7) as f64)).into();
        let kd = polymat::matmul(&polymat::kron(&hd, &x, Out::Auto)?, &phi, Out::Auto)?;
        let k_ref = polymat::matmul(&polymat::kron(&h, &x, Out::Auto)?, &phi, Out::Auto)?;
        let ev = polymat::expm_multiply(&hd, &psi, c64::new(0.0, -0.5), Out::Auto)?;
        let ev_ref = polymat::expm_multiply(&h, &psi, c64::new(0.0, -0.5), Out::Auto)?;
        let report = [
            ("matmul", rel(&gather(&y)?, &gather(&y_ref)?)),
            ("add", rel(&gather(&s)?, &gather(&s_ref)?)),
            (
                "inner",
                relc(polymat::inner(&psid, &y)?, polymat::inner(&psi, &y_ref)?),
            ),
            (
                "expect",
                relc(polymat::expect(&hd, &psid)?, polymat::expect(&h, &psi)?),
            ),
            // Tr H sums ±Δ terms to about zero: relative to Σ|hᵢᵢ| ≤ ‖H‖_F·√dim instead.
            (
                "trace",
                (polymat::trace(&hd)? - polymat::trace(&h)?).norm()
                    / (norm::frobenius(&h)? * (dim as f64).sqrt()).max(1.0),
            ),
            ("norm_l2", relf(norm::l2(&y)?, norm::l2(&y_ref)?)),
            ("norm_one", relf(norm::one(&hd)?, norm::one(&h)?)),
            ("norm_max", relf(norm::max(&hd)?, norm::max(&h)?)),
            (
                "frobenius",
                relf(norm::frobenius(&hd)?, norm::frobenius(&h)?),
            ),
            (
                "eigs",
                e.values
                    .iter()
                    .zip(&e_ref.values)
                    .map(|(a, b)| relc(*a, *b))
                    .fold(0.0, f64::max),
            ),
            ("expm_multiply", rel(&gather(&ev)?, &gather(&ev_ref)?)),
            ("kron(H, X)·φ", rel(&gather(&kd)?, &gather(&k_ref)?)),
        ];
        // No silent gather: an operation without a distributed kernel is refused.
        let refused = polymat::transpose(&hd, Out::Auto).is_err();
        failed = report.iter().any(|(_, d)| d.is_nan() || *d > 1e-12) || !refused;
        if rank == 0 {
            println!("  check against the single-process results (relative, tolerance 1e-12):");
            for (name, d) in &report {
                println!("    {name:<14} {d:.1e}");
            }
            println!("    transpose of a DistCsr refused (no silent gather): {refused}");
            println!("  {}", if failed { "FAILED" } else { "all equal" });
        }
    }
    drop(mpi);
    if failed {
        std::process::exit(1);
    }
    Ok(())
}
