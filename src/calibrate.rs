//! A quick measurement of the engine's thresholds on the machine it runs on, for a program to
//! make at start-up (issue 15, item 7: "a quick measurement at first use").
//!
//! The constants in [`crate::engine::thresholds`] were measured on two cores; on a 16-core
//! host Csr·ket paid from 8 190 stored entries on all cores, far below them.
//! `benches/tools/engine_calibrate` measures every family in detail and writes a calibration file
//! (`POLYMAT_THRESHOLDS`); [`measure_thresholds`] makes a shorter version of the same
//! measurement in the process itself, within a time budget, and returns thresholds to install
//! with [`set_thresholds`](crate::engine::set_thresholds):
//!
//! ```no_run
//! use std::time::Duration;
//!
//! let t = polymat::calibrate::measure_thresholds(polymat::threads(), Duration::from_secs(2))?;
//! polymat::engine::set_thresholds(Some(t));
//! // Save it to skip the measurement next time: `Thresholds::load` reads this text back.
//! std::fs::write("polymat-thresholds.txt", t.to_string())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! It is not made on its own at first use: it changes process-wide settings while it runs
//! (the thread count, [`set_force_parallel`](crate::engine::set_force_parallel)), which would
//! slow, though never falsify, what other threads compute meanwhile, and its timings are only
//! as good as the machine is quiet. A program calls it when it knows both.

use std::hint::black_box;
use std::time::{Duration, Instant};

use crate::dispatch::Out;
use crate::engine::{self, Thresholds};
use crate::error::{Error, Result};
use crate::ops;
use crate::scalar::c64;
use crate::storage::{Csr, Data, Dense};

const OP: &str = "measure_thresholds";

/// Parallel must beat serial by this factor, at a size and the next, to count as paying.
const GAIN: f64 = 1.1;

/// Held while a measurement runs.
static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Milliseconds of calls before a timing (the pool's threads wake, the caches fill).
const WARM_MS: u64 = 2;

/// A workload of a given size: the work it really does, and the call to time.
type Timed = (usize, Box<dyn Fn() -> Result<()>>);

/// A builder of a family's workload for a work of about `w` units.
type Make = fn(usize) -> Result<Timed>;

/// A family's workload: its name, its first and last size (log₂ of the work), its builder.
type Workload = (&'static str, u32, u32, Make);

/// Measures, for each family of the execution engine, the size from which `threads` threads
/// beat one by 10 % at that size and the next one, and returns those sizes as thresholds
/// measured with `threads` threads ([`Thresholds::measured_threads`]). Each family times the
/// workload of `benches/tools/engine_calibrate` at doubling sizes (up to 2²¹ entries, 2²⁴
/// multiply-adds for Dense·Dense), each time the median of five runs of at least 0.2 ms after
/// 2 ms of warm-up; a family where parallel never pays up to its largest size gets twice that
/// size. On two cores, with the pool's threads pinned
/// ([`pin_threads`](crate::engine::pin_threads)), it took 0.30–0.32 s.
///
/// The timings are those of the rayon pool as it is. Where the scheduler at times keeps the
/// pool's threads on one CPU (some virtual machines: see
/// [`pin_threads`](crate::engine::pin_threads)), parallel calls are then timed at serial speed
/// or worse, and the thresholds come out larger, so safe but late (unpinned there,
/// `ELEMENTWISE` came out at 2²¹ in three runs of three; pinned, at 2¹⁶–2¹⁷ in three of
/// three, where the detailed calibration finds 2¹⁶).
///
/// While it runs, polymat's thread count and
/// [`set_force_parallel`](crate::engine::set_force_parallel) are changed for the whole
/// process; both are restored before it returns, and what other threads compute meanwhile
/// stays correct. Concurrent calls run one after the other. The thresholds in force are not
/// changed: install the result with [`set_thresholds`](crate::engine::set_thresholds).
///
/// # Errors
/// [`Error::InvalidArgument`] if `threads` is below 2 or more than the current rayon pool has
/// (parallel cannot be measured with fewer than two, nor with threads that do not exist), if
/// `budget` is zero, or if it runs out before every family is measured (the message names the
/// family; no partial result, since the thread count applies to every value);
/// [`Error::TooLarge`] if a workload cannot be allocated.
pub fn measure_thresholds(threads: usize, budget: Duration) -> Result<Thresholds> {
    let pool = rayon::current_num_threads();
    if threads < 2 || threads > pool {
        return Err(Error::argument(
            OP,
            format!("threads must be from 2 to the rayon pool's {pool}, not {threads}"),
        ));
    }
    if budget.is_zero() {
        return Err(Error::argument(OP, "the time budget is zero"));
    }
    let workloads: [Workload; 5] = [
        ("ELEMENTWISE", 12, 21, add_dense),
        ("TRANSPOSE", 12, 21, adjoint_dense),
        ("CSR_ROWS", 12, 21, csr_ket),
        ("REDUCTION", 12, 21, expect_csr),
        ("MATMUL", 15, 24, dense_dense),
    ];
    // One measurement at a time: two interleaved would each restore what the other had set
    // (and could leave the parallel paths forced for good).
    let _one = MEASURING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let deadline = Instant::now().checked_add(budget);
    let saved = (engine::threads_setting(), engine::force_parallel());
    engine::set_force_parallel(true);
    let mut found = [0; 5];
    let mut outcome = Ok(());
    for ((name, first, last, make), slot) in workloads.into_iter().zip(&mut found) {
        match crossover(threads, deadline, first..=last, make) {
            Ok(Some(v)) => *slot = v.max(1),
            Ok(None) => {
                outcome = Err(Error::argument(
                    OP,
                    format!("the time budget of {budget:?} ran out before {name} was measured"),
                ));
                break;
            }
            Err(e) => {
                outcome = Err(e);
                break;
            }
        }
    }
    engine::set_threads(saved.0);
    engine::set_force_parallel(saved.1);
    outcome?;
    let [elementwise, transpose, csr_rows, reduction, matmul] = found;
    Ok(Thresholds {
        elementwise,
        transpose,
        csr_rows,
        reduction,
        matmul,
        measured_threads: threads,
    })
}

/// The first work from which `threads` threads beat one by [`GAIN`] there and at the next size
/// (at the last size, there alone), over the sizes 2^`sizes`; twice the largest work if none;
/// `None` if the deadline passed first (`None`: no deadline).
fn crossover(
    threads: usize,
    deadline: Option<Instant>,
    sizes: std::ops::RangeInclusive<u32>,
    make: Make,
) -> Result<Option<usize>> {
    let mut candidate = None;
    let mut largest = 0;
    for e in sizes {
        if deadline.is_some_and(|d| Instant::now() > d) {
            return Ok(None);
        }
        let (work, call) = make(1 << e)?;
        engine::set_threads(1);
        let serial = median_time(&*call)?;
        engine::set_threads(threads);
        let parallel = median_time(&*call)?;
        largest = work;
        if serial >= GAIN * parallel {
            match candidate {
                Some(w) => return Ok(Some(w)),
                None => candidate = Some(work),
            }
        } else {
            candidate = None;
        }
    }
    Ok(Some(candidate.unwrap_or(largest.saturating_mul(2))))
}

/// The median of five timings of `call`, each of enough calls to last at least 0.2 ms, after
/// [`WARM_MS`] of calls, in seconds a call.
fn median_time(call: &dyn Fn() -> Result<()>) -> Result<f64> {
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_millis(WARM_MS) {
        call()?;
    }
    let mut calls = 1u32;
    loop {
        let t = Instant::now();
        for _ in 0..calls {
            call()?;
        }
        if t.elapsed() >= Duration::from_micros(200) || calls >= 1 << 20 {
            break;
        }
        calls *= 2;
    }
    let mut times = [0.0; 5];
    for slot in &mut times {
        let t = Instant::now();
        for _ in 0..calls {
            call()?;
        }
        *slot = t.elapsed().as_secs_f64() / f64::from(calls);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[2])
}

/// Small integers as values: no overflow, no denormals, whatever the size.
fn value(t: usize) -> c64 {
    c64::new(((t * 7919) % 13) as f64 - 6.0, ((t * 104_729) % 11) as f64)
}

fn dense(m: usize, n: usize) -> Data {
    Dense::from_fn(m, n, |i, j| value(i * n + j)).into()
}

/// An n × n Csr with 10 entries a row at scattered columns (t·2654435761 mod n for the row's
/// entries t, sorted and without repeats).
fn csr(n: usize) -> Result<Data> {
    let (rows, cols): (Vec<usize>, Vec<usize>) = (0..n * 10)
        .map(|t| (t / 10, t.wrapping_mul(2_654_435_761) % n))
        .unzip();
    let vals: Vec<c64> = (0..n * 10).map(value).collect();
    Ok(Csr::from_triplets((n, n), &rows, &cols, &vals)?.into())
}

/// The side of a square matrix of about `w` entries.
fn side(w: usize) -> usize {
    ((w as f64).sqrt() as usize).max(2)
}

fn add_dense(w: usize) -> Result<Timed> {
    let n = side(w);
    let (a, b) = (dense(n, n), dense(n, n));
    let call = move || ops::add(&a, &b, Out::Auto).map(|r| drop(black_box(r)));
    Ok((n * n, Box::new(call)))
}

fn adjoint_dense(w: usize) -> Result<Timed> {
    let n = side(w);
    let a = dense(n, n);
    let call = move || ops::adjoint(&a, Out::Auto).map(|r| drop(black_box(r)));
    Ok((n * n, Box::new(call)))
}

fn csr_ket(w: usize) -> Result<Timed> {
    let n = (w / 10).max(2);
    let (a, x) = (csr(n)?, dense(n, 1));
    let call = move || ops::matmul(&a, &x, Out::Auto).map(|r| drop(black_box(r)));
    Ok((10 * n, Box::new(call)))
}

fn expect_csr(w: usize) -> Result<Timed> {
    let n = (w / 10).max(2);
    let (a, x) = (csr(n)?, dense(n, 1));
    let call = move || {
        ops::expect(&a, &x).map(|r| {
            black_box(r);
        })
    };
    Ok((10 * n, Box::new(call)))
}

fn dense_dense(w: usize) -> Result<Timed> {
    let n = ((w as f64).cbrt().round() as usize).max(2);
    let (a, b) = (dense(n, n), dense(n, n));
    let call = move || ops::matmul(&a, &b, Out::Auto).map(|r| drop(black_box(r)));
    Ok((n * n * n, Box::new(call)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Arguments that cannot be measured are refused before any setting is touched.
    #[test]
    fn unmeasurable_arguments_are_refused() {
        let pool = rayon::current_num_threads();
        for threads in [0, 1, pool + 1, usize::MAX] {
            let e = measure_thresholds(threads, Duration::from_millis(10)).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument { .. }), "{threads}: {e}");
        }
        let e = measure_thresholds(2, Duration::ZERO).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    }

    /// The workloads do the work they report, about what was asked.
    #[test]
    fn workloads_report_their_work() {
        for make in [add_dense, adjoint_dense, csr_ket, expect_csr] {
            let (work, call) = make(1 << 12).unwrap();
            assert!((3000..=5000).contains(&work), "{work}");
            call().unwrap();
        }
        let (work, call) = dense_dense(1 << 15).unwrap();
        assert_eq!(work, 32 * 32 * 32);
        call().unwrap();
    }
}
