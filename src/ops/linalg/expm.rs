//! The matrix exponential, by Padé approximation with scaling and squaring (Higham 2005).

use std::mem::MaybeUninit;
use std::sync::LazyLock;

use faer::Mat;

use faer::Accum;
use faer::linalg::matmul::matmul as faer_matmul;

use super::components::{by_components, or_whole};
use crate::convert::builtin::csr_to_dense;
use crate::dispatch::checks::via_dense;
use crate::dispatch::{Dispatcher, Out, Specialisation};
use crate::engine;
use crate::error::{Error, Result};
use crate::gpu::{GpuCsr, GpuDense};
use crate::scalar::c64;
use crate::simd::gemm;
use crate::storage::scratch::{self, Spare};
use crate::storage::{Csr, Data, Dense, alloc};

/// `exp(a)` for square `a`. Kernels: Dense → Dense, Csr → Csr, Csr → Dense, GpuDense →
/// GpuDense, GpuCsr → GpuDense (densified on the GPU).
///
/// Csr → Csr ([`expm_csr`]) splits the matrix into the connected components of its graph and
/// runs the dense algorithm on each distinct block, so a diagonal operator or a local one on a
/// large space (`σx ⊗ I`) keeps a sparse exponential; a connected matrix (whose exponential
/// is in general dense) runs it on the whole matrix, up to the dense limit. Csr → Dense runs
/// it on the whole matrix. A sparse Padé evaluation, scipy's, is two orders of magnitude
/// slower at small sizes (QuTiP measures 165× at n = 10) and far slower on large block
/// operators (docs/benchmarks.md). Only the nonzero entries of a Csr result are kept.
pub static EXPM: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("expm", 1)
        .result_shape(crate::dispatch::checks::first_shape)
        .check_square()
        .unary("expm_dense", |a: &Dense, _: &()| expm_dense(a))
        .specialisation(via_dense(
            "expm_csr_dense",
            csr_to_dense,
            |d: &Dense, _: &()| expm_dense(d),
        ))
        .unary("expm_csr", |a: &Csr, _: &()| expm_csr(a))
        .unary("expm_gpu", |a: &GpuDense, _: &()| a.expm())
        .specialisation(
            // GpuCsr densifies on the GPU (up to the dense limit) and runs the GPU kernel.
            Specialisation::unary("expm_gpucsr", |a: &GpuCsr, _: &()| a.to_gpu_dense()?.expm())
                .converts_internally_to::<GpuDense>(),
        )
        .builtin()
});

/// The matrix exponential.
///
/// # Errors
/// [`Error::Shape`] if `a` is not square; [`Error::Numerical`] if it has non-finite entries;
/// [`Error::TooLarge`] where a Dense result is over the dense limit, or, dense, where the
/// algorithm's workspace (about 12 matrices of `a`'s shape) does not fit in the memory
/// available now.
///
/// ```
/// use polymat::{Csr, Dense, Out, c64};
/// // exp(iθσx) = cos θ·I + i sin θ·σx
/// let t = 0.3;
/// let sx = Csr::from_triplets((2, 2), &[0, 1], &[1, 0], &[c64::new(0.0, t); 2]).unwrap();
/// let u = polymat::ops::expm(&sx.into(), Out::Dense).unwrap();
/// let u = u.downcast_ref::<Dense>().unwrap();
/// assert!((u.get(0, 0) - c64::new(t.cos(), 0.0)).norm() < 1e-15);
/// assert!((u.get(1, 0) - c64::new(0.0, t.sin())).norm() < 1e-15);
/// ```
#[inline]
pub fn expm(a: &Data, out: Out) -> Result<Data> {
    EXPM.call(&[a], out, &())
}

/// The n × n matrices `expm_dense` may hold at once, counted for the check before it starts.
const WORKSPACE: u32 = 12;

/// θ_m of Higham (2005), table 2.3: the largest ‖A‖₁ for which the degree-m Padé approximant
/// is accurate to double precision.
const THETA: [(usize, f64); 5] = [
    (3, 1.495_585_217_958_292e-2),
    (5, 2.539_398_330_063_23e-1),
    (7, 9.504_178_996_162_932e-1),
    (9, 2.097_847_961_257_068),
    (13, 5.371_920_351_148_152),
];

/// Padé coefficients b₀ … b_m for each degree.
fn coefficients(m: usize) -> &'static [f64] {
    match m {
        3 => &[120.0, 60.0, 12.0, 1.0],
        5 => &[30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0],
        7 => &[
            17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0,
        ],
        9 => &[
            17643225600.0,
            8821612800.0,
            2075673600.0,
            302702400.0,
            30270240.0,
            2162160.0,
            110880.0,
            3960.0,
            90.0,
            1.0,
        ],
        _ => &[
            64764752532480000.0,
            32382376266240000.0,
            7771770303897600.0,
            1187353796428800.0,
            129060195264000.0,
            10559470521600.0,
            670442572800.0,
            33522128640.0,
            1323241920.0,
            40840800.0,
            960960.0,
            16380.0,
            182.0,
            1.0,
        ],
    }
}

/// `a·b` for square matrices of at most [`gemm::MAX_ROWS`] rows by the register kernel that
/// `matmul_dense` uses at these sizes (faer's gemm is sized for large matrices: at 10 × 10 its
/// products were a fifth of `expm`'s instructions). `None` for larger matrices or a CPU
/// without AVX2 and FMA.
fn mul_small(a: &Mat<c64>, b: &Mat<c64>) -> Option<Spare<c64>> {
    let n = a.nrows();
    if n > gemm::MAX_ROWS {
        return None;
    }
    let mut buf = [MaybeUninit::uninit(); gemm::MAX_ROWS * gemm::MAX_INNER];
    let ap = gemm::Operand::of(a.as_ref(), &mut buf, |k| a.col_as_slice(k))?;
    // SAFETY: every column is written whole below, before the result is read.
    let mut out = unsafe { scratch::unfilled::<c64>("expm", n, n) }.ok()?;
    let bs = usize::try_from(b.col_stride()).ok()?;
    let cs = usize::try_from(out.col_stride()).ok()?;
    // SAFETY: b is n × n with unit row stride (an owned Mat) and column stride bs, so column
    // j's n entries (A's column count) lie at j·bs; `out` is n × n at column stride cs ≥ n,
    // fresh, overlapping neither operand. `columns` writes all n rows of every column (one
    // call, on the AVX-512 kernel where the CPU has it).
    unsafe { gemm::columns(&ap, (b.as_ptr(), bs), (out.as_ptr_mut(), cs), n) };
    Some(out)
}

/// `c₀·I + Σ cₖ·Mₖ`.
fn lincomb(n: usize, identity: f64, terms: &[(f64, &Mat<c64>)]) -> Result<Spare<c64>> {
    // SAFETY: each column is zero-filled below before anything reads or adds to it.
    let mut out = unsafe { scratch::unfilled::<c64>("expm", n, n) }?;
    for j in 0..n {
        let col = out.col_as_slice_mut(j);
        col.fill(c64::new(0.0, 0.0));
        for &(c, m) in terms {
            for (o, x) in col.iter_mut().zip(m.col_as_slice(j)) {
                *o += c * x;
            }
        }
        col[j] += identity;
    }
    Ok(out)
}

/// `a·b` for square matrices of the same size, straight into a new buffer.
fn mul(a: &Mat<c64>, b: &Mat<c64>) -> Result<Spare<c64>> {
    if let Some(out) = mul_small(a, b) {
        return Ok(out);
    }
    let n = a.nrows();
    // SAFETY: not filled: `gemm_3m` writes all of `out` when it returns true and nothing
    // otherwise, and faer's product under `Accum::Replace` writes every entry without reading
    // any.
    let mut out = unsafe { scratch::unfilled::<c64>("expm", n, n) }?;
    let work = n.saturating_mul(n).saturating_mul(n);
    engine::product(work, |par| {
        // Large products: three real ones where the values allow (`gemm3m`).
        if work >= super::super::matmul::gemm3m::MIN_WORK
            && super::super::matmul::gemm3m::gemm_3m(out.as_mut(), a.as_ref(), b.as_ref(), par)
        {
            return;
        }
        faer_matmul(
            out.as_mut(),
            Accum::Replace,
            a.as_ref(),
            b.as_ref(),
            c64::new(1.0, 0.0),
            par,
        );
    });
    Ok(out)
}

/// Dense `exp(a)`: degree 3–13 Padé with scaling and squaring. O(n³ (6 + s)) for s squarings.
///
/// # Errors
/// [`Error::Shape`] if `a` is not square; [`Error::Numerical`] for non-finite input;
/// [`Error::TooLarge`] if the workspace (about 12 matrices of `a`'s shape) does not fit in the
/// memory available now.
pub fn expm_dense(a: &Dense) -> Result<Dense> {
    crate::shape::square("expm", a.shape())?;
    let n = a.shape().0;
    if n == 0 {
        return Dense::zeros_for("expm", 0, 0);
    }
    // The scaled copy, A², A⁴, A⁶, the Padé sums and their products, the LU's factor and
    // solution, as many as are held at once (the intermediates are checked one by one as
    // well, but faer's LU scratch and the copy are not).
    alloc::check_workspace("expm", (n, n), WORKSPACE)?;
    let finite = a.entries().all(|x| x.is_finite());
    if !finite {
        return Err(non_finite());
    }
    let norm = super::super::norm::one_dense(a);
    if !norm.is_finite() {
        return Err(Error::Numerical {
            op: "expm".into(),
            reason: "the 1-norm of the matrix overflows: exp(a) is not representable".into(),
        });
    }
    let (m, s) = match THETA.iter().find(|(_, t)| norm <= *t) {
        Some(&(m, _)) => (m, 0),
        None => (13, (norm / THETA[4].1).log2().ceil().max(0.0) as i32),
    };
    let scale = 0.5f64.powi(s);
    // The intermediates are the thread's spare matrices (`storage::scratch`): at n = 100 they
    // are a dozen 160 KB blocks that glibc returned to the kernel after every call.
    let a: Mat<c64> = Mat::from_fn(n, n, |i, j| a.get(i, j) * scale);
    let b = coefficients(m);
    let a2 = mul(&a, &a)?;
    let (u_inner, v) = if m == 13 {
        let a4 = mul(&a2, &a2)?;
        let a6 = mul(&a4, &a2)?;
        // The odd part's polynomial (k = 1, times A below) and the even part (k = 0):
        // b[k] + b[k+2]·A² + b[k+4]·A⁴ + b[k+6]·A⁶ + A⁶·(b[k+8]·A² + b[k+10]·A⁴ + b[k+12]·A⁶).
        let half = |k: usize| {
            let z = lincomb(
                n,
                0.0,
                &[(b[k + 12], &a6), (b[k + 10], &a4), (b[k + 8], &a2)],
            )?;
            let a6z = mul(&a6, &z)?;
            lincomb(
                n,
                b[k],
                &[
                    (1.0, &a6z),
                    (b[k + 6], &a6),
                    (b[k + 4], &a4),
                    (b[k + 2], &a2),
                ],
            )
        };
        (half(1)?, half(0)?)
    } else {
        // Powers A², A⁴, ... up to A^(m-1).
        let mut powers = vec![a2];
        while powers.len() < (m - 1) / 2 {
            let next = mul(&powers[powers.len() - 1], &powers[0])?;
            powers.push(next);
        }
        let odd: Vec<(f64, &Mat<c64>)> = powers
            .iter()
            .enumerate()
            .map(|(k, p)| (b[2 * k + 3], &**p))
            .collect();
        let even: Vec<(f64, &Mat<c64>)> = powers
            .iter()
            .enumerate()
            .map(|(k, p)| (b[2 * k + 2], &**p))
            .collect();
        (lincomb(n, b[1], &odd)?, lincomb(n, b[0], &even)?)
    };
    let u = mul(&a, &u_inner)?;
    let p = lincomb(n, 0.0, &[(1.0, &v), (1.0, &u)])?;
    let mut q = lincomb(n, 0.0, &[(1.0, &v), (-1.0, &u)])?;
    let mut r = lu_solve(&mut q, p)?;
    if !all_finite(&r) {
        return Err(Error::Numerical {
            op: "expm".into(),
            reason: "the Padé denominator is singular".into(),
        });
    }
    for _ in 0..s {
        r = mul(&r, &r)?;
        // An overflow stays: every later square of an infinite entry is infinite or NaN. So
        // the squarings stop at the first one (O(n²) a check beside the O(n³) product): with
        // ‖a‖₁ = 10³⁰⁰, s is 995 and the result overflows after about ten of them.
        if !all_finite(&r) {
            break;
        }
    }
    if !all_finite(&r) {
        return Err(overflow(norm));
    }
    Ok(Dense::new(r.into_inner()))
}

/// The error for an input with a NaN or infinite entry.
fn non_finite() -> Error {
    Error::Numerical {
        op: "expm".into(),
        reason: "the matrix has non-finite entries (NaN or infinity)".into(),
    }
}

/// The error for a result beyond the double range, `norm` the input's 1-norm.
fn overflow(norm: f64) -> Error {
    Error::Numerical {
        op: "expm".into(),
        reason: format!(
            "exp(a) overflows: the result has entries beyond the double range \
             (‖a‖₁ = {norm:.3e})"
        ),
    }
}

/// `q⁻¹·p` by faer's LU with partial pivoting, factored in place and solved with the same
/// factor, with the engine's parallelism for their n³ multiply-adds (serial below the product
/// threshold or on one thread). faer's `partial_piv_lu().solve()` it replaced copied the
/// factor into separate L and U, allocated its result and took faer's global parallelism:
/// `expm` of the anchor's input, one thread, n = 10 6.2 → 5.45 µs, n = 100 1.13 → 1.09 ms;
/// `profile_op expm dense 100` on two threads 1.81–1.86 → 1.35–1.36 ms (docs/benchmarks.md).
///
/// # Errors
/// [`Error::TooLarge`] if faer's scratch cannot be allocated.
fn lu_solve<P: std::ops::DerefMut<Target = Mat<c64>>>(q: &mut Mat<c64>, mut p: P) -> Result<P> {
    use faer::dyn_stack::{MemBuffer, MemStack};
    use faer::linalg::lu::partial_pivoting::{factor, solve};
    let n = q.nrows();
    let work = n.saturating_mul(n).saturating_mul(n);
    engine::product(work, |par| {
        let (mut fwd, mut bwd) = (vec![0usize; n], vec![0usize; n]);
        let req = factor::lu_in_place_scratch::<usize, c64>(n, n, par, Default::default()).or(
            solve::solve_in_place_scratch::<usize, c64>(n, p.ncols(), par),
        );
        let mut mem = MemBuffer::try_new(req).map_err(|_| Error::TooLarge {
            op: "expm".to_owned(),
            shape: (n, n),
            bytes: req.size_bytes() as u128,
            limit: None,
            reason: "the LU's scratch could not be allocated".to_owned(),
        })?;
        let stack = MemStack::new(&mut mem);
        let (_, perm) = factor::lu_in_place(
            q.as_mut(),
            &mut fwd,
            &mut bwd,
            par,
            stack,
            Default::default(),
        );
        // The factor holds L strictly below its diagonal (unit diagonal implied) and U on and
        // above it; each triangular solve reads only its own triangle.
        solve::solve_in_place(q.as_ref(), q.as_ref(), perm, p.as_mut(), par, stack);
        Ok(p)
    })
}

/// Whether every entry of `m` has finite real and imaginary parts.
fn all_finite(m: &Mat<c64>) -> bool {
    (0..m.ncols()).all(|j| m.col_as_slice(j).iter().all(|x| x.is_finite()))
}

/// Csr `exp(a)`, sparse: block by block over the connected components of `a`'s graph (indices
/// linked by a chain of nonzero entries), each block by the dense algorithm, when `a` has
/// more than one; through the dense algorithm on the whole matrix when it is connected. Only
/// the nonzero entries of the result are kept either way.
///
/// A diagonal matrix, or a local operator on a large space (`σx ⊗ I`), has many small
/// components, and its exponential is formed without densifying: O(nnz + n) to find them,
/// and each distinct block exponentiated once (see `ops/components.rs`).
///
/// # Errors
/// [`Error::Shape`] if `a` is not square; [`Error::Numerical`] for a non-finite entry or an
/// overflowing result; [`Error::TooLarge`] where a block (the whole matrix when connected)
/// passes the dense limit, or the result does not fit in memory.
///
/// ```
/// use polymat::{Csr, c64};
/// use polymat::ops::expm::expm_csr;
/// // exp(iθ σx ⊗ I) on 2 × 2¹⁸: 2¹⁸ blocks of 2 × 2, one exponential, and a Csr result.
/// let t = 0.3;
/// let half = 1usize << 18;
/// let rows: Vec<usize> = (0..2 * half).collect();
/// let cols: Vec<usize> = (0..2 * half).map(|i| (i + half) % (2 * half)).collect();
/// let vals = vec![c64::new(0.0, t); 2 * half];
/// let a = Csr::from_triplets((2 * half, 2 * half), &rows, &cols, &vals).unwrap();
/// let u = expm_csr(&a).unwrap();
/// assert_eq!(u.nnz(), 4 * half);
/// assert!((u.get(0, 0) - c64::new(t.cos(), 0.0)).norm() < 1e-15);
/// assert!((u.get(0, half) - c64::new(0.0, t.sin())).norm() < 1e-15);
/// ```
pub fn expm_csr(a: &Csr) -> Result<Csr> {
    crate::shape::square("expm", a.shape())?;
    or_whole(expm_csr_blocks(a)?, a, expm_dense)
}

/// [`expm_csr`] block by block ([`by_components`]), `None` for a connected matrix.
///
/// # Errors
/// As [`expm_csr`].
fn expm_csr_blocks(a: &Csr) -> Result<Option<Csr>> {
    if !a.data().iter().all(|z| z.is_finite()) {
        return Err(non_finite());
    }
    by_components(a, "expm", expm_dense, |_, d| {
        let e = d.exp();
        if e.is_finite() {
            Ok(e)
        } else {
            Err(overflow(d.norm()))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::builtin::dense_to_csr;
    use crate::scalar::ZERO;

    fn cx(re: f64, im: f64) -> c64 {
        c64::new(re, im)
    }

    /// The dense algorithm on the whole matrix, its zeros dropped: what `expm_csr` returned
    /// before it split the matrix.
    fn whole(a: &Csr) -> Csr {
        dense_to_csr(&expm_dense(&csr_to_dense(a).unwrap()).unwrap()).unwrap()
    }

    /// Entry by entry within `tol` of the largest entry. The stored patterns may differ by
    /// entries at that rounding level: an entry that is zero in exact arithmetic comes out
    /// as 0 in one evaluation order and as 10⁻¹² next to entries of 10⁷ in another.
    fn assert_close(got: &Csr, want: &Csr, tol: f64) {
        let scale = want.data().iter().fold(1.0f64, |m, z| m.max(z.norm()));
        let n = want.shape().0;
        for i in 0..n {
            for j in 0..n {
                let (g, w) = (got.get(i, j), want.get(i, j));
                assert!((g - w).norm() <= tol * scale, "({i}, {j}): {g} against {w}");
            }
        }
    }

    /// Blocks of 1 to 5 rows on a shuffled diagonal, with norms from 10⁻³ to 40 (so some
    /// blocks are scaled and squared), empty rows, and stored zeros that point into other
    /// blocks: the blocks' exponentials equal the whole matrix's to rounding, with no entry
    /// between two blocks.
    #[test]
    fn blocks_agree_with_the_dense_algorithm() {
        let mut next = crate::testing::xorshift(0x9e37_79b9_7f4a_7c15u64);
        for (round, scale) in [1e-3, 0.3, 2.0, 40.0]
            .into_iter()
            .cycle()
            .take(24)
            .enumerate()
        {
            // Block sizes, then a permutation of the indices.
            let mut sizes = Vec::new();
            let mut n = 0;
            while n < 3 + round * 2 {
                let s = 1 + (next() % 5) as usize;
                sizes.push(s);
                n += s;
            }
            let mut perm: Vec<usize> = (0..n).collect();
            for k in (1..n).rev() {
                perm.swap(k, (next() % (k as u64 + 1)) as usize);
            }
            let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
            let mut at = 0;
            for &s in &sizes {
                for i in 0..s {
                    for j in 0..s {
                        // About a third of the block's entries are absent; an empty block of
                        // one row leaves its row empty.
                        if next().is_multiple_of(3) {
                            continue;
                        }
                        let x = |v: u64| (v % 2001) as f64 / 1000.0 - 1.0;
                        rows.push(perm[at + i]);
                        cols.push(perm[at + j]);
                        vals.push(cx(x(next()), x(next())) * (scale / s as f64));
                    }
                }
                at += s;
            }
            // A stored zero between the first and the last block.
            rows.push(perm[0]);
            cols.push(perm[n - 1]);
            vals.push(ZERO);
            let a = Csr::from_triplets((n, n), &rows, &cols, &vals).unwrap();
            let got = match expm_csr_blocks(&a).unwrap() {
                Some(e) => e,
                None => {
                    // Connected after all (one block): the caller's dense path.
                    assert_eq!(sizes.len(), 1, "round {round}");
                    continue;
                }
            };
            // No entry between two of the blocks it was built from.
            let block: Vec<usize> = sizes
                .iter()
                .enumerate()
                .flat_map(|(b, &s)| std::iter::repeat_n(b, s))
                .collect();
            let mut of = vec![0; n];
            for (k, &p) in perm.iter().enumerate() {
                of[p] = block[k];
            }
            for i in 0..n {
                for &j in &got.indices()[got.indptr()[i]..got.indptr()[i + 1]] {
                    assert_eq!(of[i], of[j], "round {round}: entry ({i}, {j})");
                }
            }
            assert_close(&got, &whole(&a), 1e-13);
        }
    }

    /// One block repeated (σx ⊗ I₃₂, blocks of two rows): exponentiated once, every copy the
    /// same bits; a diagonal matrix takes the scalar path, with exp(d) below the double range
    /// left out and an empty row given 1.
    #[test]
    fn repeated_blocks_and_diagonals() {
        let n = 64;
        let rows: Vec<usize> = (0..n).collect();
        let cols: Vec<usize> = (0..n).map(|i| (i + n / 2) % n).collect();
        let a = Csr::from_triplets((n, n), &rows, &cols, &vec![cx(0.0, 0.7); n]).unwrap();
        let e = expm_csr_blocks(&a).unwrap().unwrap();
        assert_eq!(e.nnz(), 2 * n);
        for i in 0..n {
            assert_eq!(e.get(i, i), e.get(0, 0));
            assert_eq!(e.get(i, (i + n / 2) % n), e.get(0, n / 2));
        }
        assert!((e.get(0, 0) - cx(0.7f64.cos(), 0.0)).norm() < 1e-15);
        assert!((e.get(0, n / 2) - cx(0.0, 0.7f64.sin())).norm() < 1e-15);
        assert_close(&e, &whole(&a), 1e-14);

        // Row 1 empty, row 2 a stored zero, row 3 under the double range.
        let d = Csr::from_triplets(
            (4, 4),
            &[0, 2, 3],
            &[0, 2, 3],
            &[cx(0.5, 1.0), ZERO, cx(-800.0, 0.0)],
        )
        .unwrap();
        let e = expm_csr_blocks(&d).unwrap().unwrap();
        assert_eq!(e.indices(), &[0, 1, 2]);
        assert_eq!(e.get(1, 1), cx(1.0, 0.0));
        assert_eq!(e.get(2, 2), cx(1.0, 0.0));
        assert_eq!(e.get(0, 0), cx(0.5, 1.0).exp());
    }

    /// A connected matrix is left to the caller; non-finite entries and overflowing blocks
    /// are the dense algorithm's errors.
    #[test]
    fn connected_matrices_and_errors() {
        let one = cx(1.0, 0.0);
        let chain = Csr::from_triplets((3, 3), &[0, 1], &[1, 2], &[one, one]).unwrap();
        assert!(expm_csr_blocks(&chain).unwrap().is_none());
        let single = Csr::from_triplets((1, 1), &[0], &[0], &[one]).unwrap();
        assert!(expm_csr_blocks(&single).unwrap().is_none());

        let nan = Csr::from_triplets((3, 3), &[2], &[2], &[cx(f64::NAN, 0.0)]).unwrap();
        let e = expm_csr_blocks(&nan).unwrap_err().to_string();
        assert!(e.contains("non-finite"), "{e}");
        let big = Csr::from_triplets((3, 3), &[0, 2], &[0, 2], &[one, cx(800.0, 0.0)]).unwrap();
        let e = expm_csr_blocks(&big).unwrap_err().to_string();
        assert!(e.contains("overflows"), "{e}");
        let block = Csr::from_triplets(
            (3, 3),
            &[0, 1, 2],
            &[1, 0, 2],
            &[cx(800.0, 0.0), cx(800.0, 0.0), one],
        )
        .unwrap();
        let e = expm_csr_blocks(&block).unwrap_err().to_string();
        assert!(e.contains("overflows"), "{e}");
    }

    /// The Padé solve `q⁻¹·p` through faer's low-level LU: `q·x = p` to rounding, for a `q`
    /// whose zero diagonal needs row exchanges, at sizes on both sides of the engine's product
    /// threshold.
    #[test]
    fn lu_solve_solves() {
        for n in [1usize, 7, 40, 140] {
            let q = Mat::<c64>::from_fn(n, n, |i, j| {
                if i == j {
                    c64::new(0.0, 0.0)
                } else {
                    c64::new(
                        ((i * 7 + j * 3) % 11) as f64 - 5.0,
                        (i + 2 * j) as f64 / n as f64,
                    )
                }
            });
            // n = 1 has no row to exchange with: a non-zero 1 × 1.
            let q = if n == 1 {
                Mat::from_fn(1, 1, |_, _| c64::new(2.0, -1.0))
            } else {
                q
            };
            let p = Mat::<c64>::from_fn(n, 3, |i, j| c64::new(i as f64 - j as f64, 1.0));
            // Through a spare matrix (what `expm_dense` passes), holding stale values first.
            // SAFETY: every entry is written (NaN) before it is read.
            let mut spare = unsafe { scratch::unfilled::<c64>("t", n, 3) }.unwrap();
            spare.fill(c64::new(f64::NAN, 0.0));
            spare.copy_from(&p);
            let x = lu_solve(&mut q.clone(), spare).unwrap();
            let mut back = Mat::<c64>::zeros(n, 3);
            faer_matmul(
                back.as_mut(),
                Accum::Replace,
                q.as_ref(),
                x.as_ref(),
                c64::new(1.0, 0.0),
                faer::Par::Seq,
            );
            let err = (0..3)
                .flat_map(|j| (0..n).map(move |i| (i, j)))
                .map(|(i, j)| (back[(i, j)] - p[(i, j)]).norm())
                .fold(0.0, f64::max);
            assert!(err < 1e-9, "n = {n}: {err}");
        }
    }

    /// A result that overflows early in a long series of squarings ends them there: with
    /// ‖a‖₁ ≈ 10³⁰⁰ (995 squarings), 400 × 400, the error comes after about ten products, not
    /// 995. Timed against one product on the same machine, so that the bound holds on a slow
    /// or emulated CPU too.
    #[test]
    fn an_overflow_ends_the_squarings() {
        let n = 400;
        let a = Dense::from_fn(n, n, |i, j| {
            c64::new(if i == j { 1e300 / n as f64 } else { 1e280 }, 0.0)
        });
        let small = Dense::from_fn(n, n, |i, j| c64::new(((i + j) % 3) as f64, 0.5));
        let product = (0..3)
            .map(|_| {
                let t = std::time::Instant::now();
                std::hint::black_box(
                    super::super::super::matmul::matmul_dense(&small, &small).unwrap(),
                );
                t.elapsed()
            })
            .min()
            .unwrap_or_default();
        let start = std::time::Instant::now();
        let e = expm_dense(&a).unwrap_err();
        assert!(e.to_string().contains("overflows"), "{e}");
        let took = start.elapsed();
        assert!(
            took < product * 100,
            "{took:?} against {product:?} a product"
        );
    }

    /// The register-kernel product agrees with faer's for every size it takes (odd sizes
    /// through the padded copy, even ones read in place) and declines above twelve rows.
    #[test]
    fn small_products_match_faer() {
        let value = |i: usize, j: usize, s: f64| {
            c64::new(
                ((i * 7 + j * 3) % 11) as f64 * s - 0.4,
                ((i + 2 * j) % 5) as f64 * 0.3,
            )
        };
        for n in 1..=13 {
            let a = Mat::from_fn(n, n, |i, j| value(i, j, 0.25));
            let b = Mat::from_fn(n, n, |i, j| value(j, i, -0.5));
            let mut want = Mat::<c64>::zeros(n, n);
            faer_matmul(
                want.as_mut(),
                Accum::Replace,
                a.as_ref(),
                b.as_ref(),
                c64::new(1.0, 0.0),
                faer::Par::Seq,
            );
            match mul_small(&a, &b) {
                Some(got) => {
                    assert!(n <= gemm::MAX_ROWS);
                    for j in 0..n {
                        for i in 0..n {
                            let (g, w) = (got[(i, j)], want[(i, j)]);
                            assert!((g - w).norm() <= 1e-13 * (1.0 + w.norm()), "n = {n}");
                        }
                    }
                }
                None => assert!(n > gemm::MAX_ROWS || !crate::simd::avx2()),
            }
        }
    }
}
