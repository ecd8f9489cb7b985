/* dev/cuda/emu/emu.cpp — see emu.h. Fibers are coroutines on one OS
 * thread (EmuCtx below); a kernel launch runs its blocks one after another. Inside a
 * block, one warp at a time runs its whole phase up to the next
 * __syncthreads (its lanes one after another, each until it waits at a
 * barrier; a warp barrier opens when every live lane waits at it), then the
 * next warp; the block barrier opens when every thread waits at it. A lane
 * that exits while others wait at a barrier aborts.
 *
 * Environment: EMU_ORDER = fwd | rev | rand (the order of warps in a phase,
 * of lanes between warp barriers, and of blocks), EMU_SEED (for rand),
 * EMU_SMEM_OPTIN (bytes the device "allows" per block; default 232448, an
 * H100/H200), EMU_MAX_GRID_Z (the largest gridDim.z; default 65535, every
 * GPU's: a smaller value exercises code that splits a launch along z),
 * EMU_CC (the compute capability reported, 10 major + minor; default 90).
 *
 * Checks of what only the hardware would refuse: block size, grid limits,
 * dynamic shared memory over the device limit or over 48 KiB without the
 * kernel's cudaFuncSetAttribute(MaxDynamicSharedMemorySize) opt-in, and
 * the alignment of vector, mma operand and cp.async accesses
 * (emu_align_check). */
#include "emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#include <algorithm>
#include <deque>
#include <map>
#include <random>
#include <vector>

enum { RUNNABLE, WAIT_BLOCK, WAIT_WARP, DONE };

/* ---- switching fibers ----
 * glibc's swapcontext saves and restores the signal mask with a system call
 * at every switch, which took about half of the emulator's time (each mma,
 * ldmatrix and shuffle is two warp barriers: a switch per lane each). On
 * x86-64 a switch is done here in a few instructions: push the callee-saved
 * registers and the SSE and x87 control words on the running stack, save
 * its stack pointer, load the other's, pop. Elsewhere (or built with
 * -DEMU_UCONTEXT) it is ucontext. A new fiber starts in fiber_entry. */
static void fiber_entry(void);
#if defined(__x86_64__) && !defined(EMU_UCONTEXT)
struct EmuCtx {
    void *sp;
};
extern "C" void emu_ctx_swap(void **save_sp, void *load_sp);
asm(R"(
    .text
    .globl emu_ctx_swap
    .type emu_ctx_swap, @function
emu_ctx_swap:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size emu_ctx_swap, .-emu_ctx_swap
)");
static void ctx_switch(EmuCtx *from, EmuCtx *to) { emu_ctx_swap(&from->sp, to->sp); }
/* A frame that emu_ctx_swap "returns" from into fiber_entry, with the stack
 * aligned as after a call (rsp + 8 a multiple of 16). */
static void ctx_make(EmuCtx *c, char *stack, size_t size, EmuCtx *back)
{
    (void)back;
    uint64_t *sp = (uint64_t *)(((uintptr_t)(stack + size)) & ~(uintptr_t)15);
    *--sp = 0;                         /* fiber_entry's return address: it never returns */
    *--sp = (uint64_t)(uintptr_t)fiber_entry;
    for (int i = 0; i < 6; i++) *--sp = 0; /* rbp rbx r12 r13 r14 r15 */
    *--sp = 0x1f80ull | 0x037full << 32;   /* default MXCSR; x87 control word */
    c->sp = sp;
}
#else
struct EmuCtx {
    ucontext_t uc;
};
static void ctx_switch(EmuCtx *from, EmuCtx *to) { swapcontext(&from->uc, &to->uc); }
static void ctx_make(EmuCtx *c, char *stack, size_t size, EmuCtx *back)
{
    getcontext(&c->uc);
    c->uc.uc_stack.ss_sp = stack;
    c->uc.uc_stack.ss_size = size;
    c->uc.uc_link = &back->uc;
    makecontext(&c->uc, fiber_entry, 0);
}
#endif

/* One cp.async copy not yet landed: size bytes to dst, the first src_size
 * from src, zeros after. */
struct EmuCopy {
    unsigned char *dst;
    const unsigned char *src;
    int size, src_size;
};

struct EmuThread {
    EmuCtx ctx;
    dim3 tid;
    int lane, warp, state;
    double shfl;
    uint32_t mma_a[4], mma_b[2]; /* registers deposited by emu_mma_bf16_16816 */
    const unsigned char *ldm_row; /* address deposited by emu_ldmatrix_x4 */
    /* cp.async: the copies issued since the last commit_group, and the
     * committed groups not yet retired by a wait_group, oldest first */
    std::vector<EmuCopy> open_copies;
    std::deque<std::vector<EmuCopy>> groups;
    /* copies landed since the thread's last fence.proxy.async (dst, size) */
    std::vector<std::pair<unsigned char *, int>> unfenced;
    char *stack;
};

#define EMU_STACK (256 * 1024)
#define EMU_CANARY 4096 /* bytes after the dynamic shared memory that must stay untouched */

EmuThread *emu_cur;
dim3 emu_block_idx, emu_block_dim, emu_grid_dim;
static EmuCtx sched_ctx;
static std::vector<EmuThread> fibers;
static unsigned char *dyn_smem;
static size_t dyn_cap, dyn_size; /* allocated; this launch's */
/* per byte of dynamic shared memory: 1 while a landed cp.async's issuing
 * thread has not run fence.proxy.async since (emu_fence_proxy_async) */
static std::vector<unsigned char> smem_unfenced;
static const std::function<void()> *cur_body;
static int order_mode = -1; /* 0 fwd, 1 rev, 2 rand */
static std::mt19937 rng;

void emu_fail(const char *what)
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
int emu_warp(void) { return emu_cur->warp; }
size_t emu_dyn_smem_size(void) { return dyn_size; }

void emu_syncthreads(void)
{
    emu_cur->state = WAIT_BLOCK;
    ctx_switch(&emu_cur->ctx, &sched_ctx);
}

void emu_syncwarp(void)
{
    emu_cur->state = WAIT_WARP;
    ctx_switch(&emu_cur->ctx, &sched_ctx);
}

void emu_shfl_put(double v) { emu_cur->shfl = v; }

double emu_shfl_get(int src_lane)
{
    size_t idx = (size_t)emu_cur->warp * 32 + (size_t)src_lane;
    if (src_lane < 0 || src_lane > 31 || idx >= fibers.size())
        emu_fail("shuffle from a lane outside the block");
    return fibers[idx].shfl;
}

/* mma.sync and ldmatrix need all 32 lanes of the warp */
static void emu_whole_warp(const char *what)
{
    size_t w0 = (size_t)emu_cur->warp * 32;
    if (w0 + 32 > fibers.size() || emu_block_dim.x * emu_block_dim.y * emu_block_dim.z < w0 + 32)
        emu_fail(what);
}

static float bf16_half(uint32_t reg, int high)
{
    __nv_bfloat16 h;
    h.bits = (uint16_t)(high ? reg >> 16 : reg & 0xffffu);
    return __bfloat162float(h);
}

/* The layout, from the PTX ISA (g = lane / 4, t = lane % 4): A[r][k] is in
 * lane (r % 8) * 4 + (k % 8) / 2, register (r >= 8) + 2 (k >= 8), half k % 2;
 * B[k][n] in lane n * 4 + (k % 8) / 2, register k >= 8, half k % 2; this
 * lane's outputs are rows g, g+8 by columns 2t, 2t+1. */
void emu_mma_bf16_16816(float d[4], const uint32_t a[4], const uint32_t b[2])
{
    memcpy(emu_cur->mma_a, a, sizeof emu_cur->mma_a);
    memcpy(emu_cur->mma_b, b, sizeof emu_cur->mma_b);
    emu_whole_warp("mma.sync in a warp of fewer than 32 threads");
    emu_syncwarp();
    const EmuThread *w = &fibers[(size_t)emu_cur->warp * 32];
    const int g = emu_cur->lane / 4, t = emu_cur->lane % 4;
    float out[4];
    for (int i = 0; i < 4; i++) {
        const int r = g + (i >= 2 ? 8 : 0), n = 2 * t + (i & 1);
        float s = 0.0f;
        for (int k = 0; k < 16; k++) {
            float av = bf16_half(w[(r % 8) * 4 + (k % 8) / 2].mma_a[(r >= 8) + 2 * (k >= 8)], k % 2);
            float bv = bf16_half(w[n * 4 + (k % 8) / 2].mma_b[k >= 8], k % 2);
            s += av * bv;
        }
        out[i] = d[i] + s;
    }
    emu_syncwarp(); /* every lane has read the deposits before any lane reuses them */
    memcpy(d, out, sizeof out);
}

void emu_ldmatrix_x4(uint32_t r[4], const void *p, bool trans)
{
    emu_align_check(p, 16, "ldmatrix row address");
    emu_whole_warp("ldmatrix in a warp of fewer than 32 threads");
    emu_cur->ldm_row = (const unsigned char *)p;
    emu_syncwarp();
    const EmuThread *w = &fibers[(size_t)emu_cur->warp * 32];
    const int g = emu_cur->lane / 4, t = emu_cur->lane % 4;
    uint32_t out[4];
    for (int i = 0; i < 4; i++) {
        uint16_t lo, hi; /* element (row, col) of matrix i: lane 8i + row's address + 2 col */
        if (!trans) {
            memcpy(&lo, w[8 * i + g].ldm_row + 2 * (2 * t), 2);
            memcpy(&hi, w[8 * i + g].ldm_row + 2 * (2 * t + 1), 2);
        } else {
            memcpy(&lo, w[8 * i + 2 * t].ldm_row + 2 * g, 2);
            memcpy(&hi, w[8 * i + 2 * t + 1].ldm_row + 2 * g, 2);
        }
        out[i] = (uint32_t)lo | (uint32_t)hi << 16;
    }
    emu_syncwarp(); /* every lane has read through the addresses before any moves on */
    memcpy(r, out, sizeof out);
}

void emu_cp_async(void *dst, const void *src, int size, int src_size)
{
    if (size != 4 && size != 8 && size != 16) emu_fail("cp.async of a size other than 4, 8, 16");
    if (src_size < 0 || src_size > size) emu_fail("cp.async: src_size outside 0..size");
    emu_align_check(dst, (size_t)size, "cp.async shared-memory destination");
    emu_align_check(src, (size_t)size, "cp.async global source");
    unsigned char *d = (unsigned char *)dst;
    if (d < dyn_smem || d + size > dyn_smem + dyn_size)
        emu_fail("cp.async destination outside the block's dynamic shared memory");
    memset(d, 0xff, (size_t)size); /* not landed yet: NaN until the wait */
    emu_cur->open_copies.push_back({d, (const unsigned char *)src, size, src_size});
}

void emu_cp_async_commit(void)
{
    emu_cur->groups.push_back(std::move(emu_cur->open_copies));
    emu_cur->open_copies.clear();
}

void emu_cp_async_wait(int pending)
{
    if (pending < 0) emu_fail("cp.async.wait_group with a negative count");
    auto &g = emu_cur->groups;
    while (g.size() > (size_t)pending) {
        for (const EmuCopy &c : g.front()) {
            memcpy(c.dst, c.src, (size_t)c.src_size);
            memset(c.dst + c.src_size, 0, (size_t)(c.size - c.src_size));
            memset(smem_unfenced.data() + (c.dst - dyn_smem), 1, (size_t)c.size);
            emu_cur->unfenced.push_back({c.dst, c.size});
        }
        g.pop_front();
    }
}

void emu_fence_proxy_async(void)
{
    for (const auto &r : emu_cur->unfenced)
        memset(smem_unfenced.data() + (r.first - dyn_smem), 0, (size_t)r.second);
    emu_cur->unfenced.clear();
}

bool emu_smem_unfenced(const void *p)
{
    const unsigned char *q = (const unsigned char *)p;
    return q >= dyn_smem && q < dyn_smem + dyn_size && smem_unfenced[(size_t)(q - dyn_smem)];
}

static void fiber_entry(void)
{
    (*cur_body)();
    if (!emu_cur->open_copies.empty() || !emu_cur->groups.empty())
        emu_fail("a thread ended with cp.async copies it never waited for");
    emu_wgmma_thread_end();
    emu_cur->state = DONE;
#if defined(__x86_64__) && !defined(EMU_UCONTEXT)
    ctx_switch(&emu_cur->ctx, &sched_ctx); /* never resumed */
    abort();
#endif /* else uc_link returns to the scheduler */
}

/* Order in which `n` items (lanes of a warp, warps of a block) run. */
static void make_order(std::vector<size_t> &o, size_t n)
{
    o.resize(n);
    for (size_t i = 0; i < n; i++) o[i] = order_mode == 1 ? n - 1 - i : i;
    if (order_mode == 2) std::shuffle(o.begin(), o.end(), rng);
}

/* Runs warp w from where it stands to its next block barrier (or its end):
 * its lanes, one after another, each until it blocks; whenever every live
 * lane waits at a warp barrier, they are released together. */
static void run_warp(size_t w, size_t nthreads)
{
    size_t lo = w * 32, hi = std::min(nthreads, lo + 32);
    std::vector<size_t> lanes;
    for (;;) {
        make_order(lanes, hi - lo);
        for (size_t l : lanes) {
            EmuThread *t = &fibers[lo + l];
            if (t->state != RUNNABLE) continue;
            emu_cur = t;
            ctx_switch(&sched_ctx, &t->ctx);
        }
        size_t n_warp = 0, n_block = 0, n_done = 0;
        for (size_t i = lo; i < hi; i++) {
            n_warp += fibers[i].state == WAIT_WARP;
            n_block += fibers[i].state == WAIT_BLOCK;
            n_done += fibers[i].state == DONE;
        }
        if (n_warp == 0) return; /* at the block barrier, or finished */
        if (n_done) emu_fail("lanes exited while others of their warp wait at __syncwarp/shuffle");
        if (n_block) emu_fail("a warp is split between __syncwarp/shuffle and __syncthreads");
        for (size_t i = lo; i < hi; i++) fibers[i].state = RUNNABLE;
    }
}

/* A block: each phase (between two block barriers) runs warp by warp, the
 * whole phase of one warp before the next warp starts, so a warp that reads
 * what another writes in the same phase (a missing __syncthreads) sees the
 * wrong data in one of the orders. */
static void run_block(size_t nthreads)
{
    size_t nwarps = (nthreads + 31) / 32;
    std::vector<size_t> warps;
    for (;;) {
        make_order(warps, nwarps);
        for (size_t w : warps) run_warp(w, nthreads);
        emu_wgmma_block_barrier();
        size_t done = 0;
        for (size_t i = 0; i < nthreads; i++) done += fibers[i].state == DONE;
        if (done == nthreads) return;
        if (done) emu_fail("__syncthreads not reached by threads that exited");
        for (size_t i = 0; i < nthreads; i++) fibers[i].state = RUNNABLE;
    }
}

static size_t smem_optin(void)
{
    const char *s = getenv("EMU_SMEM_OPTIN");
    return s ? (size_t)strtoull(s, NULL, 10) : 232448;
}

/* EMU_CC: the compute capability reported, 10 major + minor (default 90,
 * an H100/H200), e.g. 80 to see what the backend refuses on an A100 */
static int emu_cc(void)
{
    const char *s = getenv("EMU_CC");
    const long v = s ? strtol(s, NULL, 10) : 90;
    return v >= 10 && v <= 129 ? (int)v : 90;
}

static unsigned max_grid_z(void)
{
    const char *s = getenv("EMU_MAX_GRID_Z");
    unsigned long v = s ? strtoul(s, NULL, 10) : 65535;
    return v >= 1 && v <= 65535 ? (unsigned)v : 65535;
}

/* per kernel: the dynamic shared memory it opted into (bytes) */
static std::map<const void *, int> smem_opt_in;

cudaError_t emu_func_set_attribute(const void *kern, cudaFuncAttribute a, int v)
{
    /* a carveout is a hint in percent of the unified L1 (-1: the default);
     * the emulator has no L1 to split, so it only checks the range */
    if (a == cudaFuncAttributePreferredSharedMemoryCarveout)
        return v >= -1 && v <= 100 ? cudaSuccess : cudaErrorInvalidValue;
    if (a != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaErrorInvalidValue;
    if (v < 0 || (size_t)v > smem_optin()) return cudaErrorInvalidValue; /* as the runtime */
    smem_opt_in[kern] = v;
    return cudaSuccess;
}

void emu_align_check(const void *p, size_t bytes, const char *what)
{
    if ((uintptr_t)p % bytes == 0) return;
    char msg[160];
    snprintf(msg, sizeof msg, "%s: address %p is not %zu-byte aligned", what, p, bytes);
    emu_fail(msg);
}

void emu_launch(const void *kern, dim3 grid, dim3 block, size_t smem,
                const std::function<void()> &body)
{
    init_order();
    emu_grid_dim = grid; /* for emu_fail's message */
    emu_block_dim = block;
    emu_block_idx = dim3(0, 0, 0);
    size_t nthreads = (size_t)block.x * block.y * block.z;
    if (nthreads == 0 || nthreads > 1024 || block.z > 64) emu_fail("bad block size");
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 2147483647u || grid.y > 65535 ||
        grid.z > max_grid_z())
        emu_fail("bad grid size");
    if (smem > smem_optin()) emu_fail("dynamic shared memory over the device limit");
    if (smem > 49152) {
        auto it = smem_opt_in.find(kern);
        if (it == smem_opt_in.end() || (size_t)it->second < smem)
            emu_fail("over 48 KiB of dynamic shared memory without the kernel's "
                     "cudaFuncSetAttribute(MaxDynamicSharedMemorySize) opt-in");
    }
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
    dyn_size = smem;
    cur_body = &body;
    size_t nblocks = (size_t)grid.x * grid.y * grid.z;
    for (size_t bi = 0; bi < nblocks; bi++) {
        size_t b = order_mode == 1 ? nblocks - 1 - bi : bi;
        emu_block_idx = dim3((unsigned)(b % grid.x), (unsigned)(b / grid.x % grid.y),
                             (unsigned)(b / grid.x / grid.y));
        memset(dyn_smem, 0xff, smem + EMU_CANARY); /* NaN in fp32 and bf16 */
        smem_unfenced.assign(smem, 0);
        for (size_t i = 0; i < nthreads; i++) {
            EmuThread *t = &fibers[i];
            t->tid = dim3((unsigned)(i % block.x), (unsigned)(i / block.x % block.y),
                          (unsigned)(i / block.x / block.y));
            t->lane = (int)(i % 32);
            t->warp = (int)(i / 32);
            t->state = RUNNABLE;
            t->shfl = 0.0;
            t->open_copies.clear();
            t->groups.clear();
            t->unfenced.clear();
            ctx_make(&t->ctx, t->stack, EMU_STACK, &sched_ctx);
        }
        emu_wgmma_block_start(nthreads);
        run_block(nthreads);
        for (size_t i = smem; i < smem + EMU_CANARY; i++)
            if (dyn_smem[i] != 0xff) emu_fail("write past the end of dynamic shared memory");
    }
}

/* ---- runtime API: the device ---- */
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
/* EMU_DEVICES=n (1 to 16, default 1): the devices the process sees. Each
 * is the same emulated device; the number only lets several ranks on one
 * machine each select their own, as the emulated NCCL's communicator
 * requires (emu_nccl.cpp refuses two ranks on one device, as NCCL does). */
static int emu_devices(void)
{
    const char *s = getenv("EMU_DEVICES");
    const long v = s ? strtol(s, NULL, 10) : 1;
    return v >= 1 && v <= 16 ? (int)v : 1;
}
static int emu_device; /* cudaSetDevice's */
cudaError_t cudaGetDeviceCount(int *n)
{
    *n = emu_devices();
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int d)
{
    if (d < 0 || d >= emu_devices()) return cudaErrorInvalidValue;
    emu_device = d;
    return cudaSuccess;
}
cudaError_t cudaGetDevice(int *d)
{
    *d = emu_device;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int d)
{
    (void)d;
    switch (a) {
    case cudaDevAttrComputeCapabilityMajor: *v = emu_cc() / 10; break;
    case cudaDevAttrComputeCapabilityMinor: *v = emu_cc() % 10; break;
    case cudaDevAttrMultiProcessorCount: *v = 132; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = (int)smem_optin(); break;
    case cudaDevAttrMaxGridDimY: *v = 65535; break;
    case cudaDevAttrMaxGridDimZ: *v = (int)max_grid_z(); break;
    }
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d)
{
    if (d < 0 || d >= emu_devices()) return cudaErrorInvalidValue;
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "CUDA emulator (dev/cuda/emu)");
    p->major = emu_cc() / 10;
    p->minor = emu_cc() % 10;
    p->multiProcessorCount = 132;
    return cudaSuccess;
}
/* streams, events, memory: emu_stream.cpp */
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    *free_bytes = (size_t)64 << 30;
    *total_bytes = (size_t)64 << 30;
    return cudaSuccess;
}
