//! Conformance suite, structured like QuTiP's `qutip/tests/core/data/test_mathematics.py`.
//!
//! For every operation, every input comes in seven cases (Csr of density 0.001, Csr of density
//! 0.8 built from sorted rows, the same built from shuffled column order, an all-zero Csr, a
//! column-major Dense, a row-major Dense, and a banded Dia with diagonals −2, 0, 1, 5), over the shapes scalar 1×1, bra 1×n, ket n×1, square n×n and 2×n (n = 100, 5 for
//! Kronecker products). Every valid shape combination is checked in every case combination
//! against an independent reference computed with naive loops on `Vec<Vec<c64>>`, for every
//! requested output kind (Auto, Dense, Csr, Dia); every invalid combination must give `Error::Shape`. Decompositions
//! are checked through identities evaluated with the same naive loops (`a·a⁻¹ = I`,
//! `u·diag(s)·vh = a`, `a·v = λ·v`, `x·x = a`).
//!
//! Each test prints how many cases it ran; the totals are in `docs/operations.md`. The files are
//! by topic: `harness` (inputs, cases, the runner), `binary`, `products`, `unary`, `reductions`,
//! `structure` and `linalg`; each also holds the every-kind tests on small irregular shapes
//! (4×9, 6×6, 7×1, ...) that complement the suite's five shapes.

#[path = "../common/mod.rs"]
mod common;
mod harness;

mod binary;
mod linalg;
mod products;
mod reductions;
mod structure;
mod unary;
