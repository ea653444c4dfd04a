//! The requested output kind of an operation.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::storage::Kind;

/// Which storage kind an operation should return.
///
/// `Out::Auto` lets the dispatcher choose: it picks the specialisation that needs the cheapest
/// input conversions and returns whatever that kernel produces (QuTiP's "creation" policy; see
/// [`Dispatcher`](crate::Dispatcher)), unless a default output is set
/// ([`set_default_output`](crate::set_default_output)). Any registered kind can be named with
/// `Out::Kind`; `Out::from(kind)` gives the named variant for the built-in kinds.
///
/// Two `Out`s are equal when they ask for the same thing: `Out::Kind(Kind::CSR) == Out::Csr`,
/// and they hash alike.
///
/// ```
/// use polymat::{Kind, Out};
///
/// assert_eq!(Out::from(Kind::CSR), Out::Csr);
/// assert_eq!(Out::Kind(Kind::CSR), Out::Csr);
/// assert_eq!("dense".parse::<Out>().unwrap(), Out::Dense);
/// assert_eq!("auto".parse::<Out>().unwrap(), Out::Auto);
/// assert_eq!(Out::Csr.kind(), Some(Kind::CSR));
/// ```
#[derive(Clone, Copy, Debug, Default)]
#[non_exhaustive]
pub enum Out {
    /// Let the dispatcher choose (see the type's documentation).
    #[default]
    Auto,
    /// [`Dense`](crate::Dense).
    Dense,
    /// [`Csr`](crate::Csr).
    Csr,
    /// [`GpuDense`](crate::GpuDense): GPU memory (needs the `cuda` feature and a GPU).
    GpuDense,
    /// Any registered kind.
    Kind(Kind),
}

impl Out {
    /// The requested kind, `None` for `Auto`.
    #[inline]
    pub fn kind(self) -> Option<Kind> {
        match self {
            Out::Auto => None,
            Out::Dense => Some(Kind::DENSE),
            Out::Csr => Some(Kind::CSR),
            Out::GpuDense => Some(Kind::GPU_DENSE),
            Out::Kind(k) => Some(k),
        }
    }
}

impl PartialEq for Out {
    fn eq(&self, other: &Out) -> bool {
        self.kind() == other.kind()
    }
}

impl Eq for Out {}

impl std::hash::Hash for Out {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.kind().hash(state);
    }
}

impl From<Kind> for Out {
    fn from(kind: Kind) -> Out {
        match kind {
            Kind::DENSE => Out::Dense,
            Kind::CSR => Out::Csr,
            Kind::GPU_DENSE => Out::GpuDense,
            k => Out::Kind(k),
        }
    }
}

impl FromStr for Out {
    type Err = Error;

    /// `"auto"` or the name or alias of a registered kind, case-insensitive.
    fn from_str(s: &str) -> Result<Out> {
        if s.eq_ignore_ascii_case("auto") {
            return Ok(Out::Auto);
        }
        s.parse::<Kind>().map(Out::from)
    }
}

impl fmt::Display for Out {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind() {
            None => f.write_str("Auto"),
            Some(k) => fmt::Display::fmt(&k, f),
        }
    }
}
