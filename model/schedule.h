/* model/schedule.h — where recompute is decided.
 *
 * Owns: the recompute schedule, an explicit program over the chain of L
 * transformer blocks, and its generators (one per --recompute mode; the
 * budgeted one lives in solver.h) and validator. The interpreter that runs a
 * schedule is gpt_step() in gpt.c; the planner sizes its slots. No other
 * file decides what is stored.
 *
 * Memory the schedule names:
 *   residual slots  each holds one block input x_l, (B,T,C) activations.
 *                   Slots [0, n_res_stored) live from forward to backward
 *                   ("stored activations"); the rest are workspace.
 *   tape slots      each holds one block's internal tape, of a kind
 *                   (model/tape.h): the subset of the block's tape tensors
 *                   (its description, model/block_desc.h) it drops. A FULL
 *                   tape (kind 0) keeps them all; a SELECTIVE tape drops
 *                   the description's selective set (GPT-2: the two
 *                   LayerNorm outputs and the GELU output, keeping 9C of
 *                   15C per token). Dropped tensors live in one tape
 *                   workspace shared by every block while a forward or
 *                   backward needs them; a backward rebuilds them from x_l
 *                   and what its tape keeps. Slots [0, n_tape_stored) are
 *                   stored; the rest are workspace.
 *   "Stored" means exactly: the slot's content at the loss head is read
 *   after it. schedule_validate checks the labels.
 * Steps:
 *   FORWARD(l, in, out, tape)  run block l on x_l read from residual slot
 *       `in`, writing its tape into tape slot `tape` and x_{l+1} into slot
 *       `out`. out may equal in: x_l is dead once the mid-block residual is
 *       formed, so a forward may advance a slot in place. out = SLOT_FINAL
 *       writes the final residual (last block); out = SLOT_NONE skips the
 *       block's output-only ops (block_desc.h; GPT-2's output projection
 *       and residual add), which backward never reads (re-forwards stop at
 *       the GELU).
 *   BACKWARD(l, in, tape)      backward of block l from x_l in `in` and its
 *       tape; the residual-stream gradient is updated in place.
 * Steps [0, n_forward) run before the loss head, the rest after it. */
#ifndef MODEL_SCHEDULE_H
#define MODEL_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tape.h"

typedef enum {
    RECOMPUTE_NONE = 0,      /* --recompute 0: every block keeps its full tape */
    RECOMPUTE_BLOCK = 1,     /* --recompute 1: keep x_l only; re-forward each block */
    RECOMPUTE_SEGMENTS = 2,  /* --recompute 2: x_l every k blocks; re-run segments taped */
    RECOMPUTE_SELECTIVE = 3, /* --recompute selective: every block keeps a selective tape */
    RECOMPUTE_AUTO = 4,      /* --recompute auto: least predicted time within a budget */
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
    /* Forwards only: 1 when the step's closing residual add also writes
     * the LayerNorm read next, in the same op (bit for bit the add and
     * the LayerNorm; see schedule_fuse_layernorms): LN_f, or the next
     * block's first tensor (block_desc.h's fuse_writes). */
    int fuse_next_ln;
} ScheduleStep;

typedef struct {
    int mode;          /* RecomputeMode that generated it */
    int num_layers;
    int checkpoint_every; /* segments (mode 2, or auto when it picks them): k; 0 otherwise */
    int embed_slot;    /* residual slot the embedding writes x_0 into */
    int n_res_slots, n_res_stored;
    /* --offload checkpoints: of the stored residual slots, the last
     * n_res_kept ([n_res_stored - n_res_kept, n_res_stored)) stay on the
     * device and the rest go to the host (schedule_res_host); 0, the
     * default: all go. --recompute auto sets it; without offload it is
     * ignored. */
    int n_res_kept;
    int n_tape_slots, n_tape_stored;
    int n_forward;     /* steps before the loss head */
    int n_steps, cap_steps;
    ScheduleStep *steps;
    uint32_t *tape_kind; /* kind of each tape slot (tape.h: the tensors it drops) */
    const BlockDesc *block; /* the block the kinds and fusions are of (static data) */
} Schedule;

/* Build the schedule for modes 0, 1, 2 (k = round(sqrt L)) and selective.
 * Returns 0, or -1 with a reason in err. Auto schedules come from
 * solver_schedule (solver.h), which needs a budget. */
int schedule_build(Schedule *s, const BlockDesc *block, int mode, int num_layers, char *err,
                   size_t err_len);
/* Chen et al.'s segments: x_l kept for l = 0, k, 2k, ...; in backward each
 * segment is re-run from its checkpoint with full tapes (k workspace tapes,
 * k-1 workspace inputs) and then back-propagated. 1 <= k <= L. */
int schedule_build_segments(Schedule *s, const BlockDesc *block, int num_layers, int k,
                            char *err, size_t err_len);
/* The inputs-kept family --recompute auto searches (planner_auto_family
 * in planner.h): every block input x_l is stored (L residual slots, as in
 * mode 1); the top n_hi blocks keep a tape of kind hi, the n_lo blocks
 * below them a tape of kind lo, and the lowest L - n_hi - n_lo blocks are
 * re-forwarded in backward into one tape of kind hi, as mode 1 does. That
 * tape is block L-1's kept one when n_hi > 0 (its backward runs before
 * any re-forward, so the slot is free by then; the solver finds the same
 * sharing), else one workspace tape. With hi full and lo selective:
 * n_hi = L is mode 0's program, n_lo = L selective's, n_hi = n_lo = 0
 * mode 1's; the mode is RECOMPUTE_AUTO in all. Finalized.
 * n_hi, n_lo >= 0, n_hi + n_lo <= L; kinds in 0..tape_kinds(block)-1. */
int schedule_build_inputs_kept(Schedule *s, const BlockDesc *block, int num_layers, int n_hi,
                               int n_lo, int hi_kind, int lo_kind, char *err, size_t err_len);
/* round(sqrt(L)), the default --checkpoint-every. */
int schedule_default_checkpoint_every(int num_layers);
void schedule_free(Schedule *s);

/* Lower-level construction, for generators: an empty schedule with the
 * given slots (all tapes FULL, nothing stored), steps appended with
 * schedule_push (which grows the array), then schedule_finalize, which
 * drops slots no step touches and renumbers the rest so that the slots
 * live across the head come first, setting n_res_stored/n_tape_stored. */
int schedule_init(Schedule *s, const BlockDesc *block, int mode, int num_layers,
                  int n_res_slots, int n_tape_slots);
int schedule_push(Schedule *s, int kind, int block, int in, int out, int tape);
int schedule_finalize(Schedule *s, char *err, size_t err_len);
/* Decide, once, which forwards fuse the next LayerNorm into their closing
 * residual add (fuse_next_ln): every step where it is legal, which is
 *   - the last forward before the head (it writes SLOT_FINAL): LN_f;
 *   - a forward whose next step, in the same part (before the head, or
 *     after it), forwards block+1 from this step's out slot: that block's
 *     first tensor (the description's fuse_writes; GPT-2's LN1), a moment
 *     early. Nothing runs between the two steps; the add reads only this
 *     block's fuse_reads (GPT-2's res2) and the out slot. So it is legal
 *     unless the two may share bytes: when the next tape's kind drops one
 *     of fuse_writes and this one's one of fuse_reads, both live in the
 *     one tape workspace, at offsets (tape_layout) that depend on the
 *     shape, which the schedule does not know, so those are not fused.
 * Clears every other step's flag. schedule_finalize and the generators
 * call it last; call it again after changing tape kinds. */
void schedule_fuse_layernorms(Schedule *s);

/* ---- offloaded checkpoints (--offload checkpoints; model/planner.h) ----
 * The stored residual slots live in the host tier, one host slot each (all
 * but the last n_res_kept, which stay on the device like workspace slots),
 * and every access to one goes through a device ring of n_ring residual
 * slots. "Stored" below means those on the host.
 * schedule_offload turns a schedule into the copies that make this so,
 * decided once, so the interpreter only replays them:
 *   OFF_OUT(h, r)  copy ring slot r to host slot h: after the forward step
 *                  (or the embedding) that last writes stored slot h before
 *                  the head;
 *   OFF_IN(h, r)   copy host slot h into ring slot r: in backward, as early
 *                  as a ring slot is free: one whose holder is not read again
 *                  before h is (the prefetch: with two slots, x_{l-1} comes in
 *                  while block l re-forwards and back-propagates from x_l);
 *   OFF_WAIT(r)    the step after it waits for ring slot r's copies: before
 *                  a forward writes r (an OUT may still be reading it) and
 *                  before a step reads r after an IN.
 * Each ring slot r is copy event r (kernels/ops.h, event_wait). A stored
 * input still in the ring at the head is read from there, not fetched. The
 * first write into each ring slot in a pass waits for it (the last pass may
 * have left a copy in flight). Needs: no forward reads a stored slot after
 * n_ring later stored writes, and no step after the head writes a stored
 * slot (every fixed mode satisfies both); else -1 with err. */
typedef enum { OFF_WAIT = 0, OFF_OUT = 1, OFF_IN = 2 } OffloadActKind;
typedef struct {
    int kind; /* OffloadActKind */
    int host; /* host slot (= the stored residual slot); OFF_WAIT: -1 */
    int ring; /* ring slot, also the copy event */
} OffloadAct;
/* Positions: before and after each step k, and the embedding as k = -1. */
#define OFFLOAD_BEFORE(k) (2 * ((k) + 1))
#define OFFLOAD_AFTER(k) (2 * ((k) + 1) + 1)
typedef struct {
    int n_ring, n_steps;
    int embed_ring;          /* ring slot the embedding writes x_0 into; -1: not stored */
    int *in_ring, *out_ring; /* per step: ring slot standing for in_slot / out_slot; -1 */
    int *first;              /* acts at position p: acts[first[p] .. first[p+1]) */
    OffloadAct *acts;
    int n_acts, n_in, n_out; /* n_in, n_out: copies in and out per pass */
} OffloadProgram;

int schedule_offload(const Schedule *s, int n_ring, OffloadProgram *op, char *err,
                     size_t err_len);
/* The stored residual slots that live on the host under --offload
 * checkpoints: [0, schedule_res_host(s)). */
static inline int schedule_res_host(const Schedule *s)
{
    int k = s->n_res_kept < 0 ? 0 : s->n_res_kept > s->n_res_stored ? s->n_res_stored
                                                                      : s->n_res_kept;
    return s->n_res_stored - k;
}
void schedule_offload_free(OffloadProgram *op);

/* Simulate the schedule and check that every step reads what it needs:
 * forwards run 0..L-1 in order before the head, the last into SLOT_FINAL;
 * backwards run L-1..0 after it, each with x_l and block l's tape in place;
 * a slot is labelled stored exactly when it is live across the head;
 * fuse_next_ln is set only where schedule_fuse_layernorms allows it.
 * Returns 0, or -1 with the first fault in err. */
int schedule_validate(const Schedule *s, char *err, size_t err_len);

/* Number of block forwards that run after the loss head (re-forwards). */
int schedule_reforwards(const Schedule *s);
/* Number of tape slots of a kind, and of those that are stored. */
int schedule_count_tapes(const Schedule *s, int kind, int *stored);

/* What the forward sweep leaves for each block at the loss head, one
 * character per block into buf (L+1 bytes): 'F' full tape, 'S' selective
 * tape (the description's selective kind), 'A', 'B', ... a tape of another kind (in increasing kind order;
 * schedule_print names them), 'x' block input only, '-' nothing.
 * Returns buf. */
char *schedule_describe(const Schedule *s, char *buf, size_t len);
/* Print a summary (slots, re-forwards, what each block keeps) and, when
 * with_steps, the step program. */
void schedule_print(FILE *f, const Schedule *s, int with_steps);

/* Parse a --recompute value: "0", "1", "2", "selective", "auto". Returns 0
 * and the RecomputeMode in *mode, or -1. */
int schedule_parse_mode(const char *str, int *mode);
/* Name of a mode for printing, and its --recompute value ("selective"). */
const char *schedule_mode_name(int mode);
const char *schedule_mode_flag(int mode);

#endif
