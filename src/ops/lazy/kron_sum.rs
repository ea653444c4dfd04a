//! The kernels of the Kronecker-sum kind that run on its plan (products by mode products,
//! expectation values, norms). Its algebra (sums, scalings, adjoints, products of Kronecker
//! sums) is the storage type's own, given the dispatchers for the factors by each operation.

use std::any::Any;
use std::sync::Arc;

use super::plan::{Factor, Plan, Term};
use super::run;
use crate::convert::registry;
use crate::error::{Error, Result};
use crate::scalar::{ZERO, c64};
use crate::shape::{expect_shapes, matmul_shapes};
use crate::storage::csr_build::row;
use crate::storage::{Csr, Dense, Kind, KronSum};

/// `k`'s compiled plan, made on first use and kept beside it.
///
/// # Errors
/// A factor's conversion to Csr, or the plan's allocations.
pub(crate) fn plan_of(k: &KronSum) -> Result<Arc<Plan>> {
    cached(k.derived(), || {
        let terms = k
            .terms()
            .iter()
            .map(|t| {
                let factors = t
                    .factors()
                    .iter()
                    .map(|(s, f)| Factor::new(*s..*s + 1, f))
                    .collect::<Result<_>>()?;
                Ok(Term {
                    coeff: t.coeff(),
                    factors,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Plan::build(k.dims(), terms)
    })
}

/// The value of type `T` kept in `slot`, made by `make` on first use. Two threads racing to
/// make it both succeed; the first value stored is kept.
pub(crate) fn cached<T: Any + Send + Sync>(
    slot: &std::sync::OnceLock<Arc<dyn Any + Send + Sync>>,
    make: impl FnOnce() -> Result<T>,
) -> Result<Arc<T>> {
    if let Some(v) = slot.get()
        && let Ok(t) = Arc::clone(v).downcast::<T>()
    {
        return Ok(t);
    }
    let made: Arc<dyn Any + Send + Sync> = Arc::new(make()?);
    let kept = Arc::clone(slot.get_or_init(|| made));
    kept.downcast::<T>()
        .map_err(|_| Error::argument("lazy", "a derived value of another type is cached"))
}

/// `plan · b` for every column of `b`, into a new column-major Dense.
///
/// # Errors
/// [`Error::TooLarge`] if the result cannot be allocated.
pub(crate) fn apply_columns(op: &str, plan: &Plan, b: &Dense) -> Result<Dense> {
    let (n, k) = b.shape();
    let mut out = if plan.passes.is_empty() || n == 0 {
        Dense::zeros_for(op, n, k)?
    } else {
        // SAFETY: the first pass writes every entry of each column (its tiles partition the
        // indices) before anything reads them; the padding rows of a column are never read.
        Dense::new(unsafe { crate::storage::alloc::unfilled_mat(op, n, k)? })
    };
    for j in 0..k {
        let x = b.try_col(j)?;
        run::apply(plan, x, out.try_col_mut(j)?)?;
    }
    Ok(out)
}

/// `a·b` for a Kronecker sum `a` and a Dense `b` (a ket or several columns): mode products,
/// never forming `a`. O(columns · dim · (passes + entries of the local operators per entry)).
///
/// # Errors
/// [`Error::Shape`] if `a`'s columns do not match `b`'s rows.
pub fn matmul_kron_sum_dense(a: &KronSum, b: &Dense) -> Result<Dense> {
    matmul_shapes("matmul", a.shape(), b.shape())?;
    apply_columns("matmul", &*plan_of(a)?, b)
}

/// `tr(X†·Y)` of two local factors (`None`: the identity of dimension `d`), entry by entry.
pub(crate) fn inner_factors(x: Option<&Csr>, y: Option<&Csr>, d: usize) -> c64 {
    let diag_sum = |m: &Csr, conj: bool| -> c64 {
        (0..d)
            .map(|i| {
                if conj {
                    m.get(i, i).conj()
                } else {
                    m.get(i, i)
                }
            })
            .sum()
    };
    match (x, y) {
        (None, None) => c64::new(d as f64, 0.0),
        (None, Some(y)) => diag_sum(y, false),
        (Some(x), None) => diag_sum(x, true),
        (Some(x), Some(y)) => {
            let mut s = ZERO;
            for i in 0..d {
                let mut yr = row(y, i).peekable();
                for (c, v) in row(x, i) {
                    while yr.peek().is_some_and(|e| e.0 < c) {
                        yr.next();
                    }
                    if let Some(&(c2, w)) = yr.peek()
                        && c2 == c
                    {
                        s += v.conj() * w;
                    }
                }
            }
            s
        }
    }
}

/// `‖a‖_F = √tr(a†a)`, from the local factors: `Σ c̄ₖ·cₗ·Πₛ tr(Aₖ,ₛ†·Aₗ,ₛ)` over pairs of
/// terms. O(terms² · sites) local inner products; exact up to the rounding of that sum.
///
/// # Errors
/// A factor's conversion to Csr.
pub fn frobenius_kron_sum(a: &KronSum) -> Result<f64> {
    let m = a.dims().len();
    let terms: Vec<(c64, Vec<Option<Csr>>)> = a
        .terms()
        .iter()
        .map(|t| {
            let mut sites: Vec<Option<Csr>> = vec![None; m];
            for (s, f) in t.factors() {
                sites[*s] = Some(registry().convert(f, Kind::CSR)?.to_type::<Csr>()?);
            }
            Ok((t.coeff(), sites))
        })
        .collect::<Result<_>>()?;
    let mut sum = ZERO;
    for (ck, fk) in &terms {
        for (cl, fl) in &terms {
            let mut p = ck.conj() * cl;
            for s in 0..m {
                p *= inner_factors(fk[s].as_ref(), fl[s].as_ref(), a.dims()[s]);
            }
            sum += p;
        }
    }
    Ok(sum.re.max(0.0).sqrt())
}

/// `‖a‖₁` from the plan's tables when that is exact (no two local operators can put an entry
/// of a column in the same row); `None` when it is only a bound (then form the operator).
///
/// # Errors
/// The plan's construction.
pub fn one_norm_exact(a: &KronSum) -> Result<Option<f64>> {
    let plan = plan_of(a)?;
    Ok(plan.one_norm_exact.then(|| run::one_norm(&plan, ZERO)))
}

/// `⟨ψ|a|ψ⟩` for a ket, `Tr(a·ρ)` for an operator ρ: one product with the plan.
///
/// # Errors
/// [`Error::Shape`] as [`expect`](crate::ops::expect()).
pub fn expect_kron_sum_dense(a: &KronSum, state: &Dense) -> Result<c64> {
    expect_shapes("expect", a.shape(), state.shape())?;
    let plan = plan_of(a)?;
    let y = apply_columns("expect", &plan, state)?;
    if state.shape().1 == 1 {
        Ok(crate::simd::dot_conj(state.try_col(0)?, y.try_col(0)?))
    } else {
        Ok((0..y.shape().0).map(|i| y.get(i, i)).sum())
    }
}
