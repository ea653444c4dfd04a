//! The Krylov methods' view of polymat: vector operations through the dispatchers
//! ([`Dispatched`]) and operators as closures ([`FnMap`]), so `eigs`, `expm_multiply` and the
//! iterative `solve` run on every kind the dispatchers reach.

use faer::MatRef;
use rayon::prelude::*;

use crate::dispatch::Out;
use crate::engine::{self, Family};
use crate::error::Result;
use crate::krylov::{LinearMap, Vectors};
use crate::scalar::{ONE, c64};
use crate::simd::reduce::{nan_max, safe_root, sum_sqr};
use crate::simd::{dot_conj, sub_scaled};
use crate::storage::{Data, Dense, Kind};

/// Vector operations through the dispatchers: `inner`, `iadd`, `imul`, the norms.
pub(crate) struct Dispatched;

impl Vectors for Dispatched {
    fn dot(&self, x: &Data, y: &Data) -> Result<c64> {
        if x.shape() == (1, 1) {
            // `inner` reads a 1 × 1 left operand as a bra (no conjugate); the Krylov vectors
            // are kets, so its adjoint goes in as the bra. GMRES on a complex 1 × 1 system
            // diverged without this (relative residual 1e79 after 1000 iterations).
            return super::inner::inner(&super::transpose::adjoint(x, Out::Auto)?, y);
        }
        super::inner::inner(x, y)
    }

    fn axpy(&self, y: &mut Data, a: c64, x: &Data) -> Result<()> {
        super::inplace::iadd(y, x, a).map(|_| ())
    }

    fn scale(&self, x: &mut Data, a: c64) -> Result<()> {
        super::inplace::imul(x, a).map(|_| ())
    }

    fn norm(&self, x: &Data) -> Result<f64> {
        super::norm::frobenius(x)
    }

    fn norm_max(&self, x: &Data) -> Result<f64> {
        super::norm::max(x)
    }

    fn axpy_dot(&self, y: &mut Data, a: c64, x: &Data, next: &Data) -> Result<c64> {
        if let (Some(xs), Some(ns)) = (ket(x), ket(next))
            && let Some(d) = y.get_mut::<Dense>().filter(|d| d.shape().1 == 1)
            && xs.len() == d.shape().0
            && ns.len() == d.shape().0
        {
            return Ok(fused_axpy_dot(d.try_col_mut(0)?, a, xs, ns));
        }
        self.axpy(y, a, x)?;
        self.dot(next, y)
    }

    fn taylor_term(
        &self,
        x: &mut Data,
        prev: &Data,
        (shift, coeff): (c64, c64),
        sum: &mut Data,
    ) -> Result<(f64, f64)> {
        if let Some(p) = prev.downcast_ref::<Dense>()
            && let Some(x) = x.get_mut::<Dense>()
            && let Some(sum) = sum.get_mut::<Dense>()
            && same_buffers(x, p)
            && same_buffers(sum, p)
        {
            return Ok(fused_taylor_term(x, p, (shift, coeff), sum));
        }
        // Another kind, a shared vector or mixed layouts: the steps one by one.
        crate::krylov::taylor_term_steps(self, x, prev, (shift, coeff), sum)
    }

    fn copy(&self, x: &Data) -> Result<Data> {
        if let Some(d) = x.downcast_ref::<Dense>() {
            return Ok(d.clone().into());
        }
        super::scale::mul(x, ONE, Out::Kind(x.kind()))
    }

    fn assign(&self, dst: &mut Data, src: &Data) -> Result<()> {
        if let Some(s) = src.downcast_ref::<Dense>()
            && let Some(d) = dst.get_mut::<Dense>()
            && same_buffers(d, s)
        {
            // The same layout and buffer shape: the buffers' columns pair entry by entry, and
            // `dst`'s pages are already mapped (a fresh copy of a large vector clears new ones).
            let cols = s.buffer().ncols();
            let db = d.buffer_mut();
            for j in 0..cols {
                db.col_as_slice_mut(j).copy_from_slice(s.buffer_col(j));
            }
            return Ok(());
        }
        *dst = self.copy(src)?;
        Ok(())
    }

    fn dots(&self, basis: &[Data], w: &Data) -> Result<Vec<c64>> {
        match (kets(basis), ket(w)) {
            (Some(b), Some(w)) => Ok(fused_dots(&b, w)),
            _ => basis.iter().map(|v| self.dot(v, w)).collect(),
        }
    }

    fn subtract(&self, w: &mut Data, basis: &[Data], c: &[c64]) -> Result<()> {
        if let Some((b, d)) = kets_and_target(basis, w) {
            fused_subtract(d.try_col_mut(0)?, &b, c, false);
            return Ok(());
        }
        for (v, ci) in basis.iter().zip(c) {
            self.axpy(w, -ci, v)?;
        }
        Ok(())
    }

    fn subtract_norm(&self, w: &mut Data, basis: &[Data], c: &[c64]) -> Result<f64> {
        if let Some((b, d)) = kets_and_target(basis, w) {
            let sum = fused_subtract(d.try_col_mut(0)?, &b, c, true);
            if let Some(norm) = safe_root(sum) {
                return Ok(norm);
            }
            return self.norm(w);
        }
        self.subtract(w, basis, c)?;
        self.norm(w)
    }

    fn combine(&self, basis: &[Data], coeffs: MatRef<'_, c64>) -> Result<Vec<Data>> {
        let m = coeffs.nrows().min(basis.len());
        if let Some(b) = kets(&basis[..m]) {
            let n = b.first().map_or(0, |v| v.len());
            let mut outs = (0..coeffs.ncols())
                .map(|_| Dense::zeros_for("eigs", n, 1))
                .collect::<Result<Vec<Dense>>>()?;
            fused_combine(&b, coeffs, &mut outs);
            return Ok(outs.into_iter().map(Data::from).collect());
        }
        (0..coeffs.ncols())
            .map(|c| {
                let mut y = self.copy(&basis[0])?;
                self.scale(&mut y, coeffs[(0, c)])?;
                for (j, v) in basis.iter().enumerate().take(m).skip(1) {
                    self.axpy(&mut y, coeffs[(j, c)], v)?;
                }
                Ok(y)
            })
            .collect()
    }

    fn random_like(&self, like: &Data, seed: u64) -> Result<Data> {
        let (m, n) = like.shape();
        let v: Data = random_dense(m, n, seed)?.into();
        if like.kind() == Kind::DENSE {
            Ok(v)
        } else {
            crate::convert::to(like.kind(), &v)
        }
    }
}

/// Whether `a` and `b` hold buffers of one shape in one layout (so that their buffer columns
/// pair entry by entry).
fn same_buffers(a: &Dense, b: &Dense) -> bool {
    let (x, y) = (a.buffer(), b.buffer());
    a.layout() == b.layout() && (x.nrows(), x.ncols()) == (y.nrows(), y.ncols())
}

/// Entries per piece of [`fused_taylor_term`] on several workers.
const TERM_PIECE: usize = 1 << 14;

/// [`Vectors::taylor_term`] on Dense vectors in one pass: `x ← coeff·(x − shift·prev)`,
/// `sum ← sum + x`, and both maxima, where the steps one by one read and wrote the vectors
/// five times (`expm_multiply` on the XXZ chain at N = 16, one thread: 36 → 29 ms). The same
/// arithmetic as the steps for finite entries; a square that overflows falls back to
/// [`norm::max_dense`](super::norm::max_dense) for that maximum.
fn fused_taylor_term(
    x: &mut Dense,
    prev: &Dense,
    (shift, coeff): (c64, c64),
    sum: &mut Dense,
) -> (f64, f64) {
    let (m, n) = (prev.buffer().nrows(), prev.buffer().ncols());
    let workers = engine::workers(Family::Elementwise, m.saturating_mul(n));
    let mut sq = [0.0f64; 2];
    if m > 0 {
        let (xb, sb) = (x.buffer_mut(), sum.buffer_mut());
        for j in 0..n {
            let (xc, sc, pc) = (
                xb.col_as_slice_mut(j),
                sb.col_as_slice_mut(j),
                prev.buffer_col(j),
            );
            let part = if workers <= 1 || m <= TERM_PIECE {
                crate::simd::taylor_term(xc, pc, shift, coeff, sc)
            } else {
                let per = m.div_ceil(workers).max(TERM_PIECE);
                xc.par_chunks_mut(per)
                    .zip(sc.par_chunks_mut(per))
                    .zip(pc.par_chunks(per))
                    .map(|((xc, sc), pc)| crate::simd::taylor_term(xc, pc, shift, coeff, sc))
                    .reduce(
                        || [0.0; 2],
                        |a, b| [nan_max(a[0], b[0]), nan_max(a[1], b[1])],
                    )
            };
            sq = [nan_max(sq[0], part[0]), nan_max(sq[1], part[1])];
        }
    }
    let root = |s: f64, d: &Dense| {
        if s.is_infinite() {
            super::norm::max_dense(d)
        } else {
            s.sqrt()
        }
    };
    (root(sq[0], x), root(sq[1], sum))
}

/// Rows handled together by the fused loops: a chunk of every basis vector stays in cache.
const CHUNK: usize = 512;

/// The entries of a Dense ket (n×1).
fn ket(d: &Data) -> Option<&[c64]> {
    // A row-major ket whose column-major copy cannot be made takes the general path.
    d.downcast_ref::<Dense>()
        .filter(|d| d.shape().1 == 1)
        .and_then(|d| d.try_col(0).ok())
}

/// The entries of Dense kets of one length, if every vector is one.
fn kets(basis: &[Data]) -> Option<Vec<&[c64]>> {
    let v: Vec<&[c64]> = basis.iter().map(ket).collect::<Option<_>>()?;
    let n = v.first().map_or(0, |x| x.len());
    v.iter().all(|x| x.len() == n).then_some(v)
}

/// The entries of `basis` and the Dense ket `w`, where all are Dense kets of one length (the
/// fused loops' operands).
fn kets_and_target<'a>(
    basis: &'a [Data],
    w: &'a mut Data,
) -> Option<(Vec<&'a [c64]>, &'a mut Dense)> {
    let b = kets(basis)?;
    let d = w.get_mut::<Dense>().filter(|d| d.shape().1 == 1)?;
    b.iter().all(|v| v.len() == d.shape().0).then_some((b, d))
}

/// Partial `[vᵢ†·w]` over the rows `rows`, a chunk of rows at a time.
fn dots_part(basis: &[&[c64]], w: &[c64], rows: std::ops::Range<usize>) -> Vec<c64> {
    let mut acc = vec![c64::new(0.0, 0.0); basis.len()];
    for r0 in rows.clone().step_by(CHUNK) {
        let r1 = (r0 + CHUNK).min(rows.end);
        let wc = &w[r0..r1];
        for (a, v) in acc.iter_mut().zip(basis) {
            *a += dot_conj(&v[r0..r1], wc);
        }
    }
    acc
}

/// `[vᵢ†·w]` reading `w` and each `vᵢ` once; partial sums per row range, added in order.
fn fused_dots(basis: &[&[c64]], w: &[c64]) -> Vec<c64> {
    let (n, m) = (w.len(), basis.len());
    let workers = engine::workers(Family::Reduction, n.saturating_mul(m));
    if workers <= 1 {
        return dots_part(basis, w, 0..n);
    }
    let per = n.div_ceil(workers).max(CHUNK);
    let parts: Vec<Vec<c64>> = (0..n.div_ceil(per))
        .into_par_iter()
        .map(|k| dots_part(basis, w, engine::piece(k, per, n)))
        .collect();
    let mut out = vec![c64::new(0.0, 0.0); m];
    for p in parts {
        for (o, x) in out.iter_mut().zip(p) {
            *o += x;
        }
    }
    out
}

/// `w ← w + a·x`, then `next†·w`, a chunk of [`CHUNK`] rows at a time: each chunk of `w` is
/// updated and, still in cache, dotted with `next`'s. In GMRES's modified Gram–Schmidt every
/// basis vector but the first costs one sweep over `w` instead of two. Partial sums per piece of
/// rows, added in order (the sums of `dot_conj` in another grouping than one whole-vector dot).
fn fused_axpy_dot(w: &mut [c64], a: c64, x: &[c64], next: &[c64]) -> c64 {
    let part = |r0: usize, wc: &mut [c64]| {
        let mut acc = c64::new(0.0, 0.0);
        for (k, c) in wc.chunks_mut(CHUNK).enumerate() {
            let (s, len) = (r0 + k * CHUNK, c.len());
            sub_scaled(c, -a, &x[s..s + len]);
            acc += dot_conj(&next[s..s + len], c);
        }
        acc
    };
    let n = w.len();
    let workers = engine::workers(Family::Reduction, n);
    if workers <= 1 {
        return part(0, w);
    }
    let per = n.div_ceil(workers).max(CHUNK);
    let parts: Vec<c64> = w
        .par_chunks_mut(per)
        .enumerate()
        .map(|(k, wc)| part(k * per, wc))
        .collect();
    parts.into_iter().sum()
}

/// `wc ← wc − Σᵢ cᵢ·vᵢ[r0..]` for one chunk of rows; a zero coefficient reads nothing.
fn subtract_chunk(wc: &mut [c64], basis: &[&[c64]], c: &[c64], r0: usize) {
    let len = wc.len();
    for (v, ci) in basis.iter().zip(c) {
        if *ci != c64::new(0.0, 0.0) {
            sub_scaled(wc, *ci, &v[r0..r0 + len]);
        }
    }
}

/// `w ← w − Σᵢ cᵢ·vᵢ` one row chunk at a time; with `norm`, also `Σ |wᵢ|²` of each chunk
/// while it is in cache (unguarded: see [`safe_root`]), else 0.
fn fused_subtract(w: &mut [c64], basis: &[&[c64]], c: &[c64], norm: bool) -> f64 {
    let part = |k: usize, wc: &mut [c64]| {
        subtract_chunk(wc, basis, c, k * CHUNK);
        if norm { sum_sqr(wc) } else { 0.0 }
    };
    if engine::workers(Family::Reduction, w.len().saturating_mul(basis.len())) <= 1 {
        w.chunks_mut(CHUNK)
            .enumerate()
            .map(|(k, wc)| part(k, wc))
            .sum()
    } else {
        w.par_chunks_mut(CHUNK)
            .enumerate()
            .map(|(k, wc)| part(k, wc))
            .sum()
    }
}

/// `outs[c] = Σⱼ coeffs[(j, c)]·vⱼ`: per chunk of rows, the basis chunk is packed into a small
/// column-major matrix and multiplied by `coeffs` with faer (each `vⱼ` read once).
fn fused_combine(basis: &[&[c64]], coeffs: MatRef<'_, c64>, outs: &mut [Dense]) {
    let n = basis.first().map_or(0, |v| v.len());
    let m = basis.len();
    let mut chunks: Vec<Vec<&mut [c64]>> = (0..n.div_ceil(CHUNK)).map(|_| Vec::new()).collect();
    for o in outs.iter_mut() {
        // Fresh column-major kets (`combine`): the buffer's one column is the vector.
        for (k, part) in o
            .buffer_mut()
            .col_as_slice_mut(0)
            .chunks_mut(CHUNK)
            .enumerate()
        {
            chunks[k].push(part);
        }
    }
    let q = coeffs.subrows(0, m);
    // Each output chunk (zeros) gains Σⱼ q[(j, c)]·vⱼ by `gemv_cols` over the basis chunk,
    // which stays in cache across the outputs. Packing the chunk into a faer matrix for one
    // product wrote every entry again, and then the product's result: 4.5–5.7 % of `eigs`.
    let mut x = vec![c64::new(0.0, 0.0); m];
    let work = |k: usize, parts: &mut Vec<&mut [c64]>, x: &mut Vec<c64>| {
        let r0 = k * CHUNK;
        let len = parts.first().map_or(0, |p| p.len());
        let cols: Vec<&[c64]> = basis.iter().map(|v| &v[r0..r0 + len]).collect();
        for (c, out) in parts.iter_mut().enumerate() {
            x.clear();
            x.extend((0..m).map(|j| q[(j, c)]));
            crate::simd::gemv_cols(out, &cols, x);
        }
    };
    let workers = engine::workers(Family::Reduction, n.saturating_mul(m));
    let _avx = engine::AvxGuard::for_size(if workers > 1 { n } else { 0 });
    if workers <= 1 {
        for (k, p) in chunks.iter_mut().enumerate() {
            work(k, p, &mut x);
        }
    } else {
        chunks
            .par_iter_mut()
            .enumerate()
            .for_each_init(|| x.clone(), |x, (k, p)| work(k, p, x));
    }
}

/// A deterministic pseudo-random matrix with entries uniform in the unit square (xorshift64*).
pub(crate) fn random_dense(m: usize, n: usize, seed: u64) -> Result<Dense> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    // Same entries in the same order for a bra, which is made row-major and unpadded.
    Dense::from_fn_public("random", m, n, |_, _| c64::new(next(), next()))
}

/// An n×n operator given by a closure on vectors.
pub(crate) struct FnMap<F> {
    pub(crate) n: usize,
    pub(crate) f: F,
}

impl<F: Fn(&Data) -> Result<Data>> LinearMap for FnMap<F> {
    fn dim(&self) -> usize {
        self.n
    }

    fn apply(&self, x: &Data) -> Result<Data> {
        (self.f)(x)
    }
}

/// `a·x` through the `matmul` dispatcher, the result in the kind of `x` when the product lands
/// elsewhere and can come back (so the Krylov vectors keep one kind); a result kind with no
/// conversion back (a distributed kind) is kept, and the vectors move to it instead.
pub(crate) fn matrix_map(a: &Data) -> FnMap<impl Fn(&Data) -> Result<Data> + '_> {
    FnMap {
        n: a.shape().0,
        f: move |x: &Data| back_to(x.kind(), super::matmul::matmul(a, x, Out::Auto)?),
    }
}

/// `y` in `kind` if a conversion chain leads there, else `y` as it is.
pub(crate) fn back_to(kind: Kind, y: Data) -> Result<Data> {
    if y.kind() == kind || crate::convert::registry().weight(y.kind(), kind) == f64::MAX {
        Ok(y)
    } else {
        crate::convert::to(kind, &y)
    }
}

/// The kind the vectors of a Krylov method on `a` should live in, starting from `x`: the kind
/// of `a·x` when it cannot be converted back to `x`'s kind (a distributed kind), else `x`'s.
pub(crate) fn working_kind(a: &Data, x: &Data) -> Result<Kind> {
    let result = super::matmul::MATMUL
        .explain(&[a.kind(), x.kind()], Out::Auto)?
        .result
        .unwrap_or(x.kind());
    Ok(
        if result != x.kind() && crate::convert::registry().weight(result, x.kind()) == f64::MAX {
            result
        } else {
            x.kind()
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::krylov::taylor_term_steps;
    use crate::storage::Layout;

    #[test]
    fn assign_copies_into_the_vector_it_is_given() {
        let src = dense(300, 1, 4, Layout::ColMajor);
        let mut dst = dense(300, 1, 7, Layout::ColMajor);
        let before = dst.downcast_ref::<Dense>().unwrap().buffer().as_ptr();
        Dispatched.assign(&mut dst, &src).unwrap();
        assert_eq!(bits(&dst), bits(&src));
        assert_eq!(
            dst.downcast_ref::<Dense>().unwrap().buffer().as_ptr(),
            before
        );
        // Another shape, or a vector held elsewhere too: a fresh copy, the other one untouched.
        let mut other = dense(10, 1, 1, Layout::ColMajor);
        Dispatched.assign(&mut other, &src).unwrap();
        assert_eq!(bits(&other), bits(&src));
        let mut shared = dense(300, 1, 2, Layout::ColMajor);
        let keep = shared.clone();
        Dispatched.assign(&mut shared, &src).unwrap();
        assert_eq!(bits(&shared), bits(&src));
        assert_eq!(bits(&keep), bits(&dense(300, 1, 2, Layout::ColMajor)));
    }

    #[test]
    fn subtract_norm_is_subtract_then_norm() {
        let n = 3 * CHUNK + 17;
        let basis: Vec<Data> = (0..5).map(|s| dense(n, 1, s, Layout::ColMajor)).collect();
        let c = [
            c64::new(0.5, -0.25),
            c64::new(0.0, 0.0),
            c64::new(-1.0, 2.0),
            c64::new(0.125, 0.0),
            c64::new(0.0, 0.0),
        ];
        let mut fused = dense(n, 1, 9, Layout::ColMajor);
        let mut steps = fused.clone();
        let norm = Dispatched.subtract_norm(&mut fused, &basis, &c).unwrap();
        for (v, ci) in basis.iter().zip(&c) {
            Dispatched.axpy(&mut steps, -ci, v).unwrap();
        }
        let expected = Dispatched.norm(&steps).unwrap();
        assert!((norm - expected).abs() <= 1e-12 * expected);
        assert!(crate::ops::compare::isequal(&fused, &steps, 1e-13, 0.0).unwrap());
        // A vector too small to square: the scaled norm.
        let mut tiny: Data =
            Dense::from_fn(n, 1, |i, _| c64::new(1e-170 * (i + 1) as f64, 0.0)).into();
        let zero = [c64::new(0.0, 0.0); 5];
        let got = Dispatched.subtract_norm(&mut tiny, &basis, &zero).unwrap();
        let want = Dispatched.norm(&tiny).unwrap();
        assert!(
            got > 0.0 && (got - want).abs() <= 1e-12 * want,
            "{got:e} vs {want:e}"
        );
    }

    fn value(i: usize, j: usize, salt: usize) -> c64 {
        c64::new(
            ((i * 7 + j * 3 + salt) % 11) as f64 * 0.3 - 1.4,
            ((i * 5 + j + 2 * salt) % 13) as f64 * 0.2 - 1.1,
        )
    }

    fn dense(m: usize, n: usize, salt: usize, layout: Layout) -> Data {
        Dense::from_fn(m, n, |i, j| value(i, j, salt))
            .into_layout(layout)
            .unwrap()
            .into()
    }

    /// Kind, shape and entries to the bit.
    fn bits(d: &Data) -> (Kind, (usize, usize), Vec<(u64, u64)>) {
        let d2: Data = crate::convert::to(Kind::DENSE, d).unwrap();
        let x = d2.downcast_ref::<Dense>().unwrap();
        let v = (0..x.shape().1)
            .flat_map(|j| x.col(j).to_vec())
            .map(|z| (z.re.to_bits(), z.im.to_bits()))
            .collect();
        (d.kind(), d.shape(), v)
    }

    /// The fused term on Dense vectors gives the steps' vectors and maxima to the bit: kets,
    /// several columns in either layout, with and without a shift; mixed layouts, a shared
    /// vector and a Csr vector take the steps.
    #[test]
    fn the_fused_taylor_term_is_the_steps() {
        let terms = [
            (c64::new(0.0, 0.0), c64::new(0.0, -0.25)),
            (c64::new(0.5, -0.75), c64::new(0.125, 0.5)),
        ];
        let layouts = [Layout::ColMajor, Layout::RowMajor];
        for (m, n) in [(0, 1), (1, 1), (7, 1), (33, 1), (9, 3), (1, 5)] {
            for &term in &terms {
                for (lx, lp, ls) in [(0, 0, 0), (1, 1, 1), (0, 1, 0), (1, 1, 0)] {
                    let (lx, lp, ls) = (layouts[lx], layouts[lp], layouts[ls]);
                    let prev = dense(m, n, 2, lp);
                    let (mut x1, mut s1) = (dense(m, n, 1, lx), dense(m, n, 3, ls));
                    let (mut x2, mut s2) =
                        (Dispatched.copy(&x1).unwrap(), Dispatched.copy(&s1).unwrap());
                    let got = Dispatched
                        .taylor_term(&mut x1, &prev, term, &mut s1)
                        .unwrap();
                    let want =
                        taylor_term_steps(&Dispatched, &mut x2, &prev, term, &mut s2).unwrap();
                    let what = format!("{m}×{n} {term:?} {lx:?} {lp:?} {ls:?}");
                    assert_eq!(got.0.to_bits(), want.0.to_bits(), "{what}");
                    assert_eq!(got.1.to_bits(), want.1.to_bits(), "{what}");
                    assert_eq!(bits(&x1), bits(&x2), "{what}");
                    assert_eq!(bits(&s1), bits(&s2), "{what}");
                }
            }
        }
        // A shared x is not written in place: the handle kept sees the old values.
        let prev = dense(6, 1, 2, Layout::ColMajor);
        let mut x = dense(6, 1, 1, Layout::ColMajor);
        let kept = x.clone();
        let before = bits(&kept);
        let mut sum = dense(6, 1, 3, Layout::ColMajor);
        Dispatched
            .taylor_term(&mut x, &prev, terms[1], &mut sum)
            .unwrap();
        assert_eq!(bits(&kept), before);
        assert_ne!(bits(&x), before);
        // A Csr sum goes through the dispatchers.
        let mut x = dense(4, 1, 1, Layout::ColMajor);
        let mut sum = crate::convert::to(Kind::CSR, &dense(4, 1, 3, Layout::ColMajor)).unwrap();
        let (mut x2, mut s2) = (Dispatched.copy(&x).unwrap(), Dispatched.copy(&sum).unwrap());
        let prev = dense(4, 1, 2, Layout::ColMajor);
        let got = Dispatched
            .taylor_term(&mut x, &prev, terms[1], &mut sum)
            .unwrap();
        let want = taylor_term_steps(&Dispatched, &mut x2, &prev, terms[1], &mut s2).unwrap();
        assert_eq!(
            (got.0.to_bits(), got.1.to_bits()),
            (want.0.to_bits(), want.1.to_bits())
        );
        assert_eq!(bits(&sum), bits(&s2));
    }

    /// The fused subtraction and dot give the steps' vector to the bit (the same scaled sum)
    /// and their dot to rounding (partial sums per chunk), across the chunk boundaries; a
    /// shared `y`, a row-major ket and a Csr `y` take the steps or a column-major copy.
    #[test]
    fn the_fused_axpy_dot_is_the_steps() {
        let a = c64::new(-0.375, 1.25);
        for n in [0usize, 1, 7, 511, 512, 513, 1500] {
            let (x, next) = (
                dense(n, 1, 4, Layout::ColMajor),
                dense(n, 1, 5, Layout::RowMajor),
            );
            for ly in [Layout::ColMajor, Layout::RowMajor] {
                let mut y1 = dense(n, 1, 6, ly);
                let mut y2 = Dispatched.copy(&y1).unwrap();
                let got = Dispatched.axpy_dot(&mut y1, a, &x, &next).unwrap();
                Dispatched.axpy(&mut y2, a, &x).unwrap();
                let want = Dispatched.dot(&next, &y2).unwrap();
                let what = format!("n {n} {ly:?}");
                assert!(
                    (got - want).norm() <= 1e-12 * (1.0 + want.norm()),
                    "{what}: {got} {want}"
                );
                let (g, w) = (bits(&y1), bits(&y2));
                for (k, (p, q)) in g.2.iter().zip(&w.2).enumerate() {
                    let (p, q) = (
                        c64::new(f64::from_bits(p.0), f64::from_bits(p.1)),
                        c64::new(f64::from_bits(q.0), f64::from_bits(q.1)),
                    );
                    assert!(
                        (p - q).norm() <= 1e-15 * (1.0 + q.norm()),
                        "{what} entry {k}"
                    );
                }
            }
        }
        // A shared y is not written in place.
        let (x, next) = (
            dense(9, 1, 4, Layout::ColMajor),
            dense(9, 1, 5, Layout::ColMajor),
        );
        let mut y = dense(9, 1, 6, Layout::ColMajor);
        let kept = y.clone();
        let before = bits(&kept);
        Dispatched.axpy_dot(&mut y, a, &x, &next).unwrap();
        assert_eq!(bits(&kept), before);
        assert_ne!(bits(&y), before);
        // A Csr y goes through the dispatchers.
        let mut y = crate::convert::to(Kind::CSR, &dense(9, 1, 6, Layout::ColMajor)).unwrap();
        let mut y2 = Dispatched.copy(&y).unwrap();
        let got = Dispatched.axpy_dot(&mut y, a, &x, &next).unwrap();
        Dispatched.axpy(&mut y2, a, &x).unwrap();
        assert_eq!(got, Dispatched.dot(&next, &y2).unwrap());
        assert_eq!(bits(&y), bits(&y2));
    }

    /// A square that overflows falls back to `|x|` entry by entry: the maxima stay finite.
    #[test]
    fn the_fused_maxima_survive_overflowing_squares() {
        let big = 1e200;
        let mut x: Data = Dense::from_fn(5, 1, |i, _| c64::new(big * (i + 1) as f64, 0.0)).into();
        let mut sum: Data = Dense::zeros(5, 1).into();
        let prev: Data = Dense::zeros(5, 1).into();
        let (mx, ms) = Dispatched
            .taylor_term(
                &mut x,
                &prev,
                (c64::new(0.0, 0.0), c64::new(0.0, 1.0)),
                &mut sum,
            )
            .unwrap();
        assert_eq!(mx, 5.0 * big);
        assert_eq!(ms, 5.0 * big);
    }
}
