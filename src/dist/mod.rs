//! Distributed storage on MPI (feature `mpi`): [`DistCsr`] and [`DistDense`], registered
//! through polymat's **public** extension API only — [`Batch::register_type`],
//! [`Conversion`], [`Batch::add_to_group`] and [`Dispatcher::add_specialisation`](crate::Dispatcher::add_specialisation) — exactly as a
//! user would register a kind.
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
//! ```no_run
//! # fn main() -> polymat::Result<()> {
//! use polymat::{Csr, Data, Dense, Out, dist};
//! let _mpi = dist::init()?; // MPI_Init and the registration; MPI_Finalize when dropped
//! let h = Data::new(dist::DistCsr::from_global(&Csr::identity(1000))?)?;
//! let psi: Data = Dense::from_fn(1000, 1, |i, _| polymat::c64::new(1.0 / (i + 1) as f64, 0.0)).into();
//! let h_psi = polymat::matmul(&h, &psi, Out::Auto)?; // psi is split, the result a DistDense
//! let e = polymat::expect(&h, &h_psi)?; // reduced over the ranks
//! # let _ = e; Ok(()) }
//! ```

mod kernels;
mod storage;

use std::sync::OnceLock;

use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

pub use storage::{DistCsr, DistDense};

use crate::{Batch, Conversion, Dense, Error, Group, Result, c64, registry};

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
    _universe: Option<mpi::environment::Universe>,
}

impl Mpi {
    /// This process's rank.
    pub fn rank(&self) -> usize {
        Comm::world().rank
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        Comm::world().size
    }
}

static REGISTERED: OnceLock<std::result::Result<(), String>> = OnceLock::new();

/// Initialises MPI (if the program has not) and registers the distributed kinds, their
/// conversions and kernels (once per process). Keep the returned guard for the program's
/// life.
///
/// # Errors
/// [`Error::InvalidArgument`] if the registration fails.
pub fn init() -> Result<Mpi> {
    let universe = mpi::initialize();
    let done = REGISTERED.get_or_init(|| register().map_err(|e| e.to_string()));
    done.clone().map_err(arg)?;
    Ok(Mpi {
        _universe: universe,
    })
}

fn register() -> Result<()> {
    let dist = Group::new_sticky("dist")?;
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

/// The world communicator with this rank and the size.
pub(crate) struct Comm {
    pub(crate) world: SimpleCommunicator,
    pub(crate) rank: usize,
    pub(crate) size: usize,
}

impl Comm {
    pub(crate) fn world() -> Comm {
        let world = SimpleCommunicator::world();
        let (rank, size) = (world.rank() as usize, world.size() as usize);
        Comm { world, rank, size }
    }
}

pub(crate) fn arg(reason: impl Into<String>) -> Error {
    Error::InvalidArgument {
        op: "dist".into(),
        reason: reason.into(),
    }
}

/// Row-major `[re, im]` pairs of `d`.
pub(crate) fn pack(d: &Dense) -> Vec<f64> {
    let (m, k) = d.shape();
    let mut v = Vec::with_capacity(m * k * 2);
    for i in 0..m {
        for j in 0..k {
            let z = d.get(i, j);
            v.extend([z.re, z.im]);
        }
    }
    v
}

/// The inverse of [`pack`].
pub(crate) fn unpack(v: &[f64], m: usize, k: usize) -> Result<Dense> {
    Dense::try_from_fn(m, k, |i, j| {
        let o = (i * k + j) * 2;
        c64::new(v[o], v[o + 1])
    })
}

/// `Σ` over the ranks of a complex value.
pub(crate) fn sum_c64(x: c64) -> c64 {
    let mut out = [0.0f64; 2];
    Comm::world().world.all_reduce_into(
        &[x.re, x.im][..],
        &mut out[..],
        mpi::collective::SystemOperation::sum(),
    );
    c64::new(out[0], out[1])
}

/// `Σ` over the ranks, entry by entry.
pub(crate) fn sum_f64s(x: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0f64; x.len()];
    Comm::world()
        .world
        .all_reduce_into(x, &mut out[..], mpi::collective::SystemOperation::sum());
    out
}

/// `max` over the ranks (NaN if any rank has NaN), in one `MPI_Allreduce`: the maximum of
/// the non-NaN values and of a NaN flag, element by element.
pub(crate) fn max_f64(x: f64) -> f64 {
    let mine = if x.is_nan() {
        [f64::NEG_INFINITY, 1.0]
    } else {
        [x, 0.0]
    };
    let mut out = [0.0f64; 2];
    Comm::world().world.all_reduce_into(
        &mine[..],
        &mut out[..],
        mpi::collective::SystemOperation::max(),
    );
    if out[1] > 0.0 { f64::NAN } else { out[0] }
}

/// Whether `x` holds on every rank.
pub(crate) fn all(x: bool) -> bool {
    sum_f64s(&[f64::from(u8::from(!x))])[0] == 0.0
}
