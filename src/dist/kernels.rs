//! The distributed kernels: the local kernel on this rank's rows, then (for reductions) one
//! `MPI_Allreduce`. Registered with [`Dispatcher::add_specialisation`](crate::Dispatcher),
//! the same call a user makes.

use mpi::datatype::{Partition, PartitionMut};
use mpi::traits::*;

use super::storage::{counts_i32, displacements};
use super::{Comm, DistCsr, DistDense, all, arg, block, max_f64, owner, sum_c64, sum_f64s};
use crate::ops::{add, inner, norm, scale};
use crate::{Csr, Result, Specialisation, Storage, c64};

const ONE: c64 = c64::new(1.0, 0.0);

pub(super) fn register() -> Result<()> {
    use crate::ops::{
        ADD, EXPECT, INNER, ISHERM, KRON, MATMUL, MUL, NEG, NORM_FROBENIUS, NORM_L2, NORM_MAX,
        NORM_ONE, TRACE,
    };
    MATMUL.add_specialisation(Specialisation::binary(
        "matmul_distcsr_distdense",
        |a: &DistCsr, x: &DistDense, _: &()| a.matmul(x),
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
            kets(l, r)?;
            Ok(sum_c64(inner::inner_dense(l.local(), r.local())?))
        },
    ))?;
    EXPECT.add_specialisation(Specialisation::binary(
        "expect_distcsr_distdense",
        |a: &DistCsr, psi: &DistDense, _: &()| {
            if psi.shape().1 != 1 {
                return Err(arg("distributed expect takes a ket state"));
            }
            let y = a.matmul(psi)?;
            Ok(sum_c64(inner::inner_dense(psi.local(), y.local())?))
        },
    ))?;
    TRACE.add_specialisation(Specialisation::unary(
        "trace_distcsr",
        |a: &DistCsr, _: &()| {
            let (l, s) = (a.local(), a.start());
            let t: c64 = (0..l.shape().0).map(|i| l.get(i, s + i)).sum();
            Ok(sum_c64(t))
        },
    ))?;
    for (d, name) in [
        (&NORM_L2, "norm_l2_distdense"),
        (&NORM_FROBENIUS, "frobenius_distdense"),
    ] {
        d.add_specialisation(Specialisation::unary(name, |a: &DistDense, _: &()| {
            let f = norm::frobenius_dense(a.local());
            Ok(sum_f64s(&[f * f])[0].sqrt())
        }))?;
    }
    NORM_FROBENIUS.add_specialisation(Specialisation::unary(
        "frobenius_distcsr",
        |a: &DistCsr, _: &()| {
            let f = norm::frobenius_csr(a.local());
            Ok(sum_f64s(&[f * f])[0].sqrt())
        },
    ))?;
    NORM_MAX.add_specialisation(Specialisation::unary(
        "max_distdense",
        |a: &DistDense, _: &()| Ok(max_f64(norm::max_dense(a.local()))),
    ))?;
    NORM_MAX.add_specialisation(Specialisation::unary(
        "max_distcsr",
        |a: &DistCsr, _: &()| Ok(max_f64(norm::max_csr(a.local()))),
    ))?;
    NORM_ONE.add_specialisation(Specialisation::unary(
        "one_distcsr",
        |a: &DistCsr, _: &()| Ok(one_norm(a.local())),
    ))?;
    NORM_ONE.add_specialisation(Specialisation::unary(
        "one_distdense",
        |a: &DistDense, _: &()| {
            let l = a.local();
            let lm = l.col_major("norm_one")?;
            let sums: Vec<f64> = (0..l.shape().1)
                .map(|j| lm.col_as_slice(j).iter().map(|z| z.norm()).sum())
                .collect();
            Ok(sum_f64s(&sums).into_iter().fold(0.0, f64::max))
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
    let comm = Comm::world();
    let (nb, na) = (b.shape().0, a.shape().0);
    let rows = nb
        .checked_mul(na)
        .ok_or_else(|| arg("kron: the result's rows overflow usize"))?;
    let mine = block(rows, comm.size, comm.rank);
    let local_b = b.local().shape().0;
    let aligned = mine.start == b.start() * na && mine.len() == local_b * na;
    if !all(aligned) {
        return Err(arg(format!(
            "kron: DistCsr ⊗ Csr needs the {} ranks to split the DistCsr's {nb} rows evenly \
             (row blocks must map to row blocks)",
            comm.size
        )));
    }
    DistCsr::from_local(rows, crate::ops::kron::kron_csr(b.local(), a)?)
}

fn kets(l: &DistDense, r: &DistDense) -> Result<()> {
    if l.shape().1 != 1 || r.shape().1 != 1 {
        return Err(arg("distributed inner takes two kets (n×1)"));
    }
    Ok(())
}

/// `max_j Σ_i |a_ij|`: the local column sums added over the ranks (one vector of `cols`).
fn one_norm(local: &Csr) -> f64 {
    let mut sums = vec![0.0f64; local.shape().1];
    for (&c, v) in local.indices().iter().zip(local.data()) {
        sums[c] += v.norm();
    }
    sum_f64s(&sums).into_iter().fold(0.0, f64::max)
}

/// Whether `a = a†` within `atol`: each rank sends every entry `(i, j, v)` it holds to the
/// owner of row `j` as `(j, i, conj v)`; each owner compares its rows with what it received.
fn isherm(a: &DistCsr, atol: f64) -> Result<bool> {
    let (n, m) = a.shape();
    if n != m {
        return Ok(false);
    }
    let comm = Comm::world();
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
    let sc = counts_i32(&out.iter().map(Vec::len).collect::<Vec<_>>())?;
    let mut rc = vec![0i32; comm.size];
    comm.world.all_to_all_into(&sc[..], &mut rc[..]);
    let mut recv = vec![0.0f64; rc.iter().map(|&c| c as usize).sum()];
    {
        let (sd, rd) = (displacements(&sc), displacements(&rc));
        let part = Partition::new(&send[..], &sc[..], &sd[..]);
        let mut into = PartitionMut::new(&mut recv[..], &rc[..], &rd[..]);
        comm.world.all_to_all_varcount_into(&part, &mut into);
    }
    let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
    for t in recv.chunks_exact(4) {
        r.push(t[0] as usize - a.start());
        c.push(t[1] as usize);
        v.push(c64::new(t[2], t[3]));
    }
    let mirror = Csr::from_triplets(l.shape(), &r, &c, &v)?;
    let diff = add::add_csr(l, &mirror, -ONE)?;
    let here = diff.data().iter().all(|z| z.norm() <= atol);
    Ok(all(here))
}
