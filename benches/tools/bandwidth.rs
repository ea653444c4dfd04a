//! Bandwidth of the memory-bound kernels (issue 15, item 3): bytes each kernel must move divided
//! by its time, next to a plain copy of the same number of bytes measured in the same run, on
//! one thread and on all threads.
//!
//! ```sh
//! cargo run --profile bench --example bandwidth            # n = 10 000 (1.6 GB per matrix)
//! cargo run --profile bench --example bandwidth -- 4000    # another n
//! cargo run --profile bench --example bandwidth -- 10000 Csr   # only kernels whose name has "Csr"
//! ```
//!
//! Three baselines, measured in the same run at each thread count: for kernels that read and
//! write a dense matrix, a fresh copy of an `n²`-entry buffer (allocation and first touch
//! included, as for the kernels: read 16 B and write 16 B per entry); for kernels that only
//! write one (Csr → Dense), a fresh fill of such a buffer (16 B per entry); for kernels that
//! only read one (products with a ket, expectation values, Dense → Csr), a streaming sum over
//! it (16 B per entry). Each kernel is charged the bytes it cannot avoid: entries read once,
//! the result written once (Csr arrays: 16 B per value, 8 B per index). Every cell is the median
//! of 5 calls; the percentage is the kernel's GB/s over its baseline's GB/s. The baselines'
//! buffers are mapped as polymat's are (huge pages from 32 MiB unless `POLYMAT_HUGE_PAGES=0`), so
//! the percentage compares the loops, not the page sizes.

use std::hint::black_box;
use std::time::Instant;

use polymat::{Csr, Data, Dense, Kind, Out, c64};
use rayon::prelude::*;

/// Median seconds of 5 calls of `f` (after one warm-up call).
fn time(f: &dyn Fn()) -> f64 {
    f();
    let mut t: Vec<f64> = (0..5)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[2]
}

/// Σ `src` with `threads` workers: a streaming read.
fn read(src: &[c64], threads: usize) -> c64 {
    let chunk = src.len().div_ceil(threads).max(1);
    src.par_chunks(chunk).map(|s| s.iter().sum::<c64>()).sum()
}

/// An empty buffer with room for `len` entries, mapped as polymat maps its dense buffers: on
/// Linux, advised for huge pages from 32 MiB when `polymat::huge_pages()` is on (the kernels'
/// results are; a baseline without the advice pays 512 page faults where they pay one).
fn fresh(len: usize) -> Vec<c64> {
    let v: Vec<c64> = Vec::with_capacity(len);
    #[cfg(target_os = "linux")]
    {
        let bytes = len * std::mem::size_of::<c64>();
        if polymat::huge_pages() && bytes >= 32 << 20 {
            let (lo, hi) = (v.as_ptr() as usize, v.as_ptr() as usize + bytes);
            let (start, end) = (lo.next_multiple_of(4096), hi & !4095);
            // SAFETY: [start, end) is whole pages inside the vector's allocation; the advice
            // only changes how the kernel maps them.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    v
}

/// A fresh buffer of `len` copies of `v` with `threads` workers: allocation, first touch, write.
fn fill(len: usize, v: c64, threads: usize) -> Vec<c64> {
    let mut dst: Vec<c64> = fresh(len);
    let chunk = len.div_ceil(threads).max(1);
    dst.spare_capacity_mut()
        .par_chunks_mut(chunk)
        .for_each(|d| {
            d.iter_mut().for_each(|d| {
                d.write(v);
            })
        });
    // SAFETY: every element of the spare capacity was written above (the chunks cover it).
    unsafe { dst.set_len(len) };
    dst
}

/// A fresh copy of `src` with `threads` workers: allocation, first touch, read and write.
fn copy(src: &[c64], threads: usize) -> Vec<c64> {
    let mut dst: Vec<c64> = fresh(src.len());
    let chunk = src.len().div_ceil(threads).max(1);
    dst.spare_capacity_mut()
        .par_chunks_mut(chunk)
        .zip(src.par_chunks(chunk))
        .for_each(|(d, s)| {
            for (d, s) in d.iter_mut().zip(s) {
                d.write(*s);
            }
        });
    // SAFETY: every element of the spare capacity was written above (the chunks cover it).
    unsafe { dst.set_len(src.len()) };
    dst
}

fn main() -> polymat::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let all = std::thread::available_parallelism().map_or(1, usize::from);
    let entries = (n * n) as f64;
    let a = Dense::from_fn(n, n, |i, j| c64::new((i % 7) as f64 - 3.0, (j % 5) as f64));
    let b = Dense::from_fn(n, n, |i, j| c64::new((j % 3) as f64, (i % 11) as f64 - 5.0));
    let ket: Data = Dense::from_fn(n, 1, |i, _| c64::new(1.0 / (1 + i) as f64, 0.5)).into();
    // A sparse operand with 10 entries per row for the conversions.
    let per_row = 10.min(n);
    let rows: Vec<usize> = (0..n)
        .flat_map(|i| std::iter::repeat_n(i, per_row))
        .collect();
    let cols: Vec<usize> = (0..n)
        .flat_map(|i| (0..per_row).map(move |k| (i * 7919 + k * (n / per_row)) % n))
        .collect();
    let vals = vec![c64::new(1.0, -1.0); rows.len()];
    let sparse: Data = Csr::from_triplets((n, n), &rows, &cols, &vals)?.into();
    let nnz = sparse.downcast_ref::<Csr>().map_or(0, Csr::nnz) as f64;
    let mut flat = fresh(n * n);
    flat.extend(a.columns().flatten().copied());
    let (a, b): (Data, Data) = (a.into(), b.into());
    let sparse_dense = polymat::to(Kind::DENSE, &sparse)?;

    // (name, bytes, baseline: 0 copy, 1 fill, 2 read, kernel)
    type Case<'a> = (&'a str, f64, usize, Box<dyn Fn() + 'a>);
    let cases: Vec<Case<'_>> = vec![
        (
            "add Dense",
            48.0 * entries,
            0,
            Box::new(|| drop(black_box(polymat::add(&a, &b, Out::Auto)))),
        ),
        (
            "mul Dense (entry-wise)",
            48.0 * entries,
            0,
            Box::new(|| drop(black_box(polymat::multiply(&a, &b, Out::Auto)))),
        ),
        (
            "neg Dense",
            32.0 * entries,
            0,
            Box::new(|| drop(black_box(polymat::neg(&a, Out::Auto)))),
        ),
        (
            "conj Dense",
            32.0 * entries,
            0,
            Box::new(|| drop(black_box(polymat::conj(&a, Out::Auto)))),
        ),
        (
            "scale Dense",
            32.0 * entries,
            0,
            Box::new(|| drop(black_box(polymat::mul(&a, c64::new(0.0, 2.0), Out::Auto)))),
        ),
        (
            "transpose Dense",
            32.0 * entries,
            0,
            Box::new(|| drop(black_box(polymat::transpose(&a, Out::Auto)))),
        ),
        (
            "adjoint Dense",
            32.0 * entries,
            0,
            Box::new(|| drop(black_box(polymat::adjoint(&a, Out::Auto)))),
        ),
        (
            "Csr → Dense (10/row)",
            16.0 * entries + 24.0 * nnz,
            1,
            Box::new(|| drop(black_box(polymat::to(Kind::DENSE, &sparse)))),
        ),
        (
            "Dense → Csr (10/row)",
            16.0 * entries + 24.0 * nnz,
            2,
            Box::new(|| drop(black_box(polymat::to(Kind::CSR, &sparse_dense)))),
        ),
        (
            "Dense·ket",
            16.0 * entries,
            2,
            Box::new(|| drop(black_box(polymat::matmul(&a, &ket, Out::Auto)))),
        ),
        (
            "expect Dense, ket",
            16.0 * entries,
            2,
            Box::new(|| drop(black_box(polymat::expect(&a, &ket)))),
        ),
    ];

    println!(
        "n = {n} ({:.2} GB per dense matrix), {all} hardware threads",
        16.0 * entries / 1e9
    );
    println!();
    let threads: Vec<usize> = if all > 1 { vec![1, all] } else { vec![1] };
    print!("| kernel | bytes moved |");
    for t in &threads {
        print!(" {t} thr: GB/s | % of baseline |");
    }
    println!();
    print!("|---|---:|");
    for _ in &threads {
        print!("---:|---:|");
    }
    println!();
    let (mut copy_rates, mut fill_rates, mut read_rates) = (Vec::new(), Vec::new(), Vec::new());
    for &t in &threads {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .expect("a pool");
        let s = pool.install(|| time(&|| drop(black_box(copy(&flat, t)))));
        copy_rates.push(32.0 * entries / s / 1e9);
        let one = c64::new(1.0, 0.0);
        let s = pool.install(|| time(&|| drop(black_box(fill(flat.len(), one, t)))));
        fill_rates.push(16.0 * entries / s / 1e9);
        let s = pool.install(|| {
            time(&|| {
                black_box(read(&flat, t));
            })
        });
        read_rates.push(16.0 * entries / s / 1e9);
    }
    for (name, bytes, rates) in [
        ("fresh copy (baseline)", 32.0 * entries, &copy_rates),
        ("fresh fill (baseline)", 16.0 * entries, &fill_rates),
        ("streaming read (baseline)", 16.0 * entries, &read_rates),
    ] {
        print!("| {name} | {:.2} GB |", bytes / 1e9);
        for r in rates {
            print!(" {r:.2} | 100 % |");
        }
        println!();
    }
    let only = std::env::args().nth(2).unwrap_or_default();
    for (name, bytes, baseline, f) in cases.iter().filter(|c| c.0.contains(&only)) {
        print!("| {name} | {:.2} GB |", bytes / 1e9);
        for (k, &t) in threads.iter().enumerate() {
            polymat::engine::set_threads(t);
            let rate = bytes / time(f.as_ref()) / 1e9;
            let base = [&copy_rates, &fill_rates, &read_rates][*baseline][k];
            print!(" {rate:.2} | {:.0} % |", 100.0 * rate / base);
        }
        println!();
    }
    Ok(())
}
