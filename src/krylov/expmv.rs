//! `exp(t·A)·B` without forming `exp(t·A)`: the truncated-Taylor algorithm of Al-Mohy & Higham,
//! "Computing the action of the matrix exponential" (SIAM J. Sci. Comput. 33, 2011), as in
//! scipy's `expm_multiply` (same θ table, same shift by the mean of the diagonal, same early
//! termination test).
//!
//! One difference: where scipy estimates `‖Aᵖ‖₁^{1/p}` (p ≥ 2) with a block 1-norm estimator,
//! this uses the bound `‖Aᵖ‖₁^{1/p} ≤ ‖A‖₁`. The choice of degree and scaling only enters the
//! number of products, never the accuracy; it differs from scipy only when `‖t·A‖₁` exceeds
//! the bound of condition (3.13) (about 63 for one vector), and then costs more products.

use super::watch::{self, Hook, Partial, Progress};
use super::{LinearMap, Vectors};
use crate::error::{Error, Result};
use crate::scalar::c64;
use crate::storage::Data;

/// θₘ for double precision (`tol = 2⁻⁵³`): Higham's table A.3 and table 3.1 of the paper.
const THETA: [(usize, f64); 35] = [
    (1, 2.29e-16),
    (2, 2.58e-8),
    (3, 1.39e-5),
    (4, 3.40e-4),
    (5, 2.40e-3),
    (6, 9.07e-3),
    (7, 2.38e-2),
    (8, 5.00e-2),
    (9, 8.96e-2),
    (10, 1.44e-1),
    (11, 2.14e-1),
    (12, 3.00e-1),
    (13, 4.00e-1),
    (14, 5.14e-1),
    (15, 6.41e-1),
    (16, 7.81e-1),
    (17, 9.31e-1),
    (18, 1.09),
    (19, 1.26),
    (20, 1.44),
    (21, 1.62),
    (22, 1.82),
    (23, 2.01),
    (24, 2.22),
    (25, 2.43),
    (26, 2.64),
    (27, 2.86),
    (28, 3.08),
    (29, 3.31),
    (30, 3.54),
    (35, 4.7),
    (40, 6.0),
    (45, 7.2),
    (50, 8.5),
    (55, 9.9),
];

const M_MAX: usize = 55;

/// The most products `expm_multiply` will run in one call (‖t·a‖₁ up to about 10⁷).
pub(crate) const MAX_PRODUCTS: f64 = 1e7;
const ELL: usize = 2;

/// The largest p with p(p − 1) ≤ m_max + 1.
fn p_max() -> usize {
    (1..)
        .take_while(|p| p * (p - 1) <= M_MAX + 1)
        .last()
        .unwrap_or(1)
}

/// The degree m* and the number of scaling steps s for `‖t·A‖₁ = norm` and `n0` columns
/// (code fragment 3.1 of the paper, with `‖Aᵖ‖^{1/p}` bounded by `‖A‖₁`).
pub(crate) fn parameters(norm: f64, n0: usize) -> (usize, usize) {
    if norm == 0.0 {
        return (0, 1);
    }
    let theta_max = THETA[THETA.len() - 1].1;
    let p = p_max();
    let bound = (2 * ELL * p * (p + 3)) as f64 * theta_max / (n0.max(1) * M_MAX) as f64;
    let mut best: Option<(usize, usize)> = None;
    let mut consider = |m: usize, s: f64| {
        let s = (s.ceil().max(1.0)).min(usize::MAX as f64 / 64.0) as usize;
        if best.is_none_or(|(bm, bs)| m.saturating_mul(s) < bm.saturating_mul(bs)) {
            best = Some((m, s));
        }
    };
    if norm <= bound {
        for &(m, theta) in &THETA {
            consider(m, norm / theta);
        }
    } else {
        for pp in 2..=p {
            for &(m, theta) in THETA.iter().filter(|(m, _)| *m + 1 >= pp * (pp - 1)) {
                consider(m, norm / theta);
            }
        }
    }
    best.unwrap_or((M_MAX, 1))
}

/// `exp(t·A)·B` for the operator `op` = A, applied as `A − mu·I` (`mu` the mean of A's
/// diagonal, `norm` = `‖A − mu·I‖₁`), `B` of `n0` columns. The shift is applied in each
/// Taylor term ([`Vectors::taylor_term`], one pass over the vectors where the kind allows).
///
/// # Errors
/// The operator's errors; [`Error::Numerical`] if the result overflows.
#[allow(clippy::too_many_arguments)]
pub(crate) fn expm_multiply(
    op: &dyn LinearMap,
    vs: &dyn Vectors,
    b: &Data,
    t: c64,
    mu: c64,
    norm: f64,
    n0: usize,
    hook: Option<&Hook>,
) -> Result<Data> {
    const OP: &str = "expm_multiply";
    const TOL: f64 = 1.0 / (1u64 << 53) as f64;
    let tnorm = t.norm() * norm;
    let (m_star, s) = parameters(tnorm, n0);
    if !tnorm.is_finite() || (m_star as f64) * (s as f64) > MAX_PRODUCTS {
        return Err(Error::argument(
            OP,
            format!(
                "‖t·a‖₁ = {tnorm:.3e} would need about {:.1e} products (more than {MAX_PRODUCTS:.0e}): \
                 split the interval into shorter steps",
                (m_star as f64) * (s as f64)
            ),
        ));
    }
    let mut f = vs.copy(b)?;
    let eta = (t * mu / s as f64).exp();
    let mut bb = vs.copy(b)?;
    // The vector of the term before last, whose buffer the next product reuses.
    let mut spare: Option<Data> = None;
    let mut products = 0;
    for step in 1..=s {
        let mut c1 = vs.norm_max(&bb)?;
        let mut last = 0.0;
        for j in 0..m_star {
            let coeff = t / (s * (j + 1)) as f64;
            let (mut next, fused) = match spare.take() {
                Some(mut v) => match op.apply_taylor(&bb, &mut v, (mu, coeff), &mut f)? {
                    Some(m) => (v, Some(m)),
                    None => {
                        op.apply_into(&bb, &mut v)?;
                        (v, None)
                    }
                },
                None => (op.apply(&bb)?, None),
            };
            let (c2, f_max) = match fused {
                Some(m) => m,
                None => vs.taylor_term(&mut next, &bb, (mu, coeff), &mut f)?,
            };
            products += 1;
            spare = Some(std::mem::replace(&mut bb, next));
            last = (c1 + c2) / f_max;
            if c1 + c2 <= TOL * f_max {
                break;
            }
            c1 = c2;
        }
        vs.scale(&mut f, eta)?;
        if let Some(h) = hook {
            // After each of the s steps of t/s: the state is exp(step·t/s·a)·b.
            let progress = Progress {
                op: OP,
                iteration: step,
                applications: products,
                converged: step,
                wanted: s,
                residual: last,
                elapsed: watch::elapsed(hook),
            };
            if step < s && h.report(&progress) {
                return Err(h.stop(Partial {
                    progress,
                    values: Vec::new(),
                    vectors: Vec::new(),
                    resume: Some(vs.copy(&f)?),
                }));
            }
        }
        vs.assign(&mut bb, &f)?;
    }
    if !vs.norm_max(&f)?.is_finite() {
        return Err(Error::Numerical {
            op: OP.into(),
            reason: "the result overflows (non-finite entries)".into(),
        });
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_follow_scipy() {
        // Values scipy's _fragment_3_1 gives for a ket (n0 = 1) in the condition-3.13 branch.
        assert_eq!(parameters(0.0, 1), (0, 1));
        let (m, s) = parameters(1.0, 1);
        assert!(m * s <= 30 && m * s >= 10, "{m} {s}");
        let (m, s) = parameters(4.4, 1);
        assert!((m as f64) * (s as f64) >= 4.4 / 0.4, "{m} {s}");
        assert_eq!(p_max(), 8);
        // Large norms take the other branch and still return a finite plan.
        let (m, s) = parameters(1e4, 1);
        assert!(m <= M_MAX && s >= 1 && (m * s) as f64 >= 1e4 / 9.9);
    }
}
