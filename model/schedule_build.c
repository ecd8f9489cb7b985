/* model/schedule_build.c — the generators of schedule.h: one per fixed
 * --recompute mode, the inputs-kept family auto searches, and the mode
 * names. Each builds its program with schedule_init/schedule_push and
 * decides its LayerNorm fusions last (schedule_fuse_layernorms, which
 * schedule_finalize calls). */
#include "schedule.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The forward sweep shared by the simple modes: block l reads slot l and
 * writes x_{l+1} into slot l+1. */
static void push_forward_sweep(Schedule *s, int tape_of_block_is_l)
{
    int L = s->num_layers;
    for (int l = 0; l < L; l++)
        schedule_push(s, STEP_FORWARD, l, l, l == L - 1 ? SLOT_FINAL : l + 1,
                      tape_of_block_is_l ? l : 0);
    s->n_forward = s->n_steps;
}

int schedule_default_checkpoint_every(int L)
{
    int k = (int)lround(sqrt((double)L));
    return k < 1 ? 1 : k;
}

/* Set n tape kinds from k on. */
static void set_kinds(uint32_t *kind, int k, size_t n)
{
    for (size_t i = 0; i < n; i++) kind[i] = (uint32_t)k;
}

int schedule_build(Schedule *s, const BlockDesc *block, int mode, int L, char *err,
                   size_t err_len)
{
    memset(s, 0, sizeof *s);
    if (L < 1) {
        snprintf(err, err_len, "schedule: need at least one layer (got %d)", L);
        return -1;
    }
    if (mode == RECOMPUTE_SEGMENTS)
        return schedule_build_segments(s, block, L, schedule_default_checkpoint_every(L), err,
                                       err_len);
    if (mode == RECOMPUTE_AUTO) {
        snprintf(err, err_len, "--recompute auto: the schedule depends on --memory-budget; "
                               "build it with solver_schedule");
        return -1;
    }
    if (mode != RECOMPUTE_NONE && mode != RECOMPUTE_BLOCK && mode != RECOMPUTE_SELECTIVE) {
        snprintf(err, err_len,
                 "--recompute: unknown mode %d (accepted: 0, 1, 2, selective, auto)", mode);
        return -1;
    }
    int n_tape = mode == RECOMPUTE_BLOCK ? 1 : L;
    if (schedule_init(s, block, mode, L, L, n_tape) != 0) {
        snprintf(err, err_len, "schedule: out of host memory for %d layers", L);
        return -1;
    }
    s->n_res_stored = L;
    if (mode == RECOMPUTE_BLOCK) {
        /* Only x_l is kept; one workspace tape serves every block. */
        s->n_tape_stored = 0;
        push_forward_sweep(s, 0);
        for (int l = L - 1; l >= 0; l--) {
            schedule_push(s, STEP_FORWARD, l, l, SLOT_NONE, 0);
            schedule_push(s, STEP_BACKWARD, l, l, SLOT_NONE, 0);
        }
        schedule_fuse_layernorms(s);
        return 0;
    }
    /* Modes 0 and selective: every x_l and every tape is kept from forward
     * to backward; selective tapes leave out the block's selective set. */
    s->n_tape_stored = L;
    if (mode == RECOMPUTE_SELECTIVE) set_kinds(s->tape_kind, (int)block->selective, (size_t)L);
    push_forward_sweep(s, 1);
    for (int l = L - 1; l >= 0; l--) schedule_push(s, STEP_BACKWARD, l, l, SLOT_NONE, l);
    schedule_fuse_layernorms(s);
    return 0;
}

int schedule_build_segments(Schedule *s, const BlockDesc *block, int L, int k, char *err,
                            size_t err_len)
{
    memset(s, 0, sizeof *s);
    if (L < 1 || k < 1 || k > L) {
        snprintf(err, err_len, "--checkpoint-every: must be in 1..%d (the layer count); got %d",
                 L, k);
        return -1;
    }
    /* Residual slots: [0, nseg) hold the checkpoints x_{jk} (stored);
     * [nseg, nseg+k-1) hold x_{jk+1} .. x_{jk+k-1} of the segment being
     * run (workspace). Tape slots: k workspace tapes, one per segment
     * position, all written by the re-run. */
    int nseg = (L + k - 1) / k;
    if (schedule_init(s, block, RECOMPUTE_SEGMENTS, L, nseg + k - 1, k) != 0) {
        snprintf(err, err_len, "schedule: out of host memory for %d layers", L);
        return -1;
    }
    s->checkpoint_every = k;
    s->n_res_stored = nseg;
    s->n_tape_stored = 0;
    for (int j = 0; j < nseg; j++) {
        int first = j * k, len = L - first < k ? L - first : k;
        for (int i = 0; i < len; i++) {
            int l = first + i;
            int in = i == 0 ? j : nseg + i - 1;
            int out = l == L - 1 ? SLOT_FINAL : i == len - 1 ? j + 1 : nseg + i;
            schedule_push(s, STEP_FORWARD, l, in, out, 0);
        }
    }
    s->n_forward = s->n_steps;
    for (int j = nseg - 1; j >= 0; j--) {
        int first = j * k, len = L - first < k ? L - first : k;
        for (int i = 0; i < len; i++) {
            int in = i == 0 ? j : nseg + i - 1;
            int out = i == len - 1 ? SLOT_NONE : nseg + i;
            schedule_push(s, STEP_FORWARD, first + i, in, out, i);
        }
        for (int i = len - 1; i >= 0; i--)
            schedule_push(s, STEP_BACKWARD, first + i, i == 0 ? j : nseg + i - 1, SLOT_NONE, i);
    }
    schedule_fuse_layernorms(s);
    return 0; /* 3L steps: schedule_init's capacity, so no push grew the array */
}

int schedule_build_inputs_kept(Schedule *s, const BlockDesc *block, int L, int n_full,
                               int n_sel, int hi_kind, int lo_kind, char *err, size_t err_len)
{
    memset(s, 0, sizeof *s);
    if (L < 1 || n_full < 0 || n_sel < 0 || n_full > L - n_sel) {
        snprintf(err, err_len, "schedule: %d + %d kept tapes do not fit %d layers", n_full,
                 n_sel, L);
        return -1;
    }
    int kinds = tape_kinds(block);
    if (hi_kind < 0 || hi_kind >= kinds || lo_kind < 0 || lo_kind >= kinds) {
        snprintf(err, err_len, "schedule: tape kinds %d, %d out of range", hi_kind, lo_kind);
        return -1;
    }
    /* (n_full: the hi tapes, n_sel: the lo ones.) Blocks [0, n_re) are
     * re-forwarded, [n_re, n_re + n_sel) keep a lo tape, the rest a hi one.
     * Tape slot l - n_re holds block l's kept tape. Residual slot l holds
     * x_l, as in mode 1. The re-forwarded blocks need one hi tape, before
     * the head (they run first) and after every kept tape's backward (they
     * are the lowest): block L-1's slot when it keeps a hi tape, so no
     * workspace tape at all; else slot n_kept, dropped by finalize when
     * unused. */
    int n_kept = n_full + n_sel, n_re = L - n_kept, work = n_full > 0 ? n_kept - 1 : n_kept;
    if (schedule_init(s, block, RECOMPUTE_AUTO, L, L, n_kept + 1) != 0) {
        snprintf(err, err_len, "schedule: out of host memory for %d layers", L);
        return -1;
    }
    set_kinds(s->tape_kind, lo_kind, (size_t)n_sel);
    set_kinds(s->tape_kind + n_sel, hi_kind, (size_t)(n_kept + 1 - n_sel));
    for (int l = 0; l < L; l++)
        schedule_push(s, STEP_FORWARD, l, l, l == L - 1 ? SLOT_FINAL : l + 1,
                      l < n_re ? work : l - n_re);
    s->n_forward = s->n_steps;
    for (int l = L - 1; l >= 0; l--) {
        if (l < n_re) schedule_push(s, STEP_FORWARD, l, l, SLOT_NONE, work);
        schedule_push(s, STEP_BACKWARD, l, l, SLOT_NONE, l < n_re ? work : l - n_re);
    }
    /* 2L + n_re <= 3L steps: schedule_init's capacity, so no push failed */
    if (schedule_finalize(s, err, err_len) != 0) {
        schedule_free(s);
        return -1;
    }
    return 0;
}

static const struct { const char *name; int mode; } MODE_FLAGS[] = {
    {"0", RECOMPUTE_NONE}, {"1", RECOMPUTE_BLOCK}, {"2", RECOMPUTE_SEGMENTS},
    {"selective", RECOMPUTE_SELECTIVE}, {"auto", RECOMPUTE_AUTO},
};

int schedule_parse_mode(const char *str, int *mode)
{
    for (size_t i = 0; i < sizeof MODE_FLAGS / sizeof MODE_FLAGS[0]; i++)
        if (str && strcmp(str, MODE_FLAGS[i].name) == 0) {
            *mode = MODE_FLAGS[i].mode;
            return 0;
        }
    return -1;
}

const char *schedule_mode_flag(int mode)
{
    for (size_t i = 0; i < sizeof MODE_FLAGS / sizeof MODE_FLAGS[0]; i++)
        if (MODE_FLAGS[i].mode == mode) return MODE_FLAGS[i].name;
    return "?";
}

const char *schedule_mode_name(int mode)
{
    switch (mode) {
    case RECOMPUTE_NONE: return "0 (store every block's tape)";
    case RECOMPUTE_BLOCK: return "1 (store block inputs; re-forward each block in backward)";
    case RECOMPUTE_SEGMENTS: return "2 (store every k-th block input; re-run segments taped)";
    case RECOMPUTE_SELECTIVE: return "selective (store tapes without LayerNorm/GELU outputs)";
    case RECOMPUTE_AUTO: return "auto (least predicted time within the memory budget)";
    default: return "unknown";
    }
}
