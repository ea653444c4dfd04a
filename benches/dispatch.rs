//! Dispatch overhead and table rebuild time.
//!
//! `cargo bench --bench dispatch`; results and their reading are in docs/benchmarks.md.

use std::hint::black_box;
use std::sync::LazyLock;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use polymat::ops::{self, ADD};
use polymat::{Csr, Data, Dense, Kind, Out, c64, registry};

const ONE: c64 = c64::new(1.0, 0.0);

fn small() -> (Dense, Csr) {
    let d = Dense::from_fn(2, 2, |i, j| c64::new(i as f64, j as f64));
    let s = Csr::from_triplets((2, 2), &[0, 1], &[1, 0], &[ONE, ONE]).unwrap();
    (d, s)
}

fn dispatch_overhead(c: &mut Criterion) {
    let (d, s) = small();
    let (dd, sd): (Data, Data) = (d.clone().into(), s.clone().into());
    let mut g = c.benchmark_group("add_2x2");
    // The kernel alone, as a caller who knows the types would call it.
    g.bench_function("kernel add_dense", |b| {
        b.iter(|| ops::add::add_dense(black_box(&d), black_box(&d), ONE))
    });
    // The kernel plus wrapping its result in a Data handle (one Arc allocation).
    g.bench_function("kernel add_dense + Data", |b| {
        b.iter(|| ops::add::add_dense(black_box(&d), black_box(&d), ONE).map(Data::from))
    });
    // Through the dispatcher: a direct hit.
    g.bench_function("dispatch Dense+Dense (direct)", |b| {
        b.iter(|| polymat::add(black_box(&dd), black_box(&dd), Out::Auto))
    });
    g.bench_function("dispatch Dense+Dense -> Dense (direct)", |b| {
        b.iter(|| ADD.call(&[black_box(&dd), black_box(&dd)], Out::Dense, &ONE))
    });
    // Indirect: the mixed kernel, then its Dense output converted to Csr.
    g.bench_function("manual add_csr_dense + to Csr", |b| {
        b.iter(|| {
            let r = ops::add::add_csr_dense(black_box(&s), black_box(&d), ONE).unwrap();
            polymat::to(Kind::CSR, &Data::from(r))
        })
    });
    g.bench_function("dispatch Csr+Dense -> Csr (indirect)", |b| {
        b.iter(|| polymat::add(black_box(&sd), black_box(&dd), Out::Csr))
    });
    // Indirect to Dense: the Csr kernel, then its output converted to Dense; the dispatcher
    // checks the result's shape against the dense limit first (`result_shape`).
    g.bench_function("manual add_csr + to Dense", |b| {
        b.iter(|| {
            let r = ops::add::add_csr(black_box(&s), black_box(&s), ONE).unwrap();
            polymat::to(Kind::DENSE, &Data::from(r))
        })
    });
    g.bench_function("dispatch Csr+Csr -> Dense (indirect)", |b| {
        b.iter(|| polymat::add(black_box(&sd), black_box(&sd), Out::Dense))
    });
    g.finish();

    // An operation whose kernel allocates nothing isolates the dispatch cost itself.
    let mut g = c.benchmark_group("trace_2x2");
    g.bench_function("kernel trace_dense", |b| {
        b.iter(|| ops::trace::trace_dense(black_box(&d)))
    });
    g.bench_function("dispatch trace Dense (direct)", |b| {
        b.iter(|| polymat::trace(black_box(&dd)))
    });
    g.bench_function("kernel trace_csr", |b| {
        b.iter(|| ops::trace::trace_csr(black_box(&s)))
    });
    g.bench_function("dispatch trace Csr (direct)", |b| {
        b.iter(|| polymat::trace(black_box(&sd)))
    });
    g.finish();
}

fn rebuild(c: &mut Criterion) {
    // Make sure every built-in dispatcher exists before timing the rebuild of all of them.
    LazyLock::force(&ops::ADD);
    LazyLock::force(&ops::SUB);
    LazyLock::force(&ops::MUL);
    LazyLock::force(&ops::NEG);
    LazyLock::force(&ops::MATMUL);
    LazyLock::force(&ops::MULTIPLY);
    LazyLock::force(&ops::KRON);
    LazyLock::force(&ops::ADJOINT);
    LazyLock::force(&ops::TRANSPOSE);
    LazyLock::force(&ops::CONJ);
    LazyLock::force(&ops::TRACE);
    LazyLock::force(&ops::POW);
    LazyLock::force(&ops::ISZERO);
    LazyLock::force(&ops::ISEQUAL);
    LazyLock::force(&ops::ZEROS);
    LazyLock::force(&ops::IDENTITY);
    LazyLock::force(&ops::DIAG);
    LazyLock::force(&ops::EXPM);
    LazyLock::force(&ops::INNER);
    LazyLock::force(&ops::INNER_OP);
    LazyLock::force(&ops::EXPECT);
    LazyLock::force(&ops::MATMUL_DAG);
    LazyLock::force(&ops::PROJECT);
    LazyLock::force(&ops::ISHERM);
    LazyLock::force(&ops::ISDIAG);
    LazyLock::force(&ops::TIDYUP);
    LazyLock::force(&ops::NORM_L2);
    LazyLock::force(&ops::NORM_FROBENIUS);
    LazyLock::force(&ops::NORM_MAX);
    LazyLock::force(&ops::NORM_ONE);
    LazyLock::force(&ops::NORM_TRACE);
    LazyLock::force(&ops::BLOCK_EXTRACT);
    LazyLock::force(&ops::BLOCK_OVERWRITE);
    LazyLock::force(&ops::COLUMN_STACK);
    LazyLock::force(&ops::COLUMN_UNSTACK);
    LazyLock::force(&ops::PERMUTE_DIMENSIONS);
    LazyLock::force(&ops::PERMUTE_INDICES);
    LazyLock::force(&ops::EIGS);
    LazyLock::force(&ops::EXPECT_SUPER);
    LazyLock::force(&ops::INV);
    LazyLock::force(&ops::KRON_TRANSPOSE);
    LazyLock::force(&ops::LOGM);
    LazyLock::force(&ops::MATMUL_OUTER);
    LazyLock::force(&ops::MEAN_ABS_NONZERO);
    LazyLock::force(&ops::MEAN_NONZERO);
    LazyLock::force(&ops::PTRACE);
    LazyLock::force(&ops::RESHAPE);
    LazyLock::force(&ops::SOLVE);
    LazyLock::force(&ops::SPLIT_COLUMNS);
    LazyLock::force(&ops::SQRTM);
    LazyLock::force(&ops::SVD);
    LazyLock::force(&ops::TRACE_OPER_KET);
    let n = registry().rebuild_dispatchers().unwrap();
    println!(
        "rebuilding {n} dispatchers over {} kinds",
        registry().kinds().len()
    );
    c.bench_function("rebuild all dispatchers", |b| {
        b.iter(|| registry().rebuild_dispatchers().unwrap())
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    targets = dispatch_overhead, rebuild
}
criterion_main!(benches);
