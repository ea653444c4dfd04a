//! The exponential on the GPU from products only (powers are `ops::pow`'s square-and-multiply
//! over `GpuDense::matmul`).

use super::GpuDense;
use crate::error::{Error, Result};
use crate::gpu::taylor::{self, Powers};
use crate::scalar::c64;
use crate::shape::square;

impl GpuDense {
    /// `exp(a)`: Bader–Blanes–Casas, the degree chosen from the 1-norm (T₁ … T₁₈, at most 5
    /// products) and scaling and squaring beyond θ₁₈ (see `gpu::taylor`), on cuBLAS products and
    /// the element-wise combination kernel.
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
        let e = taylor::expm(self, norm, |a, f| a.scale(c64::new(f, 0.0)))?;
        if !e.norm_max()?.is_finite() {
            return Err(Error::Numerical {
                op: OP.into(),
                reason: format!(
                    "exp(a) overflows: the result has entries beyond the double range \
                     (‖a‖₁ = {norm:.3e})"
                ),
            });
        }
        Ok(e)
    }
}

impl Powers for GpuDense {
    fn mul(&self, other: &GpuDense) -> Result<GpuDense> {
        self.matmul(other)
    }

    fn mul_add(&self, other: &GpuDense, acc: GpuDense) -> Result<GpuDense> {
        GpuDense::mul_add(self, other, acc)
    }

    fn combs(xs: [&GpuDense; 4], coefs: &[[f64; 5]]) -> Result<Vec<GpuDense>> {
        GpuDense::lincombs(xs, coefs)
    }

    fn comb(c0: f64, terms: &[(f64, &GpuDense)]) -> Result<GpuDense> {
        let Some(((c1, x1), rest)) = terms.split_first() else {
            return Err(Error::argument(
                "expm",
                "a Taylor term combination needs a matrix",
            ));
        };
        let (head, tail) = rest.split_at(rest.len().min(3));
        let coef = |i: usize| head.get(i).map_or(0.0, |t| t.0);
        let mut out = GpuDense::lincomb(
            x1,
            [
                head.first().map(|t| t.1),
                head.get(1).map(|t| t.1),
                head.get(2).map(|t| t.1),
            ],
            [c0, *c1, coef(0), coef(1), coef(2)],
        )?;
        for (c, x) in tail {
            out = out.add_scaled(x, c64::new(*c, 0.0))?;
        }
        Ok(out)
    }
}
