//! Storage kinds: small integers naming registered storage types.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// The kind of a storage type: an index assigned when the type is registered.
///
/// Kinds are cheap to copy and compare and index the dispatch tables directly. The built-in
/// kinds have fixed values ([`Kind::DENSE`], [`Kind::CSR`], [`Kind::GPU_DENSE`],
/// [`Kind::DIA`], [`Kind::GPU_CSR`], [`Kind::KRON_SUM`], [`Kind::SUPER_OP`]); user kinds get the next free index
/// when they are registered. A kind displays as its registered name and parses from its name or
/// any alias, case-insensitively.
///
/// ```
/// use polymat::Kind;
///
/// assert_eq!("csr".parse::<Kind>().unwrap(), Kind::CSR);
/// assert_eq!("Dense".parse::<Kind>().unwrap(), Kind::DENSE);
/// assert_eq!(Kind::CSR.to_string(), "Csr");
/// assert_eq!("gpu".parse::<Kind>().unwrap(), Kind::GPU_DENSE);
/// assert!("coo".parse::<Kind>().is_err());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Kind(pub(crate) u32);

impl Kind {
    /// Column-major dense storage, [`Dense`](crate::Dense).
    pub const DENSE: Kind = Kind(0);
    /// Compressed sparse row storage, [`Csr`](crate::Csr).
    pub const CSR: Kind = Kind(1);
    /// Column-major dense storage in GPU memory, [`GpuDense`](crate::GpuDense). Registered in
    /// every build; creating a value needs the `cuda` feature and a GPU.
    pub const GPU_DENSE: Kind = Kind(2);
    /// Diagonal storage, [`Dia`](crate::Dia).
    pub const DIA: Kind = Kind(3);
    /// Compressed sparse row storage in GPU memory, [`GpuCsr`](crate::GpuCsr). Registered in
    /// every build; creating a value needs the `cuda` feature and a GPU.
    pub const GPU_CSR: Kind = Kind(4);
    /// A sum of Kronecker products of local factors, never formed,
    /// [`KronSum`](crate::KronSum).
    pub const KRON_SUM: Kind = Kind(5);
    /// A superoperator `ρ ↦ Σ cₖ·Aₖ·ρ·Bₖ`, never formed, [`SuperOp`](crate::SuperOp).
    pub const SUPER_OP: Kind = Kind(6);

    /// The kind's index, dense from 0 in registration order.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The registered display name, e.g. `"Csr"`; `"Kind(n)"` for an index never registered.
    pub fn name(self) -> String {
        crate::convert::registry().kind_name(self)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.name())
    }
}

impl fmt::Debug for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl FromStr for Kind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        crate::convert::registry().parse_kind(s)
    }
}
