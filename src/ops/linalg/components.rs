//! Matrix functions of a Csr matrix block by block, over the connected components of its
//! graph: `exp` and the inverse.
//!
//! Group the indices of a square `A` into the connected components of its graph (`i` and `j`
//! linked by a chain of nonzero entries, in either direction). After that permutation `A` is
//! block diagonal, and so are `exp(A) = Σ Aᵏ/k!` and `A⁻¹` (a polynomial in `A`), with the
//! function of each block in its place. A diagonal operator, or a local one on a large space
//! (a gate on two qubits of twenty, `σx ⊗ I`), splits into many small blocks: each goes
//! through the dense kernel and the result stays sparse, where densifying the whole matrix
//! would pass the dense limit. Blocks with the same entries, bit for bit (a tensor product
//! with an identity repeats one block many times), go through it once.
//!
//! QuTiP's `expm_csr` keeps a diagonal matrix sparse and otherwise runs scipy's sparse Padé
//! algorithm, and its `inv_csr` scipy's sparse `inv`: their products and solves fill in
//! within the same components.

use std::collections::HashMap;

use crate::convert::builtin::{csr_to_dense, dense_to_csr};
use crate::error::Result;
use crate::scalar::{ZERO, c64};
use crate::storage::{Csr, Dense, alloc};

/// Blocks of at most this many rows are looked up among those already exponentiated (the key
/// is the block's entries; larger blocks are rarely repeated and costly to hash).
const SHARE_MAX: usize = 32;

/// `f(a)` for square Csr `a` whose graph has more than one connected component, `None` when
/// it has one (the caller runs its dense kernel on the whole matrix). `block` is `f` of a
/// dense block of two or more rows, `scalar(i, aᵢᵢ)` that of a one-row block (row `i`, its
/// diagonal entry or 0). Exact zeros are left out of the result, as a dense kernel's
/// conversion to Csr leaves them out.
///
/// O(nnz + n) to find the components (union–find over the nonzero entries), then `block` on
/// each distinct block and `scalar` on each single row.
///
/// # Errors
/// Those of `block` and `scalar`; [`Error::TooLarge`](crate::Error::TooLarge) (naming `op`)
/// where the result's entries (the sum of the blocks' squared sizes) do not fit in memory.
pub(crate) fn by_components(
    a: &Csr,
    op: &str,
    block: impl Fn(&Dense) -> Result<Dense>,
    scalar: impl Fn(usize, c64) -> Result<c64>,
) -> Result<Option<Csr>> {
    let n = a.shape().0;
    let shape = (n, n);
    let (ptr, idx, val) = (a.indptr(), a.indices(), a.data());
    if n < 2 {
        return Ok(None);
    }
    // Union–find, each root the smallest index of its set (a later root is linked under an
    // earlier one), with path halving. One array, allocated fallibly and relabelled in place
    // below: petgraph's `UnionFind` allocates its parent and rank arrays infallibly and
    // returns its labelling in a third.
    let mut parent: Vec<usize> = alloc::try_with_capacity(op, shape, n)?;
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
        return diagonal(a, op, scalar).map(Some);
    }
    // Components numbered in order of their smallest index, in place, in one increasing pass:
    // a root takes the next number, any other index its parent's (a parent precedes its
    // child, so the parent's slot holds its number already).
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
    let mut start: Vec<usize> = alloc::try_vec(op, shape, count + 1, 0)?;
    for &c in &comp {
        start[c + 1] += 1;
    }
    for c in 0..count {
        start[c + 1] += start[c];
    }
    let size = |c: usize| start[c + 1] - start[c];
    // The result's entries at most: each block full.
    let full = (0..count).fold(0u128, |t, c| t + (size(c) as u128) * (size(c) as u128));
    let full = usize::try_from(full).map_err(|_| alloc::refused(op, shape, u128::MAX))?;
    alloc::check_memory(op, shape, alloc::csr::csr_bytes(n + 1, full))?;
    let mut members: Vec<usize> = alloc::try_vec(op, shape, n, 0)?;
    let mut local: Vec<usize> = alloc::try_vec(op, shape, n, 0)?;
    let mut at: Vec<usize> = alloc::try_vec(op, shape, count, 0)?;
    for i in 0..n {
        let c = comp[i];
        local[i] = at[c];
        members[start[c] + at[c]] = i;
        at[c] += 1;
    }
    // `f` of each component of two or more rows (one row: `scalar`, taken when its row is
    // written). The distinct blocks' results are held until then, beside the result.
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
            .map_err(|_| alloc::refused(op, (s, s), alloc::dense_bytes((s, s))))?;
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
        let e = block(&Dense::from_col_major(s, s, &entries)?)?;
        at[c] = blocks.len();
        if share {
            seen.insert(key.clone(), blocks.len());
        }
        blocks.push(e);
    }
    // The rows in order: row i is row local[i] of its block, its columns the component's
    // members (increasing); exact zeros are left out, as the dense path's conversion does.
    let (mut indptr, mut indices, mut data) = alloc::csr::csr_buffers(op, shape, n + 1, full)?;
    indptr.push(0);
    for i in 0..n {
        let c = comp[i];
        if size(c) == 1 {
            let e = scalar(i, diagonal_entry(a, i))?;
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

/// `f(a)` from [`by_components`]'s result: its blocks when `a` has more than one component,
/// else `dense` on the whole matrix (densified within the dense limit), exact zeros dropped.
///
/// # Errors
/// Those of the conversions and of `dense`.
pub(crate) fn or_whole(
    blocks: Option<Csr>,
    a: &Csr,
    dense: impl Fn(&Dense) -> Result<Dense>,
) -> Result<Csr> {
    match blocks {
        Some(x) => Ok(x),
        None => dense_to_csr(&dense(&csr_to_dense(a)?)?),
    }
}

/// `f(a)` for a Csr `a` with no nonzero entry off its diagonal: `scalar(i, aᵢᵢ)` on the
/// diagonal, O(n + nnz).
///
/// # Errors
/// Those of `scalar`; [`Error::TooLarge`](crate::Error::TooLarge) if the result's arrays
/// cannot be allocated.
fn diagonal(a: &Csr, op: &str, scalar: impl Fn(usize, c64) -> Result<c64>) -> Result<Csr> {
    let n = a.shape().0;
    let (mut indptr, mut indices, mut data) = alloc::csr::csr_buffers(op, (n, n), n + 1, n)?;
    indptr.push(0);
    for i in 0..n {
        let e = scalar(i, diagonal_entry(a, i))?;
        // An exact zero (exp(d) below the double range) is left out, as the dense kernels'
        // conversion leaves it out.
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

/// `aᵢᵢ` (0 where nothing is stored at (i, i)).
#[inline]
fn diagonal_entry(a: &Csr, i: usize) -> c64 {
    let (ptr, idx) = (a.indptr(), a.indices());
    idx[ptr[i]..ptr[i + 1]]
        .binary_search(&i)
        .map_or(ZERO, |k| a.data()[ptr[i] + k])
}
