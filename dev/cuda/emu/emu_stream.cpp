/* dev/cuda/emu/emu_stream.cpp — the emulator's streams, events and memory
 * (emu.h): device memory and pinned host memory (both plain host memory
 * here, device memory starting as NaN bytes), and streams as queues of work.
 *
 * Each stream holds, in order, the work enqueued on it: copies, memsets, host
 * functions (cudaLaunchHostFunc), event records and waits for events. Work
 * runs in its stream's order, a wait only once the event's record it names
 * has run. When the rest runs is EMU_ORDER's:
 *   fwd (default, and rand): at the latest moment CUDA allows: when a kernel
 *     is launched on the stream (kernels/cuda/cuda_common.cuh's LAUNCH drains
 *     the stream first), the stream, the device or an event is synchronised,
 *     memory is freed, or a wait on another stream needs one of its records;
 *   rev: the first stream made (the backend's compute stream) as in fwd,
 *     every other one at the earliest: after every enqueue and every drain,
 *     as far as its waits allow.
 * So a schedule that relies on a copy being done without waiting for its
 * event reads stale data in fwd; a copy that does not wait for the compute
 * stream's work before it (a memset, a copy) runs ahead of it in rev; and a
 * copy let to read what a later op writes, before the wait that follows it,
 * reads the new data in fwd and the old in rev.
 * Kernels themselves run at their launch (emu_launch), so every stream is in
 * effect a device where a kernel takes no time. */
#include "emu.h"

#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <vector>

/* Which kernel launches an item enqueued on a stream is ordered after, in
 * the host's program order (a vector clock): stream -> its launches so far
 * (emu_stream_ordered). */
typedef std::map<const struct EmuStream *, unsigned long long> EmuClock;

struct EmuEventRec {
    unsigned long long recorded = 0; /* records enqueued */
    unsigned long long done = 0;     /* the last record that has run */
    struct EmuStream *where = nullptr; /* the stream of the latest record */
    EmuClock clock;                  /* what the latest record is ordered after */
};

enum ItemKind { ITEM_WORK, ITEM_RECORD, ITEM_WAIT };

struct EmuItem {
    ItemKind kind;
    std::function<void()> work; /* ITEM_WORK */
    EmuEventRec *ev;            /* ITEM_RECORD, ITEM_WAIT */
    unsigned long long gen;     /* the record it makes or waits for */
};

struct EmuStream {
    std::deque<EmuItem> q;
    bool lags; /* runs only when made to (always in fwd; the first stream made in rev) */
    unsigned long long launches = 0; /* kernels launched on it (emu_stream_drain) */
    EmuClock seen;                   /* the other streams' launches its next item follows */
};

static std::vector<EmuStream *> streams;
static EmuStream legacy = {{}, true, 0, {}}; /* stream 0 */
static int eager = -1;   /* 1: EMU_ORDER=rev */
static int in_host_fn;   /* a host function is running */
static int depth;        /* nested drains (a wait running another stream) */
static EmuClock host_seen; /* launches the host has synchronised with */

static void stream_init(void)
{
    if (eager >= 0) return;
    const char *o = getenv("EMU_ORDER");
    eager = o && !strcmp(o, "rev");
    streams.push_back(&legacy);
}

static EmuStream *stream_of(cudaStream_t s)
{
    stream_init();
    return s ? (EmuStream *)s : &legacy;
}

/* Every runtime call but a kernel launch checks this: CUDA forbids host
 * functions to call the runtime (they may deadlock). */
static void runtime_entry(const char *what)
{
    stream_init();
    if (in_host_fn) {
        char msg[128];
        snprintf(msg, sizeof msg, "%s called from a host function (cudaLaunchHostFunc)", what);
        emu_fail(msg);
    }
}

static void run_until(EmuEventRec *ev, unsigned long long gen);
static void pump(void);

/* Runs the head of s: a wait first has the record it names run (that record
 * is on another stream: one on s itself came before the wait), and returns:
 * nothing is enqueued meanwhile (host functions may not call the runtime),
 * but in rev running the other stream pumps the eager ones, s among them,
 * which may already have run the wait and what follows it; the caller's
 * next step takes whatever s's head is then. */
static void step(EmuStream *s)
{
    EmuItem &head = s->q.front();
    if (head.kind == ITEM_WAIT && head.ev->done < head.gen) {
        run_until(head.ev, head.gen);
        return;
    }
    EmuItem it = std::move(s->q.front());
    s->q.pop_front();
    if (it.kind == ITEM_RECORD) {
        if (it.gen > it.ev->done) it.ev->done = it.gen;
    } else if (it.kind == ITEM_WORK) {
        in_host_fn = 1; /* set for copies too: they call nothing */
        it.work();
        in_host_fn = 0;
    }
    if (s->lags) pump(); /* rev: the others start the moment they may */
}

static void drain(EmuStream *s)
{
    while (!s->q.empty()) step(s);
}

static void run_until(EmuEventRec *ev, unsigned long long gen)
{
    if (++depth > 64) emu_fail("streams wait on each other in a cycle (a deadlock on a GPU)");
    while (ev->done < gen) {
        if (!ev->where || ev->where->q.empty())
            emu_fail("a wait for an event record that can never run");
        step(ev->where);
    }
    depth--;
}

static void drain_all(void)
{
    stream_init();
    for (EmuStream *s : streams) drain(s);
}

/* EMU_ORDER=rev: every stream as far as its waits allow, until none moves. */
static void pump(void)
{
    static int pumping;
    if (!eager || pumping) return;
    pumping = 1;
    for (int moved = 1; moved;) {
        moved = 0;
        for (EmuStream *s : streams)
            while (!s->lags && !s->q.empty() &&
                   (s->q.front().kind != ITEM_WAIT || s->q.front().ev->done >= s->q.front().gen)) {
                step(s);
                moved = 1;
            }
    }
    pumping = 0;
}

static void enqueue(cudaStream_t s, EmuItem it)
{
    stream_of(s)->q.push_back(std::move(it));
    pump();
}

/* LAUNCH and the emulated cuBLASLt call it before each kernel: it counts
 * the launch for emu_stream_ordered. */
void emu_stream_drain(cudaStream_t s)
{
    EmuStream *st = stream_of(s);
    st->launches++;
    drain(st);
    pump();
}

static void clock_merge(EmuClock &into, const EmuClock &from)
{
    for (const auto &kv : from)
        if (into[kv.first] < kv.second) into[kv.first] = kv.second;
}

bool emu_stream_ordered(cudaStream_t s, char *why, size_t len)
{
    const EmuStream *st = stream_of(s);
    for (const EmuStream *x : streams) {
        if (x == st || !x->launches) continue;
        const auto a = st->seen.find(x);
        const auto h = host_seen.find(x);
        const unsigned long long got = std::max(a == st->seen.end() ? 0ull : a->second,
                                                h == host_seen.end() ? 0ull : h->second);
        if (got < x->launches) {
            snprintf(why, len, "its stream is ordered after %llu of the %llu kernels launched so "
                     "far on another stream (no cudaStreamWaitEvent on an event recorded after "
                     "them, nor a synchronisation)", got, x->launches);
            return false;
        }
    }
    return true;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    (void)flags;
    runtime_entry("cudaStreamCreateWithFlags");
    EmuStream *st = new EmuStream;
    st->lags = !eager || streams.size() == 1; /* only the legacy stream so far */
    streams.push_back(st);
    *s = (cudaStream_t)st;
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    runtime_entry("cudaStreamDestroy");
    EmuStream *st = stream_of(s);
    drain(st); /* CUDA lets queued work finish */
    if (st == &legacy) return cudaSuccess;
    for (size_t i = 0; i < streams.size(); i++)
        if (streams[i] == st) streams.erase(streams.begin() + (long)i);
    /* its launches are over: a stream made later at the same address starts
     * from none (an event recorded before still names it, and a wait on it
     * would credit that later stream: a missed report, never a false one) */
    host_seen.erase(st);
    for (EmuStream *x : streams) x->seen.erase(st);
    delete st;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    runtime_entry("cudaStreamSynchronize");
    EmuStream *st = stream_of(s);
    drain(st);
    pump();
    clock_merge(host_seen, st->seen);
    clock_merge(host_seen, EmuClock{{st, st->launches}});
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    runtime_entry("cudaDeviceSynchronize");
    drain_all();
    for (const EmuStream *x : streams) clock_merge(host_seen, EmuClock{{x, x->launches}});
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags)
{
    (void)flags;
    runtime_entry("cudaEventCreateWithFlags");
    *e = (cudaEvent_t) new EmuEventRec;
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    runtime_entry("cudaEventDestroy");
    EmuEventRec *ev = (EmuEventRec *)e;
    run_until(ev, ev->recorded); /* records still queued name it */
    delete ev;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    runtime_entry("cudaEventRecord");
    EmuEventRec *ev = (EmuEventRec *)e;
    ev->where = stream_of(s);
    ev->clock = ev->where->seen;
    ev->clock[ev->where] = ev->where->launches;
    EmuItem it = {ITEM_RECORD, {}, ev, ++ev->recorded};
    enqueue(s, std::move(it));
    return cudaSuccess;
}

/* Waits for the event's latest record at the time of the call, as CUDA does;
 * an event never recorded is no wait at all. */
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags)
{
    (void)flags;
    runtime_entry("cudaStreamWaitEvent");
    EmuEventRec *ev = (EmuEventRec *)e;
    if (!ev->recorded) return cudaSuccess;
    clock_merge(stream_of(s)->seen, ev->clock);
    EmuItem it = {ITEM_WAIT, {}, ev, ev->recorded};
    enqueue(s, std::move(it));
    return cudaSuccess;
}

cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *user_data)
{
    runtime_entry("cudaLaunchHostFunc");
    EmuItem it = {ITEM_WORK, [fn, user_data]() { fn(user_data); }, nullptr, 0};
    enqueue(s, std::move(it));
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int v, size_t bytes, cudaStream_t s)
{
    runtime_entry("cudaMemsetAsync");
    EmuItem it = {ITEM_WORK, [p, v, bytes]() { memset(p, v, bytes); }, nullptr, 0};
    enqueue(s, std::move(it));
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind k,
                            cudaStream_t s)
{
    (void)k;
    runtime_entry("cudaMemcpyAsync");
    EmuItem it = {ITEM_WORK, [dst, src, bytes]() { memmove(dst, src, bytes); }, nullptr, 0};
    enqueue(s, std::move(it));
    return cudaSuccess;
}

/* The live cudaMalloc allocations: start address -> bytes asked for (the
 * emulated NCCL checks its buffers against them: emu_device_span). */
static std::map<uintptr_t, size_t> &device_allocs(void)
{
    static std::map<uintptr_t, size_t> m;
    return m;
}

cudaError_t cudaMalloc(void **p, size_t bytes)
{
    runtime_entry("cudaMalloc");
    size_t n = (bytes + 255) / 256 * 256;
    *p = aligned_alloc(256, n ? n : 256);
    if (!*p) return cudaErrorMemoryAllocation;
    memset(*p, 0xff, n); /* device memory starts as garbage: make it NaN */
    device_allocs()[(uintptr_t)*p] = bytes;
    return cudaSuccess;
}

bool emu_device_span(const void *p, size_t bytes)
{
    const std::map<uintptr_t, size_t> &m = device_allocs();
    const uintptr_t a = (uintptr_t)p;
    auto it = m.upper_bound(a);
    if (it == m.begin()) return false;
    --it;
    return a - it->first <= it->second && bytes <= it->second - (a - it->first);
}

/* cudaFree and cudaFreeHost wait for the device (queued work may use p). */
cudaError_t cudaFree(void *p)
{
    runtime_entry("cudaFree");
    drain_all();
    device_allocs().erase((uintptr_t)p);
    free(p);
    return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned flags)
{
    (void)flags;
    runtime_entry("cudaHostAlloc");
    size_t n = (bytes + 255) / 256 * 256;
    *p = aligned_alloc(256, n ? n : 256);
    if (!*p) return cudaErrorMemoryAllocation;
    memset(*p, 0xff, n); /* pinned memory's contents are undefined too */
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p)
{
    runtime_entry("cudaFreeHost");
    drain_all();
    free(p);
    return cudaSuccess;
}
