//! `examples/custom_specialisation.rs`, run and asserted (its own process: it changes MATMUL).

#[path = "../examples/custom_specialisation.rs"]
#[allow(dead_code)]
mod example;

#[test]
fn user_kernel_makes_dense_csr_matmul_direct() {
    example::run().unwrap();
}
