//! Local operators on sets of modes, the pieces a plan is made of: their sparse entries over
//! the local index of their modes, and the index arithmetic of the space `⊗ₛ C^{dₛ}` (mode 0
//! the most significant).

use crate::scalar::{ZERO, c64};

/// Sparse entries `(row, column, value)` of a local operator.
pub(super) type Entries = Vec<(usize, usize, c64)>;

/// A multiplied-out term: sparse entries over the local index of `modes` (ascending).
#[derive(Clone)]
pub(super) struct Local {
    pub(super) modes: Vec<usize>,
    pub(super) entries: Vec<(usize, usize, c64)>,
}

/// Offsets `Σ digitₖ·stride[modes[k]]` of every combination of digits of `modes`, the first
/// mode the most significant.
pub(super) fn offsets(modes: &[usize], dims: &[usize], strides: &[usize]) -> Vec<usize> {
    let mut out = vec![0usize];
    for &s in modes {
        let mut next = Vec::with_capacity(out.len() * dims[s]);
        for &o in &out {
            next.extend((0..dims[s]).map(|d| o + d * strides[s]));
        }
        out = next;
    }
    out
}

/// The stride of every mode (mode 0 the most significant): `strides[s] = Π_{t > s} dims[t]`.
pub(super) fn strides_of(dims: &[usize]) -> Vec<usize> {
    let mut strides = vec![1usize; dims.len()];
    for s in (0..dims.len().saturating_sub(1)).rev() {
        strides[s] = strides[s + 1] * dims[s + 1];
    }
    strides
}

/// The product of the dimensions of `modes`.
pub(super) fn size_of(modes: &[usize], dims: &[usize]) -> usize {
    modes.iter().map(|&s| dims[s]).product()
}

/// `local` on `modes`, embedded in the larger set `into` (identity on the modes it adds).
pub(super) fn embed(local: &Local, into: &[usize], dims: &[usize]) -> Vec<(usize, usize, c64)> {
    // Weights of each mode of `into` in its local index, and of `local`'s modes in theirs.
    let weight = |set: &[usize], s: usize| -> usize {
        set.iter()
            .skip_while(|&&t| t != s)
            .skip(1)
            .map(|&t| dims[t])
            .product()
    };
    let added: Vec<usize> = into
        .iter()
        .copied()
        .filter(|s| !local.modes.contains(s))
        .collect();
    let extra = offsets(
        &added,
        dims,
        &(0..dims.len()).map(|s| weight(into, s)).collect::<Vec<_>>(),
    );
    // Each local index of `local` maps to an index of `into` with the added digits zero.
    let map = |l: usize| -> usize {
        let mut rest = l;
        let mut out = 0;
        for &s in local.modes.iter().rev() {
            out += (rest % dims[s]) * weight(into, s);
            rest /= dims[s];
        }
        out
    };
    let mut out = Vec::with_capacity(local.entries.len() * extra.len());
    for &(r, c, v) in &local.entries {
        let (r, c) = (map(r), map(c));
        out.extend(extra.iter().map(|&e| (r + e, c + e, v)));
    }
    out
}

/// Sorts by (row, column), sums duplicates and drops exact zeros.
pub(super) fn merge(mut entries: Vec<(usize, usize, c64)>) -> Vec<(usize, usize, c64)> {
    entries.sort_unstable_by_key(|e| (e.0, e.1));
    let mut out: Vec<(usize, usize, c64)> = Vec::with_capacity(entries.len());
    for (r, c, v) in entries {
        match out.last_mut() {
            Some(last) if (last.0, last.1) == (r, c) => last.2 += v,
            _ => out.push((r, c, v)),
        }
    }
    out.retain(|e| e.2 != ZERO);
    out
}
