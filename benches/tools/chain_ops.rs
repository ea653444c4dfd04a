//! Everyday operations on the XXZ chain's H (as `benches/spin_chain` builds it), timed for the
//! side-by-side with scipy in `benches/spin_chain/ops_scipy.py` (same operations, same H):
//!
//! ```sh
//! cargo run --profile bench --example chain_ops -- 20          # every operation, medians
//! cargo run --profile bench --example chain_ops -- 18 mul      # one, three medians of 11
//! python3 benches/spin_chain/ops_scipy.py 20
//! ```
//!
//! Operations: `HH` (H·H), `adjoint`, `transpose`, `mul` (2·H), `expect` (⟨ψ|H|ψ⟩), `trace`,
//! `sub` (H − H), `tidyup`, `isherm`, `kronI` (H ⊗ I₂). Milliseconds per call.

#[path = "../../examples/common/xxz.rs"]
mod xxz;
use polymat::{Data, Dense, Out, c64};
use std::time::Instant;
/// The median milliseconds of `reps` calls of `f`.
fn med(mut f: impl FnMut() -> polymat::Result<()>, reps: usize) -> f64 {
    let mut t = vec![];
    for _ in 0..reps {
        let s = Instant::now();
        f().unwrap();
        t.push(s.elapsed().as_secs_f64());
    }
    t.sort_by(f64::total_cmp);
    t[t.len() / 2] * 1e3
}
/// One call of `op`.
fn run(op: &str, h: &Data, psi: &Data) -> polymat::Result<()> {
    let s2 = c64::new(2.0, 0.0);
    match op {
        "HH" => drop(std::hint::black_box(polymat::matmul(h, h, Out::Auto)?)),
        "adjoint" => drop(std::hint::black_box(polymat::adjoint(h, Out::Auto)?)),
        "transpose" => drop(std::hint::black_box(polymat::transpose(h, Out::Auto)?)),
        "mul" => drop(std::hint::black_box(polymat::mul(h, s2, Out::Auto)?)),
        "expect" => drop(std::hint::black_box(polymat::expect(h, psi)?)),
        "trace" => drop(std::hint::black_box(polymat::trace(h)?)),
        "sub" => drop(std::hint::black_box(polymat::sub(h, h, Out::Auto)?)),
        "tidyup" => drop(std::hint::black_box(polymat::tidyup(h, 1e-12, Out::Auto)?)),
        "isherm" => drop(std::hint::black_box(polymat::isherm(h, 1e-12)?)),
        _ => drop(std::hint::black_box(polymat::kron(
            h,
            &polymat::identity(2, Out::Csr)?,
            Out::Auto,
        )?)),
    }
    Ok(())
}
fn main() -> polymat::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(18);
    let h = xxz::xxz(n, 1.0, 0.7)?;
    let psi: Data = Dense::from_fn(1 << n, 1, |k, _| {
        c64::new((0.1 * k as f64).cos(), (0.37 * k as f64).sin())
    })
    .into();
    if let Some(op) = std::env::args().nth(2) {
        for _ in 0..3 {
            print!("{:.2} ", med(|| run(&op, &h, &psi), 11));
        }
        println!();
        return Ok(());
    }
    for op in [
        "HH",
        "adjoint",
        "transpose",
        "mul",
        "expect",
        "trace",
        "sub",
        "tidyup",
        "isherm",
        "kronI",
    ] {
        println!(
            "{op} {:.2}",
            med(|| run(op, &h, &psi), if op == "HH" { 3 } else { 5 })
        );
    }
    Ok(())
}
