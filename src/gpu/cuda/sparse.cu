// polymat's kernels for GpuCsr, appended to kernels.cu (same module, same `cplx`, GRID_STRIDE
// and block_sum_into). CSR with 32-bit row offsets and column indices (cuSPARSE's 32I), columns
// strictly increasing within a row. Reductions write one partial sum per block, summed on the
// host in block order, so results do not depend on scheduling.

// out (rows x cols, column-major, zeroed by the caller) = the CSR matrix; one row per thread.
extern "C" __global__ void pm_csr_to_dense(const int* indptr, const int* indices,
                                           const cplx* data, cplx* out,
                                           unsigned long long rows) {
    GRID_STRIDE(i, rows) {
        for (int k = indptr[i]; k < indptr[i + 1]; k++) {
            out[i + (unsigned long long)indices[k] * rows] = data[k];
        }
    }
}

// partial[blockIdx.x] = sum over this block's rows i < n of a_ii (binary search in each row).
extern "C" __global__ void pm_csr_trace(const int* indptr, const int* indices, const cplx* data,
                                        cplx* partial, unsigned long long n) {
    double re = 0.0, im = 0.0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)blockDim.x * gridDim.x) {
        int lo = indptr[i], hi = indptr[i + 1];
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if ((unsigned long long)indices[mid] < i) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if (lo < indptr[i + 1] && (unsigned long long)indices[lo] == i) {
            re += data[lo].re;
            im += data[lo].im;
        }
    }
    block_sum_into(re, im, partial + blockIdx.x);
}

// partial[blockIdx.x] = this block's share of <psi|O|psi> (ket != 0: state is an n-vector) or of
// Tr(O rho) = sum_ik O_ik rho_(k, i) (state is n x n, column-major), for the n x n CSR O.
extern "C" __global__ void pm_csr_expect(const int* indptr, const int* indices, const cplx* data,
                                         const cplx* state, cplx* partial, unsigned long long n,
                                         int ket) {
    double re = 0.0, im = 0.0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)blockDim.x * gridDim.x) {
        cplx row;
        row.re = 0.0;
        row.im = 0.0;
        for (int k = indptr[i]; k < indptr[i + 1]; k++) {
            unsigned long long c = (unsigned long long)indices[k];
            cplx p = cmul(data[k], ket ? state[c] : state[c + i * n]);
            row.re += p.re;
            row.im += p.im;
        }
        if (ket) {
            cplx s = state[i];
            s.im = -s.im;
            row = cmul(s, row);
        }
        re += row.re;
        im += row.im;
    }
    block_sum_into(re, im, partial + blockIdx.x);
}

// Row i of c = a + s*b, the entries that are not exactly zero, in column order: with cp null,
// counts[i] = their number; else they are written from cp[i] (cp from the counts' prefix sum).
extern "C" __global__ void pm_csr_add(const int* ap, const int* ai, const cplx* ad, const int* bp,
                                      const int* bi, const cplx* bd, double sr, double si,
                                      const int* cp, int* ci, cplx* cd,
                                      unsigned long long* counts, unsigned long long rows) {
    cplx s;
    s.re = sr;
    s.im = si;
    GRID_STRIDE(i, rows) {
        int p = ap[i], pe = ap[i + 1], q = bp[i], qe = bp[i + 1];
        unsigned long long count = 0;
        int out = cp ? cp[i] : 0;
        while (p < pe || q < qe) {
            int col;
            cplx v;
            if (q >= qe || (p < pe && ai[p] < bi[q])) {
                col = ai[p];
                v = ad[p++];
            } else {
                cplx w = cmul(s, bd[q]);
                col = bi[q++];
                if (p < pe && ai[p] == col) {
                    v.re = ad[p].re + w.re;
                    v.im = ad[p].im + w.im;
                    p++;
                } else {
                    v = w;
                }
            }
            if (v.re != 0.0 || v.im != 0.0) {
                if (cp) {
                    ci[out] = col;
                    cd[out] = v;
                    out++;
                }
                count++;
            }
        }
        if (!cp) counts[i] = count;
    }
}

// c = kron(a, b) for CSR a (ar rows) and b (br rows, bc columns): row r = ia*br + ib holds the
// products of row ia of a and row ib of b from cp[r], in column order (a's columns, then b's).
extern "C" __global__ void pm_csr_kron(const int* ap, const int* ai, const cplx* ad, const int* bp,
                                       const int* bi, const cplx* bd, const int* cp, int* ci,
                                       cplx* cd, unsigned long long br, unsigned long long bc,
                                       unsigned long long rows) {
    GRID_STRIDE(r, rows) {
        unsigned long long ia = r / br, ib = r % br;
        int out = cp[r];
        for (int ka = ap[ia]; ka < ap[ia + 1]; ka++) {
            for (int kb = bp[ib]; kb < bp[ib + 1]; kb++) {
                ci[out] = (int)((unsigned long long)ai[ka] * bc + (unsigned long long)bi[kb]);
                cd[out] = cmul(ad[ka], bd[kb]);
                out++;
            }
        }
    }
}
