//! The Kronecker-sum kind: an operator on many subsystems held as its local factors.

use std::any::Any;
use std::fmt;
use std::sync::{Arc, OnceLock};

use super::{Data, Storage};
use crate::error::{Error, Result};
use crate::scalar::c64;

/// What the operations layer derives from a lazy operator once and keeps beside it (a compiled
/// plan, transposed factors). Storage only holds it; the operations know its type.
pub(crate) type Derived = OnceLock<Arc<dyn Any + Send + Sync>>;

/// An operator on the space `C^{d₀} ⊗ C^{d₁} ⊗ … ⊗ C^{d_{m−1}}`, held as a sum of Kronecker
/// products of local factors and never formed:
///
/// ```text
/// H = Σₖ cₖ · A₍ₖ,₀₎ ⊗ A₍ₖ,₁₎ ⊗ … ⊗ A₍ₖ,ₘ₋₁₎
/// ```
///
/// Each term lists its non-identity factors with the subsystem ("site") each acts on; a site a
/// term does not list carries the identity. Factors are [`Data`] of any kind (Csr, Dense, Dia, a
/// user's), `dₛ × dₛ` for site `s`. Subsystem 0 is the leftmost, most significant factor, as in
/// QuTiP's `tensor` and `dims` and in [`kron`](crate::kron()).
///
/// `matmul` applies it to a ket or to the columns of a Dense by mode products (the operation
/// [`target_mode_matmul`](crate::ops::target_mode_matmul)), in cache-sized tiles, so memory
/// beyond the vectors is only the local factors; every algorithm written against the
/// dispatchers (`eigs`, `expm_multiply`, `solve`) runs on it unchanged. Converting it to Csr
/// (`polymat::to(Kind::CSR, …)`) forms the operator explicitly, within the memory limits.
///
/// ```
/// use polymat::{Csr, Data, KronSum, Kind, c64};
///
/// let one = c64::new(1.0, 0.0);
/// let sx: Data = Csr::from_triplets((2, 2), &[0, 1], &[1, 0], &[one, one])?.into();
/// // X₀X₁ + X₁X₂ on three spins, and 0.5·X₁.
/// let h = KronSum::new(&[2, 2, 2])?
///     .with_term(one, [(0, sx.clone()), (1, sx.clone())])?
///     .with_term(one, [(1, sx.clone()), (2, sx.clone())])?
///     .with_term(c64::new(0.5, 0.0), [(1, sx.clone())])?;
/// assert_eq!(h.shape(), (8, 8));
/// assert_eq!(h.terms().len(), 3);
/// let h: Data = h.into();
/// assert_eq!(h.kind(), Kind::KRON_SUM);
/// assert_eq!(format!("{h:#}"), "KronSum(8×8, 3 terms on 3 subsystems)");
/// let stored = polymat::to(Kind::CSR, &h)?;
/// assert_eq!(stored.as_csr().unwrap().get(0, 6), one); // X₀X₁ flips spins 0 and 1
/// # Ok::<(), polymat::Error>(())
/// ```
#[derive(Clone)]
pub struct KronSum {
    dims: Vec<usize>,
    dim: usize,
    terms: Vec<KronTerm>,
    derived: Derived,
}

/// One term of a [`KronSum`]: a coefficient and the non-identity factors, sorted by site.
#[derive(Clone, Debug)]
pub struct KronTerm {
    coeff: c64,
    factors: Vec<(usize, Data)>,
}

impl KronTerm {
    /// The coefficient `cₖ`.
    pub fn coeff(&self) -> c64 {
        self.coeff
    }

    /// The non-identity factors as `(site, factor)`, sorted by site, each site once.
    pub fn factors(&self) -> &[(usize, Data)] {
        &self.factors
    }
}

fn invalid(reason: impl Into<String>) -> Error {
    Error::argument("KronSum", reason)
}

impl KronSum {
    /// The zero operator on subsystems of dimensions `dims` (no terms yet).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `dims` is empty or holds a 0; [`Error::Shape`] if their
    /// product overflows `usize`.
    pub fn new(dims: &[usize]) -> Result<KronSum> {
        if dims.is_empty() || dims.contains(&0) {
            return Err(invalid(format!(
                "subsystem dimensions must be at least 1 and at least one subsystem, got {dims:?}"
            )));
        }
        let dim = dims
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| {
                Error::shape(
                    "KronSum",
                    &[],
                    format!("the product of the dimensions {dims:?} overflows usize"),
                )
            })?;
        Ok(KronSum {
            dims: dims.to_vec(),
            dim,
            terms: Vec::new(),
            derived: OnceLock::new(),
        })
    }

    /// Adds the term `coeff · ⊗ₛ Fₛ` whose non-identity factors are `factors` as
    /// `(site, factor)`, in any order; sites not listed carry the identity. A term without
    /// factors is `coeff` times the identity.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a site past the last subsystem or listed twice;
    /// [`Error::Shape`] for a factor that is not `dₛ × dₛ`.
    pub fn push_term(
        &mut self,
        coeff: c64,
        factors: impl IntoIterator<Item = (usize, Data)>,
    ) -> Result<()> {
        let mut factors: Vec<(usize, Data)> = factors.into_iter().collect();
        factors.sort_by_key(|f| f.0);
        for (k, (site, f)) in factors.iter().enumerate() {
            let Some(&d) = self.dims.get(*site) else {
                return Err(invalid(format!(
                    "site {site} is past the last of {} subsystems",
                    self.dims.len()
                )));
            };
            if k > 0 && factors[k - 1].0 == *site {
                return Err(invalid(format!("site {site} is listed twice in one term")));
            }
            if f.shape() != (d, d) {
                return Err(Error::shape(
                    "KronSum",
                    &[f.shape()],
                    format!("the factor on site {site} must be {d}×{d}"),
                ));
            }
        }
        self.terms.push(KronTerm { coeff, factors });
        self.derived = OnceLock::new();
        Ok(())
    }

    /// [`push_term`](KronSum::push_term) in builder style.
    ///
    /// # Errors
    /// As [`push_term`](KronSum::push_term).
    pub fn with_term(
        mut self,
        coeff: c64,
        factors: impl IntoIterator<Item = (usize, Data)>,
    ) -> Result<KronSum> {
        self.push_term(coeff, factors)?;
        Ok(self)
    }

    /// The subsystem dimensions.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// The dimension of the whole space, the product of [`dims`](KronSum::dims).
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// `(dim, dim)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.dim, self.dim)
    }

    /// The terms, in the order they were added.
    pub fn terms(&self) -> &[KronTerm] {
        &self.terms
    }

    /// What the operations derived from this operator, made on first use.
    pub(crate) fn derived(&self) -> &Derived {
        &self.derived
    }

    /// Every coefficient mapped by `coeff` and every factor by `factor` (the adjoint
    /// conjugates the coefficients and takes each factor's adjoint). The operations pass
    /// their dispatchers in: storage knows none.
    pub(crate) fn map(
        &self,
        coeff: impl Fn(c64) -> c64,
        factor: impl Fn(&Data) -> Result<Data>,
    ) -> Result<KronSum> {
        let mut out = KronSum::new(&self.dims)?;
        for t in &self.terms {
            let f = t
                .factors
                .iter()
                .map(|(s, x)| Ok((*s, factor(x)?)))
                .collect::<Result<Vec<_>>>()?;
            out.push_term(coeff(t.coeff), f)?;
        }
        Ok(out)
    }

    /// `Tr` from the factors' traces (`trace`): per term, their product times the
    /// dimensions the term leaves alone. O(terms · sites) factor traces.
    pub(crate) fn trace_with(&self, trace: impl Fn(&Data) -> Result<c64>) -> Result<c64> {
        let mut sum = c64::new(0.0, 0.0);
        for t in &self.terms {
            let mut tr = t.coeff;
            let mut seen = vec![false; self.dims.len()];
            for (s, f) in &t.factors {
                tr *= trace(f)?;
                seen[*s] = true;
            }
            for (s, &d) in self.dims.iter().enumerate() {
                if !seen[s] {
                    tr *= d as f64;
                }
            }
            sum += tr;
        }
        Ok(sum)
    }

    /// Both on the same subsystems.
    fn same_dims(&self, op: &str, other: &KronSum) -> Result<()> {
        if self.dims == other.dims {
            Ok(())
        } else {
            Err(Error::argument(
                op,
                format!(
                    "Kronecker sums on different subsystems ({:?} and {:?}) do not combine \
                     lazily; convert one to Csr (polymat::to) to combine them stored",
                    self.dims, other.dims
                ),
            ))
        }
    }

    /// `self + s·other`: the terms of both.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for different subsystem dimensions.
    pub(crate) fn plus(&self, other: &KronSum, s: c64) -> Result<KronSum> {
        self.same_dims("add", other)?;
        let mut out = self.clone();
        for t in &other.terms {
            out.push_term(s * t.coeff, t.factors.iter().cloned())?;
        }
        Ok(out)
    }

    /// `self·other` on the same subsystems: every pair of terms, the factors of a site
    /// multiplied by `product` (`(⊗Aₛ)(⊗Bₛ) = ⊗(Aₛ·Bₛ)`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for different subsystem dimensions; `product`'s errors.
    pub(crate) fn times(
        &self,
        other: &KronSum,
        product: impl Fn(&Data, &Data) -> Result<Data>,
    ) -> Result<KronSum> {
        self.same_dims("matmul", other)?;
        let mut out = KronSum::new(&self.dims)?;
        for ta in &self.terms {
            for tb in &other.terms {
                let mut factors: Vec<(usize, Data)> = Vec::new();
                let (fa, fb) = (&ta.factors, &tb.factors);
                let (mut i, mut j) = (0, 0);
                while i < fa.len() || j < fb.len() {
                    let sa = fa.get(i).map_or(usize::MAX, |f| f.0);
                    let sb = fb.get(j).map_or(usize::MAX, |f| f.0);
                    if sa == sb {
                        factors.push((sa, product(&fa[i].1, &fb[j].1)?));
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
                out.push_term(ta.coeff * tb.coeff, factors)?;
            }
        }
        Ok(out)
    }
}

impl Storage for KronSum {
    fn shape(&self) -> (usize, usize) {
        (self.dim, self.dim)
    }
}

impl fmt::Debug for KronSum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KronSum")
            .field("dims", &self.dims)
            .field("terms", &self.terms)
            .finish()
    }
}

impl fmt::Display for KronSum {
    /// `{:#}` and `{}` both print the summary, `KronSum(8×8, 3 terms on 3 subsystems)`: the
    /// entries are never formed for printing.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = |n: usize| if n == 1 { "" } else { "s" };
        write!(
            f,
            "KronSum({}×{}, {} term{} on {} subsystem{})",
            self.dim,
            self.dim,
            self.terms.len(),
            s(self.terms.len()),
            self.dims.len(),
            s(self.dims.len())
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{Csr, Dense};

    fn one() -> c64 {
        c64::new(1.0, 0.0)
    }

    #[test]
    fn terms_are_checked_and_sorted() {
        let x: Data = Csr::identity(2).into();
        let y: Data = Dense::identity(3).into();
        let mut k = KronSum::new(&[2, 3]).unwrap();
        assert_eq!(k.shape(), (6, 6));
        k.push_term(one(), [(1, y.clone()), (0, x.clone())])
            .unwrap();
        assert_eq!(k.terms()[0].factors()[0].0, 0);
        assert!(k.push_term(one(), [(2, x.clone())]).is_err());
        assert!(
            k.push_term(one(), [(0, x.clone()), (0, x.clone())])
                .is_err()
        );
        assert!(matches!(
            k.push_term(one(), [(0, y.clone())]),
            Err(Error::Shape { .. })
        ));
        assert_eq!(k.terms().len(), 1, "a refused term adds nothing");
        k.push_term(c64::new(2.0, 0.0), []).unwrap();
        assert_eq!(k.terms()[1].factors().len(), 0);
    }

    #[test]
    fn dimensions_are_validated() {
        assert!(KronSum::new(&[]).is_err());
        assert!(KronSum::new(&[2, 0]).is_err());
        assert!(matches!(
            KronSum::new(&[1 << 40, 1 << 40]),
            Err(Error::Shape { .. })
        ));
        assert_eq!(KronSum::new(&[1, 5]).unwrap().dim(), 5);
    }
}
