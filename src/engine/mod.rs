//! The one place that decides serial versus parallel execution, and which Dense results are
//! written with non-temporal stores (`stream.rs`).
//!
//! Kernels ask here instead of hard-coding `Par::Seq` or spawning rayon tasks themselves, so the
//! policy (and its thresholds) can be measured and changed in one file.

use std::mem::MaybeUninit;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use faer::{Mat, Par};
use rayon::prelude::*;

use crate::scalar::c64;

/// One of polymat's vector kernels and the instruction set it runs on, on this CPU
/// ([`vector_kernels`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct VectorKernel {
    /// The kernel's name (`"dot"`, `"gemv_cols"`, ...).
    pub name: &'static str,
    /// The operations it serves.
    pub serves: &'static str,
    /// The instruction set it takes here: `"avx2+fma"` or `"neon"` for the kernels written
    /// once against `pulp`, `"avx2+fma (std::arch)"` or `"avx512f (std::arch), …"` for those
    /// kept in x86 intrinsics, `"plain loop"` or `"scalar"` where neither runs (on aarch64 the
    /// compiler's own vectorisation of those loops uses NEON, the baseline there).
    pub instruction_set: &'static str,
}

/// Which instruction set each of polymat's vector kernels runs on, on this CPU, as the kernels
/// decide at run time: a way to check that a machine gets the vector paths (for example an
/// aarch64 server, where the portable kernels take NEON).
///
/// ```
/// let kernels = polymat::engine::vector_kernels();
/// let dot = kernels.iter().find(|k| k.name == "dot").unwrap();
/// println!("inner products run on {}", dot.instruction_set);
/// assert!(!dot.instruction_set.is_empty());
/// ```
pub fn vector_kernels() -> Vec<VectorKernel> {
    crate::simd::kernel_paths()
        .into_iter()
        .map(|(name, serves, instruction_set)| VectorKernel {
            name,
            serves,
            instruction_set,
        })
        .collect()
}

/// Environment variable read once, on first use, when [`set_threads`] has not been called.
pub const THREADS_ENV: &str = "POLYMAT_NUM_THREADS";

/// 0 = not decided yet.
static THREADS: AtomicUsize = AtomicUsize::new(0);

/// Ignore the thresholds (calibration and parity tests).
static FORCE_PARALLEL: AtomicBool = AtomicBool::new(false);

/// Caps the number of threads polymat's kernels use; `0` restores the default.
///
/// The default is the environment variable `POLYMAT_NUM_THREADS` if it holds a positive
/// integer, else the size of the current rayon pool. With 1 every kernel runs serially on the
/// calling thread. Parallel kernels run on the current rayon pool (the global one unless the
/// call happens inside [`rayon::ThreadPool::install`]) and never split work among more workers
/// than this many threads, nor than that pool has: `set_threads(64)` on a 2-thread pool runs
/// kernels on two workers ([`threads`] still reports 64). The setting is process-wide and may
/// change at any time; calls in flight keep the value they read.
///
/// faer's decompositions that polymat calls (the LU of `expm`, `inv` and `solve`, QR, the
/// eigensolvers and the SVD) take their parallelism from faer's own process-wide setting, so
/// a positive `n` here (or in `POLYMAT_NUM_THREADS`) also sets that
/// ([`faer::set_global_parallelism`]: `Par::Seq` for 1, otherwise `Par::rayon` of `n` or the
/// current rayon pool's size at that call, whichever is smaller), and 0 sets it to
/// `Par::rayon(0)`, the size of the current rayon pool at that call (faer's own default looks
/// the pool up at every call, which its API cannot set again). A count far beyond the pool
/// once reached faer as it was: with `set_threads(1_000_000)` a 4 × 4 product split into as
/// many tasks and ran for minutes. Without this,
/// `set_threads(1)` left a 1000 × 1000 SVD using a second thread for a third of its time
/// (0.68 s wall, 0.92 s of CPU; 0.95 s on one thread).
///
/// ```
/// polymat::set_threads(1);
/// assert_eq!(polymat::threads(), 1);
/// polymat::set_threads(0); // back to POLYMAT_NUM_THREADS or rayon's pool size
/// assert!(polymat::threads() >= 1);
/// ```
pub fn set_threads(n: usize) {
    THREADS.store(n, Ordering::Relaxed);
    faer::set_global_parallelism(faer_par(n));
}

/// The thread count as last set (0: not set, the default applies): what [`set_threads`]
/// restores it to.
pub(crate) fn threads_setting() -> usize {
    THREADS.load(Ordering::Relaxed)
}

/// faer's global parallelism for a polymat thread count (0: the current pool's size), at most
/// the current pool's size.
fn faer_par(n: usize) -> faer::Par {
    match n {
        0 => faer::Par::rayon(0),
        n => match n.min(rayon::current_num_threads()) {
            1 => faer::Par::Seq,
            n => faer::Par::rayon(n),
        },
    }
}

/// [`threads`], at most the size of the rayon pool the caller runs in: the most workers a
/// kernel splits its work among.
#[inline]
fn usable_threads() -> usize {
    threads().min(rayon::current_num_threads()).max(1)
}

/// The number of threads polymat's kernels may use (at least 1). See [`set_threads`].
pub fn threads() -> usize {
    setting(&THREADS, default_threads)
}

/// The value of a process-wide setting kept in `cell`, where 0 means not decided yet: on first
/// use `default()` is computed and stored, unless a concurrent setter stored a value first
/// (which then wins). At least 1.
#[inline]
fn setting(cell: &AtomicUsize, default: impl FnOnce() -> usize) -> usize {
    match cell.load(Ordering::Relaxed) {
        0 => {
            let v = default();
            let _ = cell.compare_exchange(0, v, Ordering::Relaxed, Ordering::Relaxed);
            cell.load(Ordering::Relaxed).max(1)
        }
        v => v,
    }
}

/// A process-wide on/off setting kept in `cell` (0 = not decided yet, 1 = off, 2 = on), read
/// through [`setting`]: on first use it is on unless the environment variable `var` is `0`.
pub(crate) fn flag(cell: &AtomicUsize, var: &str) -> bool {
    setting(cell, || {
        if std::env::var(var).is_ok_and(|v| v.trim() == "0") {
            1
        } else {
            2
        }
    }) == 2
}

/// Sets a [`flag`].
pub(crate) fn set_flag(cell: &AtomicUsize, on: bool) {
    cell.store(if on { 2 } else { 1 }, Ordering::Relaxed);
}

fn default_threads() -> usize {
    let from_env = std::env::var(THREADS_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0);
    if let Some(n) = from_env {
        // As `set_threads(n)` would: faer's decompositions keep to the same count.
        faer::set_global_parallelism(faer_par(n));
    }
    from_env.unwrap_or_else(rayon::current_num_threads).max(1)
}

/// The dense limit in bytes; 0 = not decided yet (the default is computed on first use).
static DENSE_LIMIT: AtomicUsize = AtomicUsize::new(0);

/// Sets the largest dense matrix, in bytes, that polymat allocates; `0` restores the default.
///
/// Every operation and conversion that would allocate a larger dense result (a Csr densified
/// by `to(Kind::DENSE, …)`, a densifying kernel, `kron` into Dense, `identity(n, Out::Dense)`)
/// returns [`Error::TooLarge`](crate::Error::TooLarge) instead, so a sparse operator of 10⁶
/// rows is never silently turned into a 16 TB allocation that aborts the process. The default
/// is half of the machine's physical memory (read from `/proc/meminfo`; 8 GiB where that is not
/// available). The setting is process-wide.
///
/// ```
/// use polymat::{Csr, Error, Kind};
///
/// polymat::set_dense_limit(1 << 20); // 1 MiB
/// let big = Csr::identity(1000).into(); // dense would be 16 MB
/// let err = polymat::to(Kind::DENSE, &big).unwrap_err();
/// assert!(matches!(err, Error::TooLarge { .. }));
/// polymat::set_dense_limit(0); // back to the default
/// assert!(polymat::to(Kind::DENSE, &big).is_ok());
/// ```
pub fn set_dense_limit(bytes: usize) {
    DENSE_LIMIT.store(bytes, Ordering::Relaxed);
}

/// The largest dense matrix, in bytes, that polymat allocates. See [`set_dense_limit`].
pub fn dense_limit() -> usize {
    setting(&DENSE_LIMIT, default_dense_limit)
}

fn default_dense_limit() -> usize {
    const FALLBACK: usize = 8 << 30;
    match memory::total_memory() {
        Some(bytes) => usize::try_from(bytes / 2).unwrap_or(usize::MAX),
        None => FALLBACK,
    }
}

mod affinity;
pub(crate) mod caches;
pub(crate) mod memory;
pub(crate) mod pages;
mod stream;
pub mod thresholds;

pub use crate::simd::AVX512_SMALL_PRODUCTS_ENV;
pub use affinity::pin_threads;
pub use memory::{PROBE_BYTES, available_memory};
pub use pages::{HUGE_PAGES_ENV, huge_pages, set_huge_pages};
pub use stream::{DEFAULT_STREAM_BYTES, STREAM_BYTES_ENV, set_stream_bytes, stream_bytes};
pub(crate) use stream::{copy_by_memcpy, fill_by_memset, streams};
pub use thresholds::{THRESHOLDS_ENV, Thresholds, set_thresholds};

/// A kind of kernel, for [`workers`].
#[derive(Clone, Copy, Debug)]
pub(crate) enum Family {
    Elementwise,
    Transpose,
    CsrRows,
    Reduction,
    Matmul,
}

/// Makes every kernel that has a parallel path take it whenever [`threads`] > 1, whatever the
/// size (`false` restores the thresholds in force, [`Thresholds::current`]). For calibrating the
/// thresholds (`benches/tools/engine_calibrate.rs`) and for tests that the serial and parallel paths
/// agree; results stay correct either way, small inputs just run slower.
///
/// ```
/// polymat::engine::set_force_parallel(true);
/// polymat::engine::set_force_parallel(false);
/// ```
pub fn set_force_parallel(on: bool) {
    FORCE_PARALLEL.store(on, Ordering::Relaxed);
}

/// Whether [`set_force_parallel`] is on.
pub(crate) fn force_parallel() -> bool {
    FORCE_PARALLEL.load(Ordering::Relaxed)
}

/// How many workers a kernel of `family` doing `work` units should use: 1 below the family's
/// threshold, then T workers, and one more for every T-th of the threshold of further work,
/// up to [`threads`] and the size of the caller's rayon pool, where T is the thread count the
/// thresholds were measured with ([`Thresholds::measured_threads`]: 2 for the defaults, the
/// `--write` run's count for a calibration file).
///
/// A threshold is the size from which T threads beat one, so a worker needs about a T-th of
/// it to pay for its hand-off. Capping the workers by the size keeps a many-core machine from
/// spreading a just-parallel size over every core (on a 16-core host, a 128×128 product on 16
/// threads ran 12× slower than serial; it is serial now, and 256×256 gets 4 workers), and
/// reading T keeps a 16-thread calibration from putting two workers where only sixteen pay
/// (Csr·ket with 8 190 entries: 0.50× serial on two workers, 1.41× on sixteen).
#[inline]
pub(crate) fn workers(family: Family, work: usize) -> usize {
    if FORCE_PARALLEL.load(Ordering::Relaxed) {
        return usable_threads();
    }
    let threshold = thresholds::of(family);
    if work < threshold {
        // Below the threshold the thread count does not matter: not even a call to read it
        // (every small kernel passes here).
        return 1;
    }
    workers_for(
        threshold,
        thresholds::measured_threads(),
        work,
        usable_threads(),
    )
}

/// [`workers`] for a threshold measured with `measured` threads (where that many first beat
/// one), the work, and the threads available: below the threshold 1; from it `measured`
/// workers, one more for each `threshold / measured` of work, at most `threads`.
#[inline]
fn workers_for(threshold: usize, measured: usize, work: usize, threads: usize) -> usize {
    if work < threshold || threads <= 1 {
        return 1;
    }
    (work / (threshold / measured.max(2)).max(1)).clamp(2, threads)
}

/// Runs a faer product doing `work` multiply-adds: `f` gets the parallelism (`Par::Seq` below
/// the engine's product threshold, else `Par::rayon(threads)`), and the AVX upper state is
/// cleared when it returns (see [`clear_upper_vector_state`]).
#[inline]
pub(crate) fn product<R>(work: usize, f: impl FnOnce(Par) -> R) -> R {
    let par = match workers(Family::Matmul, work) {
        1 => Par::Seq,
        t => Par::rayon(t),
    };
    let _avx = AvxGuard {
        pool: matches!(par, Par::Rayon(_)),
    };
    f(par)
}

/// Clears the upper halves of the vector registers (`vzeroupper`) on the calling thread.
///
/// faer's matrix products (and the decompositions built on them) run hand-written AVX-512
/// microkernels from `private-gemm-x86` that return without `vzeroupper`. The dirty upper
/// register state they leave behind makes every later SSE-encoded instruction on that thread
/// wait on the upper halves: on one CPU measured, a plain complex scaling loop ran 3.5× slower
/// after one 100×100 `faer` product, until something cleared the state
/// (docs/benchmarks.md, "Run-order effect"). Kernels that call into faer's products hold an
/// `AvxGuard`, which calls this when dropped. No-op off x86-64 or without AVX.
///
/// Call it yourself after your own calls into faer's products, before scalar or sparse work on
/// the same thread:
///
/// ```
/// use faer::{Accum, Mat, Par, c64, linalg::matmul::matmul};
///
/// let a = Mat::<c64>::identity(64, 64);
/// let mut c = Mat::<c64>::zeros(64, 64);
/// matmul(c.as_mut(), Accum::Replace, a.as_ref(), a.as_ref(), c64::new(1.0, 0.0), Par::Seq);
/// polymat::clear_upper_vector_state();
/// assert_eq!(c, a);
/// ```
#[inline(always)]
pub fn clear_upper_vector_state() {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has AVX, so `vzeroupper` exists. It zeroes bits 128 and up of the
        // vector registers; `clobber_abi("C")` tells the compiler every caller-saved register
        // (all vector registers on x86-64) is clobbered, so no live value is kept in them.
        unsafe {
            std::arch::asm!(
                "vzeroupper",
                options(nomem, nostack, preserves_flags),
                clobber_abi("C")
            );
        }
    }
}

/// Calls [`clear_upper_vector_state`] when dropped: on the calling thread, and, when `pool`, on
/// every thread of the current rayon pool too, whose workers ran the same microkernels. Held
/// across a kernel's calls into faer so that early returns clean up as well; [`product`] holds
/// one for each product.
pub(crate) struct AvxGuard {
    pool: bool,
}

impl AvxGuard {
    /// A guard for faer's decompositions of an `n`-row matrix, which run with faer's own
    /// (global) parallelism: the pool is cleaned too when it has more than one thread and the
    /// matrix is large enough (n ≥ 128) for faer to have split the work.
    #[inline]
    pub(crate) fn for_size(n: usize) -> Self {
        Self {
            pool: n >= 128 && rayon::current_num_threads() > 1,
        }
    }
}

impl Drop for AvxGuard {
    #[inline]
    fn drop(&mut self) {
        clear_upper_vector_state();
        if self.pool {
            rayon::broadcast(|_| clear_upper_vector_state());
        }
    }
}

/// A matrix's entries shared by parallel workers that each write their own disjoint part (rows
/// of a scatter, row ranges of an axpy), for kernels whose split [`dense_build`] does not give.
#[derive(Clone, Copy)]
pub(crate) struct Entries(pub(crate) *mut c64);

impl Entries {
    /// The pointer (a method, so that closures capture the `Send` wrapper, not its field).
    pub(crate) fn get(self) -> *mut c64 {
        self.0
    }
}

// SAFETY: the workers given an `Entries` write disjoint entries of a matrix that outlives them
// and that nothing else touches meanwhile (each user's contract, stated where it splits).
unsafe impl Send for Entries {}
// SAFETY: as for `Send`: shared only to write disjoint entries.
unsafe impl Sync for Entries {}

/// A [`dense_build`] output segment filled with zeros, as initialised values: for fills that
/// accumulate into their output (scatters of rows).
#[inline(always)]
pub(crate) fn zeroed(out: &mut [MaybeUninit<c64>]) -> &mut [c64] {
    out.fill(MaybeUninit::new(crate::scalar::ZERO));
    // SAFETY: every element was just initialised, and `MaybeUninit<c64>` has the layout of
    // `c64`.
    unsafe { &mut *(std::ptr::from_mut(out) as *mut [c64]) }
}

/// The output handed to a [`dense_build`] fill: `cols[k]` is a segment of one column (or, for
/// a row-major result, of one row) of the matrix being built, not yet initialised.
pub(crate) type OutColumns<'a> = [&'a mut [MaybeUninit<c64>]];

/// Columns handed to one [`dense_build`] task at a time.
const COLUMN_BLOCK: usize = 16;

/// Fills `mat` (reserved for at least `m × n`, any current dimensions) as an `m × n` matrix
/// written exactly once, with no zero fill first, and returns it with those dimensions.
///
/// `fill(rows, j0, cols)` initialises `cols`: `cols[k]` is rows `rows` of column `j0 + k`. The
/// work is split into blocks of up to 16 columns, and, for matrices with fewer columns than
/// workers (kets), into row ranges; with `workers > 1` the blocks run on the rayon pool. A
/// `fill` whose loops should use AVX2 calls a function defined with `simd::avx2_fn!` (a
/// closure is compiled without the features, whoever calls it).
///
/// # Safety
/// `fill` must write every element of every slice it is given: the matrix is returned as
/// initialised without a check. The capacity of `mat` must cover `m × n`.
pub(crate) unsafe fn dense_build<F>(
    mut mat: Mat<c64>,
    m: usize,
    n: usize,
    workers: usize,
    fill: F,
) -> Mat<c64>
where
    F: Fn(Range<usize>, usize, &mut OutColumns<'_>) + Sync,
{
    // SAFETY: the caller reserved capacity for m×n. The elements are uninitialised until every
    // column is written below; they are only reached through `MaybeUninit` slices until then,
    // and `c64` has no drop glue, so a panic in `fill` leaks nothing and reads nothing.
    unsafe { mat.set_dims(m, n) };
    if m == 0 || n == 0 {
        return mat;
    }
    let stride = usize::try_from(mat.col_stride()).unwrap_or(m);
    let base = mat.as_ptr_mut().cast::<MaybeUninit<c64>>();
    // SAFETY: column j occupies [j·stride, j·stride + m) with stride ≥ m, so the slices of
    // distinct columns are disjoint and inside the allocation; each column is handed out once.
    let column = |j: usize| unsafe { std::slice::from_raw_parts_mut(base.add(j * stride), m) };
    if workers <= 1 {
        // Serial: the block's column slices live on the stack, so small results allocate
        // nothing but the matrix itself.
        // Only the `width` slots handed out are written: initialising all sixteen cost more
        // than a 2 × 2 map itself.
        let mut block: [MaybeUninit<&mut [MaybeUninit<c64>]>; COLUMN_BLOCK] =
            [const { MaybeUninit::uninit() }; COLUMN_BLOCK];
        let mut j0 = 0;
        while j0 < n {
            let width = COLUMN_BLOCK.min(n - j0);
            for (k, slot) in block[..width].iter_mut().enumerate() {
                slot.write(column(j0 + k));
            }
            // SAFETY: slots 0..width were written just above, and `MaybeUninit<T>` has the
            // layout of `T`; the slices are dropped without drop glue.
            let cols = unsafe {
                &mut *std::ptr::slice_from_raw_parts_mut(
                    block.as_mut_ptr().cast::<&mut [MaybeUninit<c64>]>(),
                    width,
                )
            };
            fill(0..m, j0, cols);
            j0 += width;
        }
        return mat;
    }
    let mut cols: Vec<&mut [MaybeUninit<c64>]> = (0..n).map(column).collect();
    if n >= workers {
        let per = n.div_ceil(workers * 4).clamp(1, COLUMN_BLOCK);
        cols.par_chunks_mut(per)
            .enumerate()
            .for_each(|(b, block)| fill(0..m, b * per, block));
    } else {
        // Few columns: split each column's rows.
        let rows = m.div_ceil(workers);
        for (j, col) in cols.iter_mut().enumerate() {
            col.par_chunks_mut(rows).enumerate().for_each(|(r, part)| {
                let start = r * rows;
                fill(start..start + part.len(), j, &mut [part]);
            });
        }
    }
    drop(cols);
    mat
}

/// The `k`-th of the pieces of length `per` that cut `0..len` (the last one shorter), without
/// overflow for any `len`: an empty matrix may still have `usize::MAX` columns.
#[inline]
pub(crate) fn piece(k: usize, per: usize, len: usize) -> Range<usize> {
    let start = k.saturating_mul(per).min(len);
    start..start.saturating_add(per).min(len)
}

/// `Σ f(range)` over `0..len` split into one range per worker (a single call when `workers`
/// is 1). The split depends only on `len` and `workers`, so a given setting always sums in the
/// same order.
pub(crate) fn sum_ranges<T, F>(len: usize, workers: usize, f: F) -> T
where
    T: Send + std::iter::Sum<T>,
    F: Fn(Range<usize>) -> T + Sync,
{
    if workers <= 1 || len < 2 {
        return f(0..len);
    }
    let per = len.div_ceil(workers);
    (0..len.div_ceil(per))
        .into_par_iter()
        .map(|k| f(piece(k, per, len)))
        .collect::<Vec<T>>()
        .into_iter()
        .sum()
}

#[cfg(test)]
mod tests {
    #[test]
    fn pieces_cut_any_length_without_overflow() {
        use super::piece;
        assert_eq!(piece(0, 4, 10), 0..4);
        assert_eq!(piece(2, 4, 10), 8..10);
        assert_eq!(piece(3, 4, 10), 10..10);
        // An empty 0 × usize::MAX matrix split over four workers: the last piece ends at
        // usize::MAX, where (k + 1)·per overflowed.
        let per = usize::MAX.div_ceil(4);
        assert_eq!(piece(3, per, usize::MAX), 3 * per..usize::MAX);
        assert_eq!(piece(usize::MAX, per, usize::MAX), usize::MAX..usize::MAX);
    }

    #[test]
    fn workers_grow_with_the_work() {
        use super::workers_for;
        let t = 1 << 16;
        assert_eq!(workers_for(t, 2, t - 1, 16), 1);
        assert_eq!(workers_for(t, 2, t, 1), 1);
        // Two threads: the measured threshold switches to both, as before.
        assert_eq!(workers_for(t, 2, t, 2), 2);
        assert_eq!(workers_for(t, 2, 100 * t, 2), 2);
        // Many threads, thresholds measured with two: one worker per half-threshold of work.
        assert_eq!(workers_for(t, 2, t, 16), 2);
        assert_eq!(workers_for(t, 2, 3 * t, 16), 6);
        assert_eq!(workers_for(t, 2, 100 * t, 16), 16);
        assert_eq!(workers_for(1, 2, usize::MAX, 16), 16);
        // Thresholds measured with 16 (where 16 first beat one): all 16 from the threshold,
        // where two workers alone ran 0.50x serial on a 16-core host (Csr·ket, 8 190 entries).
        assert_eq!(workers_for(t, 16, t, 16), 16);
        assert_eq!(workers_for(t, 16, t, 8), 8);
        assert_eq!(workers_for(t, 16, t - 1, 16), 1);
        // A count below 2 in a file counts as 2.
        assert_eq!(workers_for(t, 1, t, 16), 2);
    }
}
