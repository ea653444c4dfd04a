//! The lazy kinds ([`KronSum`], [`SuperOp`]) and their one conversion each: to Csr, the
//! operator formed explicitly.
//!
//! Nothing converts *into* a lazy kind, and the conversion out weighs [`FORM_WEIGHT`], more than
//! any chain between the stored kinds: an operation with a lazy kernel always takes it, and
//! one without forms the operator only as the last resort (refused with `Error::TooLarge` when
//! it does not fit the memory available, never an OOM kill).

use super::{Batch, Conversion, Group, registry};
use crate::error::Result;
use crate::scalar::{ONE, c64};
use crate::storage::csr_build::{csr_from_row_fn, row, transpose};
use crate::storage::{Csr, Data, Kind, KronSum, SuperOp};

/// The weight of forming a lazy operator as a Csr: above every chain between stored kinds
/// (the longest, GpuCsr → Csr → Dense → Dia, weighs 3.5), so that it is the last resort.
pub(crate) const FORM_WEIGHT: f64 = 8.0;

/// Registers KronSum (kind 5) and SuperOp (kind 6), their conversion to Csr and the group.
pub(super) fn register(b: &mut Batch) {
    b.register_type::<KronSum>("KronSum", &["kronsum", "kron_sum"])
        .add_conversion(Conversion::new(kron_sum_to_csr, FORM_WEIGHT))
        .add_to_group::<KronSum>(Group::LAZY);
    b.register_type::<SuperOp>("SuperOp", &["superop", "super_op", "super"])
        .add_conversion(Conversion::new(super_op_to_csr, FORM_WEIGHT))
        .add_to_group::<SuperOp>(Group::LAZY);
}

/// A factor as Csr, through the registry's cheapest chain.
fn csr_of(f: &Data) -> Result<Csr> {
    registry().convert(f, Kind::CSR)?.to_type::<Csr>()
}

/// `Σₖ cₖ ⊗ₛ Fₖ,ₛ` as a Csr, row by row: row `i`'s entries of each term are the products of its
/// factors' rows at `i`'s digits (an identity factor keeps the digit). O(Σ generated entries
/// · log(row length)), no term formed on its own.
///
/// # Errors
/// A factor's conversion error; [`Error::TooLarge`](crate::Error::TooLarge) if the result does
/// not fit.
pub(crate) fn kron_sum_to_csr(k: &KronSum) -> Result<Csr> {
    const OP: &str = "KronSum -> Csr";
    let dims = k.dims();
    let m = dims.len();
    let mut stride = vec![1usize; m];
    for s in (0..m.saturating_sub(1)).rev() {
        stride[s] = stride[s + 1] * dims[s + 1];
    }
    let terms: Vec<(c64, Vec<(usize, Csr)>)> = k
        .terms()
        .iter()
        .map(|t| {
            let f = t
                .factors()
                .iter()
                .map(|(s, f)| Ok((*s, csr_of(f)?)))
                .collect::<Result<Vec<_>>>()?;
            Ok((t.coeff(), f))
        })
        .collect::<Result<_>>()?;
    let mut parts: Vec<(usize, c64)> = Vec::new();
    let mut next: Vec<(usize, c64)> = Vec::new();
    csr_from_row_fn(OP, k.shape(), |i, out| {
        for (c, factors) in &terms {
            // Start from column i itself (every identity site keeps its digit), then replace
            // each factor's digit by the columns of its row.
            parts.clear();
            parts.push((i, *c));
            for (s, f) in factors {
                let digit = i / stride[*s] % dims[*s];
                next.clear();
                for &(col, v) in &parts {
                    let base = col - digit * stride[*s];
                    next.extend(row(f, digit).map(|(j, w)| (base + j * stride[*s], v * w)));
                }
                std::mem::swap(&mut parts, &mut next);
            }
            out.extend_from_slice(&parts);
        }
    })
}

/// `Σₖ cₖ·(Bₖᵀ ⊗ Aₖ)` as a Csr (QuTiP's `spre`/`spost`/`sprepost` sums entry for entry): row
/// `u·m + i` holds, per term, `c·B[k, u]·A[i, l]` at column `k·p + l`.
///
/// # Errors
/// A factor's conversion error; [`Error::TooLarge`](crate::Error::TooLarge) if the result does
/// not fit.
pub(crate) fn super_op_to_csr(s: &SuperOp) -> Result<Csr> {
    const OP: &str = "SuperOp -> Csr";
    let ((p, _), (m, _)) = (s.input(), s.output());
    // Each term's A and Bᵀ (rows of Bᵀ are B's columns); `None` is the identity.
    let terms: Vec<(c64, Option<Csr>, Option<Csr>)> = s
        .terms()
        .iter()
        .map(|t| {
            let a = t.left().map(csr_of).transpose()?;
            let bt = t.right().map(|b| transpose(OP, &csr_of(b)?)).transpose()?;
            Ok((t.coeff(), a, bt))
        })
        .collect::<Result<_>>()?;
    let single = |i: usize| std::iter::once((i, ONE));
    csr_from_row_fn(OP, s.shape(), |r, out| {
        let (u, i) = (r / m.max(1), r % m.max(1));
        for (c, a, bt) in &terms {
            let brow: Vec<(usize, c64)> = match bt {
                Some(bt) => row(bt, u).collect(),
                None => single(u).collect(),
            };
            for (k, bv) in brow {
                let cb = *c * bv;
                match a {
                    Some(a) => out.extend(row(a, i).map(|(l, av)| (k * p + l, cb * av))),
                    None => out.push((k * p + i, cb)),
                }
            }
        }
    })
}
