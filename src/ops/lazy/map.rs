//! A lazy operator as the Krylov methods' [`LinearMap`], applied straight from its plan: the
//! products write into the buffer of a vector the method no longer needs
//! ([`LinearMap::apply_into`]), so a long `expm_multiply` allocates no fresh memory per
//! product.

use std::sync::Arc;

use super::plan::Plan;
use super::run;
use crate::error::Result;
use crate::krylov::LinearMap;
use crate::scalar::c64;
use crate::storage::{Data, Dense, KronSum, Layout, SuperOp};

/// A lazy operator's plan as a [`LinearMap`] on Dense vectors.
pub(crate) struct PlanMap {
    plan: Arc<Plan>,
}

impl PlanMap {
    /// The plan of `a` when it is a Kronecker sum or a square superoperator.
    ///
    /// # Errors
    /// The plan's construction (a factor's conversion to Csr).
    pub(crate) fn of(a: &Data) -> Result<Option<PlanMap>> {
        if let Some(k) = a.downcast_ref::<KronSum>() {
            return Ok(Some(PlanMap {
                plan: super::kron_sum::plan_of(k)?,
            }));
        }
        if let Some(s) = a.downcast_ref::<SuperOp>()
            && s.input() == s.output()
        {
            return Ok(Some(PlanMap {
                plan: super::super_op::plan_of(s)?,
            }));
        }
        Ok(None)
    }
}

impl LinearMap for PlanMap {
    fn dim(&self) -> usize {
        self.plan.dim
    }

    fn apply(&self, x: &Data) -> Result<Data> {
        // A Dense is read where it is (a conversion would copy one that is shared).
        let xd = match x.as_dense() {
            Some(d) => std::borrow::Cow::Borrowed(d),
            None => std::borrow::Cow::Owned(crate::convert::to_type::<Dense>(x)?),
        };
        Ok(super::kron_sum::apply_columns("matmul", &self.plan, &xd)?.into())
    }

    fn apply_into(&self, x: &Data, out: &mut Data) -> Result<()> {
        if let Some(xd) = x.as_dense()
            && let Some(o) = out.get_mut::<Dense>()
            && o.shape() == xd.shape()
            && o.layout() == Layout::ColMajor
            && xd.shape().0 == self.plan.dim
        {
            for j in 0..xd.shape().1 {
                run::apply(&self.plan, xd.try_col(j)?, o.try_col_mut(j)?)?;
            }
            return Ok(());
        }
        *out = self.apply(x)?;
        Ok(())
    }

    fn apply_taylor(
        &self,
        x: &Data,
        out: &mut Data,
        term: (c64, c64),
        sum: &mut Data,
    ) -> Result<Option<(f64, f64)>> {
        let Some(xd) = x.as_dense() else {
            return Ok(None);
        };
        let fits = |d: &Dense| d.shape() == xd.shape() && d.layout() == Layout::ColMajor;
        let (Some(o), Some(s)) = (out.get_mut::<Dense>(), sum.get_mut::<Dense>()) else {
            return Ok(None);
        };
        if !fits(o) || !fits(s) || xd.shape().0 != self.plan.dim {
            return Ok(None);
        }
        let mut maxima = (0.0f64, 0.0f64);
        for j in 0..xd.shape().1 {
            let Some(m) = run::apply_taylor(
                &self.plan,
                xd.try_col(j)?,
                o.try_col_mut(j)?,
                term,
                s.try_col_mut(j)?,
            ) else {
                return Ok(None);
            };
            maxima = (maxima.0.max(m.0), maxima.1.max(m.1));
        }
        Ok(Some(maxima))
    }
}
