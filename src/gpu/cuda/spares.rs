//! Freed small `GpuDense` buffers kept on the host side for the next result of the same length,
//! in front of the driver's stream-ordered pool.
//!
//! Taking a buffer from the pool (`cuMemAllocAsync`) and giving it back (`cuMemFreeAsync`) cost
//! about 1 µs a call, measured as raw Zgemm into a fresh buffer against into a preallocated
//! one, which made polymat's small products 1.14× the raw call (docs/benchmarks/gpu.md). A spare is reused with no driver call. Reuse is safe for the same
//! reason the pool's is: every buffer lives on polymat's one stream, so work queued on a spare
//! runs after all work queued on it before it was dropped.
//!
//! Only buffers of at most [`MAX_BYTES`] are kept (a larger product takes long enough that the
//! pool's microsecond does not show), at most [`MAX_COUNT`] of them, the oldest leaving first.
//! `gpu::release_cached_memory` hands them back to the pool.

use std::sync::Mutex;

use cudarc::driver::CudaSlice;

use super::Elem;

/// The largest buffer kept: 4 MiB, a 512 × 512 complex matrix.
const MAX_BYTES: usize = 4 << 20;

/// Buffers kept at most (so at most 64 MiB of device memory).
const MAX_COUNT: usize = 16;

static SPARES: Mutex<Vec<CudaSlice<Elem>>> = Mutex::new(Vec::new());

fn kept(len: usize) -> bool {
    len.saturating_mul(size_of::<Elem>()) <= MAX_BYTES
}

/// A kept buffer of exactly `len` entries, if there is one (its contents are stale).
pub(super) fn take(len: usize) -> Option<CudaSlice<Elem>> {
    if !kept(len) {
        return None;
    }
    let mut spares = SPARES.lock().ok()?;
    let i = spares.iter().rposition(|b| b.len() == len)?;
    Some(spares.remove(i))
}

/// Keeps `buf` for a later [`take`], or drops it (back to the pool) when it is too large or
/// the list is full of newer ones.
pub(super) fn put(buf: CudaSlice<Elem>) {
    if !kept(buf.len()) {
        return;
    }
    let Ok(mut spares) = SPARES.lock() else {
        return;
    };
    let evicted = (spares.len() >= MAX_COUNT).then(|| spares.remove(0));
    spares.push(buf);
    drop(spares);
    drop(evicted);
}

/// Drops every kept buffer (back to the pool).
pub(super) fn clear() {
    let drained: Vec<_> = SPARES
        .lock()
        .map(|mut s| std::mem::take(&mut *s))
        .unwrap_or_default();
    drop(drained);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_small_buffers_are_kept() {
        assert!(kept(0) && kept(512 * 512));
        assert!(!kept(512 * 512 + 1) && !kept(usize::MAX));
    }
}
