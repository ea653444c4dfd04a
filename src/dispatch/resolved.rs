//! What a dispatcher decided for one tuple of kinds: [`Resolved`] handles and their
//! [`Explanation`].

use std::fmt;
use std::sync::Arc;

use super::table::Entry;
use super::{Dispatcher, Out, ReturnValue, State, join};
use crate::convert::Chain;
use crate::error::{Error, Result};
use crate::storage::{Data, Kind};

/// The specialisation chosen for one tuple of input kinds and one output, as returned by
/// [`Dispatcher::get`]. It keeps the table it came from, so it stays valid (and unchanged) after
/// later registrations.
pub struct Resolved<P: 'static, R: ReturnValue> {
    pub(super) dispatcher: Dispatcher<P, R>,
    pub(super) state: Arc<State<P, R>>,
    pub(super) index: usize,
    pub(super) kinds: Vec<Kind>,
    pub(super) out: Out,
}

impl<P: Send + Sync + 'static, R: ReturnValue> Resolved<P, R> {
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
        if let Err(e) = self.dispatcher.inner.check.run(name, args, params) {
            return Err(super::collective::early_error(name, args, e));
        }
        let e = self.entry();
        if e.plain {
            (e.kernel)(args, params, e.ctx)
        } else {
            self.dispatcher
                .call_entry(e, args, params, &self.state.snap)
        }
    }

    /// The full decision: kernel, conversion chains and weights.
    pub fn explain(&self) -> Explanation {
        let e = self.entry();
        let snap = &self.state.snap;
        let path = |c: &Option<Arc<Chain>>, have: Kind| match c {
            Some(c) => (c.kinds(), c.weight()),
            None => (vec![have], 0.0),
        };
        let internal = internal_conversions(e, &self.state.snap);
        Explanation {
            internal,
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
            result: e
                .output
                .as_ref()
                .and_then(|c| c.kinds().last().copied())
                .or(e.fixup)
                .or(e.spec.output),
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

impl<P: Send + Sync + 'static, R: ReturnValue> fmt::Display for Resolved<P, R> {
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

impl<P: Send + Sync + 'static, R: ReturnValue> fmt::Debug for Resolved<P, R> {
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
    /// The kind the call returns: the output conversion's target, else the kernel's kind;
    /// `None` when a generic kernel decides at run time (and for operations that return no
    /// matrix). Under `Out::Auto` with an input in a sticky group (GPU memory) it is a kind of
    /// that group.
    pub result: Option<Kind>,
    /// Total weight.
    pub weight: f64,
    /// No conversion at all.
    pub direct: bool,
    /// The kernel is generic.
    pub generic: bool,
    /// Conversions the kernel itself makes (a sparse matrix function computed densely):
    /// each `(from, to)` with its weight.
    pub internal: Vec<(Kind, Kind, f64)>,
    names: Vec<String>,
}

impl Explanation {
    /// The name of `kind` in the snapshot this explanation was made from.
    pub(crate) fn kind_name(&self, kind: Kind) -> String {
        self.names
            .get(kind.index())
            .cloned()
            .unwrap_or_else(|| format!("{kind:?}"))
    }
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
        for (from, to, w) in &self.internal {
            writeln!(
                f,
                "  internally: {} -> {} (weight {w})",
                name(from),
                name(to)
            )?;
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

/// The conversions a kernel makes internally: its typed inputs to its `via` kind and its
/// `via` result back to its output kind.
pub(crate) fn internal_conversions<P, R>(
    e: &Entry<P, R>,
    snap: &crate::convert::Snapshot,
) -> Vec<(Kind, Kind, f64)> {
    let spec = &e.spec;
    let Some(via) = spec.via else {
        return Vec::new();
    };
    let mut v: Vec<(Kind, Kind, f64)> = spec
        .inputs
        .iter()
        .flatten()
        .filter(|&&k| k != via)
        .map(|&k| (k, via, snap.weight(k, via)))
        .collect();
    if let Some(o) = spec.output.filter(|&o| o != via) {
        v.push((via, o, snap.weight(via, o)));
    }
    v.dedup();
    v
}

/// Every conversion a call through `e` makes, as lines such as `"input 0: Csr -> Dense"`.
pub(crate) fn describe_conversions<P, R>(
    e: &Entry<P, R>,
    out: Option<Kind>,
    snap: &crate::convert::Snapshot,
) -> Vec<String> {
    let route = |c: &Chain| {
        c.kinds()
            .iter()
            .map(|k| snap.name(*k))
            .collect::<Vec<_>>()
            .join(" -> ")
    };
    let mut v = Vec::new();
    for (i, c) in e.inputs.iter().enumerate() {
        if let Some(c) = c {
            v.push(format!("input {i}: {}", route(c)));
        }
    }
    for (from, to, _) in internal_conversions(e, snap) {
        v.push(format!(
            "kernel {} internally: {} -> {}",
            e.spec.name,
            snap.name(from),
            snap.name(to)
        ));
    }
    if let Some(c) = &e.output {
        v.push(format!("output: {}", route(c)));
    } else if let (Some(o), true) = (e.fixup, out.is_some()) {
        v.push(format!("output: to {}", snap.name(o)));
    }
    v
}
