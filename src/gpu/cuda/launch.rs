//! The NVRTC kernels of `kernels.cu`: one launch helper, the element-wise kernels and the
//! reductions.

use cudarc::driver::{
    CudaFunction, CudaSlice, DeviceRepr, LaunchArgs, LaunchConfig, PushKernelArg,
};

use super::device::{device, gpu_err};
use super::{Elem, GpuDense, as_pairs};
use crate::error::{Error, Result};
use crate::scalar::{ZERO, c64};
use crate::shape::{kron_shape, reshape_shape, same_shape, square};
use crate::storage::Diagonals;

/// Threads per block; the reduction kernels assume exactly this many.
pub(super) const BLOCK: u32 = 256;

/// Enough blocks of [`BLOCK`] threads for `n` elements (grid-stride loops cover the rest).
pub(super) fn grid(n: usize) -> LaunchConfig {
    let blocks = n.div_ceil(BLOCK as usize).clamp(1, 1 << 20) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

pub(super) fn one_block() -> LaunchConfig {
    LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Queues a kernel whose arguments have been pushed onto `args`; errors become [`Error::Gpu`]
/// naming `op`.
///
/// # Safety
/// With these arguments and this configuration the kernel must only read and write inside
/// the buffers it was given (each call site says why its indices stay in bounds).
pub(super) unsafe fn launch(
    op: &'static str,
    args: LaunchArgs<'_>,
    cfg: LaunchConfig,
) -> Result<()> {
    let mut args = args;
    // SAFETY: the caller's contract.
    unsafe { args.launch(cfg) }.map(|_| ()).map_err(gpu_err(op))
}

/// `f` over the first `n` entries of `src` into new device memory (`max(n, 1)` entries);
/// `extra` are the kernel's scalar parameters. The element-wise maps of GpuDense, and of
/// GpuCsr's values.
///
/// # Errors
/// [`Error::InvalidArgument`] if `src` holds fewer than `n` entries; [`Error::Gpu`] if the
/// allocation or the launch fails.
pub(super) fn map_slice(
    op: &'static str,
    f: &CudaFunction,
    src: &CudaSlice<Elem>,
    n: usize,
    extra: &[f64],
) -> Result<CudaSlice<Elem>> {
    if src.len() < n {
        return Err(Error::argument(
            op,
            format!("{n} entries asked of a buffer of {}", src.len()),
        ));
    }
    let dev = device()?;
    // SAFETY: the kernel writes all `n` entries before anything reads them (the extra entry
    // of an empty buffer is never read).
    let mut out = unsafe { dev.stream.alloc::<Elem>(n.max(1)) }.map_err(gpu_err(op))?;
    if n == 0 {
        return Ok(out);
    }
    let len = n as u64;
    let mut b = dev.stream.launch_builder(f);
    b.arg(src).arg(&mut out);
    for x in extra {
        b.arg(x);
    }
    b.arg(&len);
    // SAFETY: the kernel reads and writes `n` entries of buffers holding at least `n`.
    unsafe { launch(op, b, grid(n)) }?;
    Ok(out)
}

/// The coefficients of `pm_lincombs`, passed by value (its `struct Lincombs`).
#[repr(C)]
#[derive(Clone, Copy)]
struct Lincombs {
    c: [f64; 25],
}

// SAFETY: a plain `#[repr(C)]` array of doubles, the layout of the kernel's `struct Lincombs`.
unsafe impl DeviceRepr for Lincombs {}

impl GpuDense {
    /// `f(a)` entry by entry into a new matrix; `extra` are the kernel's scalar parameters.
    fn map(&self, op: &'static str, f: &CudaFunction, extra: &[f64]) -> Result<GpuDense> {
        Ok(GpuDense::from_slice(
            self.rows,
            self.cols,
            map_slice(op, f, &self.buf, self.len(), extra)?,
        ))
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
        l.arg(&*self.buf).arg(&*b.buf).arg(&mut *out.buf).arg(&n);
        // SAFETY: three buffers of at least `n` entries (same shapes, checked above).
        unsafe { launch("multiply", l, grid(self.len())) }?;
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
        l.arg(&*self.buf).arg(&mut *out.buf).arg(&m).arg(&n).arg(&c);
        // SAFETY: reads and writes `m·n` entries of buffers that hold them.
        unsafe { launch(op, l, grid(self.len())) }?;
        Ok(out)
    }

    /// The Kronecker product `a ⊗ b`.
    pub(crate) fn kron(&self, b: &GpuDense) -> Result<GpuDense> {
        let (rows, cols) = kron_shape("kron", self.shape(), b.shape())?;
        let dev = device()?;
        let mut out = GpuDense::uninit(dev, rows, cols)?;
        let total = out.len();
        if total == 0 {
            return Ok(out);
        }
        let dims = [self.rows, self.cols, b.rows, b.cols].map(|x| x as u64);
        let mut l = dev.stream.launch_builder(&dev.f.kron);
        l.arg(&*self.buf).arg(&*b.buf).arg(&mut *out.buf);
        for d in &dims {
            l.arg(d);
        }
        // SAFETY: indices stay below each operand's `rows·cols` and the output's length.
        unsafe { launch("kron", l, grid(total)) }?;
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
        l.arg(&*self.buf).arg(&mut *out.buf);
        for d in &dims {
            l.arg(d);
        }
        // SAFETY: a permutation of `len` entries (equal sizes, checked above).
        unsafe { launch("reshape", l, grid(self.len())) }?;
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
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if a position falls outside the matrix or `vals` is shorter
    /// than `count`: checked in every build, since the kernel writes device memory.
    pub(super) fn add_strided(
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
        let last = (count - 1)
            .checked_mul(stride)
            .and_then(|x| x.checked_add(start));
        if last.is_none_or(|l| l >= self.len()) || vals.is_some_and(|v| v.len() < count) {
            return Err(Error::argument(
                "add_strided",
                format!(
                    "{count} positions from {start} by {stride} do not fit a {}×{} matrix",
                    self.rows, self.cols
                ),
            ));
        }
        let dev = device()?;
        let (start, stride, n) = (start as u64, stride as u64, count as u64);
        let null = 0u64;
        let mut l = dev.stream.launch_builder(&dev.f.add_strided);
        l.arg(&mut *self.buf);
        match vals {
            Some(v) => l.arg(v),
            None => l.arg(&null),
        };
        l.arg(&s.re).arg(&s.im).arg(&start).arg(&stride).arg(&n);
        // SAFETY: the last position written, start + (count−1)·stride, was checked above to be
        // inside the matrix, and `vals` holds at least `count` entries.
        unsafe { launch("diag", l, grid(count)) }
    }

    /// `s` times the `n × n` identity.
    pub(crate) fn scaled_identity(n: usize, s: c64) -> Result<GpuDense> {
        let mut m = GpuDense::zeros(n, n)?;
        m.add_strided(None, s, 0, n + 1, n)?;
        Ok(m)
    }

    /// A matrix from its diagonals; repeated offsets add up.
    pub(crate) fn diag(p: &Diagonals) -> Result<GpuDense> {
        p.triplets("diag")?;
        let dev = device()?;
        let (rows, cols) = p.shape;
        let mut m = GpuDense::zeros(rows, cols)?;
        for (d, &k) in p.diagonals.iter().zip(&p.offsets) {
            let (r0, c0) = Diagonals::start(k);
            let vals = dev
                .stream
                .clone_htod(as_pairs(d))
                .map_err(gpu_err("diag"))?;
            m.add_strided(Some(&vals), ZERO, r0 + c0 * rows, rows + 1, d.len())?;
        }
        Ok(m)
    }

    /// `c0·I + c1·x1 + c2·x2 + c3·x3 + c4·x4` for n×n matrices (one element-wise pass).
    pub(super) fn lincomb(
        x1: &GpuDense,
        x: [Option<&GpuDense>; 3],
        c: [f64; 5],
    ) -> Result<GpuDense> {
        let dev = device()?;
        let n = x1.rows;
        if x1.cols != n || x.iter().flatten().any(|m| m.shape() != (n, n)) {
            return Err(Error::shape(
                "expm",
                &[x1.shape()],
                "the Taylor terms must be square matrices of one size",
            ));
        }
        let mut out = GpuDense::uninit(dev, n, n)?;
        if n == 0 {
            return Ok(out);
        }
        let null = 0u64;
        let nn = n as u64;
        let mut l = dev.stream.launch_builder(&dev.f.lincomb);
        l.arg(&*x1.buf);
        for xi in &x {
            match xi {
                Some(m) => l.arg(&*m.buf),
                None => l.arg(&null),
            };
        }
        l.arg(&mut *out.buf);
        for ci in &c {
            l.arg(ci);
        }
        l.arg(&nn);
        // SAFETY: every operand is n×n (checked above) and so is the output.
        unsafe { launch("expm", l, grid(n * n)) }?;
        Ok(out)
    }

    /// Up to five combinations of the same four n×n terms in one pass (`pm_lincombs`): row r
    /// of `coefs` gives `coefs[r][0]·I + Σₜ coefs[r][t + 1]·xs[t]`.
    pub(super) fn lincombs(xs: [&GpuDense; 4], coefs: &[[f64; 5]]) -> Result<Vec<GpuDense>> {
        let dev = device()?;
        let n = xs[0].rows;
        if coefs.is_empty() || coefs.len() > 5 || xs.iter().any(|m| m.shape() != (n, n)) {
            return Err(Error::shape(
                "expm",
                &[xs[0].shape()],
                "one to five combinations of four square Taylor terms of one size",
            ));
        }
        let mut outs = coefs
            .iter()
            .map(|_| GpuDense::uninit(dev, n, n))
            .collect::<Result<Vec<_>>>()?;
        if n == 0 {
            return Ok(outs);
        }
        let mut c = Lincombs { c: [0.0; 25] };
        for (r, row) in coefs.iter().enumerate() {
            c.c[5 * r..5 * r + 5].copy_from_slice(row);
        }
        let (null, nn) = (0u64, n as u64);
        let mut l = dev.stream.launch_builder(&dev.f.lincombs);
        for x in &xs {
            l.arg(&*x.buf);
        }
        let mut rest = outs.iter_mut();
        for _ in 0..5 {
            match rest.next() {
                Some(o) => l.arg(&mut *o.buf),
                None => l.arg(&null),
            };
        }
        l.arg(&c).arg(&nn);
        // SAFETY: the four terms and every output are n×n (checked above, the outputs made
        // so); unused outputs are null, which the kernel skips.
        unsafe { launch("expm", l, grid(n * n)) }?;
        Ok(outs)
    }

    // ----- reductions -----

    /// Runs a max-reduction kernel into a zeroed device scalar and reads it back: the kernel's
    /// arguments are this buffer, `other`'s if given, the scalar, then `scalars` and `dims`.
    pub(super) fn max_reduce(
        &self,
        op: &'static str,
        f: &CudaFunction,
        other: Option<&GpuDense>,
        scalars: &[f64],
        dims: &[u64],
        cfg: LaunchConfig,
    ) -> Result<f64> {
        if self.len() == 0 {
            return Ok(0.0);
        }
        let dev = device()?;
        let mut out = dev.stream.alloc_zeros::<f64>(1).map_err(gpu_err(op))?;
        let mut l = dev.stream.launch_builder(f);
        l.arg(&*self.buf);
        if let Some(b) = other {
            l.arg(&*b.buf);
        }
        l.arg(&mut out);
        for s in scalars {
            l.arg(s);
        }
        for d in dims {
            l.arg(d);
        }
        // SAFETY: the kernels read within `dims` of this buffer (and of `other`, of the same
        // shape) and write one f64.
        unsafe { launch(op, l, cfg) }?;
        let v = dev.stream.clone_dtoh(&out).map_err(gpu_err(op))?;
        dev.stream.synchronize().map_err(gpu_err(op))?;
        Ok(v[0])
    }

    /// `max |aᵢⱼ|` (NaN if any entry is NaN).
    pub(crate) fn norm_max(&self) -> Result<f64> {
        let n = self.len();
        self.max_reduce(
            "norm_max",
            &device()?.f.max_abs,
            None,
            &[],
            &[n as u64],
            grid(n),
        )
    }

    /// The induced 1-norm, `max_j Σᵢ |aᵢⱼ|`.
    pub(crate) fn norm_one(&self) -> Result<f64> {
        let cfg = LaunchConfig {
            grid_dim: (self.cols.clamp(1, 1 << 16) as u32, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let dims = [self.rows as u64, self.cols as u64];
        self.max_reduce(
            "norm_one",
            &device()?.f.max_col_abs_sum,
            None,
            &[],
            &dims,
            cfg,
        )
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
        let f = &device()?.f.herm_dev;
        let dev = self.max_reduce("isherm", f, None, &[], &[n as u64], grid(n * n))?;
        Ok(dev <= atol)
    }

    /// `Tr a` for square `a`.
    pub(crate) fn trace(&self) -> Result<c64> {
        const OP: &str = "trace";
        square(OP, self.shape())?;
        let n = self.rows;
        self.strided_sum(OP, 0, n + 1, n)
    }

    /// `Σ_{t < count} a[start + t·stride]` over the column-major entries.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if a position falls outside the matrix (checked in every
    /// build, since the kernel reads device memory).
    pub(super) fn strided_sum(
        &self,
        op: &'static str,
        start: usize,
        stride: usize,
        count: usize,
    ) -> Result<c64> {
        if count == 0 {
            return Ok(ZERO);
        }
        let last = (count - 1)
            .checked_mul(stride)
            .and_then(|x| x.checked_add(start));
        if last.is_none_or(|l| l >= self.len()) {
            return Err(Error::argument(
                op,
                format!(
                    "{count} positions from {start} by {stride} do not fit a {}×{} matrix",
                    self.rows, self.cols
                ),
            ));
        }
        let dev = device()?;
        let mut out = GpuDense::uninit(dev, 1, 1)?;
        let (start, stride, count) = (start as u64, stride as u64, count as u64);
        let mut l = dev.stream.launch_builder(&dev.f.strided_sum);
        l.arg(&*self.buf)
            .arg(&mut *out.buf)
            .arg(&start)
            .arg(&stride)
            .arg(&count);
        // SAFETY: the last position read, start + (count−1)·stride, was checked above to be
        // inside the matrix.
        unsafe { launch(op, l, one_block()) }?;
        Ok(out.to_dense()?.get(0, 0))
    }
}
