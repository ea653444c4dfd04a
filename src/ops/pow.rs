//! Integer matrix powers.

use std::sync::LazyLock;

use super::matmul::{matmul_csr, matmul_dense};
use crate::convert::builtin::{csr_to_dense, dense_to_csr};
use crate::dispatch::{Dispatcher, Out};
use crate::error::Result;
use crate::gpu::GpuDense;
use crate::storage::{Csr, Data, Dense};

/// `aⁿ` for square `a` (`a⁰` is the identity). Parameter: `n`. Kernels: Dense, Csr.
pub static POW: LazyLock<Dispatcher<u32>> = LazyLock::new(|| {
    Dispatcher::builder("pow", 1)
        .result_shape(crate::dispatch::checks::first_shape)
        .check_square()
        .unary("pow_dense", |a: &Dense, n: &u32| pow_dense(a, *n))
        .unary("pow_csr", |a: &Csr, n: &u32| pow_csr(a, *n))
        .unary("pow_gpu", |a: &GpuDense, n: &u32| pow_gpu(a, *n))
        .builtin()
});

/// `aⁿ`.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if `a` is not square.
///
/// ```
/// use polymat::{Dense, Out, c64};
/// let a = Dense::from_fn(2, 2, |i, j| c64::new(if i <= j { 1.0 } else { 0.0 }, 0.0));
/// let p = polymat::pow(&a.into(), 5, Out::Auto).unwrap();
/// assert_eq!(p.downcast_ref::<Dense>().unwrap().get(0, 1), c64::new(5.0, 0.0));
/// ```
#[inline]
pub fn pow(a: &Data, n: u32, out: Out) -> Result<Data> {
    POW.call(&[a], out, &n)
}

/// Square-and-multiply: O(log n) products, and no copy of an operand or a partial result but
/// for `n = 1` (`copy`, fallible). The base is `a` itself until its first square, and a square
/// that starts the product is moved into it once the next square is made. (With a clone
/// there, `pow(H, 2)` of a 2²⁰-dimensional spin chain held its 1.45 GB result twice.)
fn power<T>(
    a: &T,
    n: u32,
    one: impl FnOnce() -> Result<T>,
    copy: impl FnOnce(&T) -> Result<T>,
    mul: impl Fn(&T, &T) -> Result<T>,
) -> Result<T> {
    /// The product of the powers taken so far.
    enum Acc<T> {
        /// None yet.
        One,
        /// `a` itself (bit 0 of the exponent).
        A,
        /// A product or a moved square.
        Owned(T),
    }
    // a^(2^k) for the bit k at hand; None while k = 0 (then it is `a`).
    let mut base: Option<T> = None;
    let mut acc = Acc::One;
    let mut e = n;
    while e > 0 {
        let b = base.as_ref().unwrap_or(a);
        let next = if e > 1 { Some(mul(b, b)?) } else { None };
        if e & 1 == 1 {
            acc = match acc {
                Acc::One => base.take().map_or(Acc::A, Acc::Owned),
                Acc::A => Acc::Owned(mul(a, b)?),
                Acc::Owned(x) => Acc::Owned(mul(&x, b)?),
            };
        }
        base = next;
        e >>= 1;
    }
    match acc {
        Acc::Owned(t) => Ok(t),
        Acc::A => copy(a),
        Acc::One => one(),
    }
}

/// Dense `aⁿ` by repeated squaring. O(n³ log k).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if `a` is not square.
pub fn pow_dense(a: &Dense, n: u32) -> Result<Dense> {
    crate::shape::square("pow", a.shape())?;
    let copy = |a: &Dense| super::elementwise::dense_copy("pow", a, a.layout());
    power(
        a,
        n,
        || Dense::try_identity(a.shape().0),
        copy,
        matmul_dense,
    )
}

/// Csr `aⁿ` by repeated squaring, each power kept as Csr while at most a quarter of its
/// entries are stored and as Dense once it fills (within the dense limit), the result back in
/// Csr: a banded operator's powers fill in, and full sparse products cost several times dense
/// ones. A power that overflows ends the call.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if `a` is not square;
/// [`Error::Numerical`](crate::Error::Numerical) when a power has non-finite entries (the
/// squares grow without bound: the result would have none finite).
pub fn pow_csr(a: &Csr, n: u32) -> Result<Csr> {
    crate::shape::square("pow", a.shape())?;
    let dim = a.shape().0;
    let base = Fill::Input(a);
    let one = || Ok(Fill::Sparse(Csr::try_identity(dim)?));
    match power(&base, n, one, Fill::copy, |x, y| Fill::mul(x, y, n))? {
        Fill::Input(c) => crate::storage::csr_build::csr_with_values("pow", c, |data| {
            data.extend_from_slice(c.data())
        }),
        Fill::Sparse(c) => Ok(c),
        Fill::Dense(d) => dense_to_csr(&d),
    }
}

/// A power of a Csr matrix: the input itself, sparse while it is, dense once it fills.
enum Fill<'a> {
    Input(&'a Csr),
    Sparse(Csr),
    Dense(Dense),
}

impl<'a> Fill<'a> {
    fn sparse(&self) -> Option<&Csr> {
        match self {
            Fill::Input(c) => Some(c),
            Fill::Sparse(c) => Some(c),
            Fill::Dense(_) => None,
        }
    }

    /// `x·y`: Csr while the product stores at most a quarter of its entries (or a dense one
    /// would pass the dense limit), Dense after; an error once it has non-finite entries.
    fn mul(x: &Fill<'a>, y: &Fill<'a>, n: u32) -> Result<Fill<'a>> {
        let p = match (x, y) {
            (Fill::Dense(x), Fill::Dense(y)) => Fill::Dense(matmul_dense(x, y)?),
            (Fill::Dense(x), y) => Fill::Dense(matmul_dense(x, &csr_to_dense(y.as_csr())?)?),
            (x, Fill::Dense(y)) => Fill::Dense(matmul_dense(&csr_to_dense(x.as_csr())?, y)?),
            (x, y) => {
                let c = matmul_csr(x.as_csr(), y.as_csr())?;
                let dim = c.shape().0 as u128;
                if c.nnz() as u128 * 4 > dim * dim
                    && crate::storage::alloc::check_dense("pow", c.shape()).is_ok()
                {
                    Fill::Dense(csr_to_dense(&c)?)
                } else {
                    Fill::Sparse(c)
                }
            }
        };
        let finite = match &p {
            Fill::Dense(d) => super::norm::max_dense(d).is_finite(),
            s => s
                .as_csr()
                .data()
                .iter()
                .all(|z| z.re.is_finite() && z.im.is_finite()),
        };
        if !finite {
            let (r, _) = x.shape();
            return Err(crate::error::Error::Numerical {
                op: "pow".into(),
                reason: format!(
                    "the powers of the {r}×{r} matrix overflow on the way to the {n}th: an \
                     intermediate power has non-finite entries"
                ),
            });
        }
        Ok(p)
    }

    /// A copy (`a¹`).
    fn copy(a: &Fill<'a>) -> Result<Fill<'a>> {
        match a {
            Fill::Dense(d) => Ok(Fill::Dense(d.clone())),
            s => {
                let c = s.as_csr();
                Ok(Fill::Sparse(crate::storage::csr_build::csr_with_values(
                    "pow",
                    c,
                    |data| data.extend_from_slice(c.data()),
                )?))
            }
        }
    }

    /// The Csr of a sparse power (not called on a dense one).
    fn as_csr(&self) -> &Csr {
        self.sparse()
            .unwrap_or_else(|| unreachable!("only sparse powers are read as Csr"))
    }

    fn shape(&self) -> (usize, usize) {
        match self {
            Fill::Dense(d) => d.shape(),
            s => s.as_csr().shape(),
        }
    }
}

/// GpuDense `aⁿ`: the same square-and-multiply over Zgemm products.
fn pow_gpu(a: &GpuDense, n: u32) -> Result<GpuDense> {
    crate::shape::square("pow", a.shape())?;
    power(
        a,
        n,
        || GpuDense::identity(a.shape().0),
        GpuDense::try_clone,
        GpuDense::matmul,
    )
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::scalar::c64;

    /// Powers of 3 mod a prime, counting the products and copies `power` makes: the value is
    /// right for every n, there are at most 2·⌊log₂ n⌋ products, and a copy only for n = 1.
    #[test]
    fn square_and_multiply_counts_its_products() {
        const P: u64 = 1_000_000_007;
        for n in 0..=300u32 {
            let (muls, copies) = (Cell::new(0u32), Cell::new(0u32));
            let got = power(
                &3u64,
                n,
                || Ok(1),
                |x| {
                    copies.set(copies.get() + 1);
                    Ok(*x)
                },
                |x, y| {
                    muls.set(muls.get() + 1);
                    Ok(x * y % P)
                },
            )
            .unwrap();
            let want = (0..n).fold(1u64, |acc, _| acc * 3 % P);
            assert_eq!(got, want, "3^{n}");
            let log = n.checked_ilog2().unwrap_or(0);
            assert!(muls.get() <= 2 * log, "3^{n}: {} products", muls.get());
            assert_eq!(copies.get(), u32::from(n == 1), "3^{n}: copies");
        }
    }

    /// Both kernels against repeated products, n = 0..=9, with a row-major Dense keeping its
    /// layout for n = 1 and a Csr of an upper-triangular pattern.
    #[test]
    fn powers_match_repeated_products() {
        let v = |i: usize, j: usize| {
            c64::new((i * 3 + j) as f64 / 7.0 - 0.5, (i + 2 * j) as f64 / 11.0)
        };
        let d = Dense::from_fn(5, 5, v).into_transpose();
        let (mut ri, mut ci, mut vals) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..5 {
            for j in i..5 {
                ri.push(i);
                ci.push(j);
                vals.push(v(i, j));
            }
        }
        let c = Csr::from_triplets((5, 5), &ri, &ci, &vals).unwrap();
        let (mut pd, mut pc) = (Dense::identity(5), Csr::identity(5));
        for n in 0..=9u32 {
            let (gd, gc) = (pow_dense(&d, n).unwrap(), pow_csr(&c, n).unwrap());
            for i in 0..5 {
                for j in 0..5 {
                    let (a, b) = (gd.get(i, j), pd.get(i, j));
                    assert!(
                        (a - b).norm() <= 1e-12 * (1.0 + b.norm()),
                        "dense {n}: {a} {b}"
                    );
                    let (a, b) = (gc.get(i, j), pc.get(i, j));
                    assert!(
                        (a - b).norm() <= 1e-12 * (1.0 + b.norm()),
                        "csr {n}: {a} {b}"
                    );
                }
            }
            if n == 1 {
                assert_eq!(gd.layout(), d.layout());
            }
            pd = matmul_dense(&pd, &d).unwrap();
            pc = matmul_csr(&pc, &c).unwrap();
        }
        assert!(pow_csr(&Csr::try_zeros(2, 3).unwrap(), 2).is_err());
    }
}
