//! The lookup table: for every tuple of input kinds and every output slot, the cheapest
//! specialisation and the conversions that reach it.

use std::cmp::Ordering;
use std::sync::Arc;

use super::spec::{Ctx, KernelFn, Spec};
use crate::convert::{Chain, Snapshot};
use crate::storage::Kind;

/// One resolved cell of the table.
pub(crate) struct Entry<P, R> {
    /// The kernel, copied out of `spec` to save a pointer hop on every call.
    pub(crate) kernel: KernelFn<P, R>,
    pub(crate) spec: Arc<Spec<P, R>>,
    /// Conversion of each input, `None` where the input is used as it is.
    pub(crate) inputs: Box<[Option<Arc<Chain>>]>,
    /// Conversion of the kernel's output to the requested kind.
    pub(crate) output: Option<Arc<Chain>>,
    /// Requested output kind that a generic kernel's result must be checked against.
    pub(crate) fixup: Option<Kind>,
    /// Whether the kernel's result is converted to Dense on its way out (an output chain
    /// through Dense, or a generic kernel's fixup to Dense): a call checks the result's shape
    /// against the dense limit before the kernel runs, where the dispatcher knows that shape.
    pub(crate) dense_out: bool,
    /// For the `Out::Auto` cell of a sticky group served by a generic kernel: the group's
    /// kinds. A result already in one of them is kept as it is (the fixup is only for results
    /// that left the group).
    pub(crate) keep: Box<[Kind]>,
    pub(crate) weight: f64,
    pub(crate) direct: bool,
    /// `direct`, no `fixup` and not `collective`: the kernel's result is the call's result
    /// (the fast path).
    pub(crate) plain: bool,
    /// An input or the output is a kind whose operations are collective over processes (see
    /// `collective`): the call runs under the agreement of every rank.
    pub(crate) collective: bool,
    pub(crate) ctx: Ctx,
}

/// The whole table of one dispatcher, for one registry snapshot.
pub(crate) struct Table<P, R> {
    pub(crate) n_kinds: usize,
    pub(crate) out_slots: usize,
    pub(crate) entries: Box<[Option<Entry<P, R>>]>,
}

impl<P, R> Table<P, R> {
    /// The cell for these input kinds and output, `None` where there is none.
    #[inline(always)]
    pub(crate) fn cell(
        &self,
        kinds: impl Iterator<Item = Kind>,
        out: Option<Kind>,
    ) -> Option<&Entry<P, R>> {
        let i = self.index(kinds, out)?;
        self.entries.get(i)?.as_ref()
    }
}

/// Ordering key of a candidate; smaller is better. See `Dispatcher`'s documentation.
#[derive(PartialEq)]
struct Cost {
    weight: f64,
    converted_inputs: usize,
    generic: bool,
    /// Negated registration order: later registrations win remaining ties.
    order: std::cmp::Reverse<usize>,
}

impl PartialOrd for Cost {
    fn partial_cmp(&self, o: &Cost) -> Option<Ordering> {
        Some(
            self.weight
                .total_cmp(&o.weight)
                .then(self.converted_inputs.cmp(&o.converted_inputs))
                .then(self.generic.cmp(&o.generic))
                .then(self.order.cmp(&o.order)),
        )
    }
}

impl<P, R> Table<P, R> {
    /// A table covering no kinds (before the first build).
    pub(crate) fn empty() -> Self {
        Table {
            n_kinds: 0,
            out_slots: 1,
            entries: Box::new([]),
        }
    }

    /// The number of cells for `k` kinds and `arity` inputs; `None` if it overflows.
    pub(crate) fn cells(k: usize, arity: usize, dispatched: bool) -> Option<usize> {
        let tuples = k.checked_pow(u32::try_from(arity).ok()?)?;
        tuples.checked_mul(if dispatched { k + 1 } else { 1 })
    }

    /// Builds the table. O(K^N · slots · S · N) for K kinds, arity N, S specialisations.
    pub(crate) fn build(
        specs: &[Arc<Spec<P, R>>],
        snap: &Snapshot,
        arity: usize,
        dispatched: bool,
    ) -> Self {
        let k = snap.n_kinds();
        let out_slots = if dispatched { k + 1 } else { 1 };
        let n_tuples = k.pow(arity as u32);
        let mut entries = Vec::with_capacity(n_tuples * out_slots);
        let mut tuple = vec![Kind(0); arity];
        for t in 0..n_tuples {
            let mut rest = t;
            for slot in tuple.iter_mut().rev() {
                *slot = Kind((rest % k) as u32);
                rest /= k;
            }
            entries.push(auto(specs, snap, &tuple, dispatched));
            for o in 1..out_slots {
                let out = Some(Kind((o - 1) as u32));
                entries.push(best(specs, snap, &tuple, out, dispatched));
            }
        }
        Table {
            n_kinds: k,
            out_slots,
            entries: entries.into_boxed_slice(),
        }
    }

    /// Index of the cell for these input kinds and output, `None` for kinds the table does
    /// not cover.
    #[inline]
    pub(crate) fn index(
        &self,
        kinds: impl Iterator<Item = Kind>,
        out: Option<Kind>,
    ) -> Option<usize> {
        let k = self.n_kinds;
        let mut idx = 0usize;
        for kind in kinds {
            let i = kind.index();
            if i >= k {
                return None;
            }
            idx = idx * k + i;
        }
        let slot = match out {
            None => 0,
            Some(o) if o.index() < k && self.out_slots > 1 => o.index() + 1,
            Some(_) => return None,
        };
        Some(idx * self.out_slots + slot)
    }
}

/// The `Out::Auto` cell: the cheapest path, except that when an input is in a sticky group
/// (GPU memory) the result must stay in that group: then the cheapest cell among the group's
/// kinds, so a missing kernel on the group's kinds means converting the result back.
fn auto<P, R>(
    specs: &[Arc<Spec<P, R>>],
    snap: &Snapshot,
    tuple: &[Kind],
    dispatched: bool,
) -> Option<Entry<P, R>> {
    if dispatched && let Some(g) = snap.sticky_group(tuple) {
        let mut found: Option<Entry<P, R>> = None;
        for k in snap.kinds_in(g) {
            if let Some(e) = best(specs, snap, tuple, Some(k), dispatched)
                && found.as_ref().is_none_or(|f| e.weight < f.weight)
            {
                found = Some(e);
            }
        }
        if let Some(mut e) = found {
            if e.spec.output.is_none() {
                e.keep = snap.kinds_in(g).into_boxed_slice();
                // The generic kernel makes its own choice (`Out::Auto`): asked for the group's
                // first kind, it would send a result that is already in the group (GpuCsr from
                // `sub`'s call of `add` on GpuCsr) to that kind (GpuDense). The fixup above
                // still moves a result that left the group back into it.
                e.ctx = Ctx::new(None, e.ctx.native);
            }
            return Some(e);
        }
    }
    best(specs, snap, tuple, None, dispatched)
}

fn best<P, R>(
    specs: &[Arc<Spec<P, R>>],
    snap: &Snapshot,
    tuple: &[Kind],
    out: Option<Kind>,
    dispatched: bool,
) -> Option<Entry<P, R>> {
    let mut best: Option<(Cost, &Arc<Spec<P, R>>)> = None;
    'specs: for (order, spec) in specs.iter().enumerate() {
        let mut weight = 0.0;
        let mut converted_inputs = 0;
        for (&have, want) in tuple.iter().zip(&spec.inputs) {
            if let Some(want) = *want {
                let w = snap.weight(have, want);
                if w == f64::MAX {
                    continue 'specs;
                }
                weight += w;
                converted_inputs += usize::from(have != want);
            }
        }
        if let (Some(o), Some(native)) = (out, spec.output) {
            let w = snap.weight(native, o);
            if w == f64::MAX {
                continue;
            }
            weight += w;
        }
        let cost = Cost {
            weight,
            converted_inputs,
            generic: spec.generic,
            order: std::cmp::Reverse(order),
        };
        if best.as_ref().is_none_or(|(b, _)| cost < *b) {
            best = Some((cost, spec));
        }
    }
    let (cost, spec) = best?;
    let inputs: Box<[Option<Arc<Chain>>]> = tuple
        .iter()
        .zip(&spec.inputs)
        .map(|(&have, want)| match *want {
            Some(w) if w != have => snap.chain(have, w).cloned(),
            _ => None,
        })
        .collect();
    let output = match (out, spec.output) {
        (Some(o), Some(native)) if o != native => snap.chain(native, o).cloned(),
        _ => None,
    };
    let fixup = if dispatched && spec.output.is_none() {
        out
    } else {
        None
    };
    // A kernel that converts internally is never direct, even on its own kinds.
    let internal = spec.via.is_some_and(|v| {
        spec.inputs.iter().any(|k| k.is_some_and(|k| k != v)) || spec.output.is_some_and(|o| o != v)
    });
    let direct = inputs.iter().all(Option::is_none) && output.is_none() && !internal;
    let dense_out = fixup == Some(Kind::DENSE)
        || output
            .as_ref()
            .is_some_and(|c| c.steps.iter().any(|s| s.to == Kind::DENSE));
    let collective = super::collective::group().is_some_and(|g| {
        let in_group = |k: Kind| {
            snap.kinds
                .get(k.index())
                .is_some_and(|i| i.groups.contains(&g))
        };
        tuple.iter().copied().chain(out).any(in_group)
    });
    Some(Entry {
        direct,
        plain: direct && fixup.is_none() && !collective,
        collective,
        ctx: Ctx::new(out, spec.output.unwrap_or(Kind::DENSE)),
        kernel: spec.kernel.clone(),
        spec: spec.clone(),
        inputs,
        output,
        fixup,
        dense_out,
        keep: Box::default(),
        weight: cost.weight,
    })
}
