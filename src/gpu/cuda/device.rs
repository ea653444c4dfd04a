//! Opening device 0: probing the libraries, the context, stream, cuBLAS handle and the NVRTC
//! kernels, created once per process and cached with the reason when there is no GPU.

use std::fmt;
use std::sync::{Arc, OnceLock};

use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaContext, CudaFunction, CudaStream};

use crate::error::{Error, Result};

/// The NVRTC source of the element-wise and reduction kernels, GpuDense's and GpuCsr's.
const KERNELS: &str = concat!(include_str!("kernels.cu"), include_str!("sparse.cu"));

/// The kernels, loaded once from the compiled module.
pub(super) struct Funcs {
    pub(super) scale: CudaFunction,
    pub(super) multiply: CudaFunction,
    pub(super) conj: CudaFunction,
    pub(super) transpose: CudaFunction,
    pub(super) kron: CudaFunction,
    pub(super) tidyup: CudaFunction,
    pub(super) add_strided: CudaFunction,
    pub(super) reshape: CudaFunction,
    pub(super) lincomb: CudaFunction,
    pub(super) lincombs: CudaFunction,
    pub(super) strided_sum: CudaFunction,
    pub(super) max_abs: CudaFunction,
    pub(super) max_col_abs_sum: CudaFunction,
    pub(super) herm_dev: CudaFunction,
    pub(super) block_copy: CudaFunction,
    pub(super) offdiag_max_abs: CudaFunction,
    pub(super) close_dev: CudaFunction,
    pub(super) permute: CudaFunction,
    pub(super) ptrace: CudaFunction,
    pub(super) sum_nonzero: CudaFunction,
    pub(super) expect_super: CudaFunction,
    pub(super) csr_to_dense: CudaFunction,
    pub(super) csr_trace: CudaFunction,
    pub(super) csr_expect: CudaFunction,
    pub(super) csr_add: CudaFunction,
    pub(super) csr_kron: CudaFunction,
}

/// Device 0 with everything polymat needs on it, created once per process.
pub(crate) struct Device {
    pub(super) ctx: Arc<CudaContext>,
    pub(super) stream: Arc<CudaStream>,
    pub(super) blas: CudaBlas,
    pub(super) f: Funcs,
    name: String,
}

static DEVICE: OnceLock<std::result::Result<Device, String>> = OnceLock::new();

/// The GPU, opened on first use; the outcome (or the reason there is none) is cached.
pub(crate) fn device() -> Result<&'static Device> {
    DEVICE
        .get_or_init(open)
        .as_ref()
        .map_err(|reason| Error::NoGpu {
            reason: reason.clone(),
        })
}

/// Probes the libraries before any call that would panic without them, then opens device 0.
fn open() -> std::result::Result<Device, String> {
    // SAFETY: each probe only tries to dlopen the library by its usual names.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err("the CUDA driver library (libcuda) was not found".into());
    }
    let count = CudaContext::device_count()
        .map_err(|e| format!("the CUDA driver failed to initialise: {e}"))?;
    if count < 1 {
        return Err("the CUDA driver reports no device".into());
    }
    // SAFETY: as above.
    if !unsafe { cudarc::cublas::sys::is_culib_present() } {
        return Err("cuBLAS (libcublas) was not found".into());
    }
    // SAFETY: as above.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err("NVRTC (libnvrtc) was not found".into());
    }
    let ctx = CudaContext::new(0).map_err(|e| format!("cannot open device 0: {e}"))?;
    // SAFETY: every GpuDense buffer lives on the single stream created below, so the stream
    // orders all uses and frees; per-buffer events would only add two events per allocation.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx
        .new_stream()
        .map_err(|e| format!("cannot create a stream: {e}"))?;
    if ctx.has_async_alloc() {
        keep_freed_memory(&ctx);
    }
    let blas = CudaBlas::new(stream.clone()).map_err(|e| format!("cuBLAS: {e}"))?;
    let ptx = cudarc::nvrtc::compile_ptx(KERNELS).map_err(|e| format!("NVRTC: {e}"))?;
    let module = ctx
        .load_module(ptx)
        .map_err(|e| format!("cannot load the kernels: {e}"))?;
    let load = |name: &str| {
        module
            .load_function(name)
            .map_err(|e| format!("kernel {name}: {e}"))
    };
    let f = Funcs {
        scale: load("pm_scale")?,
        multiply: load("pm_multiply")?,
        conj: load("pm_conj")?,
        transpose: load("pm_transpose")?,
        kron: load("pm_kron")?,
        tidyup: load("pm_tidyup")?,
        add_strided: load("pm_add_strided")?,
        reshape: load("pm_reshape")?,
        lincomb: load("pm_lincomb")?,
        lincombs: load("pm_lincombs")?,
        strided_sum: load("pm_strided_sum")?,
        max_abs: load("pm_max_abs")?,
        max_col_abs_sum: load("pm_max_col_abs_sum")?,
        herm_dev: load("pm_herm_dev")?,
        block_copy: load("pm_block_copy")?,
        offdiag_max_abs: load("pm_offdiag_max_abs")?,
        close_dev: load("pm_close_dev")?,
        permute: load("pm_permute")?,
        ptrace: load("pm_ptrace")?,
        sum_nonzero: load("pm_sum_nonzero")?,
        expect_super: load("pm_expect_super")?,
        csr_to_dense: load("pm_csr_to_dense")?,
        csr_trace: load("pm_csr_trace")?,
        csr_expect: load("pm_csr_expect")?,
        csr_add: load("pm_csr_add")?,
        csr_kron: load("pm_csr_kron")?,
    };
    let name = ctx.name().unwrap_or_else(|_| "CUDA device 0".into());
    Ok(Device {
        ctx,
        stream,
        blas,
        f,
        name,
    })
}

/// `Ok` when the GPU is usable (opening it on first call).
pub(crate) fn probe() -> Result<()> {
    device().map(|_| ())
}

/// The device's name, e.g. `"NVIDIA H100 80GB HBM3"`.
pub(crate) fn device_name() -> Result<String> {
    Ok(device()?.name.clone())
}

/// Waits for all queued GPU work.
pub(crate) fn synchronize() -> Result<()> {
    device()?
        .stream
        .synchronize()
        .map_err(gpu_err("synchronize"))
}

/// The stream every [`GpuDense`](super::GpuDense) lives on, for raw cudarc / cuBLAS interop.
pub(crate) fn stream() -> Result<Arc<CudaStream>> {
    Ok(device()?.stream.clone())
}

/// The share of the device's memory that the stream-ordered pool keeps mapped after it is freed:
/// a quarter.
const KEPT_SHARE: usize = 4;

/// Lets the device's memory pool keep up to [`KEPT_SHARE`] of the device's memory mapped when
/// it is freed. The pool's default release threshold is 0: every synchronisation (`expm` waits
/// for its norm, every download waits) hands all freed memory back to the driver, and the next
/// allocations of the same sizes map it anew. PyTorch's and CuPy's caching allocators keep
/// freed memory the same way (without a bound). A failure leaves the default: slower, never
/// wrong.
fn keep_freed_memory(ctx: &CudaContext) {
    use cudarc::driver::result::{device as cu_device, mem_pool};
    use cudarc::driver::sys::CUmemPool_attribute;
    let dev = ctx.cu_device();
    // SAFETY: `dev` is the device `ctx` was opened on; CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
    // takes a pointer to a `cuuint64_t`, which `threshold` is for the duration of the call.
    let _ = unsafe {
        cu_device::total_mem(dev).and_then(|total| {
            let pool = cu_device::get_mem_pool(dev)?;
            let mut threshold = (total / KEPT_SHARE) as u64;
            mem_pool::set_attribute(
                pool,
                CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&raw mut threshold).cast(),
            )
        })
    };
}

/// Hands the memory the pool keeps for reuse, and the small buffers `spares` keeps, back to the
/// driver (after waiting for queued work, whose frees it may include).
pub(crate) fn release_cached_memory() -> Result<()> {
    use cudarc::driver::result::{device as cu_device, mem_pool};
    const OP: &str = "release_cached_memory";
    let dev = device()?;
    super::spares::clear();
    dev.stream.synchronize().map_err(gpu_err(OP))?;
    let cu = dev.ctx.cu_device();
    // SAFETY: `cu` is the device the context was opened on; trimming to 0 bytes releases only
    // memory no allocation holds.
    unsafe {
        let pool = cu_device::get_mem_pool(cu).map_err(gpu_err(OP))?;
        mem_pool::trim_to(pool, 0).map_err(gpu_err(OP))
    }
}

/// Maps a CUDA, cuBLAS or NVRTC error to [`Error::Gpu`] naming `op`.
pub(super) fn gpu_err<E: fmt::Display>(op: &'static str) -> impl FnOnce(E) -> Error {
    move |e| Error::Gpu {
        op: op.to_owned(),
        reason: e.to_string(),
    }
}
