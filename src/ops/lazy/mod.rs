//! The lazy kinds' operations: [`KronSum`](crate::KronSum) and [`SuperOp`](crate::SuperOp)
//! applied without being formed, their algebra kept lazy, and their constructors.
//!
//! Both compile into one plan ([`plan`](self) internals): local operators on the modes of a
//! tensor-product space, run tile by tile (`docs/open_systems.md`). A superoperator on `n×n`
//! matrices is such an operator on the `2m` modes of `vec ρ` (ρ's column modes, then its row
//! modes), so the Lindbladian of local operators and a Kronecker-sum Hamiltonian run on the
//! same kernels. The kinds' algebra (sums, scalings, adjoints, products) is the storage types'
//! own, each operation passing its dispatcher for the factors. The operations' files register
//! the kernels here; what builds on the other operations stands above them:
//! [`lindblad`](super::lindblad) (QuTiP's constructors) and [`steady`](super::steady)
//! (`steadystate`).

pub mod kron_sum;
mod local;
pub(crate) mod map;
pub mod mode;
pub(crate) mod plan;
pub(crate) mod run;
mod schedule;
pub mod super_op;

pub use mode::{Modes, TARGET_MODE_MATMUL, target_mode_matmul};
