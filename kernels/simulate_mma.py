"""gemm_mma.cu's index arithmetic, simulated on the CPU: the staged tiles as
load_tiles fills them, ldmatrix (.x4, and .x4.trans) and mma.sync m16n8k16
as the PTX ISA defines each lane's fragments, and the store of C, for every
warp and lane of every block, against numpy's product. It checks the
addresses and layouts, not the hardware: keep it in step with gemm_mma.cu.
    /usr/bin/python3 kernels/simulate_mma.py     # about a minute; needs numpy"""
import numpy as np

# gemm_mma.cu's constants
BM,BN,BK=128,128,32; WM_,WN_=2,4; WM,WN=BM//WM_,BN//WN_; MT,NT=WM//16,WN//8; PAD=8
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

rng=np.random.default_rng(1)
for (m,n,k,vec) in [(200,136,72,True),(130,131,45,False),(64,256,32,True)]:
    a=rng.integers(-3,4,(m,k)).astype(float); b=rng.integers(-3,4,(k,n)).astype(float)
    # padded: the simulation reads whole chunks where the kernel reads only what is inside
    ap=np.zeros((m+BM,k+BK+8)); ap[:m,:k]=a; bp=np.zeros((k+BK,n+BN+8)); bp[:k,:n]=b
    c=gemm(ap,bp,m,n,k,vec)
    ok=np.array_equal(c,a@b)
    print(f"m={m} n={n} k={k} {'16-byte' if vec else 'element'} loads:", "exact" if ok else "WRONG")
    assert ok
