/* dev/cuda/emu/emu_wgmma_check.cpp — the emulated wgmma (emu_wgmma.cpp)
 * on its own, `make cuda-emu-check` runs it before the kernel checks.
 *
 * Products: one warpgroup computes D(64 x N) = A(64 x 16) . B(16 x N) (+ C)
 * for N = 8, 64, 256, B in each of the 8 shared-memory layouts (K- or
 * N-major; no swizzle, 32-, 64-, 128-byte swizzle) and A from registers
 * (mma.sync's layout) or from shared memory in each layout. The tiles are
 * stored by evaluating the PTX ISA's canonical layouts as written in its
 * table (CuTe shape:stride pairs in elements, then Swizzle<B,4,3> on the
 * byte address) — a transcription independent of the emulator's own
 * closed-form decoding — and D is compared with a plain fp32 product
 * summed in the same order (max |diff| <= 1e-6 max |D|).
 * Rules: in a forked child each of these must abort: a wgmma without a
 * fence, an accumulator written before the wait, shared memory or an A
 * register changed before it, a thread ending with a wgmma in flight, a
 * warpgroup whose warps issue different counts, a B tile landed by
 * cp.async and read with no fence.proxy.async by its writers; and an
 * accumulator read
 * before the wait is NaN, chained products and scale-d 0 give the right
 * sums, wait_group 1 lands the older group only.
 * Exit 0 when all pass, 1 otherwise (one line per failure). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <random>
#include <vector>

#include "emu.h"

static int fails = 0;

/* Canonical layout (PTX ISA, "Canonical Layouts", T = 8 bf16 = 16 bytes):
 * offset in elements of (mn, k) for K-major (kmaj) or MN-major, swizzle
 * width W bytes (16: none), with the LBO and SBO byte offsets. */
static size_t canon(bool kmaj, int W, uint32_t lbo, uint32_t sbo, int mn, int k)
{
    const int T = 8, n = W / 16;
    const size_t L = lbo / 2, S = sbo / 2; /* in elements */
    size_t off;
    if (kmaj) { /* ((8,m),(T,2k)) : ((nT,SBO),(1, none ? LBO : T)) */
        off = (size_t)(mn % 8) * (W == 16 ? T : n * T) + (size_t)(mn / 8) * S + k % T +
              (size_t)(k / T) * (W == 16 ? L : T);
    } else if (W == 16) { /* ((T,1,m),(8,k)) : ((1,T,SBO),(1T,LBO)) */
        off = (size_t)(mn % T) + (size_t)(mn / T) * S + (size_t)(k % 8) * T + (size_t)(k / 8) * L;
    } else { /* ((T,n,m),(8,k)) : ((1,T,LBO),(nT,SBO)) */
        off = (size_t)(mn % T) + (size_t)(mn / T % n) * T + (size_t)(mn / (T * n)) * L +
              (size_t)(k % 8) * n * T + (size_t)(k / 8) * S;
    }
    return off;
}
static uint32_t swz(uint32_t byte, int W) /* Swizzle<log2(W/16), 4, 3> */
{
    const int b = W == 128 ? 3 : W == 64 ? 2 : W == 32 ? 1 : 0;
    return byte ^ ((byte >> 7) & ((1u << b) - 1)) << 4;
}
static int mode_of(int W) { return W == 128 ? 1 : W == 64 ? 2 : W == 32 ? 3 : 0; }

struct Tile { /* a 16-wide matrix (rows mn < R, k < 16) placed in shared memory */
    bool kmaj;
    int W;
    uint32_t lbo, sbo, at; /* at: byte offset in the block's shared memory */
};
/* offsets that keep every element distinct for R rows */
static Tile tile_for(bool kmaj, int W, int R, uint32_t at)
{
    Tile t = {kmaj, W, 0, 0, at};
    if (kmaj) t.lbo = W == 16 ? 128 : 16, t.sbo = W == 16 ? 256 : 8 * (uint32_t)W;
    else if (W == 16) t.sbo = 128, t.lbo = (uint32_t)R / 8 * 128;
    else t.sbo = 8 * (uint32_t)W, t.lbo = 2 * 8 * (uint32_t)W;
    return t;
}
static uint64_t desc_of(const Tile &t)
{
    return (uint64_t)(t.at >> 4) | (uint64_t)(t.lbo >> 4) << 16 | (uint64_t)(t.sbo >> 4) << 32 |
           (uint64_t)mode_of(t.W) << 62;
}
static void put(unsigned char *smem, const Tile &t, int mn, int k, uint16_t v)
{
    const uint32_t byte = swz(t.at + 2 * (uint32_t)canon(t.kmaj, t.W, t.lbo, t.sbo, mn, k), t.W);
    memcpy(smem + byte, &v, 2);
}
static uint16_t bits_of(float f) { return __float2bfloat16(f).bits; }
static float val_of(uint16_t b)
{
    __nv_bfloat16 h;
    h.bits = b;
    return __bfloat162float(h);
}

#define SMEM (40 * 1024)
static const int dummy_kernel = 0; /* the launch key */

/* One product on the emulator; D[64][N] out; a_tile NULL: A from registers. */
static void run_product(int N, const std::vector<uint16_t> &A, const Tile *a_tile,
                        const std::vector<uint16_t> &B, const Tile &b_tile,
                        std::vector<float> &D)
{
    D.assign((size_t)64 * N, 0.0f);
    emu_launch(&dummy_kernel, dim3(1), dim3(128), SMEM, [&]() {
        unsigned char *smem = emu_dyn_smem();
        if (threadIdx.x == 0) {
            for (int r = 0; r < 64 && a_tile; r++)
                for (int k = 0; k < 16; k++) put(smem, *a_tile, r, k, A[(size_t)r * 16 + k]);
            for (int n = 0; n < N; n++)
                for (int k = 0; k < 16; k++) put(smem, b_tile, n, k, B[(size_t)k * N + n]);
        }
        __syncthreads();
        const int w = threadIdx.x / 32, l = threadIdx.x % 32, g = l / 4, t = l % 4;
        uint32_t a[4];
        for (int i = 0; i < 4; i++) { /* mma.sync's A layout on rows 16w.. */
            const int r = 16 * w + g + 8 * (i & 1), k = 2 * t + 8 * (i >> 1);
            a[i] = A[(size_t)r * 16 + k] | (uint32_t)A[(size_t)r * 16 + k + 1] << 16;
        }
        std::vector<float> d((size_t)N / 2, 0.0f);
        emu_wgmma_fence();
        emu_wgmma_bf16(d.data(), N, a_tile ? NULL : a, a_tile ? desc_of(*a_tile) : 0,
                       a_tile && !a_tile->kmaj, desc_of(b_tile), !b_tile.kmaj, 0);
        emu_wgmma_commit();
        emu_wgmma_wait(0);
        for (int i = 0; i < N / 2; i++) {
            const int r = 16 * w + g + 8 * (i >> 1 & 1), n = 8 * (i >> 2) + 2 * t + (i & 1);
            D[(size_t)r * N + n] = d[(size_t)i];
        }
    });
}

static void check_products(void)
{
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const int Ws[4] = {16, 32, 64, 128};
    const int Ns[3] = {8, 64, 256};
    int n_ok = 0;
    for (int ni = 0; ni < 3; ni++)
        for (int bk = 0; bk < 2; bk++)
            for (int bw = 0; bw < 4; bw++)
                for (int am = -1; am < 8; am++) { /* -1: A in registers */
                    const int N = Ns[ni];
                    if (am >= 0 && N != 64) continue;
                    std::vector<uint16_t> A(64 * 16), B((size_t)16 * N);
                    for (auto &x : A) x = bits_of(u(rng));
                    for (auto &x : B) x = bits_of(u(rng));
                    Tile at = tile_for(am < 4, Ws[am < 0 ? 0 : am % 4], 64, 0);
                    Tile bt = tile_for(bk == 0, Ws[bw], N, 8192);
                    std::vector<float> D;
                    run_product(N, A, am >= 0 ? &at : NULL, B, bt, D);
                    double err = 0.0, mx = 0.0;
                    for (int r = 0; r < 64; r++)
                        for (int n = 0; n < N; n++) {
                            float s = 0.0f;
                            for (int k = 0; k < 16; k++)
                                s += val_of(A[(size_t)r * 16 + k]) * val_of(B[(size_t)k * N + n]);
                            err = fmax(err, fabs(s - D[(size_t)r * N + n]));
                            mx = fmax(mx, fabs(s));
                        }
                    if (!(err <= 1e-6 * mx)) {
                        printf("FAIL wgmma product N=%d B %s-major W=%d, A %s: max err %.3e\n", N,
                               bk == 0 ? "K" : "N", Ws[bw],
                               am < 0 ? "registers" : am < 4 ? "K-major smem" : "M-major smem",
                               err);
                        fails++;
                    } else {
                        n_ok++;
                    }
                }
    printf("wgmma products: %d layouts and shapes match the fp32 product\n", n_ok);
}

/* Runs body on a one-warpgroup block in a child; want: a message the
 * child must abort with (SIGABRT, the emulator's message on stderr
 * containing it), or NULL: the child must end normally with d[0] not NaN. */
static void rule(const char *what, const char *want, const std::function<void(float *)> &body)
{
    const bool expect_abort = want != NULL;
    fflush(stdout);
    int fd[2];
    if (pipe(fd) != 0) {
        perror("pipe");
        exit(1);
    }
    const pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 2);
        int bad = 0;
        emu_launch(&dummy_kernel, dim3(1), dim3(128), 4096, [&]() {
            unsigned char *smem = emu_dyn_smem();
            if (threadIdx.x == 0) memset(smem, 0, 4096); /* zeros: B = 0 unless set */
            __syncthreads();
            float d[4] = {1.0f, 2.0f, 3.0f, 4.0f};
            body(d);
            if (d[0] != d[0]) bad = 1;
        });
        _exit(expect_abort ? 3 : bad ? 4 : 0);
    }
    close(fd[1]);
    char msg[512];
    size_t len = 0;
    ssize_t r;
    while (len + 1 < sizeof msg && (r = read(fd[0], msg + len, sizeof msg - 1 - len)) > 0)
        len += (size_t)r;
    msg[len] = 0;
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    const bool aborted = WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
    const bool ok = expect_abort ? aborted && strstr(msg, want)
                                 : WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!ok) {
        printf("FAIL wgmma rule: %s (%s%s)\n", what,
               aborted ? "aborted: " : expect_abort ? "did not abort" : "wrong values",
               aborted ? msg : "");
        fails++;
    }
}

static void check_rules(void)
{
    /* B = 16 x 8 at offset 0, K-major, no swizzle: 256 bytes */
    const uint64_t bd = (uint64_t)(128 >> 4) << 16 | (uint64_t)(256 >> 4) << 32;
    const uint32_t one = 0x3f803f80u; /* two bf16 ones */
    static const uint32_t a[4] = {one, one, one, one}; /* A = 1: alive past every wait */
    auto issue = [&](float *d, int scale) { emu_wgmma_bf16(d, 8, a, 0, 0, bd, 0, scale); };
    rule("wgmma without a fence", "without a wgmma.fence", [&](float *d) { issue(d, 1); });
    rule("accumulator written before the wait", "accumulator of an in-flight wgmma was written",
         [&](float *d) {
        emu_wgmma_fence();
        issue(d, 1);
        emu_wgmma_commit();
        d[1] = 0.0f;
        emu_wgmma_wait(0);
    });
    rule("shared memory changed before the wait", "shared memory an in-flight wgmma reads changed",
         [&](float *d) {
        emu_wgmma_fence();
        issue(d, 1);
        emu_wgmma_commit();
        if (threadIdx.x == 5) emu_dyn_smem()[40] = 1;
        emu_wgmma_wait(0);
    });
    rule("A register changed before the wait", "A registers of an in-flight wgmma changed",
         [&](float *d) {
        uint32_t ra[4] = {one, one, one, one};
        emu_wgmma_fence();
        emu_wgmma_bf16(d, 8, ra, 0, 0, bd, 0, 1);
        emu_wgmma_commit();
        ra[2] = 0;
        emu_wgmma_wait(0);
    });
    rule("a thread ending with a wgmma in flight", "ended with wgmma.mma_async operations",
         [&](float *d) {
        emu_wgmma_fence();
        issue(d, 1);
        emu_wgmma_commit();
    });
    rule("warps of a warpgroup issuing different counts", "not issued by every thread",
         [&](float *d) {
        emu_wgmma_fence();
        if (threadIdx.x < 96) issue(d, 1);
        emu_wgmma_commit();
        emu_wgmma_wait(0);
        __syncthreads();
    });
    /* accumulators: B row 0 = 1 (k = 0 only), so A B = 1 per column */
    auto b_ones = [&]() {
        if (threadIdx.x == 0)
            for (int n = 0; n < 8; n++) { /* (n, k = 0): byte 16 (n % 8) */
                const uint16_t v = 0x3f80;
                memcpy(emu_dyn_smem() + 16 * n, &v, 2);
            }
        __syncthreads();
    };
    rule("read before the wait is NaN; the wait lands C + A B", NULL, [&](float *d) {
        b_ones();
        emu_wgmma_fence();
        issue(d, 1);
        emu_wgmma_commit();
        const bool nan_before = d[0] != d[0];
        emu_wgmma_wait(0);
        if (!nan_before || d[0] != 2.0f || d[3] != 5.0f) d[0] = NAN;
    });
    rule("chained products and scale-d 0", NULL, [&](float *d) {
        b_ones();
        emu_wgmma_fence();
        issue(d, 0); /* d = 1 */
        issue(d, 1); /* d = 2 */
        emu_wgmma_commit();
        issue(d, 1); /* d = 3, a second group */
        emu_wgmma_commit();
        emu_wgmma_wait(1); /* the first group retires; d still in flight */
        const bool nan_mid = d[0] != d[0];
        emu_wgmma_wait(0);
        if (!nan_mid || d[0] != 3.0f || d[2] != 3.0f) d[0] = NAN;
    });
    /* B's row (n, k = 0..7) = (1, 0, ..., 0) landed by cp.async from
     * threads 0..7: without fence.proxy.async by those threads before the
     * barrier the wgmma must abort; with it, d = C + A B */
    alignas(16) static const uint16_t row1[8] = {0x3f80, 0, 0, 0, 0, 0, 0, 0};
    auto b_cp_async = [&](bool fence) {
        if (threadIdx.x < 8) emu_cp_async(emu_dyn_smem() + 16 * threadIdx.x, row1, 16, 16);
        emu_cp_async_commit();
        emu_cp_async_wait(0);
        if (fence) emu_fence_proxy_async();
        __syncthreads();
    };
    rule("B landed by cp.async, read with no fence.proxy.async", "no fence.proxy.async",
         [&](float *d) {
        b_cp_async(false);
        emu_wgmma_fence();
        issue(d, 1);
        emu_wgmma_commit();
        emu_wgmma_wait(0);
    });
    rule("B landed by cp.async, fence.proxy.async before the barrier", NULL, [&](float *d) {
        b_cp_async(true);
        emu_wgmma_fence();
        issue(d, 1);
        emu_wgmma_commit();
        emu_wgmma_wait(0);
        if (d[0] != 2.0f || d[3] != 5.0f) d[0] = NAN;
    });
    printf("wgmma rules: 10 checked\n");
}

int main(void)
{
    check_products();
    check_rules();
    printf("emu_wgmma_check: %s\n", fails ? "FAIL" : "all PASS");
    return fails ? 1 : 0;
}
