//! Transparent huge pages for large buffers: dense matrices and sparse arrays.
//!
//! A streaming kernel over a large matrix (an adjoint, a sum, a product with a vector) walks
//! thousands of 4 KiB pages: each costs a TLB miss, and in a virtual machine a page-table walk
//! on the host's tables as well. Linux can back a region with 2 MiB pages instead, but with the
//! common `madvise` setting of `/sys/kernel/mm/transparent_hugepage/enabled` only where the
//! program asks for them. polymat asks for its dense buffers and the arrays of its sparse
//! results from 32 MiB, the size from which glibc maps a buffer afresh for every result (its
//! largest dynamic mmap threshold): their first touch takes one page fault per 2 MiB instead of
//! per 4 KiB. Measured (docs/benchmarks/per_operation.md), a 256 MB dense result (n = 4000) was written
//! 3.8–5.4× faster on one thread, and a Csr sum or Kronecker product of 10⁶ rows ran 2.3–3.9×
//! faster.
//!
//! Smaller buffers are left alone, though numpy advises from 4 MiB: malloc reuses their memory
//! from call to call, the advice gained the streaming kernels at n = 1000 (16 MB) nothing beyond
//! the noise, and advising the reused heap memory on every call could cost page faults on every
//! call instead (one heap layout took 6 faults a call, and an adjoint at n = 1000 1.2–1.3 →
//! 1.5–2.0 ms; docs/benchmarks/per_operation.md, "Huge-page advice from 32 MiB").
//!
//! The advice changes no contents and may be refused; it only affects how the kernel maps the
//! pages. Outside Linux it does nothing.

use std::sync::atomic::AtomicUsize;

/// Environment variable read once, on first use, when [`set_huge_pages`] has not been called:
/// `0` turns the advice off (any other value, or none, leaves it on).
pub const HUGE_PAGES_ENV: &str = "POLYMAT_HUGE_PAGES";

/// Buffers of at least this many bytes are advised: glibc's largest mmap threshold, from which
/// every buffer is a fresh mapping (see the module documentation).
pub(crate) const MIN_BYTES: usize = 32 << 20;

/// 0 = not decided yet, 1 = off, 2 = on.
static HUGE_PAGES: AtomicUsize = AtomicUsize::new(0);

/// Whether polymat asks Linux to back dense buffers and sparse arrays of 32 MiB and more with
/// transparent huge pages (`madvise(MADV_HUGEPAGE)`). On by
/// default unless the environment variable `POLYMAT_HUGE_PAGES` is `0`; the setting is
/// process-wide and applies to buffers allocated after the call.
///
/// ```
/// polymat::set_huge_pages(false);
/// assert!(!polymat::huge_pages());
/// polymat::set_huge_pages(true);
/// assert!(polymat::huge_pages());
/// ```
pub fn set_huge_pages(on: bool) {
    super::set_flag(&HUGE_PAGES, on);
}

/// Whether large buffers (dense matrices, sparse arrays) are advised as huge-page candidates.
/// See [`set_huge_pages`].
pub fn huge_pages() -> bool {
    super::flag(&HUGE_PAGES, HUGE_PAGES_ENV)
}

/// Advises the whole pages inside `[ptr, ptr + bytes)` as huge-page candidates when `bytes` is
/// at least [`MIN_BYTES`] and the advice is on. Returns whether `madvise` was called and
/// accepted the advice.
///
/// `ptr .. ptr + bytes` must be one live allocation (the call does not read or write it).
pub(crate) fn advise(ptr: *const u8, bytes: usize) -> bool {
    if bytes < MIN_BYTES || !huge_pages() {
        return false;
    }
    advise_pages(ptr, bytes)
}

#[cfg(target_os = "linux")]
fn advise_pages(ptr: *const u8, bytes: usize) -> bool {
    // The base page size: 4 KiB on x86-64, up to 64 KiB on some aarch64 kernels.
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(4096);
    let start = (ptr as usize).next_multiple_of(page);
    let end = (ptr as usize).saturating_add(bytes) & !(page - 1);
    if end <= start {
        return false;
    }
    // SAFETY: [start, end) is made of whole pages inside the caller's allocation (rounded
    // inward), so no other allocation's pages are touched; MADV_HUGEPAGE changes how the
    // kernel maps those pages, never their contents, and a refusal is harmless.
    unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) == 0 }
}

#[cfg(not(target_os = "linux"))]
fn advise_pages(_ptr: *const u8, _bytes: usize) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    // The switch itself is tested in `set_huge_pages`'s doc test (a process of its own): here
    // it would race with tests that allocate on other threads.
    #[test]
    fn small_buffers_are_left_alone_and_large_ones_advised() {
        let v = vec![0u8; 1 << 12];
        assert!(!advise(v.as_ptr(), v.len()));
        let big = vec![0u8; MIN_BYTES + 8192];
        // Linux accepts the advice on any anonymous mapping, whatever the THP mode (a kernel
        // built without THP refuses it: EINVAL).
        if cfg!(target_os = "linux")
            && std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists()
        {
            assert!(advise_pages(big.as_ptr(), big.len()));
        }
        // Fewer bytes than one page once rounded inward: nothing to advise.
        assert!(!advise_pages(big.as_ptr().wrapping_add(1), 100));
    }
}
