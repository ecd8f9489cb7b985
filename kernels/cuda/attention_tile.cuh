/* kernels/cuda/attention_tile.cuh — private to attention*.cu: the fp32
 * flash-attention kernels' tile geometry and building blocks, and the
 * launch set-up every attention op shares. The fp32 path is the one
 * compared with the cpu at 1e-5: per-warp products in plain fp32 FMAs
 * (warp_mm), accumulators in shared memory. bf16 runs take the tensor-core
 * kernels instead (plan in attention_mma.cuh).
 *
 * A block works on tiles of TB rows (64 or 32) of one (sequence, head);
 * warp w owns rows [16w, 16w+16) of every per-row buffer, so most steps
 * need only __syncwarp; __syncthreads guards the tiles all warps read (K/V
 * in the forward and dQ, Q/dO/lse/D in dK/dV). hs is zero-padded to HSP
 * (16, 32, 64 or 128) in shared memory, so any hs <= 128 works: padded
 * columns add 0 to every dot product and are never stored. Rows past T
 * are zero-filled and masked. */
#ifndef KERNELS_CUDA_ATTENTION_TILE_CUH
#define KERNELS_CUDA_ATTENTION_TILE_CUH

#include "cuda_common.cuh"

/* Row padding in elements: 16 bytes, which shifts consecutive rows across
 * banks. */
template <typename T> struct AttnPad {
    static constexpr int v = 16 / (int)sizeof(T);
};

template <typename T, int HSP, int TB> struct AttnGeom {
    static constexpr int LDT = HSP + AttnPad<T>::v; /* T tiles (Q, K, V, dO): TB x LDT */
    static constexpr int LDS = TB + 4;              /* fp32 scores: TB x LDS */
    static constexpr int LDP = TB + AttnPad<T>::v;  /* T probabilities: TB x LDP */
    static constexpr int LDO = HSP + 4;             /* fp32 accumulators: TB x LDO */
    static constexpr int WARPS = TB / 16;
    static constexpr int THREADS = WARPS * 32;
    static_assert(TB % 16 == 0 && HSP % 16 == 0, "tiles are made of 16x16 blocks");
};

/* The backward kernels' launch bounds: THREADS per block, at least one
 * resident block per SM. With the thread count alone ptxas gave the dQ
 * kernel at TB = 32 32 registers on sm_90, and it spilled
 * (dev/gpu_check/cuda_resources.sh); their 25 to 187 KiB tiles hold
 * residency to a few blocks per SM anyway. The forward keeps the plain
 * bound: it does not spill, and "1" would let ptxas give it 179 registers
 * (hs 64, TB 64), 2 resident blocks where its 70 KiB tiles allow 3. */
#define ATTN_BWD_LAUNCH_BOUNDS(T, HSP, TB) __launch_bounds__(AttnGeom<T, HSP, TB>::THREADS, 1)

/* Shared-memory regions are carved in order, each rounded up to 128 bytes
 * (keeps every region 128-byte aligned, which the 16-byte vector loads
 * of attention_mma.cu need). */
__host__ __device__ constexpr size_t attn_round(size_t bytes) { return (bytes + 127) / 128 * 128; }

template <typename E> __device__ __forceinline__ E *attn_take(unsigned char *&p, size_t elems)
{
    E *r = (E *)p;
    p += attn_round(elems * sizeof(E));
    return r;
}

/* A kernel's regions, carved in the order asked for: TB x LDT tiles of T
 * (Q, K, V, dO), TB x LDS fp32 scores, TB x LDP probabilities in T, TB x
 * LDO fp32 accumulators, and TB per-row floats (lse, D). */
template <typename T, int HSP, int TB> struct AttnCarve : AttnGeom<T, HSP, TB> {
    typedef AttnGeom<T, HSP, TB> G;
    unsigned char *p;
    __device__ explicit AttnCarve(unsigned char *smem) : p(smem) {}
    __device__ T *tile() { return attn_take<T>(p, TB * G::LDT); }
    __device__ float *scores() { return attn_take<float>(p, TB * G::LDS); }
    __device__ T *probs() { return attn_take<T>(p, TB * G::LDP); }
    __device__ float *acc() { return attn_take<float>(p, TB * G::LDO); }
    __device__ float *rows() { return attn_take<float>(p, TB); }
};

/* The block's place in the 3-D grid: tile = blockIdx.x (last_first: the
 * last tile first, the causal mask's longest), rows t0 = TB tile.., head
 * h = blockIdx.y (a query head, or a key/value head for dK/dV), sequence
 * b = blockIdx.z; warp w owns rows t0 + 16 w.., lane its lane. C3: the
 * qkv row's width, C + 2 KVH hs (ops.h: NH query heads, then KVH key and
 * KVH value heads; 3C when KVH = NH). */
struct AttnBlock {
    int tile, t0, h, b, hs, C3, w, lane;
};
template <int TB>
__device__ __forceinline__ AttnBlock attn_block(int T_, int C, int NH, int KVH, bool last_first)
{
    AttnBlock k;
    k.tile = last_first ? (T_ + TB - 1) / TB - 1 - (int)blockIdx.x : (int)blockIdx.x;
    k.t0 = k.tile * TB, k.h = blockIdx.y, k.b = blockIdx.z;
    k.hs = C / NH, k.C3 = C + 2 * KVH * k.hs;
    k.w = threadIdx.x / 32, k.lane = threadIdx.x % 32;
    return k;
}

/* dst(TB x LDT) = rows t0..t0+TB-1 of sequence b, columns col0..col0+hs-1 of
 * src (row stride ld elements, rows b*T + t); zero where t >= T or d >= hs.
 * All threads of the block take part; the caller syncs. */
template <typename T, int HSP, int TB>
__device__ void attn_load_tile(T *dst, const T *src, int ld, int col0, int b, int t0, int T_,
                               int hs)
{
    constexpr int LDT = AttnGeom<T, HSP, TB>::LDT;
    for (int e = threadIdx.x; e < TB * HSP; e += blockDim.x) {
        int r = e / HSP, d = e % HSP;
        int t = t0 + r;
        T v = from_f<T>(0.0f);
        if (t < T_ && d < hs) v = src[((size_t)b * T_ + t) * ld + col0 + d];
        dst[r * LDT + d] = v;
    }
}

/* One warp: Cw(16 x N, fp32, ldc) = (acc ? Cw : 0) + Aw(16 x K, ld lda) . B
 *   BT = false: B is K x N, row-major (ldb);
 *   BT = true:  B is given as its transpose, N x K row-major (ldb).
 * Lane l computes the elements l, l+32, ... of the 16 x N tile in fp32.
 * The caller syncs the warp before (inputs written by other lanes) and after
 * (Cw read by other lanes). */
template <typename T, int N, int K, bool BT>
__device__ __forceinline__ void warp_mm(float *Cw, int ldc, const T *Aw, int lda, const T *B,
                                        int ldb, bool acc)
{
    int lane = threadIdx.x % 32;
    for (int e = lane; e < 16 * N; e += 32) {
        int r = e / N, n = e % N;
        float s = acc ? Cw[r * ldc + n] : 0.0f;
        const T *a = Aw + r * lda;
        for (int k = 0; k < K; k++)
            s += to_f(a[k]) * to_f(BT ? B[(size_t)n * ldb + k] : B[(size_t)k * ldb + n]);
        Cw[r * ldc + n] = s;
    }
}

/* One warp: D[r] = sum_d dO[r][d] * out[q0 + r][d] for the warp's 16 rows
 * r = 16w.. of a query tile (0 past T). dOs is the tile in shared memory,
 * out the forward output in global memory. The dK/dV and dQ kernels both
 * call this with the same arguments, so they see the same bits. */
template <typename T, int HSP, int TB>
__device__ void attn_rows_D(float *Ds, const T *dOs, const T *out, int b, int h, int q0, int T_,
                            int C, int hs)
{
    constexpr int LDT = AttnGeom<T, HSP, TB>::LDT;
    int w = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int rr = 0; rr < 16; rr++) {
        int r = 16 * w + rr, qi = q0 + r;
        float s = 0.0f;
        if (qi < T_) {
            const T *o = out + ((size_t)b * T_ + qi) * C + h * hs;
            for (int d = lane; d < hs; d += 32) s += to_f(dOs[r * LDT + d]) * to_f(o[d]);
        }
        s = warp_sum(s);
        if (lane == 0) Ds[r] = s;
    }
}

/* Head sizes are padded to the next of 16, 32, 64, 128; 0 = unsupported. */
static inline int attn_hsp(int hs)
{
    return hs <= 16 ? 16 : hs <= 32 ? 32 : hs <= 64 ? 64 : hs <= 128 ? 128 : 0;
}

/* Refuse tiles that do not fit the device. */
static inline void attn_check_smem(const CudaState *st, size_t bytes, const char *op, int hsp)
{
    if (bytes > st->smem_optin)
        CUDA_FATAL("%s: head size padded to %d needs %zu bytes of shared memory; the device "
                   "allows %zu",
                   op, hsp, bytes, st->smem_optin);
}

/* Opt a kernel into more than 48 KiB of dynamic shared memory. */
template <typename K> static void attn_set_smem(K kern, size_t bytes)
{
    CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)bytes));
}

/* ---- host: the launch set-up the fp32 forward and backward share ---- */

/* The entry points' checks: whole heads, KVH key/value heads dividing NH
 * (groups of NH / KVH query heads), and NH within gridDim.y (heads go
 * there). op names the op in the message. */
static inline void attn_check_heads(const CudaState *st, const char *op, int C, int NH, int KVH)
{
    if (C % NH != 0) CUDA_FATAL("%s: C = %d not divisible by NH = %d", op, C, NH);
    if (KVH <= 0 || NH % KVH != 0)
        CUDA_FATAL("%s: KVH = %d key/value heads do not divide NH = %d", op, KVH, NH);
    if (NH > st->max_grid_y)
        CUDA_FATAL("%s: NH = %d heads > %d (the grid's y limit)", op, NH, st->max_grid_y);
}

/* run(std::integral_constant<int, HSP>()) for hs padded to HSP (attn_hsp);
 * fatal past 128. */
template <class F> static void attn_hsp_dispatch(const char *op, int hs, F run)
{
    switch (attn_hsp(hs)) {
    case 16: run(std::integral_constant<int, 16>()); break;
    case 32: run(std::integral_constant<int, 32>()); break;
    case 64: run(std::integral_constant<int, 64>()); break;
    case 128: run(std::integral_constant<int, 128>()); break;
    default: CUDA_FATAL("%s: head size %d > 128 is not supported", op, hs);
    }
}

/* The fp32 kernels by head size (attn_hsp_dispatch), then the larger tile
 * whose shared memory fits the device: run(hsp, tb, bytes) with TB = 64
 * when its smem(hsp, tb) bytes fit, else TB = 32; fatal when neither
 * does. hsp and tb are std::integral_constants. */
template <class Smem, class F>
static void attn_tile_dispatch(const CudaState *st, const char *op, int hs, Smem smem, F run)
{
    attn_hsp_dispatch(op, hs, [&](auto hsp) {
        const std::integral_constant<int, 64> t64{};
        const std::integral_constant<int, 32> t32{};
        if (smem(hsp, t64) <= st->smem_optin) return run(hsp, t64, smem(hsp, t64));
        attn_check_smem(st, smem(hsp, t32), op, decltype(hsp)::value); /* neither fits: fatal */
        run(hsp, t32, smem(hsp, t32));
    });
}

/* launch(b0, nb) for slices of the B sequences, nb <= st->max_grid_z each
 * (sequences go in gridDim.z, at most 65535, and --batch goes to 1 << 20:
 * B = 100000 at T = 8 is a legal run); the launch moves its tensors'
 * pointers to sequence b0, as the kernels index from sequence 0. */
template <class F> static void attn_batch_slices(const CudaState *st, int B, F launch)
{
    for (int b0 = 0; b0 < B; b0 += st->max_grid_z)
        launch(b0, B - b0 < st->max_grid_z ? B - b0 : st->max_grid_z);
}

#endif
