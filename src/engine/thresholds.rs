//! The thresholds of the execution engine: from which size each kernel family runs in parallel.
//!
//! The constants below were measured on a 2-core machine with
//! `cargo run --release --example engine_calibrate` (1 vs 2 threads, the run is in
//! `docs/benchmarks.md`): each is the size from which two threads beat one by at least 10 % at
//! that size and every larger one, rounded to a power of two. Below them the rayon hand-off
//! (about 15–20 µs on that machine) costs more than the second core saves.
//!
//! Other machines differ in both directions (on a 16-core host Csr·ket paid from 8 190 stored
//! entries, far below [`CSR_ROWS`]), so the thresholds in force are [`Thresholds::current`]:
//! these constants, unless a calibration file named by [`THRESHOLDS_ENV`] or a call to
//! [`set_thresholds`] says otherwise. `engine_calibrate --write FILE` measures the machine it
//! runs on and writes such a file, with the thread count T it compared against one thread
//! (`THREADS`): a kernel at its threshold then gets T workers (see `engine::workers`).
//! [`crate::calibrate::measure_thresholds`] makes a shorter measurement in the program itself,
//! at start-up, for [`set_thresholds`].

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use super::Family;
use crate::error::{Error, Result};

/// Dense elementwise (add, scale, conjugate, kron, Csr → Dense fill): entries of the result.
/// Measured crossover 65 536 entries (256×256): 1.22× there, 1.5–2.0× above.
pub const ELEMENTWISE: usize = 1 << 16;
/// Dense transpose and adjoint: entries of the result. Memory-bound and noisy; two threads
/// gain 1.3–1.6× from 524 288 entries (about 724×724). The Csr transpose by column blocks
/// counts its stored entries against it too (it starts at 2¹⁹ entries; two workers there,
/// 6·10⁵ entries, 1.3–1.8× over one).
pub const TRANSPOSE: usize = 1 << 19;
/// Csr row kernels (Csr·Dense, Csr + Csr; the Csr Kronecker product counts half a unit for
/// each entry it writes, Csr·Csr 8 units for each multiply-add): stored entries touched. Two
/// threads gain 1.14–2.8× from 524 280 (Csr `kron`: 1.55–1.68× from 1 040 000 entries, also
/// when every result is a fresh mapping, which made 780 000 0.89×; Csr·Csr 1.1–1.15× from
/// 6–8·10⁴ multiply-adds, 1.5× from 10⁵ on random rows, and never below 2¹⁵ multiply-adds
/// whatever this value).
pub const CSR_ROWS: usize = 1 << 19;
/// Reductions (expectation values, traces, Frobenius norms): entries read. 1.12–2.5× from
/// 524 280.
pub const REDUCTION: usize = 1 << 19;
/// `faer` dense products: complex multiply-adds. From 8 388 608 (about 203³). Measured
/// 1.54–1.97× from 128³ before the 3M product (`ops::matmul::gemm3m`) split its real products in
/// pieces; with the pieces, two threads at 128³ took 0.43 ms against 0.19 on one (a parallel
/// region per pass), and with one region 0.26 ms; 200³ 0.63 against 0.66, 256³ 0.98
/// against 1.34 ms (1.37×), 500³ 1.78× (`profile_op`). On a 16-core host,
/// `engine_calibrate 16 --policy` at the old value found 128³ on two workers 0.65× serial
/// (docs/benchmarks/engine.md).
pub const MATMUL: usize = 1 << 23;
/// The thread count the constants above were measured with (1 vs 2 threads).
pub const MEASURED_THREADS: usize = 2;

/// Environment variable naming a calibration file, read on the first parallel decision when
/// [`set_thresholds`] has not been called (format: [`Thresholds::parse`]).
pub const THRESHOLDS_ENV: &str = "POLYMAT_THRESHOLDS";

/// The size from which each kernel family runs in parallel, in the units of work the family
/// counts (see the constants of this module). Every value is at least 1.
///
/// ```
/// use polymat::engine::Thresholds;
///
/// let t = Thresholds::parse("# engine_calibrate, 1 vs 16 threads\nCSR_ROWS = 8192\n")?;
/// assert_eq!(t.csr_rows, 8192);
/// assert_eq!(t.matmul, polymat::engine::thresholds::MATMUL); // not in the file: the default
/// assert_eq!(Thresholds::parse(&t.to_string())?, t);
/// assert!(Thresholds::parse("MATMUL = 0").is_err());
/// # Ok::<(), polymat::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Thresholds {
    /// See [`ELEMENTWISE`].
    pub elementwise: usize,
    /// See [`TRANSPOSE`].
    pub transpose: usize,
    /// See [`CSR_ROWS`].
    pub csr_rows: usize,
    /// See [`REDUCTION`].
    pub reduction: usize,
    /// See [`MATMUL`].
    pub matmul: usize,
    /// The thread count T the values were measured with (each is where T threads first beat
    /// one): at a family's threshold the engine uses T workers, then one more per T-th of the
    /// threshold of further work. See [`MEASURED_THREADS`]; at least 2 in effect.
    pub measured_threads: usize,
}

impl Default for Thresholds {
    /// The constants of this module (measured on two cores).
    fn default() -> Thresholds {
        Thresholds {
            elementwise: ELEMENTWISE,
            transpose: TRANSPOSE,
            csr_rows: CSR_ROWS,
            reduction: REDUCTION,
            matmul: MATMUL,
            measured_threads: MEASURED_THREADS,
        }
    }
}

const NAMES: [&str; 6] = [
    "ELEMENTWISE",
    "TRANSPOSE",
    "CSR_ROWS",
    "REDUCTION",
    "MATMUL",
    "THREADS",
];

impl Thresholds {
    fn as_array(self) -> [usize; 6] {
        [
            self.elementwise,
            self.transpose,
            self.csr_rows,
            self.reduction,
            self.matmul,
            self.measured_threads,
        ]
    }

    fn from_array(v: [usize; 6]) -> Thresholds {
        Thresholds {
            elementwise: v[0],
            transpose: v[1],
            csr_rows: v[2],
            reduction: v[3],
            matmul: v[4],
            measured_threads: v[5],
        }
    }

    /// Reads a calibration file's text: one `NAME = value` per line (`ELEMENTWISE`,
    /// `TRANSPOSE`, `CSR_ROWS`, `REDUCTION`, `MATMUL`, and `THREADS` for
    /// [`measured_threads`](Thresholds::measured_threads); any case), `#` comments and blank
    /// lines ignored; a name not given keeps its default. `THREADS` applies to every value, the
    /// defaults included: a file that sets it should name every family (`engine_calibrate
    /// --write` does).
    ///
    /// # Errors
    /// [`Error::Format`] naming the line for an unknown name, a missing `=`, a value that is
    /// not a positive integer, or a name given twice.
    pub fn parse(text: &str) -> Result<Thresholds> {
        let mut v = Thresholds::default().as_array();
        let mut seen = [false; 6];
        for (i, raw) in text.lines().enumerate() {
            let bad = |reason: String| Error::Format {
                format: "thresholds",
                line: Some(i + 1),
                reason,
            };
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let (name, value) = line
                .split_once('=')
                .ok_or_else(|| bad(format!("expected NAME = value, got {line:?}")))?;
            let name = name.trim();
            let k = NAMES
                .iter()
                .position(|n| n.eq_ignore_ascii_case(name))
                .ok_or_else(|| bad(format!("unknown family {name:?} (known: {NAMES:?})")))?;
            if std::mem::replace(&mut seen[k], true) {
                return Err(bad(format!("{} is given twice", NAMES[k])));
            }
            v[k] = value
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|&x| x > 0)
                .ok_or_else(|| bad(format!("{}: not a positive integer: {value:?}", NAMES[k])))?;
        }
        Ok(Thresholds::from_array(v))
    }

    /// Reads a calibration file (see [`Thresholds::parse`]).
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be read; those of [`Thresholds::parse`].
    pub fn load(path: impl AsRef<std::path::Path>) -> Result<Thresholds> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
            op: "Thresholds::load".to_owned(),
            path: path.display().to_string(),
            kind: e.kind(),
            message: e.to_string(),
        })?;
        Thresholds::parse(&text)
    }

    /// The thresholds in force: those of [`set_thresholds`], else those of the file named by
    /// [`THRESHOLDS_ENV`] (read once), else the defaults. A file that cannot be read or parsed
    /// leaves the defaults in force; [`Thresholds::from_env`] says why.
    pub fn current() -> Thresholds {
        Thresholds::from_array(std::array::from_fn(value))
    }

    /// The thresholds of the file named by [`THRESHOLDS_ENV`]: `Ok(None)` when it is not set.
    ///
    /// # Errors
    /// Those of [`Thresholds::load`].
    pub fn from_env() -> Result<Option<Thresholds>> {
        match std::env::var_os(THRESHOLDS_ENV) {
            Some(path) if !path.is_empty() => Thresholds::load(path).map(Some),
            _ => Ok(None),
        }
    }
}

impl std::fmt::Display for Thresholds {
    /// The calibration-file form, one `NAME = value` per line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (name, v) in NAMES.iter().zip(self.as_array()) {
            writeln!(f, "{name} = {v}")?;
        }
        Ok(())
    }
}

/// The thresholds in force, one per family (in `NAMES` order).
static VALUES: [AtomicUsize; 6] = [const { AtomicUsize::new(0) }; 6];
/// 0: not decided (the first read consults the environment); 1: decided.
static STATE: AtomicU8 = AtomicU8::new(0);

/// Replaces the thresholds in force for the whole process (`None`: back to the file named by
/// [`THRESHOLDS_ENV`], else the defaults). Calls in flight keep the values they read.
///
/// ```
/// use polymat::engine::{Thresholds, set_thresholds};
///
/// set_thresholds(Some(Thresholds { csr_rows: 8192, ..Thresholds::default() }));
/// assert_eq!(Thresholds::current().csr_rows, 8192);
/// set_thresholds(None);
/// ```
pub fn set_thresholds(t: Option<Thresholds>) {
    let t = t.unwrap_or_else(|| Thresholds::from_env().ok().flatten().unwrap_or_default());
    for (slot, v) in VALUES.iter().zip(t.as_array()) {
        slot.store(v.max(1), Ordering::Relaxed);
    }
    STATE.store(1, Ordering::Release);
}

/// Threshold `k`, deciding from the environment on first use.
#[inline]
fn value(k: usize) -> usize {
    if STATE.load(Ordering::Acquire) == 0 {
        decide();
    }
    VALUES[k].load(Ordering::Relaxed).max(1)
}

#[cold]
fn decide() {
    let t = Thresholds::from_env().ok().flatten().unwrap_or_default();
    // Only the first decision writes; a concurrent set_thresholds has already set STATE.
    if STATE.load(Ordering::Acquire) == 0 {
        for (slot, v) in VALUES.iter().zip(t.as_array()) {
            let _ = slot.compare_exchange(0, v.max(1), Ordering::Relaxed, Ordering::Relaxed);
        }
        STATE.store(1, Ordering::Release);
    }
}

/// The thread count the thresholds in force were measured with (at least 2).
#[inline]
pub(crate) fn measured_threads() -> usize {
    value(5).max(2)
}

/// The threshold in force for `family`.
#[inline]
pub(crate) fn of(family: Family) -> usize {
    value(match family {
        Family::Elementwise => 0,
        Family::Transpose => 1,
        Family::CsrRows => 2,
        Family::Reduction => 3,
        Family::Matmul => 4,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_reads_names_comments_and_defaults() {
        let t = Thresholds::parse(
            "# measured on a 16-core host\n\n  csr_rows = 8192   # Csr·ket\nMATMUL=33554432\n",
        )
        .unwrap();
        assert_eq!(t.csr_rows, 8192);
        assert_eq!(t.matmul, 1 << 25);
        assert_eq!(t.elementwise, ELEMENTWISE);
        assert_eq!(t.measured_threads, MEASURED_THREADS);
        assert_eq!(Thresholds::parse(&t.to_string()).unwrap(), t);
        let t = Thresholds::parse("THREADS = 16\nCSR_ROWS = 8190").unwrap();
        assert_eq!((t.measured_threads, t.csr_rows), (16, 8190));
        assert_eq!(Thresholds::parse(&t.to_string()).unwrap(), t);
    }

    #[test]
    fn parse_refuses_bad_lines_with_their_number() {
        for (text, line) in [
            ("MATMUL = 0", 1),
            ("\nMATMUL = -3", 2),
            ("CSR_ROWS 10", 1),
            ("GEMV = 10", 1),
            ("MATMUL = 10\nmatmul = 20", 2),
            ("MATMUL = 1e6", 1),
        ] {
            match Thresholds::parse(text) {
                Err(Error::Format { line: Some(l), .. }) => assert_eq!(l, line, "{text:?}"),
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn load_reports_a_missing_file() {
        let e = Thresholds::load("/nonexistent/polymat-thresholds").unwrap_err();
        assert!(matches!(e, Error::Io { .. }), "{e}");
    }
}
