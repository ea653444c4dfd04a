//! When a Dense result is written with non-temporal stores (the mechanism is
//! [`simd::stream`](crate::simd)): when the bytes a pass moves exceed what the last-level cache
//! keeps.
//!
//! A pass over operands and a result that fit in the cache together reads and writes at cache
//! speed, and its result is still there for whatever reads it next; ordinary stores win. Once
//! they do not fit, every line of the result costs a read for ownership as well as its write,
//! and non-temporal stores (which skip that read) win. glibc's `memcpy` likewise switches to
//! them above a threshold derived from the shared cache's size; this module counts the bytes
//! of the whole pass (inputs and result), so a zip of two operands streams from a smaller
//! result than a copy does. On the 2-core VM (32 MiB L3), standalone passes, mean per pass,
//! ordinary against non-temporal stores: a copy of 8 MB 0.23 against 0.36 ms, of 12 MB
//! 0.67 / 0.58, of 16 MB 0.78 / 0.74; a sum of two operands into 6 MB 0.32 / 0.32, 8 MB
//! 0.49 / 0.49, 10 MB 0.61 / 0.54, 16 MB 1.33 / 1.04: both cross over at about 24 MB moved
//! (docs/benchmarks.md).

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::scalar::c64;

/// The threshold where the last-level cache's size cannot be read: three quarters of 32 MiB,
/// the first development VM's L3.
pub const DEFAULT_STREAM_BYTES: usize = 24 << 20;

/// The most the threshold read from the cache's size can be.
///
/// A virtual machine may report its host's whole cache: the Intel Xeon VM's sysfs gives
/// 480 MiB for its 2 CPUs, so passes up to 360 MB used ordinary stores. Measured there in the
/// side-by-side's server (one thread, calls back to back, malloc reusing memory), ordinary →
/// non-temporal stores, per call: `adjoint` Dense n = 1000 (32 MB moved) 1.12 → 1.23 ms,
/// n = 1250 (50 MB) 1.80 → 1.96 ms, n = 1500 (72 MB) 3.00 → 2.70 ms; `add` n = 1000 (48 MB)
/// 1.67 → 1.70 ms, n = 1500 (108 MB) 4.75 → 3.78 ms, n = 2000 (192 MB) 11.6 → 8.2 ms. They
/// cross at about 60 MB (docs/benchmarks.md, "Streamed stores").
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
        .or_else(|| last_level_cache().map(|c| (c / 4).saturating_mul(3).min(LLC_THRESHOLD_CAP)))
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
/// faster one the identity map's non-temporal stores only add a pass's overhead: a 10⁴ × 10⁴
/// Dense `transpose` (1.6 GB, pages reused by malloc) took 136.6–141.3 ms through `memcpy`
/// against 181–349 ms through the map on the Intel Xeon VM, and was level with it on fresh
/// pages. On the AMD EPYC VM glibc's `memcpy` took 399–440 ms against the map's 113 ms
/// (docs/benchmarks.md), so every other CPU keeps the map.
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
/// Measured, Csr → Dense with 10 entries a row on one thread, malloc reusing memory (the
/// side-by-side's mode), per call:
/// - Intel Xeon VM: 1000 × 1000 (a 16 MB fill) 769–806 → 613–630 µs, 1424–1511 → 1502–1699 µs
///   starting out of cache; 1400 × 1400 1262–1773 → 1211–1251 µs.
/// - AMD EPYC (Zen 4) VM, 2026-11-28: 1000 × 1000 208–220 → 141–146 µs (cold 425–435 →
///   295 µs), 1400 × 1400 475–548 → 381–387 µs, 700 × 700 81–85 → 67–68 µs, 450 × 450 (3.2 MB)
///   34.6–34.9 → 27.7–27.9 µs, 300 × 300 (1.4 MB) 13.7–13.9 → 11.1–11.2 µs; level at 240 × 240
///   (0.9 MB), slower below (150 × 150: 2.27–2.30 → 2.89 µs), hence the threshold. A C loop
///   on that machine: 16 MB in cache, `memset` 129–140 µs against 177–182 µs for 32-byte
///   stores; out of cache 392–419 against 457–465 µs.
///
/// An earlier AMD EPYC VM had the plain stores faster at 16 MB (1.48 against 1.61 ms, out of
/// cache), which is why this was Intel-only until 2026-11-28; `memset` is the C library's
/// choice for the CPU it runs on, the plain stores are not.
pub(crate) fn fill_by_memset(slots: usize) -> bool {
    slots >= MEMSET_FILL_SLOTS
}

/// The size in bytes of the highest-level data or unified cache of CPU 0, on Linux.
fn last_level_cache() -> Option<usize> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    let mut best: Option<(u32, usize)> = None;
    for entry in dir.flatten() {
        let path = entry.path();
        let read = |name: &str| std::fs::read_to_string(path.join(name)).ok();
        let Some(level) = read("level").and_then(|l| l.trim().parse::<u32>().ok()) else {
            continue;
        };
        if read("type").is_some_and(|t| t.trim() == "Instruction") {
            continue;
        }
        let Some(size) = read("size").and_then(|s| parse_size(&s)) else {
            continue;
        };
        if best.is_none_or(|(l, _)| level > l) {
            best = Some((level, size));
        }
    }
    best.map(|(_, size)| size).filter(|&s| s > 0)
}

/// A sysfs cache size: `32768K`, `1M`, or plain bytes.
fn parse_size(text: &str) -> Option<usize> {
    let t = text.trim();
    let (digits, unit) = match t.as_bytes().last()? {
        b'K' | b'k' => (&t[..t.len() - 1], 1usize << 10),
        b'M' | b'm' => (&t[..t.len() - 1], 1 << 20),
        b'G' | b'g' => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    digits.trim().parse::<usize>().ok()?.checked_mul(unit)
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

    #[test]
    fn sysfs_sizes_parse() {
        assert_eq!(parse_size("32768K\n"), Some(32 << 20));
        assert_eq!(parse_size("1M"), Some(1 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_size("K"), None);
        assert_eq!(parse_size("x12K"), None);
        assert_eq!(parse_size("99999999999999999999G"), None);
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

    /// The default never exceeds the cap, whatever cache sysfs reports (480 MiB on the Intel
    /// Xeon VM), unless the environment sets it.
    #[test]
    fn the_default_is_capped() {
        if std::env::var(STREAM_BYTES_ENV).is_err() {
            let d = default_stream_bytes();
            assert!((1..=LLC_THRESHOLD_CAP).contains(&d), "{d}");
            match last_level_cache() {
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
