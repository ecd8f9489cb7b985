/* tests/unit/model/test_arena.c — arenas: exact carving, overflow refused, and the
 * out-of-memory message (asked, free, what to try) when the backend's
 * allocation fails, as a GPU's cudaMalloc would. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <string.h>

#include "model/arena.h"
#include "tests/lib/test_util.h"

static void *alloc_fails(Backend *be, size_t bytes) { return NULL; }
static int device_info(Backend *be, size_t *free_b, size_t *total_b)
{
    *free_b = 1000;
    *total_b = 5000;
    return 0;
}

Test(arena, carves_exactly_and_refuses_overflow, .init = cr_redirect_stderr)
{
    Backend *be = tu_cpu();
    Arena a;
    char err[256];
    cr_assert_eq(arena_init(&a, be, "scratch", 3 * ARENA_ALIGN, err, sizeof err), 0, "%s", err);
    /* each request is rounded up to ARENA_ALIGN (256 bytes) */
    char *p = arena_take(&a, 60), *q = arena_take(&a, 256), *r = arena_take(&a, 1);
    cr_expect_eq(q, p + 256);
    cr_expect_eq(r, q + 256);
    cr_expect_eq(a.used, 3 * ARENA_ALIGN);
    cr_expect_null(arena_take(&a, 1), "an arena never grows past the plan");
    /* ... and says so: the one line a planner/model disagreement prints */
    char *e = tu_captured_stderr();
    cr_expect_str_eq(e, "internal error: arena 'scratch' overflow (768 + 256 > 768): planner and "
                        "model disagree\n");
    free(e);
    arena_free(&a);
    backend_close(be);
}

Test(arena, out_of_memory_message_on_a_device)
{
    Backend *cpu = tu_cpu();
    BackendOps ops = *cpu->ops;
    ops.mem_alloc = alloc_fails;
    ops.mem_info = device_info;
    Backend dev = *cpu;
    dev.name = "cuda";
    dev.ops = &ops;
    Arena a;
    char err[512] = "";
    cr_assert_eq(arena_init(&a, &dev, "activations", 123456789, err, sizeof err), -1);
    cr_expect(strstr(err, "out of cuda memory") && strstr(err, "'activations'") &&
              strstr(err, "asked for 123456789 bytes") && strstr(err, "1000 bytes") &&
              strstr(err, "free") && strstr(err, "--recompute 1") && strstr(err, "smaller --batch"),
              "message: %s", err);
    backend_close(cpu);
}

Test(arena, out_of_memory_message_on_the_cpu)
{
    Backend *cpu = tu_cpu();
    BackendOps ops = *cpu->ops;
    ops.mem_alloc = alloc_fails;
    Backend be = *cpu;
    be.ops = &ops;
    Arena a;
    char err[512] = "";
    cr_assert_eq(arena_init(&a, &be, "params", 77, err, sizeof err), -1);
    /* --recompute cannot shrink the weights; the hint says what can */
    cr_expect(strstr(err, "out of cpu memory: arena 'params' asked for 77 bytes") &&
              !strstr(err, "--recompute 1") && strstr(err, "a smaller model"), "message: %s",
              err);
    cr_assert_eq(arena_init(&a, &be, "optimizer", 77, err, sizeof err), -1);
    cr_expect(!strstr(err, "--recompute 1") && strstr(err, "--zero 1"), "message: %s", err);
    backend_close(cpu);
}
