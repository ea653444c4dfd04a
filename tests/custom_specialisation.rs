//! `examples/custom_specialisation.rs`, run and asserted (its own process: it changes MULTIPLY).

#[path = "../examples/custom_specialisation.rs"]
#[allow(dead_code)]
mod example;

#[test]
fn user_kernel_makes_csr_dense_multiply_direct() {
    example::run().unwrap();
}
