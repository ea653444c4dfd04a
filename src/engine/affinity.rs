//! Each thread of the rayon pool on a CPU of its own ([`pin_threads`]), opt-in.
//!
//! On a 2-core virtual machine, Linux's scheduler at times keeps both threads of the rayon
//! pool on one CPU for milliseconds at a time, while the other CPU idles. `benches/tools/pool_join`
//! (no polymat kernel) times `rayon::join` of two 30 µs loops from outside the pool, in 40
//! windows of 20 calls, each after 2 ms of serial work: 22–36 of the 40 windows took 80 µs a
//! call or more in each of seven runs (both loops on one CPU), the rest mostly 36–56 µs.
//! With each pool thread pinned to its own CPU, none did in seven runs
//! (`docs/benchmarks.md`). This was the "one pool thread runs everything" mode that parallel
//! Csr·Csr, Csr·ket and the thresholds' calibration kept meeting there.
//!
//! Pinning is a choice for the program, not for a library: it fights other processes and
//! pools for the same CPUs, and a cgroup may move the process. So polymat never pins on its
//! own; a program that owns the machine (a benchmark, a batch job) calls [`pin_threads`] once.

use crate::error::{Error, Result};

const OP: &str = "pin_threads";

/// Pins thread `i` of the current rayon pool to the `i`-th CPU (modulo their count) of those
/// the calling thread may run on (`pin = true`), or lets every pool thread run on all of
/// those again (`pin = false`). Returns the number of pool threads set. Linux only.
///
/// Call it outside any parallel work, from a thread that may run on every CPU the pool should
/// use (usually the main thread, before other threads are started).
///
/// ```
/// # #[cfg(target_os = "linux")] {
/// match polymat::engine::pin_threads(true) {
///     Ok(pinned) => {
///         assert_eq!(pinned, rayon::current_num_threads());
///         polymat::engine::pin_threads(false)?; // back to the calling thread's CPUs
///     }
///     // A sandbox may forbid setting affinities (seccomp): the error says so.
///     Err(e) => eprintln!("not pinned: {e}"),
/// }
/// # }
/// # Ok::<(), polymat::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] off Linux, or when the system refuses to read or set a thread's
/// CPUs (the message says which thread and why); threads set before the refusal stay set.
pub fn pin_threads(pin: bool) -> Result<usize> {
    let allowed = sys::allowed_cpus().map_err(|e| Error::argument(OP, e))?;
    if allowed.is_empty() {
        return Err(Error::argument(OP, "the calling thread may run on no CPU"));
    }
    let results = rayon::broadcast(|ctx| {
        let i = ctx.index();
        let cpus = if pin {
            std::slice::from_ref(&allowed[i % allowed.len()])
        } else {
            &allowed[..]
        };
        sys::set_cpus(cpus).map_err(|e| format!("pool thread {i}: {e}"))
    });
    results
        .into_iter()
        .collect::<std::result::Result<Vec<()>, String>>()
        .map(|set| set.len())
        .map_err(|e| Error::argument(OP, e))
}

#[cfg(target_os = "linux")]
mod sys {
    /// The CPUs the calling thread may run on, in increasing order.
    pub(super) fn allowed_cpus() -> Result<Vec<usize>, String> {
        // SAFETY: cpu_set_t is a plain bit array, valid when zeroed.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a live cpu_set_t of the size passed; pid 0 is the calling thread.
        let rc =
            unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
        if rc != 0 {
            return Err(format!(
                "sched_getaffinity: {}",
                std::io::Error::last_os_error()
            ));
        }
        let max = usize::try_from(libc::CPU_SETSIZE).unwrap_or(0);
        // SAFETY: every index is below CPU_SETSIZE, the set's capacity.
        Ok((0..max)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect())
    }

    /// Lets the calling thread run on `cpus` only (each below `CPU_SETSIZE`: they come from
    /// [`allowed_cpus`]).
    pub(super) fn set_cpus(cpus: &[usize]) -> Result<(), String> {
        // SAFETY: as in `allowed_cpus`.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in cpus {
            // SAFETY: CPU_SET writes bit c of `set`, c < CPU_SETSIZE (`allowed_cpus`).
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        // SAFETY: `set` is a live cpu_set_t of the size passed; pid 0 is the calling thread;
        // the call only changes where the scheduler may run it.
        let rc =
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        if rc == 0 {
            Ok(())
        } else {
            Err(format!(
                "sched_setaffinity: {}",
                std::io::Error::last_os_error()
            ))
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod sys {
    pub(super) fn allowed_cpus() -> Result<Vec<usize>, String> {
        Err("thread affinity is only set on Linux".to_owned())
    }

    pub(super) fn set_cpus(_cpus: &[usize]) -> Result<(), String> {
        Err("thread affinity is only set on Linux".to_owned())
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// In a pool of its own (other tests keep the global one): pinned, each thread runs on one
    /// CPU, the i-th of the caller's; unpinned, on all of the caller's again.
    #[test]
    fn pool_threads_are_pinned_and_released() {
        let allowed = sys::allowed_cpus().unwrap();
        assert!(!allowed.is_empty());
        if let Err(e) = sys::set_cpus(&allowed) {
            // Setting the CPUs it already has fails only where affinities are forbidden.
            eprintln!("affinity cannot be set here: {e}");
            return;
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        pool.install(|| {
            assert_eq!(pin_threads(true).unwrap(), 3);
            let seen = rayon::broadcast(|ctx| (ctx.index(), sys::allowed_cpus().unwrap()));
            for (i, cpus) in seen {
                assert_eq!(cpus, vec![allowed[i % allowed.len()]], "thread {i}");
            }
        });
        // The pool's threads were pinned from inside it: release them to the test thread's
        // CPUs from outside, as a program would.
        let released = pool.install(|| {
            rayon::broadcast(|_| sys::set_cpus(&allowed))
                .into_iter()
                .all(|r| r.is_ok())
        });
        assert!(released);
        let seen = pool.broadcast(|_| sys::allowed_cpus().unwrap());
        assert!(seen.iter().all(|cpus| *cpus == allowed));
    }
}
