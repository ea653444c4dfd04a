//! polymat's own communicator and its checked collectives, and the agreement that turns a
//! failure on one rank into an error on every rank.
//!
//! **Why not the `mpi` crate's collectives.** The distributed kinds communicate on a duplicate
//! of `MPI_COMM_WORLD` whose error handler is `MPI_ERRORS_RETURN`, so an MPI error is a return
//! code instead of the default handler's abort of every rank. The `mpi` crate discards the
//! return codes of its collectives (it relies on the aborting handler), so the few collectives
//! polymat uses are called here through its raw bindings, each code checked.
//!
//! **Agreement.** A rank that fails (a bad argument, an allocation over the dense limit, a
//! panicking kernel) must not leave the others waiting in the next collective. Every place
//! where a rank can fail is followed by an [`agree`] before the next collective: one small
//! `MPI_Allreduce` carrying "failed?", the first failing rank and the call's shapes (so ranks
//! that disagree about the global shapes fail together instead of exchanging mismatched
//! buffers). When it reports a failure, that rank's message is broadcast and every rank
//! returns an error; a failed agreement ends the call on every rank, so all ranks have made
//! the same collectives. A rank that fails skips to its next agreement, which the others reach
//! wherever they are — every agreement is the same allreduce. The dispatcher adds one
//! agreement at the end of each call on a distributed kind (`dispatch::collective`), covering
//! conversions, users' kernels and panics.

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void};
use std::sync::OnceLock;

use ::mpi::ffi;

use crate::error::{Error, Result};

/// Length of a broadcast failure message, in bytes (longer messages are cut at a character).
const MESSAGE: usize = 1024;
/// Shape values carried by an agreement (two shapes).
const SHAPES: usize = 4;

/// polymat's duplicate of the world communicator, with `MPI_ERRORS_RETURN`.
struct Raw(ffi::MPI_Comm);

// SAFETY: a communicator handle is an opaque process-wide value; MPI itself decides from which
// threads it may be used (the distributed kinds are used from the thread that initialised MPI,
// as the module documents), and the handle is never freed while the process runs.
unsafe impl Send for Raw {}
// SAFETY: as for `Send`: the handle is only read.
unsafe impl Sync for Raw {}

static COMM: OnceLock<std::result::Result<Raw, String>> = OnceLock::new();

thread_local! {
    /// Set when an agreement on this thread reported a failure: the call in progress must end
    /// without further agreements (every rank knows).
    static AGREED_FAILURE: Cell<bool> = const { Cell::new(false) };
}

/// Duplicates `MPI_COMM_WORLD` and sets `MPI_ERRORS_RETURN` on the copy (once per process;
/// MPI must be initialised). Collective over the world.
pub(super) fn init() -> Result<()> {
    COMM.get_or_init(|| {
        // SAFETY: MPI is initialised (`mpi::init` called `mpi::initialize` first); the world
        // communicator is valid for the process's life.
        let world = unsafe { ffi::RSMPI_COMM_WORLD };
        let mut dup: ffi::MPI_Comm = world;
        // SAFETY: `dup` is a valid place for the new handle; the call is collective and every
        // rank makes it at `mpi::init`.
        let code = unsafe { ffi::MPI_Comm_dup(world, &mut dup) };
        if code != ffi::MPI_SUCCESS as c_int {
            return Err(format!("MPI_Comm_dup: {}", error_string(code)));
        }
        // SAFETY: `dup` is the communicator just created; `RSMPI_ERRORS_RETURN` is MPI's
        // predefined handler.
        let code = unsafe { ffi::MPI_Comm_set_errhandler(dup, ffi::RSMPI_ERRORS_RETURN) };
        if code != ffi::MPI_SUCCESS as c_int {
            return Err(format!("MPI_Comm_set_errhandler: {}", error_string(code)));
        }
        Ok(Raw(dup))
    })
    .as_ref()
    .map(|_| ())
    .map_err(|e| Error::Distributed {
        op: "mpi::init".into(),
        rank: 0,
        reason: e.clone(),
    })
}

/// MPI's message for an error code.
fn error_string(code: c_int) -> String {
    let mut buf = [0 as c_char; ffi::MPI_MAX_ERROR_STRING as usize + 1];
    let mut len: c_int = 0;
    // SAFETY: `buf` holds `MPI_MAX_ERROR_STRING` characters as the call requires.
    let ok = unsafe { ffi::MPI_Error_string(code, buf.as_mut_ptr(), &mut len) };
    if ok != ffi::MPI_SUCCESS as c_int {
        return format!("MPI error code {code}");
    }
    let bytes: Vec<u8> = buf[..len.clamp(0, ffi::MPI_MAX_ERROR_STRING as c_int) as usize]
        .iter()
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A value type the collectives carry.
pub(crate) trait Item: Copy + Default {
    fn datatype() -> ffi::MPI_Datatype;
}

macro_rules! item {
    ($t:ty, $d:ident) => {
        impl Item for $t {
            fn datatype() -> ffi::MPI_Datatype {
                // SAFETY: a predefined datatype handle, valid while MPI is initialised.
                unsafe { ffi::$d }
            }
        }
    };
}
item!(f64, RSMPI_DOUBLE);
item!(i64, RSMPI_INT64_T);
item!(u64, RSMPI_UINT64_T);
item!(u8, RSMPI_UINT8_T);

/// A reduction.
#[derive(Clone, Copy)]
pub(crate) enum Op {
    Sum,
    Max,
}

/// The communicator of one call: polymat's handle, this rank and the number of ranks.
pub(crate) struct Comm {
    raw: ffi::MPI_Comm,
    pub(crate) rank: usize,
    pub(crate) size: usize,
}

impl Comm {
    /// polymat's communicator; before [`init`] (a bug: the kinds cannot exist before it) the
    /// world communicator, whose errors abort.
    pub(crate) fn get() -> Comm {
        let raw = match COMM.get() {
            Some(Ok(r)) => r.0,
            // SAFETY: as in `init`.
            _ => unsafe { ffi::RSMPI_COMM_WORLD },
        };
        let (mut rank, mut size) = (0 as c_int, 1 as c_int);
        // SAFETY: `raw` is a valid communicator; both outputs are valid places. These two
        // calls only read the communicator's attributes and cannot fail on a valid handle.
        unsafe {
            ffi::MPI_Comm_rank(raw, &mut rank);
            ffi::MPI_Comm_size(raw, &mut size);
        }
        Comm {
            raw,
            rank: usize::try_from(rank).unwrap_or(0),
            size: usize::try_from(size).unwrap_or(1).max(1),
        }
    }

    fn check(&self, op: &str, call: &str, code: c_int) -> Result<()> {
        if code == ffi::MPI_SUCCESS as c_int {
            return Ok(());
        }
        Err(Error::Distributed {
            op: op.to_owned(),
            rank: self.rank,
            reason: format!("{call} failed: {}", error_string(code)),
        })
    }

    /// `MPI_Allreduce` of `send` into `recv` (same lengths).
    pub(crate) fn all_reduce<T: Item>(
        &self,
        op: &str,
        send: &[T],
        recv: &mut [T],
        how: Op,
    ) -> Result<()> {
        debug_assert_eq!(send.len(), recv.len());
        let n = count(op, send.len().min(recv.len()))?;
        // SAFETY: predefined operation handles, valid while MPI is initialised.
        let mpi_op = unsafe {
            match how {
                Op::Sum => ffi::RSMPI_SUM,
                Op::Max => ffi::RSMPI_MAX,
            }
        };
        // SAFETY: both buffers hold `n` values of `T`'s datatype; `self.raw` is valid.
        let code = unsafe {
            ffi::MPI_Allreduce(
                send.as_ptr().cast::<c_void>(),
                recv.as_mut_ptr().cast::<c_void>(),
                n,
                T::datatype(),
                mpi_op,
                self.raw,
            )
        };
        self.check(op, "MPI_Allreduce", code)
    }

    /// `MPI_Alltoall` of one value per rank.
    pub(crate) fn all_to_all<T: Item>(&self, op: &str, send: &[T], recv: &mut [T]) -> Result<()> {
        if send.len() != self.size || recv.len() != self.size {
            return Err(self.length(op, "MPI_Alltoall"));
        }
        // SAFETY: both buffers hold one value per rank; `self.raw` is valid.
        let code = unsafe {
            ffi::MPI_Alltoall(
                send.as_ptr().cast::<c_void>(),
                1,
                T::datatype(),
                recv.as_mut_ptr().cast::<c_void>(),
                1,
                T::datatype(),
                self.raw,
            )
        };
        self.check(op, "MPI_Alltoall", code)
    }

    /// `MPI_Alltoallv`: `send_counts[r]` values to rank `r` from `send` at the running offsets,
    /// `recv_counts[r]` from rank `r` into `recv`.
    pub(crate) fn all_to_all_v<T: Item>(
        &self,
        op: &str,
        send: &[T],
        send_counts: &[i32],
        recv: &mut [T],
        recv_counts: &[i32],
    ) -> Result<()> {
        let (sd, rd) = (displacements(send_counts), displacements(recv_counts));
        if send_counts.len() != self.size
            || recv_counts.len() != self.size
            || total(send_counts) != Some(send.len())
            || total(recv_counts) != Some(recv.len())
        {
            return Err(self.length(op, "MPI_Alltoallv"));
        }
        // SAFETY: the counts and offsets describe pieces inside `send` and `recv` (checked
        // just above: the counts sum to the lengths, one count per rank).
        let code = unsafe {
            ffi::MPI_Alltoallv(
                send.as_ptr().cast::<c_void>(),
                send_counts.as_ptr(),
                sd.as_ptr(),
                T::datatype(),
                recv.as_mut_ptr().cast::<c_void>(),
                recv_counts.as_ptr(),
                rd.as_ptr(),
                T::datatype(),
                self.raw,
            )
        };
        self.check(op, "MPI_Alltoallv", code)
    }

    /// `MPI_Allgatherv`: every rank's `send` concatenated in rank order into `recv`, rank `r`
    /// contributing `counts[r]` values.
    pub(crate) fn all_gather_v<T: Item>(
        &self,
        op: &str,
        send: &[T],
        recv: &mut [T],
        counts: &[i32],
    ) -> Result<()> {
        let displs = displacements(counts);
        if counts.len() != self.size
            || total(counts) != Some(recv.len())
            || usize::try_from(counts[self.rank]).ok() != Some(send.len())
        {
            return Err(self.length(op, "MPI_Allgatherv"));
        }
        let n = count(op, send.len())?;
        // SAFETY: `send` holds `n` values, `recv` the sum of `counts` at `displs` (checked).
        let code = unsafe {
            ffi::MPI_Allgatherv(
                send.as_ptr().cast::<c_void>(),
                n,
                T::datatype(),
                recv.as_mut_ptr().cast::<c_void>(),
                counts.as_ptr(),
                displs.as_ptr(),
                T::datatype(),
                self.raw,
            )
        };
        self.check(op, "MPI_Allgatherv", code)
    }

    /// Sends `send` in pieces, `send_counts[r]` values to rank `r`, and returns what every rank
    /// sent here (in rank order) with how many came from each: the counts travel first
    /// (`MPI_Alltoall`), then the values (`MPI_Alltoallv`). Every step where this rank can fail
    /// (a count past `i32`, the receive buffer's allocation) is agreed on before the next
    /// collective. Collective.
    pub(crate) fn exchange<T: Item>(
        &self,
        op: &str,
        send: &[T],
        send_counts: &[usize],
        shapes: [usize; SHAPES],
    ) -> Result<(Vec<T>, Vec<usize>)> {
        let sc = agree(op, counts_i32(op, send_counts), shapes)?;
        let offered: Vec<u64> = sc.iter().map(|&c| c as u64).collect();
        let mut announced = vec![0u64; self.size];
        self.all_to_all(op, &offered, &mut announced)?;
        let prepared = (|| {
            let recv_counts: Vec<usize> = announced
                .iter()
                .map(|&c| usize::try_from(c).map_err(|_| self.length(op, "MPI_Alltoall")))
                .collect::<Result<_>>()?;
            let rc = counts_i32(op, &recv_counts)?;
            let total = recv_counts.iter().sum::<usize>();
            let recv = crate::storage::alloc::try_vec(op, (total, 1), total, T::default())?;
            Ok((recv_counts, rc, recv))
        })();
        let (recv_counts, rc, mut recv) = agree(op, prepared, shapes)?;
        self.all_to_all_v(op, send, &sc, &mut recv, &rc)?;
        Ok((recv, recv_counts))
    }

    /// `MPI_Bcast` of `buf` from `root`.
    fn broadcast<T: Item>(&self, op: &str, buf: &mut [T], root: usize) -> Result<()> {
        let n = count(op, buf.len())?;
        let root = c_int::try_from(root).map_err(|_| self.length(op, "MPI_Bcast"))?;
        // SAFETY: `buf` holds `n` values on every rank (a fixed length); `root` is a rank.
        let code = unsafe {
            ffi::MPI_Bcast(
                buf.as_mut_ptr().cast::<c_void>(),
                n,
                T::datatype(),
                root,
                self.raw,
            )
        };
        self.check(op, "MPI_Bcast", code)
    }

    fn length(&self, op: &str, call: &str) -> Error {
        Error::Distributed {
            op: op.to_owned(),
            rank: self.rank,
            reason: format!("{call}: buffer lengths do not match the counts"),
        }
    }
}

/// An MPI count (`int`), an error past `i32::MAX`.
pub(crate) fn count(op: &str, n: usize) -> Result<c_int> {
    c_int::try_from(n).map_err(|_| {
        Error::argument(
            op,
            format!("{n} values exceed one MPI message (i32 counts)"),
        )
    })
}

/// MPI counts (`int`), an error past `i32::MAX`.
fn counts_i32(op: &str, c: &[usize]) -> Result<Vec<i32>> {
    c.iter().map(|&n| count(op, n)).collect()
}

/// The offsets of consecutive pieces of the given sizes (an MPI `v` collective's `displs`).
fn displacements(counts: &[i32]) -> Vec<i32> {
    counts
        .iter()
        .scan(0i32, |acc, &c| {
            let d = *acc;
            *acc = acc.saturating_add(c);
            Some(d)
        })
        .collect()
}

fn total(counts: &[i32]) -> Option<usize> {
    counts
        .iter()
        .try_fold(0usize, |acc, &c| acc.checked_add(usize::try_from(c).ok()?))
        .filter(|&t| i32::try_from(t).is_ok())
}

/// Agrees with every rank on the outcome so far of the call `op`: `local` if every rank
/// succeeded and all hold the same `shapes`, an error on every rank otherwise. Collective.
///
/// # Errors
/// This rank's own error if it failed; [`Error::Distributed`] with the first failing rank's
/// message if another rank failed, or when the ranks disagree on `shapes` or MPI fails.
pub(crate) fn agree<T>(op: &str, local: Result<T>, shapes: [usize; SHAPES]) -> Result<T> {
    match verdict(op, local.as_ref().err(), shapes) {
        Ok(()) => local,
        Err(e) => Err(e),
    }
}

/// [`agree`] on an outcome: `Ok(())` when the caller should return its own outcome (every
/// rank succeeded, or this rank failed and keeps its error), `Err` with what to return instead.
fn verdict(op: &str, failed: Option<&Error>, shapes: [usize; SHAPES]) -> Result<()> {
    let comm = Comm::get();
    let clamp = |v: usize| i64::try_from(v).unwrap_or(i64::MAX);
    let mut mine = [0i64; 2 + 2 * SHAPES];
    mine[0] = i64::from(failed.is_some());
    // The max of `-rank` over the failing ranks is minus the first failing rank.
    mine[1] = if failed.is_some() {
        -clamp(comm.rank)
    } else {
        -clamp(comm.size)
    };
    for (i, &s) in shapes.iter().enumerate() {
        mine[2 + i] = clamp(s);
        mine[2 + SHAPES + i] = -clamp(s);
    }
    let mut all = [0i64; 2 + 2 * SHAPES];
    if let Err(e) = comm.all_reduce(op, &mine, &mut all, Op::Max) {
        AGREED_FAILURE.set(true);
        return match failed {
            Some(_) => Ok(()),
            None => Err(e),
        };
    }
    if all[0] > 0 {
        AGREED_FAILURE.set(true);
        let first = usize::try_from(-all[1]).unwrap_or(0);
        let mut msg = [0u8; MESSAGE];
        if let (Some(e), true) = (failed, first == comm.rank) {
            let text = e.to_string();
            let mut end = text.len().min(MESSAGE);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            msg[..end].copy_from_slice(&text.as_bytes()[..end]);
        }
        let sent = comm.broadcast(op, &mut msg, first);
        if failed.is_some() {
            return Ok(());
        }
        sent?;
        let len = msg.iter().position(|&b| b == 0).unwrap_or(MESSAGE);
        return Err(Error::Distributed {
            op: op.to_owned(),
            rank: first,
            reason: format!(
                "failed on another rank: {}",
                String::from_utf8_lossy(&msg[..len])
            ),
        });
    }
    if (0..SHAPES).any(|i| all[2 + i] != -all[2 + SHAPES + i]) {
        AGREED_FAILURE.set(true);
        let lo: Vec<i64> = (0..SHAPES).map(|i| -all[2 + SHAPES + i]).collect();
        let hi = &all[2..2 + SHAPES];
        return Err(Error::Distributed {
            op: op.to_owned(),
            rank: comm.rank,
            reason: format!(
                "the ranks disagree on the shapes of the call (each rank must make the same \
                 call on the same global shapes): here {shapes:?}, between {lo:?} and {hi:?} \
                 over the ranks"
            ),
        });
    }
    Ok(())
}

/// The dispatcher's hook, before a call on a distributed kind: an agreed failure of an earlier
/// call is forgotten.
pub(super) fn begin_call() {
    AGREED_FAILURE.set(false);
}

/// The dispatcher's hook, after a call on a distributed kind: a failure agreed on inside the
/// call is known to every rank already; otherwise agree now.
pub(super) fn finish_call(op: &str, failed: Option<&Error>) -> Result<()> {
    if AGREED_FAILURE.take() && failed.is_some() {
        return Ok(());
    }
    verdict(op, failed, [0; SHAPES])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displacements_and_totals() {
        assert_eq!(displacements(&[2, 0, 3]), vec![0, 2, 2]);
        assert_eq!(total(&[2, 0, 3]), Some(5));
        assert_eq!(total(&[-1]), None);
        assert_eq!(total(&[i32::MAX, 1]), None);
        assert!(count("t", usize::MAX).is_err());
    }
}
