// Checks the index math and results of every kernel in src/gpu/cuda/kernels.cu and sparse.cu on the CPU against
// naive loops; compiled with stub.h by tests/cuda_kernels_emulated.rs.
#include "../../src/gpu/cuda/kernels.cu"
#include "../../src/gpu/cuda/sparse.cu"
typedef std::complex<double> C;
static unsigned long long seed=12345;
static double rnd(){ seed = seed*6364136223846793005ULL+1442695040888963407ULL; return ((seed>>11)*(1.0/9007199254740992.0))*2-1; }
static std::vector<cplx> randm(size_t n){ std::vector<cplx> v(n); for(auto&x:v){x.re=rnd();x.im=rnd();} return v; }
static C at(const std::vector<cplx>&v,size_t k){return C(v[k].re,v[k].im);}
static int fails=0;
static void chk(bool ok,const char*w){ if(!ok){printf("FAIL %s\n",w);fails++;} }
// Run a grid-stride kernel with several simulated blocks/threads (no syncthreads inside).
#define LAUNCH(B,T, call) do{ gridDim.x=B; blockDim.x=T; for(unsigned b=0;b<B;b++) for(unsigned t=0;t<T;t++){blockIdx.x=b;threadIdx.x=t; call;} gridDim.x=1;blockDim.x=1;blockIdx.x=0;threadIdx.x=0;}while(0)
// A random CSR matrix (sorted columns, density about 0.4, row 1 left empty) and its dense copy.
struct Csr { size_t r, c; std::vector<int> p, i; std::vector<cplx> d; std::vector<C> dense; };
static Csr rcsr(size_t r, size_t c){ Csr m{r,c,{0},{},{},std::vector<C>(r*c,0.0)};
  for(size_t a=0;a<r;a++){ for(size_t b=0;b<c;b++){ if(a!=1 && rnd()<-0.2){ cplx v{rnd(),rnd()}; m.i.push_back((int)b); m.d.push_back(v); m.dense[a+b*r]=C(v.re,v.im);} } m.p.push_back((int)m.i.size()); }
  if(m.i.empty()){ m.i.push_back(0); m.d.push_back({0,0}); } return m; }
int main(){
  size_t m=5,n=3;
  auto a=randm(m*n); std::vector<cplx> out(m*n);
  LAUNCH(2,4, pm_transpose(a.data(),out.data(),m,n,1));
  for(size_t i=0;i<m;i++)for(size_t j=0;j<n;j++) chk(at(out,j+i*n)==std::conj(at(a,i+j*m)),"adjoint");
  size_t ar=2,ac=3,br=3,bc=2; auto A=randm(ar*ac), B=randm(br*bc); std::vector<cplx> K(ar*br*ac*bc);
  LAUNCH(3,5, pm_kron(A.data(),B.data(),K.data(),ar,ac,br,bc));
  for(size_t i=0;i<ar*br;i++)for(size_t j=0;j<ac*bc;j++) chk(std::abs(at(K,i+j*ar*br)-at(A,i/br+(j/bc)*ar)*at(B,i%br+(j%bc)*br))<1e-15,"kron");
  // reshape 4x6 -> 3x8 row-major
  size_t M=4,N=6,R=3,Cc=8; auto X=randm(M*N); std::vector<cplx> Y(R*Cc);
  LAUNCH(2,7, pm_reshape(X.data(),Y.data(),M,N,R,Cc));
  for(size_t p=0;p<R;p++)for(size_t q=0;q<Cc;q++){ size_t f=p*Cc+q; chk(at(Y,p+q*R)==at(X,f/N+(f%N)*M),"reshape"); }
  // lincomb
  size_t nn=4; auto x1=randm(nn*nn),x2=randm(nn*nn),x3=randm(nn*nn); std::vector<cplx> L(nn*nn);
  auto x4=randm(nn*nn);
  LAUNCH(1,3, pm_lincomb(x1.data(),x2.data(),x3.data(),x4.data(),L.data(),0.5,2,3,4,-1.5,nn));
  for(size_t i=0;i<nn;i++)for(size_t j=0;j<nn;j++){size_t k=i+j*nn; C w=2.0*at(x1,k)+3.0*at(x2,k)+4.0*at(x3,k)-1.5*at(x4,k)+(i==j?0.5:0.0); chk(std::abs(at(L,k)-w)<1e-14,"lincomb");}
  LAUNCH(1,3, pm_lincomb(x1.data(),nullptr,nullptr,nullptr,L.data(),0.5,2,3,4,5,nn));
  for(size_t i=0;i<nn;i++)for(size_t j=0;j<nn;j++){size_t k=i+j*nn; C w=2.0*at(x1,k)+(i==j?0.5:0.0); chk(std::abs(at(L,k)-w)<1e-14,"lincomb null");}
  // lincombs: five outputs (the third left out) of four terms, n = 5 (diagonal at k % 6 == 0)
  { size_t q=5; auto y1=randm(q*q),y2=randm(q*q),y3=randm(q*q),y4=randm(q*q);
    std::vector<std::vector<cplx>> O(5, std::vector<cplx>(q*q, cplx{9,9})); Lincombs cf;
    for(int t=0;t<25;t++) cf.c[t]=0.25*t-3.0;
    LAUNCH(2,3, pm_lincombs(y1.data(),y2.data(),y3.data(),y4.data(),O[0].data(),O[1].data(),nullptr,O[3].data(),O[4].data(),cf,q));
    for(int r=0;r<5;r++) for(size_t i=0;i<q;i++)for(size_t j=0;j<q;j++){ size_t k=i+j*q; const double* w=cf.c+5*r;
      C want=w[1]*at(y1,k)+w[2]*at(y2,k)+w[3]*at(y3,k)+w[4]*at(y4,k)+(i==j?w[0]:0.0);
      if(r==2) chk(at(O[r],k)==C(9,9),"lincombs null output untouched"); else chk(std::abs(at(O[r],k)-want)<1e-13,"lincombs"); } }
  // add_strided: diag offset -1 of 3x4: start r0 + c0*rows = 1, stride 4, count 2
  std::vector<cplx> D(12,{0,0}); std::vector<cplx> vals={{2,1},{3,0}};
  LAUNCH(1,2, pm_add_strided(D.data(),vals.data(),0,0,1,4,2));
  chk(at(D,1+0*3)==C(2,1)&&at(D,2+1*3)==C(3,0),"diag -1");
  LAUNCH(1,2, pm_add_strided(D.data(),nullptr,1.5,0,0,4,3));
  chk(at(D,0)==C(1.5,0)&&at(D,1+3)==C(1.5,0)&&at(D,2+6)==C(1.5,0),"diag const");
  // strided sum (trace) of 5x5
  auto T=randm(25); std::vector<cplx> s(1); pm_strided_sum(T.data(),s.data(),0,6,5);
  C tr=0; for(int i=0;i<5;i++) tr+=at(T,i*6); chk(std::abs(at(s,0)-tr)<1e-14,"trace");
  // max abs
  double mx=0; pm_max_abs(a.data(),&mx,m*n); double w=0; for(size_t k=0;k<m*n;k++) w=std::max(w,std::abs(at(a,k))); chk(std::abs(mx-w)<1e-15,"maxabs");
  auto an=a; an[3].re=NAN; mx=0; pm_max_abs(an.data(),&mx,m*n); chk(std::isnan(mx),"maxabs nan");
  // col abs sum
  mx=0; pm_max_col_abs_sum(a.data(),&mx,m,n); w=0; for(size_t j=0;j<n;j++){double c=0;for(size_t i=0;i<m;i++)c+=std::abs(at(a,i+j*m)); w=std::max(w,c);} chk(std::abs(mx-w)<1e-14,"one norm");
  // herm dev
  auto H=randm(16); for(int i=0;i<4;i++)for(int j=0;j<4;j++){ H[j+i*4].re=H[i+j*4].re; H[j+i*4].im=-H[i+j*4].im; } for(int i=0;i<4;i++)H[i*5].im=0;
  mx=0; pm_herm_dev(H.data(),&mx,4); chk(mx==0,"herm");
  H[1+2*4].re+=1e-3; mx=0; pm_herm_dev(H.data(),&mx,4); chk(std::abs(mx-1e-3)<1e-12,"herm dev");
  // tidyup, scale, multiply, conj
  std::vector<cplx> tt={{1e-15,0.5},{0.25,-1e-14}}, to(2); LAUNCH(1,2,pm_tidyup(tt.data(),to.data(),1e-12,2)); chk(at(to,0)==C(0,0.5)&&at(to,1)==C(0.25,0),"tidyup");
  LAUNCH(2,2,pm_scale(a.data(),out.data(),0.5,-2,m*n)); for(size_t k=0;k<m*n;k++) chk(std::abs(at(out,k)-C(0.5,-2)*at(a,k))<1e-15,"scale");
  // block copy: extract the 2x2 block at (1, 1) of the 5x3 `a`, then write it back at (3, 0)
  std::vector<cplx> blk(4);
  LAUNCH(2,3, pm_block_copy(a.data(),blk.data(),m,1+1*m,2,0,2,2));
  for(size_t i=0;i<2;i++)for(size_t j=0;j<2;j++) chk(at(blk,i+j*2)==at(a,(1+i)+(1+j)*m),"block extract");
  auto wb=a; LAUNCH(1,3, pm_block_copy(blk.data(),wb.data(),2,0,m,3+0*m,2,2));
  for(size_t i=0;i<m;i++)for(size_t j=0;j<n;j++){ bool in=i>=3&&i<5&&j<2; chk(at(wb,i+j*m)==(in?at(blk,(i-3)+j*2):at(a,i+j*m)),"block overwrite"); }
  // off-diagonal max of the 5x3 `a`, and with the off-diagonal zeroed
  mx=0; pm_offdiag_max_abs(a.data(),&mx,m,n); w=0; for(size_t i=0;i<m;i++)for(size_t j=0;j<n;j++) if(i!=j) w=std::max(w,std::abs(at(a,i+j*m))); chk(std::abs(mx-w)<1e-15,"offdiag max");
  auto dg=a; for(size_t i=0;i<m;i++)for(size_t j=0;j<n;j++) if(i!=j) dg[i+j*m]={0,0}; mx=0; pm_offdiag_max_abs(dg.data(),&mx,m,n); chk(mx==0,"offdiag zero");
  dg[2].im=NAN; mx=0; pm_offdiag_max_abs(dg.data(),&mx,m,n); chk(std::isnan(mx),"offdiag nan");
  // closeness: b = a + 1e-9 in one entry; rtol 0 gives 1e-9, rtol 1 gives 0
  auto b2=a; b2[4].re+=1e-9; mx=0; pm_close_dev(a.data(),b2.data(),&mx,0.0,m*n); chk(std::abs(mx-1e-9)<1e-15,"close dev");
  mx=0; pm_close_dev(a.data(),b2.data(),&mx,1.0,m*n); chk(mx==0,"close dev rtol");
  mx=0; pm_close_dev(a.data(),a.data(),&mx,0.0,m*n); chk(mx==0,"close dev equal");
  b2[1].im=INFINITY; mx=0; pm_close_dev(b2.data(),b2.data(),&mx,0.0,m*n); chk(std::isnan(mx),"close dev inf");
  // permute the 5x3 `a`: rows by pr, columns by pc, then rows only
  unsigned long long pr[5]={2,0,4,1,3}, pc[3]={1,2,0}; std::vector<cplx> pm(m*n);
  LAUNCH(2,4, pm_permute(a.data(),pm.data(),pr,pc,m,n));
  for(size_t i=0;i<m;i++)for(size_t j=0;j<n;j++) chk(at(pm,pr[i]+pc[j]*m)==at(a,i+j*m),"permute");
  LAUNCH(1,3, pm_permute(a.data(),pm.data(),pr,nullptr,m,n));
  for(size_t i=0;i<m;i++)for(size_t j=0;j<n;j++) chk(at(pm,pr[i]+j*m)==at(a,i+j*m),"permute rows");
  // ptrace of a 6x6 operator on dims (2, 3) keeping subsystem 0: full index i = 3*s0 + s1
  { size_t N=6,K=2,R=3; auto A6=randm(N*N); std::vector<unsigned long long> full(K*R);
    for(size_t i=0;i<N;i++) full[(i%3)*K + i/3]=i;
    std::vector<cplx> pt(K*K); LAUNCH(2,3, pm_ptrace(A6.data(),pt.data(),full.data(),K,R,N));
    for(size_t p=0;p<K;p++)for(size_t q=0;q<K;q++){ C w=0; for(size_t t=0;t<R;t++) w+=at(A6,(3*p+t)+(3*q+t)*N); chk(std::abs(at(pt,p+q*K)-w)<1e-14,"ptrace"); } }
  // sums over the non-zero entries: a with two entries zeroed, one NaN
  { auto z=a; z[1]={0,0}; z[4]={-0.0,0.0}; double o4[4]; pm_sum_nonzero(z.data(),o4,m*n);
    C sw=0; double aw=0, cw=0; for(size_t k=0;k<m*n;k++) if(!(z[k].re==0&&z[k].im==0)){ sw+=at(z,k); aw+=std::abs(at(z,k)); cw+=1; }
    chk(std::abs(C(o4[0],o4[1])-sw)<1e-14 && std::abs(o4[2]-aw)<1e-14 && o4[3]==cw && cw==m*n-2,"sum nonzero");
    z[0].re=NAN; pm_sum_nonzero(z.data(),o4,m*n); chk(std::isnan(o4[0]) && o4[3]==cw,"sum nonzero nan"); }
  // expect_super: a 9x9 superoperator on 3x3 states, one state entry zero
  { size_t n3=3, N=9; auto S=randm(N*N), rv=randm(N); rv[4]={0,0}; std::vector<cplx> e(1);
    pm_expect_super(S.data(),rv.data(),e.data(),n3);
    C w=0; for(size_t k=0;k<N;k++) for(size_t i=0;i<n3;i++) w+=at(S,i*(n3+1)+k*N)*at(rv,k);
    chk(std::abs(at(e,0)-w)<1e-13,"expect_super"); }
  // ----- sparse.cu -----
  { Csr A=rcsr(6,5); std::vector<cplx> D(30,{0,0});
    LAUNCH(2,3, pm_csr_to_dense(A.p.data(),A.i.data(),A.d.data(),D.data(),6));
    bool ok=true; for(size_t k=0;k<30;k++) ok&=at(D,k)==A.dense[k]; chk(ok,"csr to dense");
    Csr S=rcsr(6,6); std::vector<cplx> part(1); pm_csr_trace(S.p.data(),S.i.data(),S.d.data(),part.data(),6);
    C tr=0; for(int k=0;k<6;k++) tr+=S.dense[k*7]; chk(std::abs(at(part,0)-tr)<1e-14,"csr trace");
    auto psi=randm(6); pm_csr_expect(S.p.data(),S.i.data(),S.d.data(),psi.data(),part.data(),6,1);
    C w=0; for(size_t a=0;a<6;a++){ C row=0; for(size_t b=0;b<6;b++) row+=S.dense[a+b*6]*at(psi,b); w+=std::conj(at(psi,a))*row; }
    chk(std::abs(at(part,0)-w)<1e-13,"csr expect ket");
    auto rho=randm(36); pm_csr_expect(S.p.data(),S.i.data(),S.d.data(),rho.data(),part.data(),6,0);
    w=0; for(size_t a=0;a<6;a++) for(size_t b=0;b<6;b++) w+=S.dense[a+b*6]*at(rho,b+a*6);
    chk(std::abs(at(part,0)-w)<1e-13,"csr expect oper");
    // add: count, prefix sums, fill; then a + (-1)·a stores nothing
    Csr B=rcsr(6,5); double sr=0.5, si=-2; std::vector<unsigned long long> cnt(6);
    LAUNCH(2,2, pm_csr_add(A.p.data(),A.i.data(),A.d.data(),B.p.data(),B.i.data(),B.d.data(),sr,si,nullptr,nullptr,nullptr,cnt.data(),6));
    std::vector<int> cp{0}; for(size_t a=0;a<6;a++) cp.push_back(cp.back()+(int)cnt[a]);
    std::vector<int> ci(cp.back()+1); std::vector<cplx> cd(cp.back()+1);
    LAUNCH(2,2, pm_csr_add(A.p.data(),A.i.data(),A.d.data(),B.p.data(),B.i.data(),B.d.data(),sr,si,cp.data(),ci.data(),cd.data(),cnt.data(),6));
    std::vector<C> got(30,0.0); ok=true;
    for(size_t a=0;a<6;a++) for(int k=cp[a];k<cp[a+1];k++){ got[a+ci[k]*6]=at(cd,k); if(k>cp[a]) ok&=ci[k]>ci[k-1]; }
    for(size_t k=0;k<30;k++) ok&=std::abs(got[k]-(A.dense[k]+C(sr,si)*B.dense[k]))<1e-14;
    chk(ok,"csr add");
    LAUNCH(1,4, pm_csr_add(A.p.data(),A.i.data(),A.d.data(),A.p.data(),A.i.data(),A.d.data(),-1.0,0.0,nullptr,nullptr,nullptr,cnt.data(),6));
    ok=true; for(size_t a=0;a<6;a++) ok&=cnt[a]==0; chk(ok,"csr add cancels");
    // kron of a 3x2 and a 2x3 matrix: offsets from the row lengths
    Csr K1=rcsr(3,2), K2=rcsr(2,3); size_t R=6, Cn=6; std::vector<int> kp{0};
    for(size_t r=0;r<R;r++){ size_t ia=r/2, ib=r%2; kp.push_back(kp.back()+(K1.p[ia+1]-K1.p[ia])*(K2.p[ib+1]-K2.p[ib])); }
    std::vector<int> ki(kp.back()+1); std::vector<cplx> kd(kp.back()+1);
    LAUNCH(2,2, pm_csr_kron(K1.p.data(),K1.i.data(),K1.d.data(),K2.p.data(),K2.i.data(),K2.d.data(),kp.data(),ki.data(),kd.data(),2,3,R));
    std::vector<C> kg(R*Cn,0.0); ok=true;
    for(size_t r=0;r<R;r++) for(int k=kp[r];k<kp[r+1];k++){ kg[r+ki[k]*R]=at(kd,k); if(k>kp[r]) ok&=ki[k]>ki[k-1]; }
    for(size_t r=0;r<R;r++) for(size_t c=0;c<Cn;c++) ok&=std::abs(kg[r+c*R]-K1.dense[r/2+(c/3)*3]*K2.dense[r%2+(c%3)*2])<1e-14;
    chk(ok,"csr kron"); }
  printf(fails?"FAILED %d\n":"all kernel index checks passed\n",fails);
  return fails!=0;
}
