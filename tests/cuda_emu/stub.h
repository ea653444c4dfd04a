// Host stand-ins for the CUDA built-ins used by src/gpu/cuda/kernels.cu, so the kernels can run on
// the CPU (tests/cuda_kernels_emulated.rs). Launches are simulated one thread at a time:
// grid-stride kernels run with several blocks and threads; kernels with __syncthreads run as a
// single thread (blockDim = 1), which checks their index math and their reduction results.
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <complex>
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
struct dim3_{unsigned x;}; static dim3_ blockIdx{0}, blockDim{1}, threadIdx{0}, gridDim{1};
static void __syncthreads(){}
static unsigned long long atomicMax(unsigned long long* a, unsigned long long v) {
    unsigned long long old = *a;
    if (v > *a) *a = v;
    return old;
}
static long long __double_as_longlong(double d) {
    long long r;
    memcpy(&r, &d, 8);
    return r;
}
