//! # polymat
//!
//! Matrices in many storage forms — dense ([`Dense`], a column-major `faer::Mat`), sparse
//! ([`Csr`], an `sprs::CsMat`), and any type you register — behind one API that picks the right
//! kernel for whatever kinds it is given. It is a multiple-dispatch data layer in the style of
//! QuTiP 5's `qutip.core.data`.
//!
//! ## The pieces
//!
//! * [`Data`]: a cheap, shared, type-erased handle to a matrix of any kind.
//! * [`ConversionRegistry`] ([`registry`]): converters between kinds, each with a weight, and the
//!   cheapest chain for every pair of kinds. [`to`] converts.
//! * [`Dispatcher`]: one per operation. It holds *specialisations* (kernels for given input and
//!   output kinds) and a table that maps every tuple of kinds to the cheapest specialisation plus
//!   the conversions that reach it.
//! * [`ops`]: the operations, each a dispatcher (`ops::ADD`, `ops::MATMUL`, ...) with a free
//!   function ([`add()`], [`matmul()`], ...).
//!
//! ## Example
//!
//! ```
//! use polymat::{Csr, Data, Dense, Kind, Out, c64, ops::MATMUL};
//! use polymat::faer::Mat;
//!
//! let one = c64::new(1.0, 0.0);
//! // σx as a sparse matrix, a state as a dense column.
//! let a: Data = Csr::from_triplets((2, 2), &[0, 1], &[1, 0], &[one, one])?.into();
//! let psi: Data = Dense::from_rows(&[[one], [c64::new(0.0, 0.0)]])?.into();
//!
//! // Operators go through the dispatchers (Out::Auto) and return Result: a shape mismatch is
//! // an error, never a panic.
//! let b: Data = polymat::identity(2, Out::Dense)?;
//! let c = (&a + &b)?;
//! let d = (c64::new(2.0, 0.0) * &c)?;
//! assert_eq!(d.to_string(), "[[2, 2], [2, 2]]");
//! let back: Mat<c64> = (&d).try_into()?;
//! assert_eq!(back[(0, 1)], c64::new(2.0, 0.0));
//!
//! // Named functions take the output kind: Csr·Dense has a direct kernel that returns Dense.
//! let flipped = polymat::matmul(&a, &psi, Out::Auto)?;
//! assert_eq!(flipped.kind(), Kind::DENSE);
//! assert_eq!(flipped.to_string(), "[[0], [1]]");
//! let sum = polymat::add(&a, &b, Out::Csr)?;
//! assert_eq!(format!("{sum:#}"), "Csr(2×2, nnz=4)");
//!
//! // See what the dispatcher does for a pair of kinds.
//! let h = MATMUL.get(&[Kind::CSR, Kind::DENSE], Out::Csr)?;
//! assert!(!h.is_direct()); // the Csr·Dense kernel, then its Dense result converted
//! # Ok::<(), polymat::Error>(())
//! ```
//!
//! ## Around the core
//!
//! * [`operators`]: `+`, `-`, unary `-`, `*` and `/` by a scalar, on [`Data`], [`Dense`] and
//!   [`Csr`].
//! * [`io`]: Matrix Market and `.npy` files.
//! * [`interop`]: faer, sprs, ndarray, nalgebra and serde (features `ndarray`, `nalgebra`,
//!   `serde`).
//! * Policies: [`set_implicit_conversions`] (allow, warn about, or deny the conversions a
//!   dispatcher would insert), [`set_default_output`] (QuTiP's `default_dtype` and scope),
//!   each also scoped to a closure on one thread; feature `tracing` for one event per indirect
//!   dispatch and conversion.
//! * Printing: `{}` shows entries like numpy, `{:#}` a summary ([`storage`](storage#printing)).
//!
//! ## Extending
//!
//! * Add a kernel: [`Dispatcher::add_specialisation`] (`examples/custom_specialisation.rs`).
//! * Add a storage type: implement [`Storage`], then [`ConversionRegistry::register_type`] and
//!   two conversions; every operation then works on it (`examples/custom_storage.rs`).
//! * Add an operation: [`Dispatcher::builder`] (`examples/custom_dispatcher.rs`).
//!
//! Registrations are atomic and may happen at any time, from any thread: calls in flight keep
//! using the table they loaded, later calls see the new one.

#![deny(missing_docs)]
#![forbid(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

// The versions polymat is built against, so that `Mat` and `CsMat` values always match.
pub use faer;
pub use sprs;

mod cache;
pub mod calibrate;
pub mod convert;
pub mod dispatch;
#[cfg(feature = "mpi")]
pub mod mpi;
/// The former name of [`mpi`](crate::mpi) (before 0.2), kept so that code written against it
/// compiles.
#[cfg(feature = "mpi")]
#[doc(hidden)]
pub use self::mpi as dist;
pub mod engine;
pub mod error;
pub mod gpu;
pub mod interop;
pub mod io;
mod krylov;
pub mod operators;
pub mod ops;
mod scalar;
mod shape;
mod simd;
pub mod storage;
#[cfg(test)]
mod testing;

pub use convert::{Batch, Conversion, ConversionRegistry, Group, registry, to, to_type};
pub use dispatch::{
    CheckFn, DefaultScope, Dispatcher, DispatcherBuilder, Explanation, ImplicitConversions,
    KernelReturn, Out, Resolved, ReturnValue, ShapeFn, Specialisation, default_output,
    implicit_conversions, set_default_output, set_implicit_conversions, with_default_output,
    with_implicit_conversions,
};
// The names before 0.2 (`Output` and `KernelOutput` read too much like `Out`), kept so that
// code written against them still compiles.
#[doc(hidden)]
pub use dispatch::{KernelReturn as KernelOutput, ReturnValue as Output};
pub use engine::{
    AVX512_SMALL_PRODUCTS_ENV, HUGE_PAGES_ENV, STREAM_BYTES_ENV, THREADS_ENV,
    clear_upper_vector_state, dense_limit, huge_pages, set_dense_limit, set_huge_pages,
    set_stream_bytes, set_threads, stream_bytes, threads,
};
pub use error::{Error, Result, Shape};
pub use gpu::{GpuCsr, GpuDense};
pub use ops::{
    add, add_scaled, adjoint, block_build, block_extract, block_overwrite, column_stack,
    column_unstack, conj, diag, eigs, eigs_with, expect, expect_super, expm, expm_multiply,
    expm_multiply_with, extract, iadd, identity, identity_like, imul, inner, inner_op, inv, isdiag,
    isequal, isherm, iszero, kron, kron_transpose, lindblad_dissipator, liouvillian, logm, matmul,
    matmul_dag, matmul_outer, mean_abs_nonzero, mean_nonzero, mul, multiply, neg, one_element, pow,
    project, ptrace, reshape, solve, solve_with, split_columns, spost, spre, sprepost, sqrtm,
    steadystate, sub, svd, tidyup, trace, trace_oper_ket, transpose, zeros, zeros_like,
};
pub use scalar::c64;
pub use storage::{
    Csr, Data, Dense, Dia, Diagonals, Kind, KronSum, KronTerm, Layout, Storage, SuperOp, SuperTerm,
};

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The example of `docs/operations.md`, compiled and run as a doctest.
#[doc = include_str!("../docs/operations.md")]
#[cfg(doctest)]
pub struct OperationsDoctests;

/// The examples of `docs/open_systems.md`, compiled and run as doctests.
#[doc = include_str!("../docs/open_systems.md")]
#[cfg(doctest)]
pub struct OpenSystemsDoctests;
