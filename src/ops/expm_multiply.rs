//! `exp(t·a)·v` without forming `exp(t·a)` (scipy's `expm_multiply`).

use std::sync::LazyLock;

use super::space::Dispatched;
use crate::dispatch::{Dispatcher, Out};
use crate::error::{Error, Result};
use crate::krylov::expmv;
use crate::krylov::watch::Hook;
use crate::scalar::{ZERO, c64};
use crate::storage::Data;

/// `exp(t·a)·v`. Parameter: `t`. One generic kernel for every combination of kinds: products
/// through `matmul`, vector updates through `iadd`/`imul` (one fused pass per Taylor term for
/// Dense vectors), so `a` stays sparse (or on the GPU, or distributed) and `v` stays in its
/// own kind; the result has `v`'s kind.
pub static EXPM_MULTIPLY: LazyLock<Dispatcher<c64>> = LazyLock::new(|| {
    Dispatcher::builder("expm_multiply", 2)
        .check(|op, args, t: &c64| {
            let (a, v) = (args[0].shape(), args[1].shape());
            if a.0 != a.1 || v.0 != a.1 {
                return Err(Error::shape(
                    op,
                    &[a, v],
                    "the matrix must be n×n and the vectors n×k",
                ));
            }
            if !t.is_finite() {
                return Err(Error::argument(op, "t must be finite"));
            }
            Ok(())
        })
        .result_shape(|args, _| Some(args[1].shape()))
        .generic("expm_multiply_taylor", |args: &[&Data], _, t: &c64| {
            expm_multiply_data(args[0], args[1], *t)
        })
        .builtin()
});

/// `exp(t·a)·v` for an n×n `a` and n×k `v` (a ket or several columns), without forming
/// `exp(t·a)`: the truncated Taylor algorithm of Al-Mohy & Higham (2011), as in scipy's
/// `expm_multiply`, with the same shift by `tr(a)/n` and the same accuracy target (2⁻⁵³).
///
/// Cost: about `‖t·a‖₁ / 2` to `‖t·a‖₁` products `a·v` for moderate norms (scipy's bounds);
/// memory: a few vectors of `v`'s size beside `a`.
///
/// # Errors
/// [`Error::Shape`] unless `a` is square with as many columns as `v` has rows;
/// [`Error::InvalidArgument`] for a non-finite `t`; [`Error::Numerical`] if the result
/// overflows.
///
/// ```
/// use polymat::{Csr, Dense, Out, c64};
/// // exp(−iθσx)|0⟩ = cos θ|0⟩ − i sin θ|1⟩
/// let sx = Csr::from_triplets((2, 2), &[0, 1], &[1, 0], &[c64::new(1.0, 0.0); 2])?;
/// let ket0 = Dense::from_fn(2, 1, |i, _| c64::new(f64::from(u8::from(i == 0)), 0.0));
/// let t = 0.3;
/// let psi = polymat::expm_multiply(&sx.into(), &ket0.into(), c64::new(0.0, -t), Out::Auto)?;
/// let psi = psi.downcast_ref::<Dense>().unwrap();
/// assert!((psi.get(0, 0) - c64::new(t.cos(), 0.0)).norm() < 1e-14);
/// assert!((psi.get(1, 0) - c64::new(0.0, -t.sin())).norm() < 1e-14);
/// # Ok::<(), polymat::Error>(())
/// ```
#[inline]
pub fn expm_multiply(a: &Data, v: &Data, t: c64, out: Out) -> Result<Data> {
    EXPM_MULTIPLY.call(&[a, v], out, &t)
}

/// [`expm_multiply`] watched: the observer hears after each of the algorithm's `s` steps of
/// `t/s` (its [`Progress::wanted`](super::Progress::wanted)) and can stop it; the state
/// reached, `exp(τ·a)·v` at `τ = t·iteration/s`, is kept to resume from.
///
/// # Errors
/// As [`expm_multiply`]; [`Error::Stopped`] when the observer stops the run (the state
/// reached in [`Watch::stopped`](crate::krylov::watch::Watch::stopped)).
///
/// ```
/// use polymat::ops::{Flow, Watch};
/// use polymat::{Csr, Dense, Error, Out, c64};
///
/// // exp(−i·t·σx)|0⟩ over a long time, in many steps: stop after the first, then finish.
/// let sx = Csr::from_triplets((2, 2), &[0, 1], &[1, 0], &[c64::new(1.0, 0.0); 2])?.into();
/// let ket0 = Dense::from_fn(2, 1, |i, _| c64::new(f64::from(u8::from(i == 0)), 0.0)).into();
/// let t = c64::new(0.0, -40.0);
/// let watch = Watch::new().observe(|_| Flow::Stop);
/// let err = polymat::expm_multiply_with(&sx, &ket0, t, Out::Auto, &watch).unwrap_err();
/// assert!(matches!(err, Error::Stopped { iterations: 1, .. }));
/// let p = watch.stopped().unwrap();
/// let tau = t * (p.progress.iteration as f64 / p.progress.wanted as f64);
/// let psi = polymat::expm_multiply(&sx, &p.resume.unwrap(), t - tau, Out::Auto)?;
/// let psi = psi.downcast_ref::<Dense>().unwrap();
/// assert!((psi.get(0, 0) - c64::new(40f64.cos(), 0.0)).norm() < 1e-12);
/// # Ok::<(), polymat::Error>(())
/// ```
pub fn expm_multiply_with(
    a: &Data,
    v: &Data,
    t: c64,
    out: Out,
    watch: &crate::krylov::watch::Watch,
) -> Result<Data> {
    watch.scope(|| expm_multiply(a, v, t, out))
}

/// `‖a − μI‖₁`, the norm that sets the number of products. Dense, Csr and Dia compute it in
/// place, the lazy kinds from their plan (exact for local operators, an upper bound with
/// large factors); other kinds form `a − μI` through the dispatcher (a copy of `a`, which on a
/// 2²⁰-dimensional Csr operator took 287 MB beside the operator's 264 MB).
fn shifted_one_norm(a: &Data, mu: c64) -> Result<f64> {
    if mu == ZERO {
        return super::norm::one(a);
    }
    if let Some(a) = a.as_csr() {
        return super::norm::one_shifted_csr(a, mu);
    }
    if let Some(a) = a.as_dense() {
        return Ok(super::norm::one_shifted_dense(a, mu));
    }
    if let Some(a) = a.as_dia() {
        return super::dia::one_dia(a, mu);
    }
    // The lazy kinds: from their plan's tables, one pass over the columns without a copy.
    if let Some(k) = a.downcast_ref::<crate::storage::KronSum>() {
        let plan = super::lazy::kron_sum::plan_of(k)?;
        return Ok(super::lazy::run::one_norm(&plan, mu));
    }
    if let Some(s) = a.downcast_ref::<crate::storage::SuperOp>()
        && s.input() == s.output()
    {
        let plan = super::lazy::super_op::plan_of(s)?;
        return Ok(super::lazy::run::one_norm(&plan, mu));
    }
    let n = a.shape().0;
    let shifted = super::add::add_scaled(
        a,
        &super::construct::identity(n, Out::Auto)?,
        -mu,
        Out::Auto,
    )?;
    super::norm::one(&shifted)
}

/// The generic kernel.
fn expm_multiply_data(a: &Data, v: &Data, t: c64) -> Result<Data> {
    let n = a.shape().0;
    if n == 0 || v.shape().1 == 0 {
        return Ok(v.clone());
    }
    let mu = super::trace::trace(a)? / n as f64;
    let norm = shifted_one_norm(a, mu)?;
    if !norm.is_finite() {
        return Err(Error::Numerical {
            op: "expm_multiply".into(),
            reason: "the matrix has non-finite entries".into(),
        });
    }
    // Vectors live where the products land when those cannot come back (distributed kinds).
    let kind = super::space::working_kind(a, v)?;
    let moved;
    let v = if kind == v.kind() {
        v
    } else {
        moved = crate::convert::to(kind, v)?;
        &moved
    };
    let n0 = v.shape().1;
    // The shift by mu is applied in each Taylor term, with its scaling and sums.
    if v.kind() == crate::storage::Kind::DENSE
        && let Some(op) = super::lazy::map::PlanMap::of(a)?
    {
        // A lazy operator on Dense vectors: straight from its plan, into reused buffers.
        let hook = Hook::take();
        return expmv::expm_multiply(&op, &Dispatched, v, t, mu, norm, n0, hook.as_ref());
    }
    let op = super::space::matrix_map(a);
    let hook = Hook::take();
    expmv::expm_multiply(&op, &Dispatched, v, t, mu, norm, n0, hook.as_ref())
}
