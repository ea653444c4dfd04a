//! Dense layouts (issue 15, item 1): a row-major Dense gives the same results as the
//! column-major one in every operation (the conformance suite runs every operation on both);
//! here: which layout each kernel returns, the in-place operations on either layout, chains
//! through transposed results, and a property test over random shapes and layout pairs.

mod common;

use common::*;
use polymat::{Csr, Data, Dense, Layout, Out, c64};
use proptest::prelude::*;

fn dense(r: &Ref, layout: Layout) -> Dense {
    let (m, n) = shape(r);
    let flat: Vec<c64> = r.iter().flatten().copied().collect();
    let d = Dense::from_row_major(m, n, &flat).unwrap();
    d.into_layout(layout).unwrap()
}

fn layout_of(d: &Data) -> Layout {
    d.downcast_ref::<Dense>().expect("a Dense result").layout()
}

#[test]
fn transpose_and_adjoint_flip_the_layout_in_one_pass() {
    let r = random_ref(&mut common::Rng::new(1), 7, 4, 1.0);
    for layout in [Layout::ColMajor, Layout::RowMajor] {
        let a: Data = dense(&r, layout).into();
        let t = polymat::transpose(&a, Out::Auto).unwrap();
        let h = polymat::adjoint(&a, Out::Auto).unwrap();
        assert_eq!(layout_of(&t), layout.flipped());
        assert_eq!(layout_of(&h), layout.flipped());
        assert_data_close(&t, &transpose(&r), "transpose");
        assert_data_close(&h, &map(&transpose(&r), |x| x.conj()), "adjoint");
        // Entry-wise work keeps a shared layout.
        assert_eq!(layout_of(&polymat::add(&a, &a, Out::Auto).unwrap()), layout);
        assert_eq!(layout_of(&polymat::neg(&a, Out::Auto).unwrap()), layout);
        // Back to Csr from either layout.
        let csr = polymat::to(polymat::Kind::CSR, &t).unwrap();
        assert_data_close(&csr, &transpose(&r), "transpose to Csr");
    }
}

#[test]
fn chains_through_transposed_results() {
    let mut rng = common::Rng::new(2);
    let (r, psi) = (
        random_ref(&mut rng, 6, 6, 1.0),
        random_ref(&mut rng, 6, 1, 1.0),
    );
    let a: Data = dense(&r, Layout::ColMajor).into();
    let h = polymat::adjoint(&a, Out::Auto).unwrap(); // row-major
    let rh = map(&transpose(&r), |x| x.conj());
    let k: Data = dense(&psi, Layout::ColMajor).into();
    assert_data_close(
        &polymat::matmul(&h, &a, Out::Auto).unwrap(),
        &matmul(&rh, &r),
        "a†a",
    );
    assert_data_close(
        &polymat::matmul(&h, &k, Out::Auto).unwrap(),
        &matmul(&rh, &psi),
        "a†ψ",
    );
    assert_data_close(
        &polymat::add(&h, &a, Out::Auto).unwrap(),
        &zip(&rh, &r, |x, y| x + y),
        "a†+a",
    );
    let e = polymat::expect(&h, &polymat::matmul(&a, &h, Out::Auto).unwrap()).unwrap();
    assert!(
        close(e, trace(&matmul(&rh, &matmul(&r, &rh)))),
        "expect {e}"
    );
    // On a ket, both layouts of the operator (row dots for row-major, column axpys else).
    let want = trace(&matmul(
        &map(&transpose(&psi), |x| x.conj()),
        &matmul(&rh, &psi),
    ));
    for op in [&h, &Data::from(dense(&rh, Layout::ColMajor))] {
        let e = polymat::expect(op, &k).unwrap();
        assert!(close(e, want), "expect on a ket {e} vs {want}");
    }
    assert!(polymat::isherm(&polymat::add(&h, &a, Out::Auto).unwrap(), 1e-12).unwrap());
    // Csr·Dense with a row-major right operand answers row-major.
    let s: Data = Csr::from_rows(&r).unwrap().into();
    let p = polymat::matmul(&s, &h, Out::Auto).unwrap();
    assert_eq!(layout_of(&p), Layout::RowMajor);
    assert_data_close(&p, &matmul(&r, &rh), "csr·a†");
}

#[test]
fn in_place_operations_keep_the_destination_layout() {
    let mut rng = common::Rng::new(3);
    let (x, y) = (
        random_ref(&mut rng, 5, 3, 1.0),
        random_ref(&mut rng, 5, 3, 0.4),
    );
    let s = c64::new(0.5, -2.0);
    for dl in [Layout::ColMajor, Layout::RowMajor] {
        for sl in [Layout::ColMajor, Layout::RowMajor] {
            let mut a: Data = dense(&x, dl).into();
            let b: Data = dense(&y, sl).into();
            assert!(polymat::iadd(&mut a, &b, s).unwrap());
            assert_eq!(layout_of(&a), dl);
            assert_data_close(&a, &zip(&x, &y, |p, q| p + s * q), "iadd dense");
            let c: Data = Csr::from_rows(&y).unwrap().into();
            let mut a: Data = dense(&x, dl).into();
            assert!(polymat::iadd(&mut a, &c, s).unwrap());
            assert_eq!(layout_of(&a), dl);
            assert_data_close(&a, &zip(&x, &y, |p, q| p + s * q), "iadd csr");
            assert!(polymat::imul(&mut a, s).unwrap());
            assert_eq!(layout_of(&a), dl);
            assert_data_close(&a, &map(&zip(&x, &y, |p, q| p + s * q), |p| p * s), "imul");
            // Dense + Csr into a fresh Dense of the dense operand's layout.
            let a: Data = dense(&x, dl).into();
            let sum = polymat::add(&a, &c, Out::Dense).unwrap();
            assert_data_close(&sum, &zip(&x, &y, |p, q| p + q), "dense + csr");
        }
    }
}

#[test]
fn column_accessors_see_a_mutation_through_the_layout() {
    let r = random_ref(&mut common::Rng::new(4), 3, 3, 1.0);
    let mut a: Data = dense(&r, Layout::RowMajor).into();
    // A column-major copy exists after `col`...
    let before = a.downcast_ref::<Dense>().unwrap().col(0).to_vec();
    assert_eq!(before, (0..3).map(|i| r[i][0]).collect::<Vec<_>>());
    // ...and an in-place scale must not leave it stale.
    polymat::imul(&mut a, c64::new(2.0, 0.0)).unwrap();
    let after = a.downcast_ref::<Dense>().unwrap().col(0).to_vec();
    assert_eq!(after, before.iter().map(|x| x * 2.0).collect::<Vec<_>>());
}

fn entry() -> impl Strategy<Value = c64> {
    prop_oneof![
        1 => Just(c64::new(0.0, 0.0)),
        3 => (-4.0..4.0f64, -4.0..4.0f64).prop_map(|(re, im)| c64::new(re, im)),
    ]
}

fn matrix(m: usize, n: usize) -> impl Strategy<Value = Ref> {
    prop::collection::vec(entry(), m * n)
        .prop_map(move |v| v.chunks(n.max(1)).map(<[c64]>::to_vec).take(m).collect())
}

fn layout() -> impl Strategy<Value = Layout> {
    prop_oneof![Just(Layout::ColMajor), Just(Layout::RowMajor)]
}

proptest! {
    #[test]
    fn every_layout_pair_gives_the_column_major_answer(
        (a, b, c) in (1..15usize, 1..6usize, 1..6usize)
            .prop_flat_map(|(m, k, n)| (matrix(m, k), matrix(m, k), matrix(k, n))),
        la in layout(), lb in layout(), lc in layout(),
    ) {
        let (da, db, dc): (Data, Data, Data) =
            (dense(&a, la).into(), dense(&b, lb).into(), dense(&c, lc).into());
        assert_data_close(&polymat::add(&da, &db, Out::Auto).unwrap(), &zip(&a, &b, |x, y| x + y), "add");
        assert_data_close(&polymat::sub(&da, &db, Out::Auto).unwrap(), &zip(&a, &b, |x, y| x - y), "sub");
        assert_data_close(&polymat::multiply(&da, &db, Out::Auto).unwrap(), &zip(&a, &b, |x, y| x * y), "mul");
        // The scalar product and the sign flips, each kept in a's layout.
        let s = c64::new(0.5, -2.0);
        let sa = polymat::mul(&da, s, Out::Auto).unwrap();
        assert_data_close(&sa, &map(&a, |x| s * x), "scalar mul");
        prop_assert_eq!(layout_of(&sa), la);
        let na = polymat::neg(&da, Out::Auto).unwrap();
        assert_data_close(&na, &map(&a, |x| -x), "neg");
        prop_assert_eq!(layout_of(&na), la);
        let csr_a = polymat::to(polymat::Kind::CSR, &da).unwrap();
        assert_data_close(
            &polymat::add_scaled(&csr_a, &db, s, Out::Auto).unwrap(),
            &zip(&a, &b, |x, y| x + s * y),
            "csr + s·dense",
        );
        assert_data_close(&polymat::matmul(&da, &dc, Out::Auto).unwrap(), &matmul(&a, &c), "matmul");
        assert_data_close(&polymat::matmul(&da, &dc, Out::Csr).unwrap(), &matmul(&a, &c), "matmul csr");
        assert_data_close(&polymat::to(polymat::Kind::CSR, &da).unwrap(), &a, "to csr");
        prop_assert_eq!(
            polymat::isequal(&da, &dense(&a, lb).into(), 0.0, 0.0).unwrap(),
            true
        );
        prop_assert_eq!(
            polymat::isequal(&da, &db, 1e-12, 0.0).unwrap(),
            a == b
        );
        let t = polymat::transpose(&polymat::transpose(&da, Out::Auto).unwrap(), Out::Auto).unwrap();
        prop_assert_eq!(layout_of(&t), la);
        prop_assert_eq!(t.downcast_ref::<Dense>().unwrap(), da.downcast_ref::<Dense>().unwrap());
    }
}

/// A bra made by the public constructors or converted from a Csr holds its entries in one
/// buffer column, row-major: faer pads a column-major one-row buffer to four rows (four entries
/// of memory for each). The same bra column-major gives the same results in the operations a
/// bra takes part in.
#[test]
fn bras_are_made_without_padding() {
    let c = |re: f64, im: f64| c64::new(re, im);
    for n in [2, 7, 64, 1000] {
        let f = |j: usize| c(j as f64 - 3.0, 0.5 * (j % 5) as f64);
        let row: Vec<c64> = (0..n).map(f).collect();
        let cols: Vec<usize> = (0..n).filter(|j| j % 3 != 1).collect();
        let csr = Csr::from_triplets(
            (1, n),
            &vec![0; cols.len()],
            &cols,
            &cols.iter().map(|&j| f(j)).collect::<Vec<_>>(),
        )
        .unwrap();
        let from_csr = polymat::to(polymat::Kind::DENSE, &csr.clone().into()).unwrap();
        let made = [
            ("zeros", Dense::zeros(1, n)),
            ("try_zeros", Dense::try_zeros(1, n).unwrap()),
            ("from_fn", Dense::from_fn(1, n, |_, j| f(j))),
            (
                "from_rows",
                Dense::from_rows(std::slice::from_ref(&row)).unwrap(),
            ),
            ("Csr", from_csr.downcast_ref::<Dense>().unwrap().clone()),
        ];
        for (name, d) in made {
            assert_eq!(d.shape(), (1, n), "{name}");
            assert_eq!(d.layout(), Layout::RowMajor, "{name}");
            assert_eq!(d.buffer().shape(), (n, 1), "{name}: one buffer column");
            let want = |j: usize| match name {
                "zeros" | "try_zeros" => c64::new(0.0, 0.0),
                "Csr" if j % 3 == 1 => c64::new(0.0, 0.0),
                _ => f(j),
            };
            for j in 0..n {
                assert_eq!(d.get(0, j), want(j), "{name} ({j})");
            }
            // The same bra column-major: equal, and the same in a bra's operations.
            let padded = d.clone().into_layout(Layout::ColMajor).unwrap();
            assert_eq!(padded, d, "{name}");
            let (a, b): (Data, Data) = (d.into(), padded.into());
            let ket: Data = Dense::from_fn(n, 1, |i, _| c(1.0, i as f64)).into();
            let op: Data = Csr::identity(n).into();
            let same = |x: Data, y: Data, what: &str| {
                assert_eq!(
                    x.downcast_ref::<Dense>().unwrap(),
                    y.downcast_ref::<Dense>().unwrap(),
                    "{name} {what}"
                );
            };
            assert_eq!(
                polymat::inner(&a, &ket).unwrap(),
                polymat::inner(&b, &ket).unwrap(),
                "{name} inner"
            );
            same(
                polymat::matmul(&a, &op, Out::Dense).unwrap(),
                polymat::matmul(&b, &op, Out::Dense).unwrap(),
                "bra·op",
            );
            same(
                polymat::matmul(&a, &ket, Out::Dense).unwrap(),
                polymat::matmul(&b, &ket, Out::Dense).unwrap(),
                "bra·ket",
            );
            same(
                polymat::add(&a, &b, Out::Dense).unwrap(),
                polymat::add(&b, &b, Out::Dense).unwrap(),
                "add",
            );
            same(
                polymat::adjoint(&a, Out::Dense).unwrap(),
                polymat::adjoint(&b, Out::Dense).unwrap(),
                "adjoint",
            );
            // Results that are bras are made unpadded too, from either layout.
            let dop: Data = Dense::from_fn(n, n, |i, j| c((i + 2 * j) as f64, 1.0)).into();
            for (what, x, y) in [
                (
                    "bra·Dense",
                    polymat::matmul(&a, &dop, Out::Auto).unwrap(),
                    polymat::matmul(&b, &dop, Out::Auto).unwrap(),
                ),
                (
                    "bra ⊗ bra",
                    polymat::kron(&a, &b, Out::Auto).unwrap(),
                    polymat::kron(&b, &a, Out::Auto).unwrap(),
                ),
            ] {
                // From the row-major bra always; from the column-major one where the product
                // is not a small one in registers (written column-major, at most 64 entries).
                for (k, r) in [&x, &y].into_iter().enumerate() {
                    let d = r.downcast_ref::<Dense>().unwrap();
                    if k == 0 || d.shape().1 > 64 {
                        assert_eq!(d.buffer().ncols(), 1, "{name} {what}: one buffer column");
                    }
                }
                same(x, y, what);
            }
            let back = polymat::to(polymat::Kind::CSR, &a).unwrap();
            let back_b = polymat::to(polymat::Kind::CSR, &b).unwrap();
            assert_eq!(
                back.downcast_ref::<Csr>().unwrap(),
                back_b.downcast_ref::<Csr>().unwrap(),
                "{name} to Csr"
            );
        }
    }
    // A ket reshaped into a bra, and a bra's entries permuted.
    let ket: Data = Dense::from_fn(300, 1, |i, _| c(i as f64, 1.0)).into();
    let bra = polymat::ops::reshape(&ket, (1, 300), Out::Dense).unwrap();
    let flip = polymat::ops::permute::Permutation {
        rows: None,
        cols: Some((0..300).rev().collect()),
    };
    let back = polymat::ops::permute::indices(&bra, &flip, Out::Dense).unwrap();
    // Row 4 of a 300 × 300 matrix, in either layout.
    let op = Dense::from_fn(300, 300, |i, j| c(i as f64, j as f64));
    let mut rows = Vec::new();
    for layout in [Layout::ColMajor, Layout::RowMajor] {
        let m: Data = op.clone().into_layout(layout).unwrap().into();
        rows.push(polymat::ops::block_extract(&m, (4..5, 0..300), Out::Dense).unwrap());
    }
    for row in &rows {
        let d = row.downcast_ref::<Dense>().unwrap();
        assert_eq!(
            d.buffer().shape(),
            (300, 1),
            "block_extract: one buffer column"
        );
        assert_eq!(d.shape(), (1, 300));
        assert_eq!(d.get(0, 17), c(4.0, 17.0));
    }
    for (what, d) in [("reshape", &bra), ("permute", &back)] {
        let d = d.downcast_ref::<Dense>().unwrap();
        assert_eq!(d.buffer().shape(), (300, 1), "{what}: one buffer column");
        for j in [0, 7, 299] {
            let i = if what == "permute" { 299 - j } else { j };
            assert_eq!(d.get(0, j), c(i as f64, 1.0), "{what} ({j})");
        }
    }
    let z = polymat::ops::zeros(1, 300, Out::Dense).unwrap();
    assert_eq!(
        z.downcast_ref::<Dense>().unwrap().buffer().shape(),
        (300, 1)
    );
    // Kernels that write into a fresh result through a view: a bra result is row-major and
    // unpadded, with the entries of the definition.
    let ket: Data = Dense::from_fn(300, 1, |i, _| c(i as f64, 1.0)).into();
    let bra: Data = Dense::from_fn(1, 300, |_, j| c(1.0, j as f64)).into();
    let one: Data = Dense::from_fn(1, 1, |_, _| c(2.0, 0.0)).into();
    let halves = [0, 1].map(|col| polymat::ops::Block {
        row: 0,
        col,
        data: &bra,
    });
    let dia_bra = polymat::to(polymat::Kind::DIA, &bra).unwrap();
    let wide: Data = Dense::from_fn(3, 300, |i, j| c((i * j) as f64, 0.0)).into();
    let results = [
        (
            "block_build",
            polymat::block_build(&halves, &[1], &[300, 300], Out::Dense).unwrap(),
            600,
        ),
        (
            "kron_transpose",
            polymat::kron_transpose(&ket, &one, Out::Dense).unwrap(),
            300,
        ),
        (
            "diag",
            // Offset j of a 1 × 300 matrix is its one entry (0, j).
            polymat::diag(
                (1..300).map(|j| vec![c(1.0, j as f64)]).collect(),
                (1..300).collect(),
                (1, 300),
                Out::Dense,
            )
            .unwrap(),
            300,
        ),
        (
            "matmul_outer",
            polymat::matmul_outer(&one, &bra, Out::Dense).unwrap(),
            300,
        ),
        (
            "Dia → Dense",
            polymat::to(polymat::Kind::DENSE, &dia_bra).unwrap(),
            300,
        ),
        (
            "matmul_dag",
            polymat::matmul_dag(&bra, &wide, Out::Dense).unwrap(),
            3,
        ),
        (
            "svd vh",
            polymat::svd(&bra, true).unwrap().vh.unwrap().into(),
            300,
        ),
    ];
    for (what, r, n) in results {
        let d = r.downcast_ref::<Dense>().unwrap();
        assert_eq!(d.shape(), (1, n), "{what}");
        assert_eq!(d.buffer().shape(), (n, 1), "{what}: one buffer column");
        let want = |j: usize| match what {
            "block_build" => c(1.0, (j % 300) as f64),
            "kron_transpose" => c(2.0 * j as f64, 2.0),
            "diag" if j == 0 => c(0.0, 0.0),
            "diag" => c(1.0, j as f64),
            "matmul_outer" => c(2.0, 2.0 * j as f64),
            "Dia → Dense" => c(1.0, j as f64),
            // Σⱼ bra[j]·conj(wide[i, j]), wide real: i·Σⱼ j·(1 + i·j).
            "matmul_dag" => {
                let (s1, s2) = (
                    (0..300).sum::<usize>(),
                    (0..300).map(|j| j * j).sum::<usize>(),
                );
                c((j * s1) as f64, (j * s2) as f64)
            }
            _ => c(f64::NAN, 0.0),
        };
        if what == "svd vh" {
            // The bra's direction: |vh[j]| = |bra[j]| / ‖bra‖.
            let norm = (0..300).map(|j| 1.0 + (j * j) as f64).sum::<f64>().sqrt();
            for j in [0, 7, 299] {
                let want = c(1.0, j as f64).norm() / norm;
                assert!((d.get(0, j).norm() - want).abs() < 1e-12, "{what} ({j})");
            }
            continue;
        }
        for j in [0, 1, 7, n - 1].into_iter().filter(|&j| j < n) {
            assert_eq!(d.get(0, j), want(j), "{what} ({j})");
        }
    }
    // Products with a bra on the left (Csr, column-major Dense, Dia; a Dense bra times Dia):
    // the same as the row-major Dense product, unpadded.
    let tri = polymat::diag(
        vec![
            (0..299).map(|j| c(1.0, j as f64)).collect(),
            (0..300).map(|j| c(0.5, -(j as f64))).collect(),
            (0..299).map(|j| c(-2.0, 0.25 * j as f64)).collect(),
        ],
        vec![-1, 0, 1],
        (300, 300),
        Out::Dia,
    )
    .unwrap();
    let tri_dense = polymat::to(polymat::Kind::DENSE, &tri).unwrap();
    let square: Data = Dense::from_fn(300, 300, |i, j| c(i as f64 - j as f64, 1.0)).into();
    let csr_bra = polymat::to(polymat::Kind::CSR, &bra).unwrap();
    let padded_bra: Data = bra
        .downcast_ref::<Dense>()
        .unwrap()
        .clone()
        .into_layout(Layout::ColMajor)
        .unwrap()
        .into();
    let holes: Data = Dense::from_fn(1, 300, |_, j| {
        if j % 3 == 0 {
            c(0.0, 0.0)
        } else {
            c(1.0, j as f64)
        }
    })
    .into();
    let sparse_bra = polymat::to(polymat::Kind::CSR, &holes).unwrap();
    // (case, the product, and the row-major Dense product it must equal)
    for (what, x, y, rx, ry) in [
        (
            "sparse Csr bra · Dense",
            &sparse_bra,
            &square,
            &holes,
            &square,
        ),
        ("Csr bra · Dense", &csr_bra, &square, &bra, &square),
        (
            "column-major bra · Dense",
            &padded_bra,
            &square,
            &bra,
            &square,
        ),
        ("Dia bra · Dense", &dia_bra, &square, &bra, &square),
        ("bra · Dia", &bra, &tri, &bra, &tri_dense),
    ] {
        let got = polymat::matmul(x, y, Out::Dense).unwrap();
        let want = polymat::matmul(rx, ry, Out::Dense).unwrap();
        let (d, w) = (
            got.downcast_ref::<Dense>().unwrap(),
            want.downcast_ref::<Dense>().unwrap(),
        );
        assert_eq!(d.buffer().shape(), (300, 1), "{what}: one buffer column");
        for j in 0..300 {
            let (x, y) = (d.get(0, j), w.get(0, j));
            assert!((x - y).norm() <= 1e-12 * y.norm().max(1.0), "{what} ({j})");
        }
    }
    // One entry, or one column: column-major as before.
    assert_eq!(Dense::zeros(1, 1).layout(), Layout::ColMajor);
    assert_eq!(
        Dense::from_fn(5, 1, |i, _| c(i as f64, 0.0)).layout(),
        Layout::ColMajor
    );
}
