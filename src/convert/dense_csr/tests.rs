//! Tests of the Dense → Csr walks against a row-major reference walk.

use super::columns::{collect_columns, via_columns};
use super::small::{branch_free_walk, by_masks};
use super::*;

/// Row-major walk keeping what `!= 0` keeps: the reference for both Dense → Csr paths.
fn reference(a: &Dense) -> (Vec<usize>, Vec<usize>, Vec<c64>) {
    let (m, n) = a.shape();
    let (mut indptr, mut indices, mut data) = (vec![0], vec![], vec![]);
    for i in 0..m {
        for j in 0..n {
            let v = a.get(i, j);
            if v != c64::new(0.0, 0.0) {
                indices.push(j);
                data.push(v);
            }
        }
        indptr.push(indices.len());
    }
    (indptr, indices, data)
}

fn parts(c: &Csr) -> (Vec<usize>, Vec<usize>, Vec<c64>) {
    (c.indptr().to_vec(), c.indices().to_vec(), c.data().to_vec())
}

/// A 37×29 matrix with about `per_mille`‰ non-zeros, signed zeros and a NaN among them.
fn patterned(per_mille: usize) -> Dense {
    Dense::from_fn(37, 29, |i, j| {
        let h = (i * 7919 + j * 104_729 + 13) % 1000;
        match h {
            0 => c64::new(f64::NAN, 0.0),
            1 => c64::new(-0.0, 0.0),
            2 => c64::new(0.0, -0.0),
            h if h < per_mille => c64::new(h as f64, -(j as f64)),
            _ => c64::new(0.0, 0.0),
        }
    })
}

fn same(a: (Vec<usize>, Vec<usize>, Vec<c64>), b: (Vec<usize>, Vec<usize>, Vec<c64>)) {
    assert_eq!(a.0, b.0, "indptr");
    assert_eq!(a.1, b.1, "indices");
    assert_eq!(a.2.len(), b.2.len());
    for (x, y) in a.2.iter().zip(&b.2) {
        assert!(x == y || (x.re.is_nan() && y.re.is_nan()), "{x} vs {y}");
    }
}

#[test]
fn both_dense_to_csr_paths_match_a_row_major_walk() {
    // From all-zero through the switch to the blocked walk (limit = 37·29/4 = 268) to full,
    // both layouts, serial and by parallel row blocks.
    for per_mille in [0, 3, 30, 100, 240, 260, 300, 400, 1000] {
        let a = patterned(per_mille);
        let want = reference(&a);
        same(parts(&dense_to_csr(&a).unwrap()), want.clone());
        same(parts(&by_row_blocks(&a, 1).unwrap()), want.clone());
        same(parts(&by_masks(&a).unwrap()), want.clone());
        for workers in [1, 3, 40] {
            match via_columns(&a, workers, 37 * 29 / 4) {
                Some(c) => same(parts(&c), want.clone()),
                None => assert!(want.1.len() > 37 * 29 / 4, "{per_mille}‰ gave up"),
            }
        }
        same(parts(&by_row_blocks(&a, 3).unwrap()), want.clone());
        let r = a.clone().into_layout(Layout::RowMajor).unwrap();
        same(parts(&dense_to_csr(&r).unwrap()), want.clone());
        same(parts(&by_row_blocks(&r, 3).unwrap()), want);
    }
}

#[test]
fn parallel_row_blocks_match_in_both_layouts() {
    // 300 rows: several blocks of at least 64 rows for 2 and 3 workers.
    let a = Dense::from_fn(300, 41, |i, j| {
        if (i * 31 + j * 17) % 7 < 2 {
            c64::new(i as f64, j as f64 + 1.0)
        } else {
            c64::new(0.0, 0.0)
        }
    });
    let want = reference(&a);
    let r = a.clone().into_layout(Layout::RowMajor).unwrap();
    for workers in [2, 3] {
        same(parts(&by_row_blocks(&a, workers).unwrap()), want.clone());
        same(parts(&by_row_blocks(&r, workers).unwrap()), want.clone());
    }
}

/// The mask walk across word boundaries (rows a multiple of 64 or not), on sparse patterns
/// (bit walk) and mostly non-zero ones (row-block walk), signed zeros and a NaN included.
#[test]
fn mask_walk_matches_across_words() {
    for m in [1, 63, 64, 65, 128, 130] {
        for keep in [0, 1, 2, 6, 7] {
            let a = Dense::from_fn_for("test", m, 9, |i, j| match (i * 31 + j * 17) % 7 {
                _ if i == 5 && j == 3 => c64::new(f64::NAN, 1.0),
                _ if i == 2 && j == 1 => c64::new(-0.0, 0.0),
                h if h < keep => c64::new(i as f64, j as f64 + 1.0),
                _ => c64::new(0.0, 0.0),
            })
            .unwrap();
            let want = reference(&a);
            same(parts(&by_masks(&a).unwrap()), want.clone());
            if m * 9 > TINY && m * 9 <= SMALL {
                same(parts(&dense_to_csr(&a).unwrap()), want);
            }
        }
    }
}

/// The mask walk's row counts (16-bit lanes, flushed every `u16::MAX` columns) on rows with
/// more non-zeros than a lane holds: 70 000 columns, row 0 full, row 1 every third, row 2
/// none; both instances of the scan.
#[test]
fn mask_walk_counts_rows_past_a_lane() {
    let n = 70_000;
    let a = Dense::from_fn(3, n, |i, j| match i {
        0 => c64::new(j as f64 + 1.0, 0.0),
        1 if j % 3 == 0 => c64::new(0.0, -1.0),
        _ => c64::new(0.0, 0.0),
    });
    let want = reference(&a);
    same(parts(&by_masks(&a).unwrap()), want.clone());
    same(
        parts(&crate::simd::baseline(|| by_masks(&a)).unwrap()),
        want,
    );
}

/// The branch-free walk on every shape up to its limit's neighbourhood: all-zero, full,
/// sparse patterns ending in zeros (the stores past the last non-zero go to the slack),
/// signed zeros and a NaN; and `dense_to_csr` on either side of [`BRANCH_FREE`].
#[test]
fn branch_free_walk_matches_a_row_major_walk() {
    for (m, n) in [
        (1, 1),
        (1, 7),
        (7, 1),
        (3, 4),
        (10, 10),
        (11, 11),
        (12, 11),
        (1, 128),
    ] {
        for keep in [0, 1, 3, 7] {
            let a = Dense::from_fn_for("test", m, n, |i, j| match (i * 31 + j * 17) % 7 {
                _ if (i, j) == (2, 0) => c64::new(f64::NAN, -1.0),
                _ if (i, j) == (0, 2) => c64::new(-0.0, 0.0),
                _ if (i, j) == (m - 1, n - 1) => c64::new(0.0, -0.0),
                h if h < keep => c64::new(i as f64 + 1.0, j as f64),
                _ => c64::new(0.0, 0.0),
            })
            .unwrap();
            let want = reference(&a);
            same(parts(&branch_free_walk(&a).unwrap()), want.clone());
            same(parts(&dense_to_csr(&a).unwrap()), want);
        }
    }
}

/// Small matrices with no zero entry take the known pattern (`small::full`): every shape up
/// to the branch-free limit's neighbourhood, row counts with and without padding in the
/// buffer, NaN, infinities and parts that are zero on one side only; a single zero entry
/// sends the matrix back to the walk, which must give the same entries less that one.
#[test]
fn full_small_matrices_take_the_known_pattern() {
    for (m, n) in [
        (1, 1),
        (1, 128),
        (128, 1),
        (7, 3),
        (10, 10),
        (11, 11),
        (3, 42),
    ] {
        let a = Dense::from_fn(m, n, |i, j| match (i * 7 + j * 3) % 5 {
            0 => c64::new(f64::NAN, 0.0),
            1 => c64::new(-0.0, f64::NEG_INFINITY),
            2 => c64::new(i as f64 + 1.0, -(j as f64)),
            3 => c64::new(1e-310, -0.0),
            _ => c64::new(-2.5, 0.5),
        });
        let want = reference(&a);
        assert_eq!(want.1.len(), m * n, "{m}×{n} is full");
        let c = dense_to_csr(&a).unwrap();
        assert!(c.stores_every_entry());
        same(parts(&c), want);
        // One zero entry: back to the walk.
        let b = Dense::from_fn(m, n, |i, j| {
            if (i, j) == (m / 2, n / 2) {
                c64::new(0.0, -0.0)
            } else {
                a.get(i, j)
            }
        });
        same(parts(&dense_to_csr(&b).unwrap()), reference(&b));
        assert_eq!(dense_to_csr(&b).unwrap().nnz(), m * n - 1);
    }
}

#[test]
fn collect_columns_gives_up_past_its_limit() {
    let a = patterned(400);
    let nnz = reference(&a).1.len();
    assert!(collect_columns(&a, 0..29, nnz - 1).is_none());
    let csc = collect_columns(&a, 0..29, nnz).expect("within the limit");
    assert_eq!(csc.rows.len(), nnz);
    assert_eq!(csc.colptr.len(), 30);
    assert_eq!(csc.row_counts.iter().sum::<usize>(), nnz);
}

#[test]
fn empty_shapes_convert() {
    for (m, n) in [(0, 0), (0, 5), (5, 0)] {
        let c = dense_to_csr(&Dense::zeros(m, n)).unwrap();
        assert_eq!((c.shape(), c.nnz(), c.indptr().len()), ((m, n), 0, m + 1));
    }
}

/// Columns taller than a 64-entry block: non-zeros on both sides of block boundaries and in the
/// tail past the last full block, columns full enough that the next one goes by runs and empty
/// ones that bring the block test back, NaN and signed zeros; serial and parallel, and the
/// limit while blocks are skipped.
#[test]
fn collect_columns_by_blocks_matches_a_row_major_walk() {
    let (m, n) = (300, 41);
    let edges = [
        0, 1, 63, 64, 65, 127, 128, 191, 192, 255, 256, 257, 298, 299,
    ];
    let a = Dense::from_fn(m, n, |i, j| {
        let v = c64::new((i + 1) as f64, j as f64);
        match j % 5 {
            // Boundaries and the tail (rows 256..300).
            0 if edges.contains(&i) => v,
            // Full: the next column goes by runs.
            1 => v,
            // Sparse again after a full column, then empty (the block test comes back).
            2 if i % 97 == 5 => v,
            3 => c64::new(0.0, 0.0),
            // Scattered, with zeros of either sign (not stored) and a NaN (stored).
            4 => match (i * 7919 + j * 104_729) % 50 {
                0 => c64::new(f64::NAN, 1.0),
                1 => c64::new(-0.0, 0.0),
                2 => c64::new(0.0, -0.0),
                3 => v,
                _ => c64::new(0.0, 0.0),
            },
            _ => c64::new(0.0, 0.0),
        }
    });
    let want = reference(&a);
    for workers in [1, 3] {
        let got = via_columns(&a, workers, usize::MAX).expect("no limit");
        same(parts(&got), want.clone());
    }
    // The limit while the block test runs (the first column is sparse).
    let first = edges.len();
    assert!(collect_columns(&a, 0..1, first - 1).is_none());
    assert_eq!(collect_columns(&a, 0..1, first).unwrap().rows, edges);
}
