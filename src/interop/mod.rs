//! Conversions to and from other crates' matrix types, and serde, each behind a feature.
//!
//! | feature | types | into polymat | out of polymat |
//! |---|---|---|---|
//! | (always) | `faer::Mat<c64>`, `sprs::CsMat<c64>` | `From<Mat>` for [`Dense`](crate::Dense) and [`Data`](crate::Data), `TryFrom<CsMat>` for [`Csr`](crate::Csr) and `Data` | `From<Dense>`, `From<Csr>`, `TryFrom<&Data>` / `TryFrom<Data>` (converting any kind) |
//! | `ndarray` | `ndarray::Array2<c64>` and its views | `TryFrom<ArrayView2>` / `TryFrom<&Array2>` for `Dense` | `From<&Dense>`, `TryFrom<&Data>` |
//! | `nalgebra` | `nalgebra::DMatrix<c64>`, `nalgebra_sparse::CsrMatrix<c64>` | `TryFrom<&DMatrix>` for `Dense`, `TryFrom<&CsrMatrix>` for `Csr` | `From<&Dense>`, `TryFrom<&Csr>`, `TryFrom<&Data>` |
//! | `serde` | any format (JSON, bincode, ...) | `Deserialize` for `Dense`, `Csr`, `Data` | `Serialize` for the same |
//!
//! Conversions into polymat are `TryFrom`: a new dense matrix is checked against the dense
//! limit ([`set_dense_limit`](crate::set_dense_limit)) and sparse arrays are validated, so a
//! bad input is an [`Error`](crate::Error), never a panic. polymat re-exports the `faer` and
//! `sprs` it is built with (`polymat::faer`, `polymat::sprs`); for ndarray and nalgebra, depend
//! on the versions in polymat's manifest (ndarray 0.17, nalgebra 0.34, nalgebra-sparse 0.11).
//!
//! # serde
//!
//! * [`Dense`](crate::Dense): `{"shape": [rows, cols], "data": [[re, im], ...]}`, entries in
//!   column-major order.
//! * [`Csr`](crate::Csr): `{"shape": [rows, cols], "indptr": [...], "indices": [...],
//!   "data": [[re, im], ...]}`; read back through [`Csr::from_raw`](crate::Csr::from_raw),
//!   which validates the arrays.
//! * [`Data`](crate::Data): `{"kind": "Csr", "value": {"Csr": {...}}}`: the kind's name and
//!   the value as `Dense` (dense kinds: `Dense`, `GpuDense`) or as `Csr` (every other kind,
//!   user kinds included, converted through the registry). Reading converts back to the named
//!   kind, so a user kind round-trips when it is registered (under the same name) in the
//!   reading program.
//!
//! Numbers are serialised as `f64`; whether they come back bit for bit depends on the format:
//! with serde_json, enable its `float_roundtrip` feature (its default parser can be off by one
//! unit in the last place).
//!
//! ```
//! # #[cfg(feature = "serde")] {
//! use polymat::{Csr, Data, Kind};
//! let a: Data = Csr::identity(2).into();
//! let json = serde_json::to_string(&a).unwrap();
//! assert_eq!(
//!     json,
//!     r#"{"kind":"Csr","value":{"Csr":{"shape":[2,2],"indptr":[0,1,2],"indices":[0,1],"data":[[1.0,0.0],[1.0,0.0]]}}}"#
//! );
//! let back: Data = serde_json::from_str(&json).unwrap();
//! assert_eq!(back.kind(), Kind::CSR);
//! # }
//! ```

#[cfg(feature = "nalgebra")]
mod nalgebra;
#[cfg(feature = "ndarray")]
mod ndarray;
#[cfg(feature = "serde")]
mod serde;
