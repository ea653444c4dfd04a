//! Specialisations: the kernels a dispatcher chooses from.

use std::any::TypeId;
use std::fmt;
use std::sync::Arc;

use super::Out;
use crate::error::{Error, Result};
use crate::scalar::c64;
use crate::storage::{Data, Kind, Storage};

/// The value a dispatcher returns: a matrix ([`Data`], whose kind is dispatched) or a plain
/// value (a scalar, a flag, ...), which is not.
///
/// Implemented for [`Data`], [`c64`], `f64`, `bool`, `usize` and `Vec<Data>`. Implement it
/// (keeping the defaults) for your own result types to write dispatchers that return them.
///
/// Not to be confused with [`Out`], the *requested kind* of a matrix result.
pub trait ReturnValue: Send + Sync + Sized + 'static {
    /// Whether the output kind is dispatched (true only for [`Data`]).
    const DISPATCHED: bool = false;

    /// A short label for displays, e.g. `"c64"`.
    fn label() -> &'static str {
        "value"
    }

    /// Converts a dispatched output to `kind`; plain values are returned as they are.
    ///
    /// # Errors
    /// [`Error::NoConversion`] if a matrix cannot be converted to `kind`.
    fn convert_to(self, kind: Kind) -> Result<Self> {
        let _ = kind;
        Ok(self)
    }

    /// Applies `f` to a dispatched output; plain values are returned as they are.
    #[doc(hidden)]
    fn map_data(self, f: impl FnOnce(&Data) -> Result<Data>) -> Result<Self> {
        let _ = f;
        Ok(self)
    }
}

impl ReturnValue for Data {
    const DISPATCHED: bool = true;

    fn label() -> &'static str {
        "Data"
    }

    fn convert_to(self, kind: Kind) -> Result<Self> {
        crate::convert::registry().convert(&self, kind)
    }

    fn map_data(self, f: impl FnOnce(&Data) -> Result<Data>) -> Result<Self> {
        f(&self)
    }
}

macro_rules! plain_output {
    ($($t:ty => $label:literal),*) => {$(
        impl $crate::dispatch::ReturnValue for $t {
            fn label() -> &'static str {
                $label
            }
        }
        impl $crate::dispatch::KernelReturn<$t> for $t {
            fn storage_type() -> Option<(std::any::TypeId, &'static str)> {
                None
            }
            fn into_output(self, _native: $crate::storage::Kind) -> $t {
                self
            }
        }
    )*};
}
plain_output!(c64 => "c64", f64 => "f64", bool => "bool", usize => "usize", Vec<Data> => "Vec<Data>");
pub(crate) use plain_output;

/// What a typed kernel may return for a dispatcher returning `R`: a concrete storage type
/// (wrapped into [`Data`] with its kind) or `R` itself.
pub trait KernelReturn<R>: Sized + 'static {
    /// The storage type returned, if it is one; its kind becomes the kernel's native output.
    fn storage_type() -> Option<(TypeId, &'static str)>;
    /// Wraps the value; `native` is the kind resolved from `storage_type`.
    fn into_output(self, native: Kind) -> R;
}

impl<T: Storage> KernelReturn<Data> for T {
    fn storage_type() -> Option<(TypeId, &'static str)> {
        Some((TypeId::of::<T>(), std::any::type_name::<T>()))
    }
    #[inline]
    fn into_output(self, native: Kind) -> Data {
        Data::with_kind(native, self)
    }
}

impl KernelReturn<Data> for Data {
    fn storage_type() -> Option<(TypeId, &'static str)> {
        None
    }
    fn into_output(self, _native: Kind) -> Data {
        self
    }
}

/// Per-call context handed to erased kernels: the requested output kind and the kernel's
/// native output kind (meaningless for plain outputs and generic kernels). Two `u32`s, so that
/// it travels in registers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ctx {
    /// The requested kind's index, [`Ctx::AUTO`] for none. No kind has that index: a
    /// registration that would take a one-input table past `MAX_TABLE_CELLS` (2²⁰) fails, so
    /// there are fewer than 2¹⁰ kinds.
    out: u32,
    pub(crate) native: Kind,
}

impl Ctx {
    const AUTO: u32 = u32::MAX;

    /// The context of a cell for output `out` (`None`: `Out::Auto`) and a kernel producing
    /// `native`.
    pub(crate) fn new(out: Option<Kind>, native: Kind) -> Ctx {
        Ctx {
            out: out.map_or(Ctx::AUTO, |k| k.0),
            native,
        }
    }

    /// The requested output: a kind, or `Out::Auto`.
    pub(crate) fn out(self) -> Out {
        if self.out == Ctx::AUTO {
            Out::Auto
        } else {
            Out::from(Kind(self.out))
        }
    }
}

/// A type-erased kernel.
pub(crate) type KernelFn<P, R> = Arc<dyn Fn(&[&Data], &P, Ctx) -> Result<R> + Send + Sync>;

/// A Rust type named by a specialisation, resolved to a kind at registration.
type TypeKey = (TypeId, &'static str);

/// A kernel for one combination of input types (and output type), or a generic kernel that
/// accepts any kinds.
///
/// Typed constructors take a closure over the concrete types; the dispatcher only calls it
/// with inputs of exactly those types, converting others first.
///
/// ```
/// use polymat::{Dense, Dispatcher, Out, Specialisation, c64};
///
/// // A dispatcher for "double the matrix", with one Dense kernel.
/// let double = Dispatcher::<()>::builder("double", 1)
///     .specialisation(Specialisation::unary("double_dense", |a: &Dense, _: &()| {
///         Ok(Dense::from_fn(a.shape().0, a.shape().1, |i, j| a.get(i, j) * 2.0))
///     }))
///     .build()
///     .unwrap();
/// let x = polymat::Csr::identity(2).into();
/// let y = double.call(&[&x], Out::Auto, &()).unwrap(); // Csr converted to Dense first
/// assert_eq!(y.downcast_ref::<Dense>().unwrap().get(1, 1), c64::new(2.0, 0.0));
/// ```
pub struct Specialisation<P, R = Data> {
    pub(crate) name: String,
    pub(crate) inputs: Vec<Option<TypeKey>>,
    pub(crate) output: Option<TypeKey>,
    /// The storage type the kernel converts its inputs to internally (see
    /// [`Specialisation::converts_internally_to`]).
    pub(crate) via: Option<TypeKey>,
    pub(crate) kernel: KernelFn<P, R>,
}

impl<P, R> Clone for Specialisation<P, R> {
    fn clone(&self) -> Self {
        Specialisation {
            name: self.name.clone(),
            inputs: self.inputs.clone(),
            output: self.output,
            via: self.via,
            kernel: self.kernel.clone(),
        }
    }
}

impl<P, R> fmt::Debug for Specialisation<P, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self
            .inputs
            .iter()
            .map(|t| t.map_or("Any", |(_, n)| short(n)))
            .collect();
        write!(f, "Specialisation({} [{}]", self.name, names.join(", "))?;
        if let Some((_, n)) = self.output {
            write!(f, " -> {}", short(n))?;
        }
        f.write_str(")")
    }
}

fn short(type_name: &str) -> &str {
    type_name.rsplit("::").next().unwrap_or(type_name)
}

fn key<T: 'static>() -> TypeKey {
    (TypeId::of::<T>(), std::any::type_name::<T>())
}

impl<P: Send + Sync + 'static, R: ReturnValue> Specialisation<P, R> {
    /// A kernel with no matrix input (a constructor such as `zeros`), returning `O`.
    pub fn nullary<O: KernelReturn<R>>(
        name: &str,
        f: impl Fn(&P) -> Result<O> + Send + Sync + 'static,
    ) -> Self {
        Specialisation {
            name: name.to_owned(),
            inputs: Vec::new(),
            output: O::storage_type(),
            via: None,
            kernel: Arc::new(move |_, p, ctx| f(p).map(|o| o.into_output(ctx.native))),
        }
    }

    /// A kernel for one input of type `A`.
    pub fn unary<A: Storage, O: KernelReturn<R>>(
        name: &str,
        f: impl Fn(&A, &P) -> Result<O> + Send + Sync + 'static,
    ) -> Self {
        let kname = name.to_owned();
        Specialisation {
            name: name.to_owned(),
            inputs: vec![Some(key::<A>())],
            output: O::storage_type(),
            via: None,
            kernel: Arc::new(move |args, p, ctx| {
                let a = args[0].downcast_or_err::<A>("dispatch", &kname)?;
                f(a, p).map(|o| o.into_output(ctx.native))
            }),
        }
    }

    /// A kernel for inputs of types `A` and `B`.
    pub fn binary<A: Storage, B: Storage, O: KernelReturn<R>>(
        name: &str,
        f: impl Fn(&A, &B, &P) -> Result<O> + Send + Sync + 'static,
    ) -> Self {
        let kname = name.to_owned();
        Specialisation {
            name: name.to_owned(),
            inputs: vec![Some(key::<A>()), Some(key::<B>())],
            output: O::storage_type(),
            via: None,
            kernel: Arc::new(move |args, p, ctx| {
                let a = args[0].downcast_or_err::<A>("dispatch", &kname)?;
                let b = args[1].downcast_or_err::<B>("dispatch", &kname)?;
                f(a, b, p).map(|o| o.into_output(ctx.native))
            }),
        }
    }

    /// A kernel for inputs of types `A`, `B` and `C`.
    pub fn ternary<A: Storage, B: Storage, C: Storage, O: KernelReturn<R>>(
        name: &str,
        f: impl Fn(&A, &B, &C, &P) -> Result<O> + Send + Sync + 'static,
    ) -> Self {
        let kname = name.to_owned();
        Specialisation {
            name: name.to_owned(),
            inputs: vec![Some(key::<A>()), Some(key::<B>()), Some(key::<C>())],
            output: O::storage_type(),
            via: None,
            kernel: Arc::new(move |args, p, ctx| {
                let a = args[0].downcast_or_err::<A>("dispatch", &kname)?;
                let b = args[1].downcast_or_err::<B>("dispatch", &kname)?;
                let c = args[2].downcast_or_err::<C>("dispatch", &kname)?;
                f(a, b, c, p).map(|o| o.into_output(ctx.native))
            }),
        }
    }

    /// A generic kernel: accepts inputs of any kind, unconverted, and gets the requested
    /// output so that it can pass it on (QuTiP's `Data` specialisations, PyTorch's composite
    /// kernels). Typically written in terms of other dispatchers.
    ///
    /// A generic kernel never causes conversions, so it wins every tuple unless a typed kernel
    /// is as cheap (see [`Dispatcher`](crate::Dispatcher) for the exact rule). If it returns
    /// another kind than the one requested, the dispatcher converts the result.
    ///
    /// ```
    /// use polymat::{Data, Dispatcher, Out, Specialisation, c64};
    ///
    /// // "a - b" for every pair of kinds, through the add dispatcher.
    /// let sub = Dispatcher::<()>::builder("my_sub", 2)
    ///     .specialisation(Specialisation::generic("sub_via_add", 2, |args: &[&Data], out, _: &()| {
    ///         polymat::ops::ADD.call(args, out, &c64::new(-1.0, 0.0))
    ///     }))
    ///     .build()
    ///     .unwrap();
    /// let a: Data = polymat::Csr::identity(2).into();
    /// let z = sub.call(&[&a, &a], Out::Dense, &()).unwrap();
    /// assert!(polymat::iszero(&z, 0.0).unwrap());
    /// ```
    pub fn generic(
        name: &str,
        arity: usize,
        f: impl Fn(&[&Data], Out, &P) -> Result<R> + Send + Sync + 'static,
    ) -> Self {
        Specialisation {
            name: name.to_owned(),
            inputs: vec![None; arity],
            output: None,
            via: None,
            kernel: Arc::new(move |args, p, ctx| f(args, ctx.out(), p)),
        }
    }

    /// Declares that the kernel converts its inputs to storage type `T` internally (and its
    /// result back to its output type), as a kernel that computes a sparse matrix function
    /// densely does. The dispatcher then never reports the path as direct, [`explain`] lists
    /// those conversions, and [`ImplicitConversions::Deny`](crate::ImplicitConversions::Deny)
    /// refuses them; the choice of kernel is unchanged.
    ///
    /// [`explain`]: crate::Dispatcher::explain
    ///
    /// ```
    /// use polymat::{Csr, Dense, Dispatcher, Kind, Out, Specialisation};
    ///
    /// let op = Dispatcher::<()>::builder("my_dense_thing", 1)
    ///     .specialisation(
    ///         Specialisation::unary("thing_csr", |a: &Csr, _: &()| Ok(a.clone()))
    ///             .converts_internally_to::<Dense>(),
    ///     )
    ///     .build()
    ///     .unwrap();
    /// let e = op.explain(&[Kind::CSR], Out::Auto).unwrap();
    /// assert!(!e.direct);
    /// assert!(e.to_string().contains("internally"));
    /// ```
    pub fn converts_internally_to<T: Storage>(mut self) -> Self {
        self.via = Some(key::<T>());
        self
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Resolves the types to kinds against a registry snapshot.
    pub(crate) fn resolve(
        &self,
        op: &str,
        arity: usize,
        snap: &crate::convert::Snapshot,
    ) -> Result<Spec<P, R>> {
        if self.inputs.len() != arity {
            return Err(Error::InvalidSpecialisation {
                op: op.to_owned(),
                name: self.name.clone(),
                reason: format!(
                    "it takes {} input(s) but the dispatcher takes {arity}",
                    self.inputs.len()
                ),
            });
        }
        let inputs = self
            .inputs
            .iter()
            .map(|t| t.map(|(id, n)| snap.kind_of_type(id, n)).transpose())
            .collect::<Result<Vec<_>>>()?;
        let output = self
            .output
            .map(|(id, n)| snap.kind_of_type(id, n))
            .transpose()?;
        let via = self
            .via
            .map(|(id, n)| snap.kind_of_type(id, n))
            .transpose()?;
        Ok(Spec {
            name: self.name.clone(),
            generic: inputs.iter().any(Option::is_none),
            inputs,
            output,
            via,
            kernel: self.kernel.clone(),
        })
    }
}

/// A specialisation resolved to kinds.
pub(crate) struct Spec<P, R> {
    pub(crate) name: String,
    /// `None` for an input position that accepts any kind.
    pub(crate) inputs: Vec<Option<Kind>>,
    /// The kind a `Data`-returning typed kernel produces.
    pub(crate) output: Option<Kind>,
    /// The kind the kernel converts to internally, if it says so.
    pub(crate) via: Option<Kind>,
    pub(crate) generic: bool,
    pub(crate) kernel: KernelFn<P, R>,
}

impl<P, R> Spec<P, R> {
    /// Same inputs and output: a later registration replaces an earlier one.
    pub(crate) fn same_key(&self, other: &Spec<P, R>) -> bool {
        self.inputs == other.inputs && self.output == other.output
    }
}
