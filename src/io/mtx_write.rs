//! Matrix Market (`.mtx`) writing.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use super::{MatrixRef, io_error, is_dense_kind, stream_error};
use crate::error::{Error, Result};
use crate::scalar::c64;

/// Writes `m` as a Matrix Market file: [`Dense`](crate::Dense) (and [`GpuDense`](crate::GpuDense)) as
/// `array`, every other kind as `coordinate` (converted to [`Csr`](crate::Csr) if needed, stored entries
/// as they are). The field is `real` when no entry has a nonzero imaginary part, else
/// `complex`; the symmetry is always `general`.
///
/// # Errors
/// [`Error::Io`] if the file cannot be written; the conversion's error for a kind that cannot
/// reach [`Csr`](crate::Csr) or [`Dense`](crate::Dense).
///
/// ```no_run
/// use polymat::{Csr, io};
/// io::write_matrix_market("identity.mtx", &Csr::identity(4))?;
/// # Ok::<(), polymat::Error>(())
/// ```
pub fn write_matrix_market<'a>(path: impl AsRef<Path>, m: impl Into<MatrixRef<'a>>) -> Result<()> {
    let path = path.as_ref();
    let op = "write_matrix_market";
    let file = File::create(path).map_err(|e| io_error(op, path, &e))?;
    let mut w = BufWriter::new(file);
    write_to(&mut w, m.into()).map_err(|e| match e {
        WriteError::Io(e) => io_error(op, path, &e),
        WriteError::Polymat(e) => e,
    })?;
    w.flush().map_err(|e| io_error(op, path, &e))
}

/// [`write_matrix_market`] to any writer. Wrap an unbuffered one (a `File`) in a
/// [`BufWriter`].
///
/// # Errors
/// As [`write_matrix_market`].
///
/// ```
/// use polymat::{Dense, c64, io};
/// let mut out = Vec::new();
/// io::write_matrix_market_to(&mut out, &Dense::identity(2))?;
/// assert_eq!(
///     String::from_utf8(out).unwrap(),
///     "%%MatrixMarket matrix array real general\n% written by polymat\n2 2\n1.0\n0.0\n0.0\n1.0\n"
/// );
/// # Ok::<(), polymat::Error>(())
/// ```
pub fn write_matrix_market_to<'a>(
    mut writer: impl Write,
    m: impl Into<MatrixRef<'a>>,
) -> Result<()> {
    write_to(&mut writer, m.into()).map_err(|e| match e {
        WriteError::Io(e) => stream_error("write_matrix_market", &e),
        WriteError::Polymat(e) => e,
    })?;
    writer
        .flush()
        .map_err(|e| stream_error("write_matrix_market", &e))
}

enum WriteError {
    Io(std::io::Error),
    Polymat(Error),
}

impl From<std::io::Error> for WriteError {
    fn from(e: std::io::Error) -> Self {
        WriteError::Io(e)
    }
}

impl From<Error> for WriteError {
    fn from(e: Error) -> Self {
        WriteError::Polymat(e)
    }
}

/// Writes one value in the file's field: shortest round-trip decimal, so reading gives the
/// same bits back.
fn write_value(w: &mut impl Write, v: c64, complex: bool) -> std::io::Result<()> {
    if complex {
        write!(w, "{:?} {:?}", v.re, v.im)
    } else {
        write!(w, "{:?}", v.re)
    }
}

fn write_to(w: &mut impl Write, m: MatrixRef<'_>) -> std::result::Result<(), WriteError> {
    if is_dense_kind(m.kind()) {
        let d = m.dense()?;
        let complex = d.try_columns()?.flatten().any(|v| v.im != 0.0);
        let (rows, cols) = d.shape();
        writeln!(
            w,
            "%%MatrixMarket matrix array {} general\n% written by polymat\n{rows} {cols}",
            if complex { "complex" } else { "real" }
        )?;
        for col in d.try_columns()? {
            for &v in col {
                write_value(w, v, complex)?;
                w.write_all(b"\n")?;
            }
        }
    } else {
        let c = m.csr()?;
        let complex = c.data().iter().any(|v| v.im != 0.0);
        let (rows, cols) = c.shape();
        writeln!(
            w,
            "%%MatrixMarket matrix coordinate {} general\n% written by polymat\n{rows} {cols} {}",
            if complex { "complex" } else { "real" },
            c.nnz()
        )?;
        let (p, idx, val) = (c.indptr(), c.indices(), c.data());
        for i in 0..rows {
            for k in p[i]..p[i + 1] {
                write!(w, "{} {} ", i + 1, idx[k] + 1)?;
                write_value(w, val[k], complex)?;
                w.write_all(b"\n")?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::read_matrix_market_from;
    use crate::storage::{Csr, Dense};

    #[test]
    fn writing_and_reading_back_gives_the_same_bits() {
        let vals = [
            c64::new(0.1 + 0.2, -1e-300),
            c64::new(f64::MAX, f64::MIN_POSITIVE),
            c64::new(-0.0, 1.0 / 3.0),
            c64::new(0.0, 0.0),
        ];
        let csr = Csr::from_raw((3, 4), vec![0, 2, 2, 4], vec![0, 3, 1, 2], vals.to_vec()).unwrap();
        let mut buf = Vec::new();
        write_matrix_market_to(&mut buf, &csr).unwrap();
        let back = read_matrix_market_from(buf.as_slice()).unwrap();
        let back = back.as_csr().unwrap();
        assert_eq!(back.indptr(), csr.indptr());
        assert_eq!(back.indices(), csr.indices());
        for (a, b) in back.data().iter().zip(csr.data()) {
            assert_eq!(
                (a.re.to_bits(), a.im.to_bits()),
                (b.re.to_bits(), b.im.to_bits())
            );
        }
        let dense = Dense::from_fn(3, 2, |i, j| vals[(i + j) % 4]);
        let mut buf = Vec::new();
        write_matrix_market_to(&mut buf, &dense).unwrap();
        assert_eq!(
            read_matrix_market_from(buf.as_slice()).unwrap().as_dense(),
            Some(&dense)
        );
    }
}
