/* cli/train_data.c — see cli/train_data.h. */
#include "cli/train_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/signals.h"
#include "data/loader.h"
#include "cli/guard.h"
#include "cli/options.h"
#include "cli/progress.h"

/* The file the model's weights come from (for a message), or NULL for a
 * fresh model. */
static const char *model_source(const Trainer *tr, char *buf, size_t cap)
{
    if (tr->files.resume_dir[0]) {
        snprintf(buf, cap, "%s/model.bin", tr->files.resume_dir);
        return buf;
    }
    return tr->opt.llmc_resume ? tr->files.llmc.from.model : tr->opt.init_from;
}

/* A model is fed the tokens of the tokenizer it was trained on (the
 * identity in its file, GPTConfig.tokenizer_id) and no other: shards whose
 * manifest records another are refused, naming both files. A model that
 * records none (a fresh one, or an older or llm.c's file) takes the train
 * data's, so its saves record it; a resume keeps the save's as it is (its
 * model.bin must match the run's configuration). Shards without a recorded
 * tokenizer (llm.c's, older manifests) are not checked. */
static int check_tokenizer(Trainer *tr, const Loader *ld, const char *flag, char *err,
                           size_t len)
{
    GPTConfig *cfg = &tr->cfg;
    char from[4200];
    const char *src = model_source(tr, from, sizeof from);
    if (!ld || !ld->tokenizer_id) return 0;
    if (!cfg->tokenizer_id) {
        if (!tr->files.resume_dir[0] && !tr->opt.llmc_resume) cfg->tokenizer_id = ld->tokenizer_id;
        return 0;
    }
    if (cfg->tokenizer_id == ld->tokenizer_id) return 0;
    snprintf(err, len, "%s: %s records the tokens of tokenizer %s, but the model %s was trained "
             "on tokenizer %016llx (another vocabulary, or the same ids for other text): "
             "tokenize the text with the model's tokenizer, or train a new model",
             flag, ld->manifest, ld->tokenizer_desc,
             src ? src : "of this run (new: it took --train-data's)",
             (unsigned long long)cfg->tokenizer_id);
    return -1;
}

int train_data_open(Trainer *tr, char *err, size_t len)
{
    const TrainOptions *o = &tr->opt;
    int rank = tr->dist.rank, world = tr->dist.world;
    /* A run of no steps (an evaluation of --init-from on --val-data) reads
     * no training batch: the default dataset, absent outside the
     * repository, is skipped rather than fatal. Given --train-data is
     * still opened and checked. */
    int optional =
        o->steps == 0 && !o->train_data_given && !tr->files.resume_dir[0] && !o->llmc_resume;
    int rc = loader_open(&tr->data.train, o->train_data, o->batch, o->seq_len, rank, world,
                         tr->cfg.vocab_size, o->shuffle, o->seed, err, len);
    if (rc != 0 && optional && !signals_pending()) {
        if (rank == 0)
            fprintf(stderr, "note: --steps 0 trains nothing: no training data (%s)\n", err);
        err[0] = 0;
    } else if (rc != 0) {
        train_options_name_flag("--train-data", err, len);
        if (!o->train_data_given)
            snprintf(err + strlen(err), len - strlen(err),
                     " (the default dataset: run `make data`, or pass --train-data)");
        return -1;
    }
    if (rank == 0 && tr->data.train.notes) fputs(tr->data.train.notes, stderr);
    if (rc == 0 && check_tokenizer(tr, &tr->data.train, "--train-data", err, len) != 0) return -1;
    /* Saves record the shards' content hashes; a resume reads every shard
     * to compare them (ckpt/session.c). A fresh run takes a manifest's,
     * and checks them in the background (below). */
    if ((tr->files.sess.dir[0] || tr->files.resume_dir[0]) && tr->data.train.num_shards > 0) {
        double t0 = progress_now_ms();
        uint64_t bytes;
        if (loader_hash(&tr->data.train,
                        tr->files.resume_dir[0] ? LOADER_HASH_READ : LOADER_HASH_TRUST, &bytes, err,
                        len) != 0)
            return -1;
        double s = (progress_now_ms() - t0) / 1e3;
        if (rank == 0 && bytes)
            printf("train data: read %.1f MB to hash %d shard(s) in %.2f s (%.0f MB/s)\n",
                   bytes / 1e6, tr->data.train.num_shards, s, bytes / 1e6 / (s > 1e-9 ? s : 1e-9));
    }
    /* The default val shards belong to the default dataset: validating a
     * run on other --train-data with them would measure the wrong text (or
     * stop on out-of-vocabulary tokens), so they are used only when the
     * train data is the default too. */
    Loader *val = NULL;
    if (o->train_data_given && !o->val_data_given) {
        if (rank == 0)
            fprintf(stderr, "note: --train-data given without --val-data; val loss is skipped\n");
    } else {
        val = calloc(1, sizeof *val);
        if (!val) {
            snprintf(err, len, "out of host memory for the val data's loader");
            return -1;
        }
        int rc = loader_open(val, o->val_data, o->batch, o->seq_len, rank, world,
                             tr->cfg.vocab_size, 0, o->seed, err, len);
        if (rc == 0 && rank == 0 && val->notes) fputs(val->notes, stderr);
        if (rc == 0 && check_tokenizer(tr, val, "--val-data", err, len) != 0) {
            loader_close(val);
            free(val);
            return -1;
        }
        if (rc != 0) {
            free(val);
            val = NULL;
        }
        if (rc != 0 && o->val_data_given) {
            train_options_name_flag("--val-data", err, len);
            return -1;
        }
        if (rc != 0 && rank == 0)
            fprintf(stderr, "note: no validation data (%s); val loss is skipped\n", err);
    }
    tr->data.val = val;
    const char *shared = tr->data.val ? loader_shared_shard(&tr->data.train, tr->data.val) : NULL;
    if (shared && rank == 0)
        fprintf(stderr, "warning: --val-data: %s is also a shard of --train-data %s: the val "
                "loss measures text the model trains on\n", shared, o->train_data);
    /* A fresh run (or one resumed from llm.c's files) checks the shards
     * against their dataset manifest, in the background of the model's
     * start-up (train_data_finish_check waits before the first step): a shard
     * changed since ./tokenize would be trained on and its hash saved, and
     * every resume then refused. */
    const Loader *listed[2] = {&tr->data.train, tr->data.val};
    if (!tr->files.resume_dir[0] && /* a resume read them all: loader_hash */
        loader_verify_start(&tr->data.verify, listed, tr->data.val ? 2 : 1, err, len) != 0)
        return -1;
    return 0;
}

void train_data_finish_check(Trainer *tr)
{
    char err[1024];
    LoaderVerifyStats st;
    int bad = loader_verify_finish(tr->data.verify, &st, err, sizeof err) != 0;
    tr->data.verify = NULL;
    /* a stop cuts the reading short: the stop, not the read, is reported */
    guard_exit_if_any(&tr->dist, bad && !signals_pending(), 1, err);
    if (tr->dist.rank == 0 && st.shards)
        printf("data: checked %d shard(s) against their dataset manifest: read %.1f MB in %.2f s, "
               "alongside start-up (waited %.2f s for it)\n", st.shards, st.bytes / 1e6,
               st.read_s, st.wait_s);
}
