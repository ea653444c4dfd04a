//! The kernels of [`Dia`], registered with the dispatchers of their operations (`ADD`,
//! `MATMUL`, `KRON`, ...): one module, because they share the diagonal walking, as QuTiP's
//! `*_dia` kernels do. `sums` holds the elementwise kernels, `products` the products and
//! `checks` the reductions, predicates and constructors; this file the shared helpers.
//!
//! Every kernel walks only the valid part of each stored diagonal (padding is read only where
//! it is known to be zero), and sums and products drop the diagonals that cancel to exactly
//! zero (as a Csr result drops exact zeros). Results are built in one allocation.

mod checks;
mod norms;
mod products;
mod sums;

pub use checks::*;
pub use norms::*;
pub use products::*;
pub use sums::*;

use crate::error::{Error, Result};
use crate::ops::tolerance::Near;
use crate::scalar::{ZERO, c64};
use crate::storage::{Dia, alloc, valid_cols};

/// `(offset, row)` of each stored diagonal, rows indexed by column.
pub(super) fn diagonals(a: &Dia) -> impl Iterator<Item = (isize, &[c64])> + '_ {
    let n = a.shape().1;
    a.offsets()
        .iter()
        .enumerate()
        .map(move |(k, &o)| (o, &a.data()[k * n..(k + 1) * n]))
}

/// The row `i = j − o` of column `j` on diagonal `o`.
#[inline(always)]
pub(super) fn row_of(j: usize, o: isize) -> usize {
    j.wrapping_sub(o as usize)
}

/// The values of the `k`-th stored diagonal of `d` at the columns `js`.
#[inline]
pub(super) fn valid_row(d: &Dia, k: usize, js: std::ops::Range<usize>) -> &[c64] {
    let n = d.shape().1;
    &d.data()[k * n + js.start..k * n + js.end]
}

/// The columns `lo..hi` of diagonal `o` whose rows `j − o` fall in the block `i0..i1`, if any.
#[inline]
pub(super) fn block_cols(
    shape: (usize, usize),
    o: isize,
    i0: usize,
    i1: usize,
) -> Option<(usize, usize)> {
    // Row i takes column j = i + o: the block's columns ∩ the diagonal's.
    let js = valid_cols(shape, o);
    let lo = (js.start as i128).max(i0 as i128 + o as i128);
    let hi = (js.end as i128).min(i1 as i128 + o as i128);
    // Both lie in js, so they fit a usize.
    (lo < hi).then_some((lo as usize, hi as usize))
}

/// A result under construction: sorted offsets and one zeroed row of `cols` values each, in
/// one allocation.
pub(super) struct Builder {
    pub(super) shape: (usize, usize),
    pub(super) offsets: Vec<isize>,
    pub(super) data: Vec<c64>,
}

impl Builder {
    /// Zeroed rows for `offsets` (strictly increasing, inside `shape`).
    pub(super) fn new(op: &str, shape: (usize, usize), offsets: Vec<isize>) -> Result<Builder> {
        let len = offsets
            .len()
            .checked_mul(shape.1)
            .ok_or_else(|| Error::shape(op, &[shape], "the diagonal storage overflows usize"))?;
        let data = alloc::try_vec(op, shape, len, ZERO)?;
        Ok(Builder {
            shape,
            offsets,
            data,
        })
    }

    /// `a`'s offsets with every stored value (padding included) mapped by `f`, in one pass.
    /// `f` must map zero to zero for the padding to stay zero.
    pub(super) fn mapped(op: &str, a: &Dia, f: impl Fn(c64) -> c64) -> Result<Builder> {
        let mut data = alloc::try_with_capacity(op, a.shape(), a.data().len())?;
        data.extend(a.data().iter().map(|&x| f(x)));
        Ok(Builder {
            shape: a.shape(),
            offsets: a.offsets().to_vec(),
            data,
        })
    }

    /// The row of the `k`-th offset.
    #[inline]
    pub(super) fn row_mut(&mut self, k: usize) -> &mut [c64] {
        let n = self.shape.1;
        &mut self.data[k * n..(k + 1) * n]
    }

    /// The Dia, keeping every diagonal.
    pub(super) fn finish(self) -> Dia {
        // SAFETY: `new` takes strictly increasing offsets inside `shape` and allocates one
        // row of `cols` values per offset; kernels write only inside each diagonal's valid
        // columns, so the padding stays zero.
        unsafe { Dia::from_parts_unchecked(self.shape, self.offsets, self.data) }
    }

    /// The Dia without the diagonals whose valid part is exactly zero (cancellations).
    pub(super) fn finish_compact(mut self) -> Dia {
        let n = self.shape.1;
        let mut kept = 0;
        for k in 0..self.offsets.len() {
            let o = self.offsets[k];
            let js = valid_cols(self.shape, o);
            if self.data[k * n..(k + 1) * n][js].iter().any(|v| *v != ZERO) {
                if kept != k {
                    self.data.copy_within(k * n..(k + 1) * n, kept * n);
                    self.offsets[kept] = o;
                }
                kept += 1;
            }
        }
        self.offsets.truncate(kept);
        self.data.truncate(kept * n);
        self.finish()
    }
}

/// Whether `|x[i] − conj(y[i])| ≤ atol` for every `i`: a branch-free pass over chunks (which
/// the compiler vectorises) accepting squares clear of the boundary, and the exact test
/// ([`Near::within`]) only on a chunk the fast one does not accept.
pub(super) fn all_within(x: &[c64], y: &[c64], near: &Near) -> bool {
    const CHUNK: usize = 32;
    if near.below <= 0.0 {
        return x.iter().zip(y).all(|(a, b)| near.within(a - b.conj()));
    }
    x.chunks(CHUNK).zip(y.chunks(CHUNK)).all(|(xc, yc)| {
        let mut ok = true;
        for (a, b) in xc.iter().zip(yc) {
            ok &= near.clear_conj(*a, *b);
        }
        ok || xc.iter().zip(yc).all(|(a, b)| near.within(a - b.conj()))
    })
}

#[cfg(test)]
mod tests;
