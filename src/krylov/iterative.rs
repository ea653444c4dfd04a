//! Iterative solvers of `A·x = b` for a ket `b`: CG (Hermitian positive definite A), BiCGSTAB
//! and restarted GMRES(m), all with an optional right preconditioner `M ≈ A⁻¹`, from a zero
//! initial guess or a given one, optionally watched ([`Hook`]). Convergence is `‖b − A·x‖₂ ≤ tol·‖b‖₂`, on the true residual: a method's
//! updated residual only proposes it.

use std::cell::Cell;

use super::watch::{self, Hook, Partial, Progress as Report};
use super::{LinearMap, Vectors};
use crate::error::{Error, Result};
use crate::scalar::{ONE, ZERO, c64};
use crate::storage::Data;

/// The method and its settings.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Method {
    Cg,
    Bicgstab,
    Gmres { restart: usize },
}

/// The solution.
pub(crate) struct Solution {
    pub(crate) x: Data,
}

fn not_converged(op: &str, what: &str, iterations: usize, residual: f64, tol: f64) -> Error {
    Error::Numerical {
        op: op.to_owned(),
        reason: format!(
            "{what} did not converge in {iterations} iterations: relative residual \
             {residual:.3e} > tolerance {tol:.1e}"
        ),
    }
}

fn breakdown(op: &str, what: &str, iterations: usize, residual: f64) -> Error {
    Error::Numerical {
        op: op.to_owned(),
        reason: format!(
            "{what} broke down after {iterations} iterations (relative residual \
             {residual:.3e}); the matrix may be singular or not suited to {what}"
        ),
    }
}

/// Ends a solve whose residual has stopped falling, whatever `max_iter` allows (a tolerance
/// below what rounding lets the method reach would otherwise run `max_iter` iterations, up to
/// `usize::MAX`): the lowest relative residual must drop by 1 % within every window of
/// `max(4·n, 1000)` iterations. In exact arithmetic CG and GMRES converge within n; a slowly
/// converging solve gains far more than 1 % per window.
struct Progress {
    best: f64,
    since: usize,
    window: usize,
}

impl Progress {
    fn new(n: usize) -> Progress {
        Progress {
            best: f64::INFINITY,
            since: 0,
            window: n.saturating_mul(4).max(1000),
        }
    }

    /// Records one iteration's relative residual.
    ///
    /// # Errors
    /// [`Error::Numerical`] when the window has passed without a 1 % gain.
    fn check(&mut self, what: &str, iterations: usize, rel: f64, tol: f64) -> Result<()> {
        if rel < 0.99 * self.best {
            self.best = rel;
            self.since = 0;
            return Ok(());
        }
        self.since += 1;
        if self.since < self.window {
            return Ok(());
        }
        Err(Error::Numerical {
            op: "solve".into(),
            reason: format!(
                "{what} stagnated: the relative residual has not fallen by 1 % in {} \
                 iterations (lowest {:.3e}, tolerance {tol:.1e}, {iterations} iterations \
                 in all)",
                self.window, self.best
            ),
        })
    }
}

/// `b − A·x` and its norm relative to `‖b‖`: the true residual, which a recurrence's updated
/// one can leave far behind (on an indefinite or non-Hermitian `A`, CG's steps grow and
/// cancel). A solve is only declared converged on it.
fn true_residual(
    a: &dyn LinearMap,
    vs: &dyn Vectors,
    b: &Data,
    x: &Data,
    bnorm: f64,
) -> Result<(Data, f64)> {
    let mut r = vs.copy(b)?;
    let ax = a.apply(x)?;
    vs.axpy(&mut r, -ONE, &ax)?;
    let rel = vs.norm(&r)? / bnorm;
    Ok((r, rel))
}

/// `None` when the true residual confirms convergence; else the true residual and its
/// relative norm, to restart from (BiCGSTAB's shadow residual and recurrences start afresh).
fn confirm(
    a: &dyn LinearMap,
    vs: &dyn Vectors,
    b: &Data,
    x: &Data,
    bnorm: f64,
    tol: f64,
) -> Result<Option<(Data, f64)>> {
    let (r, rel) = true_residual(a, vs, b, x, bnorm)?;
    Ok((rel > tol).then_some((r, rel)))
}

/// `M·r` with a preconditioner; `None` without one, where the methods use `r` itself (see
/// [`or`]): a copy of the vector per iteration was 4–6 % of an unpreconditioned CG solve.
fn precondition(m: Option<&dyn LinearMap>, r: &Data) -> Result<Option<Data>> {
    m.map(|m| m.apply(r)).transpose()
}

/// The preconditioned vector `z`, or `r` where there is no preconditioner.
fn or<'a>(z: &'a Option<Data>, r: &'a Data) -> &'a Data {
    z.as_ref().unwrap_or(r)
}

/// The operator, counting its products (what a watch reports).
struct Counted<'a> {
    a: &'a dyn LinearMap,
    count: Cell<usize>,
}

impl LinearMap for Counted<'_> {
    fn dim(&self) -> usize {
        self.a.dim()
    }

    fn apply(&self, x: &Data) -> Result<Data> {
        self.count.set(self.count.get() + 1);
        self.a.apply(x)
    }

    fn apply_into(&self, x: &Data, out: &mut Data) -> Result<()> {
        self.count.set(self.count.get() + 1);
        self.a.apply_into(x, out)
    }
}

/// What a solve reports to its watch, and how it stops.
struct Watched<'a> {
    hook: Option<&'a Hook>,
}

impl Watched<'_> {
    /// Reports iteration `it` at relative residual `rel`; `true` when the observer stops it.
    fn report(&self, a: &Counted<'_>, it: usize, rel: f64) -> bool {
        self.hook
            .is_some_and(|h| h.report(&self.progress(a, it, rel)))
    }

    fn progress(&self, a: &Counted<'_>, it: usize, rel: f64) -> Report {
        Report {
            op: "solve",
            iteration: it,
            applications: a.count.get(),
            converged: 0,
            wanted: 1,
            residual: rel,
            elapsed: watch::elapsed(self.hook),
        }
    }

    /// The error of a stop at iteration `it`, the iterate `x` kept to resume from.
    fn stop(&self, a: &Counted<'_>, vs: &dyn Vectors, it: usize, rel: f64, x: &Data) -> Error {
        let progress = self.progress(a, it, rel);
        match (self.hook, vs.copy(x)) {
            (Some(h), Ok(x)) => h.stop(Partial {
                progress,
                values: Vec::new(),
                vectors: Vec::new(),
                resume: Some(x),
            }),
            (_, Err(e)) => e,
            (None, Ok(_)) => Error::argument("solve", "stopped without a watch"),
        }
    }
}

/// Solves `A·x = b` from `x0` (zero when `None`; an n × 1 vector of the Krylov vectors' kind).
///
/// # Errors
/// [`Error::Numerical`] with the residual reached when it does not converge within
/// `max_iter` iterations or breaks down; [`Error::Stopped`] when `hook`'s observer stops it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn solve(
    a: &dyn LinearMap,
    vs: &dyn Vectors,
    b: &Data,
    method: Method,
    tol: f64,
    max_iter: usize,
    m: Option<&dyn LinearMap>,
    x0: Option<&Data>,
    hook: Option<&Hook>,
) -> Result<Solution> {
    #[cfg(feature = "tracing")]
    let _span = tracing::debug_span!("solve", n = a.dim(), method = ?method, tol).entered();
    let bnorm = vs.norm(b)?;
    let mut x = vs.copy(b)?;
    vs.scale(&mut x, ZERO)?;
    if bnorm == 0.0 {
        return Ok(Solution { x });
    }
    if !bnorm.is_finite() {
        return Err(Error::argument(
            "solve",
            "the right-hand side is not finite",
        ));
    }
    if let Some(x0) = x0 {
        if x0.shape() != b.shape() {
            return Err(Error::shape(
                "solve",
                &[b.shape(), x0.shape()],
                "the initial guess must have the right-hand side's shape",
            ));
        }
        x = vs.copy(x0)?;
    }
    let a = Counted {
        a,
        count: Cell::new(0),
    };
    let w = Watched { hook };
    let s = Start {
        b,
        bnorm,
        given: x0.is_some(),
    };
    match method {
        Method::Cg => cg(&a, vs, &s, x, tol, max_iter, m, &w),
        Method::Bicgstab => bicgstab(&a, vs, &s, x, tol, max_iter, m, &w),
        // A Krylov space has at most n dimensions: a longer cycle only grows the basis.
        Method::Gmres { restart } => {
            let restart = restart.clamp(1, a.dim().max(1));
            gmres(&a, vs, &s, x, tol, max_iter, restart, m, &w)
        }
    }
}

/// The right-hand side, its norm, and whether `x` starts from a given guess.
struct Start<'a> {
    b: &'a Data,
    bnorm: f64,
    given: bool,
}

impl Start<'_> {
    /// The first residual `b − A·x` (`b` itself from zero) and its relative norm.
    fn residual(&self, a: &dyn LinearMap, vs: &dyn Vectors, x: &Data) -> Result<(Data, f64)> {
        if self.given {
            true_residual(a, vs, self.b, x, self.bnorm)
        } else {
            Ok((vs.copy(self.b)?, 1.0))
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn cg(
    a: &Counted<'_>,
    vs: &dyn Vectors,
    s: &Start<'_>,
    mut x: Data,
    tol: f64,
    max_iter: usize,
    m: Option<&dyn LinearMap>,
    w: &Watched<'_>,
) -> Result<Solution> {
    let (b, bnorm) = (s.b, s.bnorm);
    let (mut r, mut rel) = s.residual(a, vs, &x)?;
    if rel <= tol {
        return Ok(Solution { x });
    }
    let mut z = precondition(m, &r)?;
    let mut p = vs.copy(or(&z, &r))?;
    let mut rz = vs.dot(&r, or(&z, &r))?;
    let mut progress = Progress::new(a.dim());
    for it in 1..=max_iter {
        let ap = a.apply(&p)?;
        let pap = vs.dot(&p, &ap)?;
        if pap.norm() == 0.0 || !pap.re.is_finite() {
            return Err(breakdown("solve", "CG", it, rel));
        }
        let alpha = rz / pap;
        vs.axpy(&mut x, alpha, &p)?;
        vs.axpy(&mut r, -alpha, &ap)?;
        rel = vs.norm(&r)? / bnorm;
        if rel <= tol {
            // Confirmed on the true residual; otherwise restart from it (residual
            // replacement): the recurrence had drifted.
            let Some(restart) = confirm(a, vs, b, &x, bnorm, tol)? else {
                return Ok(Solution { x });
            };
            (r, rel) = restart;
            progress.check("CG", it, rel, tol)?;
            z = precondition(m, &r)?;
            p = vs.copy(or(&z, &r))?;
            rz = vs.dot(&r, or(&z, &r))?;
            continue;
        }
        progress.check("CG", it, rel, tol)?;
        if w.report(a, it, rel) {
            return Err(w.stop(a, vs, it, rel, &x));
        }
        z = precondition(m, &r)?;
        let rz_new = vs.dot(&r, or(&z, &r))?;
        let beta = rz_new / rz;
        vs.scale(&mut p, beta)?;
        vs.axpy(&mut p, ONE, or(&z, &r))?;
        rz = rz_new;
    }
    Err(not_converged("solve", "CG", max_iter, rel, tol))
}

#[allow(clippy::too_many_arguments)]
fn bicgstab(
    a: &Counted<'_>,
    vs: &dyn Vectors,
    s: &Start<'_>,
    mut x: Data,
    tol: f64,
    max_iter: usize,
    m: Option<&dyn LinearMap>,
    w: &Watched<'_>,
) -> Result<Solution> {
    let (b, bnorm) = (s.b, s.bnorm);
    let (mut r, mut rel) = s.residual(a, vs, &x)?;
    if rel <= tol {
        return Ok(Solution { x });
    }
    let mut r0 = vs.copy(&r)?;
    let (mut rho, mut alpha, mut omega) = (ONE, ONE, ONE);
    let mut v = vs.copy(b)?;
    vs.scale(&mut v, ZERO)?;
    let mut p = vs.copy(&v)?;
    let mut progress = Progress::new(a.dim());
    for it in 1..=max_iter {
        let rho_new = vs.dot(&r0, &r)?;
        if rho_new.norm() == 0.0 || !rho_new.re.is_finite() {
            return Err(breakdown("solve", "BiCGSTAB", it, rel));
        }
        // p = r + β·(p − ω·v)
        let beta = (rho_new / rho) * (alpha / omega);
        vs.axpy(&mut p, -omega, &v)?;
        vs.scale(&mut p, beta)?;
        vs.axpy(&mut p, ONE, &r)?;
        let phat = precondition(m, &p)?;
        let phat = or(&phat, &p);
        v = a.apply(phat)?;
        let r0v = vs.dot(&r0, &v)?;
        if r0v.norm() == 0.0 {
            return Err(breakdown("solve", "BiCGSTAB", it, rel));
        }
        alpha = rho_new / r0v;
        // s = r − α·v (kept in r)
        vs.axpy(&mut r, -alpha, &v)?;
        vs.axpy(&mut x, alpha, phat)?;
        rel = vs.norm(&r)? / bnorm;
        // The stabilising half-step, unless the first half reached the tolerance.
        if rel > tol {
            let shat = precondition(m, &r)?;
            let t = a.apply(or(&shat, &r))?;
            let tt = vs.dot(&t, &t)?;
            if tt.norm() == 0.0 {
                return Err(breakdown("solve", "BiCGSTAB", it, rel));
            }
            omega = vs.dot(&t, &r)? / tt;
            vs.axpy(&mut x, omega, or(&shat, &r))?;
            vs.axpy(&mut r, -omega, &t)?;
            rel = vs.norm(&r)? / bnorm;
        }
        if rel <= tol {
            // Confirmed on the true residual; otherwise restart from it, the shadow residual
            // and the recurrences afresh (the updated residual had drifted).
            let Some(restart) = confirm(a, vs, b, &x, bnorm, tol)? else {
                return Ok(Solution { x });
            };
            (r, rel) = restart;
            (r0, rho, alpha, omega) = (vs.copy(&r)?, ONE, ONE, ONE);
            vs.scale(&mut v, ZERO)?;
            vs.scale(&mut p, ZERO)?;
        } else {
            if omega.norm() == 0.0 || !rel.is_finite() {
                return Err(breakdown("solve", "BiCGSTAB", it, rel));
            }
            rho = rho_new;
        }
        progress.check("BiCGSTAB", it, rel, tol)?;
        if w.report(a, it, rel) {
            return Err(w.stop(a, vs, it, rel, &x));
        }
    }
    Err(not_converged("solve", "BiCGSTAB", max_iter, rel, tol))
}

/// A Givens rotation `(c, s)` with `c` real that zeroes `b` in `[a; b]`.
fn givens(a: c64, b: c64) -> (f64, c64, c64) {
    let (na, nb) = (a.norm(), b.norm());
    if nb == 0.0 {
        return (1.0, ZERO, a);
    }
    if na == 0.0 {
        return (0.0, ONE, b);
    }
    let r = na.hypot(nb);
    let phase = a / na;
    let c = na / r;
    let s = phase * b.conj() / r;
    (c, s, phase * r)
}

#[allow(clippy::too_many_arguments)]
fn gmres(
    a: &Counted<'_>,
    vs: &dyn Vectors,
    s: &Start<'_>,
    mut x: Data,
    tol: f64,
    max_iter: usize,
    restart: usize,
    m: Option<&dyn LinearMap>,
    watched: &Watched<'_>,
) -> Result<Solution> {
    let (b, bnorm) = (s.b, s.bnorm);
    let mut total = 0;
    let mut stopping = false;
    let mut rel = 1.0;
    let mut progress = Progress::new(a.dim());
    while total < max_iter {
        // r = b − A·x
        let mut r = vs.copy(b)?;
        if total > 0 || s.given {
            let ax = a.apply(&x)?;
            vs.axpy(&mut r, -ONE, &ax)?;
        }
        let beta = vs.norm(&r)?;
        rel = beta / bnorm;
        if rel <= tol {
            break;
        }
        vs.scale(&mut r, c64::new(1.0 / beta, 0.0))?;
        let mut basis = vec![r];
        let mut h: Vec<Vec<c64>> = Vec::new(); // columns of the rotated Hessenberg matrix
        let mut rot: Vec<(f64, c64)> = Vec::new();
        let mut g = vec![c64::new(beta, 0.0)];
        let mut zs: Vec<Data> = Vec::new();
        for _ in 0..restart.min(max_iter - total) {
            total += 1;
            let z = precondition(m, &basis[basis.len() - 1])?;
            let mut w = a.apply(or(&z, &basis[basis.len() - 1]))?;
            zs.extend(z);
            let mut col = vec![ZERO; basis.len() + 1];
            // Modified Gram–Schmidt, one pass: MGS-GMRES is backward stable as it is (Paige,
            // Rozložník and Strakoš 2006: orthogonality is lost only as the residual falls),
            // as scipy's and QuTiP's GMRES run it. A second pass on every step doubled the
            // sweeps over the basis and made a 2-D Laplacian of 90 000 unknowns 1.5× slower
            // (docs/benchmarks/large_sparse.md).
            // Each subtraction and the next vector's dot in one sweep (`axpy_dot`).
            let k = basis.len();
            let mut c = vs.dot(&basis[0], &w)?;
            for i in 0..k {
                col[i] = c;
                if i + 1 < k {
                    c = vs.axpy_dot(&mut w, -col[i], &basis[i], &basis[i + 1])?;
                } else {
                    vs.axpy(&mut w, -col[i], &basis[i])?;
                }
            }
            let hn = vs.norm(&w)?;
            col[basis.len()] = c64::new(hn, 0.0);
            for (i, &(c, s)) in rot.iter().enumerate() {
                let (x0, x1) = (col[i], col[i + 1]);
                col[i] = x0 * c + s * x1;
                col[i + 1] = -s.conj() * x0 + x1 * c;
            }
            let j = rot.len();
            let (c, s, rr) = givens(col[j], col[j + 1]);
            col[j] = rr;
            col[j + 1] = ZERO;
            rot.push((c, s));
            let gj = g[j];
            g[j] = gj * c;
            g.push(-s.conj() * gj);
            h.push(col);
            rel = g[j + 1].norm() / bnorm;
            if rel <= tol || hn == 0.0 || !rel.is_finite() {
                break;
            }
            progress.check("GMRES", total, rel, tol)?;
            if watched.report(a, total, rel) {
                // Stop once this cycle's correction is in x.
                stopping = true;
                break;
            }
            vs.scale(&mut w, c64::new(1.0 / hn, 0.0))?;
            basis.push(w);
        }
        // Back substitution for y, then x += Σ yⱼ·zⱼ.
        let k = h.len();
        let mut y = vec![ZERO; k];
        for i in (0..k).rev() {
            let mut acc = g[i];
            for (j, yj) in y.iter().enumerate().skip(i + 1) {
                acc -= h[j][i] * yj;
            }
            if h[i][i].norm() == 0.0 {
                // The recurrence's estimate means nothing past a breakdown: report the true
                // residual of this cycle's start (x has not moved since).
                return Err(breakdown("solve", "GMRES", total, beta / bnorm));
            }
            y[i] = acc / h[i][i];
        }
        // The directions: the preconditioned vectors, or the basis itself without M.
        let dirs = if m.is_some() { &zs } else { &basis };
        for (yj, z) in y.iter().zip(dirs) {
            vs.axpy(&mut x, *yj, z)?;
        }
        if rel <= tol {
            // The recurrence's residual; confirm it with the true one.
            let mut r = vs.copy(b)?;
            let ax = a.apply(&x)?;
            vs.axpy(&mut r, -ONE, &ax)?;
            rel = vs.norm(&r)? / bnorm;
            if rel <= tol {
                return Ok(Solution { x });
            }
        }
        if !rel.is_finite() {
            return Err(breakdown("solve", "GMRES", total, rel));
        }
        if stopping {
            return Err(watched.stop(a, vs, total, rel, &x));
        }
    }
    if rel <= tol {
        return Ok(Solution { x });
    }
    Err(not_converged("solve", "GMRES", total, rel, tol))
}
