//! `Serialize` / `Deserialize` for [`Dense`], [`Csr`] and [`Data`] (feature `serde`). The
//! formats are described in [`interop`](crate::interop#serde).

use serde::de::Error as _;
use serde::ser::{Error as _, SerializeSeq, SerializeStruct};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::scalar::c64;
use crate::storage::{Csr, Data, Dense, Kind};

/// Entries as a sequence of `[re, im]` pairs, written without collecting them.
struct Entries<I>(I, usize);

impl<'a, I: Iterator<Item = &'a c64> + Clone> Serialize for Entries<I> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.1))?;
        for z in self.0.clone() {
            seq.serialize_element(&(z.re, z.im))?;
        }
        seq.end()
    }
}

impl Serialize for Dense {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (r, c) = self.shape();
        let mut st = s.serialize_struct("Dense", 2)?;
        st.serialize_field("shape", &(r, c))?;
        // Column-major order, read in place in either layout: a row-major matrix's
        // column-major copy (`try_columns`) would double its memory and stay attached to it.
        // No columns at all when there are no rows (an empty 0 × 2⁶² matrix).
        let v = self.as_ref();
        let cols = if r == 0 { 0 } else { c };
        let entries = (0..cols).flat_map(move |j| (0..r).map(move |i| v.get(i, j)));
        st.serialize_field("data", &Entries(entries, r.saturating_mul(c)))?;
        st.end()
    }
}

impl Serialize for Csr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Csr", 4)?;
        st.serialize_field("shape", &self.shape())?;
        st.serialize_field("indptr", self.indptr())?;
        st.serialize_field("indices", self.indices())?;
        st.serialize_field("data", &Entries(self.data().iter(), self.nnz()))?;
        st.end()
    }
}

#[derive(Deserialize)]
#[serde(rename = "Dense", deny_unknown_fields)]
struct DenseRepr {
    shape: (usize, usize),
    data: Vec<(f64, f64)>,
}

#[derive(Deserialize)]
#[serde(rename = "Csr", deny_unknown_fields)]
struct CsrRepr {
    shape: (usize, usize),
    indptr: Vec<usize>,
    indices: Vec<usize>,
    data: Vec<(f64, f64)>,
}

fn entries(data: Vec<(f64, f64)>) -> Vec<c64> {
    data.into_iter().map(|(re, im)| c64::new(re, im)).collect()
}

impl TryFrom<DenseRepr> for Dense {
    type Error = crate::Error;
    fn try_from(r: DenseRepr) -> crate::Result<Dense> {
        // A bra row-major, unpadded (`Dense`'s "Memory of a one-row matrix").
        Dense::from_col_major_public("deserialize", r.shape.0, r.shape.1, &entries(r.data))
    }
}

impl TryFrom<CsrRepr> for Csr {
    type Error = crate::Error;
    fn try_from(r: CsrRepr) -> crate::Result<Csr> {
        Csr::from_raw(r.shape, r.indptr, r.indices, entries(r.data))
    }
}

impl<'de> Deserialize<'de> for Dense {
    /// Checks that `data` fills `shape` and that the matrix fits the dense limit.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Dense, D::Error> {
        Dense::try_from(DenseRepr::deserialize(d)?).map_err(D::Error::custom)
    }
}

impl<'de> Deserialize<'de> for Csr {
    /// Validates the arrays as [`Csr::from_raw`] does (unsorted columns are sorted, duplicates
    /// summed, anything else malformed is an error).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Csr, D::Error> {
        Csr::try_from(CsrRepr::deserialize(d)?).map_err(D::Error::custom)
    }
}

/// How a Data's value is stored: `{"Dense": …}` or `{"Csr": …}`.
enum StoredRef<'a> {
    Dense(&'a Dense),
    Csr(&'a Csr),
}

impl Serialize for StoredRef<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            StoredRef::Dense(d) => s.serialize_newtype_variant("Stored", 0, "Dense", d),
            StoredRef::Csr(c) => s.serialize_newtype_variant("Stored", 1, "Csr", c),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename = "Stored")]
enum Stored {
    Dense(Dense),
    Csr(Csr),
}

#[derive(Deserialize)]
#[serde(rename = "Data", deny_unknown_fields)]
struct DataRepr {
    kind: String,
    value: Stored,
}

impl Serialize for Data {
    /// The kind's name and the value as Dense (dense kinds) or Csr (every other kind,
    /// converted through the registry; a kind that cannot reach Csr is an error).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let kind = self.kind();
        let (dense, csr);
        let stored = if let Some(d) = self.as_dense() {
            StoredRef::Dense(d)
        } else if let Some(c) = self.as_csr() {
            StoredRef::Csr(c)
        } else if kind == Kind::GPU_DENSE {
            dense = self.to_type::<Dense>().map_err(S::Error::custom)?;
            StoredRef::Dense(&dense)
        } else {
            csr = self.to_type::<Csr>().map_err(S::Error::custom)?;
            StoredRef::Csr(&csr)
        };
        let mut st = s.serialize_struct("Data", 2)?;
        st.serialize_field("kind", &kind.name())?;
        st.serialize_field("value", &stored)?;
        st.end()
    }
}

impl<'de> Deserialize<'de> for Data {
    /// Reads the value, then converts it to the named kind (which must be registered).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Data, D::Error> {
        let repr = DataRepr::deserialize(d)?;
        let kind: Kind = repr.kind.parse().map_err(D::Error::custom)?;
        let value: Data = match repr.value {
            Stored::Dense(d) => d.into(),
            Stored::Csr(c) => c.into(),
        };
        value.to(kind).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_json_reads_like_the_docs() {
        let d = Dense::from_rows(&[[c64::new(1.0, 0.0), c64::new(0.0, 2.0)]]).unwrap();
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(json, r#"{"shape":[1,2],"data":[[1.0,0.0],[0.0,2.0]]}"#);
        assert_eq!(serde_json::from_str::<Dense>(&json).unwrap(), d);
    }

    #[test]
    fn row_major_matrices_and_bras_round_trip_in_place() {
        use crate::Layout;
        let z = |re: f64, im: f64| c64::new(re, im);
        let rows =
            Dense::from_row_major(2, 3, &[1., 2., 3., 4., 5., 6.].map(|x| z(x, -x))).unwrap();
        let bra = Dense::from_fn(1, 5, |_, j| z(j as f64, 1.0));
        for d in [&rows, &bra] {
            assert_eq!(d.layout(), Layout::RowMajor);
            let json = serde_json::to_string(d).unwrap();
            // Column-major order, read in place: no column-major copy made (and kept).
            assert!(!d.holds_col_major_copy(), "{json}");
            let back: Dense = serde_json::from_str(&json).unwrap();
            assert_eq!(&back, d);
        }
        assert_eq!(
            serde_json::to_string(&rows).unwrap(),
            r#"{"shape":[2,3],"data":[[1.0,-1.0],[4.0,-4.0],[2.0,-2.0],[5.0,-5.0],[3.0,-3.0],[6.0,-6.0]]}"#
        );
        // A bra read back is row-major, its entries in one buffer column.
        let back: Dense = serde_json::from_str(&serde_json::to_string(&bra).unwrap()).unwrap();
        assert_eq!(back.buffer().shape(), (5, 1));
    }

    #[test]
    fn dia_data_round_trips_through_csr() {
        let one = c64::new(1.0, 0.0);
        let dia = crate::Dia::new((3, 3), vec![-1, 1], vec![one; 6]).unwrap();
        let d: Data = dia.clone().into();
        let json = serde_json::to_string(&d).unwrap();
        assert!(
            json.starts_with(r#"{"kind":"Dia","value":{"Csr""#),
            "{json}"
        );
        let back: Data = serde_json::from_str(&json).unwrap();
        assert_eq!(back.kind(), Kind::DIA);
        assert_eq!(back.as_dia(), Some(&dia));
    }

    #[test]
    fn bad_values_are_errors() {
        for (json, want) in [
            (
                r#"{"shape":[2,2],"data":[[1.0,0.0]]}"#,
                "1 values cannot fill a 2×2",
            ),
            (
                r#"{"shape":[1,1],"data":[[1.0,0.0]],"x":1}"#,
                "unknown field",
            ),
        ] {
            let err = serde_json::from_str::<Dense>(json)
                .err()
                .unwrap()
                .to_string();
            assert!(err.contains(want), "{err}");
        }
        let err = serde_json::from_str::<Csr>(
            r#"{"shape":[2,2],"indptr":[0,1],"indices":[5],"data":[[1.0,0.0]]}"#,
        )
        .err()
        .unwrap()
        .to_string();
        assert!(err.contains("invalid CSR"), "{err}");
        let err = serde_json::from_str::<Data>(
            r#"{"kind":"Nope","value":{"Dense":{"shape":[0,0],"data":[]}}}"#,
        )
        .err()
        .unwrap()
        .to_string();
        assert!(err.contains("Nope"), "{err}");
    }
}
