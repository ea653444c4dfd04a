//! `tidyup`: set tiny real and imaginary parts to zero.

use std::sync::LazyLock;

use crate::dispatch::{Dispatcher, Out};
use crate::error::Result;
use crate::gpu::GpuDense;
use crate::scalar::{ZERO, c64};
use crate::storage::{Csr, Data, Dense, Dia};

/// Zeroes every real or imaginary part with modulus below `atol` (QuTiP's `tidyup`); a Csr
/// result drops the entries that become zero. Parameter: `atol`. Kernels: Dense, Csr.
pub static TIDYUP: LazyLock<Dispatcher<f64>> = LazyLock::new(|| {
    Dispatcher::builder("tidyup", 1)
        .result_shape(crate::dispatch::checks::first_shape)
        .check(|op, _, t: &f64| crate::dispatch::checks::check_tol(op, "atol", *t))
        .unary("tidyup_dense", |a: &Dense, t: &f64| tidyup_dense(a, *t))
        .unary("tidyup_csr", |a: &Csr, t: &f64| Ok(tidyup_csr(a, *t)))
        .unary("tidyup_dia", |a: &Dia, t: &f64| {
            super::dia::tidyup_dia(a, *t)
        })
        .unary("tidyup_gpu", |a: &GpuDense, t: &f64| a.tidyup(*t))
        .builtin()
});

/// `a` with parts below `atol` set to zero.
///
/// # Errors
/// Only those of the conversions `out` asks for.
///
/// ```
/// use polymat::{Csr, Out, c64};
/// let a = Csr::from_triplets((2, 2), &[0, 1], &[0, 1], &[c64::new(1.0, 1e-15), c64::new(1e-14, 0.0)]).unwrap();
/// let t = polymat::ops::tidyup(&a.into(), 1e-12, Out::Auto).unwrap();
/// let t = t.downcast_ref::<Csr>().unwrap();
/// assert_eq!((t.nnz(), t.get(0, 0)), (1, c64::new(1.0, 0.0)));
/// ```
#[inline]
pub fn tidyup(a: &Data, atol: f64, out: Out) -> Result<Data> {
    TIDYUP.call(&[a], out, &atol)
}

#[inline]
fn tidy(x: c64, atol: f64) -> c64 {
    c64::new(
        if x.re.abs() < atol { 0.0 } else { x.re },
        if x.im.abs() < atol { 0.0 } else { x.im },
    )
}

/// Dense `tidyup`. O(mn).
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) if the result cannot be allocated.
pub fn tidyup_dense(a: &Dense, atol: f64) -> Result<Dense> {
    super::elementwise::dense_map("tidyup", a, |x| tidy(x, atol))
}

/// Csr `tidyup`; entries that become zero are removed. O(nnz).
pub fn tidyup_csr(a: &Csr, atol: f64) -> Csr {
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    let mut indptr = Vec::with_capacity(p.len());
    let (mut indices, mut data) = (Vec::with_capacity(idx.len()), Vec::with_capacity(idx.len()));
    indptr.push(0);
    for i in 0..a.shape().0 {
        for k in p[i]..p[i + 1] {
            let v = tidy(val[k], atol);
            if v != ZERO {
                indices.push(idx[k]);
                data.push(v);
            }
        }
        indptr.push(indices.len());
    }
    // SAFETY: one pointer per row after the leading 0; a subset of each valid row, in order.
    unsafe { Csr::from_parts_unchecked(a.shape(), indptr, indices, data) }
}
