//! Sums, scaling, conjugation and transposes of Dia.

use super::{Builder, diagonals, valid_row};
use crate::error::Result;
use crate::scalar::{ZERO, c64, scaled};
use crate::shape::same_shape;
use crate::storage::{Dia, alloc, valid_cols};

/// `a + scale·b`, merging the diagonals. O(diagonals · cols).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if the shapes differ.
pub fn add_dia(a: &Dia, b: &Dia, scale: c64) -> Result<Dia> {
    const OP: &str = "add";
    same_shape(OP, a.shape(), b.shape())?;
    let shape = a.shape();
    let n = shape.1;
    let (oa, ob) = (a.offsets(), b.offsets());
    // Room for the union of the offsets (not their total: a sum of two operators on the same
    // diagonals kept twice the room it used).
    let union = {
        let (mut i, mut j, mut u) = (0, 0, 0);
        while i < oa.len() || j < ob.len() {
            match (oa.get(i), ob.get(j)) {
                (Some(x), Some(y)) => {
                    i += usize::from(x <= y);
                    j += usize::from(y <= x);
                }
                (Some(_), None) => i += 1,
                _ => j += 1,
            }
            u += 1;
        }
        u
    };
    let mut offsets = Vec::with_capacity(union);
    let cap = union.saturating_mul(n);
    let mut data: Vec<c64> = alloc::try_with_capacity(OP, shape, cap)?;
    // Merge the two sorted offset lists, writing each result row once (padding included).
    let (mut i, mut j) = (0, 0);
    while i < oa.len() || j < ob.len() {
        let (o, ra, rb) = match (oa.get(i), ob.get(j)) {
            (Some(&x), Some(&y)) if x == y => {
                i += 1;
                j += 1;
                (x, Some(i - 1), Some(j - 1))
            }
            (Some(&x), Some(&y)) if x < y => {
                i += 1;
                (x, Some(i - 1), None)
            }
            (Some(&x), None) => {
                i += 1;
                (x, Some(i - 1), None)
            }
            (_, Some(&y)) => {
                j += 1;
                (y, None, Some(j - 1))
            }
            (None, None) => unreachable!("the loop condition"),
        };
        let js = valid_cols(shape, o);
        let start = data.len();
        data.resize(start + js.start, ZERO);
        match (ra, rb) {
            (Some(ka), Some(kb)) => {
                // The only case that can cancel: keep the row only if something is left.
                let mut nonzero = false;
                data.extend(
                    valid_row(a, ka, js.clone())
                        .iter()
                        .zip(valid_row(b, kb, js.clone()))
                        .map(|(x, y)| {
                            let v = x + scaled(scale, *y);
                            nonzero |= v != ZERO;
                            v
                        }),
                );
                if !nonzero {
                    data.truncate(start);
                    continue;
                }
            }
            (Some(ka), None) => data.extend_from_slice(valid_row(a, ka, js.clone())),
            (None, Some(kb)) => data.extend(
                valid_row(b, kb, js.clone())
                    .iter()
                    .map(|y| scaled(scale, *y)),
            ),
            (None, None) => unreachable!("one input holds the offset"),
        }
        data.resize(start + n, ZERO);
        offsets.push(o);
    }
    if scale == ZERO {
        // 0·b may have left b's diagonals as exact zeros.
        return Ok(Builder {
            shape,
            offsets,
            data,
        }
        .finish_compact());
    }
    // SAFETY: the offsets come from two valid Dia of this shape, merged in increasing order;
    // each row holds n values, zero outside its valid columns.
    Ok(unsafe { Dia::from_parts_unchecked(shape, offsets, data) })
}

/// `s·a`. O(stored entries); multiplying by zero leaves no diagonals.
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) if the result cannot be allocated.
pub fn mul_dia(a: &Dia, s: c64) -> Result<Dia> {
    let shape = a.shape();
    if s == ZERO {
        return Ok(Dia::zeros(shape.0, shape.1));
    }
    if s.is_finite() {
        // The padding is zero and stays zero: one pass over the whole buffer.
        return Ok(Builder::mapped("mul", a, |x| s * x)?.finish());
    }
    let mut out = Builder::new("mul", shape, a.offsets().to_vec())?;
    for (k, (o, r)) in diagonals(a).enumerate() {
        let js = valid_cols(shape, o);
        for (d, x) in out.row_mut(k)[js.clone()].iter_mut().zip(&r[js]) {
            *d = s * x;
        }
    }
    Ok(out.finish())
}

/// `−a`, each part's sign flipped (exact for infinite parts, where `(−1)·a`'s complex product
/// gives NaN).
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) if the result cannot be allocated.
pub fn neg_dia(a: &Dia) -> Result<Dia> {
    Ok(Builder::mapped("neg", a, |x| -x)?.finish())
}

/// `conj(a)`.
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) if the result cannot be allocated.
pub fn conj_dia(a: &Dia) -> Result<Dia> {
    Ok(Builder::mapped("conj", a, |x| x.conj())?.finish())
}

/// `aᵀ` (or `a†` with `conjugate`): diagonal `o` becomes `−o`. O(diagonals · rows).
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) if the result cannot be allocated.
pub fn transpose_dia(a: &Dia, conjugate: bool) -> Result<Dia> {
    const OP: &str = "transpose";
    let (m, n) = a.shape();
    let shape = (n, m);
    let offsets: Vec<isize> = a.offsets().iter().rev().map(|&o| -o).collect();
    let mut data = alloc::try_with_capacity(OP, shape, offsets.len().saturating_mul(m))?;
    for (o, r) in diagonals(a).collect::<Vec<_>>().into_iter().rev() {
        // Entry (j − o, j) of a is entry (j, j − o) of aᵀ: column c = j − o there, so the
        // valid columns of −o in aᵀ are those of o in a shifted by −o.
        let row_start = data.len();
        let cs = valid_cols(shape, -o);
        data.resize(row_start + cs.start, ZERO);
        let src = &r[cs.start.wrapping_add(o as usize)..cs.end.wrapping_add(o as usize)];
        if conjugate {
            data.extend(src.iter().map(|x| x.conj()));
        } else {
            data.extend_from_slice(src);
        }
        data.resize(row_start + m, ZERO);
    }
    // SAFETY: the offsets of a, negated and reversed, are strictly increasing and inside the
    // transposed shape; each row holds m values, zero outside its valid columns.
    Ok(unsafe { Dia::from_parts_unchecked(shape, offsets, data) })
}

/// Sets real and imaginary parts below `atol` to zero and drops diagonals that become zero.
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) if the result cannot be allocated.
pub fn tidyup_dia(a: &Dia, atol: f64) -> Result<Dia> {
    let tidy = |x: f64| if x.abs() < atol { 0.0 } else { x };
    Ok(Builder::mapped("tidyup", a, |x| c64::new(tidy(x.re), tidy(x.im)))?.finish_compact())
}
