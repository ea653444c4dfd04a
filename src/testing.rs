//! Helpers shared by the unit tests (compiled for tests only).

/// A seeded xorshift64 generator (Marsaglia's 13, 7, 17): the same stream for the same seed on
/// every machine, for tests that draw random patterns. `seed` must be non-zero.
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    assert_ne!(seed, 0, "xorshift: a zero seed stays zero");
    let mut state = seed;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}
