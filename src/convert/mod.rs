//! The conversion registry: storage kinds, converters between them, and the cheapest chain of
//! converters for every ordered pair of kinds.
//!
//! The registry is process-wide ([`registry`]). Its state is an immutable snapshot
//! value published whole through `arc-swap`: readers never lock and never see a half-made
//! registration. Writers (registering types, conversions and specialisations) take one mutex,
//! build the new snapshot and every dispatcher's new table aside, and publish them only if all
//! of it succeeded, so a failed registration changes nothing.

pub(crate) mod builtin;

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, Weak};

use arc_swap::ArcSwap;
use petgraph::algo::floyd_warshall::floyd_warshall_path;
use petgraph::graph::{DiGraph, NodeIndex};

use crate::error::{Error, Result};
use crate::storage::{Data, Kind, Storage};

/// Type-erased converter: takes the source value and the target kind, returns the new value.
type ConvertFn = Arc<dyn Fn(&Data, Kind) -> Result<Data> + Send + Sync>;

/// How a conversion names its endpoints before they are resolved to kinds.
#[derive(Clone, Copy)]
enum KindRef {
    Type(TypeId, &'static str),
    Kind(Kind),
}

/// One converter between two storage kinds, with its weight (its relative cost).
///
/// ```
/// use polymat::{Conversion, Csr, Dense};
///
/// // A typed converter: the kinds come from the types.
/// let c = Conversion::new(|d: &Dense| Ok(Csr::from_rows(&d.to_rows())?), 2.0);
/// assert_eq!(c.weight(), 2.0);
/// ```
#[derive(Clone)]
pub struct Conversion {
    from: KindRef,
    to: KindRef,
    weight: f64,
    f: ConvertFn,
}

impl Conversion {
    /// A converter from storage type `A` to storage type `B`.
    pub fn new<A: Storage, B: Storage>(
        f: impl Fn(&A) -> Result<B> + Send + Sync + 'static,
        weight: f64,
    ) -> Conversion {
        let name = std::any::type_name::<A>();
        Conversion {
            from: KindRef::Type(TypeId::of::<A>(), name),
            to: KindRef::Type(TypeId::of::<B>(), std::any::type_name::<B>()),
            weight,
            f: Arc::new(move |d: &Data, to: Kind| {
                let a = d.expect_ref::<A>("convert", name)?;
                Ok(Data::with_kind(to, f(a)?))
            }),
        }
    }

    /// A converter between kinds given at run time; its output kind is checked on every call.
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
            f: Arc::new(move |d: &Data, to: Kind| {
                let out = f(d)?;
                if out.kind() == to {
                    Ok(out)
                } else {
                    Err(Error::ConverterOutput {
                        from: d.kind().name(),
                        to: to.name(),
                        got: out.kind().name(),
                    })
                }
            }),
        }
    }

    /// The weight given at construction.
    pub fn weight(&self) -> f64 {
        self.weight
    }
}

/// A registered converter, resolved to kinds.
pub(crate) struct Edge {
    from: Kind,
    to: Kind,
    weight: f64,
    f: ConvertFn,
}

/// The cheapest sequence of converters from one kind to another.
pub(crate) struct Chain {
    steps: Vec<Arc<Edge>>,
    weight: f64,
}

impl Chain {
    /// Runs the converters in order.
    pub(crate) fn run(&self, data: &Data) -> Result<Data> {
        let mut steps = self.steps.iter();
        let Some(first) = steps.next() else {
            return Ok(data.clone());
        };
        let mut cur = (first.f)(data, first.to)?;
        for e in steps {
            cur = (e.f)(&cur, e.to)?;
        }
        Ok(cur)
    }

    /// Total weight.
    pub(crate) fn weight(&self) -> f64 {
        self.weight
    }

    /// The kinds visited, source and target included.
    pub(crate) fn kinds(&self) -> Vec<Kind> {
        let mut v: Vec<Kind> = self.steps.iter().map(|e| e.from).collect();
        v.extend(self.steps.last().map(|e| e.to));
        v
    }
}

/// Name, aliases and Rust type of a registered kind.
#[derive(Clone)]
struct KindInfo {
    name: String,
    aliases: Vec<String>,
    type_id: TypeId,
}

/// One immutable state of the registry: the kinds, the converters and all cheapest chains.
pub(crate) struct Snapshot {
    kinds: Vec<KindInfo>,
    by_type: HashMap<TypeId, Kind>,
    edges: Vec<Arc<Edge>>,
    /// `weights[from * n + to]`: 0 on the diagonal, `f64::MAX` when unreachable.
    weights: Vec<f64>,
    /// `chains[from * n + to]`; `None` when unreachable, an empty chain on the diagonal.
    chains: Vec<Option<Arc<Chain>>>,
}

impl Snapshot {
    fn build(kinds: Vec<KindInfo>, by_type: HashMap<TypeId, Kind>, edges: Vec<Arc<Edge>>) -> Self {
        let n = kinds.len();
        let mut graph: DiGraph<(), usize> = DiGraph::with_capacity(n, edges.len());
        for _ in 0..n {
            graph.add_node(());
        }
        for (i, e) in edges.iter().enumerate() {
            graph.add_edge(
                NodeIndex::new(e.from.index()),
                NodeIndex::new(e.to.index()),
                i,
            );
        }
        // Weights are validated finite and > 0, so there is never a negative cycle.
        let (dist, prev) = floyd_warshall_path(&graph, |e| edges[*e.weight()].weight)
            .unwrap_or_else(|_| unreachable!("weights are positive"));
        let edge_between = |a: usize, b: usize| -> Arc<Edge> {
            // With parallel edges the cheapest one lies on the shortest path.
            edges
                .iter()
                .filter(|e| e.from.index() == a && e.to.index() == b)
                .min_by(|x, y| x.weight.total_cmp(&y.weight))
                .cloned()
                .unwrap_or_else(|| unreachable!("a path step is an edge"))
        };
        let mut weights = vec![f64::MAX; n * n];
        let mut chains = vec![None; n * n];
        for i in 0..n {
            for j in 0..n {
                let w = dist[&(NodeIndex::new(i), NodeIndex::new(j))];
                if i == j {
                    weights[i * n + j] = 0.0;
                    chains[i * n + j] = Some(Arc::new(Chain {
                        steps: Vec::new(),
                        weight: 0.0,
                    }));
                    continue;
                }
                if w == f64::MAX {
                    continue;
                }
                let mut nodes = vec![j];
                let mut cur = j;
                while cur != i {
                    cur = prev[i][cur].unwrap_or_else(|| unreachable!("reachable has a path"));
                    nodes.push(cur);
                }
                nodes.reverse();
                let steps: Vec<Arc<Edge>> =
                    nodes.windows(2).map(|s| edge_between(s[0], s[1])).collect();
                weights[i * n + j] = w;
                chains[i * n + j] = Some(Arc::new(Chain { steps, weight: w }));
            }
        }
        Snapshot {
            kinds,
            by_type,
            edges,
            weights,
            chains,
        }
    }

    /// Number of registered kinds.
    #[inline]
    pub(crate) fn n_kinds(&self) -> usize {
        self.kinds.len()
    }

    /// Cheapest chain weight, `f64::MAX` when unreachable.
    #[inline]
    pub(crate) fn weight(&self, from: Kind, to: Kind) -> f64 {
        self.weights[from.index() * self.kinds.len() + to.index()]
    }

    /// Cheapest chain, `None` when unreachable.
    #[inline]
    pub(crate) fn chain(&self, from: Kind, to: Kind) -> Option<&Arc<Chain>> {
        self.chains[from.index() * self.kinds.len() + to.index()].as_ref()
    }

    pub(crate) fn name(&self, kind: Kind) -> String {
        self.kinds
            .get(kind.index())
            .map_or_else(|| format!("Kind({})", kind.0), |k| k.name.clone())
    }

    pub(crate) fn kind_of_type(&self, id: TypeId, type_name: &'static str) -> Result<Kind> {
        self.by_type
            .get(&id)
            .copied()
            .ok_or(Error::UnregisteredType { type_name })
    }

    fn names(&self) -> Vec<String> {
        self.kinds.iter().map(|k| k.name.clone()).collect()
    }

    pub(crate) fn convert(&self, data: &Data, to: Kind) -> Result<Data> {
        if data.kind() == to {
            return Ok(data.clone());
        }
        match self
            .chains
            .get(data.kind().index() * self.kinds.len() + to.index())
        {
            Some(Some(chain)) if to.index() < self.kinds.len() => chain.run(data),
            _ => Err(Error::NoConversion {
                from: self.name(data.kind()),
                to: self.name(to),
            }),
        }
    }
}

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

/// A storage type waiting in a [`Batch`].
struct NewType {
    type_id: TypeId,
    type_name: &'static str,
    name: String,
    aliases: Vec<String>,
}

/// Several registrations applied together, with one rebuild of every dispatcher.
///
/// Nothing happens until [`ConversionRegistry::commit`]; if any part fails, nothing is applied.
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
///     .add_conversion(Conversion::new(|d: &Dense| Ok(Scalar1(d.get(0, 0))), 1.0));
/// registry().commit(batch).unwrap();
/// assert!(registry().parse_kind("scalar1").is_ok());
/// ```
#[derive(Default)]
pub struct Batch {
    types: Vec<NewType>,
    conversions: Vec<Conversion>,
    pending: Vec<(Arc<dyn Listener>, Box<dyn Any + Send>)>,
}

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

    /// Queues a dispatcher-specific item (a specialisation) for that listener.
    pub(crate) fn push_pending(&mut self, listener: Arc<dyn Listener>, item: Box<dyn Any + Send>) {
        self.pending.push((listener, item));
    }
}

/// Mutable side of the registry, behind the writers' mutex.
struct Writer {
    listeners: Vec<Weak<dyn Listener>>,
}

/// The process-wide registry of storage kinds and conversions; see [`registry`].
///
/// For every ordered pair of kinds it knows the cheapest chain of converters (Floyd–Warshall
/// over a petgraph `DiGraph`, O(K³) per registration for K kinds). Built-in weights follow
/// QuTiP: Csr → Dense 1.0, Dense → Csr 1.4.
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
/// [`Error::NoConversion`] if no chain of converters reaches `kind`.
///
/// ```
/// use polymat::{Dense, Kind};
/// let d = polymat::to(Kind::CSR, &Dense::identity(3).into()).unwrap();
/// assert_eq!(d.to_string(), "Csr(3×3, nnz=3)");
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

impl ConversionRegistry {
    fn with_builtins() -> ConversionRegistry {
        let empty = Snapshot::build(Vec::new(), HashMap::new(), Vec::new());
        let reg = ConversionRegistry {
            snapshot: ArcSwap::from_pointee(empty),
            writer: Mutex::new(Writer {
                listeners: Vec::new(),
            }),
        };
        let mut b = Batch::new();
        builtin::register(&mut b);
        reg.commit(b)
            .unwrap_or_else(|e| unreachable!("built-in registration failed: {e}"));
        debug_assert_eq!(reg.kind_of::<crate::Dense>(), Ok(Kind::DENSE));
        debug_assert_eq!(reg.kind_of::<crate::Csr>(), Ok(Kind::CSR));
        debug_assert_eq!(reg.kind_of::<crate::GpuDense>(), Ok(Kind::GPU_DENSE));
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
        let found = snap.kinds.iter().position(|k| {
            k.name.eq_ignore_ascii_case(name)
                || k.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
        });
        found
            .map(|i| Kind(i as u32))
            .ok_or_else(|| Error::UnknownKind {
                name: name.to_owned(),
                known: snap.names(),
            })
    }

    /// Weight of the cheapest chain from `from` to `to`: 0 for the same kind, `f64::MAX` when
    /// no chain exists.
    pub fn weight(&self, from: Kind, to: Kind) -> f64 {
        let snap = self.snapshot();
        let n = snap.n_kinds();
        if from.index() >= n || to.index() >= n {
            return f64::MAX;
        }
        snap.weight(from, to)
    }

    /// The kinds visited by the cheapest chain, `from` and `to` included.
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
    /// [`Error::NoConversion`] if no chain reaches `kind`.
    pub fn convert(&self, data: &Data, kind: Kind) -> Result<Data> {
        if data.kind() == kind {
            return Ok(data.clone());
        }
        self.snapshot().convert(data, kind)
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
    /// [`Error::InvalidWeight`] for a weight that is not finite and > 0,
    /// [`Error::UnregisteredType`] for an endpoint that is not registered. Nothing is applied
    /// if any conversion is rejected.
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
    /// The first error any part of the batch raises; the registry is then unchanged.
    pub fn commit(&self, batch: Batch) -> Result<()> {
        let mut writer = self.lock();
        let old = self.snapshot.load_full();
        let mut kinds = old.kinds.clone();
        let mut by_type = old.by_type.clone();
        let mut edges = old.edges.clone();
        for t in batch.types {
            if by_type.contains_key(&t.type_id) {
                return Err(Error::DuplicateKind {
                    name: t.name,
                    reason: format!("type {} is already registered", t.type_name),
                });
            }
            if t.name.trim().is_empty() {
                return Err(Error::DuplicateKind {
                    name: t.name,
                    reason: "the name is empty".into(),
                });
            }
            for n in std::iter::once(&t.name).chain(&t.aliases) {
                if let Some(k) = kinds.iter().find(|k| {
                    k.name.eq_ignore_ascii_case(n)
                        || k.aliases.iter().any(|a| a.eq_ignore_ascii_case(n))
                }) {
                    return Err(Error::DuplicateKind {
                        name: t.name.clone(),
                        reason: format!("{n:?} already names kind {}", k.name),
                    });
                }
            }
            by_type.insert(t.type_id, Kind(kinds.len() as u32));
            kinds.push(KindInfo {
                name: t.name,
                aliases: t.aliases,
                type_id: t.type_id,
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
        for c in batch.conversions {
            let (from, to) = (resolve(c.from)?, resolve(c.to)?);
            let name = |k: Kind| kinds[k.index()].name.clone();
            if !(c.weight.is_finite() && c.weight > 0.0) {
                return Err(Error::InvalidWeight {
                    from: name(from),
                    to: name(to),
                    weight: c.weight,
                });
            }
            if from == to {
                return Err(Error::InvalidArgument {
                    op: "add_conversions".into(),
                    reason: format!("a conversion from {} to itself is implicit", name(from)),
                });
            }
            let edge = Arc::new(Edge {
                from,
                to,
                weight: c.weight,
                f: c.f,
            });
            // A new converter for an existing pair replaces the old one.
            match edges.iter_mut().find(|e| e.from == from && e.to == to) {
                Some(slot) => *slot = edge,
                None => edges.push(edge),
            }
        }
        let snap = Arc::new(Snapshot::build(kinds, by_type, edges));
        debug_assert!(
            snap.kinds
                .iter()
                .enumerate()
                .all(|(i, k)| snap.by_type[&k.type_id].index() == i)
        );

        writer.listeners.retain(|l| l.strong_count() > 0);
        let mut live: Vec<Arc<dyn Listener>> =
            writer.listeners.iter().filter_map(Weak::upgrade).collect();
        let mut pending = batch.pending;
        for (l, _) in &pending {
            if !live.iter().any(|x| listener_id(x) == listener_id(l)) {
                live.push(l.clone());
            }
        }
        let mut prepared = Vec::with_capacity(live.len());
        for l in &live {
            let id = listener_id(l);
            let (mine, rest): (Vec<_>, Vec<_>) =
                pending.into_iter().partition(|(p, _)| listener_id(p) == id);
            pending = rest;
            prepared.push(l.prepare(&snap, mine.into_iter().map(|(_, item)| item).collect())?);
        }
        // Tables first, snapshot last: a Data of a new kind can only be made once its kind is
        // in the snapshot, and by then every table already covers it.
        for p in prepared {
            p.publish();
        }
        self.snapshot.store(snap);
        Ok(())
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
        writer.listeners.retain(|l| l.strong_count() > 0);
        let snap = self.snapshot.load_full();
        let live: Vec<Arc<dyn Listener>> =
            writer.listeners.iter().filter_map(Weak::upgrade).collect();
        let prepared = live
            .iter()
            .map(|l| l.prepare(&snap, Vec::new()))
            .collect::<Result<Vec<_>>>()?;
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
mod tests {
    use super::*;
    use crate::{Csr, Dense};

    #[test]
    fn builtin_weights_and_paths() {
        let r = registry();
        assert_eq!(r.weight(Kind::DENSE, Kind::DENSE), 0.0);
        assert_eq!(r.weight(Kind::CSR, Kind::DENSE), 1.0);
        assert_eq!(r.weight(Kind::DENSE, Kind::CSR), 1.4);
        assert_eq!(
            r.path(Kind::CSR, Kind::DENSE).unwrap(),
            vec![Kind::CSR, Kind::DENSE]
        );
        assert_eq!(r.weight(Kind(9999), Kind::CSR), f64::MAX);
    }

    #[test]
    fn unknown_names_list_known_kinds() {
        let err = registry().parse_kind("coo").unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("\"coo\"") && msg.contains("Dense") && msg.contains("Csr"),
            "{msg}"
        );
    }

    #[test]
    fn invalid_weights_change_nothing() {
        let before = format!("{:?}", registry());
        for w in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let err = registry()
                .add_conversions([
                    Conversion::new(|d: &Dense| Ok(d.clone()), 1.0),
                    Conversion::new(|c: &Csr| Ok(c.clone()), w),
                ])
                .unwrap_err();
            assert!(matches!(
                err,
                Error::InvalidWeight { .. } | Error::InvalidArgument { .. }
            ));
        }
        assert_eq!(before, format!("{:?}", registry()));
    }

    #[test]
    fn duplicate_registration_is_rejected() {
        let err = registry()
            .register_type::<Dense>("Dense2", &[])
            .unwrap_err();
        assert!(matches!(err, Error::DuplicateKind { .. }));
    }
}
