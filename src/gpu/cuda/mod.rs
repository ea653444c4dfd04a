//! The CUDA backend of [`GpuDense`] (feature `cuda`): the type and its transfers here; device
//! discovery in `device`, the NVRTC kernels in `launch` (element-wise work and reductions) and
//! `blocks` (block copies and comparisons), cuBLAS in `blas`, matrix functions in `expm`,
//! cuSOLVER (LU, Hermitian eigensolver, SVD) in `solver`; [`GpuCsr`] in `csr` (its kernels in
//! `sparse.cu`) and `sparse_blas` (cuSPARSE); freed small buffers kept for reuse in `spares`.

mod blas;
mod blocks;
mod csr;
mod device;
mod expm;
mod launch;
mod solver;
mod spares;
mod sparse_blas;

use std::fmt;
use std::mem::ManuallyDrop;

use cudarc::driver::CudaSlice;

pub use csr::GpuCsr;
use device::{Device, device, gpu_err};
pub(crate) use device::{device_name, probe, release_cached_memory, stream, synchronize};
pub(crate) use solver::{GpuLu, solver_available};
pub(crate) use sparse_blas::sparse_available;

use crate::error::{Error, Result};
use crate::scalar::c64;
use crate::storage::{Dense, Storage};

/// One complex entry in device memory: `[re, im]`, the layout of [`c64`].
pub type Elem = [f64; 2];

/// `&[c64]` as `&[[f64; 2]]`.
fn as_pairs(values: &[c64]) -> &[Elem] {
    // SAFETY: `Complex<f64>` is `#[repr(C)] { re: f64, im: f64 }`: same size, alignment and
    // layout as `[f64; 2]`; the length is unchanged.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<Elem>(), values.len()) }
}

fn to_c64(v: Elem) -> c64 {
    c64::new(v[0], v[1])
}

/// A dense complex matrix in GPU memory, column-major, on polymat's CUDA stream.
///
/// Created from a [`Dense`] ([`GpuDense::from_dense`]), by a constructor, or by any operation
/// with `Out::GpuDense`; freed (stream-ordered, back to the driver's memory pool) on drop.
/// Operations on GPU inputs are queued on the stream and return without waiting; reading a
/// value back ([`to_dense`](GpuDense::to_dense), a scalar result) waits for them.
pub struct GpuDense {
    rows: usize,
    cols: usize,
    /// `max(rows·cols, 1)` entries: an empty matrix keeps one unused entry, since a zero-byte
    /// allocation is not portable. Taken out only in `drop`.
    buf: ManuallyDrop<CudaSlice<Elem>>,
}

impl Drop for GpuDense {
    fn drop(&mut self) {
        // SAFETY: `buf` is not used again: this is the matrix's last use.
        let buf = unsafe { ManuallyDrop::take(&mut self.buf) };
        spares::put(buf);
    }
}

impl fmt::Debug for GpuDense {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GpuDense({}×{})", self.rows, self.cols)
    }
}

impl Storage for GpuDense {
    fn shape(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }
}

impl GpuDense {
    fn len(&self) -> usize {
        self.rows * self.cols
    }

    /// The matrix of a device buffer of `max(rows·cols, 1)` entries.
    fn from_slice(rows: usize, cols: usize, buf: CudaSlice<Elem>) -> GpuDense {
        GpuDense {
            rows,
            cols,
            buf: ManuallyDrop::new(buf),
        }
    }

    /// Uninitialised storage (a kept spare or new pool memory); every caller writes all
    /// `rows·cols` entries before reading.
    fn uninit(dev: &Device, rows: usize, cols: usize) -> Result<GpuDense> {
        let len = rows.checked_mul(cols).ok_or_else(|| Error::Gpu {
            op: "alloc".into(),
            reason: format!("{rows}×{cols} entries overflow usize"),
        })?;
        let buf = match spares::take(len.max(1)) {
            Some(buf) => buf,
            // SAFETY: the memory is unset; see the function's contract.
            None => unsafe { dev.stream.alloc::<Elem>(len.max(1)) }.map_err(gpu_err("alloc"))?,
        };
        Ok(GpuDense::from_slice(rows, cols, buf))
    }

    /// The `rows × cols` zero matrix on the GPU.
    ///
    /// # Errors
    /// [`Error::NoGpu`] without a usable GPU, [`Error::Gpu`] if the allocation fails.
    pub fn zeros(rows: usize, cols: usize) -> Result<GpuDense> {
        let dev = device()?;
        let mut m = GpuDense::uninit(dev, rows, cols)?;
        dev.stream
            .memset_zeros(&mut *m.buf)
            .map_err(gpu_err("zeros"))?;
        Ok(m)
    }

    /// The `n × n` identity on the GPU.
    ///
    /// # Errors
    /// As [`GpuDense::zeros`].
    pub fn identity(n: usize) -> Result<GpuDense> {
        GpuDense::scaled_identity(n, c64::new(1.0, 0.0))
    }

    /// Copies a [`Dense`] to the GPU.
    ///
    /// # Errors
    /// As [`GpuDense::zeros`].
    pub fn from_dense(a: &Dense) -> Result<GpuDense> {
        let dev = device()?;
        let (rows, cols) = a.shape();
        let mut m = GpuDense::uninit(dev, rows, cols)?;
        if rows * cols == 0 {
            return Ok(m);
        }
        let mat = a.as_ref();
        if mat.row_stride() == 1 && (cols == 1 || mat.col_stride() == rows as isize) {
            // Contiguous columns: one copy straight from faer's buffer.
            // SAFETY: column-major with column stride `rows`, so the `rows·cols` entries from
            // the first one are exactly the matrix.
            let all = unsafe { std::slice::from_raw_parts(mat.as_ptr(), rows * cols) };
            dev.stream
                .memcpy_htod(as_pairs(all), &mut *m.buf)
                .map_err(gpu_err("upload"))?;
        } else {
            let mut packed = Vec::with_capacity(rows * cols);
            for j in 0..cols {
                packed.extend(mat.col(j).iter().map(|z| [z.re, z.im]));
            }
            dev.stream
                .memcpy_htod(&packed, &mut *m.buf)
                .map_err(gpu_err("upload"))?;
        }
        Ok(m)
    }

    /// Copies the matrix back to host memory (waits for queued work).
    ///
    /// # Errors
    /// [`Error::Gpu`] if the copy (or earlier queued work) fails, [`Error::TooLarge`] if the
    /// host copy would pass the dense limit.
    pub fn to_dense(&self) -> Result<Dense> {
        let dev = device()?;
        if self.len() == 0 {
            return Dense::try_zeros(self.rows, self.cols);
        }
        let host: Vec<Elem> = dev
            .stream
            .clone_dtoh(&self.buf.slice(..self.len()))
            .map_err(gpu_err("download"))?;
        dev.stream.synchronize().map_err(gpu_err("download"))?;
        Dense::try_from_fn(self.rows, self.cols, |i, j| to_c64(host[i + j * self.rows]))
    }

    /// A copy in new GPU memory.
    ///
    /// # Errors
    /// [`Error::Gpu`] if the allocation fails.
    pub fn try_clone(&self) -> Result<GpuDense> {
        let dev = device()?;
        let buf = dev
            .stream
            .clone_dtod(&*self.buf)
            .map_err(gpu_err("clone"))?;
        Ok(GpuDense::from_slice(self.rows, self.cols, buf))
    }

    /// `(rows, columns)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    /// The device buffer: `rows·cols` entries `[re, im]`, column-major (plus one unused entry
    /// for an empty matrix), on [`gpu::stream`](crate::gpu::stream). For raw cuBLAS / kernel
    /// interop.
    pub fn cuda_slice(&self) -> &CudaSlice<[f64; 2]> {
        &self.buf
    }

    /// The device buffer for writing in place (same layout as [`cuda_slice`](Self::cuda_slice)).
    pub fn cuda_slice_mut(&mut self) -> &mut CudaSlice<[f64; 2]> {
        &mut self.buf
    }
}
