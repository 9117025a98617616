"""The index arithmetic of kernels no GPU has run yet, simulated on the CPU
against numpy's product, at whole and edge tiles with 16-byte and element
loads. It checks addresses and layouts, not the hardware: keep it in step
with the kernels.
- gemm_mma.cu: the staged tiles as load_tiles fills them, ldmatrix (.x4, and
  .x4.trans) and mma.sync m16n8k16 as the PTX ISA defines each lane's
  fragments, and the store of C, for every warp and lane of every block.
- gemm_blocked.cu: the tiles each thread stages (A transposed), each
  thread's 8 x 8 of C, and its store.
    /usr/bin/python3 kernels/simulate.py     # a few seconds; needs numpy"""
import numpy as np

# gemm_mma.cu's constants
BM,BN,BK=128,256,32; WM_,WN_=2,4; WM,WN=BM//WM_,BN//WN_; MT,NT=WM//16,WN//8; PAD=8
AS,BS=BK+PAD,BN+PAD; THREADS=256

def load_tiles(a,b,m,n,k,bm,bn,p0,vec):
    As=np.full(BM*AS,np.nan); Bs=np.full(BK*BS,np.nan)  # NaN: never written
    for e in range(BM*BK//8):
        i,p=e//(BK//8),(e%(BK//8))*8; gi,gp=bm+i,p0+p
        for q in range(8):
            inside=(gi<m and gp<k) if vec else (gi<m and gp+q<k)
            As[i*AS+p+q]=a[gi,gp+q] if inside else 0
    for e in range(BK*BN//8):
        p,j=e//(BN//8),(e%(BN//8))*8; gp,gj=p0+p,bn+j
        for q in range(8):
            inside=(gp<k and gj<n) if vec else (gp<k and gj+q<n)
            Bs[p*BS+j+q]=b[gp,gj+q] if inside else 0
    return As,Bs

def ldmatrix_x4(smem,addr_of_lane,trans):
    # addr_of_lane[l]: element offset of the row lane l provides; matrix i from lanes 8i..8i+7
    out=np.zeros((32,4,2))
    for i in range(4):
        mat=np.array([smem[addr_of_lane[8*i+r]:addr_of_lane[8*i+r]+8] for r in range(8)])
        for t in range(32):
            if not trans: out[t,i]=mat[t//4,2*(t%4):2*(t%4)+2]
            else: out[t,i]=[mat[2*(t%4),t//4],mat[2*(t%4)+1,t//4]]
    return out

def mma(d,fa,fb0,fb1):
    A=np.zeros((16,16)); B=np.zeros((16,8))
    for t in range(32):
        g,c=t//4,t%4
        A[g,2*c:2*c+2]=fa[t,0]; A[g+8,2*c:2*c+2]=fa[t,1]; A[g,2*c+8:2*c+10]=fa[t,2]; A[g+8,2*c+8:2*c+10]=fa[t,3]
        B[2*c:2*c+2,g]=fb0[t]; B[2*c+8:2*c+10,g]=fb1[t]
    assert not np.isnan(A).any() and not np.isnan(B).any()
    D=A@B
    for t in range(32):
        g,c=t//4,t%4
        d[t]+= [D[g,2*c],D[g,2*c+1],D[g+8,2*c],D[g+8,2*c+1]]

def gemm(a,b,m,n,k,vec):
    c=np.full((m,n),np.nan)
    for by in range((m+BM-1)//BM):
        for bx in range((n+BN-1)//BN):
            bm,bn=by*BM,bx*BN
            acc=np.zeros((8,MT,NT,32,4))
            for step in range((k+BK-1)//BK):
                As,Bs=load_tiles(a,b,m,n,k,bm,bn,step*BK,vec)
                for warp in range(8):
                    wm,wn=(warp//WN_)*WM,(warp%WN_)*WN
                    for ks in range(0,BK,16):
                        fa=[ldmatrix_x4(As,[(wm+mi*16+l%16)*AS+ks+(l//16)*8 for l in range(32)],False) for mi in range(MT)]
                        fb=[None]*NT
                        for nj in range(0,NT,2):
                            r=ldmatrix_x4(Bs,[(ks+l%16)*BS+wn+nj*8+(l//16)*8 for l in range(32)],True)
                            fb[nj]=(r[:,0],r[:,1]); fb[nj+1]=(r[:,2],r[:,3])
                        for mi in range(MT):
                            for ni in range(NT):
                                mma(acc[warp,mi,ni],fa[mi],fb[ni][0],fb[ni][1])
            for warp in range(8):
                wm,wn=(warp//WN_)*WM,(warp%WN_)*WN
                for lane in range(32):
                    for mi in range(MT):
                        for ni in range(NT):
                            j=bn+wn+ni*8+(lane%4)*2
                            for h in range(2):
                                i=bm+wm+mi*16+lane//4+h*8
                                if i>=m: continue
                                x0,x1=acc[warp,mi,ni,lane,2*h],acc[warp,mi,ni,lane,2*h+1]
                                if vec:
                                    if j<n: c[i,j]=x0; c[i,j+1]=x1
                                else:
                                    if j<n: c[i,j]=x0
                                    if j+1<n: c[i,j+1]=x1
    return c


# gemm_blocked.cu's constants
BBM, BBN, BBK, TM, TN, BTHREADS = 128, 128, 8, 8, 8, 256


def gemm_blocked(a, b, m, n, k, kv, vec):
    """kv: elements per 16 bytes (4 for float, 2 for double)."""
    c = np.full((m, n), np.nan)
    for by in range((m + BBM - 1) // BBM):
        for bx in range((n + BBN - 1) // BBN):
            bm, bn = by * BBM, bx * BBN
            acc = np.zeros((BTHREADS, TM, TN))
            for p0 in range(0, k, BBK):
                As = np.full((BBK, BBM), np.nan); Bs = np.full((BBK, BBN), np.nan)
                for e in range(BBM * BBK // kv):
                    i, p = e // (BBK // kv), (e % (BBK // kv)) * kv; gi, gp = bm + i, p0 + p
                    for q in range(kv):
                        inside = (gi < m and gp < k) if vec else (gi < m and gp + q < k)
                        As[p + q, i] = a[gi, gp + q] if inside else 0
                for e in range(BBK * BBN // kv):
                    p, j = e // (BBN // kv), (e % (BBN // kv)) * kv; gp, gj = p0 + p, bn + j
                    for q in range(kv):
                        inside = (gp < k and gj < n) if vec else (gp < k and gj + q < n)
                        Bs[p, j + q] = b[gp, gj + q] if inside else 0
                assert not np.isnan(As).any() and not np.isnan(Bs).any()
                for tid in range(BTHREADS):
                    ty, tx = tid // (BBN // TN), tid % (BBN // TN)
                    for p in range(BBK):
                        ra = As[p, ty * TM:ty * TM + TM]; rb = Bs[p, tx * TN:tx * TN + TN]
                        acc[tid] += np.outer(ra, rb)
            for tid in range(BTHREADS):
                ty, tx = tid // (BBN // TN), tid % (BBN // TN)
                for i in range(TM):
                    gi = bm + ty * TM + i
                    if gi >= m: break
                    for j in range(0, TN, kv):
                        gj = bn + tx * TN + j
                        for q in range(kv):
                            if (gj < n) if vec else (gj + q < n): c[gi, gj + q] = acc[tid, i, j + q]
    return c


def padded(x, rows, cols):
    """x in a larger zero matrix: the simulation reads whole chunks where a kernel reads only what is inside."""
    out = np.zeros((x.shape[0] + rows, x.shape[1] + cols)); out[:x.shape[0], :x.shape[1]] = x
    return out


rng = np.random.default_rng(1)
for (m, n, k, vec) in [(200, 136, 72, True), (130, 131, 45, False), (64, 256, 32, True), (136, 520, 48, True)]:
    a = rng.integers(-3, 4, (m, k)).astype(float); b = rng.integers(-3, 4, (k, n)).astype(float)
    ok = np.array_equal(gemm(padded(a, BM, BK + 8), padded(b, BK, BN + 8), m, n, k, vec), a @ b)
    print(f"mma m={m} n={n} k={k} {'16-byte' if vec else 'element'} loads:", "exact" if ok else "WRONG")
    assert ok
for (m, n, k, kv, vec) in [(200, 136, 44, 4, True), (130, 131, 45, 4, False), (140, 130, 18, 2, True),
                           (129, 127, 13, 2, False)]:
    a = rng.integers(-3, 4, (m, k)).astype(float); b = rng.integers(-3, 4, (k, n)).astype(float)
    ok = np.array_equal(gemm_blocked(padded(a, BBM, BBK + 8), padded(b, BBK, BBN + 8), m, n, k, kv, vec), a @ b)
    print(f"blocked m={m} n={n} k={k} {'float' if kv == 4 else 'double'} {'16-byte' if vec else 'element'} loads:",
          "exact" if ok else "WRONG")
    assert ok
