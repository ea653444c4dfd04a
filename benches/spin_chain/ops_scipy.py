#!/usr/bin/env python3
"""scipy's side of benches/tools/chain_ops.rs: the same operations on the same H (medians, ms).

Usage: python3 benches/spin_chain/ops_scipy.py N   (numpy and scipy needed)
"""
import time, numpy as np, scipy.sparse as sp, sys
n=int(sys.argv[1])
X=sp.csr_matrix(np.array([[0,1],[1,0]],dtype=complex)); Y=sp.csr_matrix(np.array([[0,-1j],[1j,0]])); Z=sp.csr_matrix(np.array([[1,0],[0,-1]],dtype=complex))
h=sp.csr_matrix((2**n,2**n),dtype=complex)
for p,c in ((X,1.0),(Y,1.0),(Z,0.7)):
    pp=sp.kron(p,p,format='csr')
    for i in range(n-1):
        h=h+c*sp.kron(sp.kron(sp.identity(2**i,dtype=complex,format='csr'),pp,format='csr'),sp.identity(2**(n-i-2),dtype=complex,format='csr'),format='csr')
h.eliminate_zeros()
k=np.arange(2**n); psi=np.cos(0.1*k)+1j*np.sin(0.37*k)
def med(f,r):
    t=[]
    for _ in range(r):
        s=time.perf_counter(); f(); t.append(time.perf_counter()-s)
    return sorted(t)[len(t)//2]*1e3
I2=sp.identity(2,dtype=complex,format='csr')
print("HH %.2f" % med(lambda: h@h,3))
print("adjoint %.2f" % med(lambda: h.conj().transpose().tocsr(),5))
print("transpose %.2f" % med(lambda: h.transpose().tocsr(),5))
print("mul %.2f" % med(lambda: h*2.0,5))
print("expect %.2f" % med(lambda: np.vdot(psi, h@psi),5))
print("trace %.3f" % med(lambda: h.diagonal().sum(),5))
print("sub %.2f" % med(lambda: (h-h),5))
print("kronI %.2f" % med(lambda: sp.kron(h,I2,format='csr'),5))
