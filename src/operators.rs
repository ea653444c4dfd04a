//! `+`, `-`, unary `-`, and `*`/`/` by a scalar on [`Data`], [`Dense`] and [`Csr`].
//!
//! Every operator returns a [`Result`] (candle's choice): shapes are only known at run time, and
//! a mismatch is an [`Error::Shape`](crate::Error::Shape), never a panic. On [`Data`] each
//! operator is its dispatcher called with [`Out::Auto`], so any mix of kinds works and the
//! result has the kind the dispatcher picks (`Csr + Csr` stays `Csr`, `Csr + Dense` is `Dense`);
//! the [`implicit-conversion policy`](crate::ImplicitConversions) and the
//! [default output](crate::set_default_output) apply as they do to the named functions. On
//! [`Dense`] and [`Csr`] the operators call the kernels directly and return the concrete type.
//!
//! The operand may be owned or borrowed on either side: `&a + &b`, `a + &b`, `-a`, `2.0 * &a`.
//! Owned operands are only dropped; nothing is updated in place.
//!
//! There is no `*` between two matrices: whether it should mean the matrix product (QuTiP's `@`)
//! or the element-wise product (numpy's `*`) is exactly the confusion Rust's numeric crates
//! avoid, so the products stay named: [`matmul`](fn@crate::matmul) and
//! [`multiply`](fn@crate::multiply).
//!
//! ```
//! use polymat::{Csr, Data, Dense, Kind, c64};
//!
//! let a: Data = Csr::identity(2).into();
//! let b: Data = Dense::from_rows(&[[c64::new(0.0, 1.0), c64::new(2.0, 0.0)],
//!                                  [c64::new(0.0, 0.0), c64::new(0.0, 0.0)]])?.into();
//! let c = (&a + &b)?;                      // Csr + Dense -> Dense
//! assert_eq!(c.kind(), Kind::DENSE);
//! let d = (c64::new(2.0, 0.0) * &c)?;
//! // `?` binds tighter than unary `-`: negate a parenthesised, unwrapped value.
//! let e = (-((&d - &a)?))?;
//! let f = (&e / 2.0)?;
//! assert_eq!(f.to_string(), "[[-0.5-1i, -2], [0, -0.5]]");
//! assert!((&a + &Csr::identity(3).into()).is_err()); // shapes differ: an error, not a panic
//!
//! // On the concrete types the kernels run directly.
//! let s = Csr::identity(2);
//! let t: Csr = (&s - &(&s * c64::new(0.5, 0.0))?)?;
//! assert_eq!(t.get(1, 1), c64::new(0.5, 0.0));
//! # Ok::<(), polymat::Error>(())
//! ```

use std::ops::{Add, Div, Mul, Neg, Sub};

use crate::dispatch::Out;
use crate::error::Result;
use crate::ops;
use crate::scalar::{MINUS_ONE, c64};
use crate::storage::{Csr, Data, Dense};

/// Implements a binary operator for the four owned/borrowed combinations of `$l` and `$r`,
/// all forwarding to the by-reference body.
macro_rules! binary {
    ($tr:ident, $m:ident, $l:ty, $r:ty, $out:ty, |$a:ident, $b:ident| $body:expr) => {
        impl $tr<&$r> for &$l {
            type Output = Result<$out>;
            #[inline]
            fn $m(self, rhs: &$r) -> Result<$out> {
                let ($a, $b) = (self, rhs);
                $body
            }
        }
        impl $tr<$r> for &$l {
            type Output = Result<$out>;
            #[inline]
            fn $m(self, rhs: $r) -> Result<$out> {
                $tr::$m(self, &rhs)
            }
        }
        impl $tr<&$r> for $l {
            type Output = Result<$out>;
            #[inline]
            fn $m(self, rhs: &$r) -> Result<$out> {
                $tr::$m(&self, rhs)
            }
        }
        impl $tr<$r> for $l {
            type Output = Result<$out>;
            #[inline]
            fn $m(self, rhs: $r) -> Result<$out> {
                $tr::$m(&self, &rhs)
            }
        }
    };
}

/// Implements `matrix * scalar`, `scalar * matrix` and `matrix / scalar` for `c64` and `f64`,
/// owned and borrowed, from one `scale(&matrix, c64)` body.
macro_rules! scalar {
    ($t:ty, $out:ty, |$a:ident, $s:ident| $body:expr) => {
        scalar!(@one $t, $out, c64, |x| x, |$a, $s| $body);
        scalar!(@one $t, $out, f64, |x| c64::new(x, 0.0), |$a, $s| $body);
    };
    (@one $t:ty, $out:ty, $sc:ty, |$x:ident| $lift:expr, |$a:ident, $s:ident| $body:expr) => {
        impl Mul<$sc> for &$t {
            type Output = Result<$out>;
            #[inline]
            fn mul(self, rhs: $sc) -> Result<$out> {
                let $x = rhs;
                let ($a, $s) = (self, $lift);
                $body
            }
        }
        impl Mul<$sc> for $t {
            type Output = Result<$out>;
            #[inline]
            fn mul(self, rhs: $sc) -> Result<$out> {
                Mul::mul(&self, rhs)
            }
        }
        impl Mul<&$t> for $sc {
            type Output = Result<$out>;
            #[inline]
            fn mul(self, rhs: &$t) -> Result<$out> {
                Mul::mul(rhs, self)
            }
        }
        impl Mul<$t> for $sc {
            type Output = Result<$out>;
            #[inline]
            fn mul(self, rhs: $t) -> Result<$out> {
                Mul::mul(&rhs, self)
            }
        }
        impl Div<$sc> for &$t {
            type Output = Result<$out>;
            /// Multiplication by `1 / rhs` (so dividing by zero gives infinities and NaNs, as
            /// numpy does, not an error).
            #[inline]
            fn div(self, rhs: $sc) -> Result<$out> {
                let $x = rhs;
                Mul::mul(self, c64::new(1.0, 0.0) / $lift)
            }
        }
        impl Div<$sc> for $t {
            type Output = Result<$out>;
            #[inline]
            fn div(self, rhs: $sc) -> Result<$out> {
                Div::div(&self, rhs)
            }
        }
    };
}

/// Implements unary `-` for owned and borrowed `$t`.
macro_rules! negate {
    ($t:ty, $out:ty, |$a:ident| $body:expr) => {
        impl Neg for &$t {
            type Output = Result<$out>;
            #[inline]
            fn neg(self) -> Result<$out> {
                let $a = self;
                $body
            }
        }
        impl Neg for $t {
            type Output = Result<$out>;
            #[inline]
            fn neg(self) -> Result<$out> {
                Neg::neg(&self)
            }
        }
    };
}

/// `+` and `-` for one pair of kinds through one `a + s·b` kernel (s = 1 and −1).
macro_rules! add_sub {
    ($l:ty, $r:ty, $out:ty, $kernel:path) => {
        binary!(Add, add, $l, $r, $out, |a, b| $kernel(
            a,
            b,
            c64::new(1.0, 0.0)
        ));
        binary!(Sub, sub, $l, $r, $out, |a, b| $kernel(a, b, MINUS_ONE));
    };
}

// Data: through the dispatchers, with Out::Auto.
binary!(Add, add, Data, Data, Data, |a, b| ops::add(a, b, Out::Auto));
binary!(Sub, sub, Data, Data, Data, |a, b| ops::sub(a, b, Out::Auto));
negate!(Data, Data, |a| ops::neg(a, Out::Auto));
scalar!(Data, Data, |a, s| ops::mul(a, s, Out::Auto));

// Dense and Csr: the kernels, returning the concrete type.
add_sub!(Dense, Dense, Dense, ops::add_dense);
add_sub!(Csr, Csr, Csr, ops::add_csr);
add_sub!(Csr, Dense, Dense, ops::add_csr_dense);
add_sub!(Dense, Csr, Dense, ops::add_dense_csr);
negate!(Dense, Dense, |a| ops::neg_dense(a));
negate!(Csr, Csr, |a| ops::neg_csr(a));
scalar!(Dense, Dense, |a, s| ops::mul_dense(a, s));
scalar!(Csr, Csr, |a, s| ops::mul_csr(a, s));

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Kind;

    fn c(re: f64, im: f64) -> c64 {
        c64::new(re, im)
    }

    fn dense() -> Dense {
        Dense::from_rows(&[[c(1.0, 1.0), c(2.0, 0.0)], [c(0.0, -3.0), c(4.0, 0.5)]]).unwrap()
    }

    fn csr() -> Csr {
        Csr::from_triplets((2, 2), &[0, 1], &[1, 0], &[c(1.0, 0.0), c(0.0, 2.0)]).unwrap()
    }

    #[test]
    fn data_operators_match_the_named_functions() {
        let (d, s): (Data, Data) = (dense().into(), csr().into());
        for (x, y) in [(&d, &s), (&s, &d), (&s, &s), (&d, &d)] {
            let sum = (x + y).unwrap();
            assert!(ops::isequal(&sum, &ops::add(x, y, Out::Auto).unwrap(), 0.0, 0.0).unwrap());
            assert_eq!(sum.kind(), ops::add(x, y, Out::Auto).unwrap().kind());
            let diff = (x.clone() - y.clone()).unwrap();
            assert!(ops::isequal(&diff, &ops::sub(x, y, Out::Auto).unwrap(), 0.0, 0.0).unwrap());
        }
        assert_eq!((&s + &s).unwrap().kind(), Kind::CSR);
        let scaled = (c(0.0, 2.0) * &d).unwrap();
        assert!(
            ops::isequal(
                &scaled,
                &ops::mul(&d, c(0.0, 2.0), Out::Auto).unwrap(),
                0.0,
                0.0
            )
            .unwrap()
        );
        let halved = (d.clone() / 2.0).unwrap();
        assert!(ops::isequal(&(&halved * 2.0).unwrap(), &d, 0.0, 0.0).unwrap());
        let negated = (-&s).unwrap();
        assert!(
            ops::isequal(
                &(&negated + &s).unwrap(),
                &ops::zeros(2, 2, Out::Csr).unwrap(),
                0.0,
                0.0
            )
            .unwrap()
        );
        assert!((&d + &Data::from(Csr::identity(3))).is_err());
    }

    #[test]
    fn concrete_operators_keep_their_types() {
        let (d, s) = (dense(), csr());
        let sd: Dense = (&s + &d).unwrap();
        let ds: Dense = (&d - &s).unwrap();
        assert_eq!(sd.get(1, 0), c(0.0, -1.0));
        assert_eq!(ds.get(0, 1), c(1.0, 0.0));
        let ss: Csr = (&s + &s).unwrap();
        assert_eq!(ss.get(1, 0), c(0.0, 4.0));
        assert_eq!((&s - &s).unwrap().nnz(), 0);
        assert_eq!((-d.clone()).unwrap().get(0, 0), c(-1.0, -1.0));
        assert_eq!((2.0 * &s).unwrap().get(0, 1), c(2.0, 0.0));
        assert_eq!((s / c(0.0, 1.0)).unwrap().get(1, 0), c(2.0, 0.0));
        assert!((&d + &Dense::identity(3)).is_err());
        assert!((&csr() - &Csr::identity(1)).is_err());
    }
}
