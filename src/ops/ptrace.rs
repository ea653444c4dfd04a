//! The partial trace.

use std::sync::LazyLock;

use crate::dispatch::{Dispatcher, Out};
use crate::error::{Error, Result};
use crate::gpu::GpuDense;
use crate::storage::{Csr, Data, Dense, alloc};

/// Subsystem dimensions and the subsystems to keep, for [`ptrace()`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ptrace {
    /// The dimension of each subsystem; their product is the operator's size.
    pub dims: Vec<usize>,
    /// The subsystems kept, in any order (they are kept in increasing order, as in QuTiP).
    pub keep: Vec<usize>,
}

/// Trace out the subsystems not in `keep`. Kernels: Dense, Csr, GpuDense.
pub static PTRACE: LazyLock<Dispatcher<Ptrace>> = LazyLock::new(|| {
    Dispatcher::builder("ptrace", 1)
        .check(|op, args, p| Layout::new(op, args[0].shape(), p).map(|_| ()))
        .unary("ptrace_dense", |a: &Dense, p: &Ptrace| ptrace_dense(a, p))
        .unary("ptrace_csr", |a: &Csr, p: &Ptrace| ptrace_csr(a, p))
        .unary("ptrace_gpu", |a: &GpuDense, p: &Ptrace| {
            let l = Layout::new("ptrace", a.shape(), p)?;
            a.ptrace_map(&l.full, l.k, l.r)
        })
        .builtin()
});

/// The partial trace of an operator on `H₀ ⊗ H₁ ⊗ …` with `dims[k] = dim Hₖ`, keeping the
/// subsystems in `keep`: `out[a, b] = Σ_r op[(a, r), (b, r)]`, where `(a, r)` is the full index
/// made of kept index `a` and traced index `r`.
///
/// The operator must be square; take the partial trace of a ket `|ψ⟩` through
/// [`project`](crate::project) (`|ψ⟩⟨ψ|`) first. Keeping nothing gives the 1×1 trace.
///
/// # Errors
/// [`Error::Shape`] if the operator is not square with side `∏ dims`;
/// [`Error::InvalidArgument`] if `keep` has an index out of range or repeated.
///
/// ```
/// use polymat::{Dense, Out, c64};
/// use polymat::ops::Ptrace;
/// // Tr₁(A ⊗ B) = Tr(B)·A
/// let a = Dense::from_fn(2, 2, |i, j| c64::new((i + 2 * j) as f64, 0.0));
/// let b = Dense::identity(3);
/// let ab = polymat::kron(&a.clone().into(), &b.into(), Out::Auto).unwrap();
/// let p = Ptrace { dims: vec![2, 3], keep: vec![0] };
/// let r = polymat::ptrace(&ab, &p, Out::Dense).unwrap();
/// assert_eq!(r.downcast_ref::<Dense>().unwrap().get(0, 1), c64::new(6.0, 0.0));
/// ```
#[inline]
pub fn ptrace(a: &Data, p: &Ptrace, out: Out) -> Result<Data> {
    PTRACE.call(&[a], out, p)
}

/// How a full index splits into a kept index and a traced index.
struct Layout {
    /// kept index of each full index
    kept: Vec<usize>,
    /// traced index of each full index
    traced: Vec<usize>,
    /// size of the kept space
    k: usize,
    /// full index of each (kept, traced) pair: `full[r * k + a]`
    full: Vec<usize>,
    /// size of the traced space
    r: usize,
}

impl Layout {
    fn new(op: &str, shape: (usize, usize), p: &Ptrace) -> Result<Layout> {
        let total = p.dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
        if shape.0 != shape.1 || total != Some(shape.0) {
            return Err(Error::shape(
                op,
                &[shape],
                format!(
                    "the operator must be square with side the product of dims {:?}",
                    p.dims
                ),
            ));
        }
        let n = p.dims.len();
        let mut is_kept = vec![false; n];
        for &s in &p.keep {
            if s >= n || std::mem::replace(&mut is_kept[s], true) {
                return Err(Error::argument(
                    op,
                    format!(
                        "keep = {:?} must list distinct subsystems of 0..{n}",
                        p.keep
                    ),
                ));
            }
        }
        let mut kept = alloc::try_vec(op, shape, shape.0, 0usize)?;
        let mut traced = alloc::try_vec(op, shape, shape.0, 0usize)?;
        let (mut k, mut r) = (1usize, 1usize);
        // With a zero dimension the product of the others may still overflow.
        let overflow = || Error::argument(op, format!("the dims {:?} overflow usize", p.dims));
        // Walk subsystems from the last (fastest) to the first, building both sub-indices.
        let mut stride = 1usize;
        for s in (0..n).rev() {
            let d = p.dims[s];
            for i in 0..shape.0 {
                let x = (i / stride) % d;
                if is_kept[s] {
                    kept[i] += x * k;
                } else {
                    traced[i] += x * r;
                }
            }
            if is_kept[s] {
                k = k.checked_mul(d).ok_or_else(overflow)?;
            } else {
                r = r.checked_mul(d).ok_or_else(overflow)?;
            }
            stride = stride.checked_mul(d).ok_or_else(overflow)?;
        }
        let mut full = alloc::try_vec(op, shape, shape.0, 0usize)?;
        for i in 0..shape.0 {
            full[traced[i] * k + kept[i]] = i;
        }
        Ok(Layout {
            kept,
            traced,
            k,
            full,
            r,
        })
    }
}

/// Dense kernel of [`ptrace()`]. O(k²·r) for kept size k and traced size r.
///
/// # Errors
/// As [`ptrace()`].
pub fn ptrace_dense(a: &Dense, p: &Ptrace) -> Result<Dense> {
    let l = Layout::new("ptrace", a.shape(), p)?;
    let src = a.as_ref();
    let mut out = Dense::zeros_for("ptrace", l.k, l.k)?;
    for b in 0..l.k {
        let col = out.col_mut(b);
        for t in 0..l.r {
            let j = l.full[t * l.k + b];
            for (x, o) in col.iter_mut().enumerate() {
                *o += src[(l.full[t * l.k + x], j)];
            }
        }
    }
    Ok(out)
}

/// Csr kernel of [`ptrace()`]: every stored entry whose row and column share the traced index
/// is added into its kept position. O(nnz + k) plus a sort per output row.
///
/// # Errors
/// As [`ptrace()`].
pub fn ptrace_csr(a: &Csr, p: &Ptrace) -> Result<Csr> {
    let l = Layout::new("ptrace", a.shape(), p)?;
    let (ap, idx, val) = (a.indptr(), a.indices(), a.data());
    // Collect each output row's entries; the helper sorts them and sums duplicates.
    let mut rows: Vec<Vec<(usize, crate::scalar::c64)>> =
        alloc::try_vec("ptrace", (l.k, l.k), l.k, Vec::new())?;
    for i in 0..a.shape().0 {
        for x in ap[i]..ap[i + 1] {
            let j = idx[x];
            if l.traced[i] == l.traced[j] {
                rows[l.kept[i]].push((l.kept[j], val[x]));
            }
        }
    }
    super::csr_from_row_lists("ptrace", (l.k, l.k), &mut rows)
}
