/* model/arena.h — a bump allocator over one backend allocation.
 *
 * Owns: Arena. Each memory category of the planner gets one arena of
 * exactly the planner's size; buffers are carved from it at start-up and
 * never freed individually. `used` is the high-water mark, since nothing is
 * released before arena_free. Nothing is allocated inside a training step. */
#ifndef MODEL_ARENA_H
#define MODEL_ARENA_H

#include <stddef.h>

#include "kernels/ops.h"

typedef struct {
    const char *name;
    Backend *be;
    char *base;
    size_t size;   /* bytes reserved (the planner's figure) */
    size_t used;   /* bytes carved so far = high-water mark */
} Arena;

/* Reserve `size` bytes on the backend. Returns 0, or -1 with a message
 * (naming the arena and the bytes asked) in err. */
int arena_init(Arena *a, Backend *be, const char *name, size_t size, char *err, size_t err_len);

/* Carve `bytes` from the arena. Returns NULL when the arena would overflow,
 * which means the planner and the model disagree: a bug, reported loudly. */
void *arena_take(Arena *a, size_t bytes);

void arena_free(Arena *a);

#endif
