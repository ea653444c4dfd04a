//! The distributed kinds (feature `mpi`) on one rank, through the public API: registration,
//! conversions in and (none) out, kernels, and the Krylov methods. The multi-rank run is
//! `mpirun -n 4 target/release/examples/dist_spin_chain` (`.ci/run` runs it).
#![cfg(feature = "mpi")]

use polymat::mpi::{self, DistCsr, DistDense, block, owner};
use polymat::ops::{EigOrder, EigsOptions};
use polymat::{Csr, Data, Dense, Error, Kind, Out, c64, registry};

#[test]
fn partition_blocks_cover_every_row_once() {
    for n in [0usize, 1, 5, 7, 64, 1000] {
        for p in 1..6 {
            let mut next = 0;
            for r in 0..p {
                let b = block(n, p, r);
                assert_eq!(b.start, next, "n={n} p={p} r={r}");
                assert!(b.len() >= n / p && b.len() <= n / p + 1);
                for i in b.clone() {
                    assert_eq!(owner(n, p, i), r, "n={n} p={p} i={i}");
                }
                next = b.end;
            }
            assert_eq!(next, n);
        }
    }
}

/// One test for everything that needs MPI: MPI is initialised once per process.
#[test]
fn one_rank_matches_the_global_kinds() {
    let mpi = mpi::init().unwrap();
    assert_eq!((mpi.rank(), mpi.size()), (0, 1));
    let n = 600;
    let h = Csr::from_triplets(
        (n, n),
        &(0..n).chain(1..n).chain(0..n - 1).collect::<Vec<_>>(),
        &(0..n).chain(0..n - 1).chain(1..n).collect::<Vec<_>>(),
        &(0..n)
            .map(|i| c64::new(i as f64 / n as f64, 0.0))
            .chain((1..n).map(|_| c64::new(0.5, 0.25)))
            .chain((1..n).map(|_| c64::new(0.5, -0.25)))
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let hg: Data = h.clone().into();
    let hd = Data::new(DistCsr::from_global(&h).unwrap()).unwrap();
    let psi: Data = Dense::from_fn(n, 1, |i, _| c64::new((i as f64).sin(), 0.1)).into();

    // Registered through the public API, in the sticky group "dist".
    let kind = registry().kind_of::<DistCsr>().unwrap();
    assert_eq!(hd.kind(), kind);
    assert_eq!(kind.name(), "DistCsr");
    // One way in, no way out: nothing gathers implicitly.
    assert!(registry().weight(Kind::CSR, kind) < f64::MAX);
    assert_eq!(registry().weight(kind, Kind::CSR), f64::MAX);
    let dd = registry().kind_of::<DistDense>().unwrap();
    assert_eq!(registry().weight(dd, Kind::DENSE), f64::MAX);
    let err = polymat::transpose(&hd, Out::Auto).unwrap_err();
    assert!(
        matches!(
            err,
            Error::NoConversion { .. } | Error::NoSpecialisation { .. }
        ),
        "{err}"
    );

    // Built row by row from a closure: the same matrix.
    let by_rows = DistCsr::from_row_fn(n, n, |i| {
        let (p, idx, val) = (h.indptr(), h.indices(), h.data());
        (p[i]..p[i + 1]).map(|e| (idx[e], val[e])).collect()
    })
    .unwrap();
    assert_eq!(
        by_rows.local(),
        hd.downcast_ref::<DistCsr>().unwrap().local()
    );
    assert_eq!(by_rows.halo_len(), 0); // one rank: nothing to fetch

    // Products stay distributed and equal the global ones.
    let y = polymat::matmul(&hd, &psi, Out::Auto).unwrap();
    assert_eq!(y.kind(), dd);
    let y_ref: Dense = polymat::to_type(&polymat::matmul(&hg, &psi, Out::Auto).unwrap()).unwrap();
    let got = y.downcast_ref::<DistDense>().unwrap().gather().unwrap();
    for i in 0..n {
        assert!((got.get(i, 0) - y_ref.get(i, 0)).norm() < 1e-12);
    }
    let close = |a: c64, b: c64| (a - b).norm() <= 1e-10 * (1.0 + b.norm());
    assert!(close(
        polymat::expect(&hd, &psi).unwrap(),
        polymat::expect(&hg, &psi).unwrap()
    ));
    assert!(close(
        polymat::trace(&hd).unwrap(),
        polymat::trace(&hg).unwrap()
    ));
    assert!(polymat::isherm(&hd, 1e-12).unwrap());
    let sum = polymat::add(&hd, &hd, Out::Auto).unwrap();
    assert_eq!(sum.kind(), kind);
    assert!(close(
        polymat::trace(&sum).unwrap(),
        polymat::trace(&hg).unwrap() * 2.0
    ));

    // DistCsr ⊗ Csr: row blocks map to row blocks.
    let x = Csr::from_triplets((2, 2), &[0, 1], &[1, 0], &[c64::new(1.0, 0.0); 2]).unwrap();
    let k = polymat::kron(&hd, &x.clone().into(), Out::Auto).unwrap();
    assert_eq!(k.kind(), kind);
    let k_ref = polymat::kron(&hg, &x.into(), Out::Auto).unwrap();
    assert!(close(
        polymat::trace(&k).unwrap(),
        polymat::trace(&k_ref).unwrap()
    ));
    assert_eq!(
        k.downcast_ref::<DistCsr>().unwrap().local(),
        k_ref.downcast_ref::<Csr>().unwrap()
    );

    // The Krylov methods, unchanged.
    let o = || {
        EigsOptions::default()
            .count(3)
            .order(EigOrder::Low)
            .vectors(false)
    };
    let e = polymat::eigs(&hd, o()).unwrap();
    let e_ref = polymat::eigs(&hg, o()).unwrap();
    for (a, b) in e.values.iter().zip(&e_ref.values) {
        assert!((a - b).norm() < 1e-8, "{a} vs {b}");
    }
    let t = c64::new(0.0, -0.3);
    let ev = polymat::expm_multiply(&hd, &psi, t, Out::Auto).unwrap();
    assert_eq!(ev.kind(), dd);
    let ev = ev.downcast_ref::<DistDense>().unwrap().gather().unwrap();
    let ev_ref: Dense =
        polymat::to_type(&polymat::expm_multiply(&hg, &psi, t, Out::Auto).unwrap()).unwrap();
    for i in 0..n {
        assert!((ev.get(i, 0) - ev_ref.get(i, 0)).norm() < 1e-10);
    }
}
