//! `examples/custom_dispatcher.rs`, run and asserted.

#[path = "../examples/custom_dispatcher.rs"]
#[allow(dead_code)]
mod example;

#[test]
fn add_square_works_for_every_kind_combination() {
    example::run().unwrap();
}
