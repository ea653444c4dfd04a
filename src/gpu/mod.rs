//! GPU storage: [`GpuDense`], a dense complex matrix in CUDA device memory, and [`GpuCsr`], a
//! sparse one (compressed sparse rows with 32-bit indices).
//!
//! Both are storage kinds like any other ([`Kind::GPU_DENSE`](crate::Kind::GPU_DENSE),
//! [`Out::GpuDense`](crate::Out::GpuDense), [`Kind::GPU_CSR`](crate::Kind::GPU_CSR),
//! [`Out::GpuCsr`](crate::Out::GpuCsr)), registered in every build. With the cargo feature
//! `cuda` they live on device 0 through [cudarc](https://docs.rs/cudarc): dense products and
//! sums run in cuBLAS (Zgemm, Zgeam, Zdotc, Dznrm2), `inv`/`solve` (getrf/getrs), Hermitian
//! `eigs` (heevd) and `svd` (gesvd) in cuSOLVER, sparse products (SpMV, SpMM) and transposes
//! (csr2cscEx2) in cuSPARSE, element-wise work, reductions and GpuCsr's sums, traces,
//! expectation values and Kronecker products in kernels compiled once per process with NVRTC;
//! buffers come from the driver's stream-ordered memory pool, which keeps freed memory (up to a
//! quarter of the device's) mapped for the next results, and freed buffers of at most 4 MiB are
//! kept host-side for the next result of the same size (no driver call at all):
//! [`release_cached_memory`] hands both back. `expm` forms its products by Gauss's
//! three-real-product method where that is safe ([`set_gauss_products`]).
//! Without the feature, or without a usable GPU at run time, every GPU entry point returns
//! [`Error::NoGpu`](crate::Error::NoGpu) — never a panic: the driver, cuBLAS and NVRTC
//! libraries are probed before the first call into them, cuSOLVER and cuSPARSE before their
//! first use (without them those operations take their CPU path), and the answers are cached.
//!
//! # Where work runs
//!
//! The conversions follow qutip-jax: entering the GPU ([`Dense`](crate::Dense) → `GpuDense`)
//! weighs 1, leaving it weighs 2. With the dispatcher's cheapest-path rule this gives PyTorch's
//! "GPU in, GPU out" behaviour:
//!
//! * all inputs on the GPU → the GPU kernel, result on the GPU under `Out::Auto`;
//! * mixed CPU/GPU inputs → the CPU operands are uploaded and the GPU kernel runs (a tie with
//!   a CPU route, as for `GpuDense + Csr`, goes to the GPU kernel);
//! * all inputs on the CPU → CPU kernels; a GPU route would cost at least one upload more;
//! * operations without a GPU kernel (matrix functions such as `sqrtm`, general `eigs`, …)
//!   download their GPU operands, run on the CPU and upload the result: `GpuDense` and `GpuCsr`
//!   are in the sticky group [`Group::GPU`](crate::Group::GPU), so under `Out::Auto` every
//!   operation that returns a matrix returns GPU data when an input is GPU data (`explain()`
//!   shows the upload);
//! * GpuCsr stays sparse: GpuCsr → GpuDense weighs more than a round trip through a CPU sparse
//!   kernel, so an operation with a Csr kernel but no GpuCsr kernel runs the Csr kernel and
//!   uploads a GpuCsr; only operations that need dense data densify, on the GPU, up to the
//!   dense limit;
//! * an explicit `Out` always wins: `Out::Dense` on GPU inputs computes on the GPU and
//!   downloads the result.
//!
//! # Example
//!
//! ```
//! use polymat::{Dense, GpuDense, Out, gpu};
//!
//! let a = Dense::identity(4);
//! match GpuDense::from_dense(&a) {
//!     Ok(g) => {
//!         let g: polymat::Data = g.into();
//!         let sq = polymat::matmul(&g, &g, Out::Auto)?; // cuBLAS Zgemm, stays on the GPU
//!         assert_eq!(sq.kind(), polymat::Kind::GPU_DENSE);
//!         let back = polymat::to(polymat::Kind::DENSE, &sq)?;
//!         assert_eq!(back.downcast_ref::<Dense>().unwrap().get(3, 3).re, 1.0);
//!     }
//!     // No `cuda` feature or no GPU: a clear error, never a panic.
//!     Err(e) => assert!(matches!(e, polymat::Error::NoGpu { .. }) && !gpu::available()),
//! }
//! # Ok::<(), polymat::Error>(())
//! ```

#[cfg(feature = "cuda")]
mod cuda;
#[cfg(not(feature = "cuda"))]
mod dummy;
// The exponential's Taylor evaluation: used by the CUDA backend, unit-tested in every build.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
mod taylor;

#[cfg(feature = "cuda")]
use cuda as backend;
#[cfg(not(feature = "cuda"))]
use dummy as backend;

pub use backend::{GpuCsr, GpuDense};
pub(crate) use backend::{GpuLu, solver_available, sparse_available};

use std::sync::atomic::AtomicUsize;

use crate::error::Result;
use crate::storage::{Data, Kind};

/// Whether GPU storage can be used: the `cuda` feature is on, the CUDA driver, cuBLAS and NVRTC
/// load, and device 0 opens. The first call opens the device; the answer is cached.
///
/// ```
/// if !polymat::gpu::available() {
///     println!("no GPU: {}", polymat::gpu::check().unwrap_err());
/// }
/// ```
pub fn available() -> bool {
    backend::probe().is_ok()
}

/// `Ok(())` if GPU storage can be used, else the [`Error::NoGpu`](crate::Error::NoGpu) that
/// says why not.
///
/// # Errors
/// [`Error::NoGpu`](crate::Error::NoGpu) as described.
pub fn check() -> Result<()> {
    backend::probe()
}

/// The name of the GPU in use, e.g. `"NVIDIA H100 80GB HBM3"`.
///
/// # Errors
/// [`Error::NoGpu`](crate::Error::NoGpu) without a usable GPU.
pub fn device_name() -> Result<String> {
    backend::device_name()
}

/// Waits until all queued GPU work has finished (GPU operations return as soon as their work
/// is queued). For timing; reading results back waits on its own.
///
/// # Errors
/// [`Error::NoGpu`](crate::Error::NoGpu) without a GPU, [`Error::Gpu`](crate::Error::Gpu) if
/// queued work failed.
pub fn synchronize() -> Result<()> {
    backend::synchronize()
}

/// Waits for queued GPU work, then hands the device memory that polymat's freed buffers left in
/// the driver's memory pool back to the driver, for other libraries or processes.
///
/// Freed GPU buffers stay mapped in the pool, up to a quarter of the device's memory, so that
/// the next results of the same sizes need no new mapping (the pool would otherwise give
/// everything back at each synchronisation, and `expm`, for one, synchronises once per call).
/// Buffers still held are not touched.
///
/// ```
/// // Without a GPU this is the same `NoGpu` error as every GPU entry point.
/// assert_eq!(polymat::gpu::release_cached_memory().is_ok(), polymat::gpu::available());
/// ```
///
/// # Errors
/// [`Error::NoGpu`](crate::Error::NoGpu) without a usable GPU, [`Error::Gpu`](crate::Error::Gpu)
/// if queued work failed or the driver refused.
pub fn release_cached_memory() -> Result<()> {
    backend::release_cached_memory()
}

/// Environment variable read once, on first use, when [`set_gauss_products`] has not been
/// called: `0` turns Gauss's products off (any other value, or none, leaves them on).
pub const GAUSS_PRODUCTS_ENV: &str = "POLYMAT_GPU_GAUSS";

/// Whether GPU `expm` is allowed Gauss's products (an `engine::flag`).
static GAUSS_PRODUCTS: AtomicUsize = AtomicUsize::new(0);

/// Whether GPU `expm` forms its matrix products by Gauss's method: three real products instead
/// of four (cuBLAS `Zgemm3m`), as the CPU's large products do (the "3M" method). The setting is
/// process-wide; it changes results by rounding only, and only `expm` of a `GpuDense` (or of a
/// `GpuCsr`, which it densifies) reads it: `matmul` of GPU data is always `Zgemm`.
///
/// Gauss's method is used only where it cannot overflow where the complex product would not:
/// for a matrix of 1-norm at most 330, every product `expm` forms (the Taylor terms and the
/// squarings) has entries below e³³⁰ < 2⁴⁸⁰, the CPU method's bound. Larger norms keep `Zgemm`.
/// Its error is bounded normwise like the complex product's, with a constant a few times
/// larger for imaginary parts much smaller than the real ones (Higham, *Accuracy and
/// Stability of Numerical Algorithms*, §23.2.4).
///
/// Gauss's products made `expm` of an n × n matrix 8–13 % faster from n = 1024 and were level
/// at n = 512 (`docs/benchmarks/gpu.md`).
///
/// ```
/// polymat::gpu::set_gauss_products(false);
/// assert!(!polymat::gpu::gauss_products());
/// polymat::gpu::set_gauss_products(true);
/// assert!(polymat::gpu::gauss_products());
/// ```
pub fn set_gauss_products(on: bool) {
    crate::engine::set_flag(&GAUSS_PRODUCTS, on);
}

/// Whether GPU `expm` may use Gauss's three-real-product method: on unless turned off by
/// [`set_gauss_products`] or the environment variable [`GAUSS_PRODUCTS_ENV`]. See
/// [`set_gauss_products`] for the measurement behind the default.
pub fn gauss_products() -> bool {
    crate::engine::flag(&GAUSS_PRODUCTS, GAUSS_PRODUCTS_ENV)
}

/// The CUDA stream every [`GpuDense`] lives on, for raw cudarc or cuBLAS calls on
/// [`GpuDense::cuda_slice`] buffers (feature `cuda` only).
///
/// # Errors
/// [`Error::NoGpu`](crate::Error::NoGpu) without a usable GPU.
#[cfg(feature = "cuda")]
pub fn stream() -> Result<std::sync::Arc<cudarc::driver::CudaStream>> {
    cuda::stream()
}

impl From<GpuDense> for Data {
    /// A handle of kind [`Kind::GPU_DENSE`].
    fn from(value: GpuDense) -> Data {
        Data::with_kind(Kind::GPU_DENSE, value)
    }
}

impl From<GpuCsr> for Data {
    /// A handle of kind [`Kind::GPU_CSR`].
    fn from(value: GpuCsr) -> Data {
        Data::with_kind(Kind::GPU_CSR, value)
    }
}
