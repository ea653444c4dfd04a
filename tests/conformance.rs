//! Conformance suite, structured like QuTiP's `qutip/tests/core/data/test_mathematics.py`.
//!
//! For every operation, every input comes in five cases (Csr of density 0.001, Csr of density
//! 0.8 built from sorted rows, the same built from shuffled column order, an all-zero Csr, and a
//! Dense), over the shapes scalar 1×1, bra 1×n, ket n×1, square n×n and 2×n (n = 100, 5 for
//! Kronecker products). Every valid shape combination is checked in every case combination
//! against an independent reference computed with naive loops on `Vec<Vec<c64>>`, for every
//! requested output kind; every invalid combination must give `Error::Shape`. Decompositions
//! are checked through identities evaluated with the same naive loops (`a·a⁻¹ = I`,
//! `u·diag(s)·vh = a`, `a·v = λ·v`, `x·x = a`).
//!
//! Each test prints how many cases it ran; the totals are in `docs/operations.md`.

mod common;

use common::{ATOL, RTOL, Ref, Rng, close, eye, kron, matmul, shape, transpose};
use polymat::ops::permute::{self, Permutation, Subsystems};
use polymat::ops::{Block, EigOrder, EigsOptions, Ptrace, SolveMethod};
use polymat::{Csr, Data, Dense, Error, Kind, Out, c64};

const N: usize = 100;
const N_KRON: usize = 5;
const CASES: [&str; 5] = [
    "csr_0.001",
    "csr_0.8_sorted",
    "csr_0.8_unsorted",
    "csr_zero",
    "dense",
];

/// The five shapes of the suite for size `n`.
fn shapes(n: usize) -> [(usize, usize); 5] {
    [(1, 1), (1, n), (n, 1), (n, n), (2, n)]
}

/// An input of the given case and shape: the reference values and the data.
fn input(case: &str, s: (usize, usize), seed: u64) -> (Ref, Data) {
    let mut rng = Rng::new(seed);
    let density = match case {
        "csr_0.001" => 0.001,
        "csr_zero" => 0.0,
        "dense" => 1.0,
        _ => 0.8,
    };
    let mut r = common::random_ref(&mut rng, s.0, s.1, density);
    if case == "csr_0.001" && r.iter().flatten().all(|x| *x == c64::new(0.0, 0.0)) {
        // keep at least one entry so the case differs from the all-zero one
        r[s.0 / 2][s.1 / 2] = rng.c();
    }
    let data = build(case, &r, &mut rng);
    (r, data)
}

fn build(case: &str, r: &Ref, rng: &mut Rng) -> Data {
    let (m, n) = shape(r);
    match case {
        "dense" => Dense::from_fn(m, n, |i, j| r[i][j]).into(),
        "csr_0.8_unsorted" => {
            // Raw CSR arrays with each row's columns in a shuffled order.
            let (mut indptr, mut indices, mut data) = (vec![0], vec![], vec![]);
            for row in r {
                let mut cols: Vec<usize> =
                    (0..n).filter(|&j| row[j] != c64::new(0.0, 0.0)).collect();
                for k in (1..cols.len()).rev() {
                    cols.swap(k, (rng.next_u64() % (k as u64 + 1)) as usize);
                }
                for j in cols {
                    indices.push(j);
                    data.push(row[j]);
                }
                indptr.push(indices.len());
            }
            Csr::from_raw((m, n), indptr, indices, data).unwrap().into()
        }
        _ => Csr::from_rows(r).unwrap().into(),
    }
}

/// What an operation returns, normalised for comparison.
#[derive(Debug)]
enum Val {
    M(Ref),
    S(c64),
    B(bool),
    List(Vec<Ref>),
}

fn assert_val(got: &Val, want: &Val, what: &str) {
    match (got, want) {
        (Val::M(g), Val::M(w)) => common::assert_ref_close(g, w, what),
        (Val::S(g), Val::S(w)) => assert!(close(*g, *w), "{what}: got {g}, expected {w}"),
        (Val::B(g), Val::B(w)) => assert_eq!(g, w, "{what}"),
        (Val::List(g), Val::List(w)) => {
            assert_eq!(g.len(), w.len(), "{what}: list length");
            for (k, (x, y)) in g.iter().zip(w).enumerate() {
                common::assert_ref_close(x, y, &format!("{what}[{k}]"));
            }
        }
        _ => panic!("{what}: got {got:?}, expected {want:?}"),
    }
}

/// A matrix result: checks the output kind when one was requested.
fn mat(d: polymat::Result<Data>, out: Out) -> polymat::Result<Val> {
    let d = d?;
    if let Some(k) = out.kind() {
        assert_eq!(d.kind(), k, "output kind");
    }
    Ok(Val::M(common::to_ref(&d)))
}

type Expect<'a> = dyn Fn(&[&Ref]) -> Option<Val> + 'a;
type Call<'a> = dyn Fn(&[&Data], Out) -> polymat::Result<Val> + 'a;

/// One operation under test.
struct Op<'a> {
    name: &'a str,
    arity: usize,
    n: usize,
    /// Output kinds to request (matrix results) or just `Auto` (plain values).
    outs: &'a [Out],
    /// Transforms each generated reference input before use (argument index, input).
    prep: &'a (dyn Fn(usize, Ref) -> Ref + 'a),
    /// The reference result, or `None` if the shapes are invalid.
    expect: &'a Expect<'a>,
    call: &'a Call<'a>,
}

const MATRIX_OUTS: [Out; 3] = [Out::Auto, Out::Dense, Out::Csr];
const VALUE_OUTS: [Out; 1] = [Out::Auto];

fn no_prep(_: usize, r: Ref) -> Ref {
    r
}

/// Runs every shape tuple and case tuple; returns the number of checked cases.
fn run(op: &Op<'_>) -> usize {
    let sh = shapes(op.n);
    let mut tuples: Vec<Vec<(usize, usize)>> = vec![vec![]];
    for _ in 0..op.arity {
        tuples = tuples
            .into_iter()
            .flat_map(|t| {
                sh.iter().map(move |s| {
                    let mut t = t.clone();
                    t.push(*s);
                    t
                })
            })
            .collect();
    }
    let mut count = 0;
    let mut seed = 1u64;
    for t in &tuples {
        // Case tuples: the full product for arity ≤ 2, rotations of the five cases for 3.
        let case_tuples: Vec<Vec<&str>> = match op.arity {
            1 => CASES.iter().map(|c| vec![*c]).collect(),
            2 => CASES
                .iter()
                .flat_map(|a| CASES.iter().map(move |b| vec![*a, *b]))
                .collect(),
            _ => (0..CASES.len())
                .map(|k| {
                    (0..op.arity)
                        .map(|i| CASES[(k + i) % CASES.len()])
                        .collect()
                })
                .collect(),
        };
        let mut valid = None;
        for cases in &case_tuples {
            seed += 1;
            let (refs, data): (Vec<Ref>, Vec<Data>) = cases
                .iter()
                .zip(t)
                .enumerate()
                .map(|(i, (c, s))| {
                    let (r, _) = input(c, *s, seed * 31 + i as u64);
                    let r = (op.prep)(i, r);
                    let mut rng = Rng::new(seed ^ 0xabcdef);
                    let d = build(c, &r, &mut rng);
                    (r, d)
                })
                .unzip();
            let rr: Vec<&Ref> = refs.iter().collect();
            let dd: Vec<&Data> = data.iter().collect();
            let want = (op.expect)(&rr);
            let what = format!("{} {:?} {:?}", op.name, t, cases);
            match want {
                None => {
                    let got = (op.call)(&dd, Out::Auto);
                    assert!(
                        matches!(got, Err(Error::Shape { .. })),
                        "{what}: expected a shape error, got {got:?}"
                    );
                    count += 1;
                    valid = Some(false);
                    break; // one case tuple is enough for an invalid shape
                }
                Some(want) => {
                    valid = Some(true);
                    for &out in op.outs {
                        let got =
                            (op.call)(&dd, out).unwrap_or_else(|e| panic!("{what} {out:?}: {e}"));
                        assert_val(&got, &want, &format!("{what} {out:?}"));
                        count += 1;
                    }
                }
            }
        }
        let _ = valid;
    }
    println!("{}: {count} cases", op.name);
    count
}

// ---------------------------------------------------------------- reference helpers

fn zeros(m: usize, n: usize) -> Ref {
    vec![vec![c64::new(0.0, 0.0); n]; m]
}

fn adj(a: &Ref) -> Ref {
    common::map(&transpose(a), |x| x.conj())
}

fn same(a: &Ref, b: &Ref) -> bool {
    shape(a) == shape(b)
}

fn square(a: &Ref) -> bool {
    let (m, n) = shape(a);
    m == n
}

fn entries(a: &Ref) -> impl Iterator<Item = c64> + '_ {
    a.iter().flatten().copied()
}

/// `a + t·I` for square `a`; other shapes unchanged. Makes the suite's random matrices
/// diagonally dominant (well conditioned, spectrum in the right half-plane).
fn shift(a: Ref, t: f64) -> Ref {
    if !square(&a) {
        return a;
    }
    let mut a = a;
    for (i, row) in a.iter_mut().enumerate() {
        row[i] += c64::new(t, 0.0);
    }
    a
}

fn scale(a: &Ref, s: c64) -> Ref {
    common::map(a, |x| x * s)
}

fn vec_entries(a: &Ref) -> Vec<c64> {
    entries(a).collect()
}

/// The left operand of `inner` / `inner_op` as a bra: a 1×n row as it is, an n×1 column
/// conjugated (QuTiP's convention), `None` for a matrix.
fn bra_entries(a: &Ref) -> Option<Vec<c64>> {
    match shape(a) {
        (1, _) => Some(vec_entries(a)),
        (_, 1) => Some(entries(a).map(|x| x.conj()).collect()),
        _ => None,
    }
}

const S: c64 = c64::new(0.5, -1.25);

// ---------------------------------------------------------------- elementwise and products

#[test]
fn binary_same_shape() {
    let mut total = 0;
    total += run(&Op {
        name: "add",
        arity: 2,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &no_prep,
        expect: &|r| same(r[0], r[1]).then(|| Val::M(common::zip(r[0], r[1], |x, y| x + y))),
        call: &|d, out| mat(polymat::add(d[0], d[1], out), out),
    });
    total += run(&Op {
        name: "add_scaled",
        arity: 2,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &no_prep,
        expect: &|r| same(r[0], r[1]).then(|| Val::M(common::zip(r[0], r[1], |x, y| x + S * y))),
        call: &|d, out| mat(polymat::add_scaled(d[0], d[1], S, out), out),
    });
    total += run(&Op {
        name: "sub",
        arity: 2,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &no_prep,
        expect: &|r| same(r[0], r[1]).then(|| Val::M(common::zip(r[0], r[1], |x, y| x - y))),
        call: &|d, out| mat(polymat::sub(d[0], d[1], out), out),
    });
    total += run(&Op {
        name: "multiply",
        arity: 2,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &no_prep,
        expect: &|r| same(r[0], r[1]).then(|| Val::M(common::zip(r[0], r[1], |x, y| x * y))),
        call: &|d, out| mat(polymat::multiply(d[0], d[1], out), out),
    });
    total += run(&Op {
        name: "isequal",
        arity: 2,
        n: N,
        outs: &VALUE_OUTS,
        prep: &no_prep,
        expect: &|r| {
            same(r[0], r[1])
                .then(|| Val::B(entries(r[0]).zip(entries(r[1])).all(|(x, y)| close(x, y))))
        },
        call: &|d, _| polymat::isequal(d[0], d[1], ATOL, RTOL).map(Val::B),
    });
    total += run(&Op {
        name: "iadd",
        arity: 2,
        n: N,
        outs: &VALUE_OUTS,
        prep: &no_prep,
        expect: &|r| same(r[0], r[1]).then(|| Val::M(common::zip(r[0], r[1], |x, y| x + S * y))),
        call: &|d, _| {
            let mut a = d[0].clone(); // shared with the suite's copy: exercises the fallback
            let kind = a.kind();
            polymat::iadd(&mut a, d[1], S)?;
            assert_eq!(a.kind(), kind, "iadd keeps the kind");
            let mut fresh = polymat::to(kind, &polymat::add(d[0], d[0], Out::Auto)?)?;
            polymat::imul(&mut fresh, c64::new(0.5, 0.0))?; // fresh = d[0], unshared
            polymat::iadd(&mut fresh, d[1], S)?;
            assert_val(
                &Val::M(common::to_ref(&fresh)),
                &Val::M(common::to_ref(&a)),
                "iadd in place vs fallback",
            );
            Ok(Val::M(common::to_ref(&a)))
        },
    });
    println!("binary_same_shape total: {total}");
}

#[test]
fn products() {
    let mut total = 0;
    total += run(&Op {
        name: "matmul",
        arity: 2,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &no_prep,
        expect: &|r| (shape(r[0]).1 == shape(r[1]).0).then(|| Val::M(matmul(r[0], r[1]))),
        call: &|d, out| mat(polymat::matmul(d[0], d[1], out), out),
    });
    total += run(&Op {
        name: "matmul_dag",
        arity: 2,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &no_prep,
        expect: &|r| (shape(r[0]).1 == shape(r[1]).1).then(|| Val::M(matmul(r[0], &adj(r[1])))),
        call: &|d, out| mat(polymat::matmul_dag(d[0], d[1], out), out),
    });
    total += run(&Op {
        name: "matmul_outer",
        arity: 2,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &no_prep,
        expect: &|r| (shape(r[0]).1 == 1 && shape(r[1]).0 == 1).then(|| Val::M(matmul(r[0], r[1]))),
        call: &|d, out| mat(polymat::matmul_outer(d[0], d[1], out), out),
    });
    total += run(&Op {
        name: "inner",
        arity: 2,
        n: N,
        outs: &VALUE_OUTS,
        prep: &no_prep,
        expect: &|r| {
            let k = shape(r[1]);
            let lv = bra_entries(r[0])?;
            (k.1 == 1 && k.0 == lv.len())
                .then(|| Val::S(lv.iter().zip(entries(r[1])).map(|(x, y)| x * y).sum()))
        },
        call: &|d, _| polymat::inner(d[0], d[1]).map(Val::S),
    });
    total += run(&Op {
        name: "expect",
        arity: 2,
        n: N,
        outs: &VALUE_OUTS,
        prep: &no_prep,
        expect: &|r| {
            let (o, s) = (shape(r[0]), shape(r[1]));
            (o.0 == o.1 && s.0 == o.0 && (s.1 == 1 || s.1 == o.0)).then(|| {
                if s.1 == 1 {
                    let ov = matmul(r[0], r[1]);
                    Val::S(
                        entries(r[1])
                            .zip(entries(&ov))
                            .map(|(x, y)| x.conj() * y)
                            .sum(),
                    )
                } else {
                    Val::S(common::trace(&matmul(r[0], r[1])))
                }
            })
        },
        call: &|d, _| polymat::expect(d[0], d[1]).map(Val::S),
    });
    total += run(&Op {
        name: "expect_super",
        arity: 2,
        n: N,
        outs: &VALUE_OUTS,
        prep: &no_prep,
        expect: &|r| {
            let (s, v) = (shape(r[0]), shape(r[1]));
            let n = (v.0 as f64).sqrt().round() as usize;
            (v.1 == 1 && n * n == v.0 && s == (v.0, v.0)).then(|| {
                let sv = matmul(r[0], r[1]);
                Val::S((0..n).map(|i| sv[i * (n + 1)][0]).sum())
            })
        },
        call: &|d, _| polymat::expect_super(d[0], d[1]).map(Val::S),
    });
    total += run(&Op {
        name: "inner_op",
        arity: 3,
        n: N,
        outs: &VALUE_OUTS,
        prep: &no_prep,
        expect: &|r| {
            let (o, k) = (shape(r[1]), shape(r[2]));
            let lv = bra_entries(r[0])?;
            (lv.len() == o.0 && k.1 == 1 && k.0 == o.1).then(|| {
                let ok = matmul(r[1], r[2]);
                Val::S(lv.iter().zip(entries(&ok)).map(|(x, y)| x * y).sum())
            })
        },
        call: &|d, _| polymat::inner_op(d[0], d[1], d[2]).map(Val::S),
    });
    println!("products total: {total}");
}

#[test]
fn kronecker() {
    let mut total = 0;
    total += run(&Op {
        name: "kron",
        arity: 2,
        n: N_KRON,
        outs: &MATRIX_OUTS,
        prep: &no_prep,
        expect: &|r| Some(Val::M(kron(r[0], r[1]))),
        call: &|d, out| mat(polymat::kron(d[0], d[1], out), out),
    });
    total += run(&Op {
        name: "kron_transpose",
        arity: 2,
        n: N_KRON,
        outs: &MATRIX_OUTS,
        prep: &no_prep,
        expect: &|r| Some(Val::M(kron(&transpose(r[0]), r[1]))),
        call: &|d, out| mat(polymat::kron_transpose(d[0], d[1], out), out),
    });
    println!("kronecker total: {total}");
}

// ---------------------------------------------------------------- unary

#[test]
fn unary_elementwise() {
    let mut total = 0;
    type Unary = (
        &'static str,
        fn(c64) -> c64,
        fn(&Data, Out) -> polymat::Result<Data>,
    );
    let unary: [Unary; 3] = [
        ("neg", |x| -x, polymat::neg),
        ("conj", |x| x.conj(), polymat::conj),
        ("mul", |x| x * S, |d, out| polymat::mul(d, S, out)),
    ];
    for (name, f, g) in unary {
        total += run(&Op {
            name,
            arity: 1,
            n: N,
            outs: &MATRIX_OUTS,
            prep: &no_prep,
            expect: &|r| Some(Val::M(common::map(r[0], f))),
            call: &|d, out| mat(g(d[0], out), out),
        });
    }
    total += run(&Op {
        name: "transpose",
        arity: 1,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &no_prep,
        expect: &|r| Some(Val::M(transpose(r[0]))),
        call: &|d, out| mat(polymat::transpose(d[0], out), out),
    });
    total += run(&Op {
        name: "adjoint",
        arity: 1,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &no_prep,
        expect: &|r| Some(Val::M(adj(r[0]))),
        call: &|d, out| mat(polymat::adjoint(d[0], out), out),
    });
    total += run(&Op {
        name: "tidyup",
        arity: 1,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &no_prep,
        expect: &|r| {
            let t = |x: f64| if x.abs() < 0.3 { 0.0 } else { x };
            Some(Val::M(common::map(r[0], |x| c64::new(t(x.re), t(x.im)))))
        },
        call: &|d, out| mat(polymat::tidyup(d[0], 0.3, out), out),
    });
    total += run(&Op {
        name: "imul",
        arity: 1,
        n: N,
        outs: &VALUE_OUTS,
        prep: &no_prep,
        expect: &|r| Some(Val::M(scale(r[0], S))),
        call: &|d, _| {
            let mut a = d[0].clone();
            polymat::imul(&mut a, S)?;
            assert_eq!(a.kind(), d[0].kind());
            Ok(Val::M(common::to_ref(&a)))
        },
    });
    println!("unary_elementwise total: {total}");
}

#[test]
fn reductions_and_predicates() {
    let mut total = 0;
    total += run(&Op {
        name: "trace",
        arity: 1,
        n: N,
        outs: &VALUE_OUTS,
        prep: &no_prep,
        expect: &|r| square(r[0]).then(|| Val::S(common::trace(r[0]))),
        call: &|d, _| polymat::trace(d[0]).map(Val::S),
    });
    total += run(&Op {
        name: "trace_oper_ket",
        arity: 1,
        n: N,
        outs: &VALUE_OUTS,
        prep: &no_prep,
        expect: &|r| {
            let (m, k) = shape(r[0]);
            let n = (m as f64).sqrt().round() as usize;
            (k == 1 && n * n == m).then(|| Val::S((0..n).map(|i| r[0][i * (n + 1)][0]).sum()))
        },
        call: &|d, _| polymat::trace_oper_ket(d[0]).map(Val::S),
    });
    let re = |x: f64| Val::S(c64::new(x, 0.0));
    total += run(&Op {
        name: "norm::frobenius",
        arity: 1,
        n: N,
        outs: &VALUE_OUTS,
        prep: &no_prep,
        expect: &|r| Some(re(entries(r[0]).map(|x| x.norm_sqr()).sum::<f64>().sqrt())),
        call: &|d, _| polymat::ops::norm::frobenius(d[0]).map(re),
    });
    total += run(&Op {
        name: "norm::l2",
        arity: 1,
        n: N,
        outs: &VALUE_OUTS,
        prep: &no_prep,
        expect: &|r| {
            let (m, n) = shape(r[0]);
            (m == 1 || n == 1).then(|| re(entries(r[0]).map(|x| x.norm_sqr()).sum::<f64>().sqrt()))
        },
        call: &|d, _| polymat::ops::norm::l2(d[0]).map(re),
    });
    total += run(&Op {
        name: "norm::max",
        arity: 1,
        n: N,
        outs: &VALUE_OUTS,
        prep: &no_prep,
        expect: &|r| Some(re(entries(r[0]).map(|x| x.norm()).fold(0.0, f64::max))),
        call: &|d, _| polymat::ops::norm::max(d[0]).map(re),
    });
    total += run(&Op {
        name: "norm::one",
        arity: 1,
        n: N,
        outs: &VALUE_OUTS,
        prep: &no_prep,
        expect: &|r| {
            let t = transpose(r[0]);
            Some(re(t
                .iter()
                .map(|c| c.iter().map(|x| x.norm()).sum::<f64>())
                .fold(0.0, f64::max)))
        },
        call: &|d, _| polymat::ops::norm::one(d[0]).map(re),
    });
    total += run(&Op {
        name: "mean_nonzero",
        arity: 1,
        n: N,
        outs: &VALUE_OUTS,
        prep: &no_prep,
        expect: &|r| {
            let nz: Vec<c64> = entries(r[0]).filter(|x| *x != c64::new(0.0, 0.0)).collect();
            let k = nz.len().max(1) as f64;
            Some(Val::S(nz.iter().sum::<c64>() / k))
        },
        call: &|d, _| polymat::mean_nonzero(d[0]).map(Val::S),
    });
    total += run(&Op {
        name: "mean_abs_nonzero",
        arity: 1,
        n: N,
        outs: &VALUE_OUTS,
        prep: &no_prep,
        expect: &|r| {
            let nz: Vec<f64> = entries(r[0])
                .filter(|x| *x != c64::new(0.0, 0.0))
                .map(|x| x.norm())
                .collect();
            Some(re(nz.iter().sum::<f64>() / nz.len().max(1) as f64))
        },
        call: &|d, _| polymat::mean_abs_nonzero(d[0]).map(re),
    });
    total += run(&Op {
        name: "iszero",
        arity: 1,
        n: N,
        outs: &VALUE_OUTS,
        prep: &no_prep,
        expect: &|r| Some(Val::B(entries(r[0]).all(|x| x.norm() <= 1e-12))),
        call: &|d, _| polymat::iszero(d[0], 1e-12).map(Val::B),
    });
    // Hermitian and diagonal inputs are made for half the arguments so both answers occur.
    let herm_prep = |_: usize, r: Ref| {
        if square(&r) && r.len() > 1 && r[0][1].re > 0.0 {
            common::zip(&r, &adj(&r), |x, y| x + y)
        } else {
            r
        }
    };
    total += run(&Op {
        name: "isherm",
        arity: 1,
        n: N,
        outs: &VALUE_OUTS,
        prep: &herm_prep,
        // QuTiP: a non-square matrix is simply not Hermitian.
        expect: &|r| {
            let a = adj(r[0]);
            Some(Val::B(
                square(r[0])
                    && entries(r[0])
                        .zip(entries(&a))
                        .all(|(x, y)| (x - y).norm() <= 1e-12),
            ))
        },
        call: &|d, _| polymat::isherm(d[0], 1e-12).map(Val::B),
    });
    total += run(&Op {
        name: "isdiag",
        arity: 1,
        n: N,
        outs: &VALUE_OUTS,
        prep: &|_, r: Ref| {
            if r.len() > 1 && r[0].len() > 1 && r[1][0].re > 0.0 {
                let mut d = r.clone();
                for (i, row) in d.iter_mut().enumerate() {
                    for (j, x) in row.iter_mut().enumerate() {
                        if i != j {
                            *x = c64::new(0.0, 0.0);
                        }
                    }
                }
                d
            } else {
                r
            }
        },
        expect: &|r| {
            Some(Val::B(r[0].iter().enumerate().all(|(i, row)| {
                row.iter()
                    .enumerate()
                    .all(|(j, x)| i == j || x.norm() <= 1e-12)
            })))
        },
        call: &|d, _| polymat::isdiag(d[0], 1e-12).map(Val::B),
    });
    println!("reductions_and_predicates total: {total}");
}

// ---------------------------------------------------------------- structure

#[test]
fn structure() {
    let mut total = 0;
    total += run(&Op {
        name: "reshape",
        arity: 1,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &no_prep,
        expect: &|r| {
            let (m, n) = shape(r[0]);
            let flat = vec_entries(r[0]);
            Some(Val::M(
                (0..n).map(|i| flat[i * m..(i + 1) * m].to_vec()).collect(),
            ))
        },
        call: &|d, out| {
            let (m, n) = d[0].shape();
            mat(polymat::reshape(d[0], (n, m), out), out)
        },
    });
    total += run(&Op {
        name: "column_stack",
        arity: 1,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &no_prep,
        expect: &|r| {
            Some(Val::M(
                vec_entries(&transpose(r[0]))
                    .into_iter()
                    .map(|x| vec![x])
                    .collect(),
            ))
        },
        call: &|d, out| mat(polymat::column_stack(d[0], out), out),
    });
    total += run(&Op {
        name: "column_unstack",
        arity: 1,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &no_prep,
        expect: &|r| {
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
        call: &|d, out| mat(polymat::column_unstack(d[0], 10, out), out),
    });
    total += run(&Op {
        name: "split_columns",
        arity: 1,
        n: N,
        outs: &VALUE_OUTS,
        prep: &no_prep,
        expect: &|r| {
            let t = transpose(r[0]);
            Some(Val::List(
                t.iter()
                    .map(|c| c.iter().map(|x| vec![*x]).collect())
                    .collect(),
            ))
        },
        call: &|d, _| {
            let cols = polymat::split_columns(d[0])?;
            assert!(cols.iter().all(|c| c.kind() == d[0].kind()));
            Ok(Val::List(cols.iter().map(common::to_ref).collect()))
        },
    });
    total += run(&Op {
        name: "project",
        arity: 1,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &no_prep,
        expect: &|r| {
            let (m, n) = shape(r[0]);
            if n == 1 {
                Some(Val::M(matmul(r[0], &adj(r[0]))))
            } else if m == 1 {
                Some(Val::M(matmul(&adj(r[0]), r[0])))
            } else {
                None
            }
        },
        call: &|d, out| mat(polymat::project(d[0], out), out),
    });
    // A fixed pseudo-random permutation of each axis.
    let perm = |len: usize| {
        let mut p: Vec<usize> = (0..len).collect();
        let mut rng = Rng::new(len as u64);
        for k in (1..len).rev() {
            p.swap(k, (rng.next_u64() % (k as u64 + 1)) as usize);
        }
        p
    };
    total += run(&Op {
        name: "permute::indices",
        arity: 1,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &no_prep,
        expect: &|r| {
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
        call: &|d, out| {
            let (m, n) = d[0].shape();
            let p = Permutation {
                rows: Some(perm(m)),
                cols: Some(perm(n)),
            };
            mat(permute::indices(d[0], &p, out), out)
        },
    });
    // 100 = 4 × 25: swapping the subsystems sends index 25a + b to 4b + a.
    total += run(&Op {
        name: "permute::dimensions",
        arity: 1,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &no_prep,
        expect: &|r| {
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
        call: &|d, out| {
            let s = Subsystems {
                dims: vec![4, 25],
                order: vec![1, 0],
            };
            mat(permute::dimensions(d[0], &s, out), out)
        },
    });
    total += run(&Op {
        name: "ptrace",
        arity: 1,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &no_prep,
        expect: &|r| {
            (shape(r[0]) == (100, 100)).then(|| {
                // keep the 25-dimensional second subsystem: out[b, b'] = Σ_a r[25a + b][25a + b']
                let mut o = zeros(25, 25);
                for a in 0..4 {
                    for b in 0..25 {
                        for c in 0..25 {
                            o[b][c] += r[0][25 * a + b][25 * a + c];
                        }
                    }
                }
                Val::M(o)
            })
        },
        call: &|d, out| {
            let p = Ptrace {
                dims: vec![4, 25],
                keep: vec![1],
            };
            mat(polymat::ptrace(d[0], &p, out), out)
        },
    });
    total += run(&Op {
        name: "block_extract",
        arity: 1,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &no_prep,
        expect: &|r| {
            let (m, n) = shape(r[0]);
            let (rows, cols) = (m / 2..m, n / 3..n);
            Some(Val::M(
                rows.map(|i| r[0][i][cols.clone()].to_vec()).collect(),
            ))
        },
        call: &|d, out| {
            let (m, n) = d[0].shape();
            mat(polymat::block_extract(d[0], (m / 2..m, n / 3..n), out), out)
        },
    });
    total += run(&Op {
        name: "block_overwrite",
        arity: 2,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &no_prep,
        expect: &|r| {
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
        call: &|d, out| {
            let ((m, n), (bm, bn)) = (d[0].shape(), d[1].shape());
            let at = (m.saturating_sub(bm), n.saturating_sub(bn));
            mat(polymat::block_overwrite(d[0], d[1], at, out), out)
        },
    });
    total += run(&Op {
        name: "block_build",
        arity: 2,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &no_prep,
        // Two blocks on the diagonal of a 2×2 block grid: always valid.
        expect: &|r| {
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
        call: &|d, out| {
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
    });
    println!("structure total: {total}");
}

// ---------------------------------------------------------------- linear algebra

/// Square inputs shifted by `n·I` (well conditioned, spectrum in the right half-plane).
fn dominant(_: usize, r: Ref) -> Ref {
    let n = r.len() as f64;
    shift(r, n)
}

fn pow_ref(a: &Ref, k: u32) -> Ref {
    (0..k).fold(eye(a.len()), |acc, _| matmul(&acc, a))
}

/// exp(a) by a 40-term Taylor series after scaling by 2^-s and squaring (naive loops).
fn expm_ref(a: &Ref) -> Ref {
    let norm: f64 = transpose(a)
        .iter()
        .map(|c| c.iter().map(|x| x.norm()).sum::<f64>())
        .fold(0.0, f64::max);
    let s = if norm > 0.5 {
        (norm / 0.5).log2().ceil() as i32
    } else {
        0
    };
    let x = scale(a, c64::new(2f64.powi(-s), 0.0));
    let mut term = eye(a.len());
    let mut sum = eye(a.len());
    for k in 1..40 {
        term = scale(&matmul(&term, &x), c64::new(1.0 / k as f64, 0.0));
        sum = common::zip(&sum, &term, |p, q| p + q);
    }
    for _ in 0..s {
        sum = matmul(&sum, &sum);
    }
    sum
}

#[test]
fn linear_algebra() {
    let mut total = 0;
    total += run(&Op {
        name: "pow",
        arity: 1,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &|_, r| scale(&r, c64::new(0.1, 0.0)),
        expect: &|r| square(r[0]).then(|| Val::M(pow_ref(r[0], 3))),
        call: &|d, out| mat(polymat::pow(d[0], 3, out), out),
    });
    total += run(&Op {
        name: "expm",
        arity: 1,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &|_, r| {
            let k = 1.0 / r.len() as f64;
            scale(&r, c64::new(k, 0.0))
        },
        expect: &|r| square(r[0]).then(|| Val::M(expm_ref(r[0]))),
        call: &|d, out| mat(polymat::expm(d[0], out), out),
    });
    total += run(&Op {
        name: "inv",
        arity: 1,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &dominant,
        expect: &|r| square(r[0]).then(|| Val::M(eye(r[0].len()))),
        call: &|d, out| {
            let x = polymat::inv(d[0], out)?;
            if let Some(k) = out.kind() {
                assert_eq!(x.kind(), k);
            }
            Ok(Val::M(matmul(&common::to_ref(d[0]), &common::to_ref(&x))))
        },
    });
    total += run(&Op {
        name: "solve",
        arity: 2,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &|i, r| if i == 0 { dominant(i, r) } else { r },
        expect: &|r| {
            let (a, b) = (shape(r[0]), shape(r[1]));
            (a.0 == a.1 && a.0 == b.0).then(|| Val::M(r[1].clone()))
        },
        call: &|d, out| {
            let x = polymat::solve(d[0], d[1], SolveMethod::Lu, out)?;
            if let Some(k) = out.kind() {
                assert_eq!(x.kind(), k);
            }
            Ok(Val::M(matmul(&common::to_ref(d[0]), &common::to_ref(&x))))
        },
    });
    total += run(&Op {
        name: "sqrtm",
        arity: 1,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &dominant,
        expect: &|r| square(r[0]).then(|| Val::M(r[0].clone())),
        call: &|d, out| {
            let x = common::to_ref(&polymat::sqrtm(d[0], out)?);
            Ok(Val::M(matmul(&x, &x)))
        },
    });
    total += run(&Op {
        name: "logm",
        arity: 1,
        n: N,
        outs: &MATRIX_OUTS,
        prep: &dominant,
        expect: &|r| square(r[0]).then(|| Val::M(r[0].clone())),
        call: &|d, out| {
            let l = polymat::logm(d[0], out)?;
            if let Some(k) = out.kind() {
                assert_eq!(l.kind(), k);
            }
            Ok(Val::M(expm_ref(&common::to_ref(&l))))
        },
    });
    for order in [EigOrder::Low, EigOrder::High] {
        total += run(&Op {
            name: "eigs",
            arity: 1,
            n: N,
            outs: &VALUE_OUTS,
            prep: &no_prep,
            expect: &|r| square(r[0]).then(|| Val::M(zeros(r[0].len(), r[0].len()))),
            call: &|d, _| {
                let opts = EigsOptions {
                    order,
                    ..Default::default()
                };
                let e = polymat::eigs(d[0], opts)?;
                let sorted = e.values.windows(2).all(|w| match order {
                    EigOrder::Low => w[0].re <= w[1].re,
                    EigOrder::High => w[0].re >= w[1].re,
                });
                assert!(sorted, "eigenvalues out of order: {:?}", e.values);
                let v = common::to_ref(&e.vectors.expect("vectors requested").into());
                let (a, n) = (common::to_ref(d[0]), e.values.len());
                let av = matmul(&a, &v);
                let trace_sum: c64 = e.values.iter().sum();
                assert!(close(trace_sum, common::trace(&a)), "Σλ = Tr a");
                Ok(Val::M(
                    (0..n)
                        .map(|i| (0..n).map(|j| av[i][j] - v[i][j] * e.values[j]).collect())
                        .collect(),
                ))
            },
        });
    }
    total += run(&Op {
        name: "svd",
        arity: 1,
        n: N,
        outs: &VALUE_OUTS,
        prep: &no_prep,
        expect: &|r| Some(Val::M(r[0].clone())),
        call: &|d, _| {
            let f = polymat::svd(d[0], true)?;
            assert!(
                f.s.windows(2).all(|w| w[0] >= w[1]),
                "singular values nonincreasing"
            );
            let values_only = polymat::svd(d[0], false)?;
            for (x, y) in f.s.iter().zip(&values_only.s) {
                assert!((x - y).abs() <= ATOL + RTOL * y.abs());
            }
            let u = common::to_ref(&f.u.expect("u").into());
            let vh = common::to_ref(&f.vh.expect("vh").into());
            let us: Ref = u
                .iter()
                .map(|row| row.iter().zip(&f.s).map(|(x, s)| x * s).collect())
                .collect();
            Ok(Val::M(matmul(&us, &vh)))
        },
    });
    println!("linear_algebra total: {total}");
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
