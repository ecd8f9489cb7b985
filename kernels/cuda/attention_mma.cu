/* kernels/cuda/attention_mma.cu — causal self-attention forward and
 * backward in bf16 on the tensor cores, flash style, with every accumulator
 * in registers (mma.cuh). attention.cu and attention_backward.cu send bf16
 * runs here; their own kernels are the fp32 path.
 *
 * Blocks are 4 warps; warp w owns rows 16w..16w+15 of the block's 64-row
 * tile (query rows in the forward and dQ kernels, key rows in dK/dV) and
 * keeps everything about them in registers: scores S (16 x 64 per tile),
 * running max m and sum l (the lane's two rows), the output or gradient
 * accumulator (16 x HSP). Shared memory holds only the tiles every warp
 * reads: K and V (forward, dQ) or Q and dO (dK/dV), row-major; ldmatrix
 * reads them as B^T or, transposing on the way, as B (mma.cuh).
 *
 * Scores are kept in log2 units (s * scale * log2 e) so exp2f does the
 * exponentials; lse is stored in natural units, as the fp32 kernels and the
 * cpu do: lse = ln 2 * (m + log2 l).
 *
 * Backward, with P = exp(s - lse), D_i = sum_d dO[i,d] O[i,d]:
 *   dV = P^T dO, dK = scale dS^T Q, dQ = scale dS K, dS = P (dO V^T - D).
 * D is computed once per row by amma_rows_D_kernel into the scratch (B NH T
 * floats, batch slices sized to fit), not in every block that reads it.
 * dK/dV and dQ are separate kernels, each the only writer of its output: no
 * atomics, so every run gives the same bits. */
#include "attention_tile.cuh"
#include "mma.cuh"

#define AMMA_ROWS 64                  /* rows of a block's own tile: 4 warps x 16 */
#define AMMA_THREADS (AMMA_ROWS / 16 * 32)
#define AMMA_LOG2E 1.4426950408889634f
#define AMMA_LN2 0.6931471805599453f

/* Stage rows t0..t0+R-1 of sequence b, columns col0..col0+hs-1 of src (row
 * stride ld elements) into the row-major tile dst[r * (HSP + 8) + d], zero
 * past T or hs. vec (host-checked: hs, ld, col0 multiples of 8 and src
 * 16-byte aligned) reads 8 elements at a time. All threads take part; the
 * caller syncs. */
template <int HSP, int R>
__device__ void amma_stage(bf16 *dst, const bf16 *src, int ld, int col0, int b, int t0, int T_,
                           int hs, int vec)
{
    const bf16 zero = from_f<bf16>(0.0f);
    for (int e = threadIdx.x; e < R * HSP / 8; e += blockDim.x) {
        const int r = e / (HSP / 8), d0 = e % (HSP / 8) * 8, t = t0 + r;
        Vec16<bf16> x;
        const bf16 *s = src + ((size_t)b * T_ + t) * ld + col0 + d0;
        if (vec && t < T_ && d0 < hs) {
            x = *vec16_at(s);
        } else {
#pragma unroll
            for (int i = 0; i < 8; i++) x.v[i] = t < T_ && d0 + i < hs ? s[i] : zero;
        }
        *vec16_at(dst + r * (HSP + 8) + d0) = x;
    }
}

/* ---- forward ---- */

template <int HSP> static size_t amma_fwd_smem()
{
    return 2 * attn_round((size_t)AMMA_ROWS * (HSP + 8) * 2); /* Q then K; V */
}

template <int HSP>
__global__ void __launch_bounds__(AMMA_THREADS)
amma_fwd_kernel(bf16 *out, float *lse, const bf16 *qkv, int T_, int C, int NH, float sl2, int vec)
{
    constexpr int LDR = HSP + 8, BK = AMMA_ROWS;
    DYN_SMEM(smem);
    unsigned char *p = smem;
    bf16 *QK = attn_take<bf16>(p, AMMA_ROWS * LDR);
    bf16 *Vs = attn_take<bf16>(p, AMMA_ROWS * LDR);

    const int nT = (T_ + AMMA_ROWS - 1) / AMMA_ROWS;
    const int qt = nT - 1 - (int)blockIdx.x; /* the longest rows first */
    const int h = blockIdx.y, b = blockIdx.z;
    const int hs = C / NH, C3 = 3 * C;
    const int w = threadIdx.x / 32, g = threadIdx.x % 32 / 4, t4 = threadIdx.x % 4;
    const int q0 = qt * AMMA_ROWS;
    const int r0 = q0 + 16 * w + g, r1 = r0 + 8; /* this lane's two query rows */

    amma_stage<HSP, AMMA_ROWS>(QK, qkv, C3, h * hs, b, q0, T_, hs, vec);
    __syncthreads();
    uint32_t qf[HSP / 16][4];
#pragma unroll
    for (int kk = 0; kk < HSP / 16; kk++) mma_load_a(qf[kk], QK, LDR, 16 * w, 16 * kk);

    float o[HSP / 8][4];
#pragma unroll
    for (int j = 0; j < HSP / 8; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;

    for (int kt = 0; kt <= qt; kt++) {
        const int k0 = kt * BK;
        __syncthreads(); /* Q fragments taken; every warp done with the previous K, V */
        amma_stage<HSP, AMMA_ROWS>(QK, qkv, C3, C + h * hs, b, k0, T_, hs, vec);
        amma_stage<HSP, AMMA_ROWS>(Vs, qkv, C3, 2 * C + h * hs, b, k0, T_, hs, vec);
        __syncthreads();

        float s[BK / 8][4]; /* S = Q_w K^T, then log2-unit scores, then P */
#pragma unroll
        for (int j = 0; j < BK / 8; j++) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < HSP / 16; kk++)
#pragma unroll
            for (int j = 0; j < BK / 16; j++) {
                uint32_t kb[2][2];
                mma_load_b_nk(kb, QK, LDR, 16 * j, 16 * kk);
                mma_bf16_16816(s[2 * j], qf[kk], kb[0]);
                mma_bf16_16816(s[2 * j + 1], qf[kk], kb[1]);
            }
        /* mask only where a key can be past the row or past T; key k0 is
         * valid for every row of the tile, so both maxima are finite */
        const bool edge = kt == qt || k0 + BK > T_;
        float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int j = 0; j < BK / 8; j++) {
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int col = k0 + 8 * j + 2 * t4 + (i & 1), row = i < 2 ? r0 : r1;
                float v = s[j][i] * sl2;
                if (edge && (col > row || col >= T_)) v = -INFINITY;
                s[j][i] = v;
            }
            mx0 = fmaxf(mx0, fmaxf(s[j][0], s[j][1]));
            mx1 = fmaxf(mx1, fmaxf(s[j][2], s[j][3]));
        }
        /* a row's 64 scores are spread over the 4 lanes of its group */
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
        const float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);
        const float a0 = exp2f(m0 - n0), a1 = exp2f(m1 - n1); /* first tile: 0 */
        m0 = n0;
        m1 = n1;
        /* l stays a per-lane partial sum (the same alpha scales all four
         * lanes of a row); the lanes' parts are added once, at the end */
        float sum0 = 0.0f, sum1 = 0.0f;
#pragma unroll
        for (int j = 0; j < BK / 8; j++) {
            s[j][0] = exp2f(s[j][0] - m0);
            s[j][1] = exp2f(s[j][1] - m0);
            s[j][2] = exp2f(s[j][2] - m1);
            s[j][3] = exp2f(s[j][3] - m1);
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
        /* O_w += P V, P (rounded to bf16) straight from the score registers */
        mma_strip_acc<HSP, BK>(o, s, Vs, LDR);
    }

    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    mma_strip_store<HSP>(out + (size_t)b * T_ * C + h * hs, C, r0, T_, hs, o, 1.0f / l0,
                         1.0f / l1);
    if (t4 == 0) {
        const size_t lrow = ((size_t)b * NH + h) * T_;
        if (r0 < T_) lse[lrow + r0] = AMMA_LN2 * (m0 + log2f(l0));
        if (r1 < T_) lse[lrow + r1] = AMMA_LN2 * (m1 + log2f(l1));
    }
}

/* ---- backward ---- */

/* D[(b NH + h) T + t] = sum_d dO[b,t,h,d] O[b,t,h,d], one warp per row. */
__global__ void amma_rows_D_kernel(float *D, const bf16 *dout, const bf16 *out, int B, int T_,
                                   int C, int NH)
{
    const int hs = C / NH, lane = threadIdx.x % 32;
    const size_t rows = (size_t)B * NH * T_, warps = (size_t)gridDim.x * blockDim.x / 32;
    for (size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; i < rows; i += warps) {
        const size_t t = i % T_, h = i / T_ % NH, b = i / T_ / NH;
        const size_t off = (b * T_ + t) * C + h * hs;
        float s = 0.0f;
        for (int d = lane; d < hs; d += 32) s += to_f(dout[off + d]) * to_f(out[off + d]);
        s = warp_sum(s);
        if (lane == 0) D[i] = s;
    }
}

/* The row statistics of query rows q0..q0+R-1 of one (sequence, head):
 * lse in log2 units and D, 0 past T. The caller syncs. */
template <int R>
__device__ void amma_stage_stats(float *lse_s, float *D_s, const float *lse, const float *D,
                                 int q0, int T_)
{
    for (int r = threadIdx.x; r < R; r += blockDim.x) {
        const bool in = q0 + r < T_;
        lse_s[r] = in ? lse[q0 + r] * AMMA_LOG2E : 0.0f;
        D_s[r] = in ? D[q0 + r] : 0.0f;
    }
}

/* Both backward kernels' shared memory: K and V tiles of 64 rows, Q and dO
 * tiles of NQ rows (row-major, HSP + 8 per row), and the NQ query rows' lse
 * (log2 units) and D. */
struct AmmaBwdTiles {
    bf16 *K, *V, *Q, *dO;
    float *lse, *D;
};

template <int HSP, int NQ> static size_t amma_bwd_smem()
{
    return 2 * attn_round((size_t)AMMA_ROWS * (HSP + 8) * 2) + /* K, V */
           2 * attn_round((size_t)NQ * (HSP + 8) * 2) +        /* Q, dO */
           2 * attn_round((size_t)NQ * sizeof(float));         /* lse, D */
}

template <int HSP, int NQ> __device__ AmmaBwdTiles amma_bwd_tiles(unsigned char *p)
{
    AmmaBwdTiles t;
    t.K = attn_take<bf16>(p, AMMA_ROWS * (HSP + 8));
    t.V = attn_take<bf16>(p, AMMA_ROWS * (HSP + 8));
    t.Q = attn_take<bf16>(p, NQ * (HSP + 8));
    t.dO = attn_take<bf16>(p, NQ * (HSP + 8));
    t.lse = attn_take<float>(p, NQ);
    t.D = attn_take<float>(p, NQ);
    return t;
}

/* dK/dV: block = 64 key rows; query tiles of BQ rows, from the diagonal on */

/* "1": without it ptxas capped sm_80's <64, 64> at 168 registers and spilled
 * (scripts/cuda_resources.sh); it now takes about 220, still 2 blocks per SM. */
template <int HSP, int BQ>
__global__ void __launch_bounds__(AMMA_THREADS, 1)
amma_dkdv_kernel(bf16 *dqkv, const bf16 *dout, const bf16 *qkv, const float *lse, const float *D,
                 int T_, int C, int NH, float sl2, float scale, int vec)
{
    constexpr int LDR = HSP + 8;
    DYN_SMEM(smem);
    const AmmaBwdTiles sm = amma_bwd_tiles<HSP, BQ>(smem);
    bf16 *Ks = sm.K, *Vs = sm.V, *Qs = sm.Q, *dOs = sm.dO;
    float *lse_s = sm.lse, *D_s = sm.D;

    const int h = blockIdx.y, b = blockIdx.z;
    const int hs = C / NH, C3 = 3 * C;
    const int w = threadIdx.x / 32, g = threadIdx.x % 32 / 4, t4 = threadIdx.x % 4;
    const int k0 = blockIdx.x * AMMA_ROWS; /* low key tiles see the most queries: first */
    const int kr0 = k0 + 16 * w + g, kr1 = kr0 + 8; /* this lane's two key rows */
    const size_t lrow = ((size_t)b * NH + h) * T_;

    amma_stage<HSP, AMMA_ROWS>(Ks, qkv, C3, C + h * hs, b, k0, T_, hs, vec);
    amma_stage<HSP, AMMA_ROWS>(Vs, qkv, C3, 2 * C + h * hs, b, k0, T_, hs, vec);
    float dk[HSP / 8][4], dv[HSP / 8][4];
#pragma unroll
    for (int j = 0; j < HSP / 8; j++)
#pragma unroll
        for (int i = 0; i < 4; i++) dk[j][i] = dv[j][i] = 0.0f;

    for (int q0 = k0 / BQ * BQ; q0 < T_; q0 += BQ) {
        __syncthreads(); /* every warp done with the previous Q, dO (K, V staged) */
        amma_stage<HSP, BQ>(Qs, qkv, C3, h * hs, b, q0, T_, hs, vec);
        amma_stage<HSP, BQ>(dOs, dout, C, h * hs, b, q0, T_, hs, vec);
        amma_stage_stats<BQ>(lse_s, D_s, lse + lrow, D + lrow, q0, T_);
        __syncthreads();
        if (q0 + BQ - 1 < k0 + 16 * w) continue; /* every query before this warp's keys */

        float sT[BQ / 8][4], dpT[BQ / 8][4];
        mma_strip<BQ, HSP>(sT, Ks, LDR, 16 * w, Qs, LDR);   /* S^T = K_w Q^T */
        mma_strip<BQ, HSP>(dpT, Vs, LDR, 16 * w, dOs, LDR); /* dP^T = V_w dO^T */
        /* P^T and dS^T in place; a key row past T is never <= a query < T */
        const bool edge = q0 < k0 + AMMA_ROWS || q0 + BQ > T_;
#pragma unroll
        for (int j = 0; j < BQ / 8; j++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int c = 8 * j + 2 * t4 + (i & 1), qc = q0 + c, kr = i < 2 ? kr0 : kr1;
                const bool valid = !edge || (kr <= qc && qc < T_);
                const float pr = valid ? exp2f(sT[j][i] * sl2 - lse_s[c]) : 0.0f;
                sT[j][i] = pr;
                dpT[j][i] = pr * (dpT[j][i] - D_s[c]);
            }
        /* dV_w += P^T dO, dK_w += dS^T Q: A operands from the registers */
        mma_strip_acc<HSP, BQ>(dv, sT, dOs, LDR);
        mma_strip_acc<HSP, BQ>(dk, dpT, Qs, LDR);
    }

    bf16 *rows = dqkv + (size_t)b * T_ * C3 + h * hs; /* row t of the sequence: + t C3 */
    mma_strip_store<HSP>(rows + C, C3, kr0, T_, hs, dk, scale, scale);
    mma_strip_store<HSP>(rows + 2 * C, C3, kr0, T_, hs, dv, 1.0f, 1.0f);
}

/* dQ: block = 64 query rows; key tiles of 64 rows up to the diagonal */

template <int HSP>
__global__ void __launch_bounds__(AMMA_THREADS)
amma_dq_kernel(bf16 *dqkv, const bf16 *dout, const bf16 *qkv, const float *lse, const float *D,
               int T_, int C, int NH, float sl2, float scale, int vec)
{
    constexpr int LDR = HSP + 8, BK = AMMA_ROWS;
    DYN_SMEM(smem);
    const AmmaBwdTiles sm = amma_bwd_tiles<HSP, AMMA_ROWS>(smem);
    bf16 *Ks = sm.K, *Vs = sm.V, *Qs = sm.Q, *dOs = sm.dO;
    float *lse_s = sm.lse, *D_s = sm.D;

    const int nT = (T_ + AMMA_ROWS - 1) / AMMA_ROWS;
    const int qt = nT - 1 - (int)blockIdx.x; /* the longest rows first */
    const int h = blockIdx.y, b = blockIdx.z;
    const int hs = C / NH, C3 = 3 * C;
    const int w = threadIdx.x / 32, g = threadIdx.x % 32 / 4, t4 = threadIdx.x % 4;
    const int q0 = qt * AMMA_ROWS;
    const int r0 = q0 + 16 * w + g, r1 = r0 + 8;
    const size_t lrow = ((size_t)b * NH + h) * T_;

    amma_stage<HSP, AMMA_ROWS>(Qs, qkv, C3, h * hs, b, q0, T_, hs, vec);
    amma_stage<HSP, AMMA_ROWS>(dOs, dout, C, h * hs, b, q0, T_, hs, vec);
    amma_stage_stats<AMMA_ROWS>(lse_s, D_s, lse + lrow, D + lrow, q0, T_);
    float dq[HSP / 8][4];
#pragma unroll
    for (int j = 0; j < HSP / 8; j++) dq[j][0] = dq[j][1] = dq[j][2] = dq[j][3] = 0.0f;

    for (int k0 = 0; k0 <= q0 + AMMA_ROWS - 1 && k0 < T_; k0 += BK) {
        __syncthreads(); /* every warp done with the previous K, V (Q, dO, lse, D staged) */
        amma_stage<HSP, BK>(Ks, qkv, C3, C + h * hs, b, k0, T_, hs, vec);
        amma_stage<HSP, BK>(Vs, qkv, C3, 2 * C + h * hs, b, k0, T_, hs, vec);
        __syncthreads();
        if (k0 > q0 + 16 * w + 15) continue; /* every key after this warp's rows */

        const float l2_0 = lse_s[16 * w + g], l2_1 = lse_s[16 * w + g + 8];
        const float D0 = D_s[16 * w + g], D1 = D_s[16 * w + g + 8];
        float s[BK / 8][4], dp[BK / 8][4];
        mma_strip<BK, HSP>(s, Qs, LDR, 16 * w, Ks, LDR);   /* S = Q_w K^T */
        mma_strip<BK, HSP>(dp, dOs, LDR, 16 * w, Vs, LDR); /* dP = dO_w V^T */
        const bool edge = k0 + BK > q0 || k0 + BK > T_;
#pragma unroll
        for (int j = 0; j < BK / 8; j++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int kc = k0 + 8 * j + 2 * t4 + (i & 1), row = i < 2 ? r0 : r1;
                const bool valid = !edge || (kc <= row && kc < T_);
                const float pr = valid ? exp2f(s[j][i] * sl2 - (i < 2 ? l2_0 : l2_1)) : 0.0f;
                s[j][i] = pr * (dp[j][i] - (i < 2 ? D0 : D1)); /* dS */
            }
        mma_strip_acc<HSP, BK>(dq, s, Ks, LDR); /* dQ_w += dS K */
    }

    mma_strip_store<HSP>(dqkv + (size_t)b * T_ * C3 + h * hs, C3, r0, T_, hs, dq, scale, scale);
}

/* ---- launches ---- */

/* 16-byte loads are safe when every row start of every head is 16-byte
 * aligned: hs and C multiples of 8 elements and an aligned base. */
static int amma_vec_ok(const void *base, int C, int hs)
{
    return hs % 8 == 0 && C % 8 == 0 && (uintptr_t)base % 16 == 0;
}

static void amma_check_smem(CudaState *st, size_t bytes, const char *op, int hsp)
{
    if (bytes > st->smem_optin)
        CUDA_FATAL("%s: head size padded to %d needs %zu bytes of shared memory; the device "
                   "allows %zu",
                   op, hsp, bytes, st->smem_optin);
}

template <int HSP>
static void amma_fwd_hsp(CudaState *st, bf16 *out, float *lse, const bf16 *qkv, int B, int T_,
                         int C, int NH)
{
    const size_t smem = amma_fwd_smem<HSP>();
    amma_check_smem(st, smem, "attention_forward", HSP);
    auto kern = amma_fwd_kernel<HSP>;
    attn_set_smem(kern, smem);
    const float sl2 = AMMA_LOG2E / sqrtf((float)(C / NH));
    /* the batch goes in gridDim.z: slices of at most max_grid_z sequences,
     * pointers moved to the slice's first sequence */
    for (int b0 = 0; b0 < B; b0 += st->max_grid_z) {
        const int nb = B - b0 < st->max_grid_z ? B - b0 : st->max_grid_z;
        const bf16 *q = qkv + (size_t)b0 * T_ * 3 * C;
        dim3 grid(ceil_div(T_, AMMA_ROWS), NH, nb);
        LAUNCH(kern, grid, AMMA_THREADS, smem, st->stream, out + (size_t)b0 * T_ * C,
               lse + (size_t)b0 * NH * T_, q, T_, C, NH, sl2, amma_vec_ok(q, C, C / NH));
    }
}

void attn_mma_forward(CudaState *st, bf16 *out, float *lse, const bf16 *qkv, int B, int T_, int C,
                      int NH)
{
    switch (attn_hsp(C / NH)) {
    case 16: amma_fwd_hsp<16>(st, out, lse, qkv, B, T_, C, NH); break;
    case 32: amma_fwd_hsp<32>(st, out, lse, qkv, B, T_, C, NH); break;
    case 64: amma_fwd_hsp<64>(st, out, lse, qkv, B, T_, C, NH); break;
    case 128: amma_fwd_hsp<128>(st, out, lse, qkv, B, T_, C, NH); break;
    default: CUDA_FATAL("attention_forward: head size %d > 128 is not supported", C / NH);
    }
}

template <int HSP>
static void amma_bwd_hsp(CudaState *st, bf16 *dqkv, const bf16 *dout, const bf16 *qkv,
                         const bf16 *out, const float *lse, int B, int T_, int C, int NH)
{
    /* dK/dV's registers: two 16 x HSP accumulators plus two 16 x BQ score
     * tiles; at HSP = 128 a 32-row query tile keeps that under 255 */
    constexpr int BQ = HSP == 128 ? 32 : 64;
    const size_t sm_kv = amma_bwd_smem<HSP, BQ>(), sm_q = amma_bwd_smem<HSP, AMMA_ROWS>();
    amma_check_smem(st, sm_kv, "attention_backward", HSP);
    amma_check_smem(st, sm_q, "attention_backward", HSP);
    auto kkv = amma_dkdv_kernel<HSP, BQ>;
    auto kq = amma_dq_kernel<HSP>;
    attn_set_smem(kkv, sm_kv);
    attn_set_smem(kq, sm_q);
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs), sl2 = AMMA_LOG2E * scale;
    /* D for a slice of sequences lives in the scratch: slices of at most
     * that many sequences (and of at most max_grid_z, the batch being z) */
    const size_t per_seq = (size_t)NH * T_;
    const size_t fit = CUDA_SCRATCH_BYTES / sizeof(float) / per_seq;
    if (fit < 1)
        CUDA_FATAL("attention_backward: NH * T = %zu row sums do not fit the %zu-byte scratch",
                   per_seq, (size_t)CUDA_SCRATCH_BYTES);
    const int slice = (int)(fit < (size_t)st->max_grid_z ? fit : (size_t)st->max_grid_z);
    float *D = (float *)st->scratch;
    for (int b0 = 0; b0 < B; b0 += slice) {
        const int nb = B - b0 < slice ? B - b0 : slice;
        const size_t o1 = (size_t)b0 * T_ * C, o3 = 3 * o1, ol = (size_t)b0 * per_seq;
        const size_t rows = (size_t)nb * per_seq;
        LAUNCH(amma_rows_D_kernel, elementwise_grid(rows * 32, 256), 256, 0, st->stream, D,
               dout + o1, out + o1, nb, T_, C, NH);
        const int vec = amma_vec_ok(qkv + o3, C, hs) && amma_vec_ok(dout + o1, C, hs);
        dim3 grid(ceil_div(T_, AMMA_ROWS), NH, nb);
        LAUNCH(kkv, grid, AMMA_THREADS, sm_kv, st->stream, dqkv + o3, dout + o1, qkv + o3,
               lse + ol, D, T_, C, NH, sl2, scale, vec);
        LAUNCH(kq, grid, AMMA_THREADS, sm_q, st->stream, dqkv + o3, dout + o1, qkv + o3,
               lse + ol, D, T_, C, NH, sl2, scale, vec);
    }
}

void attn_mma_backward(CudaState *st, bf16 *dqkv, const bf16 *dout, const bf16 *qkv,
                       const bf16 *out, const float *lse, int B, int T_, int C, int NH)
{
    switch (attn_hsp(C / NH)) {
    case 16: amma_bwd_hsp<16>(st, dqkv, dout, qkv, out, lse, B, T_, C, NH); break;
    case 32: amma_bwd_hsp<32>(st, dqkv, dout, qkv, out, lse, B, T_, C, NH); break;
    case 64: amma_bwd_hsp<64>(st, dqkv, dout, qkv, out, lse, B, T_, C, NH); break;
    case 128: amma_bwd_hsp<128>(st, dqkv, dout, qkv, out, lse, B, T_, C, NH); break;
    default: CUDA_FATAL("attention_backward: head size %d > 128 is not supported", C / NH);
    }
}
