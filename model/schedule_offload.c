/* model/schedule_offload.c — the copies of offloaded checkpoints (schedule.h,
 * OffloadProgram): a simulation of the schedule over a ring of device slots that
 * records, per step, which ring slot stands for each stored slot it touches and
 * which copies and waits go before and after it. */
#include "schedule.h"

#include <stdlib.h>
#include <string.h>

#define NEVER 0x7fffffff

typedef struct {
    const Schedule *s;
    OffloadProgram *op;
    int *pos, cap;   /* position of each act, for first[] */
    int *occ;        /* host slot held by each ring slot, -1: none */
    char *pend_any;  /* a copy on the ring slot may still run: wait before writing it */
    char *pend_in;   /* a copy into it may still run: wait before reading it */
    int rr;          /* next ring slot the forward writes, round robin */
    /* backward reads of each stored slot, in step order (CSR), and a cursor */
    int *use_at, *use_first, *cursor;
    int last_pos;
} Sim;

/* a stored slot that lives on the host (schedule_res_host) */
static int is_stored(const Sim *m, int slot) { return slot >= 0 && slot < schedule_res_host(m->s); }

static int push(Sim *m, int pos, int kind, int host, int ring)
{
    OffloadProgram *op = m->op;
    if (op->n_acts == m->cap) {
        int cap = m->cap ? 2 * m->cap : 64;
        OffloadAct *a = realloc(op->acts, sizeof *a * (size_t)cap);
        int *p = a ? realloc(m->pos, sizeof *p * (size_t)cap) : NULL;
        if (a) op->acts = a;
        if (!p) return -1;
        m->pos = p;
        m->cap = cap;
    }
    /* the simulation walks the steps in order, so positions never go back */
    if (pos < m->last_pos) return -1;
    m->last_pos = pos;
    m->pos[op->n_acts] = pos;
    op->acts[op->n_acts++] = (OffloadAct){kind, host, ring};
    if (kind == OFF_IN) op->n_in++;
    if (kind == OFF_OUT) op->n_out++;
    return 0;
}

static int ring_of(const Sim *m, int h)
{
    for (int r = 0; r < m->op->n_ring; r++)
        if (m->occ[r] == h) return r;
    return -1;
}

/* The next backward read of stored slot h at or after step `from`; NEVER. */
static int next_use(Sim *m, int h, int from)
{
    int *c = &m->cursor[h], end = m->use_first[h + 1];
    while (m->use_first[h] + *c < end && m->use_at[m->use_first[h] + *c] < from) (*c)++;
    return m->use_first[h] + *c < end ? m->use_at[m->use_first[h] + *c] : NEVER;
}

/* Before step k (the embedding: -1) writes stored slot h: the ring slot for it, its
 * holder dead for the rest of the forward (last_read) and not ring `keep`, waited for.
 * -1 when no ring slot is free. */
static int ring_for_write(Sim *m, int k, int h, int keep, const int *last_read)
{
    int r = ring_of(m, h), n = m->op->n_ring;
    for (int t = 0; r < 0 && t < n; t++) {
        int c = (m->rr + t) % n;
        if (c != keep && (m->occ[c] < 0 || last_read[m->occ[c]] < k)) {
            r = c;
            m->rr = (c + 1) % n;
        }
    }
    if (r < 0) return -1;
    if (m->pend_any[r] && push(m, OFFLOAD_BEFORE(k), OFF_WAIT, -1, r) != 0) return -2;
    m->pend_any[r] = m->pend_in[r] = 0;
    m->occ[r] = h;
    return r;
}

static void fetch(Sim *m, int pos, int h, int r, int *rc)
{
    if (push(m, pos, OFF_IN, h, r) != 0) *rc = -1;
    m->occ[r] = h;
    m->pend_any[r] = m->pend_in[r] = 1;
}

/* Prefetch at position pos, for the steps from `from` on: while some stored input read
 * later is not in the ring and a ring slot's holder is not read before it, fetch it
 * there (the slot whose holder is needed last). */
static int prefetch(Sim *m, int pos, int from)
{
    const Schedule *s = m->s;
    int rc = 0;
    for (;;) {
        int k = from, h = -1;
        for (; k < s->n_steps; k++)
            if (is_stored(m, s->steps[k].in_slot) && ring_of(m, s->steps[k].in_slot) < 0) {
                h = s->steps[k].in_slot;
                break;
            }
        if (h < 0) return rc;
        int best = -1, best_next = -1;
        for (int r = 0; r < m->op->n_ring; r++) {
            int nu = m->occ[r] < 0 ? NEVER : next_use(m, m->occ[r], from);
            if (nu > k && nu > best_next) {
                best = r;
                best_next = nu;
            }
        }
        if (best < 0) return rc;
        fetch(m, pos, h, best, &rc);
        if (rc) return rc;
    }
}

static int fail(char *err, size_t len, const char *msg, int k)
{
    snprintf(err, len, "--offload checkpoints: %s (step %d)", msg, k);
    return -1;
}

static int simulate(Sim *m, char *err, size_t len)
{
    const Schedule *s = m->s;
    OffloadProgram *op = m->op;
    int S = s->n_steps, nf = s->n_forward, ns = schedule_res_host(s);
    int *last_write = malloc(sizeof(int) * (size_t)ns), *last_read = malloc(sizeof(int) * (size_t)ns);
    if (!last_write || !last_read) {
        free(last_write), free(last_read);
        return fail(err, len, "out of host memory", 0);
    }
    for (int h = 0; h < ns; h++) last_write[h] = last_read[h] = -2;
    if (is_stored(m, s->embed_slot)) last_write[s->embed_slot] = -1;
    for (int k = 0; k < nf; k++) {
        const ScheduleStep *st = &s->steps[k];
        if (is_stored(m, st->in_slot)) last_read[st->in_slot] = k;
        if (is_stored(m, st->out_slot)) last_write[st->out_slot] = k;
    }
    int rc = 0;
    /* the forward: every stored write goes into the ring and out to the host */
    if (is_stored(m, s->embed_slot)) {
        int h = s->embed_slot, r = ring_for_write(m, -1, h, -1, last_read);
        op->embed_ring = r;
        if (last_write[h] == -1 && push(m, OFFLOAD_AFTER(-1), OFF_OUT, h, r) != 0) rc = -1;
        m->pend_any[r] = 1;
    }
    for (int k = 0; k < nf && rc == 0; k++) {
        const ScheduleStep *st = &s->steps[k];
        if (is_stored(m, st->in_slot) && (op->in_ring[k] = ring_of(m, st->in_slot)) < 0) {
            rc = fail(err, len, "a forward reads a stored input that has left the ring", k);
            break;
        }
        if (!is_stored(m, st->out_slot)) continue;
        int h = st->out_slot, keep = h == st->in_slot ? -1 : op->in_ring[k];
        int r = ring_for_write(m, k, h, keep, last_read);
        if (r < 0) {
            rc = r == -1 ? fail(err, len, "the ring has no free slot for a stored output", k) : -1;
            break;
        }
        op->out_ring[k] = r;
        if (last_write[h] == k) {
            if (push(m, OFFLOAD_AFTER(k), OFF_OUT, h, r) != 0) rc = -1;
            m->pend_any[r] = 1;
        }
    }
    /* the backward: reads from the ring, fetched on demand or ahead */
    for (int k = nf; k < S && rc == 0; k++) {
        const ScheduleStep *st = &s->steps[k];
        if (is_stored(m, st->out_slot)) {
            rc = fail(err, len, "a step after the head writes a stored slot", k);
            break;
        }
        if (is_stored(m, st->in_slot)) {
            int h = st->in_slot, r = ring_of(m, h);
            if (r < 0) { /* no prefetch found room: fetch now, over the holder read last */
                int best_next = -1;
                for (int c = 0; c < op->n_ring; c++) {
                    int nu = m->occ[c] < 0 ? NEVER : next_use(m, m->occ[c], k);
                    if (nu > best_next) {
                        best_next = nu;
                        r = c;
                    }
                }
                fetch(m, OFFLOAD_BEFORE(k), h, r, &rc);
            }
            if (m->pend_in[r] && push(m, OFFLOAD_BEFORE(k), OFF_WAIT, -1, r) != 0) rc = -1;
            if (m->pend_in[r]) m->pend_any[r] = m->pend_in[r] = 0;
            op->in_ring[k] = r;
        }
        if (rc == 0) rc = prefetch(m, OFFLOAD_BEFORE(k), k);
        if (rc == 0) rc = prefetch(m, OFFLOAD_AFTER(k), k + 1);
    }
    if (rc != 0 && !err[0]) fail(err, len, "out of host memory", 0);
    free(last_write), free(last_read);
    return rc;
}

int schedule_offload(const Schedule *s, int n_ring, OffloadProgram *op, char *err,
                     size_t err_len)
{
    memset(op, 0, sizeof *op);
    err[0] = '\0';
    int S = s->n_steps, ns = schedule_res_host(s), n_pos = 2 * (S + 1);
    if (n_ring < 1 && ns > 0) return fail(err, err_len, "a ring of no slots", 0);
    op->n_ring = ns > 0 ? n_ring : 0;
    op->n_steps = S;
    op->embed_ring = -1;
    op->in_ring = malloc(sizeof(int) * (size_t)(S + 1));
    op->out_ring = malloc(sizeof(int) * (size_t)(S + 1));
    op->first = calloc((size_t)n_pos + 1, sizeof(int));
    Sim m = {.s = s, .op = op, .last_pos = 0};
    m.occ = malloc(sizeof(int) * (size_t)(op->n_ring + 1));
    m.pend_any = malloc((size_t)op->n_ring + 1);
    m.pend_in = calloc((size_t)op->n_ring + 1, 1);
    m.use_first = calloc((size_t)ns + 2, sizeof(int));
    m.cursor = calloc((size_t)ns + 1, sizeof(int));
    m.use_at = malloc(sizeof(int) * (size_t)(S + 1));
    int rc = -1;
    if (!op->in_ring || !op->out_ring || !op->first || !m.occ || !m.pend_any || !m.pend_in ||
        !m.use_first || !m.cursor || !m.use_at) {
        fail(err, err_len, "out of host memory", 0);
        goto done;
    }
    for (int k = 0; k < S; k++) op->in_ring[k] = op->out_ring[k] = -1;
    for (int r = 0; r < op->n_ring; r++) {
        m.occ[r] = -1;
        m.pend_any[r] = 1; /* the previous pass may have left a copy in flight */
    }
    /* the backward reads of each stored slot, grouped by slot in step order */
    for (int k = s->n_forward; k < S; k++)
        if (is_stored(&m, s->steps[k].in_slot)) m.use_first[s->steps[k].in_slot + 1]++;
    for (int h = 0; h < ns; h++) m.use_first[h + 1] += m.use_first[h];
    int *fill = calloc((size_t)ns + 1, sizeof(int));
    if (!fill) {
        fail(err, err_len, "out of host memory", 0);
        goto done;
    }
    for (int k = s->n_forward; k < S; k++) {
        int h = s->steps[k].in_slot;
        if (is_stored(&m, h)) m.use_at[m.use_first[h] + fill[h]++] = k;
    }
    free(fill);
    if (ns > 0 && simulate(&m, err, err_len) != 0) goto done;
    for (int i = 0; i < op->n_acts; i++) op->first[m.pos[i] + 1]++;
    for (int p = 0; p < n_pos; p++) op->first[p + 1] += op->first[p];
    rc = 0;
done:
    free(m.pos), free(m.occ), free(m.pend_any), free(m.pend_in), free(m.use_first);
    free(m.cursor), free(m.use_at);
    if (rc != 0) schedule_offload_free(op);
    return rc;
}

void schedule_offload_free(OffloadProgram *op)
{
    free(op->in_ring);
    free(op->out_ring);
    free(op->first);
    free(op->acts);
    memset(op, 0, sizeof *op);
}
