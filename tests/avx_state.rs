//! polymat's kernels that call faer's matrix products leave the AVX upper register state clean.
//!
//! faer's AVX-512 microkernels (`private-gemm-x86`) return without `vzeroupper`; the dirty upper
//! state then slows every SSE-encoded instruction on the thread (3.5× for a complex scaling loop
//! on the Zen 4 benchmark machine). The state is read with `XGETBV(ECX = 1)` (XINUSE): bit 2 is
//! the upper halves of YMM0–15, bit 6 the upper halves of ZMM0–15; `vzeroupper` clears both.
//! Where the CPU cannot report it, or faer's product does not dirty it, the tests say so and
//! check nothing more.

use polymat::{Data, Dense, Out, c64};

/// XINUSE bits 2 (AVX) and 6 (ZMM_Hi256): the state `vzeroupper` resets.
const UPPER: u64 = (1 << 2) | (1 << 6);

/// The processor's XINUSE bitmap, if `XGETBV` with `ECX = 1` is supported.
#[cfg(target_arch = "x86_64")]
fn xinuse() -> Option<u64> {
    use std::arch::x86_64::{__cpuid, __cpuid_count};
    if !std::arch::is_x86_feature_detected!("xsave") || !std::arch::is_x86_feature_detected!("avx")
    {
        return None;
    }
    // CPUID leaf 0xD sub-leaf 1, EAX bit 2: XGETBV with ECX = 1 is supported. The two
    // intrinsics are safe functions from Rust 1.89 on and unsafe before (the MSRV is 1.88).
    #[allow(unused_unsafe)]
    // SAFETY: CPUID exists on every x86_64 processor and only writes registers.
    let (max_leaf, xsave_flags) = unsafe { (__cpuid(0).eax, __cpuid_count(0xD, 1).eax) };
    if max_leaf < 0xD || xsave_flags & (1 << 2) == 0 {
        return None;
    }
    let (lo, hi): (u32, u32);
    // SAFETY: XSAVE is enabled by the OS (std's detection checks OSXSAVE) and CPUID reports
    // XGETBV with ECX = 1; the instruction only writes EAX and EDX.
    unsafe {
        std::arch::asm!("xgetbv", in("ecx") 1u32, out("eax") lo, out("edx") hi,
            options(nomem, nostack, preserves_flags));
    }
    Some((u64::from(hi) << 32) | u64::from(lo))
}

#[cfg(not(target_arch = "x86_64"))]
fn xinuse() -> Option<u64> {
    None
}

/// A nonsingular test matrix (a dominant diagonal on a low-rank pattern).
fn square(n: usize) -> Dense {
    Dense::from_fn(n, n, |i, j| {
        c64::new(
            (i * n + j) as f64 / 97.0 - 1.0 + if i == j { 2.0 * n as f64 } else { 0.0 },
            ((i + 3 * j) % 11) as f64 / 5.0,
        )
    })
}

/// Runs faer's product directly and reports whether it left the upper state in use; `None` if
/// the state cannot be read or the product does not dirty it (nothing to check then).
/// faer's product on the calling thread (`Par::Seq`), as polymat's serial kernels call it.
fn raw_product(a: &Dense) -> faer::Mat<c64> {
    let mut out = faer::Mat::<c64>::zeros(a.shape().0, a.shape().1);
    faer::linalg::matmul::matmul(
        out.as_mut(),
        faer::Accum::Replace,
        a.as_mat(),
        a.as_mat(),
        c64::new(1.0, 0.0),
        faer::Par::Seq,
    );
    out
}

fn faer_dirties_upper_state() -> Option<()> {
    let Some(_) = xinuse() else {
        println!("skipping: this CPU cannot report XINUSE (XGETBV with ECX = 1)");
        return None;
    };
    let a = square(100);
    polymat::clear_upper_vector_state();
    let raw = raw_product(&a);
    let state = xinuse()?;
    std::hint::black_box(raw);
    println!("XINUSE after faer's product: {state:#x}");
    if state & UPPER == 0 {
        println!("skipping: faer's product leaves the upper state clean on this CPU");
        return None;
    }
    Some(())
}

#[test]
fn clear_upper_vector_state_resets_the_upper_state() {
    if faer_dirties_upper_state().is_none() {
        return;
    }
    let a = square(100);
    let raw = raw_product(&a);
    polymat::clear_upper_vector_state();
    let state = xinuse().expect("read above");
    std::hint::black_box(raw);
    assert_eq!(
        state & UPPER,
        0,
        "XINUSE = {state:#x} after clear_upper_vector_state"
    );
}

#[test]
fn dense_products_leave_the_upper_state_clean() {
    if faer_dirties_upper_state().is_none() {
        return;
    }
    let dense = square(100);
    let a: Data = dense.clone().into();
    let ket: Data = Dense::from_fn(100, 1, |i, _| c64::new(i as f64, 1.0)).into();
    let small = polymat::mul(&a, c64::new(1e-3, 0.0), Out::Dense).unwrap();
    let calls: [(&str, &dyn Fn() -> polymat::Result<()>); 6] = [
        ("matmul", &|| polymat::matmul(&a, &a, Out::Dense).map(drop)),
        ("matmul_dag", &|| {
            polymat::matmul_dag(&a, &a, Out::Dense).map(drop)
        }),
        ("expect", &|| polymat::expect(&a, &ket).map(drop)),
        ("expm", &|| polymat::expm(&small, Out::Dense).map(drop)),
        ("inv", &|| polymat::inv(&a, Out::Dense).map(drop)),
        ("pow", &|| polymat::pow(&a, 3, Out::Dense).map(drop)),
    ];
    for (name, call) in calls {
        // Dirty the state first, as a user's own faer call would.
        std::hint::black_box(raw_product(&dense));
        call().unwrap_or_else(|e| panic!("{name}: {e}"));
        let state = xinuse().expect("read above");
        assert_eq!(state & UPPER, 0, "{name} left XINUSE = {state:#x}");
    }
}
