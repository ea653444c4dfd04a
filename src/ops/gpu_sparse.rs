//! The GpuCsr kernels that need cuSPARSE (products with GpuDense, transposes), with the CPU path
//! they take where the CUDA install has no `libcusparse`: download, the Csr kernel, upload.
//! GpuCsr's other kernels (sums, scaling, trace, expectation values, Kronecker products) are
//! polymat's own and are registered directly.

use crate::error::Result;
use crate::gpu::{self, GpuCsr, GpuDense};
use crate::scalar::c64;

/// GpuCsr·GpuDense: cuSPARSE SpMV (one column) or SpMM.
pub(crate) fn matmul_gpucsr_dense(a: &GpuCsr, b: &GpuDense) -> Result<GpuDense> {
    if gpu::sparse_available() {
        return a.matmul_dense(b);
    }
    let c = super::matmul::matmul_csr_dense(&a.to_csr()?, &b.to_dense()?)?;
    GpuDense::from_dense(&c)
}

/// `aᵀ` or `aᴴ` of a GpuCsr: cuSPARSE `csr2cscEx2`.
pub(crate) fn transpose_gpucsr(a: &GpuCsr, conj: bool) -> Result<GpuCsr> {
    if gpu::sparse_available() {
        return a.transpose(conj);
    }
    GpuCsr::from_csr(&super::transpose::transpose_csr(&a.to_csr()?, conj)?)
}

/// GpuCsr·GpuCsr: the Csr kernel on the host, the product uploaded (cuSPARSE's SpGEMM is not
/// used yet). Registered so that a sparse product stays sparse: without it the dispatcher would
/// densify the right operand on the GPU for SpMM, which fails past the dense limit.
pub(crate) fn matmul_gpucsr(a: &GpuCsr, b: &GpuCsr) -> Result<GpuCsr> {
    GpuCsr::from_csr(&super::matmul::matmul_csr(&a.to_csr()?, &b.to_csr()?)?)
}

/// `⟨l|o|r⟩` for a GpuCsr operator: SpMV, then cuBLAS's dot product (the operator is never
/// densified).
pub(crate) fn inner_op_gpucsr(l: &GpuDense, o: &GpuCsr, r: &GpuDense) -> Result<c64> {
    l.inner(&matmul_gpucsr_dense(o, r)?)
}
