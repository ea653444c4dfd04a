//! The compiled form of a lazy operator: local operators on sets of modes, scheduled in
//! cache-sized tiles.
//!
//! A vector of the space `⊗ₛ C^{dₛ}` is a tensor with one index ("mode") per subsystem, mode 0
//! the most significant (`index = Σ iₛ·strideₛ`). A term of a [`KronSum`](crate::KronSum) or of
//! a superoperator acts on a few modes and as the identity on the others. The plan
//!
//! 1. multiplies out each term whose factors are small (local dimension up to
//!    [`GROUP_SIZE`]) into one sparse local operator on its modes, and sums the terms that act
//!    on the same modes (a set contained in another is folded into the larger one), so the
//!    XXZ chain's `3(N − 1)` Pauli products become `N − 1` two-site operators;
//! 2. moves the diagonal of those operators into one table per pass;
//! 3. schedules them in **passes**: a pass fixes a set of *free* modes whose tile of entries
//!    fits in cache ([`TILE`], or a smaller tile where that fits in L2), and applies all its
//!    operators to one tile while it is cached (the diagonal table once, then each operator's
//!    off-diagonal entries), then the next tile;
//!    the trailing modes are free in every pass, so the innermost loops run over contiguous
//!    runs;
//! 4. keeps the terms with large factors (a stored Csr acting on all of ρ's rows, say) as
//!    **wide** terms: each factor one pass over the whole vector, in the order of its entries.
//!
//! Applying the operator then reads the vector about once per pass: two to four passes for the
//! chains of the examples, where a stored Csr reads its values and column indices (24 bytes per
//! entry) on every product.

use std::collections::BTreeMap;
use std::ops::Range;

use super::local::{Entries, Local, embed, merge, offsets, size_of, strides_of};
use super::schedule::{Pass, schedule_fewest};
use crate::convert::registry;
use crate::error::{Error, Result};
use crate::scalar::{ZERO, c64};
use crate::storage::csr_build::row;
use crate::storage::{Csr, Data, Kind};

/// Local dimension up to which a term is multiplied out and applied in tiles.
pub(crate) const GROUP_SIZE: usize = 256;
/// Stored entries up to which a term is multiplied out (`Π` of its factors' entries).
const GROUP_ENTRIES: usize = 4096;
/// A factor of a term: a local operator on a run of consecutive modes.
#[derive(Clone)]
pub(crate) struct Factor {
    /// The modes it acts on.
    pub(crate) modes: Range<usize>,
    /// The local operator (`Π dₛ × Π dₛ` over those modes), as Csr.
    pub(crate) op: Csr,
}

/// `coeff ·` the product of the factors (on disjoint runs of modes, in ascending order).
pub(crate) struct Term {
    pub(crate) coeff: c64,
    pub(crate) factors: Vec<Factor>,
}

impl Factor {
    /// A factor from any kind, converted to Csr (a local factor is small; a large one is
    /// applied as it is stored).
    pub(crate) fn new(modes: Range<usize>, op: &Data) -> Result<Factor> {
        let op = registry().convert(op, Kind::CSR)?.to_type::<Csr>()?;
        Ok(Factor { modes, op })
    }
}

/// The dimension of the space, once a vector of it is known to fit in the memory available:
/// a plan is only for applying the operator to such vectors, and its tables (tile offsets,
/// one entry per tile) and the 1-norm's sweep grow with the dimension.
///
/// # Errors
/// [`Error::Shape`] if the dimension overflows; [`Error::TooLarge`] if a vector of it does
/// not fit.
fn vector_fits(dims: &[usize]) -> Result<usize> {
    let dim: usize = dims
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| Error::shape("matmul", &[], "the dimension overflows usize"))?;
    crate::storage::alloc::check_memory(
        "matmul",
        (dim, 1),
        dim as u128 * std::mem::size_of::<c64>() as u128,
    )?;
    Ok(dim)
}

/// A factor of a wide term: one pass over the whole vector.
pub(crate) struct Whole {
    /// `(row, column, value)` of the local operator, sorted by row.
    pub(crate) entries: Vec<(usize, usize, c64)>,
    /// The stride of the factor's last mode: entries `r·run + e`.
    pub(crate) run: usize,
    /// Offsets of every combination of the modes before the factor's.
    pub(crate) bases: Vec<usize>,
    /// Its 1-norm (largest column sum).
    pub(crate) one_norm: f64,
}

/// A term applied factor by factor over the whole vector.
pub(crate) struct Wide {
    pub(crate) coeff: c64,
    pub(crate) factors: Vec<Whole>,
}

/// A lazy operator compiled for the CPU: see the module documentation.
pub(crate) struct Plan {
    pub(crate) dims: Vec<usize>,
    pub(crate) dim: usize,
    pub(crate) passes: Vec<Pass>,
    pub(crate) wide: Vec<Wide>,
    /// Whether [`one_norm`](super::run::one_norm) is the exact 1-norm: no wide terms, and no
    /// two local operators change the same modes (so no two put an entry of one column in
    /// the same row).
    pub(crate) one_norm_exact: bool,
}

/// The entries of `coeff · ⊗ factors` over the concatenated local index.
fn multiply_out(coeff: c64, factors: &[Factor], dims: &[usize]) -> Local {
    let mut entries = vec![(0usize, 0usize, coeff)];
    let mut modes = Vec::new();
    for f in factors {
        let d: usize = size_of(&f.modes.clone().collect::<Vec<_>>(), dims);
        let mut next = Vec::with_capacity(entries.len() * f.op.nnz());
        for &(r, c, v) in &entries {
            for i in 0..d {
                for (j, w) in row(&f.op, i) {
                    next.push((r * d + i, c * d + j, v * w));
                }
            }
        }
        entries = next;
        modes.extend(f.modes.clone());
    }
    Local { modes, entries }
}

impl Plan {
    /// Compiles `terms` on a space of subsystem dimensions `dims`.
    ///
    /// # Errors
    /// [`Error::TooLarge`] if the tables cannot be allocated (they are at most a tile each).
    pub(crate) fn build(dims: &[usize], terms: Vec<Term>) -> Result<Plan> {
        let dim = vector_fits(dims)?;
        let strides = strides_of(dims);
        let mut identity = ZERO;
        let mut groups: BTreeMap<Vec<usize>, Vec<(usize, usize, c64)>> = BTreeMap::new();
        let mut wide = Vec::new();
        for t in terms {
            if t.factors.is_empty() {
                identity += t.coeff;
                continue;
            }
            let size = t
                .factors
                .iter()
                .try_fold(1usize, |a, f| a.checked_mul(f.op.shape().0));
            let entries = t
                .factors
                .iter()
                .fold(1usize, |a, f| a.saturating_mul(f.op.nnz()));
            if size.is_some_and(|s| s <= GROUP_SIZE) && entries <= GROUP_ENTRIES {
                let local = multiply_out(t.coeff, &t.factors, dims);
                groups.entry(local.modes).or_default().extend(local.entries);
            } else {
                wide.push(wide_term(t, dims, &strides));
            }
        }
        let groups = fold_subsets(groups, dims);
        let one_norm_exact = wide.is_empty() && changes_are_distinct(&groups, dims);
        let passes = schedule_fewest(dims, &strides, groups, identity)?;
        Ok(Plan {
            dims: dims.to_vec(),
            dim,
            passes,
            wide,
            one_norm_exact,
        })
    }
}

impl Plan {
    /// One local operator with entries over the local index of `modes` (ascending, the first
    /// most significant), applied in one pass however large it is (the operation
    /// `target_mode_matmul`).
    ///
    /// # Errors
    /// As [`Plan::build`].
    pub(crate) fn from_local(
        dims: &[usize],
        modes: Vec<usize>,
        entries: Vec<(usize, usize, c64)>,
    ) -> Result<Plan> {
        let dim = vector_fits(dims)?;
        let strides = strides_of(dims);
        let entries = merge(entries);
        let groups = if entries.is_empty() {
            Vec::new()
        } else {
            vec![Local { modes, entries }]
        };
        Ok(Plan {
            dims: dims.to_vec(),
            dim,
            passes: schedule_fewest(dims, &strides, groups, ZERO)?,
            wide: Vec::new(),
            one_norm_exact: false,
        })
    }
}

/// Whether no two groups have an off-diagonal entry that changes the same set of modes (two
/// such entries could meet in one row of one column, and their moduli would then not add).
fn changes_are_distinct(groups: &[Local], dims: &[usize]) -> bool {
    let mut seen: std::collections::HashMap<Vec<usize>, usize> = Default::default();
    for (k, g) in groups.iter().enumerate() {
        let digits = |mut l: usize| -> Vec<usize> {
            let mut d = vec![0; g.modes.len()];
            for (i, &s) in g.modes.iter().enumerate().rev() {
                d[i] = l % dims[s];
                l /= dims[s];
            }
            d
        };
        for &(r, c, _) in &g.entries {
            if r == c {
                continue;
            }
            let (dr, dc) = (digits(r), digits(c));
            let changed: Vec<usize> = g
                .modes
                .iter()
                .zip(dr.iter().zip(&dc))
                .filter(|(_, (a, b))| a != b)
                .map(|(&s, _)| s)
                .collect();
            if *seen.entry(changed).or_insert(k) != k {
                return false;
            }
        }
    }
    true
}

impl Plan {
    /// Whether every piece of the plan is Hermitian within `atol` (so the operator is): the
    /// diagonal tables real, each local operator's entries paired with their transposes'
    /// conjugates, each wide term a real multiple of Hermitian factors. A `false` does not
    /// say the operator is not Hermitian (pieces can cancel): decide it another way.
    pub(crate) fn is_hermitian(&self, atol: f64) -> bool {
        let paired = |entries: &[(usize, usize, c64)]| {
            entries.iter().all(|&(r, c, v)| {
                let w = entries
                    .binary_search_by_key(&(c, r), |e| (e.0, e.1))
                    .map_or(ZERO, |k| entries[k].2);
                (v - w.conj()).norm() <= atol
            })
        };
        self.passes.iter().all(|p| {
            p.diag
                .as_ref()
                .is_none_or(|d| d.iter().all(|x| x.im.abs() <= atol))
                && p.ops.iter().all(|o| paired(&o.entries))
        }) && self
            .wide
            .iter()
            .all(|w| w.coeff.im.abs() <= atol && w.factors.iter().all(|f| paired(&f.entries)))
    }
}

/// A term whose factors are too large to multiply out: each factor over the whole vector.
fn wide_term(t: Term, dims: &[usize], strides: &[usize]) -> Wide {
    let factors = t
        .factors
        .into_iter()
        .map(|f| {
            let run = strides[f.modes.end - 1];
            let before: Vec<usize> = (0..f.modes.start).collect();
            let mut entries = Vec::with_capacity(f.op.nnz());
            let mut sums = vec![0.0f64; f.op.shape().1];
            for i in 0..f.op.shape().0 {
                for (j, v) in row(&f.op, i) {
                    entries.push((i, j, v));
                    sums[j] += v.norm();
                }
            }
            Whole {
                entries,
                run,
                bases: offsets(&before, dims, strides),
                one_norm: sums.into_iter().fold(0.0, f64::max),
            }
        })
        .collect();
    Wide {
        coeff: t.coeff,
        factors,
    }
}

/// Folds each group into the smallest group whose modes contain its own (when the larger one
/// stays within [`GROUP_SIZE`]), smallest sets first, and merges the entries.
fn fold_subsets(
    groups: BTreeMap<Vec<usize>, Vec<(usize, usize, c64)>>,
    dims: &[usize],
) -> Vec<Local> {
    let mut sets: Vec<(Vec<usize>, Entries)> = groups.into_iter().collect();
    sets.sort_by_key(|(s, _)| s.len());
    let mut k = 0;
    while k < sets.len() {
        let target = (k + 1..sets.len())
            .filter(|&j| {
                sets[j].0.len() > sets[k].0.len()
                    && sets[k].0.iter().all(|s| sets[j].0.contains(s))
                    && size_of(&sets[j].0, dims) <= GROUP_SIZE
            })
            .min_by_key(|&j| sets[j].0.len());
        if let Some(j) = target {
            let (modes, entries) = std::mem::take(&mut sets[k]);
            let local = Local { modes, entries };
            let into = sets[j].0.clone();
            let moved = embed(&local, &into, dims);
            sets[j].1.extend(moved);
        }
        k += 1;
    }
    sets.into_iter()
        .filter(|(m, _)| !m.is_empty())
        .map(|(modes, entries)| Local {
            modes,
            entries: merge(entries),
        })
        .filter(|l| !l.entries.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::schedule::{SMALL_TILE, TILE, schedule};
    use super::*;

    /// Two-site operators on every neighbouring pair of `m` binary modes and between modes
    /// `k` and `k + m/2` (as a Liouvillian's jumps), with pseudo-random entries and some
    /// diagonal ones.
    fn chain_groups(m: usize) -> Vec<Local> {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            ((seed >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        };
        let pairs = (0..m - 1)
            .map(|k| (k, k + 1))
            .chain((0..m / 2).map(|k| (k, k + m / 2)));
        pairs
            .map(|(a, b)| {
                let mut entries = Vec::new();
                for r in 0..4 {
                    for c in 0..4 {
                        let v = c64::new(next(), next());
                        // About half the entries, every diagonal one.
                        if r == c || v.re > 0.0 {
                            entries.push((r, c, v));
                        }
                    }
                }
                Local {
                    modes: vec![a, b],
                    entries,
                }
            })
            .collect()
    }

    /// `(identity + Σ groups)·x` entry by entry from the definition.
    fn reference(dims: &[usize], groups: &[Local], identity: c64, x: &[c64]) -> Vec<c64> {
        let m = dims.len();
        let digit = |i: usize, s: usize| (i >> (m - 1 - s)) & 1;
        let mut y: Vec<c64> = x.iter().map(|&v| identity * v).collect();
        for (j, &xj) in x.iter().enumerate() {
            for g in groups {
                let (a, b) = (g.modes[0], g.modes[1]);
                let local = 2 * digit(j, a) + digit(j, b);
                let cleared = j & !(1 << (m - 1 - a)) & !(1 << (m - 1 - b));
                for &(r, _, v) in g.entries.iter().filter(|e| e.1 == local) {
                    let i = cleared | ((r >> 1) << (m - 1 - a)) | ((r & 1) << (m - 1 - b));
                    y[i] += v * xj;
                }
            }
        }
        y
    }

    /// Both tile sizes give the operator's product, through plans of several passes whose
    /// operators have short runs (the trailing modes) as well as long ones.
    #[test]
    fn both_tile_sizes_apply_the_operator() {
        let m = 18;
        let dims = vec![2usize; m];
        let dim = 1usize << m;
        let strides = strides_of(&dims);
        let groups = chain_groups(m);
        let identity = c64::new(0.3, -0.1);
        let x: Vec<c64> = (0..dim)
            .map(|k| c64::new((0.1 * k as f64).cos(), (0.37 * k as f64).sin()))
            .collect();
        let want = reference(&dims, &groups, identity, &x);
        let scale = want.iter().map(|v| v.norm()).fold(0.0, f64::max);
        for tile in [TILE, SMALL_TILE] {
            let passes = schedule(&dims, &strides, groups.clone(), identity, tile).unwrap();
            assert!(passes.len() >= 2, "tile {tile}: {} passes", passes.len());
            let runs: Vec<usize> = passes
                .iter()
                .flat_map(|p| p.ops.iter().map(|o| o.run))
                .collect();
            assert!(
                runs.contains(&1) && runs.iter().any(|&r| r >= 16),
                "{runs:?}"
            );
            let plan = Plan {
                dims: dims.clone(),
                dim,
                passes,
                wide: Vec::new(),
                one_norm_exact: false,
            };
            let mut y = vec![ZERO; dim];
            super::super::run::apply(&plan, &x, &mut y).unwrap();
            let err = y
                .iter()
                .zip(&want)
                .map(|(a, b)| (a - b).norm())
                .fold(0.0, f64::max);
            assert!(
                err <= 1e-13 * scale,
                "tile {tile}: error {err:e} of {scale}"
            );
        }
    }
}
