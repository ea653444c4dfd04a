//! Building a dispatcher, and rebuilding its table when the registry changes.

use std::any::Any;
use std::sync::Arc;

use arc_swap::ArcSwap;

use super::spec::{KernelReturn, ReturnValue, Specialisation};
use super::table::Table;
use super::{Check, CheckFn, Dispatcher, Inner, Out, ShapeFn, State};
use crate::cache;
use crate::convert::{Listener, Prepared, Snapshot, registry};
use crate::error::{Error, Result};
use crate::storage::{Data, Storage};

/// The largest number of matrix inputs a dispatcher may take.
pub const MAX_ARITY: usize = 8;

/// The largest number of cells a dispatcher's table may have: `K^N · (K + 1)` for K kinds and
/// N inputs (`K^N` for operations returning a plain value). A registration that would take any
/// table past it fails as a whole.
pub const MAX_TABLE_CELLS: usize = 1 << 20;

/// Builds a [`Dispatcher`] with its first specialisations and one table build.
///
/// The shorthands ([`unary`](Self::unary), [`binary`](Self::binary), ...) add a
/// [`Specialisation`] in one line each:
///
/// ```
/// use polymat::{Csr, Dense, Dispatcher, Out, c64};
///
/// let double = Dispatcher::<()>::builder("double", 1)
///     .unary("double_dense", |a: &Dense, _: &()| polymat::ops::scale::mul_dense(a, c64::new(2.0, 0.0)))
///     .unary("double_csr", |a: &Csr, _: &()| polymat::ops::scale::mul_csr(a, c64::new(2.0, 0.0)))
///     .build()?;
/// let y = double.call(&[&Csr::identity(2).into()], Out::Auto, &())?;
/// assert_eq!(format!("{y:#}"), "Csr(2×2, nnz=2)");
/// # Ok::<(), polymat::Error>(())
/// ```
pub struct DispatcherBuilder<P: 'static, R: ReturnValue> {
    pub(super) name: String,
    pub(super) arity: usize,
    pub(super) check: Check<P>,
    pub(super) result_shape: Option<ShapeFn<P>>,
    pub(super) specs: Vec<Specialisation<P, R>>,
}

impl<P: Send + Sync + 'static, R: ReturnValue> DispatcherBuilder<P, R> {
    /// Sets the shape/parameter check, run on every call before any conversion.
    pub fn check(mut self, check: CheckFn<P>) -> Self {
        self.check = Check::Fn(check);
        self
    }

    /// Tells the dispatcher the shape of the result (see [`ShapeFn`]), so that a call whose
    /// result is converted to Dense fails before its kernel runs when that Dense cannot be
    /// made. The function runs only on such calls, after the [`check`](Self::check).
    ///
    /// ```
    /// use polymat::{Csr, Dispatcher, Error, Out};
    ///
    /// let square = Dispatcher::<()>::builder("square", 1)
    ///     .unary("square_csr", |a: &Csr, _: &()| polymat::ops::matmul::matmul_csr(a, a))
    ///     .result_shape(|args, _| Some(args[0].shape()))
    ///     .build()?;
    /// let h = Csr::try_identity(1 << 20)?.into();
    /// // Sparse: computed. Dense (16 TiB): refused before the product is made.
    /// assert_eq!(square.call(&[&h], Out::Csr, &())?.shape(), (1 << 20, 1 << 20));
    /// let e = square.call(&[&h], Out::Dense, &()).unwrap_err();
    /// assert!(matches!(e, Error::TooLarge { ref op, .. } if op == "square"));
    /// # Ok::<(), polymat::Error>(())
    /// ```
    pub fn result_shape(mut self, shape: ShapeFn<P>) -> Self {
        self.result_shape = Some(shape);
        self
    }

    /// Checks that the first input is square (made inline on every call).
    pub(crate) fn check_square(mut self) -> Self {
        self.check = Check::Square;
        self
    }

    /// Checks that the first two inputs have the same shape (made inline on every call).
    pub(crate) fn check_same_shape(mut self) -> Self {
        self.check = Check::SameShape;
        self
    }

    /// Adds a specialisation.
    pub fn specialisation(mut self, spec: Specialisation<P, R>) -> Self {
        self.specs.push(spec);
        self
    }

    /// Adds [`Specialisation::nullary`].
    pub fn nullary<O: KernelReturn<R>>(
        self,
        name: &str,
        f: impl Fn(&P) -> Result<O> + Send + Sync + 'static,
    ) -> Self {
        self.specialisation(Specialisation::nullary(name, f))
    }

    /// Adds [`Specialisation::unary`].
    pub fn unary<A: Storage, O: KernelReturn<R>>(
        self,
        name: &str,
        f: impl Fn(&A, &P) -> Result<O> + Send + Sync + 'static,
    ) -> Self {
        self.specialisation(Specialisation::unary(name, f))
    }

    /// Adds [`Specialisation::binary`].
    pub fn binary<A: Storage, B: Storage, O: KernelReturn<R>>(
        self,
        name: &str,
        f: impl Fn(&A, &B, &P) -> Result<O> + Send + Sync + 'static,
    ) -> Self {
        self.specialisation(Specialisation::binary(name, f))
    }

    /// Adds [`Specialisation::ternary`].
    pub fn ternary<A: Storage, B: Storage, C: Storage, O: KernelReturn<R>>(
        self,
        name: &str,
        f: impl Fn(&A, &B, &C, &P) -> Result<O> + Send + Sync + 'static,
    ) -> Self {
        self.specialisation(Specialisation::ternary(name, f))
    }

    /// Adds [`Specialisation::generic`] for this dispatcher's arity.
    pub fn generic(
        self,
        name: &str,
        f: impl Fn(&[&Data], Out, &P) -> Result<R> + Send + Sync + 'static,
    ) -> Self {
        let arity = self.arity;
        self.specialisation(Specialisation::generic(name, arity, f))
    }

    /// Registers the dispatcher with the process-wide registry and builds its table.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an arity above [`MAX_ARITY`] or a table above
    /// [`MAX_TABLE_CELLS`]; [`Error::UnregisteredType`] or [`Error::InvalidSpecialisation`] for a
    /// specialisation that does not fit.
    pub fn build(self) -> Result<Dispatcher<P, R>> {
        if self.arity > MAX_ARITY {
            return Err(Error::argument(
                &self.name,
                format!(
                    "a dispatcher takes at most {MAX_ARITY} inputs, not {}",
                    self.arity
                ),
            ));
        }
        let inner = Arc::new(Inner {
            id: cache::next_id(),
            name: self.name,
            arity: self.arity,
            check: self.check,
            result_shape: self.result_shape,
            state: ArcSwap::from_pointee(State {
                snap: registry().snapshot().clone(),
                specs: Vec::new(),
                table: Table::empty(),
            }),
            retired: std::sync::Mutex::new(Vec::new()),
        });
        let weak = Arc::downgrade(&inner) as std::sync::Weak<dyn Listener>;
        let specs = self.specs;
        registry().attach(weak, |snap| {
            let state = inner.next_state(snap, specs)?;
            inner.state.store(Arc::new(state));
            Ok(())
        })?;
        Ok(Dispatcher::from_inner(inner))
    }

    /// Builds a built-in dispatcher, whose kernels all use built-in types: it cannot fail
    /// (the unit and integration tests build every one of them).
    pub(crate) fn builtin(self) -> Dispatcher<P, R> {
        let name = self.name.clone();
        self.build()
            .unwrap_or_else(|e| unreachable!("built-in dispatcher {name}: {e}"))
    }
}

impl<P: Send + Sync + 'static, R: ReturnValue> Inner<P, R> {
    /// The state for `snap` with `new` specialisations added (replacing those with the same
    /// input and output types).
    pub(super) fn next_state(
        &self,
        snap: &Arc<Snapshot>,
        new: Vec<Specialisation<P, R>>,
    ) -> Result<State<P, R>> {
        let mut specs = self.state.load().specs.clone();
        for s in new {
            let spec = Arc::new(s.resolve(&self.name, self.arity, snap)?);
            if let Some(i) = specs.iter().position(|old| old.same_key(&spec)) {
                let old = specs.remove(i);
                self.retired
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(old);
            }
            specs.push(spec);
        }
        let cells = Table::<P, R>::cells(snap.n_kinds(), self.arity, R::DISPATCHED);
        if cells.is_none_or(|c| c > MAX_TABLE_CELLS) {
            return Err(Error::argument(
                &self.name,
                format!(
                    "with {} kinds its table would exceed {MAX_TABLE_CELLS} cells",
                    snap.n_kinds()
                ),
            ));
        }
        let table = Table::build(&specs, snap, self.arity, R::DISPATCHED);
        Ok(State {
            snap: snap.clone(),
            specs,
            table,
        })
    }
}

struct PreparedState<'a, P, R> {
    inner: &'a Inner<P, R>,
    state: State<P, R>,
}

impl<P, R> Prepared for PreparedState<'_, P, R> {
    fn publish(self: Box<Self>) {
        self.inner.state.store(Arc::new(self.state));
        cache::invalidate();
    }
}

impl<P: Send + Sync + 'static, R: ReturnValue> Listener for Inner<P, R> {
    fn prepare<'a>(
        &'a self,
        snap: &Arc<Snapshot>,
        pending: Vec<Box<dyn Any + Send>>,
    ) -> Result<Box<dyn Prepared + 'a>> {
        let specs = pending
            .into_iter()
            .map(|p| {
                p.downcast::<Specialisation<P, R>>()
                    .map(|b| *b)
                    .map_err(|_| Error::InvalidSpecialisation {
                        op: self.name.clone(),
                        name: "?".into(),
                        reason: "queued for a dispatcher of another signature".into(),
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Box::new(PreparedState {
            inner: self,
            state: self.next_state(snap, specs)?,
        }))
    }
}
