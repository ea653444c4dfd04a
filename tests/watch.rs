//! Watching long computations (`eigs_with`, `solve_with`): the observer sees every restart or
//! iteration, stops the run with `Error::Stopped`, the best result reached is kept, and a
//! stopped run resumes from it (scipy's `v0` / `x0`).

#[path = "../examples/common/xxz.rs"]
mod xxz;

use std::sync::{Arc, Mutex};

use polymat::ops::{
    EigOrder, EigsMethod, EigsOptions, Flow, Iterative, Progress, SolveMethod, Watch,
};
use polymat::{Csr, Data, Dense, Error, Out, c64};

fn r(x: f64) -> c64 {
    c64::new(x, 0.0)
}

/// A non-Hermitian, diagonally dominant tridiagonal n × n system (for all three solvers,
/// CG only on its Hermitian part).
fn tridiagonal(n: usize, hermitian: bool) -> Data {
    let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
    let up = if hermitian {
        r(-1.0)
    } else {
        c64::new(-1.0, 0.3)
    };
    for i in 0..n {
        rows.push(i);
        cols.push(i);
        vals.push(r(4.0 + (i % 5) as f64 * 0.1));
        if i + 1 < n {
            rows.extend([i, i + 1]);
            cols.extend([i + 1, i]);
            vals.extend([up, up.conj()]);
        }
    }
    Csr::from_triplets((n, n), &rows, &cols, &vals)
        .unwrap()
        .into()
}

fn residual(a: &Data, x: &Data, b: &Data) -> f64 {
    let ax = polymat::matmul(a, x, Out::Auto).unwrap();
    let d = polymat::sub(&ax, b, Out::Auto).unwrap();
    polymat::ops::norm::frobenius(&d).unwrap() / polymat::ops::norm::frobenius(b).unwrap()
}

/// A watch recording every progress report, stopping at `stop_at` (iteration count).
fn recording(stop_at: usize) -> (Watch, Arc<Mutex<Vec<Progress>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let watch = Watch::new().observe(move |p| {
        log.lock().unwrap().push(p.clone());
        if p.iteration >= stop_at {
            Flow::Stop
        } else {
            Flow::Continue
        }
    });
    (watch, seen)
}

#[test]
fn a_stopped_eigs_keeps_its_converged_pairs_and_resumes() {
    let h = xxz::xxz(12, 1.0, 0.7).unwrap();
    let opts = EigsOptions::default()
        .count(4)
        .hermitian(true)
        .order(EigOrder::Low)
        .tol(1e-12)
        .method(EigsMethod::Krylov);
    let full = polymat::eigs(&h, opts).unwrap();

    // Stop at the first restart with a converged pair (the lowest converge first here).
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let watch = Watch::new().observe(move |p: &Progress| {
        log.lock().unwrap().push(p.clone());
        if p.converged > 0 {
            Flow::Stop
        } else {
            Flow::Continue
        }
    });
    let err = polymat::eigs_with(&h, opts, &watch).unwrap_err();
    let seen = seen.lock().unwrap();
    let stops = seen.len();
    assert!(
        matches!(err, Error::Stopped { iterations, .. } if iterations == stops),
        "{err:?}"
    );
    assert_eq!(
        seen.iter().map(|p| p.iteration).collect::<Vec<_>>(),
        (1..=stops).collect::<Vec<_>>()
    );
    assert!(
        seen.windows(2)
            .all(|w| w[0].applications < w[1].applications)
    );
    assert!(seen.windows(2).all(|w| w[0].elapsed <= w[1].elapsed));
    assert!(seen.iter().all(|p| p.op == "eigs" && p.wanted == 4));

    let partial = watch.stopped().expect("the stop is kept");
    assert!(
        watch.stopped().is_none(),
        "stopped() takes the partial result"
    );
    assert_eq!(partial.progress, seen[stops - 1]);
    assert_eq!(partial.values.len(), partial.progress.converged);
    assert!((1..4).contains(&partial.values.len()), "{partial:?}");
    assert_eq!(partial.vectors.len(), partial.values.len());
    // The converged values are the lowest ones, in order.
    for (got, want) in partial.values.iter().zip(&full.values) {
        assert!((got - want).norm() < 1e-8, "{got} vs {want}");
    }
    // Converged vectors are eigenvectors.
    for (v, &lambda) in partial.vectors.iter().zip(&partial.values) {
        let hv = polymat::matmul(&h, v, Out::Auto).unwrap();
        let lv = polymat::mul(v, lambda, Out::Auto).unwrap();
        let d = polymat::sub(&hv, &lv, Out::Auto).unwrap();
        assert!(polymat::ops::norm::frobenius(&d).unwrap() < 1e-8);
    }

    // Resuming from the kept vector finishes with the full run's eigenvalues.
    let resume = partial.resume.expect("a vector to resume from");
    assert_eq!(resume.shape(), (1 << 12, 1));
    let again = polymat::eigs_with(&h, opts, &Watch::new().start(resume)).unwrap();
    for (got, want) in again.values.iter().zip(&full.values) {
        assert!((got - want).norm() < 1e-9, "{got} vs {want}");
    }
}

#[test]
fn eigs_from_an_eigenvector_converges_at_once() {
    let n = 3000;
    let idx: Vec<usize> = (0..n).collect();
    let vals: Vec<c64> = (0..n).map(|i| r(1.0 + i as f64)).collect();
    let a: Data = Csr::from_triplets((n, n), &idx, &idx, &vals)
        .unwrap()
        .into();
    // e₀ + e₁ spans the two lowest eigenvectors: the first cycle finds both exactly.
    let v0 = Dense::from_fn(n, 1, |i, _| if i < 2 { r(1.0) } else { r(0.0) });
    let (watch, seen) = recording(usize::MAX);
    let watch = watch.start(v0);
    let opts = EigsOptions::default()
        .count(2)
        .hermitian(true)
        .method(EigsMethod::Krylov);
    let e = polymat::eigs_with(&a, opts, &watch).unwrap();
    assert!((e.values[0] - r(1.0)).norm() < 1e-12 && (e.values[1] - r(2.0)).norm() < 1e-12);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "one cycle");
    // The result reports the work, as the observer saw it.
    assert_eq!((e.cycles, e.applications), (1, seen[0].applications));
}

#[test]
fn a_start_vector_of_the_wrong_shape_is_an_error() {
    let a = tridiagonal(600, true);
    let opts = EigsOptions::default().count(2).method(EigsMethod::Krylov);
    let bad = Watch::new().start(Dense::zeros(599, 1));
    let err = polymat::eigs_with(&a, opts, &bad).unwrap_err();
    assert!(matches!(err, Error::Shape { .. }), "{err:?}");
    let b: Data = Dense::from_fn(600, 1, |i, _| r(i as f64)).into();
    let err = polymat::solve_with(
        &a,
        &b,
        SolveMethod::Gmres(Iterative::default()),
        Out::Auto,
        &bad,
    )
    .unwrap_err();
    assert!(matches!(err, Error::Shape { .. }), "{err:?}");
    // A zero start cannot begin a Krylov space.
    let zero = Watch::new().start(Dense::zeros(600, 1));
    assert!(polymat::eigs_with(&a, opts, &zero).is_err());
}

#[test]
fn every_solver_stops_and_resumes_from_its_iterate() {
    let n = 2000;
    let b: Data = Dense::from_fn(n, 1, |i, _| c64::new((i as f64 * 0.3).sin(), 0.2)).into();
    let it = Iterative::default().tol(1e-12);
    for (a, method) in [
        (tridiagonal(n, true), SolveMethod::Cg(it.clone())),
        (tridiagonal(n, false), SolveMethod::Bicgstab(it.clone())),
        (
            tridiagonal(n, false),
            SolveMethod::Gmres(it.clone().restart(8)),
        ),
    ] {
        let what = format!("{method:?}");
        let (watch, seen) = recording(5);
        let err = polymat::solve_with(&a, &b, method.clone(), Out::Auto, &watch).unwrap_err();
        assert!(
            matches!(err, Error::Stopped { iterations: 5, .. }),
            "{what}: {err:?}"
        );
        {
            let seen = seen.lock().unwrap();
            assert_eq!(seen.len(), 5, "{what}");
            assert!(
                seen.iter()
                    .all(|p| p.op == "solve" && p.applications >= p.iteration)
            );
        }
        let partial = watch.stopped().unwrap();
        let x5 = partial.resume.expect("the iterate");
        let rel5 = residual(&a, &x5, &b);
        assert!(rel5 < 1.0 && rel5 > 1e-12, "{what}: {rel5}");
        // Resumed, it converges; the resumed run needs fewer products than a fresh one.
        let (fresh_watch, fresh) = recording(usize::MAX);
        let x = polymat::solve_with(&a, &b, method.clone(), Out::Auto, &fresh_watch).unwrap();
        assert!(residual(&a, &x, &b) < 1e-10, "{what}");
        let (resumed_watch, resumed) = recording(usize::MAX);
        let resumed_watch = resumed_watch.start(x5);
        let x = polymat::solve_with(&a, &b, method.clone(), Out::Auto, &resumed_watch).unwrap();
        assert!(residual(&a, &x, &b) < 1e-10, "{what}");
        let last = |v: &Arc<Mutex<Vec<Progress>>>| {
            v.lock()
                .unwrap()
                .last()
                .map_or(0, |p: &Progress| p.applications)
        };
        assert!(last(&resumed) < last(&fresh), "{what}");
    }
}

#[test]
fn an_exact_start_returns_at_once() {
    let n = 500;
    let a = tridiagonal(n, false);
    let x: Data = Dense::from_fn(n, 1, |i, _| c64::new(1.0, i as f64 * 0.01)).into();
    let b = polymat::matmul(&a, &x, Out::Auto).unwrap();
    for method in [
        SolveMethod::Bicgstab(Iterative::default()),
        SolveMethod::Gmres(Iterative::default()),
    ] {
        let (watch, seen) = recording(usize::MAX);
        let watch = watch.start(x.clone());
        let got = polymat::solve_with(&a, &b, method, Out::Auto, &watch).unwrap();
        assert!(residual(&a, &got, &b) < 1e-10);
        assert!(seen.lock().unwrap().is_empty(), "no iteration was needed");
    }
}

#[test]
fn several_right_hand_sides_start_from_their_columns() {
    let n = 300;
    let a = tridiagonal(n, false);
    let x: Data = Dense::from_fn(n, 3, |i, j| c64::new(1.0 + j as f64, i as f64 * 0.01)).into();
    let b = polymat::matmul(&a, &x, Out::Auto).unwrap();
    let (watch, seen) = recording(usize::MAX);
    let watch = watch.start(x.clone());
    let got = polymat::solve_with(
        &a,
        &b,
        SolveMethod::Gmres(Iterative::default()),
        Out::Auto,
        &watch,
    )
    .unwrap();
    assert!(polymat::isequal(&got, &x, 1e-8, 1e-8).unwrap());
    assert!(seen.lock().unwrap().is_empty());
}

#[test]
fn the_direct_paths_ignore_the_watch() {
    let a = tridiagonal(50, true);
    let (watch, seen) = recording(0);
    // Dense eigs of a small operator, LU for solve: one step each, nothing reported.
    let e = polymat::eigs_with(&a, EigsOptions::default().count(2), &watch).unwrap();
    assert_eq!(e.values.len(), 2);
    assert_eq!(
        (e.applications, e.cycles),
        (0, 0),
        "no Krylov work on the dense path"
    );
    let b: Data = Dense::from_fn(50, 1, |i, _| r(i as f64)).into();
    let x = polymat::solve_with(&a, &b, SolveMethod::Lu, Out::Auto, &watch).unwrap();
    assert!(residual(&a, &x, &b) < 1e-12);
    assert!(seen.lock().unwrap().is_empty());
    assert!(watch.stopped().is_none());
    // The watch was not left set: a plain Krylov call afterwards runs unwatched.
    let big = tridiagonal(800, true);
    let opts = EigsOptions::default()
        .count(2)
        .hermitian(true)
        .method(EigsMethod::Krylov);
    polymat::eigs(&big, opts).unwrap();
    assert!(seen.lock().unwrap().is_empty());
}

#[test]
fn a_stopped_evolution_resumes_from_the_time_it_reached() {
    for lazy in [false, true] {
        let h = if lazy {
            xxz::xxz_lazy(10, 1.0, 0.7).unwrap()
        } else {
            xxz::xxz(10, 1.0, 0.7).unwrap()
        };
        let psi: Data = Dense::from_fn(1 << 10, 1, |k, _| {
            c64::new((0.1 * k as f64).cos(), (0.37 * k as f64).sin()) * (1.0 / 32.0)
        })
        .into();
        let t = c64::new(0.0, -3.0);
        let direct = polymat::expm_multiply(&h, &psi, t, Out::Auto).unwrap();
        let (watch, seen) = recording(2);
        let err = polymat::expm_multiply_with(&h, &psi, t, Out::Auto, &watch).unwrap_err();
        assert!(
            matches!(err, Error::Stopped { iterations: 2, .. }),
            "{err:?}"
        );
        let p = watch.stopped().unwrap();
        assert!(p.progress.wanted > 2 && p.progress.applications > 0);
        assert_eq!(seen.lock().unwrap().len(), 2);
        let tau = t * (p.progress.iteration as f64 / p.progress.wanted as f64);
        let resumed = polymat::expm_multiply(&h, &p.resume.unwrap(), t - tau, Out::Auto).unwrap();
        assert!(
            polymat::isequal(&resumed, &direct, 1e-10, 0.0).unwrap(),
            "lazy = {lazy}"
        );
    }
}
