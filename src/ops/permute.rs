//! Permutations of rows and columns: by explicit indices, or by reordering the subsystems of a
//! tensor-product space.
//!
//! Both follow QuTiP's `qutip.core.data.permute`: a permutation `p` sends old index `i` to new
//! index `p[i]`, so `out[p[i], q[j]] = a[i, j]`.

use std::sync::LazyLock;

use crate::dispatch::{Dispatcher, Out};
use crate::error::{Error, Result};
use crate::gpu::GpuDense;
use crate::storage::{Csr, Data, Dense, alloc};

// The names before 0.2.
#[doc(hidden)]
pub use self::{PERMUTE_DIMENSIONS as DIMENSIONS, PERMUTE_INDICES as INDICES};

/// Row and column permutations for [`indices`]; `None` leaves that axis alone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Permutation {
    /// `rows[i]` is the new position of old row `i`.
    pub rows: Option<Vec<usize>>,
    /// `cols[j]` is the new position of old column `j`.
    pub cols: Option<Vec<usize>>,
}

/// Subsystem dimensions and their new order for [`dimensions`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subsystems {
    /// The dimension of each subsystem; their product is the length of a permuted axis.
    pub dims: Vec<usize>,
    /// `order[k]` is the old subsystem that becomes subsystem `k`.
    pub order: Vec<usize>,
}

/// `out[rows[i], cols[j]] = a[i, j]`. Kernels: Dense, Csr, GpuDense.
pub static PERMUTE_INDICES: LazyLock<Dispatcher<Permutation>> = LazyLock::new(|| {
    Dispatcher::builder("permute_indices", 1)
        .result_shape(crate::dispatch::checks::first_shape)
        .check(|op, args, p| check_permutation(op, args[0].shape(), p))
        .unary("permute_indices_dense", |a: &Dense, p: &Permutation| {
            indices_dense(a, p)
        })
        .unary("permute_indices_csr", |a: &Csr, p: &Permutation| {
            indices_csr(a, p)
        })
        .unary("permute_indices_gpu", |a: &GpuDense, p: &Permutation| {
            a.permute(p.rows.as_deref(), p.cols.as_deref())
        })
        .builtin()
});

/// Reorder subsystems along every axis of length `∏ dims`. Kernels: Dense, Csr, GpuDense
/// (through [`PERMUTE_INDICES`]' kernels).
pub static PERMUTE_DIMENSIONS: LazyLock<Dispatcher<Subsystems>> = LazyLock::new(|| {
    Dispatcher::builder("permute_dimensions", 1)
        .result_shape(crate::dispatch::checks::first_shape)
        .check(|op, args, s| subsystem_permutation(op, args[0].shape(), s).map(|_| ()))
        .unary("permute_dimensions_dense", |a: &Dense, s: &Subsystems| {
            indices_dense(
                a,
                &subsystem_permutation("permute_dimensions", a.shape(), s)?,
            )
        })
        .unary("permute_dimensions_csr", |a: &Csr, s: &Subsystems| {
            indices_csr(
                a,
                &subsystem_permutation("permute_dimensions", a.shape(), s)?,
            )
        })
        .unary("permute_dimensions_gpu", |a: &GpuDense, s: &Subsystems| {
            let p = subsystem_permutation("permute_dimensions", a.shape(), s)?;
            a.permute(p.rows.as_deref(), p.cols.as_deref())
        })
        .builtin()
});

/// Permute rows and columns by explicit index maps.
///
/// # Errors
/// [`Error::Shape`] if a permutation's length differs from that axis;
/// [`Error::InvalidArgument`] if it is not a permutation.
///
/// ```
/// use polymat::{Dense, Out, c64};
/// use polymat::ops::permute::{self, Permutation};
/// let a = Dense::from_fn(3, 1, |i, _| c64::new(i as f64, 0.0));
/// let p = Permutation { rows: Some(vec![2, 0, 1]), cols: None };
/// let b = permute::indices(&a.into(), &p, Out::Auto).unwrap();
/// // old row 0 moved to row 2
/// assert_eq!(b.downcast_ref::<Dense>().unwrap().get(2, 0), c64::new(0.0, 0.0));
/// ```
#[inline]
pub fn indices(a: &Data, permutation: &Permutation, out: Out) -> Result<Data> {
    PERMUTE_INDICES.call(&[a], out, permutation)
}

/// Reorder the subsystems of a tensor-product space. Every axis whose length is `∏ dims`
/// is permuted (both axes of an operator, the rows of a ket, the columns of a bra); axes of
/// length 1 are left alone. Subsystem `k` of the result is old subsystem `order[k]`, as in
/// QuTiP's `Qobj.permute(order)`: for kets, `|a⟩⊗|b⟩` with `order = [1, 0]` becomes `|b⟩⊗|a⟩`.
///
/// # Errors
/// [`Error::Shape`] if an axis is neither 1 nor `∏ dims` long (or no axis is);
/// [`Error::InvalidArgument`] if `order` is not a permutation of `0..dims.len()`.
///
/// ```
/// use polymat::{Csr, Out, c64};
/// use polymat::ops::permute::{self, Subsystems};
/// // |0⟩⊗|1⟩ in a 2×3 space is basis state 1; swapped, |1⟩⊗|0⟩ in 3×2 is state 2.
/// let ket = Csr::from_triplets((6, 1), &[1], &[0], &[c64::new(1.0, 0.0)]).unwrap();
/// let s = Subsystems { dims: vec![2, 3], order: vec![1, 0] };
/// let swapped = permute::dimensions(&ket.into(), &s, Out::Auto).unwrap();
/// assert_eq!(swapped.downcast_ref::<Csr>().unwrap().get(2, 0), c64::new(1.0, 0.0));
/// ```
#[inline]
pub fn dimensions(a: &Data, subsystems: &Subsystems, out: Out) -> Result<Data> {
    PERMUTE_DIMENSIONS.call(&[a], out, subsystems)
}

/// Checks that `p` is a permutation of `0..len`.
fn check_one(op: &str, shape: (usize, usize), axis: &str, len: usize, p: &[usize]) -> Result<()> {
    if p.len() != len {
        return Err(Error::shape(
            op,
            &[shape],
            format!(
                "the {axis} permutation has {} entries for {len} {axis}",
                p.len()
            ),
        ));
    }
    let mut seen = vec![false; len];
    for &x in p {
        if x >= len || std::mem::replace(&mut seen[x], true) {
            return Err(Error::argument(
                op,
                format!(
                    "the {axis} map is not a permutation of 0..{len}: {x} is out of range or repeated"
                ),
            ));
        }
    }
    Ok(())
}

fn check_permutation(op: &str, shape: (usize, usize), p: &Permutation) -> Result<()> {
    if let Some(r) = &p.rows {
        check_one(op, shape, "rows", shape.0, r)?;
    }
    if let Some(c) = &p.cols {
        check_one(op, shape, "columns", shape.1, c)?;
    }
    Ok(())
}

/// The index permutation of every permuted axis for a subsystem reordering.
fn subsystem_permutation(op: &str, shape: (usize, usize), s: &Subsystems) -> Result<Permutation> {
    let k = s.dims.len();
    if s.order.len() != k {
        return Err(Error::argument(
            op,
            format!("order has {} entries for {k} subsystems", s.order.len()),
        ));
    }
    let mut seen = vec![false; k];
    for &o in &s.order {
        if o >= k || std::mem::replace(&mut seen[o], true) {
            return Err(Error::argument(
                op,
                format!("order {:?} is not a permutation of 0..{k}", s.order),
            ));
        }
    }
    let total = s
        .dims
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| Error::argument(op, "the product of the dimensions overflows usize"))?;
    let fits = |len: usize| len == total || len == 1;
    if !fits(shape.0) || !fits(shape.1) || (shape.0 != total && shape.1 != total) {
        return Err(Error::shape(
            op,
            &[shape],
            format!(
                "each axis must be 1 or the product of the dimensions {:?} = {total}",
                s.dims
            ),
        ));
    }
    // Strides of the old layout (row-major over subsystems, last fastest) and of the new one.
    let mut old_stride = vec![1usize; k];
    for q in (0..k.saturating_sub(1)).rev() {
        old_stride[q] = old_stride[q + 1] * s.dims[q + 1];
    }
    let new_dims: Vec<usize> = s.order.iter().map(|&o| s.dims[o]).collect();
    let mut new_stride = vec![1usize; k];
    for q in (0..k.saturating_sub(1)).rev() {
        new_stride[q] = new_stride[q + 1] * new_dims[q + 1];
    }
    // position of old subsystem o in the new order
    let mut place = vec![0usize; k];
    for (pos, &o) in s.order.iter().enumerate() {
        place[o] = pos;
    }
    let mut map: Vec<usize> = alloc::try_with_capacity(op, shape, total)?;
    map.extend((0..total).map(|i| {
        (0..k)
            .map(|q| ((i / old_stride[q]) % s.dims[q]) * new_stride[place[q]])
            .sum::<usize>()
    }));
    let axis = |len: usize| (len == total && total > 1).then(|| map.clone());
    Ok(Permutation {
        rows: axis(shape.0),
        cols: axis(shape.1),
    })
}

/// The inverse of an optional permutation (`None`, the identity, stays `None`: nothing is
/// allocated for an axis that does not move).
fn inverse(p: Option<&Vec<usize>>) -> Option<Vec<usize>> {
    p.map(|p| {
        let mut inv = vec![0usize; p.len()];
        for (i, &x) in p.iter().enumerate() {
            inv[x] = i;
        }
        inv
    })
}

/// Position `i` through an optional permutation.
#[inline]
fn through(p: &Option<Vec<usize>>, i: usize) -> usize {
    p.as_ref().map_or(i, |p| p[i])
}

/// Dense kernel of [`indices`]. O(mn).
///
/// # Errors
/// As [`indices`].
pub fn indices_dense(a: &Dense, p: &Permutation) -> Result<Dense> {
    check_permutation("permute_indices", a.shape(), p)?;
    let (m, n) = a.shape();
    let (ri, ci) = (inverse(p.rows.as_ref()), inverse(p.cols.as_ref()));
    let src = a.as_ref();
    // A bra made row-major, unpadded (`Dense`'s docs, "Memory of a one-row matrix").
    Dense::from_fn_public("permute_indices", m, n, |i, j| {
        src[(through(&ri, i), through(&ci, j))]
    })
}

/// Csr kernel of [`indices`]: rows are moved, columns renamed and each row re-sorted.
/// O(nnz log(row length) + m).
///
/// # Errors
/// As [`indices`].
pub fn indices_csr(a: &Csr, p: &Permutation) -> Result<Csr> {
    check_permutation("permute_indices", a.shape(), p)?;
    let (m, _) = a.shape();
    let ri = inverse(p.rows.as_ref());
    let (ap, idx, val) = (a.indptr(), a.indices(), a.data());
    let mut indptr = Vec::with_capacity(m + 1);
    let mut indices = Vec::with_capacity(idx.len());
    let mut data = Vec::with_capacity(idx.len());
    let mut row: Vec<(usize, crate::scalar::c64)> = Vec::new();
    indptr.push(0);
    for new in 0..m {
        let old = through(&ri, new);
        row.clear();
        row.extend((ap[old]..ap[old + 1]).map(|k| {
            let c = idx[k];
            (p.cols.as_ref().map_or(c, |q| q[c]), val[k])
        }));
        if p.cols.is_some() {
            row.sort_unstable_by_key(|e| e.0);
        }
        for &(c, v) in &row {
            indices.push(c);
            data.push(v);
        }
        indptr.push(indices.len());
    }
    // SAFETY: one pointer per row after the leading 0; each row is an old row whose columns
    // went through a permutation of 0..ncols (checked) and were then re-sorted; distinct old
    // columns map to distinct new ones.
    Ok(unsafe { Csr::from_parts_unchecked(a.shape(), indptr, indices, data) })
}
