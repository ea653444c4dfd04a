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
        let gauss = crate::gpu::gauss_products() && gauss_safe(norm);
        let a = Term {
            m: Held::Input(self),
            gauss,
        };
        let e = taylor::expm(&a, norm, |t, f| Ok(t.with(t.m().scale(c64::new(f, 0.0))?)))?
            .into_matrix()?;
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

/// The largest 1-norm for which `expm` forms its products by Gauss's method: every matrix
/// the evaluation multiplies then has entries below e³³⁰ < 2⁴⁸⁰ (the Taylor terms of a matrix
/// scaled to 1-norm ≤ θ₁₈ are small; the squarings' factors are powers of exp(a / 2ˢ), of norm
/// at most e^‖a‖₁), so no sum or product of parts in the three real products overflows where
/// the complex one would not (the same bound as the CPU's `gemm3m`).
const GAUSS_MAX_NORM: f64 = 330.0;

/// Whether Gauss's products are safe for `expm` of a matrix of 1-norm `norm`.
fn gauss_safe(norm: f64) -> bool {
    norm <= GAUSS_MAX_NORM
}

/// The input matrix (borrowed, never copied) or one the evaluation made.
enum Held<'a> {
    Input(&'a GpuDense),
    Made(GpuDense),
}

/// A matrix inside `expm`'s evaluation, with the product method chosen for the whole call.
struct Term<'a> {
    m: Held<'a>,
    gauss: bool,
}

impl<'a> Term<'a> {
    fn m(&self) -> &GpuDense {
        match &self.m {
            Held::Input(m) => m,
            Held::Made(m) => m,
        }
    }

    fn with(&self, m: GpuDense) -> Term<'a> {
        Term {
            m: Held::Made(m),
            gauss: self.gauss,
        }
    }

    /// The matrix, owned (a copy only for an input returned as it is, which `taylor` does not).
    fn into_matrix(self) -> Result<GpuDense> {
        match self.m {
            Held::Input(m) => m.try_clone(),
            Held::Made(m) => Ok(m),
        }
    }
}

impl Powers for Term<'_> {
    fn mul(&self, other: &Self) -> Result<Self> {
        Ok(self.with(if self.gauss {
            self.m().matmul_gauss(other.m())?
        } else {
            self.m().matmul(other.m())?
        }))
    }

    fn mul_add(&self, other: &Self, acc: Self) -> Result<Self> {
        let gauss = self.gauss;
        Ok(self.with(GpuDense::mul_add(
            self.m(),
            other.m(),
            acc.into_matrix()?,
            gauss,
        )?))
    }

    fn combs(xs: [&Self; 4], coefs: &[[f64; 5]]) -> Result<Vec<Self>> {
        let out = GpuDense::lincombs([xs[0].m(), xs[1].m(), xs[2].m(), xs[3].m()], coefs)?;
        Ok(out.into_iter().map(|m| xs[0].with(m)).collect())
    }

    fn comb(c0: f64, terms: &[(f64, &Self)]) -> Result<Self> {
        let Some(((c1, x1), rest)) = terms.split_first() else {
            return Err(Error::argument(
                "expm",
                "a Taylor term combination needs a matrix",
            ));
        };
        let (head, tail) = rest.split_at(rest.len().min(3));
        let coef = |i: usize| head.get(i).map_or(0.0, |t| t.0);
        let mut out = GpuDense::lincomb(
            x1.m(),
            [
                head.first().map(|t| t.1.m()),
                head.get(1).map(|t| t.1.m()),
                head.get(2).map(|t| t.1.m()),
            ],
            [c0, *c1, coef(0), coef(1), coef(2)],
        )?;
        for (c, x) in tail {
            out = out.add_scaled(x.m(), c64::new(*c, 0.0))?;
        }
        Ok(x1.with(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauss_products_only_below_the_overflow_bound() {
        assert!(gauss_safe(0.0) && gauss_safe(1.0) && gauss_safe(GAUSS_MAX_NORM));
        assert!(!gauss_safe(331.0) && !gauss_safe(f64::MAX));
        // The bound's reason: e^330 is below 2^480, so sums of two parts stay below 2^481 and
        // a product of such sums over 2^31 terms below 2^993.
        assert!(GAUSS_MAX_NORM.exp() < 2f64.powi(480));
    }
}
