//! Measures where parallel execution starts to pay, per kernel family of the execution engine
//! (`polymat::engine`), by timing each kernel with `set_threads(1)` and `set_threads(T)` at
//! doubling sizes. The defaults in `polymat::engine::thresholds` come from its output on the
//! 2-core development VM (`docs/benchmarks.md` records the run); on another machine,
//! `--write FILE` saves the crossovers it finds as a calibration file, which polymat reads when
//! `POLYMAT_THRESHOLDS=FILE` is set (or through `engine::Thresholds::load`).
//!
//! ```sh
//! cargo run --release --example engine_calibrate                         # T = 2
//! cargo run --release --example engine_calibrate -- 16 --write cal.txt   # T = 16, saved
//! POLYMAT_THRESHOLDS=cal.txt cargo run --release --example quickstart
//! ```
//!
//! A family that never reaches 1.1× keeps a threshold past the largest size measured, so it
//! stays serial there. `CSR_CSR` (Csr·Csr) has no threshold of its own: it counts 8 units of
//! `CSR_ROWS` a multiply-add (and stays serial below 2¹⁵ multiply-adds), so its crossover is
//! printed, not written, and `--policy` checks it under the `CSR_ROWS` in force.
//!
//! `--policy` checks the thresholds in force instead of measuring new ones: the parallel side
//! then runs under the engine's own policy (serial below a family's threshold, then as many
//! workers as the thresholds were measured with and more as the work grows, up to T), not
//! forced onto all T threads, and each family ends with its slowest ratio at or above its
//! threshold (below it both sides run the same serial code). A ratio under 1 there is a size
//! the policy makes slower than serial.
//!
//! ```sh
//! cargo run --release --example engine_calibrate -- 16 --policy                 # defaults
//! POLYMAT_THRESHOLDS=cal.txt cargo run --release --example engine_calibrate -- 16 --policy
//! cargo run --release --example engine_calibrate -- 2 --only MATMUL,CSR_ROWS     # some families
//! ```
//!
//! `--quick SECONDS` makes the library's shorter measurement instead
//! (`polymat::calibrate::measure_thresholds`, within about that many seconds) and prints (or,
//! with `--write FILE`, saves) what it finds.
//!
//! ```sh
//! cargo run --release --example engine_calibrate -- 16 --quick 2 --write cal.txt
//! ```
//!
//! Run order matters on the development VM: after the CSR_ROWS or REDUCTION family, serial
//! products of odd sizes took 3–5× their time alone (161³: 2.04 against 0.35 ms), which
//! `--only MATMUL` avoids; the cause is not found (docs/benchmarks.md).
//!
//! Each cell is the median of 9 repetitions, each long enough to last ≥ 2 ms; the ratio is
//! serial time / parallel time (> 1: parallel is faster).

use std::hint::black_box;
use std::time::Instant;

use polymat::{Csr, Data, Dense, Out, c64};

/// Median seconds per call of `f`.
fn time(f: &dyn Fn()) -> f64 {
    f();
    let mut loops = 1usize;
    loop {
        let t = Instant::now();
        for _ in 0..loops {
            f();
        }
        if t.elapsed().as_secs_f64() >= 2e-3 {
            break;
        }
        loops *= 2;
    }
    let mut v: Vec<f64> = (0..9)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..loops {
                f();
            }
            t.elapsed().as_secs_f64() / loops as f64
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[4]
}

/// The threshold in force for the family named `name`.
fn threshold_in_force(name: &str) -> usize {
    let t = polymat::engine::Thresholds::current();
    match name {
        "ELEMENTWISE" => t.elementwise,
        "TRANSPOSE" => t.transpose,
        "CSR_ROWS" => t.csr_rows,
        "REDUCTION" => t.reduction,
        // 8 units a multiply-add, never parallel below 2¹⁵ multiply-adds.
        "CSR_CSR" => t.csr_rows.max(8 << 15),
        _ => t.matmul,
    }
}

fn value(i: usize) -> c64 {
    c64::new(
        ((i * 7919) % 13) as f64 - 6.0,
        ((i * 104_729) % 11) as f64 - 5.0,
    )
}

/// A random-looking Csr with `k` entries per row.
fn csr(n: usize, k: usize) -> Data {
    let rows: Vec<usize> = (0..n * k).map(|t| t / k).collect();
    let cols: Vec<usize> = (0..n * k).map(|t| (t * 2_654_435_761) % n).collect();
    let vals: Vec<c64> = (0..n * k).map(value).collect();
    Csr::from_triplets((n, n), &rows, &cols, &vals)
        .unwrap()
        .into()
}

fn dense(m: usize, n: usize) -> Data {
    Dense::from_fn(m, n, |i, j| value(i * n + j)).into()
}

type Case = (
    &'static str,
    &'static str,
    Box<dyn Fn(usize) -> (usize, Box<dyn Fn()>)>,
);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parallel: usize = args.iter().find_map(|s| s.parse().ok()).unwrap_or(2);
    let write = args
        .iter()
        .position(|a| a == "--write")
        .and_then(|i| args.get(i + 1).cloned());
    let policy = args.iter().any(|a| a == "--policy");
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1).cloned());
    if args.iter().any(|a| a == "--pin") {
        // Each pool thread on a CPU of its own (`engine::pin_threads`).
        match polymat::engine::pin_threads(true) {
            Ok(n) => println!("pinned {n} pool threads"),
            Err(e) => eprintln!("not pinned: {e}"),
        }
    }
    if let Some(secs) = args
        .iter()
        .position(|a| a == "--quick")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse::<f64>().ok())
    {
        // The library's shorter measurement (`polymat::calibrate`), within `secs` seconds.
        let started = Instant::now();
        let budget = std::time::Duration::try_from_secs_f64(secs).unwrap_or_default();
        match polymat::calibrate::measure_thresholds(parallel, budget) {
            Ok(t) => {
                println!(
                    "measured in {:.2} s, 1 vs {parallel} threads:\n{t}",
                    started.elapsed().as_secs_f64()
                );
                if let Some(path) = &write {
                    std::fs::write(path, t.to_string()).expect("cannot write the file");
                    println!("wrote {path}: use it with POLYMAT_THRESHOLDS={path}");
                }
            }
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        }
        return;
    }
    let mut found = polymat::engine::Thresholds::default();
    let cases: Vec<Case> = vec![
        (
            "ELEMENTWISE",
            "add Dense+Dense, n×n",
            Box::new(|w| {
                let n = (w as f64).sqrt() as usize;
                let (a, b) = (dense(n, n), dense(n, n));
                (
                    n * n,
                    Box::new(move || drop(black_box(polymat::add(&a, &b, Out::Auto)))),
                )
            }),
        ),
        (
            "TRANSPOSE",
            "adjoint Dense, n×n",
            Box::new(|w| {
                let n = (w as f64).sqrt() as usize;
                let a = dense(n, n);
                (
                    n * n,
                    Box::new(move || drop(black_box(polymat::adjoint(&a, Out::Auto)))),
                )
            }),
        ),
        (
            "CSR_ROWS",
            "Csr(10/row)·ket",
            Box::new(|w| {
                let n = w / 10;
                let (a, x) = (csr(n, 10), dense(n, 1));
                (
                    10 * n,
                    Box::new(move || drop(black_box(polymat::matmul(&a, &x, Out::Auto)))),
                )
            }),
        ),
        (
            "CSR_CSR",
            "Csr(10/row)·Csr(10/row); work: 8 units of CSR_ROWS a multiply-add, follows CSR_ROWS",
            Box::new(|w| {
                // 100 multiply-adds a row, 8 units each.
                let n = (w / 800).max(2);
                let a = csr(n, 10);
                (
                    800 * n,
                    Box::new(move || drop(black_box(polymat::matmul(&a, &a, Out::Auto)))),
                )
            }),
        ),
        (
            "REDUCTION",
            "expect Csr(10/row), ket",
            Box::new(|w| {
                let n = w / 10;
                let (a, x) = (csr(n, 10), dense(n, 1));
                (
                    10 * n,
                    Box::new(move || drop(black_box(polymat::expect(&a, &x)))),
                )
            }),
        ),
        (
            "MATMUL",
            "matmul Dense·Dense, n×n×n",
            Box::new(|w| {
                let n = (w as f64).cbrt().round() as usize;
                let (a, b) = (dense(n, n), dense(n, n));
                (
                    n * n * n,
                    Box::new(move || drop(black_box(polymat::matmul(&a, &b, Out::Auto)))),
                )
            }),
        ),
    ];
    // Take the parallel path at every size, so the crossover can be seen (unless the policy in
    // force is what is checked).
    polymat::engine::set_force_parallel(!policy);
    println!(
        "threads: 1 vs {parallel}{}; rayon pool: {}",
        if policy {
            format!(
                " under the policy in force ({:?})",
                polymat::engine::Thresholds::current()
            )
        } else {
            String::new()
        },
        rayon::current_num_threads()
    );
    for (name, what, make) in &cases {
        if only
            .as_deref()
            .is_some_and(|o| !o.split(',').any(|o| o.eq_ignore_ascii_case(name)))
        {
            continue;
        }
        println!("\n{name} ({what})");
        println!(
            "{:>12} {:>12} {:>12} {:>7}",
            "work",
            "1 thread",
            format!("{parallel} threads"),
            "ratio"
        );
        let mut crossover = None;
        let mut largest = 0;
        let mut slowest = (f64::INFINITY, 0);
        let top = if *name == "MATMUL" { 26 } else { 23 };
        for e in 10..=top {
            let (work, f) = make(1 << e);
            polymat::set_threads(1);
            let serial = time(&*f);
            polymat::set_threads(parallel);
            let par = time(&*f);
            let ratio = serial / par;
            largest = work;
            // Below its threshold a family runs the same serial code on both sides: the ratio
            // there is timing noise (0.58–1.79 at 2–4 µs on a 16-core Xeon), not the policy.
            if ratio < slowest.0 && work >= threshold_in_force(name) {
                slowest = (ratio, work);
            }
            if ratio >= 1.1 {
                crossover.get_or_insert(work);
            } else {
                crossover = None;
            }
            println!(
                "{work:>12} {:>10.2}µs {:>10.2}µs {ratio:>7.2}",
                serial * 1e6,
                par * 1e6
            );
        }
        polymat::set_threads(0);
        if policy {
            if slowest.1 == 0 {
                println!("=> {name}: serial at every size measured (threshold not reached)");
            } else {
                println!(
                    "=> {name}: slowest ratio where the policy runs in parallel {:.2} at work {}",
                    slowest.0, slowest.1
                );
            }
            continue;
        }
        if *name == "CSR_CSR" {
            // No threshold of its own: Csr·Csr counts its multiply-adds against CSR_ROWS.
            match crossover {
                Some(w) => println!("=> {name}: parallel ≥ 1.1× from work {w} on (not written)"),
                None => println!("=> {name}: parallel never ≥ 1.1× at the largest size"),
            }
            continue;
        }
        let threshold = match crossover {
            Some(w) => {
                println!("=> {name}: parallel ≥ 1.1× from work {w} on");
                w
            }
            None => {
                println!("=> {name}: parallel never ≥ 1.1× at the largest size");
                largest.saturating_mul(2)
            }
        };
        let slot = match *name {
            "ELEMENTWISE" => &mut found.elementwise,
            "TRANSPOSE" => &mut found.transpose,
            "CSR_ROWS" => &mut found.csr_rows,
            "REDUCTION" => &mut found.reduction,
            _ => &mut found.matmul,
        };
        *slot = threshold.max(1);
    }
    polymat::engine::set_force_parallel(false);
    // Each value is where `parallel` threads first beat one: the engine gives a kernel that
    // many workers at its threshold.
    found.measured_threads = parallel.max(2);
    if let Some(path) = write.filter(|_| !policy) {
        let text = format!(
            "# polymat engine thresholds: engine_calibrate, 1 vs {parallel} threads\n{found}"
        );
        match std::fs::write(&path, text) {
            Ok(()) => println!("\nwrote {path}: use it with POLYMAT_THRESHOLDS={path}"),
            Err(e) => {
                eprintln!("cannot write {path}: {e}");
                std::process::exit(1);
            }
        }
    }
}
