/* kernels/profile.h — where a step's time goes, op by op (--profile-ops).
 *
 * Owns: OpProfile, a table of (op, calls, seconds), and a BackendOps table
 * that stands in front of a backend's own: each compute op (and mem_zero)
 * syncs the backend, runs the real op, syncs again and adds the wall time
 * between to its row. The other entries are the backend's own. Because of the syncs the
 * run is slower than without it: the table gives shares and per-op times,
 * the normal run gives speed. Matmuls (and the fused matmul + GELU ops) are
 * kept apart by shape (IC, OC), so a layer's four and the head show as
 * separate rows.
 *
 * The backend is never aware of it: profile_attach points be->ops at the
 * profile's table and keeps the real one, and be->profile at the profile. */
#ifndef KERNELS_PROFILE_H
#define KERNELS_PROFILE_H

#include <stdio.h>

#include "ops.h"

#define PROFILE_MAX_ROWS 64

typedef struct {
    char op[48];    /* op name, with the shape for matmuls: "matmul_forward 768x2304" */
    long calls;
    double seconds;
} ProfileRow;

typedef struct OpProfile {
    const BackendOps *inner; /* the backend's own table */
    BackendOps table;        /* what be->ops points to while attached */
    ProfileRow rows[PROFILE_MAX_ROWS];
    int nrows;
    int overflow; /* calls that found no free row (more than PROFILE_MAX_ROWS keys) */
} OpProfile;

/* Put p in front of be's ops (p is zeroed first). Undo with profile_detach
 * before the backend is closed. */
void profile_attach(OpProfile *p, Backend *be);
void profile_detach(OpProfile *p, Backend *be);
/* Forget what was counted so far (e.g. the first step: cuBLASLt's
 * heuristics, cold caches). */
void profile_reset(OpProfile *p);
/* Calls recorded under a row name (0 when absent). */
long profile_calls(const OpProfile *p, const char *op);
/* The table, largest first: calls, ms per step, share of the timed total.
 * steps >= 1 divides the times. */
void profile_print(const OpProfile *p, FILE *f, int steps);

#endif
