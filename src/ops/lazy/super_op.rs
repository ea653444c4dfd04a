//! The kernels of the superoperator kind that run on its plan.
//!
//! A square superoperator on `vec ρ` (ρ n×q to n×q) is an operator on the tensor whose modes
//! are ρ's column modes, then its row modes: a factor that is a [`KronSum`] contributes its
//! local factors on the row modes (`A`) or, transposed, on the column modes (`B`); any other
//! factor acts on all row (column) modes at once. The plan multiplies out and merges the small
//! local operators and runs them tile by tile; large factors (a stored Csr `H`) each take one
//! pass over `vec ρ`: `A·ρ` as sparse products of ρ's columns, `ρ·B` as column updates. Its
//! algebra is the storage type's, given the dispatchers by each operation; rectangular
//! superoperators and GPU vectors go through the dispatchers' own products
//! (`ops::matmul`'s `super_op` module).

use std::sync::Arc;

use super::kron_sum::cached;
use super::plan::{Factor, Plan, Term};
use super::run;
use crate::convert::registry;
use crate::error::{Error, Result};
use crate::scalar::{ONE, ZERO, c64};
use crate::shape::matmul_shapes;
use crate::storage::csr_build::transpose as csr_transpose;
use crate::storage::{Csr, Data, Dense, Kind, KronSum, SuperOp};

/// Whether the superoperator maps n×q matrices to n×q ones, so that it is an operator on
/// `vec ρ`'s modes (a plan).
pub(crate) fn planned(s: &SuperOp) -> bool {
    s.input() == s.output()
}

/// The subsystem dimensions of a side: those of the first KronSum factor there, when every
/// KronSum factor on that side shares them; else the side is one mode of dimension `n`.
fn side_dims<'a>(factors: impl Iterator<Item = Option<&'a Data>>, n: usize) -> Vec<usize> {
    let mut dims: Option<Vec<usize>> = None;
    for f in factors.flatten() {
        if let Some(k) = f.downcast_ref::<KronSum>() {
            match &dims {
                None => dims = Some(k.dims().to_vec()),
                Some(d) if d != k.dims() => return vec![n],
                Some(_) => {}
            }
        }
    }
    dims.unwrap_or_else(|| vec![n])
}

/// One side's factor as plan terms: a KronSum on the side's dims by its own terms (each local
/// factor transposed on the column side), anything else one factor on all the side's modes.
fn expand(
    f: Option<&Data>,
    modes: std::ops::Range<usize>,
    dims: &[usize],
    transposed: bool,
) -> Result<Vec<(c64, Vec<Factor>)>> {
    let Some(f) = f else {
        return Ok(vec![(ONE, Vec::new())]);
    };
    let local = |op: &Data, m: std::ops::Range<usize>| -> Result<Factor> {
        if transposed {
            let csr = registry().convert(op, Kind::CSR)?.to_type::<Csr>()?;
            Ok(Factor {
                modes: m,
                op: csr_transpose("matmul", &csr)?,
            })
        } else {
            Factor::new(m, op)
        }
    };
    match f.downcast_ref::<KronSum>() {
        Some(k) if k.dims() == dims => k
            .terms()
            .iter()
            .map(|t| {
                let fs = t
                    .factors()
                    .iter()
                    .map(|(s, x)| local(x, modes.start + s..modes.start + s + 1))
                    .collect::<Result<_>>()?;
                Ok((t.coeff(), fs))
            })
            .collect(),
        _ => Ok(vec![(ONE, vec![local(f, modes)?])]),
    }
}

/// The plan of a square superoperator on `vec ρ`'s modes (column modes first), made on first
/// use and kept beside it.
///
/// # Errors
/// A factor's conversion to Csr.
pub(crate) fn plan_of(s: &SuperOp) -> Result<Arc<Plan>> {
    cached(s.derived(), || {
        let ((p, q), _) = (s.input(), s.output());
        let rows = side_dims(s.terms().iter().map(|t| t.left()), p);
        let cols = side_dims(s.terms().iter().map(|t| t.right()), q);
        let (nc, nr) = (cols.len(), rows.len());
        let mut terms = Vec::new();
        for t in s.terms() {
            let right = expand(t.right(), 0..nc, &cols, true)?;
            let left = expand(t.left(), nc..nc + nr, &rows, false)?;
            for (cb, fb) in &right {
                for (ca, fa) in &left {
                    let factors: Vec<Factor> = fb.iter().chain(fa).cloned().collect();
                    terms.push(Term {
                        coeff: t.coeff() * cb * ca,
                        factors,
                    });
                }
            }
        }
        let dims: Vec<usize> = cols.iter().chain(&rows).copied().collect();
        Plan::build(&dims, terms)
    })
}

/// `L·x` for a square `L` and a Dense `x` of `vec ρ` columns, from the plan: `x` is read in
/// place (its column *is* ρ).
///
/// # Errors
/// [`Error::Shape`] if `x` does not have `p·q` rows; [`Error::InvalidArgument`] for a
/// rectangular superoperator (those go through the dispatchers).
pub fn matmul_super_op_dense(a: &SuperOp, x: &Dense) -> Result<Dense> {
    matmul_shapes("matmul", a.shape(), x.shape())?;
    if !planned(a) {
        return Err(Error::argument(
            "matmul",
            "a superoperator between matrices of different shapes has no plan",
        ));
    }
    super::kron_sum::apply_columns("matmul", &*plan_of(a)?, x)
}

/// `‖L‖₁` from the plan's tables when that is exact; `None` otherwise (a rectangular
/// superoperator, or local operators whose entries can meet in a row).
///
/// # Errors
/// The plan's construction.
pub fn one_norm_exact(a: &SuperOp) -> Result<Option<f64>> {
    if !planned(a) {
        return Ok(None);
    }
    let plan = plan_of(a)?;
    Ok(plan.one_norm_exact.then(|| run::one_norm(&plan, ZERO)))
}

/// `‖L‖_F`: `Σ c̄ₖ·cₗ·⟨Aₖ, Aₗ⟩·⟨Bₖ, Bₗ⟩` over pairs of terms (Frobenius inner products of the
/// factors, through Csr).
///
/// # Errors
/// A factor's conversion to Csr.
pub fn frobenius_super_op(a: &SuperOp) -> Result<f64> {
    let csr = |f: Option<&Data>| -> Result<Option<Csr>> {
        f.map(|f| registry().convert(f, Kind::CSR)?.to_type::<Csr>())
            .transpose()
    };
    let terms: Vec<(c64, Option<Csr>, Option<Csr>)> = a
        .terms()
        .iter()
        .map(|t| Ok((t.coeff(), csr(t.left())?, csr(t.right())?)))
        .collect::<Result<_>>()?;
    let ((p, q), _) = (a.input(), a.output());
    let inner = |x: Option<&Csr>, y: Option<&Csr>, n: usize| -> Result<c64> {
        match (x, y) {
            (Some(x), Some(y)) if x.shape() != y.shape() => Err(Error::shape(
                "norm_frobenius",
                &[x.shape(), y.shape()],
                "factors of different shapes",
            )),
            _ => Ok(super::kron_sum::inner_factors(x, y, n)),
        }
    };
    let mut sum = ZERO;
    for (ck, ak, bk) in &terms {
        for (cl, al, bl) in &terms {
            let la = inner(ak.as_ref(), al.as_ref(), p)?;
            let lb = inner(bk.as_ref(), bl.as_ref(), q)?;
            sum += ck.conj() * cl * la * lb;
        }
    }
    Ok(sum.re.max(0.0).sqrt())
}

/// Whether the plan's pieces are all Hermitian within `atol` (so `L` is); `false` when it
/// cannot tell.
///
/// # Errors
/// The plan's construction.
pub(crate) fn plan_is_hermitian(a: &SuperOp, atol: f64) -> Result<bool> {
    Ok(planned(a) && a.shape().0 == a.shape().1 && plan_of(a)?.is_hermitian(atol))
}
