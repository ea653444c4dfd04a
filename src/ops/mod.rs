//! The operations: one dispatcher per operation, its kernels, and a free function for each.
//!
//! Every dispatcher is a process-wide static (`ADD`, `MATMUL`, ...) that can be inspected with
//! [`Dispatcher::get`](crate::Dispatcher::get) and extended with
//! [`Dispatcher::add_specialisation`](crate::Dispatcher::add_specialisation). The kernels are
//! public too, for callers who already know their storage types.
//!
//! | operation | free function | dispatcher | direct kernels |
//! |---|---|---|---|
//! | a + s·b | [`add()`], [`add_scaled`] | [`ADD`] | Dense+Dense, Csr+Csr, Csr+Dense, Dense+Csr |
//! | a − b | [`sub`] | [`SUB`] | generic (through `ADD` with s = −1) |
//! | s·a | [`mul`] | [`MUL`] | Dense, Csr |
//! | −a | [`neg`] | [`NEG`] | Dense, Csr |
//! | a·b | [`matmul()`] | [`MATMUL`] | Dense·Dense, Csr·Csr, Csr·Dense → Dense, Dense·Csr → Dense |
//! | a·b† | [`matmul_dag`] | [`MATMUL_DAG`] | Dense, Csr, Dense·Csr† and Csr·Dense† → Dense |
//! | a ∘ b | [`multiply()`] | [`MULTIPLY`] | Dense∘Dense, Csr∘Csr |
//! | a ⊗ b | [`kron()`] | [`KRON`] | Dense⊗Dense, Csr⊗Csr, Dense⊗Csr and Csr⊗Dense → Csr |
//! | a†, aᵀ, ā | [`adjoint`], [`transpose()`], [`conj`] | [`ADJOINT`], [`TRANSPOSE`], [`CONJ`] | Dense, Csr |
//! | Tr a | [`trace()`] | [`TRACE`] | Dense, Csr |
//! | aⁿ | [`pow()`] | [`POW`] | Dense, Csr |
//! | exp a | [`expm()`] | [`EXPM`] | Dense, Csr → Csr, Csr → Dense |
//! | ⟨l\|r⟩ | [`inner()`] | [`INNER`] | Dense, Csr |
//! | ⟨l\|O\|r⟩ | [`inner_op`] | [`INNER_OP`] | Dense³, Csr³, (Dense, Csr, Dense) |
//! | ⟨O⟩ | [`expect`](fn@expect) | [`EXPECT`] | Dense², Csr², (Csr, Dense), (Dia, Dense), Dia² |
//! | \|ψ⟩⟨ψ\| | [`project`] | [`PROJECT`] | Dense, Csr |
//! | norms | [`norm::l2`], [`norm::frobenius`], [`norm::max`], [`norm::one`], [`norm::trace`] | [`norm::L2`], ... | Dense, Csr; Dia (Frobenius, max, 1-norm) |
//! | a ≈ 0, a ≈ b, a = a†, diagonal? | [`iszero`], [`isequal`], [`isherm`], [`isdiag`] | [`ISZERO`], [`ISEQUAL`], [`ISHERM`], [`ISDIAG`] | Dense, Csr, Dia, GpuDense |
//! | drop tiny parts | [`tidyup()`] | [`TIDYUP`] | Dense, Csr |
//! | ket·bra | [`matmul_outer()`] | [`MATMUL_OUTER`] | generic (density-based output), GpuDense |
//! | aᵀ ⊗ b | [`kron_transpose()`] | [`KRON_TRANSPOSE`] | Dense, Csr, GpuDense |
//! | superoperator expectation | [`expect_super`], [`trace_oper_ket`] | [`EXPECT_SUPER`], [`TRACE_OPER_KET`] | Dense, Csr, GpuDense |
//! | a⁻¹, a·x = b | [`inv`], [`solve()`] | [`INV`], [`SOLVE`] | Dense (LU, QR), Csr (sparse LU) |
//! | √a, log a | [`sqrtm`], [`logm`] | [`SQRTM`], [`LOGM`] | Dense, Csr (densified) |
//! | eigenpairs, SVD | [`eigs`], [`svd`] | [`EIGS`], [`SVD`] | Dense, Csr (densified) |
//! | partial trace | [`ptrace()`] | [`PTRACE`] | Dense, Csr, GpuDense |
//! | reshape, vec, unvec, columns | [`reshape()`], [`column_stack`], [`column_unstack`], [`split_columns`] | [`RESHAPE`], ... | Dense, Csr |
//! | permutations | [`permute::dimensions`], [`permute::indices`] | [`permute::DIMENSIONS`], [`permute::INDICES`] | Dense, Csr, GpuDense |
//! | blocks | [`block_extract`], [`block_overwrite`], [`block_build`] | [`BLOCK_EXTRACT`], [`BLOCK_OVERWRITE`] | Dense, Csr, GpuDense |
//! | means of nonzeros | [`mean_nonzero`], [`mean_abs_nonzero`] | [`MEAN_NONZERO`], [`MEAN_ABS_NONZERO`] | Dense, Csr, GpuDense |
//! | in place | [`iadd`], [`imul`] | — | Dense, Csr |
//! | to faer / sprs | [`extract()`] | — | any kind |
//! | 0, 1, diagonals | [`zeros`], [`identity`], [`diag`], [`one_element`], [`zeros_like`], [`identity_like`] | [`ZEROS`], [`IDENTITY`], [`DIAG`] | Dense, Csr |

pub mod add;
pub mod block;
pub mod compare;
pub mod construct;
pub mod dia;
mod elementwise;
pub mod expect;
pub mod expm_multiply;
pub mod extract;
pub mod inner;
pub mod inplace;
pub mod kron;
pub mod lazy;
pub mod linalg;
pub use linalg::{decomp, expm, funm, lu};
pub mod lindblad;
pub mod matmul;
// Dense·Csr products moved under matmul/ (ops::dense_csr read like the Dense → Csr conversion);
// the old path stays for code written against it.
#[doc(hidden)]
pub use matmul::dense_csr;
pub mod mean;
pub mod multiply;
pub mod norm;
pub mod outer;
pub mod permute;
pub mod pow;
pub mod ptrace;
pub mod reshape;
pub mod scale;
pub mod solve;
mod space;
mod spgemm;
pub mod steady;
pub mod tidyup;
mod tolerance;
pub mod trace;
pub mod transpose;

pub use crate::krylov::watch::{Flow, Partial, Progress, Watch};
pub use add::{ADD, SUB, add, add_scaled, sub};
pub use block::{
    BLOCK_EXTRACT, BLOCK_OVERWRITE, Block, BlockRange, block_build, block_extract, block_overwrite,
};
pub use compare::{ISDIAG, ISEQUAL, ISHERM, ISZERO, Tol, isdiag, isequal, isherm, iszero};
pub use construct::{
    DIAG, Diagonals, IDENTITY, ZEROS, diag, identity, identity_like, one_element, zeros, zeros_like,
};
pub use decomp::{
    EIGS, EigOrder, Eigen, EigsMethod, EigsOptions, KRYLOV_MIN_DIM, SVD, Svd, eigs, eigs_plan,
    eigs_with, svd,
};
pub use expect::{EXPECT, EXPECT_SUPER, TRACE_OPER_KET, expect, expect_super, trace_oper_ket};
pub use expm::{EXPM, expm};
pub use expm_multiply::{EXPM_MULTIPLY, expm_multiply, expm_multiply_with};
pub use extract::{Extract, extract};
pub use funm::{LOGM, SQRTM, logm, sqrtm};
pub use inner::{INNER, INNER_OP, inner, inner_op};
pub use inplace::{iadd, imul};
pub use kron::{KRON, KRON_TRANSPOSE, kron, kron_transpose};
pub use lazy::{Modes, TARGET_MODE_MATMUL, target_mode_matmul};
pub use lindblad::{lindblad_dissipator, liouvillian, spost, spre, sprepost};
pub use lu::RCOND_MIN;
pub use matmul::{MATMUL, MATMUL_DAG, matmul, matmul_dag};
pub use mean::{MEAN_ABS_NONZERO, MEAN_NONZERO, mean_abs_nonzero, mean_nonzero};
pub use multiply::{MULTIPLY, multiply};
pub use norm::{NORM_FROBENIUS, NORM_L2, NORM_MAX, NORM_ONE, NORM_TRACE};
pub use outer::{MATMUL_OUTER, OUTER_DENSE_THRESHOLD, PROJECT, matmul_outer, project};
pub use permute::{PERMUTE_DIMENSIONS, PERMUTE_INDICES};
pub use pow::{POW, pow};
pub use ptrace::{PTRACE, Ptrace, ptrace};
pub use reshape::{
    COLUMN_STACK, COLUMN_UNSTACK, RESHAPE, SPLIT_COLUMNS, column_stack, column_unstack, reshape,
    split_columns,
};
pub use scale::{MUL, NEG, mul, neg};
pub use solve::{INV, Iterative, Preconditioner, SOLVE, SolveMethod, inv, solve, solve_with};
pub use steady::{SteadyState, steadystate};
pub use tidyup::{TIDYUP, tidyup};
pub use trace::{TRACE, trace};
pub use transpose::{ADJOINT, CONJ, TRANSPOSE, adjoint, conj, transpose};

// The kernels behind the operators on Dense and Csr (crate::operators).
pub(crate) use add::{add_csr, add_csr_dense, add_dense, add_dense_csr};
pub(crate) use scale::{mul_csr, mul_dense, neg_csr, neg_dense};

#[cfg(test)]
mod tests;
