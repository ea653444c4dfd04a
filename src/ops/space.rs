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
use crate::simd::{dot_conj, sub_scaled};
use crate::storage::{Data, Dense, Kind};

/// Vector operations through the dispatchers: `inner`, `iadd`, `imul`, the norms.
pub(crate) struct Dispatched;

impl Vectors for Dispatched {
    fn dot(&self, x: &Data, y: &Data) -> Result<c64> {
        super::inner(x, y)
    }

    fn axpy(&self, y: &mut Data, a: c64, x: &Data) -> Result<()> {
        super::iadd(y, x, a).map(|_| ())
    }

    fn scale(&self, x: &mut Data, a: c64) -> Result<()> {
        super::imul(x, a).map(|_| ())
    }

    fn norm(&self, x: &Data) -> Result<f64> {
        super::norm::frobenius(x)
    }

    fn norm_max(&self, x: &Data) -> Result<f64> {
        super::norm::max(x)
    }

    fn copy(&self, x: &Data) -> Result<Data> {
        if let Some(d) = x.downcast_ref::<Dense>() {
            return Ok(d.clone().into());
        }
        super::mul(x, ONE, Out::Kind(x.kind()))
    }

    fn dots(&self, basis: &[Data], w: &Data) -> Result<Vec<c64>> {
        match (kets(basis), ket(w)) {
            (Some(b), Some(w)) => Ok(fused_dots(&b, w)),
            _ => basis.iter().map(|v| self.dot(v, w)).collect(),
        }
    }

    fn subtract(&self, w: &mut Data, basis: &[Data], c: &[c64]) -> Result<()> {
        if let Some(b) = kets(basis)
            && let Some(d) = w.get_mut::<Dense>().filter(|d| d.shape().1 == 1)
            && b.iter().all(|v| v.len() == d.shape().0)
        {
            fused_subtract(d.try_col_mut(0)?, &b, c);
            return Ok(());
        }
        for (v, ci) in basis.iter().zip(c) {
            self.axpy(w, -ci, v)?;
        }
        Ok(())
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

/// `wc ← wc − Σᵢ cᵢ·vᵢ[r0..]` for one chunk of rows.
fn subtract_chunk(wc: &mut [c64], basis: &[&[c64]], c: &[c64], r0: usize) {
    let len = wc.len();
    for (v, ci) in basis.iter().zip(c) {
        sub_scaled(wc, *ci, &v[r0..r0 + len]);
    }
}

/// `w ← w − Σᵢ cᵢ·vᵢ` one row chunk at a time.
fn fused_subtract(w: &mut [c64], basis: &[&[c64]], c: &[c64]) {
    if engine::workers(Family::Reduction, w.len().saturating_mul(basis.len())) <= 1 {
        for (k, wc) in w.chunks_mut(CHUNK).enumerate() {
            subtract_chunk(wc, basis, c, k * CHUNK);
        }
    } else {
        w.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(k, wc)| subtract_chunk(wc, basis, c, k * CHUNK));
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
    let work = |k: usize, parts: &mut Vec<&mut [c64]>| {
        let r0 = k * CHUNK;
        let len = parts.first().map_or(0, |p| p.len());
        let packed = faer::Mat::from_fn(len, m, |i, j| basis[j][r0 + i]);
        let mut res = faer::Mat::<c64>::zeros(len, parts.len());
        faer::linalg::matmul::matmul(
            res.as_mut(),
            faer::Accum::Replace,
            packed.as_ref(),
            q,
            c64::new(1.0, 0.0),
            faer::Par::Seq,
        );
        for (c, out) in parts.iter_mut().enumerate() {
            out.copy_from_slice(res.col_as_slice(c));
        }
    };
    let workers = engine::workers(Family::Reduction, n.saturating_mul(m));
    let _avx = engine::AvxGuard::for_size(if workers > 1 { n } else { 0 });
    if workers <= 1 {
        chunks.iter_mut().enumerate().for_each(|(k, p)| work(k, p));
    } else {
        chunks
            .par_iter_mut()
            .enumerate()
            .for_each(|(k, p)| work(k, p));
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
        f: move |x: &Data| back_to(x.kind(), super::matmul(a, x, Out::Auto)?),
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
    let result = super::MATMUL
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
