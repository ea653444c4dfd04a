//! [`GpuCsr`]: compressed sparse rows in device memory, its transfers, and the kernels of
//! `sparse.cu` (densify, trace, expectation, sum, Kronecker product). The cuSPARSE products and
//! the transpose are in `sparse_blas`.

use std::fmt;

use cudarc::driver::{CudaFunction, CudaSlice, PushKernelArg};

use super::device::{Device, device, gpu_err};
use super::launch::{BLOCK, grid, launch, map_slice};
use super::{Elem, GpuDense, as_pairs, to_c64};
use crate::error::{Error, Result};
use crate::scalar::{ZERO, c64};
use crate::shape::{expect_shapes, kron_shape, same_shape, square};
use crate::storage::{Csr, Storage};

/// A sparse complex matrix in GPU memory: compressed sparse rows with 32-bit row offsets and
/// column indices (cuSPARSE's `CUSPARSE_INDEX_32I`, as CuPy's `csr_matrix`), columns strictly
/// increasing within each row, on polymat's CUDA stream.
///
/// Created from a [`Csr`] ([`GpuCsr::from_csr`]) or by any operation with `Out::GpuCsr`. The
/// products with [`GpuDense`] run in cuSPARSE (SpMV, SpMM), the transpose in cuSPARSE's
/// `csr2csc`; sums, scaling, trace, expectation values and Kronecker products in polymat's own
/// kernels. At most 2³¹ − 1 rows, columns and stored entries (the 32-bit indices).
pub struct GpuCsr {
    pub(super) rows: usize,
    pub(super) cols: usize,
    pub(super) nnz: usize,
    /// `rows + 1` offsets.
    pub(super) indptr: CudaSlice<i32>,
    /// `max(nnz, 1)` column indices (one unused entry when empty).
    pub(super) indices: CudaSlice<i32>,
    /// `max(nnz, 1)` values.
    pub(super) data: CudaSlice<Elem>,
}

impl fmt::Debug for GpuCsr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "GpuCsr({}×{}, {} stored)",
            self.rows, self.cols, self.nnz
        )
    }
}

impl Storage for GpuCsr {
    fn shape(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }
}

/// `x` as a 32-bit index, or the error naming what does not fit.
pub(super) fn index32(op: &'static str, what: &str, x: usize) -> Result<i32> {
    i32::try_from(x).map_err(|_| Error::Gpu {
        op: op.to_owned(),
        reason: format!("{what} {x} exceeds GpuCsr's 32-bit indices (2^31 - 1)"),
    })
}

impl GpuCsr {
    /// Storage for `rows + 1` offsets and `nnz` entries, none of it set.
    pub(super) fn uninit(
        op: &'static str,
        dev: &Device,
        shape: (usize, usize),
        nnz: usize,
    ) -> Result<GpuCsr> {
        let (rows, cols) = shape;
        index32(op, "the row count", rows)?;
        index32(op, "the column count", cols)?;
        index32(op, "the number of stored entries", nnz)?;
        // SAFETY: each caller writes the offsets and the first `nnz` entries before reading.
        let (indptr, indices, data) = unsafe {
            (
                dev.stream.alloc::<i32>(rows + 1).map_err(gpu_err(op))?,
                dev.stream.alloc::<i32>(nnz.max(1)).map_err(gpu_err(op))?,
                dev.stream.alloc::<Elem>(nnz.max(1)).map_err(gpu_err(op))?,
            )
        };
        Ok(GpuCsr {
            rows,
            cols,
            nnz,
            indptr,
            indices,
            data,
        })
    }

    /// Copies a [`Csr`] to the GPU.
    ///
    /// # Errors
    /// [`Error::NoGpu`] without a usable GPU; [`Error::Gpu`] if the allocation fails or a
    /// dimension or the number of stored entries passes 2³¹ − 1.
    pub fn from_csr(a: &Csr) -> Result<GpuCsr> {
        const OP: &str = "upload";
        let dev = device()?;
        let mut m = GpuCsr::uninit(OP, dev, a.shape(), a.nnz())?;
        // Every offset is at most nnz and every column below cols, both checked to fit.
        let indptr: Vec<i32> = a.indptr().iter().map(|&p| p as i32).collect();
        dev.stream
            .memcpy_htod(&indptr, &mut m.indptr)
            .map_err(gpu_err(OP))?;
        if a.nnz() > 0 {
            let indices: Vec<i32> = a.indices().iter().map(|&c| c as i32).collect();
            dev.stream
                .memcpy_htod(&indices, &mut m.indices)
                .map_err(gpu_err(OP))?;
            dev.stream
                .memcpy_htod(as_pairs(a.data()), &mut m.data)
                .map_err(gpu_err(OP))?;
        }
        Ok(m)
    }

    /// Copies the matrix back to host memory (waits for queued work); the structure is
    /// validated on the way in.
    ///
    /// # Errors
    /// [`Error::Gpu`] if the copy (or earlier queued work) fails.
    pub fn to_csr(&self) -> Result<Csr> {
        const OP: &str = "download";
        let dev = device()?;
        let indptr = dev.stream.clone_dtoh(&self.indptr).map_err(gpu_err(OP))?;
        let (indices, data) = if self.nnz > 0 {
            (
                dev.stream
                    .clone_dtoh(&self.indices.slice(..self.nnz))
                    .map_err(gpu_err(OP))?,
                dev.stream
                    .clone_dtoh(&self.data.slice(..self.nnz))
                    .map_err(gpu_err(OP))?,
            )
        } else {
            (Vec::new(), Vec::new())
        };
        dev.stream.synchronize().map_err(gpu_err(OP))?;
        let widen = |v: Vec<i32>| v.into_iter().map(|x| x.max(0) as usize).collect::<Vec<_>>();
        Csr::from_raw(
            (self.rows, self.cols),
            widen(indptr),
            widen(indices),
            data.into_iter().map(to_c64).collect(),
        )
    }

    /// The same matrix as a [`GpuDense`], on the GPU.
    ///
    /// # Errors
    /// [`Error::TooLarge`] past the dense limit ([`set_dense_limit`](crate::set_dense_limit)),
    /// as for Csr → Dense: sparse GPU data is never densified silently past it;
    /// [`Error::Gpu`] if the allocation fails.
    pub fn to_gpu_dense(&self) -> Result<GpuDense> {
        const OP: &str = "densify";
        crate::storage::alloc::check_dense(OP, self.shape())?;
        let dev = device()?;
        let mut out = GpuDense::zeros(self.rows, self.cols)?;
        if self.nnz == 0 {
            return Ok(out);
        }
        let rows = self.rows as u64;
        let mut l = dev.stream.launch_builder(&dev.f.csr_to_dense);
        l.arg(&self.indptr)
            .arg(&self.indices)
            .arg(&self.data)
            .arg(&mut *out.buf)
            .arg(&rows);
        // SAFETY: offsets and columns describe a valid rows×cols CSR matrix (the invariant of
        // GpuCsr), so every write i + col·rows lands inside the rows·cols output.
        unsafe { launch(OP, l, grid(self.rows)) }?;
        Ok(out)
    }

    /// A copy in new GPU memory.
    ///
    /// # Errors
    /// [`Error::Gpu`] if the allocation fails.
    pub fn try_clone(&self) -> Result<GpuCsr> {
        let dev = device()?;
        let copy = |op| gpu_err(op);
        Ok(GpuCsr {
            rows: self.rows,
            cols: self.cols,
            nnz: self.nnz,
            indptr: dev.stream.clone_dtod(&self.indptr).map_err(copy("clone"))?,
            indices: dev
                .stream
                .clone_dtod(&self.indices)
                .map_err(copy("clone"))?,
            data: dev.stream.clone_dtod(&self.data).map_err(copy("clone"))?,
        })
    }

    /// `(rows, columns)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    /// The number of stored entries.
    pub fn nnz(&self) -> usize {
        self.nnz
    }

    /// The device buffers `(row offsets, column indices, values)`: `rows + 1` offsets, then
    /// `nnz` columns and values `[re, im]` (one unused entry each when `nnz` is 0), on
    /// [`gpu::stream`](crate::gpu::stream). For raw cuSPARSE / kernel interop.
    pub fn cuda_slices(&self) -> (&CudaSlice<i32>, &CudaSlice<i32>, &CudaSlice<[f64; 2]>) {
        (&self.indptr, &self.indices, &self.data)
    }

    /// The same structure with the values mapped by the element-wise kernel `f` (scale, conj).
    fn map_values(&self, op: &'static str, f: &CudaFunction, extra: &[f64]) -> Result<GpuCsr> {
        let dev = device()?;
        Ok(GpuCsr {
            rows: self.rows,
            cols: self.cols,
            nnz: self.nnz,
            indptr: dev.stream.clone_dtod(&self.indptr).map_err(gpu_err(op))?,
            indices: dev.stream.clone_dtod(&self.indices).map_err(gpu_err(op))?,
            data: map_slice(op, f, &self.data, self.nnz, extra)?,
        })
    }

    /// `s·a` (the structure is kept, as for Csr).
    pub(crate) fn scale(&self, s: c64) -> Result<GpuCsr> {
        self.map_values("mul", &device()?.f.scale, &[s.re, s.im])
    }

    /// The entry-wise complex conjugate.
    pub(crate) fn conj(&self) -> Result<GpuCsr> {
        self.map_values("conj", &device()?.f.conj, &[])
    }

    /// Runs a row-reduction kernel of `sparse.cu` over the n rows and sums its per-block
    /// partials on the host, in block order. The kernel's arguments: the three CSR arrays,
    /// `state` (when given), the partial sums, n, then `flag` (when given).
    ///
    /// # Safety
    /// With these arguments the kernel must read only inside the CSR arrays and `state`, and
    /// write only `partial[blockIdx.x]`.
    unsafe fn reduce_rows(
        &self,
        op: &'static str,
        f: &CudaFunction,
        state: Option<&GpuDense>,
        flag: Option<i32>,
    ) -> Result<c64> {
        let dev = device()?;
        let blocks = self.rows.div_ceil(BLOCK as usize).clamp(1, 1024) as u32;
        let mut partial = dev
            .stream
            .alloc_zeros::<Elem>(blocks as usize)
            .map_err(gpu_err(op))?;
        let n = self.rows as u64;
        let mut l = dev.stream.launch_builder(f);
        l.arg(&self.indptr).arg(&self.indices).arg(&self.data);
        if let Some(st) = state {
            l.arg(&*st.buf);
        }
        l.arg(&mut partial).arg(&n);
        if let Some(flag) = &flag {
            l.arg(flag);
        }
        let cfg = cudarc::driver::LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the caller's contract; block b < blocks writes partial[b].
        unsafe { launch(op, l, cfg) }?;
        let host = dev.stream.clone_dtoh(&partial).map_err(gpu_err(op))?;
        dev.stream.synchronize().map_err(gpu_err(op))?;
        Ok(host.into_iter().map(to_c64).sum())
    }

    /// `Tr a` for square `a`.
    pub(crate) fn trace(&self) -> Result<c64> {
        const OP: &str = "trace";
        square(OP, self.shape())?;
        if self.nnz == 0 {
            return Ok(ZERO);
        }
        let f = &device()?.f.csr_trace;
        // SAFETY: rows i < n read offsets i and i + 1 (n + 1 held) and the entries between.
        unsafe { self.reduce_rows(OP, f, None, None) }
    }

    /// `⟨ψ|a|ψ⟩` for a ket `state`, `Tr(a·ρ)` for an operator `state` (QuTiP's `expect`).
    pub(crate) fn expect(&self, state: &GpuDense) -> Result<c64> {
        const OP: &str = "expect";
        expect_shapes(OP, self.shape(), state.shape())?;
        if self.nnz == 0 || self.rows == 0 {
            return Ok(ZERO);
        }
        let ket = i32::from(state.cols == 1);
        let f = &device()?.f.csr_expect;
        // SAFETY: `a` is n×n (checked), its columns are below n, and the state holds n entries
        // (ket) or n·n (operator), so every read state[c] / state[c + i·n] is inside it.
        unsafe { self.reduce_rows(OP, f, Some(state), Some(ket)) }
    }

    /// Prefix sums of per-row counts as 32-bit offsets (on the host: one download of `rows`
    /// counts, one upload of the offsets).
    fn offsets(
        op: &'static str,
        counts: impl Iterator<Item = usize>,
        rows: usize,
    ) -> Result<Vec<i32>> {
        let mut indptr = Vec::with_capacity(rows + 1);
        let mut total = 0usize;
        indptr.push(0);
        for c in counts {
            total = total.saturating_add(c);
            indptr.push(index32(op, "the number of stored entries", total)?);
        }
        Ok(indptr)
    }

    /// `a + s·b`, dropping the entries that come out exactly zero (as the Csr kernel does).
    pub(crate) fn add_scaled(&self, b: &GpuCsr, s: c64) -> Result<GpuCsr> {
        const OP: &str = "add";
        same_shape(OP, self.shape(), b.shape())?;
        let dev = device()?;
        let rows = self.rows as u64;
        let (sr, si) = (s.re, s.im);
        // One merge over every row: with `out` it fills the result from its offsets, without it
        // (a null `cp`, `ci`, `cd`) it only counts each row's entries into `counts`.
        let merge = |out: Option<&mut GpuCsr>, counts: &mut CudaSlice<u64>| -> Result<()> {
            let null: u64 = 0;
            let mut l = dev.stream.launch_builder(&dev.f.csr_add);
            l.arg(&self.indptr)
                .arg(&self.indices)
                .arg(&self.data)
                .arg(&b.indptr)
                .arg(&b.indices)
                .arg(&b.data)
                .arg(&sr)
                .arg(&si);
            match out {
                Some(o) => l.arg(&o.indptr).arg(&mut o.indices).arg(&mut o.data),
                None => l.arg(&null).arg(&null).arg(&null),
            };
            l.arg(counts).arg(&rows);
            // SAFETY: both operands are valid CSR of `rows` rows. Counting writes counts[i],
            // i < rows; filling writes row i's counts[i] entries from its offset, the offsets
            // being the prefix sums of the counts this same merge produced, all below nnz.
            unsafe { launch(OP, l, grid(self.rows)) }
        };
        let mut counts = dev
            .stream
            .alloc_zeros::<u64>(self.rows.max(1))
            .map_err(gpu_err(OP))?;
        if self.rows > 0 {
            merge(None, &mut counts)?;
        }
        let host = dev.stream.clone_dtoh(&counts).map_err(gpu_err(OP))?;
        dev.stream.synchronize().map_err(gpu_err(OP))?;
        let indptr = GpuCsr::offsets(
            OP,
            host.iter().take(self.rows).map(|&c| c as usize),
            self.rows,
        )?;
        let nnz = indptr[self.rows] as usize;
        let mut out = GpuCsr::uninit(OP, dev, self.shape(), nnz)?;
        dev.stream
            .memcpy_htod(&indptr, &mut out.indptr)
            .map_err(gpu_err(OP))?;
        if nnz > 0 {
            merge(Some(&mut out), &mut counts)?;
        }
        Ok(out)
    }

    /// `a ⊗ b`. Products that come out exactly zero are kept as stored zeros.
    pub(crate) fn kron(&self, b: &GpuCsr) -> Result<GpuCsr> {
        const OP: &str = "kron";
        let shape = kron_shape(OP, self.shape(), b.shape())?;
        let nnz = self.nnz.saturating_mul(b.nnz);
        let dev = device()?;
        let mut out = GpuCsr::uninit(OP, dev, shape, nnz)?;
        let ap = dev.stream.clone_dtoh(&self.indptr).map_err(gpu_err(OP))?;
        let bp = dev.stream.clone_dtoh(&b.indptr).map_err(gpu_err(OP))?;
        dev.stream.synchronize().map_err(gpu_err(OP))?;
        let len = |p: &[i32], i: usize| (p[i + 1] - p[i]) as usize;
        let counts = (0..shape.0).map(|r| len(&ap, r / b.rows) * len(&bp, r % b.rows));
        let indptr = GpuCsr::offsets(OP, counts, shape.0)?;
        dev.stream
            .memcpy_htod(&indptr, &mut out.indptr)
            .map_err(gpu_err(OP))?;
        if nnz > 0 {
            let (br, bc, rows) = (b.rows as u64, b.cols as u64, shape.0 as u64);
            let mut l = dev.stream.launch_builder(&dev.f.csr_kron);
            l.arg(&self.indptr)
                .arg(&self.indices)
                .arg(&self.data)
                .arg(&b.indptr)
                .arg(&b.indices)
                .arg(&b.data)
                .arg(&out.indptr)
                .arg(&mut out.indices)
                .arg(&mut out.data)
                .arg(&br)
                .arg(&bc)
                .arg(&rows);
            // SAFETY: row r writes len_a(r / br)·len_b(r % br) entries from indptr[r], the
            // counts its offsets were summed from, so every write is below nnz; the columns
            // a_col·bc + b_col are below ac·bc, which fits 32 bits (checked by `uninit`).
            unsafe { launch(OP, l, grid(shape.0)) }?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_prefix_sums_checked_against_32_bits() {
        let p = GpuCsr::offsets("t", [2usize, 0, 3].into_iter(), 3).unwrap();
        assert_eq!(p, vec![0, 2, 2, 5]);
        assert_eq!(
            GpuCsr::offsets("t", std::iter::empty(), 0).unwrap(),
            vec![0]
        );
        let big = i32::MAX as usize;
        assert!(GpuCsr::offsets("t", [big].into_iter(), 1).is_ok());
        let e = GpuCsr::offsets("t", [big, 1].into_iter(), 2).unwrap_err();
        assert!(matches!(e, Error::Gpu { .. }), "{e}");
        let e = GpuCsr::offsets("t", [usize::MAX, usize::MAX].into_iter(), 2).unwrap_err();
        assert!(e.to_string().contains("32-bit"), "{e}");
    }

    #[test]
    fn index32_refuses_what_does_not_fit() {
        assert_eq!(index32("t", "rows", 7).unwrap(), 7);
        assert!(index32("t", "rows", i32::MAX as usize).is_ok());
        assert!(index32("t", "rows", i32::MAX as usize + 1).is_err());
    }
}
