//! The superoperator kind: ρ ↦ Σ cₖ·Aₖ·ρ·Bₖ, held as its factors.

use std::fmt;
use std::sync::OnceLock;

use super::kron_sum::Derived;
use super::{Data, Storage};
use crate::error::{Error, Result};
use crate::scalar::c64;

/// A linear map on matrices, `ρ ↦ Σₖ cₖ·Aₖ·ρ·Bₖ`, held as its terms and never formed.
///
/// As a matrix it acts on `vec ρ`, the columns of ρ stacked (QuTiP's `operator_to_vector`,
/// column-major): `vec(A·ρ·B) = (Bᵀ ⊗ A)·vec ρ`, so a term is the Kronecker product `Bᵀ ⊗ A`
/// and a superoperator taking `p×q` matrices to `m×r` ones is `(m·r) × (p·q)`. A missing factor
/// is the identity: `spre(A)` is the term `(A, I)`, `spost(B)` the term `(I, B)`, QuTiP's
/// conventions (`spre(A) = I ⊗ A`, `spost(B) = Bᵀ ⊗ I`, `sprepost(A, B) = Bᵀ ⊗ A`).
///
/// Factors are [`Data`] of any kind: Csr, Dense, Dia, [`KronSum`](crate::KronSum), GPU kinds
/// or a user's. The constructors [`spre`](crate::spre), [`spost`](crate::spost),
/// [`sprepost`](crate::sprepost), [`lindblad_dissipator`](crate::lindblad_dissipator) and
/// [`liouvillian`](fn@crate::liouvillian) build one; `add`, `sub`, `mul`, `neg` and `matmul` of
/// superoperators stay lazy, with like terms merged. `matmul(L, vec ρ)` applies it to a
/// column-major Dense (where the `n²×1` vector already *is* ρ, no copy) term by term through
/// the factors' own products.
///
/// ```
/// use polymat::{Csr, Data, Kind, SuperOp, c64};
///
/// let one = c64::new(1.0, 0.0);
/// let a: Data = Csr::from_triplets((2, 2), &[1], &[0], &[one])?.into();
/// // ρ ↦ a·ρ·a† as a bare superoperator: one term.
/// let ad = polymat::adjoint(&a, polymat::Out::Auto)?;
/// let s = SuperOp::new((2, 2), (2, 2))?.with_term(one, Some(a), Some(ad))?;
/// assert_eq!(s.shape(), (4, 4));
/// let s: Data = s.into();
/// assert_eq!(s.kind(), Kind::SUPER_OP);
/// assert_eq!(format!("{s:#}"), "SuperOp(4×4, 1 term)");
/// # Ok::<(), polymat::Error>(())
/// ```
#[derive(Clone)]
pub struct SuperOp {
    input: (usize, usize),
    output: (usize, usize),
    shape: (usize, usize),
    terms: Vec<SuperTerm>,
    derived: Derived,
}

/// One term `c·A·ρ·B` of a [`SuperOp`]; a missing factor is the identity.
#[derive(Clone, Debug)]
pub struct SuperTerm {
    coeff: c64,
    left: Option<Data>,
    right: Option<Data>,
}

impl SuperTerm {
    /// The coefficient `c`.
    pub fn coeff(&self) -> c64 {
        self.coeff
    }

    /// The left factor `A` (`None`: the identity).
    pub fn left(&self) -> Option<&Data> {
        self.left.as_ref()
    }

    /// The right factor `B` (`None`: the identity).
    pub fn right(&self) -> Option<&Data> {
        self.right.as_ref()
    }
}

fn size(op: &str, a: (usize, usize)) -> Result<usize> {
    a.0.checked_mul(a.1).ok_or_else(|| {
        Error::shape(
            op,
            &[a],
            "the superoperator's dimension (rows × columns of the matrices it maps) overflows usize",
        )
    })
}

impl SuperOp {
    /// The zero superoperator from `p×q` matrices (`input`) to `m×r` ones (`output`): shape
    /// `(m·r) × (p·q)`, no terms yet.
    ///
    /// # Errors
    /// [`Error::Shape`] if `m·r` or `p·q` overflows `usize`.
    pub fn new(input: (usize, usize), output: (usize, usize)) -> Result<SuperOp> {
        let shape = (size("SuperOp", output)?, size("SuperOp", input)?);
        Ok(SuperOp {
            input,
            output,
            shape,
            terms: Vec::new(),
            derived: OnceLock::new(),
        })
    }

    /// Adds the term `ρ ↦ coeff·A·ρ·B`; `None` stands for the identity.
    ///
    /// # Errors
    /// [`Error::Shape`] unless `A` is `m×p` and `B` is `q×r` (a missing `A` needs `m = p`, a
    /// missing `B` needs `q = r`).
    pub fn push_term(&mut self, coeff: c64, left: Option<Data>, right: Option<Data>) -> Result<()> {
        let ((p, q), (m, r)) = (self.input, self.output);
        let lshape = left.as_ref().map_or((p, p), Data::shape);
        let rshape = right.as_ref().map_or((q, q), Data::shape);
        if lshape != (m, p) || rshape != (q, r) {
            return Err(Error::shape(
                "SuperOp",
                &[lshape, rshape],
                format!(
                    "a term mapping {p}×{q} matrices to {m}×{r} ones needs a {m}×{p} left \
                     factor and a {q}×{r} right one"
                ),
            ));
        }
        self.terms.push(SuperTerm { coeff, left, right });
        self.derived = OnceLock::new();
        Ok(())
    }

    /// [`push_term`](SuperOp::push_term) in builder style.
    ///
    /// # Errors
    /// As [`push_term`](SuperOp::push_term).
    pub fn with_term(
        mut self,
        coeff: c64,
        left: Option<Data>,
        right: Option<Data>,
    ) -> Result<SuperOp> {
        self.push_term(coeff, left, right)?;
        Ok(self)
    }

    /// The shape `(p, q)` of the matrices it takes.
    pub fn input(&self) -> (usize, usize) {
        self.input
    }

    /// The shape `(m, r)` of the matrices it returns.
    pub fn output(&self) -> (usize, usize) {
        self.output
    }

    /// `(m·r, p·q)`.
    pub fn shape(&self) -> (usize, usize) {
        self.shape
    }

    /// The terms, in the order they were added.
    pub fn terms(&self) -> &[SuperTerm] {
        &self.terms
    }

    /// What the operations derived from this superoperator, made on first use.
    pub(crate) fn derived(&self) -> &Derived {
        &self.derived
    }

    /// The terms as `(c, A, B)`.
    pub(crate) fn raw(&self) -> Vec<RawTerm> {
        self.terms
            .iter()
            .map(|t| (t.coeff, t.left.clone(), t.right.clone()))
            .collect()
    }

    /// A superoperator from `input` to `output` of these terms.
    ///
    /// # Errors
    /// As [`push_term`](SuperOp::push_term).
    pub(crate) fn of_terms(
        input: (usize, usize),
        output: (usize, usize),
        terms: Vec<RawTerm>,
    ) -> Result<SuperOp> {
        let mut s = SuperOp::new(input, output)?;
        for (c, a, b) in terms {
            s.push_term(c, a, b)?;
        }
        Ok(s)
    }

    /// Every term mapped by `f`, into a superoperator from `input` to `output` (the adjoint
    /// and the transpose swap them). The operations pass their dispatchers in.
    pub(crate) fn map(
        &self,
        input: (usize, usize),
        output: (usize, usize),
        f: impl Fn(c64, Option<&Data>, Option<&Data>) -> Result<RawTerm>,
    ) -> Result<SuperOp> {
        let mut out = SuperOp::new(input, output)?;
        for t in &self.terms {
            let (c, a, b) = f(t.coeff, t.left.as_ref(), t.right.as_ref())?;
            out.push_term(c, a, b)?;
        }
        Ok(out)
    }

    /// `Σ c·tr(A)·tr(B)` from the factors' traces (an identity factor has the trace of its
    /// dimension), for a superoperator whose factors are square (`None` otherwise).
    pub(crate) fn trace_with(&self, trace: impl Fn(&Data) -> Result<c64>) -> Result<Option<c64>> {
        if self.input != self.output {
            return Ok(None);
        }
        let (p, q) = self.input;
        let mut sum = c64::new(0.0, 0.0);
        for t in &self.terms {
            let ta = t
                .left
                .as_ref()
                .map_or(Ok(c64::new(p as f64, 0.0)), &trace)?;
            let tb = t
                .right
                .as_ref()
                .map_or(Ok(c64::new(q as f64, 0.0)), &trace)?;
            sum += t.coeff * ta * tb;
        }
        Ok(Some(sum))
    }

    /// The composition `ρ ↦ self(other(ρ))` as terms `(Aᵢ·Cⱼ, Dⱼ·Bᵢ)` for every pair, the
    /// factors multiplied by `product` (`None` the identity), not merged.
    ///
    /// # Errors
    /// [`Error::Shape`] unless `other`'s output is `self`'s input; `product`'s errors.
    pub(crate) fn compose(
        &self,
        other: &SuperOp,
        product: impl Fn(&Data, &Data) -> Result<Data>,
    ) -> Result<Vec<RawTerm>> {
        if self.input != other.output {
            return Err(Error::shape(
                "matmul",
                &[self.input, other.output],
                "the right superoperator's output matrices must be the left one's input",
            ));
        }
        let times = |x: Option<&Data>, y: Option<&Data>| -> Result<Option<Data>> {
            Ok(match (x, y) {
                (None, None) => None,
                (Some(x), None) | (None, Some(x)) => Some(x.clone()),
                (Some(x), Some(y)) => Some(product(x, y)?),
            })
        };
        let mut terms = Vec::new();
        for ta in &self.terms {
            for tb in &other.terms {
                terms.push((
                    ta.coeff * tb.coeff,
                    times(ta.left.as_ref(), tb.left.as_ref())?,
                    times(tb.right.as_ref(), ta.right.as_ref())?,
                ));
            }
        }
        Ok(terms)
    }
}

/// A term `(c, A, B)` of a superoperator, `None` the identity.
pub(crate) type RawTerm = (c64, Option<Data>, Option<Data>);

/// Merges like terms: the one-sided terms `c·A·ρ` whose factors `joinable` says add directly
/// into one (and the same for `ρ·B`), by `add_scaled(x, a, s)` = `x + s·a`; the identity
/// terms into one; repeated two-sided terms (the same factor handles) into one. Terms of
/// coefficient 0 are dropped. The operations pass their dispatchers in.
///
/// # Errors
/// `add_scaled`'s errors.
pub(crate) fn merge_terms(
    terms: Vec<RawTerm>,
    joinable: impl Fn(&Data, &Data) -> bool,
    add_scaled: impl Fn(&Data, &Data, c64) -> Result<Data>,
) -> Result<Vec<RawTerm>> {
    let mut out: Vec<RawTerm> = Vec::new();
    for (c, a, b) in terms {
        if c == c64::new(0.0, 0.0) {
            continue;
        }
        let slot = out.iter().position(|(_, x, y)| match (&a, &b, x, y) {
            (None, None, None, None) => true,
            (Some(a), None, Some(x), None) | (None, Some(a), None, Some(x)) => {
                a.ptr_eq(x) || joinable(x, a)
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
                // ck·x + c·a = ck·(x + (c/ck)·a): one factor, the coefficient kept.
                *x = add_scaled(x, &a, c / *ck)?;
            }
            _ => *ck += c,
        }
    }
    out.retain(|t| t.0 != c64::new(0.0, 0.0));
    Ok(out)
}

impl Storage for SuperOp {
    fn shape(&self) -> (usize, usize) {
        self.shape
    }
}

impl fmt::Debug for SuperOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SuperOp")
            .field("input", &self.input)
            .field("output", &self.output)
            .field("terms", &self.terms)
            .finish()
    }
}

impl fmt::Display for SuperOp {
    /// `{:#}` and `{}` both print the summary, `SuperOp(4×4, 1 term)`: the entries are never
    /// formed for printing.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.terms.len();
        write!(
            f,
            "SuperOp({}×{}, {n} term{})",
            self.shape.0,
            self.shape.1,
            if n == 1 { "" } else { "s" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{Csr, Dense};

    #[test]
    fn factors_must_fit_the_shapes() {
        let one = c64::new(1.0, 0.0);
        let mut s = SuperOp::new((2, 3), (4, 5)).unwrap();
        assert_eq!(s.shape(), (20, 6));
        let a: Data = Dense::zeros(4, 2).into();
        let b: Data = Csr::zeros(3, 5).into();
        s.push_term(one, Some(a.clone()), Some(b.clone())).unwrap();
        assert!(s.push_term(one, None, Some(b.clone())).is_err(), "m ≠ p");
        assert!(s.push_term(one, Some(a.clone()), None).is_err(), "q ≠ r");
        assert!(s.push_term(one, Some(b), Some(a)).is_err());
        let mut sq = SuperOp::new((3, 3), (3, 3)).unwrap();
        sq.push_term(one, None, None).unwrap();
        assert_eq!(sq.terms().len(), 1);
        assert!(SuperOp::new((1 << 40, 1 << 40), (1, 1)).is_err());
    }
}
