//! Products with superoperators that go through the dispatchers' own products: the
//! composition of two superoperators, and `L·vec ρ` where `L` has no plan (a rectangular
//! superoperator) or `vec ρ` is not on the CPU (a GpuDense with GPU factors stays there).

use super::{MATMUL, matmul};
use crate::dispatch::Out;
use crate::error::Result;
use crate::ops::add::{add_scaled, adds_directly};
use crate::ops::{block, construct, reshape, scale, transpose};
use crate::shape::matmul_shapes;
use crate::storage::{Data, Dense, Kind, SuperOp, merge_terms};

/// `a∘b`, the composition `ρ ↦ a(b(ρ))`, lazy: `(Aᵢ·Cⱼ)·ρ·(Dⱼ·Bᵢ)` for every pair of terms,
/// like terms merged.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) unless `b`'s output is `a`'s input; a factor
/// product's error.
pub(crate) fn compose(a: &SuperOp, b: &SuperOp) -> Result<SuperOp> {
    matmul_shapes("matmul", a.shape(), b.shape())?;
    let terms = a.compose(b, |x, y| matmul(x, y, Out::Auto))?;
    let merged = merge_terms(terms, adds_directly, |x, y, s| {
        add_scaled(x, y, s, Out::Auto)
    })?;
    SuperOp::of_terms(b.input(), a.output(), merged)
}

/// `L·x` for a Dense `x`: the plan for a square superoperator, the dispatchers' products for
/// a rectangular one.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if `x` does not have `p·q` rows.
pub(crate) fn matmul_super_op_dense(a: &SuperOp, x: &Dense) -> Result<Dense> {
    if crate::ops::lazy::super_op::planned(a) {
        return crate::ops::lazy::super_op::matmul_super_op_dense(a, x);
    }
    let y = apply_dispatched(a, &Data::from(x.clone()))?;
    crate::convert::to_type::<Dense>(&y)
}

/// `L·x` through the dispatchers' own products, for any kind of `x` (a GpuDense `vec ρ` with
/// GPU factors stays on the GPU): every column unstacked to ρ, each term `c·A·ρ·B`, summed,
/// stacked again.
///
/// # Errors
/// [`Error::Shape`] if `x` does not have `p·q` rows; a product's error.
pub(crate) fn apply_dispatched(a: &SuperOp, x: &Data) -> Result<Data> {
    matmul_shapes("matmul", a.shape(), x.shape())?;
    let ((p, _), (m, r)) = (a.input(), a.output());
    let k = x.shape().1;
    if a.terms().is_empty() {
        return construct::zeros(m * r, k, Out::Kind(x.kind()));
    }
    let cols = if k == 1 {
        vec![x.clone()]
    } else {
        reshape::split_columns(x)?
    };
    let mut outs = Vec::with_capacity(k);
    for col in &cols {
        let rho = reshape::column_unstack(col, p, Out::Auto)?;
        let mut sum: Option<Data> = None;
        for t in a.terms() {
            let mut v = rho.clone();
            if let Some(b) = t.right() {
                v = right_product(&v, b)?;
            }
            if let Some(f) = t.left() {
                v = matmul(f, &v, Out::Auto)?;
            }
            sum = Some(match sum {
                None => scale::mul(&v, t.coeff(), Out::Auto)?,
                Some(s) => add_scaled(&s, &v, t.coeff(), Out::Auto)?,
            });
        }
        let y = sum.unwrap_or_else(|| unreachable!("a superoperator with terms"));
        outs.push(reshape::column_stack(&y, Out::Auto)?);
    }
    if outs.len() == 1 {
        return Ok(outs.swap_remove(0));
    }
    let blocks: Vec<block::Block<'_>> = outs
        .iter()
        .enumerate()
        .map(|(j, d)| block::Block {
            row: 0,
            col: j,
            data: d,
        })
        .collect();
    block::block_build(&blocks, &[m * r], &vec![1; k], Out::Kind(x.kind()))
}

/// `ρ·B` by the product's direct kernel where there is one, else as `(Bᵀ·ρᵀ)ᵀ` when that form
/// has one (GpuDense·GpuCsr has no kernel, GpuCsr·GpuDense has), else through the dispatcher.
fn right_product(rho: &Data, b: &Data) -> Result<Data> {
    let direct = |x: Kind, y: Kind| MATMUL.get(&[x, y], Out::Auto).is_ok_and(|r| r.is_direct());
    if !direct(rho.kind(), b.kind()) && direct(b.kind(), rho.kind()) {
        let bt = transpose::transpose(b, Out::Auto)?;
        let rt = transpose::transpose(rho, Out::Auto)?;
        return transpose::transpose(&matmul(&bt, &rt, Out::Auto)?, Out::Auto);
    }
    matmul(rho, b, Out::Auto)
}
