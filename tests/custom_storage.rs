//! `examples/custom_storage.rs`, run and asserted (its own process: it registers `Diag`).

#[path = "../examples/custom_storage.rs"]
#[allow(dead_code)]
mod example;

#[test]
fn diag_storage_works_with_every_operation() {
    example::run().unwrap();
}
