//! In-place updates: `a += s·b` and `a *= s` without a new allocation where the kinds allow.

use crate::dispatch::Out;
use crate::error::Result;
use crate::scalar::{MINUS_ONE, c64, scaled};
use crate::shape::same_shape;
use crate::storage::{Csr, Data, Dense};

/// `a ← a + scale·b`, written into `a`'s own buffer when that is possible and into a new value
/// of `a`'s kind otherwise. Returns whether the update happened in place.
///
/// In place: `a` Dense and held by no other handle, `b` Dense or Csr. Otherwise the result of
/// [`add_scaled`](crate::add_scaled) with `Out::Kind(a.kind())` replaces `a` (so a Csr stays
/// Csr: adding into a Csr can change its structure). Other handles to the old value still see
/// the old value.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if the shapes differ; `a` is then unchanged.
///
/// ```
/// use polymat::{Csr, Data, Dense, c64};
/// let mut a: Data = Dense::zeros(2, 2).into();
/// let b: Data = Csr::identity(2).into();
/// assert!(polymat::iadd(&mut a, &b, c64::new(3.0, 0.0)).unwrap()); // in place
/// assert_eq!(a.downcast_ref::<Dense>().unwrap().get(1, 1), c64::new(3.0, 0.0));
///
/// let alias = a.clone(); // shared now: the update makes a new value
/// assert!(!polymat::iadd(&mut a, &b, c64::new(1.0, 0.0)).unwrap());
/// assert_eq!(alias.downcast_ref::<Dense>().unwrap().get(1, 1), c64::new(3.0, 0.0));
/// ```
pub fn iadd(a: &mut Data, b: &Data, scale: c64) -> Result<bool> {
    same_shape("iadd", a.shape(), b.shape())?;
    if let Some(dst) = a.get_mut::<Dense>() {
        if let Some(src) = b.downcast_ref::<Dense>() {
            iadd_dense(dst, src, scale);
            return Ok(true);
        }
        if let Some(src) = b.downcast_ref::<Csr>() {
            super::add::scatter_add(dst, src, scale);
            return Ok(true);
        }
    }
    *a = crate::ops::add::add_scaled(a, b, scale, Out::Kind(a.kind()))?;
    Ok(false)
}

/// `a ← scale·a`, in place when `a` is Dense or Csr and held by no other handle (a Csr
/// scaled by zero keeps its explicit zeros in place). Otherwise `a` is replaced by
/// [`mul`](crate::mul)'s result of the same kind. Returns whether it happened in place.
///
/// # Errors
/// Conversion errors only, for user kinds without a `mul` kernel.
///
/// ```
/// use polymat::{Csr, Data, c64};
/// let mut a: Data = Csr::identity(2).into();
/// assert!(polymat::imul(&mut a, c64::new(0.0, 2.0)).unwrap());
/// assert_eq!(a.downcast_ref::<Csr>().unwrap().get(0, 0), c64::new(0.0, 2.0));
/// ```
pub fn imul(a: &mut Data, scale: c64) -> Result<bool> {
    if let Some(dst) = a.get_mut::<Dense>() {
        // Every entry of the buffer, in either layout.
        let buf = dst.buffer_mut();
        for j in 0..if buf.nrows() == 0 { 0 } else { buf.ncols() } {
            buf.col_as_slice_mut(j).iter_mut().for_each(|x| *x *= scale);
        }
        return Ok(true);
    }
    if let Some(dst) = a.get_mut::<Csr>() {
        dst.data_mut().iter_mut().for_each(|x| *x *= scale);
        return Ok(true);
    }
    *a = crate::ops::scale::mul(a, scale, Out::Kind(a.kind()))?;
    Ok(false)
}

/// `dst ← dst + scale·src` for Dense operands of equal shape (checked by the caller).
/// Either layout: the same layout walks both buffers together; different layouts read the
/// other buffer transposed (`src` buffer `(j, i)` is `dst` buffer `(i, j)`). `dst` keeps its layout.
fn iadd_dense(dst: &mut Dense, src: &Dense, scale: c64) {
    let same = dst.layout() == src.layout();
    let buf = dst.buffer_mut();
    let other = src.buffer();
    for j in 0..if buf.nrows() == 0 { 0 } else { buf.ncols() } {
        let col = buf.col_as_slice_mut(j);
        if same && scale == MINUS_ONE {
            // `scaled`'s sign flip: x + (−y) is x − y.
            for (d, s) in col.iter_mut().zip(src.buffer_col(j)) {
                *d -= *s;
            }
        } else if same {
            crate::simd::add_scaled_assign(col, scale, src.buffer_col(j));
        } else {
            for (i, d) in col.iter_mut().enumerate() {
                *d += scaled(scale, other[(j, i)]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Layout;

    /// In place on Dense of one layout: `x + s·y` to the bit for a general scale, and `x − y`
    /// for −1 (an infinite part of y stays infinite, as numpy's `a - b`); mixed layouts too.
    #[test]
    fn in_place_sums_are_the_scalar_arithmetic() {
        let x = Dense::from_fn(5, 3, |i, j| c64::new(i as f64 - 1.5, 0.25 * j as f64));
        let y = Dense::from_fn(5, 3, |i, j| {
            if (i, j) == (2, 1) {
                c64::new(0.5, f64::INFINITY)
            } else {
                c64::new(0.75 * j as f64, i as f64 - 3.0)
            }
        });
        for s in [MINUS_ONE, c64::new(0.5, -2.0), c64::new(1.0, 0.0)] {
            for (lx, ly) in [
                (Layout::ColMajor, Layout::ColMajor),
                (Layout::RowMajor, Layout::RowMajor),
                (Layout::ColMajor, Layout::RowMajor),
            ] {
                let mut a: Data = x.clone().into_layout(lx).unwrap().into();
                let b: Data = y.clone().into_layout(ly).unwrap().into();
                assert!(iadd(&mut a, &b, s).unwrap());
                let a = a.downcast_ref::<Dense>().unwrap();
                for i in 0..5 {
                    for j in 0..3 {
                        let want = x.get(i, j) + scaled(s, y.get(i, j));
                        let got = a.get(i, j);
                        let same = |g: f64, w: f64| {
                            g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan())
                        };
                        assert!(
                            same(got.re, want.re) && same(got.im, want.im),
                            "{s} {i} {j}"
                        );
                    }
                }
                if s == MINUS_ONE {
                    assert_eq!(a.get(2, 1).im, f64::NEG_INFINITY);
                }
            }
        }
    }
}
