/* model/schedule.h — where recompute is decided.
 *
 * Owns: the recompute schedule, an explicit program over the chain of L
 * transformer blocks, and its generators (one per --recompute mode) and
 * validator. The interpreter that runs a schedule is gpt_step() in gpt.c;
 * the planner sizes its slots. No other file decides what is stored.
 *
 * Memory the schedule names:
 *   residual slots  each holds one block input x_l, (B,T,C) activations.
 *                   Slots [0, n_res_stored) live from forward to backward
 *                   ("stored activations"); the rest are workspace.
 *   tape slots      each holds one block's internal tape (LayerNorm outputs
 *                   and stats, qkv, attention output and LSE, the mid-block
 *                   residual, MLP pre- and post-GELU). Slots
 *                   [0, n_tape_stored) are stored; the rest are workspace.
 * Steps:
 *   FORWARD(l, in, out, tape)  run block l on x_l read from residual slot
 *       `in`, writing its tape into tape slot `tape` and x_{l+1} into slot
 *       `out`. out = SLOT_FINAL writes the final residual (last block);
 *       out = SLOT_NONE skips the block's output projection and residual
 *       add, which backward never reads (re-forwards stop at the GELU).
 *   BACKWARD(l, in, tape)      backward of block l from x_l in `in` and its
 *       tape; the residual-stream gradient is updated in place.
 * Steps [0, n_forward) run before the loss head, the rest after it. */
#ifndef MODEL_SCHEDULE_H
#define MODEL_SCHEDULE_H

#include <stddef.h>

typedef enum {
    RECOMPUTE_NONE = 0,      /* --recompute 0: every block keeps its full tape */
    RECOMPUTE_BLOCK = 1,     /* --recompute 1: keep x_l only; re-forward each block */
} RecomputeMode;

typedef enum { STEP_FORWARD = 0, STEP_BACKWARD = 1 } StepKind;

#define SLOT_NONE (-1)
#define SLOT_FINAL (-2)

typedef struct {
    int kind;     /* StepKind */
    int block;    /* 0..L-1 */
    int in_slot;  /* residual slot holding x_block */
    int out_slot; /* residual slot for x_{block+1}, SLOT_FINAL or SLOT_NONE */
    int tape_slot;
} ScheduleStep;

typedef struct {
    int mode;          /* RecomputeMode that generated it */
    int num_layers;
    int embed_slot;    /* residual slot the embedding writes x_0 into */
    int n_res_slots, n_res_stored;
    int n_tape_slots, n_tape_stored;
    int n_forward;     /* steps before the loss head */
    int n_steps;
    ScheduleStep *steps;
} Schedule;

/* Build the schedule for a mode. Returns 0, or -1 with a reason in err. */
int schedule_build(Schedule *s, int mode, int num_layers, char *err, size_t err_len);
void schedule_free(Schedule *s);

/* Simulate the schedule and check that every step reads what it needs:
 * forwards run 0..L-1 in order before the head, the last into SLOT_FINAL;
 * backwards run L-1..0 after it, each with x_l and block l's tape in place.
 * Returns 0, or -1 with the first fault in err. */
int schedule_validate(const Schedule *s, char *err, size_t err_len);

/* Number of block forwards that run after the loss head (re-forwards). */
int schedule_reforwards(const Schedule *s);

/* Name of a mode for printing ("0", "1"). */
const char *schedule_mode_name(int mode);

#endif
