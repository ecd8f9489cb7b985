/* tests/cuda/emu/emu.cpp — see emu.h. Fibers are ucontext coroutines on one
 * OS thread; a kernel launch runs its blocks one after another, and inside
 * a block each fiber runs until it waits at a barrier or returns. Then the
 * scheduler releases every warp whose live lanes all wait at a warp
 * barrier, or, if none, the block barrier once every live thread waits at
 * it; anything else is a divergent barrier or a deadlock and aborts.
 *
 * Environment: EMU_ORDER = fwd | rev | rand (fiber order in each round,
 * and block order), EMU_SEED (for rand), EMU_SMEM_OPTIN (bytes the device
 * "allows" per block; default 232448, an H100/H200). */
#include "emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#include <algorithm>
#include <random>
#include <vector>

enum { RUNNABLE, WAIT_BLOCK, WAIT_WARP, DONE };

struct EmuThread {
    ucontext_t ctx;
    dim3 tid;
    int lane, warp, state;
    double shfl;
    char *stack;
};

#define EMU_STACK (256 * 1024)
#define EMU_CANARY 4096 /* bytes after the dynamic shared memory that must stay untouched */

EmuThread *emu_cur;
dim3 emu_block_idx, emu_block_dim, emu_grid_dim;
static ucontext_t sched_ctx;
static std::vector<EmuThread> fibers;
static unsigned char *dyn_smem;
static size_t dyn_cap;
static const std::function<void()> *cur_body;
static int order_mode = -1; /* 0 fwd, 1 rev, 2 rand */
static std::mt19937 rng;

static void emu_fail(const char *what)
{
    fprintf(stderr, "emu: %s (block %u,%u,%u of %u,%u,%u; %u x %u x %u threads)\n", what,
            emu_block_idx.x, emu_block_idx.y, emu_block_idx.z, emu_grid_dim.x, emu_grid_dim.y,
            emu_grid_dim.z, emu_block_dim.x, emu_block_dim.y, emu_block_dim.z);
    abort();
}

static void init_order(void)
{
    if (order_mode >= 0) return;
    const char *o = getenv("EMU_ORDER");
    order_mode = !o || !strcmp(o, "fwd") ? 0 : !strcmp(o, "rev") ? 1 : 2;
    const char *s = getenv("EMU_SEED");
    rng.seed(s ? (unsigned)strtoul(s, NULL, 10) : 1u);
}

const dim3 &emu_thread_idx(void) { return emu_cur->tid; }
unsigned char *emu_dyn_smem(void) { return dyn_smem; }
int emu_lane(void) { return emu_cur->lane; }

void emu_syncthreads(void)
{
    emu_cur->state = WAIT_BLOCK;
    swapcontext(&emu_cur->ctx, &sched_ctx);
}

void emu_syncwarp(void)
{
    emu_cur->state = WAIT_WARP;
    swapcontext(&emu_cur->ctx, &sched_ctx);
}

void emu_shfl_put(double v) { emu_cur->shfl = v; }

double emu_shfl_get(int src_lane)
{
    size_t idx = (size_t)emu_cur->warp * 32 + (size_t)src_lane;
    if (src_lane < 0 || src_lane > 31 || idx >= fibers.size())
        emu_fail("shuffle from a lane outside the block");
    return fibers[idx].shfl;
}

static void fiber_main(void)
{
    (*cur_body)();
    emu_cur->state = DONE; /* uc_link returns to the scheduler */
}

/* One round: every runnable fiber runs until it blocks; then release. */
static void run_block(size_t nthreads)
{
    std::vector<size_t> order(nthreads);
    for (size_t i = 0; i < nthreads; i++) order[i] = i;
    size_t nwarps = (nthreads + 31) / 32;
    for (;;) {
        if (order_mode == 1) std::reverse(order.begin(), order.end());
        else if (order_mode == 2) std::shuffle(order.begin(), order.end(), rng);
        for (size_t i : order) {
            EmuThread *t = &fibers[i];
            if (t->state != RUNNABLE) continue;
            emu_cur = t;
            swapcontext(&sched_ctx, &t->ctx);
        }
        if (order_mode == 1) std::reverse(order.begin(), order.end()); /* back to fwd */
        size_t done = 0, at_block = 0;
        std::vector<size_t> ready; /* warps whose live lanes all wait at a warp barrier */
        for (size_t w = 0; w < nwarps; w++) {
            size_t lo = w * 32, hi = std::min(nthreads, lo + 32);
            size_t n_warp = 0, n_block = 0, n_done = 0;
            for (size_t i = lo; i < hi; i++) {
                int s = fibers[i].state;
                n_warp += s == WAIT_WARP;
                n_block += s == WAIT_BLOCK;
                n_done += s == DONE;
            }
            done += n_done;
            at_block += n_block;
            if (n_warp == 0) continue;
            if (n_done) emu_fail("lanes exited while others of their warp wait at __syncwarp/shuffle");
            if (n_block) emu_fail("a warp is split between __syncwarp/shuffle and __syncthreads");
            ready.push_back(w);
        }
        if (done == nthreads) return;
        if (!ready.empty()) {
            /* Release ONE warp, which then runs ahead of the others up to the
             * next block barrier: a warp reading what another warp writes
             * without a __syncthreads between sees the wrong data in some order. */
            size_t w = order_mode == 0 ? ready.front()
                       : order_mode == 1 ? ready.back()
                                         : ready[rng() % ready.size()];
            size_t lo = w * 32, hi = std::min(nthreads, lo + 32);
            for (size_t i = lo; i < hi; i++) fibers[i].state = RUNNABLE;
            continue;
        }
        if (at_block + done != nthreads) emu_fail("deadlock");
        if (done) emu_fail("__syncthreads not reached by threads that exited");
        for (size_t i = 0; i < nthreads; i++) fibers[i].state = RUNNABLE;
    }
}

static size_t smem_optin(void)
{
    const char *s = getenv("EMU_SMEM_OPTIN");
    return s ? (size_t)strtoull(s, NULL, 10) : 232448;
}

void emu_launch(dim3 grid, dim3 block, size_t smem, const std::function<void()> &body)
{
    init_order();
    size_t nthreads = (size_t)block.x * block.y * block.z;
    if (nthreads == 0 || nthreads > 1024) emu_fail("bad block size");
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535)
        emu_fail("bad grid size");
    if (smem > smem_optin()) emu_fail("dynamic shared memory over the device limit");
    if (dyn_cap < smem + EMU_CANARY) {
        free(dyn_smem);
        dyn_cap = smem + EMU_CANARY;
        dyn_smem = (unsigned char *)aligned_alloc(128, (dyn_cap + 127) / 128 * 128);
    }
    if (fibers.size() < nthreads) {
        size_t old = fibers.size();
        fibers.resize(nthreads);
        for (size_t i = old; i < nthreads; i++) fibers[i].stack = (char *)malloc(EMU_STACK);
    }
    emu_grid_dim = grid;
    emu_block_dim = block;
    cur_body = &body;
    size_t nblocks = (size_t)grid.x * grid.y * grid.z;
    for (size_t bi = 0; bi < nblocks; bi++) {
        size_t b = order_mode == 1 ? nblocks - 1 - bi : bi;
        emu_block_idx = dim3((unsigned)(b % grid.x), (unsigned)(b / grid.x % grid.y),
                             (unsigned)(b / grid.x / grid.y));
        memset(dyn_smem, 0xff, smem + EMU_CANARY); /* NaN in fp32 and bf16 */
        for (size_t i = 0; i < nthreads; i++) {
            EmuThread *t = &fibers[i];
            t->tid = dim3((unsigned)(i % block.x), (unsigned)(i / block.x % block.y),
                          (unsigned)(i / block.x / block.y));
            t->lane = (int)(i % 32);
            t->warp = (int)(i / 32);
            t->state = RUNNABLE;
            t->shfl = 0.0;
            getcontext(&t->ctx);
            t->ctx.uc_stack.ss_sp = t->stack;
            t->ctx.uc_stack.ss_size = EMU_STACK;
            t->ctx.uc_link = &sched_ctx;
            makecontext(&t->ctx, fiber_main, 0);
        }
        run_block(nthreads);
        for (size_t i = smem; i < smem + EMU_CANARY; i++)
            if (dyn_smem[i] != 0xff) emu_fail("write past the end of dynamic shared memory");
    }
}

/* ---- runtime API: host memory, synchronous streams ---- */
const char *cudaGetErrorString(cudaError_t e)
{
    return e == cudaSuccess ? "no error" : e == cudaErrorMemoryAllocation ? "out of memory"
                                                                          : "emulated error";
}
const char *cudaGetErrorName(cudaError_t e)
{
    return e == cudaSuccess ? "cudaSuccess" : e == cudaErrorMemoryAllocation
                                                  ? "cudaErrorMemoryAllocation"
                                                  : "cudaErrorEmulated";
}
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaGetDeviceCount(int *n)
{
    *n = 1;
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cudaErrorInvalidValue; }
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int d)
{
    (void)d;
    switch (a) {
    case cudaDevAttrComputeCapabilityMajor: *v = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *v = 0; break;
    case cudaDevAttrMultiProcessorCount: *v = 132; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = (int)smem_optin(); break;
    }
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    (void)flags;
    *s = (cudaStream_t)&sched_ctx; /* any non-NULL token */
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    (void)s;
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    (void)s;
    return cudaSuccess;
}
cudaError_t cudaMalloc(void **p, size_t bytes)
{
    size_t n = (bytes + 255) / 256 * 256;
    *p = aligned_alloc(256, n ? n : 256);
    if (!*p) return cudaErrorMemoryAllocation;
    memset(*p, 0xff, n); /* device memory starts as garbage: make it NaN */
    return cudaSuccess;
}
cudaError_t cudaFree(void *p)
{
    free(p);
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *p, int v, size_t bytes, cudaStream_t s)
{
    (void)s;
    memset(p, v, bytes);
    return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind k,
                            cudaStream_t s)
{
    (void)k;
    (void)s;
    memmove(dst, src, bytes);
    return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    *free_bytes = (size_t)64 << 30;
    *total_bytes = (size_t)64 << 30;
    return cudaSuccess;
}
