//! A user storage type: a square diagonal matrix, stored as its diagonal.
//!
//! Shared by `custom_storage.rs` and `custom_dispatcher.rs` (and their tests).

use polymat::{Conversion, Dense, Error, Kind, Result, Storage, c64, registry};

/// The `n × n` matrix `diag(values)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Diag {
    pub values: Vec<c64>,
}

impl Storage for Diag {
    fn shape(&self) -> (usize, usize) {
        (self.values.len(), self.values.len())
    }
}

/// Diag → Dense: always possible.
fn diag_to_dense(d: &Diag) -> Result<Dense> {
    let n = d.values.len();
    Ok(Dense::from_fn(n, n, |i, j| {
        if i == j {
            d.values[i]
        } else {
            c64::new(0.0, 0.0)
        }
    }))
}

/// Dense → Diag: only for square matrices with nothing off the diagonal.
fn dense_to_diag(m: &Dense) -> Result<Diag> {
    let (r, c) = m.shape();
    let unrepresentable = |reason: String| Error::Unrepresentable {
        kind: "Diag".into(),
        what: m.to_string(),
        reason,
    };
    if r != c {
        return Err(unrepresentable("it is not square".into()));
    }
    for j in 0..c {
        for i in (0..r).filter(|&i| i != j) {
            if m.get(i, j) != c64::new(0.0, 0.0) {
                return Err(unrepresentable(format!(
                    "entry ({i}, {j}) is off the diagonal"
                )));
            }
        }
    }
    Ok(Diag {
        values: (0..r).map(|i| m.get(i, i)).collect(),
    })
}

/// Registers `Diag` with its two conversions, once per process; returns its kind.
pub fn register() -> Result<Kind> {
    if let Ok(kind) = registry().kind_of::<Diag>() {
        return Ok(kind);
    }
    let mut batch = polymat::Batch::new();
    batch
        .register_type::<Diag>("Diag", &["diagonal"])
        .add_conversion(Conversion::new(diag_to_dense, 1.0))
        .add_conversion(Conversion::new(dense_to_diag, 1.0));
    match registry().commit(batch) {
        // Another thread registered it first.
        Err(Error::DuplicateKind { .. }) => registry().kind_of::<Diag>(),
        other => other.and_then(|()| registry().kind_of::<Diag>()),
    }
}
