//! Distributed storage on MPI (feature `mpi`; `polymat::dist` before 0.2): [`DistCsr`] and
//! [`DistDense`], registered through polymat's public extension API —
//! [`Batch::register_type`], [`Conversion`], [`Batch::add_to_group`] and
//! [`Dispatcher::add_specialisation`](crate::dispatch::Dispatcher::add_specialisation) — as a user would
//! register a kind; only the handling of failures (see "Failures") uses a hook inside the
//! dispatcher.
//!
//! The engine is MPI (the `mpi` crate over the system's MPI, e.g. Open MPI from Debian's
//! `libopenmpi-dev`). Programs are SPMD: every rank runs the same program on the same global
//! inputs and makes the same calls in the same order; the operations on distributed kinds are
//! **collective**. Rows are split in contiguous blocks ([`block`]): rank `r` of `p` holds rows
//! `r·⌊n/p⌋ + min(r, n mod p)` onward.
//!
//! What the dispatcher may do implicitly, and what it may not:
//!
//! - `Csr → DistCsr` (this rank's rows plus the halo plan; collective) and `Dense → DistDense`
//!   (this rank's rows; no communication) are registered conversions, so a global operand
//!   mixed with a distributed one is split, never the other way round.
//! - There is **no conversion out of a distributed kind**: an operation without a distributed
//!   kernel is `Error::NoConversion`, never a silent gather of a 10⁹-entry vector onto one rank.
//!   Gathering is the explicit [`DistDense::gather`].
//! - Both kinds are in the sticky group `"dist"`, so `Out::Auto` results stay distributed.
//!
//! Kernels: `matmul` DistCsr·DistDense (halo exchange with `MPI_Alltoallv`, then the local
//! Csr·Dense kernel), `add`/`sub`/`mul`/`neg` on both kinds, `inner`, `expect` (ket), `trace`,
//! the 2-/Frobenius, max and 1-norms and `isherm` (local part + `MPI_Allreduce`), and `kron`
//! DistCsr ⊗ Csr where row blocks map to row blocks. With those,
//! the Krylov `eigs` and `expm_multiply` run unchanged on distributed operators (see
//! `examples/dist_spin_chain.rs`, run with `mpirun -n 4`).
//!
//! # Failures
//!
//! A rank that fails must not leave the others waiting in a collective. polymat communicates
//! on its own duplicate of `MPI_COMM_WORLD` with `MPI_ERRORS_RETURN` (an MPI error is an
//! [`Error::Distributed`], not an abort), and every place where one rank can fail — a shape
//! that does not match, an allocation over the dense limit
//! ([`set_dense_limit`](crate::set_dense_limit) is per process), a user's kernel that returns
//! an error or panics — is followed by an agreement of all ranks before the next collective:
//! one small `MPI_Allreduce` that also compares the call's global shapes. If any rank failed,
//! every rank returns an error: the failing rank its own, the others
//! [`Error::Distributed`] with the failing rank's number and message. Every dispatched call
//! with a distributed input or output ends with such an agreement, and a kernel that panics
//! there is caught and becomes [`Error::KernelPanicked`]. The cost is two or three small
//! allreduces per operation (a few microseconds between processes of one machine).
//! A user's kernel that itself communicates calls [`agree`] before its collectives.
//! `tests/mpi_faults.rs` runs these failures at 2 and 4 ranks.
//!
//! ```no_run
//! # fn main() -> polymat::Result<()> {
//! use polymat::{Csr, Data, Dense, Out, mpi};
//! let _mpi = mpi::init()?; // MPI_Init and the registration; MPI_Finalize when dropped
//! let h = Data::new(mpi::DistCsr::from_global(&Csr::identity(1000))?)?;
//! let psi: Data = Dense::from_fn(1000, 1, |i, _| polymat::c64::new(1.0 / (i + 1) as f64, 0.0)).into();
//! let h_psi = polymat::matmul(&h, &psi, Out::Auto)?; // psi is split, the result a DistDense
//! let e = polymat::expect(&h, &h_psi)?; // reduced over the ranks
//! # let _ = e; Ok(()) }
//! ```

mod comm;
mod kernels;
mod storage;

use std::sync::OnceLock;

pub use storage::{DistCsr, DistDense};

use crate::convert::{Batch, Conversion, Group, registry};
use crate::dispatch::collective;
use crate::error::{Error, Result};
use crate::scalar::c64;
use crate::storage::Dense;
pub(crate) use comm::{Comm, Op, count};

/// The rows of block `rank` when `n` rows are split over `size` ranks.
pub fn block(n: usize, size: usize, rank: usize) -> std::ops::Range<usize> {
    let size = size.max(1);
    let (q, r) = (n / size, n % size);
    let start = rank * q + rank.min(r);
    start..start + q + usize::from(rank < r)
}

/// The rank whose block holds row `i` of `n`.
pub fn owner(n: usize, size: usize, i: usize) -> usize {
    let size = size.max(1);
    let (q, r) = (n / size, n % size);
    let big = r * (q + 1);
    if i < big {
        i / (q + 1)
    } else {
        r + (i - big) / q.max(1)
    }
}

/// MPI stays initialised while this guard lives; dropping it finalises MPI.
pub struct Mpi {
    _universe: Option<::mpi::environment::Universe>,
}

impl Mpi {
    /// This process's rank.
    pub fn rank(&self) -> usize {
        Comm::get().rank
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        Comm::get().size
    }
}

static REGISTERED: OnceLock<std::result::Result<(), String>> = OnceLock::new();

/// Initialises MPI (if the program has not) and registers the distributed kinds, their
/// conversions and kernels (once per process). Keep the returned guard for the program's
/// life. Collective: every rank calls it.
///
/// polymat communicates on its own duplicate of `MPI_COMM_WORLD` whose error handler is
/// `MPI_ERRORS_RETURN`: an MPI error is an [`Error::Distributed`] on the ranks that see it,
/// never an abort, and a failure on one rank is an error on every rank (see the module's
/// "Failures" section).
///
/// # Errors
/// [`Error::InvalidArgument`] if the registration fails; [`Error::Distributed`] if MPI cannot
/// duplicate the communicator.
pub fn init() -> Result<Mpi> {
    let universe = ::mpi::initialize();
    comm::init()?;
    let done = REGISTERED.get_or_init(|| register().map_err(|e| e.to_string()));
    done.clone().map_err(arg)?;
    Ok(Mpi {
        _universe: universe,
    })
}

fn register() -> Result<()> {
    let dist = Group::new_sticky("dist")?;
    // Before the kinds exist, so that every table cell with a distributed kind is collective.
    collective::install(collective::Hook {
        group: dist,
        begin: comm::begin_call,
        finish: comm::finish_call,
    });
    let mut b = Batch::new();
    b.register_type::<DistCsr>("DistCsr", &["distcsr"])
        .register_type::<DistDense>("DistDense", &["distdense"])
        // Splitting a global operand: cheap next to the work it feeds.
        .add_conversion(Conversion::new(DistCsr::from_global, 1.0))
        .add_conversion(Conversion::new(DistDense::from_global, 1.0))
        .add_to_group::<DistCsr>(dist)
        .add_to_group::<DistDense>(dist);
    registry().commit(b)?;
    kernels::register()
}

/// Agrees with every rank on this rank's outcome `local` (and on `shapes`, which every rank
/// must hold equal): `local` when every rank succeeded, an error on every rank otherwise.
/// **Collective.** A user's kernel on distributed kinds that communicates calls it before
/// each of its own collectives where this rank may have failed, so that no rank waits for
/// one that has returned (polymat's kernels do).
///
/// ```no_run
/// # fn main() -> polymat::Result<()> {
/// use polymat::mpi;
/// let _mpi = mpi::init()?;
/// let local: polymat::Result<f64> = Ok(1.0); // this rank's part, which may have failed
/// let x = mpi::agree(local, [10, 10, 0, 0])?; // Err on every rank if one rank failed
/// # let _ = x; Ok(()) }
/// ```
///
/// # Errors
/// This rank's own error if it failed; [`Error::Distributed`] naming the first failing rank
/// and its message on the others, or on every rank when the ranks disagree on `shapes` or an
/// MPI call fails.
pub fn agree<T>(local: Result<T>, shapes: [usize; 4]) -> Result<T> {
    comm::agree("mpi::agree", local, shapes)
}

pub(crate) fn arg(reason: impl Into<String>) -> Error {
    Error::InvalidArgument {
        op: "dist".into(),
        reason: reason.into(),
    }
}

/// Row-major `[re, im]` pairs of `d`, allocated fallibly.
pub(crate) fn pack(op: &str, d: &Dense) -> Result<Vec<f64>> {
    let (m, k) = d.shape();
    let len = m
        .checked_mul(k)
        .and_then(|x| x.checked_mul(2))
        .ok_or_else(|| arg(format!("{op}: {m}×{k} values overflow usize")))?;
    let mut v = crate::storage::alloc::try_with_capacity(op, (m, k), len)?;
    for i in 0..m {
        for j in 0..k {
            let z = d.get(i, j);
            v.extend([z.re, z.im]);
        }
    }
    Ok(v)
}

/// The inverse of [`pack`].
pub(crate) fn unpack(v: &[f64], m: usize, k: usize) -> Result<Dense> {
    Dense::try_from_fn(m, k, |i, j| {
        let o = (i * k + j) * 2;
        c64::new(v[o], v[o + 1])
    })
}

/// Agrees on `local` (and `shapes`), then reduces it over the ranks, entry by entry.
/// **Collective.**
pub(crate) fn reduce(
    op: &str,
    local: Result<Vec<f64>>,
    how: Op,
    shapes: [usize; 4],
) -> Result<Vec<f64>> {
    let mine = comm::agree(op, local, shapes)?;
    let mut out = crate::storage::alloc::try_vec(op, (mine.len(), 1), mine.len(), 0.0f64)?;
    Comm::get().all_reduce(op, &mine, &mut out, how)?;
    Ok(out)
}

/// `Σ` over the ranks of a complex value. **Collective.**
pub(crate) fn sum_c64(op: &str, x: Result<c64>, shapes: [usize; 4]) -> Result<c64> {
    let v = reduce(op, x.map(|x| vec![x.re, x.im]), Op::Sum, shapes)?;
    Ok(c64::new(v[0], v[1]))
}

/// `max` over the ranks (NaN if any rank has NaN), in one `MPI_Allreduce` after the
/// agreement: the maximum of the non-NaN values and of a NaN flag. **Collective.**
pub(crate) fn max_f64(op: &str, x: Result<f64>, shapes: [usize; 4]) -> Result<f64> {
    let mine = x.map(|x| {
        if x.is_nan() {
            vec![f64::NEG_INFINITY, 1.0]
        } else {
            vec![x, 0.0]
        }
    });
    let out = reduce(op, mine, Op::Max, shapes)?;
    Ok(if out[1] > 0.0 { f64::NAN } else { out[0] })
}
