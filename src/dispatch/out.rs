//! The requested output kind of an operation.

use std::fmt;
use std::str::FromStr;

use crate::convert::Group;
use crate::error::{Error, Result};
use crate::storage::Kind;

/// Which storage kind an operation should return.
///
/// `Out::Auto` lets the dispatcher choose: it picks the specialisation that needs the cheapest
/// input conversions and returns whatever that kernel produces (QuTiP's "creation" policy; see
/// [`Dispatcher`](crate::Dispatcher)), unless a default output is set
/// ([`set_default_output`](crate::set_default_output)) or an input is in a sticky
/// [`Group`] (GPU data): then the result is a kind of that group. Any registered kind can be
/// named with `Out::Kind`; `Out::from(kind)` gives the named variant for the built-in kinds;
/// `Out::Group` asks for the cheapest kind of a family.
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
/// assert_eq!("group:sparse".parse::<Out>().unwrap(), Out::Group(polymat::Group::SPARSE));
/// assert_ne!(Out::Group(polymat::Group::SPARSE), Out::Auto);
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
    /// [`Dia`](crate::Dia).
    Dia,
    /// [`GpuCsr`](crate::GpuCsr): sparse GPU memory (needs the `cuda` feature and a GPU).
    GpuCsr,
    /// Any registered kind.
    Kind(Kind),
    /// The cheapest kind of a [`Group`] for these inputs (`Out::Group(Group::SPARSE)`: "some
    /// sparse kind"). Among the group's kinds that can serve the call, the dispatcher picks the
    /// one with the least conversion weight, the earlier registered on a tie; see
    /// [`Dispatcher::resolve_output`](crate::Dispatcher::resolve_output).
    Group(Group),
}

impl Out {
    /// The requested kind, `None` for `Auto` and `Group`.
    #[inline]
    pub fn kind(self) -> Option<Kind> {
        match self {
            Out::Auto => None,
            Out::Dense => Some(Kind::DENSE),
            Out::Csr => Some(Kind::CSR),
            Out::GpuDense => Some(Kind::GPU_DENSE),
            Out::Dia => Some(Kind::DIA),
            Out::GpuCsr => Some(Kind::GPU_CSR),
            Out::Kind(k) => Some(k),
            Out::Group(_) => None,
        }
    }

    /// The requested group, for `Out::Group`.
    #[inline]
    pub fn group(self) -> Option<Group> {
        match self {
            Out::Group(g) => Some(g),
            _ => None,
        }
    }

    /// What the request means, for equality and hashing.
    fn key(self) -> (u8, u32) {
        match (self.kind(), self) {
            (Some(k), _) => (1, k.0),
            (None, Out::Group(g)) => (2, g.0),
            (None, _) => (0, 0),
        }
    }
}

impl PartialEq for Out {
    fn eq(&self, other: &Out) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Out {}

impl std::hash::Hash for Out {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

impl From<Kind> for Out {
    fn from(kind: Kind) -> Out {
        match kind {
            Kind::DENSE => Out::Dense,
            Kind::CSR => Out::Csr,
            Kind::GPU_DENSE => Out::GpuDense,
            Kind::DIA => Out::Dia,
            Kind::GPU_CSR => Out::GpuCsr,
            k => Out::Kind(k),
        }
    }
}

impl FromStr for Out {
    type Err = Error;

    /// `"auto"`, the name or alias of a registered kind, or `"group:<name>"` for a group,
    /// case-insensitive.
    fn from_str(s: &str) -> Result<Out> {
        if s.eq_ignore_ascii_case("auto") {
            return Ok(Out::Auto);
        }
        if let Some(g) = s
            .get(..6)
            .filter(|p| p.eq_ignore_ascii_case("group:"))
            .and(s.get(6..))
        {
            return g.parse::<Group>().map(Out::Group);
        }
        s.parse::<Kind>().map(Out::from)
    }
}

impl fmt::Display for Out {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.kind(), self) {
            (Some(k), _) => fmt::Display::fmt(&k, f),
            (None, Out::Group(g)) => write!(f, "group:{g}"),
            (None, _) => f.write_str("Auto"),
        }
    }
}
