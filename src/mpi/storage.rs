//! The two distributed storage kinds: rows in contiguous blocks, one block per rank.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::comm::agree;
use super::{Comm, arg, block, count, owner, pack, unpack};
use crate::error::{Error, Result};
use crate::scalar::c64;
use crate::storage::alloc;
use crate::storage::{Csr, Dense, Storage};

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
    /// This rank's rows of `full`, which every rank holds. **Collective** (one agreement: if
    /// one rank cannot allocate its rows, every rank returns an error).
    ///
    /// # Errors
    /// [`Error::TooLarge`](crate::error::Error::TooLarge) if the rows cannot be allocated;
    /// [`Error::Distributed`](crate::error::Error::Distributed) if another rank failed or the ranks
    /// hold different shapes.
    pub fn from_global(full: &Dense) -> Result<DistDense> {
        let comm = Comm::get();
        let (n, k) = full.shape();
        let rows = block(n, comm.size, comm.rank);
        let local = Dense::try_from_fn(rows.len(), k, |i, j| full.get(rows.start + i, j));
        let local = agree("DistDense::from_global", local, [n, k, 0, 0])?;
        Ok(DistDense {
            shape: (n, k),
            start: rows.start,
            local,
        })
    }

    /// A distributed matrix from this rank's rows: `local` must be the rows
    /// [`block`](super::block)`(rows, size, rank)` of a `rows × local.cols` matrix.
    ///
    /// **Collective** (one agreement).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::error::Error::InvalidArgument) if `local` has the wrong
    /// number of rows for this rank; [`Error::Distributed`](crate::error::Error::Distributed) on the
    /// other ranks then, or if the ranks disagree on the shape.
    pub fn from_local(rows: usize, local: Dense) -> Result<DistDense> {
        let comm = Comm::get();
        let mine = block(rows, comm.size, comm.rank);
        let checked = if local.shape().0 == mine.len() {
            Ok(())
        } else {
            Err(arg(format!(
                "rank {} holds rows {:?} of {rows}, got {} local rows",
                comm.rank,
                mine,
                local.shape().0
            )))
        };
        agree(
            "DistDense::from_local",
            checked,
            [rows, local.shape().1, 0, 0],
        )?;
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
    /// **Collective.**
    ///
    /// # Errors
    /// [`Error::TooLarge`](crate::error::Error::TooLarge) if the full matrix cannot be allocated (on
    /// any rank: every rank returns an error).
    pub fn gather(&self) -> Result<Dense> {
        const OP: &str = "DistDense::gather";
        let comm = Comm::get();
        let (n, k) = self.shape;
        let prepared = (|| {
            let counts: Vec<i32> = (0..comm.size)
                .map(|r| count(OP, block(n, comm.size, r).len().saturating_mul(k * 2)))
                .collect::<Result<_>>()?;
            let total = n
                .checked_mul(k)
                .and_then(|x| x.checked_mul(2))
                .ok_or_else(|| arg(format!("{OP}: {n}×{k} values overflow usize")))?;
            alloc::check_dense(OP, (n, k))?;
            // Row-major pairs of f64 per rank, so each rank's rows are one contiguous piece.
            let send = pack(OP, &self.local)?;
            let recv = alloc::try_vec(OP, (n, k), total, 0.0f64)?;
            Ok((counts, send, recv))
        })();
        let (counts, send, mut recv) = agree(OP, prepared, [n, k, 0, 0])?;
        let gathered = comm
            .all_gather_v(OP, &send, &mut recv, &counts)
            .and_then(|()| unpack(&recv, n, k));
        agree(OP, gathered, [n, k, 0, 0])
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
    /// [`Error::TooLarge`](crate::error::Error::TooLarge) if the local arrays cannot be allocated.
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
    /// If `row` panics on a rank, the panic is caught there and every rank returns an error.
    ///
    /// # Errors
    /// [`Error::InvalidCsr`](crate::error::Error::InvalidCsr) if a column is out of range;
    /// [`Error::KernelPanicked`](crate::error::Error::KernelPanicked) if `row` panicked;
    /// [`Error::Distributed`](crate::error::Error::Distributed) on the other ranks then.
    pub fn from_row_fn(
        rows: usize,
        cols: usize,
        row: impl Fn(usize) -> Vec<(usize, c64)>,
    ) -> Result<DistCsr> {
        let comm = Comm::get();
        let mine = block(rows, comm.size, comm.rank);
        // `AssertUnwindSafe`: after a panic only the partial triplets (dropped) were touched.
        let built = catch_unwind(AssertUnwindSafe(|| {
            let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
            for i in mine.clone() {
                for (j, x) in row(i) {
                    r.push(i - mine.start);
                    c.push(j);
                    v.push(x);
                }
            }
            Csr::from_triplets((mine.len(), cols), &r, &c, &v)
        }))
        .unwrap_or_else(|_| {
            Err(Error::KernelPanicked {
                op: "DistCsr::from_row_fn".into(),
                kernel: "row".into(),
                message: "the row function panicked (its message was printed)".into(),
            })
        });
        let local = agree("DistCsr::from_row_fn", built, [rows, cols, 0, 0])?;
        DistCsr::from_local(rows, local)
    }

    /// A distributed matrix from this rank's rows (`local`: the rows
    /// [`block`](super::block)`(rows, size, rank)`, global column indices). **Collective.**
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::error::Error::InvalidArgument) if `local` has the wrong
    /// number of rows for this rank.
    pub fn from_local(rows: usize, local: Csr) -> Result<DistCsr> {
        const OP: &str = "DistCsr::from_local";
        let comm = Comm::get();
        let mine = block(rows, comm.size, comm.rank);
        let (lr, m) = local.shape();
        let checked = if lr == mine.len() {
            Ok(())
        } else {
            Err(arg(format!(
                "rank {} holds rows {mine:?} of {rows}, got {lr} local rows",
                comm.rank
            )))
        };
        agree(OP, checked, [rows, m, 0, 0])?;
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
        let requests: Vec<u64> = needed.iter().flatten().map(|&c| c as u64).collect();
        let exchanged = comm.exchange(OP, &requests, &recv_counts, [rows, m, 0, 0]);
        let built = exchanged.and_then(|(asked, send_counts)| {
            let send_rows = asked
                .iter()
                .map(|&c| {
                    usize::try_from(c)
                        .ok()
                        .filter(|c| cols_here.contains(c))
                        .map(|c| c - cols_here.start)
                        .ok_or_else(|| {
                            arg(format!(
                                "rank asked for column {c}, not one of {cols_here:?}"
                            ))
                        })
                })
                .collect::<Result<Vec<usize>>>()?;
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
            Ok((send_counts, send_rows, compact))
        });
        let (send_counts, send_rows, compact) = agree(OP, built, [rows, m, 0, 0])?;
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
    /// the local Csr·Dense kernel on `[own rows of x | halo]`. **Collective**; a failure on
    /// any rank is an error on every rank.
    ///
    /// # Errors
    /// [`Error::Shape`](crate::error::Error::Shape) if the shapes do not chain;
    /// [`Error::Distributed`](crate::error::Error::Distributed) if another rank failed.
    pub fn matmul(&self, x: &DistDense) -> Result<DistDense> {
        let y = self.matmul_unagreed(x);
        agree(
            "matmul",
            y,
            [self.shape.0, self.shape.1, x.shape.0, x.shape.1],
        )
    }

    /// [`matmul`](Self::matmul) without the final agreement, for the registered kernel (the
    /// dispatcher agrees at the end of every call on a distributed kind).
    pub(super) fn matmul_unagreed(&self, x: &DistDense) -> Result<DistDense> {
        const OP: &str = "matmul";
        let comm = Comm::get();
        let k = x.shape.1;
        let own = x.local.shape().0;
        let halo_len: usize = self.halo.recv_counts.iter().sum();
        let prepared = (|| {
            crate::shape::matmul_shapes(OP, self.shape, x.shape)?;
            if x.start != self.start_of_cols(comm.rank, comm.size) {
                return Err(arg(
                    "matmul: the vector is not split like the matrix's columns",
                ));
            }
            let per = |c: &[usize]| -> Result<Vec<i32>> {
                c.iter()
                    .map(|&n| count(OP, n.saturating_mul(k).saturating_mul(2)))
                    .collect()
            };
            let sc = per(&self.halo.send_counts)?;
            let rc = per(&self.halo.recv_counts)?;
            let mut send = alloc::try_with_capacity(
                OP,
                (self.halo.send_rows.len(), k),
                self.halo
                    .send_rows
                    .len()
                    .saturating_mul(k)
                    .saturating_mul(2),
            )?;
            for &row in &self.halo.send_rows {
                for j in 0..k {
                    let z = x.local.get(row, j);
                    send.extend([z.re, z.im]);
                }
            }
            let recv = alloc::try_vec(OP, (halo_len, k), halo_len.saturating_mul(k * 2), 0.0)?;
            Ok((sc, rc, send, recv))
        })();
        let (sc, rc, send, mut recv) = agree(
            OP,
            prepared,
            [self.shape.0, self.shape.1, x.shape.0, x.shape.1],
        )?;
        comm.all_to_all_v(OP, &send, &sc, &mut recv, &rc)?;
        let ext = Dense::try_from_fn(own + halo_len, k, |i, j| {
            if i < own {
                x.local.get(i, j)
            } else {
                let o = ((i - own) * k + j) * 2;
                c64::new(recv[o], recv[o + 1])
            }
        })?;
        let y = crate::ops::matmul::matmul_csr_dense(&self.compact, &ext)?;
        Ok(DistDense {
            shape: (self.shape.0, k),
            start: self.start,
            local: y,
        })
    }

    /// The first column of the block of columns rank `rank` of `size` holds (the rows of a
    /// vector this matrix multiplies).
    fn start_of_cols(&self, rank: usize, size: usize) -> usize {
        block(self.shape.1, size, rank).start
    }

    /// The same halo plan with the values scaled by `s` (no communication).
    ///
    /// # Errors
    /// [`Error::TooLarge`](crate::error::Error::TooLarge) when the scaled blocks cannot be allocated.
    pub(super) fn scaled(&self, s: c64) -> Result<DistCsr> {
        Ok(DistCsr {
            local: crate::ops::scale::mul_csr(&self.local, s)?,
            compact: crate::ops::scale::mul_csr(&self.compact, s)?,
            ..self.clone()
        })
    }
}
