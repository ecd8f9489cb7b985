/* model/arena.c — see arena.h. */
#include "arena.h"

#include <stdio.h>
#include <string.h>

/* What can shrink an arena of this name (model/planner.h's categories):
 * --recompute and --batch change only the activation-like ones. */
static const char *oom_hint(const char *name)
{
    if (!strcmp(name, "params") || !strcmp(name, "grads"))
        return "it holds the model's weights, whose size --recompute and --batch do not change: "
               "a smaller model (--layers, --channels), --dtype bf16 on cuda, or a device with "
               "more free memory";
    if (!strcmp(name, "optimizer"))
        return "it holds AdamW's state, whose size --recompute and --batch do not change: "
               "--zero 1 over more ranks shards it";
    return "try --recompute 1 or a smaller --batch";
}

int arena_init_host(Arena *a, Backend *be, const char *name, size_t size, char *err,
                    size_t err_len)
{
    a->name = name;
    a->be = be;
    a->size = size;
    a->used = 0;
    a->base = NULL;
    a->host = 1;
    if (size == 0) return 0;
    if (!be->ops->host_alloc || !(a->base = be->ops->host_alloc(be, size))) {
        snprintf(err, err_len,
                 "out of host memory: the host tier's arena '%s' asked for %zu bytes (%.1f "
                 "MiB); --host-budget bounds it, --offload chooses what lives there",
                 name, size, size / 1048576.0);
        return -1;
    }
    return 0;
}

int arena_init(Arena *a, Backend *be, const char *name, size_t size, char *err, size_t err_len)
{
    a->name = name;
    a->be = be;
    a->size = size;
    a->used = 0;
    a->base = NULL;
    a->host = 0;
    if (size == 0) return 0;
    a->base = be->ops->mem_alloc(be, size);
    if (!a->base) {
        size_t free_b = 0, total_b = 0;
        if (be->ops->mem_info(be, &free_b, &total_b) == 0)
            snprintf(err, err_len,
                     "out of %s memory: arena '%s' asked for %zu bytes (%.1f MiB), %zu bytes "
                     "(%.1f MiB) free; %s",
                     be->name, name, size, size / 1048576.0, free_b, free_b / 1048576.0,
                     oom_hint(name));
        else
            snprintf(err, err_len,
                     "out of %s memory: arena '%s' asked for %zu bytes (%.1f MiB); %s",
                     be->name, name, size, size / 1048576.0, oom_hint(name));
        return -1;
    }
    return 0;
}

void *arena_take(Arena *a, size_t bytes)
{
    bytes = arena_round(bytes);
    if (bytes > a->size - a->used) {
        fprintf(stderr, "internal error: arena '%s' overflow (%zu + %zu > %zu): planner and model "
                        "disagree\n", a->name, a->used, bytes, a->size);
        return NULL;
    }
    void *p = a->base + a->used;
    a->used += bytes;
    return p;
}

void arena_free(Arena *a)
{
    if (a->base && a->host) a->be->ops->host_free(a->be, a->base);
    else if (a->base) a->be->ops->mem_free(a->be, a->base);
    a->base = NULL;
    a->size = a->used = 0;
}
