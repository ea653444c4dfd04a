//! The conversion registry: storage kinds, converters between them, and the cheapest allowed
//! chain of converters for every ordered pair of kinds.
//!
//! The registry is process-wide ([`registry`]). Its state is an immutable snapshot
//! published whole through `arc-swap`: readers never lock and never see a half-made
//! registration. Writers (registering types, conversions and specialisations) take one mutex,
//! build the new snapshot and every dispatcher's new table aside, and publish them only if all
//! of it succeeded, so a failed registration changes nothing.
//!
//! Which chains are allowed (partial and lossy converters only as the last step; built-in kinds
//! only between built-in kinds) is described in `snapshot`'s documentation and in
//! `docs/architecture.md`.

pub(crate) mod builtin;
mod conversion;
mod csr_dense;
mod dense_csr;
pub(crate) mod dia;
mod dot;
mod group;
pub(crate) mod lazy;
mod snapshot;

pub use conversion::{Batch, Conversion, MAX_WEIGHT};
pub use group::{Group, MAX_GROUPS};

pub(crate) use conversion::{Pending, check_weight};
pub(crate) use snapshot::{Chain, Snapshot};

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, Weak};

use arc_swap::ArcSwap;

use crate::cache;
use crate::error::{Error, Result};
use crate::storage::{Data, Kind, Storage};
use conversion::KindRef;
use snapshot::{Edge, KindInfo};

/// Something whose state depends on the registry (a dispatcher's table): rebuilt on every
/// registration, published only once every listener has been rebuilt successfully.
pub(crate) trait Listener: Send + Sync {
    /// Builds the new state against `snap`, with `pending` specialisations added.
    fn prepare<'a>(
        &'a self,
        snap: &Arc<Snapshot>,
        pending: Vec<Box<dyn Any + Send>>,
    ) -> Result<Box<dyn Prepared + 'a>>;
}

/// A listener state built aside, ready to be published.
pub(crate) trait Prepared {
    /// Makes the new state visible.
    fn publish(self: Box<Self>);
}

fn listener_id(l: &Arc<dyn Listener>) -> usize {
    Arc::as_ptr(l) as *const () as usize
}

/// Mutable side of the registry, behind the writers' mutex.
struct Writer {
    listeners: Vec<Weak<dyn Listener>>,
    /// While the built-in kinds are being registered (once, at start-up).
    builtin: bool,
}

/// The process-wide registry of storage kinds and conversions; see [`registry`].
///
/// For every ordered pair of kinds it knows the cheapest allowed chain of converters
/// (Floyd–Warshall over a petgraph `DiGraph`, O(K³) per registration for K kinds). Built-in
/// weights follow QuTiP: Csr → Dense 1.0, Dense → Csr 1.4.
///
/// ```
/// use polymat::{Csr, Kind, registry};
///
/// let reg = registry();
/// assert_eq!(reg.weight(Kind::CSR, Kind::DENSE), 1.0);
/// assert_eq!(reg.weight(Kind::DENSE, Kind::CSR), 1.4);
///
/// let sparse = Csr::identity(2).into();
/// let dense = reg.convert(&sparse, Kind::DENSE).unwrap();
/// assert_eq!(dense.kind(), Kind::DENSE);
/// // Converting to the kind it already has returns the same handle.
/// assert!(reg.convert(&dense, Kind::DENSE).unwrap().ptr_eq(&dense));
/// ```
pub struct ConversionRegistry {
    snapshot: ArcSwap<Snapshot>,
    /// This registry's slot in the per-thread state cache (`crate::cache`).
    cache_id: usize,
    writer: Mutex<Writer>,
}

static REGISTRY: LazyLock<ConversionRegistry> = LazyLock::new(ConversionRegistry::with_builtins);

/// The process-wide [`ConversionRegistry`].
pub fn registry() -> &'static ConversionRegistry {
    &REGISTRY
}

/// Converts `data` to `kind` through the cheapest chain (no copy if it already is that kind).
///
/// # Errors
/// [`Error::NoConversion`] if no chain of converters reaches `kind`; a converter's own error
/// (for a dense result past the dense limit, [`Error::TooLarge`]).
///
/// ```
/// use polymat::{Dense, Kind};
/// let d = polymat::to(Kind::CSR, &Dense::identity(3).into()).unwrap();
/// assert_eq!(format!("{d:#}"), "Csr(3×3, nnz=3)");
/// ```
pub fn to(kind: Kind, data: &Data) -> Result<Data> {
    registry().convert(data, kind)
}

/// Converts `data` to storage type `T` and returns the value (cloned only if it was shared).
///
/// ```
/// use polymat::{Csr, Dense};
/// let csr: Csr = polymat::to_type(&Dense::identity(3).into()).unwrap();
/// assert_eq!(csr.nnz(), 3);
/// ```
///
/// # Errors
/// [`Error::UnregisteredType`] if `T` is not registered, [`Error::NoConversion`] if it cannot be
/// reached.
pub fn to_type<T: Storage + Clone>(data: &Data) -> Result<T> {
    let kind = registry().kind_of::<T>()?;
    let converted = registry().convert(data, kind)?;
    let got = converted.kind().name();
    converted
        .into_inner::<T>()
        .ok_or_else(|| Error::ConverterOutput {
            from: data.kind().name(),
            to: kind.name(),
            got,
        })
}

impl Data {
    /// This data in storage `kind`, through the registry's cheapest chain ([`to`] as a method).
    /// The same kind returns another handle to the same value.
    ///
    /// ```
    /// use polymat::{Csr, Data, Kind};
    /// let a: Data = Csr::identity(2).into();
    /// let d = a.to(Kind::DENSE)?;
    /// assert_eq!(d.kind(), Kind::DENSE);
    /// assert!(a.to(Kind::CSR)?.ptr_eq(&a));
    /// # Ok::<(), polymat::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`to`].
    pub fn to(&self, kind: Kind) -> Result<Data> {
        registry().convert(self, kind)
    }

    /// This data as storage type `T` ([`to_type`] as a method).
    ///
    /// # Errors
    /// As [`to_type`].
    pub fn to_type<T: Storage + Clone>(&self) -> Result<T> {
        to_type(self)
    }
}

/// A batch resolved against the current state, not yet validated as a whole.
struct Staged {
    kinds: Vec<KindInfo>,
    by_type: HashMap<TypeId, Kind>,
    edges: Vec<Arc<Edge>>,
}

impl ConversionRegistry {
    fn with_builtins() -> ConversionRegistry {
        let empty = Snapshot::build(Vec::new(), HashMap::new(), Vec::new());
        let reg = ConversionRegistry {
            snapshot: ArcSwap::from_pointee(empty),
            cache_id: cache::next_id(),
            writer: Mutex::new(Writer {
                listeners: Vec::new(),
                builtin: true,
            }),
        };
        let mut b = Batch::new();
        builtin::register(&mut b);
        reg.commit(b)
            .unwrap_or_else(|e| unreachable!("built-in registration failed: {e}"));
        reg.lock().builtin = false;
        debug_assert_eq!(reg.kind_of::<crate::storage::Dense>(), Ok(Kind::DENSE));
        debug_assert_eq!(reg.kind_of::<crate::storage::Csr>(), Ok(Kind::CSR));
        debug_assert_eq!(reg.kind_of::<crate::gpu::GpuDense>(), Ok(Kind::GPU_DENSE));
        debug_assert_eq!(reg.kind_of::<crate::gpu::GpuCsr>(), Ok(Kind::GPU_CSR));
        debug_assert_eq!(reg.kind_of::<crate::storage::KronSum>(), Ok(Kind::KRON_SUM));
        debug_assert_eq!(reg.kind_of::<crate::storage::SuperOp>(), Ok(Kind::SUPER_OP));
        reg
    }

    /// The current snapshot (lock-free).
    #[inline]
    pub(crate) fn snapshot(&self) -> arc_swap::Guard<Arc<Snapshot>> {
        self.snapshot.load()
    }

    fn lock(&self) -> MutexGuard<'_, Writer> {
        // A panic in a user callback while the lock was held leaves no partial state behind
        // (state is only published at the end), so the poisoned guard is safe to reuse.
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// All registered kinds, in registration order.
    pub fn kinds(&self) -> Vec<Kind> {
        (0..self.snapshot().n_kinds() as u32).map(Kind).collect()
    }

    /// The display name of `kind`.
    pub fn kind_name(&self, kind: Kind) -> String {
        self.snapshot().name(kind)
    }

    /// The groups `kind` belongs to.
    pub fn groups_of(&self, kind: Kind) -> Vec<Group> {
        self.snapshot().groups(kind).to_vec()
    }

    /// The kinds in `group`, in kind order.
    pub fn kinds_in(&self, group: Group) -> Vec<Kind> {
        self.snapshot().kinds_in(group)
    }

    /// Whether `kind` is one of polymat's built-in kinds (conversions among those never pass
    /// through a registered one).
    pub fn is_builtin(&self, kind: Kind) -> bool {
        self.snapshot()
            .kinds
            .get(kind.index())
            .is_some_and(|k| k.builtin)
    }

    /// The kind of storage type `T`.
    ///
    /// # Errors
    /// [`Error::UnregisteredType`] if `T` was never registered.
    pub fn kind_of<T: Storage>(&self) -> Result<Kind> {
        self.snapshot()
            .kind_of_type(TypeId::of::<T>(), std::any::type_name::<T>())
    }

    /// The kind with this name or alias (case-insensitive).
    ///
    /// # Errors
    /// [`Error::UnknownKind`], listing the known names.
    pub fn parse_kind(&self, name: &str) -> Result<Kind> {
        let snap = self.snapshot();
        let found = snap.kinds.iter().position(|k| k.answers_to(name));
        found
            .map(|i| Kind(i as u32))
            .ok_or_else(|| Error::UnknownKind {
                name: name.to_owned(),
                known: snap.names(),
            })
    }

    /// Weight of the cheapest allowed chain from `from` to `to`: 0 for the same kind,
    /// `f64::MAX` when no chain exists.
    pub fn weight(&self, from: Kind, to: Kind) -> f64 {
        let snap = self.snapshot();
        let n = snap.n_kinds();
        if from.index() >= n || to.index() >= n {
            return f64::MAX;
        }
        snap.weight(from, to)
    }

    /// The kinds visited by the cheapest allowed chain, `from` and `to` included.
    ///
    /// # Errors
    /// [`Error::NoConversion`] if `to` cannot be reached from `from`.
    pub fn path(&self, from: Kind, to: Kind) -> Result<Vec<Kind>> {
        let snap = self.snapshot();
        let n = snap.n_kinds();
        let chain = (from.index() < n && to.index() < n)
            .then(|| snap.chain(from, to))
            .flatten();
        match chain {
            Some(c) if c.steps.is_empty() => Ok(vec![from]),
            Some(c) => Ok(c.kinds()),
            None => Err(Error::NoConversion {
                from: snap.name(from),
                to: snap.name(to),
            }),
        }
    }

    /// Converts `data` to `kind`; see [`to`].
    ///
    /// # Errors
    /// As [`to`].
    pub fn convert(&self, data: &Data, kind: Kind) -> Result<Data> {
        if data.kind() == kind {
            return Ok(data.clone());
        }
        // The per-thread cache, not `ArcSwap::load`: two atomic read-modify-writes fewer.
        let cached = cache::load(self.cache_id, &self.snapshot);
        match cached.convert(data, kind) {
            Ok(d) => Ok(d),
            // A commit on another thread may have published a snapshot (say, with the data's
            // new kind) and not yet bumped the cache's generation: ask the current one.
            Err(e) if matches!(*e, Error::NoConversion { .. }) => {
                let current = self.snapshot.load();
                if std::ptr::eq(&*cached, Arc::as_ptr(&current)) {
                    Err(*e)
                } else {
                    current.convert(data, kind).map_err(|e| *e)
                }
            }
            Err(e) => Err(*e),
        }
    }

    /// Registers storage type `T` under `name` and `aliases` and returns its kind.
    ///
    /// A new type needs conversions before operations can use it: one to and one from any
    /// existing kind is enough.
    ///
    /// # Errors
    /// [`Error::DuplicateKind`] if `T`, the name or an alias is already registered.
    pub fn register_type<T: Storage>(&self, name: &str, aliases: &[&str]) -> Result<Kind> {
        let mut b = Batch::new();
        b.register_type::<T>(name, aliases);
        self.commit(b)?;
        self.kind_of::<T>()
    }

    /// Registers converters, then rebuilds every dispatcher once.
    ///
    /// # Errors
    /// As [`commit`](Self::commit). Nothing is applied if any conversion is rejected.
    pub fn add_conversions(&self, conversions: impl IntoIterator<Item = Conversion>) -> Result<()> {
        let mut b = Batch::new();
        for c in conversions {
            b.add_conversion(c);
        }
        self.commit(b)
    }

    /// Applies a [`Batch`] atomically: all of it or none of it.
    ///
    /// # Cost
    /// O(K³) for the conversion paths plus, for each dispatcher of arity N with S
    /// specialisations, O(K^N · (K + 1) · S · N) to rebuild its table.
    ///
    /// # Errors
    /// The first error any part of the batch raises; the registry is then unchanged:
    /// [`Error::DuplicateKind`] for a type, name or alias registered twice or an empty name;
    /// [`Error::InvalidWeight`] for a weight that is not finite, > 0 and at most
    /// [`MAX_WEIGHT`]; [`Error::UnregisteredType`] or [`Error::UnknownKind`] for an endpoint
    /// that is not registered; [`Error::InvalidArgument`] for a conversion from a kind to itself
    /// or one that would replace a built-in conversion; a dispatcher's own errors for its
    /// specialisations.
    pub fn commit(&self, batch: Batch) -> Result<()> {
        let mut writer = self.lock();
        let old = self.snapshot.load_full();
        let staged = Self::stage(&old, &batch, writer.builtin)?;
        let snap = Arc::new(Snapshot::build(staged.kinds, staged.by_type, staged.edges));
        let live = Self::live_listeners(&mut writer, &batch.pending);
        let prepared = Self::prepare_listeners(&live, &snap, batch.pending)?;
        Self::publish(&self.snapshot, prepared, snap);
        Ok(())
    }

    /// Resolves the batch's types and conversions against `old` and validates each of them.
    fn stage(old: &Snapshot, batch: &Batch, builtin: bool) -> Result<Staged> {
        let mut kinds = old.kinds.clone();
        let mut by_type = old.by_type.clone();
        let mut edges = old.edges.clone();
        for t in &batch.types {
            if by_type.contains_key(&t.type_id) {
                return Err(Error::DuplicateKind {
                    name: t.name.clone(),
                    reason: format!("type {} is already registered", t.type_name),
                });
            }
            if t.name.trim().is_empty() || t.aliases.iter().any(|a| a.trim().is_empty()) {
                return Err(Error::DuplicateKind {
                    name: t.name.clone(),
                    reason: "a name or alias is empty".into(),
                });
            }
            for name in std::iter::once(&t.name).chain(&t.aliases) {
                if let Some(k) = kinds.iter().find(|k| k.answers_to(name)) {
                    return Err(Error::DuplicateKind {
                        name: t.name.clone(),
                        reason: format!("{name:?} already names kind {}", k.name),
                    });
                }
                if name.eq_ignore_ascii_case("auto") {
                    return Err(Error::DuplicateKind {
                        name: t.name.clone(),
                        reason: "\"auto\" names Out::Auto".into(),
                    });
                }
            }
            by_type.insert(t.type_id, Kind(kinds.len() as u32));
            kinds.push(KindInfo {
                name: t.name.clone(),
                aliases: t.aliases.clone(),
                type_id: t.type_id,
                builtin,
                groups: Vec::new(),
            });
        }
        let resolve = |r: KindRef| -> Result<Kind> {
            match r {
                KindRef::Type(id, name) => by_type
                    .get(&id)
                    .copied()
                    .ok_or(Error::UnregisteredType { type_name: name }),
                KindRef::Kind(k) if k.index() < kinds.len() => Ok(k),
                KindRef::Kind(k) => Err(Error::UnknownKind {
                    name: format!("Kind({})", k.0),
                    known: kinds.iter().map(|k| k.name.clone()).collect(),
                }),
            }
        };
        for c in &batch.conversions {
            let (from, to) = (resolve(c.from)?, resolve(c.to)?);
            let name = |k: Kind| kinds[k.index()].name.clone();
            check_weight(&name(from), &name(to), c.weight)?;
            if from == to {
                return Err(Error::argument(
                    "add_conversions",
                    format!("a conversion from {} to itself is implicit", name(from)),
                ));
            }
            if !builtin && kinds[from.index()].builtin && kinds[to.index()].builtin {
                return Err(Error::argument(
                    "add_conversions",
                    format!(
                        "the conversion {} -> {} is built in and cannot be replaced",
                        name(from),
                        name(to)
                    ),
                ));
            }
            let edge = Arc::new(Edge {
                from,
                to,
                weight: c.weight,
                exact: c.exact,
                total: c.total,
                guarded: !(kinds[from.index()].builtin && kinds[to.index()].builtin),
                f: c.f.clone(),
            });
            // A new converter for an existing pair replaces the old one.
            match edges.iter_mut().find(|e| e.from == from && e.to == to) {
                Some(slot) => *slot = edge,
                None => edges.push(edge),
            }
        }
        let grouped = batch
            .groups
            .iter()
            .map(|&(r, g)| resolve(r).map(|k| (k, g)))
            .collect::<Result<Vec<_>>>()?;
        for (k, group) in grouped {
            let info = &mut kinds[k.index()];
            if info.builtin && !builtin {
                return Err(Error::argument(
                    "add_to_group",
                    format!("{} is built in: its groups are fixed", info.name),
                ));
            }
            if !info.groups.contains(&group) {
                info.groups.push(group);
            }
        }
        Ok(Staged {
            kinds,
            by_type,
            edges,
        })
    }

    /// The listeners to rebuild: every live one, plus those with queued items.
    fn live_listeners(writer: &mut Writer, pending: &[Pending]) -> Vec<Arc<dyn Listener>> {
        writer.listeners.retain(|l| l.strong_count() > 0);
        let mut live: Vec<Arc<dyn Listener>> =
            writer.listeners.iter().filter_map(Weak::upgrade).collect();
        for (l, _) in pending {
            if !live.iter().any(|x| listener_id(x) == listener_id(l)) {
                live.push(l.clone());
            }
        }
        live
    }

    /// Builds each listener's next state against `snap`, with its queued items; the first
    /// error aborts the whole commit.
    fn prepare_listeners<'a>(
        live: &'a [Arc<dyn Listener>],
        snap: &Arc<Snapshot>,
        mut pending: Vec<Pending>,
    ) -> Result<Vec<Box<dyn Prepared + 'a>>> {
        let mut prepared = Vec::with_capacity(live.len());
        for l in live {
            let id = listener_id(l);
            let (mine, rest): (Vec<_>, Vec<_>) =
                pending.into_iter().partition(|(p, _)| listener_id(p) == id);
            pending = rest;
            prepared.push(l.prepare(snap, mine.into_iter().map(|(_, item)| item).collect())?);
        }
        Ok(prepared)
    }

    /// Makes the new states visible: tables first, snapshot last, so a `Data` of a new kind
    /// (which needs the kind in the snapshot) can only exist once every table covers it.
    fn publish(
        slot: &ArcSwap<Snapshot>,
        prepared: Vec<Box<dyn Prepared + '_>>,
        snap: Arc<Snapshot>,
    ) {
        for p in prepared {
            p.publish();
        }
        slot.store(snap);
        // After the store: a thread that refreshed in between tagged the old snapshot with the
        // old generation, and reloads on its next call.
        cache::invalidate();
    }

    /// Attaches a listener and builds its first state under the writers' lock, so that no
    /// registration can slip in between.
    pub(crate) fn attach(
        &self,
        listener: Weak<dyn Listener>,
        init: impl FnOnce(&Arc<Snapshot>) -> Result<()>,
    ) -> Result<()> {
        let mut writer = self.lock();
        init(&self.snapshot.load_full())?;
        writer.listeners.push(listener);
        Ok(())
    }

    /// Rebuilds every live dispatcher's table from the current state.
    ///
    /// Registration does this by itself; this entry point exists to measure the rebuild cost
    /// (see `benches/dispatch.rs`). Returns how many dispatchers were rebuilt.
    ///
    /// # Errors
    /// Whatever a table build raises (none for consistent registrations).
    pub fn rebuild_dispatchers(&self) -> Result<usize> {
        let mut writer = self.lock();
        let snap = self.snapshot.load_full();
        let live = Self::live_listeners(&mut writer, &[]);
        let prepared = Self::prepare_listeners(&live, &snap, Vec::new())?;
        let n = prepared.len();
        for p in prepared {
            p.publish();
        }
        Ok(n)
    }
}

impl fmt::Debug for ConversionRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let snap = self.snapshot();
        let mut m = f.debug_map();
        for e in &snap.edges {
            m.entry(
                &format_args!("{} -> {}", snap.name(e.from), snap.name(e.to)),
                &e.weight,
            );
        }
        m.finish()
    }
}

#[cfg(test)]
mod tests;
