"""dev/perf_model/ops.py -- what each op of kernels/ops.h launches on
the CUDA backend, as a function of the shape: the table that maps the
compiled kernels to ops.

Owns: the shapes (Shape), the launch specs (Tile, Stream, Gemm) and OPS.
To add a kernel or change one: edit its op's entry. An op lists
alternatives, newest first; the first whose every kernel pattern matches a
compiled kernel is used, so the same table reads the current tree and an
old commit (`--calibrate`). A pattern is a regular expression matched
against the short demangled name (amma_fwd_kernel<64>); {hsp} stands for
the padded head size of the shape. When several compiled kernels match (run-
time variants), the first in file order is the one modelled. An op whose alternatives all fail to
match is reported as unmodelled, never silently dropped.

Launch specs mirror the launch code in kernels/cuda/ (grid, block, dynamic
shared memory) and say how much work each block does:
  Tile    flash-attention style: a hot loop over tiles; `tiles(s, bx)` is
          the loop's trip count for blocks with blockIdx.x = bx; `staged(s)`
          the bytes one block loads per tile in each nested copy loop, in
          code order (their trip counts follow from it, see cost.py)
  Stream  memory-bound: `hbm` bytes that must cross HBM (each tensor read
          or written once), `moved` bytes the threads load and store in
          all (re-reads included; default hbm), `smem` the dynamic shared
          memory of a block (default none; static comes from ptxas)
  Gemm    one cuBLASLt matmul, m x n x k, `out_bytes` written
"""
import os
import re


class Shape:
    """A model shape: B, T, C, NH, L, V (vocabulary), Vp (padded)."""

    def __init__(self, name, B, T, C, NH, L, V=50257, Vp=50304):
        self.name, self.B, self.T, self.C, self.NH, self.L = name, B, T, C, NH, L
        self.V, self.Vp = V, Vp
        self.N = B * T
        self.hs = C // NH
        self.hsp = next(p for p in (16, 32, 64, 128) if self.hs <= p)
        self.nT = (T + 63) // 64

    def params(self):
        """Parameter count with the padded vocabulary (train_gpt's N)."""
        C, L = self.C, self.L
        return self.Vp * C + self.T * C + L * (12 * C * C + 13 * C) + 2 * C

    def __repr__(self):
        return '%s (B=%d T=%d C=%d NH=%d L=%d)' % (self.name, self.B, self.T, self.C, self.NH,
                                                  self.L)


def gpt2_124m(B):
    return Shape('124M', B, 1024, 768, 12, 12)


def gpt2_xl(B):
    return Shape('XL', B, 1024, 1600, 25, 48)


# check_timing's shape (dev/cuda/check_timing.c): GPT-2 124M, B=4
TIMING = gpt2_124m(4)
ACT = 2  # bf16 bytes
N_C = lambda s: s.N * s.C
N_4C = lambda s: s.N * 4 * s.C
C1 = lambda s: s.C
C3 = lambda s: 3 * s.C
C4 = lambda s: 4 * s.C


def cdiv(a, b):
    return (a + b - 1) // b


def ew_grid(n, threads=256):
    """elementwise_grid() of cuda_common.cuh."""
    return max(1, min(65535, cdiv(n, threads)))


def colsum_chunks(N, C, nbufs):
    """nchunks of colsum_chunk_rows() (cuda_common.cuh): 16 MiB scratch."""
    max_chunks = min(1024, (16 << 20) // (nbufs * C * 4))
    rows = 64
    if cdiv(N, rows) > max_chunks:
        rows = cdiv(N, max_chunks)
    return cdiv(N, rows)


def aligned8(*dims):
    return all(d % 8 == 0 for d in dims)


class Tile:
    kind = 'tile'

    def __init__(self, kernel, threads, smem, grid, tiles, staged, hbm, inner=1):
        self.kernel, self.threads, self.smem, self.grid = kernel, threads, smem, grid
        self.tiles, self.staged, self.hbm, self.inner = tiles, staged, hbm, inner


class Stream:
    kind = 'stream'

    def __init__(self, kernel, threads, grid, hbm, moved=None, inner=1, smem=None):
        self.kernel, self.threads, self.grid, self.hbm = kernel, threads, grid, hbm
        self.moved = moved or hbm
        self.inner = inner
        self.smem = smem or (lambda s: 0)


class Gemm:
    kind = 'gemm'

    def __init__(self, m, n, k, out_bytes, aligned=True, label=''):
        self.m, self.n, self.k, self.out_bytes, self.aligned = m, n, k, out_bytes, aligned
        self.label = label
        self.flops = 2.0 * m * n * k


# ---- shared pieces of the table ----

def _rows_tiles_desc(s, bx):  # query tile qt = nT-1-bx sees qt+1 key tiles (longest first)
    return s.nT - bx


def _smem_amma_fwd(s):
    return 2 * cdiv(64 * (s.hsp + 8) * 2, 128) * 128


def _smem_amma_bwd(s, nq):
    r = lambda b: cdiv(b, 128) * 128
    return 2 * r(64 * (s.hsp + 8) * 2) + 2 * r(nq * (s.hsp + 8) * 2) + 2 * r(nq * 4)


def _smem_old_fwd(s):  # attention.cu at 7dd63ea (TB = 64)
    r = lambda b: cdiv(b, 128) * 128
    return 3 * r(64 * (s.hsp + 8) * 2) + r(64 * 68 * 4) + r(64 * 72 * 2) + r(64 * (s.hsp + 4) * 4)


def _smem_old_bwd(s):
    r = lambda b: cdiv(b, 128) * 128
    return (4 * r(64 * (s.hsp + 8) * 2) + 2 * r(64 * 68 * 4) + 2 * r(64 * 72 * 2) +
            2 * r(64 * (s.hsp + 4) * 4) + 2 * r(64 * 4))


def _grid_attn(s):
    return (s.nT, s.NH, s.B)


def _qkv_bytes(s):
    return s.N * 3 * s.C * ACT


def _tile_kv(s):  # one 64-row K or V tile of one head, bf16
    return 64 * s.hs * ACT


def _bq(s):  # attention_mma.cu before the variants: dK/dV query tile rows
    return 32 if s.hsp == 128 else 64


# attention_mma_fwd.cuh / _bwd.cuh: the configuration each head size ships
# in (attention_mma.cuh's AmmaFwdCfg, AmmaDqCfg, AmmaDkdvCfg; entry 0 of the
# sweep's table, dev/cuda/attention_variants.cu, at hs 64), AmmaCfg<HSP, warps 4, tile 64, stages 2, min blocks, HOLD, VEC 1>:
# 64 block rows, 64-row streamed tiles by cp.async into two stages, one 1-D
# grid with the most causal work first (tile index = blockIdx.x / (NH B)).
# When a sweep makes another variant the default, change these patterns.
def _stage_rows(s):  # one [K | V] or [Q | dO] stage of 64-row tiles: bytes
    return 2 * 64 * (s.hsp + 8) * 2


def _smem_cfg_fwd(s):  # 2 stages; Q in the second (HOLD)
    return 2 * _stage_rows(s)


def _smem_cfg_dq(s):  # 2 stages; Q and dO (128 rows) in the second (HOLD)
    return 2 * _stage_rows(s)


def _smem_cfg_dkdv(s):  # 2 stages of [Q | dO] + 64 AmmaStat; K, V in the 2nd (HOLD) or apart
    stage = _stage_rows(s) + 64 * 8
    return 2 * stage if s.hsp < 128 else 2 * stage + _stage_rows(s)


def _grid_1d(s):
    return (s.nT * s.NH * s.B, 1, 1)


def _first(s, bx):  # the tile index the block at bx has (longest first)
    return bx // (s.NH * s.B)


# The shipped mma kernels' last template argument: GQA, false where every
# query head has its own key/value head (the shapes modelled here); a tree
# from before grouped-query attention has no such argument.
_MHA = r'(, false>| >)'

ATTN_FWD = [
    [Tile(r'amma_fwd_kernel<AmmaCfg<{hsp}, 4, 64, 2, [24], 1, 1>' + _MHA, 128, _smem_cfg_fwd, _grid_1d,
          lambda s, bx: s.nT - _first(s, bx), lambda s: [],
          hbm=lambda s: _qkv_bytes(s) + s.N * s.C * ACT + s.B * s.NH * s.T * 4)],
    [Tile(r'amma_fwd_kernel<{hsp}(, [^>]*)?>', 128, _smem_amma_fwd, _grid_attn, _rows_tiles_desc,
          lambda s: [_tile_kv(s), _tile_kv(s)],
          hbm=lambda s: _qkv_bytes(s) + s.N * s.C * ACT + s.B * s.NH * s.T * 4)],
    [Tile(r'attn_fwd_kernel<__nv_bfloat16, {hsp}, 64>', 128, _smem_old_fwd, _grid_attn,
          _rows_tiles_desc, lambda s: [_tile_kv(s), _tile_kv(s)],
          hbm=lambda s: _qkv_bytes(s) + s.N * s.C * ACT + s.B * s.NH * s.T * 4, inner=2)],
]

# dev/cuda/attention_mma_fwd_wg.cu: the forward on wgmma (sm_90a), a variant
# of the checker's sweep that ./train_gpt does not hold. One warpgroup per block,
# 64 query rows, 64-row K/V tiles by cp.async into two stages in wgmma's
# core-matrix layout (unpadded), Q in padded rows; the same 1-D grid and
# tile loop as the default.
def _smem_wg_fwd(s):
    return 2 * 2 * 64 * s.hsp * ACT + 64 * (s.hsp + 8) * ACT


# dev/cuda/attention_mma_bwd_wg.cu: dQ and dK/dV on wgmma (sm_90a), variants likewise.
# One warpgroup per block, 64 rows of its own side in padded rows (read once
# into registers), two stages of 64-row tiles of the other side in the core
# layout (dK/dV: plus 64 statistics; AmmaWgSmem); the same 1-D grid and tiles
# per block as the default kernels. The backward op's row is rows_D, dK/dV,
# dQ: each variant row swaps one or both.
def _smem_wg_bwd(s, stats):
    stage = 2 * 64 * s.hsp * ACT + (64 * 8 if stats else 0)  # multiples of 128 at hsp 64
    return 2 * stage + 2 * 64 * (s.hsp + 8) * ACT


def _rows_d():
    return Stream(r'amma_rows_D_kernel', 256, lambda s: ew_grid(s.B * s.NH * s.T * 32),
                  hbm=lambda s: 2 * s.N * s.C * ACT + s.B * s.NH * s.T * (4 + 8))


# The two backward tiles, mma.sync or wgmma: kernel, shared memory, and how
# many times the tile reads Q, K, V (dK/dV twice: its own rows and the tiles).
_BWD = {
    'dkdv': (r'amma_dkdv_wg_kernel<AmmaCfg<{hsp}, 4, 64, 2, 2, 1, 1> >',
             r'amma_dkdv_kernel<AmmaCfg<{hsp}, 4, 64, 2, (4, 1|3, 1|2, 0), 1>' + _MHA,
             _smem_cfg_dkdv, 2),
    'dq': (r'amma_dq_wg_kernel<AmmaCfg<{hsp}, 4, 64, 2, 3, 1, 1> >',
           r'amma_dq_kernel<AmmaCfg<{hsp}, 4, 64, 2, [24], 1, 1>' + _MHA, _smem_cfg_dq, 1),
}


def _bwd(which, wg):
    kern_wg, kern, smem_cfg, reads = _BWD[which]
    smem = (lambda s: _smem_wg_bwd(s, which == 'dkdv')) if wg else smem_cfg
    return Tile(kern_wg if wg else kern, 128, smem, _grid_1d,
                lambda s, bx: s.nT - _first(s, bx), lambda s: [],
                hbm=lambda s: _qkv_bytes(s) * reads + s.N * s.C * ACT + s.B * s.NH * s.T * 8)


# dev/cuda/attention_mma_fa2.cu: forward and dQ in FlashAttention-2's shape, 32 query
# rows per warp (AmmaCfg2<HSP, 4 warps, 64-row K/V tiles, 2 blocks/SM>): 128
# query rows a block, so half the blocks of the default, each streaming
# twice the key tiles of the same causal row range; two stages of 64-row
# [K | V] by cp.async, Q (and dO) staged into the second. Variants only.
def _n128(s):
    return cdiv(s.T, 128)


def _fa2_tiles(s, bx):  # query tile (longest first) qt sees 2 (qt + 1) 64-row key tiles
    return min(2 * (_n128(s) - bx // (s.NH * s.B)), s.nT)


def _fa2_grid(s):
    return (_n128(s) * s.NH * s.B, 1, 1)


def _fa2_smem(s, rows):  # 2 stages of [K | V] 64-row tiles; `rows` staged into the second
    return (2 * 64 + max(2 * 64, rows)) * (s.hsp + 8) * ACT


_FWD_HBM = lambda s: _qkv_bytes(s) + s.N * s.C * ACT + s.B * s.NH * s.T * 4


# dev/cuda/attention_mma_fused.cu: dK/dV that writes per-key-block fp32 dQ partials
# (rows from the block's first key on: about half of nT T HSP floats per
# head) and the small kernel that sums them in key-block order. Shared
# memory: 2 stages of [Q | dO] + 64 AmmaStat, [K | V], two 64 x 16 dS^T.
def _dq_part_bytes(s):
    return s.B * s.NH * s.hsp * 4 * sum(s.T - 64 * kb for kb in range(s.nT))


def _fused():
    stage = lambda s: 2 * 64 * (s.hsp + 8) * ACT + 64 * 8
    return [
        Tile(r'amma_fused_kernel<AmmaCfg<{hsp}, 4, 64, 2, 2, 1, 1> >', 128,
             lambda s: 2 * stage(s) + 2 * 64 * (s.hsp + 8) * ACT + 2 * 64 * 24 * ACT, _grid_1d,
             lambda s, bx: s.nT - _first(s, bx), lambda s: [],
             hbm=lambda s: _qkv_bytes(s) * 2 + s.N * s.C * ACT + s.B * s.NH * s.T * 8 +
             _dq_part_bytes(s)),
        Stream(r'amma_dq_sum_kernel<{hsp}>', 256, lambda s: ew_grid(s.B * s.NH * s.T * 16),
               hbm=lambda s: _dq_part_bytes(s) + s.N * s.C * ACT),
    ]


# dev/cuda/attention_mma_fa2_bwd.cu: dK/dV with 32 key rows per warp (AmmaCfg2<HSP, 4
# warps, 64-row query tiles, 2 blocks/SM>: 128 keys a block, query tiles from the
# block's first key on; [K | V] staged into the second stage, enlarged). Its ds
# form and amma_dsq_kernel are not modelled: the model puts the dQ-from-dS kernel
# at 65.6% of its L2 roofline at 124M B=64, over MMA_ROOF_SHARE_MAX, its sign of
# being too optimistic for the kernel (dev/notes/perf-model.md).
def _fa2_dkdv():
    stage = lambda s: 2 * 64 * (s.hsp + 8) * ACT + 64 * 8
    return Tile(r'amma_fa2_dkdv_kernel<AmmaCfg2<{hsp}, 4, 64, 2>, false>', 128,
                lambda s: stage(s) + max(stage(s), 2 * 128 * (s.hsp + 8) * ACT), _fa2_grid,
                lambda s, bx: s.nT - 2 * _first(s, bx), lambda s: [],
                hbm=lambda s: _qkv_bytes(s) * 2 + s.N * s.C * ACT + s.B * s.NH * s.T * 8)


VARIANTS = {  # row name -> alternatives, as OPS'; predicted beside the op they replace
    'attention_forward fwd-wgmma-w4-k64-s2-b3': [
        [Tile(r'amma_fwd_wg_kernel<AmmaCfg<{hsp}, 4, 64, 2, 3, 1, 1> >', 128, _smem_wg_fwd,
              _grid_1d, lambda s, bx: s.nT - _first(s, bx), lambda s: [],
              hbm=lambda s: _qkv_bytes(s) + s.N * s.C * ACT + s.B * s.NH * s.T * 4)]],
    'attention_backward dkdv-wgmma-w4-q64-s2-b2': [[_rows_d(), _bwd('dkdv', True), _bwd('dq', False)]],
    'attention_backward dq-wgmma-w4-k64-s2-b3': [[_rows_d(), _bwd('dkdv', False), _bwd('dq', True)]],
    'attention_backward dkdv-wgmma + dq-wgmma': [[_rows_d(), _bwd('dkdv', True), _bwd('dq', True)]],
    'attention_forward fwd-fa2-w4-k64-b2': [
        [Tile(r'amma_fa2_fwd_kernel<AmmaCfg2<{hsp}, 4, 64, 2> >', 128,
              lambda s: _fa2_smem(s, 128), _fa2_grid, _fa2_tiles, lambda s: [], hbm=_FWD_HBM)]],
    'attention_backward dq-fa2-w4-k64-b2': [
        [_rows_d(), _bwd('dkdv', False),
         Tile(r'amma_fa2_dq_kernel<AmmaCfg2<{hsp}, 4, 64, 2> >', 128,
              lambda s: _fa2_smem(s, 256), _fa2_grid, _fa2_tiles, lambda s: [],
              hbm=lambda s: _qkv_bytes(s) + s.N * s.C * ACT + s.B * s.NH * s.T * 8)]],
    'attention_backward dkdv-fused-w4-q64-b2': [[_rows_d()] + _fused()],
    'attention_backward dkdv-fa2-w4-q64-b2': [[_rows_d(), _fa2_dkdv(), _bwd('dq', False)]],
}


def variant_table():
    """{variant row name: function(shape) -> (alternatives, 1)}, as op_table's
    entries; the row name is the op's, then the variant's."""
    return {n: (lambda a: lambda s: (a, 1))(alts) for n, alts in VARIANTS.items()}


ATTN_BWD = [
    [_rows_d(), _bwd('dkdv', False), _bwd('dq', False)],
    [Stream(r'amma_rows_D_kernel', 256, lambda s: ew_grid(s.B * s.NH * s.T * 32),
            hbm=lambda s: 2 * s.N * s.C * ACT + s.B * s.NH * s.T * 4),
     Tile(r'amma_dkdv_kernel<{hsp}, \d+(, [^>]*)?>', 128, lambda s: _smem_amma_bwd(s, _bq(s)),
          _grid_attn,
          lambda s, bx: cdiv(s.T - bx * 64 // _bq(s) * _bq(s), _bq(s)),
          lambda s: [_bq(s) * s.hs * ACT, _bq(s) * s.hs * ACT],
          hbm=lambda s: _qkv_bytes(s) * 2 + s.N * s.C * ACT + 2 * s.B * s.NH * s.T * 4),
     Tile(r'amma_dq_kernel<{hsp}(, [^>]*)?>', 128, lambda s: _smem_amma_bwd(s, 64), _grid_attn,
          _rows_tiles_desc, lambda s: [_tile_kv(s), _tile_kv(s)],
          hbm=lambda s: _qkv_bytes(s) + s.N * s.C * ACT + 2 * s.B * s.NH * s.T * 4)],
    [Tile(r'attn_bwd_dkdv_kernel<__nv_bfloat16, {hsp}, 64>', 128, _smem_old_bwd, _grid_attn,
          lambda s, bx: s.nT - bx, lambda s: [_tile_kv(s), _tile_kv(s)],
          hbm=lambda s: _qkv_bytes(s) * 2 + 2 * s.N * s.C * ACT + s.B * s.NH * s.T * 4, inner=2),
     Tile(r'attn_bwd_dq_kernel<__nv_bfloat16, {hsp}, 64>', 128, _smem_old_bwd, _grid_attn,
          _rows_tiles_desc, lambda s: [_tile_kv(s), _tile_kv(s)],
          hbm=lambda s: _qkv_bytes(s) + 2 * s.N * s.C * ACT + s.B * s.NH * s.T * 4, inner=2)],
]


def _ew(op_new, op_old, reads, n_of):
    """gelu/residual: elementwise_kernel<bf16, OP> (16-byte vectors) or the
    one-kernel-per-op scalar version of 7dd63ea."""
    hbm = lambda s: (reads + 1) * n_of(s) * ACT
    return [[Stream(r'elementwise_kernel<__nv_bfloat16, %d>' % op_new, 256,
                    lambda s: ew_grid(cdiv(n_of(s), 8)), hbm)],
            [Stream(op_old, 256, lambda s: ew_grid(n_of(s)), hbm)]]


def _ln_fwd():
    return [[Stream(r'layernorm_forward_kernel<__nv_bfloat16>', 256, lambda s: cdiv(s.N, 8),
                    hbm=lambda s: 2 * s.N * s.C * ACT + 2 * s.N * 4,
                    moved=lambda s: 6 * s.N * s.C * ACT + 2 * s.N * 4)]]


def _res_ln():
    """residual_layernorm_forward: res = a + b, then LayerNorm(res) (gpt.c's
    mid-block add, which writes LN2, and each closing add, which writes the
    next block's LN1 or LN_f). Newest first: one warp-per-row kernel that
    forms res in its first pass and re-reads it twice (layernorm.cu); or,
    where it is not compiled (7dd63ea), the residual add and the LayerNorm
    as two kernels, the ops the fused one replaced."""
    ln = _ln_fwd()[0]
    hbm = lambda s: 4 * s.N * s.C * ACT + 2 * s.N * 4  # a, b in; res, out out
    # pass 1 reads a, b and writes res; pass 2 reads res; pass 3 reads res,
    # weight, bias (per row: C-wide, from L2) and writes out
    moved = lambda s: 8 * s.N * s.C * ACT + 2 * s.N * 4
    return [[Stream(r'residual_layernorm_kernel<__nv_bfloat16>', 256, lambda s: cdiv(s.N, 8),
                    hbm=hbm, moved=moved)]] + \
        [r + ln for r in _ew(2, r'residual_forward_kernel<__nv_bfloat16>', 2, N_C)]


def ln_bwd_chunks(N, C):
    """nchunks of ln_bwd_rows() (layernorm.cu): at most 512, at least 8 rows each."""
    cap = (16 << 20) // (2 * C * 4)
    rows = max(8, cdiv(N, min(cap, 512)))
    return cdiv(N, rows)


def _ln_bwd():
    """Newest first: one kernel (dinp, and each chunk's dweight/dbias partials
    from shared memory: 4 warps x 2 x C floats of dynamic shared memory, which
    sets its occupancy at XL) and a 32x32-thread finish; or dinp, partials and
    finish as three kernels (7dd63ea)."""
    nb = lambda s: ln_bwd_chunks(s.N, s.C)
    nch = lambda s: colsum_chunks(s.N, s.C, 2)
    return [[Stream(r'layernorm_backward_kernel<__nv_bfloat16>', 128, nb,
                    hbm=lambda s: 4 * s.N * s.C * ACT + 2 * s.N * 4 + 2 * nb(s) * s.C * 4,
                    moved=lambda s: 7 * s.N * s.C * ACT + 2 * s.N * 4 + 2 * nb(s) * s.C * 4,
                    smem=lambda s: 4 * 2 * s.C * 4),  # LNB_WARPS x (dweight, dbias) x C fp32
             Stream(r'layernorm_finish_kernel<__nv_bfloat16>', 1024, lambda s: cdiv(s.C, 32),
                    hbm=lambda s: 2 * nb(s) * s.C * 4 + 4 * s.C * ACT)],
            [Stream(r'layernorm_dinp_kernel<__nv_bfloat16>', 256, lambda s: cdiv(s.N, 8),
                    hbm=lambda s: 4 * s.N * s.C * ACT + 2 * s.N * 4,
                    moved=lambda s: 8 * s.N * s.C * ACT + 2 * s.N * 4),
             Stream(r'layernorm_partials_kernel<__nv_bfloat16>', 256,
                    lambda s: cdiv(s.C, 32) * nch(s),
                    hbm=lambda s: 2 * s.N * s.C * ACT + 2 * nch(s) * s.C * 4,
                    moved=lambda s: 2 * s.N * s.C * ACT + 2 * s.N * 4 * cdiv(s.C, 32)),
             Stream(r'layernorm_finish_kernel<__nv_bfloat16>', 256, lambda s: cdiv(s.C, 256),
                    hbm=lambda s: 2 * nch(s) * s.C * 4 + 4 * s.C * ACT)]]


def llama_ffn(C):
    """Llama's MLP width for C: 8C/3 rounded up to a multiple of 256
    (check_timing's SwiGLU rows: 2048 at C=768, a Llama-style 125M)."""
    return cdiv(8 * C // 3, 256) * 256


def rn_bwd_chunks(N, C):
    """nchunks of rn_bwd_rows() (rmsnorm.cu): at most 512, at least 8 rows each."""
    cap = (16 << 20) // (C * 4)
    rows = max(8, cdiv(N, min(cap, 512)))
    return cdiv(N, rows)


def _rn_fwd():
    """RMSNorm forward: a warp a row, 8 rows a block; x read twice (the
    second from L2), out written, rstd out."""
    return [[Stream(r'rmsnorm_forward_kernel<__nv_bfloat16>', 256, lambda s: cdiv(s.N, 8),
                    hbm=lambda s: 2 * s.N * s.C * ACT + s.N * 4 + s.C * ACT,
                    moved=lambda s: 3 * s.N * s.C * ACT + s.N * 4)]]


def _rn_bwd():
    """RMSNorm backward: dinp (+=) and each chunk's dweight partials from 4
    warps x C floats of shared memory, then a 32x32-thread finish."""
    nb = lambda s: rn_bwd_chunks(s.N, s.C)
    return [[Stream(r'rmsnorm_backward_kernel<__nv_bfloat16>', 128, nb,
                    hbm=lambda s: 4 * s.N * s.C * ACT + s.N * 4 + nb(s) * s.C * 4,
                    moved=lambda s: 6 * s.N * s.C * ACT + s.N * 4 + nb(s) * s.C * 4,
                    smem=lambda s: 4 * s.C * 4),
             Stream(r'rmsnorm_finish_kernel<__nv_bfloat16>', 1024, lambda s: cdiv(s.C, 32),
                    hbm=lambda s: nb(s) * s.C * 4 + 2 * s.C * ACT)]]


def _rope():
    """RoPE in place on qkv (KVH = NH): a thread a (head, pair); q and k
    read and written, v untouched, the table's rows from L2."""
    pairs = lambda s: s.N * 2 * s.NH * (s.hs // 2)
    return [[Stream(r'rope_kernel<__nv_bfloat16>', 256, lambda s: ew_grid(pairs(s)),
                    hbm=lambda s: 4 * s.N * s.C * ACT + s.T * s.hs * 4)]]


def qkn_bwd_chunks(N, hs):
    """nchunks of qknorm_backward (qknorm.cu): at most 512, at least 8 rows each."""
    cap = (16 << 20) // (2 * hs * 4)
    rows = max(8, cdiv(N, min(cap, 512)))
    return cdiv(N, rows)


def _qkn_fwd():
    """qk-norm in place on qkv (KVH = NH, check_timing's row): a warp a
    (row, head) of the 3 NH heads, 8 a block; q and k read and written
    (v heads leave at once), the per-head rstd out."""
    return [[Stream(r'qknorm_forward_kernel<__nv_bfloat16>', 256,
                    lambda s: cdiv(s.N * 3 * s.NH, 8),
                    hbm=lambda s: 4 * s.N * s.C * ACT + s.N * 2 * s.NH * 4)]]


def _qkn_bwd():
    """qk-norm backward in place: each chunk's weight-gradient partials
    (dout and x of q and k read), a finish over the chunks, then dinp a
    warp a (row, head): dout and x read again, dinp written."""
    nb = lambda s: qkn_bwd_chunks(s.N, s.hs)
    return [[Stream(r'qknorm_dw_kernel<__nv_bfloat16>', 256, nb,
                    hbm=lambda s: 4 * s.N * s.C * ACT + s.N * 2 * s.NH * 4 + nb(s) * 2 * s.hs * 4),
             Stream(r'qknorm_dw_finish_kernel<__nv_bfloat16>', 128, lambda s: cdiv(2 * s.hs, 128),
                    hbm=lambda s: nb(s) * 2 * s.hs * 4 + 4 * s.hs * ACT),
             Stream(r'qknorm_dinp_kernel<__nv_bfloat16>', 256, lambda s: cdiv(s.N * 3 * s.NH, 8),
                    hbm=lambda s: 6 * s.N * s.C * ACT + s.N * 2 * s.NH * 4)]]


def _swiglu(bwd):
    """SwiGLU at Llama's width F: [gate | up] (N, 2F) read, out (N, F)
    written; backward also reads dout and writes dinp (N, 2F). 16-byte
    vectors of 8 bf16."""
    nf = lambda s: s.N * llama_ffn(s.C)
    return [[Stream(r'swiglu_kernel<__nv_bfloat16, 8, %d>' % bwd, 256,
                    lambda s: ew_grid(cdiv(nf(s), 8)),
                    hbm=lambda s: (5 if bwd else 3) * nf(s) * ACT)]]


def _colsum(oc):
    nch = lambda s: colsum_chunks(s.N, oc(s), 1)
    fin = Stream(r'colsum_finish_kernel<__nv_bfloat16>', 256, lambda s: cdiv(oc(s), 256),
                 hbm=lambda s: nch(s) * oc(s) * 4 + 2 * oc(s) * ACT)
    return [[Stream(r'colsum_partials_kernel<__nv_bfloat16, 8>', 256,
                    lambda s: cdiv(oc(s) // 8, 32) * nch(s),
                    hbm=lambda s: s.N * oc(s) * ACT + nch(s) * oc(s) * 4), fin],
            [Stream(r'colsum_partials_kernel<__nv_bfloat16>', 256,
                    lambda s: cdiv(oc(s), 32) * nch(s),
                    hbm=lambda s: s.N * oc(s) * ACT + nch(s) * oc(s) * 4), fin]]


def _matmul_fwd(ic, oc):
    return lambda s: [[Gemm(oc(s), s.N, ic(s), s.N * oc(s) * ACT, label='fwd')]]


def _matmul_bwd(ic, oc):
    def alts(s):
        g = [Gemm(ic(s), s.N, oc(s), s.N * ic(s) * ACT, label='dinp'),
             Gemm(ic(s), oc(s), s.N, 2 * ic(s) * oc(s) * ACT, label='dweight')]
        return [g + alt for alt in _colsum(oc)]
    return alts


def _matmul_gelu_fwd(fused):
    """matmul_gelu_forward fc: pre = ln2 . W^T + b, out = gelu(pre). By
    default (TRAIN_GPT_FUSE_GELU unset) matmul.cu runs the plain product and
    the GELU pass: the gemm, then the elementwise kernel (or 7dd63ea's
    scalar GELU kernel). fused (=1): one gemm with the GELU_AUX_BIAS
    epilogue, which stores pre as the aux matrix beside gelu(pre)."""
    def alts(s):
        n = s.N * 4 * s.C
        unfused = [[Gemm(4 * s.C, s.N, s.C, n * ACT, label='fwd')] + alt
                   for alt in _ew(0, r'gelu_forward_kernel<__nv_bfloat16>', 1, N_4C)]
        if not fused:
            return unfused
        return [[Gemm(4 * s.C, s.N, s.C, 2 * n * ACT, label='fwd+GELU_AUX')]] + unfused
    return alts


def _matmul_bwd_gelu(fused):
    """matmul_backward_gelu fc proj: the fc projection's backward, its dinp
    times gelu'(pre). Default: matmul_backward, then the GELU backward pass
    over dinp; fused: the dinp gemm with the DGELU epilogue (reads pre as
    its aux matrix), then the weight gradient and bias sums as usual."""
    plain = _matmul_bwd(C4, C1)

    def alts(s):
        n = s.N * 4 * s.C
        gel = _ew(1, r'gelu_backward_kernel<__nv_bfloat16>', 2, N_4C)
        unfused = [mm + g for g in gel for mm in plain(s)]
        if not fused:
            return unfused
        return [[Gemm(4 * s.C, s.N, s.C, 2 * n * ACT, label='dinp+DGELU')] + plain(s)[0][1:]] + \
            unfused
    return alts


def _encoder_fwd():
    """GPT-2's, with its position table (POS true; in trees before the
    Llama family's copy-only instance, the kernel had no POS argument)."""
    def stream(pat):
        return [Stream(pat, 256, lambda s: ew_grid(s.N * s.C),
                       hbm=lambda s: 2 * s.N * s.C * ACT + s.T * s.C * ACT + s.N * 4,
                       moved=lambda s: 3 * s.N * s.C * ACT + s.N * s.C * 4)]
    return [stream(r'encoder_forward_kernel<__nv_bfloat16, true>'),
            stream(r'encoder_forward_kernel<__nv_bfloat16>')]


def _encoder_bwd():
    """kernels/cuda/encoder.cu: per chunk of positions (at most 128K at
    C=768 and 1600: one at these shapes), the largest id, 4 radix passes
    (count, scan, scatter) of which GPT-2's ids (< 2^16) need 2 and the
    other 2 only copy, then the run sums and their joins; or, in trees
    before it, the rank sort."""
    tiles = lambda s: cdiv(s.N, 1024)  # noqa: E731 (ENC_TILE)
    slices = lambda s: cdiv(s.N, 128)  # noqa: E731 (ENC_SLICE)
    launches = [Stream(r'wpe_backward_kernel<__nv_bfloat16>', 256, lambda s: ew_grid(s.T * s.C),
                       hbm=lambda s: s.N * s.C * ACT + 2 * s.T * s.C * ACT, inner=lambda s: s.B),
                Stream(r'enc_max_kernel', 256, lambda s: 1, hbm=lambda s: s.N * 4,
                       inner=lambda s: cdiv(s.N, 256))]
    for active in (True, True, False, False):
        pairs = (lambda s: s.N * 8) if active else (lambda s: 4)
        launches += [
            Stream(r'enc_count_kernel', 256, tiles, hbm=lambda s, p=pairs: p(s) + 1024 * tiles(s),
                   inner=8),
            Stream(r'enc_scan_kernel', 256, lambda s: 1,
                   hbm=(lambda s: 2 * 1024 * tiles(s)) if active else (lambda s: 4),
                   inner=lambda s: cdiv(256 * tiles(s), 256)),
            Stream(r'enc_scatter_kernel', 256, tiles,
                   hbm=lambda s: 2 * s.N * 8 + 1024 * tiles(s), inner=8)]
    launches += [
        Stream(r'enc_run_sum_kernel<__nv_bfloat16>', 256, slices,
               hbm=lambda s: s.N * s.C * ACT + 2 * min(s.N, s.V) * s.C * ACT + s.N * 8,
               inner=128),
        Stream(r'enc_run_join_kernel<__nv_bfloat16>', 256, slices,
               hbm=lambda s: s.N * 8 + 2 * slices(s) * s.C * 4, inner=4)]
    # before: an O(N^2) rank sort, then one block per token run (the
    # calibration's commit, 7dd63ea)
    rank_sort = [
        Stream(r'wpe_backward_kernel<__nv_bfloat16>', 256, lambda s: ew_grid(s.T * s.C),
               hbm=lambda s: s.N * s.C * ACT + 2 * s.T * s.C * ACT, inner=lambda s: s.B),
        Stream(r'token_sort_kernel', 256, lambda s: cdiv(min(s.N, 1 << 16), 256),
               hbm=lambda s: s.N * 8,
               moved=lambda s: cdiv(s.N, 256) * s.N * 4, inner=lambda s: 256),
        Stream(r'wte_backward_kernel<__nv_bfloat16>', 256, lambda s: s.N,
               hbm=lambda s: s.N * s.C * ACT + 2 * min(s.N, s.V) * s.C * ACT + s.N * 12)]
    return [launches, rank_sort]


def head_vocab_dim(root):
    """'Vp' or 'V': the vocabulary extent head.cu's logits gemm runs over
    (read from its source; 7dd63ea used V = 50257, odd, which keeps cuBLASLt
    off its aligned kernels)."""
    try:
        with open(os.path.join(root, 'kernels', 'cuda', 'head.cu')) as f:
            src = f.read()
    except OSError:
        return 'Vp'
    m = re.search(r'cuda_gemm\(st,\s*1,\s*0,\s*(\w+),\s*rows', src)
    return m.group(1) if m else 'Vp'


def _head(s, vocab='Vp'):
    """One chunk of rows tokens per launch set (the bf16 chunk: 4096); two
    alternatives, newest first: bf16 logits and a loss kernel of 1024
    threads a row that holds the row in registers (K 16-byte pieces a
    thread) and reads it once, writing dlogits in place; or fp32 logits read
    twice by a 512-thread kernel (7dd63ea)."""
    V = s.Vp if vocab == 'Vp' else s.V
    al = vocab == 'Vp'
    rows = min(s.N, 4096)
    k = cdiv(s.Vp, 1024 * 8)
    new = [Gemm(V, rows, s.C, rows * s.Vp * ACT, al, 'logits'),
           Stream(r'ce_kernel<__nv_bfloat16, %d, true>' % k, 1024, lambda s_: rows,
                  hbm=lambda s_: rows * s_.Vp * (ACT + ACT) + rows * 8),
           Gemm(s.C, rows, V, rows * s.C * ACT, al, 'dx'),
           Gemm(s.C, V, rows, 2 * s.Vp * s.C * ACT, al, 'dwte')]
    old = [Gemm(V, rows, s.C, rows * s.Vp * 4, al, 'logits'),
           Stream(r'ce_kernel<__nv_bfloat16>', 512, lambda s_: rows,
                  hbm=lambda s_: rows * s_.Vp * (4 + 4 + 2) + rows * 8),
           Gemm(s.C, rows, V, rows * s.C * ACT, al, 'dx'),
           Gemm(s.C, V, rows, 2 * s.Vp * s.C * ACT, al, 'dwte')]
    return [new, old], cdiv(s.N, rows)


def _adamw():
    n = lambda s: s.params()
    return [[Stream(r'adamw_kernel<__nv_bfloat16>', 256, lambda s: ew_grid(n(s)),
                    hbm=lambda s: n(s) * 28)]]


def _norm():
    return [[Stream(r'norm_partials_kernel<__nv_bfloat16>', 256, lambda s: 512,
                    hbm=lambda s: s.params() * ACT),
             Stream(r'norm_finish_kernel', 32, lambda s: 1, hbm=lambda s: 512 * 8)]]



# name -> (alternatives(shape) or alternatives list, FLOPs or None, unit of the rate)
MATMULS = [('qkv', C1, C3), ('attn proj', C1, C1), ('fc', C1, C4), ('fc proj', C4, C1)]


def op_table(root='.', fuse_gelu=False):
    """{op name: function(shape) -> (alternatives, repeat)}; each
    alternative a list of launch specs run `repeat` times. Op names are
    check_timing's row names (ops.h's ops; matmuls by layer). fuse_gelu:
    model the fc GELU in cuBLASLt's epilogues (TRAIN_GPT_FUSE_GELU=1)
    instead of the default separate pass."""
    vocab = head_vocab_dim(root)
    t = {
        'encoder_forward': lambda s: (_encoder_fwd(), 1),
        'encoder_backward': lambda s: (_encoder_bwd(), 1),
        'layernorm_forward': lambda s: (_ln_fwd(), 1),
        'layernorm_backward': lambda s: (_ln_bwd(), 1),
        'attention_forward': lambda s: (ATTN_FWD, 1),
        'attention_backward': lambda s: (ATTN_BWD, 1),
        'gelu_forward': lambda s: (_ew(0, r'gelu_forward_kernel<__nv_bfloat16>', 1, N_4C), 1),
        'gelu_backward': lambda s: (_ew(1, r'gelu_backward_kernel<__nv_bfloat16>', 2, N_4C), 1),
        'residual_forward': lambda s: (_ew(2, r'residual_forward_kernel<__nv_bfloat16>', 2,
                                           N_C), 1),
        'residual_layernorm_forward': lambda s: (_res_ln(), 1),
        'matmul_gelu_forward fc': (lambda f: lambda s: (f(s), 1))(_matmul_gelu_fwd(fuse_gelu)),
        'matmul_backward_gelu fc proj': (lambda f: lambda s: (f(s), 1))(
            _matmul_bwd_gelu(fuse_gelu)),
        'head_forward_backward': lambda s: _head(s, vocab),
        'adamw_update': lambda s: (_adamw(), 1),
        'grad_norm_sq': lambda s: (_norm(), 1),
        'rmsnorm_forward': lambda s: (_rn_fwd(), 1),
        'rmsnorm_backward': lambda s: (_rn_bwd(), 1),
        'rope_forward': lambda s: (_rope(), 1),
        'rope_backward': lambda s: (_rope(), 1),
        'swiglu_forward': lambda s: (_swiglu(0), 1),
        'swiglu_backward': lambda s: (_swiglu(1), 1),
        'qknorm_forward': lambda s: (_qkn_fwd(), 1),
        'qknorm_backward': lambda s: (_qkn_bwd(), 1),
    }
    for name, ic, oc in MATMULS:
        t['matmul_forward ' + name] = (lambda f: lambda s: (f(s), 1))(_matmul_fwd(ic, oc))
        t['matmul_backward ' + name] = (lambda f: lambda s: (f(s), 1))(_matmul_bwd(ic, oc))
    return t


def op_flops(name, s):
    """The FLOPs check_timing divides by for a TFLOP/s rate (None: a byte
    rate op). Same counts as dev/cuda/check_timing.c."""
    for mm, ic, oc in MATMULS:
        if name == 'matmul_forward ' + mm:
            return 2.0 * s.N * ic(s) * oc(s)
        if name == 'matmul_backward ' + mm:
            return 4.0 * s.N * ic(s) * oc(s)
    if name == 'matmul_gelu_forward fc':  # check_timing's counts: the gemm's
        return 2.0 * s.N * s.C * 4 * s.C
    if name == 'matmul_backward_gelu fc proj':
        return 4.0 * s.N * s.C * 4 * s.C
    afl = 2.0 * s.B * s.NH * s.T * s.T * s.hs
    if name == 'attention_forward' or name.startswith('attention_forward '):
        return afl
    if name == 'attention_backward' or name.startswith('attention_backward '):
        return 2.5 * afl
    if name == 'head_forward_backward':
        return 6.0 * s.N * s.C * s.V
    return None
