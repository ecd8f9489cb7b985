/* model/tape.h — what one block's tape keeps, and what a backward rebuilds.
 *
 * Owns: tape kinds as subsets of a block's tape tensors (block_desc.h),
 * the layout of a tape of each kind, the layout of the one tape workspace
 * (shared by every block) where a kind's dropped tensors live while a
 * forward or a backward needs them, and the order in which a backward
 * rebuilds them; all computed from the block's description. The planner
 * sizes from these layouts, the interpreter (gpt.c) points into them and
 * the cost model (opcost.h) prices the rebuilds; nothing else decides them.
 *
 * A tape kind is the set of tensors the tape DROPS, as a bit mask (bit t:
 * tensor t): 0 is the full tape of --recompute 0, the description's
 * selective set that of --recompute selective. Every one of the
 * 2^n_tensors kinds runs. Side outputs the description marks SIDE_KEPT
 * are always kept.
 *
 * A backward reads every tensor. A dropped one is rebuilt right before
 * the first backward op that reads it (its inputs first, when those are
 * dropped too), by the ops that made it, on the same bits: so the same
 * bits (side outputs it rewrites get equal values). Each dropped tensor is
 * rebuilt once, so a kind's rebuild work is the sum of its dropped
 * tensors' ops. */
#ifndef MODEL_TAPE_H
#define MODEL_TAPE_H

#include <stddef.h>

#include "block_desc.h"

#define TAPE_FULL 0
/* Kinds are 0 .. tape_kinds(d)-1, at most TAPE_MAX_KINDS. */
#define TAPE_MAX_KINDS (1 << BLOCK_MAX_TENSORS)
static inline int tape_kinds(const BlockDesc *d) { return 1 << d->n_tensors; }

/* Where a tensor of a kind lives. A kept tensor: in the tape's own act
 * buffer, at element offset act[t]. A dropped one: act[t] =
 * TAPE_IN_WORKSPACE, and it lives in the tape workspace at byte offset
 * ws[t] (a multiple of 256, like every arena buffer, so that a tensor's
 * alignment is the same whether kept or rebuilt). The f32 buffer holds the
 * side outputs, in the description's order: side[s] is an element offset
 * there, or TAPE_IN_WORKSPACE for a SIDE_FOLLOWS one whose tensor is
 * dropped (then at byte offset ws_side[s] in the workspace). ws_bytes: the
 * workspace this kind needs, a multiple of 256; 0 for the full tape. */
#define TAPE_IN_WORKSPACE ((size_t)-1)
typedef struct {
    size_t act[BLOCK_MAX_TENSORS], act_elems;
    size_t side[BLOCK_MAX_SIDES], f32_elems;
    size_t ws[BLOCK_MAX_TENSORS], ws_side[BLOCK_MAX_SIDES], ws_bytes;
} TapeLayout;

/* The layout of a tape of `kind` of block d at shape sh, act_bytes per
 * activation. Dropped tensors share the workspace wherever their
 * lifetimes (in the forward, and in the backward with its rebuilds) do
 * not meet: placed largest first, each at the lowest offset clear of
 * those it meets. */
void tape_layout(TapeLayout *tl, const BlockDesc *d, int kind, const BlockShape *sh,
                 size_t act_bytes);

/* Elements of tensor t at sh (all N rows). */
size_t tape_tensor_elems(const BlockDesc *d, int t, const BlockShape *sh);

/* The tensors to rebuild right before backward op `op` of a tape of
 * `kind`, in order (an input before what is made from it), given *built:
 * the dropped tensors rebuilt so far in this backward (start at 0), which
 * is updated. Writes them to out; returns how many. */
int tape_rebuilds_before(const BlockDesc *d, int kind, int op, TensorSet *built,
                         int out[BLOCK_MAX_TENSORS]);

/* A kind's name: one character per tensor, in order, the tensor's letter
 * when kept and '-' when dropped: GPT-2's "1qar2fg" is full, "-qar-f-"
 * selective. buf holds at least BLOCK_MAX_TENSORS + 1 bytes; returns buf. */
char *tape_kind_name(const BlockDesc *d, int kind, char *buf);
/* Parse such a name; returns the kind, or -1. */
int tape_kind_parse(const BlockDesc *d, const char *name);

#endif
