//! Outer products: `matmul_outer` (|ket⟩·⟨bra|) and `project` (|ψ⟩⟨ψ|).

use std::sync::LazyLock;

use super::inner::{csr_entries, dense_vec};
use crate::dispatch::{Dispatcher, Out};
use crate::error::{Error, Result};
use crate::gpu::GpuDense;
use crate::scalar::{ZERO, c64};
use crate::shape::{indptr_len, is_vector};
use crate::storage::{Csr, Data, Dense, alloc};

/// Density of `ket·bra` at or above which [`matmul_outer`] returns Dense under `Out::Auto`.
///
/// At this density a Csr result stores 0.3·mn entries at 24 bytes each, about half the bytes
/// of the dense result, and sparse kernels on it are already slower than dense ones.
pub const OUTER_DENSE_THRESHOLD: f64 = 0.3;

/// `ket·bra` for an n×1 `ket` and a 1×m `bra`, with a density-based output. One generic
/// kernel reading Dense and Csr inputs directly (other kinds are converted to Dense).
pub static MATMUL_OUTER: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("matmul_outer", 2)
        .check(|op, args, _| outer_shapes(op, args[0].shape(), args[1].shape()))
        .result_shape(|args, _| Some((args[0].shape().0, args[1].shape().1)))
        .generic("matmul_outer_entries", |args: &[&Data], out, _: &()| {
            matmul_outer_entries(args[0], args[1], out)
        })
        .binary("matmul_outer_gpu", |a: &GpuDense, b: &GpuDense, _: &()| {
            a.matmul(b)
        })
        .builtin()
});

fn outer_shapes(op: &str, a: (usize, usize), b: (usize, usize)) -> Result<()> {
    if a.1 == 1 && b.0 == 1 {
        Ok(())
    } else {
        Err(Error::shape(
            op,
            &[a, b],
            "the left operand must be a ket (n×1) and the right a bra (1×m)",
        ))
    }
}

/// The outer product `|ket⟩⟨bra|`-style: `out[i, j] = ket[i]·bra[j]` (no conjugation: pass an
/// actual bra, e.g. from [`adjoint`](crate::adjoint)).
///
/// Under `Out::Auto` the result is Csr if its density `nnz(ket)·nnz(bra)/(n·m)` is below
/// [`OUTER_DENSE_THRESHOLD`] and Dense otherwise, whatever the input kinds; `Out::Dense` and
/// `Out::Csr` are built directly, other kinds through a conversion of the Dense result.
///
/// # Errors
/// [`Error::Shape`] unless `ket` is n×1 and `bra` is 1×m.
///
/// ```
/// use polymat::{Csr, Dense, Kind, Out, c64};
/// let ket = Csr::from_triplets((100, 1), &[3], &[0], &[c64::new(1.0, 0.0)]).unwrap();
/// let bra = Dense::from_fn(1, 100, |_, j| c64::new(j as f64, 0.0));
/// let p = polymat::matmul_outer(&ket.into(), &bra.into(), Out::Auto).unwrap();
/// assert_eq!(p.kind(), Kind::CSR); // density 0.01
/// ```
#[inline]
pub fn matmul_outer(ket: &Data, bra: &Data, out: Out) -> Result<Data> {
    MATMUL_OUTER.call(&[ket, bra], out, &())
}

/// The nonzero entries of a vector (n×1 or 1×n) with their positions.
fn vector_entries(v: &Data) -> Result<Vec<(usize, c64)>> {
    let (m, n) = v.shape();
    let pick = |it: &mut dyn Iterator<Item = (usize, c64)>| it.filter(|e| e.1 != ZERO).collect();
    if let Some(c) = v.downcast_ref::<Csr>() {
        let (p, idx, val) = (c.indptr(), c.indices(), c.data());
        return Ok(if n == 1 {
            pick(&mut (0..m).flat_map(|i| (p[i]..p[i + 1]).map(move |k| (i, val[k]))))
        } else {
            pick(&mut (p[0]..p[1]).map(|k| (idx[k], val[k])))
        });
    }
    let owned;
    let d = match v.downcast_ref::<Dense>() {
        Some(d) => d,
        None => {
            owned = crate::convert::to_type::<Dense>(v)?;
            &owned
        }
    };
    let mat = d.as_ref();
    Ok(if n == 1 {
        pick(
            &mut d
                .col_major("matmul_outer")?
                .col_as_slice(0)
                .iter()
                .copied()
                .enumerate(),
        )
    } else {
        pick(&mut (0..n).map(|j| (j, mat[(0, j)])))
    })
}

/// The kernel behind [`matmul_outer`]. O(n·m) for Dense output, O(nnz(ket)·nnz(bra) + n) for
/// Csr output.
///
/// # Errors
/// As [`matmul_outer`].
pub fn matmul_outer_entries(ket: &Data, bra: &Data, out: Out) -> Result<Data> {
    outer_shapes("matmul_outer", ket.shape(), bra.shape())?;
    let (n, m) = (ket.shape().0, bra.shape().1);
    let (l, r) = (vector_entries(ket)?, vector_entries(bra)?);
    let dense = match out {
        Out::Auto => {
            let cells = (n as f64) * (m as f64);
            cells > 0.0 && (l.len() as f64) * (r.len() as f64) / cells >= OUTER_DENSE_THRESHOLD
        }
        _ => out.kind() != Some(crate::storage::Kind::CSR),
    };
    const OP: &str = "matmul_outer";
    if dense {
        // A bra row-major, unpadded (`Dense`'s docs, "Memory of a one-row matrix").
        let mut d = Dense::zeros_public(OP, n, m)?;
        let mut mat = d.view_mut();
        for &(j, y) in &r {
            for &(i, x) in &l {
                mat[(i, j)] = x * y;
            }
        }
        return Ok(d.into());
    }
    let mut indptr = alloc::try_vec(OP, (n, m), indptr_len(OP, (n, m))?, 0usize)?;
    for &(i, _) in &l {
        indptr[i + 1] = r.len();
    }
    for i in 0..n {
        indptr[i + 1] += indptr[i];
    }
    let nnz = crate::shape::product(OP, &[ket.shape(), bra.shape()], l.len(), r.len())?;
    alloc::check_memory(OP, (n, m), alloc::csr::csr_bytes(0, nnz))?;
    let mut indices = alloc::try_with_capacity(OP, (n, m), nnz)?;
    let mut data = alloc::try_with_capacity(OP, (n, m), nnz)?;
    for &(_, x) in &l {
        for &(j, y) in &r {
            indices.push(j);
            data.push(x * y);
        }
    }
    crate::storage::csr_build::drop_exact_zeros(&mut indptr, &mut indices, &mut data);
    // SAFETY: rows of the ket's non-zeros (increasing i) hold the bra's non-zero columns, which
    // `vector_entries` lists in increasing order, each once; other rows are empty.
    Ok(unsafe { Csr::from_parts_unchecked((n, m), indptr, indices, data) }.into())
}

/// `|ψ⟩⟨ψ|` from a ket ψ (or from a bra ⟨ψ|). Kernels: Dense, Csr.
pub static PROJECT: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("project", 1)
        .check(|op, a, _| {
            if is_vector(a[0].shape()) {
                Ok(())
            } else {
                Err(Error::shape(
                    op,
                    &[a[0].shape()],
                    "the operand must be a ket (n×1) or a bra (1×n)",
                ))
            }
        })
        .result_shape(|args, _| {
            let (r, c) = args[0].shape();
            Some((r.max(c), r.max(c)))
        })
        .unary("project_dense", |a: &Dense, _: &()| project_dense(a))
        .unary("project_csr", |a: &Csr, _: &()| project_csr(a))
        .unary("project_gpu", |a: &GpuDense, _: &()| a.project())
        .builtin()
});

/// The projector `|ψ⟩⟨ψ|`.
///
/// # Errors
/// [`Error::Shape`] unless the operand is a ket or a bra.
///
/// ```
/// use polymat::{Dense, Out, c64};
/// let psi = Dense::from_rows(&[[c64::new(0.6, 0.0)], [c64::new(0.0, 0.8)]]).unwrap().into();
/// let p = polymat::ops::project(&psi, Out::Auto).unwrap();
/// assert!((polymat::trace(&p).unwrap() - c64::new(1.0, 0.0)).norm() < 1e-12);
/// ```
#[inline]
pub fn project(state: &Data, out: Out) -> Result<Data> {
    PROJECT.call(&[state], out, &())
}

/// Dense `|ψ⟩⟨ψ|`. O(n²).
///
/// # Errors
/// [`Error::TooLarge`] if the n×n result passes the dense limit.
pub fn project_dense(v: &Dense) -> Result<Dense> {
    let mut psi = dense_vec(v);
    if v.shape().0 == 1 && v.shape().1 != 1 {
        // A bra ⟨ψ|: ψ is its conjugate.
        psi.iter_mut().for_each(|x| *x = x.conj());
    }
    let n = psi.len();
    Dense::from_fn_for("project", n, n, |i, j| psi[i] * psi[j].conj())
}

/// Csr `|ψ⟩⟨ψ|`. O(nnz(ψ)²).
///
/// # Errors
/// Never for a vector; [`Error::Shape`] otherwise.
pub fn project_csr(v: &Csr) -> Result<Csr> {
    let (r, c) = v.shape();
    // QuTiP's convention, as for Dense: one row and not 1×1 is a bra; a 0-dimensional vector
    // (0×1 or 1×0) projects onto the 0×0 matrix.
    let bra = r == 1 && c != 1;
    let n = if bra { c } else { r };
    let mut entries: Vec<(usize, c64)> = csr_entries(v)
        .map(|((i, j), x)| if bra { (j, x.conj()) } else { (i, x) })
        .collect();
    entries.sort_unstable_by_key(|e| e.0);
    // k stored entries give k² (every row of the k has the same k columns): sized and
    // checked before anything is written (a full ket of 10⁶ entries asks for 10¹²).
    let shape = (n, n);
    let k = entries.len();
    let nnz = k.checked_mul(k).ok_or_else(|| Error::TooLarge {
        op: "project".into(),
        shape,
        bytes: k as u128 * k as u128 * 24,
        limit: None,
        reason: "the number of stored entries overflows usize".into(),
    })?;
    alloc::check_memory("project", shape, nnz as u128 * 24 + (n as u128 + 1) * 8)?;
    let mut indptr: Vec<usize> = alloc::try_with_capacity("project", shape, n + 1)?;
    let mut indices: Vec<usize> = alloc::try_with_capacity("project", shape, nnz)?;
    let mut data: Vec<c64> = alloc::try_with_capacity("project", shape, nnz)?;
    indptr.push(0);
    let mut next = entries.iter().peekable();
    for row in 0..n {
        if let Some(&(_, a)) = next.next_if(|e| e.0 == row) {
            for &(j, b) in &entries {
                indices.push(j);
                data.push(a * b.conj());
            }
        }
        indptr.push(indices.len());
    }
    // SAFETY: n + 1 row pointers from 0 to nnz; each row holds the k distinct indices of a
    // valid Csr vector (unique, below n), sorted above, or none.
    Ok(unsafe { Csr::from_parts_unchecked(shape, indptr, indices, data) })
}
