//! Dispatchers: one per operation, choosing a kernel from the storage kinds of the inputs and
//! the requested output.
//!
//! # How a kernel is chosen
//!
//! For a call with input kinds `(k₁, …, kₙ)` and output `out`, every specialisation `S` that can
//! be reached is a candidate. Its weight is the sum of the cheapest conversion weights from each
//! `kᵢ` to the kind `S` takes there (0 where it takes that kind, or any kind), plus — when `out`
//! names a kind — the weight of converting `S`'s output to it. Candidates are ordered by:
//!
//! 1. lower total weight;
//! 2. fewer converted inputs (the kernel sees the data as given, converting the result instead);
//! 3. typed before generic;
//! 4. the later registration (so a user's kernel wins a tie against a built-in one).
//!
//! `Out::Auto` counts input conversions only and returns what the chosen kernel produces
//! (QuTiP's "creation" policy), unless a default output applies
//! ([`set_default_output`]).
//!
//! The result for *every* tuple of known kinds and every output is computed in advance into a
//! table, rebuilt whenever a kind, a conversion or a specialisation is registered and published
//! whole (arc-swap); each thread caches the tables it uses (`crate::cache`), so a direct hit
//! costs a generation check, an index computation and an indirect call, and never sees a
//! half-built table.
//!
//! The module's files: `builder` (building and rebuilding), `table` (the cells), `resolved`
//! ([`Resolved`] and [`Explanation`]), `spec` (kernels), `out` ([`Out`]) and `policy` (implicit
//! conversions and default outputs). The per-thread state cache is `crate::cache`, shared with
//! the conversion registry.

mod builder;
pub(crate) mod checks;
pub(crate) mod collective;
mod dump;
mod guard;
mod out;
mod policy;
mod resolved;
mod spec;
mod table;

pub use builder::{DispatcherBuilder, MAX_ARITY, MAX_TABLE_CELLS};
pub use guard::CheckFn;
pub use out::Out;
pub use policy::{
    DefaultScope, ImplicitConversions, default_output, implicit_conversions, set_default_output,
    set_implicit_conversions, with_default_output, with_implicit_conversions,
};
pub use resolved::{Explanation, Resolved};
pub(crate) use spec::plain_output;
pub use spec::{KernelReturn, ReturnValue, Specialisation};

use std::fmt;
use std::sync::Arc;

use arc_swap::ArcSwap;

use crate::cache;
use crate::convert::{Batch, Chain, Group, Snapshot, registry};
use crate::error::{Error, Result};
use crate::storage::{Data, Kind};
use guard::Check;
use spec::Spec;
use table::{Entry, Table};

/// The shape of an operation's result, from its inputs and parameters (`None` where they do
/// not tell it), set with [`DispatcherBuilder::result_shape`]. A call whose kernel's result
/// must be converted to Dense checks this shape against the dense limit and the memory
/// available before the kernel runs: `matmul(&h, &h, Out::Dense)` of a 2²⁰-dimensional
/// sparse `h` is an [`Error::TooLarge`] at once, not after the sparse product.
pub type ShapeFn<P> = fn(&[&Data], &P) -> Option<(usize, usize)>;

/// [`alloc::check_dense_fits`](crate::storage::alloc::check_dense_fits) out of line: the
/// check before a kernel whose result is converted to Dense stays out of `call_entry`.
#[inline(never)]
fn dense_result_fits(op: &str, shape: (usize, usize)) -> Result<()> {
    crate::storage::alloc::check_dense_fits(op, shape)
}

/// Everything a call needs, published together.
struct State<P, R> {
    snap: Arc<Snapshot>,
    specs: Vec<Arc<Spec<P, R>>>,
    table: Table<P, R>,
}

struct Inner<P, R> {
    /// Index of this dispatcher in the per-thread state caches.
    id: usize,
    name: String,
    arity: usize,
    check: Check<P>,
    result_shape: Option<ShapeFn<P>>,
    state: ArcSwap<State<P, R>>,
    /// Every specialisation a rebuild replaced, kept for the dispatcher's lifetime: the fast
    /// path of [`Dispatcher::call`] runs a kernel without pinning the state it found it in, so
    /// a kernel must outlive every state that held it.
    retired: std::sync::Mutex<Vec<Arc<Spec<P, R>>>>,
}

/// One operation: its specialisations and the lookup table over every tuple of kinds.
///
/// `P` is the type of the pass-through parameters (`c64` scale for `add`, `u32` for `pow`,
/// `()` for none); `R` is what it returns: [`Data`] (then the output kind is dispatched too) or
/// a plain value such as `c64` or `bool`. Cloning a dispatcher clones a handle to the same one.
///
/// See the [module documentation](self) for how a kernel is chosen.
///
/// ```
/// use polymat::{Csr, Dense, Kind, Out, ops::ADD, c64};
///
/// // Csr + Dense has its own mixed kernel: no conversion.
/// assert!(ADD.get(&[Kind::CSR, Kind::DENSE], Out::Dense).unwrap().is_direct());
/// // Asking for a Csr result converts the Dense output.
/// let h = ADD.get(&[Kind::CSR, Kind::DENSE], Out::Csr).unwrap();
/// assert_eq!(h.to_string(), "<indirect specialisation (Csr, Dense) -> Csr of add>");
///
/// let a = Csr::identity(2).into();
/// let b = Dense::identity(2).into();
/// let c = ADD.call(&[&a, &b], Out::Auto, &c64::new(1.0, 0.0)).unwrap();
/// assert_eq!(c.downcast_ref::<Dense>().unwrap().get(0, 0), c64::new(2.0, 0.0));
/// ```
pub struct Dispatcher<P: 'static = (), R: ReturnValue = Data> {
    inner: Arc<Inner<P, R>>,
    /// Copies of `inner`'s id, arity and check, read by every call without a pointer hop (a
    /// built-in dispatcher's handle is a static).
    id: usize,
    arity: usize,
    check: Check<P>,
}

impl<P: 'static, R: ReturnValue> Dispatcher<P, R> {
    fn from_inner(inner: Arc<Inner<P, R>>) -> Self {
        Dispatcher {
            id: inner.id,
            arity: inner.arity,
            check: inner.check,
            inner,
        }
    }
}

impl<P: 'static, R: ReturnValue> Clone for Dispatcher<P, R> {
    fn clone(&self) -> Self {
        Dispatcher::from_inner(self.inner.clone())
    }
}

impl<P: Send + Sync + 'static, R: ReturnValue> Dispatcher<P, R> {
    /// Starts a dispatcher named `name` taking `arity` matrix inputs (at most [`MAX_ARITY`],
    /// checked by [`DispatcherBuilder::build`]).
    pub fn builder(name: &str, arity: usize) -> DispatcherBuilder<P, R> {
        DispatcherBuilder {
            name: name.to_owned(),
            arity,
            check: Check::None,
            result_shape: None,
            specs: Vec::new(),
        }
    }

    /// The operation's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The number of matrix inputs.
    pub fn arity(&self) -> usize {
        self.inner.arity
    }

    /// The shape the builder's [`result_shape`](DispatcherBuilder::result_shape) declares for
    /// these arguments (`None` without one), for the tests that compare it with the results.
    #[cfg(test)]
    pub(crate) fn declared_shape(&self, args: &[&Data], params: &P) -> Option<(usize, usize)> {
        self.inner.result_shape.and_then(|f| f(args, params))
    }

    /// Calls the operation: looks up the cell for the inputs' kinds and `out`, converts what
    /// must be converted and runs the kernel.
    ///
    /// # Errors
    /// [`Error::Arity`] for the wrong number of inputs, the operation's own errors
    /// ([`Error::Shape`], ...), [`Error::NoSpecialisation`] if no kernel can be reached,
    /// [`Error::OutputNotDispatched`] for an output kind asked of a plain-valued operation, and
    /// [`Error::ConversionDenied`] when the conversion policy forbids a conversion the call
    /// needs.
    ///
    /// # Cost
    /// A direct hit reads this thread's cached table (no atomic read-modify-write, no pin),
    /// computes the index and makes one indirect call; nothing is allocated by the dispatcher.
    /// An indirect hit pins the state for the call and adds the conversions.
    ///
    /// Always inlined into the operation's function (`polymat::trace` and the like): left to
    /// the compiler, it stopped being inlined as the crate grew, and a direct `trace` 2×2 cost
    /// 18 instructions more (callgrind, `benches/tools/dispatch_probe`; docs/benchmarks.md).
    #[inline(always)]
    pub fn call(&self, args: &[&Data], out: Out, params: &P) -> Result<R> {
        if args.len() != self.arity {
            return Err(self.arity_error(args.len()));
        }
        if let Err(e) = self.check.run(&self.inner.name, args, params) {
            return Err(collective::early_error(&self.inner.name, args, e));
        }
        if !policy::active()
            && !matches!(out, Out::Group(_))
            && let Some(state) = cache::peek::<State<P, R>>(self.id)
        {
            // SAFETY: `peek` gives this thread's current state, kept alive by the thread's
            // cache slot until this thread dispatches again; the entry is read before the
            // kernel runs. A nested call inside the kernel may release that state, but not
            // the kernel: `Inner::retired` keeps every kernel a state ever held for as long
            // as `self` lives, and nothing of the state is used after the kernel returns.
            let current = unsafe { &*state };
            if let Some(e) = current
                .table
                .cell(args.iter().map(|a| a.kind()), out.kind())
            {
                if e.plain {
                    return (e.kernel)(args, params, e.ctx);
                }
                // SAFETY: `state` came from `peek` just now, and nothing has dispatched since;
                // the pin keeps it, and so `e`, alive until the converting call returns.
                let _pinned = unsafe { cache::pin(state) };
                return self.call_entry(e, args, params, &current.snap);
            }
        }
        self.call_pinned(args, out, params)
    }

    /// [`call`](Self::call) past the fast path, the state pinned for the whole call: a
    /// conversion policy, a group output, a converting cell, an error, or this thread's first
    /// call since a registration.
    #[inline(never)]
    fn call_pinned(&self, args: &[&Data], out: Out, params: &P) -> Result<R> {
        let inner = &*self.inner;
        if policy::active() || matches!(out, Out::Group(_)) {
            return self.call_with_policy(args, out, params);
        }
        let state = cache::load(inner.id, &inner.state);
        match state.table.cell(args.iter().map(|a| a.kind()), out.kind()) {
            Some(e) if e.plain => (e.kernel)(args, params, e.ctx),
            Some(e) => self.call_entry(e, args, params, &state.snap),
            None => Err(self.lookup_error(args.iter().map(|a| a.kind()).collect(), out)),
        }
    }

    /// [`call`](Self::call) when a conversion policy or default output is set somewhere, or
    /// the output is a group.
    #[cold]
    #[inline(never)]
    fn call_with_policy(&self, args: &[&Data], out: Out, params: &P) -> Result<R> {
        let p = if policy::active() {
            policy::current()
        } else {
            policy::Policy::default()
        };
        let state = cache::load(self.inner.id, &self.inner.state);
        let kinds = || args.iter().map(|a| a.kind());
        let cell = |out: Out| state.table.cell(kinds(), out.kind());
        let mut out = out;
        if let (Out::Auto, Some((default, scope)), true) = (out, p.output, R::DISPATCHED) {
            let applies = match scope {
                DefaultScope::Creation => self.inner.arity == 0,
                DefaultScope::Missing => {
                    self.inner.arity == 0 || cell(Out::Auto).is_none_or(|e| !e.direct)
                }
                DefaultScope::Full => true,
            };
            if applies {
                out = default;
            }
        }
        if let Out::Group(g) = out {
            out = Out::from(self.group_member(&state, &kinds().collect::<Vec<_>>(), g)?);
        }
        let Some(e) = cell(out) else {
            return Err(self.lookup_error(kinds().collect(), out));
        };
        if e.plain {
            return (e.kernel)(args, params, e.ctx);
        }
        let convs = resolved::describe_conversions(e, out.kind(), &state.snap);
        if !convs.is_empty() {
            match p.conversions {
                ImplicitConversions::Allow => {}
                ImplicitConversions::Warn => self.warn(args, out, &convs),
                ImplicitConversions::Deny => {
                    return Err(Error::ConversionDenied {
                        op: self.inner.name.clone(),
                        inputs: kinds().map(|k| state.snap.name(k)).collect(),
                        out: out.to_string(),
                        chains: convs,
                    });
                }
            }
        }
        self.call_entry(e, args, params, &state.snap)
    }

    /// Reports a converting call under [`ImplicitConversions::Warn`].
    fn warn(&self, args: &[&Data], out: Out, convs: &[String]) {
        let inputs = join(args.iter().map(|a| a.kind().name()));
        #[cfg(feature = "tracing")]
        tracing::warn!(
            target: "polymat::dispatch",
            op = %self.inner.name,
            inputs = %inputs,
            out = %out,
            conversions = %convs.join("; "),
            "implicit conversion"
        );
        #[cfg(not(feature = "tracing"))]
        eprintln!(
            "polymat: {}({inputs}) -> {out} converts: {}",
            self.inner.name,
            convs.join("; ")
        );
    }

    #[cold]
    fn arity_error(&self, got: usize) -> Error {
        Error::Arity {
            op: self.inner.name.clone(),
            expected: self.inner.arity,
            got,
        }
    }

    #[cold]
    fn lookup_error(&self, kinds: Vec<Kind>, out: Out) -> Error {
        if !R::DISPATCHED && out != Out::Auto {
            return Error::OutputNotDispatched {
                op: self.inner.name.clone(),
                out: out.to_string(),
            };
        }
        Error::NoSpecialisation {
            op: self.inner.name.clone(),
            inputs: kinds.iter().map(|k| k.name()).collect(),
            out: out.to_string(),
        }
    }

    /// Runs an entry with its conversions. Inputs that need none are passed as they are.
    ///
    /// Out of line, so that the copies of [`call`](Self::call) in every operation stay small:
    /// a converting call costs far more than the call into this function.
    #[inline(never)]
    fn call_entry(
        &self,
        e: &Entry<P, R>,
        args: &[&Data],
        params: &P,
        snap: &Snapshot,
    ) -> Result<R> {
        #[cfg(feature = "tracing")]
        tracing::debug!(
            target: "polymat::dispatch",
            op = %self.inner.name,
            kernel = %e.spec.name,
            inputs = %join(args.iter().map(|a| a.kind().name())),
            conversions = %resolved::describe_conversions(e, e.fixup, snap).join("; "),
            weight = e.weight,
            "indirect dispatch"
        );
        let _ = snap;
        if e.collective {
            return collective::run(&self.inner.name, &e.spec.name, || {
                self.run_entry(e, args, params)
            });
        }
        self.run_entry(e, args, params)
    }

    /// The dense-limit check, the conversions, the kernel and its output conversion.
    fn run_entry(&self, e: &Entry<P, R>, args: &[&Data], params: &P) -> Result<R> {
        if e.dense_out
            && let Some(shape) = self.inner.result_shape.and_then(|f| f(args, params))
        {
            dense_result_fits(&self.inner.name, shape)?;
        }
        let result = with_converted(args, &e.inputs, |refs| (e.kernel)(refs, params, e.ctx))?;
        match (e.output.as_ref(), e.fixup) {
            (Some(chain), _) => result.map_data(|d| chain.run(d)),
            // A generic kernel under a sticky group: a result still in the group stays.
            (None, Some(kind)) if !e.keep.is_empty() => result.map_data(|d| {
                if e.keep.contains(&d.kind()) {
                    Ok(d.clone())
                } else {
                    crate::convert::registry().convert(d, kind)
                }
            }),
            (None, Some(kind)) => result.convert_to(kind),
            (None, None) => Ok(result),
        }
    }

    /// The kind of `group` whose cell for these inputs is cheapest (the earlier kind on a tie).
    fn group_member(&self, state: &State<P, R>, kinds: &[Kind], group: Group) -> Result<Kind> {
        let mut best: Option<(f64, Kind)> = None;
        if R::DISPATCHED {
            for k in state.snap.kinds_in(group) {
                let e = state.table.cell(kinds.iter().copied(), Some(k));
                if let Some(e) = e
                    && best.is_none_or(|(w, _)| e.weight < w)
                {
                    best = Some((e.weight, k));
                }
            }
        }
        best.map(|(_, k)| k)
            .ok_or_else(|| self.lookup_error(kinds.to_vec(), Out::Group(group)))
    }

    /// What `out` asks of a call with these input kinds: `out` itself, or for `Out::Group` the
    /// group's kind whose path is cheapest (the earlier registered kind on a tie).
    ///
    /// # Errors
    /// [`Error::NoSpecialisation`] if no kind of the group can be reached (or
    /// [`Error::OutputNotDispatched`] for an operation that returns no matrix).
    ///
    /// ```
    /// use polymat::{Group, Kind, Out, ops::ADD};
    /// assert_eq!(ADD.resolve_output(&[Kind::DENSE, Kind::CSR], Out::Group(Group::SPARSE))?, Out::Csr);
    /// assert_eq!(ADD.resolve_output(&[Kind::CSR, Kind::CSR], Out::Group(Group::DENSE))?, Out::Dense);
    /// # Ok::<(), polymat::Error>(())
    /// ```
    pub fn resolve_output(&self, kinds: &[Kind], out: Out) -> Result<Out> {
        match out {
            Out::Group(g) => {
                let state = self.inner.state.load();
                self.group_member(&state, kinds, g).map(Out::from)
            }
            _ => Ok(out),
        }
    }

    fn entry_index(&self, state: &State<P, R>, kinds: &[Kind], out: Out) -> Result<usize> {
        if kinds.len() != self.inner.arity {
            return Err(self.arity_error(kinds.len()));
        }
        let out = match out {
            Out::Group(g) => Out::from(self.group_member(state, kinds, g)?),
            _ => out,
        };
        state
            .table
            .index(kinds.iter().copied(), out.kind())
            .filter(|&i| state.table.entries[i].is_some())
            .ok_or_else(|| self.lookup_error(kinds.to_vec(), out))
    }

    /// The specialisation a call with these input kinds and output would use.
    ///
    /// # Errors
    /// As [`call`](Self::call) for the lookup part.
    ///
    /// ```
    /// use polymat::{Kind, Out, ops::MATMUL};
    /// let h = MATMUL.get(&[Kind::CSR, Kind::DENSE], Out::Csr).unwrap();
    /// assert!(!h.is_direct()); // the Csr·Dense kernel, then its result converted
    /// ```
    pub fn get(&self, kinds: &[Kind], out: Out) -> Result<Resolved<P, R>> {
        let state = self.inner.state.load_full();
        let out = match out {
            Out::Group(g) => Out::from(self.group_member(&state, kinds, g)?),
            _ => out,
        };
        let index = self.entry_index(&state, kinds, out)?;
        Ok(Resolved {
            dispatcher: self.clone(),
            state,
            index,
            kinds: kinds.to_vec(),
            out,
        })
    }

    /// Says which kernel, conversion chains and weights a call would use.
    ///
    /// # Errors
    /// As [`get`](Self::get).
    ///
    /// ```
    /// use polymat::{Kind, Out, ops::ADD};
    /// let e = ADD.explain(&[Kind::CSR, Kind::DENSE], Out::Csr).unwrap();
    /// assert_eq!(e.kernel, "add_csr_dense");
    /// assert_eq!(e.weight, 1.4);
    /// println!("{e}");
    /// ```
    pub fn explain(&self, kinds: &[Kind], out: Out) -> Result<Explanation> {
        Ok(self.get(kinds, out)?.explain())
    }

    /// Adds (or replaces: same input and output types) one specialisation, then rebuilds.
    ///
    /// A replaced specialisation is not dropped: the dispatcher keeps it, and what its kernel
    /// captured, until the dispatcher itself is dropped: a kernel that registers and then
    /// dispatches again may still be running the one it replaced (a direct hit pins nothing, so
    /// the state it was found in can go). Replacing kernels in a loop grows memory by one
    /// kernel per replacement.
    ///
    /// # Errors
    /// As [`DispatcherBuilder::build`]; the dispatcher is unchanged on error.
    pub fn add_specialisation(&self, spec: Specialisation<P, R>) -> Result<()> {
        let mut b = Batch::new();
        b.add_specialisation(self, spec);
        registry().commit(b)
    }

    /// Names of the registered specialisations with their signatures, in registration order.
    pub fn specialisations(&self) -> Vec<String> {
        let state = self.inner.state.load();
        state
            .specs
            .iter()
            .map(|s| {
                let ins: Vec<String> = s
                    .inputs
                    .iter()
                    .map(|k| k.map_or_else(|| "Any".to_owned(), |k| state.snap.name(k)))
                    .collect();
                let out = s
                    .output
                    .map_or_else(|| R::label().to_owned(), |k| state.snap.name(k));
                format!("{} ({}) -> {}", s.name, ins.join(", "), out)
            })
            .collect()
    }
}

impl<P: 'static, R: ReturnValue> fmt::Debug for Dispatcher<P, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "<dispatcher {} of arity {}>",
            self.inner.name, self.inner.arity
        )
    }
}

impl Batch {
    /// Queues a specialisation for `dispatcher`, applied with the rest of the batch.
    pub fn add_specialisation<P: Send + Sync + 'static, R: ReturnValue>(
        &mut self,
        dispatcher: &Dispatcher<P, R>,
        spec: Specialisation<P, R>,
    ) -> &mut Batch {
        self.push_pending(dispatcher.inner.clone(), Box::new(spec));
        self
    }
}

/// Runs `f` on the inputs, each converted through its chain where it has one. Up to four
/// inputs are handled without allocating.
fn with_converted<T>(
    args: &[&Data],
    chains: &[Option<Arc<Chain>>],
    f: impl FnOnce(&[&Data]) -> Result<T>,
) -> Result<T> {
    const STACK: usize = 4;
    let Some(&first) = args.first() else {
        return f(args);
    };
    if args.len() <= STACK {
        let mut owned: [Option<Data>; STACK] = Default::default();
        for (i, (a, c)) in args.iter().zip(chains).enumerate() {
            if let Some(c) = c {
                owned[i] = Some(c.run(a)?);
            }
        }
        let mut refs: [&Data; STACK] = [first; STACK];
        for (i, r) in refs.iter_mut().enumerate().take(args.len()) {
            *r = owned[i].as_ref().unwrap_or(args[i]);
        }
        return f(&refs[..args.len()]);
    }
    let owned = args
        .iter()
        .zip(chains)
        .map(|(a, c)| c.as_ref().map(|c| c.run(a)).transpose())
        .collect::<Result<Vec<Option<Data>>>>()?;
    let refs: Vec<&Data> = owned
        .iter()
        .zip(args)
        .map(|(o, a)| o.as_ref().unwrap_or(a))
        .collect();
    f(&refs)
}

pub(crate) fn join(items: impl Iterator<Item = String>) -> String {
    items.collect::<Vec<_>>().join(", ")
}
