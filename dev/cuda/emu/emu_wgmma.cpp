/* dev/cuda/emu/emu_wgmma.cpp — the emulator's warpgroup MMA (sm_90a
 * wgmma, dev/cuda/wgmma.cuh); see emu.h for what it checks.
 *
 * wgmma.mma_async.m64nNk16.f32.bf16.bf16 is issued by the 4 warps of a
 * warpgroup together, but warp w of the group owns rows 16w..16w+15 of D
 * and of A (B is shared), so a warp's results depend only on its own A
 * rows and on B: each warp forms them at a warp barrier, as mma.sync is
 * emulated, and the warps of the group need not meet. That they all issue
 * the same number of wgmmas is checked at every block barrier and at the
 * block's end.
 *
 * Asynchrony, the latest moment the PTX ISA allows: the result is computed
 * at issue (from the accumulators' values then and shared memory then) but
 * written to the accumulator registers only at the wait_group that retires
 * its group; until then they hold a poison NaN, so a read before the wait
 * gives NaN and a write before it is found at the wait (abort). The shared
 * memory an in-flight wgmma reads and the A registers it takes must not
 * change before its wait: both are remembered at issue and compared at the
 * wait (abort). Chained wgmmas on one accumulator (the usual k loop, no
 * wait in between) take the pending value as their input, as the hardware
 * orders same-shape accumulator accesses by itself. A wgmma issued with no
 * wgmma.fence since the thread's start or its last wait_group aborts (a
 * stricter rule than the ISA's, which asks for the fence only where
 * registers were touched in between; after a wait they always are here). */
#include <stdio.h>
#include <stdlib.h>

#include <deque>
#include <vector>

#include "emu.h"

#define POISON_BITS 0x7fc0bad0u /* a quiet NaN with a payload: "in flight" */

struct WgRead { /* one bf16 of shared memory as the wgmma read it */
    const unsigned char *p;
    uint16_t v;
};
struct WgOp { /* one wgmma of one thread, issued and not retired */
    float *d;
    int n;                 /* accumulator registers: N / 2 */
    std::vector<float> res;
    const uint32_t *a;     /* A registers (NULL: A from shared memory) */
    uint32_t aval[4];
    std::vector<WgRead> reads;
    bool superseded;       /* a later wgmma chained on d: its result lands instead */
};
struct WgThread {
    bool fenced;
    unsigned long issued;
    uint32_t a[4]; /* deposited for the warp's gather */
    std::vector<WgOp> open;
    std::deque<std::vector<WgOp>> groups;
};

static std::vector<WgThread> wg; /* per thread of the running block */

static WgThread &me(void) { return wg[(size_t)emu_warp() * 32 + (size_t)emu_lane()]; }

void emu_wgmma_block_start(size_t nthreads)
{
    wg.assign(nthreads, WgThread());
    for (WgThread &t : wg) t.fenced = false, t.issued = 0;
}

void emu_wgmma_thread_end(void)
{
    WgThread &t = me();
    if (!t.open.empty() || !t.groups.empty())
        emu_fail("a thread ended with wgmma.mma_async operations it never waited for");
}

void emu_wgmma_block_barrier(void)
{
    for (size_t g = 0; g + 128 <= wg.size(); g += 128)
        for (size_t i = g + 1; i < g + 128; i++)
            if (wg[i].issued != wg[g].issued)
                emu_fail("wgmma.mma_async not issued by every thread of the warpgroup alike "
                         "(counted at a block barrier)");
}

uint32_t emu_smem_addr(const void *p)
{
    const unsigned char *b = emu_dyn_smem(), *q = (const unsigned char *)p;
    if (q < b || q >= b + emu_dyn_smem_size())
        emu_fail("shared-memory address of a pointer outside the block's dynamic shared memory");
    return (uint32_t)(q - b);
}

/* Byte address (in the block's shared window) of element (mn, k), k < 16,
 * of the matrix a descriptor describes; mn_major: M/N-major (imm-trans 1)
 * else K-major. The PTX ISA's canonical layouts, in bytes for 2-byte
 * elements (T = 8 elements = 16 bytes), W the swizzle width (32, 64, 128):
 *   K-major,  none:    (mn%8)16 + (mn/8)SBO + (k%8)2 + (k/8)LBO
 *   K-major,  swizzle: (mn%8)W + (mn/8)SBO + 2k        (LBO unused)
 *   MN-major, none:    (mn%8)2 + (mn/8)SBO + (k%8)16 + (k/8)LBO
 *   MN-major, swizzle: (mn%8)2 + (mn/8 % (W/16))16 + (mn/(8 W/16))LBO
 *                      + (k%8)W + (k/8)SBO
 * then Swizzle<B,4,3> (B = log2(W/16)): address bits 4..4+B-1 ^= bits
 * 7..7+B-1. The patterns start at absolute multiples of 8 W bytes; a
 * non-zero matrix base offset (bits 49..51) is not emulated (abort). */
static uint32_t wg_addr(uint64_t desc, bool mn_major, int mn, int k)
{
    const uint32_t start = (uint32_t)(desc & 0x3fff) << 4;
    const uint32_t lbo = (uint32_t)(desc >> 16 & 0x3fff) << 4;
    const uint32_t sbo = (uint32_t)(desc >> 32 & 0x3fff) << 4;
    const unsigned base = (unsigned)(desc >> 49 & 7), mode = (unsigned)(desc >> 62 & 3);
    if (base) emu_fail("wgmma descriptor with a matrix base offset (not emulated)");
    const int bits = mode == 1 ? 3 : mode == 2 ? 2 : mode == 3 ? 1 : 0;
    const uint32_t W = 16u << bits;
    uint32_t off;
    if (!mn_major) {
        off = bits ? (mn % 8) * W + (mn / 8) * sbo + 2 * k
                   : (mn % 8) * 16 + (mn / 8) * sbo + (k % 8) * 2 + (k / 8) * lbo;
    } else if (!bits) {
        off = (mn % 8) * 2 + (mn / 8) * sbo + (k % 8) * 16 + (k / 8) * lbo;
    } else {
        const int n = (int)(W / 16);
        off = (mn % 8) * 2 + (mn / 8 % n) * 16 + (mn / (8 * n)) * lbo + (k % 8) * W + (k / 8) * sbo;
    }
    uint32_t addr = start + off;
    if (bits) addr ^= (addr >> 7 & ((1u << bits) - 1)) << 4;
    return addr;
}

static float wg_bf16(const unsigned char *p)
{
    __nv_bfloat16 h;
    memcpy(&h.bits, p, 2);
    return __bfloat162float(h);
}

void emu_wgmma_fence(void) { me().fenced = true; }

void emu_wgmma_bf16(float *d, int N, const uint32_t *a, uint64_t adesc, int trans_a,
                    uint64_t bdesc, int trans_b, int scale_d)
{
    if (N < 8 || N > 256 || N % 8) emu_fail("wgmma: N outside 8, 16, ..., 256");
    const size_t w0 = (size_t)emu_warp() / 4 * 4 * 32;
    if (w0 + 128 > wg.size()) emu_fail("wgmma.mma_async in a warpgroup of fewer than 128 threads");
    WgThread &t = me();
    if (!t.fenced)
        emu_fail("wgmma.mma_async without a wgmma.fence since the thread's start or its last "
                 "wgmma.wait_group");
    if (a) memcpy(t.a, a, sizeof t.a);
    emu_syncwarp();
    const size_t wbase = (size_t)emu_warp() * 32;
    const int lane = emu_lane(), g = lane / 4, q = lane % 4, wr = emu_warp() % 4;
    const unsigned char *smem = emu_dyn_smem();
    const size_t size = emu_dyn_smem_size();
    WgOp op;
    op.d = d, op.n = N / 2, op.a = a, op.superseded = false;
    if (a) memcpy(op.aval, a, sizeof op.aval);
    op.res.assign((size_t)N / 2, 0.0f);
    auto rd = [&](uint32_t addr) {
        if ((size_t)addr + 2 > size) emu_fail("wgmma operand outside the dynamic shared memory");
        const unsigned char *p = smem + addr;
        if (emu_smem_unfenced(p))
            emu_fail("wgmma.mma_async reads shared memory a cp.async wrote (generic proxy) "
                     "with no fence.proxy.async by the writing thread before the barrier");
        WgRead r;
        r.p = p;
        memcpy(&r.v, p, 2);
        op.reads.push_back(r);
        return wg_bf16(p);
    };
    /* A[row][k] of this warp's rows (row = 0..15 within them) */
    float A[16][16];
    for (int r = 0; r < 16; r++) {
        if (r % 8 != g) continue; /* this lane only needs rows g and g + 8 */
        for (int k = 0; k < 16; k++) {
            if (a) { /* the mma.sync A layout, on the warp's 16 rows */
                const uint32_t reg = wg[wbase + (size_t)(r % 8) * 4 + (size_t)(k % 8) / 2]
                                         .a[(r >= 8) + 2 * (k >= 8)];
                __nv_bfloat16 h;
                h.bits = (uint16_t)(k % 2 ? reg >> 16 : reg & 0xffffu);
                A[r][k] = __bfloat162float(h);
            } else {
                A[r][k] = rd(wg_addr(adesc, trans_a != 0, 16 * wr + r, k));
            }
        }
    }
    for (int i = 0; i < N / 2; i++) {
        const int r = g + 8 * (i >> 1 & 1), n = 8 * (i >> 2) + 2 * q + (i & 1);
        float s = 0.0f;
        for (int k = 0; k < 16; k++) s += A[r][k] * rd(wg_addr(bdesc, trans_b != 0, n, k));
        op.res[(size_t)i] = s;
    }
    emu_syncwarp(); /* every lane has read the deposits before any reuses them */
    if (scale_d) { /* D = A B + D: D from the latest in-flight wgmma on d, else d */
        const std::vector<float> *prev = NULL;
        WgOp *prev_op = NULL;
        for (auto &grp : t.groups)
            for (WgOp &o : grp)
                if (o.d == d) prev_op = &o;
        for (WgOp &o : t.open)
            if (o.d == d) prev_op = &o;
        if (prev_op) {
            if (prev_op->n != op.n) emu_fail("wgmma chained on an accumulator of another shape");
            prev = &prev_op->res;
        }
        for (int i = 0; i < N / 2; i++) op.res[(size_t)i] += prev ? (*prev)[(size_t)i] : d[i];
    }
    for (auto &grp : t.groups)
        for (WgOp &o : grp)
            if (o.d == d) o.superseded = true;
    for (WgOp &o : t.open)
        if (o.d == d) o.superseded = true;
    const uint32_t poison = POISON_BITS;
    for (int i = 0; i < N / 2; i++) memcpy(&d[i], &poison, 4);
    t.open.push_back(std::move(op));
    t.issued++;
}

void emu_wgmma_commit(void)
{
    WgThread &t = me();
    t.groups.push_back(std::move(t.open));
    t.open.clear();
}

void emu_wgmma_wait(int pending)
{
    if (pending < 0 || pending > 7) emu_fail("wgmma.wait_group with a count outside 0..7");
    WgThread &t = me();
    while (t.groups.size() > (size_t)pending) {
        for (WgOp &o : t.groups.front()) {
            for (const WgRead &r : o.reads)
                if (memcmp(r.p, &r.v, 2) != 0)
                    emu_fail("shared memory an in-flight wgmma reads changed before its "
                             "wgmma.wait_group");
            if (o.a && memcmp(o.a, o.aval, sizeof o.aval) != 0)
                emu_fail("A registers of an in-flight wgmma changed before its wgmma.wait_group");
            for (int i = 0; i < o.n; i++) {
                uint32_t b;
                memcpy(&b, &o.d[i], 4);
                if (b != POISON_BITS)
                    emu_fail("an accumulator of an in-flight wgmma was written before its "
                             "wgmma.wait_group");
            }
            if (!o.superseded) memcpy(o.d, o.res.data(), (size_t)o.n * 4);
        }
        t.groups.pop_front();
    }
    t.fenced = false;
}
