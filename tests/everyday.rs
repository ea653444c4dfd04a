//! The everyday Rust surface: operators, conversions to and from faer/sprs, printing, the
//! implicit-conversion policy and its events, default outputs, DOT output, and the small
//! inconsistencies that were fixed (Csr::get / Dense::get bounds, expm of NaN).

use std::panic::{AssertUnwindSafe, catch_unwind};

use polymat::faer::Mat;
use polymat::sprs::CsMat;
use polymat::{
    Csr, Data, DefaultScope, Dense, Error, ImplicitConversions, Kind, Out, c64, ops::ADD,
};

fn c(re: f64, im: f64) -> c64 {
    c64::new(re, im)
}

fn sy() -> Csr {
    Csr::from_triplets((2, 2), &[0, 1], &[1, 0], &[c(0.0, -1.0), c(0.0, 1.0)]).unwrap()
}

#[test]
fn operators_on_data_follow_the_dispatchers() {
    let a: Data = sy().into();
    let b: Data = Dense::identity(2).into();
    let sum = (&a + &b).unwrap();
    assert_eq!(
        sum.kind(),
        ADD.get(&[Kind::CSR, Kind::DENSE], Out::Auto)
            .unwrap()
            .explain()
            .kernel_output
            .unwrap()
    );
    let d = (c64::new(2.0, 0.0) * &sum).unwrap();
    let back: Mat<c64> = (&d).try_into().unwrap();
    assert_eq!(back[(0, 1)], c(0.0, -2.0));
    assert_eq!(back[(1, 1)], c(2.0, 0.0));
    // Owned operands, negation, division, f64 scalars.
    let e = ((-(d.clone() - b.clone()).unwrap()).unwrap() / c(0.0, 1.0)).unwrap();
    assert_eq!(e.to_string(), "[[0+1i, 2], [-2, 0+1i]]");
    assert_eq!((0.5 * a.clone()).unwrap().kind(), Kind::CSR);
    // Shape mismatches are errors from every form.
    let wide: Data = Dense::zeros(2, 3).into();
    assert!(matches!(&a + &wide, Err(Error::Shape { .. })));
    assert!(matches!(a.clone() - wide.clone(), Err(Error::Shape { .. })));
    assert!(matches!(
        &sy() + &Csr::identity(3),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        &Dense::identity(2) - &Csr::identity(3),
        Err(Error::Shape { .. })
    ));
}

#[test]
fn operators_respect_the_policies() {
    let a: Data = sy().into();
    let b: Data = Dense::identity(2).into();
    // Csr + Dense has a direct kernel returning Dense: allowed under Deny.
    polymat::with_implicit_conversions(ImplicitConversions::Deny, || {
        assert_eq!((&a + &b).unwrap().kind(), Kind::DENSE);
    });
    // With a full-scope default output of Csr, `+` lands on Csr and Deny refuses the
    // conversion of the Dense result.
    polymat::with_default_output(Out::Csr, DefaultScope::Full, || {
        assert_eq!((&a + &b).unwrap().kind(), Kind::CSR);
        polymat::with_implicit_conversions(ImplicitConversions::Deny, || {
            assert!(matches!(&a + &b, Err(Error::ConversionDenied { .. })));
        });
    });
}

#[test]
fn faer_and_sprs_values_convert_both_ways() {
    let m = Mat::<c64>::from_fn(2, 3, |i, j| c(i as f64, j as f64));
    let d: Data = m.clone().into();
    assert_eq!(d.kind(), Kind::DENSE);
    let s: CsMat<c64> = (&d).try_into().unwrap();
    assert_eq!(s.nnz(), 5);
    let sd = Data::try_from(s.clone()).unwrap();
    assert_eq!(sd.kind(), Kind::CSR);
    let m2: Mat<c64> = sd.clone().try_into().unwrap();
    assert_eq!(m2, m);
    // Owned conversion of the only handle moves the value out.
    let only: Data = Csr::identity(3).into();
    let csr = Csr::try_from(only).unwrap();
    assert_eq!(csr.nnz(), 3);
    // Data::to and the typed views.
    let t = sd.to(Kind::DENSE).unwrap();
    assert!(t.as_dense().is_some() && t.as_csr().is_none());
    assert!(sd.to(Kind::CSR).unwrap().ptr_eq(&sd));
    assert_eq!(sd.to_type::<Dense>().unwrap().as_mat(), &m);
    // A CSC matrix is accepted and stored as CSR.
    let csc = s.to_csc();
    assert_eq!(
        Data::try_from(csc).unwrap().as_csr().unwrap(),
        sd.as_csr().unwrap()
    );
    // A kind that cannot be reached is an error, not a panic.
    #[derive(Debug, Clone)]
    struct Island;
    impl polymat::Storage for Island {
        fn shape(&self) -> (usize, usize) {
            (1, 1)
        }
    }
    polymat::registry()
        .register_type::<Island>("Island", &[])
        .unwrap();
    let island = Data::new(Island).unwrap();
    assert!(matches!(
        Mat::<c64>::try_from(&island),
        Err(Error::NoConversion { .. })
    ));
}

#[test]
fn printing_reads_like_numpy() {
    let d = Dense::from_rows(&[[c(0.0, 2.0), c(0.0, 0.0)], [c(0.0, 0.0), c(0.0, -2.0)]]).unwrap();
    assert_eq!(d.to_string(), "[[0+2i, 0], [0, 0-2i]]");
    assert_eq!(format!("{d:#}"), "Dense(2×2)");
    let data: Data = d.into();
    assert_eq!(format!("{data}"), "[[0+2i, 0], [0, 0-2i]]");
    assert_eq!(format!("{data:.2}"), "[[0+2i, 0], [0, 0-2i]]");
    let third: Data = Dense::from_rows(&[[c(1.0 / 3.0, 0.0)]]).unwrap().into();
    assert_eq!(format!("{third}"), "[[0.33333333]]");
    assert_eq!(format!("{third:.3}"), "[[0.333]]");
    // Large operators print their corners only, in O(1) entry lookups.
    let n = 1 << 20;
    let big: Data = Csr::identity(n).into();
    let text = big.to_string();
    assert_eq!(text.lines().count(), 7);
    assert!(
        text.starts_with("[[1, 0, 0, ..., 0, 0, 0],\n [0, 1, 0, ..., 0, 0, 0],"),
        "{text}"
    );
    assert!(
        text.contains("0, 0],\n ...,\n [0, 0, 0, ..., 1, 0, 0],"),
        "{text}"
    );
    assert!(text.ends_with("[0, 0, 0, ..., 0, 0, 1]]"), "{text}");
    assert_eq!(format!("{big:#}"), format!("Csr({n}×{n}, nnz={n})"));
    // Debug keeps the summary.
    assert_eq!(format!("{:?}", sy()), "Csr(2×2, nnz=2)");
}

#[test]
fn deny_names_the_chain_that_would_have_run() {
    let csr: Data = sy().into();
    let dense: Data = Dense::identity(2).into();
    let err = polymat::with_implicit_conversions(ImplicitConversions::Deny, || {
        polymat::add(&csr, &dense, Out::Csr)
    })
    .unwrap_err();
    match &err {
        Error::ConversionDenied {
            op,
            inputs,
            out,
            chains,
        } => {
            assert_eq!(op, "add");
            assert_eq!(inputs, &["Csr", "Dense"]);
            assert_eq!(out, "Csr");
            assert_eq!(chains, &["output: Dense -> Csr"]);
        }
        e => panic!("expected ConversionDenied, got {e}"),
    }
    assert!(err.to_string().contains("Dense -> Csr"), "{err}");
    // Explicit conversions are never refused, and the policy is per thread.
    polymat::with_implicit_conversions(ImplicitConversions::Deny, || {
        assert!(polymat::to(Kind::CSR, &dense).is_ok());
        std::thread::scope(|s| {
            s.spawn(|| assert!(polymat::add(&csr, &dense, Out::Csr).is_ok()));
        });
    });
    assert!(polymat::add(&csr, &dense, Out::Csr).is_ok());
}

#[test]
fn default_output_scopes_match_qutip() {
    let csr: Data = sy().into();
    let dense: Data = Dense::identity(2).into();
    // Creation: constructors only.
    polymat::with_default_output(Out::Dense, DefaultScope::Creation, || {
        assert_eq!(polymat::identity(2, Out::Auto).unwrap().kind(), Kind::DENSE);
        assert_eq!(
            polymat::add(&csr, &csr, Out::Auto).unwrap().kind(),
            Kind::CSR
        );
    });
    // Missing: also calls without a direct kernel (Dense ∘ Csr converts anyway); Dense·Csr has
    // one, which returns Dense.
    polymat::with_default_output(Out::Csr, DefaultScope::Missing, || {
        assert_eq!(
            polymat::multiply(&dense, &csr, Out::Auto).unwrap().kind(),
            Kind::CSR
        );
        assert_eq!(
            polymat::matmul(&dense, &csr, Out::Auto).unwrap().kind(),
            Kind::DENSE
        );
        assert_eq!(
            polymat::matmul(&dense, &dense, Out::Auto).unwrap().kind(),
            Kind::DENSE
        );
    });
    // Full: every operation.
    polymat::with_default_output(Out::Csr, DefaultScope::Full, || {
        assert_eq!(
            polymat::matmul(&dense, &dense, Out::Auto).unwrap().kind(),
            Kind::CSR
        );
        // An explicit output still wins.
        assert_eq!(
            polymat::matmul(&dense, &dense, Out::Dense).unwrap().kind(),
            Kind::DENSE
        );
    });
    assert_eq!(polymat::identity(2, Out::Auto).unwrap().kind(), Kind::CSR);
}

#[cfg(feature = "tracing")]
mod events {
    use std::sync::{Arc, Mutex};

    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Level, Metadata, Subscriber};

    /// Records (level, target, fields) of every event.
    #[derive(Clone, Default)]
    pub struct Recorder(pub Arc<Mutex<Vec<(Level, String, String)>>>);

    struct Fields(String);
    impl Visit for Fields {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            self.0.push_str(&format!("{}={:?} ", field.name(), value));
        }
    }

    impl Subscriber for Recorder {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, e: &Event<'_>) {
            let mut f = Fields(String::new());
            e.record(&mut f);
            let m = e.metadata();
            self.0
                .lock()
                .unwrap()
                .push((*m.level(), m.target().to_owned(), f.0));
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }
}

#[cfg(feature = "tracing")]
#[test]
fn warn_emits_one_event_naming_the_chain() {
    let csr: Data = sy().into();
    let dense: Data = Dense::identity(2).into();
    let rec = events::Recorder::default();
    tracing::subscriber::with_default(rec.clone(), || {
        polymat::with_implicit_conversions(ImplicitConversions::Warn, || {
            polymat::add(&csr, &dense, Out::Csr).unwrap();
            // A direct call emits nothing.
            polymat::add(&csr, &dense, Out::Dense).unwrap();
        });
    });
    let events = rec.0.lock().unwrap().clone();
    let warnings: Vec<_> = events
        .iter()
        .filter(|e| e.0 == tracing::Level::WARN)
        .collect();
    assert_eq!(warnings.len(), 1, "{events:?}");
    let (_, target, fields) = warnings[0];
    assert_eq!(target, "polymat::dispatch");
    assert!(fields.contains("op=add"), "{fields}");
    assert!(fields.contains("inputs=Csr, Dense"), "{fields}");
    assert!(fields.contains("output: Dense -> Csr"), "{fields}");
    // Allow (the default) still reports the indirect dispatch and the conversion at debug level.
    let debug: Vec<_> = events
        .iter()
        .filter(|e| e.0 == tracing::Level::DEBUG)
        .collect();
    assert!(
        debug
            .iter()
            .any(|e| e.2.contains("indirect dispatch") && e.2.contains("weight=1.4")),
        "{events:?}"
    );
    assert!(
        debug
            .iter()
            .any(|e| e.1 == "polymat::convert" && e.2.contains("chain=Dense -> Csr")),
        "{events:?}"
    );
}

/// A small check that `text` is a DOT digraph: balanced braces and brackets outside strings,
/// terminated strings, every statement a node, an edge or an attribute.
fn assert_parses_as_dot(text: &str) {
    let body = text.trim();
    assert!(body.starts_with("digraph"), "{text}");
    assert!(body.ends_with('}'), "{text}");
    let (mut depth, mut bracket, mut in_str, mut esc) = (0i32, 0i32, false, false);
    let mut statement = String::new();
    for ch in body.chars() {
        if in_str {
            if esc {
                esc = false;
            } else if ch == '\\' {
                esc = true;
            } else if ch == '"' {
                in_str = false;
            }
            statement.push(ch);
            continue;
        }
        match ch {
            '"' => in_str = true,
            '{' => depth += 1,
            '}' => depth -= 1,
            '[' => bracket += 1,
            ']' => bracket -= 1,
            _ => {}
        }
        assert!(depth >= 0 && bracket >= 0, "unbalanced: {text}");
        if (ch == ';' || ch == '\n') && bracket == 0 {
            let s = statement.trim();
            if !s.is_empty() && !s.starts_with("digraph") && s != "}" {
                let ok = s.starts_with('"')
                    || s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric());
                assert!(ok, "not a statement: {s:?}");
            }
            statement.clear();
        } else {
            statement.push(ch);
        }
    }
    assert!(!in_str && depth == 0 && bracket == 0, "unbalanced: {text}");
}

/// Runs `dot -Tsvg` when Graphviz is installed (CI installs it).
fn check_with_graphviz(text: &str) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let Ok(mut child) = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        eprintln!("graphviz not installed: DOT checked by the built-in parser only");
        return;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "dot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("<svg"));
}

#[test]
fn registry_and_dispatcher_dot_parse() {
    let reg = polymat::registry().to_dot();
    assert_parses_as_dot(&reg);
    check_with_graphviz(&reg);
    for dot in [
        ADD.to_dot(),
        polymat::ops::MATMUL.to_dot(),
        polymat::ops::TRACE.to_dot(),
    ] {
        assert_parses_as_dot(&dot);
        check_with_graphviz(&dot);
    }
    // The table dump has a cell for every served tuple, explained.
    let rows = polymat::ops::MATMUL.table();
    let dense_csr = rows
        .iter()
        .find(|e| e.inputs == [Kind::DENSE, Kind::CSR] && e.out == Out::Csr)
        .unwrap();
    assert_eq!(dense_csr.kernel, "matmul_dense_csr");
    assert!(!dense_csr.direct);
}

#[test]
fn bounds_are_the_same_on_every_kind() {
    let d = Dense::identity(2);
    let s = Csr::identity(2);
    assert_eq!(d.try_get(0, 99), None);
    assert_eq!(s.try_get(0, 99), None);
    assert_eq!(d.try_get(1, 1), s.try_get(1, 1));
    for (i, j) in [(0, 99), (99, 0)] {
        assert!(catch_unwind(AssertUnwindSafe(|| d.get(i, j))).is_err());
        assert!(catch_unwind(AssertUnwindSafe(|| s.get(i, j))).is_err());
    }
}

#[test]
fn expm_of_nan_says_so() {
    let nan: Data = Dense::from_rows(&[[c(f64::NAN, 0.0)]]).unwrap().into();
    let err = polymat::expm(&nan, Out::Auto).unwrap_err();
    assert!(err.to_string().contains("non-finite"), "{err}");
    assert!(!err.to_string().contains("Padé"), "{err}");
}

#[test]
fn eigs_defaults_are_the_documented_ones() {
    let o = polymat::ops::EigsOptions::default();
    assert!(o.vectors);
    assert_eq!(o.count, None);
    assert_eq!(o.hermitian, None);
    assert_eq!(o.order, polymat::ops::EigOrder::Low);
    assert_eq!((o.tol, o.max_iter, o.krylov_dim), (0.0, 0, None));
    assert_eq!(o.method, polymat::ops::EigsMethod::Auto);
}

/// `a − b`, `−a` and `a −= b` keep infinite parts as numpy's `a - b` and `-a` do, on every
/// kind and through the operators: a subtraction, not `a + (−1)·b`, whose complex product turns
/// `0·∞` into NaN (`(1 + ∞i)·(−1)` has real part `−1 − 0·∞`).
#[test]
fn subtraction_and_negation_keep_infinite_parts() {
    let inf = f64::INFINITY;
    let a = Dense::from_rows(&[[c(1.0, 2.0), c(0.0, 0.0)], [c(3.0, -1.0), c(4.0, 0.5)]]).unwrap();
    let b = Dense::from_rows(&[[c(1.0, inf), c(0.0, 0.0)], [c(-inf, 2.0), c(0.5, 0.0)]]).unwrap();
    // numpy: a - b and -b.
    let diff = [[c(0.0, -inf), c(0.0, 0.0)], [c(inf, -3.0), c(3.5, 0.5)]];
    let neg = [
        [c(-1.0, -inf), c(-0.0, -0.0)],
        [c(inf, -2.0), c(-0.5, -0.0)],
    ];
    let same = |d: &Data, want: &[[c64; 2]; 2], what: &str| {
        let d = polymat::to(Kind::DENSE, d).unwrap();
        let d = d.downcast_ref::<Dense>().unwrap();
        for (i, row) in want.iter().enumerate() {
            for (j, w) in row.iter().enumerate() {
                let g = d.get(i, j);
                // Stored zeros may be dropped by sparse kinds: compare zeros by value.
                assert!(
                    g == *w && !g.re.is_nan() && !g.im.is_nan(),
                    "{what}: ({i}, {j}) is {g}, numpy gives {w}"
                );
            }
        }
    };
    for ka in [Kind::DENSE, Kind::CSR, Kind::DIA] {
        for kb in [Kind::DENSE, Kind::CSR, Kind::DIA] {
            let (x, y) = (
                polymat::to(ka, &a.clone().into()).unwrap(),
                polymat::to(kb, &b.clone().into()).unwrap(),
            );
            let what = format!("{ka} − {kb}");
            same(&polymat::sub(&x, &y, Out::Auto).unwrap(), &diff, &what);
            same(&(&x - &y).unwrap(), &diff, &what);
            let mut z = x.clone();
            polymat::iadd(&mut z, &y, c(-1.0, 0.0)).unwrap();
            same(&z, &diff, &format!("{what} in place"));
        }
        let y = polymat::to(ka, &b.clone().into()).unwrap();
        same(
            &polymat::neg(&y, Out::Auto).unwrap(),
            &neg,
            &format!("−{ka}"),
        );
        same(&(-&y).unwrap(), &neg, &format!("−{ka} (operator)"));
    }
    // The concrete kinds' operators.
    let (da, db) = (a.clone(), b.clone());
    let csr = |d: &Dense| {
        let s = polymat::to(Kind::CSR, &d.clone().into()).unwrap();
        s.downcast_ref::<Csr>().unwrap().clone()
    };
    let (ca, cb) = (csr(&da), csr(&db));
    same(&(&da - &db).unwrap().into(), &diff, "Dense − Dense");
    same(&(&ca - &cb).unwrap().into(), &diff, "Csr − Csr");
    same(&(&ca - &db).unwrap().into(), &diff, "Csr − Dense");
    same(&(&da - &cb).unwrap().into(), &diff, "Dense − Csr");
    same(&(-&db).unwrap().into(), &neg, "−Dense");
    same(&(-&cb).unwrap().into(), &neg, "−Csr");
}
