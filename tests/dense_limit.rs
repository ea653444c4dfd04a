//! A row-major `Dense` whose column-major copy would pass the dense limit: the column accessors'
//! `try_` forms and the kernels that read columns return [`Error::TooLarge`] instead of
//! panicking, and leave the matrix as it was. The limit is process-wide, so this file is its
//! own test binary with one test.

use polymat::{Csr, Data, Dense, Error, Layout, Out, c64};

fn too_large<T: std::fmt::Debug>(what: &str, r: polymat::Result<T>) {
    match r {
        Err(Error::TooLarge { .. }) => {}
        other => panic!("{what}: expected TooLarge, got {other:?}"),
    }
}

#[test]
fn a_row_major_copy_past_the_limit_is_an_error() {
    // A row-major ket of 2²⁰ entries (16 MiB): its buffer is one row, so every column
    // accessor needs a column-major copy of the same size.
    let n = 1 << 20;
    let values: Vec<c64> = (0..n)
        .map(|i| c64::new(1.0 / (1.0 + i as f64), (i % 7) as f64))
        .collect();
    let ket = Dense::from_row_major(n, 1, &values).unwrap();
    assert_eq!(ket.layout(), Layout::RowMajor);
    let data: Data = ket.clone().into();
    let op: Data = Csr::identity(n).into();

    polymat::set_dense_limit(1 << 20);
    too_large("try_col", ket.try_col(0));
    too_large("try_columns", ket.try_columns().map(|c| c.count()));
    too_large("try_as_mat", ket.try_as_mat().map(|m| m.nrows()));
    too_large(
        "try_into_mat",
        ket.clone().try_into_mat().map(|m| m.nrows()),
    );
    let mut m = ket.clone();
    too_large("try_as_mat_mut", m.try_as_mat_mut().map(|m| m.nrows()));
    too_large("try_col_mut", m.try_col_mut(0).map(|c| c.len()));
    assert_eq!(
        m.layout(),
        Layout::RowMajor,
        "a failed conversion changes nothing"
    );
    assert_eq!(m, ket);
    // Kernels that read the ket's column (each named the operation before this change by
    // panicking in `Dense::col`).
    too_large("expect Csr·Dense", polymat::expect(&op, &data));
    too_large("inner_op", polymat::inner_op(&data, &op, &data));
    // Reductions that walk the buffer in place need no copy: the norm, and `inner`, which
    // reads a one-row buffer's entries where they are.
    assert!(polymat::ops::norm::l2(&data).is_ok());
    let norm2: f64 = values.iter().map(|v| v.norm_sqr()).sum();
    let i = polymat::inner(&data, &data).unwrap();
    assert!((i.re - norm2).abs() <= 1e-10 * norm2, "{i} vs {norm2}");
    assert_eq!(i.im, 0.0);

    polymat::set_dense_limit(0);
    assert_eq!(ket.try_col(0).unwrap(), &values[..]);
    assert_eq!(ket.try_columns().unwrap().count(), 1);
    assert_eq!(ket.try_as_mat().unwrap()[(5, 0)], values[5]);
    let e = polymat::expect(&op, &data).unwrap();
    assert!((e.re - norm2).abs() <= 1e-10 * norm2, "{e} vs {norm2}");
    let i = polymat::inner(&data, &data).unwrap();
    assert!((i.re - norm2).abs() <= 1e-10 * norm2, "{i} vs {norm2}");
    let mut m = ket.clone();
    assert_eq!(m.try_col_mut(0).unwrap()[3], values[3]);
    assert_eq!(m.layout(), Layout::ColMajor);
    assert_eq!(m, ket);
    assert_eq!(ket.try_into_mat().unwrap().nrows(), n);
    // Nothing above densified the operator.
    assert!(polymat::mul(&op, c64::new(2.0, 0.0), Out::Auto).is_ok());
}
