//! Running a [`Plan`]: `y = H·x` pass by pass and tile by tile, and `‖H − μI‖₁`.
//!
//! The vector loops are written once against `pulp` (AVX2/FMA, AVX-512 or NEON, chosen at run
//! time); each pass dispatches once per chunk of tiles, so the inner loops are inlined into
//! the instance for the CPU.

use pulp::{Simd, WithSimd};
use rayon::prelude::*;

use super::local::offsets;
use super::plan::{Plan, Whole};
use super::schedule::{Pass, TileOp};
use crate::engine::{self, Family};
use crate::error::Result;
use crate::scalar::{ONE, ZERO, c64};
use crate::storage::alloc;

/// The result vector, written through a raw pointer by the workers of one pass: each worker
/// owns a set of tiles, and the tiles of a pass partition the indices.
#[derive(Clone, Copy)]
struct Out(*mut c64, usize);

// SAFETY: `Out` is only handed to workers that write disjoint index sets (the tiles of one
// pass, or disjoint ranges of a whole-vector factor); the pointer outlives them (the workers
// are joined before the borrow of the vector ends).
unsafe impl Send for Out {}
// SAFETY: as above.
unsafe impl Sync for Out {}

impl Out {
    /// The entries `at..at + len`.
    ///
    /// # Safety
    /// `at + len` is within the vector, and no other live reference covers these entries.
    #[inline(always)]
    unsafe fn slice<'a>(self, at: usize, len: usize) -> &'a mut [c64] {
        debug_assert!(at + len <= self.1, "{at} + {len} > {}", self.1);
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.0.add(at), len) }
    }
}

/// `y ← y + a·x`.
#[inline(always)]
fn axpy<S: Simd>(simd: S, y: &mut [c64], a: c64, x: &[c64]) {
    let (yh, yt) = S::as_mut_simd_c64s(y);
    let (xh, xt) = S::as_simd_c64s(x);
    let av = simd.splat_c64s(a);
    for (y, x) in yh.iter_mut().zip(xh) {
        *y = simd.mul_add_e_c64s(av, *x, *y);
    }
    for (y, x) in yt.iter_mut().zip(xt) {
        *y += a * x;
    }
}

/// `y ← d ∘ x` (`accumulate`: `y ← y + d ∘ x`).
#[inline(always)]
fn scale_by<S: Simd>(simd: S, y: &mut [c64], d: &[c64], x: &[c64], accumulate: bool) {
    let (yh, yt) = S::as_mut_simd_c64s(y);
    let (dh, dt) = S::as_simd_c64s(d);
    let (xh, xt) = S::as_simd_c64s(x);
    if accumulate {
        for ((y, d), x) in yh.iter_mut().zip(dh).zip(xh) {
            *y = simd.mul_add_e_c64s(*d, *x, *y);
        }
        for ((y, d), x) in yt.iter_mut().zip(dt).zip(xt) {
            *y += d * x;
        }
    } else {
        for ((y, d), x) in yh.iter_mut().zip(dh).zip(xh) {
            *y = simd.mul_e_c64s(*d, *x);
        }
        for ((y, d), x) in yt.iter_mut().zip(dt).zip(xt) {
            *y = d * x;
        }
    }
}

/// One operator of a pass on a gathered tile: `yt += op·xt`.
///
/// An operator on the trailing modes has short runs (one to a few entries) and many bases:
/// there the generic loop's set-up per `axpy` (splitting the slices into vectors and a tail)
/// costs more than the arithmetic, so the common short lengths get their own instances, in
/// which the length is a constant and the loops unroll. Each instance adds the same terms in
/// the same order as the generic one.
#[inline(always)]
fn tile_op<S: Simd>(simd: S, op: &TileOp, xt: &[c64], yt: &mut [c64]) {
    match op.run {
        1 => {
            for &b in &op.bases {
                for &(r, c, v) in &op.entries {
                    yt[b + r] += v * xt[b + c];
                }
            }
        }
        2 => tile_op_run(simd, op, xt, yt, 2),
        4 => tile_op_run(simd, op, xt, yt, 4),
        8 => tile_op_run(simd, op, xt, yt, 8),
        16 => tile_op_run(simd, op, xt, yt, 16),
        run => tile_op_run(simd, op, xt, yt, run),
    }
}

/// [`tile_op`] with runs of `run` entries (a constant where it is inlined).
#[inline(always)]
fn tile_op_run<S: Simd>(simd: S, op: &TileOp, xt: &[c64], yt: &mut [c64], run: usize) {
    for &b in &op.bases {
        for &(r, c, v) in &op.entries {
            axpy(
                simd,
                &mut yt[b + r..b + r + run],
                v,
                &xt[b + c..b + c + run],
            );
        }
    }
}

/// The tiles `tiles` of `pass`: each tile's entries gathered into a contiguous copy (a tile's
/// runs lie power-of-two strides apart, which would map them onto a few cache sets), the
/// diagonal and then each operator applied there, and the result written back (the first
/// pass) or added.
struct Tiles<'a> {
    pass: &'a Pass,
    tiles: &'a [usize],
    x: &'a [c64],
    y: Out,
    first: bool,
    taylor: Option<Fused>,
}

/// `expm_multiply`'s Taylor term fused into the last pass's write-back: the product `z`
/// becomes `coeff·(z − shift·x)`, added to `sum`, with the squared maxima of both.
#[derive(Clone, Copy)]
struct Fused {
    shift: c64,
    coeff: c64,
    sum: Out,
}

impl WithSimd for Tiles<'_> {
    type Output = [f64; 2];

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) -> [f64; 2] {
        let Tiles {
            pass,
            tiles,
            x,
            y,
            first,
            taylor,
        } = self;
        let mut maxima = [0.0f64; 2];
        let run = pass.run;
        let size = run * pass.hi.len();
        let (mut xt, mut yt) = scratch(size);
        for &tile in tiles {
            // The gather, with the diagonal applied to each run as it is copied: `x`'s run is
            // read from memory once, for both.
            for (h, &ho) in pass.hi.iter().enumerate() {
                let (at, to) = (tile + ho, h * run..(h + 1) * run);
                let xs = &x[at..at + run];
                xt[to.clone()].copy_from_slice(xs);
                match &pass.diag {
                    Some(d) => scale_by(simd, &mut yt[to.clone()], &d[to], xs, false),
                    None => yt[to].fill(ZERO),
                }
            }
            for op in &pass.ops {
                tile_op(simd, op, &xt, &mut yt);
            }
            for (h, &ho) in pass.hi.iter().enumerate() {
                // SAFETY: the tile's own run of entries, inside the vector (plan offsets);
                // the tiles of a pass are disjoint and this worker owns this one.
                let ys = unsafe { y.slice(tile + ho, run) };
                let src = &yt[h * run..(h + 1) * run];
                match taylor {
                    Some(f) => {
                        // SAFETY: as for `ys`, in the sum vector of the same length.
                        let ss = unsafe { f.sum.slice(tile + ho, run) };
                        let xs = &xt[h * run..(h + 1) * run];
                        let m = taylor_run(simd, ys, src, xs, ss, f, first);
                        maxima = [maxima[0].max(m[0]), maxima[1].max(m[1])];
                    }
                    None if first => ys.copy_from_slice(src),
                    None => add_to(simd, ys, src),
                }
            }
        }
        SCRATCH.with(|c| c.set((xt, yt)));
        maxima
    }
}

thread_local! {
    /// Each thread's tile copies of `x` and `y` (a tile each, up to 1 MiB), kept between
    /// passes: a fresh pair per pass would be zero-filled, or mapped afresh and cleared by the
    /// kernel on first touch, every pass, only to be overwritten.
    static SCRATCH: std::cell::Cell<(Vec<c64>, Vec<c64>)> =
        const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

/// This thread's tile copies, `size` entries each (taken from [`SCRATCH`], so a nested use
/// on the same thread gets a fresh pair). Every entry is written before it is read: the tile
/// of `x` by the gather, the tile of `y` by the diagonal or the fill.
fn scratch(size: usize) -> (Vec<c64>, Vec<c64>) {
    let (mut xt, mut yt) = SCRATCH.with(|c| c.take());
    for v in [&mut xt, &mut yt] {
        v.truncate(size);
        v.resize(size, ZERO);
    }
    (xt, yt)
}

/// The fused Taylor term on one run: `z = src (+ y)`, `y ← coeff·(z − shift·x)`,
/// `sum ← sum + y`; returns the squared maxima of `y` and `sum` over the run (NaN is caught by
/// the caller's final check of the result).
#[inline(always)]
fn taylor_run<S: Simd>(
    simd: S,
    y: &mut [c64],
    src: &[c64],
    x: &[c64],
    sum: &mut [c64],
    f: Fused,
    first: bool,
) -> [f64; 2] {
    let (sv, cv) = (simd.splat_c64s(f.shift), simd.splat_c64s(f.coeff));
    let (yh, yt) = S::as_mut_simd_c64s(y);
    let (zh, zt) = S::as_simd_c64s(src);
    let (xh, xt) = S::as_simd_c64s(x);
    let (sh, st) = S::as_mut_simd_c64s(sum);
    let mut m0 = simd.splat_f64s(0.0);
    let mut m1 = simd.splat_f64s(0.0);
    for (((y, z), x), s) in yh.iter_mut().zip(zh).zip(xh).zip(sh.iter_mut()) {
        let z = if first { *z } else { simd.add_c64s(*y, *z) };
        let u = simd.sub_c64s(z, simd.mul_e_c64s(sv, *x));
        let v = simd.mul_e_c64s(cv, u);
        *y = v;
        *s = simd.add_c64s(*s, v);
        m0 = simd.max_f64s(m0, pulp::cast_lossy(simd.abs2_c64s(v)));
        m1 = simd.max_f64s(m1, pulp::cast_lossy(simd.abs2_c64s(*s)));
    }
    let mut out = [simd.reduce_max_f64s(m0), simd.reduce_max_f64s(m1)];
    for (((y, z), x), s) in yt.iter_mut().zip(zt).zip(xt).zip(st.iter_mut()) {
        let z = if first { *z } else { *y + *z };
        let v = f.coeff * (z - f.shift * x);
        *y = v;
        *s += v;
        out = [out[0].max(v.norm_sqr()), out[1].max(s.norm_sqr())];
    }
    out
}

/// `y ← y + x`.
#[inline(always)]
fn add_to<S: Simd>(simd: S, y: &mut [c64], x: &[c64]) {
    let (yh, yt) = S::as_mut_simd_c64s(y);
    let (xh, xt) = S::as_simd_c64s(x);
    for (y, x) in yh.iter_mut().zip(xh) {
        *y = simd.add_c64s(*y, *x);
    }
    for (y, x) in yt.iter_mut().zip(xt) {
        *y += x;
    }
}

/// `y (+)= pass·x` over every tile, on several workers when the pass is large; with
/// `taylor`, the fused Taylor term's squared maxima.
fn run_pass(pass: &Pass, x: &[c64], y: &mut [c64], first: bool, taylor: Option<Fused>) -> [f64; 2] {
    let out = Out(y.as_mut_ptr(), y.len());
    let work = x.len().saturating_mul(1 + pass.ops.len());
    let workers = engine::workers(Family::CsrRows, work).min(pass.tiles.len().max(1));
    let arch = pulp::Arch::new();
    let job = |tiles: &[usize]| {
        arch.dispatch(Tiles {
            pass,
            tiles,
            x,
            y: out,
            first,
            taylor,
        })
    };
    if workers <= 1 {
        return job(&pass.tiles);
    }
    let per = pass.tiles.len().div_ceil(workers * 4).max(1);
    pass.tiles
        .par_chunks(per)
        .map(job)
        .reduce(|| [0.0; 2], |a, b| [a[0].max(b[0]), a[1].max(b[1])])
}

/// `y ← y + coeff·F·x` for a whole-vector factor, the run positions `e` in `range` only.
struct WholeRange<'a> {
    w: &'a Whole,
    coeff: c64,
    x: &'a [c64],
    y: Out,
    bases: &'a [usize],
    range: std::ops::Range<usize>,
}

impl WithSimd for WholeRange<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let WholeRange {
            w,
            coeff,
            x,
            y,
            bases,
            range,
        } = self;
        let (run, len) = (w.run, range.end - range.start);
        for &b in bases {
            if run == 1 {
                // Entries sorted by row: one sum per row, one store.
                let mut k = 0;
                while k < w.entries.len() {
                    let r = w.entries[k].0;
                    let mut acc = ZERO;
                    while k < w.entries.len() && w.entries[k].0 == r {
                        let (_, c, v) = w.entries[k];
                        acc += v * x[b + c];
                        k += 1;
                    }
                    // SAFETY: b + r is inside the vector (plan offsets) and this worker owns
                    // base b.
                    let yr = unsafe { y.slice(b + r, 1) };
                    yr[0] += coeff * acc;
                }
            } else {
                for &(r, c, v) in &w.entries {
                    let (yo, xo) = (b + r * run + range.start, b + c * run + range.start);
                    // SAFETY: inside the vector; this worker owns positions `range` of every
                    // run.
                    let yr = unsafe { y.slice(yo, len) };
                    axpy(simd, yr, coeff * v, &x[xo..xo + len]);
                }
            }
        }
    }
}

/// `y ← y + coeff·F·x` for a whole-vector factor: several workers over the bases, or over
/// pieces of the runs when there are few bases.
fn run_whole(w: &Whole, coeff: c64, x: &[c64], y: &mut [c64]) {
    let out = Out(y.as_mut_ptr(), y.len());
    let work = w
        .entries
        .len()
        .saturating_mul(w.run)
        .saturating_mul(w.bases.len());
    let workers = engine::workers(Family::CsrRows, work);
    let arch = pulp::Arch::new();
    let job = |bases: &[usize], range: std::ops::Range<usize>| {
        arch.dispatch(WholeRange {
            w,
            coeff,
            x,
            y: out,
            bases,
            range,
        })
    };
    if workers <= 1 {
        job(&w.bases, 0..w.run);
    } else if w.bases.len() >= workers * 2 || w.run < 64 {
        let per = w.bases.len().div_ceil(workers * 4).max(1);
        w.bases.par_chunks(per).for_each(|b| job(b, 0..w.run));
    } else {
        let per = w.run.div_ceil(workers * 2).max(16);
        (0..w.run.div_ceil(per)).into_par_iter().for_each(|k| {
            job(&w.bases, k * per..((k + 1) * per).min(w.run));
        });
    }
}

/// `y ← H·x` for one vector of the plan's dimension.
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) if a wide term's intermediate vector cannot be
/// allocated.
pub(crate) fn apply(plan: &Plan, x: &[c64], y: &mut [c64]) -> Result<()> {
    debug_assert_eq!((x.len(), y.len()), (plan.dim, plan.dim));
    if plan.passes.is_empty() {
        y.fill(ZERO);
    }
    for (k, pass) in plan.passes.iter().enumerate() {
        run_pass(pass, x, y, k == 0, None);
    }
    let shape = (plan.dim, 1);
    // Intermediate vectors of the wide terms with several factors, reused between terms.
    let mut pool: Vec<Vec<c64>> = Vec::new();
    for w in &plan.wide {
        match w.factors.as_slice() {
            [] => {}
            [f] => run_whole(f, w.coeff, x, y),
            [first, rest @ ..] => {
                // The other factors into fresh vectors one after the other (they act on
                // disjoint modes, so their order does not matter), then the first into y.
                let mut cur: Option<Vec<c64>> = None;
                for f in rest.iter().rev() {
                    let mut next = match pool.pop() {
                        Some(mut v) => {
                            v.fill(ZERO);
                            v
                        }
                        None => alloc::try_zeros("matmul", shape, plan.dim)?,
                    };
                    run_whole(f, ONE, cur.as_deref().unwrap_or(x), &mut next);
                    if let Some(old) = cur.replace(next) {
                        pool.push(old);
                    }
                }
                run_whole(first, w.coeff, cur.as_deref().unwrap_or(x), y);
                pool.extend(cur);
            }
        }
    }
    Ok(())
}

/// `y ← coeff·(H·x − shift·x)`, `sum ← sum + y`, in one go: the last pass applies the Taylor
/// term of `expm_multiply` while each tile is in cache, so the term costs no pass of its own
/// over the vectors. Returns `(max |yᵢ|, max |sumᵢ|)`, or `None` (nothing done) for a plan
/// with wide terms or none at all, which the caller applies the usual way.
pub(crate) fn apply_taylor(
    plan: &Plan,
    x: &[c64],
    y: &mut [c64],
    (shift, coeff): (c64, c64),
    sum: &mut [c64],
) -> Option<(f64, f64)> {
    if plan.passes.is_empty() || !plan.wide.is_empty() || sum.len() != y.len() {
        return None;
    }
    let last = plan.passes.len() - 1;
    let fused = Fused {
        shift,
        coeff,
        sum: Out(sum.as_mut_ptr(), sum.len()),
    };
    let mut maxima = [0.0; 2];
    for (k, pass) in plan.passes.iter().enumerate() {
        let m = run_pass(pass, x, y, k == 0, (k == last).then_some(fused));
        if k == last {
            maxima = m;
        }
    }
    let root = |m: f64, v: &[c64]| {
        if m.is_finite() {
            m.sqrt()
        } else {
            v.iter().map(|z| z.norm()).fold(0.0, f64::max)
        }
    };
    Some((root(maxima[0], y), root(maxima[1], sum)))
}

/// `‖H − μI‖₁`, or an upper bound of it: the largest over the columns `j` of `|d(j) − μ|` (the
/// diagonal, every pass's table summed) plus the off-diagonal column sums of the tiled
/// operators, plus `|c|·Π‖F‖₁` of each wide term. Exact when no two operators put an
/// off-diagonal entry of the same column in the same row (Pauli chains, Lindbladians of local
/// operators) and there are no wide terms. O(dim · passes).
pub(crate) fn one_norm(plan: &Plan, mu: c64) -> f64 {
    let wide: f64 = plan
        .wide
        .iter()
        .map(|w| w.coeff.norm() * w.factors.iter().map(|f| f.one_norm).product::<f64>())
        .sum();
    let (dims, m, n) = (&plan.dims, plan.dims.len(), plan.dim);
    // A non-finite entry makes the norm NaN (the maxima below would pass over it).
    let finite = wide.is_finite()
        && plan.passes.iter().all(|p| {
            p.colsums.iter().all(|x| x.is_finite())
                && p.diag
                    .as_ref()
                    .is_none_or(|d| d.iter().all(|x| x.re.is_finite() && x.im.is_finite()))
        });
    if !finite {
        return f64::NAN;
    }
    if plan.passes.is_empty() {
        return mu.norm() + wide;
    }
    // A column j = hi·S + lo (S the size of the modes from `split` on): each pass's tile
    // index is A[hi] + B[lo], from two tables of about √dim entries per pass.
    let mut split = m;
    let mut low = 1usize;
    while split > 0 && low.saturating_mul(low) < n {
        split -= 1;
        low *= dims[split];
    }
    let tables: Vec<(Vec<usize>, Vec<usize>)> = plan
        .passes
        .iter()
        .map(|p| {
            let mut w = vec![0usize; m];
            for &(s, x) in &p.free {
                w[s] = x;
            }
            let hi: Vec<usize> = (0..split).collect();
            let lo: Vec<usize> = (split..m).collect();
            (offsets(&hi, dims, &w), offsets(&lo, dims, &w))
        })
        .collect();
    let best = |his: std::ops::Range<usize>| {
        let mut best = 0.0f64;
        for h in his {
            for l in 0..low {
                let mut d = ZERO;
                let mut s = 0.0;
                for (p, (a, b)) in plan.passes.iter().zip(&tables) {
                    let t = a[h] + b[l];
                    if let Some(diag) = &p.diag {
                        d += diag[t];
                    }
                    s += p.colsums[t];
                }
                best = best.max((d - mu).norm() + s);
            }
        }
        best
    };
    let highs = n / low;
    let diag = if engine::workers(Family::Reduction, n) > 1 && highs > 1 {
        (0..highs)
            .into_par_iter()
            .map(|h| best(h..h + 1))
            .reduce(|| 0.0, f64::max)
    } else {
        best(0..highs)
    };
    diag + wide
}
