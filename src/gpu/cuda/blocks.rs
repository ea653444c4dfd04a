//! Blocks, permutations and comparisons on the GPU: `block_extract`, `block_overwrite`,
//! `permute_indices`/`permute_dimensions`, `kron_transpose`, `trace_oper_ket`, `isdiag` and
//! `isequal` (issue 17), on the kernels `pm_block_copy`, `pm_permute`, `pm_offdiag_max_abs`,
//! `pm_close_dev` and `pm_strided_sum`.

use std::ops::Range;

use cudarc::driver::PushKernelArg;

use super::GpuDense;
use super::device::{device, gpu_err};
use super::launch::{grid, launch, one_block};
use crate::error::{Error, Result};
use crate::scalar::c64;
use crate::shape::same_shape;

impl GpuDense {
    /// Copies the `rows × cols` block at `src_off` of `src` (leading dimension `src_ld`) to
    /// `dst_off` of `self` (leading dimension `dst_ld`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if either block reaches past its matrix (checked in every
    /// build: the kernel writes device memory).
    fn copy_block(
        &mut self,
        op: &'static str,
        src: &GpuDense,
        (src_ld, src_off): (usize, usize),
        (dst_ld, dst_off): (usize, usize),
        rows: usize,
        cols: usize,
    ) -> Result<()> {
        if rows == 0 || cols == 0 {
            return Ok(());
        }
        // The last entry of a block: offset + (rows − 1) + (cols − 1)·ld, inside its buffer.
        let last = |ld: usize, off: usize| {
            (cols - 1)
                .checked_mul(ld)
                .and_then(|x| x.checked_add(off))
                .and_then(|x| x.checked_add(rows - 1))
        };
        let fits = |ld: usize, off: usize, len: usize| {
            rows <= ld && last(ld, off).is_some_and(|l| l < len)
        };
        if !fits(src_ld, src_off, src.len()) || !fits(dst_ld, dst_off, self.len()) {
            return Err(Error::argument(
                op,
                format!("a {rows}×{cols} block does not fit its source or destination"),
            ));
        }
        let dev = device()?;
        let dims = [src_ld, src_off, dst_ld, dst_off, rows, cols].map(|x| x as u64);
        let mut l = dev.stream.launch_builder(&dev.f.block_copy);
        l.arg(&*src.buf).arg(&mut *self.buf);
        for d in &dims {
            l.arg(d);
        }
        // SAFETY: every index read or written, off + i + j·ld with i < rows ≤ ld and j < cols,
        // is at most the last entry checked above to be inside its buffer.
        unsafe { launch(op, l, grid(rows * cols)) }
    }

    /// The block `a[rows, cols]` (ranges checked by the dispatcher).
    pub(crate) fn block(&self, rows: &Range<usize>, cols: &Range<usize>) -> Result<GpuDense> {
        const OP: &str = "block_extract";
        if rows.start > rows.end
            || rows.end > self.rows
            || cols.start > cols.end
            || cols.end > self.cols
        {
            return Err(Error::argument(OP, "the block lies outside the matrix"));
        }
        let (r, c) = (rows.len(), cols.len());
        let mut out = GpuDense::uninit(device()?, r, c)?;
        let off = rows.start + cols.start * self.rows;
        out.copy_block(OP, self, (self.rows, off), (r.max(1), 0), r, c)?;
        Ok(out)
    }

    /// A copy of `self` with `b` written over the block at `at` (checked by the dispatcher).
    pub(crate) fn overwrite_block(&self, b: &GpuDense, at: (usize, usize)) -> Result<GpuDense> {
        const OP: &str = "block_overwrite";
        let mut out = self.try_clone()?;
        let off =
            at.1.checked_mul(self.rows)
                .and_then(|x| x.checked_add(at.0))
                .ok_or_else(|| Error::argument(OP, "the block lies outside the matrix"))?;
        out.copy_block(OP, b, (b.rows.max(1), 0), (self.rows, off), b.rows, b.cols)?;
        Ok(out)
    }

    /// `out[rows[i], cols[j]] = a[i, j]`; `None` leaves an axis alone.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] unless each map is a permutation of its axis (checked in
    /// every build: the kernel writes device memory at the mapped positions).
    pub(crate) fn permute(
        &self,
        rows: Option<&[usize]>,
        cols: Option<&[usize]>,
    ) -> Result<GpuDense> {
        const OP: &str = "permute";
        let is_permutation = |p: &[usize], len: usize| {
            let mut seen = vec![false; len];
            p.len() == len
                && p.iter()
                    .all(|&x| x < len && !std::mem::replace(&mut seen[x], true))
        };
        if !rows.is_none_or(|r| is_permutation(r, self.rows))
            || !cols.is_none_or(|c| is_permutation(c, self.cols))
        {
            return Err(Error::argument(
                OP,
                "a map is not a permutation of its axis",
            ));
        }
        let dev = device()?;
        let mut out = GpuDense::uninit(dev, self.rows, self.cols)?;
        if self.len() == 0 {
            return Ok(out);
        }
        let upload = |p: Option<&[usize]>| {
            p.map(|p| {
                let v: Vec<u64> = p.iter().map(|&x| x as u64).collect();
                dev.stream.clone_htod(&v).map_err(gpu_err(OP))
            })
            .transpose()
        };
        let (r, c) = (upload(rows)?, upload(cols)?);
        let (m, n, null) = (self.rows as u64, self.cols as u64, 0u64);
        let mut l = dev.stream.launch_builder(&dev.f.permute);
        l.arg(&*self.buf).arg(&mut *out.buf);
        match &r {
            Some(r) => l.arg(r),
            None => l.arg(&null),
        };
        match &c {
            Some(c) => l.arg(c),
            None => l.arg(&null),
        };
        l.arg(&m).arg(&n);
        // SAFETY: the maps were checked above to be permutations of 0..m and 0..n, so every
        // position written, rows[i] + cols[j]·m, is below m·n, the length of `out`; the reads
        // are the m·n entries of `self`.
        unsafe { launch(OP, l, grid(self.len())) }?;
        Ok(out)
    }

    /// The partial trace of this n×n operator: `out[p, q] = Σ_t a[full[t·k + p], full[t·k + q]]`
    /// for kept indices `p, q < k` and traced `t < r`, where `full[t·k + p]` is the full index of
    /// the pair (the host's subsystem bookkeeping).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] unless the operator is square, `full` has `k·r` entries and
    /// every entry is below n (checked in every build: the kernel reads device memory there).
    pub(crate) fn ptrace_map(&self, full: &[usize], k: usize, r: usize) -> Result<GpuDense> {
        const OP: &str = "ptrace";
        let n = self.rows;
        if self.cols != n || k.checked_mul(r) != Some(full.len()) || full.iter().any(|&x| x >= n) {
            return Err(Error::argument(
                OP,
                "the index map does not fit the operator",
            ));
        }
        let dev = device()?;
        let mut out = GpuDense::zeros(k, k)?;
        if k == 0 || r == 0 {
            return Ok(out);
        }
        let map: Vec<u64> = full.iter().map(|&x| x as u64).collect();
        let map = dev.stream.clone_htod(&map).map_err(gpu_err(OP))?;
        let (k64, r64, n64) = (k as u64, r as u64, n as u64);
        let mut l = dev.stream.launch_builder(&dev.f.ptrace);
        l.arg(&*self.buf)
            .arg(&mut *out.buf)
            .arg(&map)
            .arg(&k64)
            .arg(&r64)
            .arg(&n64);
        // SAFETY: out holds k·k entries (one per thread index below k²); every read,
        // full[t·k + p] + full[t·k + q]·n with entries of `full` below n, is below n², the
        // length of `self`; the map holds k·r entries, indexed by t·k + p < r·k.
        unsafe { launch(OP, l, grid(k * k)) }?;
        Ok(out)
    }

    /// Over the entries that are not `0 + 0i`: their sum, the sum of their moduli, and how many
    /// there are (one block; NaN counts as non-zero, as on the CPU).
    pub(crate) fn sum_nonzero(&self) -> Result<(c64, f64, usize)> {
        const OP: &str = "mean_nonzero";
        if self.len() == 0 {
            return Ok((c64::new(0.0, 0.0), 0.0, 0));
        }
        let dev = device()?;
        let mut out = dev.stream.alloc_zeros::<f64>(4).map_err(gpu_err(OP))?;
        let n = self.len() as u64;
        let mut l = dev.stream.launch_builder(&dev.f.sum_nonzero);
        l.arg(&*self.buf).arg(&mut out).arg(&n);
        // SAFETY: reads the `len` entries of this buffer, writes the four f64 of `out`.
        unsafe { launch(OP, l, one_block()) }?;
        let v = dev.stream.clone_dtoh(&out).map_err(gpu_err(OP))?;
        dev.stream.synchronize().map_err(gpu_err(OP))?;
        // The count is a sum of ones below 2⁵³ for any matrix that fits a GPU: exact.
        Ok((c64::new(v[0], v[1]), v[2], v[3] as usize))
    }

    /// The expectation value of this n²×n² superoperator on the n²×1 state `rho`:
    /// `Σ_k ρ_k Σ_{i<n} S[i(n+1), k]`, only the rows of `S` that land on the diagonal (one block).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] unless the shapes are n²×n² and n²×1 (checked in every
    /// build: the kernel reads device memory by them).
    pub(crate) fn expect_super(&self, rho: &GpuDense, n: usize) -> Result<c64> {
        const OP: &str = "expect_super";
        let nn = n.checked_mul(n);
        if nn != Some(rho.rows) || rho.cols != 1 || self.shape() != (rho.rows, rho.rows) {
            return Err(Error::argument(OP, "the shapes must be n²×n² and n²×1"));
        }
        if n == 0 {
            return Ok(c64::new(0.0, 0.0));
        }
        let dev = device()?;
        let mut out = GpuDense::uninit(dev, 1, 1)?;
        let n64 = n as u64;
        let mut l = dev.stream.launch_builder(&dev.f.expect_super);
        l.arg(&*self.buf)
            .arg(&*rho.buf)
            .arg(&mut *out.buf)
            .arg(&n64);
        // SAFETY: with n² = rows of ρ and S of n²×n² (checked above), every read index
        // i·(n+1) + k·n² (i < n, k < n²) is below n⁴, and ρ is read at k < n².
        unsafe { launch(OP, l, one_block()) }?;
        Ok(out.to_dense()?.get(0, 0))
    }

    /// `aᵀ ⊗ b`: the transpose, then the Kronecker product (two element-wise kernels).
    pub(crate) fn kron_transpose(&self, b: &GpuDense) -> Result<GpuDense> {
        self.transpose(false)?.kron(b)
    }

    /// `Tr(unstack(a))` for an n²×1 column-stacked operator: the entries i·(n + 1).
    pub(crate) fn trace_oper_ket(&self, n: usize) -> Result<c64> {
        const OP: &str = "trace_oper_ket";
        if self.cols != 1 || n.checked_mul(n) != Some(self.rows) {
            return Err(Error::argument(OP, "the state must be n²×1"));
        }
        self.strided_sum(OP, 0, n + 1, n)
    }

    /// Whether every off-diagonal entry has modulus ≤ `atol`.
    pub(crate) fn isdiag(&self, atol: f64) -> Result<bool> {
        let (m, n) = (self.rows, self.cols);
        let f = &device()?.f.offdiag_max_abs;
        let dims = [m as u64, n as u64];
        Ok(self.max_reduce("isdiag", f, None, &[], &dims, grid(m * n))? <= atol)
    }

    /// Whether `|aᵢⱼ − bᵢⱼ| ≤ atol + rtol·|bᵢⱼ|` for every entry (NaN is never equal).
    pub(crate) fn isequal(&self, b: &GpuDense, atol: f64, rtol: f64) -> Result<bool> {
        same_shape("isequal", self.shape(), b.shape())?;
        let n = self.len();
        let f = &device()?.f.close_dev;
        Ok(self.max_reduce("isequal", f, Some(b), &[rtol], &[n as u64], grid(n))? <= atol)
    }
}
