//! Iterative solves of a shifted 2-D Laplacian (k × k grid, `4.1` on the diagonal, `−1` to the
//! four neighbours, complex storage), timed; `benches/iterative/solve_scipy.py` runs scipy's
//! solvers on the same system. See `docs/benchmarks.md`, "GMRES with one pass of modified
//! Gram–Schmidt".
//!
//! ```sh
//! cargo build --profile bench --example solve_probe
//! POLYMAT_NUM_THREADS=1 target/release/benches/tools/solve_probe 300 gmres   # cg, bicgstab, gmres
//! python3 benches/iterative/solve_scipy.py 300 gmres
//! ```
//!
//! `RESTART=20` sets GMRES's restart length (default 30, [`Iterative`]'s; scipy's is 20).
//! Prints the time of each of three solves and the true relative residual.

use std::time::Instant;

use polymat::ops::solve::{Iterative, SolveMethod};
use polymat::{Csr, Data, Dense, Out, c64};

fn laplacian(k: usize) -> polymat::Result<Data> {
    let n = k * k;
    let (mut r, mut c, mut v) = (vec![], vec![], vec![]);
    for i in 0..k {
        for j in 0..k {
            let p = i * k + j;
            let mut push = |q: usize, x: f64| {
                r.push(p);
                c.push(q);
                v.push(c64::new(x, 0.0));
            };
            push(p, 4.1);
            if i > 0 {
                push(p - k, -1.0);
            }
            if i + 1 < k {
                push(p + k, -1.0);
            }
            if j > 0 {
                push(p - 1, -1.0);
            }
            if j + 1 < k {
                push(p + 1, -1.0);
            }
        }
    }
    Ok(Csr::from_triplets((n, n), &r, &c, &v)?.into())
}

fn main() -> polymat::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let k: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(300);
    let method = args.get(2).map_or("gmres", String::as_str);
    let restart = std::env::var("RESTART")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(Iterative::default().restart);
    let a = laplacian(k)?;
    let b: Data = Dense::from_fn(k * k, 1, |i, _| c64::new((0.1 * i as f64).cos(), 0.0)).into();
    let o = Iterative::default()
        .tol(1e-8)
        .max_iter(100_000)
        .restart(restart);
    let m = match method {
        "cg" => SolveMethod::Cg(o),
        "bicgstab" => SolveMethod::Bicgstab(o),
        _ => SolveMethod::Gmres(o),
    };
    for _ in 0..3 {
        let t = Instant::now();
        let x = polymat::solve(&a, &b, m.clone(), Out::Auto)?;
        let dt = t.elapsed().as_secs_f64() * 1e3;
        let res = polymat::sub(&b, &polymat::matmul(&a, &x, Out::Auto)?, Out::Auto)?;
        let rel = polymat::ops::norm::l2(&res)? / polymat::ops::norm::l2(&b)?;
        println!("{method} {dt:.3} ms residual {rel:.3e}");
    }
    Ok(())
}
