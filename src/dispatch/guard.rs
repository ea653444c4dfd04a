//! A dispatcher's input check, run before any conversion: the two shape checks most built-in
//! operations use, written out, or a function of the operation's own.

use crate::error::Result;
use crate::storage::Data;

/// Shape and parameter check run before any conversion: `(op name, inputs, params)`.
pub type CheckFn<P> = fn(&str, &[&Data], &P) -> Result<()>;

/// A dispatcher's input check. The two shape checks most built-in operations use are written
/// out, so a call makes them inline (a comparison of the shapes `Data` carries) instead of an
/// indirect call: about 20 instructions less per call on the direct path (`trace` 2×2: see
/// `docs/benchmarks.md`).
pub(super) enum Check<P> {
    /// No check.
    None,
    /// The first input is square.
    Square,
    /// The first two inputs have the same shape.
    SameShape,
    /// A check of its own.
    Fn(CheckFn<P>),
}

// By hand: derived, they would ask `P: Copy`.
impl<P> Clone for Check<P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for Check<P> {}

impl<P> Check<P> {
    /// Runs the check for operation `op` (the call has checked the number of inputs).
    #[inline(always)]
    pub(super) fn run(self, op: &str, args: &[&Data], params: &P) -> Result<()> {
        match (self, args) {
            (Check::Square, [a, ..]) if a.shape().0 != a.shape().1 => not_square(op, a.shape()),
            (Check::SameShape, [a, b, ..]) if a.shape() != b.shape() => {
                not_same_shape(op, a.shape(), b.shape())
            }
            (Check::Fn(f), _) => f(op, args, params),
            _ => Ok(()),
        }
    }
}

/// The error of a failed [`Check::Square`], out of the hot path.
#[cold]
#[inline(never)]
fn not_square(op: &str, shape: (usize, usize)) -> Result<()> {
    crate::shape::square(op, shape)
}

/// The error of a failed [`Check::SameShape`], out of the hot path.
#[cold]
#[inline(never)]
fn not_same_shape(op: &str, a: (usize, usize), b: (usize, usize)) -> Result<()> {
    crate::shape::same_shape(op, a, b)
}
