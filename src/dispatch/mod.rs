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
//! (QuTiP's "creation" policy).
//!
//! The result for *every* tuple of known kinds and every output is computed in advance into a
//! table, rebuilt whenever a kind, a conversion or a specialisation is registered and published
//! whole (arc-swap), so a call costs one lock-free load, an index computation and an indirect
//! call, and never sees a half-built table.

mod cache;
mod out;
mod spec;
mod table;

pub use out::Out;
pub(crate) use spec::plain_output;
pub use spec::{KernelOutput, Output, Specialisation};

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use arc_swap::ArcSwap;

use crate::convert::{Batch, Listener, Prepared, Snapshot, registry};
use crate::error::{Error, Result};
use crate::storage::{Data, Kind};
use spec::Spec;
use table::{Entry, Table};

/// Shape and parameter check run before any conversion: `(op name, inputs, params)`.
pub type CheckFn<P> = fn(&str, &[&Data], &P) -> Result<()>;

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
    check: Option<CheckFn<P>>,
    state: ArcSwap<State<P, R>>,
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
pub struct Dispatcher<P: 'static = (), R: Output = Data> {
    inner: Arc<Inner<P, R>>,
}

impl<P: 'static, R: Output> Clone for Dispatcher<P, R> {
    fn clone(&self) -> Self {
        Dispatcher {
            inner: self.inner.clone(),
        }
    }
}

/// Builds a [`Dispatcher`] with its first specialisations and one table build.
pub struct DispatcherBuilder<P: 'static, R: Output> {
    name: String,
    arity: usize,
    check: Option<CheckFn<P>>,
    specs: Vec<Specialisation<P, R>>,
}

impl<P: Send + Sync + 'static, R: Output> DispatcherBuilder<P, R> {
    /// Sets the shape/parameter check, run on every call before any conversion.
    pub fn check(mut self, check: CheckFn<P>) -> Self {
        self.check = Some(check);
        self
    }

    /// Adds a specialisation.
    pub fn specialisation(mut self, spec: Specialisation<P, R>) -> Self {
        self.specs.push(spec);
        self
    }

    /// Registers the dispatcher with the process-wide registry and builds its table.
    ///
    /// # Errors
    /// [`Error::UnregisteredType`] or [`Error::InvalidSpecialisation`] for a specialisation
    /// that does not fit.
    pub fn build(self) -> Result<Dispatcher<P, R>> {
        let inner = Arc::new(Inner {
            id: cache::next_id(),
            name: self.name,
            arity: self.arity,
            check: self.check,
            state: ArcSwap::from_pointee(State {
                snap: registry().snapshot().clone(),
                specs: Vec::new(),
                table: Table {
                    n_kinds: 0,
                    out_slots: 1,
                    entries: Box::new([]),
                },
            }),
        });
        let weak = Arc::downgrade(&inner) as std::sync::Weak<dyn Listener>;
        let specs = self.specs;
        registry().attach(weak, |snap| {
            let state = inner.next_state(snap, specs)?;
            inner.state.store(Arc::new(state));
            Ok(())
        })?;
        Ok(Dispatcher { inner })
    }
}

impl<P: Send + Sync + 'static, R: Output> DispatcherBuilder<P, R> {
    /// Builds a built-in dispatcher, whose kernels all use built-in types: it cannot fail
    /// (the unit and integration tests build every one of them).
    pub(crate) fn builtin(self) -> Dispatcher<P, R> {
        let name = self.name.clone();
        self.build()
            .unwrap_or_else(|e| unreachable!("built-in dispatcher {name}: {e}"))
    }
}

impl<P: Send + Sync + 'static, R: Output> Inner<P, R> {
    fn next_state(
        &self,
        snap: &Arc<Snapshot>,
        new: Vec<Specialisation<P, R>>,
    ) -> Result<State<P, R>> {
        let mut specs = self.state.load().specs.clone();
        for s in new {
            let spec = Arc::new(s.resolve(&self.name, self.arity, snap)?);
            specs.retain(|old| !old.same_key(&spec));
            specs.push(spec);
        }
        let table = Table::build(&specs, snap, self.arity, R::DISPATCHED);
        Ok(State {
            snap: snap.clone(),
            specs,
            table,
        })
    }
}

struct PreparedState<'a, P, R> {
    inner: &'a Inner<P, R>,
    state: State<P, R>,
}

impl<P, R> Prepared for PreparedState<'_, P, R> {
    fn publish(self: Box<Self>) {
        self.inner.state.store(Arc::new(self.state));
        cache::invalidate();
    }
}

impl<P: Send + Sync + 'static, R: Output> Listener for Inner<P, R> {
    fn prepare<'a>(
        &'a self,
        snap: &Arc<Snapshot>,
        pending: Vec<Box<dyn Any + Send>>,
    ) -> Result<Box<dyn Prepared + 'a>> {
        let specs = pending
            .into_iter()
            .map(|p| {
                p.downcast::<Specialisation<P, R>>()
                    .map(|b| *b)
                    .map_err(|_| Error::InvalidSpecialisation {
                        op: self.name.clone(),
                        name: "?".into(),
                        reason: "queued for a dispatcher of another signature".into(),
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Box::new(PreparedState {
            inner: self,
            state: self.next_state(snap, specs)?,
        }))
    }
}

impl<P: Send + Sync + 'static, R: Output> Dispatcher<P, R> {
    /// Starts a dispatcher named `name` taking `arity` matrix inputs.
    pub fn builder(name: &str, arity: usize) -> DispatcherBuilder<P, R> {
        DispatcherBuilder {
            name: name.to_owned(),
            arity,
            check: None,
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

    /// Calls the operation: looks up the cell for the inputs' kinds and `out`, converts what
    /// must be converted and runs the kernel.
    ///
    /// # Errors
    /// [`Error::Arity`] for the wrong number of inputs, the operation's own errors
    /// ([`Error::Shape`], ...), [`Error::NoSpecialisation`] if no kernel can be reached, and
    /// [`Error::OutputNotDispatched`] for an output kind asked of a plain-valued operation.
    ///
    /// # Cost
    /// A direct hit: one lock-free load, the index computation, one indirect call; nothing is
    /// allocated by the dispatcher. An indirect hit adds the conversions.
    #[inline]
    pub fn call(&self, args: &[&Data], out: Out, params: &P) -> Result<R> {
        let inner = &*self.inner;
        if args.len() != inner.arity {
            return Err(self.arity_error(args.len()));
        }
        if let Some(check) = inner.check {
            check(&inner.name, args, params)?;
        }
        let state = cache::load(inner.id, &inner.state);
        let out_kind = out.kind();
        let entry = state
            .table
            .index(args.iter().map(|a| a.kind()), out_kind)
            .and_then(|i| state.table.entries[i].as_ref());
        match entry {
            Some(e) if e.direct && e.fixup.is_none() => (e.kernel)(args, params, e.ctx),
            Some(e) => self.call_entry(e, args, params),
            None => Err(self.lookup_error(args.iter().map(|a| a.kind()).collect(), out)),
        }
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
    fn call_entry(&self, e: &Entry<P, R>, args: &[&Data], params: &P) -> Result<R> {
        let result = with_converted(args, &e.inputs, |refs| (e.kernel)(refs, params, e.ctx))?;
        match (e.output.as_ref(), e.fixup) {
            (Some(chain), _) => result.map_data(|d| chain.run(d)),
            (None, Some(kind)) => result.convert_to(kind),
            (None, None) => Ok(result),
        }
    }

    fn entry_index(&self, state: &State<P, R>, kinds: &[Kind], out: Out) -> Result<usize> {
        if kinds.len() != self.inner.arity {
            return Err(self.arity_error(kinds.len()));
        }
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
    /// let h = MATMUL.get(&[Kind::DENSE, Kind::CSR], Out::Dense).unwrap();
    /// assert!(!h.is_direct());
    /// ```
    pub fn get(&self, kinds: &[Kind], out: Out) -> Result<Resolved<P, R>> {
        let state = self.inner.state.load_full();
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

impl<P: 'static, R: Output> fmt::Debug for Dispatcher<P, R> {
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
    pub fn add_specialisation<P: Send + Sync + 'static, R: Output>(
        &mut self,
        dispatcher: &Dispatcher<P, R>,
        spec: Specialisation<P, R>,
    ) -> &mut Batch {
        self.push_pending(dispatcher.inner.clone(), Box::new(spec));
        self
    }
}

/// The specialisation chosen for one tuple of input kinds and one output, as returned by
/// [`Dispatcher::get`]. It keeps the table it came from, so it stays valid (and unchanged) after
/// later registrations.
pub struct Resolved<P: 'static, R: Output> {
    dispatcher: Dispatcher<P, R>,
    state: Arc<State<P, R>>,
    index: usize,
    kinds: Vec<Kind>,
    out: Out,
}

impl<P: Send + Sync + 'static, R: Output> Resolved<P, R> {
    fn entry(&self) -> &Entry<P, R> {
        self.state.table.entries[self.index]
            .as_ref()
            .unwrap_or_else(|| unreachable!("get() checked the cell is filled"))
    }

    /// Whether the kernel runs on the inputs as they are and produces the requested kind.
    pub fn is_direct(&self) -> bool {
        self.entry().direct
    }

    /// Whether the kernel is a generic one.
    pub fn is_generic(&self) -> bool {
        self.entry().spec.generic
    }

    /// Total conversion weight of this path.
    pub fn weight(&self) -> f64 {
        self.entry().weight
    }

    /// The kernel's name.
    pub fn kernel_name(&self) -> &str {
        &self.entry().spec.name
    }

    /// Calls this specialisation; the inputs must have the kinds it was resolved for.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the inputs have other kinds; otherwise as
    /// [`Dispatcher::call`].
    pub fn call(&self, args: &[&Data], params: &P) -> Result<R> {
        let name = &self.dispatcher.inner.name;
        if args.len() != self.kinds.len()
            || args.iter().zip(&self.kinds).any(|(a, k)| a.kind() != *k)
        {
            return Err(Error::argument(
                name,
                format!(
                    "this specialisation takes ({}), got ({})",
                    join(self.kinds.iter().map(|k| k.name())),
                    join(args.iter().map(|a| a.kind().name()))
                ),
            ));
        }
        if let Some(check) = self.dispatcher.inner.check {
            check(name, args, params)?;
        }
        let e = self.entry();
        if e.direct && e.fixup.is_none() {
            (e.kernel)(args, params, e.ctx)
        } else {
            self.dispatcher.call_entry(e, args, params)
        }
    }

    /// The full decision: kernel, conversion chains and weights.
    pub fn explain(&self) -> Explanation {
        let e = self.entry();
        let snap = &self.state.snap;
        let path = |c: &Option<Arc<crate::convert::Chain>>, have: Kind| match c {
            Some(c) => (c.kinds(), c.weight()),
            None => (vec![have], 0.0),
        };
        Explanation {
            op: self.dispatcher.inner.name.clone(),
            inputs: self.kinds.clone(),
            out: self.out,
            kernel: e.spec.name.clone(),
            kernel_inputs: e.spec.inputs.clone(),
            kernel_output: e.spec.output,
            input_paths: e
                .inputs
                .iter()
                .zip(&self.kinds)
                .map(|(c, &k)| path(c, k))
                .collect(),
            output_path: e.output.as_ref().map(|c| (c.kinds(), c.weight())),
            weight: e.weight,
            direct: e.direct,
            generic: e.spec.generic,
            names: (0..snap.n_kinds() as u32)
                .map(|i| snap.name(Kind(i)))
                .collect(),
        }
    }

    fn output_label(&self) -> String {
        let e = self.entry();
        if !R::DISPATCHED {
            return R::label().to_owned();
        }
        match (self.out.kind(), e.spec.output) {
            (Some(k), _) | (None, Some(k)) => self.state.snap.name(k),
            (None, None) => "Auto".to_owned(),
        }
    }
}

/// Runs `f` on the inputs, each converted through its chain where it has one. Up to four
/// inputs are handled without allocating.
fn with_converted<T>(
    args: &[&Data],
    chains: &[Option<Arc<crate::convert::Chain>>],
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

fn join(items: impl Iterator<Item = String>) -> String {
    items.collect::<Vec<_>>().join(", ")
}

impl<P: Send + Sync + 'static, R: Output> fmt::Display for Resolved<P, R> {
    /// `<indirect specialisation (Csr, Dense) -> Dense of add>`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kinds = join(self.kinds.iter().map(|k| self.state.snap.name(*k)));
        write!(
            f,
            "<{}{} specialisation ({kinds}) -> {} of {}>",
            if self.is_direct() {
                "direct"
            } else {
                "indirect"
            },
            if self.is_generic() { " generic" } else { "" },
            self.output_label(),
            self.dispatcher.inner.name
        )
    }
}

impl<P: Send + Sync + 'static, R: Output> fmt::Debug for Resolved<P, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// What a call would do, from [`Dispatcher::explain`]. Displays as a short report.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Explanation {
    /// The operation.
    pub op: String,
    /// The input kinds asked about.
    pub inputs: Vec<Kind>,
    /// The output asked about.
    pub out: Out,
    /// Name of the chosen kernel.
    pub kernel: String,
    /// The kinds the kernel takes (`None`: any kind).
    pub kernel_inputs: Vec<Option<Kind>>,
    /// The kind the kernel returns, if typed.
    pub kernel_output: Option<Kind>,
    /// For each input, the kinds it passes through and the weight.
    pub input_paths: Vec<(Vec<Kind>, f64)>,
    /// The output conversion, if any.
    pub output_path: Option<(Vec<Kind>, f64)>,
    /// Total weight.
    pub weight: f64,
    /// No conversion at all.
    pub direct: bool,
    /// The kernel is generic.
    pub generic: bool,
    names: Vec<String>,
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = |k: &Kind| {
            self.names
                .get(k.index())
                .cloned()
                .unwrap_or_else(|| format!("{k:?}"))
        };
        let route = |p: &[Kind]| p.iter().map(name).collect::<Vec<_>>().join(" -> ");
        writeln!(
            f,
            "{}({}) -> {}: {} path, total weight {}",
            self.op,
            self.inputs.iter().map(name).collect::<Vec<_>>().join(", "),
            self.out
                .kind()
                .map_or_else(|| "Auto".to_owned(), |k| name(&k)),
            if self.direct { "direct" } else { "indirect" },
            self.weight
        )?;
        let takes: Vec<String> = self
            .kernel_inputs
            .iter()
            .map(|k| k.as_ref().map_or_else(|| "Any".to_owned(), name))
            .collect();
        writeln!(
            f,
            "  kernel {}{} ({}) -> {}",
            self.kernel,
            if self.generic { " [generic]" } else { "" },
            takes.join(", "),
            self.kernel_output
                .as_ref()
                .map_or_else(|| "its own choice".to_owned(), name)
        )?;
        for (i, (p, w)) in self.input_paths.iter().enumerate() {
            if p.len() > 1 {
                writeln!(f, "  input {i}: {} (weight {w})", route(p))?;
            } else {
                writeln!(f, "  input {i}: {} as is", route(p))?;
            }
        }
        match &self.output_path {
            Some((p, w)) => write!(f, "  output: {} (weight {w})", route(p)),
            None => match self.kernel_output.as_ref() {
                Some(k) => write!(f, "  output: {} as is", name(k)),
                None => write!(f, "  output: whatever the kernel returns"),
            },
        }
    }
}
