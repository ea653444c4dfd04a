//! cuSPARSE for [`GpuCsr`]: products with [`GpuDense`] (SpMV for one column, SpMM for more)
//! and the transpose (`csr2cscEx2`). cuSPARSE is loaded on first use, like cuSOLVER:
//! [`sparse_available`] is false where the CUDA install lacks `libcusparse`, and the operations
//! then take their CPU path.

use std::ffi::c_void;
use std::sync::{Mutex, OnceLock};

use cudarc::cusparse::sys as sp;
use cudarc::driver::{DevicePtr, DevicePtrMut};

use super::GpuDense;
use super::csr::{GpuCsr, index32};
use super::device::{Device, device, gpu_err};
use crate::error::{Error, Result};
use crate::scalar::{ONE, ZERO};
use crate::shape::matmul_shapes;

/// A cuSPARSE handle bound to polymat's stream.
struct Handle(sp::cusparseHandle_t);

// SAFETY: the handle is only used under the mutex below, one call at a time.
unsafe impl Send for Handle {}

static SPARSE: OnceLock<std::result::Result<Mutex<Handle>, String>> = OnceLock::new();

fn handle(dev: &Device) -> std::result::Result<&'static Mutex<Handle>, String> {
    SPARSE
        .get_or_init(|| {
            // SAFETY: the probe only tries to dlopen the library by its usual names; without
            // it the first cuSPARSE call would panic inside cudarc.
            if !unsafe { sp::is_culib_present() } {
                return Err("cuSPARSE (libcusparse) was not found".into());
            }
            dev.ctx.bind_to_thread().map_err(|e| e.to_string())?;
            let h = cudarc::cusparse::result::create().map_err(|e| format!("cuSPARSE: {e:?}"))?;
            // SAFETY: a live handle and polymat's live stream (the device is never closed).
            unsafe { sp::cusparseSetStream(h, dev.stream.cu_stream() as sp::cudaStream_t) }
                .result()
                .map_err(|e| format!("cuSPARSE: {e:?}"))?;
            Ok(Mutex::new(Handle(h)))
        })
        .as_ref()
        .map_err(String::clone)
}

/// Whether the GPU and cuSPARSE are both usable (loading cuSPARSE on first call).
pub(crate) fn sparse_available() -> bool {
    device().is_ok_and(|dev| handle(dev).is_ok())
}

/// Runs cuSPARSE calls on polymat's handle; a failing status becomes [`Error::Gpu`] naming `op`.
fn with_sparse<T>(
    op: &'static str,
    dev: &Device,
    call: impl FnOnce(sp::cusparseHandle_t) -> std::result::Result<T, sp::cusparseStatus_t>,
) -> Result<T> {
    let h = handle(dev).map_err(|reason| Error::NoGpu { reason })?;
    let h = h.lock().map_err(|_| Error::Gpu {
        op: op.to_owned(),
        reason: "a cuSPARSE call panicked in another thread".to_owned(),
    })?;
    dev.ctx.bind_to_thread().map_err(gpu_err(op))?;
    call(h.0).map_err(|e| gpu_err(op)(format!("{e:?}")))
}

/// `Ok` for a successful status.
fn ok(s: sp::cusparseStatus_t) -> std::result::Result<(), sp::cusparseStatus_t> {
    if s == sp::cusparseStatus_t::CUSPARSE_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(s)
    }
}

/// Destroys cuSPARSE descriptors when a product is done (or fails half-way).
struct Descriptors {
    mat: sp::cusparseSpMatDescr_t,
    vecs: Vec<sp::cusparseDnVecDescr_t>,
    mats: Vec<sp::cusparseDnMatDescr_t>,
}

impl Drop for Descriptors {
    fn drop(&mut self) {
        // SAFETY: each descriptor was created by cuSPARSE and is destroyed once; null ones
        // (never created) are skipped. Destroying cannot fail for a valid descriptor.
        unsafe {
            if !self.mat.is_null() {
                let _ = sp::cusparseDestroySpMat(self.mat);
            }
            for &v in &self.vecs {
                let _ = sp::cusparseDestroyDnVec(v);
            }
            for &m in &self.mats {
                let _ = sp::cusparseDestroyDnMat(m);
            }
        }
    }
}

const C64: sp::cudaDataType = sp::cudaDataType::CUDA_C_64F;
const I32: sp::cusparseIndexType_t = sp::cusparseIndexType_t::CUSPARSE_INDEX_32I;
const BASE: sp::cusparseIndexBase_t = sp::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO;
const NO_OP: sp::cusparseOperation_t = sp::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE;

impl GpuCsr {
    /// `a·b` for a dense `b` (cuSPARSE SpMV when `b` is one column, SpMM otherwise).
    pub(crate) fn matmul_dense(&self, b: &GpuDense) -> Result<GpuDense> {
        const OP: &str = "matmul";
        matmul_shapes(OP, self.shape(), b.shape())?;
        let dev = device()?;
        let (m, k, n) = (self.rows, self.cols, b.cols);
        if m * n == 0 {
            return GpuDense::uninit(dev, m, n);
        }
        if self.nnz == 0 || k == 0 {
            return GpuDense::zeros(m, n);
        }
        let mut out = GpuDense::uninit(dev, m, n)?;
        let (alpha, beta) = ([ONE.re, ONE.im], [ZERO.re, ZERO.im]);
        let (pp, _gp) = self.indptr.device_ptr(&dev.stream);
        let (pi, _gi) = self.indices.device_ptr(&dev.stream);
        let (pv, _gv) = self.data.device_ptr(&dev.stream);
        let (pb, _gb) = b.buf.device_ptr(&dev.stream);
        let (pc, _gc) = out.buf.device_ptr_mut(&dev.stream);
        let (mi, ki, nnz) = (m as i64, k as i64, self.nnz as i64);
        with_sparse(OP, dev, |h| {
            let mut d = Descriptors {
                mat: std::ptr::null_mut(),
                vecs: Vec::new(),
                mats: Vec::new(),
            };
            // SAFETY: the CSR arrays hold m + 1 offsets and nnz 32-bit columns and values
            // (GpuCsr's invariant), `b` is k×n and `out` m×n column-major with leading
            // dimensions k and m; the guards above keep every buffer alive, and the handle
            // runs on their stream. Descriptors are destroyed by `d`'s drop.
            unsafe {
                ok(sp::cusparseCreateCsr(
                    &mut d.mat,
                    mi,
                    ki,
                    nnz,
                    pp as *mut c_void,
                    pi as *mut c_void,
                    pv as *mut c_void,
                    I32,
                    I32,
                    BASE,
                    C64,
                ))?;
                let alpha = alpha.as_ptr().cast::<c_void>();
                let beta = beta.as_ptr().cast::<c_void>();
                let mut size = 0usize;
                if n == 1 {
                    let (mut x, mut y) = (std::ptr::null_mut(), std::ptr::null_mut());
                    ok(sp::cusparseCreateDnVec(&mut x, ki, pb as *mut c_void, C64))?;
                    d.vecs.push(x);
                    ok(sp::cusparseCreateDnVec(&mut y, mi, pc as *mut c_void, C64))?;
                    d.vecs.push(y);
                    let alg = sp::cusparseSpMVAlg_t::CUSPARSE_SPMV_ALG_DEFAULT;
                    ok(sp::cusparseSpMV_bufferSize(
                        h, NO_OP, alpha, d.mat, x, beta, y, C64, alg, &mut size,
                    ))?;
                    let buf = scratch(dev, size)?;
                    let (pw, _gw) = buf.device_ptr(&dev.stream);
                    ok(sp::cusparseSpMV(
                        h,
                        NO_OP,
                        alpha,
                        d.mat,
                        x,
                        beta,
                        y,
                        C64,
                        alg,
                        pw as *mut c_void,
                    ))?;
                    // Freed stream-ordered, after the call that uses it.
                    drop(_gw);
                    drop(buf);
                    Ok(())
                } else {
                    let (mut bm, mut cm) = (std::ptr::null_mut(), std::ptr::null_mut());
                    let col = sp::cusparseOrder_t::CUSPARSE_ORDER_COL;
                    ok(sp::cusparseCreateDnMat(
                        &mut bm,
                        ki,
                        n as i64,
                        ki,
                        pb as *mut c_void,
                        C64,
                        col,
                    ))?;
                    d.mats.push(bm);
                    ok(sp::cusparseCreateDnMat(
                        &mut cm,
                        mi,
                        n as i64,
                        mi,
                        pc as *mut c_void,
                        C64,
                        col,
                    ))?;
                    d.mats.push(cm);
                    let alg = sp::cusparseSpMMAlg_t::CUSPARSE_SPMM_ALG_DEFAULT;
                    ok(sp::cusparseSpMM_bufferSize(
                        h, NO_OP, NO_OP, alpha, d.mat, bm, beta, cm, C64, alg, &mut size,
                    ))?;
                    let buf = scratch(dev, size)?;
                    let (pw, _gw) = buf.device_ptr(&dev.stream);
                    ok(sp::cusparseSpMM(
                        h,
                        NO_OP,
                        NO_OP,
                        alpha,
                        d.mat,
                        bm,
                        beta,
                        cm,
                        C64,
                        alg,
                        pw as *mut c_void,
                    ))?;
                    // Freed stream-ordered, after the call that uses it.
                    drop(_gw);
                    drop(buf);
                    Ok(())
                }
            }
        })?;
        drop((_gp, _gi, _gv, _gb, _gc));
        Ok(out)
    }

    /// `aᵀ`, or `aᴴ` with `conj` (cuSPARSE `csr2cscEx2`: the CSC arrays of `a` are the CSR
    /// arrays of `aᵀ`, rows sorted within each column).
    pub(crate) fn transpose(&self, conj: bool) -> Result<GpuCsr> {
        const OP: &str = "transpose";
        let dev = device()?;
        let (m, n) = self.shape();
        // All n + 1 offsets and nnz entries are written below before any read.
        let mut out = GpuCsr::uninit(OP, dev, (n, m), self.nnz)?;
        if self.nnz == 0 {
            dev.stream
                .memset_zeros(&mut out.indptr)
                .map_err(gpu_err(OP))?;
            return Ok(out);
        }
        let (mi, ni, nnz) = (
            index32(OP, "the row count", m)?,
            index32(OP, "the column count", n)?,
            index32(OP, "the number of stored entries", self.nnz)?,
        );
        {
            let (pp, _gp) = self.indptr.device_ptr(&dev.stream);
            let (pi, _gi) = self.indices.device_ptr(&dev.stream);
            let (pv, _gv) = self.data.device_ptr(&dev.stream);
            let (qp, _gq) = out.indptr.device_ptr_mut(&dev.stream);
            let (qi, _gj) = out.indices.device_ptr_mut(&dev.stream);
            let (qv, _gw) = out.data.device_ptr_mut(&dev.stream);
            let action = sp::cusparseAction_t::CUSPARSE_ACTION_NUMERIC;
            let alg = sp::cusparseCsr2CscAlg_t::CUSPARSE_CSR2CSC_ALG_DEFAULT;
            with_sparse(OP, dev, |h| {
                let mut size = 0usize;
                // SAFETY: the input CSR is m×n with nnz entries; the output holds n + 1
                // offsets and nnz indices and values; the guards keep all six alive.
                unsafe {
                    ok(sp::cusparseCsr2cscEx2_bufferSize(
                        h,
                        mi,
                        ni,
                        nnz,
                        pv as *const c_void,
                        pp as *const i32,
                        pi as *const i32,
                        qv as *mut c_void,
                        qp as *mut i32,
                        qi as *mut i32,
                        C64,
                        action,
                        BASE,
                        alg,
                        &mut size,
                    ))?;
                    let buf = scratch(dev, size)?;
                    let (pw, _gw) = buf.device_ptr(&dev.stream);
                    ok(sp::cusparseCsr2cscEx2(
                        h,
                        mi,
                        ni,
                        nnz,
                        pv as *const c_void,
                        pp as *const i32,
                        pi as *const i32,
                        qv as *mut c_void,
                        qp as *mut i32,
                        qi as *mut i32,
                        C64,
                        action,
                        BASE,
                        alg,
                        pw as *mut c_void,
                    ))?;
                    // Freed stream-ordered, after the call that uses it.
                    drop(_gw);
                    drop(buf);
                    Ok(())
                }
            })?;
        }
        if conj { out.conj() } else { Ok(out) }
    }
}

/// A device workspace of `bytes` bytes (at least one); a failed allocation is reported as
/// cuSPARSE's own allocation failure, inside the calls that need it.
fn scratch(
    dev: &Device,
    bytes: usize,
) -> std::result::Result<cudarc::driver::CudaSlice<u8>, sp::cusparseStatus_t> {
    dev.stream
        .alloc_zeros::<u8>(bytes.max(1))
        .map_err(|_| sp::cusparseStatus_t::CUSPARSE_STATUS_ALLOC_FAILED)
}
