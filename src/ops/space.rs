//! The Krylov methods' view of polymat: vector operations through the dispatchers
//! ([`Dispatched`]) and operators as closures ([`FnMap`]), so `eigs`, `expm_multiply` and the
//! iterative `solve` run on every kind the dispatchers reach.

use crate::dispatch::Out;
use crate::error::Result;
use crate::krylov::{LinearMap, Vectors};
use crate::scalar::{ONE, c64};
use crate::storage::{Data, Dense, Kind};

/// Vector operations through the dispatchers: `inner`, `iadd`, `imul`, the norms.
pub(crate) struct Dispatched;

impl Vectors for Dispatched {
    fn dot(&self, x: &Data, y: &Data) -> Result<c64> {
        super::inner(x, y)
    }

    fn axpy(&self, y: &mut Data, a: c64, x: &Data) -> Result<()> {
        super::iadd(y, x, a).map(|_| ())
    }

    fn scale(&self, x: &mut Data, a: c64) -> Result<()> {
        super::imul(x, a).map(|_| ())
    }

    fn norm(&self, x: &Data) -> Result<f64> {
        super::norm::frobenius(x)
    }

    fn norm_max(&self, x: &Data) -> Result<f64> {
        super::norm::max(x)
    }

    fn copy(&self, x: &Data) -> Result<Data> {
        if let Some(d) = x.downcast_ref::<Dense>() {
            return Ok(d.clone().into());
        }
        super::mul(x, ONE, Out::Kind(x.kind()))
    }

    fn random_like(&self, like: &Data, seed: u64) -> Result<Data> {
        let (m, n) = like.shape();
        let v: Data = random_dense(m, n, seed)?.into();
        if like.kind() == Kind::DENSE {
            Ok(v)
        } else {
            crate::convert::to(like.kind(), &v)
        }
    }
}

/// A deterministic pseudo-random matrix with entries uniform in the unit square (xorshift64*).
pub(crate) fn random_dense(m: usize, n: usize, seed: u64) -> Result<Dense> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    Dense::from_fn_for("random", m, n, |_, _| c64::new(next(), next()))
}

/// An n×n operator given by a closure on vectors.
pub(crate) struct FnMap<F> {
    pub(crate) n: usize,
    pub(crate) f: F,
}

impl<F: Fn(&Data) -> Result<Data>> LinearMap for FnMap<F> {
    fn dim(&self) -> usize {
        self.n
    }

    fn apply(&self, x: &Data) -> Result<Data> {
        (self.f)(x)
    }
}

/// `a·x` through the `matmul` dispatcher, the result in the kind of `x` when the product lands
/// elsewhere (so the Krylov vectors keep one kind).
pub(crate) fn matrix_map(a: &Data) -> FnMap<impl Fn(&Data) -> Result<Data> + '_> {
    FnMap {
        n: a.shape().0,
        f: move |x: &Data| {
            let y = super::matmul(a, x, Out::Auto)?;
            if y.kind() == x.kind() {
                Ok(y)
            } else {
                crate::convert::to(x.kind(), &y)
            }
        },
    }
}
