//! The steady state of a Liouvillian, as QuTiP's `steadystate` sets it up: `L·vec ρ = 0` with
//! the trace condition `Tr ρ = 1` added to the first row, solved by GMRES through the
//! dispatchers (so `L` may be lazy and is never formed).

use crate::dispatch::Out;
use crate::error::{Error, Result};
use crate::krylov::iterative::{self, Method};
use crate::ops::space::{Dispatched, FnMap};
use crate::ops::{add, construct, expect, matmul, reshape, scale, trace, transpose};
use crate::scalar::{ZERO, c64};
use crate::storage::{Data, Dense};

/// Settings of [`steadystate`]. Defaults: `tol: 1e-12`, `max_iter: 10_000`, `restart: 100`,
/// `weight: None` (the mean modulus of `L`'s diagonal, as QuTiP's mean stored entry).
///
/// Fields are private so that settings can be added without breaking callers: set them with
/// the builder methods.
///
/// ```
/// use polymat::ops::SteadyState;
/// let s = SteadyState::default().tol(1e-10).restart(50);
/// assert_eq!((s.get_tol(), s.get_restart()), (1e-10, 50));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct SteadyState {
    tol: f64,
    max_iter: usize,
    restart: usize,
    weight: Option<f64>,
}

impl Default for SteadyState {
    fn default() -> Self {
        SteadyState {
            tol: 1e-12,
            max_iter: 10_000,
            restart: 100,
            weight: None,
        }
    }
}

impl SteadyState {
    /// GMRES's relative residual tolerance (finite, > 0).
    pub fn tol(mut self, tol: f64) -> Self {
        self.tol = tol;
        self
    }

    /// The most products with `L`.
    pub fn max_iter(mut self, max_iter: usize) -> Self {
        self.max_iter = max_iter;
        self
    }

    /// GMRES's restart length.
    pub fn restart(mut self, restart: usize) -> Self {
        self.restart = restart;
        self
    }

    /// The weight of the trace row added to `L` (QuTiP's `weight`).
    pub fn weight(mut self, weight: f64) -> Self {
        self.weight = Some(weight);
        self
    }

    /// The tolerance in force.
    pub fn get_tol(&self) -> f64 {
        self.tol
    }

    /// The restart length in force.
    pub fn get_restart(&self) -> usize {
        self.restart
    }
}

/// The steady state ρ of the Liouvillian `l` (`n²×n²`, any kind: a lazy
/// [`SuperOp`](crate::SuperOp) is applied, never formed): the solution of `L·vec ρ = 0` with
/// `Tr ρ = 1`, set up as QuTiP's `steadystate` does (`w·vec(I)ᵀ` added to the first row of `L`,
/// right-hand side `w·e₀`), solved by GMRES, then made Hermitian and of unit trace. Returns the
/// `n×n` matrix ρ.
///
/// GMRES has no preconditioner here: it suits Liouvillians whose spectral gap is not tiny
/// next to their norm (a few hundred to a few thousand products). For stored operators a
/// sparse LU (`solve` with `SolveMethod::Lu` on the bordered matrix) is the direct route.
///
/// # Errors
/// [`Error::Shape`] unless `l` is `n²×n²`; [`Error::InvalidArgument`] for a tolerance that is
/// not finite and positive; [`Error::Numerical`] if GMRES does not converge.
///
/// ```
/// use polymat::{Csr, c64};
/// use polymat::ops::SteadyState;
/// // Decay and pumping of one qubit: populations γ₊/(γ₊ + γ₋) and γ₋/(γ₊ + γ₋).
/// let (down, up) = (0.3f64, 0.1f64);
/// let sm: polymat::Data = Csr::from_triplets((2, 2), &[1], &[0], &[c64::new(down.sqrt(), 0.0)])?.into();
/// let sp: polymat::Data = Csr::from_triplets((2, 2), &[0], &[1], &[c64::new(up.sqrt(), 0.0)])?.into();
/// let l = polymat::liouvillian(None, &[sm, sp])?;
/// let rho = polymat::steadystate(&l, &SteadyState::default())?;
/// let rho = rho.as_dense().unwrap();
/// assert!((rho.get(0, 0).re - 0.25).abs() < 1e-10);
/// assert!((rho.get(1, 1).re - 0.75).abs() < 1e-10);
/// # Ok::<(), polymat::Error>(())
/// ```
pub fn steadystate(l: &Data, options: &SteadyState) -> Result<Data> {
    const OP: &str = "steadystate";
    let (rows, cols) = l.shape();
    let n = rows.isqrt();
    if rows != cols || n * n != rows || n == 0 {
        return Err(Error::shape(
            OP,
            &[l.shape()],
            "a Liouvillian acts on n×n matrices: it must be n²×n²",
        ));
    }
    if !(options.tol.is_finite() && options.tol > 0.0) {
        return Err(Error::argument(OP, "tol must be finite and > 0"));
    }
    let w = match options.weight {
        Some(w) if w.is_finite() && w != 0.0 => w,
        Some(w) => {
            return Err(Error::argument(
                OP,
                format!("weight must be finite and non-zero, got {w}"),
            ));
        }
        None => {
            let mean = trace::trace(l)?.norm() / rows as f64;
            if mean.is_finite() && mean > 0.0 {
                mean
            } else {
                1.0
            }
        }
    };
    // x ↦ L·x + w·Tr(unvec x)·e₀.
    let bordered = FnMap {
        n: rows,
        f: |x: &Data| -> Result<Data> {
            let t = expect::trace_oper_ket(x)?;
            let mut y = matmul::matmul(l, x, Out::Auto)?;
            if let Some(d) = y.get_mut::<Dense>() {
                let col = d.try_col_mut(0)?;
                col[0] += t * w;
                return Ok(y);
            }
            let e0 = construct::one_element((rows, 1), (0, 0), t * w, Out::Auto)?;
            add::add(&y, &e0, Out::Auto)
        },
    };
    let b: Data = Dense::from_fn_for(
        OP,
        rows,
        1,
        |i, _| if i == 0 { c64::new(w, 0.0) } else { ZERO },
    )?
    .into();
    let sol = iterative::solve(
        &bordered,
        &Dispatched,
        &b,
        Method::Gmres {
            restart: options.restart,
        },
        options.tol,
        options.max_iter,
        None,
        None,
        None,
    )?;
    let rho = reshape::column_unstack(&sol.x, n, Out::Auto)?;
    let herm = add::add(&rho, &transpose::adjoint(&rho, Out::Auto)?, Out::Auto)?;
    let tr = trace::trace(&herm)?;
    if tr == ZERO || !tr.re.is_finite() {
        return Err(Error::Numerical {
            op: OP.into(),
            reason: format!("the solution has trace {tr}"),
        });
    }
    scale::mul(&herm, c64::new(1.0, 0.0) / tr, Out::Auto)
}
