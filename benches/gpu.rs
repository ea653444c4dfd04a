//! GpuDense against Dense on the CPU, and polymat's GPU matmul against a raw cuBLAS Zgemm call
//! on the same device buffers.
//!
//! ```sh
//! cargo bench --features cuda --bench gpu            # all cases
//! GPU_BENCH_GROUPS=expm,matmul cargo bench --features cuda --bench gpu   # some groups
//! python3 benches/gpu_table.py                       # medians and ratios as a markdown table
//! ```
//!
//! Cases: `matmul`, `add`, `expm` (`polymat_gpu`: the default, Gauss's products;
//! `polymat_gpu_zgemm`: `gpu::set_gauss_products(false)`) at n = 256 … 8192 (the CPU side stops where one call takes
//! seconds: matmul and expm at n ≤ 1024, add at every n); `eigh` and `svd` (cuSOLVER heevd,
//! gesvd) at n = 256 … 4096 (CPU at n ≤ 1024); GpuCsr SpMV (one ket) and SpMM (16 columns) on
//! the XXZ chain of N = 16 … 22 spins against Csr on the CPU (`spmv`, `spmm`;
//! `benches/gpu_sparse_anchor.py` times CuPy's `cupyx.scipy.sparse` and `torch.linalg` on the
//! same matrices). Every GPU sample ends with
//! `gpu::synchronize()`, so queued work is counted. `cublas_raw` calls `cublasZgemm_v2` on the
//! same input buffers into a preallocated output (`cublas_raw_3m`: `cublasZgemm3m`, Gauss's three
//! real products); polymat's call goes through the dispatcher
//! and allocates its result from the stream-ordered pool. Without a GPU the bench prints why and
//! exits successfully.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use cudarc::cublas::CudaBlas;
use cudarc::cublas::sys as blas;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use polymat::{Data, Dense, GpuDense, Kind, Out, c64, gpu};

#[path = "../examples/common/xxz.rs"]
mod xxz;

const SIZES: [usize; 6] = [256, 512, 1024, 2048, 4096, 8192];
const CPU_MATMUL_MAX: usize = 1024;
const CPU_ADD_MAX: usize = 8192;

fn random(n: usize, seed: u64, scale: f64) -> Dense {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        ((s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 52) as f64 - 1.0) * scale
    };
    Dense::from_fn(n, n, |_, _| c64::new(next(), next()))
}

/// Times `iters` GPU calls, waiting for the device at the end.
fn timed_gpu(iters: u64, mut f: impl FnMut()) -> Duration {
    gpu::synchronize().unwrap();
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    gpu::synchronize().unwrap();
    t.elapsed()
}

fn configure<'a>(
    c: &'a mut Criterion,
    group: &str,
    n: usize,
) -> criterion::BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(group);
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(if n >= 4096 { 4 } else { 2 }));
    g
}

/// `c ← a·b` for square `a`, `b` straight through cuBLAS on `handle` (`Zgemm`, or `Zgemm3m`
/// with `gauss`), `c` a buffer of the same size.
fn raw_gemm(
    handle: blas::cublasHandle_t,
    stream: &Arc<CudaStream>,
    a: &GpuDense,
    b: &GpuDense,
    c: &mut CudaSlice<[f64; 2]>,
    gauss: bool,
) -> Result<(), cudarc::cublas::result::CublasError> {
    let ni = a.shape().0 as i32;
    let one = blas::cuDoubleComplex { x: 1.0, y: 0.0 };
    let zero = blas::cuDoubleComplex { x: 0.0, y: 0.0 };
    let op = blas::cublasOperation_t::CUBLAS_OP_N;
    let (pa, _ga) = a.cuda_slice().device_ptr(stream);
    let (pb, _gb) = b.cuda_slice().device_ptr(stream);
    let (pc, _gc) = c.device_ptr_mut(stream);
    let (pa, pb) = (
        pa as *const blas::cuDoubleComplex,
        pb as *const blas::cuDoubleComplex,
    );
    let pc = pc as *mut blas::cuDoubleComplex;
    // SAFETY: three n×n column-major buffers (checked by the callers' shapes) on the handle's
    // stream; the guards keep them alive across the call.
    unsafe {
        if gauss {
            blas::cublasZgemm3m(
                handle, op, op, ni, ni, ni, &one, pa, ni, pb, ni, &zero, pc, ni,
            )
        } else {
            blas::cublasZgemm_v2(
                handle, op, op, ni, ni, ni, &one, pa, ni, pb, ni, &zero, pc, ni,
            )
        }
    }
    .result()
}

fn bench_matmul(c: &mut Criterion) {
    let stream = gpu::stream().unwrap();
    let blas_handle = CudaBlas::new(stream.clone()).unwrap();
    for n in SIZES {
        let (a, b) = (random(n, 1, 1.0), random(n, 2, 1.0));
        let (ga, gb) = (
            GpuDense::from_dense(&a).unwrap(),
            GpuDense::from_dense(&b).unwrap(),
        );
        let mut gc = GpuDense::zeros(n, n).unwrap();
        let (da, db): (Data, Data) = (
            ga.try_clone().unwrap().into(),
            gb.try_clone().unwrap().into(),
        );
        let mut g = configure(c, "gpu_matmul", n);
        g.bench_with_input(BenchmarkId::new("polymat_gpu", n), &n, |bch, _| {
            bch.iter_custom(|iters| {
                timed_gpu(iters, || {
                    black_box(polymat::matmul(&da, &db, Out::Auto).unwrap());
                })
            })
        });
        let h = *blas_handle.handle();
        g.bench_with_input(BenchmarkId::new("cublas_raw", n), &n, |bch, _| {
            bch.iter_custom(|iters| {
                timed_gpu(iters, || {
                    raw_gemm(h, &stream, &ga, &gb, gc.cuda_slice_mut(), false).unwrap();
                })
            })
        });
        // Raw Zgemm into a result taken from the stream-ordered pool each call (what polymat's
        // call adds over `cublas_raw` besides the dispatch).
        g.bench_with_input(BenchmarkId::new("cublas_raw_fresh", n), &n, |bch, _| {
            bch.iter_custom(|iters| {
                timed_gpu(iters, || {
                    // SAFETY: written in full by the product before any read.
                    let mut out = unsafe { stream.alloc::<[f64; 2]>(n * n) }.unwrap();
                    raw_gemm(h, &stream, &ga, &gb, &mut out, false).unwrap();
                    black_box(out);
                })
            })
        });
        // Gauss's three real products (cublasZgemm3m), where the device has them.
        match raw_gemm(h, &stream, &ga, &gb, gc.cuda_slice_mut(), true) {
            Err(e) => eprintln!("cublasZgemm3m refused at n = {n}: {e:?}"),
            Ok(()) => {
                g.bench_with_input(BenchmarkId::new("cublas_raw_3m", n), &n, |bch, _| {
                    bch.iter_custom(|iters| {
                        timed_gpu(iters, || {
                            raw_gemm(h, &stream, &ga, &gb, gc.cuda_slice_mut(), true).unwrap();
                        })
                    })
                });
            }
        }
        if n <= CPU_MATMUL_MAX {
            let (ca, cb): (Data, Data) = (a.clone().into(), b.clone().into());
            g.bench_with_input(BenchmarkId::new("dense_cpu", n), &n, |bch, _| {
                bch.iter(|| black_box(polymat::matmul(&ca, &cb, Out::Auto).unwrap()))
            });
        }
        g.finish();
    }
}

fn bench_add(c: &mut Criterion) {
    for n in SIZES {
        let (a, b) = (random(n, 3, 1.0), random(n, 4, 1.0));
        let da: Data = GpuDense::from_dense(&a).unwrap().into();
        let db: Data = GpuDense::from_dense(&b).unwrap().into();
        let mut g = configure(c, "gpu_add", n);
        g.bench_with_input(BenchmarkId::new("polymat_gpu", n), &n, |bch, _| {
            bch.iter_custom(|iters| {
                timed_gpu(iters, || {
                    black_box(polymat::add(&da, &db, Out::Auto).unwrap());
                })
            })
        });
        if n <= CPU_ADD_MAX {
            let (ca, cb): (Data, Data) = (a.into(), b.into());
            g.bench_with_input(BenchmarkId::new("dense_cpu", n), &n, |bch, _| {
                bch.iter(|| black_box(polymat::add(&ca, &cb, Out::Auto).unwrap()))
            });
        }
        g.finish();
    }
}

fn bench_expm(c: &mut Criterion) {
    for n in SIZES {
        // Norm about 1: a few squarings, like a short time step of a Hamiltonian.
        let a = random(n, 5, 1.0 / n as f64);
        let da: Data = GpuDense::from_dense(&a).unwrap().into();
        let mut g = configure(c, "gpu_expm", n);
        // The default (Gauss's products where safe, `gpu::set_gauss_products`), then Zgemm.
        for (id, gauss) in [
            ("polymat_gpu", gpu::gauss_products()),
            ("polymat_gpu_zgemm", false),
        ] {
            let before = gpu::gauss_products();
            gpu::set_gauss_products(gauss);
            g.bench_with_input(BenchmarkId::new(id, n), &n, |bch, _| {
                bch.iter_custom(|iters| {
                    timed_gpu(iters, || {
                        black_box(polymat::expm(&da, Out::Auto).unwrap());
                    })
                })
            });
            gpu::set_gauss_products(before);
        }
        if n <= CPU_MATMUL_MAX {
            let ca: Data = a.into();
            g.bench_with_input(BenchmarkId::new("dense_cpu", n), &n, |bch, _| {
                bch.iter(|| black_box(polymat::expm(&ca, Out::Auto).unwrap()))
            });
        }
        g.finish();
    }
}

fn bench_decompositions(c: &mut Criterion) {
    for n in [256, 512, 1024, 2048, 4096] {
        let a = random(n, 6, 1.0);
        let h: Data = polymat::add(
            &a.clone().into(),
            &polymat::adjoint(&a.clone().into(), Out::Auto).unwrap(),
            Out::Auto,
        )
        .unwrap();
        let gh = polymat::to(Kind::GPU_DENSE, &h).unwrap();
        let ga = polymat::to(Kind::GPU_DENSE, &a.into()).unwrap();
        let herm = polymat::ops::EigsOptions::default().hermitian(true);
        let mut g = configure(c, "gpu_eigh", n);
        g.bench_with_input(BenchmarkId::new("polymat_gpu", n), &n, |bch, _| {
            bch.iter(|| black_box(polymat::eigs(&gh, herm).unwrap()))
        });
        if n <= CPU_MATMUL_MAX {
            g.bench_with_input(BenchmarkId::new("dense_cpu", n), &n, |bch, _| {
                bch.iter(|| black_box(polymat::eigs(&h, herm).unwrap()))
            });
        }
        g.finish();
        let mut g = configure(c, "gpu_svd", n);
        g.bench_with_input(BenchmarkId::new("polymat_gpu", n), &n, |bch, _| {
            bch.iter(|| black_box(polymat::svd(&ga, true).unwrap()))
        });
        if n <= CPU_MATMUL_MAX {
            let ca = polymat::to(Kind::DENSE, &ga).unwrap();
            g.bench_with_input(BenchmarkId::new("dense_cpu", n), &n, |bch, _| {
                bch.iter(|| black_box(polymat::svd(&ca, true).unwrap()))
            });
        }
        g.finish();
    }
}

fn bench_sparse(c: &mut Criterion) {
    for spins in [16, 18, 20, 22] {
        let h = xxz::xxz(spins, 1.0, 0.7).unwrap();
        let dim = 1usize << spins;
        let gh = polymat::to(Kind::GPU_CSR, &h).unwrap();
        for (group, cols) in [("gpu_spmv", 1), ("gpu_spmm", 16)] {
            let x = random_rect(dim, cols, 7);
            let (cx, gx): (Data, Data) =
                (x.clone().into(), GpuDense::from_dense(&x).unwrap().into());
            let mut g = configure(c, group, dim);
            g.bench_with_input(BenchmarkId::new("polymat_gpu", spins), &spins, |bch, _| {
                bch.iter_custom(|iters| {
                    timed_gpu(iters, || {
                        black_box(polymat::matmul(&gh, &gx, Out::Auto).unwrap());
                    })
                })
            });
            g.bench_with_input(BenchmarkId::new("csr_cpu", spins), &spins, |bch, _| {
                bch.iter(|| black_box(polymat::matmul(&h, &cx, Out::Auto).unwrap()))
            });
            g.finish();
        }
    }
}

fn random_rect(rows: usize, cols: usize, seed: u64) -> Dense {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    Dense::from_fn(rows, cols, |_, _| {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        c64::new((s >> 11) as f64 / (1u64 << 53) as f64, 0.5)
    })
}

fn main() {
    if let Err(e) = gpu::check() {
        eprintln!("gpu bench skipped: {e}");
        return;
    }
    println!("GPU: {}", gpu::device_name().unwrap());
    let mut c = Criterion::default().configure_from_args();
    // GPU_BENCH_GROUPS=expm,matmul runs (and builds the inputs of) only those groups.
    let groups = std::env::var("GPU_BENCH_GROUPS").unwrap_or_default();
    let run = |g: &str| groups.is_empty() || groups.split(',').any(|x| x.trim() == g);
    type Group = fn(&mut Criterion);
    let all: [(&str, Group); 5] = [
        ("matmul", bench_matmul),
        ("add", bench_add),
        ("expm", bench_expm),
        ("decompositions", bench_decompositions),
        ("sparse", bench_sparse),
    ];
    for (name, bench) in all {
        if run(name) {
            bench(&mut c);
        }
    }
    c.final_summary();
}
