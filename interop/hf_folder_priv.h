/* interop/hf_folder_priv.h — what hf_folder.c (config.json, the tensors a
 * model wants) and hf_folder_read.c (the safetensors files, read tensor by
 * tensor) share; not for other modules (hf_folder.h is the interface). */
#ifndef INTEROP_HF_FOLDER_PRIV_H
#define INTEROP_HF_FOLDER_PRIV_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <sys/types.h>

#include "hf_folder.h"

#define INDEX_NAME "model.safetensors.index.json"
#define MAX_HEADER (100u << 20) /* a safetensors header beyond 100 MB is not one */

/* One tensor the model wants: its Hugging Face name, where it goes in the
 * flat parameter vector, its stored shape (rows x cols; cols 0 = 1-D) and
 * whether it is stored (in, out), to be transposed (GPT-2's Conv1D). */
typedef struct {
    char name[80];
    size_t off;
    int rows, cols, transpose, filled;
    int fd, width, f16; /* where its bytes are: fd at byte `at`, 4 or 2 bytes each */
    off_t at;
} Want;

/* The folder read tensor by tensor: the headers at open, each tensor's
 * bytes only when its piece of the parameters is asked for. */
struct HfFolder {
    const char *folder;
    GPTConfig cfg;
    Want *want;
    int n;
    Want head;     /* a tied lm_head.weight, compared with the embedding at open */
    int head_seen;
    int fds[64], nfd; /* the safetensors files, open until close */
    unsigned char *raw; /* scratch: one piece's bytes, or a transposed tensor's */
    size_t raw_cap;
    int raw_of;    /* the want whose whole tensor raw holds (-1 none) */
};
typedef struct HfFolder Load;

/* The whole of a small file (config.json, an index) parsed as JSON. */
cJSON *hf_read_json(const char *path, char *err, size_t len);
/* ld->want: every tensor of ld->cfg, by Hugging Face name (ld->n of them). */
void hf_want_table(Load *ld);

/* The message into err; returns -1 (both files' refusals). */
int hf_fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
