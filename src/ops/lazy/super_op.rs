//! The superoperator kind: QuTiP's constructors (`spre`, `spost`, `sprepost`,
//! `lindblad_dissipator`, `liouvillian`), its lazy algebra, and its application to `vec ρ`.
//!
//! Two ways to apply `L = Σ cₖ·(Bₖᵀ ⊗ Aₖ)` to `vec ρ`:
//!
//! * **The plan** (a Dense `vec ρ`, square factors): `vec ρ` is a tensor whose modes are ρ's
//!   column modes, then its row modes. A factor that is a [`KronSum`] contributes its local
//!   factors on the row modes (`A`) or, transposed, on the column modes (`B`); any other factor
//!   acts on all row (column) modes at once. The plan multiplies out and merges the small
//!   local operators and runs them tile by tile; large factors (a stored Csr `H`) each take one
//!   pass over `vec ρ`: `A·ρ` as sparse products of ρ's columns, `ρ·B` as column updates.
//! * **Through the dispatchers** (a GPU `vec ρ`, rectangular factors): `ρ` unstacked, each
//!   term's products by the factors' own kernels (`A·ρ`, and `ρ·B` as `(Bᵀ·ρᵀ)ᵀ` where only
//!   that form has a direct kernel), the terms summed, `ρ` stacked again.

use std::sync::Arc;

use super::kron_sum::cached;
use super::plan::{Factor, Plan, Term};
use super::run;
use crate::convert::registry;
use crate::dispatch::Out;
use crate::error::{Error, Result};
use crate::ops::{self, ADD, MATMUL};
use crate::scalar::{ONE, ZERO, c64};
use crate::shape::{matmul_shapes, same_shape, square};
use crate::storage::csr_build::transpose as csr_transpose;
use crate::storage::{Csr, Data, Dense, Kind, KronSum, SuperOp};

type Raw = (c64, Option<Data>, Option<Data>);

/// `spre(A)`: `ρ ↦ A·ρ`, QuTiP's `I ⊗ A` (ρ square, of `A`'s column count).
///
/// # Errors
/// [`Error::Shape`] if the superoperator's dimension overflows.
///
/// ```
/// use polymat::{Csr, Dense, Kind, Out, c64};
/// let a: polymat::Data = Csr::from_triplets((2, 2), &[0], &[1], &[c64::new(1.0, 0.0)])?.into();
/// let s = polymat::spre(&a)?;
/// assert_eq!((s.kind(), s.shape()), (Kind::SUPER_OP, (4, 4)));
/// // Applied to vec ρ of ρ = [[1, 2], [3, 4]] (columns stacked): vec(A·ρ) = (3, 0, 4, 0).
/// let rho = Dense::from_fn(4, 1, |i, _| c64::new([1.0, 3.0, 2.0, 4.0][i], 0.0));
/// let y = polymat::matmul(&s, &rho.into(), Out::Auto)?;
/// assert_eq!(y.to_string(), "[[3], [0], [4], [0]]");
/// # Ok::<(), polymat::Error>(())
/// ```
pub fn spre(a: &Data) -> Result<Data> {
    let (m, p) = a.shape();
    build((p, p), (m, p), vec![(ONE, Some(a.clone()), None)])
}

/// `spost(B)`: `ρ ↦ ρ·B`, QuTiP's `Bᵀ ⊗ I` (ρ square, of `B`'s row count).
///
/// # Errors
/// [`Error::Shape`] if the superoperator's dimension overflows.
pub fn spost(b: &Data) -> Result<Data> {
    let (q, r) = b.shape();
    build((q, q), (q, r), vec![(ONE, None, Some(b.clone()))])
}

/// `sprepost(A, B)`: `ρ ↦ A·ρ·B`, QuTiP's `Bᵀ ⊗ A`.
///
/// # Errors
/// [`Error::Shape`] if the superoperator's dimension overflows.
pub fn sprepost(a: &Data, b: &Data) -> Result<Data> {
    let ((m, p), (q, r)) = (a.shape(), b.shape());
    build(
        (p, q),
        (m, r),
        vec![(ONE, Some(a.clone()), Some(b.clone()))],
    )
}

/// QuTiP's `lindblad_dissipator(a, b)`: `ρ ↦ a·ρ·b† − ½(a†b·ρ + ρ·a†b)` (`b = a` when `None`),
/// three terms.
///
/// # Errors
/// [`Error::Shape`] unless `a` and `b` are square of one size; a factor product's error.
pub fn lindblad_dissipator(a: &Data, b: Option<&Data>) -> Result<Data> {
    let b = b.unwrap_or(a);
    square("lindblad_dissipator", a.shape())?;
    same_shape("lindblad_dissipator", a.shape(), b.shape())?;
    let n = a.shape().0;
    let terms = dissipator_terms(a, b)?;
    build((n, n), (n, n), terms)
}

fn dissipator_terms(a: &Data, b: &Data) -> Result<Vec<Raw>> {
    let bd = ops::adjoint(b, Out::Auto)?;
    let adb = ops::matmul(&ops::adjoint(a, Out::Auto)?, b, Out::Auto)?;
    let half = c64::new(-0.5, 0.0);
    Ok(vec![
        (ONE, Some(a.clone()), Some(bd)),
        (half, Some(adb.clone()), None),
        (half, None, Some(adb)),
    ])
}

/// QuTiP's `liouvillian(H, c_ops)`: `ρ ↦ −i(H·ρ − ρ·H†) + Σₖ D[cₖ](ρ)` (`−i[H, ρ]` for a
/// Hermitian `H`). Like terms are merged, so
/// `N` collapse operators give `N + 2` terms, not `3N + 2`: the `spre` parts
/// (`−iH − ½Σ cₖ†cₖ`, the non-Hermitian `H_eff`) and the `spost` parts add up when their
/// factors are of one kind with a direct `add` kernel (Csr, Dense, Dia, KronSum).
///
/// # Errors
/// [`Error::Shape`] unless every operator is square of one size; [`Error::InvalidArgument`]
/// without any operator.
///
/// ```
/// use polymat::{Csr, Kind, c64};
/// let sm: polymat::Data = Csr::from_triplets((2, 2), &[1], &[0], &[c64::new(1.0, 0.0)])?.into();
/// let sz: polymat::Data =
///     Csr::from_triplets((2, 2), &[0, 1], &[0, 1], &[c64::new(1.0, 0.0), c64::new(-1.0, 0.0)])?.into();
/// let l = polymat::liouvillian(Some(&sz), &[sm])?;
/// assert_eq!(l.kind(), Kind::SUPER_OP);
/// assert_eq!(format!("{l:#}"), "SuperOp(4×4, 3 terms)"); // H_eff·ρ, ρ·H_eff†, c·ρ·c†
/// // The steady state of pure decay is |1⟩⟨1|: vec = (0, 0, 0, 1), L·vec = 0.
/// let rho = polymat::Dense::from_fn(4, 1, |i, _| c64::new(if i == 3 { 1.0 } else { 0.0 }, 0.0));
/// let y = polymat::matmul(&l, &rho.into(), polymat::Out::Auto)?;
/// assert!(polymat::ops::norm::l2(&y)? < 1e-15);
/// # Ok::<(), polymat::Error>(())
/// ```
pub fn liouvillian(h: Option<&Data>, c_ops: &[Data]) -> Result<Data> {
    const OP: &str = "liouvillian";
    let Some(first) = h.or(c_ops.first()) else {
        return Err(Error::argument(
            OP,
            "needs a Hamiltonian or a collapse operator",
        ));
    };
    let n = first.shape().0;
    let mut terms = Vec::new();
    if let Some(h) = h {
        square(OP, h.shape())?;
        same_shape(OP, h.shape(), first.shape())?;
        terms.push((c64::new(0.0, -1.0), Some(h.clone()), None));
        // QuTiP's `kron(conj(H), I)`: ρ·H† (the same as ρ·H for a Hermitian H).
        terms.push((c64::new(0.0, 1.0), None, Some(ops::adjoint(h, Out::Auto)?)));
    }
    for c in c_ops {
        square(OP, c.shape())?;
        same_shape(OP, c.shape(), first.shape())?;
        terms.extend(dissipator_terms(c, c)?);
    }
    build((n, n), (n, n), terms)
}

/// A superoperator of these terms, like terms merged.
fn build(input: (usize, usize), output: (usize, usize), terms: Vec<Raw>) -> Result<Data> {
    let mut s = SuperOp::new(input, output)?;
    for (c, a, b) in merge(terms)? {
        s.push_term(c, a, b)?;
    }
    Ok(s.into())
}

/// Whether `add` of two factors of these kinds has a direct kernel (no conversion), so that
/// merging them keeps their kind.
fn adds_directly(a: &Data, b: &Data) -> bool {
    a.kind() == b.kind()
        && ADD
            .get(&[a.kind(), b.kind()], Out::Auto)
            .is_ok_and(|r| r.is_direct())
}

/// Merges like terms: the one-sided terms `c·A·ρ` whose factors add directly into one (and
/// the same for `ρ·B`), the identity terms into one, and repeated two-sided terms (the same
/// factor handles) into one.
fn merge(terms: Vec<Raw>) -> Result<Vec<Raw>> {
    let mut out: Vec<Raw> = Vec::new();
    for (c, a, b) in terms {
        if c == ZERO {
            continue;
        }
        let slot = out.iter().position(|(_, x, y)| match (&a, &b, x, y) {
            (None, None, None, None) => true,
            (Some(a), None, Some(x), None) | (None, Some(a), None, Some(x)) => {
                a.ptr_eq(x) || adds_directly(x, a)
            }
            (Some(a), Some(b), Some(x), Some(y)) => a.ptr_eq(x) && b.ptr_eq(y),
            _ => false,
        });
        let Some(k) = slot else {
            out.push((c, a, b));
            continue;
        };
        let (ck, xk, yk) = &mut out[k];
        match (a, b, xk.as_mut(), yk.as_mut()) {
            (Some(a), None, Some(x), None) | (None, Some(a), None, Some(x)) if !a.ptr_eq(x) => {
                // ck·x + c·a, one factor of coefficient 1.
                let scaled = ops::mul(x, *ck, Out::Auto)?;
                *x = ops::add_scaled(&scaled, &a, c, Out::Auto)?;
                *ck = ONE;
            }
            _ => *ck += c,
        }
    }
    out.retain(|t| t.0 != ZERO);
    Ok(out)
}

/// The terms of `s` as raw tuples.
fn raw(s: &SuperOp) -> Vec<Raw> {
    s.terms()
        .iter()
        .map(|t| (t.coeff(), t.left().cloned(), t.right().cloned()))
        .collect()
}

/// `a + s·b`, lazy.
///
/// # Errors
/// [`Error::Shape`] unless both map matrices of one shape to matrices of one shape.
pub fn add_super_op(a: &SuperOp, b: &SuperOp, s: c64) -> Result<SuperOp> {
    if (a.input(), a.output()) != (b.input(), b.output()) {
        return Err(Error::shape(
            "add",
            &[a.shape(), b.shape()],
            "superoperators must map matrices of the same shapes",
        ));
    }
    let mut terms = raw(a);
    terms.extend(raw(b).into_iter().map(|(c, x, y)| (s * c, x, y)));
    let mut out = SuperOp::new(a.input(), a.output())?;
    for (c, x, y) in merge(terms)? {
        out.push_term(c, x, y)?;
    }
    Ok(out)
}

/// `s·a`, lazy.
///
/// # Errors
/// Never in practice (the factors are reused).
pub fn mul_super_op(a: &SuperOp, s: c64) -> Result<SuperOp> {
    map(a, a.input(), a.output(), |c, x, y| {
        Ok((c * s, x.cloned(), y.cloned()))
    })
}

fn map(
    a: &SuperOp,
    input: (usize, usize),
    output: (usize, usize),
    f: impl Fn(c64, Option<&Data>, Option<&Data>) -> Result<Raw>,
) -> Result<SuperOp> {
    let mut out = SuperOp::new(input, output)?;
    for t in a.terms() {
        let (c, x, y) = f(t.coeff(), t.left(), t.right())?;
        out.push_term(c, x, y)?;
    }
    Ok(out)
}

fn each(x: Option<&Data>, f: fn(&Data, Out) -> Result<Data>) -> Result<Option<Data>> {
    x.map(|x| f(x, Out::Auto)).transpose()
}

/// `a†`: `(c·Bᵀ⊗A)† = c̄·(B†)ᵀ ⊗ A†`, the term `(c̄, A†, B†)`.
///
/// # Errors
/// A factor's adjoint.
pub fn adjoint_super_op(a: &SuperOp) -> Result<SuperOp> {
    map(a, a.output(), a.input(), |c, x, y| {
        Ok((c.conj(), each(x, ops::adjoint)?, each(y, ops::adjoint)?))
    })
}

/// `aᵀ`: `(c·Bᵀ⊗A)ᵀ = c·B ⊗ Aᵀ`, the term `(c, Aᵀ, Bᵀ)`.
///
/// # Errors
/// A factor's transpose.
pub fn transpose_super_op(a: &SuperOp) -> Result<SuperOp> {
    map(a, a.output(), a.input(), |c, x, y| {
        Ok((c, each(x, ops::transpose)?, each(y, ops::transpose)?))
    })
}

/// `ā`: the term `(c̄, Ā, B̄)`.
///
/// # Errors
/// A factor's conjugate.
pub fn conj_super_op(a: &SuperOp) -> Result<SuperOp> {
    map(a, a.input(), a.output(), |c, x, y| {
        Ok((c.conj(), each(x, ops::conj)?, each(y, ops::conj)?))
    })
}

/// `x·y` of two optional factors (`None` the identity).
fn times(x: Option<&Data>, y: Option<&Data>) -> Result<Option<Data>> {
    Ok(match (x, y) {
        (None, None) => None,
        (Some(x), None) | (None, Some(x)) => Some(x.clone()),
        (Some(x), Some(y)) => Some(ops::matmul(x, y, Out::Auto)?),
    })
}

/// `a∘b`, the composition `ρ ↦ a(b(ρ))`, lazy: `(Aᵢ·Cⱼ)·ρ·(Dⱼ·Bᵢ)` for every pair of terms.
///
/// # Errors
/// [`Error::Shape`] unless `b`'s output is `a`'s input; a factor product's error.
pub fn matmul_super_op(a: &SuperOp, b: &SuperOp) -> Result<SuperOp> {
    matmul_shapes("matmul", a.shape(), b.shape())?;
    if a.input() != b.output() {
        return Err(Error::shape(
            "matmul",
            &[a.input(), b.output()],
            "the right superoperator's output matrices must be the left one's input",
        ));
    }
    let mut terms = Vec::new();
    for ta in a.terms() {
        for tb in b.terms() {
            terms.push((
                ta.coeff() * tb.coeff(),
                times(ta.left(), tb.left())?,
                times(tb.right(), ta.right())?,
            ));
        }
    }
    let mut out = SuperOp::new(b.input(), a.output())?;
    for (c, x, y) in merge(terms)? {
        out.push_term(c, x, y)?;
    }
    Ok(out)
}

/// Whether every factor is square and the superoperator maps n×q matrices to n×q ones, so
/// that it is an operator on `vec ρ`'s modes (a plan).
fn planned(s: &SuperOp) -> bool {
    s.input() == s.output()
}

/// `Tr L = Σ c·tr(A)·tr(B)` (an identity factor has the trace of its dimension).
///
/// # Errors
/// [`Error::Shape`] unless `a` is square; a factor's trace; a rectangular-factor
/// superoperator's trace goes through its Csr form (within the memory limits).
pub fn trace_super_op(a: &SuperOp) -> Result<c64> {
    square("trace", a.shape())?;
    if !planned(a) {
        let csr = crate::convert::lazy::super_op_to_csr(a)?;
        return ops::trace::trace_csr(&csr);
    }
    let ((p, q), _) = (a.input(), a.output());
    let mut sum = ZERO;
    for t in a.terms() {
        let ta = t.left().map_or(Ok(c64::new(p as f64, 0.0)), ops::trace)?;
        let tb = t.right().map_or(Ok(c64::new(q as f64, 0.0)), ops::trace)?;
        sum += t.coeff() * ta * tb;
    }
    Ok(sum)
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

/// `L·x` for a Dense `x` of `vec ρ` columns: the plan (square superoperators) or the
/// dispatchers' products (rectangular ones). `x` is read in place: its column *is* ρ.
///
/// # Errors
/// [`Error::Shape`] if `x` does not have `p·q` rows.
pub fn matmul_super_op_dense(a: &SuperOp, x: &Dense) -> Result<Dense> {
    matmul_shapes("matmul", a.shape(), x.shape())?;
    if planned(a) {
        return super::kron_sum::apply_columns("matmul", &*plan_of(a)?, x);
    }
    let y = apply_dispatched(a, &Data::from(x.clone()))?;
    crate::convert::to_type::<Dense>(&y)
}

/// `L·x` through the dispatchers' own products, for any kind of `x` (a GpuDense `vec ρ` with
/// GPU factors stays on the GPU): every column unstacked to ρ, each term `c·A·ρ·B`, summed,
/// stacked again.
///
/// # Errors
/// [`Error::Shape`] if `x` does not have `p·q` rows; a product's error.
pub fn apply_dispatched(a: &SuperOp, x: &Data) -> Result<Data> {
    matmul_shapes("matmul", a.shape(), x.shape())?;
    let ((p, _), (m, r)) = (a.input(), a.output());
    let k = x.shape().1;
    if a.terms().is_empty() {
        return ops::zeros(m * r, k, Out::Kind(x.kind()));
    }
    let cols = if k == 1 {
        vec![x.clone()]
    } else {
        ops::split_columns(x)?
    };
    let mut outs = Vec::with_capacity(k);
    for col in &cols {
        let rho = ops::column_unstack(col, p, Out::Auto)?;
        let mut sum: Option<Data> = None;
        for t in a.terms() {
            let mut v = rho.clone();
            if let Some(b) = t.right() {
                v = right_product(&v, b)?;
            }
            if let Some(f) = t.left() {
                v = ops::matmul(f, &v, Out::Auto)?;
            }
            sum = Some(match sum {
                None => ops::mul(&v, t.coeff(), Out::Auto)?,
                Some(s) => ops::add_scaled(&s, &v, t.coeff(), Out::Auto)?,
            });
        }
        let y = sum.unwrap_or_else(|| unreachable!("a superoperator with terms"));
        outs.push(ops::column_stack(&y, Out::Auto)?);
    }
    if outs.len() == 1 {
        return Ok(outs.swap_remove(0));
    }
    let blocks: Vec<ops::Block<'_>> = outs
        .iter()
        .enumerate()
        .map(|(j, d)| ops::Block {
            row: 0,
            col: j,
            data: d,
        })
        .collect();
    ops::block_build(&blocks, &[m * r], &vec![1; k], Out::Kind(x.kind()))
}

/// `ρ·B` by the product's direct kernel where there is one, else as `(Bᵀ·ρᵀ)ᵀ` when that form
/// has one (GpuDense·GpuCsr has no kernel, GpuCsr·GpuDense has), else through the dispatcher.
fn right_product(rho: &Data, b: &Data) -> Result<Data> {
    let direct = |x: Kind, y: Kind| MATMUL.get(&[x, y], Out::Auto).is_ok_and(|r| r.is_direct());
    if !direct(rho.kind(), b.kind()) && direct(b.kind(), rho.kind()) {
        let bt = ops::transpose(b, Out::Auto)?;
        let rt = ops::transpose(rho, Out::Auto)?;
        return ops::transpose(&ops::matmul(&bt, &rt, Out::Auto)?, Out::Auto);
    }
    ops::matmul(rho, b, Out::Auto)
}

/// `‖L‖₁`: exact from the plan when its local operators cannot meet in a row, else through the
/// Csr form (within the memory limits).
///
/// # Errors
/// [`Error::TooLarge`] if a needed Csr form does not fit.
pub fn one_super_op(a: &SuperOp) -> Result<f64> {
    if planned(a) {
        let plan = plan_of(a)?;
        if plan.one_norm_exact {
            return Ok(run::one_norm(&plan, ZERO));
        }
    }
    let csr = crate::convert::lazy::super_op_to_csr(a)?;
    Ok(ops::norm::one_csr(&csr))
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

/// Whether `L = L†` within `atol` (from the plan when its pieces are; else on the Csr form).
///
/// # Errors
/// [`Error::TooLarge`] if a needed Csr form does not fit.
pub fn isherm_super_op(a: &SuperOp, atol: f64) -> Result<bool> {
    if a.shape().0 != a.shape().1 {
        return Ok(false);
    }
    if planned(a) && plan_of(a)?.is_hermitian(atol) {
        return Ok(true);
    }
    let csr = crate::convert::lazy::super_op_to_csr(a)?;
    ops::compare::isherm_csr(&csr, atol)
}

/// `Tr(unvec(L·vec ρ))`, QuTiP's `expect` of a superoperator on an operator-ket.
///
/// # Errors
/// [`Error::Shape`] as [`expect_super`](crate::expect_super).
pub fn expect_super_op_dense(a: &SuperOp, rho: &Dense) -> Result<c64> {
    let y = matmul_super_op_dense(a, rho)?;
    ops::expect::trace_oper_ket_dense(&y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::lazy::super_op_to_csr;
    use crate::ops::space::random_dense;

    fn factor(n: usize, seed: u64, csr: bool) -> Data {
        let d = random_dense(n, n, seed).unwrap();
        let d = Dense::from_fn(n, n, |i, j| {
            if (i + 2 * j + seed as usize).is_multiple_of(3) {
                ZERO
            } else {
                d.get(i, j)
            }
        });
        if csr {
            crate::convert::builtin::dense_to_csr(&d).unwrap().into()
        } else {
            d.into()
        }
    }

    /// The plan and the dispatched path both equal the stored superoperator's product.
    #[test]
    fn products_match_the_stored_superoperator() {
        for n in [1usize, 3, 6, 20] {
            let (h, c1, c2) = (factor(n, 1, true), factor(n, 2, false), factor(n, 3, true));
            let l = liouvillian(Some(&h), &[c1.clone(), c2.clone()]).unwrap();
            let l2 = ops::add(&l, &sprepost(&c1, &h).unwrap(), Out::Auto).unwrap();
            for s in [&l, &l2] {
                let s = s.downcast_ref::<SuperOp>().unwrap();
                let csr = super_op_to_csr(s).unwrap();
                let x = random_dense(n * n, 2, 7).unwrap();
                let want = ops::matmul::matmul_csr_dense(&csr, &x).unwrap();
                let got = matmul_super_op_dense(s, &x).unwrap();
                let via = apply_dispatched(s, &x.clone().into()).unwrap();
                let via = crate::convert::to_type::<Dense>(&via).unwrap();
                for j in 0..2 {
                    for i in 0..n * n {
                        let w = want.get(i, j);
                        for g in [got.get(i, j), via.get(i, j)] {
                            assert!((g - w).norm() <= 1e-12 * (1.0 + w.norm()), "n {n}");
                        }
                    }
                }
                let tr = trace_super_op(s).unwrap();
                let wt = ops::trace::trace_csr(&csr).unwrap();
                assert!((tr - wt).norm() <= 1e-10 * (1.0 + wt.norm()));
                let f = frobenius_super_op(s).unwrap();
                let wf = ops::norm::frobenius_csr(&csr);
                assert!((f - wf).abs() <= 1e-9 * (1.0 + wf));
            }
        }
    }

    /// `N` decay channels give `N + 2` terms.
    #[test]
    fn like_terms_merge() {
        let cs: Vec<Data> = (0..5).map(|k| factor(4, k, true)).collect();
        let l = liouvillian(Some(&factor(4, 9, true)), &cs).unwrap();
        assert_eq!(l.downcast_ref::<SuperOp>().unwrap().terms().len(), 7);
    }
}
