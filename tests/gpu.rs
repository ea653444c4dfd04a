//! GpuDense: every operation is written once and run per device (candle's `test_device!`
//! idea). On the CPU device the inputs are `Dense`; on the GPU device they are `GpuDense` and
//! the result must stay on the GPU. Either way the result must equal an independent reference
//! computed with plain loops (atol 1e-10, rtol 1e-7). Without a usable GPU (no `cuda` feature,
//! no driver, no device) the GPU variants print why and skip.
//!
//! The dispatch-policy and no-GPU tests at the end run everywhere: they inspect the tables
//! without executing GPU code.
//!
//! With `POLYMAT_REQUIRE_GPU=1` a GPU test that would skip fails instead, so a run on a GPU
//! machine cannot pass by skipping.

mod common;

use common::{Ref, Rng, assert_data_close, close, eye, kron, make, matmul, random_ref};
use polymat::ops;
use polymat::{Csr, Data, Dense, Error, GpuDense, Kind, Out, c64, gpu};

/// Skips a GPU test (returns `true`) when no GPU is usable, unless `POLYMAT_REQUIRE_GPU=1`,
/// which turns the skip into a failure.
fn skip_without_gpu(test: &str) -> bool {
    let Err(e) = gpu::check() else {
        return false;
    };
    if std::env::var("POLYMAT_REQUIRE_GPU").is_ok_and(|v| v.trim() == "1") {
        panic!("{test} needs a GPU (POLYMAT_REQUIRE_GPU=1): {e}");
    }
    eprintln!("skipping {test} on the GPU: {e}");
    true
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Device {
    Cpu,
    Gpu,
}

impl Device {
    fn kind(self) -> Kind {
        match self {
            Device::Cpu => Kind::DENSE,
            Device::Gpu => Kind::GPU_DENSE,
        }
    }

    fn out(self) -> Out {
        Out::from(self.kind())
    }

    /// The reference matrix on this device.
    fn put(self, r: &Ref) -> Data {
        make(r, self.kind())
    }

    /// Asserts `d` is on this device and equals `want`.
    fn check(self, d: &Data, want: &Ref, what: &str) {
        assert_eq!(d.kind(), self.kind(), "{what}: result kind on {self:?}");
        assert_data_close(d, want, &format!("{what} on {self:?}"));
    }
}

macro_rules! test_device {
    ($name:ident, $body:expr) => {
        mod $name {
            use super::*;

            #[test]
            fn cpu() {
                let body: fn(Device) = $body;
                body(Device::Cpu);
            }

            #[test]
            fn gpu() {
                if skip_without_gpu(stringify!($name)) {
                    return;
                }
                let body: fn(Device) = $body;
                body(Device::Gpu);
            }
        }
    };
}

fn rand(m: usize, n: usize, seed: u64) -> Ref {
    random_ref(&mut Rng::new(seed), m, n, 1.0)
}

fn map(a: &Ref, f: impl Fn(c64) -> c64) -> Ref {
    common::map(a, f)
}

fn adjoint(a: &Ref) -> Ref {
    map(&common::transpose(a), |x| x.conj())
}

fn scalar_close(got: c64, want: c64, what: &str) {
    assert!(close(got, want), "{what}: got {got}, expected {want}");
}

fn real_close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 1e-10 + 1e-7 * want.abs(),
        "{what}: got {got}, expected {want}"
    );
}

const C: fn(f64, f64) -> c64 = c64::new;

test_device!(add_sub_scale, |dev| {
    for (m, n) in [(1, 1), (7, 5), (64, 64)] {
        let (a, b) = (rand(m, n, 1), rand(m, n, 2));
        let (x, y) = (dev.put(&a), dev.put(&b));
        let s = C(0.5, -2.0);
        let sum = common::zip(&a, &b, |p, q| p + q);
        dev.check(&polymat::add(&x, &y, Out::Auto).unwrap(), &sum, "add");
        let scaled = common::zip(&a, &b, |p, q| p + s * q);
        let got = polymat::add_scaled(&x, &y, s, Out::Auto).unwrap();
        dev.check(&got, &scaled, "add_scaled");
        let diff = common::zip(&a, &b, |p, q| p - q);
        dev.check(&polymat::sub(&x, &y, Out::Auto).unwrap(), &diff, "sub");
        dev.check(
            &polymat::mul(&x, s, Out::Auto).unwrap(),
            &map(&a, |p| s * p),
            "mul",
        );
        dev.check(
            &polymat::neg(&x, Out::Auto).unwrap(),
            &map(&a, |p| -p),
            "neg",
        );
        let had = common::zip(&a, &b, |p, q| p * q);
        dev.check(
            &polymat::multiply(&x, &y, Out::Auto).unwrap(),
            &had,
            "multiply",
        );
    }
    let err = polymat::add(
        &dev.put(&rand(2, 3, 1)),
        &dev.put(&rand(3, 2, 1)),
        Out::Auto,
    );
    assert!(matches!(err, Err(Error::Shape { .. })), "{err:?}");
});

test_device!(transposes, |dev| {
    for (m, n) in [(1, 1), (1, 9), (9, 1), (13, 7), (100, 100)] {
        let a = rand(m, n, 3);
        let x = dev.put(&a);
        let t = common::transpose(&a);
        dev.check(&polymat::transpose(&x, Out::Auto).unwrap(), &t, "transpose");
        dev.check(
            &polymat::adjoint(&x, Out::Auto).unwrap(),
            &adjoint(&a),
            "adjoint",
        );
        let c = map(&a, |p| p.conj());
        dev.check(&polymat::conj(&x, Out::Auto).unwrap(), &c, "conj");
    }
});

test_device!(products, |dev| {
    for (m, k, n) in [(1, 1, 1), (3, 5, 2), (1, 8, 1), (8, 1, 8), (70, 50, 60)] {
        let (a, b) = (rand(m, k, 4), rand(k, n, 5));
        let got = polymat::matmul(&dev.put(&a), &dev.put(&b), Out::Auto).unwrap();
        dev.check(&got, &matmul(&a, &b), "matmul");
        let c = rand(n, k, 6);
        let got = ops::matmul_dag(&dev.put(&a), &dev.put(&c), Out::Auto).unwrap();
        dev.check(&got, &matmul(&a, &adjoint(&c)), "matmul_dag");
    }
    let err = polymat::matmul(
        &dev.put(&rand(2, 3, 1)),
        &dev.put(&rand(2, 3, 1)),
        Out::Auto,
    );
    assert!(matches!(err, Err(Error::Shape { .. })), "{err:?}");
    for ((ma, na), (mb, nb)) in [((1, 1), (3, 2)), ((2, 3), (4, 1)), ((5, 5), (5, 5))] {
        let (a, b) = (rand(ma, na, 7), rand(mb, nb, 8));
        let got = polymat::kron(&dev.put(&a), &dev.put(&b), Out::Auto).unwrap();
        dev.check(&got, &kron(&a, &b), "kron");
    }
});

test_device!(scalars, |dev| {
    let n = 40;
    let (op, rho) = (rand(n, n, 9), rand(n, n, 10));
    let (ket, bra) = (rand(n, 1, 11), rand(1, n, 12));
    let (o, r, k, b) = (dev.put(&op), dev.put(&rho), dev.put(&ket), dev.put(&bra));
    scalar_close(polymat::trace(&o).unwrap(), common::trace(&op), "trace");
    let want: c64 = (0..n).map(|i| ket[i][0].conj() * ket[i][0]).sum();
    scalar_close(polymat::inner(&k, &k).unwrap(), want, "inner ket");
    let want: c64 = (0..n).map(|i| bra[0][i] * ket[i][0]).sum();
    scalar_close(polymat::inner(&b, &k).unwrap(), want, "inner bra");
    let ok = matmul(&op, &ket);
    let want: c64 = (0..n).map(|i| bra[0][i] * ok[i][0]).sum();
    scalar_close(polymat::inner_op(&b, &o, &k).unwrap(), want, "inner_op");
    let want: c64 = (0..n).map(|i| ket[i][0].conj() * ok[i][0]).sum();
    scalar_close(polymat::expect(&o, &k).unwrap(), want, "expect ket");
    let want = common::trace(&matmul(&op, &rho));
    scalar_close(polymat::expect(&o, &r).unwrap(), want, "expect operator");
    let one = dev.put(&vec![vec![C(0.5, 2.0)]]);
    let s = dev.put(&vec![vec![C(1.0, -1.0)]]);
    // A 1×1 state is a ket: |ψ|²·op.
    scalar_close(
        polymat::expect(&one, &s).unwrap(),
        C(1.0, 4.0),
        "expect 1×1",
    );
    assert!(matches!(
        polymat::trace(&dev.put(&rand(2, 3, 1))),
        Err(Error::Shape { .. })
    ));
});

test_device!(norms_and_predicates, |dev| {
    let a = rand(30, 20, 13);
    let x = dev.put(&a);
    let entries = || a.iter().flatten().copied();
    let fro = entries().map(|z| z.norm_sqr()).sum::<f64>().sqrt();
    real_close(ops::norm::frobenius(&x).unwrap(), fro, "frobenius");
    let max = entries().map(|z| z.norm()).fold(0.0, f64::max);
    real_close(ops::norm::max(&x).unwrap(), max, "max");
    let one = (0..20)
        .map(|j| (0..30).map(|i| a[i][j].norm()).sum::<f64>())
        .fold(0.0, f64::max);
    real_close(ops::norm::one(&x).unwrap(), one, "one");
    let ket = rand(17, 1, 14);
    let l2 = ket
        .iter()
        .flatten()
        .map(|z| z.norm_sqr())
        .sum::<f64>()
        .sqrt();
    real_close(ops::norm::l2(&dev.put(&ket)).unwrap(), l2, "l2");
    // Trace norm: no GPU kernel, computed through Dense.
    let tn = ops::norm::trace(&dev.put(&eye(4))).unwrap();
    real_close(tn, 4.0, "trace norm");

    let h = {
        let r = rand(25, 25, 15);
        common::zip(&r, &adjoint(&r), |p, q| p + q)
    };
    assert!(polymat::isherm(&dev.put(&h), 1e-12).unwrap());
    let mut nh = h.clone();
    nh[3][7] += C(1e-6, 0.0);
    assert!(!polymat::isherm(&dev.put(&nh), 1e-9).unwrap());
    assert!(polymat::isherm(&dev.put(&nh), 1e-5).unwrap());
    assert!(!polymat::isherm(&dev.put(&rand(2, 3, 1)), 1.0).unwrap());
    let tiny = map(&rand(6, 6, 16), |z| z * 1e-13);
    assert!(polymat::iszero(&dev.put(&tiny), 1e-12).unwrap());
    assert!(!polymat::iszero(&dev.put(&tiny), 1e-16).unwrap());
    let mut nan = tiny.clone();
    nan[2][2] = C(f64::NAN, 0.0);
    assert!(!polymat::iszero(&dev.put(&nan), 1.0).unwrap());
});

test_device!(powers_and_exponential, |dev| {
    let a = map(&rand(12, 12, 17), |z| z * 0.3);
    let x = dev.put(&a);
    dev.check(&polymat::pow(&x, 0, Out::Auto).unwrap(), &eye(12), "pow 0");
    dev.check(&polymat::pow(&x, 1, Out::Auto).unwrap(), &a, "pow 1");
    let a5 = matmul(&a, &matmul(&a, &matmul(&a, &matmul(&a, &a))));
    dev.check(&polymat::pow(&x, 5, Out::Auto).unwrap(), &a5, "pow 5");
    // expm against its Taylor series, summed in plain loops, for a small and a large norm
    // (the large one exercises scaling and squaring).
    for (scale, seed) in [(0.05, 18), (1.5, 19)] {
        let h = map(&rand(10, 10, seed), |z| z * scale);
        let want = taylor_expm(&h);
        let got = polymat::expm(&dev.put(&h), Out::Auto).unwrap();
        dev.check(&got, &want, &format!("expm (scale {scale})"));
    }
    // Every Taylor degree the GPU picks from the 1-norm (T1, T2, T4, T8, T12, T18 just under
    // their thresholds, then T18 with squarings), at n = 10 and n = 33, with the products by
    // Gauss's method (cublasZgemm3m) and by Zgemm. Only this test changes the setting.
    let default = polymat::gpu::gauss_products();
    for gauss in [true, false] {
        polymat::gpu::set_gauss_products(gauss);
        for n in [10, 33] {
            for (k, norm) in [1e-16, 2e-8, 3e-4, 0.045, 0.28, 1.0, 7.0]
                .into_iter()
                .enumerate()
            {
                let r = rand(n, n, 40 + k as u64);
                let one_norm = (0..n)
                    .map(|j| (0..n).map(|i| r[i][j].norm()).sum::<f64>())
                    .fold(0.0, f64::max);
                let h = map(&r, |z| z * (norm / one_norm));
                let want = taylor_expm(&h);
                let got = polymat::expm(&dev.put(&h), Out::Auto).unwrap();
                dev.check(
                    &got,
                    &want,
                    &format!("expm n = {n}, ‖h‖₁ = {norm}, Gauss {gauss}"),
                );
            }
        }
    }
    polymat::gpu::set_gauss_products(default);
    // exp(iθσx) in closed form.
    let t = 0.7f64;
    let sx = vec![vec![C(0.0, 0.0), C(0.0, t)], vec![C(0.0, t), C(0.0, 0.0)]];
    let want = vec![
        vec![C(t.cos(), 0.0), C(0.0, t.sin())],
        vec![C(0.0, t.sin()), C(t.cos(), 0.0)],
    ];
    dev.check(
        &polymat::expm(&dev.put(&sx), Out::Auto).unwrap(),
        &want,
        "expm σx",
    );
});

/// `exp(h)` by squaring a Taylor series of `h/2^s` summed to convergence.
fn taylor_expm(h: &Ref) -> Ref {
    let n = h.len();
    let s = 6;
    let x = map(h, |z| z / f64::from(1 << s));
    let mut sum = eye(n);
    let mut term = eye(n);
    for k in 1..40 {
        term = map(&matmul(&term, &x), |z| z / k as f64);
        sum = common::zip(&sum, &term, |p, q| p + q);
    }
    for _ in 0..s {
        sum = matmul(&sum, &sum);
    }
    sum
}

test_device!(elementwise_misc, |dev| {
    let mut a = rand(6, 4, 20);
    a[1][2] = C(1e-15, 0.5);
    a[3][0] = C(0.25, -1e-14);
    let want = map(&a, |z| {
        C(
            if z.re.abs() < 1e-12 { 0.0 } else { z.re },
            if z.im.abs() < 1e-12 { 0.0 } else { z.im },
        )
    });
    let got = polymat::tidyup(&dev.put(&a), 1e-12, Out::Auto).unwrap();
    dev.check(&got, &want, "tidyup");
    let ket = rand(5, 1, 21);
    let bra = rand(1, 5, 22);
    let outer = matmul(&ket, &adjoint(&ket));
    dev.check(
        &polymat::project(&dev.put(&ket), Out::Auto).unwrap(),
        &outer,
        "project ket",
    );
    let outer = matmul(&adjoint(&bra), &bra);
    dev.check(
        &polymat::project(&dev.put(&bra), Out::Auto).unwrap(),
        &outer,
        "project bra",
    );
});

test_device!(reshaping, |dev| {
    let a = rand(4, 6, 23);
    let x = dev.put(&a);
    let flat: Vec<c64> = a.iter().flatten().copied().collect(); // row-major
    let want: Ref = (0..3).map(|i| flat[i * 8..(i + 1) * 8].to_vec()).collect();
    dev.check(
        &polymat::reshape(&x, (3, 8), Out::Auto).unwrap(),
        &want,
        "reshape",
    );
    let stacked: Ref = (0..6)
        .flat_map(|j| (0..4).map(move |i| (i, j)))
        .map(|(i, j)| vec![a[i][j]])
        .collect();
    let s = polymat::column_stack(&x, Out::Auto).unwrap();
    dev.check(&s, &stacked, "column_stack");
    let back = polymat::column_unstack(&s, 4, Out::Auto).unwrap();
    dev.check(&back, &a, "column_unstack");
    assert!(matches!(
        polymat::column_unstack(&s, 5, Out::Auto),
        Err(Error::Shape { .. })
    ));
});

test_device!(constructors, |dev| {
    dev.check(
        &polymat::zeros(3, 2, dev.out()).unwrap(),
        &vec![vec![C(0.0, 0.0); 2]; 3],
        "zeros",
    );
    dev.check(
        &polymat::identity(4, dev.out()).unwrap(),
        &eye(4),
        "identity",
    );
    let d = ops::diag(
        vec![
            vec![C(1.0, 0.0); 3],
            vec![C(2.0, 1.0); 2],
            vec![C(0.5, 0.0); 3],
        ],
        vec![0, -1, 0],
        (3, 4),
        dev.out(),
    )
    .unwrap();
    let mut want = vec![vec![C(0.0, 0.0); 4]; 3];
    for (i, row) in want.iter_mut().enumerate() {
        row[i] = C(1.5, 0.0);
    }
    want[1][0] = C(2.0, 1.0);
    want[2][1] = C(2.0, 1.0);
    dev.check(&d, &want, "diag");
});

test_device!(round_trip, |dev| {
    for (m, n) in [(0, 0), (0, 3), (1, 1), (33, 17)] {
        let a = random_ref(&mut Rng::new(24), m, n, 1.0);
        let x = if m == 0 {
            polymat::zeros(m, n, dev.out()).unwrap()
        } else {
            dev.put(&a)
        };
        assert_eq!(x.shape(), (m, n));
        if m > 0 {
            assert_data_close(&x, &a, "round trip");
        }
        let csr = polymat::to(Kind::CSR, &x).unwrap();
        assert_eq!(csr.shape(), (m, n));
    }
});

/// Mixed inputs follow the policy in `polymat::gpu`: GPU in, GPU out.
#[test]
fn mixed_inputs_run_on_the_gpu() {
    if skip_without_gpu("mixed_inputs_run_on_the_gpu") {
        return;
    }
    let (a, b) = (rand(8, 8, 25), rand(8, 8, 26));
    let g = make(&a, Kind::GPU_DENSE);
    for other in [make(&b, Kind::DENSE), make(&b, Kind::CSR)] {
        let sum = polymat::add(&g, &other, Out::Auto).unwrap();
        assert_eq!(sum.kind(), Kind::GPU_DENSE);
        assert_data_close(&sum, &common::zip(&a, &b, |p, q| p + q), "mixed add");
        let prod = polymat::matmul(&other, &g, Out::Auto).unwrap();
        assert_eq!(prod.kind(), Kind::GPU_DENSE);
        assert_data_close(&prod, &matmul(&b, &a), "mixed matmul");
    }
    let down = polymat::matmul(&g, &g, Out::Dense).unwrap();
    assert_eq!(down.kind(), Kind::DENSE);
    assert_data_close(&down, &matmul(&a, &a), "matmul to Dense");
    // No GPU kernel: computed on the CPU, and under Out::Auto moved back to the GPU.
    let inv = polymat::inv(&g, Out::Auto).unwrap();
    assert_eq!(inv.kind(), Kind::GPU_DENSE);
    let inv_d = polymat::inv(&g, Out::Dense).unwrap();
    assert_eq!(inv_d.kind(), Kind::DENSE);
    let inv_g = polymat::inv(&g, Out::GpuDense).unwrap();
    assert_eq!(inv_g.kind(), Kind::GPU_DENSE);
    let id = polymat::matmul(&g, &inv_g, Out::Auto).unwrap();
    assert_data_close(&id, &eye(8), "a·inv(a)");
    let name = gpu::device_name().unwrap();
    assert!(!name.is_empty());
    gpu::synchronize().unwrap();
}

// Blocks, kron_transpose, outer products, trace_oper_ket and the predicates: GPU kernels
// (issue 17), checked against naive loops on both devices.
test_device!(blocks_and_predicates, |dev| {
    let a = rand(6, 5, 41);
    let x = dev.put(&a);
    for (rows, cols) in [(1..4, 0..2), (0..6, 4..5), (2..2, 1..3), (0..6, 0..5)] {
        let want: Ref = a[rows.clone()]
            .iter()
            .map(|r| r[cols.clone()].to_vec())
            .collect();
        let want = if want.is_empty() { vec![] } else { want };
        let got = polymat::block_extract(&x, (rows.clone(), cols.clone()), Out::Auto).unwrap();
        assert_eq!(got.shape(), (rows.len(), cols.len()));
        if rows.len() * cols.len() > 0 {
            dev.check(&got, &want, &format!("block_extract {rows:?} {cols:?}"));
        }
    }
    let b = rand(2, 3, 42);
    for at in [(0, 0), (4, 2), (3, 1)] {
        let mut want = a.clone();
        for (i, row) in b.iter().enumerate() {
            want[at.0 + i][at.1..at.1 + 3].copy_from_slice(row);
        }
        let got = polymat::block_overwrite(&x, &dev.put(&b), at, Out::Auto).unwrap();
        dev.check(&got, &want, &format!("block_overwrite at {at:?}"));
    }
    assert!(polymat::block_overwrite(&x, &dev.put(&b), (5, 0), Out::Auto).is_err());
    let c = rand(2, 3, 43);
    let kt = polymat::kron_transpose(&x, &dev.put(&c), Out::Auto).unwrap();
    dev.check(&kt, &kron(&common::transpose(&a), &c), "kron_transpose");
    let (ket, bra) = (rand(4, 1, 44), rand(1, 3, 45));
    let outer = polymat::matmul_outer(&dev.put(&ket), &dev.put(&bra), Out::Auto).unwrap();
    dev.check(&outer, &common::matmul(&ket, &bra), "matmul_outer");
    let op = rand(3, 3, 46);
    let stacked: Ref = (0..9).map(|k| vec![op[k % 3][k / 3]]).collect();
    let tr = polymat::trace_oper_ket(&dev.put(&stacked)).unwrap();
    scalar_close(tr, op[0][0] + op[1][1] + op[2][2], "trace_oper_ket");
    // isdiag: a diagonal matrix, then one off-diagonal entry of size 1e-6.
    let mut d = vec![vec![C(0.0, 0.0); 4]; 3];
    for (i, row) in d.iter_mut().enumerate() {
        row[i] = C(i as f64 + 1.0, -1.0);
    }
    assert!(polymat::isdiag(&dev.put(&d), 0.0).unwrap(), "isdiag");
    d[2][0] = C(0.0, 1e-6);
    assert!(!polymat::isdiag(&dev.put(&d), 1e-7).unwrap(), "isdiag off");
    assert!(polymat::isdiag(&dev.put(&d), 1e-5).unwrap(), "isdiag tol");
    // isequal: atol and rtol, and NaN never equal.
    let mut e = a.clone();
    e[1][2] += C(1e-6, 0.0);
    let (xa, xe) = (dev.put(&a), dev.put(&e));
    assert!(
        polymat::isequal(&xa, &xa, 0.0, 0.0).unwrap(),
        "isequal self"
    );
    assert!(
        !polymat::isequal(&xa, &xe, 1e-7, 0.0).unwrap(),
        "isequal atol"
    );
    assert!(
        polymat::isequal(&xa, &xe, 1e-5, 0.0).unwrap(),
        "isequal loose"
    );
    assert!(
        polymat::isequal(&xa, &xe, 0.0, 1e-5).unwrap(),
        "isequal rtol"
    );
    e[0][0] = C(f64::NAN, 0.0);
    let xn = dev.put(&e);
    assert!(
        !polymat::isequal(&xn, &xn, 1.0, 1.0).unwrap(),
        "isequal NaN"
    );
    // Permutations: out[rows[i], cols[j]] = a[i, j], either axis alone, and by subsystems.
    use ops::permute::{Permutation, Subsystems};
    let (rows, cols) = (vec![3, 0, 5, 1, 4, 2], vec![4, 2, 0, 1, 3]);
    for (r, c) in [
        (Some(rows.clone()), Some(cols.clone())),
        (Some(rows.clone()), None),
        (None, Some(cols.clone())),
    ] {
        let mut want = a.clone();
        for (i, row) in a.iter().enumerate() {
            for (j, v) in row.iter().enumerate() {
                let p = r.as_ref().map_or(i, |r| r[i]);
                let q = c.as_ref().map_or(j, |c| c[j]);
                want[p][q] = *v;
            }
        }
        let p = Permutation { rows: r, cols: c };
        let got = ops::permute::indices(&x, &p, Out::Auto).unwrap();
        dev.check(&got, &want, &format!("permute indices {p:?}"));
    }
    let bad = Permutation {
        rows: Some(vec![0, 0, 1, 2, 3, 4]),
        cols: None,
    };
    assert!(ops::permute::indices(&x, &bad, Out::Auto).is_err());
    // |0⟩⊗|1⟩ in a 2×3 space (state 1), swapped to |1⟩⊗|0⟩ in 3×2 (state 2).
    let mut ket = vec![vec![C(0.0, 0.0)]; 6];
    ket[1][0] = C(1.0, 0.5);
    let s = Subsystems {
        dims: vec![2, 3],
        order: vec![1, 0],
    };
    let got = ops::permute::dimensions(&dev.put(&ket), &s, Out::Auto).unwrap();
    let mut want = vec![vec![C(0.0, 0.0)]; 6];
    want[2][0] = C(1.0, 0.5);
    dev.check(&got, &want, "permute dimensions");
    // Partial traces of a 12×12 operator on dims (2, 3, 2), keeping each subset.
    let op = rand(12, 12, 47);
    let x = dev.put(&op);
    for keep in [
        vec![0],
        vec![1],
        vec![2],
        vec![0, 2],
        vec![2, 1],
        vec![],
        vec![0, 1, 2],
    ] {
        let dims = [2usize, 3, 2];
        let digits = |i: usize| [i / 6, (i / 2) % 3, i % 2];
        let mut sorted = keep.clone();
        sorted.sort_unstable();
        let k: usize = sorted.iter().map(|&s| dims[s]).product();
        let kept = |i: usize| {
            sorted
                .iter()
                .fold(0, |acc, &s| acc * dims[s] + digits(i)[s])
        };
        let traced_same = |i: usize, j: usize| {
            (0..3).all(|s| sorted.contains(&s) || digits(i)[s] == digits(j)[s])
        };
        let mut want = vec![vec![C(0.0, 0.0); k]; k];
        for i in 0..12 {
            for j in 0..12 {
                if traced_same(i, j) {
                    want[kept(i)][kept(j)] += op[i][j];
                }
            }
        }
        let p = ops::Ptrace {
            dims: dims.to_vec(),
            keep: keep.clone(),
        };
        let got = polymat::ptrace(&x, &p, Out::Auto).unwrap();
        dev.check(&got, &want, &format!("ptrace keep {keep:?}"));
    }
    // Means over the non-zero entries (an all-zero matrix gives 0).
    let mut sparse = rand(7, 9, 48);
    for (i, row) in sparse.iter_mut().enumerate() {
        for (j, v) in row.iter_mut().enumerate() {
            if (i + 2 * j) % 3 != 0 {
                *v = C(0.0, 0.0);
            }
        }
    }
    let nz: Vec<c64> = sparse
        .iter()
        .flatten()
        .copied()
        .filter(|v| *v != C(0.0, 0.0))
        .collect();
    let mean = nz.iter().sum::<c64>() / nz.len() as f64;
    let mean_abs = nz.iter().map(|v| v.norm()).sum::<f64>() / nz.len() as f64;
    let xs = dev.put(&sparse);
    scalar_close(ops::mean_nonzero(&xs).unwrap(), mean, "mean_nonzero");
    real_close(
        ops::mean_abs_nonzero(&xs).unwrap(),
        mean_abs,
        "mean_abs_nonzero",
    );
    let zero = dev.put(&vec![vec![C(0.0, 0.0); 3]; 2]);
    scalar_close(
        ops::mean_nonzero(&zero).unwrap(),
        C(0.0, 0.0),
        "mean_nonzero of 0",
    );
    // expect_super: a 9×9 superoperator on a 3×3 state, against Tr(unstack(S·ρ)).
    let (sup, rho) = (rand(9, 9, 49), rand(9, 1, 50));
    let prod = matmul(&sup, &rho);
    let want = prod[0][0] + prod[4][0] + prod[8][0];
    let got = polymat::expect_super(&dev.put(&sup), &dev.put(&rho)).unwrap();
    scalar_close(got, want, "expect_super");
});

/// A dense Dense from a reference, for the host-side identities below.
fn dense_of(r: &Ref) -> Dense {
    let (m, n) = common::shape(r);
    Dense::from_fn(m, n, |i, j| r[i][j])
}

fn ref_of(d: &Dense) -> Ref {
    let (m, n) = d.shape();
    (0..m)
        .map(|i| (0..n).map(|j| d.get(i, j)).collect())
        .collect()
}

// inv, solve, eigs and svd: cuSOLVER on the GPU (getrf/getrs, heevd, gesvd), faer on the CPU;
// checked by their identities, so both halves test the same claims.
test_device!(decompositions, |dev| {
    // A well-conditioned general matrix: random plus 4·I.
    let n = 24;
    let a = common::zip(&rand(n, n, 61), &eye(n), |p, q| p + C(4.0, 0.0) * q);
    let x = dev.put(&a);
    let inv = polymat::inv(&x, Out::Auto).unwrap();
    assert_eq!(inv.kind(), dev.kind(), "inv stays on {dev:?}");
    dev.check(
        &polymat::matmul(&x, &inv, Out::Auto).unwrap(),
        &eye(n),
        "a·inv(a)",
    );
    let b = rand(n, 3, 62);
    for method in [
        ops::SolveMethod::Lu,
        ops::SolveMethod::Gmres(ops::Iterative::default().tol(1e-13)),
    ] {
        let sol = polymat::solve(&x, &dev.put(&b), method.clone(), Out::Auto).unwrap();
        assert_eq!(sol.kind(), dev.kind(), "solve {method:?} stays on {dev:?}");
        dev.check(
            &polymat::matmul(&x, &sol, Out::Auto).unwrap(),
            &b,
            &format!("a·solve(a, b) by {method:?}"),
        );
    }
    // Singular to working precision: an exact zero pivot, and a rank-one perturbation of
    // machine size (no zero pivot, but the condition estimate refuses it).
    let zero = vec![vec![C(0.0, 0.0); 3]; 3];
    let e = polymat::inv(&dev.put(&zero), Out::Auto).unwrap_err();
    assert!(matches!(e, Error::Numerical { .. }), "{e}");
    let mut near = vec![vec![C(1.0, 0.0); 3]; 3];
    near[2][2] = C(1.0 + 1e-17, 0.0);
    near[1][0] = C(1.0 + 4e-16, 0.0);
    let e = polymat::solve(
        &dev.put(&near),
        &dev.put(&rand(3, 1, 63)),
        ops::SolveMethod::Lu,
        Out::Auto,
    )
    .unwrap_err();
    assert!(matches!(e, Error::Numerical { .. }), "{e}");
    // Hermitian eigenpairs, all and a few, in both orders.
    let h = common::zip(&a, &adjoint(&a), |p, q| p + q);
    let hx = dev.put(&h);
    for (order, count) in [(ops::EigOrder::Low, None), (ops::EigOrder::High, Some(5))] {
        let o = ops::EigsOptions::default().order(order).count(count);
        let e = polymat::eigs(&hx, o).unwrap();
        let k = count.unwrap_or(n);
        assert_eq!(e.values.len(), k);
        let sorted = e.values.windows(2).all(|w| match order {
            ops::EigOrder::Low => w[0].re <= w[1].re,
            ops::EigOrder::High => w[0].re >= w[1].re,
        });
        assert!(sorted && e.values.iter().all(|v| v.im == 0.0), "{order:?}");
        let v = ref_of(e.vectors.as_ref().unwrap());
        let av = matmul(&h, &v);
        let vl: Ref = (0..n)
            .map(|i| (0..k).map(|j| v[i][j] * e.values[j]).collect())
            .collect();
        common::assert_ref_close(&av, &vl, &format!("h·v = v·λ ({order:?}) on {dev:?}"));
        let gram = matmul(&adjoint(&v), &v);
        common::assert_ref_close(&gram, &eye(k), "orthonormal eigenvectors");
    }
    let only = polymat::eigs(&hx, ops::EigsOptions::default().vectors(false)).unwrap();
    let all = polymat::eigs(&dense_of(&h).into(), Default::default()).unwrap();
    for (p, q) in only.values.iter().zip(&all.values) {
        scalar_close(*p, *q, "eigenvalues without vectors");
    }
    // A general matrix: the general solver (on the CPU for GPU data), same eigenvalues.
    let g = polymat::eigs(&x, Default::default()).unwrap();
    let gd = polymat::eigs(&dense_of(&a).into(), Default::default()).unwrap();
    for (p, q) in g.values.iter().zip(&gd.values) {
        scalar_close(*p, *q, "general eigenvalues");
    }
    // Thin SVD of a tall, a wide and an empty matrix; values only.
    for (m, k) in [(9, 5), (4, 7), (0, 3)] {
        let r = rand(m, k, 64 + m as u64);
        // (A reference with no rows loses its column count: build the 0×k input directly.)
        let host = if m == 0 {
            Dense::zeros(0, k)
        } else {
            dense_of(&r)
        };
        let input = polymat::to(dev.kind(), &host.into()).unwrap();
        let d = polymat::svd(&input, true).unwrap();
        let p = m.min(k);
        assert_eq!(d.s.len(), p);
        assert!(d.s.windows(2).all(|w| w[0] >= w[1]), "nonincreasing");
        let (u, vh) = (d.u.as_ref().unwrap(), d.vh.as_ref().unwrap());
        assert_eq!((u.shape(), vh.shape()), ((m, p), (p, k)));
        let (u, vh) = (ref_of(u), ref_of(vh));
        let us: Ref = u
            .iter()
            .map(|row| row.iter().zip(&d.s).map(|(x, s)| x * s).collect())
            .collect();
        if m > 0 {
            common::assert_ref_close(&matmul(&us, &vh), &r, &format!("u·s·vh {m}×{k}"));
        }
        let plain = polymat::svd(&input, false).unwrap();
        assert!(plain.u.is_none() && plain.vh.is_none());
        for (p, q) in plain.s.iter().zip(&d.s) {
            real_close(*p, *q, "singular values without vectors");
        }
    }
});

/// The sparse kind of a device: Csr on the CPU, GpuCsr on the GPU.
fn sparse_kind(dev: Device) -> Kind {
    match dev {
        Device::Cpu => Kind::CSR,
        Device::Gpu => Kind::GPU_CSR,
    }
}

// GpuCsr's kernels (cuSPARSE SpMV/SpMM and csr2csc, polymat's sum, trace, expectation and
// Kronecker kernels) against the Csr kernels' answers, on sparse inputs with empty rows.
test_device!(sparse_kernels, |dev| {
    let sk = sparse_kind(dev);
    let sparse = |m: usize, n: usize, seed: u64| random_ref(&mut Rng::new(seed), m, n, 0.3);
    let check = |d: &Data, want: &Ref, kind: Kind, what: &str| {
        assert_eq!(d.kind(), kind, "{what}: kind on {dev:?}");
        assert_data_close(d, want, &format!("{what} on {dev:?}"));
    };
    let (a, b) = (sparse(7, 7, 71), sparse(7, 7, 72));
    let (x, y) = (make(&a, sk), make(&b, sk));
    let s = C(0.5, -2.0);
    check(
        &polymat::add(&x, &y, Out::Auto).unwrap(),
        &common::zip(&a, &b, |p, q| p + q),
        sk,
        "add",
    );
    check(
        &polymat::add_scaled(&x, &y, s, Out::Auto).unwrap(),
        &common::zip(&a, &b, |p, q| p + s * q),
        sk,
        "add_scaled",
    );
    // a − a is exactly zero everywhere: no entry is stored.
    let zero = polymat::sub(&x, &x, Out::Auto).unwrap();
    check(&zero, &vec![vec![C(0.0, 0.0); 7]; 7], sk, "a - a");
    let host = polymat::to(Kind::CSR, &zero).unwrap();
    assert_eq!(
        host.downcast_ref::<Csr>().unwrap().nnz(),
        0,
        "a - a stores nothing"
    );
    check(
        &polymat::mul(&x, s, Out::Auto).unwrap(),
        &map(&a, |p| s * p),
        sk,
        "mul",
    );
    check(
        &polymat::neg(&x, Out::Auto).unwrap(),
        &map(&a, |p| -p),
        sk,
        "neg",
    );
    check(
        &polymat::adjoint(&x, Out::Auto).unwrap(),
        &adjoint(&a),
        sk,
        "adjoint",
    );
    check(
        &polymat::transpose(&x, Out::Auto).unwrap(),
        &common::transpose(&a),
        sk,
        "transpose",
    );
    check(
        &polymat::conj(&x, Out::Auto).unwrap(),
        &map(&a, |p| p.conj()),
        sk,
        "conj",
    );
    let wide = sparse(3, 5, 73);
    check(
        &polymat::adjoint(&make(&wide, sk), Out::Auto).unwrap(),
        &adjoint(&wide),
        sk,
        "adjoint 3×5",
    );
    scalar_close(polymat::trace(&x).unwrap(), common::trace(&a), "trace");
    let k = sparse(2, 3, 74);
    check(
        &polymat::kron(&x, &make(&k, sk), Out::Auto).unwrap(),
        &kron(&a, &k),
        sk,
        "kron",
    );
    // Products with dense data: a ket (SpMV) and a matrix (SpMM), on the device's dense kind.
    for cols in [1, 4] {
        let v = rand(7, cols, 75 + cols as u64);
        check(
            &polymat::matmul(&x, &dev.put(&v), Out::Auto).unwrap(),
            &matmul(&a, &v),
            dev.kind(),
            &format!("sparse·dense with {cols} columns"),
        );
    }
    // Expectation values in a ket and in a density matrix.
    let psi = rand(7, 1, 77);
    let want = matmul(&adjoint(&psi), &matmul(&a, &psi))[0][0];
    scalar_close(
        polymat::expect(&x, &dev.put(&psi)).unwrap(),
        want,
        "expect ket",
    );
    scalar_close(
        polymat::inner_op(&dev.put(&psi), &x, &dev.put(&psi)).unwrap(),
        matmul(&adjoint(&psi), &matmul(&a, &psi))[0][0],
        "inner_op",
    );
    let rho = rand(7, 7, 78);
    let want = common::trace(&matmul(&a, &rho));
    scalar_close(
        polymat::expect(&x, &dev.put(&rho)).unwrap(),
        want,
        "expect oper",
    );
    // Sparse·sparse stays sparse (a Csr kernel, moved back to the device).
    check(
        &polymat::matmul(&x, &y, Out::Auto).unwrap(),
        &matmul(&a, &b),
        sk,
        "sparse·sparse",
    );
    // Densify on the device, and back to the host.
    check(
        &polymat::to(dev.kind(), &x).unwrap(),
        &a,
        dev.kind(),
        "densify",
    );
    let back = polymat::to(Kind::CSR, &x).unwrap();
    assert_data_close(&back, &a, "download");
    // An empty matrix and one with no stored entries.
    let empty = polymat::to(sk, &Csr::zeros(0, 3).into()).unwrap();
    assert_eq!(empty.shape(), (0, 3));
    assert_eq!(polymat::adjoint(&empty, Out::Auto).unwrap().shape(), (3, 0));
    let none = polymat::to(sk, &Csr::zeros(4, 4).into()).unwrap();
    scalar_close(polymat::trace(&none).unwrap(), C(0.0, 0.0), "trace of 0");
});

/// Operations without a GPU kernel still return GPU data under `Out::Auto` (the CPU result
/// is moved back), so a chain of operations never falls off the GPU.
#[test]
fn operations_without_gpu_kernels_stay_on_the_gpu() {
    if skip_without_gpu("operations_without_gpu_kernels_stay_on_the_gpu") {
        return;
    }
    let a = rand(4, 4, 31);
    let g = make(&a, Kind::GPU_DENSE);
    let on_gpu = |d: polymat::Result<Data>, what: &str| {
        let d = d.unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(d.kind(), Kind::GPU_DENSE, "{what}");
        d
    };
    let k = on_gpu(polymat::kron(&g, &g, Out::Auto), "kron");
    assert_data_close(&k, &kron(&a, &a), "kron");
    let b = on_gpu(
        polymat::block_extract(&g, (1..3, 0..2), Out::Auto),
        "block_extract",
    );
    assert_data_close(
        &b,
        &vec![a[1][..2].to_vec(), a[2][..2].to_vec()],
        "block_extract",
    );
    on_gpu(polymat::inv(&g, Out::Auto), "inv");
    on_gpu(
        polymat::sqrtm(&polymat::matmul_dag(&g, &g, Out::Auto).unwrap(), Out::Auto),
        "sqrtm",
    );
    on_gpu(
        polymat::solve(&g, &g, ops::SolveMethod::Lu, Out::Auto),
        "solve",
    );
    on_gpu(
        polymat::ptrace(
            &k,
            &ops::Ptrace {
                dims: vec![4, 4],
                keep: vec![0],
            },
            Out::Auto,
        ),
        "ptrace",
    );
    let ket = make(&rand(4, 1, 32), Kind::GPU_DENSE);
    on_gpu(
        polymat::expm_multiply(&g, &ket, c64::new(0.0, -0.1), Out::Auto),
        "expm_multiply",
    );
    for col in polymat::split_columns(&g).unwrap() {
        assert_eq!(col.kind(), Kind::GPU_DENSE, "split_columns");
    }
}

// ----- runs everywhere: tables and errors, no GPU code executed -----

/// The 30 matrix-valued operations the "stays on the GPU" walks check (19 unary, 11 binary), as
/// `OPERATION: arity` pairs handed to `$check!`: one list for the GpuDense and GpuCsr walks.
macro_rules! matrix_operations {
    ($check:ident) => {
        $check!(
            ADD: 2, SUB: 2, MUL: 1, NEG: 1, MATMUL: 2, MATMUL_DAG: 2, MATMUL_OUTER: 2,
            MULTIPLY: 2, KRON: 2, KRON_TRANSPOSE: 2, ADJOINT: 1, TRANSPOSE: 1, CONJ: 1, POW: 1,
            EXPM: 1, EXPM_MULTIPLY: 2, PROJECT: 1, TIDYUP: 1, RESHAPE: 1, COLUMN_STACK: 1,
            COLUMN_UNSTACK: 1, BLOCK_EXTRACT: 1, BLOCK_OVERWRITE: 2, PERMUTE_INDICES: 1,
            PERMUTE_DIMENSIONS: 1, PTRACE: 1, INV: 1, SOLVE: 2, SQRTM: 1, LOGM: 1,
        )
    };
}

/// Every built-in operation that returns a matrix returns GPU data under `Out::Auto` when an
/// input is GPU data: through a GPU kernel, or through the CPU kernel and a conversion back
/// (`explain()` says which).
#[test]
fn every_operation_keeps_gpu_data_on_the_gpu() {
    let (g, d, s, a) = (Kind::GPU_DENSE, Kind::DENSE, Kind::CSR, Kind::DIA);
    macro_rules! check {
        ($($op:ident: $arity:expr),* $(,)?) => {{
            let mut checked = 0;
            $(
                let tuples: Vec<Vec<Kind>> = match $arity {
                    1 => vec![vec![g]],
                    2 => vec![
                        vec![g, g],
                        vec![g, s],
                        vec![d, g],
                        vec![s, g],
                        vec![g, a],
                        vec![a, g],
                    ],
                    _ => vec![vec![g, d, s], vec![s, a, g]],
                };
                for kinds in tuples {
                    let e = ops::$op.explain(&kinds, Out::Auto).unwrap();
                    assert_eq!(
                        e.result,
                        Some(g),
                        "{} {kinds:?} under Out::Auto returns {:?}:\n{e}",
                        stringify!($op),
                        e.result
                    );
                    checked += 1;
                }
            )*
            checked
        }};
    }
    let checked = matrix_operations!(check);
    // 19 unary and 11 binary operations (6 input tuples each, Dia among them).
    assert_eq!(checked, 19 + 11 * 6);
    // CPU inputs never touch the GPU.
    for pair in [[d, d], [d, s], [s, s], [a, a], [a, d], [s, a]] {
        for e in [
            ops::KRON.explain(&pair, Out::Auto).unwrap(),
            ops::ADD.explain(&pair, Out::Auto).unwrap(),
            ops::MATMUL.explain(&pair, Out::Auto).unwrap(),
        ] {
            assert_ne!(e.result, Some(g), "{e}");
        }
    }
    // split_columns returns a Vec of GPU columns for GPU input (a GPU specialisation).
    let r = ops::SPLIT_COLUMNS.get(&[g], Out::Auto).unwrap();
    assert_eq!(r.kernel_name(), "split_columns_gpu");
}

/// GpuCsr inputs keep their results on the GPU under `Out::Auto`; operations with a sparse
/// kernel keep them sparse (GpuCsr), through a GpuCsr kernel or a Csr one and an upload.
#[test]
fn every_operation_keeps_gpu_csr_on_the_gpu() {
    let (c, g, s, d) = (Kind::GPU_CSR, Kind::GPU_DENSE, Kind::CSR, Kind::DENSE);
    let on_gpu = |kinds: &[Kind], e: &polymat::Explanation, what: &str| {
        assert!(
            e.result == Some(c) || e.result == Some(g),
            "{what} {kinds:?} under Out::Auto returns {:?}:\n{e}",
            e.result
        );
    };
    macro_rules! check {
        ($($op:ident: $arity:expr),* $(,)?) => {{
            let mut checked = 0;
            $(
                let tuples: Vec<Vec<Kind>> = match $arity {
                    1 => vec![vec![c]],
                    _ => vec![vec![c, c], vec![c, g], vec![g, c], vec![c, s], vec![d, c]],
                };
                for kinds in tuples {
                    let e = ops::$op.explain(&kinds, Out::Auto).unwrap();
                    on_gpu(&kinds, &e, stringify!($op));
                    checked += 1;
                }
            )*
            checked
        }};
    }
    let checked = matrix_operations!(check);
    // The same 19 unary and 11 binary operations as for GpuDense (5 input tuples each).
    assert_eq!(checked, 19 + 11 * 5);
    // Sparse in, sparse out, and never densified on the way.
    for (name, e) in [
        ("add", ops::ADD.explain(&[c, c], Out::Auto).unwrap()),
        ("mul", ops::MUL.explain(&[c], Out::Auto).unwrap()),
        ("kron", ops::KRON.explain(&[c, c], Out::Auto).unwrap()),
        ("matmul", ops::MATMUL.explain(&[c, c], Out::Auto).unwrap()),
        (
            "multiply",
            ops::MULTIPLY.explain(&[c, c], Out::Auto).unwrap(),
        ),
        ("adjoint", ops::ADJOINT.explain(&[c], Out::Auto).unwrap()),
        ("tidyup", ops::TIDYUP.explain(&[c], Out::Auto).unwrap()),
    ] {
        assert_eq!(e.result, Some(c), "{name}:\n{e}");
        let text = e.to_string();
        assert!(
            !text.contains("GpuDense") && !text.contains("-> Dense"),
            "{name}:\n{text}"
        );
    }
    // Direct GpuCsr kernels.
    for (name, want) in [
        (
            ops::ADD
                .get(&[c, c], Out::Auto)
                .unwrap()
                .kernel_name()
                .to_owned(),
            "add_gpucsr",
        ),
        (
            ops::MUL
                .get(&[c], Out::Auto)
                .unwrap()
                .kernel_name()
                .to_owned(),
            "mul_gpucsr",
        ),
        (
            ops::NEG
                .get(&[c], Out::Auto)
                .unwrap()
                .kernel_name()
                .to_owned(),
            "neg_gpucsr",
        ),
        (
            ops::KRON
                .get(&[c, c], Out::Auto)
                .unwrap()
                .kernel_name()
                .to_owned(),
            "kron_gpucsr",
        ),
        (
            ops::ADJOINT
                .get(&[c], Out::Auto)
                .unwrap()
                .kernel_name()
                .to_owned(),
            "adjoint_gpucsr",
        ),
        (
            ops::TRANSPOSE
                .get(&[c], Out::Auto)
                .unwrap()
                .kernel_name()
                .to_owned(),
            "transpose_gpucsr",
        ),
        (
            ops::CONJ
                .get(&[c], Out::Auto)
                .unwrap()
                .kernel_name()
                .to_owned(),
            "conj_gpucsr",
        ),
        (
            ops::TRACE
                .get(&[c], Out::Auto)
                .unwrap()
                .kernel_name()
                .to_owned(),
            "trace_gpucsr",
        ),
        (
            ops::MATMUL
                .get(&[c, g], Out::Auto)
                .unwrap()
                .kernel_name()
                .to_owned(),
            "matmul_gpucsr_gpu",
        ),
        (
            ops::EXPECT
                .get(&[c, g], Out::Auto)
                .unwrap()
                .kernel_name()
                .to_owned(),
            "expect_gpucsr_gpu",
        ),
    ] {
        assert_eq!(name, want);
    }
    // expm densifies on the GPU and runs there, not through the CPU.
    let e = ops::EXPM.explain(&[c], Out::Auto).unwrap();
    assert_eq!(e.kernel, "expm_gpucsr", "{e}");
    assert_eq!(e.result, Some(g), "{e}");
}

/// Every operation with a GPU kernel takes it directly for GPU inputs.
#[test]
fn gpu_inputs_resolve_to_gpu_kernels() {
    let g = Kind::GPU_DENSE;
    let cases: Vec<(String, bool)> = vec![
        direct(&ops::ADD.get(&[g, g], Out::Auto)),
        direct(&ops::MATMUL.get(&[g, g], Out::Auto)),
        direct(&ops::KRON.get(&[g, g], Out::Auto)),
        direct(&ops::MUL.get(&[g], Out::Auto)),
        direct(&ops::NEG.get(&[g], Out::Auto)),
        direct(&ops::MULTIPLY.get(&[g, g], Out::Auto)),
        direct(&ops::ADJOINT.get(&[g], Out::Auto)),
        direct(&ops::TRANSPOSE.get(&[g], Out::Auto)),
        direct(&ops::CONJ.get(&[g], Out::Auto)),
        direct(&ops::EXPM.get(&[g], Out::Auto)),
        direct(&ops::POW.get(&[g], Out::Auto)),
        direct(&ops::TIDYUP.get(&[g], Out::Auto)),
        direct(&ops::PROJECT.get(&[g], Out::Auto)),
        direct(&ops::RESHAPE.get(&[g], Out::Auto)),
        direct(&ops::COLUMN_STACK.get(&[g], Out::Auto)),
        direct(&ops::COLUMN_UNSTACK.get(&[g], Out::Auto)),
        direct(&ops::MATMUL_DAG.get(&[g, g], Out::Auto)),
        direct(&ops::TRACE.get(&[g], Out::Auto)),
        direct(&ops::INNER.get(&[g, g], Out::Auto)),
        direct(&ops::INNER_OP.get(&[g, g, g], Out::Auto)),
        direct(&ops::EXPECT.get(&[g, g], Out::Auto)),
        direct(&ops::ISHERM.get(&[g], Out::Auto)),
        direct(&ops::ISZERO.get(&[g], Out::Auto)),
        direct(&ops::NORM_FROBENIUS.get(&[g], Out::Auto)),
        direct(&ops::NORM_L2.get(&[g], Out::Auto)),
        direct(&ops::NORM_MAX.get(&[g], Out::Auto)),
        direct(&ops::NORM_ONE.get(&[g], Out::Auto)),
        direct(&ops::ZEROS.get(&[], Out::GpuDense)),
        direct(&ops::IDENTITY.get(&[], Out::GpuDense)),
        direct(&ops::DIAG.get(&[], Out::GpuDense)),
        direct(&ops::BLOCK_EXTRACT.get(&[g], Out::Auto)),
        direct(&ops::BLOCK_OVERWRITE.get(&[g, g], Out::Auto)),
        direct(&ops::KRON_TRANSPOSE.get(&[g, g], Out::Auto)),
        direct(&ops::MATMUL_OUTER.get(&[g, g], Out::Auto)),
        direct(&ops::TRACE_OPER_KET.get(&[g], Out::Auto)),
        direct(&ops::ISDIAG.get(&[g], Out::Auto)),
        direct(&ops::ISEQUAL.get(&[g, g], Out::Auto)),
        direct(&ops::PERMUTE_INDICES.get(&[g], Out::Auto)),
        direct(&ops::PERMUTE_DIMENSIONS.get(&[g], Out::Auto)),
        direct(&ops::PTRACE.get(&[g], Out::Auto)),
        direct(&ops::MEAN_NONZERO.get(&[g], Out::Auto)),
        direct(&ops::MEAN_ABS_NONZERO.get(&[g], Out::Auto)),
        direct(&ops::EXPECT_SUPER.get(&[g, g], Out::Auto)),
        direct(&ops::INV.get(&[g], Out::Auto)),
        direct(&ops::SOLVE.get(&[g, g], Out::Auto)),
        direct(&ops::EIGS.get(&[g], Out::Auto)),
        direct(&ops::SVD.get(&[g], Out::Auto)),
    ];
    for (name, is_direct) in cases {
        assert!(
            is_direct && name.ends_with("_gpu"),
            "{name} (direct: {is_direct})"
        );
    }
}

fn direct<P: Send + Sync + 'static, R: polymat::Output>(
    r: &polymat::Result<polymat::Resolved<P, R>>,
) -> (String, bool) {
    let r = r.as_ref().unwrap();
    (r.kernel_name().to_owned(), r.is_direct())
}

/// Mixed CPU/GPU inputs go to the GPU kernel; CPU inputs never touch the GPU; `Out::Auto` of a
/// constructor stays on the CPU.
#[test]
fn placement_policy() {
    let (d, s, g) = (Kind::DENSE, Kind::CSR, Kind::GPU_DENSE);
    for pair in [[g, d], [d, g], [g, s], [s, g]] {
        let r = ops::ADD.get(&pair, Out::Auto).unwrap();
        assert_eq!(r.kernel_name(), "add_gpu", "{pair:?}");
        let r = ops::MATMUL.get(&pair, Out::Auto).unwrap();
        // A Csr left operand goes up as GpuCsr (weight 1, no densifying) for cuSPARSE.
        let want = if pair[0] == s {
            "matmul_gpucsr_gpu"
        } else {
            "matmul_gpu"
        };
        assert_eq!(r.kernel_name(), want, "{pair:?}");
    }
    for out in [Out::Auto, Out::Dense, Out::Csr] {
        for a in [d, s] {
            for b in [d, s] {
                for name in [
                    ops::ADD.get(&[a, b], out).unwrap().kernel_name().to_owned(),
                    ops::MATMUL
                        .get(&[a, b], out)
                        .unwrap()
                        .kernel_name()
                        .to_owned(),
                    ops::KRON
                        .get(&[a, b], out)
                        .unwrap()
                        .kernel_name()
                        .to_owned(),
                    ops::MULTIPLY
                        .get(&[a, b], out)
                        .unwrap()
                        .kernel_name()
                        .to_owned(),
                ] {
                    assert!(!name.ends_with("_gpu"), "{a:?},{b:?} -> {out}: {name}");
                }
            }
            for name in [
                ops::EXPM.get(&[a], out).unwrap().kernel_name().to_owned(),
                ops::ADJOINT
                    .get(&[a], out)
                    .unwrap()
                    .kernel_name()
                    .to_owned(),
                ops::TIDYUP.get(&[a], out).unwrap().kernel_name().to_owned(),
                ops::POW.get(&[a], out).unwrap().kernel_name().to_owned(),
            ] {
                assert!(!name.ends_with("_gpu"), "{a:?} -> {out}: {name}");
            }
        }
    }
    // Scalar results with CPU inputs.
    for a in [d, s] {
        assert!(
            !ops::TRACE
                .get(&[a], Out::Auto)
                .unwrap()
                .kernel_name()
                .ends_with("_gpu")
        );
        assert!(
            !ops::EXPECT
                .get(&[a, a], Out::Auto)
                .unwrap()
                .kernel_name()
                .ends_with("_gpu")
        );
    }
    assert_eq!(
        ops::ZEROS.get(&[], Out::Auto).unwrap().kernel_name(),
        "zeros_csr"
    );
    assert_eq!(
        ops::IDENTITY.get(&[], Out::Auto).unwrap().kernel_name(),
        "identity_csr"
    );
    // No GPU kernel: the GPU operand is downloaded (weight 2).
    let r = ops::SQRTM.get(&[g], Out::Auto).unwrap();
    assert!(
        !r.is_direct() && r.kernel_name() == "sqrtm_dense",
        "{}",
        r.kernel_name()
    );
    let reg = polymat::registry();
    assert_eq!(reg.weight(d, g), 1.0);
    assert_eq!(reg.weight(g, d), 2.0);
    assert_eq!(reg.path(s, g).unwrap(), vec![s, d, g]);
}

#[test]
fn kind_and_out_names() {
    assert_eq!("gpu".parse::<Kind>().unwrap(), Kind::GPU_DENSE);
    assert_eq!("GpuDense".parse::<Out>().unwrap(), Out::GpuDense);
    assert_eq!(Out::from(Kind::GPU_DENSE), Out::GpuDense);
    assert_eq!(Out::GpuDense.kind(), Some(Kind::GPU_DENSE));
    assert_eq!(Kind::GPU_DENSE.to_string(), "GpuDense");
    assert_eq!("gpucsr".parse::<Kind>().unwrap(), Kind::GPU_CSR);
    assert_eq!("GpuCsr".parse::<Out>().unwrap(), Out::GpuCsr);
    assert_eq!(Out::from(Kind::GPU_CSR), Out::GpuCsr);
    assert_eq!(Kind::GPU_CSR.to_string(), "GpuCsr");
}

/// Without a usable GPU every entry point returns `Error::NoGpu`, never panics.
/// Freed buffers stay in the pool for the next results; handing them back leaves the live ones
/// intact, and the pool serves new results afterwards.
#[test]
fn released_pool_memory_leaves_live_buffers_intact() {
    if skip_without_gpu("released_pool_memory_leaves_live_buffers_intact") {
        return;
    }
    let keep = rand(64, 48, 41);
    let live = Device::Gpu.put(&keep);
    for n in [256, 1024] {
        let big = Device::Gpu.put(&eye(n));
        drop(big);
    }
    gpu::synchronize().unwrap();
    gpu::release_cached_memory().unwrap();
    Device::Gpu.check(&live, &keep, "a buffer alive across release_cached_memory");
    let twice = polymat::add(&live, &live, Out::Auto).unwrap();
    Device::Gpu.check(&twice, &map(&keep, |x| x + x), "a result after the release");
    gpu::release_cached_memory().unwrap();
}

/// Small results made and dropped in a loop reuse the same few device buffers (`spares`):
/// work queued on a dropped operand must finish before its buffer is written again, and a
/// reused buffer must carry nothing of its old contents into a new result.
#[test]
fn reused_buffers_keep_results_apart() {
    if skip_without_gpu("reused_buffers_keep_results_apart") {
        return;
    }
    let n = 24;
    let want = |a: &Ref| common::zip(&matmul(a, a), &eye(n), |p, q| p + q);
    let mut held = Vec::new();
    for k in 0..40u64 {
        let a = rand(n, n, 100 + k);
        let g = Device::Gpu.put(&a);
        let sq = polymat::matmul(&g, &g, Out::Auto).unwrap();
        drop(g); // its buffer is the next upload's, while the product may still read it
        let id = Device::Gpu.put(&eye(n));
        let sum = polymat::add(&sq, &id, Out::Auto).unwrap();
        drop((sq, id));
        let zero = polymat::sub(&sum, &sum, Out::Auto).unwrap();
        Device::Gpu.check(&zero, &vec![vec![C(0.0, 0.0); n]; n], "a reused buffer");
        if k % 8 == 0 {
            held.push((sum, a));
        } else {
            Device::Gpu.check(&sum, &want(&a), "a·a + I on reused buffers");
        }
    }
    for (sum, a) in &held {
        Device::Gpu.check(sum, &want(a), "a result held across reuses");
    }
    gpu::release_cached_memory().unwrap();
}

#[test]
fn no_gpu_is_an_error() {
    if gpu::available() {
        eprintln!("a GPU is available: no_gpu_is_an_error has nothing to check");
        return;
    }
    let err = gpu::check().unwrap_err();
    assert!(matches!(err, Error::NoGpu { .. }), "{err:?}");
    eprintln!("no GPU: {err}");
    assert!(err.to_string().starts_with("no usable CUDA GPU: "));
    let is_no_gpu = |r: polymat::Result<Data>| matches!(r, Err(Error::NoGpu { .. }));
    assert!(matches!(
        GpuDense::from_dense(&Dense::identity(2)),
        Err(Error::NoGpu { .. })
    ));
    assert!(matches!(GpuDense::zeros(2, 2), Err(Error::NoGpu { .. })));
    assert!(matches!(
        polymat::GpuCsr::from_csr(&Csr::identity(2)),
        Err(Error::NoGpu { .. })
    ));
    assert!(is_no_gpu(polymat::to(
        Kind::GPU_CSR,
        &Csr::identity(2).into()
    )));
    assert!(matches!(GpuDense::identity(2), Err(Error::NoGpu { .. })));
    assert!(is_no_gpu(polymat::to(
        Kind::GPU_DENSE,
        &Dense::identity(2).into()
    )));
    assert!(is_no_gpu(polymat::to(
        Kind::GPU_DENSE,
        &Csr::identity(2).into()
    )));
    assert!(is_no_gpu(polymat::zeros(2, 2, Out::GpuDense)));
    assert!(is_no_gpu(polymat::identity(2, Out::GpuDense)));
    let i: Data = Dense::identity(3).into();
    assert!(is_no_gpu(polymat::add(&i, &i, Out::GpuDense)));
    assert!(is_no_gpu(polymat::expm(&i, Out::GpuDense)));
    assert!(matches!(gpu::device_name(), Err(Error::NoGpu { .. })));
    assert!(matches!(gpu::synchronize(), Err(Error::NoGpu { .. })));
    assert!(matches!(
        gpu::release_cached_memory(),
        Err(Error::NoGpu { .. })
    ));
    // CPU work is untouched.
    assert_eq!(polymat::add(&i, &i, Out::Auto).unwrap().kind(), Kind::DENSE);
}
