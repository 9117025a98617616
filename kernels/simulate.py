"""The index arithmetic of the GEMM kernels, simulated on the CPU, and their
shared-memory accesses counted against the banks. It checks addresses and
layouts, not the hardware; the tile constants are read from the .cu files,
the index expressions mirror the kernels' and must be kept in step with them.

1. Exactness, against numpy's product at whole and edge tiles with 16-byte
   and element loads:
   - gemm_mma.cu: the staged tiles as load_tiles fills them, ldmatrix (.x4,
     and .x4.trans) and mma.sync m16n8k16 as the PTX ISA defines each lane's
     fragments, and the store of C, for every warp and lane of every block;
     for the default tile and every other tile of kTiles (bench/gemm_tiles).
   - gemm_blocked.cu: the tiles each thread stages (A transposed), each
     thread's 8 x 8 of C, and its store; for every tile of its kTiles.
2. Bank conflicts of every shared-memory access of one k step, for every
   warp (16-byte loads; fp16 for every tile of mma, fp32 and fp64 for every
   tile of blocked), in the usual model: 32 banks of 4 bytes; a 16-byte
   access (and each 8 x 8 matrix of an ldmatrix) is served a quarter-warp at
   a time, an 8-byte access a half-warp at a time, a narrower one the whole
   warp at once; lanes of a phase that touch the same 4-byte word share it; a
   bank gives one word per wavefront. Every access must take no more wavefronts than its bytes need.
   On a GPU, ncu's shared-memory table measures the same (kernels/README.md).

    /usr/bin/python3 kernels/simulate.py     # a few seconds; needs numpy
ctest runs it as kernels.simulate."""
import pathlib
import re
from collections import Counter

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent


def constants(name):
    """The file's `constexpr int kX = ...` at namespace level, evaluated in order (integer division, as in C++)."""
    ns = {}
    for decl in re.findall(r"^constexpr int (k\w+ = [^;]+);", (HERE / name).read_text(), re.M):
        for part in decl.split(","):
            key, expr = part.split("=")
            ns[key.strip()] = eval(expr.replace("/", "//"), {}, dict(ns))
    return ns


# gemm_mma.cu
M = constants("gemm_mma.cu")
PAD = M["kPad"]


class Tile:
    """gemm_mma.cu's Tile: a block's bm x bn of C with warps_m x warps_n warps, bk of k per step."""

    def __init__(self, bm, bn, bk, warps_m, warps_n, stages):
        self.BM, self.BN, self.BK, self.WM_, self.WN_, self.stages = bm, bn, bk, warps_m, warps_n, stages
        self.WM, self.WN = bm // warps_m, bn // warps_n
        self.MT, self.NT = self.WM // 16, self.WN // 8
        self.AS, self.BS = bk + PAD, bn + PAD
        self.THREADS = 32 * warps_m * warps_n
        self.WARPS = warps_m * warps_n

    def __str__(self):
        return f"{self.BM}x{self.BN}x{self.BK} w{self.WM_}x{self.WN_} s{self.stages}"

    def a_chunk(self, e):
        """load_tiles: the row and first column of A's chunk e."""
        runs = self.BK // 32
        run, lane = e // 32, e % 32
        return run // runs * 8 + lane % 8, (run % runs * 4 + lane // 8) * 8

    def b_chunk(self, e):
        return e // (self.BN // 8), (e % (self.BN // 8)) * 8

    def a_ldmatrix(self, wm, mi, ks, lane):
        """Element offset in the staged A of the row that `lane` gives ldmatrix_x4."""
        return (wm + mi * 16 + lane % 16) * self.AS + ks + (lane // 16) * 8

    def b_ldmatrix(self, wn, nj, ks, lane):
        return (ks + lane % 16) * self.BS + wn + nj * 8 + (lane // 16) * 8

    def warp_origin(self, warp):
        return (warp // self.WN_) * self.WM, (warp % self.WN_) * self.WN


def table_of(file, kind, names, make):
    """The `constexpr KIND kTiles[] = {...};` table of a kernel file, each entry made into make(*values)."""
    text = (HERE / file).read_text()
    table = re.search(r"constexpr %s kTiles\[\] = \{(.*?)\n\};" % kind, text, re.S).group(1)
    return [make(*(eval(x, {}, dict(names)) for x in entry.split(","))) for entry in re.findall(r"\{([^{}]*)\}", table)]


TILES = table_of("gemm_mma.cu", "MmaTile", M, Tile)
DEFAULT = TILES[0]


def load_tiles(t, a, b, m, n, k, bm, bn, p0, vec):
    As = np.full(t.BM * t.AS, np.nan); Bs = np.full(t.BK * t.BS, np.nan)  # NaN: never written
    for e in range(t.BM * t.BK // 8):
        i, p = t.a_chunk(e); gi, gp = bm + i, p0 + p
        for q in range(8):
            inside = (gi < m and gp < k) if vec else (gi < m and gp + q < k)
            assert np.isnan(As[i * t.AS + p + q]), "two chunks of A staged in one place"
            As[i * t.AS + p + q] = a[gi, gp + q] if inside else 0
    for e in range(t.BK * t.BN // 8):
        p, j = t.b_chunk(e); gp, gj = p0 + p, bn + j
        for q in range(8):
            inside = (gp < k and gj < n) if vec else (gp < k and gj + q < n)
            Bs[p * t.BS + j + q] = b[gp, gj + q] if inside else 0
    return As, Bs


def ldmatrix_x4(smem, addr_of_lane, trans):
    # addr_of_lane[l]: element offset of the row lane l provides; matrix i from lanes 8i..8i+7
    out = np.zeros((32, 4, 2))
    for i in range(4):
        mat = np.array([smem[addr_of_lane[8 * i + r]:addr_of_lane[8 * i + r] + 8] for r in range(8)])
        for t in range(32):
            if not trans: out[t, i] = mat[t // 4, 2 * (t % 4):2 * (t % 4) + 2]
            else: out[t, i] = [mat[2 * (t % 4), t // 4], mat[2 * (t % 4) + 1, t // 4]]
    return out


def mma(d, fa, fb0, fb1):
    A = np.zeros((16, 16)); B = np.zeros((16, 8))
    for t in range(32):
        g, c = t // 4, t % 4
        A[g, 2 * c:2 * c + 2] = fa[t, 0]; A[g + 8, 2 * c:2 * c + 2] = fa[t, 1]
        A[g, 2 * c + 8:2 * c + 10] = fa[t, 2]; A[g + 8, 2 * c + 8:2 * c + 10] = fa[t, 3]
        B[2 * c:2 * c + 2, g] = fb0[t]; B[2 * c + 8:2 * c + 10, g] = fb1[t]
    assert not np.isnan(A).any() and not np.isnan(B).any()
    D = A @ B
    for t in range(32):
        g, c = t // 4, t % 4
        d[t] += [D[g, 2 * c], D[g, 2 * c + 1], D[g + 8, 2 * c], D[g + 8, 2 * c + 1]]


def gemm_mma(t, a, b, m, n, k, vec):
    c = np.full((m, n), np.nan)
    for by in range((m + t.BM - 1) // t.BM):
        for bx in range((n + t.BN - 1) // t.BN):
            bm, bn = by * t.BM, bx * t.BN
            acc = np.zeros((t.WARPS, t.MT, t.NT, 32, 4))
            for step in range((k + t.BK - 1) // t.BK):
                As, Bs = load_tiles(t, a, b, m, n, k, bm, bn, step * t.BK, vec)
                for warp in range(t.WARPS):
                    wm, wn = t.warp_origin(warp)
                    for ks in range(0, t.BK, 16):
                        fa = [ldmatrix_x4(As, [t.a_ldmatrix(wm, mi, ks, l) for l in range(32)], False)
                              for mi in range(t.MT)]
                        fb = [None] * t.NT
                        for nj in range(0, t.NT, 2):
                            r = ldmatrix_x4(Bs, [t.b_ldmatrix(wn, nj, ks, l) for l in range(32)], True)
                            fb[nj] = (r[:, 0], r[:, 1]); fb[nj + 1] = (r[:, 2], r[:, 3])
                        for mi in range(t.MT):
                            for ni in range(t.NT):
                                mma(acc[warp, mi, ni], fa[mi], fb[ni][0], fb[ni][1])
            for warp in range(t.WARPS):
                wm, wn = t.warp_origin(warp)
                for lane in range(32):
                    for mi in range(t.MT):
                        for ni in range(t.NT):
                            j = bn + wn + ni * 8 + (lane % 4) * 2
                            for h in range(2):
                                i = bm + wm + mi * 16 + lane // 4 + h * 8
                                if i >= m: continue
                                x0, x1 = acc[warp, mi, ni, lane, 2 * h], acc[warp, mi, ni, lane, 2 * h + 1]
                                if vec:
                                    if j < n: c[i, j] = x0; c[i, j + 1] = x1
                                else:
                                    if j < n: c[i, j] = x0
                                    if j + 1 < n: c[i, j + 1] = x1
    return c


# gemm_blocked.cu
B_ = constants("gemm_blocked.cu")
TM, TN = B_["kTM"], B_["kTN"]


class BlockedTile:
    """gemm_blocked.cu's Tile: a block's BM x BN of C, TM x TN per thread, BK of k per step."""

    def __init__(self, bm, bn, bk):
        self.BM, self.BN, self.BK = bm, bn, bk
        self.THREADS = (bm // TM) * (bn // TN)
        self.WARPS = self.THREADS // 32

    def __str__(self):
        return f"{self.BM}x{self.BN}x{self.BK}"

    def a_chunk(self, e, kv):
        return e % self.BM, (e // self.BM) * kv

    def b_chunk(self, e, kv):
        return e // (self.BN // kv), (e % (self.BN // kv)) * kv

    def thread(self, tid):
        """ty, tx: the thread's rows ty * TM.. and its columns cols(tx)."""
        return tid // (self.BN // TN), tid % (self.BN // TN)

    def cols(self, tx, kv):
        """A thread's columns of B and C: kTN / kV chunks of kV, kChunkStride apart."""
        stride = self.BN // (TN // kv)
        return [(j // kv) * stride + tx * kv + j % kv for j in range(TN)]


BLOCKED_TILES = table_of("gemm_blocked.cu", "BlockedTile", B_, BlockedTile)
BLOCKED = BLOCKED_TILES[0]


def gemm_blocked(t, a, b, m, n, k, kv, vec):
    """kv: elements per 16 bytes (4 for float, 2 for double)."""
    c = np.full((m, n), np.nan)
    for by in range((m + t.BM - 1) // t.BM):
        for bx in range((n + t.BN - 1) // t.BN):
            bm, bn = by * t.BM, bx * t.BN
            acc = np.zeros((t.THREADS, TM, TN))
            for p0 in range(0, k, t.BK):
                As = np.full((t.BK, t.BM), np.nan); Bs = np.full((t.BK, t.BN), np.nan)
                for e in range(t.BM * t.BK // kv):
                    i, p = t.a_chunk(e, kv); gi, gp = bm + i, p0 + p
                    for q in range(kv):
                        inside = (gi < m and gp < k) if vec else (gi < m and gp + q < k)
                        As[p + q, i] = a[gi, gp + q] if inside else 0
                for e in range(t.BK * t.BN // kv):
                    p, j = t.b_chunk(e, kv); gp, gj = p0 + p, bn + j
                    for q in range(kv):
                        inside = (gp < k and gj < n) if vec else (gp < k and gj + q < n)
                        Bs[p, j + q] = b[gp, gj + q] if inside else 0
                assert not np.isnan(As).any() and not np.isnan(Bs).any()
                for tid in range(t.THREADS):
                    ty, tx = t.thread(tid)
                    cols = t.cols(tx, kv)
                    for p in range(t.BK):
                        acc[tid] += np.outer(As[p, ty * TM:ty * TM + TM], Bs[p, cols])
            for tid in range(t.THREADS):
                ty, tx = t.thread(tid)
                cols = t.cols(tx, kv)
                for i in range(TM):
                    gi = bm + ty * TM + i
                    if gi >= m: break
                    for j in range(0, TN, kv):
                        gj = bn + cols[j]
                        for q in range(kv):
                            if (gj < n) if vec else (gj + q < n): c[gi, gj + q] = acc[tid, i, j + q]
    return c


def padded(x, rows, cols):
    """x in a larger zero matrix: the simulation reads whole chunks where a kernel reads only what is inside."""
    out = np.zeros((x.shape[0] + rows, x.shape[1] + cols)); out[:x.shape[0], :x.shape[1]] = x
    return out


def wavefronts(addrs, width):
    """(wavefronts, the fewest its bytes need) of one warp's access: addrs[lane] is the byte address lane reads or
    writes (None: inactive), `width` bytes each."""
    per_phase = {16: 8, 8: 16}.get(width, 32)
    total = ideal = 0
    for first in range(0, 32, per_phase):
        words = {w for x in addrs[first:first + per_phase] if x is not None
                 for w in range(x // 4, (x + width - 1) // 4 + 1)}
        if words:
            total += max(Counter(w % 32 for w in words).values())
            ideal += -(-len(words) * 4 // 128)
    return total, ideal


def bank_report():
    """{(kernel, access): [wavefronts, fewest, instructions]} over every warp's accesses of one k step, and
    {kernel: its warps}."""
    rows, warps = {}, {}

    def count(kernel, access, addrs, width):
        w, i = wavefronts(addrs, width)
        r = rows.setdefault((kernel, access), [0, 0, 0]); r[0] += w; r[1] += i; r[2] += 1

    h = 2  # fp16, bf16
    for t in TILES:
        name = "mma" if t is DEFAULT else f"mma {t}"
        warps[name] = t.WARPS
        b_base = t.BM * t.AS * h
        for warp in range(t.WARPS):
            lanes = range(32 * warp, 32 * warp + 32)
            for r in range(t.BM * t.BK // 8 // t.THREADS):
                count(name, "A store (cp.async)", [(lambda i, p: (i * t.AS + p) * h)(*t.a_chunk(x + r * t.THREADS))
                                                   for x in lanes], 16)
            for r in range(t.BK * t.BN // 8 // t.THREADS):
                count(name, "B store (cp.async)",
                      [b_base + (lambda p, j: (p * t.BS + j) * h)(*t.b_chunk(x + r * t.THREADS)) for x in lanes], 16)
            wm, wn = t.warp_origin(warp)
            for ks in range(0, t.BK, 16):
                for mi in range(t.MT):
                    count(name, "A ldmatrix.x4", [t.a_ldmatrix(wm, mi, ks, l) * h for l in range(32)], 16)
                for nj in range(0, t.NT, 2):
                    count(name, "B ldmatrix.x4.trans",
                          [b_base + t.b_ldmatrix(wn, nj, ks, l) * h for l in range(32)], 16)
    for t in BLOCKED_TILES:
        for dtype, size in (("fp32", 4), ("fp64", 8)):
            name = f"blocked {dtype}" + ("" if t is BLOCKED else f" {t}")
            warps[name] = t.WARPS
            kv = 16 // size
            as_row = t.BM  # as[kBK][kBM]
            b_base = t.BK * as_row * size
            for warp in range(t.WARPS):
                lanes = range(32 * warp, 32 * warp + 32)
                for r in range(t.BM * t.BK // kv // t.THREADS):
                    for q in range(kv):  # one store per element: A is transposed
                        count(name, "A store (transposed)",
                              [(lambda i, p: ((p + q) * as_row + i) * size)(*t.a_chunk(x + r * t.THREADS, kv))
                               for x in lanes], size)
                for r in range(t.BK * t.BN // kv // t.THREADS):
                    count(name, "B store",
                          [b_base + (lambda p, j: (p * t.BN + j) * size)(*t.b_chunk(x + r * t.THREADS, kv))
                           for x in lanes], 16)
                for p in range(t.BK):
                    for ch in range(TM // kv):
                        count(name, "A load", [(p * as_row + t.thread(x)[0] * TM + ch * kv) * size for x in lanes], 16)
                    for ch in range(TN // kv):
                        count(name, "B load", [b_base + (p * t.BN + t.cols(t.thread(x)[1], kv)[ch * kv]) * size
                                               for x in lanes], 16)
    return rows, warps


# The bank model on patterns whose cost is known.
assert wavefronts([4 * l for l in range(32)], 4) == (1, 1)  # 32 consecutive words
assert wavefronts([128 * l for l in range(32)], 4) == (32, 1)  # 32 words of one bank
assert wavefronts([0] * 32, 16) == (4, 4)  # one 16-byte chunk to every lane: a broadcast per quarter-warp
assert wavefronts([16 * l for l in range(32)], 16) == (4, 4)  # 512 consecutive bytes
assert wavefronts([32 * l for l in range(32)], 16) == (8, 4)  # every other chunk: 2 chunks per bank per phase
assert wavefronts([8 * l for l in range(16)] + [None] * 16, 8) == (1, 1)  # half a warp of doubles
assert wavefronts([256 * (l % 2) + 8 * (l // 2) for l in range(32)], 8) == (4, 2)

rng = np.random.default_rng(1)
# Every tile with 16-byte rows (the only loads launch_gemm_mma_tile takes), the default with element loads too.
for t in TILES:
    shapes = [(200, 136, 72, True), (136, 520, 48, True)]
    if t is DEFAULT: shapes += [(130, 131, 45, False), (64, 256, 32, True)]
    for (m, n, k, vec) in shapes:
        a = rng.integers(-3, 4, (m, k)).astype(float); b = rng.integers(-3, 4, (k, n)).astype(float)
        ok = np.array_equal(gemm_mma(t, padded(a, t.BM, t.BK + 8), padded(b, t.BK, t.BN + 8), m, n, k, vec), a @ b)
        print(f"mma {t} m={m} n={n} k={k} {'16-byte' if vec else 'element'} loads:", "exact" if ok else "WRONG")
        assert ok
for t in BLOCKED_TILES:
    shapes = [(200, 136, 44, 4, True), (140, 130, 18, 2, True)]
    if t is BLOCKED: shapes += [(130, 131, 45, 4, False), (129, 127, 13, 2, False)]
    for (m, n, k, kv, vec) in shapes:
        a = rng.integers(-3, 4, (m, k)).astype(float); b = rng.integers(-3, 4, (k, n)).astype(float)
        ok = np.array_equal(gemm_blocked(t, padded(a, t.BM, t.BK + 8), padded(b, t.BK, t.BN + 8), m, n, k, kv, vec),
                            a @ b)
        print(f"blocked {t} m={m} n={n} k={k} {'float' if kv == 4 else 'double'} {'16-byte' if vec else 'element'} "
              "loads:", "exact" if ok else "WRONG")
        assert ok

print("\nshared memory, one k step, per warp: instructions, wavefronts (fewest the bytes need)")
conflicts = []
counts, warps_of = bank_report()
for (kernel, access), (w, fewest, n_instr) in counts.items():
    warps = warps_of[kernel]
    print(f"  {kernel:26} {access:22} {n_instr // warps:3} instr  {w / warps:6.1f} ({fewest / warps:.1f})"
          + ("" if w == fewest else f"  {w / fewest:.2f}x: bank conflicts"))
    if w != fewest: conflicts.append(f"{kernel} {access}")
assert not conflicts, f"bank conflicts: {', '.join(conflicts)}"
