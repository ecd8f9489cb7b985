/* cli/run_record.h — a run's configuration as one JSON object: written as
 * the --log's first line, read back by --config.
 *
 * Owns: the record's layout and the --config reader. The record is
 *   {"event": "run", "config": {FLAG: VALUE, ...}, "shape": {...},
 *    "data_fingerprint": "HEX", "commit": "...", "backend": "cpu fp32",
 *    "world": N}
 * where "config" holds every flag of cli/options.c's table by its name
 * (without the dashes; --config itself left out), as the run used it: a
 * number for numeric flags (the seed as a string past 2^53, where a JSON
 * number loses digits), a string for text and choices, true/false for
 * switches, null for a flag with no default that was not given (--init-from,
 * --memory-budget, ...), true for a bare --resume.
 *
 * --config FILE reads the first JSON value in FILE: such a record (its
 * "config" member is taken, the rest ignored, so a whole --log serves), or
 * a plain object of flag names. Each key is set as the command line would
 * set it, before the command line's own flags, which so override it; a
 * value equal to the flag's default counts as not given. An unknown key, a
 * value of the wrong type or out of range exits 2 naming FILE and the key. */
#ifndef CLI_RUN_RECORD_H
#define CLI_RUN_RECORD_H

#include <stdint.h>

#include "cli/options.h"
#include "model/config.h"

/* Apply FILE's configuration to opt (defaults already set): 0, or 2 after
 * one line on stderr. The parsed file lives for the process: opt's strings
 * point into it, as they point into argv. */
int run_record_apply(TrainOptions *opt, const char *path);

/* The record above, malloc'd, without a newline (NULL out of memory).
 * backend: its name and precision ("cpu fp32"); run_id: the run's id, the
 * "run_id" a resume checks its --log against (NULL: none). */
char *run_record_json(const TrainOptions *opt, const GPTConfig *cfg, int batch, int seq_len,
                      uint64_t data_fingerprint, const char *backend, int world,
                      const char *run_id);

#endif
