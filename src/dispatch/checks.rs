//! Shape functions, argument checks and kernel adapters the operations' dispatchers share
//! (a dispatcher's own check before conversions is [`guard`](super::guard)).

use super::{KernelReturn, ReturnValue, Specialisation};
use crate::error::Result;
use crate::shape::{same_shape, square};
use crate::storage::{Data, Dense};

/// A kernel for storage type `A` that runs `f` on a Dense copy of its input, made by
/// `to_dense` (so a large input is refused with [`Error::TooLarge`](crate::Error::TooLarge)
/// instead of densified). It declares the conversion
/// ([`Specialisation::converts_internally_to`]), so `explain()` reports it and
/// [`ImplicitConversions::Deny`](crate::ImplicitConversions::Deny) refuses it.
pub(crate) fn via_dense<A, P, R, O>(
    name: &str,
    to_dense: fn(&A) -> Result<Dense>,
    f: impl Fn(&Dense, &P) -> Result<O> + Send + Sync + 'static,
) -> Specialisation<P, R>
where
    A: crate::storage::Storage,
    P: Send + Sync + 'static,
    R: ReturnValue,
    O: KernelReturn<R>,
{
    Specialisation::unary(name, move |a: &A, p: &P| f(&to_dense(a)?, p))
        .converts_internally_to::<Dense>()
}

/// A tolerance must be finite and ≥ 0 (a negative or NaN one would make the answer depend on
/// how each kind walks its entries).
pub(crate) fn check_tol(op: &str, name: &str, t: f64) -> Result<()> {
    if t.is_finite() && t >= 0.0 {
        Ok(())
    } else {
        Err(crate::error::Error::argument(
            op,
            format!("{name} must be finite and >= 0, got {t}"),
        ))
    }
}

/// The result has the first input's shape (a [`ShapeFn`](crate::dispatch::ShapeFn)).
pub(crate) fn first_shape<P>(args: &[&Data], _: &P) -> Option<(usize, usize)> {
    args.first().map(|a| a.shape())
}

/// The result has the first input's shape transposed.
pub(crate) fn first_shape_flipped<P>(args: &[&Data], _: &P) -> Option<(usize, usize)> {
    args.first().map(|a| (a.shape().1, a.shape().0))
}

/// Dispatcher check: both inputs have the same shape.
pub(crate) fn check_same_shape<P>(op: &str, args: &[&Data], _: &P) -> Result<()> {
    same_shape(op, args[0].shape(), args[1].shape())
}

/// Dispatcher check: the only input is square.
pub(crate) fn check_square<P>(op: &str, args: &[&Data], _: &P) -> Result<()> {
    square(op, args[0].shape())
}
