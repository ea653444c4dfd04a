//! Inner products and expectation values: `inner`, `inner_op`, `expect`, `matmul_dag`,
//! `project`.

use std::sync::LazyLock;

use faer::linalg::matmul::matmul as faer_matmul;
use faer::{Accum, Col, ColRef};

use super::matmul::matmul_csr;
use super::transpose::transpose_csr;
use crate::dispatch::{Dispatcher, Out, Specialisation};
use crate::engine::{self, Family};
use crate::error::{Error, Result};
use crate::gpu::GpuDense;
use crate::scalar::c64;
use crate::scalar::{ONE, ZERO};
use crate::shape::{expect_shapes, inner_op_shapes, inner_shapes, is_bra, is_vector};
use crate::storage::{Csr, Data, Dense};

/// `⟨left|right⟩`: `left·right` for a bra, `left†·right` for a ket. Kernels: Dense, Csr.
pub static INNER: LazyLock<Dispatcher<(), c64>> = LazyLock::new(|| {
    Dispatcher::builder("inner", 2)
        .check(|op, a, _| inner_shapes(op, a[0].shape(), a[1].shape()))
        .specialisation(Specialisation::binary(
            "inner_dense",
            |l: &Dense, r: &Dense, _: &()| inner_dense(l, r),
        ))
        .specialisation(Specialisation::binary(
            "inner_csr",
            |l: &Csr, r: &Csr, _: &()| inner_csr(l, r),
        ))
        .specialisation(Specialisation::binary(
            "inner_gpu",
            |l: &GpuDense, r: &GpuDense, _: &()| l.inner(r),
        ))
        .builtin()
});

/// `⟨left|op|right⟩`. Kernels: Dense³, Csr³, and (Dense, Csr, Dense).
pub static INNER_OP: LazyLock<Dispatcher<(), c64>> = LazyLock::new(|| {
    Dispatcher::builder("inner_op", 3)
        .check(|op, a, _| inner_op_shapes(op, a[0].shape(), a[1].shape(), a[2].shape()))
        .specialisation(Specialisation::ternary(
            "inner_op_dense",
            |l: &Dense, o: &Dense, r: &Dense, _: &()| inner_op_dense(l, o, r),
        ))
        .specialisation(Specialisation::ternary(
            "inner_op_csr",
            |l: &Csr, o: &Csr, r: &Csr, _: &()| inner_op_csr(l, o, r),
        ))
        .specialisation(Specialisation::ternary(
            "inner_op_dense_csr_dense",
            |l: &Dense, o: &Csr, r: &Dense, _: &()| inner_op_dense_csr_dense(l, o, r),
        ))
        .specialisation(Specialisation::ternary(
            "inner_op_gpu",
            |l: &GpuDense, o: &GpuDense, r: &GpuDense, _: &()| l.inner_op(o, r),
        ))
        .builtin()
});

/// `⟨ψ|op|ψ⟩` for a ket ψ, `Tr(op·ρ)` for an operator ρ. Kernels: Dense², Csr², Csr op with
/// Dense state (the common case of a sparse observable on a dense state).
pub static EXPECT: LazyLock<Dispatcher<(), c64>> = LazyLock::new(|| {
    Dispatcher::builder("expect", 2)
        .check(|op, a, _| expect_shapes(op, a[0].shape(), a[1].shape()))
        .specialisation(Specialisation::binary(
            "expect_dense",
            |o: &Dense, s: &Dense, _: &()| expect_dense(o, s),
        ))
        .specialisation(Specialisation::binary(
            "expect_csr",
            |o: &Csr, s: &Csr, _: &()| expect_csr(o, s),
        ))
        .specialisation(Specialisation::binary(
            "expect_csr_dense",
            |o: &Csr, s: &Dense, _: &()| expect_csr_dense(o, s),
        ))
        .specialisation(Specialisation::binary(
            "expect_gpu",
            |o: &GpuDense, s: &GpuDense, _: &()| o.expect(s),
        ))
        .builtin()
});

/// `a·b†`. Kernels: Dense, Csr.
pub static MATMUL_DAG: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("matmul_dag", 2)
        .check(|op, a, _| matmul_dag_shapes(op, a[0].shape(), a[1].shape()))
        .specialisation(Specialisation::binary(
            "matmul_dag_dense",
            |a: &Dense, b: &Dense, _: &()| matmul_dag_dense(a, b),
        ))
        .specialisation(Specialisation::binary(
            "matmul_dag_csr",
            |a: &Csr, b: &Csr, _: &()| matmul_dag_csr(a, b),
        ))
        .specialisation(Specialisation::binary(
            "matmul_dag_gpu",
            |a: &GpuDense, b: &GpuDense, _: &()| a.matmul_dag(b),
        ))
        .builtin()
});

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
        .specialisation(Specialisation::unary(
            "project_dense",
            |a: &Dense, _: &()| project_dense(a),
        ))
        .specialisation(Specialisation::unary("project_csr", |a: &Csr, _: &()| {
            project_csr(a)
        }))
        .specialisation(Specialisation::unary(
            "project_gpu",
            |a: &GpuDense, _: &()| a.project(),
        ))
        .builtin()
});

fn matmul_dag_shapes(op: &str, a: (usize, usize), b: (usize, usize)) -> Result<()> {
    if a.1 == b.1 {
        Ok(())
    } else {
        Err(Error::shape(
            op,
            &[a, b],
            "both operands must have the same number of columns",
        ))
    }
}

/// `⟨left|right⟩`.
///
/// # Errors
/// [`Error::Shape`] unless `left` is a bra or ket and `right` a ket of the same dimension.
///
/// ```
/// use polymat::{Dense, c64};
/// let psi = Dense::from_rows(&[[c64::new(0.0, 1.0)], [c64::new(1.0, 0.0)]]).unwrap().into();
/// assert_eq!(polymat::ops::inner(&psi, &psi).unwrap(), c64::new(2.0, 0.0));
/// ```
pub fn inner(left: &Data, right: &Data) -> Result<c64> {
    INNER.call(&[left, right], Out::Auto, &())
}

/// `⟨left|op|right⟩`.
///
/// # Errors
/// [`Error::Shape`] on incompatible shapes.
///
/// ```
/// use polymat::{Csr, Dense, c64};
/// let one = c64::new(1.0, 0.0);
/// let up = Dense::from_rows(&[[one], [c64::new(0.0, 0.0)]]).unwrap().into();
/// let down = Dense::from_rows(&[[c64::new(0.0, 0.0)], [one]]).unwrap().into();
/// let sx = Csr::from_triplets((2, 2), &[0, 1], &[1, 0], &[one, one]).unwrap().into();
/// assert_eq!(polymat::ops::inner_op(&up, &sx, &down).unwrap(), one);
/// ```
pub fn inner_op(left: &Data, op: &Data, right: &Data) -> Result<c64> {
    INNER_OP.call(&[left, op, right], Out::Auto, &())
}

/// The expectation value of `op` in `state` (a ket or a density matrix).
///
/// # Errors
/// [`Error::Shape`] on incompatible shapes.
///
/// ```
/// use polymat::{Csr, Dense, c64};
/// let sz = Csr::from_triplets((2, 2), &[0, 1], &[0, 1], &[c64::new(1.0, 0.0), c64::new(-1.0, 0.0)]).unwrap().into();
/// let up = Dense::from_rows(&[[c64::new(1.0, 0.0)], [c64::new(0.0, 0.0)]]).unwrap().into();
/// assert_eq!(polymat::ops::expect(&sz, &up).unwrap(), c64::new(1.0, 0.0));
/// ```
pub fn expect(op: &Data, state: &Data) -> Result<c64> {
    EXPECT.call(&[op, state], Out::Auto, &())
}

/// `a·b†`.
///
/// # Errors
/// [`Error::Shape`] unless `a` and `b` have the same number of columns.
///
/// ```
/// use polymat::{Dense, Out, c64};
/// let a = Dense::from_fn(2, 3, |i, j| c64::new(i as f64, j as f64)).into();
/// let p = polymat::ops::matmul_dag(&a, &a, Out::Auto).unwrap();
/// assert_eq!(p.shape(), (2, 2));
/// ```
pub fn matmul_dag(a: &Data, b: &Data, out: Out) -> Result<Data> {
    MATMUL_DAG.call(&[a, b], out, &())
}

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
pub fn project(state: &Data, out: Out) -> Result<Data> {
    PROJECT.call(&[state], out, &())
}

/// All entries of a vector, in order (a bra's row or a ket's column).
fn dense_vec(v: &Dense) -> Vec<c64> {
    if v.shape().1 == 1 {
        v.col(0).to_vec()
    } else {
        (0..v.shape().1).map(|j| v.get(0, j)).collect()
    }
}

/// Dense `⟨l|r⟩`. O(n).
///
/// # Errors
/// [`Error::Shape`] on incompatible shapes.
pub fn inner_dense(l: &Dense, r: &Dense) -> Result<c64> {
    inner_shapes("inner", l.shape(), r.shape())?;
    let r = ColRef::from_slice(r.col(0));
    Ok(if is_bra(l.shape()) {
        // A 1×n Dense is a row with stride = its column stride.
        l.as_ref().row(0) * r
    } else {
        ColRef::from_slice(l.col(0)).adjoint() * r
    })
}

/// Csr `⟨l|r⟩`, merging the two sparsity patterns. O(nnz).
///
/// # Errors
/// [`Error::Shape`] on incompatible shapes.
pub fn inner_csr(l: &Csr, r: &Csr) -> Result<c64> {
    inner_shapes("inner", l.shape(), r.shape())?;
    let n = r.shape().0;
    // The right ket as a dense column is O(n) but keeps the product O(nnz) and branch-free.
    let mut rv = vec![ZERO; n];
    for (i, v) in csr_entries(r) {
        rv[i.0] = v;
    }
    let ket = !is_bra(l.shape());
    Ok(csr_entries(l)
        .map(|((i, j), v)| if ket { v.conj() * rv[i] } else { v * rv[j] })
        .sum())
}

/// `((row, col), value)` for every stored entry.
pub(crate) fn csr_entries(a: &Csr) -> impl Iterator<Item = ((usize, usize), c64)> + '_ {
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    (0..a.shape().0).flat_map(move |i| (p[i]..p[i + 1]).map(move |k| ((i, idx[k]), val[k])))
}

/// Dense `⟨l|O|r⟩`. O(nm).
///
/// # Errors
/// [`Error::Shape`] on incompatible shapes.
pub fn inner_op_dense(l: &Dense, o: &Dense, r: &Dense) -> Result<c64> {
    inner_op_shapes("inner_op", l.shape(), o.shape(), r.shape())?;
    let or = super::matmul::matmul_dense(o, r)?;
    inner_dense(l, &or)
}

/// Csr `⟨l|O|r⟩`. O(nnz).
///
/// # Errors
/// [`Error::Shape`] on incompatible shapes.
pub fn inner_op_csr(l: &Csr, o: &Csr, r: &Csr) -> Result<c64> {
    inner_op_shapes("inner_op", l.shape(), o.shape(), r.shape())?;
    inner_csr(l, &matmul_csr(o, r)?)
}

/// `⟨l|O|r⟩` with a sparse operator between dense vectors. O(nnz(O)).
///
/// # Errors
/// [`Error::Shape`] on incompatible shapes.
pub fn inner_op_dense_csr_dense(l: &Dense, o: &Csr, r: &Dense) -> Result<c64> {
    inner_op_shapes("inner_op", l.shape(), o.shape(), r.shape())?;
    let lv = dense_vec(l);
    let ket = !is_bra(l.shape());
    let rv = r.col(0);
    Ok(csr_entries(o)
        .map(|((i, j), v)| if ket { lv[i].conj() } else { lv[i] } * v * rv[j])
        .sum())
}

/// Dense expectation value. O(n²): for an operator only the trace of the product is formed.
///
/// # Errors
/// [`Error::Shape`] on incompatible shapes.
pub fn expect_dense(o: &Dense, s: &Dense) -> Result<c64> {
    expect_shapes("expect", o.shape(), s.shape())?;
    let n = o.shape().0;
    if s.shape().1 == 1 {
        // A ket (QuTiP reads a 1×1 state as a ket too): ψ†·(O·ψ), both with faer's SIMD kernels.
        let psi = ColRef::from_slice(s.col(0));
        let mut o_psi = Col::<c64>::zeros(n);
        engine::product(n * n, |par| {
            faer_matmul(
                o_psi.as_mut(),
                Accum::Replace,
                o.as_ref(),
                psi,
                crate::scalar::ONE,
                par,
            );
        });
        return Ok(psi.adjoint() * o_psi.as_ref());
    }
    // Tr(O ρ) = Σ_ij O_ij ρ_ji
    Ok((0..n)
        .map(|j| {
            o.col(j)
                .iter()
                .enumerate()
                .map(|(i, x)| x * s.get(j, i))
                .sum::<c64>()
        })
        .sum())
}

/// Csr expectation value. O(nnz).
///
/// # Errors
/// [`Error::Shape`] on incompatible shapes.
pub fn expect_csr(o: &Csr, s: &Csr) -> Result<c64> {
    expect_shapes("expect", o.shape(), s.shape())?;
    if s.shape().1 == 1 {
        return inner_op_csr(&transpose_csr(s, true)?, o, s);
    }
    // Tr(O ρ) = Σ_ij O_ij ρ_ji: look up each ρ_ji.
    Ok(csr_entries(o).map(|((i, j), v)| v * s.get(j, i)).sum())
}

/// Sparse operator on a dense state. O(nnz(O)) for a ket, O(nnz(O)) for an operator.
///
/// # Errors
/// [`Error::Shape`] on incompatible shapes.
pub fn expect_csr_dense(o: &Csr, s: &Dense) -> Result<c64> {
    expect_shapes("expect", o.shape(), s.shape())?;
    if s.shape().1 == 1 {
        // Σ_i conj(ψ_i) Σ_k O_ik ψ_k, by row ranges.
        let psi = s.col(0);
        let (p, idx, val) = (o.indptr(), o.indices(), o.data());
        let workers = engine::workers(Family::Reduction, o.nnz().max(o.shape().0));
        return Ok(engine::sum_ranges(o.shape().0, workers, |rows| {
            let mut total = ZERO;
            for i in rows {
                let mut row = ZERO;
                for k in p[i]..p[i + 1] {
                    row += val[k] * psi[idx[k]];
                }
                total += psi[i].conj() * row;
            }
            total
        }));
    }
    Ok(csr_entries(o).map(|((i, j), v)| v * s.get(j, i)).sum())
}

/// Dense `a·b†` with `faer` (no explicit adjoint is formed). O(mkn).
///
/// # Errors
/// [`Error::Shape`] unless the column counts match.
pub fn matmul_dag_dense(a: &Dense, b: &Dense) -> Result<Dense> {
    matmul_dag_shapes("matmul_dag", a.shape(), b.shape())?;
    let (m, k) = a.shape();
    let n = b.shape().0;
    let mut out = Dense::zeros_for("matmul_dag", m, n)?;
    if m == 0 || n == 0 || k == 0 {
        return Ok(out);
    }
    engine::product(m.saturating_mul(k).saturating_mul(n), |par| {
        faer_matmul(
            out.as_mat_mut(),
            Accum::Replace,
            a.as_ref(),
            b.as_ref().adjoint(),
            ONE,
            par,
        );
    });
    Ok(out)
}

/// Csr `a·b†`.
///
/// # Errors
/// [`Error::Shape`] unless the column counts match.
pub fn matmul_dag_csr(a: &Csr, b: &Csr) -> Result<Csr> {
    matmul_dag_shapes("matmul_dag", a.shape(), b.shape())?;
    matmul_csr(a, &transpose_csr(b, true)?)
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
    let bra = r == 1 && c != 1;
    let n = r.max(c);
    let mut entries: Vec<(usize, c64)> = csr_entries(v)
        .map(|((i, j), x)| if bra { (j, x.conj()) } else { (i, x) })
        .collect();
    entries.sort_unstable_by_key(|e| e.0);
    let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
    for &(i, a) in &entries {
        for &(j, b) in &entries {
            rows.push(i);
            cols.push(j);
            vals.push(a * b.conj());
        }
    }
    Csr::from_triplets((n, n), &rows, &cols, &vals)
}
