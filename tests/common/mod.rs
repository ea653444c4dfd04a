//! Shared helpers: seeded random matrices, an independent naive dense reference, comparisons.
#![allow(dead_code)]

use polymat::{Csr, Data, Dense, Kind, c64};

/// Tolerances required of every result (numpy's `allclose` semantics).
pub const ATOL: f64 = 1e-10;
pub const RTOL: f64 = 1e-7;

/// Row-major reference matrix, computed with plain loops only.
pub type Ref = Vec<Vec<c64>>;

/// A small deterministic generator (xorshift64*), so failures reproduce.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [-1, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
    pub fn c(&mut self) -> c64 {
        c64::new(self.unit(), self.unit())
    }
}

/// A random reference matrix with about `density` of its entries nonzero.
pub fn random_ref(rng: &mut Rng, m: usize, n: usize, density: f64) -> Ref {
    (0..m)
        .map(|_| {
            (0..n)
                .map(|_| {
                    if (rng.unit() + 1.0) / 2.0 < density {
                        rng.c()
                    } else {
                        c64::new(0.0, 0.0)
                    }
                })
                .collect()
        })
        .collect()
}

/// The reference matrix in the given kind.
pub fn make(r: &Ref, kind: Kind) -> Data {
    let m = r.len();
    let n = r.first().map_or(0, Vec::len);
    if kind == Kind::CSR {
        Csr::from_rows(r).unwrap().into()
    } else if kind == Kind::DENSE {
        Dense::from_fn(m, n, |i, j| r[i][j]).into()
    } else {
        polymat::to(kind, &Dense::from_fn(m, n, |i, j| r[i][j]).into()).unwrap()
    }
}

/// Any data back to a reference matrix (through the registry's conversions).
pub fn to_ref(d: &Data) -> Ref {
    let dense: Dense = polymat::to_type(d).unwrap();
    dense.to_rows()
}

pub fn close(x: c64, y: c64) -> bool {
    (x - y).norm() <= ATOL + RTOL * y.norm()
}

pub fn assert_ref_close(got: &Ref, want: &Ref, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: row count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.len(), w.len(), "{what}: column count");
        for (j, (x, y)) in g.iter().zip(w).enumerate() {
            assert!(
                close(*x, *y),
                "{what}: entry ({i}, {j}) is {x}, expected {y}"
            );
        }
    }
}

pub fn assert_data_close(got: &Data, want: &Ref, what: &str) {
    assert_ref_close(&to_ref(got), want, what);
}

pub fn shape(a: &Ref) -> (usize, usize) {
    (a.len(), a.first().map_or(0, Vec::len))
}

pub fn zip(a: &Ref, b: &Ref, f: impl Fn(c64, c64) -> c64) -> Ref {
    a.iter()
        .zip(b)
        .map(|(x, y)| x.iter().zip(y).map(|(p, q)| f(*p, *q)).collect())
        .collect()
}

pub fn map(a: &Ref, f: impl Fn(c64) -> c64) -> Ref {
    a.iter()
        .map(|r| r.iter().map(|x| f(*x)).collect())
        .collect()
}

pub fn matmul(a: &Ref, b: &Ref) -> Ref {
    let (m, k) = shape(a);
    let n = shape(b).1;
    (0..m)
        .map(|i| {
            (0..n)
                .map(|j| (0..k).map(|l| a[i][l] * b[l][j]).sum())
                .collect()
        })
        .collect()
}

pub fn kron(a: &Ref, b: &Ref) -> Ref {
    let (ma, na) = shape(a);
    let (mb, nb) = shape(b);
    (0..ma * mb)
        .map(|i| {
            (0..na * nb)
                .map(|j| a[i / mb][j / nb] * b[i % mb][j % nb])
                .collect()
        })
        .collect()
}

pub fn transpose(a: &Ref) -> Ref {
    let (m, n) = shape(a);
    (0..n).map(|j| (0..m).map(|i| a[i][j]).collect()).collect()
}

pub fn eye(n: usize) -> Ref {
    (0..n)
        .map(|i| {
            (0..n)
                .map(|j| c64::new(if i == j { 1.0 } else { 0.0 }, 0.0))
                .collect()
        })
        .collect()
}

pub fn trace(a: &Ref) -> c64 {
    (0..a.len()).map(|i| a[i][i]).sum()
}

pub const KINDS: [Kind; 3] = [Kind::DENSE, Kind::CSR, Kind::DIA];
