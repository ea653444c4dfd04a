//! Matrix functions on the GPU from products only: powers and the exponential.

use cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N;

use super::GpuDense;
use crate::error::{Error, Result};
use crate::scalar::{ONE, c64};
use crate::shape::square;

impl GpuDense {
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
            let reason = if self.norm_max()?.is_finite() {
                "the 1-norm of the matrix overflows: exp(a) is not representable"
            } else {
                "the matrix has non-finite entries (NaN or infinity)"
            };
            return Err(Error::Numerical {
                op: OP.into(),
                reason: reason.into(),
            });
        }
        let s = if norm > 1.0 {
            norm.log2().ceil() as i32
        } else {
            0
        };
        let x = self.scale(c64::new(0.5f64.powi(s), 0.0))?;
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
            let c3 = if with_x3 { c[4 * i + 3] } else { 0.0 };
            GpuDense::lincomb(
                &x,
                [Some(&x2), with_x3.then_some(&x3)],
                [c[4 * i], c[4 * i + 1], c[4 * i + 2], c3],
            )
        };
        let mut acc = block(4, false)?;
        for i in (0..4).rev() {
            let b = block(i, true)?;
            acc = GpuDense::gemm(OP, &x4, CUBLAS_OP_N, &acc, CUBLAS_OP_N, ONE, ONE, Some(&b))?;
        }
        for _ in 0..s {
            acc = acc.matmul(&acc)?;
        }
        if !acc.norm_max()?.is_finite() {
            return Err(Error::Numerical {
                op: OP.into(),
                reason: format!(
                    "exp(a) overflows: the result has entries beyond the double range \
                     (‖a‖₁ = {norm:.3e})"
                ),
            });
        }
        Ok(acc)
    }
}
