//! Adjoint, transpose and complex conjugate.

use std::sync::LazyLock;

mod blocked;

use crate::dispatch::{Dispatcher, Out};
use crate::error::Result;
use crate::gpu::{GpuCsr, GpuDense};
use crate::scalar::c64;
use crate::shape::indptr_len;
use crate::storage::csr_build::csr_map;
use crate::storage::{Csr, Data, Dense, Dia, KronSum, SuperOp, alloc};

/// `f` of an optional factor of a superoperator (`None`, the identity, stays `None`).
fn opt(x: Option<&Data>, f: fn(&Data, Out) -> Result<Data>) -> Result<Option<Data>> {
    x.map(|x| f(x, Out::Auto)).transpose()
}

/// `a†` (conjugate transpose). Kernels: Dense, Csr.
pub static ADJOINT: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("adjoint", 1)
        .result_shape(crate::dispatch::checks::first_shape_flipped)
        .unary("adjoint_dense", |a: &Dense, _: &()| adjoint_dense(a))
        .unary("adjoint_csr", |a: &Csr, _: &()| transpose_csr(a, true))
        .unary("adjoint_dia", |a: &Dia, _: &()| {
            super::dia::transpose_dia(a, true)
        })
        .unary("adjoint_gpu", |a: &GpuDense, _: &()| a.transpose(true))
        .unary("adjoint_gpucsr", |a: &GpuCsr, _: &()| {
            transpose_gpucsr(a, true)
        })
        .unary("adjoint_kronsum", |a: &KronSum, _: &()| {
            a.map(|c| c.conj(), |f| adjoint(f, Out::Auto))
        })
        .unary("adjoint_superop", |a: &SuperOp, _: &()| {
            // (c·Bᵀ⊗A)† = c̄·(B†)ᵀ ⊗ A†: the term (c̄, A†, B†), output and input swapped.
            a.map(a.output(), a.input(), |c, x, y| {
                Ok((c.conj(), opt(x, adjoint)?, opt(y, adjoint)?))
            })
        })
        .builtin()
});

/// `aᵀ`. Kernels: Dense, Csr.
pub static TRANSPOSE: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("transpose", 1)
        .result_shape(crate::dispatch::checks::first_shape_flipped)
        .unary("transpose_dense", |a: &Dense, _: &()| transpose_dense(a))
        .unary("transpose_csr", |a: &Csr, _: &()| transpose_csr(a, false))
        .unary("transpose_dia", |a: &Dia, _: &()| {
            super::dia::transpose_dia(a, false)
        })
        .unary("transpose_gpu", |a: &GpuDense, _: &()| a.transpose(false))
        .unary("transpose_gpucsr", |a: &GpuCsr, _: &()| {
            transpose_gpucsr(a, false)
        })
        .unary("transpose_kronsum", |a: &KronSum, _: &()| {
            a.map(|c| c, |f| transpose(f, Out::Auto))
        })
        .unary("transpose_superop", |a: &SuperOp, _: &()| {
            // (c·Bᵀ⊗A)ᵀ = c·B ⊗ Aᵀ: the term (c, Aᵀ, Bᵀ), output and input swapped.
            a.map(a.output(), a.input(), |c, x, y| {
                Ok((c, opt(x, transpose)?, opt(y, transpose)?))
            })
        })
        .builtin()
});

/// `ā` (entrywise conjugate). Kernels: Dense, Csr.
pub static CONJ: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("conj", 1)
        .result_shape(crate::dispatch::checks::first_shape)
        .unary("conj_dense", |a: &Dense, _: &()| {
            super::elementwise::dense_flip("conj", a, crate::simd::Flip::Imag, a.layout())
        })
        .unary("conj_csr", |a: &Csr, _: &()| {
            csr_map("conj", a, |x| x.conj())
        })
        .unary("conj_dia", |a: &Dia, _: &()| super::dia::conj_dia(a))
        .unary("conj_gpu", |a: &GpuDense, _: &()| a.conj())
        .unary("conj_gpucsr", |a: &GpuCsr, _: &()| a.conj())
        .unary("conj_kronsum", |a: &KronSum, _: &()| {
            a.map(|c| c.conj(), |f| conj(f, Out::Auto))
        })
        .unary("conj_superop", |a: &SuperOp, _: &()| {
            a.map(a.input(), a.output(), |c, x, y| {
                Ok((c.conj(), opt(x, conj)?, opt(y, conj)?))
            })
        })
        .builtin()
});

/// The conjugate transpose.
///
/// # Errors
/// Only those of the conversions `out` asks for.
///
/// ```
/// use polymat::{Dense, Out, c64};
/// let a = Dense::from_rows(&[[c64::new(0.0, 0.0), c64::new(1.0, 2.0)]]).unwrap();
/// let h = polymat::adjoint(&a.into(), Out::Auto).unwrap();
/// assert_eq!(h.shape(), (2, 1));
/// assert_eq!(h.downcast_ref::<Dense>().unwrap().get(1, 0), c64::new(1.0, -2.0));
/// ```
#[inline]
pub fn adjoint(a: &Data, out: Out) -> Result<Data> {
    ADJOINT.call(&[a], out, &())
}

/// The transpose.
///
/// # Errors
/// Only those of the conversions `out` asks for.
///
/// ```
/// use polymat::{Csr, Out, c64};
/// let a = Csr::from_triplets((1, 2), &[0], &[1], &[c64::new(1.0, 2.0)]).unwrap();
/// let t = polymat::transpose(&a.into(), Out::Auto).unwrap();
/// assert_eq!(t.downcast_ref::<Csr>().unwrap().get(1, 0), c64::new(1.0, 2.0));
/// ```
#[inline]
pub fn transpose(a: &Data, out: Out) -> Result<Data> {
    TRANSPOSE.call(&[a], out, &())
}

/// The entrywise complex conjugate.
///
/// # Errors
/// Only those of the conversions `out` asks for.
///
/// ```
/// use polymat::{Dense, Out, c64};
/// let a = Dense::from_fn(1, 1, |_, _| c64::new(1.0, 2.0));
/// let c = polymat::conj(&a.into(), Out::Auto).unwrap();
/// assert_eq!(c.downcast_ref::<Dense>().unwrap().get(0, 0), c64::new(1.0, -2.0));
/// ```
#[inline]
pub fn conj(a: &Data, out: Out) -> Result<Data> {
    CONJ.call(&[a], out, &())
}

/// Dense adjoint: one conjugating pass over the buffer, in the other layout (a column-major
/// input gives a row-major result and the reverse). O(mn), contiguous.
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) if the result cannot be allocated.
pub fn adjoint_dense(a: &Dense) -> Result<Dense> {
    super::elementwise::dense_flip("adjoint", a, crate::simd::Flip::Imag, a.layout().flipped())
}

/// Dense transpose: one contiguous copy of the buffer, in the other layout. O(mn); with an
/// owned matrix, [`Dense::into_transpose`] is O(1).
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) if the result cannot be allocated.
#[inline]
pub fn transpose_dense(a: &Dense) -> Result<Dense> {
    super::elementwise::dense_copy("transpose", a, a.layout().flipped())
}

/// Csr transpose (conjugated if `conjugate`), by counting sort over columns. O(nnz + m + n);
/// rows of the result come out sorted. A Csr that stores all m·n entries skips the count (its
/// pattern is known): one blocked gather of the values.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if `n + 1` row pointers overflow,
/// [`Error::TooLarge`](crate::Error::TooLarge) if they cannot be allocated.
pub fn transpose_csr(a: &Csr, conjugate: bool) -> Result<Csr> {
    if conjugate {
        transpose_csr_map(a, crate::simd::conj)
    } else {
        transpose_csr_map(a, |x| x)
    }
}

/// Matrices with fewer columns than this keep the counting sort's cursors in a stack array
/// and copy the result's row pointers from it.
const STACK_COLUMNS: usize = 64;

/// Matrices with at most this many columns (and fewer than 2³² entries) keep their 32-bit
/// cursors on the stack (4 KiB): no allocation for n ≤ 1024.
const STACK_CURSORS: usize = 1024;

/// The counting-sort transpose with `f` applied to each value.
fn transpose_csr_map(a: &Csr, f: impl Fn(c64) -> c64 + Sync) -> Result<Csr> {
    const OP: &str = "transpose";
    let (m, n) = a.shape();
    let idx = a.indices();
    let len = indptr_len(OP, (n, m))?;
    let nnz = idx.len();
    alloc::check_memory(OP, (n, m), alloc::csr::csr_bytes(len, nnz))?;
    // Large scattered patterns: by column blocks (`blocked`), unless the pattern does not suit.
    if nnz >= blocked::blocked_from()
        && n >= blocked::BLOCKED_MIN_COLUMNS
        && !banded(a)
        && let Some(t) = blocked::transpose_blocked(a, &f)?
    {
        return Ok(t);
    }
    // Written once each by the scatter, so no zero fill first.
    let mut indices: Vec<usize> = alloc::try_with_capacity(OP, (n, m), nnz)?;
    let mut data: Vec<c64> = alloc::try_with_capacity(OP, (n, m), nnz)?;
    if a.stores_every_entry() {
        return transpose_full(a, indices, data, f);
    }
    let indptr = if n < STACK_COLUMNS {
        // Few columns: the cursors live on the stack, and the result's row pointers are a copy
        // of them taken before the scatter advances them (at 10 × 10, 325 → 230 ns for the
        // kernel, measured in one process: no zeroed heap array, no reads through it).
        let mut cursor = [0usize; STACK_COLUMNS + 1];
        for &c in idx {
            // SAFETY: c < n < STACK_COLUMNS for a valid Csr, so c + 1 is in range.
            unsafe { *cursor.get_unchecked_mut(c + 1) += 1 };
        }
        for j in 0..n {
            cursor[j + 1] += cursor[j];
        }
        let mut indptr = alloc::try_with_capacity(OP, (n, m), len)?;
        indptr.extend_from_slice(&cursor[..len]);
        let (out_idx, out_val) = (indices.as_mut_ptr(), data.as_mut_ptr());
        // SAFETY: cursor[c] is column c's start for every c < n, from the counts of `idx`;
        // both buffers hold nnz elements.
        unsafe {
            scatter_entries(a, &mut cursor[..n], out_idx, out_val, f);
        }
        indptr
    } else if u32::try_from(nnz).is_ok() {
        // Fewer than 2³² entries: 32-bit cursors in an array of their own, half the bytes of
        // `usize` ones (at n = 10⁴ they fit the L1 cache), on the stack up to
        // `STACK_CURSORS` columns; the result's row pointers are written in the pass that
        // turns counts into starts.
        let mut stack = [std::mem::MaybeUninit::<u32>::uninit(); STACK_CURSORS];
        let mut heap: Vec<u32>;
        let cursor: &mut [u32] = if n <= STACK_CURSORS {
            let zeroed = &mut stack[..n];
            zeroed.fill(std::mem::MaybeUninit::new(0));
            // SAFETY: all n entries were written just above; `MaybeUninit<u32>` has the
            // layout of `u32`.
            unsafe { &mut *(std::ptr::from_mut(zeroed) as *mut [u32]) }
        } else {
            heap = alloc::try_vec(OP, (n, m), n, 0)?;
            &mut heap
        };
        for &c in idx {
            // SAFETY: c < n for a valid Csr, and `cursor` has n entries.
            unsafe { *cursor.get_unchecked_mut(c) += 1 };
        }
        let mut indptr: Vec<usize> = alloc::try_with_capacity(OP, (n, m), len)?;
        indptr.push(0);
        let mut start = 0u32;
        // Each count becomes its column's start; the pointer after it is the next start.
        indptr.extend(cursor.iter_mut().map(|c| {
            let count = *c;
            *c = start;
            start += count;
            start as usize
        }));
        // SAFETY: cursor[c] is column c's start for every c < n (above); both buffers hold
        // nnz < 2³² elements.
        unsafe {
            let (out_idx, out_val) = (indices.as_mut_ptr(), data.as_mut_ptr());
            scatter_entries(a, cursor, out_idx, out_val, f);
        }
        indptr
    } else {
        // The counting sort's cursors in the result's row pointers (`counting_cursors`).
        // SAFETY: every column index is below n (a valid Csr).
        let mut indptr = unsafe { alloc::csr::counting_cursors(OP, (n, m), idx, n)? };
        // SAFETY: indptr[c + 1] is column c's start for every c < n (above); both buffers
        // hold nnz elements.
        unsafe {
            let (out_idx, out_val) = (indices.as_mut_ptr(), data.as_mut_ptr());
            scatter_entries(a, &mut indptr[1..=n], out_idx, out_val, f);
        };
        indptr.truncate(len);
        indptr
    };
    // Every slot was written: each column's cursor ran from its start to its end (its count of
    // entries), and these ranges partition 0..nnz.
    debug_assert!(indptr.windows(2).all(|w| w[0] <= w[1]) && indptr.last() == Some(&nnz));
    // SAFETY: all `nnz` elements of both buffers are initialised (above), and the capacity is nnz.
    unsafe {
        indices.set_len(nnz);
        data.set_len(nnz);
    }
    // SAFETY: `indptr` counts each column's entries (n + 1 pointers from 0 to nnz); rows of a
    // are visited in increasing order, so every result row receives its columns (rows of a,
    // below m) strictly increasing.
    Ok(unsafe { Csr::from_parts_unchecked((n, m), indptr, indices, data) })
}

/// The transpose of a Csr that stores every entry (nnz = m·n; its rows are then 0..n in order):
/// the result's pattern is known without counting, and its values are a blocked gather.
///
/// Small operators are often stored in full; at 10 × 10 this skips the counting sort's two
/// passes over the column indices (measured in `docs/benchmarks.md`, "A fully stored Csr").
/// `indices` and `data` are empty with capacity m·n.
fn transpose_full(
    a: &Csr,
    mut indices: Vec<usize>,
    mut data: Vec<c64>,
    f: impl Fn(c64) -> c64,
) -> Result<Csr> {
    let (m, n) = a.shape();
    let len = indptr_len("transpose", (n, m))?;
    let mut indptr: Vec<usize> = alloc::try_with_capacity("transpose", (n, m), len)?;
    // m·n = nnz fits, so every j·m ≤ nnz does.
    indptr.extend((0..len).map(|j| j * m));
    for _ in 0..n {
        indices.extend(0..m);
    }
    // SAFETY: a full `a`'s values are the m × n matrix row-major; `data` has capacity m·n,
    // the result's n × m values column-major with stride m are its m·n slots; distinct buffers.
    unsafe {
        crate::storage::transpose_values((a.data().as_ptr(), n), (m, n), (data.as_mut_ptr(), m), f);
    }
    // SAFETY: `transpose_values` wrote slot j·m + i for every j < n and i < m, so all m·n =
    // capacity slots.
    unsafe { data.set_len(m * n) };
    // SAFETY: row j of the result holds columns 0..m in order (every row of a full `a` stores
    // column j), its values a(i, j) mapped by f; the pointers step by m from 0 to m·n = nnz.
    Ok(unsafe { Csr::from_parts_unchecked((n, m), indptr, indices, data) })
}

/// Up to this many entries, the slots of [`scatter_by_slots`] live on the stack.
const STACK_SLOTS: usize = 1024;

/// A matrix whose sampled rows keep their entries within this distance of the diagonal is
/// treated as banded by [`scatter_entries`].
const BAND: usize = 32;

/// Below this many entries, an Intel CPU scatters even a scattered pattern in one pass; from
/// it, two passes with both stores in the second (never the split order of [`SPLIT_STORES`]).
///
/// The boundaries of [`scatter_by_slots`] were measured on AMD CPUs. On an Intel Xeon
/// (Emerald Rapids, one thread, 10 entries a row at random columns, the fastest of batches,
/// alternated) the one pass beat the slots at 10³ entries (1.88–1.92 against 2.19–2.25 µs),
/// was level or a little ahead at 2·10³, a little behind at 3·10³ (9.65–9.92 against
/// 9.44–10.23 µs), and lost from 10⁴ (42.1–43.1 against 38.1–39.5 µs); the split order lost to
/// the joint one at every size from 10⁴ (10⁵: 757–772 against 665–685 µs).
/// (docs/benchmarks/per_operation.md, "The Csr transpose's walks on Intel".)
const INTEL_ONE_PASS_BELOW: usize = 1 << 11;

/// The counting sort's scatter, by the faster of two walks for `a`'s pattern and the CPU: the
/// slots first ([`scatter_by_slots`]) for scattered patterns; one pass ([`scatter`]) for banded
/// ones (judged on 16 sampled rows), on Intel CPUs below [`INTEL_ONE_PASS_BELOW`] entries, and
/// when the slot array cannot be allocated. A choice of speed only: both walks give the same
/// result.
///
/// # Safety
/// As [`scatter`].
unsafe fn scatter_entries<C: Cursor>(
    a: &Csr,
    cursor: &mut [C],
    out_idx: *mut usize,
    out_val: *mut c64,
    f: impl Fn(c64) -> c64,
) {
    let nnz = a.nnz();
    let intel = crate::simd::intel();
    let one_pass = banded(a) || (intel && nnz < INTEL_ONE_PASS_BELOW);
    let split = !intel && (SPLIT_STORES_FROM..=SPLIT_STORES).contains(&nnz);
    if !one_pass {
        if nnz <= STACK_SLOTS {
            let mut slots = [std::mem::MaybeUninit::<u32>::uninit(); STACK_SLOTS];
            // SAFETY: the caller's contract; the slot array holds nnz < 2³² elements.
            return unsafe {
                scatter_by_slots(a, cursor, &mut slots[..nnz], split, out_idx, out_val, f)
            };
        }
        let mut slots = Vec::<u32>::new();
        if u32::try_from(nnz).is_ok() && slots.try_reserve_exact(nnz).is_ok() {
            let slots = &mut slots.spare_capacity_mut()[..nnz];
            // SAFETY: the caller's contract; the slot array holds nnz < 2³² elements.
            return unsafe { scatter_by_slots(a, cursor, slots, split, out_idx, out_val, f) };
        }
    }
    // SAFETY: the caller's contract.
    unsafe { scatter(a, cursor, out_idx, out_val, f) }
}

/// Whether `a` has more than 2·[`BAND`] columns and 16 of its rows, evenly spaced, keep every
/// entry within [`BAND`] of the diagonal. (A matrix narrower than that counts as scattered: on
/// a 10 × 10 tridiagonal the two passes were as fast as one.)
fn banded(a: &Csr) -> bool {
    let ((m, n), p, idx) = (a.shape(), a.indptr(), a.indices());
    let step = m.div_ceil(16).max(1);
    n > 2 * BAND
        && (0..m)
            .step_by(step)
            .all(|i| idx[p[i]..p[i + 1]].iter().all(|&c| c.abs_diff(i) <= BAND))
}

/// A counting sort's cursor: a slot in `0..nnz`, `usize` or, below 2³² entries, `u32`.
trait Cursor: Copy {
    /// The slot.
    fn at(self) -> usize;
    /// The next slot (never past nnz, so never overflowing).
    fn next(self) -> Self;
}

impl Cursor for usize {
    #[inline(always)]
    fn at(self) -> usize {
        self
    }
    #[inline(always)]
    fn next(self) -> Self {
        self + 1
    }
}

impl Cursor for u32 {
    #[inline(always)]
    fn at(self) -> usize {
        self as usize
    }
    #[inline(always)]
    fn next(self) -> Self {
        self + 1
    }
}

/// From [`SPLIT_STORES_FROM`] to this many entries, [`scatter_by_slots`] stores the row
/// indices in its first pass and the values in its second; outside that range, both in the
/// second.
///
/// Each pass then has one stream of scattered stores, not two, and fewer lines are open at
/// once: n = 1000 (10 per row) 29 → 24 µs, n = 10⁴ 557–624 → 453–486 µs, n = 3·10⁴ 2.78 →
/// 2.33 ms; at n = 5·10⁴ the two orders tie, and at n = 10⁵ (10⁶ entries) the split one lost
/// 13.3 → 14.8–15.7 ms (measured outside the crate, same walks; docs/benchmarks.md).
const SPLIT_STORES: usize = 1 << 19;

/// Below this many entries (all in the L1 and L2 caches) the split order of
/// [`SPLIT_STORES`] lost 10–15 % (n = 30 to 300, 10 per row); at n = 420 the two tie.
const SPLIT_STORES_FROM: usize = 1 << 12;

/// [`scatter`] in two passes, each with its own stream of scattered stores, for scattered
/// patterns.
///
/// With `split` (the caller's choice: from [`SPLIT_STORES_FROM`] to [`SPLIT_STORES`] entries,
/// except on Intel CPUs, [`INTEL_ONE_PASS_BELOW`]): row by row, each entry's slot
/// (advancing its column's cursor, recorded in `slots`) with its row index stored there; then
/// the values, in one flat pass over `slots`. Otherwise: first every entry's slot (the cursor
/// walk alone, its stores to a sequential array), then both stores of each entry.
///
/// In the one-pass walk each cursor load waits on the scattered stores before it (whose
/// addresses come from the previous loads); apart, neither pass waits on the other's stores.
/// Measured on an AMD EPYC, scattered patterns (10 per row at random columns; one pass → two,
/// per call):
/// 10 × 10 adjoint 0.51 → 0.32–0.34 µs, 30 × 30 1.09 → 0.62 µs, n = 100 3.1–3.9 → 1.9–2.3 µs,
/// n = 1000 27–28 → 25 µs, n = 10⁴ 426–441 → 364–397 µs, n = 10⁵ 12.8–13.9 → 11.0–11.2 ms,
/// n = 10⁶ 289–316 → 192–200 ms. On a tridiagonal of n ≥ 100 the extra pass cost 6–25 %
/// (n = 100 to 10⁶), so banded patterns keep the one pass.
///
/// # Safety
/// As [`scatter`]; and `slots` is nnz(a) long, nnz(a) < 2³².
unsafe fn scatter_by_slots<C: Cursor>(
    a: &Csr,
    cursor: &mut [C],
    slots: &mut [std::mem::MaybeUninit<u32>],
    split: bool,
    out_idx: *mut usize,
    out_val: *mut c64,
    f: impl Fn(c64) -> c64,
) {
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    debug_assert_eq!(slots.len(), idx.len());
    let cur = cursor.as_mut_ptr();
    if split {
        for i in 0..a.shape().0 {
            for k in p[i]..p[i + 1] {
                // SAFETY: k < nnz, the length of `idx` and `slots`; c is below the number of
                // columns, the length of `cursor` (a valid Csr); the slot is below nnz < 2³²
                // and inside `out_idx` (the caller's counts, as in `scatter`), taken by one
                // entry.
                unsafe {
                    let c = *idx.get_unchecked(k);
                    let s = *cur.add(c);
                    *cur.add(c) = s.next();
                    slots.get_unchecked_mut(k).write(s.at() as u32);
                    out_idx.add(s.at()).write(i);
                }
            }
        }
        for (slot, v) in slots.iter().zip(val) {
            // SAFETY: every slot was written above, inside `out_val`, one per entry.
            unsafe { out_val.add(slot.assume_init() as usize).write(f(*v)) };
        }
        return;
    }
    for (slot, &c) in slots.iter_mut().zip(idx) {
        // SAFETY: c is below the number of columns, the length of `cursor` (a valid Csr);
        // the slot is below nnz < 2³² (the caller's counts and bound).
        unsafe {
            let s = *cur.add(c);
            *cur.add(c) = s.next();
            slot.write(s.at() as u32);
        }
    }
    for i in 0..a.shape().0 {
        for k in p[i]..p[i + 1] {
            // SAFETY: k < nnz, the length of `slots`, all written above; the slot is inside
            // both buffers (as in `scatter`), and each is taken by one entry.
            unsafe {
                let s = slots.get_unchecked(k).assume_init() as usize;
                out_idx.add(s).write(i);
                out_val.add(s).write(f(*val.get_unchecked(k)));
            }
        }
    }
}

/// The counting sort's scatter: entry (i, c, v) of `a` goes to slot `cursor[c]` (then
/// advanced) as column index i and value f(v), rows in increasing order.
///
/// Raw pointers rather than `MaybeUninit` slices: 7 % faster at n = 1000 and 12 % at n = 10,
/// measured in one process (the slice form's zipped iterators cost more per entry).
///
/// # Safety
/// `cursor` has one slot per column of `a`, and `cursor[c]` is the start of column c's range
/// in `0..nnz(a)`, the ranges partitioning it as `a`'s column counts do; `out_idx` and
/// `out_val` are valid for writes of nnz(a) elements.
unsafe fn scatter<C: Cursor>(
    a: &Csr,
    cursor: &mut [C],
    out_idx: *mut usize,
    out_val: *mut c64,
    f: impl Fn(c64) -> c64,
) {
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    let cursor = cursor.as_mut_ptr();
    for i in 0..a.shape().0 {
        for k in p[i]..p[i + 1] {
            // SAFETY: k < nnz (a valid Csr's row pointers), c below the number of columns,
            // the length of `cursor`; cursor[c] < column c's end ≤ nnz until column c's last
            // entry is placed (the caller's counts), so the slot is inside both buffers. The
            // cursor is read once and advanced before the writes, so the compiler need not
            // reload it after them.
            unsafe {
                let c = *idx.get_unchecked(k);
                let slot = *cursor.add(c);
                *cursor.add(c) = slot.next();
                out_idx.add(slot.at()).write(i);
                out_val.add(slot.at()).write(f(*val.get_unchecked(k)));
            }
        }
    }
}

/// `aᵀ` or `aᴴ` of a GpuCsr: cuSPARSE `csr2cscEx2`.
pub(crate) fn transpose_gpucsr(a: &GpuCsr, conj: bool) -> Result<GpuCsr> {
    if crate::gpu::sparse_available() {
        return a.transpose(conj);
    }
    GpuCsr::from_csr(&transpose_csr(&a.to_csr()?, conj)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counting sort's shifted row pointers at the edges: no rows, no columns, one column
    /// (the last column's count sits in the dropped slot), empty columns between full ones, and
    /// column counts on either side of [`STACK_COLUMNS`].
    #[test]
    fn csr_transpose_at_the_edges_matches_the_definition() {
        let shapes = [
            (0, 0),
            (0, 3),
            (3, 0),
            (1, 1),
            (4, 1),
            (1, 4),
            (5, 7),
            (7, 5),
            // Either side of the stack cursors' limit, and a heap-cursor matrix; few columns
            // with more entries than the stack slots (about 1 500) take the one-pass scatter.
            (40, STACK_COLUMNS - 4),
            (3, STACK_COLUMNS - 1),
            (3, STACK_COLUMNS),
            (70, STACK_COLUMNS + 1),
            (2, 200),
        ];
        for (m, n) in shapes {
            let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
            for i in 0..m {
                for j in 0..n {
                    // Columns 1 and 3 stay empty (when there are more than one).
                    if (n == 1 || (j != 1 && j != 3)) && (i + 2 * j) % 3 != 1 {
                        rows.push(i);
                        cols.push(j);
                        vals.push(c64::new(i as f64, j as f64 + 0.5));
                    }
                }
            }
            let a = Csr::from_triplets((m, n), &rows, &cols, &vals).unwrap();
            for conj in [false, true] {
                let t = transpose_csr(&a, conj).unwrap();
                assert_eq!(t.shape(), (n, m));
                assert_eq!(t.nnz(), a.nnz());
                assert!(t.as_csmat().check_compressed_structure().is_ok());
                for i in 0..m {
                    for j in 0..n {
                        let want = if conj {
                            a.get(i, j).conj()
                        } else {
                            a.get(i, j)
                        };
                        assert_eq!(t.get(j, i), want, "({m}, {n}) entry ({i}, {j})");
                    }
                }
            }
        }
    }

    /// Fully stored patterns take `transpose_full`: shapes either side of its column block,
    /// against the definition and the counting sort (reached through a copy with one entry
    /// dropped, then compared on the entries both hold).
    #[test]
    fn csr_transpose_of_a_full_pattern_matches_the_definition() {
        for (m, n) in [
            (1, 1),
            (1, 9),
            (9, 1),
            (10, 10),
            (3, 8),
            (8, 3),
            (5, 17),
            (17, 5),
        ] {
            let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
            for i in 0..m {
                for j in 0..n {
                    rows.push(i);
                    cols.push(j);
                    vals.push(c64::new(i as f64 + 1.0, -(j as f64) - 0.25));
                }
            }
            let a = Csr::from_triplets((m, n), &rows, &cols, &vals).unwrap();
            assert_eq!(a.nnz(), m * n);
            let gap = Csr::from_triplets((m, n), &rows[1..], &cols[1..], &vals[1..]).unwrap();
            for conj in [false, true] {
                let t = transpose_csr(&a, conj).unwrap();
                assert_eq!(t.shape(), (n, m));
                assert!(t.as_csmat().check_compressed_structure().is_ok());
                let tg = transpose_csr(&gap, conj).unwrap();
                for i in 0..m {
                    for j in 0..n {
                        let v = a.get(i, j);
                        let want = if conj { v.conj() } else { v };
                        assert_eq!(t.get(j, i), want, "({m}, {n}) entry ({i}, {j})");
                        if (i, j) != (0, 0) {
                            assert_eq!(tg.get(j, i), want);
                        }
                    }
                }
            }
        }
    }

    /// The column copies of `transpose_dense` on shapes whose rows are not a multiple of the
    /// SIMD width (padded buffer columns), in both layouts, serial and split over workers.
    #[test]
    fn dense_transpose_copies_every_column_in_both_layouts() {
        for (m, n) in [(1, 1), (3, 5), (5, 3), (7, 40), (40, 7), (0, 4)] {
            let v: Vec<c64> = (0..m * n)
                .map(|k| c64::new(k as f64, -(k as f64) / 3.0))
                .collect();
            for a in [
                Dense::from_col_major(m, n, &v).unwrap(),
                Dense::from_row_major(m, n, &v).unwrap(),
            ] {
                for force in [false, true] {
                    crate::engine::set_force_parallel(force);
                    let t = transpose_dense(&a).unwrap();
                    crate::engine::set_force_parallel(false);
                    assert_eq!(t.shape(), (n, m));
                    for i in 0..m {
                        for j in 0..n {
                            assert_eq!(t.get(j, i), a.get(i, j), "{m}×{n} ({i}, {j})");
                        }
                    }
                }
            }
        }
    }

    /// The walks give the same transpose on scattered patterns of several sizes (one pass; the
    /// slots with the stores together or split) on either side of `INTEL_ONE_PASS_BELOW` and
    /// `SPLIT_STORES_FROM`, whichever of them this CPU takes in
    /// `transpose_csr` (`INTEL_ONE_PASS_BELOW`), and that is the one `transpose_csr` returns.
    #[test]
    fn the_walks_agree_on_every_cpu() {
        for (n, per) in [(10, 3), (100, 10), (300, 10), (3000, 10)] {
            let t: Vec<(usize, usize)> = (0..n)
                .flat_map(|i| (0..per).map(move |k| (i, (i * 7919 + k * 104_729 + k * k) % n)))
                .collect();
            let (rows, cols): (Vec<usize>, Vec<usize>) = t.iter().copied().unzip();
            let vals: Vec<c64> = (0..t.len())
                .map(|k| c64::new(k as f64, 0.5 - k as f64))
                .collect();
            let a = Csr::from_triplets((n, n), &rows, &cols, &vals).unwrap();
            let nnz = a.nnz();
            assert!(!banded(&a));
            let mut starts = vec![0u32; n];
            for &c in a.indices() {
                starts[c] += 1;
            }
            let mut start = 0;
            for s in &mut starts {
                (*s, start) = (start, start + *s);
            }
            // 0: one pass; 1: the slots, both stores in the second pass; 2: the split order.
            let walk = |how: u8| {
                let (mut idx, mut val) =
                    (vec![usize::MAX; nnz], vec![c64::new(f64::NAN, 0.0); nnz]);
                let mut cursor = starts.clone();
                let mut slots = vec![std::mem::MaybeUninit::<u32>::uninit(); nnz];
                // SAFETY: `cursor` holds each column's start from a's counts; both buffers and
                // the slot array hold nnz < 2³² elements.
                unsafe {
                    if how > 0 {
                        let (i, v) = (idx.as_mut_ptr(), val.as_mut_ptr());
                        let split = how == 2;
                        scatter_by_slots(
                            &a,
                            &mut cursor,
                            &mut slots,
                            split,
                            i,
                            v,
                            crate::simd::conj,
                        );
                    } else {
                        scatter(
                            &a,
                            &mut cursor,
                            idx.as_mut_ptr(),
                            val.as_mut_ptr(),
                            crate::simd::conj,
                        );
                    }
                }
                (idx, val)
            };
            let one = walk(0);
            assert_eq!(one, walk(1), "n = {n}");
            assert_eq!(one, walk(2), "n = {n}");
            let h = transpose_csr(&a, true).unwrap();
            assert_eq!((h.indices(), h.data()), (&one.0[..], &one.1[..]), "n = {n}");
        }
    }

    /// Both scatters on patterns that pick each of them: a banded matrix (one pass), scattered
    /// ones with stack and heap slot arrays (two passes, the stores together or split, on
    /// either side of `SPLIT_STORES_FROM` and `SPLIT_STORES`; one pass on Intel CPUs below
    /// `INTEL_ONE_PASS_BELOW`); each against the definition.
    #[test]
    fn both_scatters_match_the_definition() {
        let band = |n: usize| {
            let t: Vec<(usize, usize)> = (0..n)
                .flat_map(|i| (i.saturating_sub(2)..(i + 3).min(n)).map(move |j| (i, j)))
                .collect();
            (n, t)
        };
        let scattered = |n: usize, per: usize| {
            let t: Vec<(usize, usize)> = (0..n)
                .flat_map(|i| (0..per).map(move |k| (i, (i * 7919 + k * 104_729) % n)))
                .collect();
            (n, t)
        };
        for (banded_want, (n, mut t)) in [
            (true, band(300)),
            (false, band(40)),
            (false, scattered(50, 10)),
            (false, scattered(400, 10)),
            // The split order of the stores (cursors on the stack, then on the heap), and past
            // its upper bound the joint one again: 560 000 entries over 4000 columns, fewer
            // than the column blocks need (`blocked::BLOCKED_MIN_COLUMNS`).
            (false, scattered(1000, 10)),
            (false, scattered(3000, 10)),
            (false, scattered(4000, 140)),
        ] {
            t.sort_unstable();
            t.dedup();
            let vals: Vec<c64> = (0..t.len())
                .map(|k| c64::new(k as f64, 1.0 - k as f64))
                .collect();
            let (rows, cols): (Vec<usize>, Vec<usize>) = t.iter().copied().unzip();
            let a = Csr::from_triplets((n, n), &rows, &cols, &vals).unwrap();
            assert_eq!(banded(&a), banded_want, "n = {n}");
            assert!(a.nnz() < blocked::blocked_from() || n < blocked::BLOCKED_MIN_COLUMNS);
            let h = transpose_csr(&a, true).unwrap();
            assert!(h.as_csmat().check_compressed_structure().is_ok());
            for (&(i, j), v) in t.iter().zip(&vals) {
                assert_eq!(h.get(j, i), v.conj(), "n = {n} ({i}, {j})");
            }
            assert_eq!(h.nnz(), a.nnz());
        }
    }
}
