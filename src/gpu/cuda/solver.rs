//! cuSOLVER: the LU factorisation (getrf/getrs) behind `inv` and `solve`, the Hermitian
//! eigensolver (heevd) and the singular value decomposition (gesvd).
//!
//! cuSOLVER is loaded on first use, separately from the device: a machine whose CUDA install
//! has no `libcusolver` keeps every other GPU operation, and [`solver_available`] tells the
//! operations to take their CPU path (download, CPU kernel) instead.

use std::ffi::{c_int, c_schar};
use std::sync::{Mutex, OnceLock};

use cudarc::cusolver::DnHandle;
use cudarc::cusolver::sys as sol;
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};

use super::blas::int;
use super::device::{Device, device, gpu_err};
use super::{Elem, GpuDense};
use crate::error::{Error, Result};

type Cplx = sol::cuDoubleComplex;

/// The cuSOLVER handle on polymat's stream, created on first use (or the reason there is none).
/// Calls are serialised: a handle's workspace state is not meant for concurrent calls.
static SOLVER: OnceLock<std::result::Result<Mutex<DnHandle>, String>> = OnceLock::new();

fn solver(dev: &Device) -> std::result::Result<&'static Mutex<DnHandle>, String> {
    SOLVER
        .get_or_init(|| {
            // SAFETY: the probe only tries to dlopen the library by its usual names; without
            // it the first cuSOLVER call would panic inside cudarc.
            if !unsafe { sol::is_culib_present() } {
                return Err("cuSOLVER (libcusolver) was not found".into());
            }
            dev.ctx.bind_to_thread().map_err(|e| e.to_string())?;
            DnHandle::new(dev.stream.clone())
                .map(Mutex::new)
                .map_err(|e| format!("cuSOLVER: {e:?}"))
        })
        .as_ref()
        .map_err(String::clone)
}

/// Whether the GPU and cuSOLVER are both usable (loading cuSOLVER on first call).
pub(crate) fn solver_available() -> bool {
    device().is_ok_and(|dev| solver(dev).is_ok())
}

/// Runs one cuSOLVER call on polymat's handle; a failing status becomes [`Error::Gpu`] naming
/// `op`. `call` holds the `unsafe` call and its reason.
fn with_solver(
    op: &'static str,
    dev: &Device,
    call: impl FnOnce(sol::cusolverDnHandle_t) -> sol::cusolverStatus_t,
) -> Result<()> {
    let handle = solver(dev).map_err(|reason| Error::NoGpu { reason })?;
    let handle = handle.lock().map_err(|_| Error::Gpu {
        op: op.to_owned(),
        reason: "a cuSOLVER call panicked in another thread".to_owned(),
    })?;
    dev.ctx.bind_to_thread().map_err(gpu_err(op))?;
    call(handle.cu())
        .result()
        .map_err(|e| gpu_err(op)(format!("{e:?}")))
}

/// A device buffer of `len` zeroed entries (workspaces, pivots, info words).
fn zeroed<T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits>(
    op: &'static str,
    dev: &Device,
    len: usize,
) -> Result<CudaSlice<T>> {
    dev.stream.alloc_zeros::<T>(len.max(1)).map_err(gpu_err(op))
}

/// Reads the `info` word a cuSOLVER routine wrote (waits for the queued work).
fn read_info(op: &'static str, dev: &Device, info: &CudaSlice<c_int>) -> Result<c_int> {
    let host = dev.stream.clone_dtoh(info).map_err(gpu_err(op))?;
    dev.stream.synchronize().map_err(gpu_err(op))?;
    let v = host.first().copied().unwrap_or(0);
    if v < 0 {
        // A negative info names a wrong argument: a bug here, reported, never ignored.
        return Err(Error::Gpu {
            op: op.to_owned(),
            reason: format!("cuSOLVER rejected argument {}", -v),
        });
    }
    Ok(v)
}

/// A workspace size reported by cuSOLVER, as a buffer length.
fn lwork_len(op: &'static str, lwork: c_int) -> Result<usize> {
    usize::try_from(lwork).map_err(|_| Error::Gpu {
        op: op.to_owned(),
        reason: format!("cuSOLVER reported a workspace of {lwork} entries"),
    })
}

/// The partial-pivoting LU of a square [`GpuDense`] (cuSOLVER getrf), ready for many solves.
pub(crate) struct GpuLu {
    lu: GpuDense,
    pivots: CudaSlice<c_int>,
}

impl GpuDense {
    /// Factorises a square matrix.
    ///
    /// # Errors
    /// [`Error::Shape`] unless square; [`Error::Numerical`] for an exactly zero pivot;
    /// [`Error::Gpu`] if cuSOLVER fails; [`Error::NoGpu`] without cuSOLVER.
    pub(crate) fn lu(&self, op: &'static str) -> Result<GpuLu> {
        if self.rows != self.cols {
            return Err(Error::shape(
                op,
                &[self.shape()],
                "the matrix must be square",
            ));
        }
        let dev = device()?;
        let n = self.rows;
        let mut lu = self.try_clone()?;
        let mut pivots = zeroed::<c_int>(op, dev, n)?;
        if n == 0 {
            return Ok(GpuLu { lu, pivots });
        }
        let ni = int(op, n)?;
        let mut lwork: c_int = 0;
        {
            let (pa, _ga) = lu.buf.device_ptr_mut(&dev.stream);
            // SAFETY: an n×n matrix with leading dimension n (checked to fit a C int); the
            // call only reads the sizes and writes `lwork`.
            with_solver(op, dev, |h| unsafe {
                sol::cusolverDnZgetrf_bufferSize(h, ni, ni, pa as *mut Cplx, ni, &mut lwork)
            })?;
        }
        let mut work = zeroed::<Elem>(op, dev, lwork_len(op, lwork)?)?;
        let mut info = zeroed::<c_int>(op, dev, 1)?;
        {
            let (pa, _ga) = lu.buf.device_ptr_mut(&dev.stream);
            let (pw, _gw) = work.device_ptr_mut(&dev.stream);
            let (pp, _gp) = pivots.device_ptr_mut(&dev.stream);
            let (pi, _gi) = info.device_ptr_mut(&dev.stream);
            // SAFETY: `lu` holds n·n entries with leading dimension n, `work` the `lwork`
            // entries cuSOLVER asked for, `pivots` n ints and `info` one; the guards keep them
            // alive and the handle runs on their stream.
            with_solver(op, dev, |h| unsafe {
                sol::cusolverDnZgetrf(
                    h,
                    ni,
                    ni,
                    pa as *mut Cplx,
                    ni,
                    pw as *mut Cplx,
                    pp as *mut c_int,
                    pi as *mut c_int,
                )
            })?;
        }
        let info = read_info(op, dev, &info)?;
        if info > 0 {
            return Err(Error::Numerical {
                op: op.to_owned(),
                reason: format!(
                    "the matrix is singular (zero pivot at step {} of the LU)",
                    info - 1
                ),
            });
        }
        Ok(GpuLu { lu, pivots })
    }

    /// The eigenvalues (ascending) of a Hermitian matrix, read from its lower triangle, and
    /// with `vectors` the orthonormal eigenvectors as columns (cuSOLVER heevd).
    ///
    /// # Errors
    /// [`Error::Shape`] unless square; [`Error::Numerical`] if the solver does not converge;
    /// [`Error::Gpu`] / [`Error::NoGpu`] as for [`lu`](Self::lu).
    pub(crate) fn eigh(&self, vectors: bool) -> Result<(Vec<f64>, Option<GpuDense>)> {
        const OP: &str = "eigs";
        if self.rows != self.cols {
            return Err(Error::shape(
                OP,
                &[self.shape()],
                "the matrix must be square",
            ));
        }
        let dev = device()?;
        let n = self.rows;
        if n == 0 {
            return Ok((Vec::new(), vectors.then(|| self.try_clone()).transpose()?));
        }
        let ni = int(OP, n)?;
        let mut a = self.try_clone()?;
        let mut w = zeroed::<f64>(OP, dev, n)?;
        let jobz = if vectors {
            sol::cusolverEigMode_t::CUSOLVER_EIG_MODE_VECTOR
        } else {
            sol::cusolverEigMode_t::CUSOLVER_EIG_MODE_NOVECTOR
        };
        let lower = sol::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER;
        let mut lwork: c_int = 0;
        {
            let (pa, _ga) = a.buf.device_ptr(&dev.stream);
            let (pw, _gw) = w.device_ptr(&dev.stream);
            // SAFETY: an n×n matrix (leading dimension n) and n reals; only sizes are read.
            with_solver(OP, dev, |h| unsafe {
                sol::cusolverDnZheevd_bufferSize(
                    h,
                    jobz,
                    lower,
                    ni,
                    pa as *const Cplx,
                    ni,
                    pw as *const f64,
                    &mut lwork,
                )
            })?;
        }
        let mut work = zeroed::<Elem>(OP, dev, lwork_len(OP, lwork)?)?;
        let mut info = zeroed::<c_int>(OP, dev, 1)?;
        {
            let (pa, _ga) = a.buf.device_ptr_mut(&dev.stream);
            let (pw, _gw) = w.device_ptr_mut(&dev.stream);
            let (pk, _gk) = work.device_ptr_mut(&dev.stream);
            let (pi, _gi) = info.device_ptr_mut(&dev.stream);
            // SAFETY: `a` n·n entries (overwritten by the eigenvectors), `w` n reals, `work`
            // the `lwork` entries asked for, `info` one int; guards keep them alive.
            with_solver(OP, dev, |h| unsafe {
                sol::cusolverDnZheevd(
                    h,
                    jobz,
                    lower,
                    ni,
                    pa as *mut Cplx,
                    ni,
                    pw as *mut f64,
                    pk as *mut Cplx,
                    lwork,
                    pi as *mut c_int,
                )
            })?;
        }
        if read_info(OP, dev, &info)? > 0 {
            return Err(Error::Numerical {
                op: OP.to_owned(),
                reason: "the Hermitian eigensolver (cuSOLVER heevd) did not converge".to_owned(),
            });
        }
        let values = dev.stream.clone_dtoh(&w.slice(..n)).map_err(gpu_err(OP))?;
        dev.stream.synchronize().map_err(gpu_err(OP))?;
        Ok((values, vectors.then_some(a)))
    }

    /// The thin SVD `a = u·diag(s)·vh` (cuSOLVER gesvd; k = min(m, n) values, nonincreasing);
    /// `u` (m×k) and `vh` (k×n) only with `vectors`. A wide matrix is decomposed through its
    /// adjoint (gesvd wants m ≥ n).
    ///
    /// # Errors
    /// [`Error::Numerical`] if the iteration does not converge; [`Error::Gpu`] /
    /// [`Error::NoGpu`] as for [`lu`](Self::lu).
    pub(crate) fn svd(&self, vectors: bool) -> Result<GpuSvd> {
        const OP: &str = "svd";
        let (m, n) = self.shape();
        if m < n {
            let (u, s, vh) = self.transpose(true)?.svd(vectors)?;
            // aᴴ = u·s·vh  ⇒  a = vhᴴ·s·uᴴ.
            let u2 = vh.map(|v| v.transpose(true)).transpose()?;
            let vh2 = u.map(|u| u.transpose(true)).transpose()?;
            return Ok((u2, s, vh2));
        }
        let dev = device()?;
        if n == 0 {
            let u = vectors.then(|| GpuDense::zeros(m, 0)).transpose()?;
            let vh = vectors.then(|| GpuDense::zeros(0, n)).transpose()?;
            return Ok((u, Vec::new(), vh));
        }
        let (mi, ni) = (int(OP, m)?, int(OP, n)?);
        let mut lwork: c_int = 0;
        // SAFETY: only the sizes are read.
        with_solver(OP, dev, |h| unsafe {
            sol::cusolverDnZgesvd_bufferSize(h, mi, ni, &mut lwork)
        })?;
        let mut a = self.try_clone()?;
        let mut s = zeroed::<f64>(OP, dev, n)?;
        // Without vectors U and VT are not referenced: one-entry placeholders.
        let (mut u, mut vt) = if vectors {
            (GpuDense::uninit(dev, m, n)?, GpuDense::uninit(dev, n, n)?)
        } else {
            (GpuDense::uninit(dev, 1, 1)?, GpuDense::uninit(dev, 1, 1)?)
        };
        let mut work = zeroed::<Elem>(OP, dev, lwork_len(OP, lwork)?)?;
        let mut rwork = zeroed::<f64>(OP, dev, n)?;
        let mut info = zeroed::<c_int>(OP, dev, 1)?;
        let job = (if vectors { b'S' } else { b'N' }) as c_schar;
        {
            let (pa, _ga) = a.buf.device_ptr_mut(&dev.stream);
            let (ps, _gs) = s.device_ptr_mut(&dev.stream);
            let (pu, _gu) = u.buf.device_ptr_mut(&dev.stream);
            let (pv, _gv) = vt.buf.device_ptr_mut(&dev.stream);
            let (pk, _gk) = work.device_ptr_mut(&dev.stream);
            let (pr, _gr) = rwork.device_ptr_mut(&dev.stream);
            let (pi, _gi) = info.device_ptr_mut(&dev.stream);
            // SAFETY: `a` is m×n (leading dimension m, m ≥ n), `s` n reals, `u` m×n and `vt`
            // n×n when vectors are asked for (jobu = jobvt = 'S'; with 'N' neither is
            // referenced), `work` the `lwork` entries asked for, `rwork` n reals (≥ n − 1),
            // `info` one int; the guards keep them alive on the handle's stream.
            with_solver(OP, dev, |h| unsafe {
                sol::cusolverDnZgesvd(
                    h,
                    job,
                    job,
                    mi,
                    ni,
                    pa as *mut Cplx,
                    mi,
                    ps as *mut f64,
                    pu as *mut Cplx,
                    mi,
                    pv as *mut Cplx,
                    ni,
                    pk as *mut Cplx,
                    lwork,
                    pr as *mut f64,
                    pi as *mut c_int,
                )
            })?;
        }
        if read_info(OP, dev, &info)? > 0 {
            return Err(Error::Numerical {
                op: OP.to_owned(),
                reason: "the SVD (cuSOLVER gesvd) did not converge".to_owned(),
            });
        }
        let values = dev.stream.clone_dtoh(&s.slice(..n)).map_err(gpu_err(OP))?;
        dev.stream.synchronize().map_err(gpu_err(OP))?;
        Ok(if vectors {
            (Some(u), values, Some(vt))
        } else {
            (None, values, None)
        })
    }
}

/// `(u, s, vh)` of [`GpuDense::svd`].
pub(crate) type GpuSvd = (Option<GpuDense>, Vec<f64>, Option<GpuDense>);

impl GpuLu {
    /// `a⁻¹·b`, or `a⁻ᴴ·b` with `adjoint` (cuSOLVER getrs), in new memory.
    ///
    /// # Errors
    /// [`Error::Shape`] if `b` has not n rows; [`Error::Gpu`] if cuSOLVER fails.
    pub(crate) fn solve(&self, b: &GpuDense, adjoint: bool) -> Result<GpuDense> {
        const OP: &str = "solve";
        let n = self.lu.rows;
        if b.rows != n {
            return Err(Error::shape(
                OP,
                &[self.lu.shape(), b.shape()],
                "the right-hand side must have as many rows as the matrix",
            ));
        }
        let dev = device()?;
        let mut x = b.try_clone()?;
        if n == 0 || b.cols == 0 {
            return Ok(x);
        }
        let (ni, ki) = (int(OP, n)?, int(OP, b.cols)?);
        let trans = if adjoint {
            sol::cublasOperation_t::CUBLAS_OP_C
        } else {
            sol::cublasOperation_t::CUBLAS_OP_N
        };
        let mut info = zeroed::<c_int>(OP, dev, 1)?;
        {
            let (pa, _ga) = self.lu.buf.device_ptr(&dev.stream);
            let (pp, _gp) = self.pivots.device_ptr(&dev.stream);
            let (px, _gx) = x.buf.device_ptr_mut(&dev.stream);
            let (pi, _gi) = info.device_ptr_mut(&dev.stream);
            // SAFETY: the factors are n×n (leading dimension n) with n pivots, `x` is n×k
            // (leading dimension n), `info` one int; the guards keep them alive.
            with_solver(OP, dev, |h| unsafe {
                sol::cusolverDnZgetrs(
                    h,
                    trans,
                    ni,
                    ki,
                    pa as *const Cplx,
                    ni,
                    pp as *const c_int,
                    px as *mut Cplx,
                    ni,
                    pi as *mut c_int,
                )
            })?;
        }
        read_info(OP, dev, &info)?;
        Ok(x)
    }
}
