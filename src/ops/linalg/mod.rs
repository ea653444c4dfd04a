//! The dense linear algebra and what builds on it: factorisations ([`lu`]), the matrix
//! exponential ([`expm`]) and functions ([`funm`]: `sqrtm`, `logm`), decompositions
//! ([`decomp`]: `eigs`, `svd`) with the eigensolvers' options and the Krylov path of `eigs`,
//! and a Csr's `expm` / `inv` block by block over its graph's components. One algorithm per
//! file; each operation's dispatcher lives in its file, re-exported by [`ops`](super).

pub(crate) mod components;
pub mod decomp;
pub(crate) mod eigen;
pub mod expm;
pub mod funm;
pub(crate) mod krylov_eigs;
pub mod lu;
