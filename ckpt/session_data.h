/* ckpt/session_data.h — the train data as a save records it, and a
 * resume's check of it.
 *
 * Owns: the data fingerprint (session_data_fingerprint, in session.h: the
 * SHA-256 of the shards' content hashes when the loader has them, else an
 * FNV-1a of their token counts, which is all a version 1 run state
 * recorded), a RunState's data fields, and the comparison that names each
 * shard whose content differs from the save's. Private to ckpt/session.c. */
#ifndef CKPT_SESSION_DATA_H
#define CKPT_SESSION_DATA_H

#include <stddef.h>

#include "data/loader.h"
#include "run_state.h"

/* The train data as a run state records it (run_state.h): each shard's
 * content hash when the loader has them (loader_hash), else the token
 * counts. A failed allocation leaves shard_sha NULL, which the writer
 * refuses. */
void session_data_fill(RunState *st, const Loader *ld);

/* The train data (now, filled from ld) against the save's record (saved,
 * from save_dir); every shard whose content differs is named (up to 4).
 * Returns 0, or -1 with the reason in err. */
int session_data_check(const char *save_dir, const RunState *saved, const RunState *now,
                       const Loader *ld, char *err, size_t err_len);

#endif
