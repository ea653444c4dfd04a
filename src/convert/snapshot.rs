//! One immutable state of the registry: the kinds, the converters, and the cheapest allowed
//! chain for every ordered pair of kinds.
//!
//! # Which chains are allowed
//!
//! * Every step but the last must be *exact and total*: a partial or lossy converter is used
//!   only to reach its own target kind, never as a stepping stone to another one.
//! * A chain between two built-in kinds passes through built-in kinds only, so no user
//!   registration can change how Dense, Csr, Dia and GpuDense convert into each other.
//!
//! Cheapest chains come from petgraph's Floyd–Warshall, run twice: over the exact and total
//! edges of all kinds, and over those between built-in kinds; the allowed last steps are then
//! tried on top. O(K³) per registration for K kinds.

use std::any::TypeId;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use petgraph::algo::floyd_warshall::floyd_warshall_path;
use petgraph::graph::{DiGraph, NodeIndex};

use super::conversion::{BoxedResult, ConvertFn};
use super::group::Group;
use crate::error::{Error, Result};
use crate::storage::{Data, Kind};

/// A registered converter, resolved to kinds.
#[derive(Clone)]
pub(crate) struct Edge {
    pub(crate) from: Kind,
    pub(crate) to: Kind,
    pub(crate) weight: f64,
    pub(crate) exact: bool,
    pub(crate) total: bool,
    /// Whether a run is guarded against re-entering itself: every converter but polymat's own
    /// between its own kinds (which never convert back into themselves).
    pub(crate) guarded: bool,
    pub(crate) f: ConvertFn,
}

impl Edge {
    /// Usable in the middle of a chain.
    fn safe(&self) -> bool {
        self.exact && self.total
    }
}

thread_local! {
    /// The conversions running on this thread, innermost last: a converter that converts its
    /// own input again would otherwise recurse until the stack overflows.
    static ACTIVE: RefCell<Vec<(Kind, Kind)>> = const { RefCell::new(Vec::new()) };
}

/// Marks one conversion step as running on this thread until dropped.
struct Active;

impl Active {
    fn enter(from: Kind, to: Kind) -> Result<Active> {
        let fresh = ACTIVE.with(|a| {
            let mut a = a.borrow_mut();
            if a.contains(&(from, to)) {
                false
            } else {
                a.push((from, to));
                true
            }
        });
        if fresh {
            Ok(Active)
        } else {
            Err(Error::ReentrantConversion {
                from: from.name(),
                to: to.name(),
            })
        }
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        ACTIVE.with(|a| {
            a.borrow_mut().pop();
        });
    }
}

/// The cheapest allowed sequence of converters from one kind to another.
pub(crate) struct Chain {
    pub(crate) steps: Vec<Arc<Edge>>,
    pub(crate) weight: f64,
    /// A copy of the first step, held in the chain itself: its converter is reached two loads
    /// sooner than through `steps` (vector, then `Arc`), and most chains have one step.
    head: Option<Edge>,
}

impl Chain {
    /// The chain of `steps` (none: the identity) of total weight `weight`.
    pub(crate) fn new(steps: Vec<Arc<Edge>>, weight: f64) -> Chain {
        let head = steps.first().map(|e| Edge::clone(e));
        Chain {
            steps,
            weight,
            head,
        }
    }

    /// Runs the converters in order, checking each output's kind and shape.
    ///
    /// # Errors
    /// A step's own error when the chain has one step, or when it is [`Error::NoGpu`],
    /// [`Error::Gpu`] or [`Error::TooLarge`]; otherwise [`Error::ConversionFailed`] naming the
    /// chain and the step; [`Error::ConverterOutput`] or
    /// [`Error::ConverterShape`] for a converter that breaks its contract;
    /// [`Error::ReentrantConversion`] for a user converter that re-enters its own conversion
    /// (polymat's own converters between its own kinds never do, and are not guarded).
    pub(crate) fn run(&self, data: &Data) -> Result<Data> {
        self.run_boxed(data).map_err(|e| *e)
    }

    /// [`Chain::run`] with its error boxed (the form that passes between the layers of a
    /// conversion: see [`BoxedResult`]). This, [`Chain::step`] and [`Snapshot::convert`] are
    /// always inlined: as calls, the three layers cost a 2 × 2 Csr → Dense about 150 of its
    /// 1 060 instructions (each with its prologue and its copy of the result).
    #[inline(always)]
    pub(crate) fn run_boxed(&self, data: &Data) -> BoxedResult<Data> {
        #[cfg(feature = "tracing")]
        tracing::debug!(
            target: "polymat::convert",
            chain = %self.kinds().iter().map(|k| k.name()).collect::<Vec<_>>().join(" -> "),
            weight = self.weight,
            rows = data.shape().0,
            cols = data.shape().1,
            "conversion"
        );
        // The first step reads `data` itself: no handle clone (two atomic operations).
        let Some(first) = &self.head else {
            return Ok(data.clone());
        };
        // One unguarded step (polymat's own converters between its own kinds): the converter's
        // result is returned as it came, checked in place, so it is not moved through the
        // layers above (each move of a just-written `Data` stalls on store forwarding).
        if self.steps.len() == 1 && !first.guarded {
            let out = (first.f)(data, first.to);
            return match &out {
                Ok(d) if d.kind() == first.to && d.shape() == data.shape() => out,
                _ => self.one_step_failed(first, data, out),
            };
        }
        let mut cur = self
            .step(first, data)
            .map_err(|err| self.step_error(first, err))?;
        for e in self.steps.iter().skip(1) {
            cur = self.step(e, &cur).map_err(|err| self.step_error(e, err))?;
        }
        Ok(cur)
    }

    /// The error of [`Chain::run_boxed`]'s one-step path: the converter's own, or its broken
    /// contract (kind or shape), as [`Chain::step`] reports them.
    #[cold]
    #[inline(never)]
    fn one_step_failed(&self, e: &Edge, data: &Data, out: BoxedResult<Data>) -> BoxedResult<Data> {
        let out = out.map_err(|err| self.step_error(e, err))?;
        broken_contract(e, data, &out).map_or(Ok(out), Err)
    }

    /// A failed step's error as the chain reports it.
    #[cold]
    fn step_error(&self, e: &Edge, err: Box<Error>) -> Box<Error> {
        // Missing devices and memory are about the machine, not the chain: they keep their own
        // variant so callers can match on them.
        let environmental = matches!(
            *err,
            Error::NoGpu { .. } | Error::Gpu { .. } | Error::TooLarge { .. }
        );
        if self.steps.len() == 1 || environmental {
            err
        } else {
            Box::new(Error::ConversionFailed {
                chain: self.kinds().iter().map(|k| k.name()).collect(),
                from: e.from.name(),
                to: e.to.name(),
                reason: err,
            })
        }
    }

    #[inline(always)]
    fn step(&self, e: &Edge, input: &Data) -> BoxedResult<Data> {
        let _active = if e.guarded {
            Some(Active::enter(e.from, e.to)?)
        } else {
            None
        };
        let out = (e.f)(input, e.to)?;
        broken_contract(e, input, &out).map_or(Ok(out), Err)
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

/// The error for a converter `e` whose result `out` from `input` is not of its target kind or
/// not of the input's shape; `None` when it keeps its contract.
#[inline]
fn broken_contract(e: &Edge, input: &Data, out: &Data) -> Option<Box<Error>> {
    if out.kind() != e.to {
        Some(Box::new(Error::ConverterOutput {
            from: e.from.name(),
            to: e.to.name(),
            got: out.kind().name(),
        }))
    } else if out.shape() != input.shape() {
        Some(Box::new(Error::ConverterShape {
            from: e.from.name(),
            to: e.to.name(),
            expected: input.shape(),
            got: out.shape(),
        }))
    } else {
        None
    }
}

/// Name, aliases and Rust type of a registered kind.
#[derive(Clone)]
pub(crate) struct KindInfo {
    pub(crate) name: String,
    pub(crate) aliases: Vec<String>,
    pub(crate) type_id: TypeId,
    /// One of polymat's own kinds: conversions among these never leave them.
    pub(crate) builtin: bool,
    /// The groups the kind belongs to.
    pub(crate) groups: Vec<Group>,
}

impl KindInfo {
    /// Whether `name` is this kind's name or one of its aliases, case-insensitively.
    pub(crate) fn answers_to(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name)
            || self.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
    }
}

/// Distances and predecessors of one Floyd–Warshall run (`f64::MAX`: unreachable).
struct Paths {
    dist: Vec<f64>,
    prev: Vec<Vec<Option<usize>>>,
}

impl Paths {
    /// Cheapest paths over the edges `keep` accepts.
    fn over(n: usize, edges: &[Arc<Edge>], keep: impl Fn(&Edge) -> bool) -> Paths {
        let mut graph: DiGraph<(), f64> = DiGraph::with_capacity(n, edges.len());
        for _ in 0..n {
            graph.add_node(());
        }
        for e in edges.iter().filter(|e| keep(e)) {
            graph.add_edge(
                NodeIndex::new(e.from.index()),
                NodeIndex::new(e.to.index()),
                e.weight,
            );
        }
        // Weights are validated finite and > 0, so there is never a negative cycle; the
        // fallback (nothing reachable) is never taken.
        let (dist, prev) = floyd_warshall_path(&graph, |e| *e.weight())
            .unwrap_or_else(|_| (Default::default(), vec![vec![None; n]; n]));
        let mut flat = vec![f64::MAX; n * n];
        for ((a, b), d) in dist {
            flat[a.index() * n + b.index()] = d;
        }
        for i in 0..n {
            flat[i * n + i] = 0.0;
        }
        Paths { dist: flat, prev }
    }

    fn dist(&self, n: usize, a: usize, b: usize) -> f64 {
        self.dist[a * n + b]
    }

    /// The nodes from `a` to `b`, both included; `None` when unreachable.
    fn nodes(&self, n: usize, a: usize, b: usize) -> Option<Vec<usize>> {
        if self.dist(n, a, b) == f64::MAX {
            return None;
        }
        let mut nodes = vec![b];
        let mut cur = b;
        while cur != a {
            cur = self.prev[a][cur]?;
            nodes.push(cur);
            if nodes.len() > n {
                return None;
            }
        }
        nodes.reverse();
        Some(nodes)
    }
}

/// One immutable state of the registry: the kinds, the converters and all cheapest chains.
pub(crate) struct Snapshot {
    pub(crate) kinds: Vec<KindInfo>,
    pub(crate) by_type: HashMap<TypeId, Kind>,
    pub(crate) edges: Vec<Arc<Edge>>,
    /// `weights[from * n + to]`: 0 on the diagonal, `f64::MAX` when unreachable.
    weights: Vec<f64>,
    /// `chains[from * n + to]`; `None` when unreachable, an empty chain on the diagonal.
    chains: Vec<Option<Arc<Chain>>>,
}

impl Snapshot {
    pub(crate) fn build(
        kinds: Vec<KindInfo>,
        by_type: HashMap<TypeId, Kind>,
        edges: Vec<Arc<Edge>>,
    ) -> Self {
        let n = kinds.len();
        debug_assert!(
            kinds
                .iter()
                .enumerate()
                .all(|(i, k)| by_type.get(&k.type_id).map(|k| k.index()) == Some(i))
        );
        let builtin = |k: Kind| kinds[k.index()].builtin;
        let all = Paths::over(n, &edges, Edge::safe);
        let core = Paths::over(n, &edges, |e| e.safe() && builtin(e.from) && builtin(e.to));
        let edge = |a: usize, b: usize| -> Option<Arc<Edge>> {
            edges
                .iter()
                .find(|e| e.from.index() == a && e.to.index() == b)
                .cloned()
        };
        let steps_of = |nodes: &[usize]| -> Option<Vec<Arc<Edge>>> {
            nodes.windows(2).map(|s| edge(s[0], s[1])).collect()
        };
        let mut weights = vec![f64::MAX; n * n];
        let mut chains = vec![None; n * n];
        for i in 0..n {
            for j in 0..n {
                if i == j {
                    weights[i * n + j] = 0.0;
                    chains[i * n + j] = Some(Arc::new(Chain::new(Vec::new(), 0.0)));
                    continue;
                }
                let best = if builtin(Kind(i as u32)) && builtin(Kind(j as u32)) {
                    core.nodes(n, i, j)
                        .and_then(|p| steps_of(&p))
                        .map(|s| (core.dist(n, i, j), s))
                } else {
                    let mut best = all
                        .nodes(n, i, j)
                        .and_then(|p| steps_of(&p))
                        .map(|s| (all.dist(n, i, j), s));
                    // A partial or lossy converter into j may end the chain.
                    for e in edges.iter().filter(|e| !e.safe() && e.to.index() == j) {
                        let k = e.from.index();
                        let d = all.dist(n, i, k);
                        if d == f64::MAX || best.as_ref().is_some_and(|b| b.0 <= d + e.weight) {
                            continue;
                        }
                        if let Some(mut s) = all.nodes(n, i, k).and_then(|p| steps_of(&p)) {
                            s.push(e.clone());
                            best = Some((d + e.weight, s));
                        }
                    }
                    best
                };
                if let Some((w, steps)) = best {
                    weights[i * n + j] = w;
                    chains[i * n + j] = Some(Arc::new(Chain::new(steps, w)));
                }
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

    /// The groups of `kind`.
    pub(crate) fn groups(&self, kind: Kind) -> &[Group] {
        self.kinds.get(kind.index()).map_or(&[], |k| &k.groups)
    }

    /// The kinds in `group`, in kind order.
    pub(crate) fn kinds_in(&self, group: Group) -> Vec<Kind> {
        self.kinds
            .iter()
            .enumerate()
            .filter(|(_, k)| k.groups.contains(&group))
            .map(|(i, _)| Kind(i as u32))
            .collect()
    }

    /// The first sticky group of the first input that has one: where `Out::Auto` results of
    /// these inputs must stay.
    pub(crate) fn sticky_group(&self, inputs: &[Kind]) -> Option<Group> {
        inputs
            .iter()
            .flat_map(|&k| self.groups(k).iter().copied())
            .find(|g| g.is_sticky())
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

    pub(crate) fn names(&self) -> Vec<String> {
        self.kinds.iter().map(|k| k.name.clone()).collect()
    }

    #[inline(always)]
    pub(crate) fn convert(&self, data: &Data, to: Kind) -> BoxedResult<Data> {
        if data.kind() == to {
            return Ok(data.clone());
        }
        let n = self.kinds.len();
        match self.chains.get(data.kind().index() * n + to.index()) {
            Some(Some(chain)) if to.index() < n => chain.run_boxed(data),
            _ => Err(Box::new(Error::NoConversion {
                from: self.name(data.kind()),
                to: self.name(to),
            })),
        }
    }
}
