//! The Krylov path of [`eigs`](super::decomp::eigs): a few eigenpairs of a large operator without
//! densifying it, on any kind (see [`eigs_plan`](super::decomp::eigs_plan) for when it runs).

use super::super::space::{Dispatched, FnMap, matrix_map, random_dense};
use super::eigen::{EigOrder, Eigen, EigsOptions, HERMITIAN_ATOL};
use super::lu::Factorised;
use crate::dispatch::Out;
use crate::error::{Error, Result};
use crate::krylov::LinearMap;
use crate::krylov::schur::{self, Request, Which};
use crate::krylov::watch::Hook;
use crate::scalar::{ONE, c64};
use crate::storage::{Csr, Data, Dense};

/// The Krylov request for these options and an n×n operator.
fn request(n: usize, o: &EigsOptions, hermitian: bool, which: Which) -> Result<Request> {
    let k = o
        .count
        .ok_or_else(|| Error::argument("eigs", "the Krylov path needs count"))?;
    if k + 2 > n {
        return Err(Error::argument(
            "eigs",
            format!(
                "the Krylov path computes at most n − 2 = {} eigenpairs",
                n.saturating_sub(2)
            ),
        ));
    }
    Ok(Request {
        k,
        which,
        hermitian,
        tol: o.tol,
        max_restarts: if o.max_iter == 0 { 1000 } else { o.max_iter },
        ncv: o.krylov_dim.unwrap_or((2 * k + 1).max(20)),
        vectors: o.vectors,
    })
}

/// The wanted end for the order, when no shift is given.
fn which(order: EigOrder) -> Which {
    match order {
        EigOrder::Low => Which::SmallestReal,
        EigOrder::High => Which::LargestReal,
    }
}

/// Runs the solver and packs the result, mapping shift-inverted values back with `back`.
fn run(
    op: &dyn LinearMap,
    start: &Data,
    req: &Request,
    o: &EigsOptions,
    back: impl Fn(c64) -> c64,
) -> Result<Eigen> {
    let hook = Hook::take();
    let given;
    let start = match hook.as_ref().and_then(|h| h.start.as_ref()) {
        Some(v) => {
            if v.shape() != start.shape() {
                return Err(Error::shape(
                    "eigs",
                    &[start.shape(), v.shape()],
                    "the start vector must be an n × 1 ket of the operator's dimension",
                ));
            }
            given = if v.kind() == start.kind() {
                v.clone()
            } else {
                crate::convert::to(start.kind(), v)?
            };
            &given
        }
        None => start,
    };
    let ritz = match schur::eigen(op, &Dispatched, start, req, hook.as_ref()) {
        Err(e @ Error::Stopped { .. }) => {
            if let Some(h) = &hook {
                h.amend(|p| {
                    let mut pairs: Vec<(c64, Option<Data>)> = p
                        .values
                        .iter()
                        .enumerate()
                        .map(|(i, &x)| (back(x), p.vectors.get(i).cloned()))
                        .collect();
                    sort_pairs(&mut pairs, req, o);
                    p.values = pairs.iter().map(|q| q.0).collect();
                    p.vectors = pairs.into_iter().filter_map(|q| q.1).collect();
                    Ok(())
                })?;
            }
            return Err(e);
        }
        r => r?,
    };
    let ritz_stats = (ritz.applications, ritz.cycles);
    let mut pairs: Vec<(c64, Option<Data>)> = match ritz.vectors {
        Some(v) => ritz
            .values
            .into_iter()
            .zip(v)
            .map(|(x, v)| (back(x), Some(v)))
            .collect(),
        None => ritz.values.into_iter().map(|x| (back(x), None)).collect(),
    };
    sort_pairs(&mut pairs, req, o);
    let values = pairs.iter().map(|p| p.0).collect();
    let vectors = if o.vectors {
        let cols = pairs
            .into_iter()
            .map(|p| match p.1 {
                Some(v) => crate::convert::to_type::<Dense>(&v),
                None => Err(Error::argument("eigs", "missing eigenvector")),
            })
            .collect::<Result<Vec<Dense>>>()?;
        let n = start.shape().0;
        Some(Dense::from_fn_for("eigs", n, cols.len(), |i, j| {
            cols[j].get(i, 0)
        })?)
    } else {
        None
    };
    Ok(Eigen {
        values,
        vectors,
        applications: ritz_stats.0,
        cycles: ritz_stats.1,
    })
}

/// Real eigenvalues for the Hermitian solver (without a complex shift), in the order asked
/// for.
fn sort_pairs<T>(pairs: &mut [(c64, T)], req: &Request, o: &EigsOptions) {
    if req.hermitian && o.sigma.is_none_or(|s| s.im == 0.0) {
        for p in pairs.iter_mut() {
            p.0 = c64::new(p.0.re, 0.0);
        }
    }
    pairs.sort_by(|x, y| {
        let c = x.0.re.total_cmp(&y.0.re).then(x.0.im.total_cmp(&y.0.im));
        match o.order {
            EigOrder::Low => c,
            EigOrder::High => c.reverse(),
        }
    });
}

/// A start vector in the kind `op` produces.
fn start_vector(op: &dyn LinearMap) -> Result<Data> {
    let v: Data = random_dense(op.dim(), 1, 0x0123_4567)?.into();
    let w = op.apply(&v)?;
    if w.kind() == v.kind() {
        Ok(v)
    } else {
        crate::convert::to(w.kind(), &v)
    }
}

/// Shift-invert with a factorisation of `a − σ·I`: the eigenvalues nearest σ.
fn shift_invert(f: Factorised, n: usize, o: &EigsOptions, hermitian: bool) -> Result<Eigen> {
    let sigma = o.sigma.unwrap_or_default();
    let op = FnMap {
        n,
        f: |x: &Data| {
            let d = crate::convert::to_type::<Dense>(x)?;
            f.solve(&d).map(Data::from)
        },
    };
    let herm = hermitian && sigma.im == 0.0;
    let req = request(n, o, herm, Which::LargestMagnitude)?;
    let start: Data = random_dense(n, 1, 0x0123_4567)?.into();
    run(&op, &start, &req, o, |theta| sigma + ONE / theta)
}

fn is_hermitian(a: &Data, o: &EigsOptions) -> Result<bool> {
    match o.hermitian {
        Some(h) => Ok(h),
        None => super::super::compare::isherm(a, HERMITIAN_ATOL),
    }
}

/// Krylov eigs of a Csr matrix: `matmul` through its Csr·Dense kernel, shift-invert through
/// a sparse LU.
pub(crate) fn eigs_csr(a: &Csr, o: &EigsOptions) -> Result<Eigen> {
    let n = a.shape().0;
    let hermitian = match o.hermitian {
        Some(h) => h,
        None => super::super::compare::isherm_csr(a, HERMITIAN_ATOL)?,
    };
    if let Some(sigma) = o.sigma {
        let shifted = super::super::add::add_csr(a, &Csr::try_scaled_identity(n, ONE)?, -sigma)?;
        return shift_invert(Factorised::sparse(&shifted, "eigs")?, n, o, hermitian);
    }
    let op = FnMap {
        n,
        f: |x: &Data| match x.downcast_ref::<Dense>() {
            Some(d) => super::super::matmul::matmul_csr_dense(a, d).map(Data::from),
            None => super::super::matmul::matmul(&Data::from(a.clone()), x, Out::Auto),
        },
    };
    let req = request(n, o, hermitian, which(o.order))?;
    run(&op, &start_vector(&op)?, &req, o, |x| x)
}

/// Krylov eigs of a Dense matrix (asked for explicitly, or with a shift).
pub(crate) fn eigs_dense_krylov(a: &Dense, o: &EigsOptions) -> Result<Eigen> {
    let n = a.shape().0;
    let hermitian = match o.hermitian {
        Some(h) => h,
        None => super::super::compare::isherm_dense(a, HERMITIAN_ATOL),
    };
    if let Some(sigma) = o.sigma {
        let shifted = super::super::add::add_dense(a, &Dense::try_identity(n)?, -sigma)?;
        return shift_invert(Factorised::dense(&shifted, "eigs")?, n, o, hermitian);
    }
    let op = FnMap {
        n,
        f: |x: &Data| match x.downcast_ref::<Dense>() {
            Some(d) => super::super::matmul::matmul_dense(a, d).map(Data::from),
            None => super::super::matmul::matmul(&Data::from(a.clone()), x, Out::Auto),
        },
    };
    let req = request(n, o, hermitian, which(o.order))?;
    run(&op, &start_vector(&op)?, &req, o, |x| x)
}

/// Krylov eigs of any kind, through the dispatchers (GpuDense, user kinds, distributed kinds).
/// A shift needs a factorisation: the matrix is converted to Csr for it (or to Dense when no
/// conversion to Csr exists).
pub(crate) fn eigs_data(a: &Data, o: &EigsOptions) -> Result<Eigen> {
    let n = a.shape().0;
    if o.sigma.is_some() {
        return match crate::convert::to_type::<Csr>(a) {
            Ok(c) => eigs_csr(&c, o),
            Err(_) => eigs_dense_krylov(&crate::convert::to_type::<Dense>(a)?, o),
        };
    }
    let hermitian = is_hermitian(a, o)?;
    let op = matrix_map(a);
    let req = request(n, o, hermitian, which(o.order))?;
    let start = start_vector(&op)?;
    run(&op, &start, &req, o, |x| x)
}
