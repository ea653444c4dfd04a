//! Regression tests for the defects an independent harness found (issue "Reliability"): each
//! test names the defect it pins. All of them failed on 389eaf6 (a panic, an abort, a hang, a
//! hijacked conversion or a wrong answer returned as `Ok`); they must return correct results
//! or precise errors now. The last test is the registry fuzzer.
//!
//! The tests register kinds process-wide, so they live in their own binary.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};

use polymat::ops::{EigsOptions, Ptrace, SolveMethod, norm};
use polymat::{
    Conversion, Csr, Data, Dense, Dispatcher, Error, Kind, Out, Specialisation, Storage, c64,
    registry,
};

fn r(x: f64) -> c64 {
    c64::new(x, 0.0)
}

/// A diagonal-only kind: the conversion from Dense is partial (it refuses off-diagonal
/// entries) and its conversion to Csr is made very cheap, to tempt the router.
#[derive(Clone, Debug)]
struct Diagonal(Vec<c64>);

impl Storage for Diagonal {
    fn shape(&self) -> (usize, usize) {
        (self.0.len(), self.0.len())
    }
}

/// Single-precision storage: its conversion from Dense is lossy and cheap.
#[derive(Clone, Debug)]
struct Single(usize, usize, Vec<(f32, f32)>);

impl Storage for Single {
    fn shape(&self) -> (usize, usize) {
        (self.0, self.1)
    }
}

fn general() -> Data {
    Dense::from_rows(&[
        [r(1.0), c64::new(0.1234567891234, 0.3)],
        [r(2.0), c64::new(0.0, 1.000000000123)],
    ])
    .unwrap()
    .into()
}

/// Defect 1: a user kind cannot take over the built-in conversions (partial, lossy or
/// recursive converters).
#[test]
fn user_kinds_cannot_hijack_builtin_conversions() {
    registry()
        .register_type::<Diagonal>("Diagonal", &[])
        .unwrap();
    registry().register_type::<Single>("Single", &[]).unwrap();
    registry()
        .add_conversions([
            Conversion::new(
                |d: &Diagonal| {
                    Ok(Dense::from_fn(d.0.len(), d.0.len(), |i, j| {
                        if i == j { d.0[i] } else { r(0.0) }
                    }))
                },
                1.0,
            ),
            Conversion::new(
                |d: &Dense| {
                    let (n, _) = d.shape();
                    if (0..n).any(|j| (0..n).any(|i| i != j && d.get(i, j) != r(0.0))) {
                        return Err(Error::Unrepresentable {
                            kind: "Diagonal".into(),
                            what: format!("{d}"),
                            reason: "off-diagonal entries".into(),
                        });
                    }
                    Ok(Diagonal((0..n).map(|i| d.get(i, i)).collect()))
                },
                0.01,
            )
            .partial(),
            Conversion::new(
                |d: &Diagonal| Ok(Csr::scaled_identity(d.0.len(), r(1.0))),
                0.01,
            ),
            Conversion::new(
                |d: &Dense| {
                    let (m, n) = d.shape();
                    let v = (0..n)
                        .flat_map(|j| (0..m).map(move |i| (i, j)))
                        .map(|(i, j)| (d.get(i, j).re as f32, d.get(i, j).im as f32))
                        .collect();
                    Ok(Single(m, n, v))
                },
                0.01,
            )
            .lossy(),
            Conversion::new(
                |s: &Single| {
                    let (rows, cols): (Vec<usize>, Vec<usize>) =
                        (0..s.2.len()).map(|k| (k % s.0, k / s.0)).unzip();
                    let vals: Vec<c64> =
                        s.2.iter()
                            .map(|&(re, im)| c64::new(f64::from(re), f64::from(im)))
                            .collect();
                    Csr::from_triplets((s.0, s.1), &rows, &cols, &vals)
                },
                0.01,
            ),
        ])
        .unwrap();
    assert_eq!(
        registry().path(Kind::DENSE, Kind::CSR).unwrap(),
        [Kind::DENSE, Kind::CSR]
    );
    let a = general();
    let c = polymat::to(Kind::CSR, &a).unwrap();
    assert!(
        polymat::isequal(&c, &a, 0.0, 0.0).unwrap(),
        "exact, not via f32 or Diagonal"
    );
    let s = polymat::add(&a, &a, Out::Csr).unwrap();
    assert!(polymat::isequal(&s, &polymat::add(&a, &a, Out::Dense).unwrap(), 0.0, 0.0).unwrap());
    let p = polymat::matmul(&a, &a, Out::Csr).unwrap();
    assert_eq!(p.kind(), Kind::CSR);
    // The partial conversion still serves its own target, with its own error.
    let diag = registry().kind_of::<Diagonal>().unwrap();
    assert!(matches!(
        polymat::to(diag, &a),
        Err(Error::Unrepresentable { .. })
    ));
    assert!(polymat::to(diag, &Dense::identity(2).into()).is_ok());
}

#[derive(Clone, Debug)]
struct Recursive(Dense);

impl Storage for Recursive {
    fn shape(&self) -> (usize, usize) {
        self.0.shape()
    }
}

#[derive(Clone, Debug)]
struct Misshapen(Dense);

impl Storage for Misshapen {
    fn shape(&self) -> (usize, usize) {
        self.0.shape()
    }
}

/// Defects 1 and 7: a converter that converts its own input again gets an error, not a
/// stack overflow; a converter's output shape is checked.
#[test]
fn misbehaving_converters_are_errors() {
    let rec = registry()
        .register_type::<Recursive>("Recursive", &[])
        .unwrap();
    let bad = registry()
        .register_type::<Misshapen>("Misshapen", &[])
        .unwrap();
    registry()
        .add_conversions([
            Conversion::new(|d: &Dense| Ok(Recursive(d.clone())), 1.0),
            Conversion::dynamic(
                rec,
                Kind::DENSE,
                move |d: &Data| polymat::to(Kind::DENSE, d), // recurses
                1.0,
            ),
            Conversion::new(|d: &Dense| Ok(Misshapen(d.clone())), 1.0),
            Conversion::new(|m: &Misshapen| Ok(Dense::zeros(m.0.shape().0 + 1, 1)), 1.0),
        ])
        .unwrap();
    let x = polymat::to(rec, &general()).unwrap();
    assert!(matches!(
        polymat::to(Kind::DENSE, &x),
        Err(Error::ReentrantConversion { .. })
    ));
    let y = polymat::to(bad, &general()).unwrap();
    assert!(matches!(
        polymat::to(Kind::DENSE, &y),
        Err(Error::ConverterShape { .. })
    ));
}

/// Defect 2: shape arithmetic never wraps (`n + 1`, products); each is an error now.
#[test]
fn shape_arithmetic_is_checked() {
    let one = r(1.0);
    assert!(Csr::from_raw((usize::MAX, 1), vec![0], vec![], vec![]).is_err());
    assert!(Csr::from_triplets((usize::MAX, 1), &[0], &[0], &[one]).is_err());
    assert!(Csr::try_identity(usize::MAX).is_err());
    assert!(polymat::zeros(usize::MAX, 1, Out::Auto).is_err());
    let wide: Data = Csr::from_triplets((1, usize::MAX), &[0], &[usize::MAX - 1], &[one])
        .unwrap()
        .into();
    assert!(polymat::transpose(&wide, Out::Auto).is_err());
    assert!(polymat::column_stack(&wide, Out::Auto).is_err());
    assert!(polymat::column_unstack(&Csr::zeros(0, 1).into(), usize::MAX, Out::Auto).is_err());
    // Two products that overflow are not "equal sizes".
    let big = usize::MAX / 2 + 1;
    let tall: Data = Csr::zeros(2, big).into();
    assert!(matches!(
        polymat::reshape(&tall, (big, 2), Out::Auto),
        Ok(_) | Err(Error::Shape { .. } | Error::TooLarge { .. })
    ));
    assert!(polymat::reshape(&Csr::zeros(1, 3).into(), (big, 2), Out::Auto).is_err());
    assert!(polymat::one_element((usize::MAX, 1), (0, 0), one, Out::Auto).is_err());
    let ket0: Data = Csr::zeros(0, 1).into();
    assert_eq!(polymat::project(&ket0, Out::Auto).unwrap().shape(), (0, 0));
}

/// Defect 3: out of memory for a dense result is `Error::TooLarge`, never an abort.
#[test]
fn huge_dense_results_are_errors() {
    let big: Data = Csr::identity(100_000).into();
    for (name, r) in [
        (
            "to",
            polymat::to(Kind::DENSE, &Csr::identity(1_000_000).into()),
        ),
        ("identity", polymat::identity(1_000_000, Out::Dense)),
        // Under Out::Auto the identity's exponential and inverse are Csr (a diagonal matrix
        // is handled entry by entry, `tests/large_sparse.rs`); a Dense one is refused.
        ("expm", polymat::expm(&big, Out::Dense)),
        ("sqrtm", polymat::sqrtm(&big, Out::Auto)),
        ("logm", polymat::logm(&big, Out::Auto)),
        ("inv", polymat::inv(&big, Out::Dense)),
        ("kron", {
            let i: Data = Csr::identity(1000).into();
            polymat::kron(&i, &i, Out::Dense)
        }),
    ] {
        assert!(matches!(r, Err(Error::TooLarge { .. })), "{name}: {r:?}");
    }
    assert!(matches!(
        polymat::eigs(&big, EigsOptions::default()),
        Err(Error::TooLarge { .. })
    ));
    assert!(matches!(
        polymat::svd(&big, true),
        Err(Error::TooLarge { .. })
    ));
    assert!(matches!(norm::trace(&big), Err(Error::TooLarge { .. })));
    assert!(matches!(
        Dense::try_zeros(1 << 40, 1 << 40),
        Err(Error::TooLarge { .. })
    ));
}

/// Defect 4: empty-but-wide shapes cost O(1).
#[test]
fn empty_but_wide_is_instant() {
    let t = std::time::Instant::now();
    let z = polymat::zeros(0, usize::MAX, Out::Dense).unwrap();
    assert_eq!(z.shape(), (0, usize::MAX));
    let _ = polymat::mul(&z, r(2.0), Out::Auto).unwrap();
    // Its transpose has usize::MAX rows, which neither kind can hold (MAX + 1 row pointers):
    // an error, at once. With 2⁴⁰ columns it exists.
    assert!(polymat::transpose(&z, Out::Csr).is_err());
    let w = polymat::zeros(0, 1 << 40, Out::Dense).unwrap();
    assert_eq!(
        polymat::transpose(&w, Out::Dense).unwrap().shape(),
        (1 << 40, 0)
    );
    assert!(polymat::iszero(&z, 0.0).unwrap());
    assert_eq!(norm::max(&z).unwrap(), 0.0);
    assert!(t.elapsed().as_secs_f64() < 1.0);
}

/// Defect 5: answers do not depend on the kind; tolerances are validated.
#[test]
fn answers_do_not_depend_on_the_kind() {
    for k in [Kind::DENSE, Kind::CSR] {
        let ket0 = polymat::to(k, &Dense::zeros(0, 1).into()).unwrap();
        assert_eq!(
            polymat::project(&ket0, Out::Auto).unwrap().shape(),
            (0, 0),
            "{k}"
        );
        let a = polymat::to(k, &general()).unwrap();
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                polymat::iszero(&a, bad),
                Err(Error::InvalidArgument { .. })
            ));
            assert!(matches!(
                polymat::isherm(&a, bad),
                Err(Error::InvalidArgument { .. })
            ));
            assert!(matches!(
                polymat::isdiag(&a, bad),
                Err(Error::InvalidArgument { .. })
            ));
            assert!(matches!(
                polymat::isequal(&a, &a, bad, 0.0),
                Err(Error::InvalidArgument { .. })
            ));
            assert!(matches!(
                polymat::isequal(&a, &a, 0.0, bad),
                Err(Error::InvalidArgument { .. })
            ));
            assert!(matches!(
                polymat::tidyup(&a, bad, Out::Auto),
                Err(Error::InvalidArgument { .. })
            ));
        }
        // NaN entries: max and 1-norms are NaN on every kind.
        let nan = polymat::to(
            k,
            &Dense::from_rows(&[[r(1.0), c64::new(f64::NAN, 0.0)]])
                .unwrap()
                .into(),
        )
        .unwrap();
        assert!(norm::max(&nan).unwrap().is_nan(), "{k}");
        assert!(norm::one(&nan).unwrap().is_nan(), "{k}");
    }
}

/// Defect 6: singular systems and overflowing exponentials are errors, not garbage.
#[test]
fn singular_and_overflowing_results_are_errors() {
    let i = c64::new(0.0, 1.0);
    // Row 1 is twice row 0: exactly singular, though LU's pivots come out tiny, not zero.
    let s = Dense::from_rows(&[
        [r(1.0), i, r(2.0) + i],
        [r(2.0), i * 2.0, r(4.0) + i * 2.0],
        [r(0.3), r(1.0), c64::new(1.0, 1.0)],
    ])
    .unwrap();
    let b: Data = Dense::from_fn(3, 1, |_, _| r(1.0)).into();
    for k in [Kind::DENSE, Kind::CSR] {
        let a = polymat::to(k, &s.clone().into()).unwrap();
        let e = polymat::inv(&a, Out::Auto).unwrap_err();
        assert!(matches!(e, Error::Numerical { .. }), "{e}");
        let e = polymat::solve(&a, &b, SolveMethod::Lu, Out::Auto).unwrap_err();
        assert!(matches!(e, Error::Numerical { .. }), "{e}");
    }
    let big = polymat::ops::diag(vec![vec![r(800.0); 2]], vec![0], (2, 2), Out::Dense).unwrap();
    let e = polymat::expm(&big, Out::Auto).unwrap_err();
    assert!(e.to_string().contains("overflows"), "{e}");
    // Nearly singular: a pivot of order 1e-17 survives LU, and the condition estimate refuses.
    let near = Dense::from_rows(&[[r(1.0), r(1.0)], [r(1.0), r(1.0 + 1e-17)]]).unwrap();
    for k in [Kind::DENSE, Kind::CSR] {
        let e =
            polymat::inv(&polymat::to(k, &near.clone().into()).unwrap(), Out::Auto).unwrap_err();
        assert!(matches!(e, Error::Numerical { .. }), "{e}");
    }
    let near = Dense::from_rows(&[[r(1.0), r(2.0)], [r(1.0), r(2.0 + 3e-16)]]).unwrap();
    for k in [Kind::DENSE, Kind::CSR] {
        let e =
            polymat::inv(&polymat::to(k, &near.clone().into()).unwrap(), Out::Auto).unwrap_err();
        assert!(
            matches!(&e, Error::Numerical { reason, .. } if reason.contains("condition")),
            "{k}: {e}"
        );
    }
    let huge = Dense::from_fn(2, 2, |_, _| r(1e308)).into();
    let e = polymat::expm(&huge, Out::Auto).unwrap_err();
    assert!(
        e.to_string().contains("overflows") && !e.to_string().contains("non-finite"),
        "{e}"
    );
    let nan = Dense::from_fn(2, 2, |_, _| r(f64::NAN)).into();
    let e = polymat::expm(&nan, Out::Auto).unwrap_err();
    assert!(e.to_string().contains("non-finite"), "{e}");
}

/// Defect 7: dispatcher arity and table size are bounded; weights must be finite, > 0 and at
/// most MAX_WEIGHT, so path sums never reach the "unreachable" sentinel.
#[test]
fn contracts_are_checked() {
    let err = Dispatcher::<()>::builder("wide", 20).build().unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
    let ok = Dispatcher::<()>::builder("six", 6)
        .specialisation(Specialisation::generic("g", 6, |a: &[&Data], _, _: &()| {
            Ok(a[0].clone())
        }))
        .build();
    assert!(ok.is_ok());
    // Eight inputs are allowed, but with the five built-in kinds the table (5⁸·6 cells) passes
    // MAX_TABLE_CELLS: refused with the reason, not built.
    let err = Dispatcher::<()>::builder("eight", 8)
        .specialisation(Specialisation::generic("g", 8, |a: &[&Data], _, _: &()| {
            Ok(a[0].clone())
        }))
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("cells"), "{err}");
    for w in [f64::MAX, 1e308, polymat::convert::MAX_WEIGHT * 1.5] {
        let e = registry()
            .add_conversions([Conversion::new(|d: &Diagonal| Ok(d.clone()), w)])
            .unwrap_err();
        assert!(matches!(
            e,
            Error::InvalidWeight { .. }
                | Error::UnregisteredType { .. }
                | Error::InvalidArgument { .. }
        ));
    }
}

/// Defect 8: costs follow the data, not the dimensions.
#[test]
fn costs_follow_the_data() {
    let t = std::time::Instant::now();
    let n = 1usize << 40;
    let a: Data = Csr::from_triplets((1, 1), &[0], &[0], &[r(2.0)])
        .unwrap()
        .into();
    let b: Data = Csr::from_triplets((1, n), &[0], &[n - 1], &[r(3.0)])
        .unwrap()
        .into();
    let p = polymat::matmul(&a, &b, Out::Csr).unwrap();
    assert_eq!(p.downcast_ref::<Csr>().unwrap().get(0, n - 1), r(6.0));
    assert!(norm::one(&b).unwrap() == 3.0);
    let e = polymat::ptrace(
        &Dense::zeros(0, 0).into(),
        &Ptrace {
            dims: vec![1 << 35, 0],
            keep: vec![0],
        },
        Out::Auto,
    );
    assert!(matches!(e, Ok(_) | Err(Error::TooLarge { .. })), "{e:?}");
    assert!(t.elapsed().as_secs_f64() < 2.0);
}

/// Defect 9: every constructor that can fail has a `try_` (or `Result`) form.
#[test]
fn fallible_constructors_exist() {
    assert!(Dense::try_zeros(usize::MAX, 2).is_err());
    assert!(Dense::try_identity(1 << 33).is_err());
    assert!(Dense::try_from_fn(1 << 33, 1 << 33, |_, _| r(0.0)).is_err());
    assert!(Csr::try_zeros(usize::MAX, 0).is_err());
    assert!(Csr::try_identity(usize::MAX).is_err());
    assert_eq!(Csr::identity(2).try_get(0, 99), None);
}

// ------------------------------------------------------------------ registry fuzzer

/// A family of user kinds, one Rust type per `N`.
#[derive(Clone, Debug)]
struct UserKind<const N: usize>(Dense);

impl<const N: usize> Storage for UserKind<N> {
    fn shape(&self) -> (usize, usize) {
        self.0.shape()
    }
}

static REFUSE: AtomicBool = AtomicBool::new(false);

/// Registers `UserKind<N>` with random conversions: partial ones fail on every second call,
/// lossy ones round to single precision.
fn register_user<const N: usize>(rng: &mut common::Rng) {
    let kind = registry()
        .register_type::<UserKind<N>>(&format!("User{N}"), &[])
        .unwrap();
    let w = |rng: &mut common::Rng| 0.001 + (rng.unit() + 1.0);
    let mut conversions = vec![Conversion::new(|u: &UserKind<N>| Ok(u.0.clone()), w(rng))];
    let mut into = Conversion::new(
        move |d: &Dense| {
            if REFUSE.fetch_xor(true, Ordering::Relaxed) {
                return Err(Error::Unrepresentable {
                    kind: format!("User{N}"),
                    what: format!("{d}"),
                    reason: "refused".into(),
                });
            }
            Ok(UserKind::<N>(Dense::from_fn(
                d.shape().0,
                d.shape().1,
                |i, j| {
                    let z = d.get(i, j);
                    c64::new(f64::from(z.re as f32), f64::from(z.im as f32))
                },
            )))
        },
        w(rng),
    );
    if rng.next_u64().is_multiple_of(2) {
        into = into.partial();
    }
    if rng.next_u64().is_multiple_of(2) {
        into = into.lossy();
    }
    conversions.push(into);
    // A very cheap lossy edge into Csr, to tempt the router.
    conversions.push(
        Conversion::new(
            |u: &UserKind<N>| polymat::to_type::<Csr>(&u.0.clone().into()),
            0.001,
        )
        .lossy(),
    );
    registry().add_conversions(conversions).unwrap();
    let _ = kind;
}

#[test]
fn registry_fuzzer_keeps_builtin_conversions_exact() {
    let mut rng = common::Rng::new(99);
    register_user::<0>(&mut rng);
    register_user::<1>(&mut rng);
    register_user::<2>(&mut rng);
    register_user::<3>(&mut rng);
    register_user::<4>(&mut rng);
    register_user::<5>(&mut rng);
    register_user::<6>(&mut rng);
    register_user::<7>(&mut rng);
    for k in [Kind::DENSE, Kind::CSR, Kind::GPU_DENSE] {
        for l in [Kind::DENSE, Kind::CSR, Kind::GPU_DENSE] {
            if let Ok(p) = registry().path(k, l) {
                assert!(
                    p.iter().all(|x| registry().is_builtin(*x)),
                    "{k} -> {l}: {p:?}"
                );
            }
        }
    }
    for _ in 0..200 {
        let (m, n) = (
            1 + (rng.next_u64() % 5) as usize,
            1 + (rng.next_u64() % 5) as usize,
        );
        let x = common::random_ref(&mut rng, m, n, 0.6);
        let d = common::make(&x, Kind::DENSE);
        let c = polymat::to(Kind::CSR, &d).unwrap();
        assert!(polymat::isequal(&c, &d, 0.0, 0.0).unwrap());
        let back = polymat::to(Kind::DENSE, &c).unwrap();
        assert!(polymat::isequal(&back, &d, 0.0, 0.0).unwrap());
        let s = polymat::add(&d, &d, Out::Csr).unwrap();
        common::assert_data_close(&s, &common::zip(&x, &x, |a, b| a + b), "add");
    }
}

/// Found by the fuzz driver once Dia joined it: `isherm` on Dia agreed with Dense neither for a
/// non-finite real part on the main diagonal nor for tolerances whose square overflows, and a
/// 0×0 Dia times an empty-but-wide Dense looped over 2⁶² columns.
#[test]
fn dia_isherm_and_empty_products_match_dense() {
    let c = |re: f64, im: f64| polymat::c64::new(re, im);
    for (entries, atol) in [
        (vec![c(f64::NAN, 0.0), c(1.0, 0.0)], 1e-12),
        (vec![c(f64::INFINITY, 0.0), c(1.0, 0.0)], 1e-3),
        (vec![c(1e308, 0.0), c(-1e308, 0.0)], 1e300),
    ] {
        // [[e0, e1], [conj(e1) + 3e300, e0]]: the off-diagonal pair differs by 3e300.
        let rows = vec![
            vec![entries[0], entries[1]],
            vec![entries[1].conj() + c(3e300, 0.0), entries[0]],
        ];
        let dense = common::make(&rows, Kind::DENSE);
        let dia = common::make(&rows, Kind::DIA);
        assert_eq!(
            polymat::isherm(&dia, atol).unwrap(),
            polymat::isherm(&dense, atol).unwrap(),
            "{rows:?} atol {atol}"
        );
    }
    let empty = polymat::to(Kind::DIA, &Dense::zeros(0, 0).into()).unwrap();
    let wide: Data = Dense::try_zeros(0, 1 << 62).unwrap().into();
    let p = polymat::matmul(&empty, &wide, Out::Auto).unwrap();
    assert_eq!(p.shape(), (0, 1 << 62));
}
