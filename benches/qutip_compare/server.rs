//! The polymat side of the side-by-side benchmark against QuTiP (`docs/benchmarks.md`).
//!
//! A long-lived process driven by `benches/qutip_compare/polymat_plugin.py` through
//! `shared/bench/qutip_anchor.py`: the plugin writes a case's inputs to a file, asks this process
//! to load them, then asks it to run `number` calls and report the elapsed time, so the Python ↔
//! Rust round trip is never timed. One request per line on stdin, one reply per line on stdout:
//!
//! ```text
//! load VARIANT THREADS OP OUT SCALE_RE SCALE_IM PATH → ok ID   (or: unsupported / err MESSAGE)
//! time ID NUMBER                              → ok SECONDS     (NUMBER calls, back to back)
//! result ID PATH                              → ok scalar RE IM | ok matrix (written to PATH)
//! free ID                                     → ok
//! threads                                     → ok N           (polymat::threads())
//! malloc                                      → ok MODE        (see apply_malloc_mode)
//! ```
//!
//! Inputs are read once per PATH and shared by every case loaded from it (the n = 10 000 dense
//! inputs are 1.6 GB each); `free` drops a case, and the inputs go with their last case.
//! THREADS is the `polymat::set_threads` value the case's calls run with.
//!
//! Variants: `polymat` calls the public API (`polymat::add(&a, &b, out)`, ...), so it pays for
//! dispatch; `faer` and `sprs` call the underlying library directly on the same inputs (the
//! "raw kernel" baseline of the issue's targets). `OUT` is `Dense`, `CSR` or `-` (`Out::Auto`).
//!
//! File format (little endian), one block per matrix: a text line `Dense ROWS COLS` followed by
//! ROWS·COLS complex128 in column-major order, or `CSR ROWS COLS NNZ` followed by indptr
//! (ROWS+1 × i64), indices (NNZ × i64) and data (NNZ × complex128), or `Dia ROWS COLS NDIAG`
//! followed by the offsets (NDIAG × i64) and the diagonals (NDIAG × COLS complex128, scipy's
//! `dia_matrix.data` row by row). Results use the same format (a Dia result is written as CSR).

use std::collections::HashMap;
use std::hint::black_box;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::rc::Rc;
use std::time::Instant;

use faer::linalg::matmul::matmul as faer_matmul;
use faer::{Accum, Mat, Par};
use polymat::{Csr, Data, Dense, Dia, Kind, Out, c64};
use sprs::CsMat;

/// What a call returns, for the correctness check.
enum Value {
    Data(Data),
    Mat(Mat<c64>),
    Sparse(CsMat<c64>),
    Scalar(c64),
}

impl From<Data> for Value {
    fn from(d: Data) -> Value {
        Value::Data(d)
    }
}
impl From<Mat<c64>> for Value {
    fn from(m: Mat<c64>) -> Value {
        Value::Mat(m)
    }
}
impl From<CsMat<c64>> for Value {
    fn from(m: CsMat<c64>) -> Value {
        Value::Sparse(m)
    }
}
impl From<c64> for Value {
    fn from(v: c64) -> Value {
        Value::Scalar(v)
    }
}

type Res<T> = Result<T, String>;

/// A loaded case: a timing loop and a single evaluation, both over the same closure.
struct Case {
    time: Box<dyn Fn(u64) -> f64>,
    eval: Box<dyn Fn() -> Res<Value>>,
    threads: usize,
}

/// Builds a case from a call returning `Result<R, E>` or a plain value.
fn case<R, F>(f: F) -> Case
where
    R: IntoValue + 'static,
    F: Fn() -> R + 'static,
{
    let f = Rc::new(f);
    let g = Rc::clone(&f);
    Case {
        time: Box::new(move |number| {
            let start = Instant::now();
            for _ in 0..number {
                black_box(f());
            }
            start.elapsed().as_secs_f64()
        }),
        eval: Box::new(move || g().into_value()),
        threads: 1,
    }
}

/// A call's return value, with errors turned into messages.
trait IntoValue {
    fn into_value(self) -> Res<Value>;
}
impl<T: Into<Value>> IntoValue for polymat::Result<T> {
    fn into_value(self) -> Res<Value> {
        self.map(Into::into).map_err(|e| e.to_string())
    }
}
impl IntoValue for Mat<c64> {
    fn into_value(self) -> Res<Value> {
        Ok(self.into())
    }
}
impl IntoValue for CsMat<c64> {
    fn into_value(self) -> Res<Value> {
        Ok(self.into())
    }
}
/// A result vector, reported as an n×1 matrix.
struct Column(Vec<c64>);
impl IntoValue for Column {
    fn into_value(self) -> Res<Value> {
        Ok(Value::Mat(Mat::from_fn(self.0.len(), 1, |i, _| self.0[i])))
    }
}
impl IntoValue for c64 {
    fn into_value(self) -> Res<Value> {
        Ok(self.into())
    }
}

/// One input matrix as read from the plugin's file (a `Dense` or a `Csr`).
struct Input(Data);

impl Input {
    fn dense(&self) -> Option<&Dense> {
        self.0.downcast_ref::<Dense>()
    }
    fn csr(&self) -> Option<&Csr> {
        self.0.downcast_ref::<Csr>()
    }
}

fn read_line(r: &mut impl BufRead) -> Res<String> {
    let mut s = String::new();
    r.read_line(&mut s).map_err(|e| e.to_string())?;
    Ok(s.trim_end().to_owned())
}

fn read_f64s(r: &mut impl Read, n: usize) -> Res<Vec<f64>> {
    let mut buf = vec![0u8; n * 8];
    r.read_exact(&mut buf).map_err(|e| e.to_string())?;
    Ok(buf
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
        .collect())
}

/// `n` little-endian i64 values, each converted to `T` (an error names the value that does
/// not fit).
fn read_ints<T: TryFrom<i64>>(r: &mut impl Read, n: usize) -> Res<Vec<T>>
where
    T::Error: std::fmt::Display,
{
    let mut buf = vec![0u8; n * 8];
    r.read_exact(&mut buf).map_err(|e| e.to_string())?;
    buf.chunks_exact(8)
        .map(|b| T::try_from(i64::from_le_bytes(b.try_into().unwrap())).map_err(|e| e.to_string()))
        .collect()
}

fn read_usizes(r: &mut impl Read, n: usize) -> Res<Vec<usize>> {
    read_ints(r, n)
}

fn read_isizes(r: &mut impl Read, n: usize) -> Res<Vec<isize>> {
    read_ints(r, n)
}

fn read_c64s(r: &mut impl Read, n: usize) -> Res<Vec<c64>> {
    Ok(read_f64s(r, 2 * n)?
        .chunks_exact(2)
        .map(|p| c64::new(p[0], p[1]))
        .collect())
}

fn read_inputs(path: &str) -> Res<Vec<Input>> {
    let file = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let mut r = BufReader::new(file);
    let mut out = Vec::new();
    loop {
        let head = read_line(&mut r)?;
        if head.is_empty() {
            return Ok(out);
        }
        let f: Vec<&str> = head.split_whitespace().collect();
        let num = |i: usize| -> Res<usize> {
            f.get(i)
                .ok_or_else(|| format!("short header {head:?}"))?
                .parse()
                .map_err(|e| format!("{head:?}: {e}"))
        };
        let (rows, cols) = (num(1)?, num(2)?);
        match f[0] {
            "Dense" => {
                let v = read_c64s(&mut r, rows * cols)?;
                let d = Dense::from_col_major(rows, cols, &v).map_err(|e| e.to_string())?;
                out.push(Input(d.into()));
            }
            "CSR" => {
                let nnz = num(3)?;
                let indptr = read_usizes(&mut r, rows + 1)?;
                let indices = read_usizes(&mut r, nnz)?;
                let data = read_c64s(&mut r, nnz)?;
                let c = Csr::from_raw((rows, cols), indptr, indices, data)
                    .map_err(|e| e.to_string())?;
                out.push(Input(c.into()));
            }
            "Dia" => {
                let ndiag = num(3)?;
                let offsets = read_isizes(&mut r, ndiag)?;
                let data = read_c64s(&mut r, ndiag * cols)?;
                let d = Dia::new((rows, cols), offsets, data).map_err(|e| e.to_string())?;
                out.push(Input(d.into()));
            }
            other => return Err(format!("unknown block {other:?}")),
        }
    }
}

fn write_c64s(w: &mut impl Write, v: impl IntoIterator<Item = c64>) -> std::io::Result<()> {
    for x in v {
        w.write_all(&x.re.to_le_bytes())?;
        w.write_all(&x.im.to_le_bytes())?;
    }
    Ok(())
}

fn write_dense(w: &mut impl Write, m: faer::MatRef<'_, c64>) -> std::io::Result<()> {
    writeln!(w, "Dense {} {}", m.nrows(), m.ncols())?;
    for j in 0..m.ncols() {
        write_c64s(w, m.col(j).iter().copied())?;
    }
    Ok(())
}

fn write_csr(w: &mut impl Write, m: &CsMat<c64>) -> std::io::Result<()> {
    let m = if m.is_csr() { m.clone() } else { m.to_csr() };
    writeln!(w, "CSR {} {} {}", m.rows(), m.cols(), m.nnz())?;
    for &p in m.indptr().raw_storage() {
        w.write_all(&(p as i64).to_le_bytes())?;
    }
    for &i in m.indices() {
        w.write_all(&(i as i64).to_le_bytes())?;
    }
    write_c64s(w, m.data().iter().copied())
}

fn write_result(v: &Value, path: &str) -> Res<String> {
    let io = |e: std::io::Error| format!("{path}: {e}");
    let mut w = BufWriter::new(std::fs::File::create(path).map_err(io)?);
    match v {
        Value::Scalar(x) => return Ok(format!("scalar {:e} {:e}", x.re, x.im)),
        Value::Mat(m) => write_dense(&mut w, m.as_ref()).map_err(io)?,
        Value::Sparse(m) => write_csr(&mut w, m).map_err(io)?,
        Value::Data(d) => {
            if let Some(x) = d.downcast_ref::<Dense>() {
                write_dense(&mut w, x.as_ref()).map_err(io)?;
            } else if let Some(x) = d.downcast_ref::<Csr>() {
                write_csr(&mut w, x.as_csmat()).map_err(io)?;
            } else if d.kind() == Kind::DIA {
                let x: Csr = polymat::to_type(d).map_err(|e| e.to_string())?;
                write_csr(&mut w, x.as_csmat()).map_err(io)?;
            } else {
                return Err(format!("cannot export {d}"));
            }
        }
    }
    w.flush().map_err(io)?;
    Ok("matrix".to_owned())
}

fn parse_out(s: &str) -> Res<Out> {
    match s {
        "-" => Ok(Out::Auto),
        "Dense" => Ok(Out::Dense),
        "CSR" => Ok(Out::Csr),
        "Dia" => Ok(Out::Dia),
        other => Err(format!("unknown output type {other:?}")),
    }
}

/// The case for the public polymat API, or `None` if the op is not benchmarked.
fn polymat_case(op: &str, out: Out, s: c64, ins: &[Input]) -> Option<Case> {
    let d: Vec<Data> = ins.iter().map(|i| i.0.clone()).collect();
    let a = d.first()?.clone();
    let b = d.get(1).cloned();
    Some(match (op, b) {
        ("add", Some(b)) => case(move || polymat::add(&a, &b, out)),
        ("matmul", Some(b)) => case(move || polymat::matmul(&a, &b, out)),
        ("kron", Some(b)) => case(move || polymat::kron(&a, &b, out)),
        ("expect", Some(b)) => case(move || polymat::expect(&a, &b)),
        ("inner", Some(b)) => case(move || polymat::inner(&a, &b)),
        ("adjoint", None) => case(move || polymat::adjoint(&a, out)),
        ("transpose", None) => case(move || polymat::transpose(&a, out)),
        ("mul", None) => case(move || polymat::mul(&a, s, out)),
        ("trace", None) => case(move || polymat::trace(&a)),
        ("isherm", None) => {
            case(move || polymat::isherm(&a, 1e-12).map(|h| c64::from(f64::from(u8::from(h)))))
        }
        ("expm", None) => case(move || polymat::expm(&a, out)),
        ("to", None) => {
            let kind = match out {
                Out::Csr => Kind::CSR,
                Out::Dia => Kind::DIA,
                _ => Kind::DENSE,
            };
            case(move || polymat::to(kind, &a))
        }
        _ => return None,
    })
}

/// The faer parallelism matching polymat's thread setting.
fn par() -> Par {
    match polymat::threads() {
        1 => Par::Seq,
        t => Par::rayon(t),
    }
}

/// Input `k` as a faer matrix (checked Dense when the case was built).
fn mat(ins: &[Input], k: usize) -> &Mat<c64> {
    ins[k].dense().expect("a Dense input").as_mat()
}

/// Input `k` as a sprs matrix (checked Csr when the case was built).
fn csmat(ins: &[Input], k: usize) -> &CsMat<c64> {
    ins[k].csr().expect("a Csr input").as_csmat()
}

// The raw faer and sprs cases read the very buffers the polymat case reads, as the anchor's
// numpy and QuTiP variants share one array: whichever variant runs first leaves the inputs in
// cache for the next (docs/benchmarks.md, "The order of the variants").

/// The same operation through faer alone (Dense inputs, Dense result).
fn faer_case(op: &str, s: c64, ins: &Rc<Vec<Input>>) -> Option<Case> {
    if ins.is_empty() || ins.iter().any(|i| i.dense().is_none()) {
        return None;
    }
    let two = ins.len() > 1;
    let ins = Rc::clone(ins);
    Some(match (op, two) {
        ("add", true) => case(move || mat(&ins, 0) + mat(&ins, 1)),
        ("matmul", true) => case(move || {
            let (a, b) = (mat(&ins, 0), mat(&ins, 1));
            let mut c = Mat::<c64>::zeros(a.nrows(), b.ncols());
            faer_matmul(c.as_mut(), Accum::Replace, a, b, c64::new(1.0, 0.0), par());
            c
        }),
        ("kron", true) => case(move || {
            let (a, b) = (mat(&ins, 0), mat(&ins, 1));
            let mut c = Mat::<c64>::zeros(a.nrows() * b.nrows(), a.ncols() * b.ncols());
            faer::linalg::kron::kron(c.as_mut(), a.as_ref(), b.as_ref());
            c
        }),
        ("expect", true) => case(move || {
            let (a, b) = (mat(&ins, 0), mat(&ins, 1));
            let mut ab = Mat::<c64>::zeros(a.nrows(), 1);
            faer_matmul(ab.as_mut(), Accum::Replace, a, b, c64::new(1.0, 0.0), par());
            b.col(0).adjoint() * ab.col(0)
        }),
        ("inner", true) => case(move || mat(&ins, 0).col(0).adjoint() * mat(&ins, 1).col(0)),
        ("adjoint", false) => case(move || mat(&ins, 0).adjoint().to_owned()),
        ("transpose", false) => case(move || mat(&ins, 0).transpose().to_owned()),
        ("mul", false) => case(move || mat(&ins, 0) * faer::Scale(s)),
        ("trace", false) => case(move || mat(&ins, 0).diagonal().column_vector().sum()),
        _ => return None,
    })
}

/// The same operation through sprs alone (Csr inputs; Csr·ket uses sprs's CSR × vector).
fn sprs_case(op: &str, s: c64, ins: &Rc<Vec<Input>>) -> Option<Case> {
    ins.first()?.csr()?;
    let b = ins.get(1).map(|b| (b.csr().is_some(), b.dense().cloned()));
    let ins = Rc::clone(ins);
    Some(match (op, b) {
        ("add", Some((true, _))) => case(move || csmat(&ins, 0) + csmat(&ins, 1)),
        ("matmul", Some((true, _))) => case(move || csmat(&ins, 0) * csmat(&ins, 1)),
        ("matmul", Some((_, Some(b)))) if b.shape().1 == 1 => {
            let x = b.col(0).to_vec();
            case(move || {
                let a = csmat(&ins, 0);
                let mut y = vec![c64::new(0.0, 0.0); a.rows()];
                sprs::prod::mul_acc_mat_vec_csr(a.view(), &x[..], &mut y[..]);
                Column(y)
            })
        }
        ("expect", Some((_, Some(b)))) => {
            let x = b.col(0).to_vec();
            case(move || {
                let a = csmat(&ins, 0);
                let mut y = vec![c64::new(0.0, 0.0); a.rows()];
                sprs::prod::mul_acc_mat_vec_csr(a.view(), &x[..], &mut y[..]);
                x.iter().zip(&y).map(|(p, q)| p.conj() * q).sum::<c64>()
            })
        }
        ("kron", Some((true, _))) => {
            case(move || sprs::kronecker_product(csmat(&ins, 0).view(), csmat(&ins, 1).view()))
        }
        ("adjoint", None) => {
            case(move || csmat(&ins, 0).map(|x| x.conj()).transpose_into().to_csr())
        }
        ("transpose", None) => case(move || csmat(&ins, 0).transpose_view().to_csr()),
        ("mul", None) => case(move || csmat(&ins, 0).map(|x| s * x)),
        ("trace", None) => case(move || csmat(&ins, 0).diag().data().iter().sum::<c64>()),
        _ => return None,
    })
}

/// The allocator setting `qutip_anchor.py --malloc reuse` (its default) applies to its own
/// process: glibc's `mallopt(M_MMAP_MAX, 0)` and `mallopt(M_TRIM_THRESHOLD, 2³¹ − 1)`, so large
/// outputs reuse already-faulted heap pages instead of fresh `mmap`s. Applied here too so both
/// sides of the comparison allocate alike; `POLYMAT_BENCH_MALLOC=default` skips it.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn apply_malloc_mode() -> &'static str {
    unsafe extern "C" {
        fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
    }
    const M_TRIM_THRESHOLD: std::ffi::c_int = -1;
    const M_MMAP_MAX: std::ffi::c_int = -4;
    if std::env::var("POLYMAT_BENCH_MALLOC").as_deref() == Ok("default") {
        return "default";
    }
    // SAFETY: mallopt only changes glibc allocator parameters; it is called before any other
    // thread exists.
    let ok = unsafe { mallopt(M_MMAP_MAX, 0) == 1 && mallopt(M_TRIM_THRESHOLD, i32::MAX) == 1 };
    if ok {
        "reuse"
    } else {
        "reuse requested, mallopt failed"
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn apply_malloc_mode() -> &'static str {
    "default (not glibc)"
}

/// Minor page faults of this process so far (`/proc/self/stat` field 10; 0 where unavailable).
fn minor_faults() -> u64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = &s[s.rfind(')')? + 2..];
            rest.split_whitespace().nth(7)?.parse().ok()
        })
        .unwrap_or(0)
}

fn main() {
    let malloc = apply_malloc_mode();
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    let mut cases: HashMap<u64, Case> = HashMap::new();
    // The inputs of the case being loaded, by file; dropped when a different file is loaded.
    let mut inputs: Option<(String, Rc<Vec<Input>>)> = None;
    let mut next_id = 0u64;
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let f: Vec<&str> = line.split_whitespace().collect();
        let reply = match f.as_slice() {
            ["load", variant, threads, op, out, re, im, path] => (|| -> Res<String> {
                let out = parse_out(out)?;
                let threads: usize = threads.parse().map_err(|e| format!("{e}"))?;
                let s = c64::new(
                    re.parse().map_err(|e| format!("{e}"))?,
                    im.parse().map_err(|e| format!("{e}"))?,
                );
                let ins = match &inputs {
                    Some((p, ins)) if p == path => Rc::clone(ins),
                    _ => {
                        inputs = None;
                        let ins = Rc::new(read_inputs(path)?);
                        inputs = Some(((*path).to_owned(), Rc::clone(&ins)));
                        ins
                    }
                };
                let c = match *variant {
                    "polymat" => polymat_case(op, out, s, &ins),
                    "faer" => faer_case(op, s, &ins),
                    "sprs" => sprs_case(op, s, &ins),
                    other => return Err(format!("unknown variant {other:?}")),
                };
                Ok(match c {
                    Some(mut c) => {
                        c.threads = threads;
                        next_id += 1;
                        cases.insert(next_id, c);
                        format!("ok {next_id}")
                    }
                    None => "unsupported".to_owned(),
                })
            })(),
            ["time", id, number] => (|| -> Res<String> {
                let c = cases
                    .get(&id.parse().map_err(|e| format!("{e}"))?)
                    .ok_or("no such id")?;
                let n: u64 = number.parse().map_err(|e| format!("{e}"))?;
                polymat::set_threads(c.threads);
                let faults = minor_faults();
                let t = (c.time)(n);
                // The raw `faer` variants leave the AVX upper state dirty (see
                // `polymat::clear_upper_vector_state`); every timed request starts clean.
                polymat::clear_upper_vector_state();
                if std::env::var_os("POLYMAT_BENCH_FAULTS").is_some() {
                    let per_call = minor_faults().saturating_sub(faults) as f64 / n.max(1) as f64;
                    eprintln!(
                        "[server] case {id}: {n} calls, {:.3e} s/call, {per_call:.1} minor faults/call",
                        t / n.max(1) as f64
                    );
                }
                Ok(format!("ok {t:e}"))
            })(),
            ["result", id, path] => (|| -> Res<String> {
                let c = cases
                    .get(&id.parse().map_err(|e| format!("{e}"))?)
                    .ok_or("no such id")?;
                Ok(format!("ok {}", write_result(&(c.eval)()?, path)?))
            })(),
            ["free", id] => {
                cases.remove(&id.parse().unwrap_or(0));
                if cases.is_empty() {
                    inputs = None;
                }
                Ok("ok".to_owned())
            }
            ["threads"] => Ok(format!("ok {}", polymat::threads())),
            ["malloc"] => Ok(format!("ok {malloc}")),
            _ => Err(format!("bad request {line:?}")),
        };
        let reply = reply.unwrap_or_else(|e| format!("err {}", e.replace('\n', " ")));
        if writeln!(stdout, "{reply}")
            .and_then(|()| stdout.flush())
            .is_err()
        {
            break;
        }
    }
}
