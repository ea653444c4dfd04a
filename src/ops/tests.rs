//! Tests of the operations layer as a whole: the dense algorithms' workspace checks, the
//! AVX2 and baseline instances of the shared kernels.

use super::*;
use crate::convert::builtin::{csr_to_dense, dense_to_csr};
use crate::error::Result;
use crate::scalar::{ZERO, c64};
use crate::storage::{Data, Dense};

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
                Err(crate::error::Error::TooLarge {
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
