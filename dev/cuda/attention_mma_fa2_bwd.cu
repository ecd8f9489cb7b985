/* dev/cuda/attention_mma_fa2_bwd.cu — the bf16 attention backward's dK/dV
 * in FlashAttention-2's shape, and a dQ that does not recompute S and dP
 * (plan and staging: kernels/cuda/attention_mma.cuh):
 *   amma_fa2_dkdv_kernel  block = ROWS = 32 W key rows, warp w keys
 *                         wk0 = row0 + 32 w.. as two m16 strips (keys +0..15
 *                         and +16..31); query/dO tiles of BT from the
 *                         diagonal on, cp.async double-buffered. K_w and V_w
 *                         of both strips stay in registers; every Q and dO
 *                         fragment (ldmatrix) feeds both strips' products
 *                         (mma_strip2_areg, mma_strip2_acc), so the loop
 *                         reads 0.25 ldmatrix.x4 per mma.sync where the
 *                         default dK/dV (16 key rows per warp) reads 0.5.
 *                         DS = 1: it also writes the dS^T it forms (bf16,
 *                         the values dK's product takes) to a workspace
 *                         of 64 x 64 tiles (below), and holds K_w only,
 *                         rereading V_w for every dP^T product (0.375
 *                         ldmatrix per mma.sync), to stay within 255
 *                         registers without spills;
 *   amma_dsq_kernel       dQ = scale sum_k dS[q, k] K[k] from those tiles:
 *                         block = 64 query rows (query tile qt), 16 per
 *                         warp, streaming [K tile | dS tile] for key tiles
 *                         0..qt in ascending order, so dQ costs 1 product
 *                         per piece where the default dQ kernel's 3 form S
 *                         and dP again.
 * Every dS value has one writer (the warp of its key) and every dQ row one
 * writer that adds its key pieces in one fixed order: no atomics, the same
 * bits whatever the order blocks and warps run in. The tiles take
 * nb NH n (n + 1) / 2 8 KiB, n = ceil(T / 64) (53 MB at 124M's B = 4,
 * 855 MB at B = 64: written once and read once, half the fused variant's
 * fp32 partials), in the variants' workspace (amma_variant_workspace),
 * outside the memory plan as the fused variant's partials are. */
#include "attention_variants.cuh"

/* ---- the dS workspace ----
 * Per (sequence, head): the causal triangle of 64 x 64 tiles, tile (key
 * tile kt, query tile qt), kt <= qt, at index qt (qt + 1) / 2 + kt (the
 * tiles a query tile reads follow each other); in a tile, dS^T key-major:
 * element (key kt 64 + i, query qt 64 + j) at i 64 + j. The dQ pass reads
 * 16 x 16 pieces: exactly those with the piece's first key <= its first
 * query and both < T, all of which the dK/dV pass writes (it skips only
 * pieces wholly before a warp's keys, and pieces of queries >= T). */
#define AMMA_DS_T 64

__host__ __device__ constexpr size_t amma_ds_tiles(int T)
{
    return (size_t)((T + AMMA_DS_T - 1) / AMMA_DS_T) * ((T + AMMA_DS_T - 1) / AMMA_DS_T + 1) / 2;
}

__device__ __forceinline__ size_t amma_ds_at(int kt, int qt)
{
    return ((size_t)qt * (qt + 1) / 2 + kt) * AMMA_DS_T * AMMA_DS_T;
}

struct AmmaDsArgs : AmmaBwdArgs {
    bf16 *ds; /* [nb][NH][amma_ds_tiles(T)][64][64]; NULL: not written */
};

/* One strip's 16 keys x 16 queries of dS^T, as the A operand dK's
 * product takes (x, mma_a_from_c: bf16 pairs, this lane's keys g and + 8,
 * queries 2 t4, + 1 and + 8, + 9), into the warp's dS stash in shared
 * memory (row stride AMMA_DS_LDS = 72 elements, an odd multiple of 16
 * bytes) at p, this lane's first element of the piece. */
#define AMMA_DS_LDS (AMMA_DS_T + 8)
__device__ __forceinline__ void amma_ds_stash(bf16 *p, const uint32_t x[4])
{
    *(uint32_t *)p = x[0];
    *(uint32_t *)(p + 8 * AMMA_DS_LDS) = x[1];
    *(uint32_t *)(p + 8) = x[2];
    *(uint32_t *)(p + 8 * AMMA_DS_LDS + 8) = x[3];
}

/* A warp's stash (32 keys x 64 queries; the warp has passed a __syncwarp
 * since writing it) to its rows of a dS tile, which are 4 KiB in one
 * piece: 16-byte stores, consecutive lanes on consecutive bytes. Pieces
 * the warp skipped carry stale values to places no reader reads. */
__device__ __forceinline__ void amma_ds_out(bf16 *dst, const bf16 *stash)
{
    const int l = threadIdx.x % 32;
#pragma unroll
    for (int i = l; i < 32 * AMMA_DS_T / 8; i += 32) {
        const int r = i / (AMMA_DS_T / 8), d = i % (AMMA_DS_T / 8) * 8;
        *(MmaU4 *)vec16_at(dst + 8 * i) = *(const MmaU4 *)vec16_at(stash + r * AMMA_DS_LDS + d);
    }
}

/* c0 += X0 . B, c1 += X1 . B (16 x N each) for one 16-deep step: X0, X1
 * the two strips' A operands already packed (mma_a_from_c), B row-major
 * 16 x N (B[k][n]); every B fragment feeds both strips, as
 * mma_strip2_acc's do. */
template <int N>
__device__ __forceinline__ void amma_strip2_acc_x(float c0[][4], float c1[][4],
                                                  const uint32_t x0[4], const uint32_t x1[4],
                                                  const bf16 *B, int ldb)
{
#pragma unroll
    for (int j = 0; j < N / 16; j++) {
        uint32_t b[2][2];
        mma_load_b_kn(b, B, ldb, 0, 16 * j);
        mma_bf16_16816(c0[2 * j], x0, b[0]);
        mma_bf16_16816(c0[2 * j + 1], x0, b[1]);
        mma_bf16_16816(c1[2 * j], x1, b[0]);
        mma_bf16_16816(c1[2 * j + 1], x1, b[1]);
    }
}

/* c0, c1 (16 x N each) = A0 . B, A1 . B as mma_strip2_areg, the A strips
 * rows r0.. and r0 + 16.. of a row-major tile in shared memory (read for
 * every product instead of held in registers), B given transposed. */
template <int N, int K>
__device__ __forceinline__ void amma_strip2_asmem(float c0[][4], float c1[][4], const bf16 *A,
                                                  int lda, int r0, const bf16 *Bt, int ldb)
{
    mma_strip_zero<N>(c0);
    mma_strip_zero<N>(c1);
#pragma unroll
    for (int kk = 0; kk < K / 16; kk++) {
        uint32_t a0[4], a1[4];
        mma_load_a(a0, A, lda, r0, 16 * kk);
        mma_load_a(a1, A, lda, r0 + 16, 16 * kk);
#pragma unroll
        for (int j = 0; j < N / 16; j++) {
            uint32_t b[2][2];
            mma_load_b_nk(b, Bt, ldb, 16 * j, 16 * kk);
            mma_bf16_16816(c0[2 * j], a0, b[0]);
            mma_bf16_16816(c0[2 * j + 1], a0, b[1]);
            mma_bf16_16816(c1[2 * j], a1, b[0]);
            mma_bf16_16816(c1[2 * j + 1], a1, b[1]);
        }
    }
}

/* ---- dK/dV, 32 key rows per warp ---- */

/* Shared memory: AmmaDkdvSmem's two stages of [Q tile | dO tile] and BT
 * statistics. DS = 0: [K | V] (ROWS rows each) staged into the second
 * stage, enlarged, and read into registers before it is first refilled
 * (AmmaDkdvSmem's layout). DS = 1, which holds K only (with V_w held as
 * well, every form of the dS write-out tried spilled, 4 to 28 bytes on
 * sm_80 or sm_90a): K staged into the second stage, V (ROWS rows, read
 * for every dP^T product) after both stages, then each warp's dS stash,
 * 32 keys x 64 queries, and each warp's dS offset (below). Both: the
 * epilogue's dK and dV tiles (ROWS rows each) from the start. */
template <class Cfg, bool DS> struct AmmaFa2DkdvSmem : AmmaDkdvSmem<Cfg> {
    typedef AmmaDkdvSmem<Cfg> D;
    static_assert(!DS || D::stage >= amma_rows<Cfg>(Cfg::ROWS), "K in the second stage");
    static constexpr size_t v_at = DS ? 2 * D::stage : D::kv_at + amma_rows<Cfg>(Cfg::ROWS);
    static constexpr size_t stash_at = 2 * D::stage + amma_rows<Cfg>(Cfg::ROWS);
    static constexpr size_t slot_at = stash_at + (size_t)Cfg::W * 32 * AMMA_DS_LDS * sizeof(bf16);
    static constexpr size_t bytes = DS ? slot_at + Cfg::W * sizeof(size_t) : D::bytes;
    static_assert(bytes >= D::kv, "epilogue tiles");
};

template <class Cfg, bool DS>
__global__ void __launch_bounds__(Cfg::NT, Cfg::MINB) amma_fa2_dkdv_kernel(AmmaDsArgs a)
{
    constexpr int HSP = Cfg::HSP, BKV = Cfg::ROWS, BQ = Cfg::BT, NT = Cfg::NT, LD = Cfg::LD;
    static_assert(Cfg::ROWS == 32 * Cfg::W && Cfg::ST == 2 && Cfg::HOLD && Cfg::VEC,
                  "FlashAttention-2 shape");
    /* DS: a warp's 32 keys lie in one dS key tile, a query tile's pieces
     * in one dS query tile */
    static_assert(!DS || (BKV % AMMA_DS_T == 0 && BQ == AMMA_DS_T), "dS tiles");
    typedef AmmaFa2DkdvSmem<Cfg, DS> SM;
    DYN_SMEM(smem);
    bf16 *const Ks = (bf16 *)(smem + SM::kv_at), *const Vs = (bf16 *)(smem + SM::v_at);

    const AmmaTile t = amma_tile_begin<Cfg, true>(a); /* rows: keys */
    const int T_ = t.T, C = a.C, hs = t.hs, C3 = 3 * C, w = t.w, g = t.g, t4 = t.t4;
    const int wk0 = t.wr0, r0 = t.r0; /* strips: keys r0, +8 and r0 + 16, +24 */
    const float sl2 = a.sl2;
    bf16 *const stash = (bf16 *)(smem + SM::stash_at) + (size_t)32 * w * AMMA_DS_LDS;
    /* DS: the element offset of the warp's first row in dS tile (its key
     * tile, query tile 0) of its (sequence, head), read back from shared
     * memory at each tile's write-out: computed there, ptxas hoisted it
     * out of the loop into registers and spilled 4 to 8 bytes */
    size_t *const slot = (size_t *)(smem + SM::slot_at) + w;
    if (DS && t.g == 0 && t.t4 == 0)
        *slot = ((size_t)t.blk.b * a.NH + t.blk.h) * amma_ds_tiles(T_) * AMMA_DS_T * AMMA_DS_T +
                amma_ds_at(wk0 / AMMA_DS_T, 0) + (size_t)(wk0 % AMMA_DS_T) * AMMA_DS_T;

    amma_stage_async<HSP, BKV, NT, 1>(Ks, t.k, t.row0);
    amma_stage_async<HSP, BKV, NT, 1>(Vs, t.v, t.row0);
    amma_stage_pair_async<HSP, BQ, NT, 1>(SM::q(smem, 0), t.q, t.dout, t.first);
    amma_stage_stats<BQ, NT>(SM::stats(smem, 0), t.stats, t.first, T_);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    /* V_w: with DS = 0 only */
    uint32_t kf0[HSP / 16][4], kf1[HSP / 16][4], vf0[HSP / 16][4], vf1[HSP / 16][4];
    mma_load_a_strip<HSP>(kf0, Ks, LD, 32 * w);
    mma_load_a_strip<HSP>(kf1, Ks, LD, 32 * w + 16);
    if (!DS) {
        mma_load_a_strip<HSP>(vf0, Vs, LD, 32 * w);
        mma_load_a_strip<HSP>(vf1, Vs, LD, 32 * w + 16);
    }

    float dk0[HSP / 8][4], dk1[HSP / 8][4], dv0[HSP / 8][4], dv1[HSP / 8][4];
    mma_strip_zero<HSP>(dk0);
    mma_strip_zero<HSP>(dk1);
    mma_strip_zero<HSP>(dv0);
    mma_strip_zero<HSP>(dv1);

    for (int it = 0; it < t.n; it++) {
        const int q0 = t.first + it * BQ;
        /* the barrier of step 0 also ends every warp's reads of K (and
         * V with DS = 0), which the next tile's copy overwrites */
        const int cur = amma_stream_step<Cfg>(
            it, t.n, q0,
            [&](int s, int r) {
                amma_stage_pair_async<HSP, BQ, NT, 1>(SM::q(smem, s), t.q, t.dout, r);
                amma_stage_stats<BQ, NT>(SM::stats(smem, s), t.stats, r, T_);
            },
            [](int) {});
        const bf16 *Qs = SM::q(smem, cur), *dOs = Qs + BQ * LD;
        const AmmaStat *sts = SM::stats(smem, cur);
        if (t.idle || q0 + BQ - 1 < wk0) continue; /* every query before this warp's keys */

#pragma unroll
        for (int c = 0; c < BQ / 16; c++) { /* queries qc0..qc0+15 */
            const int qc0 = q0 + 16 * c;
            if (qc0 + 15 < wk0) continue; /* before both strips' keys */
            if (qc0 >= T_) break;
            const bf16 *Qc = Qs + 16 * c * LD, *dOc = dOs + 16 * c * LD;
            /* both strips, even where strip 1 is wholly masked (the
             * diagonal piece): the fragments are shared, and its P^T and
             * dS^T are exactly 0 */
            float sT0[2][4], sT1[2][4], dT0[2][4], dT1[2][4];
            mma_strip2_areg<16, HSP>(sT0, sT1, kf0, kf1, Qc, LD);  /* S^T = K_w Q_c^T */
            if (DS) amma_strip2_asmem<16, HSP>(dT0, dT1, Vs, LD, 32 * w, dOc, LD);
            else mma_strip2_areg<16, HSP>(dT0, dT1, vf0, vf1, dOc, LD); /* dP^T = V_w dO_c^T */
            /* P^T and dS^T in place; a key past T is never <= a query < T */
            amma_mask<16, true>(sT0, qc0, wk0, r0, r0 + 8, t4, T_);
            amma_mask<16, true>(sT1, qc0, wk0 + 16, r0 + 16, r0 + 24, t4, T_);
            amma_pds_cols<16>(sT0, dT0, sts + 16 * c, t4, sl2);
            amma_pds_cols<16>(sT1, dT1, sts + 16 * c, t4, sl2);
            /* dS^T rounded to bf16 once, for dK's product and the stash,
             * before dV's product: its fp32 pieces die here */
            uint32_t x0[4], x1[4];
            mma_a_from_c(x0, dT0[0], dT0[1]);
            mma_a_from_c(x1, dT1[0], dT1[1]);
            mma_strip2_acc<HSP, 16>(dv0, dv1, sT0, sT1, dOc, LD); /* dV_w += P^T dO_c */
            amma_strip2_acc_x<HSP>(dk0, dk1, x0, x1, Qc, LD);    /* dK_w += dS^T Q_c */
            /* after the products, so that nothing but the __syncwarp below
             * orders the stash's writes before its reads: the emulator's
             * mma.sync is a warp barrier, which would hide its removal */
            if (DS) {
                amma_ds_stash(stash + g * AMMA_DS_LDS + 2 * t4 + 16 * c, x0);
                amma_ds_stash(stash + (16 + g) * AMMA_DS_LDS + 2 * t4 + 16 * c, x1);
            }
        }
        if (DS) { /* the tile's pieces to the warp's rows of dS tile (wk0 / 64, q0 / 64) */
            __syncwarp();
            /* the next tile's stash writes follow its step's barrier */
            amma_ds_out(a.ds + *slot + amma_ds_at(0, q0 / AMMA_DS_T), stash);
        }
    }

    __syncthreads(); /* every warp done with the last Q/dO stage: the epilogue reuses it */
    bf16 *const dKs = (bf16 *)smem, *const dVs = dKs + BKV * LD;
    mma_strip_to_smem<HSP>(dKs, LD, 32 * w, dk0, a.scale, a.scale);
    mma_strip_to_smem<HSP>(dKs, LD, 32 * w + 16, dk1, a.scale, a.scale);
    mma_strip_to_smem<HSP>(dVs, LD, 32 * w, dv0, 1.0f, 1.0f);
    mma_strip_to_smem<HSP>(dVs, LD, 32 * w + 16, dv1, 1.0f, 1.0f);
    __syncwarp();
    if (t.idle) return;
    const bool ov = (uintptr_t)a.dqkv % 16 == 0 && hs % 8 == 0 && C % 8 == 0;
    bf16 *rows = a.dqkv + ((size_t)t.blk.b * T_ + wk0) * C3 + t.blk.h * hs;
    mma_rows_out<32, HSP>(rows + C, C3, T_ - wk0, hs, dKs + 32 * w * LD, LD, ov);
    mma_rows_out<32, HSP>(rows + 2 * C, C3, T_ - wk0, hs, dVs + 32 * w * LD, LD, ov);
}

/* ---- dQ from the dS tiles ---- */

/* Cfg = AmmaCfg<HSP, 4, 64, 2, MINB>: 64 query rows = one dS query tile,
 * 64-key tiles = one dS key tile. Shared memory: two stages of [K tile
 * (stride LD) | dS tile (stride AMMA_DS_LDS)], 64 rows each; the
 * epilogue's dQ tile over the first. */
template <class Cfg> static constexpr size_t amma_dsq_smem()
{
    return (size_t)2 * Cfg::BT * (Cfg::LD + AMMA_DS_LDS) * sizeof(bf16);
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::NT, Cfg::MINB) amma_dsq_kernel(AmmaDsArgs a)
{
    constexpr int HSP = Cfg::HSP, BK = Cfg::BT, NT = Cfg::NT, LD = Cfg::LD;
    static_assert(Cfg::ROWS == AMMA_DS_T && BK == AMMA_DS_T && Cfg::ST == 2 && Cfg::VEC,
                  "one dS tile per step");
    constexpr int STAGE = BK * (LD + AMMA_DS_LDS); /* elements of one [K | dS] stage */
    DYN_SMEM(smem);
    bf16 *const tiles = (bf16 *)smem;

    const AmmaTile t = amma_tile_begin<Cfg, false>(a); /* rows: queries, keys 0..row0 + 63 */
    const int T_ = t.T, C = a.C, hs = t.hs, C3 = 3 * C, w = t.w, wq0 = t.wr0, qt = t.blk.tile;
    const bf16 *const ds_bh =
        a.ds + ((size_t)t.blk.b * a.NH + t.blk.h) * amma_ds_tiles(T_) * AMMA_DS_T * AMMA_DS_T;
    auto issue = [&](int s, int kt) { /* key tile kt: its K rows and dS tile (kt, qt) */
        bf16 *dst = tiles + (size_t)s * STAGE;
        const AmmaSrc d = {ds_bh + amma_ds_at(kt, qt), AMMA_DS_T, AMMA_DS_T, AMMA_DS_T};
        amma_stage_async<HSP, BK, NT, 1>(dst, t.k, kt * BK);
        amma_stage_async<AMMA_DS_T, BK, NT, 1>(dst + BK * LD, d, 0);
    };
    issue(0, 0);
    cp_async_commit();
    cp_async_wait<0>();

    float dq[HSP / 8][4];
    mma_strip_zero<HSP>(dq);
    for (int kt = 0; kt < t.n; kt++) {
        const int k0 = kt * BK;
        const int cur = amma_stream_step<Cfg>(
            kt, t.n, k0, [&](int s, int r) { issue(s, r / BK); }, [](int) {});
        const bf16 *Ks = tiles + (size_t)cur * STAGE, *dSs = Ks + BK * LD;
        if (t.idle || k0 > wq0 + 15) continue; /* every key after this warp's rows */
#pragma unroll
        for (int c = 0; c < BK / 16; c++) { /* keys k0 + 16c..: the writer's pieces */
            if (k0 + 16 * c > wq0) break;
            uint32_t x[4]; /* dS (16 queries x 16 keys) from the key-major tile */
            mma_load_a_t(x, dSs, AMMA_DS_LDS, 16 * w, 16 * c);
            mma_strip_step<HSP, false>(dq, x, Ks, LD, 16 * c); /* dQ_w += dS K_c */
        }
    }

    __syncthreads(); /* every warp done with the stages: the epilogue reuses them */
    bf16 *const Ds = tiles + (size_t)16 * w * LD;
    mma_strip_to_smem<HSP>(Ds, LD, 0, dq, a.scale, a.scale);
    __syncwarp();
    const bool ov = (uintptr_t)a.dqkv % 16 == 0 && hs % 8 == 0 && C % 8 == 0;
    if (!t.idle)
        mma_rows_out<16, HSP>(a.dqkv + ((size_t)t.blk.b * T_ + wq0) * C3 + t.blk.h * hs, C3,
                              T_ - wq0, hs, Ds, LD, ov);
}

/* ---- launches ---- */

template <class Cfg> static void amma_fa2_dkdv_launch(CudaState *st, const AmmaBwdArgs &a)
{
    static int set = 0;
    AmmaDsArgs d;
    (AmmaBwdArgs &)d = a;
    d.ds = NULL;
    amma_fa2_launch(st, amma_fa2_dkdv_kernel<Cfg, false>, d, AmmaFa2DkdvSmem<Cfg, false>::bytes,
                    Cfg::ROWS, a.nb, Cfg::NT, set);
}

/* dK/dV writing dS, then dQ from it: the pair as one "fused" dK/dV entry
 * of the sweep's table (no dQ kernel runs after it) */
template <class Cfg, class QCfg> static void amma_fa2_ds_launch(CudaState *st, const AmmaBwdArgs &a)
{
    static int set = 0, set_q = 0;
    AmmaDsArgs d;
    (AmmaBwdArgs &)d = a;
    const size_t bytes = (size_t)a.nb * a.NH * amma_ds_tiles(a.T) * AMMA_DS_T * AMMA_DS_T *
                         sizeof(bf16);
    d.ds = (bf16 *)amma_variant_workspace(st, bytes, "the dS tiles");
    amma_fa2_launch(st, amma_fa2_dkdv_kernel<Cfg, true>, d, AmmaFa2DkdvSmem<Cfg, true>::bytes,
                    Cfg::ROWS, a.nb, Cfg::NT, set);
    amma_fa2_launch(st, amma_dsq_kernel<QCfg>, d, amma_dsq_smem<QCfg>(), QCfg::ROWS, a.nb,
                    QCfg::NT, set_q);
}

/* The launches the sweep's table (attention_variants.cu) names */
void amma_fa2_dkdv_q64(CudaState *st, const AmmaBwdArgs &a)
{
    amma_fa2_dkdv_launch<AmmaCfg2<64, 4, 64, 2>>(st, a);
}
void amma_fa2_dkdv_q32(CudaState *st, const AmmaBwdArgs &a)
{
    amma_fa2_dkdv_launch<AmmaCfg2<64, 4, 32, 2>>(st, a);
}
void amma_fa2_ds_q64(CudaState *st, const AmmaBwdArgs &a)
{
    amma_fa2_ds_launch<AmmaCfg2<64, 4, 64, 2>, AmmaCfg<64, 4, 64, 2, 4>>(st, a);
}
