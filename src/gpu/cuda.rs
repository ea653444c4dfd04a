//! The CUDA backend of [`GpuDense`] (feature `cuda`): device discovery, the cached context,
//! stream, cuBLAS handle and NVRTC kernels, and every GPU kernel.

use std::ffi::c_int;
use std::fmt;
use std::sync::{Arc, OnceLock};

use cudarc::cublas::CudaBlas;
use cudarc::cublas::sys as blas;
use cudarc::cublas::sys::cublasOperation_t::{CUBLAS_OP_C, CUBLAS_OP_N};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, LaunchConfig,
    PushKernelArg,
};

use crate::c64;
use crate::error::{Error, Result};
use crate::ops::Diagonals;
use crate::ops::inner::{expect_shapes, inner_op_shapes, inner_shapes};
use crate::ops::reshape::reshape_shape;
use crate::ops::{same_shape, square};
use crate::storage::{Dense, Storage};

/// One complex entry in device memory: `[re, im]`, the layout of [`c64`].
pub type Elem = [f64; 2];

/// The NVRTC source of the element-wise and reduction kernels.
const KERNELS: &str = include_str!("kernels.cu");

/// Threads per block; the reduction kernels assume exactly this many.
const BLOCK: u32 = 256;

/// The kernels, loaded once from the compiled module.
struct Funcs {
    scale: CudaFunction,
    multiply: CudaFunction,
    conj: CudaFunction,
    transpose: CudaFunction,
    kron: CudaFunction,
    tidyup: CudaFunction,
    add_strided: CudaFunction,
    reshape: CudaFunction,
    lincomb: CudaFunction,
    strided_sum: CudaFunction,
    max_abs: CudaFunction,
    max_col_abs_sum: CudaFunction,
    herm_dev: CudaFunction,
}

/// Device 0 with everything polymat needs on it, created once per process.
pub(crate) struct Device {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    blas: CudaBlas,
    f: Funcs,
    name: String,
}

static DEVICE: OnceLock<std::result::Result<Device, String>> = OnceLock::new();

/// The GPU, opened on first use; the outcome (or the reason there is none) is cached.
pub(crate) fn device() -> Result<&'static Device> {
    DEVICE
        .get_or_init(open)
        .as_ref()
        .map_err(|reason| Error::NoGpu {
            reason: reason.clone(),
        })
}

/// Probes the libraries before any call that would panic without them, then opens device 0.
fn open() -> std::result::Result<Device, String> {
    // SAFETY: each probe only tries to dlopen the library by its usual names.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err("the CUDA driver library (libcuda) was not found".into());
    }
    let count = CudaContext::device_count()
        .map_err(|e| format!("the CUDA driver failed to initialise: {e}"))?;
    if count < 1 {
        return Err("the CUDA driver reports no device".into());
    }
    // SAFETY: as above.
    if !unsafe { cudarc::cublas::sys::is_culib_present() } {
        return Err("cuBLAS (libcublas) was not found".into());
    }
    // SAFETY: as above.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err("NVRTC (libnvrtc) was not found".into());
    }
    let ctx = CudaContext::new(0).map_err(|e| format!("cannot open device 0: {e}"))?;
    // SAFETY: every GpuDense buffer lives on the single stream created below, so the stream
    // orders all uses and frees; per-buffer events would only add two events per allocation.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx
        .new_stream()
        .map_err(|e| format!("cannot create a stream: {e}"))?;
    let blas = CudaBlas::new(stream.clone()).map_err(|e| format!("cuBLAS: {e}"))?;
    let ptx = cudarc::nvrtc::compile_ptx(KERNELS).map_err(|e| format!("NVRTC: {e}"))?;
    let module = ctx
        .load_module(ptx)
        .map_err(|e| format!("cannot load the kernels: {e}"))?;
    let load = |name: &str| {
        module
            .load_function(name)
            .map_err(|e| format!("kernel {name}: {e}"))
    };
    let f = Funcs {
        scale: load("pm_scale")?,
        multiply: load("pm_multiply")?,
        conj: load("pm_conj")?,
        transpose: load("pm_transpose")?,
        kron: load("pm_kron")?,
        tidyup: load("pm_tidyup")?,
        add_strided: load("pm_add_strided")?,
        reshape: load("pm_reshape")?,
        lincomb: load("pm_lincomb")?,
        strided_sum: load("pm_strided_sum")?,
        max_abs: load("pm_max_abs")?,
        max_col_abs_sum: load("pm_max_col_abs_sum")?,
        herm_dev: load("pm_herm_dev")?,
    };
    let name = ctx.name().unwrap_or_else(|_| "CUDA device 0".into());
    Ok(Device {
        ctx,
        stream,
        blas,
        f,
        name,
    })
}

/// The device's name, e.g. `"NVIDIA H100 80GB HBM3"`.
pub(crate) fn device_name() -> Result<String> {
    Ok(device()?.name.clone())
}

/// Waits for all queued GPU work.
pub(crate) fn synchronize() -> Result<()> {
    device()?
        .stream
        .synchronize()
        .map_err(gpu_err("synchronize"))
}

/// The stream every [`GpuDense`] lives on, for raw cudarc / cuBLAS interop.
pub(crate) fn stream() -> Result<Arc<CudaStream>> {
    Ok(device()?.stream.clone())
}

fn gpu_err<E: fmt::Display>(op: &'static str) -> impl FnOnce(E) -> Error {
    move |e| Error::Gpu {
        op: op.to_owned(),
        reason: e.to_string(),
    }
}

/// A dimension as cuBLAS's 32-bit `int`.
fn int(op: &'static str, x: usize) -> Result<c_int> {
    c_int::try_from(x).map_err(|_| Error::Gpu {
        op: op.to_owned(),
        reason: format!("dimension {x} exceeds cuBLAS's 32-bit limit"),
    })
}

/// A leading dimension: cuBLAS wants at least 1 even for empty matrices.
fn ld(op: &'static str, rows: usize) -> Result<c_int> {
    int(op, rows.max(1))
}

fn cplx(z: c64) -> blas::cuDoubleComplex {
    blas::cuDoubleComplex { x: z.re, y: z.im }
}

fn grid(n: usize) -> LaunchConfig {
    let blocks = n.div_ceil(BLOCK as usize).clamp(1, 1 << 20) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn one_block() -> LaunchConfig {
    LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

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
    /// allocation is not portable.
    buf: CudaSlice<Elem>,
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

    /// Uninitialised storage; every caller writes all `rows·cols` entries before reading.
    fn uninit(dev: &Device, rows: usize, cols: usize) -> Result<GpuDense> {
        let len = rows.checked_mul(cols).ok_or_else(|| Error::Gpu {
            op: "alloc".into(),
            reason: format!("{rows}×{cols} entries overflow usize"),
        })?;
        // SAFETY: the memory is unset; see the function's contract.
        let buf = unsafe { dev.stream.alloc::<Elem>(len.max(1)) }.map_err(gpu_err("alloc"))?;
        Ok(GpuDense { rows, cols, buf })
    }

    /// The `rows × cols` zero matrix on the GPU.
    ///
    /// # Errors
    /// [`Error::NoGpu`] without a usable GPU, [`Error::Gpu`] if the allocation fails.
    pub fn zeros(rows: usize, cols: usize) -> Result<GpuDense> {
        let dev = device()?;
        let mut m = GpuDense::uninit(dev, rows, cols)?;
        dev.stream
            .memset_zeros(&mut m.buf)
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

    pub(crate) fn scaled_identity(n: usize, s: c64) -> Result<GpuDense> {
        let mut m = GpuDense::zeros(n, n)?;
        m.add_strided(None, s, 0, n + 1, n)?;
        Ok(m)
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
        if cols == 1 || mat.col_stride() == rows as isize {
            // Contiguous columns: one copy straight from faer's buffer.
            // SAFETY: column-major with column stride `rows`, so the `rows·cols` entries from
            // the first one are exactly the matrix.
            let all = unsafe { std::slice::from_raw_parts(mat.as_ptr(), rows * cols) };
            dev.stream
                .memcpy_htod(as_pairs(all), &mut m.buf)
                .map_err(gpu_err("upload"))?;
        } else {
            let mut packed = Vec::with_capacity(rows * cols);
            for j in 0..cols {
                packed.extend_from_slice(as_pairs(a.col(j)));
            }
            dev.stream
                .memcpy_htod(&packed, &mut m.buf)
                .map_err(gpu_err("upload"))?;
        }
        Ok(m)
    }

    /// Copies the matrix back to host memory (waits for queued work).
    ///
    /// # Errors
    /// [`Error::Gpu`] if the copy (or earlier queued work) fails.
    pub fn to_dense(&self) -> Result<Dense> {
        let dev = device()?;
        if self.len() == 0 {
            return Ok(Dense::zeros(self.rows, self.cols));
        }
        let host: Vec<Elem> = dev
            .stream
            .clone_dtoh(&self.buf.slice(..self.len()))
            .map_err(gpu_err("download"))?;
        dev.stream.synchronize().map_err(gpu_err("download"))?;
        Ok(Dense::from_fn(self.rows, self.cols, |i, j| {
            to_c64(host[i + j * self.rows])
        }))
    }

    /// A copy in new GPU memory.
    ///
    /// # Errors
    /// [`Error::Gpu`] if the allocation fails.
    pub fn try_clone(&self) -> Result<GpuDense> {
        let dev = device()?;
        let buf = dev.stream.clone_dtod(&self.buf).map_err(gpu_err("clone"))?;
        Ok(GpuDense {
            rows: self.rows,
            cols: self.cols,
            buf,
        })
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

    // ----- element-wise kernels -----

    fn map(&self, op: &'static str, f: &CudaFunction, extra: &[f64]) -> Result<GpuDense> {
        let dev = device()?;
        let mut out = GpuDense::uninit(dev, self.rows, self.cols)?;
        let n = self.len() as u64;
        if n == 0 {
            return Ok(out);
        }
        let mut b = dev.stream.launch_builder(f);
        b.arg(&self.buf).arg(&mut out.buf);
        for x in extra {
            b.arg(x);
        }
        b.arg(&n);
        // SAFETY: the kernel reads and writes `n` entries of buffers holding at least `n`.
        unsafe { b.launch(grid(self.len())) }.map_err(gpu_err(op))?;
        Ok(out)
    }

    /// `s·a`.
    pub(crate) fn scale(&self, s: c64) -> Result<GpuDense> {
        self.map("mul", &device()?.f.scale, &[s.re, s.im])
    }

    /// Entry-wise complex conjugate.
    pub(crate) fn conj(&self) -> Result<GpuDense> {
        self.map("conj", &device()?.f.conj, &[])
    }

    /// QuTiP's `tidyup`: real and imaginary parts below `atol` set to zero.
    pub(crate) fn tidyup(&self, atol: f64) -> Result<GpuDense> {
        self.map("tidyup", &device()?.f.tidyup, &[atol])
    }

    /// Entry-wise (Hadamard) product.
    pub(crate) fn multiply(&self, b: &GpuDense) -> Result<GpuDense> {
        same_shape("multiply", self.shape(), b.shape())?;
        let dev = device()?;
        let mut out = GpuDense::uninit(dev, self.rows, self.cols)?;
        let n = self.len() as u64;
        if n == 0 {
            return Ok(out);
        }
        let mut l = dev.stream.launch_builder(&dev.f.multiply);
        l.arg(&self.buf).arg(&b.buf).arg(&mut out.buf).arg(&n);
        // SAFETY: three buffers of at least `n` entries.
        unsafe { l.launch(grid(self.len())) }.map_err(gpu_err("multiply"))?;
        Ok(out)
    }

    /// The transpose, conjugated when `conj` (the adjoint).
    pub(crate) fn transpose(&self, conj: bool) -> Result<GpuDense> {
        let op = if conj { "adjoint" } else { "transpose" };
        let dev = device()?;
        let mut out = GpuDense::uninit(dev, self.cols, self.rows)?;
        if self.len() == 0 {
            return Ok(out);
        }
        let (m, n, c) = (self.rows as u64, self.cols as u64, i32::from(conj));
        let mut l = dev.stream.launch_builder(&dev.f.transpose);
        l.arg(&self.buf).arg(&mut out.buf).arg(&m).arg(&n).arg(&c);
        // SAFETY: reads and writes `m·n` entries of buffers that hold them.
        unsafe { l.launch(grid(self.len())) }.map_err(gpu_err(op))?;
        Ok(out)
    }

    /// The Kronecker product `a ⊗ b`.
    pub(crate) fn kron(&self, b: &GpuDense) -> Result<GpuDense> {
        let dev = device()?;
        let rows = self.rows.checked_mul(b.rows);
        let cols = self.cols.checked_mul(b.cols);
        let (Some(rows), Some(cols)) = (rows, cols) else {
            return Err(Error::shape(
                "kron",
                &[self.shape(), b.shape()],
                "the result's dimensions overflow usize",
            ));
        };
        let mut out = GpuDense::uninit(dev, rows, cols)?;
        let total = out.len();
        if total == 0 {
            return Ok(out);
        }
        let dims = [self.rows, self.cols, b.rows, b.cols].map(|x| x as u64);
        let mut l = dev.stream.launch_builder(&dev.f.kron);
        l.arg(&self.buf).arg(&b.buf).arg(&mut out.buf);
        for d in &dims {
            l.arg(d);
        }
        // SAFETY: indices stay below each operand's `rows·cols` and the output's length.
        unsafe { l.launch(grid(total)) }.map_err(gpu_err("kron"))?;
        Ok(out)
    }

    /// Row-major (numpy) reshape to `to`.
    pub(crate) fn reshape(&self, to: (usize, usize)) -> Result<GpuDense> {
        reshape_shape("reshape", self.shape(), to)?;
        let dev = device()?;
        let mut out = GpuDense::uninit(dev, to.0, to.1)?;
        if self.len() == 0 {
            return Ok(out);
        }
        let dims = [self.rows, self.cols, to.0, to.1].map(|x| x as u64);
        let mut l = dev.stream.launch_builder(&dev.f.reshape);
        l.arg(&self.buf).arg(&mut out.buf);
        for d in &dims {
            l.arg(d);
        }
        // SAFETY: a permutation of `len` entries.
        unsafe { l.launch(grid(self.len())) }.map_err(gpu_err("reshape"))?;
        Ok(out)
    }

    /// The same column-major entries as a `rows × cols` matrix (a device-to-device copy).
    pub(crate) fn relabel(&self, op: &'static str, rows: usize, cols: usize) -> Result<GpuDense> {
        reshape_shape(op, self.shape(), (rows, cols))?;
        let mut out = self.try_clone()?;
        out.rows = rows;
        out.cols = cols;
        Ok(out)
    }

    /// `self[start + t·stride] += vals[t]` (or `+= s` without `vals`) for `t < count`.
    fn add_strided(
        &mut self,
        vals: Option<&CudaSlice<Elem>>,
        s: c64,
        start: usize,
        stride: usize,
        count: usize,
    ) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        debug_assert!(start + (count - 1) * stride < self.len());
        let dev = device()?;
        let (start, stride, n) = (start as u64, stride as u64, count as u64);
        let null = 0u64;
        let mut l = dev.stream.launch_builder(&dev.f.add_strided);
        l.arg(&mut self.buf);
        match vals {
            Some(v) => l.arg(v),
            None => l.arg(&null),
        };
        l.arg(&s.re).arg(&s.im).arg(&start).arg(&stride).arg(&n);
        // SAFETY: the callers' offsets stay inside the matrix (diagonal positions).
        unsafe { l.launch(grid(count)) }.map_err(gpu_err("diag"))?;
        Ok(())
    }

    /// A matrix from its diagonals (already validated by the dispatcher's check); repeated
    /// offsets add up.
    pub(crate) fn diag(p: &Diagonals) -> Result<GpuDense> {
        let dev = device()?;
        let (rows, cols) = p.shape;
        let mut m = GpuDense::zeros(rows, cols)?;
        for (d, &k) in p.diagonals.iter().zip(&p.offsets) {
            let (r0, c0) = if k >= 0 {
                (0, k.unsigned_abs())
            } else {
                (k.unsigned_abs(), 0)
            };
            let len = rows.saturating_sub(r0).min(cols.saturating_sub(c0));
            if d.len() != len {
                return Err(Error::argument(
                    "diag",
                    format!(
                        "the diagonal at offset {k} has {} entries, expected {len}",
                        d.len()
                    ),
                ));
            }
            if len == 0 {
                continue;
            }
            let vals = dev
                .stream
                .clone_htod(as_pairs(d))
                .map_err(gpu_err("diag"))?;
            m.add_strided(
                Some(&vals),
                c64::new(0.0, 0.0),
                r0 + c0 * rows,
                rows + 1,
                len,
            )?;
        }
        Ok(m)
    }

    // ----- cuBLAS -----

    /// `alpha·op(a)·op(b) + beta·c` into a new matrix (`c` is copied first when given).
    #[allow(clippy::too_many_arguments)]
    fn gemm(
        op: &'static str,
        a: &GpuDense,
        ta: blas::cublasOperation_t,
        b: &GpuDense,
        tb: blas::cublasOperation_t,
        alpha: c64,
        beta: c64,
        c: Option<&GpuDense>,
    ) -> Result<GpuDense> {
        let dims = |x: &GpuDense, t| {
            if t == CUBLAS_OP_N {
                x.shape()
            } else {
                (x.cols, x.rows)
            }
        };
        let (m, k) = dims(a, ta);
        let (k2, n) = dims(b, tb);
        if k != k2 || c.is_some_and(|c| c.shape() != (m, n)) {
            return Err(Error::shape(
                op,
                &[a.shape(), b.shape()],
                "the inner dimensions must agree",
            ));
        }
        let dev = device()?;
        let mut out = match c {
            Some(c) => c.try_clone()?,
            None => GpuDense::uninit(dev, m, n)?,
        };
        if m * n == 0 {
            return Ok(out);
        }
        let beta = if c.is_some() {
            beta
        } else {
            c64::new(0.0, 0.0)
        };
        if k == 0 {
            // cuBLAS does not scale C when k = 0 with beta = 0 on every version: zero it here.
            return if c.is_some() {
                out.scale(beta)
            } else {
                GpuDense::zeros(m, n)
            };
        }
        let (mi, ni, ki) = (int(op, m)?, int(op, n)?, int(op, k)?);
        let (lda, ldb, ldc) = (ld(op, a.rows)?, ld(op, b.rows)?, ld(op, m)?);
        let (alpha, beta) = (cplx(alpha), cplx(beta));
        dev.ctx.bind_to_thread().map_err(gpu_err(op))?;
        let (pa, _ga) = a.buf.device_ptr(&dev.stream);
        let (pb, _gb) = b.buf.device_ptr(&dev.stream);
        let (pc, _gc) = out.buf.device_ptr_mut(&dev.stream);
        // SAFETY: dimensions and leading dimensions describe the three buffers exactly; the
        // guards keep them alive and the handle runs on their stream.
        unsafe {
            blas::cublasZgemm_v2(
                *dev.blas.handle(),
                ta,
                tb,
                mi,
                ni,
                ki,
                &alpha,
                pa as *const blas::cuDoubleComplex,
                lda,
                pb as *const blas::cuDoubleComplex,
                ldb,
                &beta,
                pc as *mut blas::cuDoubleComplex,
                ldc,
            )
        }
        .result()
        .map_err(gpu_err(op))?;
        drop((_ga, _gb, _gc));
        Ok(out)
    }

    /// `a·b` (cuBLAS Zgemm).
    pub(crate) fn matmul(&self, b: &GpuDense) -> Result<GpuDense> {
        let one = c64::new(1.0, 0.0);
        GpuDense::gemm("matmul", self, CUBLAS_OP_N, b, CUBLAS_OP_N, one, one, None)
    }

    /// `a·b†` (cuBLAS Zgemm with the conjugate-transpose flag).
    pub(crate) fn matmul_dag(&self, b: &GpuDense) -> Result<GpuDense> {
        let one = c64::new(1.0, 0.0);
        GpuDense::gemm(
            "matmul_dag",
            self,
            CUBLAS_OP_N,
            b,
            CUBLAS_OP_C,
            one,
            one,
            None,
        )
    }

    /// `a + s·b` (cuBLAS Zgeam).
    pub(crate) fn add_scaled(&self, b: &GpuDense, s: c64) -> Result<GpuDense> {
        const OP: &str = "add";
        same_shape(OP, self.shape(), b.shape())?;
        let dev = device()?;
        let mut out = GpuDense::uninit(dev, self.rows, self.cols)?;
        if self.len() == 0 {
            return Ok(out);
        }
        let (m, n, l) = (int(OP, self.rows)?, int(OP, self.cols)?, ld(OP, self.rows)?);
        let (alpha, beta) = (cplx(c64::new(1.0, 0.0)), cplx(s));
        dev.ctx.bind_to_thread().map_err(gpu_err(OP))?;
        let (pa, _ga) = self.buf.device_ptr(&dev.stream);
        let (pb, _gb) = b.buf.device_ptr(&dev.stream);
        let (pc, _gc) = out.buf.device_ptr_mut(&dev.stream);
        // SAFETY: three m×n column-major buffers with leading dimension m.
        unsafe {
            blas::cublasZgeam(
                *dev.blas.handle(),
                CUBLAS_OP_N,
                CUBLAS_OP_N,
                m,
                n,
                &alpha,
                pa as *const blas::cuDoubleComplex,
                l,
                &beta,
                pb as *const blas::cuDoubleComplex,
                l,
                pc as *mut blas::cuDoubleComplex,
                l,
            )
        }
        .result()
        .map_err(gpu_err(OP))?;
        drop((_ga, _gb, _gc));
        Ok(out)
    }

    /// `Σ x̄ᵢ yᵢ` (`conj`) or `Σ xᵢ yᵢ` over the first `n` entries of two buffers (cuBLAS).
    fn dot(op: &'static str, x: &GpuDense, y: &GpuDense, n: usize, conj: bool) -> Result<c64> {
        if n == 0 {
            return Ok(c64::new(0.0, 0.0));
        }
        if x.len() < n || y.len() < n {
            return Err(Error::shape(
                op,
                &[x.shape(), y.shape()],
                "dot: operands too short",
            ));
        }
        let dev = device()?;
        let ni = int(op, n)?;
        let mut r = blas::cuDoubleComplex { x: 0.0, y: 0.0 };
        dev.ctx.bind_to_thread().map_err(gpu_err(op))?;
        let (px, _gx) = x.buf.device_ptr(&dev.stream);
        let (py, _gy) = y.buf.device_ptr(&dev.stream);
        let f = if conj {
            blas::cublasZdotc_v2
        } else {
            blas::cublasZdotu_v2
        };
        // SAFETY: both buffers hold at least `n` entries; the result is a host scalar (the
        // handle's default pointer mode), so the call waits for it.
        unsafe {
            f(
                *dev.blas.handle(),
                ni,
                px as *const blas::cuDoubleComplex,
                1,
                py as *const blas::cuDoubleComplex,
                1,
                &mut r,
            )
        }
        .result()
        .map_err(gpu_err(op))?;
        Ok(c64::new(r.x, r.y))
    }

    /// `⟨left|right⟩`: a 1×n left is a bra (no conjugation), an n×1 left a ket.
    pub(crate) fn inner(&self, right: &GpuDense) -> Result<c64> {
        inner_shapes("inner", self.shape(), right.shape())?;
        GpuDense::dot("inner", self, right, right.rows, self.rows != 1)
    }

    /// `⟨left|op|right⟩`.
    pub(crate) fn inner_op(&self, op: &GpuDense, right: &GpuDense) -> Result<c64> {
        inner_op_shapes("inner_op", self.shape(), op.shape(), right.shape())?;
        let n = if self.rows == 1 { self.cols } else { self.rows };
        let t = op.matmul(right)?;
        GpuDense::dot("inner_op", self, &t, n, self.rows != 1)
    }

    /// `⟨ψ|op|ψ⟩` for a ket state, `Tr(op·ρ)` for an operator state.
    pub(crate) fn expect(&self, state: &GpuDense) -> Result<c64> {
        expect_shapes("expect", self.shape(), state.shape())?;
        let n = self.rows;
        if state.cols == 1 {
            // A ket (a 1×1 state too, as in QuTiP): ψ†·(op·ψ).
            let t = self.matmul(state)?;
            return GpuDense::dot("expect", state, &t, n, true);
        }
        // Tr(op·ρ) = Σᵢⱼ opᵢⱼ ρⱼᵢ = vec(op) · vec(ρᵀ).
        let rt = state.transpose(false)?;
        GpuDense::dot("expect", self, &rt, n * n, false)
    }

    /// `|ψ⟩⟨ψ|` from a ket, `⟨ψ|†⟨ψ|` from a bra.
    pub(crate) fn project(&self) -> Result<GpuDense> {
        let one = c64::new(1.0, 0.0);
        if self.cols == 1 {
            GpuDense::gemm(
                "project",
                self,
                CUBLAS_OP_N,
                self,
                CUBLAS_OP_C,
                one,
                one,
                None,
            )
        } else if self.rows == 1 {
            GpuDense::gemm(
                "project",
                self,
                CUBLAS_OP_C,
                self,
                CUBLAS_OP_N,
                one,
                one,
                None,
            )
        } else {
            Err(Error::shape(
                "project",
                &[self.shape()],
                "the operand must be a ket (n×1) or a bra (1×n)",
            ))
        }
    }

    // ----- reductions -----

    /// Runs a max-reduction kernel into a zeroed device scalar and reads it back.
    fn max_reduce(
        &self,
        op: &'static str,
        f: &CudaFunction,
        dims: &[u64],
        cfg: LaunchConfig,
    ) -> Result<f64> {
        if self.len() == 0 {
            return Ok(0.0);
        }
        let dev = device()?;
        let mut out = dev.stream.alloc_zeros::<f64>(1).map_err(gpu_err(op))?;
        let mut l = dev.stream.launch_builder(f);
        l.arg(&self.buf).arg(&mut out);
        for d in dims {
            l.arg(d);
        }
        // SAFETY: the kernels read within `dims` of this buffer and write one f64.
        unsafe { l.launch(cfg) }.map_err(gpu_err(op))?;
        let v = dev.stream.clone_dtoh(&out).map_err(gpu_err(op))?;
        dev.stream.synchronize().map_err(gpu_err(op))?;
        Ok(v[0])
    }

    /// `max |aᵢⱼ|` (NaN if any entry is NaN).
    pub(crate) fn norm_max(&self) -> Result<f64> {
        let n = self.len();
        self.max_reduce("norm_max", &device()?.f.max_abs, &[n as u64], grid(n))
    }

    /// The induced 1-norm, `max_j Σᵢ |aᵢⱼ|`.
    pub(crate) fn norm_one(&self) -> Result<f64> {
        let cfg = LaunchConfig {
            grid_dim: (self.cols.clamp(1, 1 << 16) as u32, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let dims = [self.rows as u64, self.cols as u64];
        self.max_reduce("norm_one", &device()?.f.max_col_abs_sum, &dims, cfg)
    }

    /// `‖A‖_F` (cuBLAS Dznrm2, which scales against overflow).
    pub(crate) fn norm_frobenius(&self) -> Result<f64> {
        const OP: &str = "norm_frobenius";
        if self.len() == 0 {
            return Ok(0.0);
        }
        let dev = device()?;
        let n = int(OP, self.len())?;
        let mut r = 0.0f64;
        dev.ctx.bind_to_thread().map_err(gpu_err(OP))?;
        let (p, _g) = self.buf.device_ptr(&dev.stream);
        // SAFETY: `n` entries with unit stride; host result.
        unsafe {
            blas::cublasDznrm2_v2(
                *dev.blas.handle(),
                n,
                p as *const blas::cuDoubleComplex,
                1,
                &mut r,
            )
        }
        .result()
        .map_err(gpu_err(OP))?;
        Ok(r)
    }

    /// Whether every entry has modulus ≤ `atol`.
    pub(crate) fn iszero(&self, atol: f64) -> Result<bool> {
        Ok(self.norm_max()? <= atol)
    }

    /// Whether `a = a†` within `atol`, entry by entry; non-square is not Hermitian.
    pub(crate) fn isherm(&self, atol: f64) -> Result<bool> {
        if self.rows != self.cols {
            return Ok(false);
        }
        let n = self.rows;
        let dev = self.max_reduce("isherm", &device()?.f.herm_dev, &[n as u64], grid(n * n))?;
        Ok(dev <= atol)
    }

    /// `Tr a` for square `a`.
    pub(crate) fn trace(&self) -> Result<c64> {
        const OP: &str = "trace";
        square(OP, self.shape())?;
        let n = self.rows;
        if n == 0 {
            return Ok(c64::new(0.0, 0.0));
        }
        let dev = device()?;
        let mut out = GpuDense::uninit(dev, 1, 1)?;
        let (start, stride, count) = (0u64, (n + 1) as u64, n as u64);
        let mut l = dev.stream.launch_builder(&dev.f.strided_sum);
        l.arg(&self.buf)
            .arg(&mut out.buf)
            .arg(&start)
            .arg(&stride)
            .arg(&count);
        // SAFETY: the diagonal positions are below n².
        unsafe { l.launch(one_block()) }.map_err(gpu_err(OP))?;
        Ok(out.to_dense()?.get(0, 0))
    }

    // ----- matrix functions -----

    /// `aⁿ` by square-and-multiply (Zgemm).
    pub(crate) fn pow(&self, mut n: u32) -> Result<GpuDense> {
        square("pow", self.shape())?;
        let mut result: Option<GpuDense> = None;
        let mut base: Option<GpuDense> = None;
        while n > 0 {
            let b = base.as_ref().unwrap_or(self);
            if n & 1 == 1 {
                result = Some(match result {
                    None => b.try_clone()?,
                    Some(r) => r.matmul(b)?,
                });
            }
            n >>= 1;
            if n > 0 {
                base = Some(b.matmul(b)?);
            }
        }
        match result {
            Some(r) => Ok(r),
            None => GpuDense::identity(self.rows),
        }
    }

    /// `c0·I + c1·x1 + c2·x2 + c3·x3` (one element-wise pass).
    fn lincomb(x: [Option<&GpuDense>; 3], c: [f64; 4]) -> Result<GpuDense> {
        let x1 = x[0].expect("lincomb needs x1");
        let dev = device()?;
        let n = x1.rows;
        let mut out = GpuDense::uninit(dev, n, n)?;
        let null = 0u64;
        let nn = n as u64;
        let mut l = dev.stream.launch_builder(&dev.f.lincomb);
        l.arg(&x1.buf);
        for xi in &x[1..] {
            match xi {
                Some(m) => l.arg(&m.buf),
                None => l.arg(&null),
            };
        }
        l.arg(&mut out.buf);
        for ci in &c {
            l.arg(ci);
        }
        l.arg(&nn);
        // SAFETY: n×n buffers throughout.
        unsafe { l.launch(grid(n * n)) }.map_err(gpu_err("expm"))?;
        Ok(out)
    }

    /// `exp(a)`: scaling and squaring around a degree-18 Taylor polynomial evaluated by
    /// Paterson–Stockmeyer, so only Zgemm is needed (7 products plus one per squaring).
    ///
    /// `a` is scaled by `2⁻ˢ` so that `‖a/2ˢ‖₁ ≤ 1`; the truncation error is then below
    /// `e/19! ≈ 2·10⁻¹⁷`, under the rounding of the products.
    pub(crate) fn expm(&self) -> Result<GpuDense> {
        const OP: &str = "expm";
        let n = self.rows;
        square(OP, self.shape())?;
        if n == 0 {
            return GpuDense::zeros(0, 0);
        }
        let norm = self.norm_one()?;
        if !norm.is_finite() {
            return Err(Error::Numerical {
                op: OP.into(),
                reason: "the matrix has non-finite entries".into(),
            });
        }
        let s = if norm > 1.0 {
            norm.log2().ceil() as i32
        } else {
            0
        };
        let x = self.scale(c64::new(0.5f64.powi(s), 0.0))?;
        let one = c64::new(1.0, 0.0);
        let x2 = x.matmul(&x)?;
        let x3 = x2.matmul(&x)?;
        let x4 = x2.matmul(&x2)?;
        // Taylor coefficients 1/k!, k = 0..=18.
        let mut c = [0.0f64; 19];
        c[0] = 1.0;
        for k in 1..19 {
            c[k] = c[k - 1] / k as f64;
        }
        // p = B0 + X4·(B1 + X4·(B2 + X4·(B3 + X4·B4))), Bᵢ = Σ_{r<4} c_{4i+r} Xʳ (B4 stops at X²).
        let block = |i: usize, with_x3: bool| {
            let x3o = with_x3.then_some(&x3);
            let c3 = if with_x3 { c[4 * i + 3] } else { 0.0 };
            GpuDense::lincomb(
                [Some(&x), Some(&x2), x3o],
                [c[4 * i], c[4 * i + 1], c[4 * i + 2], c3],
            )
        };
        let mut acc = block(4, false)?;
        for i in (0..4).rev() {
            let b = block(i, true)?;
            acc = GpuDense::gemm(OP, &x4, CUBLAS_OP_N, &acc, CUBLAS_OP_N, one, one, Some(&b))?;
        }
        for _ in 0..s {
            acc = acc.matmul(&acc)?;
        }
        Ok(acc)
    }
}

/// `Ok` when the GPU is usable (opening it on first call).
pub(crate) fn probe() -> Result<()> {
    device().map(|_| ())
}
