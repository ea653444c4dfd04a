//! Process-wide and per-thread policies for dispatched calls: whether implicit conversions are
//! allowed, and which kind `Out::Auto` means (QuTiP's `default_dtype` and
//! `default_dtype_scope`).
//!
//! Cost: with no policy set anywhere, a call pays one relaxed atomic load. Once a policy is set
//! globally or any thread has a scope open, calls read the thread's scope or the global value.

use std::cell::Cell;
use std::sync::RwLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::Out;

/// What a dispatched call does when it has to convert something: an input to the kind its
/// kernel takes, the kernel's result to the requested kind, or a kernel's own internal
/// conversion (a sparse matrix function computed densely).
///
/// Explicit conversions ([`to`](crate::to), [`Data::to`](crate::Data::to)) are never affected.
///
/// ```
/// use polymat::{Csr, Dense, Error, ImplicitConversions, Out};
///
/// let a = Csr::identity(2).into();
/// let b = Dense::identity(2).into();
/// let r = polymat::with_implicit_conversions(ImplicitConversions::Deny, || {
///     polymat::add(&a, &b, Out::Csr)
/// });
/// let err = r.unwrap_err();
/// assert!(matches!(err, Error::ConversionDenied { .. }));
/// assert!(err.to_string().contains("Dense -> Csr"), "{err}");
/// // Direct kernels still run.
/// let ok = polymat::with_implicit_conversions(ImplicitConversions::Deny, || {
///     polymat::add(&a, &b, Out::Dense)
/// });
/// assert!(ok.is_ok());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ImplicitConversions {
    /// Convert silently (the default).
    #[default]
    Allow,
    /// Convert, and report each call that converts: a `tracing` warning with the feature
    /// `tracing`, a line on standard error without it.
    Warn,
    /// Refuse: the call returns [`Error::ConversionDenied`](crate::Error::ConversionDenied)
    /// naming the conversions it would have run.
    Deny,
}

/// Which calls a default output applies to, when they are made with `Out::Auto` (QuTiP's
/// `default_dtype_scope`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DefaultScope {
    /// Only constructors (`zeros`, `identity`, `diag`, `one_element`, ... and other
    /// dispatchers without matrix inputs).
    #[default]
    Creation,
    /// Constructors, and every operation whose inputs have no direct kernel (a call that
    /// converts anyway lands on the default kind).
    Missing,
    /// Every operation that returns a matrix.
    Full,
}

/// The settings a call sees.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Policy {
    pub(crate) conversions: ImplicitConversions,
    pub(crate) output: Option<(Out, DefaultScope)>,
}

/// Global non-default settings (0 or 1) plus open thread scopes: zero means "no policy".
static ACTIVE: AtomicUsize = AtomicUsize::new(0);
static GLOBAL: RwLock<Policy> = RwLock::new(Policy {
    conversions: ImplicitConversions::Allow,
    output: None,
});

thread_local! {
    static SCOPED: Cell<Option<Policy>> = const { Cell::new(None) };
}

/// Whether any policy is set anywhere (one relaxed load).
#[inline(always)]
pub(crate) fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed) != 0
}

/// The policy this thread sees.
pub(crate) fn current() -> Policy {
    SCOPED
        .try_with(Cell::get)
        .ok()
        .flatten()
        .unwrap_or_else(global)
}

fn global() -> Policy {
    *GLOBAL.read().unwrap_or_else(|p| p.into_inner())
}

fn set_global(f: impl FnOnce(&mut Policy)) {
    let mut g = GLOBAL.write().unwrap_or_else(|p| p.into_inner());
    let was = *g != Policy::default();
    f(&mut g);
    let is = *g != Policy::default();
    match (was, is) {
        (false, true) => {
            ACTIVE.fetch_add(1, Ordering::Relaxed);
        }
        (true, false) => {
            ACTIVE.fetch_sub(1, Ordering::Relaxed);
        }
        _ => {}
    }
}

/// Runs `f` with this thread's policy changed by `change`, restoring it afterwards (also on
/// panic).
fn scoped<T>(change: impl FnOnce(&mut Policy), f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Policy>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = SCOPED.try_with(|s| s.set(self.0));
            ACTIVE.fetch_sub(1, Ordering::Relaxed);
        }
    }
    let mut p = current();
    change(&mut p);
    ACTIVE.fetch_add(1, Ordering::Relaxed);
    let _restore = Restore(SCOPED.try_with(|s| s.replace(Some(p))).ok().flatten());
    f()
}

/// Sets the process-wide implicit-conversion policy (threads inside
/// [`with_implicit_conversions`] keep theirs).
pub fn set_implicit_conversions(policy: ImplicitConversions) {
    set_global(|g| g.conversions = policy);
}

/// The implicit-conversion policy this thread sees.
pub fn implicit_conversions() -> ImplicitConversions {
    current().conversions
}

/// Runs `f` with `policy` for implicit conversions on this thread only.
pub fn with_implicit_conversions<T>(policy: ImplicitConversions, f: impl FnOnce() -> T) -> T {
    scoped(|p| p.conversions = policy, f)
}

/// Sets the process-wide default output: calls in `scope` made with `Out::Auto` return `out`.
/// `Out::Auto` clears it (QuTiP's `settings.core["default_dtype"] = None`).
///
/// ```
/// use polymat::{DefaultScope, Kind, Out};
///
/// polymat::set_default_output(Out::Dense, DefaultScope::Creation);
/// assert_eq!(polymat::identity(3, Out::Auto)?.kind(), Kind::DENSE);
/// polymat::set_default_output(Out::Auto, DefaultScope::Creation);
/// assert_eq!(polymat::identity(3, Out::Auto)?.kind(), Kind::CSR);
/// # Ok::<(), polymat::Error>(())
/// ```
pub fn set_default_output(out: Out, scope: DefaultScope) {
    set_global(|g| g.output = (out != Out::Auto).then_some((out, scope)));
}

/// The default output this thread sees, if any.
pub fn default_output() -> Option<(Out, DefaultScope)> {
    current().output
}

/// Runs `f` with a default output on this thread only (`Out::Auto`: none).
///
/// ```
/// use polymat::{DefaultScope, Dense, Kind, Out};
///
/// let a = Dense::identity(2).into();
/// let s = polymat::with_default_output(Out::Csr, DefaultScope::Full, || {
///     polymat::add(&a, &a, Out::Auto)
/// })?;
/// assert_eq!(s.kind(), Kind::CSR);
/// assert_eq!(polymat::add(&a, &a, Out::Auto)?.kind(), Kind::DENSE);
/// # Ok::<(), polymat::Error>(())
/// ```
pub fn with_default_output<T>(out: Out, scope: DefaultScope, f: impl FnOnce() -> T) -> T {
    scoped(|p| p.output = (out != Out::Auto).then_some((out, scope)), f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_nest_and_restore() {
        assert_eq!(current(), Policy::default());
        with_implicit_conversions(ImplicitConversions::Warn, || {
            assert!(active());
            with_default_output(Out::Csr, DefaultScope::Full, || {
                let p = current();
                assert_eq!(p.conversions, ImplicitConversions::Warn);
                assert_eq!(p.output, Some((Out::Csr, DefaultScope::Full)));
            });
            assert_eq!(current().output, None);
        });
        assert_eq!(current(), Policy::default());
    }
}
