//! Known values and edge cases of the operations added for QuTiP parity: closed forms,
//! defective matrices (the eigenvector-free fallbacks), singular inputs, option handling.

mod common;

use common::{Ref, assert_data_close, eye, kron, matmul};
use polymat::ops::permute::{self, Permutation, Subsystems};
use polymat::ops::{Block, EigOrder, EigsOptions, Ptrace, SolveMethod};
use polymat::{Csr, Data, Dense, Error, Kind, Out, c64};

fn c(re: f64, im: f64) -> c64 {
    c64::new(re, im)
}

fn r(x: f64) -> c64 {
    c(x, 0.0)
}

fn dense(rows: &[&[c64]]) -> Data {
    Dense::from_rows(rows).unwrap().into()
}

#[test]
fn sqrtm_and_logm_of_a_jordan_block_use_the_fallback() {
    // [[1, 1], [0, 1]] is defective: sqrt = [[1, 1/2], [0, 1]], log = [[0, 1], [0, 0]].
    let j = dense(&[&[r(1.0), r(1.0)], &[r(0.0), r(1.0)]]);
    for kind in common::KINDS {
        let a = polymat::to(kind, &j).unwrap();
        let s = polymat::sqrtm(&a, Out::Dense).unwrap();
        assert_data_close(
            &s,
            &vec![vec![r(1.0), r(0.5)], vec![r(0.0), r(1.0)]],
            "sqrtm",
        );
        let l = polymat::logm(&a, Out::Dense).unwrap();
        assert_data_close(
            &l,
            &vec![vec![r(0.0), r(1.0)], vec![r(0.0), r(0.0)]],
            "logm",
        );
    }
    // A 4×4 Jordan block with eigenvalue 2: log = log 2·I + N/2 − N²/8 + N³/24.
    let mut rows = vec![vec![r(0.0); 4]; 4];
    for i in 0..4 {
        rows[i][i] = r(2.0);
        if i < 3 {
            rows[i][i + 1] = r(1.0);
        }
    }
    let a: Data = Dense::from_rows(&rows).unwrap().into();
    let l = polymat::logm(&a, Out::Dense).unwrap();
    let coef = [2f64.ln(), 0.5, -0.125, 1.0 / 24.0];
    let want: Ref = (0..4)
        .map(|i| {
            (0..4)
                .map(|j| if j >= i { r(coef[j - i]) } else { r(0.0) })
                .collect()
        })
        .collect();
    assert_data_close(&l, &want, "logm of a Jordan block");
}

#[test]
fn sqrtm_and_logm_closed_forms() {
    // Hermitian with a negative eigenvalue: sqrt(-4) = 2i, log(-1) = iπ.
    let a = dense(&[&[r(-4.0), r(0.0)], &[r(0.0), r(9.0)]]);
    let s = polymat::sqrtm(&a, Out::Dense).unwrap();
    assert_data_close(
        &s,
        &vec![vec![c(0.0, 2.0), r(0.0)], vec![r(0.0), r(3.0)]],
        "sqrtm",
    );
    let m = dense(&[&[r(-1.0), r(0.0)], &[r(0.0), r(1.0)]]);
    let l = polymat::logm(&m, Out::Csr).unwrap();
    assert_eq!(l.kind(), Kind::CSR);
    assert_data_close(
        &l,
        &vec![
            vec![c(0.0, std::f64::consts::PI), r(0.0)],
            vec![r(0.0), r(0.0)],
        ],
        "logm",
    );
    // The rotation generator: exp(θ[[0, -1], [1, 0]]) = R(θ), so logm(R(θ)) recovers it.
    let t: f64 = 0.7;
    let rot = dense(&[&[r(t.cos()), r(-t.sin())], &[r(t.sin()), r(t.cos())]]);
    let g = polymat::logm(&rot, Out::Dense).unwrap();
    assert_data_close(
        &g,
        &vec![vec![r(0.0), r(-t)], vec![r(t), r(0.0)]],
        "logm(R)",
    );
    // A singular matrix has no logarithm.
    let z = dense(&[&[r(0.0), r(1.0)], &[r(0.0), r(0.0)]]);
    assert!(matches!(
        polymat::logm(&z, Out::Auto),
        Err(Error::Numerical { .. })
    ));
    assert!(matches!(
        polymat::sqrtm(&Dense::zeros(2, 3).into(), Out::Auto),
        Err(Error::Shape { .. })
    ));
}

#[test]
fn inverse_and_solve() {
    let a = dense(&[&[r(4.0), r(7.0)], &[r(2.0), r(6.0)]]);
    let inv = polymat::inv(&a, Out::Auto).unwrap();
    assert_data_close(
        &inv,
        &vec![vec![r(0.6), r(-0.7)], vec![r(-0.2), r(0.4)]],
        "inverse by hand",
    );
    for kind in common::KINDS {
        let singular = polymat::to(kind, &dense(&[&[r(1.0), r(2.0)], &[r(2.0), r(4.0)]])).unwrap();
        let b: Data = Dense::from_fn(2, 1, |_, _| r(1.0)).into();
        assert!(
            matches!(
                polymat::solve(&singular, &b, SolveMethod::Lu, Out::Auto),
                Err(Error::Numerical { .. })
            ),
            "{kind}"
        );
        assert!(matches!(
            polymat::inv(&singular, Out::Auto),
            Err(Error::Numerical { .. })
        ));
    }
    // A structurally singular sparse matrix: an empty row.
    let empty_row = Csr::from_triplets((2, 2), &[0], &[0], &[r(1.0)])
        .unwrap()
        .into();
    let b: Data = Dense::from_fn(2, 1, |_, _| r(1.0)).into();
    assert!(matches!(
        polymat::solve(&empty_row, &b, SolveMethod::Lu, Out::Auto),
        Err(Error::Numerical { .. })
    ));
    // Least squares: fit y = 1 + 2x through three exact points.
    let x = dense(&[&[r(1.0), r(0.0)], &[r(1.0), r(1.0)], &[r(1.0), r(2.0)]]);
    let y = dense(&[&[r(1.0)], &[r(3.0)], &[r(5.0)]]);
    for kind in common::KINDS {
        let xk = polymat::to(kind, &x).unwrap();
        let p = polymat::solve(&xk, &y, SolveMethod::Lstsq, Out::Dense).unwrap();
        assert_data_close(&p, &vec![vec![r(1.0)], vec![r(2.0)]], "lstsq");
    }
    assert!(matches!(
        polymat::solve(&x, &y, SolveMethod::Lu, Out::Auto),
        Err(Error::Shape { .. })
    ));
    let dependent = dense(&[&[r(1.0), r(2.0)], &[r(2.0), r(4.0)], &[r(3.0), r(6.0)]]);
    assert!(matches!(
        polymat::solve(&dependent, &y, SolveMethod::Lstsq, Out::Auto),
        Err(Error::Numerical { .. })
    ));
}

#[test]
fn eigs_options() {
    // σx + 2σz: eigenvalues ±√5.
    let h = dense(&[&[r(2.0), r(1.0)], &[r(1.0), r(-2.0)]]);
    let s5 = 5f64.sqrt();
    let low = polymat::eigs(&h, EigsOptions::default()).unwrap();
    assert!((low.values[0] - r(-s5)).norm() < 1e-14 && (low.values[1] - r(s5)).norm() < 1e-14);
    let top = polymat::eigs(
        &h,
        EigsOptions::default()
            .order(EigOrder::High)
            .count(1)
            .vectors(false),
    )
    .unwrap();
    assert_eq!(top.values.len(), 1);
    assert!((top.values[0] - r(s5)).norm() < 1e-14 && top.vectors.is_none());
    // Forcing the general solver gives the same values.
    let general = polymat::eigs(&h, EigsOptions::default().hermitian(false)).unwrap();
    for (x, y) in general.values.iter().zip(&low.values) {
        assert!((x - y).norm() < 1e-12);
    }
    // A rotation has eigenvalues e^{±iθ}, sorted by real part then imaginary part.
    let t: f64 = 0.3;
    let rot = dense(&[&[r(t.cos()), r(-t.sin())], &[r(t.sin()), r(t.cos())]]);
    let e = polymat::eigs(&rot, EigsOptions::default()).unwrap();
    assert!((e.values[0] - c(t.cos(), -t.sin())).norm() < 1e-14);
    assert!((e.values[1] - c(t.cos(), t.sin())).norm() < 1e-14);
    assert!(matches!(
        polymat::eigs(&h, EigsOptions::default().count(3)),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        polymat::eigs(&Dense::zeros(2, 3).into(), EigsOptions::default()),
        Err(Error::Shape { .. })
    ));
}

#[test]
fn ptrace_of_a_bell_state_and_a_product() {
    // (|00⟩ + |11⟩)/√2: each half is maximally mixed.
    let h = std::f64::consts::FRAC_1_SQRT_2;
    let bell = Csr::from_triplets((4, 1), &[0, 3], &[0, 0], &[r(h), r(h)])
        .unwrap()
        .into();
    let rho = polymat::project(&bell, Out::Auto).unwrap();
    for keep in [0, 1] {
        let p = Ptrace {
            dims: vec![2, 2],
            keep: vec![keep],
        };
        let half = polymat::ptrace(&rho, &p, Out::Auto).unwrap();
        assert_eq!(half.kind(), Kind::CSR);
        assert_data_close(&half, &common::map(&eye(2), |x| x * 0.5), "Bell marginal");
    }
    // Tr₀₂(A ⊗ B ⊗ C) = Tr A · Tr C · B with three subsystems of different sizes.
    let mut rng = common::Rng::new(5);
    let (a, b, cc) = (
        common::random_ref(&mut rng, 2, 2, 1.0),
        common::random_ref(&mut rng, 3, 3, 1.0),
        common::random_ref(&mut rng, 4, 4, 1.0),
    );
    let abc = kron(&kron(&a, &b), &cc);
    let scale = common::trace(&a) * common::trace(&cc);
    for kind in common::KINDS {
        let p = Ptrace {
            dims: vec![2, 3, 4],
            keep: vec![1],
        };
        let got = polymat::ptrace(&common::make(&abc, kind), &p, Out::Auto).unwrap();
        assert_data_close(&got, &common::map(&b, |x| x * scale), "Tr₀₂");
        // keep in any order is sorted; keeping everything is the identity map.
        let all = Ptrace {
            dims: vec![2, 3, 4],
            keep: vec![2, 0, 1],
        };
        let same = polymat::ptrace(&common::make(&abc, kind), &all, Out::Auto).unwrap();
        assert_data_close(&same, &abc, "keep all");
        let none = Ptrace {
            dims: vec![2, 3, 4],
            keep: vec![],
        };
        let tr = polymat::ptrace(&common::make(&abc, kind), &none, Out::Auto).unwrap();
        assert_data_close(&tr, &vec![vec![common::trace(&abc)]], "keep none");
    }
    let bad = Ptrace {
        dims: vec![2, 2],
        keep: vec![0, 0],
    };
    assert!(matches!(
        polymat::ptrace(&rho, &bad, Out::Auto),
        Err(Error::InvalidArgument { .. })
    ));
    let wrong = Ptrace {
        dims: vec![2, 3],
        keep: vec![0],
    };
    assert!(matches!(
        polymat::ptrace(&rho, &wrong, Out::Auto),
        Err(Error::Shape { .. })
    ));
}

#[test]
fn permute_dimensions_matches_kron_order() {
    // Reordering |a⟩⊗|b⟩⊗|c⟩ to |c⟩⊗|a⟩⊗|b⟩, and the same for operators.
    let mut rng = common::Rng::new(9);
    let (a, b, cc) = (
        common::random_ref(&mut rng, 2, 1, 1.0),
        common::random_ref(&mut rng, 3, 1, 1.0),
        common::random_ref(&mut rng, 4, 1, 1.0),
    );
    let s = Subsystems {
        dims: vec![2, 3, 4],
        order: vec![2, 0, 1],
    };
    let (oa, ob, oc) = (
        common::random_ref(&mut rng, 2, 2, 1.0),
        common::random_ref(&mut rng, 3, 3, 1.0),
        common::random_ref(&mut rng, 4, 4, 1.0),
    );
    for kind in common::KINDS {
        let ket = common::make(&kron(&kron(&a, &b), &cc), kind);
        let got = permute::dimensions(&ket, &s, Out::Auto).unwrap();
        assert_data_close(&got, &kron(&kron(&cc, &a), &b), "ket");
        let op = common::make(&kron(&kron(&oa, &ob), &oc), kind);
        let got = permute::dimensions(&op, &s, Out::Auto).unwrap();
        assert_data_close(&got, &kron(&kron(&oc, &oa), &ob), "operator");
    }
    let bad = Subsystems {
        dims: vec![2, 3, 4],
        order: vec![0, 0, 1],
    };
    let ket = common::make(&kron(&kron(&a, &b), &cc), Kind::DENSE);
    assert!(matches!(
        permute::dimensions(&ket, &bad, Out::Auto),
        Err(Error::InvalidArgument { .. })
    ));
    let p = Permutation {
        rows: Some(vec![0, 1]),
        cols: None,
    };
    assert!(matches!(
        permute::indices(&ket, &p, Out::Auto),
        Err(Error::Shape { .. })
    ));
    let p = Permutation {
        rows: Some(vec![0; 24]),
        cols: None,
    };
    assert!(matches!(
        permute::indices(&ket, &p, Out::Auto),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn superoperator_identities() {
    // vec(B·X·A) = (Aᵀ ⊗ B)·vec(X), and expect_super of the identity superoperator is Tr X.
    let mut rng = common::Rng::new(11);
    let (a, b, x) = (
        common::random_ref(&mut rng, 3, 3, 0.7),
        common::random_ref(&mut rng, 3, 3, 0.7),
        common::random_ref(&mut rng, 3, 3, 0.7),
    );
    let bxa = matmul(&matmul(&b, &x), &a);
    for kind in common::KINDS {
        let (ad, bd, xd) = (
            common::make(&a, kind),
            common::make(&b, kind),
            common::make(&x, kind),
        );
        let sup = polymat::kron_transpose(&ad, &bd, Out::Auto).unwrap();
        let vx = polymat::column_stack(&xd, Out::Auto).unwrap();
        let v = polymat::matmul(&sup, &vx, Out::Auto).unwrap();
        let back = polymat::column_unstack(&v, 3, Out::Auto).unwrap();
        assert_data_close(&back, &bxa, "vec(BXA)");
        let tr = polymat::expect_super(&sup, &vx).unwrap();
        assert!(common::close(tr, common::trace(&bxa)));
        assert!(common::close(
            polymat::trace_oper_ket(&vx).unwrap(),
            common::trace(&x)
        ));
    }
}

#[test]
fn outer_product_output_follows_density() {
    let dense_ket: Data = Dense::from_fn(10, 1, |i, _| r(i as f64 + 1.0)).into();
    let dense_bra: Data = Dense::from_fn(1, 10, |_, j| r(j as f64 + 1.0)).into();
    let sparse_ket: Data = Csr::from_triplets((10, 1), &[2], &[0], &[r(1.0)])
        .unwrap()
        .into();
    assert_eq!(
        polymat::matmul_outer(&dense_ket, &dense_bra, Out::Auto)
            .unwrap()
            .kind(),
        Kind::DENSE
    );
    assert_eq!(
        polymat::matmul_outer(&sparse_ket, &dense_bra, Out::Auto)
            .unwrap()
            .kind(),
        Kind::CSR
    );
    let csr = polymat::matmul_outer(&dense_ket, &dense_bra, Out::Csr).unwrap();
    assert_eq!(csr.downcast_ref::<Csr>().unwrap().nnz(), 100);
    assert!(matches!(
        polymat::matmul_outer(&dense_bra, &dense_ket, Out::Auto),
        Err(Error::Shape { .. })
    ));
}

#[test]
fn blocks_and_in_place_updates() {
    let i2: Data = Csr::identity(2).into();
    let blocks = [
        Block {
            row: 0,
            col: 0,
            data: &i2,
        },
        Block {
            row: 0,
            col: 0,
            data: &i2,
        },
    ];
    assert!(matches!(
        polymat::block_build(&blocks, &[2], &[2], Out::Auto),
        Err(Error::InvalidArgument { .. })
    ));
    let blocks = [Block {
        row: 0,
        col: 1,
        data: &i2,
    }];
    assert!(matches!(
        polymat::block_build(&blocks, &[2], &[2, 3], Out::Auto),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        polymat::block_extract(&i2, (1..3, 0..1), Out::Auto),
        Err(Error::Shape { .. })
    ));
    // In place: the buffer is reused, so the handle keeps pointing at the same allocation.
    let mut a: Data = Dense::zeros(2, 2).into();
    let before = a.downcast_ref::<Dense>().unwrap().col(0).as_ptr();
    assert!(polymat::iadd(&mut a, &i2, r(2.0)).unwrap());
    assert_eq!(a.downcast_ref::<Dense>().unwrap().col(0).as_ptr(), before);
    assert_data_close(&a, &common::map(&eye(2), |x| x * 2.0), "iadd");
    // A Csr target is replaced by a new Csr.
    let mut s: Data = Csr::zeros(2, 2).into();
    assert!(!polymat::iadd(&mut s, &i2, r(1.0)).unwrap());
    assert_eq!(s.kind(), Kind::CSR);
    assert!(matches!(
        polymat::iadd(&mut s, &Dense::zeros(3, 3).into(), r(1.0)),
        Err(Error::Shape { .. })
    ));
    assert_eq!(
        polymat::mean_nonzero(&Csr::zeros(3, 3).into()).unwrap(),
        r(0.0)
    );
    assert_eq!(
        polymat::mean_abs_nonzero(&Dense::zeros(0, 0).into()).unwrap(),
        0.0
    );
}
