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
//!
//! `eigs` runs watched ([`polymat::eigs_with`]): a progress bar shows the restarts, the
//! eigenpairs converged and the worst residual, and Ctrl-C stops it cleanly, printing the
//! eigenvalues converged so far (the program then ends without the time evolution).
//! `--stop-after R` stops it after R restarts the same way, then resumes from the vector the
//! stopped run kept (`v0`) and runs a cold start, printing the restarts and products of each.

#[path = "common/peak.rs"]
mod peak;
#[path = "common/xxz.rs"]
mod xxz;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use peak::peak_mb;
use polymat::ops::{EigOrder, EigsOptions, Flow, Watch};
use polymat::{Csr, Data, Dense, Error, Out, c64};

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

/// The value after `name` on the command line.
fn flag_value(name: &str) -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1)?.parse().ok()
}

/// Resumes a stopped `eigs` from `v0`, then runs it cold, and prints the restarts and
/// products of each.
fn resume(h: &Data, opts: EigsOptions, v0: Data) -> polymat::Result<()> {
    let counted = |start: Option<Data>| -> polymat::Result<(usize, usize, std::time::Duration)> {
        let last = Arc::new(std::sync::Mutex::new((0, 0)));
        let seen = Arc::clone(&last);
        let mut watch = Watch::new().observe(move |p| {
            if let Ok(mut l) = seen.lock() {
                *l = (p.iteration, p.applications);
            }
            Flow::Continue
        });
        if let Some(v) = start {
            watch = watch.start(v);
        }
        let t = Instant::now();
        polymat::eigs_with(h, opts, &watch)?;
        let (restarts, products) = last.lock().map(|l| *l).unwrap_or_default();
        Ok((restarts, products, t.elapsed()))
    };
    let (r, p, t) = counted(Some(v0))?;
    println!("resumed from the stopped run's vector: {r} restarts, {p} products, {t:.2?}");
    let (r, p, t) = counted(None)?;
    println!("cold start:                             {r} restarts, {p} products, {t:.2?}");
    Ok(())
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
    let opts = EigsOptions::default()
        .count(4)
        .order(EigOrder::Low)
        .vectors(false)
        .hermitian(true);
    // `--stop-after R`: stop after R restarts as Ctrl-C would, then resume (see `resume`).
    let stop_after = flag_value("--stop-after").unwrap_or(usize::MAX);
    // A progress bar fed by the observer, and Ctrl-C asking it to stop.
    let interrupted = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&interrupted);
    if ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed)).is_err() {
        eprintln!("(Ctrl-C handler not installed: the run cannot be stopped cleanly)");
    }
    let bar = ProgressBar::new(opts.count.unwrap_or(0) as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "eigs {bar:20} {pos}/{len} converged, {msg} [{elapsed_precise}]",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let shown = bar.clone();
    let watch = Watch::new().observe(move |p| {
        shown.set_position(p.converged as u64);
        shown.set_message(format!(
            "restart {}, {} products, residual {:.1e}",
            p.iteration, p.applications, p.residual
        ));
        if interrupted.load(Ordering::Relaxed) || p.iteration >= stop_after {
            Flow::Stop
        } else {
            Flow::Continue
        }
    });
    let e = match polymat::eigs_with(&h, opts, &watch) {
        Ok(e) => {
            bar.finish_and_clear();
            e
        }
        Err(err @ Error::Stopped { .. }) => {
            bar.abandon();
            println!("{err}");
            if let Some(p) = watch.stopped() {
                let vals: Vec<String> = p.values.iter().map(|v| format!("{:.10}", v.re)).collect();
                println!("converged so far: [{}]", vals.join(", "));
                if stop_after != usize::MAX
                    && let Some(v0) = p.resume
                {
                    resume(&h, opts, v0)?;
                }
            }
            return Ok(());
        }
        Err(err) => return Err(err),
    };
    let vals: Vec<String> = e.values.iter().map(|v| format!("{:.10}", v.re)).collect();
    println!(
        "4 lowest eigenvalues ({:.2?}, {} products in {} cycles): {}",
        t1.elapsed(),
        e.applications,
        e.cycles,
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
