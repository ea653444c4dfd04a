//! The partial trace.

use std::sync::LazyLock;

use crate::dispatch::{Dispatcher, Out};
use crate::error::{Error, Result};
use crate::gpu::GpuDense;
use crate::scalar::c64;
use crate::storage::{Csr, Data, Dense, alloc};

/// Subsystem dimensions and the subsystems to keep, for [`ptrace()`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ptrace {
    /// The dimension of each subsystem; their product is the operator's size.
    pub dims: Vec<usize>,
    /// The subsystems kept, in any order (they are kept in increasing order, as in QuTiP).
    pub keep: Vec<usize>,
}

/// Trace out the subsystems not in `keep`. Kernels: Dense, Csr, GpuDense (a GpuDense ket is
/// reduced on the CPU: the ket comes down, the k × k result goes back up).
pub static PTRACE: LazyLock<Dispatcher<Ptrace>> = LazyLock::new(|| {
    Dispatcher::builder("ptrace", 1)
        .check(|op, args, p| Split::new(op, args[0].shape(), p).map(|_| ()))
        .result_shape(|_, p| {
            let k = p
                .keep
                .iter()
                .try_fold(1usize, |k, &s| k.checked_mul(*p.dims.get(s)?))?;
            Some((k, k))
        })
        .unary("ptrace_dense", |a: &Dense, p: &Ptrace| ptrace_dense(a, p))
        .unary("ptrace_csr", |a: &Csr, p: &Ptrace| ptrace_csr(a, p))
        .unary("ptrace_gpu", |a: &GpuDense, p: &Ptrace| {
            if is_vector(a.shape()) {
                return GpuDense::from_dense(&ptrace_dense(&a.to_dense()?, p)?);
            }
            let l = Layout::new("ptrace", a.shape(), p)?;
            a.ptrace_map(&l.full, l.k, l.r)
        })
        .builtin()
});

/// A ket (n × 1) or a bra (1 × n) with n > 1; a 1 × 1 operand is an operator.
fn is_vector(shape: (usize, usize)) -> bool {
    (shape.1 == 1) != (shape.0 == 1)
}

/// The partial trace of an operator on `H₀ ⊗ H₁ ⊗ …` with `dims[k] = dim Hₖ`, keeping the
/// subsystems in `keep`: `out[a, b] = Σ_r op[(a, r), (b, r)]`, where `(a, r)` is the full index
/// made of kept index `a` and traced index `r`.
///
/// A ket `|ψ⟩` (n × 1) or a bra `⟨ψ|` (1 × n) stands for the pure state `|ψ⟩⟨ψ|`, which is never
/// formed (QuTiP's `ket.ptrace(sel)`): ψ's entries are regrouped as a k × r matrix M (kept
/// index by traced index) and the result is `M·M†`, k × k, in O(k·n) time and O(n + k²)
/// memory. A reduced state of two spins of a 2³⁰-dimensional ket therefore takes one pass over
/// the ket, where `|ψ⟩⟨ψ|` would be 1.7·10¹⁹ bytes. Keeping nothing gives the 1×1 trace
/// (`⟨ψ|ψ⟩` for a state).
///
/// # Errors
/// [`Error::Shape`] if the operand is neither square with side `∏ dims` nor a ket or bra of
/// that length; [`Error::InvalidArgument`] if `keep` has an index out of range or repeated;
/// [`Error::TooLarge`] if the k × k result passes the dense limit.
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
///
/// // A Bell pair's ket: each half is maximally mixed, without forming |ψ⟩⟨ψ|.
/// let h = std::f64::consts::FRAC_1_SQRT_2;
/// let bell = Dense::from_fn(4, 1, |i, _| c64::new(if i % 3 == 0 { h } else { 0.0 }, 0.0));
/// let p = Ptrace { dims: vec![2, 2], keep: vec![1] };
/// let half = polymat::ptrace(&bell.into(), &p, Out::Auto)?;
/// let mixed = polymat::mul(&polymat::identity(2, Out::Auto)?, c64::new(0.5, 0.0), Out::Auto)?;
/// assert!(polymat::isequal(&half, &mixed, 1e-15, 0.0)?);
/// # Ok::<(), polymat::Error>(())
/// ```
#[inline]
pub fn ptrace(a: &Data, p: &Ptrace, out: Out) -> Result<Data> {
    PTRACE.call(&[a], out, p)
}

/// The validated request: kept and traced sizes, and for each subsystem the stride of its
/// digit in the kept index or in the traced index (subsystems in order, the last fastest).
struct Split {
    /// size of the kept space
    k: usize,
    /// size of the traced space
    r: usize,
    /// per subsystem: (dimension, kept?, stride in the kept or the traced index)
    digits: Vec<(usize, bool, usize)>,
}

impl Split {
    /// Checks `p` against an operand of `shape` (square with side `∏ dims`, or a ket or bra of
    /// that length) without allocating per entry.
    fn new(op: &str, shape: (usize, usize), p: &Ptrace) -> Result<Split> {
        let total = p.dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
        let side = if is_vector(shape) {
            Some(shape.0.max(shape.1))
        } else if shape.0 == shape.1 {
            Some(shape.0)
        } else {
            None
        };
        if side.is_none() || total != side {
            return Err(Error::shape(
                op,
                &[shape],
                format!(
                    "the operand must be square with side the product of dims {:?}, or a ket \
                     or bra of that length",
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
        // With a zero dimension the product of the others may still overflow.
        let overflow = || Error::argument(op, format!("the dims {:?} overflow usize", p.dims));
        let (mut k, mut r) = (1usize, 1usize);
        let mut digits = vec![(0, false, 0); n];
        for s in (0..n).rev() {
            let d = p.dims[s];
            let place = if is_kept[s] { &mut k } else { &mut r };
            digits[s] = (d, is_kept[s], *place);
            *place = place.checked_mul(d).ok_or_else(overflow)?;
        }
        Ok(Split { k, r, digits })
    }

    /// Calls `f(i, kept, traced)` for every full index i in increasing order, the two
    /// sub-indices kept up to date like an odometer (no per-entry division).
    fn walk(&self, mut f: impl FnMut(usize, usize, usize)) {
        let total = self.k * self.r;
        let mut digit = vec![0usize; self.digits.len()];
        let (mut a, mut t) = (0usize, 0usize);
        for i in 0..total {
            f(i, a, t);
            for (s, &(d, kept, stride)) in self.digits.iter().enumerate().rev() {
                let index = if kept { &mut a } else { &mut t };
                digit[s] += 1;
                if digit[s] < d {
                    *index += stride;
                    break;
                }
                digit[s] = 0;
                *index -= (d - 1) * stride;
            }
        }
    }

    /// The (kept, traced) sub-indices of full index `i`. O(subsystems).
    fn split(&self, mut i: usize) -> (usize, usize) {
        let (mut a, mut t) = (0, 0);
        for &(d, kept, stride) in self.digits.iter().rev() {
            let x = i % d;
            i /= d;
            if kept {
                a += x * stride;
            } else {
                t += x * stride;
            }
        }
        (a, t)
    }
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
    /// The index maps of an operator (square) operand.
    fn new(op: &str, shape: (usize, usize), p: &Ptrace) -> Result<Layout> {
        let sp = Split::new(op, shape, p)?;
        let n = shape.0;
        let mut kept = alloc::try_vec(op, shape, n, 0usize)?;
        let mut traced = alloc::try_vec(op, shape, n, 0usize)?;
        let mut full = alloc::try_vec(op, shape, n, 0usize)?;
        sp.walk(|i, a, t| {
            kept[i] = a;
            traced[i] = t;
            full[t * sp.k + a] = i;
        });
        Ok(Layout {
            kept,
            traced,
            k: sp.k,
            full,
            r: sp.r,
        })
    }
}

/// `M·M†` for the k × r regrouping M of a ket or bra (conjugated for a bra, `⟨ψ|† = |ψ⟩`).
///
/// The ket is gathered in its own order into M, or into Mᵀ when a traced subsystem's digit
/// varies fastest, so that the gather writes contiguously; the product computes the lower
/// triangle only (Hermitian: faer's triangular product, half the multiply-adds of a full
/// one) and mirrors it. At N = 20 spins keeping 10, one thread: 276 ms with a strided gather
/// and the full product, 124 ms now, QuTiP's `ket.ptrace` 188 ms (docs/benchmarks.md).
fn ptrace_vector(values: impl Iterator<Item = c64>, sp: &Split, bra: bool) -> Result<Dense> {
    const OP: &str = "ptrace";
    let (k, r) = (sp.k, sp.r);
    alloc::check_dense(OP, (k, k))?;
    let traced_fastest = sp
        .digits
        .iter()
        .rev()
        .find(|d| d.0 > 1)
        .is_some_and(|d| !d.1);
    let mut buf = if traced_fastest {
        alloc::zeros_mat(OP, r, k)?
    } else {
        alloc::zeros_mat(OP, k, r)?
    };
    let mut values = values;
    sp.walk(|_, a, t| {
        let v = values.next().unwrap_or_default();
        let v = if bra { v.conj() } else { v };
        if traced_fastest {
            buf[(t, a)] = v;
        } else {
            buf[(a, t)] = v;
        }
    });
    let m = if traced_fastest {
        buf.as_ref().transpose()
    } else {
        buf.as_ref()
    };
    gram(m, sp)
}

/// `M·M†`, k × k, for a k × r view M: the lower triangle by faer's triangular product, the
/// upper mirrored.
fn gram(m: faer::MatRef<'_, c64>, sp: &Split) -> Result<Dense> {
    use faer::linalg::matmul::triangular::{BlockStructure, matmul};
    let (k, r) = (sp.k, sp.r);
    let mut out = alloc::zeros_mat("ptrace", k, k)?;
    crate::engine::product(k.saturating_mul(k).saturating_mul(r) / 2, |par| {
        matmul(
            out.as_mut(),
            BlockStructure::TriangularLower,
            faer::Accum::Replace,
            m,
            BlockStructure::Rectangular,
            m.adjoint(),
            BlockStructure::Rectangular,
            c64::new(1.0, 0.0),
            par,
        )
    });
    for j in 1..k {
        for i in 0..j {
            out[(i, j)] = out[(j, i)].conj();
        }
    }
    Ok(Dense::new(out))
}

/// Dense kernel of [`ptrace()`]. O(k²·r) for kept size k and traced size r.
///
/// # Errors
/// As [`ptrace()`].
pub fn ptrace_dense(a: &Dense, p: &Ptrace) -> Result<Dense> {
    if is_vector(a.shape()) {
        let sp = Split::new("ptrace", a.shape(), p)?;
        alloc::check_dense("ptrace", (sp.k, sp.k))?;
        if a.shape().1 == 1 && a.shape().0 > 0 && a.layout() == crate::storage::Layout::ColMajor {
            // Kept subsystems first (keep = 0..m, the usual reduced state) or last: the ket
            // itself is M, row-major or column-major, and nothing is copied.
            let (psi, (k, r)) = (a.buffer_col(0), (sp.k, sp.r));
            let mut keep = p.keep.clone();
            keep.sort_unstable();
            if keep.iter().enumerate().all(|(x, &s)| x == s) {
                return gram(faer::MatRef::from_row_major_slice(psi, k, r), &sp);
            }
            let first = p.dims.len() - keep.len();
            if keep.iter().enumerate().all(|(x, &s)| s == first + x) {
                return gram(faer::MatRef::from_column_major_slice(psi, k, r), &sp);
            }
        }
        // Either layout: a vector's buffer holds its entries in order.
        return ptrace_vector(a.entries().copied(), &sp, a.shape().0 == 1);
    }
    let l = Layout::new("ptrace", a.shape(), p)?;
    let src = a.as_ref();
    let mut out = Dense::zeros_for("ptrace", l.k, l.k)?;
    // A fresh column-major matrix: its buffer is the matrix.
    let om = out.buffer_mut();
    for b in 0..l.k {
        let col = om.col_as_slice_mut(b);
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
    if is_vector(a.shape()) {
        return ptrace_sparse_vector(a, &Split::new("ptrace", a.shape(), p)?);
    }
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
    crate::storage::csr_build::csr_from_row_lists("ptrace", (l.k, l.k), &mut rows)
}

/// `M·M†` of a Csr ket or bra: its stored entries grouped by traced index, each group's outer
/// product added into a k × k accumulator (no regrouped copy of the whole vector).
/// O(nnz·log nnz + Σ group²) time.
fn ptrace_sparse_vector(a: &Csr, sp: &Split) -> Result<Csr> {
    const OP: &str = "ptrace";
    let k = sp.k;
    let bra = a.shape().0 == 1;
    alloc::check_dense(OP, (k, k))?;
    let mut entries: Vec<(usize, usize, c64)> = alloc::try_with_capacity(OP, a.shape(), a.nnz())?;
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    for i in 0..a.shape().0 {
        for x in p[i]..p[i + 1] {
            let full = if bra { idx[x] } else { i };
            let (kept, traced) = sp.split(full);
            let v = if bra { val[x].conj() } else { val[x] };
            entries.push((traced, kept, v));
        }
    }
    entries.sort_unstable_by_key(|e| (e.0, e.1));
    let mut out = alloc::zeros_mat(OP, k, k)?;
    for group in entries.chunk_by(|x, y| x.0 == y.0) {
        for &(_, b, vb) in group {
            let vb = vb.conj();
            for &(_, a, va) in group {
                out[(a, b)] += va * vb;
            }
        }
    }
    crate::convert::builtin::dense_to_csr(&Dense::new(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Layout as Order;

    /// Every path of a state's partial trace (the ket itself as M when the kept subsystems
    /// lead or trail, the gather into M or Mᵀ otherwise, bras, row-major kets, Csr kets and
    /// bras) equals the partial trace of the formed projector, for every subset kept.
    #[test]
    fn states_match_their_projectors() {
        let dims = vec![2, 3, 1, 2];
        let n: usize = dims.iter().product();
        let psi = Dense::from_fn(n, 1, |i, _| {
            if i % 5 == 3 {
                c64::new(0.0, 0.0)
            } else {
                c64::new((i as f64 * 0.7).sin(), (i as f64 * 0.3).cos())
            }
        });
        let proj = Dense::from_fn(n, n, |i, j| psi.get(i, 0) * psi.get(j, 0).conj());
        let bra = Dense::from_fn(1, n, |_, j| psi.get(j, 0).conj());
        let csr = |d: &Dense| crate::convert::builtin::dense_to_csr(d).unwrap();
        for mask in 0..16u32 {
            let keep: Vec<usize> = (0..4).rev().filter(|s| mask >> s & 1 == 1).collect();
            let p = Ptrace {
                dims: dims.clone(),
                keep,
            };
            let want = ptrace_dense(&proj, &p).unwrap();
            let dense_states = [
                psi.clone(),
                psi.clone().into_layout(Order::RowMajor).unwrap(),
                bra.clone(),
                bra.clone().into_layout(Order::RowMajor).unwrap(),
            ];
            for (x, state) in dense_states.iter().enumerate() {
                let got = ptrace_dense(state, &p).unwrap();
                assert_close(&got, &want, &format!("dense {x}, keep {:?}", p.keep));
            }
            for (x, state) in [csr(&psi), csr(&bra)].iter().enumerate() {
                let got =
                    crate::convert::builtin::csr_to_dense(&ptrace_csr(state, &p).unwrap()).unwrap();
                assert_close(&got, &want, &format!("csr {x}, keep {:?}", p.keep));
            }
        }
    }

    fn assert_close(got: &Dense, want: &Dense, what: &str) {
        assert_eq!(got.shape(), want.shape(), "{what}");
        for j in 0..want.shape().1 {
            for i in 0..want.shape().0 {
                assert!(
                    (got.get(i, j) - want.get(i, j)).norm() < 1e-12,
                    "{what} ({i}, {j})"
                );
            }
        }
    }
}
