//! QuTiP's superoperator constructors: `spre`, `spost`, `sprepost`, `lindblad_dissipator`,
//! `liouvillian`, each a lazy [`SuperOp`] with like terms merged.

use crate::dispatch::Out;
use crate::error::{Error, Result};
use crate::ops::add::adds_directly;
use crate::ops::{add, matmul, transpose};
use crate::scalar::{ONE, c64};
use crate::shape::{same_shape, square};
use crate::storage::{Data, RawTerm, SuperOp, merge_terms};

type Raw = RawTerm;

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
    let bd = transpose::adjoint(b, Out::Auto)?;
    let adb = matmul::matmul(&transpose::adjoint(a, Out::Auto)?, b, Out::Auto)?;
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
        terms.push((
            c64::new(0.0, 1.0),
            None,
            Some(transpose::adjoint(h, Out::Auto)?),
        ));
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
    Ok(SuperOp::of_terms(input, output, merge(terms)?)?.into())
}

/// Like terms merged through the `add` dispatcher.
fn merge(terms: Vec<Raw>) -> Result<Vec<Raw>> {
    merge_terms(terms, adds_directly, |x, a, s| {
        add::add_scaled(x, a, s, Out::Auto)
    })
}
