//! Converters as users write them ([`Conversion`]) and the unit of registration ([`Batch`]).

use std::any::{Any, TypeId};
use std::sync::Arc;

use super::Listener;
use super::group::Group;
use crate::error::{Error, Result};
use crate::storage::{Data, Kind, Storage};

/// Type-erased converter: takes the source value and the target kind, returns the new value.
///
/// Its error is boxed: `Result<Data, Box<Error>>` is 56 bytes where `Result<Data>` is 112
/// (the size of [`Error`]), and the result passes up through the chain's layers (inlined into
/// `ConversionRegistry::convert`, which unboxes an error once). Both together, through
/// [`to`](crate::to) on one thread: a 2 × 2 Csr → Dense 0.107–0.114 → 0.099–0.101 µs a call
/// (1 061 → 994 instructions), a 10 × 10 Dense → Csr 0.204–0.206 → 0.192–0.193 µs.
pub(crate) type ConvertFn = Arc<dyn Fn(&Data, Kind) -> BoxedResult<Data> + Send + Sync>;

/// A result whose error is boxed (56 bytes for a [`Data`]): what passes between the layers of
/// a conversion.
pub(crate) type BoxedResult<T> = std::result::Result<T, Box<Error>>;

/// The largest conversion weight accepted. Weights are relative costs (the built-in ones are
/// 1 to 2); the bound keeps every sum of weights along a chain finite and far from
/// `f64::MAX`.
pub const MAX_WEIGHT: f64 = 1e6;

/// How a conversion names its endpoints before they are resolved to kinds.
#[derive(Clone, Copy)]
pub(crate) enum KindRef {
    Type(TypeId, &'static str),
    Kind(Kind),
}

/// One converter between two storage kinds, with its weight (its relative cost) and what it
/// promises.
///
/// A conversion is *exact* when it loses nothing (every value comes back equal through the
/// reverse conversion) and *total* when it succeeds on every valid input. [`Conversion::new`]
/// declares both; say [`partial`](Conversion::partial) or [`lossy`](Conversion::lossy) when
/// that is not so. The registry uses a conversion that is not exact and total only as the
/// last step of a chain, when its own target kind is the one asked for: it never routes a
/// conversion between two other kinds through it. Conversions between two built-in kinds use
/// built-in kinds only, whatever is registered.
///
/// ```
/// use polymat::{Conversion, Csr, Dense};
///
/// // A typed converter: the kinds come from the types.
/// let c = Conversion::new(|d: &Dense| Ok(Csr::from_rows(&d.to_rows())?), 2.0);
/// assert_eq!(c.weight(), 2.0);
/// assert!(c.is_exact() && c.is_total());
/// let c = c.partial();
/// assert!(!c.is_total());
/// ```
#[derive(Clone)]
pub struct Conversion {
    pub(crate) from: KindRef,
    pub(crate) to: KindRef,
    pub(crate) weight: f64,
    pub(crate) exact: bool,
    pub(crate) total: bool,
    pub(crate) f: ConvertFn,
}

impl Conversion {
    /// A converter from storage type `A` to storage type `B`, declared exact and total.
    pub fn new<A: Storage, B: Storage>(
        f: impl Fn(&A) -> Result<B> + Send + Sync + 'static,
        weight: f64,
    ) -> Conversion {
        let name = std::any::type_name::<A>();
        Conversion::typed::<A, B>(
            weight,
            Arc::new(move |d: &Data, to: Kind| {
                let a = d.downcast_or_err::<A>("convert", name)?;
                Ok(Data::with_kind(to, f(a)?))
            }),
        )
    }

    /// A converter from `A` to `B` whose function wraps its result in a [`Data`] itself. The
    /// built-in Csr → Dense converter uses it to build the `Data` where the result is made,
    /// without a move through the stack
    /// ([`csr_to_dense_data`](super::csr_dense::csr_to_dense_data)). Its function is not
    /// given the target kind as [`new`](Conversion::new)'s wrapper is: that extra argument
    /// alone cost Csr → Dense 2 × 2 60 → 72 ns (the moves laid out otherwise).
    pub(crate) fn new_data<A: Storage, B: Storage>(
        f: impl Fn(&A) -> BoxedResult<Data> + Send + Sync + 'static,
        weight: f64,
    ) -> Conversion {
        let name = std::any::type_name::<A>();
        Conversion::typed::<A, B>(
            weight,
            Arc::new(move |d: &Data, _to: Kind| f(d.downcast_or_err::<A>("convert", name)?)),
        )
    }

    /// An exact and total converter from `A` to `B` running `f`.
    fn typed<A: Storage, B: Storage>(weight: f64, f: ConvertFn) -> Conversion {
        Conversion {
            from: KindRef::Type(TypeId::of::<A>(), std::any::type_name::<A>()),
            to: KindRef::Type(TypeId::of::<B>(), std::any::type_name::<B>()),
            weight,
            exact: true,
            total: true,
            f,
        }
    }

    /// A converter between kinds given at run time, declared exact and total; its output kind
    /// is checked on every call.
    pub fn dynamic(
        from: Kind,
        to: Kind,
        f: impl Fn(&Data) -> Result<Data> + Send + Sync + 'static,
        weight: f64,
    ) -> Conversion {
        Conversion {
            from: KindRef::Kind(from),
            to: KindRef::Kind(to),
            weight,
            exact: true,
            total: true,
            f: Arc::new(move |d: &Data, _to: Kind| Ok(f(d)?)),
        }
    }

    /// Declares that the conversion fails on some valid inputs (a Dense → Diag conversion that
    /// refuses off-diagonal entries, say).
    pub fn partial(mut self) -> Conversion {
        self.total = false;
        self
    }

    /// Declares that the conversion may change values (storage in single precision, say).
    pub fn lossy(mut self) -> Conversion {
        self.exact = false;
        self
    }

    /// The weight given at construction.
    pub fn weight(&self) -> f64 {
        self.weight
    }

    /// Whether the conversion is declared lossless.
    pub fn is_exact(&self) -> bool {
        self.exact
    }

    /// Whether the conversion is declared to succeed on every valid input.
    pub fn is_total(&self) -> bool {
        self.total
    }
}

/// A storage type waiting in a [`Batch`].
pub(crate) struct NewType {
    pub(crate) type_id: TypeId,
    pub(crate) type_name: &'static str,
    pub(crate) name: String,
    pub(crate) aliases: Vec<String>,
}

/// Several registrations applied together, with one rebuild of every dispatcher.
///
/// Nothing happens until [`ConversionRegistry::commit`](super::ConversionRegistry::commit); if
/// any part fails, nothing is applied.
///
/// ```
/// use polymat::{Batch, Conversion, Dense, Storage, registry};
///
/// #[derive(Debug, Clone)]
/// struct Scalar1(polymat::c64);
/// impl Storage for Scalar1 {
///     fn shape(&self) -> (usize, usize) { (1, 1) }
/// }
///
/// let mut batch = Batch::new();
/// batch
///     .register_type::<Scalar1>("Scalar1", &["scalar1"])
///     .add_conversion(Conversion::new(|s: &Scalar1| Ok(Dense::from_fn(1, 1, |_, _| s.0)), 1.0))
///     .add_conversion(Conversion::new(|d: &Dense| Ok(Scalar1(d.get(0, 0))), 1.0).partial());
/// registry().commit(batch).unwrap();
/// assert!(registry().parse_kind("scalar1").is_ok());
/// ```
#[derive(Default)]
pub struct Batch {
    pub(crate) types: Vec<NewType>,
    pub(crate) conversions: Vec<Conversion>,
    pub(crate) groups: Vec<(KindRef, Group)>,
    pub(crate) pending: Vec<Pending>,
}

/// A dispatcher-specific item queued in a batch, with the dispatcher it is for.
pub(crate) type Pending = (Arc<dyn Listener>, Box<dyn Any + Send>);

impl Batch {
    /// An empty batch.
    pub fn new() -> Batch {
        Batch::default()
    }

    /// Adds storage type `T` under `name` and `aliases` (matched case-insensitively).
    pub fn register_type<T: Storage>(&mut self, name: &str, aliases: &[&str]) -> &mut Batch {
        self.types.push(NewType {
            type_id: TypeId::of::<T>(),
            type_name: std::any::type_name::<T>(),
            name: name.to_owned(),
            aliases: aliases.iter().map(|a| (*a).to_owned()).collect(),
        });
        self
    }

    /// Adds a converter.
    pub fn add_conversion(&mut self, conversion: Conversion) -> &mut Batch {
        self.conversions.push(conversion);
        self
    }

    /// Puts storage type `T` (registered earlier or in this batch) in `group`. Built-in kinds
    /// keep their built-in groups only.
    ///
    /// ```
    /// use polymat::{Batch, Conversion, Csr, Group, Kind, Out, Storage, registry};
    ///
    /// // A banded sparse kind that joins the sparse family.
    /// #[derive(Debug, Clone)]
    /// struct Band(Csr);
    /// impl Storage for Band {
    ///     fn shape(&self) -> (usize, usize) { self.0.shape() }
    /// }
    /// let mut b = Batch::new();
    /// b.register_type::<Band>("Band", &[])
    ///     .add_conversion(Conversion::new(|x: &Band| Ok(x.0.clone()), 1.0))
    ///     .add_conversion(Conversion::new(|c: &Csr| Ok(Band(c.clone())), 1.0))
    ///     .add_to_group::<Band>(Group::SPARSE);
    /// registry().commit(b)?;
    /// let band = registry().kind_of::<Band>()?;
    /// assert_eq!(registry().kinds_in(Group::SPARSE), vec![Kind::CSR, Kind::DIA, Kind::GPU_CSR, band]);
    /// # Ok::<(), polymat::Error>(())
    /// ```
    pub fn add_to_group<T: Storage>(&mut self, group: Group) -> &mut Batch {
        self.groups.push((
            KindRef::Type(TypeId::of::<T>(), std::any::type_name::<T>()),
            group,
        ));
        self
    }

    /// Puts an already registered `kind` in `group` (as [`Batch::add_to_group`]).
    pub fn add_kind_to_group(&mut self, kind: Kind, group: Group) -> &mut Batch {
        self.groups.push((KindRef::Kind(kind), group));
        self
    }

    /// Queues a dispatcher-specific item (a specialisation) for that listener.
    pub(crate) fn push_pending(&mut self, listener: Arc<dyn Listener>, item: Box<dyn Any + Send>) {
        self.pending.push((listener, item));
    }
}

/// Checks a weight: finite, positive and at most [`MAX_WEIGHT`].
pub(crate) fn check_weight(from: &str, to: &str, weight: f64) -> Result<()> {
    if weight.is_finite() && weight > 0.0 && weight <= MAX_WEIGHT {
        Ok(())
    } else {
        Err(Error::InvalidWeight {
            from: from.to_owned(),
            to: to.to_owned(),
            weight,
        })
    }
}
