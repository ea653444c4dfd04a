//! Elementwise (Hadamard) product.

use std::sync::LazyLock;

use crate::dispatch::{Dispatcher, Out};
use crate::error::Result;
use crate::gpu::GpuDense;
use crate::scalar::ZERO;
use crate::shape::same_shape;
use crate::storage::{Csr, Data, Dense};

/// `a ∘ b`, entry by entry. Kernels: Dense∘Dense, Csr∘Csr.
pub static MULTIPLY: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("multiply", 2)
        .result_shape(crate::dispatch::checks::first_shape)
        .check_same_shape()
        .binary("multiply_dense", |a: &Dense, b: &Dense, _: &()| {
            multiply_dense(a, b)
        })
        .binary("multiply_csr", |a: &Csr, b: &Csr, _: &()| {
            multiply_csr(a, b)
        })
        .binary("multiply_gpu", |a: &GpuDense, b: &GpuDense, _: &()| {
            a.multiply(b)
        })
        .builtin()
});

/// The elementwise product.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if the shapes differ.
///
/// ```
/// use polymat::{Dense, Out, c64};
/// let a = Dense::from_fn(2, 2, |i, j| c64::new((i + j) as f64, 0.0));
/// let p = polymat::multiply(&a.clone().into(), &a.into(), Out::Auto).unwrap();
/// assert_eq!(p.downcast_ref::<Dense>().unwrap().get(1, 1), c64::new(4.0, 0.0));
/// ```
#[inline]
pub fn multiply(a: &Data, b: &Data, out: Out) -> Result<Data> {
    MULTIPLY.call(&[a, b], out, &())
}

/// Dense∘Dense. O(mn).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if the shapes differ.
pub fn multiply_dense(a: &Dense, b: &Dense) -> Result<Dense> {
    same_shape("multiply", a.shape(), b.shape())?;
    super::elementwise::dense_zip("multiply", a, b, |x, y| x * y)
}

/// Csr∘Csr: the intersection of the two patterns. O(nnz(a) + nnz(b)). Products that are
/// exactly zero are not stored.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if the shapes differ.
pub fn multiply_csr(a: &Csr, b: &Csr) -> Result<Csr> {
    same_shape("multiply", a.shape(), b.shape())?;
    let m = a.shape().0;
    let (pa, ia, da) = (a.indptr(), a.indices(), a.data());
    let (pb, ib, db) = (b.indptr(), b.indices(), b.data());
    let mut indptr = Vec::with_capacity(m + 1);
    let cap = a.nnz().min(b.nnz());
    let (mut indices, mut data) = (Vec::with_capacity(cap), Vec::with_capacity(cap));
    indptr.push(0);
    for i in 0..m {
        let (mut x, mut y) = (pa[i], pb[i]);
        while x < pa[i + 1] && y < pb[i + 1] {
            match ia[x].cmp(&ib[y]) {
                std::cmp::Ordering::Less => x += 1,
                std::cmp::Ordering::Greater => y += 1,
                std::cmp::Ordering::Equal => {
                    let v = da[x] * db[y];
                    if v != ZERO {
                        indices.push(ia[x]);
                        data.push(v);
                    }
                    x += 1;
                    y += 1;
                }
            }
        }
        indptr.push(indices.len());
    }
    // SAFETY: one pointer per row after the leading 0; a row's columns are a subset of a's
    // row, emitted in its (strictly increasing) order.
    Ok(unsafe { Csr::from_parts_unchecked(a.shape(), indptr, indices, data) })
}
