/* cli/params_load.c — see cli/params_load.h. */
#include "cli/params_load.h"

#include <stdio.h>

#include "base/signals.h"
#include "distributed/dist.h"
#include "interop/model_file.h"
#include "model/gpt.h"
#include "cli/stop.h"

/* One source of pieces, and the replicas' hash folded over them in order
 * (the same value as dist_hash_floats over the whole array). */
typedef struct {
    ModelFileReader file; /* --init-from */
    GptInitStream init;   /* else */
    int from_file;
    uint64_t hash;
} Source;

static int source_fill(void *ctx, float *buf, size_t n, char *err, size_t len)
{
    Source *s = ctx;
    int rc = s->from_file ? model_file_read_next(&s->file, buf, n, err, len)
                          : gpt_init_stream_next(&s->init, buf, n);
    if (rc == 0) s->hash = dist_hash_floats_more(s->hash, buf, n);
    return rc;
}

int params_load(Trainer *tr, char *err, size_t len)
{
    const char *from = tr->opt.init_from;
    Source s = {.from_file = from != NULL, .hash = DIST_HASH_START};
    if (from && model_file_open_read(&s.file, from, err, len) != 0) {
        train_options_name_flag("--init-from", err, len);
        return -1;
    }
    if (!from) gpt_init_stream_start(&s.init, &tr->cfg, tr->opt.seed);
    int rc = gpt_set_params_stream(&tr->model, source_fill, &s, err, len);
    if (from) model_file_close_read(&s.file);
    if (rc < 0 && from) train_options_name_flag("--init-from", err, len);
    /* a stop gave up the loop above; the ranks agree on it before comparing */
    if (rc != 0 && !signals_pending()) return -1;
    stop_check_startup(tr, from ? "loading --init-from" : "initialising the parameters");
    /* Every rank loads or seeds the same parameters; check rather than trust. */
    if (!dist_replicas_agree(&tr->dist, s.hash))
        dist_exit_all(&tr->dist, 1, "the ranks start from different parameters%s",
                      from ? " (is --init-from the same file on every node?)" : "");
    return 0;
}
