//! Which instruction set each vector kernel runs on, on this CPU: the report behind
//! [`crate::engine::vector_kernels`].

use super::portable;

/// `(kernel, what it is for, instruction set)` for every kernel of `simd/`, as the kernels
/// themselves decide at run time.
pub(crate) fn kernel_paths() -> Vec<(&'static str, &'static str, &'static str)> {
    let portable = portable::instruction_set();
    let arch = if super::avx2() {
        "avx2+fma (std::arch)"
    } else {
        "plain loop"
    };
    let wide = if avx512_here() {
        "avx512f (std::arch; on Intel up to 2^17 entries), else portable"
    } else {
        portable
    };
    let taylor = if super::avx2() { arch } else { portable };
    let small = match (super::avx2(), avx512_here()) {
        (true, true) => "avx2+fma or avx512f (std::arch)",
        (true, false) => arch,
        _ => "faer's gemm",
    };
    vec![
        ("dot", "inner products, Krylov orthogonalisation", portable),
        ("sub_scaled", "Gram–Schmidt subtractions", portable),
        ("sum_sqr", "the Dense 2-norm", portable),
        ("gemv_cols", "Dense·ket, a Dense expect", wide),
        ("scale", "mul, add and iadd with a scale", portable),
        (
            "columns",
            "conj, neg, mul, add, sub of small Dense",
            portable,
        ),
        ("taylor_term", "expm_multiply's Taylor term", taylor),
        ("csr_row_dots", "Csr·Dense and Csr·ket", arch),
        ("kron_runs", "Csr kron, Csr·Csr accumulation", arch),
        ("masks", "Dense → Csr zero counts and masks", arch),
        ("small_products", "Dense·Dense up to 12 rows", small),
        ("nontemporal", "streamed Dense results", arch),
        ("zeros", "zero fills in cache", arch),
    ]
}

/// Whether the AVX-512 kernels run here (never on a build by Rust 1.88, the MSRV).
fn avx512_here() -> bool {
    #[rustversion::since(1.89)]
    fn wide() -> bool {
        super::avx512()
    }
    #[rustversion::before(1.89)]
    fn wide() -> bool {
        false
    }
    wide()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kernel is reported once, with an instruction set; on the CPUs polymat is tested
    /// on (x86-64 with AVX2 + FMA, aarch64 with NEON) the portable kernels are on vector
    /// registers, and the report says so.
    #[test]
    fn every_kernel_reports_its_instruction_set() {
        let paths = kernel_paths();
        let mut names: Vec<_> = paths.iter().map(|p| p.0).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), paths.len());
        for (name, what, set) in &paths {
            println!("{name:>15}  {set:<45} {what}");
            assert!(!set.is_empty() && !what.is_empty(), "{name}");
        }
        let dot = paths.iter().find(|p| p.0 == "dot").map(|p| p.2);
        #[cfg(target_arch = "aarch64")]
        assert_eq!(dot, Some("neon"));
        #[cfg(target_arch = "x86_64")]
        assert_eq!(dot == Some("avx2+fma"), crate::simd::avx2());
        let base = crate::simd::baseline(kernel_paths);
        let plain = ["scalar", "plain loop", "faer's gemm"];
        assert!(base.iter().all(|p| plain.contains(&p.2)), "{base:?}");
    }
}
