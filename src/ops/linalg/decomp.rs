//! Eigendecompositions and the singular value decomposition, through faer.

use std::cmp::Ordering;
use std::sync::LazyLock;

use faer::{Mat, Side};

use crate::convert::builtin::csr_to_dense;
use crate::dispatch::checks::check_square;
use crate::dispatch::checks::via_dense;
use crate::dispatch::{Dispatcher, Out, Specialisation, plain_output};
use crate::engine;
use crate::error::{Error, Result};
use crate::gpu::GpuDense;
use crate::scalar::c64;
use crate::storage::{Csr, Data, Dense, alloc};

pub use super::eigen::{
    EigOrder, Eigen, EigsMethod, EigsOptions, HERMITIAN_ATOL, KRYLOV_MIN_DIM, eigs_plan,
};

/// The result of [`svd`]: `a = u · diag(s) · vh`, thin (k = min(m, n)).
#[derive(Clone, Debug)]
pub struct Svd {
    /// Left singular vectors, m×k, if requested.
    pub u: Option<Dense>,
    /// The singular values, nonincreasing.
    pub s: Vec<f64>,
    /// Right singular vectors as rows, k×n, if requested.
    pub vh: Option<Dense>,
}

plain_output!(Eigen => "Eigen", Svd => "Svd");

/// Eigenvalues (and vectors) of a square matrix. Kernels: Dense (dense, or Krylov when asked),
/// Csr (Krylov or densified, by [`eigs_plan`]), and a generic one for every other kind (Krylov
/// through the dispatchers, or a conversion to Dense).
pub static EIGS: LazyLock<Dispatcher<EigsOptions, Eigen>> = LazyLock::new(|| {
    Dispatcher::builder("eigs", 1)
        .check(|op, args, o| {
            check_square(op, args, o)?;
            check_count(op, args[0].shape().0, o)?;
            check_options(op, o)
        })
        .generic("eigs_any", |args: &[&Data], _, o: &EigsOptions| {
            let a = args[0];
            match eigs_plan(a.kind(), a.shape().0, o) {
                EigsMethod::Krylov => super::krylov_eigs::eigs_data(a, o),
                _ => eigs_dense(&crate::convert::to_type::<Dense>(a).map_err(ask_count)?, *o),
            }
        })
        .unary("eigs_dense", |a: &Dense, o: &EigsOptions| {
            match eigs_plan(crate::storage::Kind::DENSE, a.shape().0, o) {
                EigsMethod::Krylov => super::krylov_eigs::eigs_dense_krylov(a, o),
                _ => eigs_dense(a, *o),
            }
        })
        .unary("eigs_gpu", |a: &GpuDense, o: &EigsOptions| eigs_gpu(a, o))
        .specialisation(
            Specialisation::unary("eigs_csr", |a: &Csr, o: &EigsOptions| {
                match eigs_plan(crate::storage::Kind::CSR, a.shape().0, o) {
                    EigsMethod::Krylov => super::krylov_eigs::eigs_csr(a, o),
                    _ => eigs_dense(&csr_to_dense(a).map_err(ask_count)?, *o),
                }
            })
            .converts_internally_to::<Dense>(),
        )
        .builtin()
});

/// A dense copy refused on the way to every eigenpair: the error says how to ask for a few.
fn ask_count(e: Error) -> Error {
    match e {
        Error::TooLarge {
            op,
            shape,
            bytes,
            limit: Some(limit),
            reason,
        } if reason.is_empty() => Error::TooLarge {
            op,
            shape,
            bytes,
            limit: Some(limit),
            reason: "eigs without a count computes every eigenpair of a dense copy; for a few \
                     eigenpairs of a large operator set EigsOptions::count (Krylov)"
                .into(),
        },
        e => e,
    }
}

fn check_options(op: &str, o: &EigsOptions) -> Result<()> {
    if !(o.tol.is_finite() && o.tol >= 0.0) {
        return Err(Error::argument(
            op,
            format!("tol must be finite and >= 0, got {}", o.tol),
        ));
    }
    if o.sigma.is_some_and(|s| !s.is_finite()) {
        return Err(Error::argument(op, "sigma must be finite"));
    }
    if o.method == EigsMethod::Krylov && o.count.is_none() {
        return Err(Error::argument(
            op,
            "the Krylov method computes a few eigenpairs: set count",
        ));
    }
    if o.sigma.is_some() && o.count.is_none() {
        return Err(Error::argument(op, "a shift sigma needs count"));
    }
    Ok(())
}

fn check_count(op: &str, n: usize, o: &EigsOptions) -> Result<()> {
    match o.count {
        Some(k) if k > n => Err(Error::argument(
            op,
            format!("{k} eigenpairs requested from a {n}×{n} matrix"),
        )),
        _ => Ok(()),
    }
}

/// The eigenvalues of `a`, sorted, and optionally the eigenvectors (QuTiP's `eigs`).
///
/// Hermitian input uses faer's self-adjoint solver; other input its general (Schur-based)
/// solver. Eigenvectors are normalised to unit 2-norm; their phase is whatever the solver
/// gives.
///
/// # Errors
/// [`Error::Shape`] if `a` is not square; [`Error::InvalidArgument`] if `count` exceeds its
/// size; [`Error::Numerical`] if the solver does not converge (e.g. non-finite entries);
/// [`Error::TooLarge`] if a dense solver's workspace (about 6 matrices of `a`'s shape with
/// vectors, 3 without) does not fit in the memory available now.
///
/// ```
/// use polymat::{Csr, c64};
/// use polymat::ops::{EigOrder, EigsOptions};
/// let sx = Csr::from_triplets((2, 2), &[0, 1], &[1, 0], &[c64::new(1.0, 0.0); 2]).unwrap();
/// let opts = EigsOptions::default().order(EigOrder::High);
/// let e = polymat::eigs(&sx.into(), opts).unwrap();
/// assert!((e.values[0] - c64::new(1.0, 0.0)).norm() < 1e-14);
/// assert_eq!(e.vectors.unwrap().shape(), (2, 2));
/// ```
#[inline]
pub fn eigs(a: &Data, options: EigsOptions) -> Result<Eigen> {
    EIGS.call(&[a], Out::Auto, &options)
}

/// [`eigs`] watched: the Krylov path (see [`eigs_plan`]) starts from the
/// watch's start vector (scipy's `v0`; an n × 1 ket of any kind) and reports each restart to
/// its observer, which can stop it. The dense path finishes in one step and ignores the watch.
///
/// # Errors
/// As [`eigs`]; [`Error::Stopped`] when the observer stops the run, the eigenpairs converged
/// by then and a vector to resume from kept in [`Watch::stopped`](crate::krylov::watch::Watch::stopped);
/// [`Error::Shape`] if the start vector is not n × 1.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use polymat::ops::{EigsMethod, EigsOptions, Flow, Watch};
/// use polymat::{Csr, Data};
///
/// let n = 600;
/// let idx: Vec<usize> = (0..n).collect();
/// let vals: Vec<_> = (1..=n).map(|i| polymat::c64::new(i as f64, 0.0)).collect();
/// let a: Data = Csr::from_triplets((n, n), &idx, &idx, &vals)?.into();
/// let restarts = Arc::new(AtomicUsize::new(0));
/// let seen = Arc::clone(&restarts);
/// let watch = Watch::new().observe(move |p| {
///     seen.store(p.iteration, Ordering::Relaxed);
///     Flow::Continue
/// });
/// let opts = EigsOptions::default()
///     .count(2)
///     .hermitian(true)
///     .tol(1e-10)
///     .method(EigsMethod::Krylov);
/// let e = polymat::eigs_with(&a, opts, &watch)?;
/// assert!((e.values[0].re - 1.0).abs() < 1e-8);
/// assert!(restarts.load(Ordering::Relaxed) >= 1);
/// # Ok::<(), polymat::Error>(())
/// ```
pub fn eigs_with(
    a: &Data,
    options: EigsOptions,
    watch: &crate::krylov::watch::Watch,
) -> Result<Eigen> {
    watch.scope(|| eigs(a, options))
}

fn no_convergence(op: &str, what: impl std::fmt::Debug) -> Error {
    Error::Numerical {
        op: op.to_owned(),
        reason: format!("the decomposition failed: {what:?}"),
    }
}

/// Dense kernel of [`eigs`]. O(n³).
///
/// # Errors
/// As [`eigs`].
pub fn eigs_dense(a: &Dense, options: EigsOptions) -> Result<Eigen> {
    crate::shape::square("eigs", a.shape())?;
    let n = a.shape().0;
    check_count("eigs", n, &options)?;
    // faer's Hessenberg (or tridiagonal) and Schur forms, the vectors, our sorted copy.
    alloc::check_workspace("eigs", (n, n), if options.vectors { 6 } else { 3 })?;
    let _avx = engine::AvxGuard::for_size(n);
    let hermitian = options
        .hermitian
        .unwrap_or_else(|| super::super::compare::isherm_dense(a, HERMITIAN_ATOL));
    let (values, vectors): (Vec<c64>, Option<Mat<c64>>) = if hermitian {
        if options.vectors {
            let e = a
                .as_ref()
                .self_adjoint_eigen(Side::Lower)
                .map_err(|e| no_convergence("eigs", e))?;
            let s = e.S().column_vector();
            ((0..n).map(|i| s[i]).collect(), Some(e.U().to_owned()))
        } else {
            let s = a
                .as_ref()
                .self_adjoint_eigenvalues(Side::Lower)
                .map_err(|e| no_convergence("eigs", e))?;
            (s.into_iter().map(|x| c64::new(x, 0.0)).collect(), None)
        }
    } else if options.vectors {
        let e = a.as_ref().eigen().map_err(|e| no_convergence("eigs", e))?;
        let s = e.S().column_vector();
        ((0..n).map(|i| s[i]).collect(), Some(e.U().to_owned()))
    } else {
        let s = a
            .as_ref()
            .eigenvalues()
            .map_err(|e| no_convergence("eigs", e))?;
        (s, None)
    };
    let vectors = vectors.as_ref().map(|u| u.as_ref());
    order_eigen(values, vectors, hermitian, &options)
}

/// The eigenpairs of an `n × n` matrix from a solver, sorted and cut to `count` as `options`
/// ask, the vectors normalised to unit 2-norm (shared by the dense and the GPU kernel).
pub(crate) fn order_eigen(
    values: Vec<c64>,
    vectors: Option<faer::MatRef<'_, c64>>,
    hermitian: bool,
    options: &EigsOptions,
) -> Result<Eigen> {
    let n = values.len();
    let hermitian_values: Vec<c64> = if hermitian {
        values.iter().map(|v| c64::new(v.re, 0.0)).collect()
    } else {
        values
    };
    let mut order: Vec<usize> = (0..n).collect();
    let cmp = |x: &c64, y: &c64| x.re.total_cmp(&y.re).then(x.im.total_cmp(&y.im));
    order.sort_by(|&i, &j| {
        let o: Ordering = cmp(&hermitian_values[i], &hermitian_values[j]);
        match options.order {
            EigOrder::Low => o,
            EigOrder::High => o.reverse(),
        }
    });
    order.truncate(options.count.unwrap_or(n));
    let vectors = vectors
        .map(|u| {
            // One norm per kept column (computing it per entry made this O(n³): 255 of the
            // 266 ms of a 256 × 256 Hermitian `eigs` with vectors).
            let norms: Vec<f64> = order
                .iter()
                .map(|&c| {
                    let norm = u.col(c).norm_l2();
                    if norm > 0.0 { norm } else { 1.0 }
                })
                .collect();
            Dense::from_fn_for("eigs", n, order.len(), |i, c| u[(i, order[c])] / norms[c])
        })
        .transpose()?;
    Ok(Eigen {
        values: order.iter().map(|&i| hermitian_values[i]).collect(),
        vectors,
        applications: 0,
        cycles: 0,
    })
}

/// The thin singular value decomposition. Kernels: Dense, Csr (densified).
pub static SVD: LazyLock<Dispatcher<bool, Svd>> = LazyLock::new(|| {
    Dispatcher::builder("svd", 1)
        .unary("svd_dense", |a: &Dense, v: &bool| svd_dense(a, *v))
        .unary("svd_gpu", |a: &GpuDense, v: &bool| svd_gpu(a, *v))
        .specialisation(via_dense("svd_csr", csr_to_dense, |d: &Dense, v: &bool| {
            svd_dense(d, *v)
        }))
        .builtin()
});

/// `a = u·diag(s)·vh` with k = min(m, n) singular values in nonincreasing order; `u` and `vh`
/// only if `vectors` (QuTiP's `svd`, numpy's `full_matrices=False`).
///
/// # Errors
/// [`Error::Numerical`] if the decomposition does not converge (e.g. non-finite entries);
/// [`Error::TooLarge`] if the workspace (about 6 matrices of `a`'s shape with vectors, 2
/// without) does not fit in the memory available now.
///
/// ```
/// use polymat::{Dense, c64};
/// let a = Dense::from_fn(3, 2, |i, j| c64::new(if i == j { (j + 1) as f64 } else { 0.0 }, 0.0));
/// let d = polymat::svd(&a.into(), true).unwrap();
/// assert_eq!(d.s.len(), 2);
/// assert!((d.s[0] - 2.0).abs() < 1e-14 && (d.s[1] - 1.0).abs() < 1e-14);
/// assert_eq!(d.vh.unwrap().shape(), (2, 2));
/// ```
#[inline]
pub fn svd(a: &Data, vectors: bool) -> Result<Svd> {
    SVD.call(&[a], Out::Auto, &vectors)
}

/// Dense kernel of [`svd`]. O(mn·min(m, n)).
///
/// # Errors
/// As [`svd`].
pub fn svd_dense(a: &Dense, vectors: bool) -> Result<Svd> {
    let (m, n) = a.shape();
    if m == 0 || n == 0 {
        // No singular values; faer would size its workspace by the other dimension.
        return Ok(Svd {
            u: vectors.then(|| Dense::zeros_for("svd", m, 0)).transpose()?,
            s: Vec::new(),
            vh: vectors.then(|| Dense::zeros_for("svd", 0, n)).transpose()?,
        });
    }
    // faer's bidiagonal form and its workspace, U and V (each at most m × n where m ≥ n, and
    // the other way round), the Dense copies returned.
    alloc::check_workspace("svd", (m, n), if vectors { 6 } else { 2 })?;
    let _avx = engine::AvxGuard::for_size(m.max(n));
    if !vectors {
        let s = a
            .as_ref()
            .singular_values()
            .map_err(|e| no_convergence("svd", e))?;
        return Ok(Svd {
            u: None,
            s: sorted_desc(s),
            vh: None,
        });
    }
    let k = m.min(n);
    let d = a
        .as_ref()
        .thin_svd()
        .map_err(|e| no_convergence("svd", e))?;
    let s = d.S().column_vector();
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by(|&i, &j| s[j].re.total_cmp(&s[i].re));
    let (u, v) = (d.U(), d.V());
    Ok(Svd {
        u: Some(Dense::from_fn_for("svd", m, k, |i, c| u[(i, order[c])])?),
        s: order.iter().map(|&i| s[i].re).collect(),
        // One singular triple of a wide matrix: vh a bra, row-major and unpadded.
        vh: Some(Dense::from_fn_public("svd", k, n, |r, j| {
            v[(j, order[r])].conj()
        })?),
    })
}

fn sorted_desc(mut s: Vec<f64>) -> Vec<f64> {
    s.sort_by(|x, y| y.total_cmp(x));
    s
}

/// GPU kernel of [`eigs`](crate::ops::linalg::decomp::eigs): cuSOLVER heevd for a Hermitian matrix (tested on the
/// GPU when `options.hermitian` is `None`), the Krylov path through the dispatcher when
/// [`eigs_plan`](crate::ops::linalg::decomp::eigs_plan) chooses it, the Dense kernel otherwise.
pub(crate) fn eigs_gpu(a: &GpuDense, options: &EigsOptions) -> Result<Eigen> {
    let n = a.shape().0;
    if eigs_plan(crate::storage::Kind::GPU_DENSE, n, options) == EigsMethod::Krylov {
        return super::krylov_eigs::eigs_data(&a.try_clone()?.into(), options);
    }
    let hermitian = match options.hermitian {
        Some(h) => h,
        None => a.isherm(HERMITIAN_ATOL)?,
    };
    if !hermitian || !crate::gpu::solver_available() {
        return eigs_dense(&a.to_dense()?, *options);
    }
    let (w, v) = a.eigh(options.vectors)?;
    let values = w.into_iter().map(|x| c64::new(x, 0.0)).collect();
    let vectors = v.map(|v| v.to_dense()).transpose()?;
    order_eigen(values, vectors.as_ref().map(Dense::as_ref), true, options)
}

/// GPU kernel of [`svd`](crate::ops::linalg::decomp::svd): cuSOLVER gesvd (a wide matrix through its adjoint); the
/// factors are downloaded into the host result.
pub(crate) fn svd_gpu(a: &GpuDense, vectors: bool) -> Result<Svd> {
    if !crate::gpu::solver_available() {
        return svd_dense(&a.to_dense()?, vectors);
    }
    let (u, s, vh) = a.svd(vectors)?;
    if s.iter().any(|x| !x.is_finite()) {
        return Err(Error::Numerical {
            op: "svd".to_owned(),
            reason: "the singular values are not finite (non-finite entries?)".to_owned(),
        });
    }
    Ok(Svd {
        u: u.map(|u| u.to_dense()).transpose()?,
        s,
        vh: vh.map(|v| v.to_dense()).transpose()?,
    })
}
