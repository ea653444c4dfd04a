//! cuBLAS: one call wrapper, and the products, sums, dot products and norms built on it.

use std::ffi::c_int;

use cudarc::cublas::sys as blas;
use cudarc::cublas::sys::cublasOperation_t::{CUBLAS_OP_C, CUBLAS_OP_N};
use cudarc::driver::{DevicePtr, DevicePtrMut};

use super::GpuDense;
use super::device::{Device, device, gpu_err};
use crate::error::{Error, Result};
use crate::scalar::{ONE, ZERO, c64};
use crate::shape::{expect_shapes, inner_op_shapes, inner_shapes, same_shape};

/// A dimension as cuBLAS's 32-bit `int`.
pub(super) fn int(op: &'static str, x: usize) -> Result<c_int> {
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

/// Runs one cuBLAS call on polymat's handle (bound to this thread first); a failing status
/// becomes [`Error::Gpu`] naming `op`. `call` holds the `unsafe` cuBLAS call and its reason.
fn with_blas(
    op: &'static str,
    dev: &Device,
    call: impl FnOnce(blas::cublasHandle_t) -> blas::cublasStatus_t,
) -> Result<()> {
    dev.ctx.bind_to_thread().map_err(gpu_err(op))?;
    call(*dev.blas.handle()).result().map_err(gpu_err(op))
}

/// The shape of `op(a)·op(b)`, checking the inner dimensions.
fn gemm_shape(
    op: &'static str,
    a: &GpuDense,
    ta: blas::cublasOperation_t,
    b: &GpuDense,
    tb: blas::cublasOperation_t,
) -> Result<(usize, usize)> {
    let dims = |x: &GpuDense, t| {
        if t == CUBLAS_OP_N {
            x.shape()
        } else {
            (x.cols, x.rows)
        }
    };
    let ((m, k), (k2, n)) = (dims(a, ta), dims(b, tb));
    if k != k2 {
        return Err(Error::shape(
            op,
            &[a.shape(), b.shape()],
            "the inner dimensions must agree",
        ));
    }
    Ok((m, n))
}

type Ptr = *const blas::cuDoubleComplex;
type PtrMut = *mut blas::cuDoubleComplex;

impl GpuDense {
    /// `alpha·op(a)·op(b)` into a new matrix.
    fn gemm(
        op: &'static str,
        a: &GpuDense,
        ta: blas::cublasOperation_t,
        b: &GpuDense,
        tb: blas::cublasOperation_t,
        alpha: c64,
        gauss: bool,
    ) -> Result<GpuDense> {
        let (m, n) = gemm_shape(op, a, ta, b, tb)?;
        let out = GpuDense::uninit(device()?, m, n)?;
        GpuDense::gemm_into(op, a, ta, b, tb, alpha, None, out, gauss)
    }

    /// `alpha·op(a)·op(b) + beta·out` in `out`'s own buffer (`beta` `None`: `out` is not read,
    /// only written); `gauss`: by three real products (`Zgemm3m`, or `Zgemm` where the device
    /// cannot), which the caller has checked cannot overflow (see
    /// [`crate::gpu::set_gauss_products`]).
    #[allow(clippy::too_many_arguments)]
    fn gemm_into(
        op: &'static str,
        a: &GpuDense,
        ta: blas::cublasOperation_t,
        b: &GpuDense,
        tb: blas::cublasOperation_t,
        alpha: c64,
        beta: Option<c64>,
        mut out: GpuDense,
        gauss: bool,
    ) -> Result<GpuDense> {
        let (m, n) = gemm_shape(op, a, ta, b, tb)?;
        if out.shape() != (m, n) {
            return Err(Error::shape(
                op,
                &[a.shape(), b.shape(), out.shape()],
                "the accumulated matrix must have the product's shape",
            ));
        }
        let k = if ta == CUBLAS_OP_N { a.cols } else { a.rows };
        let dev = device()?;
        if m * n == 0 {
            return Ok(out);
        }
        if k == 0 {
            // cuBLAS does not scale C when k = 0 with beta = 0 on every version: zero it here.
            return match beta {
                Some(beta) => out.scale(beta),
                None => GpuDense::zeros(m, n),
            };
        }
        let beta = beta.unwrap_or(ZERO);
        let (mi, ni, ki) = (int(op, m)?, int(op, n)?, int(op, k)?);
        let (lda, ldb, ldc) = (ld(op, a.rows)?, ld(op, b.rows)?, ld(op, m)?);
        let (alpha, beta) = (cplx(alpha), cplx(beta));
        let (pa, _ga) = a.buf.device_ptr(&dev.stream);
        let (pb, _gb) = b.buf.device_ptr(&dev.stream);
        let (pc, _gc) = out.buf.device_ptr_mut(&dev.stream);
        with_blas(op, dev, |h| {
            // SAFETY: dimensions and leading dimensions describe the three buffers exactly
            // (checked above); the guards keep them alive and the handle runs on their stream.
            unsafe {
                use blas::cublasStatus_t::{
                    CUBLAS_STATUS_ARCH_MISMATCH, CUBLAS_STATUS_NOT_SUPPORTED,
                };
                let (pa, pb, pc) = (pa as Ptr, pb as Ptr, pc as PtrMut);
                let status = if gauss {
                    blas::cublasZgemm3m(
                        h, ta, tb, mi, ni, ki, &alpha, pa, lda, pb, ldb, &beta, pc, ldc,
                    )
                } else {
                    CUBLAS_STATUS_NOT_SUPPORTED
                };
                // Zgemm3m needs compute capability 5.0: where cuBLAS refuses it (before it
                // touches `out`), the complex product.
                if matches!(
                    status,
                    CUBLAS_STATUS_NOT_SUPPORTED | CUBLAS_STATUS_ARCH_MISMATCH
                ) {
                    blas::cublasZgemm_v2(
                        h, ta, tb, mi, ni, ki, &alpha, pa, lda, pb, ldb, &beta, pc, ldc,
                    )
                } else {
                    status
                }
            }
        })?;
        drop((_ga, _gb, _gc));
        Ok(out)
    }

    /// `self·b + acc`, accumulated in `acc`'s own buffer (Zgemm with β = 1; nothing copied);
    /// `gauss` as in `gemm_into`.
    pub(crate) fn mul_add(&self, b: &GpuDense, acc: GpuDense, gauss: bool) -> Result<GpuDense> {
        GpuDense::gemm_into(
            "matmul",
            self,
            CUBLAS_OP_N,
            b,
            CUBLAS_OP_N,
            ONE,
            Some(ONE),
            acc,
            gauss,
        )
    }

    /// `self·b` by three real products (`Zgemm3m`), which the caller has checked cannot
    /// overflow.
    pub(crate) fn matmul_gauss(&self, b: &GpuDense) -> Result<GpuDense> {
        GpuDense::gemm("matmul", self, CUBLAS_OP_N, b, CUBLAS_OP_N, ONE, true)
    }

    /// `a·b` (cuBLAS Zgemm).
    pub(crate) fn matmul(&self, b: &GpuDense) -> Result<GpuDense> {
        GpuDense::gemm("matmul", self, CUBLAS_OP_N, b, CUBLAS_OP_N, ONE, false)
    }

    /// `a·b†` (cuBLAS Zgemm with the conjugate-transpose flag).
    pub(crate) fn matmul_dag(&self, b: &GpuDense) -> Result<GpuDense> {
        GpuDense::gemm("matmul_dag", self, CUBLAS_OP_N, b, CUBLAS_OP_C, ONE, false)
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
        let (alpha, beta) = (cplx(ONE), cplx(s));
        let (pa, _ga) = self.buf.device_ptr(&dev.stream);
        let (pb, _gb) = b.buf.device_ptr(&dev.stream);
        let (pc, _gc) = out.buf.device_ptr_mut(&dev.stream);
        with_blas(OP, dev, |h| {
            // SAFETY: three m×n column-major buffers with leading dimension m.
            unsafe {
                blas::cublasZgeam(
                    h,
                    CUBLAS_OP_N,
                    CUBLAS_OP_N,
                    m,
                    n,
                    &alpha,
                    pa as Ptr,
                    l,
                    &beta,
                    pb as Ptr,
                    l,
                    pc as PtrMut,
                    l,
                )
            }
        })?;
        drop((_ga, _gb, _gc));
        Ok(out)
    }

    /// `Σ x̄ᵢ yᵢ` (`conj`) or `Σ xᵢ yᵢ` over the first `n` entries of two buffers (cuBLAS).
    fn dot(op: &'static str, x: &GpuDense, y: &GpuDense, n: usize, conj: bool) -> Result<c64> {
        if n == 0 {
            return Ok(ZERO);
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
        let (px, _gx) = x.buf.device_ptr(&dev.stream);
        let (py, _gy) = y.buf.device_ptr(&dev.stream);
        let f = if conj {
            blas::cublasZdotc_v2
        } else {
            blas::cublasZdotu_v2
        };
        with_blas(op, dev, |h| {
            // SAFETY: both buffers hold at least `n` entries (checked above); the result is a
            // host scalar (the handle's default pointer mode), so the call waits for it.
            unsafe { f(h, ni, px as Ptr, 1, py as Ptr, 1, &mut r) }
        })?;
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
        let (ta, tb) = if self.cols == 1 {
            (CUBLAS_OP_N, CUBLAS_OP_C)
        } else if self.rows == 1 {
            (CUBLAS_OP_C, CUBLAS_OP_N)
        } else {
            return Err(Error::shape(
                "project",
                &[self.shape()],
                "the operand must be a ket (n×1) or a bra (1×n)",
            ));
        };
        GpuDense::gemm("project", self, ta, self, tb, ONE, false)
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
        let (p, _g) = self.buf.device_ptr(&dev.stream);
        with_blas(OP, dev, |h| {
            // SAFETY: `n` entries with unit stride; host result.
            unsafe { blas::cublasDznrm2_v2(h, n, p as Ptr, 1, &mut r) }
        })?;
        Ok(r)
    }
}
