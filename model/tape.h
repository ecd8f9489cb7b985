/* model/tape.h — what one block's tape keeps, and what a backward rebuilds.
 *
 * Owns: the seven tensors a block forward leaves for its backward, tape
 * kinds as subsets of them, the layout of a tape of each kind, the layout
 * of the one tape workspace (shared by every block) where a kind's dropped
 * tensors live while a forward or a backward needs them, and the order in
 * which a backward rebuilds them. The planner sizes from these layouts,
 * the interpreter (gpt.c) points into them and the cost model (opcost.h)
 * prices the rebuilds; nothing else decides them.
 *
 * The tensors of block l (N = B*T rows, act dtype), each with the op that
 * makes it, which reads the one before it (ln1 reads x_l):
 *   TAPE_LN1   (N,C)   LayerNorm 1 of x_l (also writes its mean, rstd)
 *   TAPE_QKV   (N,3C)  qkv matmul
 *   TAPE_ATTY  (N,C)   attention, with its log-sum-exp (f32, B*NH*T)
 *   TAPE_RES2  (N,C)   attproj matmul, then + x_l (the mid-block residual)
 *   TAPE_LN2   (N,C)   LayerNorm 2 (also writes its mean, rstd)
 *   TAPE_FCH   (N,4C)  fc matmul (pre-GELU)
 *   TAPE_GELU  (N,4C)  GELU (post-GELU)
 * A tape kind is the set of tensors the tape DROPS, as a bit mask (bit t:
 * tensor t): 0 is the full tape of --recompute 0, TAPE_SELECTIVE drops
 * ln1, ln2 and the GELU output. Every one of the 128 kinds runs. The two
 * LayerNorms' mean and rstd (4N f32) are always kept.
 *
 * A backward reads every tensor. A dropped one is rebuilt right before
 * the first backward op that reads it (its input first, when that is
 * dropped too), by the op that made it, on the same bits: so the same
 * bits (the LayerNorms rewrite their kept stats with equal values). Each
 * dropped tensor is rebuilt once, so a kind's rebuild work is the sum of
 * its dropped tensors' ops. */
#ifndef MODEL_TAPE_H
#define MODEL_TAPE_H

#include <stddef.h>

enum { TAPE_LN1, TAPE_QKV, TAPE_ATTY, TAPE_RES2, TAPE_LN2, TAPE_FCH, TAPE_GELU, TAPE_TENSORS };

#define TAPE_FULL 0
#define TAPE_SELECTIVE ((1 << TAPE_LN1) | (1 << TAPE_LN2) | (1 << TAPE_GELU))
#define TAPE_KINDS (1 << TAPE_TENSORS) /* kinds are 0 .. TAPE_KINDS-1 */

/* The backward ops of a block, in the order the interpreter runs them, and
 * the tensors each reads: fcproj (GELU out), GELU (fch), fc (ln2), LN2
 * (res2), attproj (atty), attention (qkv, atty, LSE), qkv (ln1), LN1 (x_l
 * only). */
enum { TAPE_BWD_FCPROJ, TAPE_BWD_GELU, TAPE_BWD_FC, TAPE_BWD_LN2, TAPE_BWD_ATTPROJ,
       TAPE_BWD_ATTN, TAPE_BWD_QKV, TAPE_BWD_LN1, TAPE_BWD_OPS };

/* Where a tensor of a kind lives. A kept tensor: in the tape's own act
 * buffer, at element offset act[t]. A dropped one: act[t] =
 * TAPE_IN_WORKSPACE, and it lives in the tape workspace at byte offset
 * ws[t] (a multiple of 256, like every arena buffer, so that a tensor's
 * alignment is the same whether kept or rebuilt). The f32 buffer holds
 * ln1 mean, rstd, the LSE (when atty is kept; else it is in the workspace
 * at ws_lse), ln2 mean, rstd. ws_bytes: the workspace this kind needs, a
 * multiple of 256; 0 for the full tape. */
#define TAPE_IN_WORKSPACE ((size_t)-1)
typedef struct {
    size_t act[TAPE_TENSORS], act_elems;
    size_t ln1_mean, ln1_rstd, lse, ln2_mean, ln2_rstd, f32_elems;
    size_t ws[TAPE_TENSORS], ws_lse, ws_bytes;
} TapeLayout;

/* The layout of a tape of `kind` for N = B*T rows, C channels, NH heads,
 * act_bytes per activation. Dropped tensors share the workspace wherever
 * their lifetimes (in the forward, and in the backward with its rebuilds)
 * do not meet: placed largest first, each at the lowest offset clear of
 * those it meets. */
void tape_layout(TapeLayout *tl, int kind, size_t B, size_t T, size_t C, size_t NH,
                 size_t act_bytes);

/* Elements of tensor t, in units of N*C (ln1 1, qkv 3, ..., GELU 4). */
int tape_tensor_width(int t);
/* Short name of tensor t ("ln1", "qkv", "atty", "res2", "ln2", "fch", "gelu"). */
const char *tape_tensor_name(int t);

/* The tensors to rebuild right before backward op `op` of a tape of
 * `kind`, in order (an input before what is made from it), given *built:
 * the dropped tensors rebuilt so far in this backward (start at 0), which
 * is updated. Writes them to out; returns how many. */
int tape_rebuilds_before(int kind, int op, unsigned *built, int out[TAPE_TENSORS]);

/* A kind's name: one character per tensor, in order, the tensor's letter
 * when kept and '-' when dropped: "1qar2fg" is full, "-qar-f-" selective.
 * buf holds at least TAPE_TENSORS + 1 bytes; returns buf. */
char *tape_kind_name(int kind, char *buf);
/* Parse such a name; returns the kind, or -1. */
int tape_kind_parse(const char *name);

#endif
