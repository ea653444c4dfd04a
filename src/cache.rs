//! A per-thread cache of published states: each dispatcher's table and the conversion
//! registry's snapshot.
//!
//! `ArcSwap::load` is lock-free but costs two atomic read-modify-writes per call (a hazard slot
//! taken and released), about 15–30 ns. Every publication bumps one global generation counter;
//! each thread keeps, per dispatcher, the generation it last saw and an `Arc` of that state. A
//! call compares its cached generation with the global one (a plain atomic load) and only
//! reloads from the `ArcSwap` when they differ, i.e. once after each registration.
//!
//! Soundness: a pinned call ([`load`], [`pin`]) keeps a raw pointer to the state for its
//! duration. The `Arc` behind it lives in this thread's slot; when a nested call on the same
//! thread replaces the slot, the old `Arc` is parked in a graveyard until the outermost pinned
//! call on the thread has returned. [`peek`] pins nothing: its caller (a dispatcher's direct
//! hit) reads what it needs before anything can dispatch again and keeps its kernel alive by
//! other means.
//!
//! The hot path touches only thread-locals without destructors, which need no lazy
//! registration check: a copy of the first [`FAST_SLOTS`] slots' (generation, pointer) pairs,
//! and for a pinned call the nesting depth and a flag for a non-empty graveyard. The slots' `Arc`s stay in the
//! destructor-carrying cache, which is touched only on a refresh; its destructor clears the
//! copies first, so a call made during thread teardown finds no pointer into freed states.
//!
//! Cost of the design: a thread keeps the last state it used of each dispatcher, so the state of
//! a user dispatcher that has been dropped stays in that thread's slot until the thread exits.

use std::any::Any;
use std::cell::{Cell, UnsafeCell};
use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use arc_swap::ArcSwap;

/// Bumped after every publication of any dispatcher state.
static GENERATION: AtomicU64 = AtomicU64::new(1);
static NEXT_ID: AtomicUsize = AtomicUsize::new(0);

type Keep = Arc<dyn Any + Send + Sync>;

struct Slot {
    generation: u64,
    ptr: *const (),
    keep: Option<Keep>,
}

struct ThreadCache {
    slots: Vec<Slot>,
    graveyard: Vec<Keep>,
}

/// Dispatchers whose (generation, pointer) pair is also kept in [`FAST`]: ids below this (the
/// built-in dispatchers take the first ids, in the order they are first used).
const FAST_SLOTS: usize = 128;

thread_local! {
    static CACHE: UnsafeCell<ThreadCache> = const {
        UnsafeCell::new(ThreadCache { slots: Vec::new(), graveyard: Vec::new() })
    };
    /// `(generation, state pointer)` of slots `0..FAST_SLOTS`, a copy of `CACHE`'s (generation 0:
    /// none). No destructor, so an access needs no registration check.
    static FAST: [Cell<(u64, *const ())>; FAST_SLOTS] =
        const { [const { Cell::new((0, std::ptr::null())) }; FAST_SLOTS] };
    /// Live `Pinned::Cached` values on this thread.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    /// Whether `CACHE`'s graveyard holds states to drop once `DEPTH` is back to 0.
    static BURIED: Cell<bool> = const { Cell::new(false) };
}

impl Drop for ThreadCache {
    fn drop(&mut self) {
        // The states are about to be dropped: no later call on this thread (from another
        // thread-local's destructor) may find a pointer to them.
        let _ = FAST.try_with(|f| {
            for cell in f {
                cell.set((0, std::ptr::null()));
            }
        });
    }
}

/// A fresh dispatcher id; ids are never reused.
pub(crate) fn next_id() -> usize {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// Marks that new states were published: every thread reloads on its next call.
pub(crate) fn invalidate() {
    GENERATION.fetch_add(1, Ordering::Release);
}

/// A state borrowed for the duration of one call.
pub(crate) enum Pinned<S: 'static> {
    Cached(*const S, PhantomData<*const ()>),
    /// Used when the thread-local cache is gone (thread teardown).
    Owned(Arc<S>),
}

impl<S> Deref for Pinned<S> {
    type Target = S;
    #[inline]
    fn deref(&self) -> &S {
        match self {
            // SAFETY: the pointee is kept alive by this thread's slot or graveyard until every
            // `Pinned` of this thread has been dropped (see the module documentation).
            Pinned::Cached(p, _) => unsafe { &**p },
            Pinned::Owned(a) => a,
        }
    }
}

/// The current state of dispatcher `id` if this thread's fast copy of it is current, without
/// pinning it: nothing is counted and nothing needs dropping.
///
/// The pointer is valid until this thread next reaches [`load`] for `id` (a nested dispatch),
/// which may release the state. A caller reads what it needs before calling anything that can
/// dispatch, and keeps alive by other means whatever it uses after that (the dispatcher's
/// kernels are retained by the dispatcher itself).
#[inline(always)]
pub(crate) fn peek<S: Send + Sync + 'static>(id: usize) -> Option<*const S> {
    if id < FAST_SLOTS {
        fast(id, GENERATION.load(Ordering::Acquire))
    } else {
        None
    }
}

/// This thread's fast copy of slot `id` (below [`FAST_SLOTS`]) if it is of `generation`.
#[inline(always)]
fn fast<S>(id: usize, generation: u64) -> Option<*const S> {
    let (seen, ptr) = FAST.with(|f| f[id].get());
    (seen == generation).then_some(ptr as *const S)
}

/// Pins a state [`peek`] (or this thread's cache) gave, for a call that goes on past a nested
/// dispatch.
///
/// # Safety
/// `ptr` is this thread's current cached state of a dispatcher (from `peek` or the cache's
/// slot), and this thread has not dispatched since it was read.
#[inline]
pub(crate) unsafe fn pin<S: Send + Sync + 'static>(ptr: *const S) -> Pinned<S> {
    DEPTH.set(DEPTH.get() + 1);
    Pinned::Cached(ptr, PhantomData)
}

/// The current state of dispatcher `id`, whose states are published through `swap`.
#[inline]
pub(crate) fn load<S: Send + Sync + 'static>(id: usize, swap: &ArcSwap<S>) -> Pinned<S> {
    let generation = GENERATION.load(Ordering::Acquire);
    if id < FAST_SLOTS {
        return match fast(id, generation) {
            // SAFETY: the current fast copy, read just now.
            Some(ptr) => unsafe { pin(ptr) },
            None => refresh(id, swap, generation),
        };
    }
    let hit = CACHE.try_with(|c| {
        // SAFETY: no reference into the cache outlives this closure, and nothing in it calls
        // out to user code, so this is the only live reference to the cache.
        let c = unsafe { &*c.get() };
        let slot = c.slots.get(id).filter(|s| s.generation == generation)?;
        Some(slot.ptr as *const S)
    });
    match hit {
        // SAFETY: the current slot of this thread's cache, read just now.
        Ok(Some(p)) => unsafe { pin(p) },
        Ok(None) => refresh(id, swap, generation),
        Err(_) => Pinned::Owned(swap.load_full()),
    }
}

#[cold]
fn refresh<S: Send + Sync + 'static>(id: usize, swap: &ArcSwap<S>, generation: u64) -> Pinned<S> {
    let fresh = swap.load_full();
    let ptr = Arc::as_ptr(&fresh);
    let keep: Keep = fresh;
    let stored = CACHE.try_with(|c| {
        // SAFETY: as in `load`.
        let c = unsafe { &mut *c.get() };
        if c.slots.len() <= id {
            c.slots.resize_with(id + 1, || Slot {
                generation: 0,
                ptr: std::ptr::null(),
                keep: None,
            });
        }
        let slot = &mut c.slots[id];
        let old = slot.keep.replace(keep);
        slot.ptr = ptr as *const ();
        slot.generation = generation;
        if id < FAST_SLOTS {
            FAST.with(|f| f[id].set((generation, slot.ptr)));
        }
        let depth = DEPTH.get() + 1;
        DEPTH.set(depth);
        // An outer call on this thread may still use the old state: park it.
        match old {
            Some(o) if depth > 1 => {
                c.graveyard.push(o);
                BURIED.set(true);
                None
            }
            other => other,
        }
    });
    match stored {
        // Dropped here, outside the cache borrow: a state's destructor runs user closures' drops.
        Ok(old) => {
            drop(old);
            Pinned::Cached(ptr, PhantomData)
        }
        Err(_) => Pinned::Owned(swap.load_full()),
    }
}

impl<S: 'static> Drop for Pinned<S> {
    #[inline]
    fn drop(&mut self) {
        if let Pinned::Cached(..) = self {
            let depth = DEPTH.get() - 1;
            DEPTH.set(depth);
            if depth == 0 && BURIED.get() {
                bury();
            }
        }
    }
}

/// Drops the states parked while calls were nested, now that none is live on this thread.
#[cold]
#[inline(never)]
fn bury() {
    BURIED.set(false);
    let buried = CACHE.try_with(|c| {
        // SAFETY: as in `load`.
        let c = unsafe { &mut *c.get() };
        std::mem::take(&mut c.graveyard)
    });
    // Dropped here, outside the cache borrow: a state's destructor runs user closures' drops.
    drop(buried);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call made from another thread-local's destructor, before or after this thread's cache
    /// is torn down, neither panics nor misses the current state (the teardown path: the cache
    /// refuses access, and the fast-path copies were cleared).
    #[test]
    fn calls_during_thread_teardown_see_the_current_state() {
        use std::sync::LazyLock;
        use std::sync::atomic::AtomicUsize;
        static SWAP: LazyLock<ArcSwap<Vec<u8>>> =
            LazyLock::new(|| ArcSwap::from_pointee(vec![7u8; 4]));
        static ID: LazyLock<usize> = LazyLock::new(next_id);
        static SEEN: AtomicUsize = AtomicUsize::new(0);
        struct Guard;
        impl Drop for Guard {
            fn drop(&mut self) {
                if load(*ID, &SWAP)[0] == 7 {
                    SEEN.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
        thread_local! {
            static BEFORE: Guard = const { Guard };
            static AFTER: Guard = const { Guard };
        }
        std::thread::spawn(|| {
            // Destructors registered before and after the cache's own.
            BEFORE.with(|_| ());
            assert_eq!(load(*ID, &SWAP)[0], 7);
            AFTER.with(|_| ());
        })
        .join()
        .unwrap();
        assert_eq!(SEEN.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn nested_loads_survive_a_refresh() {
        let id = next_id();
        let swap = ArcSwap::from_pointee(vec![1u8; 16]);
        let outer = load(id, &swap);
        swap.store(Arc::new(vec![2u8; 16]));
        invalidate();
        {
            let inner = load(id, &swap);
            assert_eq!(inner[0], 2);
        }
        // The outer call still sees the state it started with.
        assert_eq!(outer[0], 1);
        drop(outer);
        assert_eq!(load(id, &swap)[0], 2);
        assert_eq!(DEPTH.get(), 0);
        assert!(!BURIED.get());
        CACHE.with(|c| {
            // SAFETY: no other reference to the cache is live in this test.
            let c = unsafe { &*c.get() };
            assert!(c.graveyard.is_empty());
        });
    }
}
