//! The two distributed storage kinds: rows in contiguous blocks, one block per rank.

use mpi::datatype::{Partition, PartitionMut};
use mpi::traits::*;

use super::{Comm, arg, block, owner, pack, unpack};
use crate::{Csr, Dense, Result, Storage, c64};

/// A dense matrix (a ket, or a block of vectors) whose rows are split over the ranks in
/// contiguous blocks ([`block`](super::block)): this rank holds rows `start..start + rows` of
/// the `shape.0 × shape.1` matrix as a local [`Dense`].
#[derive(Debug, Clone)]
pub struct DistDense {
    shape: (usize, usize),
    start: usize,
    local: Dense,
}

impl Storage for DistDense {
    fn shape(&self) -> (usize, usize) {
        self.shape
    }
}

impl DistDense {
    /// This rank's rows of `full`, which every rank holds (no communication).
    ///
    /// # Errors
    /// [`Error::TooLarge`](crate::Error::TooLarge) if the rows cannot be allocated.
    pub fn from_global(full: &Dense) -> Result<DistDense> {
        let comm = Comm::world();
        let (n, k) = full.shape();
        let rows = block(n, comm.size, comm.rank);
        let local = Dense::from_fn(rows.len(), k, |i, j| full.get(rows.start + i, j));
        Ok(DistDense {
            shape: (n, k),
            start: rows.start,
            local,
        })
    }

    /// A distributed matrix from this rank's rows: `local` must be the rows
    /// [`block`](super::block)`(rows, size, rank)` of a `rows × local.cols` matrix.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) if `local` has the wrong
    /// number of rows for this rank.
    pub fn from_local(rows: usize, local: Dense) -> Result<DistDense> {
        let comm = Comm::world();
        let mine = block(rows, comm.size, comm.rank);
        if local.shape().0 != mine.len() {
            return Err(arg(format!(
                "rank {} holds rows {:?} of {rows}, got {} local rows",
                comm.rank,
                mine,
                local.shape().0
            )));
        }
        Ok(DistDense {
            shape: (rows, local.shape().1),
            start: mine.start,
            local,
        })
    }

    /// The first global row this rank holds.
    pub fn start(&self) -> usize {
        self.start
    }

    /// This rank's rows.
    pub fn local(&self) -> &Dense {
        &self.local
    }

    /// The whole matrix on every rank (`MPI_Allgatherv`). Explicit on purpose: the registry has
    /// no conversion out of a distributed kind, so no operation gathers by accident.
    ///
    /// # Errors
    /// [`Error::TooLarge`](crate::Error::TooLarge) if the full matrix cannot be allocated.
    pub fn gather(&self) -> Result<Dense> {
        let comm = Comm::world();
        let (n, k) = self.shape;
        let counts: Vec<i32> = (0..comm.size)
            .map(|r| count(block(n, comm.size, r).len() * k * 2))
            .collect::<Result<_>>()?;
        let displs = displacements(&counts);
        // Row-major pairs of f64 per rank, so each rank's rows are one contiguous piece.
        let send = pack(&self.local);
        let mut recv = vec![0.0f64; n * k * 2];
        {
            let mut part = PartitionMut::new(&mut recv[..], &counts[..], &displs[..]);
            comm.world.all_gather_varcount_into(&send[..], &mut part);
        }
        unpack(&recv, n, k)
    }

    pub(super) fn with_local(&self, local: Dense) -> DistDense {
        DistDense {
            shape: self.shape,
            start: self.start,
            local,
        }
    }
}

/// The halo exchange plan of a [`DistCsr`] row block.
#[derive(Debug, Clone)]
struct Halo {
    /// Entries this rank sends to each rank, per matrix–vector product.
    send_counts: Vec<usize>,
    /// The local rows (of the vector's block on this rank) to send, grouped by rank.
    send_rows: Vec<usize>,
    /// Entries this rank receives from each rank (the remote columns its rows use).
    recv_counts: Vec<usize>,
}

/// A sparse matrix whose rows are split over the ranks in contiguous blocks: this rank holds
/// rows `start..start + rows` as a local [`Csr`] with global column indices, plus a copy with
/// the columns renumbered into `[own block | halo]` and the plan that fetches the halo entries
/// of a [`DistDense`] vector from their owners before each product.
#[derive(Debug, Clone)]
pub struct DistCsr {
    shape: (usize, usize),
    start: usize,
    local: Csr,
    compact: Csr,
    halo: Halo,
}

impl Storage for DistCsr {
    fn shape(&self) -> (usize, usize) {
        self.shape
    }
}

impl DistCsr {
    /// This rank's rows of `full`, which every rank holds, and the halo plan. **Collective**:
    /// every rank must call it (in the same order as its other collective calls).
    ///
    /// # Errors
    /// [`Error::TooLarge`](crate::Error::TooLarge) if the local arrays cannot be allocated.
    pub fn from_global(full: &Csr) -> Result<DistCsr> {
        let (p, idx, val) = (full.indptr(), full.indices(), full.data());
        DistCsr::from_row_fn(full.shape().0, full.shape().1, |i| {
            (p[i]..p[i + 1]).map(|e| (idx[e], val[e])).collect()
        })
    }

    /// A `rows × cols` matrix built row by row on the rank that owns the row, so that no rank
    /// ever holds the whole operator: `row(i)` returns the `(column, value)` entries of global
    /// row `i` (any order; repeated columns are summed). **Collective.**
    ///
    /// # Errors
    /// [`Error::InvalidCsr`](crate::Error::InvalidCsr) if a column is out of range.
    pub fn from_row_fn(
        rows: usize,
        cols: usize,
        row: impl Fn(usize) -> Vec<(usize, c64)>,
    ) -> Result<DistCsr> {
        let comm = Comm::world();
        let mine = block(rows, comm.size, comm.rank);
        let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
        for i in mine.clone() {
            for (j, x) in row(i) {
                r.push(i - mine.start);
                c.push(j);
                v.push(x);
            }
        }
        let local = Csr::from_triplets((mine.len(), cols), &r, &c, &v)?;
        DistCsr::from_local(rows, local)
    }

    /// A distributed matrix from this rank's rows (`local`: the rows
    /// [`block`](super::block)`(rows, size, rank)`, global column indices). **Collective.**
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) if `local` has the wrong
    /// number of rows for this rank.
    pub fn from_local(rows: usize, local: Csr) -> Result<DistCsr> {
        let comm = Comm::world();
        let mine = block(rows, comm.size, comm.rank);
        let (lr, m) = local.shape();
        if lr != mine.len() {
            return Err(arg(format!(
                "rank {} holds rows {mine:?} of {rows}, got {lr} local rows",
                comm.rank
            )));
        }
        // The columns this rank's rows use, by owner (the vector is split like the columns).
        let cols_here = block(m, comm.size, comm.rank);
        let mut needed: Vec<Vec<usize>> = vec![Vec::new(); comm.size];
        for &c in local.indices() {
            if !cols_here.contains(&c) {
                needed[owner(m, comm.size, c)].push(c);
            }
        }
        for list in &mut needed {
            list.sort_unstable();
            list.dedup();
        }
        let recv_counts: Vec<usize> = needed.iter().map(Vec::len).collect();
        // Tell each owner which of its entries this rank needs.
        let mut asked_counts = vec![0u64; comm.size];
        let offered: Vec<u64> = recv_counts.iter().map(|&x| x as u64).collect();
        comm.world
            .all_to_all_into(&offered[..], &mut asked_counts[..]);
        let send_counts: Vec<usize> = asked_counts.iter().map(|&x| x as usize).collect();
        let requests: Vec<u64> = needed.iter().flatten().map(|&c| c as u64).collect();
        let rc = counts_i32(&recv_counts)?;
        let sc = counts_i32(&send_counts)?;
        let mut asked = vec![0u64; send_counts.iter().sum()];
        {
            let rd = displacements(&rc);
            let sd = displacements(&sc);
            let part = Partition::new(&requests[..], &rc[..], &rd[..]);
            let mut into = PartitionMut::new(&mut asked[..], &sc[..], &sd[..]);
            comm.world.all_to_all_varcount_into(&part, &mut into);
        }
        let send_rows = asked
            .iter()
            .map(|&c| c as usize - cols_here.start)
            .collect();
        // Renumber: own columns first, then the halo in the order it arrives.
        let own = cols_here.len();
        let halo_cols: Vec<usize> = needed.into_iter().flatten().collect();
        let compact_col = |c: usize| -> usize {
            if cols_here.contains(&c) {
                c - cols_here.start
            } else {
                // `halo_cols` is sorted within each owner and owners are in rank order, so
                // the whole list is sorted (blocks are increasing): binary search.
                own + halo_cols.binary_search(&c).unwrap_or_default()
            }
        };
        let (p, idx, val) = (local.indptr(), local.indices(), local.data());
        let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..lr {
            for e in p[i]..p[i + 1] {
                r.push(i);
                c.push(compact_col(idx[e]));
                v.push(val[e]);
            }
        }
        let compact = Csr::from_triplets((lr, own + halo_cols.len()), &r, &c, &v)?;
        Ok(DistCsr {
            shape: (rows, m),
            start: mine.start,
            local,
            compact,
            halo: Halo {
                send_counts,
                send_rows,
                recv_counts,
            },
        })
    }

    /// The first global row this rank holds.
    pub fn start(&self) -> usize {
        self.start
    }

    /// This rank's rows, with global column indices.
    pub fn local(&self) -> &Csr {
        &self.local
    }

    /// The vector entries this rank receives from other ranks in each product (its halo).
    pub fn halo_len(&self) -> usize {
        self.halo.recv_counts.iter().sum()
    }

    /// `self · x`: the halo entries of `x` fetched from their owners (`MPI_Alltoallv`), then
    /// the local Csr·Dense kernel on `[own rows of x | halo]`. **Collective.**
    ///
    /// # Errors
    /// [`Error::Shape`](crate::Error::Shape) if the shapes do not chain.
    pub fn matmul(&self, x: &DistDense) -> Result<DistDense> {
        crate::shape::matmul_shapes("matmul", self.shape, x.shape)?;
        let comm = Comm::world();
        let k = x.shape.1;
        let own = x.local.shape().0;
        let mut send = Vec::with_capacity(self.halo.send_rows.len() * k * 2);
        for &row in &self.halo.send_rows {
            for j in 0..k {
                let z = x.local.get(row, j);
                send.extend([z.re, z.im]);
            }
        }
        let scale =
            |c: &[usize]| -> Result<Vec<i32>> { c.iter().map(|&n| count(n * k * 2)).collect() };
        let sc = scale(&self.halo.send_counts)?;
        let rc = scale(&self.halo.recv_counts)?;
        let halo_len: usize = self.halo.recv_counts.iter().sum();
        let mut recv = vec![0.0f64; halo_len * k * 2];
        {
            let sd = displacements(&sc);
            let rd = displacements(&rc);
            let part = Partition::new(&send[..], &sc[..], &sd[..]);
            let mut into = PartitionMut::new(&mut recv[..], &rc[..], &rd[..]);
            comm.world.all_to_all_varcount_into(&part, &mut into);
        }
        let ext = Dense::from_fn(own + halo_len, k, |i, j| {
            if i < own {
                x.local.get(i, j)
            } else {
                let o = ((i - own) * k + j) * 2;
                c64::new(recv[o], recv[o + 1])
            }
        });
        let y = crate::ops::matmul::matmul_csr_dense(&self.compact, &ext)?;
        Ok(DistDense {
            shape: (self.shape.0, k),
            start: self.start,
            local: y,
        })
    }

    /// The same halo plan with the values scaled by `s` (no communication).
    ///
    /// # Errors
    /// [`Error::TooLarge`](crate::Error::TooLarge) when the scaled blocks cannot be allocated.
    pub(super) fn scaled(&self, s: c64) -> Result<DistCsr> {
        Ok(DistCsr {
            local: crate::ops::scale::mul_csr(&self.local, s)?,
            compact: crate::ops::scale::mul_csr(&self.compact, s)?,
            ..self.clone()
        })
    }
}

fn count(n: usize) -> Result<i32> {
    i32::try_from(n).map_err(|_| arg(format!("{n} values exceed one MPI message (i32 counts)")))
}

/// MPI counts (`i32`), an error past `i32::MAX`.
pub(super) fn counts_i32(c: &[usize]) -> Result<Vec<i32>> {
    c.iter().map(|&n| count(n)).collect()
}

/// The offsets of consecutive pieces of the given sizes (an MPI `v` collective's `displs`).
pub(super) fn displacements(counts: &[i32]) -> Vec<i32> {
    counts
        .iter()
        .scan(0i32, |acc, &c| {
            let d = *acc;
            *acc = acc.saturating_add(c);
            Some(d)
        })
        .collect()
}
