/* kernels/cuda/attention_mma.cuh — private to attention*.cu: the bf16
 * attention kernels' common parts. The kernels: attention_mma_fwd.cuh and
 * attention_mma_bwd.cuh; their statistics kernel, entry points and the one
 * configuration each ships in per head size: attention_mma.cu. The other
 * configurations and kernels are lab material in dev/cuda/ (the checker's
 * sweep, dev/cuda/attention_variants.cu), built on this file too.
 *
 * Plan. Causal self-attention, flash style, on the tensor cores (mma.cuh):
 * a block owns ROWS = 16 W rows (warp w rows 16w..16w+15, everything about
 * them in registers) and streams tiles of BT rows of the other side through
 * shared memory: keys and values for the forward and dQ (block rows =
 * queries), queries and dO for dK/dV (block rows = keys). Scores stay raw
 * (s = q.k) and become probabilities by one FFMA and one ex2.approx.ftz
 * each: p = 2^(s sl2 - m sl2), sl2 = log2(e) / sqrt(hs), m the row max
 * (forward) or lse in log2 units (backward); lse is stored in natural
 * units, as the cpu does: lse = ln 2 (m sl2 + log2 l). Backward, with
 * P = exp(s - lse), D_i = sum_d dO[i,d] O[i,d]:
 *   dV = P^T dO, dK = scale dS^T Q, dQ = scale dS K, dS = P (dO V^T - D).
 * dK/dV and dQ are separate kernels, each the only writer of its output:
 * no atomics, every run gives the same bits.
 *
 * Staging (a configuration's ST): a tile is R rows of HSP bf16 (hs
 * zero-padded to 16, 32, 64 or 128), row stride LD = HSP + 8 elements (an
 * odd multiple of 16 bytes: ldmatrix's 8 rows hit 8 bank groups). ST = 1:
 * every 16-byte piece of the tile(s) loaded into registers at once, a
 * barrier, then the stores (one buffer, two barriers per tile); ST = 2:
 * cp.async (async_copy.cuh) into the other of two buffers while the block
 * computes on this one (one barrier per tile). Unaligned sources or hs not
 * a multiple of 8 (vec = 0, host-checked) take element loads and stores.
 * The mask, the softmax, P and dS and the stores work on a warp's
 * accumulators in the mma.sync register layout (below), which the wgmma
 * kernels of dev/cuda keep per warp: they call the same helpers. */
#ifndef KERNELS_CUDA_ATTENTION_MMA_CUH
#define KERNELS_CUDA_ATTENTION_MMA_CUH

#include "async_copy.cuh"
#include "attention_tile.cuh"
#include "mma.cuh"

#define AMMA_LOG2E 1.4426950408889634f
#define AMMA_LN2 0.6931471805599453f

/* One compiled configuration: head size padded to HSP, W warps (ROWS =
 * 16 W rows per block, NT = 32 W threads), streamed tiles of BT rows, ST
 * staging (1 registers, 2 cp.async double buffer), launch bounds asking
 * for MINB resident blocks per SM (a register cap of 64K / (MINB NT)),
 * HOLD = 1: the warp's own A operands (Q_w, dO_w or K_w, V_w) stay in
 * registers, 0: reread from shared memory for every product. VEC = 1:
 * 16-byte loads and cp.async (needs amma_vec_ok); 0: element by element,
 * the fallback for odd head sizes, one configuration per head size, so
 * that the fast kernels carry no second staging path. */
template <int HSP_, int W_, int BT_, int ST_, int MINB_, int HOLD_ = 1, int VEC_ = 1>
struct AmmaCfg {
    static constexpr int HSP = HSP_, W = W_, ROWS = 16 * W_, NT = 32 * W_, BT = BT_;
    static constexpr int ST = ST_, MINB = MINB_, HOLD = HOLD_, VEC = VEC_, LD = HSP_ + 8;
    static_assert(HSP % 16 == 0 && BT % 16 == 0 && (ST == 1 || ST == 2), "tile shape");
};

/* A kernel's shared memory: ST stages of the streamed side (stage bytes
 * each) and the block's own tiles (own bytes) at amma_own_at. With HOLD,
 * the own tiles go into the last stage (enlarged if needed) and are read
 * into registers before it is first refilled; without, into a region of
 * their own after the stages, read for every product. amma_rows: n tile
 * rows' bytes. */
template <class Cfg> __host__ __device__ constexpr size_t amma_rows(int n)
{
    return (size_t)n * Cfg::LD * sizeof(bf16);
}
template <class Cfg> __host__ __device__ constexpr size_t amma_own_at(size_t stage)
{
    return (size_t)(Cfg::HOLD ? Cfg::ST - 1 : Cfg::ST) * stage;
}
template <class Cfg> __host__ __device__ constexpr size_t amma_smem(size_t stage, size_t own)
{
    return amma_own_at<Cfg>(stage) + (Cfg::HOLD && stage > own ? stage : own);
}

/* The backward's per-query-row statistics, from amma_rows_D_kernel: lse in
 * log2 units and D. 8 bytes: one cp.async or one LDS.64 per row. */
struct __align__(8) AmmaStat {
    float lse2, D;
};
/* The statistics of two adjacent query columns (dK/dV): one 16-byte load. */
struct __align__(16) AmmaStat2 {
    AmmaStat c0, c1;
};

/* The kernels' arguments: the forward's, and the backward's for one slice
 * of nb sequences (stats[(b NH + h) T + t] for b < nb). KVH key/value
 * heads as ops.h's (the sweep's variants: KVH = NH only), from the host. */
struct AmmaFwdArgs {
    bf16 *out;
    float *lse;
    const bf16 *qkv;
    int B, T, C, NH, KVH, W, KV; /* W: the qkv row, C + 2 KV; KV = KVH hs */
    float sl2;
    int vec;
};

struct AmmaBwdArgs {
    bf16 *dqkv;
    const bf16 *dout, *qkv;
    const AmmaStat *stats;
    int nb, T, C, NH, KVH, W, KV; /* W: the qkv and dqkv row, C + 2 KV; KV = KVH hs */
    float sl2, scale;
    int vec;
};

/* Which tile, head and sequence this block has: linear block index L over
 * ntiles x NH x nb (NH: the grid's heads, KVH for dK/dV), the tile index
 * slowest, so the launch runs all (b, h)
 * of the longest tile first. last_longest: the last tile has the most
 * work (forward, dQ), else the first (dK/dV). */
struct AmmaBlock {
    int tile, h, b;
};
__device__ __forceinline__ AmmaBlock amma_block(int ntiles, int NH, int nb, bool last_longest)
{
    const int per = NH * nb, i = (int)blockIdx.x / per, bh = (int)blockIdx.x % per;
    AmmaBlock r;
    r.tile = last_longest ? ntiles - 1 - i : i;
    r.h = bh % NH;
    r.b = bh / NH;
    return r;
}

/* Where a tile's rows come from: row t (0 <= t < T) of one sequence is at
 * row + t * ld, its first hs elements real. A tile of R rows from t0 holds
 * rows t0..t0+R-1, zero past T and past hs. */
struct AmmaSrc {
    const bf16 *row;
    int ld, T, hs;
};

/* The prologue every kernel shares: the block's place (amma_block) and
 * what follows from it. The block owns ROWS rows of one (sequence, head),
 * from row0 (queries for the forward and dQ, keys when KEYROWS: dK/dV), and
 * streams the other side in tiles of BT rows, rows first.. in n tiles (up
 * to its last row, or from its diagonal on). blk.h: a query head, or with
 * KEYROWS a key/value head (q, dO, stats: its group's first query head's,
 * the next hs columns, T stats on). Warp w owns WR = ROWS / W
 * rows from wr0 = row0 + WR w (16, or 32 in FlashAttention-2's shape);
 * g = lane / 4 and t4 = lane % 4 place the lane in the mma.sync layout
 * (below), its rows r0 = wr0 + g and r1 = r0 + 8; idle: all the warp's
 * rows past T. q, k, v (and dO, stats for the backward) are the
 * sequence's and head's rows. */
struct AmmaTile {
    AmmaBlock blk;
    AmmaSrc q, k, v, dout;
    const AmmaStat *stats; /* row t's at stats[t]; NULL in the forward */
    int T, hs, row0, first, n;
    int w, g, t4, wr0, r0, r1;
    bool idle;
};

template <class Cfg, bool KEYROWS>
__device__ __forceinline__ AmmaTile amma_tile_at(const bf16 *qkv, int nseq, int T, int C, int NH,
                                                 int KVH, int W, int KV)
{
    constexpr int ROWS = Cfg::ROWS, BT = Cfg::BT, WR = Cfg::ROWS / Cfg::W;
    AmmaTile t;
    const int hs = C / NH, grp = NH / KVH;
    t.blk = amma_block((T + ROWS - 1) / ROWS, KEYROWS ? KVH : NH, nseq, !KEYROWS);
    t.T = T, t.hs = hs, t.row0 = t.blk.tile * ROWS;
    const int qh = KEYROWS ? t.blk.h * grp : t.blk.h, kh = KEYROWS ? t.blk.h : t.blk.h / grp;
    const bf16 *seq = qkv + (size_t)t.blk.b * T * W + qh * hs;
    t.q = {seq, W, T, hs}, t.k = {seq + C + (kh - qh) * hs, W, T, hs};
    t.v = {seq + (C + KV) + (kh - qh) * hs, W, T, hs}; /* KVH = NH: seq + 2C */
    t.dout = {NULL, C, T, hs}, t.stats = NULL; /* the backward's: amma_tile_begin */
    t.w = threadIdx.x / 32, t.g = threadIdx.x % 32 / 4, t.t4 = threadIdx.x % 4;
    t.wr0 = t.row0 + WR * t.w, t.r0 = t.wr0 + t.g, t.r1 = t.r0 + 8;
    t.idle = t.wr0 >= T;
    if (KEYROWS) { /* queries from the tile holding the block's first key on */
        t.first = t.row0 / BT * BT;
        t.n = (T - t.first + BT - 1) / BT;
    } else { /* keys up to the block's last row */
        const int last = t.row0 + ROWS < T ? t.row0 + ROWS : T;
        t.first = 0;
        t.n = (last + BT - 1) / BT;
    }
    return t;
}
/* GQA = 0: KVH = NH, rows 3C, known at compile time (ptxas spilled the
 * hs 64 forward and dQ at their 128 registers with W a parameter) */
template <class Cfg, bool GQA = false>
__device__ __forceinline__ AmmaTile amma_tile_begin(const AmmaFwdArgs &a)
{
    if (!GQA) return amma_tile_at<Cfg, false>(a.qkv, a.B, a.T, a.C, a.NH, a.NH, 3 * a.C, a.C);
    return amma_tile_at<Cfg, false>(a.qkv, a.B, a.T, a.C, a.NH, a.KVH, a.W, a.KV);
}
template <class Cfg, bool KEYROWS, bool GQA = false>
__device__ __forceinline__ AmmaTile amma_tile_begin(const AmmaBwdArgs &a)
{
    const int KVH = GQA ? a.KVH : a.NH;
    AmmaTile t = amma_tile_at<Cfg, KEYROWS>(a.qkv, a.nb, a.T, a.C, a.NH, KVH,
                                            GQA ? a.W : 3 * a.C, GQA ? a.KV : a.C);
    const int qh = KEYROWS ? t.blk.h * (a.NH / KVH) : t.blk.h; /* (first) query head */
    t.dout.row = a.dout + (size_t)t.blk.b * a.T * a.C + qh * t.hs;
    t.stats = a.stats + ((size_t)t.blk.b * a.NH + qh) * a.T;
    return t;
}

/* 16-byte pieces of an R x HSP tile and which of them thread tid of NT
 * moves: one column of pieces, d0 = 8 (tid % (HSP / 8)), in rows
 * tid / (HSP / 8) + i RPR for i < PER (RPR rows per round of NT). */
template <int HSP, int R, int NT> struct AmmaPieces {
    static_assert(NT % (HSP / 8) == 0, "whole rows per round");
    static constexpr int RPR = NT / (HSP / 8), PER = (R + RPR - 1) / RPR;
    static __device__ __forceinline__ int d0(void) { return (int)threadIdx.x % (HSP / 8) * 8; }
    static __device__ __forceinline__ int r(void) { return (int)threadIdx.x / (HSP / 8); }
    static __device__ __forceinline__ bool has(int i) { return R % RPR == 0 || r() + i * RPR < R; }
};

/* 16 bytes in four registers (a register tile's piece; Vec16<bf16>'s
 * 16-bit elements would not stay in registers) */
struct __align__(16) AmmaU4 {
    uint32_t x, y, z, w;
};

/* ST = 1, vec: the thread's pieces of one tile in registers. load() issues
 * every load before any is used; store() writes them to the tile. */
template <int HSP, int R, int NT> struct AmmaRegTile {
    typedef AmmaPieces<HSP, R, NT> P;
    AmmaU4 x[P::PER];
    __device__ __forceinline__ void load(AmmaSrc s, int t0)
    {
        const int t = t0 + P::r(), d0 = P::d0();
        const bf16 *g = s.row + (size_t)t * s.ld + d0;
        const size_t step = (size_t)P::RPR * s.ld;
#pragma unroll
        for (int i = 0; i < P::PER; i++) {
            if (!P::has(i)) continue;
            const AmmaU4 zero = {0u, 0u, 0u, 0u};
            x[i] = t + i * P::RPR < s.T && d0 < s.hs ? *(const AmmaU4 *)vec16_at(g + i * step)
                                                     : zero;
        }
    }
    __device__ __forceinline__ void store(bf16 *dst) const
    {
        bf16 *d = dst + P::r() * (HSP + 8) + P::d0();
#pragma unroll
        for (int i = 0; i < P::PER; i++)
            if (P::has(i)) *(AmmaU4 *)vec16_at(d + i * P::RPR * (HSP + 8)) = x[i];
    }
};

/* vec = 0: the tile element by element, stored at once (the caller syncs). */
template <int HSP, int R, int NT>
__device__ void amma_stage_scalar(bf16 *dst, AmmaSrc s, int t0)
{
    for (int e = threadIdx.x; e < R * HSP; e += NT) {
        const int r = e / HSP, d = e % HSP, t = t0 + r;
        dst[r * (HSP + 8) + d] =
            t < s.T && d < s.hs ? s.row[(size_t)t * s.ld + d] : from_f<bf16>(0.0f);
    }
}

/* ST = 2: the tile by cp.async (VEC), or by plain loads and stores. With
 * cp.async the caller commits, waits and syncs before reading dst. */
template <int HSP, int R, int NT, int VEC>
__device__ __forceinline__ void amma_stage_async(bf16 *dst, AmmaSrc s, int t0)
{
    typedef AmmaPieces<HSP, R, NT> P;
    if constexpr (!VEC) {
        amma_stage_scalar<HSP, R, NT>(dst, s, t0);
        return;
    }
    const int t = t0 + P::r(), d0 = P::d0(), o = t * s.ld + d0, step = P::RPR * s.ld;
    bf16 *d = dst + P::r() * (HSP + 8) + d0;
#pragma unroll
    for (int i = 0; i < P::PER; i++) {
        if (!P::has(i)) continue;
        const bool in = t + i * P::RPR < s.T && d0 < s.hs;
        cp_async<16>(d + i * P::RPR * (HSP + 8), s.row + (in ? o + i * step : 0), in ? 16 : 0);
    }
}

/* Two R-row tiles side by side, [s0 | s1] at dst (s1's tile R (HSP + 8)
 * elements on), rows t0.. of each: the pairs the kernels stream (K and V,
 * Q and dO). _async: as amma_stage_async (the caller commits, waits and
 * syncs). amma_stage_pair: now, through registers (VEC: every load of
 * both tiles before any store) or element by element; BAR: a __syncthreads
 * before the first store, for a buffer other warps may still read; N = 1:
 * s0's tile only. The caller syncs after. */
template <int HSP, int R, int NT, int VEC>
__device__ __forceinline__ void amma_stage_pair_async(bf16 *dst, AmmaSrc s0, AmmaSrc s1, int t0)
{
    amma_stage_async<HSP, R, NT, VEC>(dst, s0, t0);
    amma_stage_async<HSP, R, NT, VEC>(dst + R * (HSP + 8), s1, t0);
}
template <int HSP, int R, int NT, int VEC, bool BAR, int N = 2>
__device__ __forceinline__ void amma_stage_pair(bf16 *dst, AmmaSrc s0, AmmaSrc s1, int t0)
{
    AmmaRegTile<HSP, R, NT> r0, r1;
    if (VEC) {
        r0.load(s0, t0);
        if (N == 2) r1.load(s1, t0);
    }
    if (BAR) __syncthreads();
    if (VEC) {
        r0.store(dst);
        if (N == 2) r1.store(dst + R * (HSP + 8));
    } else {
        amma_stage_scalar<HSP, R, NT>(dst, s0, t0);
        if (N == 2) amma_stage_scalar<HSP, R, NT>(dst + R * (HSP + 8), s1, t0);
    }
}

/* R query rows' statistics from t0 (zero past T), by cp.async. */
template <int R, int NT>
__device__ __forceinline__ void amma_stage_stats(AmmaStat *dst, const AmmaStat *src, int t0, int T)
{
#pragma unroll
    for (int i = 0; i < (R + NT - 1) / NT; i++) {
        const int r = (int)threadIdx.x + i * NT, t = t0 + r;
        if (R % NT == 0 || r < R) cp_async<8>(dst + r, t < T ? src + t : src, t < T ? 8 : 0);
    }
}

/* A kernel's set-up: the block's own N tiles (ROWS rows of s0, and of s1
 * beside it, from row0: Q for the forward, [Q | dO] for dQ, [K | V] for
 * dK/dV) and, with ST = 2, the streamed side's first tile (issue(): its
 * cp.async copies), landed and published to the block; then, with HOLD,
 * warp w's A operands of them in registers (a0, a1). */
template <class Cfg, int N, class Issue>
__device__ __forceinline__ void amma_stage_own(bf16 *own, AmmaSrc s0, AmmaSrc s1, int row0, int w,
                                               uint32_t a0[][4], uint32_t a1[][4], Issue issue)
{
    constexpr int HSP = Cfg::HSP, R = Cfg::ROWS, NT = Cfg::NT, LD = Cfg::LD;
    if (Cfg::ST == 2) {
        amma_stage_async<HSP, R, NT, Cfg::VEC>(own, s0, row0);
        if (N == 2) amma_stage_async<HSP, R, NT, Cfg::VEC>(own + R * LD, s1, row0);
        issue();
        cp_async_commit();
        cp_async_wait<0>();
    } else {
        amma_stage_pair<HSP, R, NT, Cfg::VEC, false, N>(own, s0, s1, row0);
    }
    __syncthreads();
    if (Cfg::HOLD) {
        mma_load_a_strip<HSP>(a0, own, LD, 16 * w);
        if (N == 2) mma_load_a_strip<HSP>(a1, own + R * LD, LD, 16 * w);
    }
}

/* Step i of n over the streamed side (its tile i from row r): returns the
 * stage that holds tile i. ST = 2: waits for tile i (issued by the set-up
 * or at step i - 1), syncs, then issue(stage, row)s tile i + 1 into the
 * other stage, to land during this step. ST = 1: now(r) loads tile i,
 * syncs (every warp done with tile i - 1) and stores it into stage 0; then
 * a sync. All threads call it, the idle warps too. */
template <class Cfg, class Issue, class Now>
__device__ __forceinline__ int amma_stream_step(int i, int n, int r, Issue issue, Now now)
{
    if (Cfg::ST == 2) {
        if (i > 0) cp_async_wait<0>(); /* this thread's part of tile i */
        __syncthreads(); /* tile i complete; every warp done with i - 1 and its own tiles */
        if (i + 1 < n) {
            issue((i + 1) & 1, r + Cfg::BT);
            cp_async_commit();
        }
        return i & 1;
    }
    now(r);
    __syncthreads();
    return 0;
}

/* Key/value step kt of nK of the forward and dQ kernels (keys kt BT..):
 * tiles holds ST stages of [K | V] (BT rows each); returns this step's K
 * tile (its V tile follows, BT rows on). */
template <class Cfg>
__device__ __forceinline__ const bf16 *amma_kv_step(bf16 *tiles, AmmaSrc Ksrc, AmmaSrc Vsrc, int kt,
                                                    int nK)
{
    constexpr int HSP = Cfg::HSP, BK = Cfg::BT, NT = Cfg::NT;
    constexpr int STAGE = 2 * BK * Cfg::LD; /* elements of one [K | V] stage */
    const int s = amma_stream_step<Cfg>(
        kt, nK, kt * BK,
        [&](int s, int r) {
            amma_stage_pair_async<HSP, BK, NT, Cfg::VEC>(tiles + (size_t)s * STAGE, Ksrc, Vsrc, r);
        },
        [&](int r) { amma_stage_pair<HSP, BK, NT, Cfg::VEC, true>(tiles, Ksrc, Vsrc, r); });
    return tiles + (size_t)s * STAGE;
}

/* Register layout of a warp's 16 x N strip c[N / 8][4] of fp32 (mma.cuh's
 * m16n8k16 accumulators; a warp's share of wgmma's m64nNk16 accumulators is
 * laid out the same, wgmma.cuh): lane 4 g + t4 holds c[j][0..1] = row g,
 * columns 8j + 2 t4 and + 1, and c[j][2..3] = row g + 8, the same columns;
 * a row's N values are spread over the 4 lanes of group g. In the kernels
 * the warp's 16 rows are positions wr0.. (wr0 = the block's first row +
 * 16 w), this lane's two rows r0 = wr0 + g and r1 = r0 + 8. */

/* The causal and T mask of a warp's 16 x N score strip s[N / 8][4] (layout
 * above), in place: -inf (p = 2^-inf = 0) where the pair is not attended.
 * The strip's rows are this lane's r0 and r1 = r0 + 8 (wr0: the warp's
 * first row), s[j][i]'s column c0 + 8j + 2 t4 + (i & 1). KEYROWS 0: rows are
 * queries, columns keys (S); 1: rows are keys, columns queries (S^T of
 * dK/dV). Masked: key > query, or column >= T (a row past T needs no mask:
 * its key is > every query < T, or its results are never stored). Only a
 * strip that reaches past the diagonal or T is touched: a branch that most
 * strips skip. */
template <int N, bool KEYROWS>
__device__ __forceinline__ void amma_mask(float s[][4], int c0, int wr0, int r0, int r1, int t4,
                                          int T)
{
    const bool diag = KEYROWS ? c0 < wr0 + 15 : c0 + N - 1 > wr0;
    if (diag || c0 + N > T) {
#pragma unroll
        for (int j = 0; j < N / 8; j++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int col = c0 + 8 * j + 2 * t4 + (i & 1), row = i < 2 ? r0 : r1;
                if ((KEYROWS ? row > col : col > row) || col >= T) s[j][i] = -INFINITY;
            }
    }
}

/* The forward's online softmax, one key tile: s, a warp's masked 16 x BK
 * raw scores (layout above), becomes P = 2^(s sl2 - m sl2) with m the
 * new row max; the 16 x HSP output accumulator o and the sums l are
 * rescaled by 2^((m_old - m) sl2) (2^-inf = 0 at the first tile), ready
 * for o += P V. m0, l0: this lane's row r0; m1, l1: row r0 + 8 (start at
 * -inf and 0; m is finite after the first tile, as key 0 is valid for
 * every row). l stays a per-lane partial sum (the same rescale applies to
 * all four lanes of a row); amma_fwd_finish adds the lanes' parts. */
template <int BK, int HSP>
__device__ __forceinline__ void amma_softmax_step(float s[][4], float o[][4], float &m0,
                                                  float &m1, float &l0, float &l1, float sl2)
{
    float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
    for (int j = 0; j < BK / 8; j++) {
        mx0 = fmaxf(mx0, fmaxf(s[j][0], s[j][1]));
        mx1 = fmaxf(mx1, fmaxf(s[j][2], s[j][3]));
    }
    /* a row's BK scores are spread over the 4 lanes of its group */
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
    const float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);
    const float a0 = exp2_approx((m0 - n0) * sl2), a1 = exp2_approx((m1 - n1) * sl2);
    m0 = n0;
    m1 = n1;
    const float nb0 = -n0 * sl2, nb1 = -n1 * sl2; /* p = 2^(s sl2 - m sl2): one FFMA */
    float sum0 = 0.0f, sum1 = 0.0f;
#pragma unroll
    for (int j = 0; j < BK / 8; j++) {
        s[j][0] = exp2_approx(fmaf(s[j][0], sl2, nb0));
        s[j][1] = exp2_approx(fmaf(s[j][1], sl2, nb0));
        s[j][2] = exp2_approx(fmaf(s[j][2], sl2, nb1));
        s[j][3] = exp2_approx(fmaf(s[j][3], sl2, nb1));
        sum0 += s[j][0] + s[j][1];
        sum1 += s[j][2] + s[j][3];
    }
    l0 = l0 * a0 + sum0;
    l1 = l1 * a1 + sum1;
#pragma unroll
    for (int j = 0; j < HSP / 8; j++) {
        o[j][0] *= a0;
        o[j][1] *= a0;
        o[j][2] *= a1;
        o[j][3] *= a1;
    }
}

/* The forward's end, after the last tile: the lanes' sums added, out =
 * o / l for this lane's rows t.r0 and t.r1 (those < T) of the block's
 * (sequence, head), and (lanes t4 = 0) lse = ln 2 (m sl2 + log2 l),
 * natural units. */
template <int HSP>
__device__ __forceinline__ void amma_fwd_finish(const AmmaFwdArgs &a, const AmmaTile &t,
                                                const float o[][4], float m0, float m1, float l0,
                                                float l1)
{
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    mma_strip_store<HSP>(a.out + (size_t)t.blk.b * t.T * a.C + t.blk.h * t.hs, a.C, t.r0, t.T,
                         t.hs, o, 1.0f / l0, 1.0f / l1);
    if (t.t4 == 0) {
        float *lse = a.lse + ((size_t)t.blk.b * a.NH + t.blk.h) * t.T;
        if (t.r0 < t.T) lse[t.r0] = AMMA_LN2 * (m0 * a.sl2 + log2f(l0));
        if (t.r1 < t.T) lse[t.r1] = AMMA_LN2 * (m1 * a.sl2 + log2f(l1));
    }
}

/* dQ: a warp's masked 16 x N scores s and dP = dO_w V^T dp (layout
 * above) to dS = P (dP - D) in place of s, P = 2^(s sl2 - lse2), with
 * the statistics of this lane's rows r0 (st0) and r0 + 8 (st1). */
template <int N>
__device__ __forceinline__ void amma_ds_rows(float s[][4], const float dp[][4], AmmaStat st0,
                                             AmmaStat st1, float sl2)
{
#pragma unroll
    for (int j = 0; j < N / 8; j++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const AmmaStat &r = i < 2 ? st0 : st1;
            const float p = exp2_approx(fmaf(s[j][i], sl2, -r.lse2));
            s[j][i] = p * (dp[j][i] - r.D); /* dS */
        }
}

/* dK/dV: a warp's masked 16 x N S^T sT and dP^T dpT (rows keys, columns
 * queries; layout above) to P^T in place of sT and dS^T in place of
 * dpT, with the statistics of the columns: sts[c] for the strip's column
 * c; the lane's two adjacent columns 8j + 2 t4, + 1 in one 16-byte load. */
template <int N>
__device__ __forceinline__ void amma_pds_cols(float sT[][4], float dpT[][4], const AmmaStat *sts,
                                              int t4, float sl2)
{
#pragma unroll
    for (int j = 0; j < N / 8; j++) {
        const AmmaStat2 q2 = *(const AmmaStat2 *)(sts + 8 * j + 2 * t4);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const AmmaStat &r = i & 1 ? q2.c1 : q2.c0;
            const float p = exp2_approx(fmaf(sT[j][i], sl2, -r.lse2));
            sT[j][i] = p;
            dpT[j][i] = p * (dpT[j][i] - r.D);
        }
    }
}

/* The backward's results for a warp's 16 rows (this lane's t.r0 and
 * t.r1, those < T) into dqkv (B, T, W) at the block's (sequence, head):
 * dQ scaled by a.scale; dK scaled, dV as it is. */
template <int HSP>
__device__ __forceinline__ void amma_dq_store(const AmmaBwdArgs &a, const AmmaTile &t,
                                              const float dq[][4])
{
    const int W = t.q.ld; /* the row: 3C when the tile took KVH = NH as known */
    mma_strip_store<HSP>(a.dqkv + (size_t)t.blk.b * t.T * W + t.blk.h * t.hs, W, t.r0, t.T, t.hs,
                         dq, a.scale, a.scale);
}
template <int HSP>
__device__ __forceinline__ void amma_dkdv_store(const AmmaBwdArgs &a, const AmmaTile &t,
                                                const float dk[][4], const float dv[][4])
{
    const int C = a.C, W = t.q.ld;
    bf16 *rows = a.dqkv + (size_t)t.blk.b * t.T * W + t.blk.h * t.hs; /* row t: + t W */
    mma_strip_store<HSP>(rows + C, W, t.r0, t.T, t.hs, dk, a.scale, a.scale);
    mma_strip_store<HSP>(rows + C + a.KV, W, t.r0, t.T, t.hs, dv, 1.0f, 1.0f);
}

/* The one configuration each kernel ships in, by padded head size (HSP =
 * 16, 32, 64, 128; AmmaCfg's fields), with 16-byte staging; element by
 * element (vec = 0), AmmaScalarCfg. The other configurations are the
 * checker's sweep (dev/cuda/attention_variants.cu). When a GPU ranks one of
 * them first, it is promoted by moving it: its fields replace these, and
 * the one it beat goes to the sweep's table; no flag chooses at run time.
 * At HSP = 128, dK/dV rereads K_w and V_w (HOLD = 0): its two 16 x 128
 * accumulators leave no registers to hold them. */
template <int HSP> using AmmaFwdCfg = AmmaCfg<HSP, 4, 64, 2, HSP == 128 ? 2 : 4>;
template <int HSP> using AmmaDqCfg = AmmaCfg<HSP, 4, 64, 2, HSP == 128 ? 2 : 4>;
template <int HSP>
using AmmaDkdvCfg = AmmaCfg<HSP, 4, 64, 2, HSP == 128 ? 2 : HSP == 64 ? 3 : 4, HSP != 128>;
template <int HSP, int HOLD = 1> using AmmaScalarCfg = AmmaCfg<HSP, 4, 64, 1, 1, HOLD, 0>;

/* Each kernel by padded head size, in its configuration (vec = 0:
 * AmmaScalarCfg); amma_forward and amma_backward, the entry points' set-up
 * (the backward's slices of sequences and their statistics) around the
 * kernels they are given: these, or the sweep's. dq NULL: dkdv writes dQ. */
typedef void (*AmmaFwdLaunch)(CudaState *st, const AmmaFwdArgs &a);
typedef void (*AmmaBwdLaunch)(CudaState *st, const AmmaBwdArgs &a);
void amma_fwd_run(CudaState *st, const AmmaFwdArgs &a);
void amma_dq_run(CudaState *st, const AmmaBwdArgs &a);
void amma_dkdv_run(CudaState *st, const AmmaBwdArgs &a);
void amma_forward(CudaState *st, AmmaFwdLaunch fwd, bf16 *out, float *lse, const bf16 *qkv, int B,
                  int T, int C, int NH, int KVH);
void amma_backward(CudaState *st, AmmaBwdLaunch dq, AmmaBwdLaunch dkdv, bf16 *dqkv,
                   const bf16 *dout, const bf16 *qkv, const bf16 *out, const float *lse, int B,
                   int T, int C, int NH, int KVH);

/* Launch kern on one 1-D grid of ceil(T / rows) x heads x nseq blocks of
 * threads (amma_block's order; heads 0: a.NH) with smem bytes of dynamic
 * shared memory, after attn_check_smem; op names the op in the messages. */
template <class Args>
static void amma_launch(CudaState *st, void (*kern)(Args), const Args &a, size_t smem, int rows,
                        int nseq, int threads, int hsp, const char *op, int heads = 0)
{
    attn_check_smem(st, smem, op, hsp);
    attn_set_smem(kern, smem);
    const size_t blocks = (size_t)ceil_div(a.T, rows) * (heads ? heads : a.NH) * nseq;
    if (blocks > 2147483647u) CUDA_FATAL("%s: %zu blocks exceed the grid's x limit", op, blocks);
    LAUNCH(kern, (unsigned)blocks, threads, smem, st->stream, a);
}

/* 16-byte loads are safe when every row start of every head is 16-byte
 * aligned: hs and C multiples of 8 elements and an aligned base. */
static inline int amma_vec_ok(const void *base, int C, int hs)
{
    return hs % 8 == 0 && C % 8 == 0 && (uintptr_t)base % 16 == 0;
}

#endif
