/* model/tape.c — see tape.h. Everything here is computed from the
 * block's description (block_desc.h). */
#include "tape.h"

#include <string.h>

#define BIT(t) TENSOR_BIT(t)
/* Workspace items: tensors 0 .. n_tensors-1, then side output s as item
 * n_tensors + s. */
#define MAX_ITEMS (BLOCK_MAX_TENSORS + BLOCK_MAX_SIDES)

size_t tape_tensor_elems(const BlockDesc *d, int t, const BlockShape *sh)
{
    return t >= 0 && t < d->n_tensors ? block_dim(sh, d->tensor[t].width) * sh->N : 0;
}

static void rebuild(const BlockDesc *d, int kind, int t, TensorSet *built, int *out, int *n)
{
    if (!(kind & BIT(t)) || (*built & BIT(t))) return;
    TensorSet in = block_inputs(d, t); /* made before t: the recursion ends */
    for (int u = 0; u < d->n_tensors; u++)
        if (in & BIT(u)) rebuild(d, kind, u, built, out, n);
    out[(*n)++] = t;
    *built |= BIT(t);
}

int tape_rebuilds_before(const BlockDesc *d, int kind, int op, TensorSet *built,
                         int out[BLOCK_MAX_TENSORS])
{
    int n = 0;
    if (op < 0 || op >= d->n_bwd) return 0;
    for (int t = 0; t < d->n_tensors; t++)
        if (d->bwd[op].reads & BIT(t)) rebuild(d, kind, t, built, out, &n);
    return n;
}

/* Lifetimes of the dropped tensors, as closed intervals of event numbers:
 * in the forward (events = its ops: from the first that writes a tensor to
 * the last that reads it) and in the backward (events = each rebuild and
 * each backward op, in the order they run). */
typedef struct { int fwd[2], bwd[2]; } Life;

static void lifetimes(const BlockDesc *d, int kind, Life life[BLOCK_MAX_TENSORS])
{
    for (int t = 0; t < d->n_tensors; t++) {
        int w = block_first_write(d, t), r = block_last_read(d, t);
        life[t].fwd[0] = w;
        life[t].fwd[1] = r > w ? r : w;
        life[t].bwd[0] = life[t].bwd[1] = -1;
    }
    TensorSet built = 0;
    int e = 0, list[BLOCK_MAX_TENSORS];
    for (int op = 0; op < d->n_bwd; op++) {
        int n = tape_rebuilds_before(d, kind, op, &built, list);
        for (int i = 0; i < n; i++, e++) {
            int t = list[i];
            life[t].bwd[0] = life[t].bwd[1] = e;
            TensorSet in = block_inputs(d, t) & (TensorSet)kind; /* its dropped inputs */
            for (int u = 0; u < d->n_tensors; u++)
                if (in & BIT(u)) life[u].bwd[1] = e;
        }
        for (int t = 0; t < d->n_tensors; t++)
            if ((d->bwd[op].reads & BIT(t)) && (kind & BIT(t))) life[t].bwd[1] = e;
        e++;
    }
}

static int meet(const int a[2], const int b[2]) { return a[0] <= b[1] && b[0] <= a[1]; }

static size_t round256(size_t b) { return (b + 255) / 256 * 256; }

/* Items placed in the workspace: the dropped tensors, then the side
 * outputs that follow a dropped tensor (living as long as it). */
static void place_workspace(TapeLayout *tl, const BlockDesc *d, int kind,
                            const size_t size[MAX_ITEMS])
{
    Life life[BLOCK_MAX_TENSORS];
    lifetimes(d, kind, life);
    int items[MAX_ITEMS], owner[MAX_ITEMS], n = 0, nt = d->n_tensors;
    for (int t = 0; t < nt; t++) owner[t] = t;
    for (int s = 0; s < d->n_sides; s++) owner[nt + s] = d->side[s].tensor;
    for (int t = 0; t < nt; t++)
        if (kind & BIT(t)) items[n++] = t;
    for (int s = 0; s < d->n_sides; s++)
        if (d->side[s].policy == SIDE_FOLLOWS && (kind & BIT(d->side[s].tensor)))
            items[n++] = nt + s;
    /* largest first; equal sizes in item order (insertion sort: stable) */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && size[items[j]] > size[items[j - 1]]; j--) {
            int x = items[j];
            items[j] = items[j - 1];
            items[j - 1] = x;
        }
    size_t off[MAX_ITEMS] = {0}, top = 0;
    for (int i = 0; i < n; i++) {
        int a = items[i];
        const Life *la = &life[owner[a]];
        /* candidates: 0 and the end of every placed item it meets */
        size_t best = (size_t)-1;
        for (int c = -1; c < i; c++) {
            int b = c < 0 ? -1 : items[c];
            if (c >= 0 && !meet(la->fwd, life[owner[b]].fwd) && !meet(la->bwd, life[owner[b]].bwd))
                continue;
            size_t at = c < 0 ? 0 : off[b] + size[b];
            int clear = at < best;
            for (int k = 0; k < i && clear; k++) {
                int o = items[k];
                const Life *lo = &life[owner[o]];
                int conflict = meet(la->fwd, lo->fwd) || meet(la->bwd, lo->bwd);
                if (conflict && at < off[o] + size[o] && off[o] < at + size[a]) clear = 0;
            }
            if (clear) best = at;
        }
        off[a] = best;
        if (best + size[a] > top) top = best + size[a];
    }
    for (int t = 0; t < nt; t++) tl->ws[t] = (kind & BIT(t)) ? off[t] : 0;
    for (int s = 0; s < d->n_sides; s++)
        tl->ws_side[s] = tl->side[s] == TAPE_IN_WORKSPACE ? off[nt + s] : 0;
    tl->ws_bytes = top;
}

void tape_layout(TapeLayout *tl, const BlockDesc *d, int kind, const BlockShape *sh,
                 size_t act_bytes)
{
    memset(tl, 0, sizeof *tl);
    size_t o = 0, size[MAX_ITEMS] = {0};
    int nt = d->n_tensors;
    for (int t = 0; t < nt; t++) {
        size_t elems = tape_tensor_elems(d, t, sh);
        size[t] = round256(elems * act_bytes);
        if (kind & BIT(t)) {
            tl->act[t] = TAPE_IN_WORKSPACE;
        } else {
            tl->act[t] = o;
            o += elems;
        }
    }
    tl->act_elems = o;
    o = 0;
    for (int s = 0; s < d->n_sides; s++) {
        size_t elems = block_dim(sh, d->side[s].width) * sh->N;
        size[nt + s] = round256(elems * 4);
        if (d->side[s].policy == SIDE_FOLLOWS && (kind & BIT(d->side[s].tensor))) {
            tl->side[s] = TAPE_IN_WORKSPACE;
        } else {
            tl->side[s] = o;
            o += elems;
        }
    }
    tl->f32_elems = o;
    place_workspace(tl, d, kind, size);
}

char *tape_kind_name(const BlockDesc *d, int kind, char *buf)
{
    for (int t = 0; t < d->n_tensors; t++) buf[t] = (kind & BIT(t)) ? '-' : d->tensor[t].letter;
    buf[d->n_tensors] = '\0';
    return buf;
}

int tape_kind_parse(const BlockDesc *d, const char *name)
{
    if (!name || strlen(name) != (size_t)d->n_tensors) return -1;
    int kind = 0;
    for (int t = 0; t < d->n_tensors; t++) {
        if (name[t] == '-') kind |= (int)BIT(t);
        else if (name[t] != d->tensor[t].letter) return -1;
    }
    return kind;
}
