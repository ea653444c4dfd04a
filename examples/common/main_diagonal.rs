//! A user storage type: a square matrix with nothing off its main diagonal, stored as that
//! diagonal. (polymat's built-in `Dia` stores any set of diagonals; this kind shows how a user
//! type joins the dispatcher.)
//!
//! Shared by `custom_storage.rs` and `custom_dispatcher.rs` (and their tests).

use polymat::{Conversion, Dense, Error, Kind, Result, Storage, c64, registry};

/// The `n × n` matrix `diag(values)`.
#[derive(Clone, Debug, PartialEq)]
pub struct MainDiagonal {
    pub values: Vec<c64>,
}

impl Storage for MainDiagonal {
    fn shape(&self) -> (usize, usize) {
        (self.values.len(), self.values.len())
    }
}

/// MainDiagonal → Dense: always possible.
fn main_diagonal_to_dense(d: &MainDiagonal) -> Result<Dense> {
    let n = d.values.len();
    Ok(Dense::from_fn(n, n, |i, j| {
        if i == j {
            d.values[i]
        } else {
            c64::new(0.0, 0.0)
        }
    }))
}

/// Dense → MainDiagonal: only for square matrices with nothing off the diagonal.
fn dense_to_main_diagonal(m: &Dense) -> Result<MainDiagonal> {
    let (r, c) = m.shape();
    let unrepresentable = |reason: String| Error::Unrepresentable {
        kind: "MainDiagonal".into(),
        what: format!("{m:#}"),
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
    Ok(MainDiagonal {
        values: (0..r).map(|i| m.get(i, i)).collect(),
    })
}

/// Registers `MainDiagonal` with its two conversions, once per process; returns its kind.
pub fn register() -> Result<Kind> {
    if let Ok(kind) = registry().kind_of::<MainDiagonal>() {
        return Ok(kind);
    }
    let mut batch = polymat::Batch::new();
    batch
        .register_type::<MainDiagonal>("MainDiagonal", &["maindiagonal"])
        .add_conversion(Conversion::new(main_diagonal_to_dense, 1.0))
        // Partial: it refuses matrices with entries off the diagonal, so the registry only
        // ever uses it as the last step of a chain.
        .add_conversion(Conversion::new(dense_to_main_diagonal, 1.0).partial());
    match registry().commit(batch) {
        // Another thread registered it first.
        Err(Error::DuplicateKind { .. }) => registry().kind_of::<MainDiagonal>(),
        other => other.and_then(|()| registry().kind_of::<MainDiagonal>()),
    }
}
