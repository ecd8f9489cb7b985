/* model/schedule.c — see schedule.h. */
#include "schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void push(Schedule *s, int kind, int block, int in, int out, int tape)
{
    ScheduleStep *st = &s->steps[s->n_steps++];
    st->kind = kind;
    st->block = block;
    st->in_slot = in;
    st->out_slot = out;
    st->tape_slot = tape;
}

/* The forward sweep shared by the simple modes: block l reads slot l and
 * writes x_{l+1} into slot l+1. */
static void push_forward_sweep(Schedule *s, int tape_of_block_is_l)
{
    int L = s->num_layers;
    for (int l = 0; l < L; l++)
        push(s, STEP_FORWARD, l, l, l == L - 1 ? SLOT_FINAL : l + 1, tape_of_block_is_l ? l : 0);
    s->n_forward = s->n_steps;
}

int schedule_build(Schedule *s, int mode, int L, char *err, size_t err_len)
{
    memset(s, 0, sizeof *s);
    if (L < 1) {
        snprintf(err, err_len, "schedule: need at least one layer (got %d)", L);
        return -1;
    }
    s->mode = mode;
    s->num_layers = L;
    s->embed_slot = 0;
    s->steps = calloc((size_t)3 * L, sizeof *s->steps);
    if (!s->steps) {
        snprintf(err, err_len, "schedule: out of host memory for %d steps", 3 * L);
        return -1;
    }
    switch (mode) {
    case RECOMPUTE_NONE:
        /* Every x_l and every tape is kept from forward to backward. */
        s->n_res_slots = s->n_res_stored = L;
        s->n_tape_slots = s->n_tape_stored = L;
        push_forward_sweep(s, 1);
        for (int l = L - 1; l >= 0; l--) push(s, STEP_BACKWARD, l, l, SLOT_NONE, l);
        return 0;
    case RECOMPUTE_BLOCK:
        /* Only x_l is kept; one workspace tape serves every block. */
        s->n_res_slots = s->n_res_stored = L;
        s->n_tape_slots = 1;
        s->n_tape_stored = 0;
        push_forward_sweep(s, 0);
        for (int l = L - 1; l >= 0; l--) {
            push(s, STEP_FORWARD, l, l, SLOT_NONE, 0);
            push(s, STEP_BACKWARD, l, l, SLOT_NONE, 0);
        }
        return 0;
    default:
        schedule_free(s);
        snprintf(err, err_len, "--recompute: unknown mode %d (accepted: 0, 1)", mode);
        return -1;
    }
}

void schedule_free(Schedule *s)
{
    free(s->steps);
    s->steps = NULL;
    s->n_steps = 0;
}

int schedule_validate(const Schedule *s, char *err, size_t err_len)
{
    int L = s->num_layers, ok = -1;
    /* res_holds[i] = index l of the x_l in residual slot i, or -1;
     * tape_holds[j] = block whose tape is in tape slot j, or -1. */
    int *res_holds = malloc(sizeof(int) * (size_t)(s->n_res_slots + 1));
    int *tape_holds = malloc(sizeof(int) * (size_t)(s->n_tape_slots + 1));
    if (!res_holds || !tape_holds) {
        snprintf(err, err_len, "schedule: out of host memory");
        goto done;
    }
    for (int i = 0; i < s->n_res_slots; i++) res_holds[i] = -1;
    for (int j = 0; j < s->n_tape_slots; j++) tape_holds[j] = -1;
    if (s->embed_slot < 0 || s->embed_slot >= s->n_res_slots) {
        snprintf(err, err_len, "schedule: embedding slot %d out of range", s->embed_slot);
        goto done;
    }
    res_holds[s->embed_slot] = 0;
    int next_fwd = 0, next_bwd = L - 1, final_written = 0;
    for (int k = 0; k < s->n_steps; k++) {
        const ScheduleStep *st = &s->steps[k];
        int before_head = k < s->n_forward;
        if (st->block < 0 || st->block >= L || st->in_slot < 0 || st->in_slot >= s->n_res_slots ||
            st->tape_slot < 0 || st->tape_slot >= s->n_tape_slots ||
            st->out_slot >= s->n_res_slots || st->out_slot < SLOT_FINAL) {
            snprintf(err, err_len, "schedule step %d: block or slot out of range", k);
            goto done;
        }
        if (res_holds[st->in_slot] != st->block) {
            snprintf(err, err_len, "schedule step %d: slot %d does not hold the input of block %d",
                     k, st->in_slot, st->block);
            goto done;
        }
        if (st->kind == STEP_FORWARD) {
            if (before_head && st->block != next_fwd++) {
                snprintf(err, err_len, "schedule step %d: forward out of order", k);
                goto done;
            }
            if (!before_head && st->block > next_bwd) {
                snprintf(err, err_len, "schedule step %d: re-forward of block %d after its backward",
                         k, st->block);
                goto done;
            }
            /* A tape slot that is overwritten loses the block it held. */
            tape_holds[st->tape_slot] = st->block;
            if (st->out_slot == SLOT_FINAL) {
                if (st->block != L - 1) {
                    snprintf(err, err_len, "schedule step %d: only block %d may write the final "
                             "residual", k, L - 1);
                    goto done;
                }
                final_written = 1;
            } else if (st->out_slot >= 0) {
                if (st->block == L - 1) {
                    snprintf(err, err_len, "schedule step %d: last block must write SLOT_FINAL", k);
                    goto done;
                }
                res_holds[st->out_slot] = st->block + 1;
            } else if (before_head) {
                snprintf(err, err_len, "schedule step %d: forward before the head drops its output",
                         k);
                goto done;
            }
        } else {
            if (before_head || st->block != next_bwd) {
                snprintf(err, err_len, "schedule step %d: backward of block %d out of order", k,
                         st->block);
                goto done;
            }
            if (tape_holds[st->tape_slot] != st->block) {
                snprintf(err, err_len, "schedule step %d: tape slot %d does not hold block %d", k,
                         st->tape_slot, st->block);
                goto done;
            }
            next_bwd--;
        }
    }
    if (next_fwd != L || !final_written || next_bwd != -1) {
        snprintf(err, err_len, "schedule: incomplete (forwards %d/%d, backwards %d/%d)", next_fwd,
                 L, L - 1 - next_bwd, L);
        goto done;
    }
    ok = 0;
done:
    free(res_holds);
    free(tape_holds);
    return ok;
}

int schedule_reforwards(const Schedule *s)
{
    int n = 0;
    for (int k = s->n_forward; k < s->n_steps; k++) n += s->steps[k].kind == STEP_FORWARD;
    return n;
}

const char *schedule_mode_name(int mode)
{
    switch (mode) {
    case RECOMPUTE_NONE: return "0 (store every block's tape)";
    case RECOMPUTE_BLOCK: return "1 (store block inputs; re-forward each block in backward)";
    default: return "unknown";
    }
}
