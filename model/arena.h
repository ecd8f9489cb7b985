/* model/arena.h — a bump allocator over one backend allocation.
 *
 * Owns: Arena. Each memory category of the planner, the host tier's too, gets one arena of
 * exactly the planner's size; buffers are carved from it at start-up and
 * never freed individually. `used` is the high-water mark, since nothing is
 * released before arena_free. Nothing is allocated inside a training step. */
#ifndef MODEL_ARENA_H
#define MODEL_ARENA_H

#include <stddef.h>

#include "kernels/ops.h"

/* Every buffer carved from an arena starts ARENA_ALIGN bytes from the
 * previous one's start at least: arena_take rounds each request up to it.
 * Why: a buffer's address alignment then never depends on where it sits in
 * its arena. A block tape stored at slot k (recompute 0) and the same tape
 * in the workspace (recompute 1) get equally aligned pointers, so cuBLASLt
 * (whose algorithm choice depends on pointer alignment) and the vector
 * loads take the same path in both modes: part of the bitwise-identity
 * guarantee. 256 bytes is cudaMalloc's own alignment. The planner counts
 * the rounding (arena_round), so its totals stay exact. */
#define ARENA_ALIGN ((size_t)256)

static inline size_t arena_round(size_t bytes)
{
    return (bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
}

typedef struct {
    const char *name;
    Backend *be;
    char *base;
    size_t size;   /* bytes reserved (the planner's figure) */
    size_t used;   /* bytes carved so far = high-water mark */
    int host;      /* 1: host-tier memory (ops.h host_alloc), not the device's */
} Arena;

/* Reserve `size` bytes on the backend. Returns 0, or -1 with a message
 * (naming the arena and the bytes asked) in err. */
int arena_init(Arena *a, Backend *be, const char *name, size_t size, char *err, size_t err_len);

/* Carve `bytes` (rounded up to ARENA_ALIGN) from the arena. Returns NULL
 * when the arena would overflow, which means the planner and the model
 * disagree: a bug, reported loudly. */
void *arena_take(Arena *a, size_t bytes);
/* The same as arena_init in the backend's host tier (--offload; pinned
 * memory on a GPU, host memory on the cpu backend). */
int arena_init_host(Arena *a, Backend *be, const char *name, size_t size, char *err,
                    size_t err_len);

void arena_free(Arena *a);

#endif
