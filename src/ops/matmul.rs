//! Matrix products: `matmul` (a·b) and `matmul_dag` (a·b†).

use std::sync::LazyLock;

use faer::Accum;
use faer::linalg::matmul::matmul as faer_matmul;

use super::transpose::transpose_csr;
use crate::dispatch::{Dispatcher, Out};
use crate::engine::{self, Family};
use crate::error::{Error, Result};
use crate::gpu::{GpuCsr, GpuDense};
use crate::scalar::c64;
use crate::scalar::{ONE, ZERO};
use crate::shape::{indptr_len, matmul_shapes};
use crate::storage::{Csr, Data, Dense, Dia, Layout, alloc};

/// `a·b`. Kernels: Dense·Dense → Dense, Csr·Csr → Csr, Csr·Dense → Dense.
///
/// Dense·Csr has no kernel of its own: it converts the Csr operand (see
/// `examples/custom_specialisation.rs`, which adds one).
pub static MATMUL: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("matmul", 2)
        .check(|op, args, _| matmul_shapes(op, args[0].shape(), args[1].shape()))
        .binary("matmul_dense", |a: &Dense, b: &Dense, _: &()| {
            matmul_dense(a, b)
        })
        .binary("matmul_csr", |a: &Csr, b: &Csr, _: &()| matmul_csr(a, b))
        .binary("matmul_csr_dense", |a: &Csr, b: &Dense, _: &()| {
            matmul_csr_dense(a, b)
        })
        .binary("matmul_dia_dense", |a: &Dia, b: &Dense, _: &()| {
            super::dia::matmul_dia_dense(a, b)
        })
        .binary("matmul_dense_dia", |a: &Dense, b: &Dia, _: &()| {
            super::dia::matmul_dense_dia(a, b)
        })
        .binary("matmul_dia", |a: &Dia, b: &Dia, _: &()| {
            super::dia::matmul_dia(a, b)
        })
        .binary("matmul_gpu", |a: &GpuDense, b: &GpuDense, _: &()| {
            a.matmul(b)
        })
        .binary("matmul_gpucsr_gpu", |a: &GpuCsr, b: &GpuDense, _: &()| {
            matmul_gpucsr_dense(a, b)
        })
        .binary("matmul_gpucsr_host", |a: &GpuCsr, b: &GpuCsr, _: &()| {
            matmul_gpucsr(a, b)
        })
        .builtin()
});

/// The matrix product `a·b`.
///
/// # Errors
/// [`Error::Shape`] if `a`'s columns do not match `b`'s rows.
///
/// ```
/// use polymat::{Csr, Dense, Out, c64};
/// let x = Csr::from_triplets((2, 2), &[0, 1], &[1, 0], &[c64::new(1.0, 0.0); 2]).unwrap();
/// let y = Dense::from_fn(2, 1, |i, _| c64::new(i as f64 + 1.0, 0.0));
/// let z = polymat::matmul(&x.into(), &y.into(), Out::Auto).unwrap();
/// let z = z.downcast_ref::<Dense>().unwrap();
/// assert_eq!((z.get(0, 0), z.get(1, 0)), (c64::new(2.0, 0.0), c64::new(1.0, 0.0)));
/// ```
pub fn matmul(a: &Data, b: &Data, out: Out) -> Result<Data> {
    MATMUL.call(&[a, b], out, &())
}

/// `a·b†`. Kernels: Dense, Csr.
pub static MATMUL_DAG: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("matmul_dag", 2)
        .check(|op, a, _| matmul_dag_shapes(op, a[0].shape(), a[1].shape()))
        .binary("matmul_dag_dense", |a: &Dense, b: &Dense, _: &()| {
            matmul_dag_dense(a, b)
        })
        .binary("matmul_dag_csr", |a: &Csr, b: &Csr, _: &()| {
            matmul_dag_csr(a, b)
        })
        .binary("matmul_dag_gpu", |a: &GpuDense, b: &GpuDense, _: &()| {
            a.matmul_dag(b)
        })
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

/// Dense·Dense with `faer`. O(mkn); parallel above the engine's threshold.
///
/// # Errors
/// [`Error::Shape`] on mismatched inner dimensions.
pub fn matmul_dense(a: &Dense, b: &Dense) -> Result<Dense> {
    matmul_shapes("matmul", a.shape(), b.shape())?;
    let (m, k) = a.shape();
    let n = b.shape().1;
    let mut out = Dense::zeros_for("matmul", m, n)?;
    if m == 0 || n == 0 || k == 0 {
        return Ok(out);
    }
    let work = m.saturating_mul(k).saturating_mul(n);
    if n == 1 && engine::workers(Family::Matmul, work) == 1 {
        // Matrix–vector: column axpys in row blocks (what BLAS zgemv does); faer's gemm with
        // one column ran at half the speed of OpenBLAS's zgemv here (docs/benchmarks.md).
        // Row-major: one dot product per contiguous row, yᵢ = conj(rowᵢ† · x̄) (faer's
        // row-major gemv ran at half that speed too).
        if a.layout() == Layout::RowMajor {
            let xbar: Vec<c64> = b.col(0).iter().map(|x| x.conj()).collect();
            for (i, y) in out.col_mut(0).iter_mut().enumerate() {
                *y = crate::simd::dot_conj(a.buffer_col(i), &xbar).conj();
            }
            return Ok(out);
        }
        let cols: Vec<&[c64]> = (0..k).map(|j| a.col(j)).collect();
        crate::simd::gemv_cols(out.col_mut(0), &cols, b.col(0));
        return Ok(out);
    }
    engine::product(work, |par| {
        faer_matmul(
            out.as_mat_mut(),
            Accum::Replace,
            a.as_ref(),
            b.as_ref(),
            ONE,
            par,
        );
    });
    Ok(out)
}

/// Csr·Csr → Csr (Gustavson's algorithm, one dense accumulator row). O(flops + m·(1 + n/4096)).
///
/// The output arrays are reserved once, at the product's multiply-add count (an upper bound on
/// its non-zeros). A two-level bitset marks each row's columns, and a row is emitted in column
/// order in one of three ways: a row whose columns span fewer 64-column words than it has
/// entries (banded or dense rows) scans that span; a longer spread-out row walks only the
/// non-zero words; a short spread-out row (≤ 64 entries) sorts its columns.
///
/// When the accumulator (one entry per column of `b`) would be much larger than the work, each
/// row's products are sorted and merged instead, so the memory is O(flops), whatever `n`.
/// Entries that come out exactly zero are not stored.
///
/// # Errors
/// [`Error::Shape`] on mismatched inner dimensions, [`Error::TooLarge`] if the result
/// cannot be allocated.
pub fn matmul_csr(a: &Csr, b: &Csr) -> Result<Csr> {
    const OP: &str = "matmul";
    matmul_shapes(OP, a.shape(), b.shape())?;
    let (m, _) = a.shape();
    let n = b.shape().1;
    let (pa, ia, da) = (a.indptr(), a.indices(), a.data());
    let (pb, ib, db) = (b.indptr(), b.indices(), b.data());
    let flops: usize = ia
        .iter()
        .fold(0usize, |s, &r| s.saturating_add(pb[r + 1] - pb[r]));
    let cap = flops.min(m.saturating_mul(n));
    let mut indptr = alloc::try_with_capacity(OP, (m, n), indptr_len(OP, (m, n))?)?;
    let mut indices = alloc::try_with_capacity(OP, (m, n), cap)?;
    let mut data = alloc::try_with_capacity(OP, (m, n), cap)?;
    indptr.push(0);
    if n > flops.saturating_add(m).saturating_mul(4).max(1 << 16) {
        matmul_csr_sorted(a, b, &mut indptr, &mut indices, &mut data);
        super::drop_exact_zeros(&mut indptr, &mut indices, &mut data);
        // SAFETY: one pointer per row after the leading 0; each row's columns were sorted and
        // merged (strictly increasing), and are columns of b (below n).
        return Ok(unsafe { Csr::from_parts_unchecked((m, n), indptr, indices, data) });
    }
    let mut acc = vec![ZERO; n];
    // Bit j of `seen` is set while column j is in the current row's pattern; bit w of `words`
    // while word w of `seen` is non-zero, so the emission visits only the non-zero words.
    let mut seen = vec![0u64; n.div_ceil(64)];
    let mut words = vec![0u64; seen.len().div_ceil(64)];
    let mut pattern: Vec<usize> = Vec::new();
    for i in 0..m {
        pattern.clear();
        let (mut lo, mut hi) = (usize::MAX, 0);
        for ka in pa[i]..pa[i + 1] {
            let (r, va) = (ia[ka], da[ka]);
            for (&j, &vb) in ib[pb[r]..pb[r + 1]].iter().zip(&db[pb[r]..pb[r + 1]]) {
                let (w, bit) = (j / 64, 1u64 << (j % 64));
                // SAFETY: j < n (the Csr invariant of b), so w < seen.len() = ⌈n/64⌉ and
                // w/64 < words.len().
                let (s, a) = unsafe { (seen.get_unchecked_mut(w), acc.get_unchecked_mut(j)) };
                if *s & bit == 0 {
                    *s |= bit;
                    *a = va * vb;
                    // SAFETY: as above.
                    unsafe { *words.get_unchecked_mut(w / 64) |= 1 << (w % 64) };
                    pattern.push(j);
                    lo = lo.min(w);
                    hi = hi.max(w);
                } else {
                    *a += va * vb;
                }
            }
        }
        let len = pattern.len();
        if len == 0 {
            indptr.push(indices.len());
            continue;
        }
        if hi - lo < len {
            // A narrow span (banded rows, or dense ones): scan its words, clearing them.
            for (w, word) in seen[lo..=hi].iter_mut().enumerate() {
                emit_word(lo + w, std::mem::take(word), &acc, &mut indices, &mut data);
            }
            words[lo / 64..=hi / 64].fill(0);
        } else if len > 64 {
            // Long and spread out: walk only the non-zero words, clearing both levels.
            for (s, summary) in words[lo / 64..=hi / 64].iter_mut().enumerate() {
                let s = s + lo / 64;
                let mut nonzero = std::mem::take(summary);
                while nonzero != 0 {
                    let w = s * 64 + nonzero.trailing_zeros() as usize;
                    emit_word(
                        w,
                        std::mem::take(&mut seen[w]),
                        &acc,
                        &mut indices,
                        &mut data,
                    );
                    nonzero &= nonzero - 1;
                }
            }
        } else {
            pattern.sort_unstable();
            for &j in &pattern {
                seen[j / 64] = 0;
                words[j / 4096] = 0;
                indices.push(j);
                data.push(acc[j]);
            }
        }
        indptr.push(indices.len());
    }
    super::drop_exact_zeros(&mut indptr, &mut indices, &mut data);
    // SAFETY: one pointer per row after the leading 0; every emission path writes a row's
    // pattern (columns of b, below n, each once thanks to `seen`) in increasing order.
    Ok(unsafe { Csr::from_parts_unchecked((m, n), indptr, indices, data) })
}

/// Row by row: the products of row i, sorted by column and merged. For products whose columns
/// are so many that an accumulator row would cost more than the work itself.
fn matmul_csr_sorted(
    a: &Csr,
    b: &Csr,
    indptr: &mut Vec<usize>,
    indices: &mut Vec<usize>,
    data: &mut Vec<c64>,
) {
    let (pa, ia, da) = (a.indptr(), a.indices(), a.data());
    let (pb, ib, db) = (b.indptr(), b.indices(), b.data());
    let mut row: Vec<(usize, c64)> = Vec::new();
    for i in 0..a.shape().0 {
        row.clear();
        for ka in pa[i]..pa[i + 1] {
            let (r, va) = (ia[ka], da[ka]);
            row.extend((pb[r]..pb[r + 1]).map(|kb| (ib[kb], va * db[kb])));
        }
        row.sort_unstable_by_key(|e| e.0);
        let start = indices.len();
        for &(c, v) in &row {
            if indices.len() > start && indices[indices.len() - 1] == c {
                let last = data.len() - 1;
                data[last] += v;
            } else {
                indices.push(c);
                data.push(v);
            }
        }
        indptr.push(indices.len());
    }
}

/// Appends the columns marked in word `w` of a row's bitset (`bits`), in increasing order, with
/// their accumulated values.
#[inline(always)]
fn emit_word(w: usize, mut bits: u64, acc: &[c64], indices: &mut Vec<usize>, data: &mut Vec<c64>) {
    while bits != 0 {
        let j = w * 64 + bits.trailing_zeros() as usize;
        indices.push(j);
        data.push(acc[j]);
        bits &= bits - 1;
    }
}

/// Csr·Dense → Dense. O(nnz(a)·n). A column-major `b` gives a column-major result, column by
/// column; a row-major `b` (more than one column) a row-major one, each result row a sum of
/// contiguous rows of `b` (scipy's order).
///
/// # Errors
/// [`Error::Shape`] on mismatched inner dimensions.
pub fn matmul_csr_dense(a: &Csr, b: &Dense) -> Result<Dense> {
    matmul_shapes("matmul", a.shape(), b.shape())?;
    let m = a.shape().0;
    let n = b.shape().1;
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    let workers = engine::workers(Family::CsrRows, a.nnz().max(m).saturating_mul(n));
    if b.layout() == Layout::RowMajor && n > 1 {
        // The result's buffer is n × m: its column i is result row i, `cols` a segment of it.
        let fill = |cols: std::ops::Range<usize>,
                    i0: usize,
                    rows: &mut [&mut [std::mem::MaybeUninit<c64>]]| {
            for (k, out) in rows.iter_mut().enumerate() {
                let i = i0 + k;
                let out: &mut [std::mem::MaybeUninit<c64>] = out;
                out.fill(std::mem::MaybeUninit::new(ZERO));
                // SAFETY: every element was just initialised, and `MaybeUninit<c64>` has the
                // layout of `c64`.
                let out = unsafe { &mut *(std::ptr::from_mut(out) as *mut [c64]) };
                for (v, &c) in val[p[i]..p[i + 1]].iter().zip(&idx[p[i]..p[i + 1]]) {
                    // Row c of b (c < b's rows, the Csr invariant checked by the shapes).
                    for (o, x) in out.iter_mut().zip(&b.buffer_col(c)[cols.clone()]) {
                        *o += v * x;
                    }
                }
            }
        };
        // SAFETY: `fill` initialises every element of every slice it is handed.
        let mat = unsafe { alloc::build_mat("matmul", n, m, workers, fill) }?;
        return Ok(Dense::with_layout(mat, Layout::RowMajor));
    }
    let fill = |rows: std::ops::Range<usize>,
                j0: usize,
                cols: &mut [&mut [std::mem::MaybeUninit<c64>]]| {
        for (k, out) in cols.iter_mut().enumerate() {
            let bj = b.col(j0 + k);
            for (o, i) in out.iter_mut().zip(rows.clone()) {
                let (lo, hi) = (p[i], p[i + 1]);
                let mut s = ZERO;
                for (v, &c) in val[lo..hi].iter().zip(&idx[lo..hi]) {
                    // SAFETY: a Csr's column indices are below its column count (its
                    // invariant), which is `bj.len()`: b has as many rows (checked above).
                    s += v * unsafe { bj.get_unchecked(c) };
                }
                o.write(s);
            }
        }
    };
    // SAFETY: `fill` writes every element of every output slice (one per row in `rows`).
    let mat = unsafe { alloc::build_mat("matmul", m, n, workers, fill) }?;
    Ok(Dense::new(mat))
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
    let work = m.saturating_mul(k).saturating_mul(n);
    if n == 1 && a.layout() == Layout::ColMajor && engine::workers(Family::Matmul, work) == 1 {
        // Matrix–vector: column axpys in row blocks (what BLAS zgemv does); faer's gemm with
        // one column ran at half the speed of OpenBLAS's zgemv here (docs/benchmarks.md).
        // b is 1×k: the vector is its conjugated row.
        let cols: Vec<&[c64]> = (0..k).map(|j| a.col(j)).collect();
        let x: Vec<c64> = (0..k).map(|j| b.col(j)[0].conj()).collect();
        crate::simd::gemv_cols(out.col_mut(0), &cols, &x);
        return Ok(out);
    }
    engine::product(work, |par| {
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

/// GpuCsr·GpuDense: cuSPARSE SpMV (one column) or SpMM.
pub(crate) fn matmul_gpucsr_dense(a: &GpuCsr, b: &GpuDense) -> Result<GpuDense> {
    if crate::gpu::sparse_available() {
        return a.matmul_dense(b);
    }
    let c = matmul_csr_dense(&a.to_csr()?, &b.to_dense()?)?;
    GpuDense::from_dense(&c)
}

/// GpuCsr·GpuCsr: the Csr kernel on the host, the product uploaded (cuSPARSE's SpGEMM is not
/// used yet). Registered so that a sparse product stays sparse: without it the dispatcher would
/// densify the right operand on the GPU for SpMM, which fails past the dense limit.
pub(crate) fn matmul_gpucsr(a: &GpuCsr, b: &GpuCsr) -> Result<GpuCsr> {
    GpuCsr::from_csr(&matmul_csr(&a.to_csr()?, &b.to_csr()?)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csr_product_matches_dense() {
        let a = Csr::from_triplets(
            (3, 2),
            &[0, 0, 2],
            &[0, 1, 1],
            &[c64::new(1.0, 1.0), c64::new(2.0, 0.0), c64::new(0.0, 3.0)],
        )
        .unwrap();
        let b = Csr::from_triplets(
            (2, 3),
            &[0, 1, 1],
            &[2, 0, 2],
            &[c64::new(1.0, 0.0), c64::new(4.0, 0.0), c64::new(0.0, -1.0)],
        )
        .unwrap();
        let c = matmul_csr(&a, &b).unwrap();
        assert!(c.as_csmat().check_compressed_structure().is_ok());
        let (ad, bd) = (
            crate::convert::builtin::csr_to_dense(&a).unwrap(),
            crate::convert::builtin::csr_to_dense(&b).unwrap(),
        );
        let cd = matmul_dense(&ad, &bd).unwrap();
        for i in 0..3 {
            for j in 0..3 {
                assert!((c.get(i, j) - cd.get(i, j)).norm() < 1e-14);
            }
        }
    }

    /// Every row emission path (narrow span, non-zero-word walk, sort) must give sorted,
    /// summed rows equal to the naive triple loop.
    #[test]
    fn csr_product_every_emission_path() {
        let (m, k, n) = (7, 5, 1000);
        let (mut ar, mut ac, mut av) = (vec![], vec![], vec![]);
        for i in 0..m {
            for r in 0..k {
                // Row 6 is b's row 1 alone: 10 columns in 2 words (the narrow-span scan).
                if (i < 6 && (i + r) % 3 != 1) || (i == 6 && r == 1) {
                    ar.push(i);
                    ac.push(r);
                    av.push(c64::new((i + 1) as f64, r as f64 - 2.0));
                }
            }
        }
        // Row 0 of b: two far-apart columns (rows of c without b's row 4 sort); row 1: a
        // block; rows 2–3: columns shared with the others, so products collide and sum; row 4:
        // 70 columns spread over the whole width (rows of c with it walk the non-zero words).
        let spread: Vec<usize> = (0..70).map(|t| t * 13 + 5).collect();
        let cols: [&[usize]; 5] = [
            &[999, 3],
            &[64, 65, 66, 67, 68, 69, 70, 71, 72, 130],
            &[3, 999, 500],
            &[70, 3],
            &spread,
        ];
        let (mut br, mut bc, mut bv) = (vec![], vec![], vec![]);
        for (r, cs) in cols.iter().enumerate() {
            for &c in *cs {
                br.push(r);
                bc.push(c);
                bv.push(c64::new(c as f64 / 100.0, (r + 1) as f64));
            }
        }
        let a = Csr::from_triplets((m, k), &ar, &ac, &av).unwrap();
        let b = Csr::from_triplets((k, n), &br, &bc, &bv).unwrap();
        let c = matmul_csr(&a, &b).unwrap();
        assert!(c.as_csmat().check_compressed_structure().is_ok());
        let mut want = vec![vec![ZERO; n]; m];
        for (&i, (&r, &x)) in ar.iter().zip(ac.iter().zip(&av)) {
            for (&rb, (&j, &y)) in br.iter().zip(bc.iter().zip(&bv)) {
                if rb == r {
                    want[i][j] += x * y;
                }
            }
        }
        for (i, row) in want.iter().enumerate() {
            for (j, w) in row.iter().enumerate() {
                assert!((c.get(i, j) - w).norm() < 1e-12, "({i}, {j})");
            }
        }
        // An all-empty row in the middle and an empty product.
        let z = Csr::from_triplets((3, 5), &[0, 2], &[4, 0], &[ZERO, ZERO]).unwrap();
        assert_eq!(matmul_csr(&z, &b).unwrap().shape(), (3, n));
    }

    #[test]
    fn inner_dimension_mismatch() {
        let e = matmul_dense(&Dense::zeros(2, 3), &Dense::zeros(2, 3)).unwrap_err();
        assert!(matches!(e, Error::Shape { .. }));
    }
}
