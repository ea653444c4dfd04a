//! Requests that cannot end by their own measure end anyway, with an error instead of running
//! forever or being killed for memory.

use polymat::ops::{EigsMethod, EigsOptions, Iterative, SolveMethod};
use polymat::{Csr, Data, Dense, Error, Out, c64};

fn r(x: f64) -> c64 {
    c64::new(x, 0.0)
}

/// Requests that cannot end by their own measure end anyway, with an error: a tolerance below
/// what rounding lets an iterative solver reach with `max_iter = usize::MAX` (it ran forever),
/// a GMRES restart length past the dimension, and a Krylov basis larger than the memory
/// (`krylov_dim = usize::MAX` asked for n + 1 dense vectors and an (n + 1) × n matrix).
#[test]
fn unreachable_requests_end_with_errors() {
    let n: usize = 200;
    let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
    for i in 0..n {
        for (j, v) in [(i.wrapping_sub(1), -1.0), (i, 2.0), (i + 1, -1.0)] {
            if j < n {
                rows.push(i);
                cols.push(j);
                vals.push(r(v));
            }
        }
    }
    let a: Data = Csr::from_triplets((n, n), &rows, &cols, &vals)
        .unwrap()
        .into();
    let b: Data = Dense::from_fn(n, 1, |i, _| c64::new((i as f64).sin(), 0.5)).into();
    let never = Iterative::default().tol(1e-300).max_iter(usize::MAX);
    for method in [
        SolveMethod::Cg(never.clone()),
        SolveMethod::Bicgstab(never.clone()),
        SolveMethod::Gmres(never.clone()),
        SolveMethod::Gmres(never.clone().restart(usize::MAX)),
    ] {
        let start = std::time::Instant::now();
        let what = format!("{method:?}");
        match polymat::solve(&a, &b, method, Out::Auto) {
            // Stagnation, or a breakdown where the recurrence's residual underflows (CG's
            // keeps falling past the true one's floor until p·A·p is zero).
            Err(Error::Numerical { reason, .. }) => {
                eprintln!("{what}: {reason}");
                assert!(
                    reason.contains("stagnated") || reason.contains("broke down"),
                    "{what}: {reason}"
                );
            }
            other => panic!("{what}: {:?}", other.map(|x| x.shape())),
        }
        assert!(start.elapsed().as_secs() < 30, "{what}");
    }
    // The same solve with a reachable tolerance still converges.
    let x = polymat::solve(&a, &b, SolveMethod::Cg(Iterative::default()), Out::Auto).unwrap();
    let ax = polymat::matmul(&a, &x, Out::Dense).unwrap();
    assert!(polymat::isequal(&ax, &b, 1e-8, 0.0).unwrap());
    // A basis of every dimension of a 2¹⁷-dimensional operator: refused before allocating.
    let big: Data = Csr::identity(1 << 17).into();
    let o = EigsOptions::default()
        .count(2)
        .krylov_dim(usize::MAX)
        .method(EigsMethod::Krylov);
    let err = polymat::eigs(&big, o).unwrap_err();
    assert!(matches!(err, Error::TooLarge { .. }), "{err}");
}

/// The Krylov eigensolver asked for machine-precision residuals on a highly non-normal matrix
/// (Grcar's: −1 below the diagonal, 1 on it and on the three above), with no limit on restarts:
/// it converges or ends with an error, and soon.
#[test]
fn krylov_eigs_end_without_a_restart_limit() {
    let n: usize = 400;
    let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
    for i in 0..n {
        if i > 0 {
            rows.push(i);
            cols.push(i - 1);
            vals.push(r(-1.0));
        }
        for j in i..(i + 4).min(n) {
            rows.push(i);
            cols.push(j);
            vals.push(r(1.0));
        }
    }
    let a: Data = Csr::from_triplets((n, n), &rows, &cols, &vals)
        .unwrap()
        .into();
    let start = std::time::Instant::now();
    let o = EigsOptions::default()
        .count(6)
        .tol(0.0)
        .max_iter(usize::MAX)
        .hermitian(false)
        .method(EigsMethod::Krylov);
    match polymat::eigs(&a, o) {
        Ok(e) => assert_eq!(e.values.len(), 6),
        Err(Error::Numerical { reason, .. }) => {
            eprintln!("{reason}");
            assert!(reason.contains("stagnated"), "{reason}");
        }
        Err(e) => panic!("{e}"),
    }
    assert!(start.elapsed().as_secs() < 60);
}

/// An iterative solve that reports success has a true residual within its tolerance. On this
/// 6 × 6 (found by fuzz seed 26, call 8 611 255: a permutation-like pattern, non-Hermitian)
/// BiCGSTAB's updated residual fell below 10⁻¹⁰ while `b − A·x` did not, and its answers on
/// Dense and on Csr differed by 2 % of the solution.
#[test]
fn iterative_success_means_a_small_true_residual() {
    let z = |re: f64, im: f64| c64::new(re, im);
    let entries = [
        (0, 0, z(-0.08775218158021647, -0.2393372182339657)),
        (0, 1, z(0.758865106173457, -0.44105273306498916)),
        (1, 1, z(0.5717469976862792, 0.23605801577309649)),
        (1, 3, z(0.21926723225788947, 0.394429204894323)),
        (1, 4, z(-0.14520519876345594, 0.82611606028686)),
        (2, 2, z(-0.7316186453071174, 0.6571618925575005)),
        (3, 3, z(0.44700399033762994, -0.5893736299682992)),
        (4, 5, z(-0.8951469157510215, -0.7323554209927559)),
        (5, 0, z(0.55335121130434, 0.6916923076389989)),
    ];
    let (rows, cols, vals): (Vec<usize>, Vec<usize>, Vec<c64>) = (
        entries.iter().map(|e| e.0).collect(),
        entries.iter().map(|e| e.1).collect(),
        entries.iter().map(|e| e.2).collect(),
    );
    let a: Data = Csr::from_triplets((6, 6), &rows, &cols, &vals)
        .unwrap()
        .into();
    let mut bv = [z(0.0, 0.0); 6];
    bv[2] = z(-0.667868799648083, -0.7170950294103244);
    bv[4] = z(0.16613128717969183, -0.404016133415954);
    let b: Data = Dense::from_fn(6, 1, |i, _| bv[i]).into();
    let bn = polymat::ops::norm::l2(&b).unwrap();
    for kind in [polymat::Kind::DENSE, polymat::Kind::CSR] {
        let ak = polymat::to(kind, &a).unwrap();
        for method in [
            SolveMethod::Bicgstab(Iterative::default().max_iter(30)),
            SolveMethod::Cg(Iterative::default().max_iter(30)),
            SolveMethod::Gmres(Iterative::default().max_iter(30).restart(3)),
        ] {
            let what = format!("{kind:?} {method:?}");
            let Ok(x) = polymat::solve(&ak, &b, method, Out::Auto) else {
                continue; // not converging is allowed; a wrong success is not
            };
            let r = polymat::sub(
                &b,
                &polymat::matmul(&a, &x, Out::Dense).unwrap(),
                Out::Dense,
            );
            let rel = polymat::ops::norm::l2(&r.unwrap()).unwrap() / bn;
            assert!(rel <= 1e-10, "{what}: true relative residual {rel:.3e}");
        }
    }
}

/// A solver that breaks down reports the residual it really reached: on the zero matrix every
/// method stops at once, with `x = 0` and a relative residual of 1 (GMRES reported its
/// recurrence's estimate past the breakdown, 0).
#[test]
fn breakdowns_report_the_true_residual() {
    let n = 16;
    let z: Data = Csr::zeros(n, n).into();
    let b: Data = Dense::from_fn(n, 1, |i, _| r(1.0 + i as f64)).into();
    for method in [
        SolveMethod::Cg(Iterative::default()),
        SolveMethod::Bicgstab(Iterative::default()),
        SolveMethod::Gmres(Iterative::default()),
    ] {
        let what = format!("{method:?}");
        match polymat::solve(&z, &b, method, Out::Auto) {
            Err(Error::Numerical { reason, .. }) => {
                assert!(
                    reason.contains("relative residual 1.000e0"),
                    "{what}: {reason}"
                )
            }
            other => panic!("{what}: {:?}", other.map(|x| x.shape())),
        }
    }
}

/// A banded Csr matrix raised to a huge power: its powers fill in, so the squarings move to
/// Dense once a quarter of the entries are stored (full sparse products cost several times
/// dense ones), and the call ends when the powers overflow instead of squaring on (it ran for
/// minutes at n = 3000 with every squaring a full Csr·Csr).
#[test]
fn powers_that_fill_in_go_dense_and_overflow_ends_them() {
    let tridiagonal = |n: usize, d: c64, off: c64| -> Data {
        let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
        for i in 0..n {
            rows.push(i);
            cols.push(i);
            vals.push(d);
            if i + 1 < n {
                rows.extend([i, i + 1]);
                cols.extend([i + 1, i]);
                vals.extend([off, off.conj()]);
            }
        }
        Csr::from_triplets((n, n), &rows, &cols, &vals)
            .unwrap()
            .into()
    };
    // The sparse-then-dense squarings agree with dense ones.
    let a = tridiagonal(64, c64::new(0.3, 0.1), c64::new(-0.2, 0.15));
    let dense = polymat::convert::to(polymat::Kind::DENSE, &a).unwrap();
    for n in [0, 1, 2, 5, 37, 200] {
        let sparse = polymat::pow(&a, n, Out::Auto).unwrap();
        assert_eq!(sparse.kind(), polymat::Kind::CSR, "pow keeps Csr for Csr");
        let want = polymat::pow(&dense, n, Out::Auto).unwrap();
        let scale = polymat::ops::norm::max(&want).unwrap().max(1e-300);
        let d = polymat::sub(&sparse, &want, Out::Dense).unwrap();
        assert!(
            polymat::ops::norm::max(&d).unwrap() <= 1e-12 * scale,
            "n = {n}"
        );
    }
    // u32::MAX: overflow ends it, within seconds.
    let a = tridiagonal(1500, r(2.0), r(-1.0));
    let start = std::time::Instant::now();
    let err = polymat::pow(&a, u32::MAX, Out::Auto).unwrap_err();
    assert!(matches!(err, Error::Numerical { .. }), "{err:?}");
    assert!(start.elapsed().as_secs() < 60, "{:?}", start.elapsed());
}
