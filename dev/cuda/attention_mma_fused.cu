/* dev/cuda/attention_mma_fused.cu — a bf16 attention backward that forms
 * S and dP once (plan and staging: kernels/cuda/attention_mma.cuh). The
 * shipped backward (attention_mma_bwd.cuh) runs 7 products per 16 x 16 piece where
 * the FLOP count credits 5: its dQ kernel recomputes S and dP. Here the
 * dK/dV pass yields dQ as well:
 *   amma_fused_kernel   block = ROWS = 16 W key rows (key block kb), query
 *                       tiles of BT from the diagonal on. Per 16 queries:
 *                       each warp forms its 16 x 16 piece of P^T and dS^T
 *                       (dV += P^T dO, dK += dS^T Q, as the dK/dV kernel),
 *                       writes dS^T (bf16) to shared memory; after a
 *                       barrier each warp takes HSP / W columns of the
 *                       block's dQ partial, dS (16 x ROWS) K_kb, into
 *                       part[b, h, kb, q, :] (fp32);
 *   amma_dq_sum_kernel  dQ[q] = scale sum_{kb <= q / ROWS} part[kb, q], the
 *                       key blocks added in ascending order.
 * Each value has one writer and one fixed order of additions: the same
 * inputs give the same bits (the recompute modes' guarantee). The
 * partials take nb NH ceil(T / ROWS) T HSP floats (201 MB for 124M's
 * shape at B = 4: 4 x 12 x 16 x 1024 x 64 x 4 bytes), more than the
 * backend's scratch, so they live in the variants' workspace
 * (amma_variant_workspace, grown on demand). That buffer is outside the
 * memory plan: promoting this kernel would mean planning it first
 * (model/planner*.c). */
#include "attention_variants.cuh"

struct AmmaFusedArgs : AmmaBwdArgs {
    float *part; /* [nb][NH][ceil(T / ROWS)][T][HSP] */
};

/* Shared memory, Cfg = AmmaCfg<HSP, W, BT, 2, MINB, 1>:
 *   stages 0, 1: [Q tile | dO tile] (BT rows each), then BT statistics;
 *   [K | V] (ROWS rows each): K stays for the dQ products, V is read
 *   into registers once;
 *   dS^T: two buffers of ROWS keys x 16 queries, row stride LDS = 24
 *   elements (48 bytes, an odd multiple of 16: ldmatrix without
 *   conflicts), alternate pieces in alternate buffers, so one barrier
 *   per piece suffices.
 * The epilogue's dK and dV tiles (ROWS rows each) go over the stages. */
template <class Cfg> struct AmmaFusedSmem : AmmaDkdvSmem<Cfg> { /* its stages, q(), stats() */
    typedef AmmaDkdvSmem<Cfg> D;
    static constexpr int LDS = 24;
    static constexpr size_t kv_at = 2 * D::stage;
    static constexpr size_t ds_at = kv_at + D::kv;
    static constexpr size_t bytes = ds_at + (size_t)2 * Cfg::ROWS * LDS * sizeof(bf16);
    static_assert(2 * D::stage >= D::kv, "epilogue tiles");
};

template <class Cfg>
__global__ void __launch_bounds__(Cfg::NT, Cfg::MINB) amma_fused_kernel(AmmaFusedArgs a)
{
    constexpr int HSP = Cfg::HSP, BKV = Cfg::ROWS, BQ = Cfg::BT, NT = Cfg::NT, LD = Cfg::LD;
    constexpr int NC = HSP / Cfg::W; /* dQ partial columns per warp */
    static_assert(Cfg::ST == 2 && Cfg::HOLD && Cfg::VEC && NC % 16 == 0, "fused shape");
    typedef AmmaFusedSmem<Cfg> SM;
    constexpr int LDS = SM::LDS;
    DYN_SMEM(smem);
    bf16 *const Ks = (bf16 *)(smem + SM::kv_at); /* V after it, read once into registers */
    bf16 *const dsT = (bf16 *)(smem + SM::ds_at);

    const AmmaTile t = amma_tile_begin<Cfg, true>(a); /* rows: keys */
    const int T_ = t.T, C = a.C, hs = t.hs, C3 = 3 * C, w = t.w, g = t.g, t4 = t.t4;
    const int k0 = t.row0, wk0 = t.wr0, nKB = (T_ + BKV - 1) / BKV;
    const AmmaBlock blk = t.blk;
    float *const part = a.part + (((size_t)blk.b * a.NH + blk.h) * nKB + blk.tile) * T_ * HSP;
    const float sl2 = a.sl2;

    uint32_t kf[HSP / 16][4], vf[HSP / 16][4];
    amma_stage_own<Cfg, 2>(Ks, t.k, t.v, k0, w, kf, vf, [&] {
        amma_stage_pair_async<HSP, BQ, NT, 1>(SM::q(smem, 0), t.q, t.dout, t.first);
        amma_stage_stats<BQ, NT>(SM::stats(smem, 0), t.stats, t.first, T_);
    });

    float dk[HSP / 8][4], dv[HSP / 8][4];
    mma_strip_zero<HSP>(dk);
    mma_strip_zero<HSP>(dv);
    int npiece = 0; /* pieces done: which dS^T buffer is next */

    for (int it = 0; it < t.n; it++) {
        const int q0 = t.first + it * BQ;
        if (it > 0) cp_async_wait<0>();
        __syncthreads(); /* tile it complete; every warp done with it - 1 */
        if (it + 1 < t.n) {
            const int nx = (it + 1) & 1;
            amma_stage_pair_async<HSP, BQ, NT, 1>(SM::q(smem, nx), t.q, t.dout, q0 + BQ);
            amma_stage_stats<BQ, NT>(SM::stats(smem, nx), t.stats, q0 + BQ, T_);
            cp_async_commit();
        }
        const bf16 *Qs = SM::q(smem, it & 1), *dOs = Qs + BQ * LD;
        const AmmaStat *sts = SM::stats(smem, it & 1);

        /* every warp takes part in every piece (the barrier, and its dQ
         * columns), with or without keys of its own at or before it */
        for (int c = 0; c < BQ / 16; c++) { /* queries qc0..qc0+15 */
            const int qc0 = q0 + 16 * c;
            if (qc0 >= T_) break;
            if (qc0 + 15 < k0) continue; /* before every key of the block */
            const bf16 *Qc = Qs + 16 * c * LD, *dOc = dOs + 16 * c * LD;
            float dsTw[2][4]; /* this warp's 16 keys x 16 queries of dS^T */
            if (!t.idle && qc0 + 15 >= wk0) {
                float sT[2][4];
                mma_strip_areg<16, HSP>(sT, kf, Qc, LD);    /* S^T = K_w Q_c^T */
                mma_strip_areg<16, HSP>(dsTw, vf, dOc, LD); /* dP^T = V_w dO_c^T */
                amma_mask<16, true>(sT, qc0, wk0, t.r0, t.r1, t4, T_);
                amma_pds_cols<16>(sT, dsTw, sts + 16 * c, t4, sl2);
                mma_strip_acc<HSP, 16>(dv, sT, dOc, LD);  /* dV_w += P^T dO_c */
                mma_strip_acc<HSP, 16>(dk, dsTw, Qc, LD); /* dK_w += dS^T Q_c */
            } else {
                mma_strip_zero<16>(dsTw);
            }
            bf16 *ds = dsT + (size_t)(npiece & 1) * BKV * LDS;
            npiece++;
            mma_strip_to_smem<16>(ds, LDS, 16 * w, dsTw, 1.0f, 1.0f); /* bf16, as dK's operand */
            __syncthreads(); /* the block's dS^T piece complete */
            /* dQ_c partial, columns NC w..: dS_c (16 x BKV, A from dS^T by
             * .trans) times K (BKV x HSP, row-major) */
            float dqp[NC / 8][4];
            mma_strip_zero<NC>(dqp);
#pragma unroll
            for (int kk = 0; kk < BKV / 16; kk++) {
                uint32_t x[4];
                mma_load_a_t(x, ds, LDS, 0, 16 * kk);
                mma_strip_step<NC, false>(dqp, x, Ks + NC * w, LD, 16 * kk);
            }
#pragma unroll
            for (int half = 0; half < 2; half++) {
                const int q = qc0 + g + 8 * half;
                if (q >= T_) continue;
                float *row = part + (size_t)q * HSP + NC * w + 2 * t4;
#pragma unroll
                for (int j = 0; j < NC / 8; j++) {
                    row[8 * j] = dqp[j][2 * half];
                    row[8 * j + 1] = dqp[j][2 * half + 1];
                }
            }
        }
    }

    /* every warp done with the stages, which the epilogue reuses. Already
     * implied by the last piece's barrier (every read of Q, dO and the
     * statistics precedes it; after it only dS^T and K are read, and no
     * copy is in flight), which is why dev/cuda/barrier_sweep.sh cannot
     * catch its removal; kept so that the epilogue does not rest on it. */
    __syncthreads();
    bf16 *const dKs = (bf16 *)smem, *const dVs = dKs + BKV * LD;
    mma_strip_to_smem<HSP>(dKs, LD, 16 * w, dk, a.scale, a.scale);
    mma_strip_to_smem<HSP>(dVs, LD, 16 * w, dv, 1.0f, 1.0f);
    __syncwarp();
    if (t.idle) return;
    const bool ov = (uintptr_t)a.dqkv % 16 == 0 && hs % 8 == 0 && C % 8 == 0;
    bf16 *rows = a.dqkv + ((size_t)blk.b * T_ + wk0) * C3 + blk.h * hs;
    mma_rows_out<16, HSP>(rows + C, C3, T_ - wk0, hs, dKs + 16 * w * LD, LD, ov);
    mma_rows_out<16, HSP>(rows + 2 * C, C3, T_ - wk0, hs, dVs + 16 * w * LD, LD, ov);
}

/* dQ (bf16, in dqkv) = scale times the sum of row q's partials over key
 * blocks 0..q / bkv, in that order; one thread per 4 columns of a row. */
template <int HSP>
__global__ void amma_dq_sum_kernel(bf16 *dqkv, const float *part, int nb, int T_, int C, int NH,
                                   int bkv, float scale)
{
    const size_t n = (size_t)nb * NH * T_ * (HSP / 4);
    const int hs = C / NH, nKB = (T_ + bkv - 1) / bkv;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const int d = (int)(i % (HSP / 4)) * 4, t = (int)(i / (HSP / 4) % T_);
        const size_t bh = i / (HSP / 4) / T_;
        const int h = (int)(bh % NH), b = (int)(bh / NH);
        if (d >= hs) continue;
        const float *p = part + (bh * nKB * T_ + t) * HSP + d;
        float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int kb = 0; kb <= t / bkv; kb++) {
            const Vec16<float> v = *vec16_at(p + (size_t)kb * T_ * HSP);
#pragma unroll
            for (int e = 0; e < 4; e++) s[e] += v.v[e];
        }
        bf16 *o = dqkv + ((size_t)b * T_ + t) * 3 * C + h * hs + d;
#pragma unroll
        for (int e = 0; e < 4; e++)
            if (d + e < hs) o[e] = from_f<bf16>(s[e] * scale);
    }
}

template <class Cfg> static void amma_fused_launch(CudaState *st, const AmmaBwdArgs &a)
{
    static int set = 0;
    const size_t nKB = ceil_div(a.T, Cfg::ROWS);
    AmmaFusedArgs f;
    (AmmaBwdArgs &)f = a;
    f.part = (float *)amma_variant_workspace(
        st, (size_t)a.nb * a.NH * nKB * a.T * Cfg::HSP * sizeof(float), "the dQ partials");
    amma_fa2_launch(st, amma_fused_kernel<Cfg>, f, AmmaFusedSmem<Cfg>::bytes, Cfg::ROWS, a.nb,
                    Cfg::NT, set);
    const size_t n = (size_t)a.nb * a.NH * a.T * (Cfg::HSP / 4);
    LAUNCH(amma_dq_sum_kernel<Cfg::HSP>, elementwise_grid(n, 256), 256, 0, st->stream, a.dqkv,
           (const float *)f.part, a.nb, a.T, a.C, a.NH, Cfg::ROWS, a.scale);
}

void amma_fused_q64(CudaState *st, const AmmaBwdArgs &a)
{
    amma_fused_launch<AmmaCfg<64, 4, 64, 2, 2, 1>>(st, a);
}
void amma_fused_q32(CudaState *st, const AmmaBwdArgs &a)
{
    amma_fused_launch<AmmaCfg<64, 4, 32, 2, 3, 1>>(st, a);
}
