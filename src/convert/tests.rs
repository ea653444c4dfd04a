//! Unit tests of the registry: staging, validation, publication.

use super::*;
use crate::storage::{Csr, Dense};

#[test]
fn builtin_weights_and_paths() {
    let r = registry();
    assert_eq!(r.weight(Kind::DENSE, Kind::DENSE), 0.0);
    assert_eq!(r.weight(Kind::CSR, Kind::DENSE), 1.0);
    assert_eq!(r.weight(Kind::DENSE, Kind::CSR), 1.4);
    assert_eq!(
        r.path(Kind::CSR, Kind::DENSE).unwrap(),
        vec![Kind::CSR, Kind::DENSE]
    );
    assert_eq!(r.weight(Kind(9999), Kind::CSR), f64::MAX);
    assert!(r.is_builtin(Kind::CSR) && !r.is_builtin(Kind(9999)));
}

#[test]
fn unknown_names_list_known_kinds() {
    let err = registry().parse_kind("coo").unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("\"coo\"") && msg.contains("Dense") && msg.contains("Csr"),
        "{msg}"
    );
}

#[test]
fn invalid_weights_change_nothing() {
    let before = format!("{:?}", registry());
    for w in [
        0.0,
        -1.0,
        f64::NAN,
        f64::INFINITY,
        f64::MAX,
        MAX_WEIGHT * 2.0,
    ] {
        let err = registry()
            .add_conversions([Conversion::new(|c: &Csr| Ok(c.clone()), w)])
            .unwrap_err();
        assert!(
            matches!(
                err,
                Error::InvalidWeight { .. } | Error::InvalidArgument { .. }
            ),
            "{err}"
        );
    }
    assert_eq!(before, format!("{:?}", registry()));
}

#[test]
fn builtin_conversions_cannot_be_replaced() {
    let err = registry()
        .add_conversions([Conversion::new(
            |d: &Dense| Ok(Csr::zeros(d.shape().0, 1)),
            0.1,
        )])
        .unwrap_err();
    assert!(err.to_string().contains("cannot be replaced"), "{err}");
}

#[test]
fn duplicate_registration_is_rejected() {
    let err = registry()
        .register_type::<Dense>("Dense2", &[])
        .unwrap_err();
    assert!(matches!(err, Error::DuplicateKind { .. }));
}
