//! Dispatcher and registry semantics: choice and tie rules, direct/indirect, Out::Auto, errors,
//! atomic registration, one-way conversions, generic kernels. Every test here makes its own
//! types or dispatchers, so the order they run in does not matter.

use polymat::ops::{ADD, MATMUL, TRACE};
use polymat::{
    Batch, Conversion, Csr, Data, Dense, Dispatcher, Error, Kind, Out, Specialisation, Storage,
    c64, registry,
};

/// A storage type per test, so that registrations do not interact.
macro_rules! wrapper {
    ($name:ident) => {
        #[derive(Clone, Debug)]
        struct $name(Dense);
        impl Storage for $name {
            fn shape(&self) -> (usize, usize) {
                self.0.shape()
            }
        }
    };
}

#[test]
fn builtin_paths() {
    let d = Kind::DENSE;
    let s = Kind::CSR;
    for (k, direct) in [
        ([d, d], true),
        ([s, s], true),
        ([s, d], true),
        ([d, s], true),
    ] {
        assert_eq!(ADD.get(&k, Out::Auto).unwrap().is_direct(), direct, "{k:?}");
    }
    assert_eq!(
        ADD.get(&[s, s], Out::Auto).unwrap().to_string(),
        "<direct specialisation (Csr, Csr) -> Csr of add>"
    );
    assert_eq!(
        ADD.get(&[s, s], Out::Dense).unwrap().to_string(),
        "<indirect specialisation (Csr, Csr) -> Dense of add>"
    );
    // Csr+Csr → Dense: add_csr then Csr→Dense (1.0) beats converting both inputs (2.0).
    assert_eq!(
        ADD.get(&[s, s], Out::Dense).unwrap().kernel_name(),
        "add_csr"
    );
    assert_eq!(ADD.get(&[s, s], Out::Dense).unwrap().weight(), 1.0);
    assert_eq!(
        MATMUL.get(&[s, d], Out::Auto).unwrap().kernel_name(),
        "matmul_csr_dense"
    );
    assert_eq!(
        TRACE.get(&[s], Out::Auto).unwrap().to_string(),
        "<direct specialisation (Csr) -> c64 of trace>"
    );
}

#[test]
fn explain_reports_kernel_chains_and_weights() {
    let e = polymat::ops::MULTIPLY
        .explain(&[Kind::DENSE, Kind::CSR], Out::Csr)
        .unwrap();
    let text = e.to_string();
    assert!(!e.direct);
    assert!(
        text.contains("input 0: Dense -> Csr (weight 1.4)"),
        "{text}"
    );
    assert!(text.contains("output: Csr as is"), "{text}");
    assert!(e.weight > 0.0);
    assert_eq!(e.input_paths.len(), 2);
}

#[test]
fn direct_calls_do_not_convert_or_copy_inputs() {
    let a: Data = Dense::identity(3).into();
    let same = polymat::to(Kind::DENSE, &a).unwrap();
    assert!(same.ptr_eq(&a));
}

#[test]
fn errors_for_bad_calls() {
    let a: Data = Dense::identity(2).into();
    assert!(matches!(
        ADD.call(&[&a], Out::Auto, &c64::new(1.0, 0.0)),
        Err(Error::Arity {
            expected: 2,
            got: 1,
            ..
        })
    ));
    assert!(matches!(
        TRACE.call(&[&a], Out::Dense, &()),
        Err(Error::OutputNotDispatched { .. })
    ));
    assert!(matches!(
        ADD.get(&[Kind::DENSE], Out::Auto),
        Err(Error::Arity { .. })
    ));
    let err = "nope".parse::<Out>().unwrap_err();
    assert!(err.to_string().contains("Dense") && err.to_string().contains("Csr"));
    // A kind index that was never registered.
    let ghost = polymat::Kind::DENSE;
    assert!(ADD.get(&[ghost, ghost], Out::Auto).is_ok());
}

#[test]
fn unregistered_types_are_errors() {
    wrapper!(Unregistered);
    let err = Data::new(Unregistered(Dense::identity(1))).unwrap_err();
    assert!(matches!(err, Error::UnregisteredType { .. }));
    let d = Dispatcher::<()>::builder("unreg", 1)
        .specialisation(Specialisation::unary("k", |a: &Unregistered, _: &()| {
            Ok(a.0.clone())
        }))
        .build();
    assert!(matches!(d, Err(Error::UnregisteredType { .. })));
}

#[test]
fn one_way_type_and_unreachable_conversion() {
    wrapper!(OneWay);
    // OneWay can become Dense but nothing converts into it.
    let mut b = Batch::new();
    b.register_type::<OneWay>("OneWay", &[])
        .add_conversion(Conversion::new(|x: &OneWay| Ok(x.0.clone()), 1.0));
    registry().commit(b).unwrap();
    let k = registry().kind_of::<OneWay>().unwrap();
    assert_eq!(registry().weight(Kind::DENSE, k), f64::MAX);
    assert_eq!(registry().weight(k, Kind::CSR), 2.4);
    assert_eq!(
        registry().path(k, Kind::CSR).unwrap(),
        vec![k, Kind::DENSE, Kind::CSR]
    );
    let x = Data::new(OneWay(Dense::identity(2))).unwrap();
    let err = polymat::to(k, &Dense::identity(2).into()).unwrap_err();
    assert_eq!(
        err,
        Error::NoConversion {
            from: "Dense".into(),
            to: "OneWay".into()
        }
    );
    // Operations still work on it (inputs convert), but cannot produce it.
    assert_eq!(polymat::trace(&x).unwrap(), c64::new(2.0, 0.0));
    assert!(matches!(
        polymat::add(&x, &x, Out::Kind(k)),
        Err(Error::NoSpecialisation { .. })
    ));
    let csr = polymat::to(Kind::CSR, &x).unwrap();
    assert_eq!(csr.kind(), Kind::CSR);
}

#[test]
fn failed_batch_changes_nothing() {
    wrapper!(Atomic);
    // Other tests in this binary register kinds concurrently, so check only what this batch
    // would have added.
    let specs_before = ADD.specialisations();
    let mut b = Batch::new();
    b.register_type::<Atomic>("Atomic", &[])
        .add_conversion(Conversion::new(|x: &Atomic| Ok(x.0.clone()), 1.0))
        .add_conversion(Conversion::new(|x: &Dense| Ok(Atomic(x.clone())), -1.0));
    b.add_specialisation(
        &*ADD,
        Specialisation::binary(
            "add_atomic",
            |a: &Atomic, _: &Atomic, _: &c64| Ok(a.clone()),
        ),
    );
    assert!(matches!(
        registry().commit(b),
        Err(Error::InvalidWeight { .. })
    ));
    assert!(registry().kind_of::<Atomic>().is_err());
    assert!(registry().parse_kind("Atomic").is_err());
    assert_eq!(ADD.specialisations(), specs_before);
    // A name clash also rejects the whole batch.
    let mut b = Batch::new();
    b.register_type::<Atomic>("CSR", &[]);
    assert!(matches!(
        registry().commit(b),
        Err(Error::DuplicateKind { .. })
    ));
    assert!(registry().kind_of::<Atomic>().is_err());
}

#[test]
fn tie_rules() {
    wrapper!(TieA);
    // A private dispatcher with two kernels of equal weight for (Dense, Csr) → Csr:
    // "ks" takes (Csr, Csr) (one input converted, 1.4); "kd" takes (Dense, Csr) and returns
    // Dense (output converted, 1.4). Fewer converted inputs wins.
    let d = Dispatcher::<()>::builder("tie", 2)
        .specialisation(Specialisation::binary("ks", |a: &Csr, _: &Csr, _: &()| {
            Ok(a.clone())
        }))
        .specialisation(Specialisation::binary(
            "kd",
            |a: &Dense, _: &Csr, _: &()| Ok(a.clone()),
        ))
        .build()
        .unwrap();
    let h = d.get(&[Kind::DENSE, Kind::CSR], Out::Csr).unwrap();
    assert_eq!((h.kernel_name(), h.weight()), ("kd", 1.4));
    // Typed beats generic at equal weight; a kernel with the same key replaces the earlier one.
    let g = Dispatcher::<()>::builder("tie2", 1)
        .specialisation(Specialisation::unary("typed", |a: &Dense, _: &()| {
            Ok(a.clone())
        }))
        .specialisation(Specialisation::generic(
            "any",
            1,
            |a: &[&Data], _, _: &()| Ok(a[0].clone()),
        ))
        .specialisation(Specialisation::unary("typed_later", |a: &Dense, _: &()| {
            Ok(a.clone())
        }))
        .build()
        .unwrap();
    assert_eq!(
        g.get(&[Kind::DENSE], Out::Auto).unwrap().kernel_name(),
        "typed_later"
    );
    assert_eq!(g.get(&[Kind::CSR], Out::Auto).unwrap().kernel_name(), "any");
    assert_eq!(
        g.specialisations(),
        ["any (Any) -> Data", "typed_later (Dense) -> Dense"]
    );
    g.add_specialisation(Specialisation::unary("typed", |a: &Dense, _: &()| {
        Ok(a.clone())
    }))
    .unwrap();
    assert_eq!(
        g.specialisations(),
        ["any (Any) -> Data", "typed (Dense) -> Dense"]
    );
    // A full tie between different keys goes to the later registration.
    let t = Dispatcher::<()>::builder("tie3", 0)
        .specialisation(Specialisation::nullary("first", |_: &()| {
            Ok(Dense::zeros(1, 1))
        }))
        .specialisation(Specialisation::nullary("second", |_: &()| {
            Ok(Csr::zeros(1, 1))
        }))
        .build()
        .unwrap();
    assert_eq!(t.get(&[], Out::Auto).unwrap().kernel_name(), "second");
    // A dispatcher learns about kinds registered after it was built.
    let n_before = registry().kinds().len();
    registry().register_type::<TieA>("TieA", &[]).unwrap();
    registry()
        .add_conversions([Conversion::new(|x: &TieA| Ok(x.0.clone()), 1.0)])
        .unwrap();
    assert!(registry().kinds().len() > n_before);
    let k = registry().kind_of::<TieA>().unwrap();
    assert_eq!(g.get(&[k], Out::Auto).unwrap().kernel_name(), "any");
    assert_eq!(
        d.get(&[k, Kind::CSR], Out::Auto).unwrap().kernel_name(),
        "kd"
    );
}

#[test]
fn generic_kernel_output_is_coerced() {
    // A generic kernel that ignores the requested output: the dispatcher converts.
    let g = Dispatcher::<()>::builder("stubborn", 1)
        .specialisation(Specialisation::generic(
            "to_dense",
            1,
            |a: &[&Data], _, _: &()| polymat::to(Kind::DENSE, a[0]),
        ))
        .build()
        .unwrap();
    let x: Data = Csr::identity(2).into();
    assert_eq!(g.call(&[&x], Out::Csr, &()).unwrap().kind(), Kind::CSR);
    assert_eq!(g.call(&[&x], Out::Auto, &()).unwrap().kind(), Kind::DENSE);
    assert_eq!(
        g.get(&[Kind::CSR], Out::Auto).unwrap().to_string(),
        "<direct generic specialisation (Csr) -> Auto of stubborn>"
    );
}

#[test]
fn resolved_handles_check_kinds_and_run() {
    let h = ADD.get(&[Kind::CSR, Kind::DENSE], Out::Csr).unwrap();
    let a: Data = Csr::identity(2).into();
    let b: Data = Dense::identity(2).into();
    let r = h.call(&[&a, &b], &c64::new(1.0, 0.0)).unwrap();
    assert_eq!(r.kind(), Kind::CSR);
    assert!(matches!(
        h.call(&[&b, &a], &c64::new(1.0, 0.0)),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn dynamic_conversion_output_is_checked() {
    wrapper!(Liar);
    registry().register_type::<Liar>("Liar", &[]).unwrap();
    let k = registry().kind_of::<Liar>().unwrap();
    // Claims to produce Liar, produces Csr.
    registry()
        .add_conversions([Conversion::dynamic(
            Kind::DENSE,
            k,
            |d| polymat::to(Kind::CSR, d),
            5.0,
        )])
        .unwrap();
    let err = polymat::to(k, &Dense::identity(1).into()).unwrap_err();
    assert!(matches!(err, Error::ConverterOutput { .. }), "{err}");
}

/// A kernel that replaces its own specialisation and then dispatches again: the nested call
/// refreshes this thread's cached state and drops the state the outer call found its kernel
/// in (the outer call took the fast path, which pins nothing). The outer kernel, and what it
/// captured, must stay alive until it returns.
#[test]
fn a_kernel_that_replaces_itself_lives_until_it_returns() {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

    static DROPPED: AtomicBool = AtomicBool::new(false);
    static ARMED: AtomicBool = AtomicBool::new(false);
    static OP: OnceLock<Dispatcher<(), c64>> = OnceLock::new();
    struct Captured(Vec<u8>);
    impl Drop for Captured {
        fn drop(&mut self) {
            DROPPED.store(true, SeqCst);
        }
    }

    let op = OP.get_or_init(|| {
        Dispatcher::<(), c64>::builder("self_replacing", 1)
            .build()
            .unwrap()
    });
    let captured = Captured(vec![7; 64]);
    let first = Specialisation::unary("first", move |a: &Dense, _: &()| {
        let mut nested = 0.0;
        if ARMED.swap(false, SeqCst) {
            let op = OP.get().expect("set before the first call");
            let second =
                Specialisation::unary("second", |_: &Dense, _: &()| Ok(c64::new(2.0, 0.0)));
            op.add_specialisation(second)?;
            nested = op.call(&[&Data::from(a.clone())], Out::Auto, &())?.re;
        }
        assert!(!DROPPED.load(SeqCst), "the running kernel was dropped");
        Ok(c64::new(f64::from(captured.0[63]), nested))
    });
    op.add_specialisation(first).unwrap();
    let x: Data = Dense::identity(2).into();
    // The first call fills this thread's cache; the armed one then takes the fast path.
    assert_eq!(op.call(&[&x], Out::Auto, &()).unwrap(), c64::new(7.0, 0.0));
    ARMED.store(true, SeqCst);
    assert_eq!(op.call(&[&x], Out::Auto, &()).unwrap(), c64::new(7.0, 2.0));
    assert_eq!(op.call(&[&x], Out::Auto, &()).unwrap(), c64::new(2.0, 0.0));
}
