//! Allocation of a Csr's arrays: their size, the room reserved for a result whose entries are
//! not known in advance, and the checks against the memory available now.

use super::{check_memory, reserve, try_vec};
use crate::engine;
use crate::error::{Error, Result};
use crate::scalar::c64;

/// Bytes of the arrays of a Csr with `ptrs` row pointers and `nnz` entries.
#[inline]
pub(crate) fn csr_bytes(ptrs: usize, nnz: usize) -> u128 {
    let word = std::mem::size_of::<usize>() as u128;
    (ptrs as u128 * word).saturating_add(nnz as u128 * (word + std::mem::size_of::<c64>() as u128))
}

/// How many entries a Csr result with `ptrs` row pointers may be counted to before a pass that
/// counts them ahead of reserving them (the parallel Csr·Csr) stops: past it, [`check_memory`]
/// would refuse the result now. `bound` is an upper bound on the entries that the caller
/// knows; a result that small is never checked, and the room is then `usize::MAX`. Without a
/// reading of the memory available, the room is what a `Vec` of `c64` can hold at most.
/// Returns the room with the bytes available, if read.
pub(crate) fn csr_room(ptrs: usize, bound: usize) -> (usize, Option<u64>) {
    if csr_bytes(ptrs, bound) < engine::PROBE_BYTES as u128 {
        return (usize::MAX, None);
    }
    let entry = csr_bytes(0, 1);
    let pointers = csr_bytes(ptrs, 0);
    // Results below the probe are never refused; no array can pass `isize::MAX` bytes.
    let unchecked = (engine::PROBE_BYTES as u128).saturating_sub(pointers) / entry;
    let reservable = isize::MAX as u128 / std::mem::size_of::<c64>() as u128;
    let available = engine::available_memory();
    let room = available.map_or(reservable, |av| {
        u128::from(av - av / 16).saturating_sub(pointers) / entry
    });
    let room = room.max(unchecked).min(reservable);
    (usize::try_from(room).unwrap_or(usize::MAX), available)
}

/// The error for a Csr result whose count passed its [`csr_room`]: it has at least `counted`
/// entries and `ptrs` row pointers, more than fits in the `available` bytes read then.
#[cold]
pub(crate) fn csr_past_room(
    op: &str,
    shape: (usize, usize),
    ptrs: usize,
    counted: usize,
    available: Option<u64>,
) -> Error {
    let room = match available {
        Some(av) => format!(
            "the {av} bytes of memory available (MemAvailable and free swap, within the \
             process's cgroup limits), less a sixteenth kept in reserve"
        ),
        None => "the largest array that can be reserved".to_owned(),
    };
    Error::TooLarge {
        op: op.to_owned(),
        shape,
        bytes: csr_bytes(ptrs, counted),
        limit: None,
        reason: format!(
            "the result has at least {counted} entries (counting stopped there), more than fit \
             in {room}"
        ),
    }
}

/// The three arrays of a Csr result, empty, with room for `ptrs` row pointers and `nnz`
/// entries: their sum is checked against the memory available before any is reserved (one at
/// a time, each would pass while together they do not fit).
///
/// # Errors
/// [`Error::TooLarge`] as [`check_memory`] and [`try_with_capacity`].
#[inline(always)]
pub(crate) fn csr_buffers(
    op: &str,
    shape: (usize, usize),
    ptrs: usize,
    nnz: usize,
) -> Result<(Vec<usize>, Vec<usize>, Vec<c64>)> {
    check_memory(op, shape, csr_bytes(ptrs, nnz))?;
    // The sum was checked: the arrays skip the check each would make alone.
    Ok((
        reserve(op, shape, ptrs)?,
        reserve(op, shape, nnz)?,
        reserve(op, shape, nnz)?,
    ))
}

/// The cursors of a counting sort by `keys` (each below `n`), in place in the row pointers it
/// builds: `n + 2` entries where entry `k + 1` is the start of key `k`'s run. A scatter that
/// advances entry `k + 1` past each element it places leaves it at the run's end, which is
/// the row pointer that entry must hold; the caller then truncates to `n + 1` (entry `n + 1`
/// holds the last key's count, not a pointer). QuTiP's trick: no second array of cursors.
///
/// # Safety
/// Every key is below `n`.
///
/// # Errors
/// [`Error::TooLarge`] as [`try_vec`] (`n + 2` entries, saturating).
pub(crate) unsafe fn counting_cursors(
    op: &str,
    shape: (usize, usize),
    keys: &[usize],
    n: usize,
) -> Result<Vec<usize>> {
    let mut at = try_vec(op, shape, n.saturating_add(2), 0usize)?;
    for &k in keys {
        // SAFETY: k < n (the caller's contract), and `at` has n + 2 entries.
        unsafe { *at.get_unchecked_mut(k + 2) += 1 };
    }
    for j in 1..n {
        at[j + 1] += at[j];
    }
    Ok(at)
}
