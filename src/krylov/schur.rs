//! A few eigenpairs of a large operator: Krylov–Schur restarting (Stewart 2001) of an Arnoldi
//! process with full reorthogonalisation (classical Gram–Schmidt, repeated by the
//! Daniel–Gragg–Kaufman–Stewart criterion). For a Hermitian operator the projected matrix is
//! Hermitian and the method is a thick-restart Lanczos (Wu & Simon 2000): each step takes the
//! three-term Lanczos step first, then one full reorthogonalisation pass.
//!
//! Each cycle extends the basis to `m` vectors, solves the projected m×m eigenproblem densely,
//! and keeps the `k + 2` wanted Ritz vectors (orthonormalised) plus the residual vector; the
//! Krylov decomposition `A·V = V·M + v·bᵀ` stays exact through the restart because the kept
//! vectors span an invariant subspace of the projected matrix.

use faer::{Mat, Side};

use super::watch::{self, Hook, Partial, Progress};
use super::{LinearMap, Vectors};
use crate::error::{Error, Result};
use crate::scalar::c64;
use crate::storage::{Data, Kind, alloc};

/// Restarts allowed without a 1 % fall of the worst wanted residual (see [`eigen`]); as many as
/// the default restart limit, so that only a raised limit can meet it.
const STALL: usize = 1000;

/// Which eigenvalues are wanted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Which {
    /// Smallest real part.
    SmallestReal,
    /// Largest real part.
    LargestReal,
    /// Largest modulus (the shift-invert transform).
    LargestMagnitude,
}

/// What to compute.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Request {
    pub(crate) k: usize,
    pub(crate) which: Which,
    pub(crate) hermitian: bool,
    /// Relative residual tolerance (`‖A·y − θ·y‖ ≤ tol · max(|θ|, ε^⅔)`).
    pub(crate) tol: f64,
    pub(crate) max_restarts: usize,
    /// Largest basis size.
    pub(crate) ncv: usize,
    pub(crate) vectors: bool,
}

/// The converged Ritz pairs, the wanted end first.
pub(crate) struct Ritz {
    pub(crate) values: Vec<c64>,
    pub(crate) vectors: Option<Vec<Data>>,
    /// Products with the operator.
    pub(crate) applications: usize,
    /// Krylov–Schur cycles (the first, then one per restart).
    pub(crate) cycles: usize,
}

/// Eigenvalues and eigenvectors of a small dense matrix; the vectors have unit 2-norm.
fn small_eig(h: &Mat<c64>, hermitian: bool) -> Result<(Vec<c64>, Mat<c64>)> {
    let n = h.nrows();
    let fail = |e: &dyn std::fmt::Debug| Error::Numerical {
        op: "eigs".into(),
        reason: format!("the projected eigenproblem failed: {e:?}"),
    };
    if hermitian {
        let sym = Mat::from_fn(n, n, |i, j| (h[(i, j)] + h[(j, i)].conj()) * 0.5);
        let e = sym
            .as_ref()
            .self_adjoint_eigen(Side::Lower)
            .map_err(|e| fail(&e))?;
        let s = e.S().column_vector();
        let values = (0..n).map(|i| c64::new(s[i].re, 0.0)).collect();
        Ok((values, e.U().to_owned()))
    } else {
        let e = h.as_ref().eigen().map_err(|e| fail(&e))?;
        let s = e.S().column_vector();
        let values = (0..n).map(|i| s[i]).collect();
        let mut u = e.U().to_owned();
        for j in 0..n {
            let norm = u.col(j).norm_l2();
            if norm > 0.0 {
                for i in 0..n {
                    u[(i, j)] /= c64::new(norm, 0.0);
                }
            }
        }
        Ok((values, u))
    }
}

/// Indices of `values` ordered wanted-first.
fn order(values: &[c64], which: Which) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..values.len()).collect();
    idx.sort_by(|&a, &b| {
        let (x, y) = (values[a], values[b]);
        match which {
            Which::SmallestReal => x.re.total_cmp(&y.re).then(x.im.total_cmp(&y.im)),
            Which::LargestReal => y.re.total_cmp(&x.re).then(y.im.total_cmp(&x.im)),
            Which::LargestMagnitude => y.norm().total_cmp(&x.norm()),
        }
    });
    idx
}

/// Orthogonalises `w` against `basis` by classical Gram–Schmidt, repeated once when the norm
/// drops below 1/√2 of what it was (`before`, computed here if `None`: the
/// Daniel–Gragg–Kaufman–Stewart criterion); returns the coefficients and the norm after.
///
/// A coefficient below the rounding of `w` itself (`ε·‖w‖`) is left out of the subtraction
/// (and recorded as zero, so that the decomposition stays exact): in the reorthogonalisation
/// pass of a Lanczos step most are, and the subtraction then reads only the basis vectors
/// that `w` has drifted towards.
fn orthogonalise(
    vs: &dyn Vectors,
    basis: &[Data],
    w: &mut Data,
    before: Option<f64>,
) -> Result<(Vec<c64>, f64)> {
    let before = match before {
        Some(b) => b,
        None => vs.norm(w)?,
    };
    let negligible = |c: &mut Vec<c64>, scale: f64| {
        for ci in c.iter_mut() {
            if ci.norm() <= f64::EPSILON * scale {
                *ci = c64::new(0.0, 0.0);
            }
        }
    };
    let mut h = vs.dots(basis, w)?;
    negligible(&mut h, before);
    let mut after = vs.subtract_norm(w, basis, &h)?;
    if after < std::f64::consts::FRAC_1_SQRT_2 * before {
        let mut c = vs.dots(basis, w)?;
        negligible(&mut c, after);
        after = vs.subtract_norm(w, basis, &c)?;
        for (hi, ci) in h.iter_mut().zip(c) {
            *hi += ci;
        }
    }
    Ok((h, after))
}

/// For a Hermitian operator past the first step of a cycle: the Lanczos step (against the
/// last two basis vectors, the only ones `A·v` has components along in exact arithmetic), then
/// one full pass of reorthogonalisation, repeated only by the DGKS criterion. Half the work of
/// two full passes, with the same result. Returns the coefficients and the norm after.
fn lanczos_step(vs: &dyn Vectors, basis: &[Data], w: &mut Data) -> Result<(Vec<c64>, f64)> {
    let j = basis.len();
    let recent = &basis[j - 2..];
    let local = vs.dots(recent, w)?;
    let before = vs.subtract_norm(w, recent, &local)?;
    let (mut h, after) = orthogonalise(vs, basis, w, Some(before))?;
    h[j - 2] += local[0];
    h[j - 1] += local[1];
    Ok((h, after))
}

/// The `k` eigenpairs of `op` at the `which` end.
///
/// # Errors
/// [`Error::Numerical`] naming the residual reached if the pairs do not converge within
/// `max_restarts` cycles, or on a non-finite value; [`Error::InvalidArgument`] for a request
/// the method cannot serve (`k + 2 > n`).
pub(crate) fn eigen(
    op: &dyn LinearMap,
    vs: &dyn Vectors,
    start: &Data,
    req: &Request,
    hook: Option<&Hook>,
) -> Result<Ritz> {
    const OP: &str = "eigs";
    let n = op.dim();
    let k = req.k;
    #[cfg(feature = "tracing")]
    let _span = tracing::debug_span!("eigs", n, k, ncv = req.ncv).entered();
    if k == 0 {
        return Ok(Ritz {
            values: Vec::new(),
            vectors: req.vectors.then(Vec::new),
            applications: 0,
            cycles: 0,
        });
    }
    if k + 2 > n {
        return Err(Error::argument(
            OP,
            format!("the Krylov method needs k + 2 ≤ n, got k = {k}, n = {n}"),
        ));
    }
    let m = req.ncv.clamp(k + 2, n);
    // The memory of a cycle at its largest, checked before anything is allocated (one array
    // at a time each would fit where all of them do not): m + 2 basis vectors of n entries
    // when they are Dense kets in this process's memory (other kinds keep theirs elsewhere:
    // on a GPU, across MPI ranks), and about six (m + 1) × m dense matrices (the projected
    // problem, its eigenvectors, the restart's products).
    let word = std::mem::size_of::<c64>() as u128;
    let projected = 6 * (m as u128 + 1) * m as u128 * word;
    let vectors = if start.kind() == Kind::DENSE {
        (m as u128 + 2) * n as u128 * word
    } else {
        0
    };
    alloc::check_dense(OP, (m + 1, m))?;
    alloc::check_memory(OP, (n, m), vectors + projected)?;
    // Keep the wanted pairs and two more, as ARPACK's implicit restart does in effect: a small
    // kept set leaves room for many new vectors per cycle, and each step's orthogonalisation
    // costs in proportion to the basis it runs against (measured on the XXZ chain: 230
    // products and 0.83 s at N = 16 against 1.3 s keeping half the basis).
    let keep = (k + 2).min(m - 2).max(k);
    let tol = req.tol.max(f64::EPSILON);
    let floor = f64::EPSILON.powf(2.0 / 3.0);
    let mut seed = 0x5eed_u64;

    let mut v0 = vs.copy(start)?;
    let nrm = vs.norm(&v0)?;
    if !(nrm.is_finite() && nrm > 0.0) {
        return Err(Error::argument(
            OP,
            "the start vector is zero or not finite",
        ));
    }
    vs.scale(&mut v0, c64::new(1.0 / nrm, 0.0))?;
    let mut basis: Vec<Data> = vec![v0];
    // A·V[..j] = V[..j+1]·hbar[..j+1, ..j]
    let mut hbar = alloc::zeros_mat(OP, m + 1, m)?;
    let mut l = 0;
    let mut matvecs = 0;
    let mut worst = f64::INFINITY;
    let (mut lowest, mut stalled) = (f64::INFINITY, 0);
    for cycle in 1..=req.max_restarts.max(1) {
        for j in l..m {
            let mut w = op.apply(&basis[j])?;
            matvecs += 1;
            let (h, mut beta) = if req.hermitian && j > l {
                lanczos_step(vs, &basis, &mut w)?
            } else {
                orthogonalise(vs, &basis, &mut w, None)?
            };
            for (i, hi) in h.into_iter().enumerate() {
                hbar[(i, j)] = hi;
            }
            if !beta.is_finite() {
                return Err(Error::Numerical {
                    op: OP.into(),
                    reason: "the operator produced non-finite values".into(),
                });
            }
            let scale = (0..=j).map(|i| hbar[(i, j)].norm()).fold(1.0, f64::max);
            if beta <= 1e-13 * scale {
                // An invariant subspace: continue from a fresh direction orthogonal to it (the
                // decomposition keeps a zero residual in this column).
                beta = 0.0;
                w = vs.random_like(&basis[0], seed)?;
                seed = seed.wrapping_add(1);
                let (_, r) = orthogonalise(vs, &basis, &mut w, None)?;
                if !(r.is_finite() && r > 0.0) {
                    return Err(Error::Numerical {
                        op: OP.into(),
                        reason: "cannot extend the Krylov basis".into(),
                    });
                }
                vs.scale(&mut w, c64::new(1.0 / r, 0.0))?;
            } else {
                vs.scale(&mut w, c64::new(1.0 / beta, 0.0))?;
            }
            hbar[(j + 1, j)] = c64::new(beta, 0.0);
            basis.push(w);
        }
        let h = hbar.as_ref().submatrix(0, 0, m, m).to_owned();
        let (theta, s) = small_eig(&h, req.hermitian)?;
        let idx = order(&theta, req.which);
        // Residual of the Ritz pair (θ, V·s): |hbar[m, :]·s|.
        let residual =
            |i: usize| -> f64 { (0..m).map(|j| hbar[(m, j)] * s[(j, i)]).sum::<c64>().norm() };
        worst = 0.0;
        // The wanted pairs within the tolerance (NaN residuals are not).
        let mut done = Vec::with_capacity(k);
        for &i in &idx[..k] {
            let r = residual(i);
            let bound = tol * theta[i].norm().max(floor);
            worst = worst.max(r / theta[i].norm().max(floor));
            if r <= bound {
                done.push(i);
            }
        }
        let converged = done.len() == k;
        let progress = Progress {
            op: OP,
            iteration: cycle,
            applications: matvecs,
            converged: done.len(),
            wanted: k,
            residual: worst,
            elapsed: watch::elapsed(hook),
        };
        #[cfg(feature = "tracing")]
        tracing::debug!(
            restart = cycle,
            applications = matvecs,
            converged = done.len(),
            residual = worst,
            "eigs: a Krylov–Schur cycle"
        );
        let stop = hook.is_some_and(|h| h.report(&progress));
        // A cycle that ends without convergence must, within every `STALL` cycles, bring the
        // worst wanted residual down by 1 %; otherwise the tolerance is out of reach (a
        // `max_iter` of `usize::MAX` would run forever).
        if !converged {
            if worst < 0.99 * lowest {
                (lowest, stalled) = (worst, 0);
            } else {
                stalled += 1;
                if stalled >= STALL {
                    return Err(Error::Numerical {
                        op: OP.into(),
                        reason: format!(
                            "{k} eigenpairs stagnated: the worst relative residual has not \
                             fallen by 1 % in {STALL} restarts (lowest {lowest:.3e}, tolerance \
                             {tol:.1e}, {matvecs} operator applications)"
                        ),
                    });
                }
            }
        }
        if converged {
            let values = idx[..k].iter().map(|&i| theta[i]).collect();
            let vectors = if req.vectors {
                let sel = Mat::from_fn(m, k, |j, c| s[(j, idx[c])]);
                let mut out = vs.combine(&basis[..m], sel.as_ref())?;
                for y in &mut out {
                    let nrm = vs.norm(y)?;
                    if nrm > 0.0 {
                        vs.scale(y, c64::new(1.0 / nrm, 0.0))?;
                    }
                }
                Some(out)
            } else {
                None
            };
            return Ok(Ritz {
                values,
                vectors,
                applications: matvecs,
                cycles: cycle,
            });
        }
        if stop && let Some(h) = hook {
            // The converged pairs, and one unit vector in the span of the wanted Ritz vectors
            // to resume from (a start vector rich in every wanted direction).
            let sel = Mat::from_fn(m, done.len(), |j, c| s[(j, done[c])]);
            let mut vectors = if req.vectors && !done.is_empty() {
                vs.combine(&basis[..m], sel.as_ref())?
            } else {
                Vec::new()
            };
            for y in &mut vectors {
                let nrm = vs.norm(y)?;
                if nrm > 0.0 {
                    vs.scale(y, c64::new(1.0 / nrm, 0.0))?;
                }
            }
            let sum = Mat::from_fn(m, 1, |j, _| idx[..k].iter().map(|&i| s[(j, i)]).sum());
            let mut resume = vs.combine(&basis[..m], sum.as_ref())?.pop();
            if let Some(v) = resume.as_mut() {
                let nrm = vs.norm(v)?;
                if nrm > 0.0 && nrm.is_finite() {
                    vs.scale(v, c64::new(1.0 / nrm, 0.0))?;
                } else {
                    resume = None;
                }
            }
            return Err(h.stop(Partial {
                progress,
                values: done.iter().map(|&i| theta[i]).collect(),
                vectors,
                resume,
            }));
        }
        // Restart on the `keep` wanted Ritz vectors, orthonormalised.
        let sel = Mat::from_fn(m, keep, |i, c| s[(i, idx[c])]);
        let q = if req.hermitian {
            sel
        } else {
            sel.as_ref().qr().compute_thin_Q()
        };
        let hq = &h * &q;
        let mq = q.adjoint() * &hq;
        let mut next = vs.combine(&basis[..m], q.as_ref())?;
        next.push(basis.swap_remove(m));
        let mut fresh = alloc::zeros_mat(OP, m + 1, m)?;
        for c in 0..keep {
            for r in 0..keep {
                fresh[(r, c)] = mq[(r, c)];
            }
            fresh[(keep, c)] = (0..m).map(|j| hbar[(m, j)] * q[(j, c)]).sum();
        }
        basis = next;
        hbar = fresh;
        l = keep;
    }
    Err(Error::Numerical {
        op: OP.into(),
        reason: format!(
            "{k} eigenpairs did not converge in {} restarts ({matvecs} operator applications); \
             worst relative residual {worst:.3e} for tolerance {tol:.1e}",
            req.max_restarts
        ),
    })
}
