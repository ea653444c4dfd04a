//! Expectation values: `expect` (⟨ψ|O|ψ⟩ or Tr(O·ρ)), and their superoperator forms
//! `expect_super` and `trace_oper_ket` on operators stored as column-stacked vectors (QuTiP's
//! "operator-ket" form).
//!
//! A density matrix ρ of size n×n is stored as the n²×1 column `vec(ρ)`, whose entry
//! `i + n·j` is `ρ[i, j]`; a superoperator acts on it as an n²×n² matrix.

use std::mem::MaybeUninit;
use std::sync::LazyLock;

use super::inner::{csr_entries, inner_op_csr};
use super::transpose::transpose_csr;
use crate::dispatch::{Dispatcher, Out};
use crate::engine::{self, Family};
use crate::error::{Error, Result};
use crate::gpu::{GpuCsr, GpuDense};
use crate::scalar::{ZERO, c64};
use crate::shape::expect_shapes;
use crate::simd::gemm;
use crate::storage::{Csr, Data, Dense, Dia, KronSum, Layout, SuperOp};

/// `⟨ψ|op|ψ⟩` for a ket ψ, `Tr(op·ρ)` for an operator ρ. Kernels: Dense², Csr², Csr op with
/// Dense state (the common case of a sparse observable on a dense state), Dia with a Dense
/// state, Dia² (through Csr: a Dia ρ is never densified).
pub static EXPECT: LazyLock<Dispatcher<(), c64>> = LazyLock::new(|| {
    Dispatcher::builder("expect", 2)
        .check(|op, a, _| expect_shapes(op, a[0].shape(), a[1].shape()))
        .binary("expect_dense", |o: &Dense, s: &Dense, _: &()| {
            expect_dense(o, s)
        })
        .binary("expect_csr", |o: &Csr, s: &Csr, _: &()| expect_csr(o, s))
        .binary("expect_csr_dense", |o: &Csr, s: &Dense, _: &()| {
            expect_csr_dense(o, s)
        })
        .binary("expect_dia_dense", |o: &Dia, s: &Dense, _: &()| {
            super::dia::expect_dia_dense(o, s)
        })
        // A Dia state (an operator ρ) is not densified: both go to Csr, O(stored entries).
        .binary("expect_dia", |o: &Dia, s: &Dia, _: &()| {
            use crate::convert::dia::dia_to_csr;
            expect_csr(&dia_to_csr(o)?, &dia_to_csr(s)?)
        })
        .binary("expect_gpu", |o: &GpuDense, s: &GpuDense, _: &()| {
            o.expect(s)
        })
        .binary("expect_gpucsr_gpu", |o: &GpuCsr, s: &GpuDense, _: &()| {
            o.expect(s)
        })
        .binary("expect_kronsum_dense", |o: &KronSum, s: &Dense, _: &()| {
            super::lazy::kron_sum::expect_kron_sum_dense(o, s)
        })
        .builtin()
});

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
#[inline]
pub fn expect(op: &Data, state: &Data) -> Result<c64> {
    EXPECT.call(&[op, state], Out::Auto, &())
}

/// Dense expectation value. O(n²): for an operator only the trace of the product is formed.
///
/// # Errors
/// [`Error::Shape`] on incompatible shapes.
pub fn expect_dense(o: &Dense, s: &Dense) -> Result<c64> {
    expect_shapes("expect", o.shape(), s.shape())?;
    let n = o.shape().0;
    if s.shape().1 == 1 {
        // A ket (QuTiP reads a 1×1 state as a ket too): ψ†·(O·ψ).
        let psi = s.col_major("expect")?.col_as_slice(0);
        let workers = engine::workers(Family::Matmul, n.saturating_mul(n));
        // Up to 12 rows (column-major): O·ψ in registers, as Dense·ket computes it
        // (`simd::gemm`), without the column slices and row blocks of `dense_gemv`:
        // 10 × 10 1 765 → 972 instructions a call (docs/benchmarks.md).
        if workers == 1 && n <= gemm::MAX_ROWS && o.layout() == Layout::ColMajor {
            let mut buf = [MaybeUninit::uninit(); gemm::MAX_ROWS * gemm::MAX_INNER];
            if let Some(op) = gemm::Operand::of(o.buffer(), &mut buf, |c| o.buffer_col(c)) {
                let mut o_psi = [MaybeUninit::<c64>::uninit(); gemm::MAX_ROWS];
                gemm::column(&op, psi, &mut o_psi[..n]);
                // SAFETY: `gemm::column` wrote all n rows of its result column, and
                // `MaybeUninit<c64>` has the layout of `c64`.
                let o_psi = unsafe { &*(std::ptr::from_ref(&o_psi[..n]) as *const [c64]) };
                return Ok(crate::simd::dot_conj(psi, o_psi));
            }
        }
        // The matrix–vector kernels of Dense·ket, on one worker or several (faer's product with
        // one column ran at half their speed, and its column allocation dominated at n = 10).
        // Up to 32 rows, O·ψ sits on the stack (with the column slices of `dense_gemv`, a
        // column-major O's call allocates nothing).
        let (mut stack, mut heap);
        let o_psi: &mut [c64] = if n <= 32 {
            stack = [ZERO; 32];
            &mut stack[..n]
        } else {
            heap = crate::storage::alloc::try_vec("expect", o.shape(), n, ZERO)?;
            &mut heap
        };
        super::matmul::dense_gemv(o, psi, o_psi, workers);
        return Ok(crate::simd::dot_conj(psi, o_psi));
    }
    // Tr(O ρ) = Σ_ij O_ij ρ_ji. Opposite layouts: the two buffers line up entry for entry
    // (buffer(ρ)[i, j] = ρ_ji), one contiguous zip. Same layout: buffer(O)[i, j]·buffer(ρ)[j, i]
    // gives the same sum in either layout.
    if o.layout() != s.layout() {
        return Ok(o.entries().zip(s.entries()).map(|(x, y)| x * y).sum());
    }
    Ok((0..n)
        .map(|j| {
            o.buffer_col(j)
                .iter()
                .enumerate()
                .map(|(i, x)| x * s.buffer_col(i)[j])
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
        let psi = s.col_major("expect")?.col_as_slice(0);
        let (p, idx, val) = (o.indptr(), o.indices(), o.data());
        let workers = engine::workers(Family::Reduction, o.nnz().max(o.shape().0));
        const CHUNK: usize = 256;
        return Ok(engine::sum_ranges(o.shape().0, workers, |rows| {
            let mut total = ZERO;
            // (O ψ)_i for a chunk of rows at a time, by the Csr·Dense row kernel.
            let mut buf = [std::mem::MaybeUninit::<c64>::uninit(); CHUNK];
            for start in rows.clone().step_by(CHUNK) {
                let chunk = start..(start + CHUNK).min(rows.end);
                let out = &mut buf[..chunk.len()];
                // SAFETY: the rows are rows of `o`, whose Csr invariants bound their ranges and
                // columns; its column count is `psi.len()` (the shapes were checked above).
                unsafe {
                    crate::simd::csr_row_dots(p, idx, val, [psi], chunk.clone(), &mut [out]);
                }
                for (i, row) in chunk.zip(&buf) {
                    // SAFETY: `csr_row_dots` wrote one value per row of the chunk, the
                    // first `chunk.len()` slots.
                    total += psi[i].conj() * unsafe { row.assume_init() };
                }
            }
            total
        }));
    }
    Ok(csr_entries(o).map(|((i, j), v)| v * s.get(j, i)).sum())
}

/// `n` if `len == n²`.
pub(crate) fn exact_sqrt(len: usize) -> Option<usize> {
    let r = (len as f64).sqrt().round() as usize;
    // Check the neighbours too: the float square root can be off by one for huge `len`.
    (r.saturating_sub(1)..=r + 1).find(|&n| n.checked_mul(n) == Some(len))
}

/// The operand must be an n²×1 column; returns `n`.
fn oper_ket(op: &str, shape: (usize, usize), others: &[(usize, usize)]) -> Result<usize> {
    match exact_sqrt(shape.0) {
        Some(n) if shape.1 == 1 => Ok(n),
        _ => {
            let mut shapes = others.to_vec();
            shapes.push(shape);
            Err(Error::shape(
                op,
                &shapes,
                "the state must be a column-stacked operator, of shape n²×1",
            ))
        }
    }
}

/// `Tr(unstack(a))` for an n²×1 column-stacked operator. Kernels: Dense, Csr, GpuDense.
pub static TRACE_OPER_KET: LazyLock<Dispatcher<(), c64>> = LazyLock::new(|| {
    Dispatcher::builder("trace_oper_ket", 1)
        .check(|op, args, _| oper_ket(op, args[0].shape(), &[]).map(|_| ()))
        .unary("trace_oper_ket_dense", |a: &Dense, _: &()| {
            trace_oper_ket_dense(a)
        })
        .unary("trace_oper_ket_csr", |a: &Csr, _: &()| {
            trace_oper_ket_csr(a)
        })
        .unary("trace_oper_ket_gpu", |a: &GpuDense, _: &()| {
            a.trace_oper_ket(oper_ket("trace_oper_ket", a.shape(), &[])?)
        })
        .builtin()
});

/// `Σᵢ a[i·(n+1)]`: the trace of the n×n operator whose column stack is `a`.
///
/// # Errors
/// [`Error::Shape`] unless `a` is n²×1.
///
/// ```
/// use polymat::{Dense, c64};
/// // vec of [[1, 2], [3, 4]] is (1, 3, 2, 4)ᵀ; its trace is 5.
/// let v = Dense::from_col_major(4, 1, &[1.0, 3.0, 2.0, 4.0].map(|x| c64::new(x, 0.0))).unwrap();
/// assert_eq!(polymat::trace_oper_ket(&v.into()).unwrap(), c64::new(5.0, 0.0));
/// ```
#[inline]
pub fn trace_oper_ket(a: &Data) -> Result<c64> {
    TRACE_OPER_KET.call(&[a], Out::Auto, &())
}

/// Dense kernel of [`trace_oper_ket`]. O(n).
///
/// # Errors
/// [`Error::Shape`] unless `a` is n²×1.
pub fn trace_oper_ket_dense(a: &Dense) -> Result<c64> {
    let n = oper_ket("trace_oper_ket", a.shape(), &[])?;
    let col = a.col_major("trace_oper_ket")?.col_as_slice(0);
    Ok((0..n).map(|i| col[i * (n + 1)]).sum())
}

/// Csr kernel of [`trace_oper_ket`]. O(n).
///
/// # Errors
/// [`Error::Shape`] unless `a` is n²×1.
pub fn trace_oper_ket_csr(a: &Csr) -> Result<c64> {
    let n = oper_ket("trace_oper_ket", a.shape(), &[])?;
    let (p, val) = (a.indptr(), a.data());
    // A single column: every stored entry of row r is at column 0 (duplicates were summed).
    Ok((0..n)
        .map(|i| {
            let r = i * (n + 1);
            val[p[r]..p[r + 1]].iter().sum::<c64>()
        })
        .sum())
}

/// `Tr(unstack(S·vec(ρ)))`. Kernels: (Dense, Dense), (Csr, Dense), (Csr, Csr),
/// (GpuDense, GpuDense).
pub static EXPECT_SUPER: LazyLock<Dispatcher<(), c64>> = LazyLock::new(|| {
    Dispatcher::builder("expect_super", 2)
        .check(|op, args, _| super_shapes(op, args[0].shape(), args[1].shape()).map(|_| ()))
        .binary("expect_super_dense", |s: &Dense, r: &Dense, _: &()| {
            expect_super_dense(s, r)
        })
        .binary("expect_super_csr_dense", |s: &Csr, r: &Dense, _: &()| {
            expect_super_csr_dense(s, r)
        })
        .binary("expect_super_csr", |s: &Csr, r: &Csr, _: &()| {
            expect_super_csr(s, r)
        })
        .binary("expect_super_gpu", |s: &GpuDense, r: &GpuDense, _: &()| {
            s.expect_super(r, super_shapes("expect_super", s.shape(), r.shape())?)
        })
        .binary(
            "expect_super_superop_dense",
            |s: &SuperOp, r: &Dense, _: &()| {
                let y = super::matmul::super_op::matmul_super_op_dense(s, r)?;
                trace_oper_ket_dense(&y)
            },
        )
        .builtin()
});

/// `S` must be n²×n² and `ρ` n²×1; returns `n`.
fn super_shapes(op: &str, s: (usize, usize), r: (usize, usize)) -> Result<usize> {
    let n = oper_ket(op, r, &[s])?;
    if s == (r.0, r.0) {
        Ok(n)
    } else {
        Err(Error::shape(
            op,
            &[s, r],
            "the superoperator must be n²×n² for a state of shape n²×1",
        ))
    }
}

/// The expectation value of a superoperator: `Σᵢ (S·vec ρ)[i·(n+1)]`, only the rows of `S`
/// that land on the diagonal are used.
///
/// # Errors
/// [`Error::Shape`] unless `ρ` is n²×1 and `S` is n²×n².
///
/// ```
/// use polymat::{Csr, Dense, c64};
/// // The identity superoperator on a 2×2 ρ gives Tr ρ.
/// let rho = Dense::from_col_major(4, 1, &[0.25, 0.0, 0.0, 0.75].map(|x| c64::new(x, 0.0))).unwrap();
/// let e = polymat::expect_super(&Csr::identity(4).into(), &rho.into()).unwrap();
/// assert_eq!(e, c64::new(1.0, 0.0));
/// ```
#[inline]
pub fn expect_super(s: &Data, rho: &Data) -> Result<c64> {
    EXPECT_SUPER.call(&[s, rho], Out::Auto, &())
}

/// Dense kernel of [`expect_super`]. O(n³) = O(n · n²).
///
/// # Errors
/// [`Error::Shape`] as [`expect_super`].
pub fn expect_super_dense(s: &Dense, rho: &Dense) -> Result<c64> {
    let n = super_shapes("expect_super", s.shape(), rho.shape())?;
    let r = rho.col_major("expect_super")?.col_as_slice(0);
    let mat = s.as_ref();
    let mut sum = ZERO;
    for (k, &rk) in r.iter().enumerate() {
        if rk != ZERO {
            for i in 0..n {
                sum += mat[(i * (n + 1), k)] * rk;
            }
        }
    }
    Ok(sum)
}

/// Csr·Dense kernel of [`expect_super`]. O(stored entries of the n diagonal rows).
///
/// # Errors
/// [`Error::Shape`] as [`expect_super`].
pub fn expect_super_csr_dense(s: &Csr, rho: &Dense) -> Result<c64> {
    let n = super_shapes("expect_super", s.shape(), rho.shape())?;
    let r = rho.col_major("expect_super")?.col_as_slice(0);
    let (p, idx, val) = (s.indptr(), s.indices(), s.data());
    Ok((0..n)
        .map(|i| {
            let row = i * (n + 1);
            (p[row]..p[row + 1])
                .map(|k| val[k] * r[idx[k]])
                .sum::<c64>()
        })
        .sum())
}

/// Csr·Csr kernel of [`expect_super`]: sparse dot products of the diagonal rows with `ρ`.
///
/// # Errors
/// [`Error::Shape`] as [`expect_super`].
pub fn expect_super_csr(s: &Csr, rho: &Csr) -> Result<c64> {
    let n = super_shapes("expect_super", s.shape(), rho.shape())?;
    let (p, idx, val) = (s.indptr(), s.indices(), s.data());
    let (rp, rv) = (rho.indptr(), rho.data());
    Ok((0..n)
        .map(|i| {
            let row = i * (n + 1);
            (p[row]..p[row + 1])
                .map(|k| {
                    let c = idx[k];
                    val[k] * rv[rp[c]..rp[c + 1]].iter().sum::<c64>()
                })
                .sum::<c64>()
        })
        .sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ⟨ψ|O|ψ⟩ on a ket on both sides of the stack buffers' 32 rows and columns and of the
    /// register kernel's 12 rows (odd sizes through its padded copy), in both layouts of O:
    /// the definition to rounding.
    #[test]
    fn ket_expectations_around_the_stack_buffers() {
        let v = |i: usize, j: usize| {
            let h = (i * 37 + j * 101) % 89;
            c64::new(h as f64 / 11.0 - 4.0, (h % 7) as f64 - 3.0)
        };
        for n in [1, 2, 3, 7, 10, 11, 12, 13, 31, 32, 33, 70] {
            let o = Dense::from_fn(n, n, v);
            let psi = Dense::from_fn(n, 1, |i, _| v(i, 7));
            let want: c64 = (0..n)
                .flat_map(|i| (0..n).map(move |j| (i, j)))
                .map(|(i, j)| psi.get(i, 0).conj() * o.get(i, j) * psi.get(j, 0))
                .sum();
            for o in [
                o.clone(),
                o.clone()
                    .into_layout(crate::storage::Layout::RowMajor)
                    .unwrap(),
            ] {
                let got = expect_dense(&o, &psi).unwrap();
                assert!(
                    (got - want).norm() <= 1e-11 * want.norm().max(1.0),
                    "n = {n}"
                );
            }
        }
    }

    #[test]
    fn exact_sqrt_finds_squares_only() {
        assert_eq!(exact_sqrt(0), Some(0));
        assert_eq!(exact_sqrt(1), Some(1));
        assert_eq!(exact_sqrt(10_000), Some(100));
        assert_eq!(exact_sqrt(10_001), None);
        assert_eq!(exact_sqrt(3), None);
    }

    #[test]
    fn bad_shapes_are_errors() {
        let v: Data = Dense::zeros(3, 1).into();
        assert!(matches!(trace_oper_ket(&v), Err(Error::Shape { .. })));
        let s: Data = Dense::zeros(4, 4).into();
        let r: Data = Dense::zeros(9, 1).into();
        assert!(matches!(expect_super(&s, &r), Err(Error::Shape { .. })));
    }
}
