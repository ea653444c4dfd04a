//! Kind groups: families of storage kinds (QuTiP's dtype groups) and the places data lives.

use std::fmt;
use std::str::FromStr;
use std::sync::{LazyLock, RwLock};

use crate::error::{Error, Result};

/// A named family of storage kinds: `dense` (Dense, GpuDense), `sparse` (Csr, Dia, GpuCsr), `gpu`
/// (GpuDense, GpuCsr), `lazy` (KronSum, SuperOp), or one a user creates. A kind may belong to several groups.
///
/// Groups do two things:
///
/// * **`Out::Group(g)`** asks an operation for "any kind of this family": the dispatcher picks
///   the member whose path is cheapest for the given inputs (QuTiP's `default_dtype` groups).
/// * **Sticky groups keep `Out::Auto` results in the group.** When an input of a call belongs
///   to a sticky group, `Out::Auto` returns a kind of that group, converting the kernel's result
///   back if the only kernel runs elsewhere. [`Group::GPU`] is sticky, so GPU data stays on the
///   GPU through every operation; a distributed kind would be sticky too.
///
/// Built-in kinds belong to built-in groups only. User kinds join groups with
/// [`Batch::add_to_group`](crate::Batch::add_to_group).
///
/// ```
/// use polymat::{Group, Kind, Out, registry};
///
/// assert_eq!(registry().kinds_in(Group::SPARSE), vec![Kind::CSR, Kind::DIA, Kind::GPU_CSR]);
/// assert!(Group::GPU.is_sticky() && !Group::DENSE.is_sticky());
/// assert_eq!("sparse".parse::<Group>()?, Group::SPARSE);
///
/// // "some sparse kind, whichever is cheapest"
/// let a = polymat::identity(3, Out::Dense)?;
/// let s = polymat::mul(&a, polymat::c64::new(2.0, 0.0), Out::Group(Group::SPARSE))?;
/// assert_eq!(s.kind(), Kind::CSR);
/// # Ok::<(), polymat::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Group(pub(crate) u32);

struct GroupInfo {
    name: String,
    sticky: bool,
}

/// Most groups a process may create (they are never freed).
pub const MAX_GROUPS: usize = 1024;

static GROUPS: LazyLock<RwLock<Vec<GroupInfo>>> = LazyLock::new(|| {
    RwLock::new(
        [
            ("dense", false),
            ("sparse", false),
            ("gpu", true),
            ("lazy", false),
        ]
        .into_iter()
        .map(|(name, sticky)| GroupInfo {
            name: name.to_owned(),
            sticky,
        })
        .collect(),
    )
});

fn read_groups<T>(f: impl FnOnce(&[GroupInfo]) -> T) -> T {
    f(&GROUPS.read().unwrap_or_else(|p| p.into_inner()))
}

impl Group {
    /// Dense storage: [`Dense`](crate::Dense), [`GpuDense`](crate::GpuDense).
    pub const DENSE: Group = Group(0);
    /// Sparse storage: [`Csr`](crate::Csr), [`Dia`](crate::Dia), [`GpuCsr`](crate::GpuCsr).
    pub const SPARSE: Group = Group(1);
    /// GPU memory: [`GpuDense`](crate::GpuDense), [`GpuCsr`](crate::GpuCsr). Sticky: `Out::Auto`
    /// keeps GPU data on the GPU.
    pub const GPU: Group = Group(2);
    /// Operators held as factors and never formed: [`KronSum`](crate::KronSum),
    /// [`SuperOp`](crate::SuperOp). Not sticky: an operation without a lazy kernel returns
    /// what its kernel makes, and nothing converts into a lazy kind.
    pub const LAZY: Group = Group(3);

    /// The group called `name` (case-insensitive), created if it does not exist.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty name, a name that exists as a group of the other
    /// stickiness, or past [`MAX_GROUPS`] groups.
    pub fn new(name: &str) -> Result<Group> {
        Group::create(name, false)
    }

    /// The sticky group called `name`, created if it does not exist: `Out::Auto` results of
    /// calls with an input in it stay in it.
    ///
    /// # Errors
    /// As [`Group::new`].
    pub fn new_sticky(name: &str) -> Result<Group> {
        Group::create(name, true)
    }

    fn create(name: &str, sticky: bool) -> Result<Group> {
        let name = name.trim();
        if name.is_empty() || name.eq_ignore_ascii_case("auto") {
            return Err(Error::argument(
                "Group::new",
                format!("{name:?} cannot name a group"),
            ));
        }
        let mut g = GROUPS.write().unwrap_or_else(|p| p.into_inner());
        {
            if let Some(i) = g.iter().position(|x| x.name.eq_ignore_ascii_case(name)) {
                if g[i].sticky != sticky {
                    return Err(Error::argument(
                        "Group::new",
                        format!(
                            "group {name} exists and is {}sticky",
                            if g[i].sticky { "" } else { "not " }
                        ),
                    ));
                }
                return Ok(Group(i as u32));
            }
            if g.len() >= MAX_GROUPS {
                return Err(Error::argument(
                    "Group::new",
                    format!("at most {MAX_GROUPS} groups can exist"),
                ));
            }
            g.push(GroupInfo {
                name: name.to_owned(),
                sticky,
            });
            Ok(Group((g.len() - 1) as u32))
        }
    }

    /// The existing group called `name` (case-insensitive).
    pub fn find(name: &str) -> Option<Group> {
        read_groups(|g| {
            g.iter()
                .position(|x| x.name.eq_ignore_ascii_case(name.trim()))
                .map(|i| Group(i as u32))
        })
    }

    /// The group's name.
    pub fn name(self) -> String {
        read_groups(|g| {
            g.get(self.0 as usize)
                .map_or_else(|| format!("group#{}", self.0), |x| x.name.clone())
        })
    }

    /// Whether `Out::Auto` keeps results in this group when an input is in it.
    pub fn is_sticky(self) -> bool {
        read_groups(|g| g.get(self.0 as usize).is_some_and(|x| x.sticky))
    }
}

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.name())
    }
}

impl fmt::Debug for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Group({})", self.name())
    }
}

impl FromStr for Group {
    type Err = Error;

    /// An existing group's name, case-insensitive.
    fn from_str(s: &str) -> Result<Group> {
        Group::find(s).ok_or_else(|| {
            Error::argument(
                "Group::from_str",
                format!(
                    "no group is called {s:?} (groups: {})",
                    read_groups(|g| g.iter().map(|x| x.name.clone()).collect::<Vec<_>>())
                        .join(", ")
                ),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_interned_by_name() {
        let a = Group::new("my-family").unwrap();
        assert_eq!(Group::new("MY-family").unwrap(), a);
        assert_eq!(a.name(), "my-family");
        assert!(!a.is_sticky());
        assert!(Group::new_sticky("my-family").is_err());
        assert!(Group::new("").is_err());
        assert!(Group::new("Auto").is_err());
        assert_eq!(Group::find("gpu"), Some(Group::GPU));
        assert!("nope".parse::<Group>().is_err());
    }
}
