//! The distributed kernels: the local kernel on this rank's rows, then (for reductions) one
//! agreement and one `MPI_Allreduce`. Registered with
//! [`Dispatcher::add_specialisation`](crate::dispatch::Dispatcher), the same call a user makes; the
//! dispatcher agrees on every call's outcome at its end, so a kernel agrees only before its
//! own collectives.

use super::comm::agree;
use super::{Comm, DistCsr, DistDense, Op, arg, block, max_f64, owner, reduce, sum_c64};
use crate::dispatch::Specialisation;
use crate::error::Result;
use crate::ops::{add, inner, norm, scale};
use crate::scalar::c64;
use crate::storage::alloc;
use crate::storage::{Csr, Storage};

/// The shapes an agreement compares for one operand.
fn shapes1(a: (usize, usize)) -> [usize; 4] {
    [a.0, a.1, 0, 0]
}

/// The shapes an agreement compares for two operands.
fn shapes2(a: (usize, usize), b: (usize, usize)) -> [usize; 4] {
    [a.0, a.1, b.0, b.1]
}

const ONE: c64 = c64::new(1.0, 0.0);

pub(super) fn register() -> Result<()> {
    use crate::ops::{
        ADD, EXPECT, INNER, ISHERM, KRON, MATMUL, MUL, NEG, NORM_FROBENIUS, NORM_L2, NORM_MAX,
        NORM_ONE, TRACE,
    };
    MATMUL.add_specialisation(Specialisation::binary(
        "matmul_distcsr_distdense",
        |a: &DistCsr, x: &DistDense, _: &()| a.matmul_unagreed(x),
    ))?;
    ADD.add_specialisation(Specialisation::binary(
        "add_distdense",
        |a: &DistDense, b: &DistDense, s: &c64| {
            Ok(a.with_local(add::add_dense(a.local(), b.local(), *s)?))
        },
    ))?;
    ADD.add_specialisation(Specialisation::binary(
        "add_distcsr",
        |a: &DistCsr, b: &DistCsr, s: &c64| {
            DistCsr::from_local(a.shape().0, add::add_csr(a.local(), b.local(), *s)?)
        },
    ))?;
    MUL.add_specialisation(Specialisation::unary(
        "mul_distdense",
        |a: &DistDense, s: &c64| Ok(a.with_local(scale::mul_dense(a.local(), *s)?)),
    ))?;
    MUL.add_specialisation(Specialisation::unary(
        "mul_distcsr",
        |a: &DistCsr, s: &c64| a.scaled(*s),
    ))?;
    NEG.add_specialisation(Specialisation::unary(
        "neg_distdense",
        |a: &DistDense, _: &()| Ok(a.with_local(scale::mul_dense(a.local(), -ONE)?)),
    ))?;
    NEG.add_specialisation(Specialisation::unary(
        "neg_distcsr",
        |a: &DistCsr, _: &()| a.scaled(-ONE),
    ))?;
    INNER.add_specialisation(Specialisation::binary(
        "inner_distdense",
        |l: &DistDense, r: &DistDense, _: &()| {
            let x = kets(l, r).and_then(|()| inner::inner_dense(l.local(), r.local()));
            sum_c64("inner", x, shapes2(l.shape(), r.shape()))
        },
    ))?;
    EXPECT.add_specialisation(Specialisation::binary(
        "expect_distcsr_distdense",
        |a: &DistCsr, psi: &DistDense, _: &()| {
            let ket = if psi.shape().1 == 1 {
                Ok(())
            } else {
                Err(arg("distributed expect takes a ket state"))
            };
            agree("expect", ket, shapes2(a.shape(), psi.shape()))?;
            let y = a.matmul_unagreed(psi);
            let x = y.and_then(|y| inner::inner_dense(psi.local(), y.local()));
            sum_c64("expect", x, shapes2(a.shape(), psi.shape()))
        },
    ))?;
    TRACE.add_specialisation(Specialisation::unary(
        "trace_distcsr",
        |a: &DistCsr, _: &()| {
            let (l, s) = (a.local(), a.start());
            let t: c64 = (0..l.shape().0).map(|i| l.get(i, s + i)).sum();
            sum_c64("trace", Ok(t), shapes1(a.shape()))
        },
    ))?;
    for (d, name) in [
        (&NORM_L2, "norm_l2_distdense"),
        (&NORM_FROBENIUS, "frobenius_distdense"),
    ] {
        d.add_specialisation(Specialisation::unary(name, |a: &DistDense, _: &()| {
            let f = norm::frobenius_dense(a.local());
            Ok(reduce("norm", Ok(vec![f * f]), Op::Sum, shapes1(a.shape()))?[0].sqrt())
        }))?;
    }
    NORM_FROBENIUS.add_specialisation(Specialisation::unary(
        "frobenius_distcsr",
        |a: &DistCsr, _: &()| {
            let f = norm::frobenius_csr(a.local());
            Ok(reduce("norm", Ok(vec![f * f]), Op::Sum, shapes1(a.shape()))?[0].sqrt())
        },
    ))?;
    NORM_MAX.add_specialisation(Specialisation::unary(
        "max_distdense",
        |a: &DistDense, _: &()| {
            max_f64(
                "norm_max",
                Ok(norm::max_dense(a.local())),
                shapes1(a.shape()),
            )
        },
    ))?;
    NORM_MAX.add_specialisation(Specialisation::unary(
        "max_distcsr",
        |a: &DistCsr, _: &()| max_f64("norm_max", Ok(norm::max_csr(a.local())), shapes1(a.shape())),
    ))?;
    NORM_ONE.add_specialisation(Specialisation::unary(
        "one_distcsr",
        |a: &DistCsr, _: &()| one_norm(a),
    ))?;
    NORM_ONE.add_specialisation(Specialisation::unary(
        "one_distdense",
        |a: &DistDense, _: &()| {
            let l = a.local();
            let sums = l.col_major("norm_one").map(|lm| {
                (0..l.shape().1)
                    .map(|j| lm.col_as_slice(j).iter().map(|z| z.norm()).sum())
                    .collect()
            });
            let sums = reduce("norm_one", sums, Op::Sum, shapes1(a.shape()))?;
            Ok(sums.into_iter().fold(0.0, f64::max))
        },
    ))?;
    KRON.add_specialisation(Specialisation::binary(
        "kron_distcsr_csr",
        |b: &DistCsr, a: &Csr, _: &()| kron_dist_local(b, a),
    ))?;
    ISHERM.add_specialisation(Specialisation::unary(
        "isherm_distcsr",
        |a: &DistCsr, atol: &f64| isherm(a, *atol),
    ))?;
    Ok(())
}

/// `b ⊗ a` for a distributed `b` and a global `a` (local operators on the last subsystems):
/// row `i·rows(a) + k` of the result comes from row `i` of `b`, so when the ranks divide
/// `rows(b)` each rank's result rows are its own rows of `b` ⊗ `a` — no communication beyond
/// the new halo plan. Other partitions are refused rather than redistributed.
fn kron_dist_local(b: &DistCsr, a: &Csr) -> Result<DistCsr> {
    let comm = Comm::get();
    let (nb, na) = (b.shape().0, a.shape().0);
    let local = (|| {
        let rows = nb
            .checked_mul(na)
            .ok_or_else(|| arg("kron: the result's rows overflow usize"))?;
        let mine = block(rows, comm.size, comm.rank);
        let local_b = b.local().shape().0;
        if mine.start != b.start() * na || mine.len() != local_b * na {
            return Err(arg(format!(
                "kron: DistCsr ⊗ Csr needs the {} ranks to split the DistCsr's {nb} rows evenly \
                 (row blocks must map to row blocks)",
                comm.size
            )));
        }
        Ok((rows, crate::ops::kron::kron_csr(b.local(), a)?))
    })();
    // `from_local` agrees on its own first step; this rank's failure reaches it there.
    let (rows, local) = local?;
    DistCsr::from_local(rows, local)
}

fn kets(l: &DistDense, r: &DistDense) -> Result<()> {
    if l.shape().1 != 1 || r.shape().1 != 1 {
        return Err(arg("distributed inner takes two kets (n×1)"));
    }
    Ok(())
}

/// `max_j Σ_i |a_ij|`: the local column sums added over the ranks (one vector of `cols`).
fn one_norm(a: &DistCsr) -> Result<f64> {
    let local = a.local();
    let cols = local.shape().1;
    let sums = alloc::try_vec("norm_one", (1, cols), cols, 0.0f64).map(|mut sums| {
        for (&c, v) in local.indices().iter().zip(local.data()) {
            sums[c] += v.norm();
        }
        sums
    });
    let sums = reduce("norm_one", sums, Op::Sum, shapes1(a.shape()))?;
    Ok(sums.into_iter().fold(0.0, f64::max))
}

/// Whether `a = a†` within `atol`: each rank sends every entry `(i, j, v)` it holds to the
/// owner of row `j` as `(j, i, conj v)`; each owner compares its rows with what it received.
fn isherm(a: &DistCsr, atol: f64) -> Result<bool> {
    const OP: &str = "isherm";
    let (n, m) = a.shape();
    if n != m {
        return Ok(false);
    }
    let comm = Comm::get();
    let l = a.local();
    let (p, idx, val) = (l.indptr(), l.indices(), l.data());
    let mut out: Vec<Vec<f64>> = vec![Vec::new(); comm.size];
    for i in 0..l.shape().0 {
        for e in p[i]..p[i + 1] {
            let (row, col, v) = (a.start() + i, idx[e], val[e]);
            out[owner(n, comm.size, col)].extend([col as f64, row as f64, v.re, -v.im]);
        }
    }
    let send: Vec<f64> = out.iter().flatten().copied().collect();
    let counts: Vec<usize> = out.iter().map(Vec::len).collect();
    let (recv, _) = comm.exchange(OP, &send, &counts, shapes1(a.shape()))?;
    let here = (|| {
        let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
        for t in recv.chunks_exact(4) {
            r.push((t[0] as usize).wrapping_sub(a.start()));
            c.push(t[1] as usize);
            v.push(c64::new(t[2], t[3]));
        }
        let mirror = Csr::from_triplets(l.shape(), &r, &c, &v)?;
        let diff = add::add_csr(l, &mirror, -ONE)?;
        Ok(vec![f64::from(u8::from(
            !diff.data().iter().all(|z| z.norm() <= atol),
        ))])
    })();
    Ok(reduce(OP, here, Op::Sum, shapes1(a.shape()))?[0] == 0.0)
}
