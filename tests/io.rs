//! polymat::io against files written by scipy and numpy (tests/fixtures/io, made by make.py),
//! and round trips of every built-in kind through `.mtx`, `.npy` and serde.

mod common;

use std::path::PathBuf;

use common::{Rng, random_ref, to_ref};
use polymat::{Csr, Data, Dense, Kind, c64, io};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/io")
        .join(name)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("polymat-io-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

struct Summary {
    shape: (usize, usize),
    nonzeros: usize,
    fro: f64,
    sum: c64,
    ax: c64,
}

fn reference() -> Vec<(String, Summary)> {
    let text = std::fs::read_to_string(fixture("io_reference.txt")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let f = |i: usize| w[i].parse::<f64>().unwrap();
            let u = |i: usize| w[i].parse::<usize>().unwrap();
            (
                w[0].to_owned(),
                Summary {
                    shape: (u(1), u(2)),
                    nonzeros: u(3),
                    fro: f(4),
                    sum: c64::new(f(5), f(6)),
                    ax: c64::new(f(7), f(8)),
                },
            )
        })
        .collect()
}

fn summarise(d: &Data) -> Summary {
    let r = to_ref(d);
    let (m, n) = d.shape();
    let x: Vec<c64> = (0..n)
        .map(|k| c64::new((0.3 * k as f64).cos(), (0.7 * k as f64).sin()))
        .collect();
    let mut s = Summary {
        shape: (m, n),
        nonzeros: 0,
        fro: 0.0,
        sum: c64::new(0.0, 0.0),
        ax: c64::new(0.0, 0.0),
    };
    for row in &r {
        for (j, &v) in row.iter().enumerate() {
            s.nonzeros += usize::from(v != c64::new(0.0, 0.0));
            s.fro += v.norm_sqr();
            s.sum += v;
            s.ax += v * x[j];
        }
    }
    s.fro = s.fro.sqrt();
    s
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-10 + 1e-12 * b.abs()
}

#[test]
fn reads_what_scipy_and_numpy_wrote() {
    let refs = reference();
    assert_eq!(refs.len(), 8);
    for (name, want) in refs {
        let d: Data = if name.ends_with(".npy") {
            io::read_npy(fixture(&name)).unwrap().into()
        } else {
            io::read_matrix_market(fixture(&name)).unwrap()
        };
        // coordinate -> Csr, array and npy -> Dense
        let sparse =
            name == "xxz_field_6.mtx" || name == "convection_12.mtx" || name == "pattern_16.mtx";
        assert_eq!(
            d.kind(),
            if sparse { Kind::CSR } else { Kind::DENSE },
            "{name}"
        );
        let got = summarise(&d);
        assert_eq!(got.shape, want.shape, "{name}");
        assert_eq!(got.nonzeros, want.nonzeros, "{name}");
        assert!(
            close(got.fro, want.fro),
            "{name}: {} vs {}",
            got.fro,
            want.fro
        );
        for (g, w) in [(got.sum, want.sum), (got.ax, want.ax)] {
            assert!(close(g.re, w.re) && close(g.im, w.im), "{name}: {g} vs {w}");
        }
    }
}

#[test]
fn the_hermitian_file_is_hermitian_and_complex() {
    let h = io::read_matrix_market(fixture("xxz_field_6.mtx")).unwrap();
    assert!(polymat::isherm(&h, 0.0).unwrap());
    let hc = h.as_csr().unwrap();
    assert_eq!(hc.get(1, 0), c64::new(0.0, 0.3));
    assert_eq!(hc.get(0, 1), c64::new(0.0, -0.3));
}

fn kinds_under_test() -> Vec<Kind> {
    let mut kinds = vec![Kind::DENSE, Kind::CSR, Kind::DIA];
    if polymat::gpu::available() {
        kinds.push(Kind::GPU_DENSE);
    }
    kinds
}

#[test]
fn every_builtin_kind_round_trips_through_mtx() {
    let mut rng = Rng::new(11);
    for kind in kinds_under_test() {
        for (m, n, density) in [(7, 5, 0.4), (1, 1, 1.0), (0, 3, 0.0), (30, 30, 0.05)] {
            let r = random_ref(&mut rng, m, n, density);
            let a = common::make(&r, kind);
            let path = scratch(&format!("rt-{}-{m}x{n}.mtx", kind.name()));
            io::write_matrix_market(&path, &a).unwrap();
            let back = io::read_matrix_market(&path).unwrap();
            // Dense kinds come back as Dense (array), the others as Csr (coordinate).
            let dense_kind = kind == Kind::DENSE || kind == Kind::GPU_DENSE;
            assert_eq!(
                back.kind(),
                if dense_kind { Kind::DENSE } else { Kind::CSR }
            );
            assert_eq!(to_ref(&back), r, "{kind} {m}×{n}: not bit-exact");
        }
    }
}

#[test]
fn dense_round_trips_through_npy_and_other_kinds_are_converted() {
    let mut rng = Rng::new(12);
    for kind in kinds_under_test() {
        let r = random_ref(&mut rng, 6, 9, 0.5);
        let a = common::make(&r, kind);
        let path = scratch(&format!("rt-{}.npy", kind.name()));
        io::write_npy(&path, &a).unwrap();
        let back = io::read_npy(&path).unwrap();
        assert_eq!(to_ref(&back.into()), r, "{kind}");
    }
    // A sparse operator over the dense limit is refused, not densified.
    let big: Data = Csr::identity(1 << 24).into();
    let err = io::write_npy(scratch("big.npy"), &big).unwrap_err();
    assert!(matches!(err, polymat::Error::TooLarge { .. }), "{err}");
}

#[test]
fn missing_files_and_directories_are_io_errors() {
    let err = io::read_matrix_market(fixture("no-such-file.mtx")).unwrap_err();
    assert!(
        matches!(&err, polymat::Error::Io { kind: std::io::ErrorKind::NotFound, path, .. } if path.ends_with("no-such-file.mtx")),
        "{err}"
    );
    let err = io::write_npy(fixture("no-such-dir/x.npy"), &Dense::identity(1)).unwrap_err();
    assert!(matches!(err, polymat::Error::Io { .. }), "{err}");
    // A .npy file is not Matrix Market and the other way round.
    let err = io::read_matrix_market(fixture("complex_c.npy")).unwrap_err();
    assert!(matches!(err, polymat::Error::Format { .. }), "{err}");
    let err = io::read_npy(fixture("dense_5x4.mtx")).unwrap_err();
    assert!(err.to_string().contains("not a .npy file"), "{err}");
}

#[test]
fn a_scipy_file_survives_polymat_rewriting_it() {
    let a = io::read_matrix_market(fixture("convection_12.mtx")).unwrap();
    let path = scratch("convection_again.mtx");
    io::write_matrix_market(&path, &a).unwrap();
    let b = io::read_matrix_market(&path).unwrap();
    assert_eq!(a.as_csr(), b.as_csr());
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("%%MatrixMarket matrix coordinate real general\n"));
}

#[cfg(feature = "serde")]
#[test]
fn every_builtin_kind_round_trips_through_serde() {
    let mut rng = Rng::new(13);
    for kind in kinds_under_test() {
        let r = random_ref(&mut rng, 5, 4, 0.5);
        let a = common::make(&r, kind);
        let json = serde_json::to_string(&a).unwrap();
        assert!(
            json.starts_with(&format!("{{\"kind\":\"{}\"", kind.name())),
            "{json}"
        );
        let back: Data = serde_json::from_str(&json).unwrap();
        assert_eq!(back.kind(), kind);
        assert_eq!(to_ref(&back), r, "{kind}");
    }
    let d = Dense::from_fn(2, 3, |i, j| c64::new(i as f64, j as f64));
    let back: Dense = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
    assert_eq!(back, d);
    let c = Csr::from_triplets((3, 2), &[2], &[1], &[c64::new(0.5, -1.0)]).unwrap();
    let back: Csr = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
    assert_eq!(back, c);
}

#[test]
fn vectors_read_from_files_are_held_in_one_buffer_column() {
    use polymat::Layout;
    let c = |re: f64, im: f64| c64::new(re, im);
    let n = 37;
    let ket = Dense::from_fn(n, 1, |i, _| c(i as f64, 1.0));
    let bra = Dense::from_fn(1, n, |_, j| c(1.0, j as f64));
    // Either file order (numpy's C order, and Fortran order): the same entries, in one
    // unpadded buffer column (faer pads a one-row buffer to four rows).
    for v in [&ket, &bra] {
        for layout in [Layout::ColMajor, Layout::RowMajor] {
            let held = v.clone().into_layout(layout).unwrap();
            let mut bytes = Vec::new();
            io::write_npy_to(&mut bytes, &held).unwrap();
            let back = io::read_npy_from(bytes.as_slice()).unwrap();
            assert_eq!(&back, v, "{:?} written {layout:?}", v.shape());
            assert_eq!(
                back.buffer().shape(),
                (n, 1),
                "{:?} written {layout:?}",
                v.shape()
            );
        }
    }
    // A Matrix Market array of one row.
    let text = "%%MatrixMarket matrix array complex general\n1 3\n1 0\n2 0.5\n3 -1\n";
    let back = io::read_matrix_market_from(text.as_bytes()).unwrap();
    let d = back.downcast_ref::<Dense>().unwrap();
    assert_eq!(d.buffer().shape(), (3, 1));
    assert_eq!(
        (d.get(0, 0), d.get(0, 1), d.get(0, 2)),
        (c(1.0, 0.0), c(2.0, 0.5), c(3.0, -1.0))
    );
}
