/* cli/train_data.h — the trainer's data, opened.
 *
 * Owns: opening --train-data and --val-data for this rank (the default
 * dataset's hint, when to skip the val loss, a val shard that is also a
 * train shard), hashing the shards a checkpoint records or a resume
 * compares, and the check of a fresh run's shards against their dataset
 * manifest, started in the background of start-up and finished before the
 * first step. */
#ifndef CLI_TRAIN_DATA_H
#define CLI_TRAIN_DATA_H

#include <stddef.h>

#include "cli/trainer.h"

/* Opens tr->data.train and, when there is one, tr->data.val (else NULL), and
 * starts the manifest check (tr->data.verify). Returns 0, or -1 with err naming
 * the flag. */
int train_data_open(Trainer *tr, char *err, size_t len);

/* Waits for the check train_data_open started and prints what it read;
 * every rank exits 1 when any found a shard that differs. */
void train_data_finish_check(Trainer *tr);

#endif
