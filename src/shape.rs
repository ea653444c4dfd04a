//! The shape rules every backend shares, and checked size arithmetic.
//!
//! Crate-private and at the ground floor: storage, the GPU backend and the operations all check
//! shapes with these functions, so an operation fails with the same [`Error::Shape`] whichever
//! kind runs it. Sizes derived from user input (`rows + 1` row pointers, `rows·cols` entries,
//! products of dimensions) are computed with checked arithmetic here and never wrap.

use crate::error::{Error, Result};

/// Both operands must have the same shape.
pub(crate) fn same_shape(op: &str, a: (usize, usize), b: (usize, usize)) -> Result<()> {
    if a == b {
        Ok(())
    } else {
        Err(Error::shape(
            op,
            &[a, b],
            "operands must have the same shape",
        ))
    }
}

/// The operand must be square.
pub(crate) fn square(op: &str, a: (usize, usize)) -> Result<()> {
    if a.0 == a.1 {
        Ok(())
    } else {
        Err(Error::shape(op, &[a], "the operand must be square"))
    }
}

/// The columns of `a` must match the rows of `b`.
pub(crate) fn matmul_shapes(op: &str, a: (usize, usize), b: (usize, usize)) -> Result<()> {
    if a.1 == b.0 {
        Ok(())
    } else {
        Err(Error::shape(
            op,
            &[a, b],
            "the left operand's columns must match the right operand's rows",
        ))
    }
}

/// `a·b†`: both operands must have the same number of columns.
pub(crate) fn matmul_dag_shapes(op: &str, a: (usize, usize), b: (usize, usize)) -> Result<()> {
    if a.1 == b.1 {
        Ok(())
    } else {
        Err(Error::shape(
            op,
            &[a, b],
            "both operands must have the same number of columns",
        ))
    }
}

/// A bra (1×n) or a ket (n×1).
pub(crate) fn is_vector(s: (usize, usize)) -> bool {
    s.0 == 1 || s.1 == 1
}

/// QuTiP's convention: a left operand with one row is a bra (so a 1×1 is not conjugated).
pub(crate) fn is_bra(s: (usize, usize)) -> bool {
    s.0 == 1
}

/// `left` is a bra (1×n) or a ket (n×1), `right` a ket (n×1) of the same dimension.
pub(crate) fn inner_shapes(op: &str, l: (usize, usize), r: (usize, usize)) -> Result<()> {
    let n = if l.0 == 1 { l.1 } else { l.0 };
    if is_vector(l) && r.1 == 1 && r.0 == n {
        Ok(())
    } else {
        Err(Error::shape(
            op,
            &[l, r],
            "left must be a bra (1×n) or ket (n×1) and right a ket (n×1)",
        ))
    }
}

/// `⟨left|op|right⟩` shapes: left bra/ket of dimension n, op n×m, right a ket m×1.
pub(crate) fn inner_op_shapes(
    op: &str,
    l: (usize, usize),
    o: (usize, usize),
    r: (usize, usize),
) -> Result<()> {
    let n = if l.0 == 1 { l.1 } else { l.0 };
    if is_vector(l) && n == o.0 && r.1 == 1 && r.0 == o.1 {
        Ok(())
    } else {
        Err(Error::shape(
            op,
            &[l, o, r],
            "left must be a bra or ket of dimension n, the operator n×m and right a ket m×1",
        ))
    }
}

/// `expect(op, state)` shapes: op n×n, state a ket n×1 or an operator n×n.
pub(crate) fn expect_shapes(op: &str, o: (usize, usize), s: (usize, usize)) -> Result<()> {
    if o.0 == o.1 && s.0 == o.0 && (s.1 == 1 || s.1 == o.0) {
        Ok(())
    } else {
        Err(Error::shape(
            op,
            &[o, s],
            "the operator must be n×n and the state a ket n×1 or an operator n×n",
        ))
    }
}

/// `rows·cols` of both shapes must be equal and representable (two products that overflow are
/// not equal).
pub(crate) fn reshape_shape(op: &str, from: (usize, usize), to: (usize, usize)) -> Result<()> {
    match (from.0.checked_mul(from.1), to.0.checked_mul(to.1)) {
        (Some(a), Some(b)) if a == b => Ok(()),
        (Some(_), Some(_)) => Err(Error::shape(
            op,
            &[from, to],
            "the new shape must hold as many entries as the old one",
        )),
        _ => Err(Error::shape(
            op,
            &[from, to],
            "rows·cols overflows usize: entries of such a shape cannot be numbered",
        )),
    }
}

/// `rows·cols`, or [`Error::Shape`] naming `op` when it overflows `usize`.
pub(crate) fn entries(op: &str, shape: (usize, usize)) -> Result<usize> {
    shape
        .0
        .checked_mul(shape.1)
        .ok_or_else(|| Error::shape(op, &[shape], "rows·cols overflows usize"))
}

/// The length of a CSR row-pointer array, `rows + 1`, or [`Error::Shape`] when it overflows.
pub(crate) fn indptr_len(op: &str, shape: (usize, usize)) -> Result<usize> {
    shape
        .0
        .checked_add(1)
        .ok_or_else(|| Error::shape(op, &[shape], "rows + 1 overflows usize"))
}

/// `a·b` for two dimensions, or [`Error::Shape`] naming the shapes when it overflows.
pub(crate) fn product(op: &str, shapes: &[(usize, usize)], a: usize, b: usize) -> Result<usize> {
    a.checked_mul(b)
        .ok_or_else(|| Error::shape(op, shapes, "the result's dimensions overflow usize"))
}

/// The shape of `a ⊗ b`; its number of entries must fit `usize` too.
pub(crate) fn kron_shape(op: &str, a: (usize, usize), b: (usize, usize)) -> Result<(usize, usize)> {
    match (a.0.checked_mul(b.0), a.1.checked_mul(b.1)) {
        (Some(r), Some(c)) if r.checked_mul(c).is_some() => Ok((r, c)),
        _ => Err(Error::shape(
            op,
            &[a, b],
            "the result's rows·cols overflows usize",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflowing_products_are_never_equal() {
        let big = usize::MAX / 2 + 1;
        assert!(reshape_shape("reshape", (big, 2), (2, big)).is_err());
        let e = reshape_shape("reshape", (1 << 40, 1 << 40), (1 << 39, 1 << 41)).unwrap_err();
        assert!(e.to_string().contains("overflows"), "{e}");
        assert!(reshape_shape("reshape", (2, 3), (3, 2)).is_ok());
        assert!(reshape_shape("reshape", (2, 3), (4, 2)).is_err());
    }

    #[test]
    fn checked_sizes() {
        assert_eq!(entries("t", (3, 4)).unwrap(), 12);
        assert!(entries("t", (usize::MAX, 2)).is_err());
        assert_eq!(indptr_len("t", (3, 0)).unwrap(), 4);
        assert!(indptr_len("t", (usize::MAX, 1)).is_err());
        assert!(kron_shape("kron", (1 << 20, 1), (1 << 20, 1)).is_ok());
        assert!(kron_shape("kron", (1 << 40, 1 << 20), (1 << 20, 1 << 20)).is_err());
        assert_eq!(kron_shape("kron", (2, 3), (4, 5)).unwrap(), (8, 15));
    }

    #[test]
    fn vector_rules() {
        assert!(inner_shapes("inner", (1, 3), (3, 1)).is_ok());
        assert!(inner_shapes("inner", (3, 1), (3, 1)).is_ok());
        assert!(inner_shapes("inner", (3, 2), (3, 1)).is_err());
        assert!(expect_shapes("expect", (2, 2), (2, 2)).is_ok());
        assert!(expect_shapes("expect", (2, 3), (3, 1)).is_err());
        assert!(is_bra((1, 1)) && is_vector((1, 5)) && !is_vector((2, 2)));
    }
}
