//! Large sparse operators stay sparse: the Krylov path of `eigs` (against dense `eigs` and
//! scipy's `eigsh`), `expm_multiply` (against `expm(t·a)·v` and scipy's `expm_multiply`), the
//! iterative `solve`, exact-zero compaction of sparse results, and `Error::TooLarge` instead of
//! a dense allocation the machine cannot hold.
//!
//! Reference values: `tests/fixtures/spin_chain.txt`, written by `tests/fixtures/spin_chain.py`
//! (scipy 1.17.1).

mod common;

use common::{Rng, random_ref};
use polymat::ops::{EigOrder, EigsMethod, EigsOptions, Iterative, Preconditioner, SolveMethod};
use polymat::{Csr, Data, Dense, Error, Kind, Out, c64};

fn r(x: f64) -> c64 {
    c64::new(x, 0.0)
}

fn pauli(name: char) -> Data {
    let (o, i) = (r(1.0), c64::new(0.0, 1.0));
    let (rows, cols, vals) = match name {
        'x' => ([0, 1], [1, 0], [o, o]),
        'y' => ([0, 1], [1, 0], [-i, i]),
        _ => ([0, 1], [0, 1], [o, -o]),
    };
    Csr::from_triplets((2, 2), &rows, &cols, &vals)
        .unwrap()
        .into()
}

/// `p` on site `i` of `n`, as scipy's fixture builds it (a kron chain).
fn site(p: &Data, i: usize, n: usize) -> Data {
    let mut out = polymat::identity(1, Out::Csr).unwrap();
    for k in 0..n {
        let f = if k == i {
            p.clone()
        } else {
            polymat::identity(2, Out::Csr).unwrap()
        };
        out = polymat::kron(&out, &f, Out::Csr).unwrap();
    }
    out
}

/// The fixture's XXZ chain: Σ J(XX + YY) + Δ ZZ on neighbours, J = 1, Δ = 0.7, from Pauli
/// products (so X⊗X + Y⊗Y cancels on |00⟩↔|11⟩ and must leave no stored zeros).
fn xxz(n: usize) -> Data {
    let dim = 1 << n;
    let mut h = polymat::zeros(dim, dim, Out::Csr).unwrap();
    for i in 0..n - 1 {
        for (p, c) in [('x', 1.0), ('y', 1.0), ('z', 0.7)] {
            let p = pauli(p);
            let term = polymat::matmul(&site(&p, i, n), &site(&p, i + 1, n), Out::Csr).unwrap();
            h = polymat::add_scaled(&h, &term, r(c), Out::Csr).unwrap();
        }
    }
    h
}

fn start(dim: usize) -> Data {
    let v = Dense::from_fn(dim, 1, |k, _| {
        c64::new((0.1 * k as f64).cos(), (0.37 * k as f64).sin())
    });
    let norm = polymat::ops::norm::l2(&v.clone().into()).unwrap();
    polymat::mul(&v.into(), r(1.0 / norm), Out::Auto).unwrap()
}

struct Fixture {
    nnz: usize,
    eigs: Vec<f64>,
    z0: f64,
    phi: Vec<c64>,
}

fn fixture(n: usize) -> Fixture {
    let text = include_str!("fixtures/spin_chain.txt");
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with(&format!("n {n} ")));
    let head = lines.next().expect("fixture for n");
    let nums = |l: &str| -> Vec<f64> {
        l.split_whitespace()
            .skip(1)
            .map(|x| x.parse().unwrap())
            .collect()
    };
    let nnz = head.split_whitespace().nth(3).unwrap().parse().unwrap();
    let eigs = nums(lines.next().unwrap());
    let z0 = nums(lines.next().unwrap())[0];
    let p = nums(lines.next().unwrap());
    let phi = p.chunks(2).map(|c| c64::new(c[0], c[1])).collect();
    Fixture { nnz, eigs, z0, phi }
}

fn lowest(h: &Data, k: usize) -> Vec<f64> {
    let o = EigsOptions::default().count(k).vectors(false);
    polymat::eigs(h, o)
        .unwrap()
        .values
        .iter()
        .map(|v| v.re)
        .collect()
}

#[test]
fn sparse_results_store_no_exact_zeros() {
    let h = xxz(8);
    assert_eq!(h.downcast_ref::<Csr>().unwrap().nnz(), 1152);
    let z = site(&pauli('z'), 0, 8);
    let hz = polymat::matmul(&h, &z, Out::Csr).unwrap();
    let zh = polymat::matmul(&z, &h, Out::Csr).unwrap();
    let c = polymat::sub(&hz, &zh, Out::Csr).unwrap();
    assert_eq!(c.downcast_ref::<Csr>().unwrap().nnz(), 128);
    // Values unchanged: the commutator equals the dense one.
    let cd = polymat::sub(
        &polymat::to(Kind::DENSE, &hz).unwrap(),
        &polymat::to(Kind::DENSE, &zh).unwrap(),
        Out::Dense,
    )
    .unwrap();
    assert!(polymat::isequal(&c, &cd, 1e-14, 0.0).unwrap());
    // a − a has nothing stored; kron and multiply drop exact zeros too.
    assert_eq!(
        format!("{:#}", polymat::sub(&h, &h, Out::Csr).unwrap()),
        "Csr(256×256, nnz=0)"
    );
    let zero_entry = Csr::from_raw((1, 2), vec![0, 2], vec![0, 1], vec![r(0.0), r(1.0)]).unwrap();
    let k = polymat::kron(&zero_entry.clone().into(), &pauli('x'), Out::Csr).unwrap();
    assert_eq!(k.downcast_ref::<Csr>().unwrap().nnz(), 2);
    let m = polymat::multiply(&zero_entry.clone().into(), &zero_entry.into(), Out::Csr).unwrap();
    assert_eq!(m.downcast_ref::<Csr>().unwrap().nnz(), 1);
}

#[test]
fn krylov_eigs_match_the_dense_path() {
    for n in [8, 10] {
        let h = xxz(n);
        let krylov = EigsOptions::default()
            .count(4)
            .vectors(true)
            .method(EigsMethod::Krylov);
        let e = polymat::eigs(&h, krylov).unwrap();
        let dense = polymat::eigs(
            &polymat::to(Kind::DENSE, &h).unwrap(),
            EigsOptions::default().count(4).vectors(false),
        )
        .unwrap();
        for (a, b) in e.values.iter().zip(&dense.values) {
            assert!((a - b).norm() < 1e-8, "n = {n}: {a} vs {b}");
        }
        // Eigenvectors: H·v = λ·v.
        let v = e.vectors.unwrap();
        for (j, lam) in e.values.iter().enumerate() {
            let vj: Data = Dense::from_fn(1 << n, 1, |i, _| v.get(i, j)).into();
            let hv = polymat::matmul(&h, &vj, Out::Dense).unwrap();
            let lv = polymat::mul(&vj, *lam, Out::Dense).unwrap();
            let res = polymat::ops::norm::l2(&polymat::sub(&hv, &lv, Out::Dense).unwrap()).unwrap();
            assert!(res < 1e-8, "n = {n}: residual {res}");
        }
    }
}

#[test]
fn krylov_eigs_match_scipy_eigsh() {
    for n in [12, 14, 16] {
        let f = fixture(n);
        let h = xxz(n);
        assert_eq!(h.downcast_ref::<Csr>().unwrap().nnz(), f.nnz);
        let got = lowest(&h, 4);
        for (a, b) in got.iter().zip(&f.eigs) {
            assert!((a - b).abs() < 1e-8, "n = {n}: {a} vs scipy {b}");
        }
    }
}

#[test]
fn high_end_general_matrices_and_shift_invert() {
    let mut rng = Rng::new(7);
    let n = 600;
    let a: Data = Csr::from_rows(&random_ref(&mut rng, n, n, 0.01))
        .unwrap()
        .into();
    let dense = polymat::to(Kind::DENSE, &a).unwrap();
    let all = polymat::eigs(
        &dense,
        EigsOptions::default()
            .vectors(false)
            .hermitian(false)
            .order(EigOrder::High),
    )
    .unwrap();
    let high = polymat::eigs(
        &a,
        EigsOptions::default()
            .count(3)
            .vectors(false)
            .order(EigOrder::High),
    )
    .unwrap();
    for (x, y) in high.values.iter().zip(&all.values) {
        assert!((x - y).norm() < 1e-8, "{x} vs {y}");
    }
    // Shift-invert: the 3 eigenvalues nearest sigma.
    let sigma = c64::new(0.3, 0.1);
    let mut near = all.values.clone();
    near.sort_by(|x, y| (x - sigma).norm().total_cmp(&(y - sigma).norm()));
    let si = polymat::eigs(
        &a,
        EigsOptions::default().count(3).vectors(false).sigma(sigma),
    )
    .unwrap();
    for v in &si.values {
        assert!(
            near[..3].iter().any(|w| (v - w).norm() < 1e-8),
            "{v} is not among the nearest {:?}",
            &near[..3]
        );
    }
}

#[test]
fn expm_multiply_matches_expm_times_v() {
    let mut rng = Rng::new(11);
    for (n, k, density) in [(1, 1, 1.0), (7, 1, 0.5), (30, 3, 0.2), (50, 1, 1.0)] {
        let a_ref = random_ref(&mut rng, n, n, density);
        let v_ref = random_ref(&mut rng, n, k, 1.0);
        for t in [c64::new(0.7, 0.0), c64::new(0.0, -1.3), c64::new(-0.4, 0.9)] {
            for kind in [Kind::CSR, Kind::DENSE] {
                let a = common::make(&a_ref, kind);
                let v = common::make(&v_ref, Kind::DENSE);
                let ta = polymat::mul(&a, t, Out::Dense).unwrap();
                let want =
                    polymat::matmul(&polymat::expm(&ta, Out::Dense).unwrap(), &v, Out::Dense)
                        .unwrap();
                let got = polymat::expm_multiply(&a, &v, t, Out::Auto).unwrap();
                assert_eq!(got.kind(), Kind::DENSE);
                assert!(
                    polymat::isequal(&got, &want, 1e-10, 1e-10).unwrap(),
                    "n = {n}, k = {k}, t = {t}, {kind}"
                );
            }
        }
    }
    // t = 0 and an empty block.
    let a: Data = Csr::identity(3).into();
    let v: Data = Dense::from_fn(3, 1, |i, _| r(i as f64)).into();
    let same = polymat::expm_multiply(&a, &v, r(0.0), Out::Auto).unwrap();
    assert!(polymat::isequal(&same, &v, 0.0, 0.0).unwrap());
    assert!(matches!(
        polymat::expm_multiply(&a, &Dense::zeros(2, 1).into(), r(1.0), Out::Auto),
        Err(Error::Shape { .. })
    ));
}

#[test]
fn expm_multiply_matches_scipy_on_the_chain() {
    let n = 14;
    let f = fixture(n);
    let h = xxz(n);
    let psi = start(1 << n);
    let phi = polymat::expm_multiply(&h, &psi, c64::new(0.0, -0.5), Out::Auto).unwrap();
    let d = phi.downcast_ref::<Dense>().unwrap();
    for (idx, want) in [0, 1, (1 << n) / 3, (1 << n) - 1].iter().zip(&f.phi) {
        assert!((d.get(*idx, 0) - want).norm() < 1e-10, "phi[{idx}]");
    }
    let z0 = polymat::expect(&site(&pauli('z'), 0, n), &phi).unwrap().re;
    assert!((z0 - f.z0).abs() < 1e-10, "{z0} vs scipy {}", f.z0);
}

/// GMRES with one pass of modified Gram–Schmidt on hard nonnormal systems: the Grcar matrix
/// (eigenvalues far from its pseudospectrum) and a bidiagonal one with a graded diagonal
/// (from 1 to 10⁻⁴), full GMRES (restart n, where lost orthogonality would show
/// first) and restarted; the true residual meets the tolerance and x agrees with LU.
#[test]
fn gmres_solves_nonnormal_systems_to_the_tolerance() {
    let n = 120;
    let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
    let mut push = |i: usize, j: usize, v: c64| {
        rows.push(i);
        cols.push(j);
        vals.push(v);
    };
    for i in 0..n {
        push(i, i, r(1.0));
        if i > 0 {
            push(i, i - 1, r(-1.0));
        }
        for k in 1..=3 {
            if i + k < n {
                push(i, i + k, r(1.0));
            }
        }
    }
    let grcar: Data = Csr::from_triplets((n, n), &rows, &cols, &vals)
        .unwrap()
        .into();
    let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
    for i in 0..n {
        rows.push(i);
        cols.push(i);
        let d = |i: usize| 10f64.powf(-4.0 * i as f64 / (n - 1) as f64);
        vals.push(c64::new(d(i), 0.1 * d(i)));
        if i + 1 < n {
            rows.push(i);
            cols.push(i + 1);
            vals.push(r(0.7 * d(i + 1)));
        }
    }
    let graded: Data = Csr::from_triplets((n, n), &rows, &cols, &vals)
        .unwrap()
        .into();
    let b: Data = Dense::from_fn(n, 1, |i, _| c64::new((0.3 * i as f64).sin(), 1.0)).into();
    for (name, a) in [("grcar", &grcar), ("graded", &graded)] {
        let lu = polymat::solve(a, &b, SolveMethod::Lu, Out::Dense).unwrap();
        for restart in [n, 40] {
            let tol = 1e-10;
            // GMRES(40) on the graded matrix needs about 19n products to reach 1e-10, and
            // where within 18n–21n depends on the rounding of every norm and dot: room enough.
            let it = Iterative::default()
                .tol(tol)
                .restart(restart)
                .max_iter(40 * n);
            let x = polymat::solve(a, &b, SolveMethod::Gmres(it), Out::Dense).unwrap();
            let ax = polymat::matmul(a, &x, Out::Dense).unwrap();
            let res = polymat::sub(&b, &ax, Out::Dense).unwrap();
            let (rn, bn) = (
                polymat::ops::norm::l2(&res).unwrap(),
                polymat::ops::norm::l2(&b).unwrap(),
            );
            assert!(rn <= tol * bn, "{name} restart {restart}: residual {rn:e}");
            assert!(
                polymat::isequal(&x, &lu, 1e-3, 1e-3).unwrap(),
                "{name} restart {restart}"
            );
        }
    }
}

/// One unknown with complex values: every iterative method on Dense and Csr, with and without
/// a preconditioner (the Krylov dots conjugate a 1 × 1 vector as they do any ket; GMRES
/// diverged before that).
#[test]
fn iterative_solves_of_one_complex_unknown() {
    let a = Dense::from_fn(1, 1, |_, _| c64::new(2.0, 1.0));
    let b: Data = Dense::from_fn(1, 1, |_, _| c64::new(0.3, -1.7)).into();
    let want = c64::new(0.3, -1.7) / c64::new(2.0, 1.0);
    let it = Iterative::default().tol(1e-12);
    for kind in [Kind::DENSE, Kind::CSR] {
        let ak = polymat::to(kind, &a.clone().into()).unwrap();
        let pre = Preconditioner::jacobi(&ak).unwrap();
        for m in [
            SolveMethod::Gmres(it.clone()),
            SolveMethod::Gmres(it.clone().preconditioner(pre.clone())),
            SolveMethod::Bicgstab(it.clone()),
            SolveMethod::Cg(it.clone()),
        ] {
            let x = polymat::solve(&ak, &b, m.clone(), Out::Dense).unwrap();
            let got = x.downcast_ref::<Dense>().unwrap().get(0, 0);
            assert!(
                (got - want).norm() <= 1e-12,
                "{m:?} on {kind}: {got} {want}"
            );
        }
    }
}

#[test]
fn iterative_solves_match_lu() {
    let mut rng = Rng::new(3);
    let n = 200;
    // Diagonally dominant general matrix, and a Hermitian positive definite one.
    let mut g = random_ref(&mut rng, n, n, 0.05);
    for (i, row) in g.iter_mut().enumerate() {
        row[i] += r(8.0);
    }
    let g: Data = Csr::from_rows(&g).unwrap().into();
    let hpd = polymat::add_scaled(
        &polymat::matmul(&polymat::adjoint(&g, Out::Csr).unwrap(), &g, Out::Csr).unwrap(),
        &polymat::identity(n, Out::Csr).unwrap(),
        r(1.0),
        Out::Csr,
    )
    .unwrap();
    let b: Data = Dense::from_fn(n, 2, |i, j| c64::new(i as f64 + 1.0, j as f64)).into();
    let it = Iterative::default().tol(1e-12);
    for (a, methods) in [
        (
            &g,
            vec![
                SolveMethod::Bicgstab(it.clone()),
                SolveMethod::Gmres(it.clone()),
            ],
        ),
        (
            &hpd,
            vec![
                SolveMethod::Cg(it.clone()),
                SolveMethod::Gmres(it.clone().restart(5)),
            ],
        ),
    ] {
        let lu = polymat::solve(a, &b, SolveMethod::Lu, Out::Dense).unwrap();
        for m in methods {
            for kind in [Kind::CSR, Kind::DENSE] {
                let ak = polymat::to(kind, a).unwrap();
                let x = polymat::solve(&ak, &b, m.clone(), Out::Auto).unwrap();
                assert!(
                    polymat::isequal(&x, &lu, 1e-9, 1e-9).unwrap(),
                    "{m:?} on {kind}"
                );
            }
        }
    }
    // A preconditioner, and non-convergence naming the residual.
    let pre = Preconditioner::jacobi(&g).unwrap();
    let x = polymat::solve(
        &g,
        &b,
        SolveMethod::Gmres(it.clone().preconditioner(pre)),
        Out::Dense,
    )
    .unwrap();
    let lu = polymat::solve(&g, &b, SolveMethod::Lu, Out::Dense).unwrap();
    assert!(polymat::isequal(&x, &lu, 1e-9, 1e-9).unwrap());
    let err =
        polymat::solve(&g, &b, SolveMethod::Cg(it.clone().max_iter(1)), Out::Dense).unwrap_err();
    assert!(
        matches!(&err, Error::Numerical { reason, .. } if reason.contains("residual")),
        "{err}"
    );
    let err = polymat::solve(&g, &b, SolveMethod::Gmres(it.tol(f64::NAN)), Out::Dense).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
}

#[test]
fn dense_results_past_the_limit_are_errors() {
    let big: Data = Csr::identity(1_000_000).into();
    let err = polymat::to(Kind::DENSE, &big).unwrap_err();
    assert!(matches!(err, Error::TooLarge { .. }), "{err}");
    assert!(err.to_string().contains("1000000×1000000"), "{err}");
    // Every densifying path refuses: kernels that run on Dense copies (`expm` of a connected
    // operator: a hopping chain), Dense outputs, eigs without a count.
    let chain = polymat::ops::diag(
        vec![vec![r(1.0); 999_999]; 2],
        vec![-1, 1],
        (1_000_000, 1_000_000),
        Out::Csr,
    )
    .unwrap();
    let err = polymat::expm(&chain, Out::Auto).unwrap_err();
    assert!(matches!(err, Error::TooLarge { .. }), "{err}");
    assert!(matches!(
        polymat::add(&big, &big, Out::Dense),
        Err(Error::TooLarge { .. })
    ));
    let err = polymat::eigs(&big, EigsOptions::default()).unwrap_err();
    assert!(matches!(err, Error::TooLarge { .. }), "{err}");
    assert!(err.to_string().contains("EigsOptions::count"), "{err}");
    assert!(matches!(
        polymat::identity(1_000_000, Out::Dense),
        Err(Error::TooLarge { .. })
    ));
    // The sparse product is formed (10⁶ entries), its conversion to a 10⁶ × 10⁶ Dense refused.
    let i3: Data = Csr::identity(1_000).into();
    assert!(matches!(
        polymat::kron(&i3, &i3, Out::Dense),
        Err(Error::TooLarge { .. })
    ));
    // A large Csr works sparsely: a few eigenvalues of a 2·10⁵ × 2·10⁵ operator with two low
    // eigenvalues well separated from the rest (as a ground state and a gap are).
    let n = 200_000;
    let diag: Data = polymat::ops::diag(
        vec![
            (0..n)
                .map(|i| {
                    r(if i < 2 {
                        i as f64
                    } else {
                        10.0 + 1e-5 * i as f64
                    })
                })
                .collect(),
        ],
        vec![0],
        (n, n),
        Out::Csr,
    )
    .unwrap();
    let e = lowest(&diag, 2);
    assert!(
        (e[0] - 0.0).abs() < 1e-8 && (e[1] - 1.0).abs() < 1e-8,
        "{e:?}"
    );
}

/// A sparse kernel whose result is converted to Dense is not run when that Dense cannot be
/// made: the error names the operation (the conversion afterwards would name "to Dense"), and
/// a dispatcher of one's own with a result shape skips its kernel likewise.
#[test]
fn dense_outputs_past_the_limit_are_refused_before_the_kernel() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    type Call<'a> = Box<dyn Fn() -> polymat::Result<Data> + 'a>;
    let big: Data = Csr::identity(1 << 20).into();
    // A basis ket of 2^20 and its bra, three stored entries in all.
    let ket: Data = Csr::from_triplets((1 << 20, 1), &[7], &[0], &[r(1.0)])
        .unwrap()
        .into();
    let bra = polymat::adjoint(&ket, Out::Csr).unwrap();
    let calls: [(&str, Call); 18] = [
        (
            "matmul",
            Box::new(|| polymat::matmul(&big, &big, Out::Dense)),
        ),
        (
            "matmul_dag",
            Box::new(|| polymat::matmul_dag(&big, &big, Out::Dense)),
        ),
        ("add", Box::new(|| polymat::add(&big, &big, Out::Dense))),
        (
            "multiply",
            Box::new(|| polymat::multiply(&big, &big, Out::Dense)),
        ),
        ("adjoint", Box::new(|| polymat::adjoint(&big, Out::Dense))),
        ("neg", Box::new(|| polymat::neg(&big, Out::Dense))),
        ("pow", Box::new(|| polymat::pow(&big, 3, Out::Dense))),
        (
            "kron",
            Box::new(|| polymat::kron(&big, &pauli('x'), Out::Dense)),
        ),
        (
            "tidyup",
            Box::new(|| polymat::tidyup(&big, 1e-12, Out::Dense)),
        ),
        (
            "reshape",
            Box::new(|| polymat::reshape(&big, (1 << 19, 1 << 21), Out::Dense)),
        ),
        (
            "block_extract",
            Box::new(|| polymat::block_extract(&big, (0..1 << 19, 0..1 << 20), Out::Dense)),
        ),
        (
            "permute_dimensions",
            Box::new(|| {
                let s = polymat::ops::permute::Subsystems {
                    dims: vec![2; 20],
                    order: (0..20).rev().collect(),
                };
                polymat::ops::PERMUTE_DIMENSIONS.call(&[&big], Out::Dense, &s)
            }),
        ),
        (
            "block_overwrite",
            Box::new(|| polymat::block_overwrite(&big, &pauli('x'), (4, 6), Out::Dense)),
        ),
        (
            "ptrace",
            Box::new(|| {
                let p = polymat::ops::Ptrace {
                    dims: vec![2; 20],
                    keep: (1..20).collect(),
                };
                polymat::ptrace(&big, &p, Out::Dense)
            }),
        ),
        (
            "column_stack",
            Box::new(|| polymat::column_stack(&big, Out::Dense)),
        ),
        (
            "matmul_outer",
            Box::new(|| polymat::matmul_outer(&ket, &bra, Out::Dense)),
        ),
        ("project", Box::new(|| polymat::project(&ket, Out::Dense))),
        (
            "expm_multiply",
            Box::new(|| polymat::expm_multiply(&big, &big, r(0.5), Out::Dense)),
        ),
    ];
    for (op, call) in calls {
        match call() {
            Err(Error::TooLarge { op: named, .. }) => assert_eq!(named, op),
            other => panic!("{op}: {:?}", other.map(|d| d.shape())),
        }
    }
    // The same shapes as Csr are computed.
    assert_eq!(
        polymat::kron(&big, &pauli('x'), Out::Auto).unwrap().shape(),
        (1 << 21, 1 << 21)
    );

    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let build = |shape: bool| {
        let b =
            polymat::Dispatcher::<()>::builder("twice", 1).unary("twice_csr", |a: &Csr, _: &()| {
                RUNS.fetch_add(1, Ordering::SeqCst);
                polymat::ops::scale::mul_csr(a, r(2.0))
            });
        if shape {
            b.result_shape(|args, _| Some(args[0].shape())).build()
        } else {
            b.build()
        }
        .unwrap()
    };
    let before = RUNS.load(Ordering::SeqCst);
    let e = build(true).call(&[&big], Out::Dense, &()).unwrap_err();
    assert!(
        matches!(e, Error::TooLarge { ref op, .. } if op == "twice"),
        "{e}"
    );
    assert_eq!(RUNS.load(Ordering::SeqCst), before, "the kernel ran");
    // Without a result shape, the kernel runs and the conversion refuses.
    let e = build(false).call(&[&big], Out::Dense, &()).unwrap_err();
    assert!(
        matches!(e, Error::TooLarge { ref op, .. } if op != "twice"),
        "{e}"
    );
    assert_eq!(RUNS.load(Ordering::SeqCst), before + 1);
    // Sparse out: the kernel runs.
    let y = build(true).call(&[&big], Out::Csr, &()).unwrap();
    assert_eq!(y.shape(), (1 << 20, 1 << 20));
}

/// A small dense operand next to a large Csr one never densifies the Csr one: a bra times
/// an operator of 2¹⁷ dimensions (whose dense copy, 275 GB, no machine here has), a·b† both
/// ways, Kronecker products with a 2 × 2 dense factor and a dense block written into it. Each
/// against the same operation with the dense operand made sparse first. And `expect` of a Dia
/// observable on a Dia state.
#[test]
fn mixed_kind_calls_keep_a_large_operator_sparse() {
    let n: usize = 1 << 17;
    let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
    for i in 0..n {
        for j in i.saturating_sub(1)..(i + 2).min(n) {
            rows.push(i);
            cols.push(j);
            vals.push(c64::new(
                (i + 2 * j) as f64 / n as f64,
                (i as f64 - j as f64) / 3.0,
            ));
        }
    }
    let h: Data = Csr::from_triplets((n, n), &rows, &cols, &vals)
        .unwrap()
        .into();
    let bra: Data = Dense::from_fn(1, n, |_, j| c64::new((j as f64 * 0.01).cos(), 0.5)).into();
    let small: Data = Dense::from_fn(2, 2, |i, j| c64::new(1.0 + i as f64, j as f64)).into();
    let sparse = |d: &Data| polymat::to(Kind::CSR, d).unwrap();
    let same = |what: &str, got: polymat::Result<Data>, kind: Kind, want: Data| {
        let got = got.unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(got.kind(), kind, "{what}");
        assert!(polymat::isequal(&got, &want, 1e-12, 0.0).unwrap(), "{what}");
    };
    // bra·H = (Hᵀ·braᵀ)ᵀ through the Csr·Dense kernel.
    let via_transpose = polymat::transpose(
        &polymat::matmul(
            &polymat::transpose(&h, Out::Csr).unwrap(),
            &polymat::transpose(&bra, Out::Dense).unwrap(),
            Out::Dense,
        )
        .unwrap(),
        Out::Dense,
    )
    .unwrap();
    same(
        "bra·H",
        polymat::matmul(&bra, &h, Out::Auto),
        Kind::DENSE,
        via_transpose,
    );
    let h_dag = polymat::adjoint(&h, Out::Csr).unwrap();
    same(
        "bra·H†",
        polymat::matmul_dag(&bra, &h, Out::Auto),
        Kind::DENSE,
        polymat::matmul(&bra, &h_dag, Out::Dense).unwrap(),
    );
    let ket = polymat::adjoint(&bra, Out::Dense).unwrap();
    same(
        "H·bra†",
        polymat::matmul_dag(&h, &bra, Out::Auto),
        Kind::DENSE,
        polymat::matmul(&h, &ket, Out::Dense).unwrap(),
    );
    let s = sparse(&small);
    for (what, got, want) in [
        (
            "D⊗H",
            polymat::kron(&small, &h, Out::Auto),
            polymat::kron(&s, &h, Out::Csr),
        ),
        (
            "H⊗D",
            polymat::kron(&h, &small, Out::Auto),
            polymat::kron(&h, &s, Out::Csr),
        ),
        (
            "Dᵀ⊗H",
            polymat::kron_transpose(&small, &h, Out::Auto),
            polymat::kron_transpose(&s, &h, Out::Csr),
        ),
        (
            "block",
            polymat::block_overwrite(&h, &small, (7, 9), Out::Auto),
            polymat::block_overwrite(&h, &s, (7, 9), Out::Csr),
        ),
    ] {
        same(what, got, Kind::CSR, want.unwrap());
    }
    // A Dia observable on a Dia state ρ goes through Csr, never through a dense ρ.
    let hd = polymat::to(Kind::DIA, &h).unwrap();
    let (got, want) = (polymat::expect(&hd, &hd), polymat::expect(&h, &h).unwrap());
    assert!((got.unwrap() - want).norm() <= 1e-12 * want.norm().max(1.0));
}

/// `a·b†` of Csr operands with 10⁹ columns: nothing of the size of the columns is allocated
/// (the adjoint of `b` as Csr would need 10⁹ + 1 row pointers), and the overlap of two wide
/// bras, and of a few-row operator with a bra, are what the stored entries give.
#[test]
fn matmul_dag_of_wide_csr_operands_stays_sparse() {
    let n: usize = 1_000_000_000;
    let v = |re: f64, im: f64| c64::new(re, im);
    let bra = |cols: &[usize], vals: &[c64]| -> Data {
        Csr::from_triplets((1, n), &vec![0; cols.len()], cols, vals)
            .unwrap()
            .into()
    };
    let a = bra(
        &[0, 12_345, n - 1],
        &[v(1.0, 1.0), v(2.0, 0.0), v(0.0, -3.0)],
    );
    let b = bra(
        &[12_345, 777, n - 1],
        &[v(0.0, 1.0), v(5.0, 0.0), v(2.0, 2.0)],
    );
    let p = polymat::matmul_dag(&a, &b, Out::Auto).unwrap();
    assert_eq!((p.kind(), p.shape()), (Kind::CSR, (1, 1)));
    // 2·conj(i) + (−3i)·conj(2 + 2i) = −2i + (−3i)(2 − 2i) = −2i − 6i − 6
    let want = v(-6.0, -8.0);
    let got = p.downcast_ref::<Csr>().unwrap().get(0, 0);
    assert!((got - want).norm() < 1e-14, "{got}");
    // An operator of a few rows against the same bra: one column of results.
    let rows = Csr::from_triplets(
        (3, n),
        &[0, 1, 1, 2],
        &[777, 12_345, n - 1, 5],
        &[v(1.0, 0.0), v(1.0, 0.0), v(0.0, 1.0), v(9.0, 0.0)],
    )
    .unwrap()
    .into();
    let q = polymat::matmul_dag(&rows, &b, Out::Auto).unwrap();
    let q = q.downcast_ref::<Csr>().unwrap();
    assert_eq!(q.shape(), (3, 1));
    assert_eq!(q.get(0, 0), v(5.0, 0.0));
    // conj(i) + i·conj(2 + 2i) = −i + 2i + 2
    assert_eq!(q.get(1, 0), v(2.0, 1.0));
    assert_eq!(q.nnz(), 2, "row 2 meets nothing of b");
}

/// Sparse results that need more memory than the machine has left are `Error::TooLarge`
/// before anything is written. Linux grants such reservations and kills the process when the
/// pages are written, so before the check `Csr::try_identity(10⁹)` on a 24 GiB machine was
/// killed by the OOM killer instead of returning its error. Sizes are relative to what this
/// machine has available now; each case needs at least a third more than that.
#[test]
fn sparse_results_past_the_memory_available_are_errors() {
    let Some(avail) = polymat::engine::available_memory() else {
        return; // nothing to compare with off Linux
    };
    let avail = usize::try_from(avail).unwrap_or(usize::MAX);
    let too_large = |what: &str, r: polymat::Result<Data>| match r {
        Err(Error::TooLarge { bytes, .. }) => assert!(bytes > avail as u128, "{what}: {bytes}"),
        Err(e) => panic!("{what}: {e}"),
        Ok(d) => panic!("{what}: Ok with shape {:?}", d.shape()),
    };
    // Each of the three arrays fits on its own (the values, the largest, need two thirds of
    // what is available), together they need 4/3: only the check of their sum refuses.
    let n = avail / 24;
    too_large("identity", Csr::try_identity(n).map(Data::from));
    too_large("identity, Out::Csr", polymat::identity(n, Out::Csr));
    // Row pointers alone: an empty Csr and a transpose of one with a single row.
    too_large("zeros", Csr::try_zeros(avail / 6, 1).map(Data::from));
    let wide = Data::from(Csr::try_zeros(1, avail / 6).unwrap());
    too_large("transpose", polymat::transpose(&wide, Out::Csr));
    too_large("adjoint", polymat::adjoint(&wide, Out::Csr));
    // Triplets with a huge row count, read from a Matrix Market header and built directly.
    let header = format!(
        "%%MatrixMarket matrix coordinate real general\n{} 1 1\n1 1 1\n",
        avail / 6
    );
    too_large(
        "mtx",
        polymat::io::read_matrix_market_from(header.as_bytes()),
    );
    let t = Csr::from_triplets((avail / 6, 1), &[0], &[0], &[r(1.0)]);
    too_large("from_triplets", t.map(Data::from));
    // A Kronecker product of two identities whose result needs 4/3 of the memory.
    let s = (n as f64).sqrt() as usize + 1;
    let i = polymat::identity(s, Out::Csr).unwrap();
    too_large("kron", polymat::kron(&i, &i, Out::Csr));
    // An outer product of two vectors of 10⁶ entries: 10¹² entries (24 TB). The serial
    // kernel refuses it by its multiply-adds; the parallel one counts the result's entries
    // first, and stops once they pass the memory available (before, it counted all 10¹²,
    // minutes of work, and only then was refused).
    let big = 1_000_000;
    let ones = vec![r(1.0); big];
    let all: Vec<usize> = (0..big).collect();
    let column = Data::from(Csr::from_triplets((big, 1), &all, &vec![0; big], &ones).unwrap());
    let row = Data::from(Csr::from_triplets((1, big), &vec![0; big], &all, &ones).unwrap());
    let started = std::time::Instant::now();
    match polymat::matmul(&column, &row, Out::Auto) {
        Err(Error::TooLarge { bytes, shape, .. }) => {
            assert_eq!(shape, (big, big));
            // At least what fitted when the count stopped (the memory available then).
            assert!(bytes > avail as u128 / 2, "{bytes}");
        }
        other => panic!("outer product: {:?}", other.map(|d| d.shape())),
    }
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
    // The columns of an s × s identity as s separate s × 1 Csr: each column's s + 1 row
    // pointers are small, all of them together need 4/3 of the memory (the process was
    // OOM-killed before the check of their sum).
    let s = ((avail / 6) as f64).sqrt() as usize + 1;
    match polymat::split_columns(&polymat::identity(s, Out::Csr).unwrap()) {
        Err(Error::TooLarge { bytes, .. }) => assert!(bytes > avail as u128, "{bytes}"),
        other => panic!("split_columns: {:?}", other.map(|v| v.len())),
    }
    // What fits still works.
    assert_eq!(Csr::try_identity(1 << 20).unwrap().nnz(), 1 << 20);
    assert_eq!(
        polymat::split_columns(&polymat::identity(1000, Out::Csr).unwrap())
            .unwrap()
            .len(),
        1000
    );
}

/// `expm` of a sparse operator whose graph falls apart into small connected components (a
/// diagonal one, local operators on a large space) stays sparse: 2²⁰ dimensions, where the
/// dense path would need 16 TB. The exponential of `−i t (σz₃ + σx₇)` is
/// `exp(−i t σz₃)·exp(−i t σx₇)` (they commute): in row `i`, `e^{∓it} cos t` on the
/// diagonal and `−i e^{∓it} sin t` at column `i ^ bit 7` (qubit 0 the most significant).
#[test]
fn expm_of_local_operators_stays_sparse() {
    let n = 20;
    let dim = 1usize << n;
    let t = 0.37;
    let h = polymat::add(
        &site(&pauli('z'), 3, n),
        &site(&pauli('x'), 7, n),
        Out::Auto,
    )
    .unwrap();
    let h = polymat::mul(&h, c64::new(0.0, -t), Out::Auto).unwrap();
    let u = polymat::expm(&h, Out::Auto).unwrap();
    let u = u.downcast_ref::<Csr>().expect("a Csr result");
    assert_eq!(u.shape(), (dim, dim));
    assert_eq!(u.nnz(), 2 * dim);
    let (z, x) = (1usize << (n - 1 - 3), 1usize << (n - 1 - 7));
    for i in (0..dim).step_by(997).chain([0, dim - 1]) {
        let phase = c64::new(0.0, if i & z == 0 { -t } else { t }).exp();
        let want_diag = phase * t.cos();
        let want_off = phase * c64::new(0.0, -t.sin());
        assert!((u.get(i, i) - want_diag).norm() < 1e-14, "({i}, {i})");
        assert!(
            (u.get(i, i ^ x) - want_off).norm() < 1e-14,
            "({i}, {})",
            i ^ x
        );
    }
    // A diagonal operator of 10⁶ rows: exp entry by entry.
    let d: Data = polymat::ops::diag(
        vec![
            (0..1_000_000)
                .map(|k| c64::new(-1e-6 * k as f64, 0.5))
                .collect(),
        ],
        vec![0],
        (1_000_000, 1_000_000),
        Out::Csr,
    )
    .unwrap();
    let e = polymat::expm(&d, Out::Auto).unwrap();
    let e = e.downcast_ref::<Csr>().expect("a Csr result");
    assert_eq!(e.nnz(), 1_000_000);
    for k in [0usize, 1, 499_999, 999_999] {
        let want = c64::new(-1e-6 * k as f64, 0.5).exp();
        assert!((e.get(k, k) - want).norm() < 1e-15, "{k}");
    }
}

/// `inv` of a sparse operator whose graph falls apart into small components stays sparse:
/// `3 + σx₇` on 20 qubits has blocks [[3, 1], [1, 3]] with inverse [[3, −1], [−1, 3]] / 8. A
/// diagonal one is inverted entry by entry, without overflow at 10²⁰⁰ or 10⁻²⁰⁰ (a naive
/// complex division squares them), and a zero row is an error naming it.
#[test]
fn inv_of_local_operators_stays_sparse() {
    let n = 20;
    let dim = 1usize << n;
    let three: Data = Csr::scaled_identity(dim, r(3.0)).into();
    let a = polymat::add(&three, &site(&pauli('x'), 7, n), Out::Auto).unwrap();
    let x = polymat::inv(&a, Out::Auto).unwrap();
    let x = x.downcast_ref::<Csr>().expect("a Csr result");
    assert_eq!(x.nnz(), 2 * dim);
    let flip = 1usize << (n - 1 - 7);
    for i in (0..dim).step_by(1009).chain([0, dim - 1]) {
        assert!((x.get(i, i) - r(3.0 / 8.0)).norm() < 1e-15, "({i}, {i})");
        assert!(
            (x.get(i, i ^ flip) - r(-1.0 / 8.0)).norm() < 1e-15,
            "({i}, ..)"
        );
    }

    let m = 1_000_000;
    let value = |k: usize| match k {
        0 => c64::new(1e200, 1e199),
        1 => c64::new(0.0, -1e-200),
        _ => c64::new(k as f64, 1.0),
    };
    let d: Data =
        polymat::ops::diag(vec![(0..m).map(value).collect()], vec![0], (m, m), Out::Csr).unwrap();
    let x = polymat::inv(&d, Out::Auto).unwrap();
    let x = x.downcast_ref::<Csr>().expect("a Csr result");
    assert_eq!(x.nnz(), m);
    for k in [0usize, 1, 2, 500_000, m - 1] {
        let (got, v) = (x.get(k, k), value(k));
        // (1/v)·v = 1, checked in scaled form.
        assert!((got * v - r(1.0)).norm() < 1e-15, "{k}: {got}");
    }
    let mut entries: Vec<c64> = (0..m).map(value).collect();
    entries[777] = r(0.0);
    let singular: Data = polymat::ops::diag(vec![entries], vec![0], (m, m), Out::Csr).unwrap();
    let err = polymat::inv(&singular, Out::Auto).unwrap_err();
    assert!(matches!(err, Error::Numerical { .. }), "{err}");
    assert!(err.to_string().contains("row 777"), "{err}");
    // Singularity is judged block by block: diag(10⁻²⁰, 1) is refused whole (condition number
    // 10²⁰), each of its blocks is not.
    let skewed = Csr::from_triplets((2, 2), &[0, 1], &[0, 1], &[r(1e-20), r(1.0)]).unwrap();
    let x = polymat::inv(&skewed.clone().into(), Out::Auto).unwrap();
    assert_eq!(x.downcast_ref::<Csr>().unwrap().get(0, 0), r(1e20));
    let dense = polymat::to(Kind::DENSE, &skewed.into()).unwrap();
    assert!(polymat::inv(&dense, Out::Dense).is_err());
}

/// The adjoint and transpose of a scattered operator of 10⁶ entries on 10⁵ × 1.2·10⁵ (the
/// column-block path) against the definition: the entries with rows and columns swapped,
/// built by the triplet constructor; and the adjoint's adjoint is the operator again, array
/// for array.
#[test]
fn a_large_scattered_operator_transposes_by_its_definition() {
    let (m, n) = (100_000, 120_000);
    let mut rng = Rng::new(31);
    let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
    for i in 0..m {
        for _ in 0..10 {
            rows.push(i);
            cols.push(rng.next_u64() as usize % n);
            vals.push(rng.c());
        }
    }
    let a = Csr::from_triplets((m, n), &rows, &cols, &vals).unwrap();
    assert!(a.nnz() > 1 << 19);
    let conj: Vec<c64> = vals.iter().map(|v| v.conj()).collect();
    let want_t = Csr::from_triplets((n, m), &cols, &rows, &vals).unwrap();
    let want_h = Csr::from_triplets((n, m), &cols, &rows, &conj).unwrap();
    let a: Data = a.into();
    let t = polymat::transpose(&a, Out::Auto).unwrap();
    let h = polymat::adjoint(&a, Out::Auto).unwrap();
    assert_eq!(t.downcast_ref::<Csr>().unwrap(), &want_t);
    assert_eq!(h.downcast_ref::<Csr>().unwrap(), &want_h);
    let back = polymat::adjoint(&h, Out::Auto).unwrap();
    assert_eq!(back.downcast_ref::<Csr>(), a.downcast_ref::<Csr>());
}
