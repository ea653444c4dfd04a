//! The one place that decides serial versus parallel execution.
//!
//! Kernels ask here instead of hard-coding `Par::Seq` or spawning rayon tasks themselves, so the
//! policy (and its thresholds) can be measured and changed in one file.

use faer::Par;

/// Work (complex multiply-adds) below which a parallel `faer` product does not pay for its
/// thread start-up. Measured on the 2-core development machine: a 96×96 Zgemm (~0.9 M
/// multiply-adds) runs at the same speed serial and parallel; 128×128 gains 1.6×.
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
