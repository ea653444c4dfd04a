//! Calls on kinds whose operations are collective over several processes (the MPI kinds of
//! `crate::mpi`): every rank must learn when one rank fails, or the others wait for it forever
//! in the next collective.
//!
//! The dispatcher knows nothing of MPI. The distributed module installs a [`Hook`] naming its
//! group; every table cell with an input or output kind in that group is marked collective
//! (never on the fast path), and the whole call — the dense-limit check, conversions, the
//! kernel and its output conversion — runs inside [`run`]: a panicking kernel becomes
//! [`Error::KernelPanicked`] instead of unwinding through the caller, and the hook's `finish`
//! agrees with the other ranks on the outcome, so a failure on one rank is an error on every
//! rank.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

use crate::convert::{Group, registry};
use crate::error::{Error, Result};
use crate::storage::Data;

/// What the distributed module plugs into the dispatcher.
pub(crate) struct Hook {
    /// The kinds whose calls are collective: the members of this group.
    pub(crate) group: Group,
    /// Called before the call's work starts (forgets a failure agreed on by an earlier call).
    pub(crate) begin: fn(),
    /// Called with this rank's outcome once the call's work is done: `Ok(())` to return that
    /// outcome, `Err(e)` to return `e` instead (another rank failed).
    pub(crate) finish: fn(op: &str, failed: Option<&Error>) -> Result<()>,
}

static HOOK: OnceLock<Hook> = OnceLock::new();

/// Installs the hook (once per process; a second hook is refused and `false` returned).
// Only the MPI kinds install one.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn install(hook: Hook) -> bool {
    HOOK.set(hook).is_ok()
}

/// The group whose kinds make calls collective, once a hook is installed.
pub(crate) fn group() -> Option<Group> {
    HOOK.get().map(|h| h.group)
}

/// Runs one collective call: `f` with its panics caught, then the agreement on its outcome.
pub(crate) fn run<R>(op: &str, kernel: &str, f: impl FnOnce() -> Result<R>) -> Result<R> {
    let Some(hook) = HOOK.get() else {
        return f();
    };
    (hook.begin)();
    // `AssertUnwindSafe`: nothing the closure borrows is observed in a broken state after a
    // panic — the inputs are shared references, and a partial result unwinds with the frame.
    let r = catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| Err(panicked(op, kernel, &*p)));
    match (hook.finish)(op, r.as_ref().err()) {
        Ok(()) => r,
        Err(e) => Err(e),
    }
}

/// A call on this rank that failed before reaching its entry (the dispatcher's shape check):
/// when an input is collective, the other ranks may be inside the call already, waiting in
/// an agreement; this rank agrees on its failure so that they return too.
#[cold]
pub(crate) fn early_error(op: &str, args: &[&Data], e: Error) -> Error {
    let Some(hook) = HOOK.get() else {
        return e;
    };
    let members = registry().kinds_in(hook.group);
    if !args.iter().any(|a| members.contains(&a.kind())) {
        return e;
    }
    (hook.begin)();
    match (hook.finish)(op, Some(&e)) {
        Ok(()) => e,
        Err(other) => other,
    }
}

fn panicked(op: &str, kernel: &str, payload: &(dyn Any + Send)) -> Error {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned());
    Error::KernelPanicked {
        op: op.to_owned(),
        kernel: kernel.to_owned(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_payload_becomes_the_message() {
        let e = panicked("add", "k", &"boom");
        assert_eq!(e.to_string(), "add: the kernel k panicked: boom");
        let e = panicked("add", "k", &String::from("bang"));
        assert!(e.to_string().ends_with("bang"));
        let e = panicked("add", "k", &7u8);
        assert!(e.to_string().ends_with("a panic without a message"));
    }
}
