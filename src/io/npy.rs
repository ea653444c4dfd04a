//! numpy's `.npy` format for dense matrices.
//!
//! Written here rather than on faer's `npy` feature: faer's reader panics on a malformed
//! header or a dtype other than its own, and faer has no writer.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use super::{MatrixRef, at_path, io_error, stream_error};
use crate::error::{Error, Result};
use crate::scalar::c64;
use crate::storage::{Dense, Layout, alloc};

const FORMAT: &str = "npy";
const MAGIC: &[u8] = b"\x93NUMPY";
/// The longest header read; numpy writes well under 1 KiB.
const MAX_HEADER: usize = 1 << 20;

fn format_error(reason: impl Into<String>) -> Error {
    Error::Format {
        format: FORMAT,
        line: None,
        reason: reason.into(),
    }
}

/// The element types read: numpy's `kind` letter and item size.
#[derive(Clone, Copy, Debug)]
enum Element {
    Complex(usize),
    Float(usize),
    Int(usize),
    Uint(usize),
}

impl Element {
    fn size(self) -> usize {
        match self {
            Element::Complex(s) | Element::Float(s) | Element::Int(s) | Element::Uint(s) => s,
        }
    }

    /// Decodes one element from `b` (`size()` bytes).
    fn decode(self, b: &[u8], big_endian: bool) -> c64 {
        let mut buf = [0u8; 16];
        let buf = &mut buf[..b.len()];
        buf.copy_from_slice(b);
        let word = |w: &[u8]| -> [u8; 8] {
            let mut x = [0u8; 8];
            if big_endian {
                x[8 - w.len()..].copy_from_slice(w);
                x.reverse();
            } else {
                x[..w.len()].copy_from_slice(w);
            }
            x
        };
        let float = |w: &[u8]| -> f64 {
            match w.len() {
                4 => {
                    let x = word(w);
                    f64::from(f32::from_le_bytes([x[0], x[1], x[2], x[3]]))
                }
                _ => f64::from_le_bytes(word(w)),
            }
        };
        match self {
            Element::Complex(s) => c64::new(float(&buf[..s / 2]), float(&buf[s / 2..])),
            Element::Float(_) => c64::new(float(buf), 0.0),
            Element::Int(s) => {
                // Sign-extend from s bytes.
                let x = u64::from_le_bytes(word(buf));
                let shift = 64 - 8 * s as u32;
                c64::new((((x << shift) as i64) >> shift) as f64, 0.0)
            }
            Element::Uint(_) => c64::new(u64::from_le_bytes(word(buf)) as f64, 0.0),
        }
    }
}

/// The parsed header: element type, byte order, Fortran order, shape as a matrix.
struct Header {
    element: Element,
    big_endian: bool,
    fortran: bool,
    shape: (usize, usize),
}

/// The value after `'key':` in the header dict, as raw text up to the next top-level comma.
fn dict_value<'a>(dict: &'a str, key: &str) -> Result<&'a str> {
    let find = |q: char| {
        dict.find(&format!("{q}{key}{q}"))
            .map(|p| p + key.len() + 2)
    };
    let start = find('\'')
        .or_else(|| find('"'))
        .ok_or_else(|| format_error(format!("the header has no '{key}'")))?;
    let rest = dict[start..].trim_start();
    let rest = rest
        .strip_prefix(':')
        .ok_or_else(|| format_error(format!("no ':' after '{key}' in the header")))?
        .trim_start();
    // Up to the comma or brace that closes this value (a tuple's commas are inside parens).
    let mut depth = 0usize;
    for (k, ch) in rest.char_indices() {
        match ch {
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            ',' | '}' if depth == 0 => return Ok(rest[..k].trim()),
            _ => {}
        }
    }
    Err(format_error(format!(
        "the value of '{key}' is not terminated"
    )))
}

fn parse_header(dict: &str) -> Result<Header> {
    let descr = dict_value(dict, "descr")?;
    let descr = descr
        .strip_prefix('\'')
        .and_then(|d| d.strip_suffix('\''))
        .or_else(|| descr.strip_prefix('"').and_then(|d| d.strip_suffix('"')))
        .ok_or_else(|| {
            format_error(format!(
                "dtype {descr} is not supported (only plain numbers, not structured arrays)"
            ))
        })?;
    let unsupported = || {
        format_error(format!(
            "dtype '{descr}' is not supported (complex, float, integer and unsigned numbers are)"
        ))
    };
    let mut chars = descr.chars();
    let order = chars.next().ok_or_else(unsupported)?;
    let kind = chars.next().ok_or_else(unsupported)?;
    let size: usize = chars.as_str().parse().map_err(|_| unsupported())?;
    let big_endian = match order {
        '<' | '=' | '|' => false,
        '>' => true,
        _ => return Err(unsupported()),
    };
    let element = match (kind, size) {
        ('c', 8 | 16) => Element::Complex(size),
        ('f', 4 | 8) => Element::Float(size),
        ('i', 1 | 2 | 4 | 8) => Element::Int(size),
        ('u', 1 | 2 | 4 | 8) => Element::Uint(size),
        _ => return Err(unsupported()),
    };
    let fortran = match dict_value(dict, "fortran_order")? {
        "True" => true,
        "False" => false,
        v => {
            return Err(format_error(format!(
                "fortran_order is {v}, not True or False"
            )));
        }
    };
    let shape_text = dict_value(dict, "shape")?;
    let inner = shape_text
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| format_error(format!("shape {shape_text} is not a tuple")))?;
    let dims = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .map_err(|_| format_error(format!("shape {shape_text} has a bad dimension `{s}`")))
        })
        .collect::<Result<Vec<usize>>>()?;
    let shape = match dims.as_slice() {
        [] => (1, 1),
        [n] => (*n, 1),
        [r, c] => (*r, *c),
        _ => {
            return Err(format_error(format!(
                "shape {shape_text} has {} dimensions; a matrix has at most 2",
                dims.len()
            )));
        }
    };
    Ok(Header {
        element,
        big_endian,
        fortran,
        shape,
    })
}

/// Reads a `.npy` file as a [`Dense`] in the file's order: Fortran order gives a column-major
/// Dense, C order (numpy's default) a row-major one, each value read straight into place. A
/// vector, whose values come in the same order either way, is read into one buffer column
/// whatever the file's order: a ket (and a 1-D array) column-major, a bra row-major (see
/// [`Dense`]'s "Memory of a one-row matrix"). See [`io`](crate::io) for the dtypes read.
///
/// # Errors
/// [`Error::Io`] if the file cannot be read, [`Error::Format`] if it is not a `.npy` file of a
/// supported dtype with at most 2 dimensions or ends early, [`Error::TooLarge`] over the dense
/// limit.
///
/// ```no_run
/// let rho = polymat::io::read_npy("rho.npy")?; // np.save("rho.npy", rho) in Python
/// # Ok::<(), polymat::Error>(())
/// ```
pub fn read_npy(path: impl AsRef<Path>) -> Result<Dense> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|e| io_error("read_npy", path, &e))?;
    read_npy_from(BufReader::new(file)).map_err(|e| at_path(e, path))
}

/// Reads exactly `buf.len()` bytes; an early end is a format error naming `what`.
fn read_exact(reader: &mut impl Read, buf: &mut [u8], what: &str) -> Result<()> {
    reader.read_exact(buf).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => format_error(format!("the file ends inside {what}")),
        _ => stream_error("read_npy", &e),
    })
}

/// [`read_npy`] from any reader (wrap a `File` in a [`BufReader`]).
///
/// # Errors
/// As [`read_npy`].
pub fn read_npy_from(mut reader: impl Read) -> Result<Dense> {
    let mut start = [0u8; 8];
    read_exact(&mut reader, &mut start, "the magic string")?;
    if &start[..6] != MAGIC {
        return Err(format_error("not a .npy file (no \\x93NUMPY magic string)"));
    }
    let header_len = match start[6] {
        1 => {
            let mut b = [0u8; 2];
            read_exact(&mut reader, &mut b, "the header length")?;
            usize::from(u16::from_le_bytes(b))
        }
        2 | 3 => {
            let mut b = [0u8; 4];
            read_exact(&mut reader, &mut b, "the header length")?;
            usize::try_from(u32::from_le_bytes(b)).unwrap_or(usize::MAX)
        }
        v => {
            return Err(format_error(format!(
                "format version {v} is not supported (1 to 3)"
            )));
        }
    };
    if header_len > MAX_HEADER {
        return Err(format_error(format!(
            "a header of {header_len} bytes is longer than the {MAX_HEADER} read"
        )));
    }
    let mut header = vec![0u8; header_len];
    read_exact(&mut reader, &mut header, "the header")?;
    let dict = String::from_utf8(header).map_err(|_| format_error("the header is not text"))?;
    let h = parse_header(&dict)?;
    let (rows, cols) = h.shape;
    // The buffer in the file's order: Fortran order column-major, C order row-major (the
    // buffer then holds the transpose), so every value lands at the next position. A vector's
    // values come in the same order either way: it is held in one buffer column, a ket
    // column-major and a bra row-major (faer pads a one-row buffer to four rows: `Dense`'s
    // "Memory of a one-row matrix"; numpy writes C order, so a ket would be one row).
    let fortran = if Dense::is_held_bra(h.shape) {
        false
    } else {
        cols == 1 || h.fortran
    };
    let (brows, bcols) = if fortran { (rows, cols) } else { (cols, rows) };
    let mut mat = alloc::zeros_mat("read_npy", brows, bcols).map_err(alloc::for_shape(h.shape))?;
    let size = h.element.size();
    // Read in chunks of whole elements.
    let total = rows.saturating_mul(cols);
    let per_chunk = (1 << 16) / size;
    let mut chunk = vec![0u8; per_chunk * size];
    let mut done = 0usize;
    while done < total {
        let n = per_chunk.min(total - done);
        let bytes = &mut chunk[..n * size];
        reader.read_exact(bytes).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => format_error(format!(
                "the file ends inside the data: {total} values expected, fewer than {} present",
                done + n
            )),
            _ => stream_error("read_npy", &e),
        })?;
        for (k, b) in bytes.chunks_exact(size).enumerate() {
            let idx = done + k;
            mat[(idx % brows, idx / brows)] = h.element.decode(b, h.big_endian);
        }
        done += n;
    }
    let layout = if fortran {
        Layout::ColMajor
    } else {
        Layout::RowMajor
    };
    Ok(Dense::with_layout(mat, layout))
}

/// Writes `m` as a `.npy` file: `complex128` (`<c16`), shape `(rows, cols)`, in the order of its
/// [`Layout`] (Fortran order for a column-major Dense, C order for a row-major one: no copy);
/// `np.load` reads it back as the same matrix. A kind other than [`Dense`] is converted first
/// (a sparse matrix over the dense limit is an [`Error::TooLarge`], never densified).
///
/// # Errors
/// [`Error::Io`] if the file cannot be written; the conversion's error for other kinds.
///
/// ```no_run
/// use polymat::{Dense, io};
/// io::write_npy("identity.npy", &Dense::identity(4))?;
/// # Ok::<(), polymat::Error>(())
/// ```
pub fn write_npy<'a>(path: impl AsRef<Path>, m: impl Into<MatrixRef<'a>>) -> Result<()> {
    let path = path.as_ref();
    let d = m.into().dense()?;
    let file = File::create(path).map_err(|e| io_error("write_npy", path, &e))?;
    let mut w = BufWriter::new(file);
    write(&mut w, &d)
        .and_then(|()| w.flush())
        .map_err(|e| io_error("write_npy", path, &e))
}

/// [`write_npy`] to any writer (wrap a `File` in a [`BufWriter`]).
///
/// # Errors
/// As [`write_npy`].
///
/// ```
/// use polymat::{Dense, io};
/// let mut bytes = Vec::new();
/// io::write_npy_to(&mut bytes, &Dense::identity(2))?;
/// assert_eq!(bytes.len(), 128 + 4 * 16); // a 128-byte header, then the entries
/// assert_eq!(io::read_npy_from(bytes.as_slice())?, Dense::identity(2));
/// # Ok::<(), polymat::Error>(())
/// ```
pub fn write_npy_to<'a>(mut writer: impl Write, m: impl Into<MatrixRef<'a>>) -> Result<()> {
    let d = m.into().dense()?;
    write(&mut writer, &d)
        .and_then(|()| writer.flush())
        .map_err(|e| stream_error("write_npy", &e))
}

fn write(w: &mut impl Write, d: &Dense) -> std::io::Result<()> {
    let (rows, cols) = d.shape();
    // The buffer as it is: a row-major matrix is written in C order, without a copy.
    let fortran = if d.layout() == Layout::ColMajor {
        "True"
    } else {
        "False"
    };
    let mut dict =
        format!("{{'descr': '<c16', 'fortran_order': {fortran}, 'shape': ({rows}, {cols}), }}");
    // Pad with spaces so that the data starts on a 64-byte boundary; end with a newline.
    let unpadded = MAGIC.len() + 2 + 2 + dict.len() + 1;
    dict.push_str(&" ".repeat((64 - unpadded % 64) % 64));
    dict.push('\n');
    w.write_all(MAGIC)?;
    w.write_all(&[1, 0])?;
    // The dict of two usizes is far below u16::MAX bytes.
    let len = u16::try_from(dict.len()).unwrap_or(u16::MAX);
    w.write_all(&len.to_le_bytes())?;
    w.write_all(dict.as_bytes())?;
    let mut buf = Vec::with_capacity(16 * rows.min(4096));
    let lanes = if d.buffer().nrows() == 0 {
        0
    } else {
        d.buffer().ncols()
    };
    for col in (0..lanes).map(|j| d.buffer_col(j)) {
        for chunk in col.chunks(4096) {
            buf.clear();
            for v in chunk {
                buf.extend_from_slice(&v.re.to_le_bytes());
                buf.extend_from_slice(&v.im.to_le_bytes());
            }
            w.write_all(&buf)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(descr: &str, fortran: bool, shape: &str, data: &[u8]) -> Vec<u8> {
        let dict = format!(
            "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}\n",
            if fortran { "True" } else { "False" }
        );
        let mut v = MAGIC.to_vec();
        v.extend_from_slice(&[1, 0]);
        v.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        v.extend_from_slice(dict.as_bytes());
        v.extend_from_slice(data);
        v
    }

    #[test]
    fn dtypes_orders_and_shapes() {
        let f8: Vec<u8> = [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let c_order = read_npy_from(npy("<f8", false, "(2, 3)", &f8).as_slice()).unwrap();
        assert_eq!(c_order.to_string(), "[[1, 2, 3], [4, 5, 6]]");
        let f_order = read_npy_from(npy("<f8", true, "(2, 3)", &f8).as_slice()).unwrap();
        assert_eq!(f_order.to_string(), "[[1, 3, 5], [2, 4, 6]]");
        // Each order is kept as the Dense's layout, and written back in it.
        assert_eq!(c_order.layout(), Layout::RowMajor);
        assert_eq!(f_order.layout(), Layout::ColMajor);
        for d in [&c_order, &f_order] {
            let mut bytes = Vec::new();
            write_npy_to(&mut bytes, d).unwrap();
            let header = String::from_utf8_lossy(&bytes[..64]).into_owned();
            let fortran = d.layout() == Layout::ColMajor;
            assert!(header.contains(&format!(
                "'fortran_order': {}",
                if fortran { "True" } else { "False" }
            )));
            let back = read_npy_from(bytes.as_slice()).unwrap();
            assert_eq!((&back, back.layout()), (d, d.layout()));
        }
        let be: Vec<u8> = [1.5f32, -2.0]
            .iter()
            .flat_map(|x| x.to_be_bytes())
            .collect();
        let c8 = read_npy_from(npy(">c8", false, "()", &be).as_slice()).unwrap();
        assert_eq!(c8.to_string(), "[[1.5-2i]]");
        let i2: Vec<u8> = [-3i16, 7].iter().flat_map(|x| x.to_le_bytes()).collect();
        let ket = read_npy_from(npy("<i2", false, "(2,)", &i2).as_slice()).unwrap();
        assert_eq!(ket.to_string(), "[[-3], [7]]");
        let u1 = read_npy_from(npy("|u1", false, "(1, 2)", &[255, 0]).as_slice()).unwrap();
        assert_eq!(u1.to_string(), "[[255, 0]]");
        let empty = read_npy_from(npy("<c16", false, "(0, 5)", &[]).as_slice()).unwrap();
        assert_eq!(empty.shape(), (0, 5));
    }

    #[test]
    fn bad_files_are_errors() {
        let f8 = 1.0f64.to_le_bytes();
        for (bytes, want) in [
            (b"\x93NUM".to_vec(), "ends inside the magic"),
            (b"PK\x03\x04\x00\x00\x00\x00".to_vec(), "not a .npy file"),
            (
                npy("<f8", false, "(2, 2)", &f8),
                "the file ends inside the data",
            ),
            (npy("|O", false, "(1,)", &[]), "dtype '|O' is not supported"),
            (npy("<f8", false, "(1, 1, 1)", &f8), "3 dimensions"),
            (npy("<f8", false, "(1, -1)", &f8), "bad dimension `-1`"),
            (npy("<f16", false, "(1,)", &f8), "not supported"),
        ] {
            let err = read_npy_from(bytes.as_slice()).unwrap_err().to_string();
            assert!(err.contains(want), "{err} lacks {want}");
        }
        let mut v = MAGIC.to_vec();
        v.extend_from_slice(&[2, 0, 0xff, 0xff, 0xff, 0x7f]);
        let err = read_npy_from(v.as_slice()).unwrap_err().to_string();
        assert!(err.contains("longer than"), "{err}");
        let huge = npy("<c16", false, "(100000000, 100000000)", &[]);
        assert!(matches!(
            read_npy_from(huge.as_slice()),
            Err(Error::TooLarge { .. })
        ));
        // The error names the matrix's shape, not that of its buffer (a C-order file is read
        // into the transposed buffer; a 1-d array is a ket).
        for (shape, fortran, want) in [
            ("(1152921504606846976,)", false, (1 << 60, 1)),
            ("(3, 1152921504606846976)", false, (3, 1 << 60)),
            ("(3, 1152921504606846976)", true, (3, 1 << 60)),
        ] {
            match read_npy_from(npy("<f8", fortran, shape, &f8).as_slice()) {
                Err(Error::TooLarge { shape, .. }) => assert_eq!(shape, want),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn round_trip_is_bit_exact() {
        let d = Dense::from_fn(3, 4, |i, j| c64::new(i as f64 / 3.0, -(j as f64) * 1e-300));
        let mut bytes = Vec::new();
        write_npy_to(&mut bytes, &d).unwrap();
        assert_eq!((bytes.len() - 12 * 16) % 64, 0);
        assert_eq!(read_npy_from(bytes.as_slice()).unwrap(), d);
    }
}
