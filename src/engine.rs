//! The one place that decides serial versus parallel execution.
//!
//! Kernels ask here instead of hard-coding `Par::Seq` or spawning rayon tasks themselves, so the
//! policy (and its thresholds) can be measured and changed in one file.

use faer::Par;

/// Work (complex multiply-adds) below which a parallel `faer` product is not tried:
/// 2²⁰ ≈ a 100×100×100 product. Provisional: not yet measured on this machine; issue #4 (the
/// execution engine) is to measure it and replace this with the measured crossover.
pub(crate) const PAR_MATMUL_MIN_WORK: usize = 1 << 20;

/// The `faer` parallelism for a product doing `work` multiply-adds.
#[inline]
pub(crate) fn matmul_par(work: usize) -> Par {
    if work >= PAR_MATMUL_MIN_WORK && rayon::current_num_threads() > 1 {
        Par::rayon(0)
    } else {
        Par::Seq
    }
}
