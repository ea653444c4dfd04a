//! Property tests: algebraic identities, conversion round trips, and kind independence (the
//! result of every operation is the same whatever kinds the inputs come in).

mod common;

use common::*;
use polymat::{Data, Kind, Out, c64};
use proptest::prelude::*;

fn entry() -> impl Strategy<Value = c64> {
    prop_oneof![
        2 => Just(c64::new(0.0, 0.0)),
        3 => (-4.0..4.0f64, -4.0..4.0f64).prop_map(|(re, im)| c64::new(re, im)),
    ]
}

fn matrix(m: usize, n: usize) -> impl Strategy<Value = Ref> {
    prop::collection::vec(entry(), m * n)
        .prop_map(move |v| v.chunks(n.max(1)).map(<[c64]>::to_vec).take(m).collect())
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![Just(Kind::DENSE), Just(Kind::CSR), Just(Kind::DIA)]
}

fn out() -> impl Strategy<Value = Out> {
    prop_oneof![
        Just(Out::Auto),
        Just(Out::Dense),
        Just(Out::Csr),
        Just(Out::Dia)
    ]
}

/// Two matrices of the same random shape.
fn pair() -> impl Strategy<Value = (Ref, Ref)> {
    (1..7usize, 1..7usize).prop_flat_map(|(m, n)| (matrix(m, n), matrix(m, n)))
}

/// Three matrices that chain under multiplication.
fn chain() -> impl Strategy<Value = (Ref, Ref, Ref)> {
    (1..6usize, 1..6usize, 1..6usize, 1..6usize)
        .prop_flat_map(|(a, b, c, d)| (matrix(a, b), matrix(b, c), matrix(c, d)))
}

fn square() -> impl Strategy<Value = Ref> {
    (1..6usize).prop_flat_map(|n| matrix(n, n))
}

fn eq(x: &Data, y: &Data) -> bool {
    polymat::isequal(x, y, 1e-10, 1e-9).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn add_is_commutative((a, b) in pair(), ka in kind(), kb in kind(), o in out()) {
        let (x, y) = (make(&a, ka), make(&b, kb));
        prop_assert!(eq(&polymat::add(&x, &y, o).unwrap(), &polymat::add(&y, &x, o).unwrap()));
    }

    #[test]
    fn matmul_is_associative((a, b, c) in chain(), ka in kind(), kb in kind(), kc in kind()) {
        let (x, y, z) = (make(&a, ka), make(&b, kb), make(&c, kc));
        let left = polymat::matmul(&polymat::matmul(&x, &y, Out::Auto).unwrap(), &z, Out::Auto).unwrap();
        let right = polymat::matmul(&x, &polymat::matmul(&y, &z, Out::Auto).unwrap(), Out::Auto).unwrap();
        prop_assert!(eq(&left, &right));
    }

    #[test]
    fn adjoint_is_an_involution((a, _) in pair(), k in kind(), o in out()) {
        let x = make(&a, k);
        let back = polymat::adjoint(&polymat::adjoint(&x, o).unwrap(), Out::Auto).unwrap();
        prop_assert!(polymat::isequal(&back, &x, 0.0, 0.0).unwrap());
    }

    #[test]
    fn dense_csr_dense_round_trip_is_exact((a, _) in pair()) {
        let d = make(&a, Kind::DENSE);
        let back = polymat::to(Kind::DENSE, &polymat::to(Kind::CSR, &d).unwrap()).unwrap();
        prop_assert_eq!(to_ref(&back), a.clone());
        let s = make(&a, Kind::CSR);
        let back = polymat::to(Kind::CSR, &polymat::to(Kind::DENSE, &s).unwrap()).unwrap();
        prop_assert!(back.downcast_ref::<polymat::Csr>() == s.downcast_ref::<polymat::Csr>());
    }

    #[test]
    fn dia_round_trips_are_exact((a, _) in pair()) {
        // Every path between Dia, Csr and Dense gives back the same values, bit for bit.
        for (from, via) in [
            (Kind::DIA, Kind::CSR), (Kind::DIA, Kind::DENSE),
            (Kind::CSR, Kind::DIA), (Kind::DENSE, Kind::DIA),
        ] {
            let x = make(&a, from);
            let there = polymat::to(via, &x).unwrap();
            prop_assert_eq!(there.kind(), via);
            let back = polymat::to(from, &there).unwrap();
            prop_assert_eq!(back.kind(), from);
            prop_assert_eq!(to_ref(&back), a.clone());
        }
        // A Dia built from Csr stores exactly the diagonals that hold an entry.
        let dia: polymat::Dia = polymat::to_type(&make(&a, Kind::CSR)).unwrap();
        let (m, n) = shape(&a);
        for o in -(m as isize - 1)..n as isize {
            let has = (0..m).any(|i| {
                let j = i as isize + o;
                (0..n as isize).contains(&j) && a[i][j as usize] != c64::new(0.0, 0.0)
            });
            prop_assert_eq!(dia.diagonal(o).is_some(), has, "offset {}", o);
        }
    }

    #[test]
    fn binary_results_do_not_depend_on_input_kinds((a, b) in pair(), ka in kind(), kb in kind(), o in out(), s in entry()) {
        let (x, y) = (make(&a, ka), make(&b, kb));
        let (dx, dy) = (make(&a, Kind::DENSE), make(&b, Kind::DENSE));
        prop_assert!(eq(&polymat::add(&x, &y, o).unwrap(), &polymat::add(&dx, &dy, Out::Dense).unwrap()));
        prop_assert!(eq(&polymat::add_scaled(&x, &y, s, o).unwrap(), &polymat::add_scaled(&dx, &dy, s, Out::Dense).unwrap()));
        prop_assert!(eq(&polymat::sub(&x, &y, o).unwrap(), &polymat::sub(&dx, &dy, Out::Dense).unwrap()));
        prop_assert!(eq(&polymat::multiply(&x, &y, o).unwrap(), &polymat::multiply(&dx, &dy, Out::Dense).unwrap()));
        prop_assert!(eq(&polymat::kron(&x, &y, o).unwrap(), &polymat::kron(&dx, &dy, Out::Dense).unwrap()));
        let yt = polymat::transpose(&y, Out::Auto).unwrap();
        prop_assert!(eq(&polymat::matmul(&x, &yt, o).unwrap(), &polymat::matmul(&dx, &polymat::transpose(&dy, Out::Auto).unwrap(), Out::Dense).unwrap()));
        prop_assert_eq!(polymat::isequal(&x, &y, 1e-12, 0.0).unwrap(), polymat::isequal(&dx, &dy, 1e-12, 0.0).unwrap());
    }

    #[test]
    fn unary_results_do_not_depend_on_input_kinds(a in square(), k in kind(), o in out(), s in entry(), p in 0u32..5) {
        let (x, d) = (make(&a, k), make(&a, Kind::DENSE));
        prop_assert!(eq(&polymat::mul(&x, s, o).unwrap(), &polymat::mul(&d, s, Out::Dense).unwrap()));
        prop_assert!(eq(&polymat::neg(&x, o).unwrap(), &polymat::neg(&d, Out::Dense).unwrap()));
        prop_assert!(eq(&polymat::conj(&x, o).unwrap(), &polymat::conj(&d, Out::Dense).unwrap()));
        prop_assert!(eq(&polymat::transpose(&x, o).unwrap(), &polymat::transpose(&d, Out::Dense).unwrap()));
        prop_assert!(eq(&polymat::pow(&x, p, o).unwrap(), &polymat::pow(&d, p, Out::Dense).unwrap()));
        prop_assert!(close(polymat::trace(&x).unwrap(), polymat::trace(&d).unwrap()));
        prop_assert_eq!(polymat::iszero(&x, 1e-3).unwrap(), polymat::iszero(&d, 1e-3).unwrap());
    }

    #[test]
    fn sub_of_self_is_zero((a, _) in pair(), k in kind(), o in out()) {
        let x = make(&a, k);
        prop_assert!(polymat::iszero(&polymat::sub(&x, &x, o).unwrap(), 0.0).unwrap());
    }
}

/// A random permutation of `0..n` from a seed.
fn permutation(n: usize, seed: u64) -> Vec<usize> {
    let mut rng = common::Rng::new(seed);
    let mut p: Vec<usize> = (0..n).collect();
    for k in (1..n).rev() {
        p.swap(k, (rng.next_u64() % (k as u64 + 1)) as usize);
    }
    p
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn reshape_round_trips((a, _) in pair(), k in kind(), o in out()) {
        let x = make(&a, k);
        let (m, n) = x.shape();
        let flat = polymat::reshape(&x, (1, m * n), o).unwrap();
        prop_assert!(eq(&polymat::reshape(&flat, (m, n), Out::Auto).unwrap(), &x));
        let v = polymat::column_stack(&x, o).unwrap();
        prop_assert!(eq(&polymat::column_unstack(&v, m, Out::Auto).unwrap(), &x));
        // reshape to (n·m, 1) is the column stack of the transpose
        let t = polymat::transpose(&x, Out::Auto).unwrap();
        prop_assert!(eq(&polymat::reshape(&x, (m * n, 1), o).unwrap(), &polymat::column_stack(&t, Out::Auto).unwrap()));
    }

    #[test]
    fn permutations_invert((a, _) in pair(), k in kind(), seed in any::<u64>()) {
        use polymat::ops::permute::{self, Permutation};
        let x = make(&a, k);
        let (m, n) = x.shape();
        let (p, q) = (permutation(m, seed), permutation(n, seed ^ 1));
        let inv = |p: &[usize]| {
            let mut i = vec![0; p.len()];
            for (k, &x) in p.iter().enumerate() { i[x] = k; }
            i
        };
        let fwd = Permutation { rows: Some(p.clone()), cols: Some(q.clone()) };
        let back = Permutation { rows: Some(inv(&p)), cols: Some(inv(&q)) };
        let y = permute::indices(&x, &fwd, Out::Auto).unwrap();
        prop_assert!(eq(&permute::indices(&y, &back, Out::Auto).unwrap(), &x));
    }

    #[test]
    fn ptrace_of_a_product_state((a, b) in (1..4usize, 1..4usize).prop_flat_map(|(m, n)| (matrix(m, m), matrix(n, n))), k in kind()) {
        use polymat::ops::Ptrace;
        let ab = make(&kron(&a, &b), k);
        let dims = vec![a.len(), b.len()];
        let left = polymat::ptrace(&ab, &Ptrace { dims: dims.clone(), keep: vec![0] }, Out::Auto).unwrap();
        let want = map(&a, |x| x * trace(&b));
        prop_assert!(eq(&left, &make(&want, Kind::DENSE)));
        let right = polymat::ptrace(&ab, &Ptrace { dims, keep: vec![1] }, Out::Auto).unwrap();
        prop_assert!(eq(&right, &make(&map(&b, |x| x * trace(&a)), Kind::DENSE)));
    }

    #[test]
    fn ptrace_of_a_ket_is_that_of_its_projector(
        (dims, psi) in prop::collection::vec(1..4usize, 1..4)
            .prop_flat_map(|d| { let n = d.iter().product(); (Just(d), matrix(n, 1)) }),
        mask in any::<u8>(), k in kind(), bra in any::<bool>(), o in out(),
    ) {
        use polymat::ops::Ptrace;
        // A 1 × 1 operand is an operator, not a state.
        prop_assume!(psi.len() > 1);
        let keep: Vec<usize> = (0..dims.len()).filter(|s| mask >> s & 1 == 1).collect();
        let p = Ptrace { dims, keep };
        let ket = make(&psi, k);
        let rho = polymat::project(&ket, Out::Dense).unwrap();
        let want = polymat::ptrace(&rho, &p, Out::Dense).unwrap();
        let v = if bra { polymat::adjoint(&ket, Out::Auto).unwrap() } else { ket };
        prop_assert!(eq(&polymat::ptrace(&v, &p, o).unwrap(), &want));
    }

    #[test]
    fn block_extract_inverts_block_build((a, b) in pair(), ka in kind(), kb in kind(), o in out()) {
        use polymat::ops::Block;
        let (x, y) = (make(&a, ka), make(&b, kb));
        let (m, n) = x.shape();
        let blocks = [Block { row: 0, col: 0, data: &x }, Block { row: 1, col: 1, data: &y }];
        let big = polymat::block_build(&blocks, &[m, m], &[n, n], o).unwrap();
        prop_assert!(eq(&polymat::block_extract(&big, (m..2 * m, n..2 * n), Out::Auto).unwrap(), &y));
        let zero = polymat::block_extract(&big, (0..m, n..2 * n), Out::Auto).unwrap();
        prop_assert!(polymat::iszero(&zero, 0.0).unwrap());
        let over = polymat::block_overwrite(&big, &x, (m, n), o).unwrap();
        prop_assert!(eq(&polymat::block_extract(&over, (m..2 * m, n..2 * n), Out::Auto).unwrap(), &x));
    }

    #[test]
    fn inverse_and_solve_agree(a in square(), k in kind()) {
        // Shifted to be diagonally dominant: |entries| ≤ 4√2 and n ≤ 5.
        let n = a.len();
        let shifted: Ref = (0..n).map(|i| (0..n).map(|j| a[i][j] + if i == j { c64::new(40.0, 0.0) } else { c64::new(0.0, 0.0) }).collect()).collect();
        let x = make(&shifted, k);
        let inv = polymat::inv(&x, Out::Auto).unwrap();
        let eye = polymat::identity(n, Out::Dense).unwrap();
        prop_assert!(eq(&polymat::matmul(&x, &inv, Out::Auto).unwrap(), &eye));
        let s = polymat::solve(&x, &eye, polymat::ops::SolveMethod::Lu, Out::Auto).unwrap();
        prop_assert!(eq(&s, &inv));
        // expm(logm(a)) = a and sqrtm(a)² = a
        let l = polymat::logm(&x, Out::Auto).unwrap();
        prop_assert!(eq(&polymat::expm(&l, Out::Auto).unwrap(), &x));
        let r = polymat::sqrtm(&x, Out::Auto).unwrap();
        prop_assert!(eq(&polymat::matmul(&r, &r, Out::Auto).unwrap(), &x));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Triplets in any order, duplicates summed, rows left empty: the Csr holds the sum of the
    /// triplets at each position (to rounding), in a valid structure; and `from_raw` of its arrays with each
    /// row's columns reversed (unsorted) gives it back.
    #[test]
    fn triplets_sum_into_a_valid_csr(
        (m, n, t) in (1..9usize, 1..9usize).prop_flat_map(|(m, n)| {
            (Just(m), Just(n), prop::collection::vec((0..m, 0..n, entry()), 0..40))
        })
    ) {
        let (rows, cols, vals): (Vec<_>, Vec<_>, Vec<_>) =
            t.iter().map(|&(i, j, v)| (i, j, v)).fold((vec![], vec![], vec![]), |mut acc, e| {
                acc.0.push(e.0);
                acc.1.push(e.1);
                acc.2.push(e.2);
                acc
            });
        let c = polymat::Csr::from_triplets((m, n), &rows, &cols, &vals).unwrap();
        let mut want = vec![vec![c64::new(0.0, 0.0); n]; m];
        for &(i, j, v) in &t {
            want[i][j] += v;
        }
        prop_assert!(c.as_csmat().check_compressed_structure().is_ok());
        for (i, row) in want.iter().enumerate() {
            for (j, &w) in row.iter().enumerate() {
                // Duplicates may be summed in another order: equal to rounding.
                prop_assert!((c.get(i, j) - w).norm() <= 1e-12 * w.norm().max(1.0));
            }
        }
        let (p, idx, val) = (c.indptr(), c.indices(), c.data());
        let (mut ri, mut rv) = (idx.to_vec(), val.to_vec());
        for w in p.windows(2) {
            ri[w[0]..w[1]].reverse();
            rv[w[0]..w[1]].reverse();
        }
        let back = polymat::Csr::from_raw((m, n), p.to_vec(), ri, rv).unwrap();
        prop_assert_eq!(back, c);
    }
}

/// A square matrix whose indices fall into up to three groups with no entry between two
/// groups (block diagonal up to a permutation), entries of at most 1 in size.
fn grouped() -> impl Strategy<Value = Ref> {
    (1..9usize).prop_flat_map(|n| {
        (matrix(n, n), prop::collection::vec(0..3usize, n)).prop_map(|(a, group)| {
            let n = a.len();
            (0..n)
                .map(|i| {
                    (0..n)
                        .map(|j| {
                            if group[i] == group[j] {
                                a[i][j] * 0.25
                            } else {
                                c64::new(0.0, 0.0)
                            }
                        })
                        .collect()
                })
                .collect()
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// The Csr exponential, formed block by block over the connected components, equals the
    /// dense algorithm's on the whole matrix to rounding (relative to the largest entry).
    #[test]
    fn sparse_expm_by_blocks_matches_the_dense_path(a in grouped()) {
        let want = to_ref(&polymat::expm(&make(&a, Kind::DENSE), Out::Dense).unwrap());
        let got = polymat::expm(&make(&a, Kind::CSR), Out::Csr).unwrap();
        prop_assert_eq!(got.kind(), Kind::CSR);
        let got = to_ref(&got);
        let scale = want.iter().flatten().fold(1.0f64, |m, z| m.max(z.norm()));
        for (g, w) in got.iter().flatten().zip(want.iter().flatten()) {
            prop_assert!((g - w).norm() <= 1e-12 * scale, "{} against {}", g, w);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// The Csr inverse, formed block by block, inverts: where the dense LU on the whole matrix
    /// succeeds, so does it, with a residual ‖a·x − 1‖ at rounding level. (Singularity is judged
    /// per block, so it may succeed where the whole matrix's condition number is refused.)
    #[test]
    fn sparse_inv_by_blocks_inverts(a in grouped()) {
        let n = a.len();
        let dense = polymat::inv(&make(&a, Kind::DENSE), Out::Dense);
        let got = polymat::inv(&make(&a, Kind::CSR), Out::Csr);
        if dense.is_ok() {
            let got = got.unwrap();
            prop_assert_eq!(got.kind(), Kind::CSR);
            let x = to_ref(&got);
            let norm = |m: &Ref| (0..n).map(|j| (0..n).map(|i| m[i][j].norm()).sum::<f64>()).fold(0.0, f64::max);
            let ax = matmul(&a, &x);
            let res = zip(&ax, &eye(n), |p, q| p - q);
            prop_assert!(norm(&res) <= 1e-12 * norm(&a) * norm(&x) * n as f64, "residual {}", norm(&res));
        }
    }
}
