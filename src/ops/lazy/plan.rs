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

use crate::convert::registry;
use crate::error::{Error, Result};
use crate::scalar::{ZERO, c64};
use crate::storage::csr_build::row;
use crate::storage::{Csr, Data, Kind};

/// Local dimension up to which a term is multiplied out and applied in tiles.
pub(crate) const GROUP_SIZE: usize = 256;
/// Stored entries up to which a term is multiplied out (`Π` of its factors' entries).
const GROUP_ENTRIES: usize = 4096;
/// Entries of a tile, gathered from the vector into a contiguous copy (1 MiB, and as much for
/// the result) that stays in cache while every operator of the pass runs over it. Larger
/// tiles need fewer passes over the vectors in memory; smaller ones stay in L2. On the
/// dissipative chain at N = 10 (`benches/open_chain/run.sh`) on a CPU with a 512 KiB L2 and
/// a fast shared L3, 2¹⁶ was fastest, 2¹⁵ 5–10 % slower, 2¹³–2¹⁴ and 2¹⁷–2¹⁸ 10–40 % slower.
pub(crate) const TILE: usize = 1 << 16;
/// The smaller tile, taken where a tile's working set at that size (the copies of `x` and
/// `y` and the diagonal table, 48 bytes an entry: 1.5 MiB) fits in a core's L2 and the plan
/// needs no more passes than with [`TILE`]: on a CPU with a 2 MiB L2, the same chain at N = 10
/// ran 10–15 % faster with it (the tile's every sweep served by the L2, not the shared L3).
const SMALL_TILE: usize = 1 << 15;
/// Bytes of a tile's working set per entry: the copies of `x` and `y`, and the diagonal.
const TILE_BYTES_PER_ENTRY: usize = 3 * std::mem::size_of::<c64>();
/// Length from which a run of the trailing modes is worth a vector loop; every pass keeps at
/// least this many trailing entries free.
const RUN: usize = 16;

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

/// Offsets `Σ digitₖ·stride[modes[k]]` of every combination of digits of `modes`, the first
/// mode the most significant.
pub(crate) fn offsets(modes: &[usize], dims: &[usize], strides: &[usize]) -> Vec<usize> {
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
fn strides_of(dims: &[usize]) -> Vec<usize> {
    let mut strides = vec![1usize; dims.len()];
    for s in (0..dims.len().saturating_sub(1)).rev() {
        strides[s] = strides[s + 1] * dims[s + 1];
    }
    strides
}

/// The product of the dimensions of `modes`.
fn size_of(modes: &[usize], dims: &[usize]) -> usize {
    modes.iter().map(|&s| dims[s]).product()
}

/// An operator on the tile of one pass: its off-diagonal entries as offsets into the tile's
/// gathered copy (the tile index `hi · run + r`).
pub(crate) struct TileOp {
    /// `(row offset, column offset, value)`: `y[b + r] += v·x[b + c]` (sorted by row offset).
    pub(crate) entries: Vec<(usize, usize, c64)>,
    /// Contiguous entries each entry applies to (`e` in `0..run`).
    pub(crate) run: usize,
    /// Offsets `b` in the tile index of every combination of the modes the operator leaves
    /// alone (outside the run).
    pub(crate) bases: Vec<usize>,
}

/// One pass: its tiles and what runs on each.
pub(crate) struct Pass {
    /// The offset of every tile (combinations of the modes that are not free).
    pub(crate) tiles: Vec<usize>,
    /// Offsets within the tile of the free modes above the trailing run.
    pub(crate) hi: Vec<usize>,
    /// Length of the trailing contiguous run of free modes.
    pub(crate) run: usize,
    /// The diagonal over the tile (`hi index · run + run index`), if any operator of the pass
    /// has one; the first pass's also carries the identity terms.
    pub(crate) diag: Option<Vec<c64>>,
    /// The off-diagonal column sums `Σᵣ |L[r, c]|` over the tile (for the 1-norm).
    pub(crate) colsums: Vec<f64>,
    /// The free modes, ascending, and their weights in the tile index.
    pub(crate) free: Vec<(usize, usize)>,
    /// The operators, in the tile's index.
    pub(crate) ops: Vec<TileOp>,
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

/// Sparse entries `(row, column, value)` of a local operator.
type Entries = Vec<(usize, usize, c64)>;

/// A multiplied-out term: sparse entries over the local index of `modes` (ascending).
#[derive(Clone)]
struct Local {
    modes: Vec<usize>,
    entries: Vec<(usize, usize, c64)>,
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

/// `local` on `modes`, embedded in the larger set `into` (identity on the modes it adds).
fn embed(local: &Local, into: &[usize], dims: &[usize]) -> Vec<(usize, usize, c64)> {
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
fn merge(mut entries: Vec<(usize, usize, c64)>) -> Vec<(usize, usize, c64)> {
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

/// [`schedule`] with tiles of [`TILE`] entries, or of [`SMALL_TILE`] where those fit in the
/// L2 cache and need no more passes.
fn schedule_fewest(
    dims: &[usize],
    strides: &[usize],
    groups: Vec<Local>,
    identity: c64,
) -> Result<Vec<Pass>> {
    let small_fits = crate::engine::caches::second_level()
        .is_some_and(|l2| SMALL_TILE * TILE_BYTES_PER_ENTRY <= l2);
    let mut specs = assign(dims, groups.clone(), identity, TILE);
    if small_fits {
        // Only the assignments are compared; the tables are built once, for the one taken.
        let small = assign(dims, groups, identity, SMALL_TILE);
        if small.len() <= specs.len() {
            specs = small;
        }
    }
    build_passes(dims, strides, specs, identity)
}

/// Assigns the groups to passes of at most `tile` entries each and builds each pass's
/// tables.
#[cfg(test)]
fn schedule(
    dims: &[usize],
    strides: &[usize],
    groups: Vec<Local>,
    identity: c64,
    tile: usize,
) -> Result<Vec<Pass>> {
    build_passes(
        dims,
        strides,
        assign(dims, groups, identity, tile),
        identity,
    )
}

/// A pass's free modes (ascending) and the groups it applies.
type PassSpec = (Vec<usize>, Vec<Local>);

/// Assigns the groups to passes of at most `tile` entries each: their free modes and
/// operators, the tables not built yet.
fn assign(dims: &[usize], mut groups: Vec<Local>, identity: c64, tile: usize) -> Vec<PassSpec> {
    let m = dims.len();
    // The trailing modes free in every pass.
    let mut bottom = Vec::new();
    let mut run = 1usize;
    for s in (0..m).rev() {
        if run >= RUN {
            break;
        }
        bottom.push(s);
        run *= dims[s];
    }
    // From the trailing modes up: a pass then frees a long trailing segment (contiguous runs to
    // gather and long vector loops), and the operators that reach higher modes join later passes.
    groups.sort_by_key(|g| std::cmp::Reverse((g.modes[g.modes.len() - 1], g.modes[0])));
    let mut specs: Vec<PassSpec> = Vec::new();
    for g in groups {
        if let Some(p) = specs
            .iter_mut()
            .find(|p| g.modes.iter().all(|s| p.0.contains(s)))
        {
            p.1.push(g);
            continue;
        }
        let union = |free: &[usize]| -> Vec<usize> {
            let mut u: Vec<usize> = free.iter().chain(&g.modes).copied().collect();
            u.sort_unstable();
            u.dedup();
            u
        };
        let grow = specs
            .last()
            .map(|p| union(&p.0))
            .filter(|u| size_of(u, dims) <= tile);
        match (grow, specs.last_mut()) {
            (Some(u), Some(p)) => {
                p.0 = u;
                p.1.push(g);
            }
            _ => {
                let free = union(&bottom);
                specs.push((free, vec![g]));
            }
        }
    }
    if specs.is_empty() && identity != ZERO {
        let mut free = bottom.clone();
        free.sort_unstable();
        specs.push((free, Vec::new()));
    }
    // Fill each pass up to the tile with the modes just above its trailing segment: longer
    // contiguous runs, the same operators.
    for (free, _) in &mut specs {
        loop {
            let mut s = m;
            while s > 0 && free.contains(&(s - 1)) {
                s -= 1;
            }
            if s == 0 || size_of(free, dims).saturating_mul(dims[s - 1]) > tile {
                break;
            }
            free.push(s - 1);
            free.sort_unstable();
        }
    }
    specs
}

/// Builds the tables of each pass; the first carries the identity terms.
fn build_passes(
    dims: &[usize],
    strides: &[usize],
    specs: Vec<PassSpec>,
    identity: c64,
) -> Result<Vec<Pass>> {
    specs
        .into_iter()
        .enumerate()
        .map(|(k, (free, ops))| {
            let id = if k == 0 { identity } else { ZERO };
            build_pass(dims, strides, &free, merge_neighbours(ops, dims, &free), id)
        })
        .collect()
}

/// Local dimension up to which the operators of a pass are summed into one: the runs one
/// operator touches at each base (its local dimension, times the run) then stay in L1 while
/// all its entries are applied, instead of each small operator streaming the tile again.
const MERGE_SIZE: usize = 64;

/// Sums operators of one pass whose modes together span at most [`MERGE_SIZE`] local
/// dimensions, in the order they come (neighbouring modes first), unless the sum's vector loops
/// would be shorter than the shorter of the two's and than 8 (an operator on the last mode
/// runs entry by entry; merged with one above, that one would too).
fn merge_neighbours(ops: Vec<Local>, dims: &[usize], free: &[usize]) -> Vec<Local> {
    let m = dims.len();
    // The contiguous run below a set of modes: the free trailing modes after its last one.
    let run = |modes: &[usize]| -> usize {
        let last = modes[modes.len() - 1];
        (last + 1..m)
            .rev()
            .take_while(|s| free.contains(s))
            .map(|s| dims[s])
            .product()
    };
    let mut out: Vec<Local> = Vec::new();
    for g in ops {
        let joined = out.last().map(|last| {
            let mut u: Vec<usize> = last.modes.iter().chain(&g.modes).copied().collect();
            u.sort_unstable();
            u.dedup();
            (u, run(&last.modes))
        });
        match joined {
            Some((u, r_last))
                if size_of(&u, dims) <= MERGE_SIZE
                    && run(&u) >= r_last.min(8)
                    && run(&u) >= run(&g.modes).min(8) =>
            {
                let last = out.pop().unwrap_or_else(|| unreachable!());
                let mut entries = embed(&last, &u, dims);
                entries.extend(embed(&g, &u, dims));
                out.push(Local {
                    modes: u,
                    entries: merge(entries),
                });
            }
            _ => out.push(g),
        }
    }
    out
}

/// The tables of one pass over the free modes `free` (ascending).
fn build_pass(
    dims: &[usize],
    strides: &[usize],
    free: &[usize],
    ops: Vec<Local>,
    identity: c64,
) -> Result<Pass> {
    let m = dims.len();
    // The trailing run: the last modes, all free.
    let mut run_modes = Vec::new();
    for s in (0..m).rev() {
        if !free.contains(&s) {
            break;
        }
        run_modes.push(s);
    }
    let run = size_of(&run_modes, dims);
    let seg_start = m - run_modes.len();
    let hi_modes: Vec<usize> = free.iter().copied().filter(|&s| s < seg_start).collect();
    let outer: Vec<usize> = (0..m).filter(|s| !free.contains(s)).collect();
    let tile = size_of(free, dims);
    // Weights of the free modes in the tile index t = hi · run + r.
    let weights: Vec<(usize, usize)> = free
        .iter()
        .map(|&s| {
            let w: usize = free.iter().filter(|&&t| t > s).map(|&t| dims[t]).product();
            (s, w)
        })
        .collect();
    let weight_of = |s: usize| weights.iter().find(|w| w.0 == s).map_or(0, |w| w.1);
    let mut diag = vec![identity; tile];
    let mut colsums = vec![0.0f64; tile];
    let mut any_diag = identity != ZERO;
    let mut tile_ops = Vec::with_capacity(ops.len());
    for g in ops {
        let size = size_of(&g.modes, dims);
        let mut d = vec![ZERO; size];
        let mut cs = vec![0.0f64; size];
        let mut off = Vec::new();
        for &(r, c, v) in &g.entries {
            if r == c {
                d[r] += v;
            } else {
                cs[c] += v.norm();
                off.push((r, c, v));
            }
        }
        // The local index of every tile index.
        let local_of = |t: usize| -> usize {
            g.modes.iter().fold(0usize, |acc, &s| {
                acc * dims[s] + (t / weight_of(s)) % dims[s]
            })
        };
        if d.iter().any(|&x| x != ZERO) {
            any_diag = true;
            for (t, x) in diag.iter_mut().enumerate() {
                *x += d[local_of(t)];
            }
        }
        for (t, x) in colsums.iter_mut().enumerate() {
            *x += cs[local_of(t)];
        }
        if off.is_empty() {
            continue;
        }
        tile_ops.push(layout_op(&g.modes, &off, free, dims));
    }
    Ok(Pass {
        tiles: offsets(&outer, dims, strides),
        hi: offsets(&hi_modes, dims, strides),
        run,
        diag: any_diag.then_some(diag),
        colsums,
        free: weights,
        ops: tile_ops,
    })
}

/// An operator with off-diagonal entries `off` (over the local index of `modes`, ascending)
/// in a tile whose index runs over the free modes in `order` (the first the most
/// significant): entries as offsets, the run of the modes after its last one, and the bases
/// over the others.
fn layout_op(
    modes: &[usize],
    off: &[(usize, usize, c64)],
    order: &[usize],
    dims: &[usize],
) -> TileOp {
    let mut weight = vec![0usize; dims.len()];
    let mut acc = 1usize;
    for &s in order.iter().rev() {
        weight[s] = acc;
        acc *= dims[s];
    }
    let last = order.iter().rposition(|s| modes.contains(s)).unwrap_or(0);
    let run = size_of(&order[last + 1..], dims);
    let others: Vec<usize> = order[..=last]
        .iter()
        .copied()
        .filter(|s| !modes.contains(s))
        .collect();
    let local = offsets(modes, dims, &weight);
    let mut entries: Vec<(usize, usize, c64)> = off
        .iter()
        .map(|&(r, c, v)| (local[r], local[c], v))
        .collect();
    entries.sort_by_key(|e| (e.0, e.1));
    TileOp {
        entries,
        run,
        bases: offsets(&others, dims, &weight),
    }
}

#[cfg(test)]
mod tests {
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
