//! How a plan's local operators are scheduled: passes whose free modes make a tile that fits
//! in cache, each pass's diagonal table, column sums and operators in the tile's index.

use super::local::{Local, embed, merge, offsets, size_of};
use crate::error::Result;
use crate::scalar::{ZERO, c64};

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
pub(super) const SMALL_TILE: usize = 1 << 15;
/// Bytes of a tile's working set per entry: the copies of `x` and `y`, and the diagonal.
const TILE_BYTES_PER_ENTRY: usize = 3 * std::mem::size_of::<c64>();
/// Length from which a run of the trailing modes is worth a vector loop; every pass keeps at
/// least this many trailing entries free.
const RUN: usize = 16;

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

/// [`schedule`] with tiles of [`TILE`] entries, or of [`SMALL_TILE`] where those fit in the
/// L2 cache and need no more passes.
pub(super) fn schedule_fewest(
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
pub(super) fn schedule(
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
