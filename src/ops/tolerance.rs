//! Tolerance tests shared by the predicates of every kind (`compare` for Dense and Csr,
//! `dia` for Dia): below both, so that neither imports the other's module for them.

/// Absolute and relative tolerances: `|a − b| ≤ atol + rtol·|b|` entry by entry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tol {
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance (relative to the second operand).
    pub rtol: f64,
}

impl Default for Tol {
    /// `atol = 1e-12`, `rtol = 1e-7`.
    fn default() -> Tol {
        Tol {
            atol: 1e-12,
            rtol: 1e-7,
        }
    }
}

/// `|x − y| ≤ atol + rtol·|y|` (false for NaN).
pub(crate) fn close(x: crate::scalar::c64, y: crate::scalar::c64, t: Tol) -> bool {
    (x - y).norm() <= t.atol + t.rtol * y.norm()
}

/// `|d| ≤ atol` with the outcome of the square root's comparison (`d.norm() <= atol`) but,
/// away from the boundary, without the square root: squares decide when they are clear of
/// `atol²` by more than their rounding, the square root otherwise (and for NaN). Shared by
/// the Dense and Dia predicates, so that every kind answers as the Csr kernels' `norm()`.
pub(crate) struct Near {
    atol: f64,
    /// Squares below this are within atol (−1 when the squares cannot decide).
    pub(crate) below: f64,
    above: f64,
}

impl Near {
    pub(crate) fn new(atol: f64) -> Near {
        let sq = atol * atol;
        // With atol² normal, both bounds are within a few ulps of it; otherwise every
        // comparison takes the square root.
        let (below, above) = if sq.is_normal() {
            (
                sq * (1.0 - 8.0 * f64::EPSILON),
                sq * (1.0 + 8.0 * f64::EPSILON),
            )
        } else {
            (-1.0, f64::INFINITY)
        };
        Near { atol, below, above }
    }

    /// Whether `x − conj(y)` squares clearly below atol² (the fast test: false near the
    /// boundary and for NaN, where [`within`](Self::within) decides). Branch-free, so that
    /// loops over many pairs vectorise.
    #[inline(always)]
    pub(crate) fn clear_conj(&self, x: crate::scalar::c64, y: crate::scalar::c64) -> bool {
        let (dr, di) = (x.re - y.re, x.im + y.im);
        dr * dr + di * di < self.below
    }

    #[inline(always)]
    pub(crate) fn within(&self, d: crate::scalar::c64) -> bool {
        let sq = d.re * d.re + d.im * d.im;
        if sq < self.below {
            true
        } else if sq > self.above {
            false
        } else {
            d.norm() <= self.atol
        }
    }
}
