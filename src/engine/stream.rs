//! When a Dense result is written with non-temporal stores (the mechanism is
//! [`simd::nontemporal`](crate::simd)): when the bytes a pass moves exceed what the last-level cache
//! keeps.
//!
//! A pass over operands and a result that fit in the cache together reads and writes at cache
//! speed, and its result is still there for whatever reads it next; ordinary stores win. Once
//! they do not fit, every line of the result costs a read for ownership as well as its write,
//! and non-temporal stores (which skip that read) win. glibc's `memcpy` likewise switches to
//! them above a threshold derived from the shared cache's size; this module counts the bytes
//! of the whole pass (inputs and result), so a zip of two operands streams from a smaller
//! result than a copy does. With a 32 MiB L3, copies and sums both cross over at about
//! three quarters of it moved (the measurements: docs/benchmarks/engine.md, "Streamed
//! stores").

use std::sync::atomic::{AtomicUsize, Ordering};

use super::caches;
use crate::scalar::c64;

/// The threshold where the last-level cache's size cannot be read: three quarters of a 32 MiB
/// L3.
pub const DEFAULT_STREAM_BYTES: usize = 24 << 20;

/// The most the threshold read from the cache's size can be.
///
/// A virtual machine may report its host's whole cache (480 MiB for 2 CPUs has been seen), and
/// passes far past what its own share of the cache holds would keep ordinary stores; on such
/// a machine ordinary and non-temporal stores crossed at about 60 MB moved
/// (docs/benchmarks/engine.md, "Streamed stores").
const LLC_THRESHOLD_CAP: usize = 64 << 20;

/// Environment variable read once, on first use, when [`set_stream_bytes`] has not been called:
/// a positive number of bytes replaces the default.
pub const STREAM_BYTES_ENV: &str = "POLYMAT_STREAM_BYTES";

/// 0 = not decided yet.
static STREAM_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Sets the bytes a Dense elementwise pass must move (its operands read plus its result
/// written) for the result to be written with non-temporal stores; `0` restores the default.
///
/// The default is the environment variable `POLYMAT_STREAM_BYTES` if it holds a positive
/// integer, else three quarters of the last-level cache of the first CPU (read from
/// `/sys/devices/system/cpu/cpu0/cache` on Linux) up to 64 MiB (a virtual machine may report
/// its host's whole cache), else [`DEFAULT_STREAM_BYTES`]. It applies
/// to the Dense maps and zips (`adjoint`, `conj`, `neg`, `tidyup`, `mul`, `add`, `sub`,
/// `multiply`) and the copy behind `transpose`. It changes only how the result is written,
/// never its value; the setting is process-wide and applies to calls that start after it.
///
/// ```
/// polymat::set_stream_bytes(usize::MAX); // never stream
/// assert_eq!(polymat::stream_bytes(), usize::MAX);
/// polymat::set_stream_bytes(0); // back to the default
/// assert!(polymat::stream_bytes() >= 1);
/// ```
pub fn set_stream_bytes(bytes: usize) {
    STREAM_BYTES.store(bytes, Ordering::Relaxed);
}

/// The bytes moved from which Dense results are streamed. See [`set_stream_bytes`].
pub fn stream_bytes() -> usize {
    super::setting(&STREAM_BYTES, default_stream_bytes)
}

fn default_stream_bytes() -> usize {
    std::env::var(STREAM_BYTES_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&b| b > 0)
        .or_else(|| caches::last_level().map(|c| (c / 4).saturating_mul(3).min(LLC_THRESHOLD_CAP)))
        .unwrap_or(DEFAULT_STREAM_BYTES)
        .max(1)
}

/// Whether a pass that reads `inputs` complex matrices of `m × n` and writes one is large
/// enough for non-temporal stores.
#[inline]
pub(crate) fn streams(m: usize, n: usize, inputs: usize) -> bool {
    m.saturating_mul(n)
        .saturating_mul(std::mem::size_of::<c64>())
        .saturating_mul(inputs.saturating_add(1))
        >= stream_bytes()
}

/// Whether a one-thread copy that [`streams`] would stream is left to the C library's `memcpy`
/// instead: on Intel CPUs. glibc picks its large-copy loop per CPU model, and where it is the
/// faster one the identity map's non-temporal stores only add a pass's overhead. On Intel
/// CPUs measured, `memcpy` won a 10⁴ × 10⁴ Dense `transpose` by up to 2.5×; on AMD ones it
/// lost by 3.5× (docs/benchmarks/engine.md), so every other CPU keeps the map.
pub(crate) fn copy_by_memcpy() -> bool {
    crate::simd::intel()
}

/// Zero fills of at least this many complex slots (1 MiB) that do not stream are left to
/// `memset` ([`fill_by_memset`]).
pub(crate) const MEMSET_FILL_SLOTS: usize = 1 << 16;

/// Whether a one-thread zero fill of `slots` complex entries below the streaming size is left
/// to the C library's `memset` instead of `simd::fill`'s plain vector stores: from
/// [`MEMSET_FILL_SLOTS`] up, on every CPU. glibc picks its fill per CPU (`rep stosb` where the
/// CPU has fast string stores), which writes whole lines without reading them first; each
/// plain 32-byte store reads its line for ownership.
///
/// Measured on Csr → Dense (10 entries a row, one thread, malloc reusing memory) on Intel and
/// AMD CPUs: `memset` faster from about 1 MB (up to 1.3×), level at 0.9 MB, slower below,
/// hence the threshold (docs/benchmarks/engine.md). `memset` is the C library's choice for
/// the CPU it runs on; the plain stores are not.
pub(crate) fn fill_by_memset(slots: usize) -> bool {
    slots >= MEMSET_FILL_SLOTS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fills below 1 MiB never go to `memset`; from there they always do, on every CPU.
    #[test]
    fn large_fills_go_to_memset() {
        assert!(!fill_by_memset(0));
        assert!(!fill_by_memset(MEMSET_FILL_SLOTS - 1));
        for slots in [MEMSET_FILL_SLOTS, usize::MAX] {
            assert!(fill_by_memset(slots));
        }
    }

    /// The vendor read through CPUID is the one the kernel reports (where it does). x86-64
    /// only: elsewhere there is no CPUID, and under user-mode emulation `/proc/cpuinfo` is
    /// the host's.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_cpu_vendor_matches_the_kernels() {
        let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
            return;
        };
        if let Some(line) = info.lines().find(|l| l.starts_with("vendor_id")) {
            let intel = line
                .split(':')
                .nth(1)
                .is_some_and(|v| v.trim() == "GenuineIntel");
            assert_eq!(crate::simd::intel(), intel, "{line}");
            assert_eq!(copy_by_memcpy(), intel);
        }
    }

    /// The default never exceeds the cap, whatever cache sysfs reports (a host's whole cache
    /// on some virtual machines), unless the environment sets it.
    #[test]
    fn the_default_is_capped() {
        if std::env::var(STREAM_BYTES_ENV).is_err() {
            let d = default_stream_bytes();
            assert!((1..=LLC_THRESHOLD_CAP).contains(&d), "{d}");
            match caches::last_level() {
                Some(c) => assert_eq!(d, (c / 4 * 3).clamp(1, LLC_THRESHOLD_CAP)),
                None => assert_eq!(d, DEFAULT_STREAM_BYTES),
            }
        }
    }

    #[test]
    fn the_pass_counts_its_inputs() {
        // 1024 × 1024 complex = 16 MiB per matrix.
        let m = 1024;
        let before = STREAM_BYTES.load(Ordering::Relaxed);
        set_stream_bytes(40 << 20);
        assert!(!streams(m, m, 1)); // a copy: 32 MiB
        assert!(streams(m, m, 2)); // a zip: 48 MiB
        assert!(streams(usize::MAX, usize::MAX, usize::MAX)); // saturates, no overflow
        assert!(!streams(0, usize::MAX, 2));
        STREAM_BYTES.store(before, Ordering::Relaxed);
    }
}
