//! Runs one operation in a loop, for profiling (`perf record`), on inputs shaped like the QuTiP
//! anchor's: `rand10` Csr (about 10 nonzeros per row, random columns), `tridiag` Csr, or a
//! full Dense.
//!
//! ```sh
//! cargo build --profile bench --example profile_op
//! perf record -g target/release/benches/tools/profile_op mul csr 10000 3
//! perf report --no-children --percent-limit 2
//! ```
//!
//! Arguments: `OP KIND N [SECONDS]`, with OP one of add, sub, matmul, kron, adjoint, conj,
//! neg, transpose, mul, expm, to_dense, to_csr, expect, inner, trace; KIND one of csr (rand10),
//! tridiag, dense, eye (the identity, Csr), perm (Csr, one entry a row, as σx for n = 2), hashed
//! (`engine_calibrate`'s Csr: 10 a row at columns t·2654435761 mod n), or
//! csr-dense / tridiag-dense (that sparse pattern stored as Dense), ket (an n×1 Dense), or
//! `A,B` for operands of two kinds (`matmul csr,ket 1000`). `kron` multiplies factors of
//! √N × √N, or of M and K rows with N given as `MxK` (`kron eye,perm 50000x2` is I ⊗ σx).
//! Prints the mean time per call and that of the fastest batch of calls (on a shared
//! machine the steadier figure for comparing two builds, alternated); with `COLD_MB=64` in
//! the environment, the median of calls that each start out of cache; with `PIN=1`, each rayon
//! pool thread pinned to a CPU of its own first
//! (`polymat::engine::pin_threads`). Calls run with polymat's default thread count; the side-by-side's one-thread cases
//! compare with `POLYMAT_NUM_THREADS=1`. Build with `--profile bench` for timings: the release
//! profile keeps polymat's debug assertions and overflow checks on (for the tests).

use std::hint::black_box;
use std::time::{Duration, Instant};

use polymat::{Csr, Data, Dense, Kind, Out, c64};

fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    move || {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        s.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

fn value(next: &mut impl FnMut() -> u64) -> c64 {
    let u = |x: u64| (x >> 11) as f64 / (1u64 << 53) as f64;
    c64::new(u(next()), u(next()))
}

fn input(kind: &str, n: usize, seed: u64) -> polymat::Result<Data> {
    if kind == "ket" {
        let mut next = rng(seed);
        return Ok(Dense::from_fn(n, 1, |_, _| value(&mut next)).into());
    }
    if let Some(pattern) = kind.strip_suffix("-dense") {
        // A sparse pattern stored dense: the anchor's "rand10-pattern" input of Dense → Csr.
        return polymat::to(Kind::DENSE, &input(pattern, n, seed)?);
    }
    let mut next = rng(seed);
    let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
    match kind {
        "eye" => return polymat::identity(n, Out::Csr),
        // One entry a row, as σx for n = 2: (i, (i + 1) mod n), random values.
        "perm" => {
            for i in 0..n {
                rows.push(i);
                cols.push((i + 1) % n);
                vals.push(value(&mut next));
            }
        }
        "dense" => return Ok(Dense::from_fn(n, n, |_, _| value(&mut next)).into()),
        // `engine_calibrate`'s Csr: 10 a row, entry t at column t·2654435761 mod n (each row
        // an arithmetic progression of columns, so a product's rows share many columns), small
        // integer values.
        "hashed" => {
            for t in 0..n * 10 {
                rows.push(t / 10);
                cols.push((t * 2_654_435_761) % n);
                vals.push(c64::new(
                    ((t * 7919) % 13) as f64 - 6.0,
                    ((t * 104_729) % 11) as f64 - 5.0,
                ));
            }
        }
        "tridiag" => {
            for i in 0..n {
                for j in i.saturating_sub(1)..(i + 2).min(n) {
                    rows.push(i);
                    cols.push(j);
                    vals.push(value(&mut next));
                }
            }
        }
        _ => {
            // As the anchor's `csr_rand`: 10 random columns per row, every column when n ≤ 10.
            let per_row = 10.min(n);
            for i in 0..n {
                for j in 0..per_row {
                    rows.push(i);
                    cols.push(if per_row == n {
                        j
                    } else {
                        (next() % n as u64) as usize
                    });
                    vals.push(value(&mut next));
                }
            }
        }
    }
    Ok(Csr::from_triplets((n, n), &rows, &cols, &vals)?.into())
}

fn main() -> polymat::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: profile_op OP KIND N [SECONDS]");
        std::process::exit(2);
    }
    if std::env::var_os("PIN").is_some_and(|v| v == "1") {
        // PIN=1: each rayon pool thread on a CPU of its own (`engine::pin_threads`).
        polymat::engine::pin_threads(true)?;
    }
    let (op, kind) = (args[1].as_str(), args[2].as_str());
    // `kron` takes factors of √N × √N each, or of M and K rows with N written `MxK`.
    let (n, factors) = match args[3].split_once('x') {
        Some((m, k)) => {
            let (m, k): (usize, usize) = (m.parse().expect("M"), k.parse().expect("K"));
            (m * k, (m, k))
        }
        None => {
            let n: usize = args[3].parse().expect("N must be an integer");
            let m = (n as f64).sqrt() as usize;
            (n, (m, m))
        }
    };
    let secs: f64 = args
        .get(4)
        .map_or(3.0, |s| s.parse().expect("SECONDS must be a number"));
    // "A,B" gives the two operands different kinds (e.g. csr,ket for Csr·ket).
    let (kind_a, kind_b) = kind.split_once(',').unwrap_or((kind, kind));
    // `kron` multiplies the two factors; every other op takes n × n operands.
    let (a, b) = if op == "kron" {
        (input(kind_a, factors.0, 3)?, input(kind_b, factors.1, 4)?)
    } else {
        (input(kind_a, n, 1)?, input(kind_b, n, 2)?)
    };
    let call = || -> polymat::Result<Data> {
        match op {
            "add" => polymat::add(&a, &b, Out::Auto),
            "sub" => polymat::sub(&a, &b, Out::Auto),
            "matmul" => polymat::matmul(&a, &b, Out::Auto),
            "kron" => polymat::kron(&a, &b, Out::Auto),
            "adjoint" => polymat::adjoint(&a, Out::Auto),
            "conj" => polymat::conj(&a, Out::Auto),
            "neg" => polymat::neg(&a, Out::Auto),
            "transpose" => polymat::transpose(&a, Out::Auto),
            "mul" => polymat::mul(&a, c64::new(0.5, 1.0), Out::Auto),
            "expm" => polymat::expm(&a, Out::Auto),
            "to_dense" => polymat::to(Kind::DENSE, &a),
            "to_csr" => polymat::to(Kind::CSR, &a),
            // A scalar result: the returned handle is a clone of `a` (an `Arc` increment).
            "expect" => polymat::expect(&a, &b).map(|v| {
                black_box(v);
                a.clone()
            }),
            "inner" => polymat::inner(&a, &b).map(|v| {
                black_box(v);
                a.clone()
            }),
            "trace" => polymat::trace(&a).map(|v| {
                black_box(v);
                a.clone()
            }),
            _ => panic!("unknown op {op}"),
        }
    };
    // COLD_MB=64: stream over that many MiB between calls (not timed), so that every call
    // starts with its operands out of cache, as in the side-by-side's short interleaved
    // batches; prints the median and fastest call.
    if let Some(mb) = std::env::var("COLD_MB")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        let mut flush = vec![0u64; mb << 17];
        let mut times = Vec::new();
        let start = Instant::now();
        while start.elapsed().as_secs_f64() < secs || times.is_empty() {
            flush.iter_mut().for_each(|x| *x = x.wrapping_add(1));
            black_box(&flush);
            let t = Instant::now();
            black_box(call()?);
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
        times.sort_by(f64::total_cmp);
        let (median, min) = (times[times.len() / 2], times[0]);
        println!("{op} {kind} n={n} cold: median {median:.3} µs, fastest {min:.3} µs");
        return Ok(());
    }
    let budget = Duration::from_secs_f64(secs);
    // Batches of 256 calls, fewer where one call takes more than about 4 µs (a batch of about a
    // millisecond), so that a large case still ends near its budget; sized on the second call
    // (the first pays for first touches).
    black_box(call()?);
    let second = Instant::now();
    black_box(call()?);
    let batch = (1e-3 / second.elapsed().as_secs_f64().max(1e-9)).clamp(1.0, 256.0) as u64;
    let start = Instant::now();
    let mut calls = 0u64;
    // The fastest batch: on a shared machine other tenants' bursts lengthen some batches and
    // never shorten one, so it is steadier than the mean for comparing two builds.
    let mut fastest = f64::INFINITY;
    // The clock is read once a batch: on a VM a read costs tens of nanoseconds, as much as a
    // small kernel.
    while start.elapsed() < budget {
        let t = Instant::now();
        for _ in 0..batch {
            black_box(call()?);
        }
        fastest = fastest.min(t.elapsed().as_secs_f64() / batch as f64);
        calls += batch;
    }
    let per = start.elapsed().as_secs_f64() / calls as f64;
    println!(
        "{op} {kind} n={n}: {calls} calls, {:.3} µs per call (fastest batch of {batch}: {:.3} µs)",
        per * 1e6,
        fastest * 1e6
    );
    Ok(())
}
