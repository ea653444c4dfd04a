//! Krylov methods written once against [`Data`]: a Krylov–Schur eigensolver (thick-restart
//! Lanczos for Hermitian operators), the action of the matrix exponential (Al-Mohy & Higham
//! 2011), and the iterative solvers CG, BiCGSTAB and GMRES(m).
//!
//! The algorithms see the operator only through [`LinearMap`] and the vectors only through
//! [`Vectors`]. The operations layer implements both with its dispatchers (`matmul`, `inner`,
//! `iadd`, `imul`, the norms), so the same code runs on Csr, Dense, GpuDense, a user's kind or
//! a distributed one, and each step runs wherever the dispatcher places it. The vectors are kept
//! as `Data` of the kind the operator produces (Dense for a Csr operator, GpuDense for a
//! GpuDense one).
//!
//! Small dense problems (the projected matrix of the eigensolver, the Hessenberg system of
//! GMRES) are solved with faer.

pub(crate) mod expmv;
pub(crate) mod iterative;
pub(crate) mod schur;
pub(crate) mod watch;

use faer::MatRef;

use crate::error::Result;
use crate::scalar::c64;
use crate::storage::Data;

/// A square linear operator applied to vectors (n×1 or n×b `Data`).
pub(crate) trait LinearMap {
    /// The dimension n.
    fn dim(&self) -> usize;
    /// `A·x`, in the kind of the Krylov vectors.
    fn apply(&self, x: &Data) -> Result<Data>;

    /// `A·x` into `out`, reusing its buffer where the operator can (a vector of the right kind
    /// and shape that nothing else holds): a loop that drops one vector per product then
    /// allocates no fresh memory (whose pages the system would clear). By default a new
    /// vector replaces `out`.
    fn apply_into(&self, x: &Data, out: &mut Data) -> Result<()> {
        *out = self.apply(x)?;
        Ok(())
    }

    /// `out ← coeff·(A·x − shift·x)` and `sum ← sum + out` in one go, where the operator can
    /// fuse the Taylor term of `expm_multiply` into its product ([`Vectors::taylor_term`]
    /// after the product, without the term's own passes over the vectors). Returns
    /// `(max |outᵢ|, max |sumᵢ|)`, or `None` without touching anything where it cannot (the
    /// default), and the caller takes the separate steps.
    fn apply_taylor(
        &self,
        x: &Data,
        out: &mut Data,
        term: (c64, c64),
        sum: &mut Data,
    ) -> Result<Option<(f64, f64)>> {
        let _ = (x, out, term, sum);
        Ok(None)
    }
}

/// The vector operations a Krylov method needs.
pub(crate) trait Vectors {
    /// `x†·y` for kets.
    fn dot(&self, x: &Data, y: &Data) -> Result<c64>;
    /// `y ← y + a·x`, in place when `y` is not shared.
    fn axpy(&self, y: &mut Data, a: c64, x: &Data) -> Result<()>;
    /// `x ← a·x`, in place when `x` is not shared.
    fn scale(&self, x: &mut Data, a: c64) -> Result<()>;
    /// `‖x‖₂`.
    fn norm(&self, x: &Data) -> Result<f64>;
    /// `max |xᵢ|`.
    fn norm_max(&self, x: &Data) -> Result<f64>;
    /// A copy of `x` that shares nothing with it (so that in-place updates do not copy).
    fn copy(&self, x: &Data) -> Result<Data>;
    /// `dst ← src`, into `dst`'s own memory where the kind allows (a vector of the same kind,
    /// shape and layout that nothing else holds); by default a fresh copy replaces `dst`.
    fn assign(&self, dst: &mut Data, src: &Data) -> Result<()> {
        *dst = self.copy(src)?;
        Ok(())
    }
    /// A deterministic pseudo-random vector like `like`, from `seed`.
    fn random_like(&self, like: &Data, seed: u64) -> Result<Data>;

    /// One term of the truncated Taylor series in `expm_multiply`: `x ← coeff·(x − shift·prev)`,
    /// then `sum ← sum + x`; returns `(max |xᵢ|, max |sumᵢ|)` after the update.
    fn taylor_term(
        &self,
        x: &mut Data,
        prev: &Data,
        (shift, coeff): (c64, c64),
        sum: &mut Data,
    ) -> Result<(f64, f64)> {
        taylor_term_steps(self, x, prev, (shift, coeff), sum)
    }

    /// `y ← y + a·x`, then `next†·y`: a step of modified Gram–Schmidt and the next step's dot
    /// (one pass over `y` where the kind allows).
    fn axpy_dot(&self, y: &mut Data, a: c64, x: &Data, next: &Data) -> Result<c64> {
        self.axpy(y, a, x)?;
        self.dot(next, y)
    }

    /// `basis[i]†·w` for every `i` (one pass over the basis where the kind allows).
    fn dots(&self, basis: &[Data], w: &Data) -> Result<Vec<c64>> {
        basis.iter().map(|v| self.dot(v, w)).collect()
    }

    /// `w ← w − Σᵢ c[i]·basis[i]`.
    fn subtract(&self, w: &mut Data, basis: &[Data], c: &[c64]) -> Result<()> {
        for (v, ci) in basis.iter().zip(c) {
            self.axpy(w, -ci, v)?;
        }
        Ok(())
    }

    /// `w ← w − Σᵢ c[i]·basis[i]`, then `‖w‖₂` (one pass over `w` where the kind allows; a
    /// zero coefficient need not read its vector).
    fn subtract_norm(&self, w: &mut Data, basis: &[Data], c: &[c64]) -> Result<f64> {
        self.subtract(w, basis, c)?;
        self.norm(w)
    }

    /// `Σⱼ coeffs[(j, c)]·basis[j]` for every column `c` of `coeffs` (new vectors).
    fn combine(&self, basis: &[Data], coeffs: MatRef<'_, c64>) -> Result<Vec<Data>> {
        (0..coeffs.ncols())
            .map(|c| {
                let mut y = self.copy(&basis[0])?;
                self.scale(&mut y, coeffs[(0, c)])?;
                for (j, v) in basis.iter().enumerate().take(coeffs.nrows()).skip(1) {
                    self.axpy(&mut y, coeffs[(j, c)], v)?;
                }
                Ok(y)
            })
            .collect()
    }
}

/// [`Vectors::taylor_term`] as separate steps: `axpy` (the shift, if any), `scale`, `norm_max`,
/// `axpy` into the sum, `norm_max`. The default, and the fallback of an implementation that
/// fuses the term for some vectors only.
pub(crate) fn taylor_term_steps<V: Vectors + ?Sized>(
    vs: &V,
    x: &mut Data,
    prev: &Data,
    (shift, coeff): (c64, c64),
    sum: &mut Data,
) -> Result<(f64, f64)> {
    if shift != c64::new(0.0, 0.0) {
        vs.axpy(x, -shift, prev)?;
    }
    vs.scale(x, coeff)?;
    let c = vs.norm_max(x)?;
    vs.axpy(sum, c64::new(1.0, 0.0), x)?;
    Ok((c, vs.norm_max(sum)?))
}
