//! Linear systems and inverses: dense LU / QR through faer, sparse LU through faer's sparse
//! solver.

use std::sync::LazyLock;

use std::sync::Arc;

use faer::linalg::solvers::SolveLstsq;

use super::linalg::lu::{Factorised, finite};
use super::space::{Dispatched, FnMap, matrix_map};
use crate::convert::builtin::{csr_to_dense, dense_to_csr};
use crate::dispatch::{Dispatcher, Out, Specialisation};
use crate::engine;
use crate::error::{Error, Result};
use crate::gpu::GpuDense;
use crate::krylov::LinearMap;
use crate::krylov::iterative::{self, Method};
use crate::krylov::watch::Hook;
use crate::storage::{Csr, Data, Dense, alloc};

mod inv;

pub use inv::{INV, inv, inv_csr, inv_dense};

/// How [`solve()`] solves `a·x = b`.
///
/// The direct methods factorise `a`; the iterative ones (written once against `Data`, so they
/// run on every kind) need only products with `a`.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub enum SolveMethod {
    /// LU with partial pivoting; `a` must be square and nonsingular. Csr `a` uses a sparse LU.
    #[default]
    Lu,
    /// Least squares by Householder QR; `a` must be m×n with m ≥ n and full column rank.
    /// Csr `a` is densified.
    Lstsq,
    /// Conjugate gradients, for Hermitian positive definite `a`.
    Cg(Iterative),
    /// BiCGSTAB, for general square `a`.
    Bicgstab(Iterative),
    /// GMRES restarted every [`Iterative::restart`] steps, for general square `a`.
    Gmres(Iterative),
}

impl SolveMethod {
    fn iterative(&self) -> Option<(Method, &Iterative)> {
        match self {
            SolveMethod::Cg(o) => Some((Method::Cg, o)),
            SolveMethod::Bicgstab(o) => Some((Method::Bicgstab, o)),
            SolveMethod::Gmres(o) => Some((Method::Gmres { restart: o.restart }, o)),
            _ => None,
        }
    }
}

/// Settings of the iterative methods. Defaults: `tol: 1e-10`, `max_iter: 1000`,
/// `restart: 30` (GMRES only), no preconditioner.
///
/// ```
/// use polymat::ops::Iterative;
/// let it = Iterative::default().tol(1e-12).max_iter(500);
/// assert_eq!((it.tol, it.max_iter, it.restart), (1e-12, 500, 30));
/// ```
///
/// The settings grow between releases: build them from [`Default`] with the setters; a struct
/// literal does not compile outside polymat.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Iterative {
    /// Convergence when `‖b − a·x‖₂ ≤ tol·‖b‖₂` (finite, > 0).
    pub tol: f64,
    /// Iterations allowed (products with `a` for CG and GMRES, two per BiCGSTAB iteration). A
    /// solve whose residual stops falling ends before, with an error (see [`solve`](fn@solve)).
    pub max_iter: usize,
    /// GMRES's restart length m (at most n is used: the Krylov space has n dimensions).
    pub restart: usize,
    /// A right preconditioner `M ≈ a⁻¹`.
    pub preconditioner: Option<Preconditioner>,
}

impl Default for Iterative {
    fn default() -> Self {
        Iterative {
            tol: 1e-10,
            max_iter: 1000,
            restart: 30,
            preconditioner: None,
        }
    }
}

impl Iterative {
    /// With this tolerance.
    pub fn tol(mut self, tol: f64) -> Self {
        self.tol = tol;
        self
    }

    /// With this iteration limit.
    pub fn max_iter(mut self, max_iter: usize) -> Self {
        self.max_iter = max_iter;
        self
    }

    /// With this GMRES restart length.
    pub fn restart(mut self, restart: usize) -> Self {
        self.restart = restart;
        self
    }

    /// With this preconditioner.
    pub fn preconditioner(mut self, m: Preconditioner) -> Self {
        self.preconditioner = Some(m);
        self
    }
}

type PrecondFn = Arc<dyn Fn(&Data) -> Result<Data> + Send + Sync>;

/// A preconditioner: a function applying `M ≈ a⁻¹` to a ket. Two preconditioners are equal
/// when they are the same function object.
///
/// ```
/// use polymat::{Csr, Dense, Out, c64};
/// use polymat::ops::{Iterative, Preconditioner, SolveMethod};
///
/// let a: polymat::Data = Csr::scaled_identity(4, c64::new(2.0, 0.0)).into();
/// let b: polymat::Data = Dense::from_fn(4, 1, |i, _| c64::new(i as f64, 0.0)).into();
/// let jacobi = Preconditioner::jacobi(&a)?;
/// let m = SolveMethod::Cg(Iterative::default().preconditioner(jacobi));
/// let x = polymat::solve(&a, &b, m, Out::Auto)?;
/// assert!((x.downcast_ref::<Dense>().unwrap().get(3, 0) - c64::new(1.5, 0.0)).norm() < 1e-12);
/// # Ok::<(), polymat::Error>(())
/// ```
#[derive(Clone)]
pub struct Preconditioner(PrecondFn);

impl Preconditioner {
    /// From a function applying `M` to a ket.
    pub fn new(f: impl Fn(&Data) -> Result<Data> + Send + Sync + 'static) -> Preconditioner {
        Preconditioner(Arc::new(f))
    }

    /// Jacobi: `M = diag(a)⁻¹`.
    ///
    /// # Errors
    /// [`Error::Shape`] if `a` is not square, [`Error::Numerical`] if a diagonal entry is zero.
    pub fn jacobi(a: &Data) -> Result<Preconditioner> {
        crate::dispatch::checks::check_square("jacobi", &[a], &())?;
        let c = crate::convert::to_type::<Csr>(a)?;
        let n = c.shape().0;
        let mut inv = vec![crate::scalar::ZERO; n];
        for (i, d) in inv.iter_mut().enumerate() {
            let v = c.get(i, i);
            if v == crate::scalar::ZERO {
                return Err(Error::Numerical {
                    op: "jacobi".into(),
                    reason: format!("zero diagonal entry at {i}"),
                });
            }
            *d = crate::scalar::ONE / v;
        }
        let dinv: Data = Dense::from_col_major(n, 1, &inv)?.into();
        Ok(Preconditioner::new(move |r: &Data| {
            super::multiply::multiply(r, &dinv, Out::Kind(r.kind()))
        }))
    }
}

impl std::fmt::Debug for Preconditioner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Preconditioner")
    }
}

impl PartialEq for Preconditioner {
    fn eq(&self, other: &Preconditioner) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// `x` with `a·x = b`. Kernels: (Dense, Dense) → Dense, (Csr, Dense) → Dense (sparse LU),
/// (Csr, Csr) → Csr (sparse LU, dense right-hand side), and a generic one for every other kind
/// (the iterative methods through the dispatchers; the direct ones through a conversion to
/// Dense).
pub static SOLVE: LazyLock<Dispatcher<SolveMethod>> = LazyLock::new(|| {
    Dispatcher::builder("solve", 2)
        .check(|op, args, m| {
            solve_shapes(op, args[0].shape(), args[1].shape(), m)?;
            check_method(op, m)
        })
        .result_shape(|args, _| Some((args[0].shape().1, args[1].shape().1)))
        .generic("solve_any", |args: &[&Data], _, m: &SolveMethod| {
            solve_data(args[0], args[1], m)
        })
        .binary("solve_dense", |a: &Dense, b: &Dense, m: &SolveMethod| {
            solve_dense(a, b, m)
        })
        .binary("solve_csr_dense", |a: &Csr, b: &Dense, m: &SolveMethod| {
            solve_csr_dense(a, b, m)
        })
        .binary(
            "solve_gpu",
            |a: &GpuDense, b: &GpuDense, m: &SolveMethod| solve_gpu(a, b, m),
        )
        .specialisation(
            Specialisation::binary("solve_csr", |a: &Csr, b: &Csr, m: &SolveMethod| {
                dense_to_csr(&solve_csr_dense(a, &csr_to_dense(b)?, m)?)
            })
            .converts_internally_to::<Dense>(),
        )
        .builtin()
});

fn solve_shapes(op: &str, a: (usize, usize), b: (usize, usize), m: &SolveMethod) -> Result<()> {
    let (ok, req) = match m {
        SolveMethod::Lstsq => (
            a.0 >= a.1 && a.0 == b.0,
            "least squares needs a matrix with at least as many rows as columns, and as many rows as the right-hand side",
        ),
        _ => (
            a.0 == a.1 && a.0 == b.0,
            "the matrix must be square with as many rows as the right-hand side",
        ),
    };
    if ok {
        Ok(())
    } else {
        Err(Error::shape(op, &[a, b], req))
    }
}

fn check_method(op: &str, m: &SolveMethod) -> Result<()> {
    if let Some((_, o)) = m.iterative() {
        if !(o.tol.is_finite() && o.tol > 0.0) {
            return Err(Error::argument(
                op,
                format!("tol must be finite and > 0, got {}", o.tol),
            ));
        }
        if o.max_iter == 0 || o.restart == 0 {
            return Err(Error::argument(
                op,
                "max_iter and restart must be at least 1",
            ));
        }
    }
    Ok(())
}

/// Solves `a·x = b` for `x` (every column of `b` is a right-hand side), like
/// `scipy.linalg.solve` / `scipy.sparse.linalg.spsolve`, with [`SolveMethod::Lstsq`] like
/// `lstsq`, and with the iterative methods like `scipy.sparse.linalg.{cg, bicgstab, gmres}`
/// (zero initial guess, right preconditioning).
///
/// # Errors
/// [`Error::Shape`] on incompatible shapes; [`Error::InvalidArgument`] for an invalid
/// tolerance or limit; [`Error::Numerical`] if `a` is singular to working precision
/// (reciprocal condition number below [`RCOND_MIN`](super::linalg::lu::RCOND_MIN), dense and sparse LU alike) or, for the
/// iterative methods, if they do not converge within `max_iter`, break down, or stagnate (no
/// 1 % fall of the lowest relative residual in `max(4·n, 1000)` iterations, so that a
/// tolerance below what rounding allows ends even with `max_iter = usize::MAX`); the
/// residual reached is named. [`Error::TooLarge`] if a dense factorisation's workspace (2
/// matrices of `a`'s shape for LU, 3 for least squares) does not fit in the memory available
/// now.
///
/// ```
/// use polymat::{Csr, Dense, Out, c64};
/// use polymat::ops::{Iterative, SolveMethod};
/// let a = Csr::from_triplets((2, 2), &[0, 1], &[0, 1], &[c64::new(2.0, 0.0), c64::new(4.0, 0.0)]).unwrap();
/// let b = Dense::from_fn(2, 1, |_, _| c64::new(1.0, 0.0));
/// let (a, b) = (a.into(), b.into());
/// let x = polymat::solve(&a, &b, SolveMethod::Lu, Out::Auto).unwrap();
/// assert_eq!(x.downcast_ref::<Dense>().unwrap().get(1, 0), c64::new(0.25, 0.0));
/// let x = polymat::solve(&a, &b, SolveMethod::Gmres(Iterative::default()), Out::Auto).unwrap();
/// assert!((x.downcast_ref::<Dense>().unwrap().get(1, 0) - c64::new(0.25, 0.0)).norm() < 1e-10);
/// ```
#[inline]
pub fn solve(a: &Data, b: &Data, method: SolveMethod, out: Out) -> Result<Data> {
    SOLVE.call(&[a, b], out, &method)
}

/// [`solve()`] watched: the iterative methods start from the watch's start vector (scipy's
/// `x0`, `b`'s shape, any kind) and report each iteration to its observer, which can stop
/// them. The direct methods ignore the watch.
///
/// # Errors
/// As [`solve()`]; [`Error::Stopped`] when the observer stops the run, the iterate reached
/// kept in [`Watch::stopped`](crate::krylov::watch::Watch::stopped) (`resume`, to pass back as the start);
/// [`Error::Shape`] if the start does not have `b`'s shape.
///
/// ```
/// use polymat::ops::{Flow, Iterative, SolveMethod, Watch};
/// use polymat::{Csr, Data, Dense, Error, Out, c64};
///
/// // A diagonally dominant tridiagonal system: stop after 3 iterations, then resume.
/// let n = 400;
/// let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
/// for i in 0..n {
///     r.push(i); c.push(i); v.push(c64::new(4.0, 0.0));
///     if i + 1 < n {
///         r.extend([i, i + 1]); c.extend([i + 1, i]); v.extend([c64::new(-1.0, 0.0); 2]);
///     }
/// }
/// let a: Data = Csr::from_triplets((n, n), &r, &c, &v)?.into();
/// let b: Data = Dense::from_fn(n, 1, |i, _| c64::new((i % 7) as f64, 0.0)).into();
/// let cg = SolveMethod::Cg(Iterative::default().tol(1e-12));
/// let watch = Watch::new().observe(|p| if p.iteration == 3 { Flow::Stop } else { Flow::Continue });
/// let err = polymat::solve_with(&a, &b, cg.clone(), Out::Auto, &watch).unwrap_err();
/// assert!(matches!(err, Error::Stopped { iterations: 3, .. }));
/// let x3 = watch.stopped().unwrap().resume.unwrap();
/// let x = polymat::solve_with(&a, &b, cg, Out::Auto, &Watch::new().start(x3))?;
/// let r = polymat::sub(&polymat::matmul(&a, &x, Out::Auto)?, &b, Out::Auto)?;
/// assert!(polymat::ops::norm::frobenius(&r)? < 1e-9);
/// # Ok::<(), polymat::Error>(())
/// ```
pub fn solve_with(
    a: &Data,
    b: &Data,
    method: SolveMethod,
    out: Out,
    watch: &crate::krylov::watch::Watch,
) -> Result<Data> {
    watch.scope(|| solve(a, b, method, out))
}

/// The preconditioner of `o` as an operator.
fn preconditioner(n: usize, o: &Iterative) -> Option<FnMap<impl Fn(&Data) -> Result<Data>>> {
    o.preconditioner.as_ref().map(|p| {
        let f = p.0.clone();
        FnMap {
            n,
            f: move |x: &Data| f(x),
        }
    })
}

/// Runs an iterative method column by column of a Dense `b`.
fn iterative_columns(
    op: &dyn LinearMap,
    b: &Dense,
    method: Method,
    o: &Iterative,
) -> Result<Dense> {
    let pre = preconditioner(op.dim(), o);
    let (n, k) = b.shape();
    if n == 0 || k == 0 {
        return Dense::zeros_for("solve", n, k);
    }
    let mut cols = crate::storage::alloc::try_with_capacity("solve", (n, k), k)?;
    let bm = b.col_major("solve")?;
    let hook = Hook::take();
    let x0 = match hook.as_ref().and_then(|h| h.start.as_ref()) {
        Some(x0) if x0.shape() != (n, k) => {
            return Err(Error::shape(
                "solve",
                &[(n, k), x0.shape()],
                "the initial guess must have the right-hand side's shape",
            ));
        }
        Some(x0) => Some(crate::convert::to_type::<Dense>(x0)?),
        None => None,
    };
    let x0m = x0.as_ref().map(|x| x.col_major("solve")).transpose()?;
    for j in 0..k {
        let bj: Data = Dense::from_col_major(n, 1, bm.col_as_slice(j))?.into();
        let xj: Option<Data> = match &x0m {
            Some(x) => Some(Dense::from_col_major(n, 1, x.col_as_slice(j))?.into()),
            None => None,
        };
        let pm = pre.as_ref().map(|p| p as &dyn LinearMap);
        let sol = iterative::solve(
            op,
            &Dispatched,
            &bj,
            method,
            o.tol,
            o.max_iter,
            pm,
            xj.as_ref(),
            hook.as_ref(),
        )?;
        cols.push(crate::convert::to_type::<Dense>(&sol.x)?);
    }
    Dense::from_fn_for("solve", n, k, |i, j| cols[j].get(i, 0))
}

/// What the Dense and Csr kernels of [`solve()`] share before their direct methods: the
/// argument checks, an empty right-hand side (a zero result), and the iterative methods, with
/// `product` for `a·x` on a Dense `x` (the dispatcher for any other kind). `Some` when that
/// settled the call.
fn settled<K>(
    a: &K,
    shape: (usize, usize),
    b: &Dense,
    method: &SolveMethod,
    product: fn(&K, &Dense) -> Result<Dense>,
) -> Result<Option<Dense>>
where
    K: Clone + Into<Data>,
{
    solve_shapes("solve", shape, b.shape(), method)?;
    check_method("solve", method)?;
    if b.shape().0 == 0 || b.shape().1 == 0 {
        return Dense::zeros_for("solve", shape.1, b.shape().1).map(Some);
    }
    let Some((m, o)) = method.iterative() else {
        return Ok(None);
    };
    let op = FnMap {
        n: shape.0,
        f: |x: &Data| match x.downcast_ref::<Dense>() {
            Some(d) => product(a, d).map(Data::from),
            None => super::matmul::matmul(&a.clone().into(), x, Out::Auto),
        },
    };
    iterative_columns(&op, b, m, o).map(Some)
}

/// Dense kernel of [`solve()`]: faer's partial-pivoting LU, Householder QR for least squares,
/// or an iterative method. O(n³ + n²k) direct.
///
/// # Errors
/// As [`solve()`].
pub fn solve_dense(a: &Dense, b: &Dense, method: &SolveMethod) -> Result<Dense> {
    if let Some(x) = settled(a, a.shape(), b, method, super::matmul::matmul_dense)? {
        return Ok(x);
    }
    match method {
        SolveMethod::Lstsq => {
            // faer's QR factor (a copy of `a`), its Householder blocks and the solution.
            alloc::check_workspace("solve", a.shape(), 3)?;
            let _avx = engine::AvxGuard::for_size(a.shape().0);
            let qr = a.as_ref().qr();
            let r = qr.R();
            let n = a.shape().1;
            let eps = f64::EPSILON * (a.shape().0.max(1) as f64);
            let scale = (0..n).map(|i| r[(i, i)].norm()).fold(0.0, f64::max);
            if let Some(i) = (0..n).find(|&i| r[(i, i)].norm() <= eps * scale) {
                return Err(Error::Numerical {
                    op: "solve".to_owned(),
                    reason: format!(
                        "the matrix is rank deficient (column {i} is dependent on the others)"
                    ),
                });
            }
            finite("solve", qr.solve_lstsq(b.as_ref())).map(Dense::new)
        }
        _ => Factorised::dense(a, "solve")?.solve(b),
    }
}

/// Csr kernel of [`solve()`] with a Dense right-hand side: faer's sparse LU with partial
/// pivoting (COLAMD ordering) for [`SolveMethod::Lu`], the dense QR for least squares, or an
/// iterative method through the Csr·Dense kernel.
///
/// The Csr arrays of `a` are read in place as the compressed columns of `aᵀ`, whose LU then
/// solves the transposed system: no copy of `a` is made.
///
/// # Errors
/// As [`solve()`].
pub fn solve_csr_dense(a: &Csr, b: &Dense, method: &SolveMethod) -> Result<Dense> {
    if let Some(x) = settled(a, a.shape(), b, method, super::matmul::matmul_csr_dense)? {
        return Ok(x);
    }
    if *method == SolveMethod::Lstsq {
        return solve_dense(&csr_to_dense(a)?, b, method);
    }
    Factorised::sparse(a, "solve")?.solve(b)
}

/// The generic kernel: iterative methods through the dispatchers (the result in `b`'s kind),
/// direct ones on Dense copies.
pub(super) fn solve_data(a: &Data, b: &Data, method: &SolveMethod) -> Result<Data> {
    if let Some((m, o)) = method.iterative() {
        let op = matrix_map(a);
        if b.shape().1 == 1 {
            // A ket stays in its own kind (on the GPU for GpuDense, say).
            let pre = preconditioner(op.dim(), o);
            let pm = pre.as_ref().map(|p| p as &dyn LinearMap);
            let hook = Hook::take();
            let x0 = match hook.as_ref().and_then(|h| h.start.as_ref()) {
                Some(x0) if x0.kind() != b.kind() && x0.shape() == b.shape() => {
                    Some(crate::convert::to(b.kind(), x0)?)
                }
                other => other.cloned(),
            };
            let (tol, max_iter) = (o.tol, o.max_iter);
            return iterative::solve(
                &op,
                &Dispatched,
                b,
                m,
                tol,
                max_iter,
                pm,
                x0.as_ref(),
                hook.as_ref(),
            )
            .map(|s| s.x);
        }
        let bd = crate::convert::to_type::<Dense>(b)?;
        return iterative_columns(&op, &bd, m, o).map(Data::from);
    }
    let (ad, bd) = (
        crate::convert::to_type::<Dense>(a)?,
        crate::convert::to_type::<Dense>(b)?,
    );
    solve_dense(&ad, &bd, method).map(Data::from)
}

/// GPU kernel of [`solve()`](crate::ops::solve::solve()): the LU on the GPU; the iterative methods through
/// the dispatcher (their products run on the GPU); least squares on the CPU.
pub(crate) fn solve_gpu(a: &GpuDense, b: &GpuDense, method: &SolveMethod) -> Result<GpuDense> {
    match method {
        SolveMethod::Lu if crate::gpu::solver_available() => {
            if b.shape().0 == 0 || b.shape().1 == 0 {
                return GpuDense::zeros(a.shape().1, b.shape().1);
            }
            super::linalg::lu::finite_gpu(
                "solve",
                super::linalg::lu::factorise_gpu(a, "solve")?.solve(b, false)?,
            )
        }
        SolveMethod::Cg(_) | SolveMethod::Bicgstab(_) | SolveMethod::Gmres(_) => {
            let (a, b): (Data, Data) = (a.try_clone()?.into(), b.try_clone()?.into());
            let x = crate::convert::to(
                crate::storage::Kind::GPU_DENSE,
                &solve_data(&a, &b, method)?,
            )?;
            match x.downcast_ref::<GpuDense>() {
                Some(g) => g.try_clone(),
                None => Err(Error::Gpu {
                    op: "solve".to_owned(),
                    reason: format!("the iterative solution came back as {}", x.kind()),
                }),
            }
        }
        _ => GpuDense::from_dense(&solve_dense(&a.to_dense()?, &b.to_dense()?, method)?),
    }
}
