//! [`GpuDense`] without the `cuda` feature: the same API, but no value can be created, so every
//! constructor returns [`Error::NoGpu`] and every method on a value is statically unreachable
//! (candle's dummy-backend pattern).

use std::convert::Infallible;
use std::fmt;

use crate::error::{Error, Result};
use crate::scalar::c64;
use crate::storage::Diagonals;
use crate::storage::{Csr, Dense, Storage};

pub(crate) const REASON: &str = "polymat was built without the `cuda` feature";

fn no_gpu<T>() -> Result<T> {
    Err(Error::NoGpu {
        reason: REASON.into(),
    })
}

pub(crate) fn device_name() -> Result<String> {
    no_gpu()
}

pub(crate) fn synchronize() -> Result<()> {
    no_gpu()
}

pub(crate) fn release_cached_memory() -> Result<()> {
    no_gpu()
}

pub(crate) fn probe() -> Result<()> {
    no_gpu()
}

pub(crate) fn solver_available() -> bool {
    false
}

pub(crate) fn sparse_available() -> bool {
    false
}

/// An LU factorisation on the GPU; none can exist in this build.
pub(crate) struct GpuLu {
    never: Infallible,
}

impl GpuLu {
    pub(crate) fn solve(&self, b: &GpuDense, adjoint: bool) -> Result<GpuDense> {
        let _ = (b, adjoint);
        match self.never {}
    }
}

/// `(u, s, vh)` of a GPU SVD.
pub(crate) type GpuSvd = (Option<GpuDense>, Vec<f64>, Option<GpuDense>);

/// A dense complex matrix in GPU memory (see the `cuda` feature). In this build polymat has no
/// CUDA support: every constructor returns [`Error::NoGpu`].
pub struct GpuDense {
    never: Infallible,
}

impl fmt::Debug for GpuDense {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.never {}
    }
}

impl Storage for GpuDense {
    fn shape(&self) -> (usize, usize) {
        match self.never {}
    }
}

/// Methods on a value: a `GpuDense` cannot exist in this build, so none of them can run.
macro_rules! unreachable_methods {
    ($($(#[$m:meta])* $vis:vis fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        $(
            $(#[$m])*
            $vis fn $name(&self $(, $arg: $ty)*) -> $ret {
                $(let _ = $arg;)*
                match self.never {}
            }
        )*
    };
}

impl GpuDense {
    /// The `rows × cols` zero matrix on the GPU.
    ///
    /// # Errors
    /// Always [`Error::NoGpu`] in this build.
    pub fn zeros(rows: usize, cols: usize) -> Result<GpuDense> {
        let _ = (rows, cols);
        no_gpu()
    }

    /// The `n × n` identity on the GPU.
    ///
    /// # Errors
    /// Always [`Error::NoGpu`] in this build.
    pub fn identity(n: usize) -> Result<GpuDense> {
        let _ = n;
        no_gpu()
    }

    /// Copies a [`Dense`] to the GPU.
    ///
    /// # Errors
    /// Always [`Error::NoGpu`] in this build.
    pub fn from_dense(a: &Dense) -> Result<GpuDense> {
        let _ = a;
        no_gpu()
    }

    pub(crate) fn scaled_identity(n: usize, s: c64) -> Result<GpuDense> {
        let _ = (n, s);
        no_gpu()
    }

    pub(crate) fn diag(p: &Diagonals) -> Result<GpuDense> {
        let _ = p;
        no_gpu()
    }

    unreachable_methods! {
        /// Copies the matrix back to host memory.
        ///
        /// # Errors
        /// Unreachable in this build.
        pub fn to_dense(&self) -> Result<Dense>;
        /// A copy in new GPU memory.
        ///
        /// # Errors
        /// Unreachable in this build.
        pub fn try_clone(&self) -> Result<GpuDense>;
        /// `(rows, columns)`.
        pub fn shape(&self) -> (usize, usize);
        pub(crate) fn scale(&self, s: c64) -> Result<GpuDense>;
        pub(crate) fn conj(&self) -> Result<GpuDense>;
        pub(crate) fn tidyup(&self, atol: f64) -> Result<GpuDense>;
        pub(crate) fn multiply(&self, b: &GpuDense) -> Result<GpuDense>;
        pub(crate) fn transpose(&self, conj: bool) -> Result<GpuDense>;
        pub(crate) fn kron(&self, b: &GpuDense) -> Result<GpuDense>;
        pub(crate) fn reshape(&self, to: (usize, usize)) -> Result<GpuDense>;
        pub(crate) fn relabel(&self, op: &'static str, rows: usize, cols: usize) -> Result<GpuDense>;
        pub(crate) fn matmul(&self, b: &GpuDense) -> Result<GpuDense>;
        pub(crate) fn matmul_dag(&self, b: &GpuDense) -> Result<GpuDense>;
        pub(crate) fn add_scaled(&self, b: &GpuDense, s: c64) -> Result<GpuDense>;
        pub(crate) fn inner(&self, right: &GpuDense) -> Result<c64>;
        pub(crate) fn inner_op(&self, op: &GpuDense, right: &GpuDense) -> Result<c64>;
        pub(crate) fn expect(&self, state: &GpuDense) -> Result<c64>;
        pub(crate) fn project(&self) -> Result<GpuDense>;
        pub(crate) fn norm_max(&self) -> Result<f64>;
        pub(crate) fn norm_one(&self) -> Result<f64>;
        pub(crate) fn norm_frobenius(&self) -> Result<f64>;
        pub(crate) fn iszero(&self, atol: f64) -> Result<bool>;
        pub(crate) fn isherm(&self, atol: f64) -> Result<bool>;
        pub(crate) fn trace(&self) -> Result<c64>;
        pub(crate) fn expm(&self) -> Result<GpuDense>;
        pub(crate) fn block(&self, rows: &std::ops::Range<usize>, cols: &std::ops::Range<usize>) -> Result<GpuDense>;
        pub(crate) fn overwrite_block(&self, b: &GpuDense, at: (usize, usize)) -> Result<GpuDense>;
        pub(crate) fn kron_transpose(&self, b: &GpuDense) -> Result<GpuDense>;
        pub(crate) fn sum_nonzero(&self) -> Result<(c64, f64, usize)>;
        pub(crate) fn expect_super(&self, rho: &GpuDense, n: usize) -> Result<c64>;
        pub(crate) fn ptrace_map(&self, full: &[usize], k: usize, r: usize) -> Result<GpuDense>;
        pub(crate) fn permute(&self, rows: Option<&[usize]>, cols: Option<&[usize]>) -> Result<GpuDense>;
        pub(crate) fn trace_oper_ket(&self, n: usize) -> Result<c64>;
        pub(crate) fn isdiag(&self, atol: f64) -> Result<bool>;
        pub(crate) fn isequal(&self, b: &GpuDense, atol: f64, rtol: f64) -> Result<bool>;
        pub(crate) fn lu(&self, op: &'static str) -> Result<GpuLu>;
        pub(crate) fn eigh(&self, vectors: bool) -> Result<(Vec<f64>, Option<GpuDense>)>;
        pub(crate) fn svd(&self, vectors: bool) -> Result<GpuSvd>;
    }
}

/// A sparse complex matrix in GPU memory (see the `cuda` feature). In this build polymat has no
/// CUDA support: every constructor returns [`Error::NoGpu`].
pub struct GpuCsr {
    never: Infallible,
}

impl fmt::Debug for GpuCsr {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.never {}
    }
}

impl Storage for GpuCsr {
    fn shape(&self) -> (usize, usize) {
        match self.never {}
    }
}

impl GpuCsr {
    /// Copies a [`Csr`] to the GPU.
    ///
    /// # Errors
    /// Always [`Error::NoGpu`] in this build.
    pub fn from_csr(a: &Csr) -> Result<GpuCsr> {
        let _ = a;
        no_gpu()
    }

    unreachable_methods! {
        /// Copies the matrix back to host memory.
        ///
        /// # Errors
        /// Unreachable in this build.
        pub fn to_csr(&self) -> Result<Csr>;
        /// The same matrix as a [`GpuDense`], on the GPU.
        ///
        /// # Errors
        /// Unreachable in this build.
        pub fn to_gpu_dense(&self) -> Result<GpuDense>;
        /// A copy in new GPU memory.
        ///
        /// # Errors
        /// Unreachable in this build.
        pub fn try_clone(&self) -> Result<GpuCsr>;
        /// `(rows, columns)`.
        pub fn shape(&self) -> (usize, usize);
        /// The number of stored entries.
        pub fn nnz(&self) -> usize;
        pub(crate) fn scale(&self, s: c64) -> Result<GpuCsr>;
        pub(crate) fn conj(&self) -> Result<GpuCsr>;
        pub(crate) fn trace(&self) -> Result<c64>;
        pub(crate) fn expect(&self, state: &GpuDense) -> Result<c64>;
        pub(crate) fn add_scaled(&self, b: &GpuCsr, s: c64) -> Result<GpuCsr>;
        pub(crate) fn kron(&self, b: &GpuCsr) -> Result<GpuCsr>;
        pub(crate) fn matmul_dense(&self, b: &GpuDense) -> Result<GpuDense>;
        pub(crate) fn transpose(&self, conj: bool) -> Result<GpuCsr>;
    }
}
