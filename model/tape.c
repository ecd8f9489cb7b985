/* model/tape.c — see tape.h. */
#include "tape.h"

#include <string.h>

#define BIT(t) (1u << (t))

static const int WIDTH[TAPE_TENSORS] = {1, 3, 1, 1, 1, 4, 4};
static const char *NAME[TAPE_TENSORS] = {"ln1", "qkv", "atty", "res2", "ln2", "fch", "gelu"};
static const char LETTER[TAPE_TENSORS] = {'1', 'q', 'a', 'r', '2', 'f', 'g'};

/* What each backward op reads (tape.h). */
static const unsigned BWD_READS[TAPE_BWD_OPS] = {
    BIT(TAPE_GELU), BIT(TAPE_FCH), BIT(TAPE_LN2), BIT(TAPE_RES2),
    BIT(TAPE_ATTY), BIT(TAPE_QKV) | BIT(TAPE_ATTY), BIT(TAPE_LN1), 0,
};

/* The forward, op by op (gpt.c's block_forward): LN1, qkv, attention,
 * attproj, + x, LN2, fc, GELU, fcproj, + res2. Tensor t is written by op
 * FWD_WRITE[t] and last read by op FWD_LAST_READ[t] (res2 by the final
 * residual add). */
static const int FWD_WRITE[TAPE_TENSORS] = {0, 1, 2, 3, 5, 6, 7};
static const int FWD_LAST_READ[TAPE_TENSORS] = {1, 2, 3, 9, 6, 7, 8};

int tape_tensor_width(int t) { return t >= 0 && t < TAPE_TENSORS ? WIDTH[t] : 0; }
const char *tape_tensor_name(int t) { return t >= 0 && t < TAPE_TENSORS ? NAME[t] : "?"; }

static void rebuild(int kind, int t, unsigned *built, int *out, int *n)
{
    if (!(kind & BIT(t)) || (*built & BIT(t))) return;
    if (t > 0) rebuild(kind, t - 1, built, out, n); /* t's op reads tensor t-1 (ln1: x_l) */
    out[(*n)++] = t;
    *built |= BIT(t);
}

int tape_rebuilds_before(int kind, int op, unsigned *built, int out[TAPE_TENSORS])
{
    int n = 0;
    if (op < 0 || op >= TAPE_BWD_OPS) return 0;
    for (int t = 0; t < TAPE_TENSORS; t++)
        if (BWD_READS[op] & BIT(t)) rebuild(kind, t, built, out, &n);
    return n;
}

/* Lifetimes of the dropped tensors, as closed intervals of event numbers:
 * in the forward (events = its ops) and in the backward (events = each
 * rebuild and each backward op, in the order they run). */
typedef struct { int fwd[2], bwd[2]; } Life;

static void lifetimes(int kind, Life life[TAPE_TENSORS])
{
    for (int t = 0; t < TAPE_TENSORS; t++) {
        life[t].fwd[0] = FWD_WRITE[t];
        life[t].fwd[1] = FWD_LAST_READ[t];
        life[t].bwd[0] = life[t].bwd[1] = -1;
    }
    unsigned built = 0;
    int e = 0, list[TAPE_TENSORS];
    for (int op = 0; op < TAPE_BWD_OPS; op++) {
        int n = tape_rebuilds_before(kind, op, &built, list);
        for (int i = 0; i < n; i++, e++) {
            int t = list[i];
            life[t].bwd[0] = life[t].bwd[1] = e;
            if (t > 0 && (kind & BIT(t - 1))) life[t - 1].bwd[1] = e; /* its input */
        }
        for (int t = 0; t < TAPE_TENSORS; t++)
            if ((BWD_READS[op] & BIT(t)) && (kind & BIT(t))) life[t].bwd[1] = e;
        e++;
    }
}

static int meet(const int a[2], const int b[2]) { return a[0] <= b[1] && b[0] <= a[1]; }

static size_t round256(size_t b) { return (b + 255) / 256 * 256; }

/* Items placed in the workspace: the dropped tensors, and the LSE (item
 * TAPE_TENSORS, living as long as atty) when atty is dropped. */
static void place_workspace(TapeLayout *tl, int kind, const size_t size[TAPE_TENSORS + 1])
{
    Life life[TAPE_TENSORS];
    lifetimes(kind, life);
    int items[TAPE_TENSORS + 1], n = 0;
    for (int t = 0; t < TAPE_TENSORS; t++)
        if (kind & BIT(t)) items[n++] = t;
    if (kind & BIT(TAPE_ATTY)) items[n++] = TAPE_TENSORS;
    /* largest first; equal sizes in tensor order (insertion sort: stable) */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && size[items[j]] > size[items[j - 1]]; j--) {
            int x = items[j];
            items[j] = items[j - 1];
            items[j - 1] = x;
        }
    size_t off[TAPE_TENSORS + 1] = {0}, top = 0;
    for (int i = 0; i < n; i++) {
        int a = items[i], la = a == TAPE_TENSORS ? TAPE_ATTY : a;
        /* candidates: 0 and the end of every placed item it meets */
        size_t best = (size_t)-1;
        for (int c = -1; c < i; c++) {
            int b = c < 0 ? -1 : items[c], lb = b == TAPE_TENSORS ? TAPE_ATTY : b;
            if (c >= 0 && !meet(life[la].fwd, life[lb].fwd) && !meet(life[la].bwd, life[lb].bwd))
                continue;
            size_t at = c < 0 ? 0 : off[b] + size[b];
            int clear = at < best;
            for (int d = 0; d < i && clear; d++) {
                int o = items[d], lo = o == TAPE_TENSORS ? TAPE_ATTY : o;
                int conflict = meet(life[la].fwd, life[lo].fwd) || meet(life[la].bwd, life[lo].bwd);
                if (conflict && at < off[o] + size[o] && off[o] < at + size[a]) clear = 0;
            }
            if (clear) best = at;
        }
        off[a] = best;
        if (best + size[a] > top) top = best + size[a];
    }
    for (int t = 0; t < TAPE_TENSORS; t++) tl->ws[t] = (kind & BIT(t)) ? off[t] : 0;
    tl->ws_lse = (kind & BIT(TAPE_ATTY)) ? off[TAPE_TENSORS] : 0;
    tl->ws_bytes = top;
}

void tape_layout(TapeLayout *tl, int kind, size_t B, size_t T, size_t C, size_t NH,
                 size_t act_bytes)
{
    memset(tl, 0, sizeof *tl);
    size_t N = B * T, o = 0, size[TAPE_TENSORS + 1];
    for (int t = 0; t < TAPE_TENSORS; t++) {
        size[t] = round256((size_t)WIDTH[t] * N * C * act_bytes);
        if (kind & BIT(t)) {
            tl->act[t] = TAPE_IN_WORKSPACE;
        } else {
            tl->act[t] = o;
            o += (size_t)WIDTH[t] * N * C;
        }
    }
    tl->act_elems = o;
    size[TAPE_TENSORS] = round256(B * NH * T * 4);
    int lse_kept = !(kind & BIT(TAPE_ATTY));
    o = 0;
    tl->ln1_mean = o; o += N;
    tl->ln1_rstd = o; o += N;
    tl->lse = lse_kept ? o : TAPE_IN_WORKSPACE;
    if (lse_kept) o += B * NH * T;
    tl->ln2_mean = o; o += N;
    tl->ln2_rstd = o; o += N;
    tl->f32_elems = o;
    place_workspace(tl, kind, size);
}

char *tape_kind_name(int kind, char *buf)
{
    for (int t = 0; t < TAPE_TENSORS; t++) buf[t] = (kind & BIT(t)) ? '-' : LETTER[t];
    buf[TAPE_TENSORS] = '\0';
    return buf;
}

int tape_kind_parse(const char *name)
{
    if (!name || strlen(name) != TAPE_TENSORS) return -1;
    int kind = 0;
    for (int t = 0; t < TAPE_TENSORS; t++) {
        if (name[t] == '-') kind |= (int)BIT(t);
        else if (name[t] != LETTER[t]) return -1;
    }
    return kind;
}
