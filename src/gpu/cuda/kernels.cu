// polymat's element-wise and reduction kernels for GpuDense, compiled once per process with
// NVRTC (see gpu/cuda.rs). Matrices are column-major arrays of `cplx` (two doubles, the layout of
// num_complex::Complex64). Sizes are 64-bit; every kernel uses a grid-stride loop, so any grid
// size is correct.

struct cplx {
    double re;
    double im;
};

__device__ __forceinline__ cplx cmul(cplx a, cplx b) {
    cplx r;
    r.re = a.re * b.re - a.im * b.im;
    r.im = a.re * b.im + a.im * b.re;
    return r;
}

__device__ __forceinline__ double cabs_(cplx a) { return hypot(a.re, a.im); }

#define GRID_STRIDE(i, n)                                                            \
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; \
         i < (n); i += (unsigned long long)blockDim.x * gridDim.x)

// out = s * a
extern "C" __global__ void pm_scale(const cplx* a, cplx* out, double sr, double si,
                                    unsigned long long n) {
    cplx s;
    s.re = sr;
    s.im = si;
    GRID_STRIDE(i, n) { out[i] = cmul(s, a[i]); }
}

// out = a .* b (Hadamard product)
extern "C" __global__ void pm_multiply(const cplx* a, const cplx* b, cplx* out,
                                       unsigned long long n) {
    GRID_STRIDE(i, n) { out[i] = cmul(a[i], b[i]); }
}

// out = conj(a)
extern "C" __global__ void pm_conj(const cplx* a, cplx* out, unsigned long long n) {
    GRID_STRIDE(i, n) {
        cplx v = a[i];
        v.im = -v.im;
        out[i] = v;
    }
}

// out (cols x rows) = a^T (rows x cols), conjugated when conj != 0.
extern "C" __global__ void pm_transpose(const cplx* a, cplx* out, unsigned long long rows,
                                        unsigned long long cols, int conj) {
    GRID_STRIDE(k, rows * cols) {
        unsigned long long i = k % rows;
        unsigned long long j = k / rows;
        cplx v = a[k];
        if (conj) v.im = -v.im;
        out[j + i * cols] = v;
    }
}

// out ((ar*br) x (ac*bc)) = kron(a, b)
extern "C" __global__ void pm_kron(const cplx* a, const cplx* b, cplx* out,
                                   unsigned long long ar, unsigned long long ac,
                                   unsigned long long br, unsigned long long bc) {
    unsigned long long rows = ar * br;
    GRID_STRIDE(k, rows * ac * bc) {
        unsigned long long r = k % rows;
        unsigned long long c = k / rows;
        out[k] = cmul(a[(r / br) + (c / bc) * ar], b[(r % br) + (c % bc) * br]);
    }
}

// out = a with real and imaginary parts of modulus < tol set to zero
extern "C" __global__ void pm_tidyup(const cplx* a, cplx* out, double tol,
                                     unsigned long long n) {
    GRID_STRIDE(i, n) {
        cplx v = a[i];
        if (fabs(v.re) < tol) v.re = 0.0;
        if (fabs(v.im) < tol) v.im = 0.0;
        out[i] = v;
    }
}

// out[start + t*stride] += vals[t] for t < count (diagonals; identity when vals is null)
extern "C" __global__ void pm_add_strided(cplx* out, const cplx* vals, double sr, double si,
                                          unsigned long long start, unsigned long long stride,
                                          unsigned long long count) {
    GRID_STRIDE(t, count) {
        cplx v;
        if (vals) {
            v = vals[t];
        } else {
            v.re = sr;
            v.im = si;
        }
        unsigned long long k = start + t * stride;
        out[k].re += v.re;
        out[k].im += v.im;
    }
}

// Row-major reshape of an m x n matrix to r x c: out(p, q) = a(i, j) where p*c + q = i*n + j.
extern "C" __global__ void pm_reshape(const cplx* a, cplx* out, unsigned long long m,
                                      unsigned long long n, unsigned long long r,
                                      unsigned long long c) {
    GRID_STRIDE(k, r * c) {
        unsigned long long p = k % r;
        unsigned long long q = k / r;
        unsigned long long flat = p * c + q;
        out[k] = a[(flat / n) + (flat % n) * m];
    }
}

// out = c0*I + c1*x1 + c2*x2 + c3*x3 + c4*x4 for n x n matrices (a block of the matrix
// exponential's Taylor evaluation); x2, x3, x4 may be null when unused.
extern "C" __global__ void pm_lincomb(const cplx* x1, const cplx* x2, const cplx* x3,
                                      const cplx* x4, cplx* out, double c0, double c1, double c2,
                                      double c3, double c4, unsigned long long n) {
    GRID_STRIDE(k, n * n) {
        cplx v;
        v.re = c1 * x1[k].re;
        v.im = c1 * x1[k].im;
        if (x2) {
            v.re += c2 * x2[k].re;
            v.im += c2 * x2[k].im;
        }
        if (x3) {
            v.re += c3 * x3[k].re;
            v.im += c3 * x3[k].im;
        }
        if (x4) {
            v.re += c4 * x4[k].re;
            v.im += c4 * x4[k].im;
        }
        if (k % n == k / n) v.re += c0;
        out[k] = v;
    }
}

// Coefficients of pm_lincombs: row r is c[5r] (the identity's) then c[5r + 1 + t] (term t's).
struct Lincombs {
    double c[25];
};

// Whether entry k of a column-major n x n matrix is on the diagonal (k = j*(n+1)): a 32-bit
// remainder while n*n fits (every matrix up to 65535 x 65535), the 64-bit one past that.
__device__ __forceinline__ bool on_diagonal(unsigned long long k, unsigned long long n) {
    if (n < 65536ULL) return (unsigned)k % (unsigned)(n + 1) == 0u;
    return k % (n + 1) == 0;
}

// Up to five combinations of the same four n x n terms in one pass (the B_r of the degree-18
// Taylor evaluation): out_r = c[5r]*I + sum_t c[5r+1+t]*x_t for every non-null out_r. Each
// term is read once, whatever the number of outputs.
extern "C" __global__ void pm_lincombs(const cplx* x1, const cplx* x2, const cplx* x3,
                                       const cplx* x4, cplx* o1, cplx* o2, cplx* o3, cplx* o4,
                                       cplx* o5, Lincombs c, unsigned long long n) {
    cplx* outs[5] = {o1, o2, o3, o4, o5};
    GRID_STRIDE(k, n * n) {
        cplx x[4] = {x1[k], x2[k], x3[k], x4[k]};
        bool diag = on_diagonal(k, n);
        for (int r = 0; r < 5; r++) {
            if (!outs[r]) continue;
            const double* w = c.c + 5 * r;
            cplx v;
            v.re = w[1] * x[0].re + w[2] * x[1].re + w[3] * x[2].re + w[4] * x[3].re;
            v.im = w[1] * x[0].im + w[2] * x[1].im + w[3] * x[2].im + w[4] * x[3].im;
            if (diag) v.re += w[0];
            outs[r][k] = v;
        }
    }
}

// Block-level sum of (re, im) over the threads of one block, written to out[0] by thread 0
// (the one-block reductions: strided sums, superoperator expectations).
__device__ void block_sum_into(double re, double im, cplx* out) {
    __shared__ double sre[256];
    __shared__ double sim[256];
    sre[threadIdx.x] = re;
    sim[threadIdx.x] = im;
    __syncthreads();
    for (unsigned int w = blockDim.x / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) {
            sre[threadIdx.x] += sre[threadIdx.x + w];
            sim[threadIdx.x] += sim[threadIdx.x + w];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        out[0].re = sre[0];
        out[0].im = sim[0];
    }
}

// out[0] = sum of a[start + t*stride], t < count; one block of 256 threads, fixed order.
extern "C" __global__ void pm_strided_sum(const cplx* a, cplx* out, unsigned long long start,
                                          unsigned long long stride,
                                          unsigned long long count) {
    double re = 0.0, im = 0.0;
    for (unsigned long long t = threadIdx.x; t < count; t += blockDim.x) {
        cplx v = a[start + t * stride];
        re += v.re;
        im += v.im;
    }
    block_sum_into(re, im, out);
}

// Non-negative doubles order like their bit patterns, so atomicMax on the bits is a max.
__device__ __forceinline__ void atomic_max_nonneg(double* addr, double v) {
    atomicMax((unsigned long long*)addr, (unsigned long long)__double_as_longlong(v));
}

// Running max that keeps NaN: once a NaN is seen the result stays NaN.
__device__ __forceinline__ double max_keep_nan(double m, double v) {
    return (v != v) ? v : (m != m ? m : fmax(m, v));
}

// Block-level max of v, then one atomic per block into *out (which starts at 0). A NaN goes
// straight to *out (its positive bit pattern exceeds every number's), since fmax drops NaN.
__device__ void block_max_into(double v, double* out) {
    __shared__ double s[256];
    if (v != v) {
        atomic_max_nonneg(out, fabs(v));
        v = 0.0;
    }
    s[threadIdx.x] = v;
    __syncthreads();
    for (unsigned int w = blockDim.x / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) s[threadIdx.x] = fmax(s[threadIdx.x], s[threadIdx.x + w]);
        __syncthreads();
    }
    if (threadIdx.x == 0) atomic_max_nonneg(out, s[0]);
}

// *out = max(*out, max_k |a_k|); NaN entries make the result NaN.
extern "C" __global__ void pm_max_abs(const cplx* a, double* out, unsigned long long n) {
    double m = 0.0;
    GRID_STRIDE(k, n) {
        m = max_keep_nan(m, cabs_(a[k]));
    }
    block_max_into(m, out);
}

// *out = max over columns of sum_i |a_ij| (the induced 1-norm); one column per block stride.
extern "C" __global__ void pm_max_col_abs_sum(const cplx* a, double* out, unsigned long long rows,
                                              unsigned long long cols) {
    __shared__ double s[256];
    for (unsigned long long j = blockIdx.x; j < cols; j += gridDim.x) {
        double acc = 0.0;
        for (unsigned long long i = threadIdx.x; i < rows; i += blockDim.x) {
            acc += cabs_(a[i + j * rows]);
        }
        s[threadIdx.x] = acc;
        __syncthreads();
        for (unsigned int w = blockDim.x / 2; w > 0; w >>= 1) {
            if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
            __syncthreads();
        }
        if (threadIdx.x == 0) atomic_max_nonneg(out, fabs(s[0]));
        __syncthreads();
    }
}

// *out = max(*out, max_{i,j} |a_ij - conj(a_ji)|) for an n x n matrix.
extern "C" __global__ void pm_herm_dev(const cplx* a, double* out, unsigned long long n) {
    double m = 0.0;
    GRID_STRIDE(k, n * n) {
        unsigned long long i = k % n;
        unsigned long long j = k / n;
        cplx x = a[k];
        cplx y = a[j + i * n];
        m = max_keep_nan(m, hypot(x.re - y.re, x.im + y.im));
    }
    block_max_into(m, out);
}

// Copies a rows x cols block: dst[dst_off + i + j*dst_ld] = src[src_off + i + j*src_ld]
// (block_extract with dst_ld = rows, block_overwrite with src_ld = rows).
extern "C" __global__ void pm_block_copy(const cplx* src, cplx* dst, unsigned long long src_ld,
                                         unsigned long long src_off, unsigned long long dst_ld,
                                         unsigned long long dst_off, unsigned long long rows,
                                         unsigned long long cols) {
    GRID_STRIDE(k, rows * cols) {
        unsigned long long i = k % rows;
        unsigned long long j = k / rows;
        dst[dst_off + i + j * dst_ld] = src[src_off + i + j * src_ld];
    }
}

// *out = max(*out, max_{i != j} |a_ij|) for a rows x cols matrix (NaN kept).
extern "C" __global__ void pm_offdiag_max_abs(const cplx* a, double* out, unsigned long long rows,
                                              unsigned long long cols) {
    double m = 0.0;
    GRID_STRIDE(k, rows * cols) {
        if (k % rows != k / rows) m = max_keep_nan(m, cabs_(a[k]));
    }
    block_max_into(m, out);
}

// *out = max(*out, max_k max(0, |a_k - b_k| - rtol |b_k|)) (NaN kept): a and b are equal within
// (atol, rtol) exactly when the result is <= atol.
extern "C" __global__ void pm_close_dev(const cplx* a, const cplx* b, double* out, double rtol,
                                        unsigned long long n) {
    double m = 0.0;
    GRID_STRIDE(k, n) {
        double d = hypot(a[k].re - b[k].re, a[k].im - b[k].im) - rtol * cabs_(b[k]);
        m = max_keep_nan(m, d);
    }
    block_max_into(m, out);
}

// out[rows[i] + cols[j]*m] = a[i + j*m] for an m x n matrix; a null `rows` or `cols` leaves that
// axis alone. `rows` and `cols` are permutations (checked on the host), so writes are disjoint.
extern "C" __global__ void pm_permute(const cplx* a, cplx* out, const unsigned long long* rows,
                                      const unsigned long long* cols, unsigned long long m,
                                      unsigned long long n) {
    GRID_STRIDE(k, m * n) {
        unsigned long long i = k % m;
        unsigned long long j = k / m;
        unsigned long long r = rows ? rows[i] : i;
        unsigned long long c = cols ? cols[j] : j;
        out[r + c * m] = a[k];
    }
}

// Partial trace of an n x n matrix: out[p + q*k] = sum_t a[full[t*k + p] + full[t*k + q]*n] for
// kept indices p, q < k and traced t < r; `full[t*k + p]` is the full index of the pair (p, t).
extern "C" __global__ void pm_ptrace(const cplx* a, cplx* out, const unsigned long long* full,
                                     unsigned long long k, unsigned long long r,
                                     unsigned long long n) {
    GRID_STRIDE(idx, k * k) {
        unsigned long long p = idx % k;
        unsigned long long q = idx / k;
        cplx s;
        s.re = 0.0;
        s.im = 0.0;
        for (unsigned long long t = 0; t < r; t++) {
            cplx v = a[full[t * k + p] + full[t * k + q] * n];
            s.re += v.re;
            s.im += v.im;
        }
        out[idx] = s;
    }
}

// out[0..4] = (sum re, sum im, sum |a|, count) over the entries that are not 0 + 0i (NaN counts
// as non-zero, as on the CPU); one block.
extern "C" __global__ void pm_sum_nonzero(const cplx* a, double* out, unsigned long long n) {
    __shared__ double s[4][256];
    double re = 0.0, im = 0.0, ab = 0.0, cnt = 0.0;
    for (unsigned long long t = threadIdx.x; t < n; t += blockDim.x) {
        cplx v = a[t];
        if (!(v.re == 0.0 && v.im == 0.0)) {
            re += v.re;
            im += v.im;
            ab += cabs_(v);
            cnt += 1.0;
        }
    }
    s[0][threadIdx.x] = re;
    s[1][threadIdx.x] = im;
    s[2][threadIdx.x] = ab;
    s[3][threadIdx.x] = cnt;
    __syncthreads();
    for (unsigned int w = blockDim.x / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) {
            for (int c = 0; c < 4; c++) s[c][threadIdx.x] += s[c][threadIdx.x + w];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        for (int c = 0; c < 4; c++) out[c] = s[c][0];
    }
}

// *out = sum_k r[k] * sum_{i<n} s[i*(n+1) + k*nn] for an nn x nn superoperator s (nn = n*n) and
// an nn x 1 state r: the expectation value Tr(unstack(s r)); one block.
extern "C" __global__ void pm_expect_super(const cplx* s, const cplx* r, cplx* out,
                                           unsigned long long n) {
    unsigned long long nn = n * n;
    double re = 0.0, im = 0.0;
    for (unsigned long long k = threadIdx.x; k < nn; k += blockDim.x) {
        cplx rk = r[k];
        if (rk.re == 0.0 && rk.im == 0.0) continue;
        cplx col;
        col.re = 0.0;
        col.im = 0.0;
        for (unsigned long long i = 0; i < n; i++) {
            cplx v = s[i * (n + 1) + k * nn];
            col.re += v.re;
            col.im += v.im;
        }
        cplx p = cmul(col, rk);
        re += p.re;
        im += p.im;
    }
    block_sum_into(re, im, out);
}
