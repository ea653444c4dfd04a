//! The operations: one dispatcher per operation, its kernels, and a free function for each.
//!
//! Every dispatcher is a process-wide static (`ADD`, `MATMUL`, ...) that can be inspected with
//! [`Dispatcher::get`](crate::Dispatcher::get) and extended with
//! [`Dispatcher::add_specialisation`](crate::Dispatcher::add_specialisation). The kernels are
//! public too, for callers who already know their storage types.
//!
//! | operation | free function | dispatcher | direct kernels |
//! |---|---|---|---|
//! | a + s·b | [`add()`], [`add_scaled`] | [`ADD`] | Dense+Dense, Csr+Csr, Csr+Dense, Dense+Csr |
//! | a − b | [`sub`] | [`SUB`] | generic (through `ADD` with s = −1) |
//! | s·a | [`mul`] | [`MUL`] | Dense, Csr |
//! | −a | [`neg`] | [`NEG`] | Dense, Csr |
//! | a·b | [`matmul()`] | [`MATMUL`] | Dense·Dense, Csr·Csr, Csr·Dense → Dense, Dense·Csr → Dense |
//! | a·b† | [`matmul_dag`] | [`MATMUL_DAG`] | Dense, Csr, Dense·Csr† and Csr·Dense† → Dense |
//! | a ∘ b | [`multiply()`] | [`MULTIPLY`] | Dense∘Dense, Csr∘Csr |
//! | a ⊗ b | [`kron()`] | [`KRON`] | Dense⊗Dense, Csr⊗Csr, Dense⊗Csr and Csr⊗Dense → Csr |
//! | a†, aᵀ, ā | [`adjoint`], [`transpose()`], [`conj`] | [`ADJOINT`], [`TRANSPOSE`], [`CONJ`] | Dense, Csr |
//! | Tr a | [`trace()`] | [`TRACE`] | Dense, Csr |
//! | aⁿ | [`pow()`] | [`POW`] | Dense, Csr |
//! | exp a | [`expm()`] | [`EXPM`] | Dense, Csr → Csr, Csr → Dense |
//! | ⟨l\|r⟩ | [`inner()`] | [`INNER`] | Dense, Csr |
//! | ⟨l\|O\|r⟩ | [`inner_op`] | [`INNER_OP`] | Dense³, Csr³, (Dense, Csr, Dense) |
//! | ⟨O⟩ | [`expect`](fn@expect) | [`EXPECT`] | Dense², Csr², (Csr, Dense), (Dia, Dense), Dia² |
//! | \|ψ⟩⟨ψ\| | [`project`] | [`PROJECT`] | Dense, Csr |
//! | norms | [`norm::l2`], [`norm::frobenius`], [`norm::max`], [`norm::one`], [`norm::trace`] | [`norm::L2`], ... | Dense, Csr; Dia (Frobenius, max, 1-norm) |
//! | a ≈ 0, a ≈ b, a = a†, diagonal? | [`iszero`], [`isequal`], [`isherm`], [`isdiag`] | [`ISZERO`], [`ISEQUAL`], [`ISHERM`], [`ISDIAG`] | Dense, Csr, Dia, GpuDense |
//! | drop tiny parts | [`tidyup()`] | [`TIDYUP`] | Dense, Csr |
//! | ket·bra | [`matmul_outer()`] | [`MATMUL_OUTER`] | generic (density-based output), GpuDense |
//! | aᵀ ⊗ b | [`kron_transpose()`] | [`KRON_TRANSPOSE`] | Dense, Csr, GpuDense |
//! | superoperator expectation | [`expect_super`], [`trace_oper_ket`] | [`EXPECT_SUPER`], [`TRACE_OPER_KET`] | Dense, Csr, GpuDense |
//! | a⁻¹, a·x = b | [`inv`], [`solve()`] | [`INV`], [`SOLVE`] | Dense (LU, QR), Csr (sparse LU) |
//! | √a, log a | [`sqrtm`], [`logm`] | [`SQRTM`], [`LOGM`] | Dense, Csr (densified) |
//! | eigenpairs, SVD | [`eigs`], [`svd`] | [`EIGS`], [`SVD`] | Dense, Csr (densified) |
//! | partial trace | [`ptrace()`] | [`PTRACE`] | Dense, Csr, GpuDense |
//! | reshape, vec, unvec, columns | [`reshape()`], [`column_stack`], [`column_unstack`], [`split_columns`] | [`RESHAPE`], ... | Dense, Csr |
//! | permutations | [`permute::dimensions`], [`permute::indices`] | [`permute::DIMENSIONS`], [`permute::INDICES`] | Dense, Csr, GpuDense |
//! | blocks | [`block_extract`], [`block_overwrite`], [`block_build`] | [`BLOCK_EXTRACT`], [`BLOCK_OVERWRITE`] | Dense, Csr, GpuDense |
//! | means of nonzeros | [`mean_nonzero`], [`mean_abs_nonzero`] | [`MEAN_NONZERO`], [`MEAN_ABS_NONZERO`] | Dense, Csr, GpuDense |
//! | in place | [`iadd`], [`imul`] | — | Dense, Csr |
//! | to faer / sprs | [`extract()`] | — | any kind |
//! | 0, 1, diagonals | [`zeros`], [`identity`], [`diag`], [`one_element`], [`zeros_like`], [`identity_like`] | [`ZEROS`], [`IDENTITY`], [`DIAG`] | Dense, Csr |

pub mod add;
pub mod block;
pub mod compare;
mod components;
pub mod construct;
pub mod decomp;
pub mod dense_csr;
pub mod dia;
mod eigen;
mod elementwise;
pub mod expect;
pub mod expm;
pub mod expm_multiply;
pub mod extract;
pub mod funm;
mod gemm3m;
pub mod inner;
pub mod inplace;
pub mod kron;
mod krylov_eigs;
pub mod lazy;
pub mod lu;
pub mod matmul;
pub mod mean;
pub mod multiply;
pub mod norm;
pub mod outer;
pub mod permute;
pub mod pow;
pub mod ptrace;
pub mod reshape;
pub mod scale;
pub mod solve;
mod space;
mod spgemm;
pub mod tidyup;
mod tolerance;
pub mod trace;
pub mod transpose;

pub use crate::krylov::watch::{Flow, Partial, Progress, Watch};
pub use add::{ADD, SUB, add, add_scaled, sub};
pub use block::{
    BLOCK_EXTRACT, BLOCK_OVERWRITE, Block, BlockRange, block_build, block_extract, block_overwrite,
};
pub use compare::{ISDIAG, ISEQUAL, ISHERM, ISZERO, Tol, isdiag, isequal, isherm, iszero};
pub use construct::{
    DIAG, Diagonals, IDENTITY, ZEROS, diag, identity, identity_like, one_element, zeros, zeros_like,
};
pub use decomp::{
    EIGS, EigOrder, Eigen, EigsMethod, EigsOptions, KRYLOV_MIN_DIM, SVD, Svd, eigs, eigs_plan,
    eigs_with, svd,
};
pub use expect::{EXPECT, EXPECT_SUPER, TRACE_OPER_KET, expect, expect_super, trace_oper_ket};
pub use expm::{EXPM, expm};
pub use expm_multiply::{EXPM_MULTIPLY, expm_multiply, expm_multiply_with};
pub use extract::{Extract, extract};
pub use funm::{LOGM, SQRTM, logm, sqrtm};
pub use inner::{INNER, INNER_OP, inner, inner_op};
pub use inplace::{iadd, imul};
pub use kron::{KRON, KRON_TRANSPOSE, kron, kron_transpose};
pub use lazy::{
    Modes, SteadyState, TARGET_MODE_MATMUL, lindblad_dissipator, liouvillian, spost, spre,
    sprepost, steadystate, target_mode_matmul,
};
pub use lu::RCOND_MIN;
pub use matmul::{MATMUL, MATMUL_DAG, matmul, matmul_dag};
pub use mean::{MEAN_ABS_NONZERO, MEAN_NONZERO, mean_abs_nonzero, mean_nonzero};
pub use multiply::{MULTIPLY, multiply};
pub use norm::{NORM_FROBENIUS, NORM_L2, NORM_MAX, NORM_ONE, NORM_TRACE};
pub use outer::{MATMUL_OUTER, OUTER_DENSE_THRESHOLD, PROJECT, matmul_outer, project};
pub use permute::{PERMUTE_DIMENSIONS, PERMUTE_INDICES};
pub use pow::{POW, pow};
pub use ptrace::{PTRACE, Ptrace, ptrace};
pub use reshape::{
    COLUMN_STACK, COLUMN_UNSTACK, RESHAPE, SPLIT_COLUMNS, column_stack, column_unstack, reshape,
    split_columns,
};
pub use scale::{MUL, NEG, mul, neg};
pub use solve::{INV, Iterative, Preconditioner, SOLVE, SolveMethod, inv, solve, solve_with};
pub use tidyup::{TIDYUP, tidyup};
pub use trace::{TRACE, trace};
pub use transpose::{ADJOINT, CONJ, TRANSPOSE, adjoint, conj, transpose};

// The kernels behind the operators on Dense and Csr (crate::operators).
pub(crate) use add::{add_csr, add_csr_dense, add_dense, add_dense_csr};
pub(crate) use elementwise::{
    dense_copy, dense_flip, dense_map, dense_scale, dense_sum, dense_zip, dense_zip_cols,
};
pub(crate) use scale::{mul_csr, mul_dense, neg_csr, neg_dense};

use crate::dispatch::{KernelReturn, ReturnValue, Specialisation};
use crate::error::Result;
use crate::scalar::{ZERO, c64};
use crate::shape::{same_shape, square};
use crate::storage::{Csr, Data, Dense};

/// A kernel for storage type `A` that runs `f` on a Dense copy of its input, made by
/// `to_dense` (so a large input is refused with [`Error::TooLarge`](crate::Error::TooLarge)
/// instead of densified). It declares the conversion
/// ([`Specialisation::converts_internally_to`]), so `explain()` reports it and
/// [`ImplicitConversions::Deny`](crate::ImplicitConversions::Deny) refuses it.
pub(crate) fn via_dense<A, P, R, O>(
    name: &str,
    to_dense: fn(&A) -> Result<Dense>,
    f: impl Fn(&Dense, &P) -> Result<O> + Send + Sync + 'static,
) -> Specialisation<P, R>
where
    A: crate::storage::Storage,
    P: Send + Sync + 'static,
    R: ReturnValue,
    O: KernelReturn<R>,
{
    Specialisation::unary(name, move |a: &A, p: &P| f(&to_dense(a)?, p))
        .converts_internally_to::<Dense>()
}

/// A tolerance must be finite and ≥ 0 (a negative or NaN one would make the answer depend on
/// how each kind walks its entries).
pub(crate) fn check_tol(op: &str, name: &str, t: f64) -> Result<()> {
    if t.is_finite() && t >= 0.0 {
        Ok(())
    } else {
        Err(crate::error::Error::argument(
            op,
            format!("{name} must be finite and >= 0, got {t}"),
        ))
    }
}

/// The result has the first input's shape (a [`ShapeFn`](crate::dispatch::ShapeFn)).
pub(crate) fn first_shape<P>(args: &[&Data], _: &P) -> Option<(usize, usize)> {
    args.first().map(|a| a.shape())
}

/// The result has the first input's shape transposed.
pub(crate) fn first_shape_flipped<P>(args: &[&Data], _: &P) -> Option<(usize, usize)> {
    args.first().map(|a| (a.shape().1, a.shape().0))
}

/// Dispatcher check: both inputs have the same shape.
pub(crate) fn check_same_shape<P>(op: &str, args: &[&Data], _: &P) -> Result<()> {
    same_shape(op, args[0].shape(), args[1].shape())
}

/// Dispatcher check: the only input is square.
pub(crate) fn check_square<P>(op: &str, args: &[&Data], _: &P) -> Result<()> {
    square(op, args[0].shape())
}

/// A new Csr with the same structure and `f` applied to every stored value.
///
/// # Errors
/// As [`csr_with_values`].
pub(crate) fn csr_map(op: &str, a: &Csr, f: impl Fn(c64) -> c64) -> Result<Csr> {
    csr_with_values(op, a, |d| d.extend(a.data().iter().map(|&x| f(x))))
}

/// A new Csr with `a`'s structure and the values `fill` appends to an empty vector with room
/// for nnz(a). The three arrays come from `storage::alloc::csr_buffers`: fallible, checked
/// against the memory available, advised as huge pages (with plain `to_vec` copies, `mul` of
/// the XXZ chain's H at N = 20, 1.1·10⁷ entries, took 174–181 ms, mostly faulting in 4 KiB
/// pages; now 40 ms, scipy's `2.0 * h` 33 ms).
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) when the arrays cannot be allocated.
///
/// # Panics
/// If `fill` does not append exactly nnz(a) values (a caller's bug).
pub(crate) fn csr_with_values(op: &str, a: &Csr, fill: impl FnOnce(&mut Vec<c64>)) -> Result<Csr> {
    let (mut indptr, mut indices, mut data) =
        crate::storage::alloc::csr_buffers(op, a.shape(), a.indptr().len(), a.nnz())?;
    indptr.extend_from_slice(a.indptr());
    indices.extend_from_slice(a.indices());
    fill(&mut data);
    assert_eq!(
        data.len(),
        a.nnz(),
        "csr_with_values: one value per stored entry"
    );
    // SAFETY: the structure is copied unchanged from a valid Csr, with one value per entry.
    Ok(unsafe { Csr::from_parts_unchecked(a.shape(), indptr, indices, data) })
}

/// Whether every product `x·y` of a value of `a` and a value of `b` is non-zero once rounded, so
/// a kernel that only multiplies such pairs (a Kronecker product) can skip
/// [`drop_exact_zeros`]. True when no value is an exact zero and the smallest non-zero real or
/// imaginary parts of the two sides multiply to at least 2⁻⁹⁶⁰ (no partial product
/// underflows): then each part of the rounded product carries an error of at most γ₂ times its
/// two terms, so both parts vanishing would need `|x|²|y|² ≤ 2γ₂²|x|²|y|²`, impossible.
/// NaN and infinite values never give an exact zero. O(len(a) + len(b)).
pub(crate) fn products_nonzero(a: &[c64], b: &[c64]) -> bool {
    use crate::simd::smallest_part;
    match (smallest_part(a), smallest_part(b)) {
        (Some(x), Some(y)) => x * y >= f64::powi(2.0, -960),
        _ => false,
    }
}

crate::simd::avx2_fn! {
    /// Whether a value is exactly zero (one branch-free pass).
    fn any_exact_zero(data: &[c64]) -> bool {
        data.iter().fold(false, |acc, v| acc | (*v == ZERO))
    }
}

/// `parts + 1` cut points in `0..=starts.len()` splitting `total` entries into `parts` runs of
/// about equal size, where `starts` (non-decreasing) holds where each item's entries begin:
/// cut t is the first item starting at or after t·total / parts; the first cut is 0 and the
/// last `starts.len()`.
pub(crate) fn even_split(starts: &[usize], total: usize, parts: usize) -> Vec<usize> {
    let mut cuts: Vec<usize> = (0..=parts)
        .map(|t| {
            let k = (total as u128 * t as u128 / parts as u128) as usize;
            starts.partition_point(|&x| x < k)
        })
        .collect();
    cuts[parts] = starts.len();
    cuts
}

/// Removes the entries that are exactly zero (`0 + 0i`, either sign; NaN is kept) from CSR
/// arrays, in place. One vectorised scan when there are none, one compacting pass otherwise.
pub(crate) fn drop_exact_zeros(
    indptr: &mut [usize],
    indices: &mut Vec<usize>,
    data: &mut Vec<c64>,
) {
    let any = any_exact_zero(data);
    if !any {
        return;
    }
    let mut write = 0;
    let mut start = 0;
    for p in indptr.iter_mut().skip(1) {
        let end = *p;
        for k in start..end {
            if data[k] != ZERO {
                indices[write] = indices[k];
                data[write] = data[k];
                write += 1;
            }
        }
        start = end;
        *p = write;
    }
    indices.truncate(write);
    data.truncate(write);
}

/// Appends one row's entries, sorted by column, to `indices` and `data`, entries of the same
/// column summed (`row` is left sorted). The caller pushes the row pointer.
pub(crate) fn push_merged_row(
    row: &mut [(usize, c64)],
    indices: &mut Vec<usize>,
    data: &mut Vec<c64>,
) {
    row.sort_unstable_by_key(|e| e.0);
    let start = indices.len();
    for &(c, v) in row.iter() {
        if indices.len() > start && indices[indices.len() - 1] == c {
            let end = data.len() - 1;
            data[end] += v;
        } else {
            indices.push(c);
            data.push(v);
        }
    }
}

/// A Csr from one entry list per row, in any column order; entries of the same column are
/// summed. Each list is freed once copied, and arrays left less than half full by the summing
/// are shrunk (a 2 × 2 partial trace of a 2¹⁸-dimensional operator kept 6 MB of room for the
/// 2¹⁸ entries it summed). O(nnz log(row length) + rows).
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) naming `op` if the arrays cannot be allocated.
pub(crate) fn csr_from_row_lists(
    op: &str,
    shape: (usize, usize),
    rows: &mut [Vec<(usize, c64)>],
) -> Result<Csr> {
    let nnz = rows.iter().map(Vec::len).sum();
    let ptrs = crate::shape::indptr_len(op, (rows.len(), shape.1))?;
    let (mut indptr, mut indices, mut data) =
        crate::storage::alloc::csr_buffers(op, shape, ptrs, nnz)?;
    indptr.push(0);
    for row in rows.iter_mut() {
        push_merged_row(&mut std::mem::take(row), &mut indices, &mut data);
        indptr.push(indices.len());
    }
    if indices.len() < indices.capacity() / 2 {
        indices.shrink_to_fit();
        data.shrink_to_fit();
    }
    // SAFETY: one pointer per row after the leading 0, non-decreasing; each row was sorted
    // with equal columns merged. The callers' columns are below `shape.1` (debug-checked).
    Ok(unsafe { Csr::from_parts_unchecked(shape, indptr, indices, data) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::builtin::{csr_to_dense, dense_to_csr};

    /// The dense algorithms whose intermediates faer allocates infallibly check their whole
    /// workspace against the memory available before any work: told (on this thread) that the
    /// machine has less than that, each returns `TooLarge` naming itself. 2900 × 2900 (135 MB),
    /// so that even two copies pass the size from which the memory is checked.
    #[test]
    fn dense_algorithms_check_their_workspace_first() {
        let n = 2900;
        let (a, b) = (Dense::zeros(n, n), Dense::zeros(n, 1));
        let available = 200u64 << 20;
        let values_only = EigsOptions {
            vectors: false,
            ..EigsOptions::default()
        };
        crate::engine::memory::with_available(available, || {
            let calls: Vec<(&str, Result<()>)> = vec![
                ("expm", expm::expm_dense(&a).map(drop)),
                ("sqrtm", funm::sqrtm_dense(&a).map(drop)),
                ("logm", funm::logm_dense(&a).map(drop)),
                (
                    "eigs",
                    decomp::eigs_dense(&a, EigsOptions::default()).map(drop),
                ),
                ("eigs", decomp::eigs_dense(&a, values_only).map(drop)),
                ("svd", decomp::svd_dense(&a, true).map(drop)),
                ("svd", decomp::svd_dense(&a, false).map(drop)),
                ("norm_trace", norm::trace_dense(&a).map(drop)),
                ("inv", solve::inv_dense(&a).map(drop)),
                (
                    "solve",
                    solve::solve_dense(&a, &b, &SolveMethod::Lu).map(drop),
                ),
                (
                    "solve",
                    solve::solve_dense(&a, &b, &SolveMethod::Lstsq).map(drop),
                ),
            ];
            for (op, r) in calls {
                match r {
                    Err(crate::Error::TooLarge {
                        op: named,
                        shape,
                        bytes,
                        reason,
                        ..
                    }) => {
                        assert_eq!((named.as_str(), shape), (op, (n, n)));
                        assert!(bytes > u128::from(available), "{op}: {bytes}");
                        assert!(reason.contains("workspace"), "{op}: {reason}");
                    }
                    other => panic!("{op}: {other:?}"),
                }
            }
        });
    }

    fn dense(m: usize, n: usize, seed: u64) -> Dense {
        Dense::from_fn(m, n, |i, j| {
            let x = (i as u64 * 31 + j as u64 * 17 + seed) % 23;
            // Every fifth entry zero, so the Dense → Csr walks skip and keep.
            if x.is_multiple_of(5) {
                ZERO
            } else {
                c64::new(x as f64 / 7.0 - 1.5, (x * x) as f64 / 11.0 - 2.0)
            }
        })
    }

    /// Every `avx2_fn!` kernel gives the same bits on its AVX2 + FMA instance as on its
    /// baseline one (no contraction into FMA, same order of operations), in both layouts and
    /// with column counts that are not multiples of the four-column blocks.
    #[test]
    fn avx2_and_baseline_instances_agree() {
        let run = || -> Result<Vec<Dense>> {
            let (a, b) = (dense(13, 7, 1), dense(13, 7, 2));
            let row_major = dense(7, 13, 3).into_transpose();
            let s = dense_to_csr(&dense(9, 13, 4))?;
            let mut out = vec![
                scale::mul_dense(&a, c64::new(0.5, -2.0))?,
                transpose::adjoint_dense(&a)?,
                add::add_dense(&a, &b, c64::new(1.0, 0.25))?,
                add::add_dense(&a, &row_major, c64::new(-1.0, 0.0))?,
                add::add_dense(&row_major, &a, c64::new(2.0, 0.0))?,
                kron::kron_dense(&dense(3, 2, 5), &dense(4, 3, 6))?,
                matmul::matmul_csr_dense(&s, &row_major)?,
                csr_to_dense(&s)?,
                csr_to_dense(&dense_to_csr(&row_major)?)?,
                csr_to_dense(&matmul::matmul_csr(&s, &dense_to_csr(&a)?)?)?,
            ];
            // Cancellation: `drop_exact_zeros` must find the exact zeros on both instances.
            let c = add::add_csr(&s, &s, c64::new(-1.0, 0.0))?;
            out.push(csr_to_dense(&c)?);
            out.push(Dense::from_fn(1, 1, |_, _| {
                c64::new(norm::max_dense(&a), c.nnz() as f64)
            }));
            let small = dense_to_csr(&dense(3, 2, 5))?;
            out.push(csr_to_dense(&kron::kron_csr(&s, &small)?)?);
            let sq = dense_to_csr(&dense(13, 13, 7))?;
            let tr = trace::trace_csr(&sq)?;
            out.push(Dense::from_fn(1, 1, |_, _| tr));
            Ok(out)
        };
        let fast = run().unwrap();
        let slow = crate::simd::baseline(run).unwrap();
        assert_eq!(fast.len(), slow.len());
        for (k, (x, y)) in fast.iter().zip(&slow).enumerate() {
            assert_eq!(x.shape(), y.shape(), "result {k}");
            let (m, n) = x.shape();
            for i in 0..m {
                for j in 0..n {
                    let (p, q) = (x.get(i, j), y.get(i, j));
                    assert!(
                        p.re.to_bits() == q.re.to_bits() && p.im.to_bits() == q.im.to_bits(),
                        "result {k} ({i}, {j}): {p} vs {q}"
                    );
                }
            }
        }
        assert_eq!(fast[10].nnz(), 0, "a − a cancels to no stored entries");
    }

    /// Csr·Dense with a column-major right side runs `simd::csr_row_dots`, whose AVX2 + FMA
    /// instance rounds differently from the baseline (FMA): the two agree to rounding, and on
    /// each instance a column of the product has the same bits whether it is computed in a
    /// group of four, alone, or as a ket.
    #[test]
    fn csr_dense_instances_agree_and_columns_do_not_depend_on_grouping() {
        let s = dense_to_csr(&dense(9, 13, 4)).unwrap();
        let b = dense(13, 7, 1);
        let run = || {
            let full = matmul::matmul_csr_dense(&s, &b).unwrap();
            for j in 0..7 {
                let ket = Dense::from_fn(13, 1, |i, _| b.get(i, j));
                let alone = matmul::matmul_csr_dense(&s, &ket).unwrap();
                for i in 0..9 {
                    let (p, q) = (full.get(i, j), alone.get(i, 0));
                    assert!(
                        p.re.to_bits() == q.re.to_bits() && p.im.to_bits() == q.im.to_bits(),
                        "({i}, {j}): {p} in the product, {q} alone"
                    );
                }
            }
            full
        };
        let (fast, slow) = (run(), crate::simd::baseline(run));
        for i in 0..9 {
            for j in 0..7 {
                let (p, q) = (fast.get(i, j), slow.get(i, j));
                assert!(
                    (p - q).norm() <= 1e-13 * (1.0 + q.norm()),
                    "({i}, {j}): {p} vs {q}"
                );
            }
        }
    }

    /// Every built-in operation that returns a matrix declares its result's shape, and the
    /// declared shape is the shape of what it returns, for Dense and Csr inputs and outputs: a
    /// wrong one would refuse a Dense result that fits, or let one through that does not.
    #[test]
    fn declared_result_shapes_match_the_results() -> Result<()> {
        use crate::dispatch::{Dispatcher, Out};

        fn agrees<P: Send + Sync + 'static>(d: &Dispatcher<P>, args: &[&Data], p: &P) {
            for out in [Out::Auto, Out::Dense, Out::Csr] {
                let got = d
                    .call(args, out, p)
                    .unwrap_or_else(|e| panic!("{} {out:?}: {e}", d.name()));
                assert_eq!(
                    d.declared_shape(args, p),
                    Some(got.shape()),
                    "{} {out:?}",
                    d.name()
                );
            }
        }
        // Diagonally dominant with a positive diagonal: invertible, with a logarithm and a
        // square root.
        let op = |m: usize, n: usize, s: f64| {
            Dense::from_fn(m, n, |i, j| {
                let d = if i == j { 8.0 } else { 0.0 };
                c64::new(
                    d + s * (i + 2 * j) as f64 / 10.0,
                    s * (i as f64 - j as f64) / 9.0,
                )
            })
        };
        let dense = [op(4, 4, 1.0), op(4, 3, -0.5), op(4, 1, 0.7), op(1, 4, 0.3)];
        for csr in [false, true] {
            let data = dense
                .iter()
                .map(|d| {
                    Ok(if csr {
                        dense_to_csr(d)?.into()
                    } else {
                        d.clone().into()
                    })
                })
                .collect::<Result<Vec<Data>>>()?;
            let [a, c, ket, bra] = [&data[0], &data[1], &data[2], &data[3]];
            let ct = transpose(c, Out::Auto)?;
            let two = c64::new(2.0, -1.0);
            agrees(&ADD, &[a, a], &two);
            agrees(&SUB, &[c, c], &());
            agrees(&MULTIPLY, &[c, c], &());
            agrees(&MUL, &[c], &two);
            agrees(&NEG, &[c], &());
            agrees(&CONJ, &[c], &());
            agrees(&ADJOINT, &[c], &());
            agrees(&TRANSPOSE, &[c], &());
            agrees(&MATMUL, &[a, c], &());
            agrees(&MATMUL_DAG, &[a, &ct], &());
            agrees(&KRON, &[c, ket], &());
            agrees(&KRON_TRANSPOSE, &[c, bra], &());
            agrees(&POW, &[a], &3);
            agrees(&TIDYUP, &[c], &1e-12);
            agrees(&EXPM, &[a], &());
            agrees(&RESHAPE, &[c], &(2, 6));
            agrees(&BLOCK_EXTRACT, &[a], &(1..3, 0..2));
            agrees(&BLOCK_OVERWRITE, &[a, c], &(0, 1));
            let perm = permute::Permutation {
                rows: Some(vec![3, 1, 0, 2]),
                cols: Some(vec![2, 0, 1]),
            };
            agrees(&PERMUTE_INDICES, &[c], &perm);
            let dims = permute::Subsystems {
                dims: vec![2, 2],
                order: vec![1, 0],
            };
            agrees(&PERMUTE_DIMENSIONS, &[a], &dims);
            let keep = Ptrace {
                dims: vec![2, 2],
                keep: vec![1],
            };
            for v in [a, ket, bra] {
                agrees(&PTRACE, &[v], &keep);
            }
            agrees(&COLUMN_STACK, &[c], &());
            let stacked = column_stack(c, Out::Auto)?;
            agrees(&COLUMN_UNSTACK, &[&stacked], &4);
            agrees(&MATMUL_OUTER, &[ket, bra], &());
            agrees(&PROJECT, &[ket], &());
            agrees(&PROJECT, &[bra], &());
            agrees(&SOLVE, &[a, c], &SolveMethod::Lu);
            agrees(&SOLVE, &[c, ket], &SolveMethod::Lstsq);
            agrees(&INV, &[a], &());
            agrees(&SQRTM, &[a], &());
            agrees(&LOGM, &[a], &());
            agrees(&EXPM_MULTIPLY, &[a, c], &c64::new(0.0, -0.5));
        }
        agrees(&ZEROS, &[], &(2, 5));
        agrees(&IDENTITY, &[], &(3, c64::new(0.5, 0.0)));
        let diagonals = Diagonals {
            diagonals: vec![vec![c64::new(1.0, 0.0); 3], vec![c64::new(0.0, 2.0); 3]],
            offsets: vec![0, 1],
            shape: (3, 4),
        };
        agrees(&DIAG, &[], &diagonals);
        Ok(())
    }
}
