//! `exp` of a Csr matrix block by block, over the connected components of its graph.
//!
//! `exp(A) = Σ Aᵏ/k!`, and `(Aᵏ)ᵢⱼ` can be nonzero only where a chain of nonzero entries of
//! `A` leads from `i` to `j`. So indices that no chain connects (in either direction) have no
//! entry between them in `exp(A)` either: grouped by connected component, `A` and `exp(A)` are
//! block diagonal with the same blocks. A diagonal operator, or a local one on a large space
//! (a gate on two qubits of twenty, `σx ⊗ I`), splits into many small blocks. Each block is
//! exponentiated with the dense algorithm ([`expm_dense`]) and the result stays sparse, where
//! densifying the whole matrix would pass the dense limit. Blocks with the same entries, bit
//! for bit (a tensor product with an identity repeats one block many times), are
//! exponentiated once.
//!
//! QuTiP's `expm_csr` keeps a diagonal matrix sparse and otherwise runs scipy's sparse Padé
//! algorithm, whose products fill in within the same components.

use std::collections::HashMap;

use super::{expm_dense, non_finite, overflow};
use crate::error::Result;
use crate::scalar::{ZERO, c64};
use crate::storage::{Csr, Dense, alloc};

/// Blocks of at most this many rows are looked up among those already exponentiated (the key
/// is the block's entries; larger blocks are rarely repeated and costly to hash).
const SHARE_MAX: usize = 32;

/// `exp(a)` for square Csr `a` whose graph has more than one connected component, `None` when
/// it has one (the caller runs the dense algorithm on the whole matrix).
///
/// O(nnz + n) to find the components (union–find over the nonzero entries), then the dense
/// algorithm on each distinct block of two or more rows and a scalar `exp` on each single row.
///
/// # Errors
/// [`Error::Numerical`](crate::Error::Numerical) for a non-finite entry or an overflowing
/// exponential; [`Error::TooLarge`](crate::Error::TooLarge) where a block passes the dense
/// limit or the result's entries (the sum of the blocks' squared sizes) do not fit in memory.
pub(super) fn expm_csr_blocks(a: &Csr) -> Result<Option<Csr>> {
    let n = a.shape().0;
    let shape = (n, n);
    let (ptr, idx, val) = (a.indptr(), a.indices(), a.data());
    if !val.iter().all(|z| z.is_finite()) {
        return Err(non_finite());
    }
    if n < 2 {
        return Ok(None);
    }
    // Union–find, each root the smallest index of its set (a later root is linked under an
    // earlier one), with path halving. One array, allocated fallibly and relabelled in place
    // below: petgraph's `UnionFind` allocates its parent and rank arrays infallibly and
    // returns its labelling in a third.
    let mut parent: Vec<usize> = alloc::try_with_capacity("expm", shape, n)?;
    parent.extend(0..n);
    let find = |parent: &mut [usize], mut x: usize| {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    };
    let mut joins = 0usize;
    for i in 0..n {
        for k in ptr[i]..ptr[i + 1] {
            let j = idx[k];
            // A stored zero couples nothing.
            if j == i || val[k] == ZERO {
                continue;
            }
            let (ri, rj) = (find(&mut parent, i), find(&mut parent, j));
            if ri != rj {
                parent[ri.max(rj)] = ri.min(rj);
                joins += 1;
            }
        }
    }
    if joins == n - 1 {
        return Ok(None);
    }
    if joins == 0 {
        return diagonal(a).map(Some);
    }
    // Every index linked straight to its root (a parent precedes its child, so it is linked
    // already), then each root replaced by its component's number and each other index by
    // its root's: components numbered in order of their smallest index, in place.
    let mut comp = parent;
    let mut count = 0;
    for i in 0..n {
        if comp[i] == i {
            comp[i] = count;
            count += 1;
        } else {
            comp[i] = comp[comp[i]];
        }
    }
    // The members of each component in increasing order (a counting sort by component), and
    // each index's place among them. `at` counts the members, then places them, then holds
    // each block's index in `blocks`.
    let mut start: Vec<usize> = alloc::try_vec("expm", shape, count + 1, 0)?;
    for &c in &comp {
        start[c + 1] += 1;
    }
    for c in 0..count {
        start[c + 1] += start[c];
    }
    let size = |c: usize| start[c + 1] - start[c];
    // The result's entries at most: each block full.
    let full = (0..count).fold(0u128, |t, c| t + (size(c) as u128) * (size(c) as u128));
    let full = usize::try_from(full).map_err(|_| alloc::refused("expm", shape, u128::MAX))?;
    alloc::check_memory("expm", shape, alloc::csr_bytes(n + 1, full))?;
    let mut members: Vec<usize> = alloc::try_vec("expm", shape, n, 0)?;
    let mut local: Vec<usize> = alloc::try_vec("expm", shape, n, 0)?;
    let mut at: Vec<usize> = alloc::try_vec("expm", shape, count, 0)?;
    for i in 0..n {
        let c = comp[i];
        local[i] = at[c];
        members[start[c] + at[c]] = i;
        at[c] += 1;
    }
    // The exponential of each component of two or more rows (one row: a scalar `exp`, taken
    // when its row is written).
    let mut blocks: Vec<Dense> = Vec::new();
    let mut seen: HashMap<Vec<u64>, usize> = HashMap::new();
    // One block's entries and its key, reused from block to block.
    let mut entries: Vec<c64> = Vec::new();
    let mut key: Vec<u64> = Vec::new();
    for c in 0..count {
        let s = size(c);
        if s == 1 {
            continue;
        }
        // The block, column-major: entry (local i, local j) for each stored a[i, j] of the
        // component (a stored zero may point into another component: skipped).
        entries.clear();
        entries
            .try_reserve(s * s)
            .map_err(|_| alloc::refused("expm", (s, s), alloc::dense_bytes((s, s))))?;
        entries.resize(s * s, ZERO);
        for (li, &i) in members[start[c]..start[c + 1]].iter().enumerate() {
            for k in ptr[i]..ptr[i + 1] {
                let j = idx[k];
                if comp[j] == c {
                    entries[li + local[j] * s] = val[k];
                }
            }
        }
        let share = s <= SHARE_MAX;
        if share {
            key.clear();
            key.extend(
                entries
                    .iter()
                    .flat_map(|z| [z.re.to_bits(), z.im.to_bits()]),
            );
            if let Some(&b) = seen.get(key.as_slice()) {
                at[c] = b;
                continue;
            }
        }
        let e = expm_dense(&Dense::from_col_major(s, s, &entries)?)?;
        at[c] = blocks.len();
        if share {
            seen.insert(key.clone(), blocks.len());
        }
        blocks.push(e);
    }
    // The rows in order: row i is row local[i] of its block, its columns the component's
    // members (increasing); exact zeros are left out, as the dense path's conversion does.
    let (mut indptr, mut indices, mut data) = alloc::csr_buffers("expm", shape, n + 1, full)?;
    indptr.push(0);
    for i in 0..n {
        let c = comp[i];
        if size(c) == 1 {
            let e = diagonal_exp(a, i)?;
            if e != ZERO {
                indices.push(i);
                data.push(e);
            }
        } else {
            let e = blocks[at[c]].as_ref();
            let li = local[i];
            for (lj, &j) in members[start[c]..start[c + 1]].iter().enumerate() {
                let v = e[(li, lj)];
                if v != ZERO {
                    indices.push(j);
                    data.push(v);
                }
            }
        }
        indptr.push(indices.len());
    }
    // SAFETY: n + 1 row pointers from 0, non-decreasing, ending at the entry count; in each
    // row the columns are the component's members, increasing and below n (or the row itself).
    Ok(Some(unsafe {
        Csr::from_parts_unchecked(shape, indptr, indices, data)
    }))
}

/// `exp(a)` for a Csr `a` with no nonzero entry off its diagonal: `exp(aᵢᵢ)` on the diagonal
/// (1 where nothing is stored), O(n + nnz).
///
/// # Errors
/// [`Error::Numerical`](crate::Error::Numerical) where an exponential overflows;
/// [`Error::TooLarge`](crate::Error::TooLarge) if the result's arrays cannot be allocated.
fn diagonal(a: &Csr) -> Result<Csr> {
    let n = a.shape().0;
    let (mut indptr, mut indices, mut data) = alloc::csr_buffers("expm", (n, n), n + 1, n)?;
    indptr.push(0);
    for i in 0..n {
        let e = diagonal_exp(a, i)?;
        // exp(d) underflows to 0 for Re d below about −745: left out, as the dense path's
        // conversion leaves out exact zeros.
        if e != ZERO {
            indices.push(i);
            data.push(e);
        }
        indptr.push(indices.len());
    }
    // SAFETY: n + 1 row pointers from 0, non-decreasing, ending at the entry count; each row
    // holds at most its own column i < n.
    Ok(unsafe { Csr::from_parts_unchecked((n, n), indptr, indices, data) })
}

/// `exp(aᵢᵢ)` (1 where nothing is stored at (i, i)).
///
/// # Errors
/// [`Error::Numerical`](crate::Error::Numerical) if it overflows.
#[inline]
fn diagonal_exp(a: &Csr, i: usize) -> Result<c64> {
    let (ptr, idx) = (a.indptr(), a.indices());
    let d = idx[ptr[i]..ptr[i + 1]]
        .binary_search(&i)
        .map_or(ZERO, |k| a.data()[ptr[i] + k]);
    let e = d.exp();
    if e.is_finite() {
        Ok(e)
    } else {
        Err(overflow(d.norm()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::builtin::{csr_to_dense, dense_to_csr};

    fn c(re: f64, im: f64) -> c64 {
        c64::new(re, im)
    }

    /// The dense algorithm on the whole matrix, its zeros dropped: what `expm_csr` returned
    /// before it split the matrix.
    fn whole(a: &Csr) -> Csr {
        dense_to_csr(&expm_dense(&csr_to_dense(a).unwrap()).unwrap()).unwrap()
    }

    /// Entry by entry within `tol` of the largest entry. The stored patterns may differ by
    /// entries at that rounding level: an entry that is zero in exact arithmetic comes out
    /// as 0 in one evaluation order and as 10⁻¹² next to entries of 10⁷ in another.
    fn assert_close(got: &Csr, want: &Csr, tol: f64) {
        let scale = want.data().iter().fold(1.0f64, |m, z| m.max(z.norm()));
        let n = want.shape().0;
        for i in 0..n {
            for j in 0..n {
                let (g, w) = (got.get(i, j), want.get(i, j));
                assert!((g - w).norm() <= tol * scale, "({i}, {j}): {g} against {w}");
            }
        }
    }

    /// Blocks of 1 to 5 rows on a shuffled diagonal, with norms from 10⁻³ to 40 (so some
    /// blocks are scaled and squared), empty rows, and stored zeros that point into other
    /// blocks: the blocks' exponentials equal the whole matrix's to rounding, with the same
    /// pattern.
    #[test]
    fn blocks_agree_with_the_dense_algorithm() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for (round, scale) in [1e-3, 0.3, 2.0, 40.0]
            .into_iter()
            .cycle()
            .take(24)
            .enumerate()
        {
            // Block sizes, then a permutation of the indices.
            let mut sizes = Vec::new();
            let mut n = 0;
            while n < 3 + round * 2 {
                let s = 1 + (next() % 5) as usize;
                sizes.push(s);
                n += s;
            }
            let mut perm: Vec<usize> = (0..n).collect();
            for k in (1..n).rev() {
                perm.swap(k, (next() % (k as u64 + 1)) as usize);
            }
            let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
            let mut at = 0;
            for &s in &sizes {
                for i in 0..s {
                    for j in 0..s {
                        // About a third of the block's entries are absent; an empty block of
                        // one row leaves its row empty.
                        if next() % 3 == 0 {
                            continue;
                        }
                        let x = |v: u64| (v % 2001) as f64 / 1000.0 - 1.0;
                        rows.push(perm[at + i]);
                        cols.push(perm[at + j]);
                        vals.push(c(x(next()), x(next())) * (scale / s as f64));
                    }
                }
                at += s;
            }
            // A stored zero between the first and the last block.
            rows.push(perm[0]);
            cols.push(perm[n - 1]);
            vals.push(ZERO);
            let a = Csr::from_triplets((n, n), &rows, &cols, &vals).unwrap();
            let got = match expm_csr_blocks(&a).unwrap() {
                Some(e) => e,
                None => {
                    // Connected after all (one block): the caller's dense path.
                    assert_eq!(sizes.len(), 1, "round {round}");
                    continue;
                }
            };
            // No entry between two of the blocks it was built from.
            let block: Vec<usize> = sizes
                .iter()
                .enumerate()
                .flat_map(|(b, &s)| std::iter::repeat_n(b, s))
                .collect();
            let mut of = vec![0; n];
            for (k, &p) in perm.iter().enumerate() {
                of[p] = block[k];
            }
            for i in 0..n {
                for &j in &got.indices()[got.indptr()[i]..got.indptr()[i + 1]] {
                    assert_eq!(of[i], of[j], "round {round}: entry ({i}, {j})");
                }
            }
            assert_close(&got, &whole(&a), 1e-13);
        }
    }

    /// One block repeated (σx ⊗ I₃₂, blocks of two rows): exponentiated once, every copy the
    /// same bits; a diagonal matrix takes the scalar path, with exp(d) below the double range
    /// left out and an empty row given 1.
    #[test]
    fn repeated_blocks_and_diagonals() {
        let n = 64;
        let rows: Vec<usize> = (0..n).collect();
        let cols: Vec<usize> = (0..n).map(|i| (i + n / 2) % n).collect();
        let a = Csr::from_triplets((n, n), &rows, &cols, &vec![c(0.0, 0.7); n]).unwrap();
        let e = expm_csr_blocks(&a).unwrap().unwrap();
        assert_eq!(e.nnz(), 2 * n);
        for i in 0..n {
            assert_eq!(e.get(i, i), e.get(0, 0));
            assert_eq!(e.get(i, (i + n / 2) % n), e.get(0, n / 2));
        }
        assert!((e.get(0, 0) - c(0.7f64.cos(), 0.0)).norm() < 1e-15);
        assert!((e.get(0, n / 2) - c(0.0, 0.7f64.sin())).norm() < 1e-15);
        assert_close(&e, &whole(&a), 1e-14);

        // Row 1 empty, row 2 a stored zero, row 3 under the double range.
        let d = Csr::from_triplets(
            (4, 4),
            &[0, 2, 3],
            &[0, 2, 3],
            &[c(0.5, 1.0), ZERO, c(-800.0, 0.0)],
        )
        .unwrap();
        let e = expm_csr_blocks(&d).unwrap().unwrap();
        assert_eq!(e.indices(), &[0, 1, 2]);
        assert_eq!(e.get(1, 1), c(1.0, 0.0));
        assert_eq!(e.get(2, 2), c(1.0, 0.0));
        assert_eq!(e.get(0, 0), c(0.5, 1.0).exp());
    }

    /// A connected matrix is left to the caller; non-finite entries and overflowing blocks
    /// are the dense algorithm's errors.
    #[test]
    fn connected_matrices_and_errors() {
        let one = c(1.0, 0.0);
        let chain = Csr::from_triplets((3, 3), &[0, 1], &[1, 2], &[one, one]).unwrap();
        assert!(expm_csr_blocks(&chain).unwrap().is_none());
        let single = Csr::from_triplets((1, 1), &[0], &[0], &[one]).unwrap();
        assert!(expm_csr_blocks(&single).unwrap().is_none());

        let nan = Csr::from_triplets((3, 3), &[2], &[2], &[c(f64::NAN, 0.0)]).unwrap();
        let e = expm_csr_blocks(&nan).unwrap_err().to_string();
        assert!(e.contains("non-finite"), "{e}");
        let big = Csr::from_triplets((3, 3), &[0, 2], &[0, 2], &[one, c(800.0, 0.0)]).unwrap();
        let e = expm_csr_blocks(&big).unwrap_err().to_string();
        assert!(e.contains("overflows"), "{e}");
        let block = Csr::from_triplets(
            (3, 3),
            &[0, 1, 2],
            &[1, 0, 2],
            &[c(800.0, 0.0), c(800.0, 0.0), one],
        )
        .unwrap();
        let e = expm_csr_blocks(&block).unwrap_err().to_string();
        assert!(e.contains("overflows"), "{e}");
    }
}
