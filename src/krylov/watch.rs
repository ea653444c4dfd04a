//! Watching a long computation: a start vector (scipy's `v0` / `x0`), an observer told of each
//! restart or iteration that can stop the run, and the best result so far once it stops.
//!
//! A [`Watch`] is handed to [`eigs_with`](crate::eigs_with),
//! [`solve_with`](crate::solve_with) or [`expm_multiply_with`](crate::expm_multiply_with);
//! those set it for the calling thread and call the
//! operation as usual, and the first Krylov method the operation runs takes it (the dense
//! paths, which finish in one step, leave it untouched). A stopped run returns
//! [`Error::Stopped`], and [`Watch::stopped`] gives what it had reached: converged eigenpairs
//! and a vector to resume from, the current iterate, the state at the time reached.

use std::cell::RefCell;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::scalar::c64;
use crate::storage::Data;

/// What a long computation reports after each restart (`eigs`), iteration (the iterative
/// solvers) or time step (`expm_multiply`).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// The operation: `"eigs"`, `"solve"` or `"expm_multiply"`.
    pub op: &'static str,
    /// Restarts of the Krylov–Schur eigensolver so far, iterations of a solver, or time steps
    /// of `expm_multiply` done.
    pub iteration: usize,
    /// Products with the operator so far.
    pub applications: usize,
    /// Eigenpairs converged so far (solvers: 0; `expm_multiply`: the steps done).
    pub converged: usize,
    /// Eigenpairs asked for (solvers: 1; `expm_multiply`: its number of steps `s`, each
    /// of `t/s`).
    pub wanted: usize,
    /// The worst relative residual of the wanted eigenpairs; the solver's relative residual
    /// `‖b − A·x‖ / ‖b‖` (as its recurrence estimates it); for `expm_multiply` the relative
    /// size of the last Taylor terms kept in the step.
    pub residual: f64,
    /// Time since the operation started.
    pub elapsed: Duration,
}

/// An observer's answer: go on, or stop the run with [`Error::Stopped`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Go on.
    Continue,
    /// Stop now; the best result so far is kept in the [`Watch`].
    Stop,
}

/// What a stopped run had reached.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Partial {
    /// The last progress reported.
    pub progress: Progress,
    /// `eigs`: the eigenvalues converged so far, in the order asked for (empty for a solver).
    pub values: Vec<c64>,
    /// `eigs`: their eigenvectors as n × 1 kets, when vectors were asked for.
    pub vectors: Vec<Data>,
    /// The vector to resume from: for `eigs` a unit combination of the wanted Ritz vectors
    /// (pass it as the next run's start), for a solver the current iterate `x` (its `x0`),
    /// for `expm_multiply` the state `exp(τ·a)·v` reached at `τ = t·iteration/wanted`
    /// (evolve it by the remaining `t − τ`).
    pub resume: Option<Data>,
}

type ObserveFn = dyn Fn(&Progress) -> Flow + Send + Sync;

/// A start vector, an observer, and after a stop the best result reached.
///
/// ```
/// use polymat::ops::{EigsMethod, EigsOptions, Flow, Watch};
/// use polymat::{Csr, Data, Error};
///
/// // A 2000 × 2000 operator with eigenvalues 1, 2, ..., 2000; stop after the first restart.
/// let n = 2000;
/// let idx: Vec<usize> = (0..n).collect();
/// let vals: Vec<_> = (1..=n).map(|i| polymat::c64::new(i as f64, 0.0)).collect();
/// let a: Data = Csr::from_triplets((n, n), &idx, &idx, &vals)?.into();
/// let opts = EigsOptions::default()
///     .count(3)
///     .hermitian(true)
///     .tol(1e-10)
///     .method(EigsMethod::Krylov);
/// let watch = Watch::new().observe(|p| if p.iteration >= 1 { Flow::Stop } else { Flow::Continue });
/// let err = polymat::eigs_with(&a, opts, &watch).unwrap_err();
/// assert!(matches!(err, Error::Stopped { .. }));
/// let partial = watch.stopped().expect("the run stopped");
/// assert_eq!(partial.progress.iteration, 1);
///
/// // Resume from where it stopped, to convergence this time.
/// let resume = Watch::new().start(partial.resume.expect("a vector to resume from"));
/// let e = polymat::eigs_with(&a, opts, &resume)?;
/// assert!((e.values[2].re - 3.0).abs() < 1e-8);
/// # Ok::<(), polymat::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct Watch {
    start: Option<Data>,
    observer: Option<Arc<ObserveFn>>,
    partial: Arc<Mutex<Option<Partial>>>,
}

impl fmt::Debug for Watch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watch")
            .field("start", &self.start.as_ref().map(Data::shape))
            .field("observer", &self.observer.is_some())
            .finish_non_exhaustive()
    }
}

impl Watch {
    /// No start vector, no observer.
    pub fn new() -> Watch {
        Watch::default()
    }

    /// Starts from `v` (an n × 1 ket of any kind): `eigs`' first Krylov vector (scipy's `v0`),
    /// a solver's initial guess (scipy's `x0`).
    pub fn start(mut self, v: impl Into<Data>) -> Watch {
        self.start = Some(v.into());
        self
    }

    /// Calls `f` after each restart or iteration; [`Flow::Stop`] ends the run.
    pub fn observe(mut self, f: impl Fn(&Progress) -> Flow + Send + Sync + 'static) -> Watch {
        self.observer = Some(Arc::new(f));
        self
    }

    /// What the last run stopped with, taken out (`None` if it was not stopped).
    pub fn stopped(&self) -> Option<Partial> {
        self.partial
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Runs `f` with this watch set for the calling thread, for the first Krylov method `f`
    /// runs to take.
    pub(crate) fn scope<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<R> {
        struct Reset(Option<Hook>);
        impl Drop for Reset {
            fn drop(&mut self) {
                ACTIVE.with(|a| *a.borrow_mut() = self.0.take());
            }
        }
        let hook = Hook {
            start: self.start.clone(),
            observer: self.observer.clone(),
            partial: Arc::clone(&self.partial),
            began: Instant::now(),
        };
        *self.partial.lock().unwrap_or_else(PoisonError::into_inner) = None;
        let _reset = Reset(ACTIVE.with(|a| a.borrow_mut().replace(hook)));
        f()
    }
}

thread_local! {
    /// The watch set by [`Watch::scope`] and not yet taken.
    static ACTIVE: RefCell<Option<Hook>> = const { RefCell::new(None) };
}

/// The watch as a Krylov method holds it.
pub(crate) struct Hook {
    pub(crate) start: Option<Data>,
    observer: Option<Arc<ObserveFn>>,
    partial: Arc<Mutex<Option<Partial>>>,
    began: Instant,
}

impl Hook {
    /// The watch set for this thread, if any (once: nested methods run unwatched).
    pub(crate) fn take() -> Option<Hook> {
        ACTIVE.with(|a| a.borrow_mut().take())
    }

    /// Time since the watched call began.
    pub(crate) fn elapsed(&self) -> Duration {
        self.began.elapsed()
    }

    /// Reports `p`; `true` when the observer asks to stop.
    pub(crate) fn report(&self, p: &Progress) -> bool {
        self.observer.as_ref().is_some_and(|f| f(p) == Flow::Stop)
    }

    /// Rewrites the kept partial result (the caller's view of it: shift-inverted values
    /// mapped back, the order asked for).
    pub(crate) fn amend(&self, f: impl FnOnce(&mut Partial) -> Result<()>) -> Result<()> {
        let mut slot = self.partial.lock().unwrap_or_else(PoisonError::into_inner);
        match slot.as_mut() {
            Some(p) => f(p),
            None => Ok(()),
        }
    }

    /// Keeps `partial` and returns the error of a stopped run.
    pub(crate) fn stop(&self, partial: Partial) -> Error {
        let p = &partial.progress;
        let err = Error::Stopped {
            op: p.op.to_owned(),
            iterations: p.iteration,
            reason: format!(
                "stopped by its observer after {} {} ({} operator applications, {} of {} \
                 converged, residual {:.3e})",
                p.iteration,
                match p.op {
                    "eigs" => "restarts",
                    "expm_multiply" => "time steps",
                    _ => "iterations",
                },
                p.applications,
                p.converged,
                p.wanted,
                p.residual
            ),
        };
        *self.partial.lock().unwrap_or_else(PoisonError::into_inner) = Some(partial);
        err
    }
}

/// A watch's progress for a method without one (`None`): the calls cost nothing.
pub(crate) fn elapsed(hook: Option<&Hook>) -> Duration {
    hook.map(Hook::elapsed).unwrap_or_default()
}
