//! The built-in kinds and the converters between them.

pub(crate) use super::csr_dense::csr_to_dense;
pub(crate) use super::dense_csr::dense_to_csr;
use super::{Batch, Conversion, Group};
use crate::gpu::{GpuCsr, GpuDense};
use crate::storage::{Csr, Dense};

/// Dense, Csr, GpuDense, Dia, GpuCsr, KronSum and SuperOp (in that order: their kinds are
/// fixed) and the
/// converters, with QuTiP's and qutip-jax's weights (entering the GPU weighs 1, leaving it 2),
/// and their groups (GpuDense and GpuCsr in the sticky GPU group, so GPU data stays there under
/// `Out::Auto`).
///
/// GpuCsr → GpuDense weighs [`GPU_DENSIFY_WEIGHT`]: more than a round trip through a CPU sparse
/// kernel (download 2 + upload 1), so an operation with a Csr kernel and no GpuCsr kernel keeps
/// GpuCsr data sparse, and less than densifying through the CPU (2 + 1 + 1), so an operation that
/// needs dense data densifies on the GPU.
pub(super) fn register(b: &mut Batch) {
    b.register_type::<Dense>("Dense", &["dense", "mat", "matrix"])
        .register_type::<Csr>("Csr", &["csr", "sparse"])
        .add_conversion(Conversion::new_data::<Csr, Dense>(
            super::csr_dense::csr_to_dense_data,
            1.0,
        ))
        .add_conversion(Conversion::new(dense_to_csr, 1.4));
    b.register_type::<GpuDense>("GpuDense", &["gpudense", "gpu", "cuda"])
        .add_conversion(Conversion::new(GpuDense::from_dense, 1.0))
        .add_conversion(Conversion::new(GpuDense::to_dense, 2.0));
    b.add_to_group::<Dense>(Group::DENSE)
        .add_to_group::<Csr>(Group::SPARSE)
        .add_to_group::<GpuDense>(Group::DENSE)
        .add_to_group::<GpuDense>(Group::GPU);
    super::dia::register(b);
    b.register_type::<GpuCsr>("GpuCsr", &["gpucsr", "gpu_csr", "cuda_csr"])
        .add_conversion(Conversion::new(GpuCsr::from_csr, 1.0))
        .add_conversion(Conversion::new(GpuCsr::to_csr, 2.0))
        .add_conversion(Conversion::new(GpuCsr::to_gpu_dense, GPU_DENSIFY_WEIGHT));
    b.add_to_group::<GpuCsr>(Group::SPARSE)
        .add_to_group::<GpuCsr>(Group::GPU);
    super::lazy::register(b);
}

/// The weight of GpuCsr → GpuDense (see [`register`]).
const GPU_DENSIFY_WEIGHT: f64 = 3.5;
