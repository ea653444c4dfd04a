//! Structure: reshapes, permutations, blocks, partial traces, constructors, and the shape
//! errors of every operation.

use super::common::{self, *};
use super::harness::*;
use polymat::ops::permute::{self, Permutation, Subsystems};
use polymat::ops::{self, Block, Ptrace};
use polymat::{Data, Error, Kind, Out, c64};

#[test]
fn structure() {
    let mut total = 0;
    total += run(&Op::matrix(
        "reshape",
        1,
        &|r| {
            let (m, n) = shape(r[0]);
            let flat = vec_entries(r[0]);
            Some(Val::M(
                (0..n).map(|i| flat[i * m..(i + 1) * m].to_vec()).collect(),
            ))
        },
        &|d, out| {
            let (m, n) = d[0].shape();
            mat(polymat::reshape(d[0], (n, m), out), out)
        },
    ));
    total += run(&Op::matrix(
        "column_stack",
        1,
        &|r| {
            Some(Val::M(
                vec_entries(&transpose(r[0]))
                    .into_iter()
                    .map(|x| vec![x])
                    .collect(),
            ))
        },
        &|d, out| mat(polymat::column_stack(d[0], out), out),
    ));
    total += run(&Op::matrix(
        "column_unstack",
        1,
        &|r| {
            let (m, k) = shape(r[0]);
            (k == 1 && m % 10 == 0).then(|| {
                let rows = 10;
                Val::M(
                    (0..rows)
                        .map(|i| (0..m / rows).map(|j| r[0][i + rows * j][0]).collect())
                        .collect(),
                )
            })
        },
        &|d, out| mat(polymat::column_unstack(d[0], 10, out), out),
    ));
    total += run(&Op::value(
        "split_columns",
        1,
        &|r| {
            let t = transpose(r[0]);
            Some(Val::List(
                t.iter()
                    .map(|c| c.iter().map(|x| vec![*x]).collect())
                    .collect(),
            ))
        },
        &|d, _| {
            let cols = polymat::split_columns(d[0])?;
            assert!(cols.iter().all(|c| c.kind() == d[0].kind()));
            Ok(Val::List(cols.iter().map(common::to_ref).collect()))
        },
    ));
    total += run(&Op::matrix(
        "project",
        1,
        &|r| {
            let (m, n) = shape(r[0]);
            if n == 1 {
                Some(Val::M(matmul(r[0], &adj(r[0]))))
            } else if m == 1 {
                Some(Val::M(matmul(&adj(r[0]), r[0])))
            } else {
                None
            }
        },
        &|d, out| mat(polymat::project(d[0], out), out),
    ));
    // A fixed pseudo-random permutation of each axis.
    let perm = |len: usize| {
        let mut p: Vec<usize> = (0..len).collect();
        let mut rng = Rng::new(len as u64);
        for k in (1..len).rev() {
            p.swap(k, (rng.next_u64() % (k as u64 + 1)) as usize);
        }
        p
    };
    total += run(&Op::matrix(
        "permute::indices",
        1,
        &|r| {
            let (m, n) = shape(r[0]);
            let (p, q) = (perm(m), perm(n));
            let mut o = zeros(m, n);
            for i in 0..m {
                for j in 0..n {
                    o[p[i]][q[j]] = r[0][i][j];
                }
            }
            Some(Val::M(o))
        },
        &|d, out| {
            let (m, n) = d[0].shape();
            let p = Permutation {
                rows: Some(perm(m)),
                cols: Some(perm(n)),
            };
            mat(permute::indices(d[0], &p, out), out)
        },
    ));
    // 100 = 4 × 25: swapping the subsystems sends index 25a + b to 4b + a.
    total += run(&Op::matrix(
        "permute::dimensions",
        1,
        &|r| {
            let (m, n) = shape(r[0]);
            let ok = |l: usize| l == 1 || l == 100;
            (ok(m) && ok(n) && (m == 100 || n == 100)).then(|| {
                let f = |i: usize, l: usize| if l == 100 { 4 * (i % 25) + i / 25 } else { i };
                let mut o = zeros(m, n);
                for i in 0..m {
                    for j in 0..n {
                        o[f(i, m)][f(j, n)] = r[0][i][j];
                    }
                }
                Val::M(o)
            })
        },
        &|d, out| {
            let s = Subsystems {
                dims: vec![4, 25],
                order: vec![1, 0],
            };
            mat(permute::dimensions(d[0], &s, out), out)
        },
    ));
    // keep the 25-dimensional second subsystem: out[b, b'] = Σ_a r[25a + b][25a + b'], where a
    // ket ψ (or a bra ⟨ψ|) stands for r = |ψ⟩⟨ψ|
    total += run(&Op::matrix(
        "ptrace",
        1,
        &|r| {
            let entry: Box<dyn Fn(usize, usize) -> c64> = match shape(r[0]) {
                (100, 100) => Box::new(|i, j| r[0][i][j]),
                (100, 1) => Box::new(|i, j| r[0][i][0] * r[0][j][0].conj()),
                (1, 100) => Box::new(|i, j| r[0][0][i].conj() * r[0][0][j]),
                _ => return None,
            };
            let mut o = zeros(25, 25);
            for a in 0..4 {
                for (b, row) in o.iter_mut().enumerate() {
                    for (c, x) in row.iter_mut().enumerate() {
                        *x += entry(25 * a + b, 25 * a + c);
                    }
                }
            }
            Some(Val::M(o))
        },
        &|d, out| {
            let p = Ptrace {
                dims: vec![4, 25],
                keep: vec![1],
            };
            mat(polymat::ptrace(d[0], &p, out), out)
        },
    ));
    total += run(&Op::matrix(
        "block_extract",
        1,
        &|r| {
            let (m, n) = shape(r[0]);
            let (rows, cols) = (m / 2..m, n / 3..n);
            Some(Val::M(
                rows.map(|i| r[0][i][cols.clone()].to_vec()).collect(),
            ))
        },
        &|d, out| {
            let (m, n) = d[0].shape();
            mat(polymat::block_extract(d[0], (m / 2..m, n / 3..n), out), out)
        },
    ));
    total += run(&Op::matrix(
        "block_overwrite",
        2,
        &|r| {
            let ((m, n), (bm, bn)) = (shape(r[0]), shape(r[1]));
            (bm <= m && bn <= n).then(|| {
                let mut o = r[0].clone();
                for i in 0..bm {
                    for j in 0..bn {
                        o[m - bm + i][n - bn + j] = r[1][i][j];
                    }
                }
                Val::M(o)
            })
        },
        &|d, out| {
            let ((m, n), (bm, bn)) = (d[0].shape(), d[1].shape());
            let at = (m.saturating_sub(bm), n.saturating_sub(bn));
            mat(polymat::block_overwrite(d[0], d[1], at, out), out)
        },
    ));
    // Two blocks on the diagonal of a 2×2 block grid: always valid.
    total += run(&Op::matrix(
        "block_build",
        2,
        &|r| {
            let ((m, n), (p, q)) = (shape(r[0]), shape(r[1]));
            let mut o = zeros(m + p, n + q);
            for i in 0..m {
                o[i][..n].copy_from_slice(&r[0][i]);
            }
            for i in 0..p {
                o[m + i][n..].copy_from_slice(&r[1][i]);
            }
            Some(Val::M(o))
        },
        &|d, out| {
            let ((m, n), (p, q)) = (d[0].shape(), d[1].shape());
            let blocks = [
                Block {
                    row: 0,
                    col: 0,
                    data: d[0],
                },
                Block {
                    row: 1,
                    col: 1,
                    data: d[1],
                },
            ];
            mat(polymat::block_build(&blocks, &[m, p], &[n, q], out), out)
        },
    ));
    println!("structure total: {total}");
}

/// The output kind follows the request also for the constructors' `_like` forms.
#[test]
fn like_constructors_follow_the_input() {
    for case in CASES {
        let (r, d) = input(case, (3, 3), 7);
        let z = polymat::zeros_like(&d, Out::Auto).unwrap();
        assert_eq!(z.shape(), shape(&r));
        let i = polymat::identity_like(&d, Out::Dense).unwrap();
        assert_eq!(i.kind(), Kind::DENSE);
        common::assert_data_close(&i, &eye(3), "identity_like");
    }
}

#[test]
fn constructors() {
    for out in [Out::Dense, Out::Csr, Out::Dia] {
        let z = polymat::zeros(3, 4, out).unwrap();
        check(&z, out, &vec![vec![c64::new(0.0, 0.0); 4]; 3], "zeros");
        let i = polymat::identity(5, out).unwrap();
        check(&i, out, &eye(5), "identity");
    }
    assert_eq!(polymat::zeros(2, 2, Out::Auto).unwrap().kind(), Kind::CSR);
    assert_eq!(polymat::identity(2, Out::Auto).unwrap().kind(), Kind::CSR);
}

#[test]
fn constructors_closed_forms() {
    let one = c64::new(1.0, 0.0);
    let two = c64::new(2.0, 0.0);
    for out in [Out::Auto, Out::Dense, Out::Csr, Out::Dia] {
        let d = ops::diag(
            vec![vec![one, two, one], vec![two, two]],
            vec![0, -1],
            (3, 3),
            out,
        )
        .unwrap();
        let want: Ref = vec![
            vec![one, c64::new(0.0, 0.0), c64::new(0.0, 0.0)],
            vec![two, two, c64::new(0.0, 0.0)],
            vec![c64::new(0.0, 0.0), two, one],
        ];
        assert_data_close(&d, &want, "diag");
        let r = ops::diag(vec![vec![one, one]], vec![2], (2, 4), out).unwrap();
        assert_eq!(to_ref(&r)[1][3], one);
        let e = ops::one_element((2, 3), (1, 0), two, out).unwrap();
        assert_eq!(to_ref(&e)[1][0], two);
        assert_eq!(
            to_ref(&e)
                .iter()
                .flatten()
                .filter(|x| x.norm() > 0.0)
                .count(),
            1
        );
    }
    assert!(ops::diag(vec![vec![one]], vec![0], (3, 3), Out::Auto).is_err());
    assert!(ops::diag(vec![vec![one]], vec![0, 1], (1, 1), Out::Auto).is_err());
    assert!(ops::one_element((2, 2), (2, 0), one, Out::Auto).is_err());
    for k in KINDS {
        let x = make(&eye(3), k);
        assert_eq!(ops::zeros_like(&x, Out::Auto).unwrap().kind(), k);
        assert_data_close(
            &ops::identity_like(&x, Out::Auto).unwrap(),
            &eye(3),
            "identity_like",
        );
        assert!(matches!(
            ops::identity_like(
                &make(&random_ref(&mut Rng::new(1), 2, 3, 1.0), k),
                Out::Auto
            ),
            Err(Error::Shape { .. })
        ));
    }
}

#[test]
fn every_bad_shape_is_a_shape_error() {
    let mut rng = Rng::new(6);
    let a = random_ref(&mut rng, 2, 3, 0.5);
    let b = random_ref(&mut rng, 3, 3, 0.5);
    let is_shape = |r: polymat::Result<Data>, what: &str| match r {
        Err(Error::Shape { op, shapes, .. }) => {
            assert!(what.starts_with(&op), "{what}: op {op}");
            assert!(!shapes.is_empty());
        }
        other => panic!("{what}: expected a shape error, got {other:?}"),
    };
    for ka in KINDS {
        for kb in KINDS {
            let (x, y) = (make(&a, ka), make(&b, kb));
            for out in OUTS {
                is_shape(polymat::add(&x, &y, out), "add");
                is_shape(polymat::sub(&x, &y, out), "sub");
                is_shape(polymat::multiply(&x, &y, out), "multiply");
                is_shape(polymat::matmul(&y, &x, out), "matmul");
                is_shape(polymat::pow(&x, 2, out), "pow");
            }
            assert!(matches!(
                polymat::isequal(&x, &y, 0.0, 0.0),
                Err(Error::Shape { .. })
            ));
            assert!(matches!(polymat::trace(&x), Err(Error::Shape { .. })));
        }
    }
}

#[test]
fn bad_shapes() {
    let mut rng = Rng::new(16);
    let sq = random_ref(&mut rng, 3, 3, 1.0);
    let ket4 = random_ref(&mut rng, 4, 1, 1.0);
    let wide = random_ref(&mut rng, 2, 3, 1.0);
    for ka in KINDS {
        for kb in KINDS {
            let shape_err = |r: polymat::Result<c64>| matches!(r, Err(Error::Shape { .. }));
            assert!(shape_err(ops::inner(&make(&sq, ka), &make(&ket4, kb))));
            assert!(shape_err(ops::inner(
                &make(&ket4, ka),
                &make(&transpose(&ket4), kb)
            )));
            assert!(shape_err(ops::expect(&make(&sq, ka), &make(&ket4, kb))));
            assert!(shape_err(ops::expect(&make(&wide, ka), &make(&wide, kb))));
            assert!(shape_err(ops::inner_op(
                &make(&ket4, ka),
                &make(&sq, kb),
                &make(&ket4, ka)
            )));
            let r: polymat::Result<Data> =
                ops::matmul_dag(&make(&sq, ka), &make(&ket4, kb), Out::Auto);
            assert!(matches!(r, Err(Error::Shape { .. })));
            assert!(matches!(
                ops::project(&make(&sq, ka), Out::Auto),
                Err(Error::Shape { .. })
            ));
        }
    }
}
