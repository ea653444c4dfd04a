//! The options and result types of [`eigs`](super::decomp::eigs), and the choice between its dense and
//! Krylov paths: shared by both paths, so neither imports the other's module.

use crate::scalar::c64;
use crate::storage::Dense;

/// Absolute tolerance of the Hermitian test when [`EigsOptions::hermitian`] is `None`
/// (QuTiP's default `atol`).
pub const HERMITIAN_ATOL: f64 = 1e-12;

/// Which end of the spectrum comes first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EigOrder {
    /// Increasing real part, then increasing imaginary part (QuTiP's `sort="low"`).
    #[default]
    Low,
    /// Decreasing real part, then decreasing imaginary part (`sort="high"`).
    High,
}

/// How [`eigs`](super::decomp::eigs) computes: densely, or with the Krylov–Schur method, written once
/// against `Data` so it runs on every kind (see [`eigs_plan`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EigsMethod {
    /// Krylov for a few eigenpairs (`count` set) of a Csr or other sparse-friendly kind of
    /// size at least [`KRYLOV_MIN_DIM`], or with a shift `sigma`; dense otherwise.
    #[default]
    Auto,
    /// The full dense decomposition (the matrix is densified, up to the dense limit).
    Dense,
    /// The Krylov method (needs `count`; at most `n − 2` eigenpairs).
    Krylov,
}

/// The smallest dimension at which [`EigsMethod::Auto`] takes the Krylov path for a few
/// eigenpairs of a sparse matrix.
pub const KRYLOV_MIN_DIM: usize = 512;

/// Options of [`eigs`](super::decomp::eigs), with QuTiP's defaults.
///
/// Defaults: `hermitian: None` (tested), `vectors: true`, `order: Low`, `count: None` (all),
/// `sigma: None`, `tol: 0.0` (machine precision), `max_iter: 0` (automatic: 1000 restarts),
/// `method: Auto`, `krylov_dim: None` (`max(2·count + 1, 20)`, scipy's `ncv`).
///
/// The options grow between releases, so they are built from [`Default`] with a setter per
/// field (the fields stay readable); a struct literal does not compile outside polymat:
///
/// ```
/// use polymat::ops::{EigOrder, EigsOptions};
/// let o = EigsOptions::default().count(4).order(EigOrder::High).vectors(false);
/// assert_eq!((o.count, o.order, o.vectors), (Some(4), EigOrder::High, false));
/// ```
///
/// ```compile_fail
/// use polymat::ops::EigsOptions;
/// let o = EigsOptions { count: Some(4), ..Default::default() };
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct EigsOptions {
    /// `Some(true)` uses the Hermitian solver (real eigenvalues, orthonormal vectors) without
    /// checking, `Some(false)` the general one; `None` tests the matrix (atol
    /// [`HERMITIAN_ATOL`]).
    pub hermitian: Option<bool>,
    /// Whether to compute eigenvectors.
    pub vectors: bool,
    /// The order of the result, and for the Krylov path which end of the spectrum is wanted:
    /// `Low` the smallest real parts, `High` the largest.
    pub order: EigOrder,
    /// Only the first `count` eigenpairs in that order (`None`: all).
    pub count: Option<usize>,
    /// Shift-invert around `σ`: the `count` eigenvalues nearest `sigma` (QuTiP's and scipy's
    /// `sigma`), through a sparse LU of `a − σ·I`. Always the Krylov path.
    pub sigma: Option<c64>,
    /// Relative residual tolerance of the Krylov path, `‖A·v − λ·v‖ ≤ tol·|λ|` (0: machine
    /// precision, as ARPACK).
    pub tol: f64,
    /// Largest number of Krylov restarts (0: 1000). A raised limit still ends, with
    /// [`Error::Numerical`](crate::Error::Numerical), after 1000 restarts that do not bring the
    /// worst wanted residual down by 1 %.
    pub max_iter: usize,
    /// Dense, Krylov, or chosen by size ([`EigsMethod::Auto`]).
    pub method: EigsMethod,
    /// Size of the Krylov basis (`None`: `max(2·count + 1, 20)`, capped at n). Its memory
    /// (basis and projected matrices) is checked first:
    /// [`Error::TooLarge`](crate::Error::TooLarge).
    pub krylov_dim: Option<usize>,
}

impl Default for EigsOptions {
    fn default() -> Self {
        EigsOptions {
            hermitian: None,
            vectors: true,
            order: EigOrder::Low,
            count: None,
            sigma: None,
            tol: 0.0,
            max_iter: 0,
            method: EigsMethod::Auto,
            krylov_dim: None,
        }
    }
}

impl EigsOptions {
    /// Whether the input is Hermitian (`Some(true)`: the Hermitian solver without a test;
    /// `None`: tested).
    pub fn hermitian(mut self, hermitian: impl Into<Option<bool>>) -> Self {
        self.hermitian = hermitian.into();
        self
    }

    /// Whether to compute eigenvectors.
    pub fn vectors(mut self, vectors: bool) -> Self {
        self.vectors = vectors;
        self
    }

    /// The order of the result, and the end of the spectrum the Krylov path looks for.
    pub fn order(mut self, order: EigOrder) -> Self {
        self.order = order;
        self
    }

    /// Only the first `count` eigenpairs (`None`: all).
    pub fn count(mut self, count: impl Into<Option<usize>>) -> Self {
        self.count = count.into();
        self
    }

    /// Shift-invert around `sigma` (`None`: no shift).
    pub fn sigma(mut self, sigma: impl Into<Option<c64>>) -> Self {
        self.sigma = sigma.into();
        self
    }

    /// The Krylov path's relative residual tolerance (0: machine precision).
    pub fn tol(mut self, tol: f64) -> Self {
        self.tol = tol;
        self
    }

    /// The most Krylov restarts (0: 1000).
    pub fn max_iter(mut self, max_iter: usize) -> Self {
        self.max_iter = max_iter;
        self
    }

    /// Dense, Krylov, or chosen by size.
    pub fn method(mut self, method: EigsMethod) -> Self {
        self.method = method;
        self
    }

    /// The size of the Krylov basis (`None`: `max(2·count + 1, 20)`).
    pub fn krylov_dim(mut self, krylov_dim: impl Into<Option<usize>>) -> Self {
        self.krylov_dim = krylov_dim.into();
        self
    }
}

/// The path [`eigs`](super::decomp::eigs) takes for an `n × n` input of `kind` with these options: `Krylov` or
/// `Dense` (never `Auto`).
///
/// `Auto` chooses Krylov when `count` is set, `count + 2 ≤ n`, and either `sigma` is set or the
/// input is not Dense and `n ≥` [`KRYLOV_MIN_DIM`]; Dense input keeps the dense path unless
/// Krylov is asked for.
///
/// ```
/// use polymat::Kind;
/// use polymat::ops::{EigsMethod, EigsOptions, eigs_plan};
/// let few = EigsOptions::default().count(4);
/// assert_eq!(eigs_plan(Kind::CSR, 65_536, &few), EigsMethod::Krylov);
/// assert_eq!(eigs_plan(Kind::CSR, 100, &few), EigsMethod::Dense);
/// assert_eq!(eigs_plan(Kind::DENSE, 65_536, &few), EigsMethod::Dense);
/// assert_eq!(eigs_plan(Kind::CSR, 65_536, &EigsOptions::default()), EigsMethod::Dense);
/// ```
pub fn eigs_plan(kind: crate::storage::Kind, n: usize, o: &EigsOptions) -> EigsMethod {
    let fits = o.count.is_some_and(|k| k + 2 <= n);
    match o.method {
        EigsMethod::Krylov => EigsMethod::Krylov,
        EigsMethod::Dense => EigsMethod::Dense,
        _ if !fits => EigsMethod::Dense,
        _ if o.sigma.is_some() => EigsMethod::Krylov,
        _ if kind != crate::storage::Kind::DENSE && n >= KRYLOV_MIN_DIM => EigsMethod::Krylov,
        _ => EigsMethod::Dense,
    }
}

/// The result of [`eigs`](super::decomp::eigs). It may gain fields (statistics of the Krylov path):
/// read the ones you need.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Eigen {
    /// The eigenvalues, sorted as requested (real for the Hermitian solver).
    pub values: Vec<c64>,
    /// The eigenvectors as unit-norm columns, in the order of `values`, if requested.
    pub vectors: Option<Dense>,
    /// Products with the operator the Krylov path made (0 on the dense path).
    pub applications: usize,
    /// Krylov–Schur cycles the Krylov path ran: the first and one per restart (0 on the dense
    /// path).
    pub cycles: usize,
}

impl Eigen {
    /// A result made elsewhere (a user's kernel for [`EIGS`](super::super::EIGS)): `values` and,
    /// if computed, the eigenvectors as columns in their order; the Krylov statistics 0.
    ///
    /// ```
    /// use polymat::ops::Eigen;
    /// let e = Eigen::new(vec![polymat::c64::new(1.0, 0.0)], None);
    /// assert_eq!((e.values.len(), e.applications, e.cycles), (1, 0, 0));
    /// ```
    pub fn new(values: Vec<c64>, vectors: Option<Dense>) -> Eigen {
        Eigen {
            values,
            vectors,
            applications: 0,
            cycles: 0,
        }
    }
}
