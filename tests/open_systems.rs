//! The lazy kinds against QuTiP: the superoperator constructors and Kronecker sums formed as
//! Csr equal QuTiP's `spre`, `spost`, `sprepost`, `lindblad_dissipator`, `liouvillian` and
//! `tensor` entry for entry; the dissipative XXZ chain evolved with the lazy Liouvillian equals
//! `mesolve` to 1e-8; steady states equal `steadystate`; the Kronecker-sum XXZ chain's lowest
//! eigenvalues equal scipy's.
//!
//! Reference values: `tests/fixtures/open_chain.txt`, written by
//! `tests/fixtures/open_chain.py` (QuTiP 5.3.1), and `tests/fixtures/spin_chain.txt`.

#[path = "../examples/common/open_chain.rs"]
mod chain;

use polymat::ops::{EigsOptions, SteadyState};
use polymat::{Csr, Data, Dense, Kind, KronSum, Out, SuperOp, c64};

const FIXTURE: &str = include_str!("fixtures/open_chain.txt");

/// A record `tag name rows cols (i j re im)*` of the fixture as a Dense.
fn record(tag: &str, name: &str) -> Dense {
    let line = FIXTURE
        .lines()
        .find(|l| l.starts_with(&format!("{tag} {name} ")))
        .unwrap_or_else(|| panic!("no record {tag} {name}"));
    let f: Vec<&str> = line.split_whitespace().collect();
    let (rows, cols): (usize, usize) = (f[2].parse().unwrap(), f[3].parse().unwrap());
    let mut d = Dense::zeros(rows, cols);
    for e in f[4..].chunks(4) {
        let (i, j): (usize, usize) = (e[0].parse().unwrap(), e[1].parse().unwrap());
        d.col_mut(j)[i] = c64::new(e[2].parse().unwrap(), e[3].parse().unwrap());
    }
    d
}

fn input(name: &str) -> Data {
    record("in", name).into()
}

/// Every entry of `got` (any kind, formed as Dense) equals QuTiP's to 1e-12 relative.
fn assert_matches(got: &Data, name: &str) {
    let want = record("out", name);
    let got = polymat::to(Kind::DENSE, got).unwrap();
    let got = got.as_dense().unwrap();
    assert_eq!(got.shape(), want.shape(), "{name}");
    let scale = (0..want.shape().1)
        .flat_map(|j| want.col(j).to_vec())
        .fold(0.0f64, |m, z| m.max(z.norm()));
    for j in 0..want.shape().1 {
        for i in 0..want.shape().0 {
            let (g, w) = (got.get(i, j), want.get(i, j));
            assert!(
                (g - w).norm() <= 1e-12 * scale,
                "{name} ({i}, {j}): {g} vs QuTiP {w}"
            );
        }
    }
}

/// The lazy superoperator, and its Csr form, against QuTiP's stored one.
fn assert_super(got: &Data, name: &str) {
    assert_eq!(got.kind(), Kind::SUPER_OP, "{name}");
    let csr = polymat::to(Kind::CSR, got).unwrap();
    assert_eq!(csr.kind(), Kind::CSR);
    assert_matches(&csr, name);
    // Applied to a vector, lazily and stored.
    let n = got.shape().1;
    let x: Data = Dense::from_fn(n, 2, |i, j| {
        c64::new((i as f64 * 0.3).sin(), j as f64 - 0.5)
    })
    .into();
    let lazy = polymat::matmul(got, &x, Out::Auto).unwrap();
    let stored = polymat::matmul(&csr, &x, Out::Auto).unwrap();
    assert!(
        polymat::isequal(&lazy, &stored, 1e-12, 1e-12).unwrap(),
        "{name}"
    );
}

#[test]
fn superoperator_constructors_equal_qutip() {
    let (a, b, c, d, h) = (input("a"), input("b"), input("c"), input("d"), input("h"));
    assert_super(&polymat::spre(&a).unwrap(), "spre_a");
    assert_super(&polymat::spost(&a).unwrap(), "spost_a");
    assert_super(&polymat::sprepost(&a, &b).unwrap(), "sprepost_a_b");
    assert_super(
        &polymat::lindblad_dissipator(&c, None).unwrap(),
        "dissipator_c",
    );
    assert_super(
        &polymat::lindblad_dissipator(&c, Some(&d)).unwrap(),
        "dissipator_c_d",
    );
    assert_super(
        &polymat::liouvillian(Some(&h), &[c.clone(), d.clone()]).unwrap(),
        "liouvillian_h_c_d",
    );
    assert_super(
        &polymat::liouvillian(Some(&h), &[]).unwrap(),
        "liouvillian_h",
    );
    assert_super(
        &polymat::liouvillian(None, std::slice::from_ref(&c)).unwrap(),
        "liouvillian_none_c",
    );
    // Csr factors give the same as Dense ones.
    let cs = polymat::to(Kind::CSR, &c).unwrap();
    let hs = polymat::to(Kind::CSR, &h).unwrap();
    assert_super(
        &polymat::liouvillian(Some(&hs), &[cs, d]).unwrap(),
        "liouvillian_h_c_d",
    );
}

/// The 2 × 3 × 3 Kronecker sum of the fixture.
fn kronsum_1() -> KronSum {
    let (x, e, a, b, c, d) = (
        input("x"),
        input("e"),
        input("a"),
        input("b"),
        input("c"),
        input("d"),
    );
    KronSum::new(&[2, 3, 3])
        .unwrap()
        .with_term(c64::new(0.5, 0.0), [(0, x.clone())])
        .unwrap()
        .with_term(c64::new(1.0, -2.0), [(1, a), (2, b)])
        .unwrap()
        .with_term(c64::new(1.0, 0.0), [(0, e), (2, c)])
        .unwrap()
        .with_term(c64::new(0.0, -0.25), [(0, x), (1, d)])
        .unwrap()
}

#[test]
fn kronecker_sums_equal_qutip_tensors() {
    let one = c64::new(1.0, 0.0);
    let t: Data = KronSum::new(&[2, 3, 3])
        .unwrap()
        .with_term(one, [(0, input("x")), (1, input("a")), (2, input("b"))])
        .unwrap()
        .into();
    assert_matches(&polymat::to(Kind::CSR, &t).unwrap(), "tensor_x_a_b");
    let ks: Data = kronsum_1().into();
    assert_matches(&polymat::to(Kind::CSR, &ks).unwrap(), "kronsum_1");
    let v = input("v");
    assert_matches(&polymat::matmul(&ks, &v, Out::Auto).unwrap(), "kronsum_1_v");
    // The same as polymat's own kron / add construction.
    let id = |n| polymat::identity(n, Out::Csr).unwrap();
    let k3 = |p: &Data, q: &Data, r: &Data| {
        polymat::kron(&polymat::kron(p, q, Out::Csr).unwrap(), r, Out::Csr).unwrap()
    };
    let stored = k3(&input("x"), &input("a"), &input("b"));
    assert!(polymat::isequal(&k3(&id(2), &id(3), &id(3)), &id(18), 0.0, 0.0).unwrap());
    assert!(polymat::isequal(&polymat::to(Kind::CSR, &t).unwrap(), &stored, 1e-13, 0.0).unwrap());
}

#[test]
fn a_liouvillian_of_kronecker_sums_equals_qutip() {
    let ks: Data = kronsum_1().into();
    let one = c64::new(1.0, 0.0);
    let c1: Data = KronSum::new(&[2, 3, 3])
        .unwrap()
        .with_term(one, [(0, input("e"))])
        .unwrap()
        .into();
    let c2: Data = KronSum::new(&[2, 3, 3])
        .unwrap()
        .with_term(one, [(1, input("c"))])
        .unwrap()
        .into();
    let l = polymat::liouvillian(Some(&ks), &[c1, c2]).unwrap();
    assert_super(&l, "liouvillian_ks_xe");
    // The lazy algebra: L† and the trace, against the stored form.
    let csr = polymat::to(Kind::CSR, &l).unwrap();
    let ld = polymat::adjoint(&l, Out::Auto).unwrap();
    assert_eq!(ld.kind(), Kind::SUPER_OP);
    let want = polymat::adjoint(&csr, Out::Csr).unwrap();
    assert!(polymat::isequal(&polymat::to(Kind::CSR, &ld).unwrap(), &want, 1e-12, 1e-12).unwrap());
    let (t1, t2) = (polymat::trace(&l).unwrap(), polymat::trace(&csr).unwrap());
    assert!((t1 - t2).norm() < 1e-10 * (1.0 + t2.norm()));
}

/// ⟨Z₀⟩ at t = 0, 0.25, 0.5, 0.75, 1 from QuTiP's `mesolve`.
fn mesolve_z0(n: usize) -> Vec<f64> {
    let line = FIXTURE
        .lines()
        .find(|l| l.starts_with(&format!("chain {n} ")))
        .unwrap_or_else(|| panic!("no chain {n}"));
    line.split_whitespace()
        .skip(4)
        .map(|x| x.parse().unwrap())
        .collect()
}

/// The dissipative chain with the lazy Liouvillian: ⟨Z₀⟩(t) equals `mesolve` to 1e-8.
#[test]
fn the_dissipative_chain_evolves_as_mesolve() {
    for n in [4, 6, 8, 10] {
        let want = mesolve_z0(n);
        let l = chain::liouvillian(n).unwrap();
        assert_eq!(l.kind(), Kind::SUPER_OP);
        let z0 = chain::z0_pre(n).unwrap();
        let mut rho = chain::rho0(n).unwrap();
        for (k, w) in want.iter().enumerate() {
            if k > 0 {
                rho = chain::step(&l, &rho, 0.25).unwrap();
            }
            let z = chain::z0_of(&z0, &rho).unwrap();
            assert!(
                (z - w).abs() < 1e-8,
                "N = {n}, t = {}: {z} vs {w}",
                0.25 * k as f64
            );
        }
        // The trace stays 1.
        let tr = polymat::trace_oper_ket(&rho).unwrap();
        assert!(
            (tr - c64::new(1.0, 0.0)).norm() < 1e-10,
            "N = {n}: Tr ρ = {tr}"
        );
    }
}

fn steady_z0(tag: &str, n: usize) -> f64 {
    let line = FIXTURE
        .lines()
        .find(|l| l.starts_with(&format!("steady {tag} {n} ")))
        .unwrap_or_else(|| panic!("no steady {tag} {n}"));
    line.split_whitespace().nth(3).unwrap().parse().unwrap()
}

/// The pumped chain's collapse operators: decay and √0.05·σ⁺ on every site.
fn pumped(n: usize) -> Vec<Data> {
    let sp = Csr::from_triplets((2, 2), &[0], &[1], &[c64::new(0.05f64.sqrt(), 0.0)])
        .unwrap()
        .into();
    let mut c = chain::collapse_ops(n).unwrap();
    for k in 0..n {
        let op = KronSum::new(&vec![2; n])
            .unwrap()
            .with_term(c64::new(1.0, 0.0), [(k, Data::clone(&sp))])
            .unwrap();
        c.push(op.into());
    }
    c
}

#[test]
fn steady_states_equal_qutip() {
    for (tag, n) in [("decay", 4), ("decay", 6), ("pumped", 4), ("pumped", 6)] {
        let h: Data = chain::hamiltonian(n).unwrap().into();
        let c = if tag == "decay" {
            chain::collapse_ops(n).unwrap()
        } else {
            pumped(n)
        };
        let l = polymat::liouvillian(Some(&h), &c).unwrap();
        let rho = polymat::steadystate(&l, &SteadyState::default()).unwrap();
        let z = polymat::expect(&chain::z0(n).unwrap(), &rho).unwrap().re;
        let want = steady_z0(tag, n);
        assert!((z - want).abs() < 1e-8, "{tag} N = {n}: {z} vs {want}");
        if n == 4 {
            assert_matches(&rho, &format!("steady_{tag}_4"));
        }
    }
}

/// The closed chain as a Kronecker sum: its 4 lowest eigenvalues equal scipy's `eigsh` on the
/// stored chain (tests/fixtures/spin_chain.txt), and it never converts.
#[test]
fn the_kronecker_sum_chain_has_scipys_eigenvalues() {
    let text = include_str!("fixtures/spin_chain.txt");
    for n in [8, 10, 12] {
        let mut lines = text
            .lines()
            .skip_while(|l| !l.starts_with(&format!("n {n} ")));
        lines.next();
        let want: Vec<f64> = lines
            .next()
            .unwrap()
            .split_whitespace()
            .skip(1)
            .map(|x| x.parse().unwrap())
            .collect();
        let h: Data = chain::hamiltonian(n).unwrap().into();
        let opts = EigsOptions::default()
            .count(4)
            .hermitian(true)
            .vectors(false)
            .method(polymat::ops::EigsMethod::Krylov);
        let got = polymat::with_implicit_conversions(polymat::ImplicitConversions::Deny, || {
            polymat::eigs(&h, opts)
        })
        .unwrap();
        for (g, w) in got.values.iter().zip(&want) {
            assert!(
                (g.re - w).abs() < 1e-8 * w.abs().max(1.0),
                "N = {n}: {g} vs {w}"
            );
        }
        // Hermitian from its pieces, without forming it.
        assert!(polymat::isherm(&h, 1e-12).unwrap());
    }
}

/// `SuperOp` algebra: sums and scalings stay lazy and equal the stored results.
#[test]
fn superoperator_algebra_stays_lazy() {
    let (a, b) = (input("a"), input("b"));
    let s = polymat::sprepost(&a, &b).unwrap();
    let t = polymat::spre(&b).unwrap();
    let sum = polymat::add_scaled(&s, &t, c64::new(0.5, 1.0), Out::Auto).unwrap();
    let prod = polymat::matmul(&s, &t, Out::Auto).unwrap();
    let neg = polymat::neg(&s, Out::Auto).unwrap();
    for x in [&sum, &prod, &neg] {
        assert_eq!(x.kind(), Kind::SUPER_OP);
        assert!(x.downcast_ref::<SuperOp>().is_some());
    }
    let (ss, ts) = (
        polymat::to(Kind::CSR, &s).unwrap(),
        polymat::to(Kind::CSR, &t).unwrap(),
    );
    let want_sum = polymat::add_scaled(&ss, &ts, c64::new(0.5, 1.0), Out::Csr).unwrap();
    let want_prod = polymat::matmul(&ss, &ts, Out::Csr).unwrap();
    for (got, want) in [(&sum, &want_sum), (&prod, &want_prod)] {
        let got = polymat::to(Kind::CSR, got).unwrap();
        assert!(polymat::isequal(&got, want, 1e-12, 1e-12).unwrap());
    }
}

/// A seeded complex matrix with a few exact zeros, as Csr.
fn random_op(d: usize, seed: u64) -> Data {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    let m = Dense::from_fn(d, d, |i, j| {
        let z = c64::new(next(), next());
        if (i * 3 + j + seed as usize).is_multiple_of(4) {
            c64::new(0.0, 0.0)
        } else {
            z
        }
    });
    polymat::to(Kind::CSR, &m.into()).unwrap()
}

/// A Kronecker sum of one- and two-site terms (far-apart sites too) and, for even seeds, an
/// identity term.
fn random_sum(dims: &[usize], terms: usize, seed: u64) -> KronSum {
    let mut k = KronSum::new(dims).unwrap();
    let m = dims.len();
    for t in 0..terms {
        let s0 = (t * 7 + seed as usize) % m;
        let s1 = (t * 5 + 3 + seed as usize) % m;
        let mut f = vec![(s0, random_op(dims[s0], seed * 31 + t as u64))];
        if s1 != s0 && t % 3 != 0 {
            f.push((s1, random_op(dims[s1], seed * 17 + t as u64)));
        }
        k.push_term(c64::new(0.5 + t as f64 * 0.25, -0.125 * t as f64), f)
            .unwrap();
    }
    if seed.is_multiple_of(2) {
        k.push_term(c64::new(0.75, 0.5), []).unwrap();
    }
    k
}

fn close(got: &Data, want: &Data, what: &str) {
    assert!(
        polymat::isequal(got, want, 1e-12, 1e-12).unwrap(),
        "{what}: {got:#} differs from {want:#}"
    );
}

/// Products, traces, norms and the lazy algebra of Kronecker sums equal those of their
/// stored forms: mixed dimensions, terms on one and two sites, an identity term.
#[test]
fn kronecker_sums_match_their_stored_forms() {
    for (dims, terms) in [
        (vec![2, 3, 2], 5),
        (vec![2; 9], 12),
        (vec![3, 1, 4, 2, 2], 9),
        (vec![5], 2),
        (vec![2; 16], 20),
    ] {
        for seed in 0..3u64 {
            let k: Data = random_sum(&dims, terms, seed).into();
            let s = polymat::to(Kind::CSR, &k).unwrap();
            let n = k.shape().0;
            let x: Data = Dense::from_fn(n, 2, |i, j| {
                c64::new((i as f64 * 0.7 + j as f64).sin(), (i as f64 * 0.3).cos())
            })
            .into();
            let what = format!("dims {dims:?} seed {seed}");
            close(
                &polymat::matmul(&k, &x, Out::Auto).unwrap(),
                &polymat::matmul(&s, &x, Out::Auto).unwrap(),
                &what,
            );
            let bra = polymat::adjoint(&x, Out::Auto).unwrap();
            close(
                &polymat::matmul(&bra, &k, Out::Auto).unwrap(),
                &polymat::matmul(&bra, &s, Out::Auto).unwrap(),
                &what,
            );
            let (tk, ts) = (polymat::trace(&k).unwrap(), polymat::trace(&s).unwrap());
            assert!((tk - ts).norm() <= 1e-10 * (1.0 + ts.norm()), "{what}");
            for (lazy, stored) in [
                (
                    polymat::ops::norm::frobenius(&k).unwrap(),
                    polymat::ops::norm::frobenius(&s).unwrap(),
                ),
                (
                    polymat::ops::norm::one(&k).unwrap(),
                    polymat::ops::norm::one(&s).unwrap(),
                ),
            ] {
                assert!(
                    (lazy - stored).abs() <= 1e-9 * (1.0 + stored),
                    "{what}: {lazy} {stored}"
                );
            }
            if n > 4096 {
                // The lazy algebra is exercised on the smaller spaces.
                continue;
            }
            for (lazy, stored) in [
                (
                    polymat::adjoint(&k, Out::Auto).unwrap(),
                    polymat::adjoint(&s, Out::Auto).unwrap(),
                ),
                (
                    polymat::transpose(&k, Out::Auto).unwrap(),
                    polymat::transpose(&s, Out::Auto).unwrap(),
                ),
                (
                    polymat::conj(&k, Out::Auto).unwrap(),
                    polymat::conj(&s, Out::Auto).unwrap(),
                ),
                (
                    polymat::mul(&k, c64::new(0.5, -2.0), Out::Auto).unwrap(),
                    polymat::mul(&s, c64::new(0.5, -2.0), Out::Auto).unwrap(),
                ),
                (
                    polymat::add_scaled(&k, &k, c64::new(0.0, 1.0), Out::Auto).unwrap(),
                    polymat::add_scaled(&s, &s, c64::new(0.0, 1.0), Out::Auto).unwrap(),
                ),
                (
                    polymat::matmul(&k, &k, Out::Auto).unwrap(),
                    polymat::matmul(&s, &s, Out::Auto).unwrap(),
                ),
            ] {
                assert_eq!(lazy.kind(), Kind::KRON_SUM, "{what}");
                close(&polymat::to(Kind::CSR, &lazy).unwrap(), &stored, &what);
            }
            let herm =
                polymat::add(&k, &polymat::adjoint(&k, Out::Auto).unwrap(), Out::Auto).unwrap();
            assert!(polymat::isherm(&herm, 1e-12).unwrap(), "{what}");
        }
    }
}

/// Superoperators with stored factors (Csr and Dense, the wide path of the plan), a
/// rectangular one (through the dispatchers' products) and their algebra equal the stored
/// forms; `N` decay channels merge into `N + 2` terms.
#[test]
fn superoperators_with_stored_factors_match_their_stored_forms() {
    for n in [1usize, 3, 6, 20] {
        let (h, c1, c2) = (
            random_op(n, 1),
            polymat::to(Kind::DENSE, &random_op(n, 2)).unwrap(),
            random_op(n, 3),
        );
        let l = polymat::liouvillian(Some(&h), &[c1.clone(), c2.clone()]).unwrap();
        let l2 = polymat::add(&l, &polymat::sprepost(&c1, &h).unwrap(), Out::Auto).unwrap();
        for s in [&l, &l2] {
            let stored = polymat::to(Kind::CSR, s).unwrap();
            let x: Data = Dense::from_fn(n * n, 2, |i, j| {
                c64::new((i as f64 * 0.7 + j as f64).sin(), 0.25)
            })
            .into();
            close(
                &polymat::matmul(s, &x, Out::Auto).unwrap(),
                &polymat::matmul(&stored, &x, Out::Auto).unwrap(),
                "apply",
            );
            let (t1, t2) = (polymat::trace(s).unwrap(), polymat::trace(&stored).unwrap());
            assert!((t1 - t2).norm() <= 1e-10 * (1.0 + t2.norm()));
            let (f1, f2) = (
                polymat::ops::norm::frobenius(s).unwrap(),
                polymat::ops::norm::frobenius(&stored).unwrap(),
            );
            assert!((f1 - f2).abs() <= 1e-9 * (1.0 + f2));
            let (o1, o2) = (
                polymat::ops::norm::one(s).unwrap(),
                polymat::ops::norm::one(&stored).unwrap(),
            );
            assert!((o1 - o2).abs() <= 1e-9 * (1.0 + o2));
            for (lazy, want) in [
                (
                    polymat::transpose(s, Out::Auto).unwrap(),
                    polymat::transpose(&stored, Out::Auto).unwrap(),
                ),
                (
                    polymat::conj(s, Out::Auto).unwrap(),
                    polymat::conj(&stored, Out::Auto).unwrap(),
                ),
            ] {
                assert_eq!(lazy.kind(), Kind::SUPER_OP);
                close(&polymat::to(Kind::CSR, &lazy).unwrap(), &want, "algebra");
            }
        }
    }
    // Rectangular factors: p×q → m×r through the dispatchers.
    let (a, b) = (
        polymat::to(
            Kind::CSR,
            &Dense::from_fn(3, 2, |i, j| c64::new(i as f64 + 1.0, j as f64)).into(),
        )
        .unwrap(),
        Data::from(Dense::from_fn(4, 5, |i, j| {
            c64::new((i * j) as f64 * 0.5, 1.0)
        })),
    );
    let s = polymat::sprepost(&a, &b).unwrap();
    assert_eq!(s.shape(), (15, 8));
    let stored = polymat::to(Kind::CSR, &s).unwrap();
    let x: Data = Dense::from_fn(8, 3, |i, j| c64::new(i as f64 - j as f64, 0.5)).into();
    close(
        &polymat::matmul(&s, &x, Out::Auto).unwrap(),
        &polymat::matmul(&stored, &x, Out::Auto).unwrap(),
        "rectangular",
    );
    // Merging.
    let cs: Vec<Data> = (0..5).map(|k| random_op(4, k + 10)).collect();
    let l = polymat::liouvillian(Some(&random_op(4, 9)), &cs).unwrap();
    assert_eq!(l.downcast_ref::<SuperOp>().unwrap().terms().len(), 7);
}

/// `target_mode_matmul` equals the operator expanded to the whole space by Kronecker
/// products and a permutation of the subsystems, for targets in and out of order.
#[test]
fn target_mode_matmul_matches_the_expanded_operator() {
    use polymat::ops::{Modes, target_mode_matmul};
    let dims = vec![2, 3, 2, 2];
    for targets in [vec![1], vec![3, 0], vec![2, 1], vec![0, 1, 3]] {
        let local: usize = targets.iter().map(|&t| dims[t]).product();
        let op = polymat::to(Kind::DENSE, &random_op(local, targets.len() as u64)).unwrap();
        let opd = op.as_dense().unwrap().clone();
        let x = Dense::from_fn(24, 2, |i, j| c64::new((i as f64).sin(), j as f64 + 0.5));
        let got = target_mode_matmul(
            &op,
            &x.clone().into(),
            &Modes::new(dims.clone(), targets.clone()),
            Out::Auto,
        )
        .unwrap();
        let got = got.as_dense().unwrap();
        let strides = [12, 4, 2, 1];
        for col in 0..2 {
            for i in 0..24 {
                let digits: Vec<usize> = (0..4).map(|s| i / strides[s] % dims[s]).collect();
                let r = targets.iter().fold(0, |a, &t| a * dims[t] + digits[t]);
                let mut want = c64::new(0.0, 0.0);
                for c in 0..local {
                    let mut d = digits.clone();
                    let mut rest = c;
                    for &t in targets.iter().rev() {
                        d[t] = rest % dims[t];
                        rest /= dims[t];
                    }
                    let j: usize = (0..4).map(|s| d[s] * strides[s]).sum();
                    want += opd.get(r, c) * x.get(j, col);
                }
                assert!(
                    (got.get(i, col) - want).norm() < 1e-12,
                    "{targets:?} ({i}, {col})"
                );
            }
        }
    }
    // Bad targets are errors.
    let op: Data = Dense::identity(2).into();
    let psi: Data = Dense::zeros(8, 1).into();
    for t in [vec![3], vec![0, 0]] {
        assert!(target_mode_matmul(&op, &psi, &Modes::new(vec![2, 2, 2], t), Out::Auto).is_err());
    }
}
