//! The kernels of the Kronecker-sum kind: products by mode products through its plan,
//! and its algebra (sums, scalings, adjoints, products of Kronecker sums) without forming it.

use std::any::Any;
use std::sync::Arc;

use super::plan::{Factor, Plan, Term};
use super::run;
use crate::convert::registry;
use crate::dispatch::Out;
use crate::error::{Error, Result};
use crate::scalar::{ONE, ZERO, c64};
use crate::shape::{expect_shapes, matmul_shapes, same_shape, square};
use crate::storage::csr_build::row;
use crate::storage::{Csr, Data, Dense, Kind, KronSum};

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

/// `b·a` for a Dense `b` and a Kronecker sum `a`: `(aᵀ·bᵀ)ᵀ`, the transposes of `b` and of the
/// result copied, `aᵀ` lazy.
///
/// # Errors
/// [`Error::Shape`] if `b`'s columns do not match `a`'s rows.
pub fn matmul_dense_kron_sum(b: &Dense, a: &KronSum) -> Result<Dense> {
    matmul_shapes("matmul", b.shape(), a.shape())?;
    let at = map_factors(a, ONE, |f| crate::ops::transpose(f, Out::Auto))?;
    let bt = crate::ops::transpose::transpose_dense(b)?.into_layout(crate::Layout::ColMajor)?;
    let y = apply_columns("matmul", &*plan_of(&at)?, &bt)?;
    crate::ops::transpose::transpose_dense(&y)
}

/// A Kronecker sum with every coefficient times `scale` (conjugated first when `conj`) and
/// every factor mapped by `f`.
fn map_factors(a: &KronSum, scale: c64, f: impl Fn(&Data) -> Result<Data>) -> Result<KronSum> {
    map_terms(a, |c| c * scale, f)
}

fn map_terms(
    a: &KronSum,
    coeff: impl Fn(c64) -> c64,
    f: impl Fn(&Data) -> Result<Data>,
) -> Result<KronSum> {
    let terms = a
        .terms()
        .iter()
        .map(|t| {
            let factors = t
                .factors()
                .iter()
                .map(|(s, x)| Ok((*s, f(x)?)))
                .collect::<Result<Vec<_>>>()?;
            Ok((coeff(t.coeff()), factors))
        })
        .collect::<Result<Vec<_>>>()?;
    KronSum::from_terms(a.dims(), terms)
}

/// Both Kronecker sums must be on the same subsystems.
fn same_dims(op: &str, a: &KronSum, b: &KronSum) -> Result<()> {
    if a.dims() == b.dims() {
        Ok(())
    } else {
        Err(Error::argument(
            op,
            format!(
                "Kronecker sums on different subsystems ({:?} and {:?}) do not combine lazily; \
                 convert one to Csr (polymat::to) to combine them stored",
                a.dims(),
                b.dims()
            ),
        ))
    }
}

/// `a + s·b`, lazy: the terms of both.
///
/// # Errors
/// [`Error::InvalidArgument`] for different subsystem dimensions.
pub fn add_kron_sum(a: &KronSum, b: &KronSum, s: c64) -> Result<KronSum> {
    same_shape("add", a.shape(), b.shape())?;
    same_dims("add", a, b)?;
    let mut out = a.clone();
    for t in b.terms() {
        out.push_term(s * t.coeff(), t.factors().iter().cloned())?;
    }
    Ok(out)
}

/// `s·a`, lazy.
///
/// # Errors
/// Never in practice (the factors are reused as they are).
pub fn mul_kron_sum(a: &KronSum, s: c64) -> Result<KronSum> {
    map_terms(a, |c| c * s, |f| Ok(f.clone()))
}

/// `a†`: conjugated coefficients, adjoint factors.
///
/// # Errors
/// A factor's adjoint.
pub fn adjoint_kron_sum(a: &KronSum) -> Result<KronSum> {
    map_terms(a, |c| c.conj(), |f| crate::ops::adjoint(f, Out::Auto))
}

/// `aᵀ`: transposed factors.
///
/// # Errors
/// A factor's transpose.
pub fn transpose_kron_sum(a: &KronSum) -> Result<KronSum> {
    map_terms(a, |c| c, |f| crate::ops::transpose(f, Out::Auto))
}

/// `ā`: conjugated coefficients and factors.
///
/// # Errors
/// A factor's conjugate.
pub fn conj_kron_sum(a: &KronSum) -> Result<KronSum> {
    map_terms(a, |c| c.conj(), |f| crate::ops::conj(f, Out::Auto))
}

/// `a·b` of two Kronecker sums on the same subsystems, lazy: every pair of terms, the factors
/// of a site multiplied (`(⊗Aₛ)(⊗Bₛ) = ⊗(Aₛ·Bₛ)`). O(terms(a)·terms(b)) local products.
///
/// # Errors
/// [`Error::InvalidArgument`] for different subsystem dimensions; a factor product's error.
pub fn matmul_kron_sum(a: &KronSum, b: &KronSum) -> Result<KronSum> {
    matmul_shapes("matmul", a.shape(), b.shape())?;
    same_dims("matmul", a, b)?;
    let mut out = KronSum::new(a.dims())?;
    for ta in a.terms() {
        for tb in b.terms() {
            let mut factors: Vec<(usize, Data)> = Vec::new();
            let (fa, fb) = (ta.factors(), tb.factors());
            let (mut i, mut j) = (0, 0);
            while i < fa.len() || j < fb.len() {
                let sa = fa.get(i).map_or(usize::MAX, |f| f.0);
                let sb = fb.get(j).map_or(usize::MAX, |f| f.0);
                if sa == sb {
                    factors.push((sa, crate::ops::matmul(&fa[i].1, &fb[j].1, Out::Auto)?));
                    i += 1;
                    j += 1;
                } else if sa < sb {
                    factors.push(fa[i].clone());
                    i += 1;
                } else {
                    factors.push(fb[j].clone());
                    j += 1;
                }
            }
            out.push_term(ta.coeff() * tb.coeff(), factors)?;
        }
    }
    Ok(out)
}

/// `Tr a`: per term, the product of its factors' traces and of the dimensions it leaves alone.
/// O(terms · sites) traces of local factors.
///
/// # Errors
/// A factor's trace.
pub fn trace_kron_sum(a: &KronSum) -> Result<c64> {
    let mut sum = ZERO;
    for t in a.terms() {
        let mut tr = t.coeff();
        let mut seen = vec![false; a.dims().len()];
        for (s, f) in t.factors() {
            tr *= crate::ops::trace(f)?;
            seen[*s] = true;
        }
        for (s, &d) in a.dims().iter().enumerate() {
            if !seen[s] {
                tr *= d as f64;
            }
        }
        sum += tr;
    }
    Ok(sum)
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

/// `‖a‖₁`, the largest column sum, from the plan's tables when that is exact (no two local
/// operators can put an entry of a column in the same row); otherwise through a Csr copy
/// (within the memory limits).
///
/// # Errors
/// [`Error::TooLarge`] if the exact norm needs a Csr copy that does not fit.
pub fn one_kron_sum(a: &KronSum) -> Result<f64> {
    let plan = plan_of(a)?;
    if plan.one_norm_exact {
        return Ok(run::one_norm(&plan, ZERO));
    }
    let csr = crate::convert::lazy::kron_sum_to_csr(a)?;
    Ok(crate::ops::norm::one_csr(&csr))
}

/// Whether `a = a†` within `atol`: true when every local operator of the plan is (a sum of
/// Hermitian pieces is Hermitian, each entry compared with `atol`); otherwise decided on a Csr
/// copy (within the memory limits).
///
/// # Errors
/// [`Error::TooLarge`] if a Csr copy is needed and does not fit.
pub fn isherm_kron_sum(a: &KronSum, atol: f64) -> Result<bool> {
    square("isherm", a.shape())?;
    if plan_of(a)?.is_hermitian(atol) {
        return Ok(true);
    }
    let csr = crate::convert::lazy::kron_sum_to_csr(a)?;
    crate::ops::compare::isherm_csr(&csr, atol)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::lazy::kron_sum_to_csr;

    fn op(d: usize, seed: u64) -> Data {
        let m = crate::ops::space::random_dense(d, d, seed).unwrap();
        // A few exact zeros so that the local factors are sparse.
        let m = Dense::from_fn(d, d, |i, j| {
            if (i * 3 + j + seed as usize).is_multiple_of(4) {
                ZERO
            } else {
                m.get(i, j)
            }
        });
        crate::convert::builtin::dense_to_csr(&m).unwrap().into()
    }

    fn random_sum(dims: &[usize], terms: usize, seed: u64) -> KronSum {
        let mut k = KronSum::new(dims).unwrap();
        let m = dims.len();
        for t in 0..terms {
            let s0 = (t * 7 + seed as usize) % m;
            let s1 = (t * 5 + 3 + seed as usize) % m;
            let mut f = vec![(s0, op(dims[s0], seed * 31 + t as u64))];
            if s1 != s0 && t % 3 != 0 {
                f.push((s1, op(dims[s1], seed * 17 + t as u64)));
            }
            let c = c64::new(0.5 + t as f64 * 0.25, -0.125 * t as f64);
            k.push_term(c, f).unwrap();
        }
        if seed.is_multiple_of(2) {
            k.push_term(c64::new(0.75, 0.5), []).unwrap();
        }
        k
    }

    fn close(a: &Dense, b: &Dense) {
        assert_eq!(a.shape(), b.shape());
        for j in 0..a.shape().1 {
            for i in 0..a.shape().0 {
                let (x, y) = (a.get(i, j), b.get(i, j));
                assert!(
                    (x - y).norm() <= 1e-12 * (1.0 + y.norm()),
                    "({i}, {j}): {x} vs {y}"
                );
            }
        }
    }

    /// The product by mode products equals the product with the stored operator, for mixed
    /// dimensions, terms on one and two sites, far-apart sites, and an identity term.
    #[test]
    fn products_match_the_stored_operator() {
        for (dims, terms) in [
            (vec![2, 3, 2], 5),
            (vec![2; 9], 12),
            (vec![3, 1, 4, 2, 2], 9),
            (vec![5], 2),
            (vec![2; 16], 20),
        ] {
            for seed in 0..3u64 {
                let k = random_sum(&dims, terms, seed);
                let csr = kron_sum_to_csr(&k).unwrap();
                let n = k.dim();
                let x = crate::ops::space::random_dense(n, 2, seed + 9).unwrap();
                let got = matmul_kron_sum_dense(&k, &x).unwrap();
                let want = crate::ops::matmul::matmul_csr_dense(&csr, &x).unwrap();
                close(&got, &want);
                let tr = trace_kron_sum(&k).unwrap();
                let want_tr = crate::ops::trace::trace_csr(&csr).unwrap();
                assert!((tr - want_tr).norm() <= 1e-10 * (1.0 + want_tr.norm()));
                let fro = frobenius_kron_sum(&k).unwrap();
                let want_fro = crate::ops::norm::frobenius_csr(&csr);
                assert!(
                    (fro - want_fro).abs() <= 1e-9 * (1.0 + want_fro),
                    "{fro} {want_fro}"
                );
                let one = one_kron_sum(&k).unwrap();
                let want_one = crate::ops::norm::one_csr(&csr);
                assert!(
                    (one - want_one).abs() <= 1e-9 * (1.0 + want_one),
                    "{one} {want_one}"
                );
            }
        }
    }
}
