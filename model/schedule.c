/* model/schedule.c — see schedule.h: building blocks, finalize, the
 * validator, and describing a schedule. The generators are in
 * schedule_build.c. */
#include "schedule.h"

#include <stdlib.h>
#include <string.h>

int schedule_init(Schedule *s, const BlockDesc *block, int mode, int L, int n_res, int n_tape)
{
    memset(s, 0, sizeof *s);
    s->block = block;
    s->mode = mode;
    s->num_layers = L;
    s->n_res_slots = n_res;
    s->n_tape_slots = n_tape;
    s->cap_steps = 3 * L;
    s->steps = calloc((size_t)s->cap_steps, sizeof *s->steps);
    s->tape_kind = calloc((size_t)n_tape + 1, sizeof *s->tape_kind); /* TAPE_FULL = 0 */
    if (!s->steps || !s->tape_kind) {
        schedule_free(s);
        return -1;
    }
    return 0;
}

int schedule_push(Schedule *s, int kind, int block, int in, int out, int tape)
{
    if (s->n_steps == s->cap_steps) {
        int cap = 2 * s->cap_steps + 16;
        ScheduleStep *p = realloc(s->steps, sizeof *p * (size_t)cap);
        if (!p) return -1;
        s->steps = p;
        s->cap_steps = cap;
    }
    ScheduleStep *st = &s->steps[s->n_steps++];
    st->kind = kind;
    st->block = block;
    st->in_slot = in;
    st->out_slot = out;
    st->tape_slot = tape;
    st->fuse_next_ln = 0;
    return 0;
}

/* 1 when forward step k may fuse the next LayerNorm into its closing
 * residual add (schedule.h: schedule_fuse_layernorms says why). */
static int ln_fusable(const Schedule *s, int k)
{
    const ScheduleStep *st = &s->steps[k];
    if (st->kind != STEP_FORWARD || st->out_slot == SLOT_NONE) return 0;
    if (!s->block->fuse_writes) return 0; /* a family without the fused add (Llama's) */
    if (st->out_slot == SLOT_FINAL) return k == s->n_forward - 1;
    int end = k < s->n_forward ? s->n_forward : s->n_steps; /* this part's steps */
    if (k + 1 >= end) return 0;
    const ScheduleStep *nx = &s->steps[k + 1];
    if (nx->kind != STEP_FORWARD || nx->block != st->block + 1 || nx->in_slot != st->out_slot)
        return 0;
    if (st->tape_slot < 0 || st->tape_slot >= s->n_tape_slots || nx->tape_slot < 0 ||
        nx->tape_slot >= s->n_tape_slots)
        return 0;
    /* the next block's first tensor and what this add reads, both in the workspace */
    int writes_in_ws = (s->tape_kind[nx->tape_slot] & s->block->fuse_writes) != 0;
    int reads_in_ws = (s->tape_kind[st->tape_slot] & s->block->fuse_reads) != 0;
    return !(writes_in_ws && reads_in_ws);
}

void schedule_fuse_layernorms(Schedule *s)
{
    for (int k = 0; k < s->n_steps; k++) s->steps[k].fuse_next_ln = ln_fusable(s, k);
}

void schedule_free(Schedule *s)
{
    free(s->steps);
    free(s->tape_kind);
    s->steps = NULL;
    s->tape_kind = NULL;
    s->n_steps = s->cap_steps = 0;
}

/* Which slots' contents at the loss head are read after it: the first
 * access after the head is a read. res_live and tape_live are zeroed here. */
static void live_at_head(const Schedule *s, char *res_live, char *tape_live)
{
    /* seen: 0 not yet accessed after the head, 1 accessed */
    char *res_seen = calloc((size_t)s->n_res_slots + 1, 1);
    char *tape_seen = calloc((size_t)s->n_tape_slots + 1, 1);
    memset(res_live, 0, (size_t)s->n_res_slots);
    memset(tape_live, 0, (size_t)s->n_tape_slots);
    if (!res_seen || !tape_seen) goto done;
    for (int k = s->n_forward; k < s->n_steps; k++) {
        const ScheduleStep *st = &s->steps[k];
        int in = st->in_slot, t = st->tape_slot, out = st->out_slot;
        if (in >= 0 && in < s->n_res_slots && !res_seen[in]) res_seen[in] = res_live[in] = 1;
        if (t >= 0 && t < s->n_tape_slots && !tape_seen[t]) {
            tape_seen[t] = 1;
            tape_live[t] = st->kind == STEP_BACKWARD; /* a forward overwrites it */
        }
        if (st->kind == STEP_FORWARD && out >= 0 && out < s->n_res_slots) res_seen[out] = 1;
    }
done:
    free(res_seen);
    free(tape_seen);
}

/* new index of each slot: live ones first, then other touched ones; -1 for
 * slots no step (and not the embedding) touches. Returns the new count and
 * the number live. */
static int relabel(int n, const char *live, const char *used, int *map, int *n_live)
{
    int m = 0;
    for (int i = 0; i < n; i++) map[i] = used[i] && live[i] ? m++ : -1;
    *n_live = m;
    for (int i = 0; i < n; i++)
        if (used[i] && !live[i]) map[i] = m++;
    return m;
}

int schedule_finalize(Schedule *s, char *err, size_t err_len)
{
    int nr = s->n_res_slots, nt = s->n_tape_slots, ok = -1;
    char *rl = calloc((size_t)nr + 1, 1), *tl = calloc((size_t)nt + 1, 1);
    char *ru = calloc((size_t)nr + 1, 1), *tu = calloc((size_t)nt + 1, 1);
    int *rmap = malloc(sizeof(int) * ((size_t)nr + 1)), *tmap = malloc(sizeof(int) * ((size_t)nt + 1));
    uint32_t *kind = malloc(sizeof *kind * ((size_t)nt + 1));
    if (!rl || !tl || !ru || !tu || !rmap || !tmap || !kind) {
        snprintf(err, err_len, "schedule: out of host memory");
        goto done;
    }
    for (int k = 0; k < s->n_steps; k++) {
        const ScheduleStep *st = &s->steps[k];
        if (st->in_slot < 0 || st->in_slot >= nr || st->tape_slot < 0 || st->tape_slot >= nt ||
            st->out_slot >= nr) {
            snprintf(err, err_len, "schedule step %d: slot out of range", k);
            goto done;
        }
        ru[st->in_slot] = 1;
        tu[st->tape_slot] = 1;
        if (st->out_slot >= 0) ru[st->out_slot] = 1;
    }
    if (s->embed_slot < 0 || s->embed_slot >= nr) {
        snprintf(err, err_len, "schedule: embedding slot %d out of range", s->embed_slot);
        goto done;
    }
    ru[s->embed_slot] = 1;
    live_at_head(s, rl, tl);
    s->n_res_slots = relabel(nr, rl, ru, rmap, &s->n_res_stored);
    s->n_tape_slots = relabel(nt, tl, tu, tmap, &s->n_tape_stored);
    for (int j = 0; j < nt; j++)
        if (tmap[j] >= 0) kind[tmap[j]] = s->tape_kind[j];
    memcpy(s->tape_kind, kind, sizeof *kind * (size_t)s->n_tape_slots);
    s->embed_slot = rmap[s->embed_slot];
    for (int k = 0; k < s->n_steps; k++) {
        ScheduleStep *st = &s->steps[k];
        st->in_slot = rmap[st->in_slot];
        st->tape_slot = tmap[st->tape_slot];
        if (st->out_slot >= 0) st->out_slot = rmap[st->out_slot];
    }
    schedule_fuse_layernorms(s);
    ok = 0;
done:
    free(rl), free(tl), free(ru), free(tu), free(rmap), free(tmap), free(kind);
    return ok;
}

static int check_labels(const Schedule *s, char *err, size_t err_len)
{
    char *rl = malloc((size_t)s->n_res_slots + 1), *tl = malloc((size_t)s->n_tape_slots + 1);
    int ok = -1;
    if (!rl || !tl) {
        snprintf(err, err_len, "schedule: out of host memory");
        goto done;
    }
    live_at_head(s, rl, tl);
    for (int i = 0; i < s->n_res_slots; i++)
        if (rl[i] != (i < s->n_res_stored)) {
            snprintf(err, err_len, "schedule: residual slot %d is %s across the head but "
                     "labelled %s", i, rl[i] ? "live" : "dead",
                     i < s->n_res_stored ? "stored" : "workspace");
            goto done;
        }
    for (int j = 0; j < s->n_tape_slots; j++)
        if (tl[j] != (j < s->n_tape_stored)) {
            snprintf(err, err_len, "schedule: tape slot %d is %s across the head but "
                     "labelled %s", j, tl[j] ? "live" : "dead",
                     j < s->n_tape_stored ? "stored" : "workspace");
            goto done;
        }
    ok = 0;
done:
    free(rl);
    free(tl);
    return ok;
}

int schedule_validate(const Schedule *s, char *err, size_t err_len)
{
    int L = s->num_layers, ok = -1;
    if (L < 1 || s->n_res_slots < 1 || s->n_tape_slots < 1 || s->n_res_stored < 0 ||
        s->n_res_stored > s->n_res_slots || s->n_res_kept < 0 ||
        s->n_res_kept > s->n_res_stored || s->n_tape_stored < 0 ||
        s->n_tape_stored > s->n_tape_slots || !s->tape_kind || !s->block || s->n_forward < 0 ||
        s->n_forward > s->n_steps) {
        snprintf(err, err_len, "schedule: bad header (layers %d, %d/%d residual, %d/%d tape "
                 "slots, %d/%d steps)", L, s->n_res_stored, s->n_res_slots, s->n_tape_stored,
                 s->n_tape_slots, s->n_forward, s->n_steps);
        return -1;
    }
    for (int j = 0; j < s->n_tape_slots; j++)
        if (s->tape_kind[j] >= (uint32_t)tape_kinds(s->block)) {
            snprintf(err, err_len, "schedule: tape slot %d has unknown kind %u", j,
                     (unsigned)s->tape_kind[j]);
            return -1;
        }
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
        if ((st->kind != STEP_FORWARD && st->kind != STEP_BACKWARD) || st->block < 0 ||
            st->block >= L || st->in_slot < 0 || st->in_slot >= s->n_res_slots ||
            st->tape_slot < 0 || st->tape_slot >= s->n_tape_slots ||
            st->out_slot >= s->n_res_slots || st->out_slot < SLOT_FINAL) {
            snprintf(err, err_len, "schedule step %d: kind, block or slot out of range", k);
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
        if (k == s->n_forward - 1 && !final_written) {
            snprintf(err, err_len, "schedule: the head runs before the final residual is written");
            goto done;
        }
    }
    if (next_fwd != L || !final_written || next_bwd != -1) {
        snprintf(err, err_len, "schedule: incomplete (forwards %d/%d, backwards %d/%d)", next_fwd,
                 L, L - 1 - next_bwd, L);
        goto done;
    }
    ok = check_labels(s, err, err_len);
    for (int k = 0; k < s->n_steps && ok == 0; k++)
        if (s->steps[k].fuse_next_ln && !ln_fusable(s, k)) {
            snprintf(err, err_len, "schedule step %d: fuses the next LayerNorm into its residual "
                     "add where that is not legal", k);
            ok = -1;
        }
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

int schedule_count_tapes(const Schedule *s, int kind, int *stored)
{
    int n = 0, st = 0;
    for (int j = 0; j < s->n_tape_slots; j++)
        if ((int)s->tape_kind[j] == kind) {
            n++;
            st += j < s->n_tape_stored;
        }
    if (stored) *stored = st;
    return n;
}

/* The kinds other than full and selective in s, in increasing order
 * (used[k] for each of the block's kinds; NULL when out of memory, or for
 * an empty schedule); their letters are 'A', 'B', ... in that order. */
static unsigned char *other_kinds(const Schedule *s)
{
    if (!s->block) return NULL;
    int n = tape_kinds(s->block);
    unsigned char *used = calloc((size_t)n, 1);
    if (!used) return NULL;
    for (int j = 0; j < s->n_tape_slots; j++)
        if (s->tape_kind[j] < (uint32_t)n) used[s->tape_kind[j]] = 1;
    used[TAPE_FULL] = used[s->block->selective] = 0;
    return used;
}

static char kind_letter(const Schedule *s, const unsigned char *used, uint32_t kind)
{
    if (kind == TAPE_FULL) return 'F';
    if (s->block && kind == s->block->selective) return 'S';
    if (!used) return '?';
    int n = 0;
    for (uint32_t k = 0; k < kind; k++) n += used[k];
    return n < 26 ? (char)('A' + n) : '?';
}

char *schedule_describe(const Schedule *s, char *buf, size_t len)
{
    int L = s->num_layers;
    if (len == 0) return buf;
    buf[0] = '\0';
    if ((size_t)L + 1 > len) return buf;
    char *rl = malloc((size_t)s->n_res_slots + 1), *tl = malloc((size_t)s->n_tape_slots + 1);
    int *rh = malloc(sizeof(int) * ((size_t)s->n_res_slots + 1));
    int *th = malloc(sizeof(int) * ((size_t)s->n_tape_slots + 1));
    unsigned char *used = other_kinds(s);
    if (rl && tl && rh && th) {
        live_at_head(s, rl, tl);
        for (int i = 0; i < s->n_res_slots; i++) rh[i] = -1;
        for (int j = 0; j < s->n_tape_slots; j++) th[j] = -1;
        if (s->embed_slot >= 0 && s->embed_slot < s->n_res_slots) rh[s->embed_slot] = 0;
        for (int k = 0; k < s->n_forward; k++) {
            const ScheduleStep *st = &s->steps[k];
            if (st->tape_slot >= 0 && st->tape_slot < s->n_tape_slots)
                th[st->tape_slot] = st->block;
            if (st->out_slot >= 0 && st->out_slot < s->n_res_slots)
                rh[st->out_slot] = st->block + 1;
        }
        for (int l = 0; l < L; l++) buf[l] = '-';
        for (int i = 0; i < s->n_res_slots; i++)
            if (rl[i] && rh[i] >= 0 && rh[i] < L) buf[rh[i]] = 'x';
        for (int j = 0; j < s->n_tape_slots; j++)
            if (tl[j] && th[j] >= 0) buf[th[j]] = kind_letter(s, used, s->tape_kind[j]);
        buf[L] = '\0';
    }
    free(rl), free(tl), free(rh), free(th), free(used);
    return buf;
}

void schedule_print(FILE *f, const Schedule *s, int with_steps)
{
    char *desc = malloc((size_t)s->num_layers + 1);
    int part = 0;
    for (int j = 0; j < s->n_tape_slots; j++) part += s->tape_kind[j] != TAPE_FULL;
    fprintf(f, "schedule %s: %d layers, %d residual slots (%d stored), %d tape slots (%d stored, "
               "%d partial), %d re-forwards\n",
            schedule_mode_flag(s->mode), s->num_layers, s->n_res_slots, s->n_res_stored,
            s->n_tape_slots, s->n_tape_stored, part, schedule_reforwards(s));
    if (desc)
        fprintf(f, "  kept at the head, block 0..%d (F full tape, S selective, x input, - none):"
                   "\n    %s\n", s->num_layers - 1,
                schedule_describe(s, desc, (size_t)s->num_layers + 1));
    free(desc);
    unsigned char *used = other_kinds(s);
    for (int k = 0; used && k < tape_kinds(s->block); k++) {
        char name[BLOCK_MAX_TENSORS + 1];
        if (used[k])
            fprintf(f, "  %c: a tape of kind %s (keeps the tensors named, '-' dropped)\n",
                    kind_letter(s, used, (uint32_t)k), tape_kind_name(s->block, k, name));
    }
    free(used);
    if (!with_steps) return;
    fprintf(f, "  steps (F block in>out tape; B block in tape; r = residual slot, t = tape slot):");
    for (int k = 0; k < s->n_steps; k++) {
        const ScheduleStep *st = &s->steps[k];
        if (k % 8 == 0) fprintf(f, "\n   ");
        if (k == s->n_forward) fprintf(f, " | head |");
        if (st->kind == STEP_FORWARD) {
            char out[16];
            if (st->out_slot == SLOT_FINAL) snprintf(out, sizeof out, "final");
            else if (st->out_slot == SLOT_NONE) snprintf(out, sizeof out, "none");
            else snprintf(out, sizeof out, "r%d", st->out_slot);
            fprintf(f, " F%d r%d>%s t%d", st->block, st->in_slot, out, st->tape_slot);
        } else {
            fprintf(f, " B%d r%d t%d", st->block, st->in_slot, st->tape_slot);
        }
    }
    fprintf(f, "\n");
}

