/* tests/lib/reference_file.h — reader for the PyTorch GPT-2 reference file.
 *
 * Owns: ReferenceFile and its loader. The file is written by
 * dev/reference/gpt2_reference.py (format in its docstring and tests/data/README.md):
 * a 32-int32 header, inputs and targets (int32, B*T each), params, logits
 * (B*T*V, real vocabulary only), the mean loss, and grads (all float32,
 * params and grads in llm.c's 16-tensor order). Test-only; not in the library. */
#ifndef TESTS_REFERENCE_FILE_H
#define TESTS_REFERENCE_FILE_H

#include <stddef.h>

#define REFERENCE_MAGIC 20261129
#define REFERENCE_VERSION 1
#define REFERENCE_HEADER_INTS 32

typedef struct {
    int header[REFERENCE_HEADER_INTS]; /* raw header as read */
    int B, T, L, NH, C, V, Vp, maxT;   /* header[2..9] */
    size_t num_params;                 /* header[10]: floats in params and in grads */
    int *inputs;                       /* (B,T) token ids in [0,V) */
    int *targets;                      /* (B,T) */
    float *params;                     /* (num_params) llm.c order */
    float *logits;                     /* (B,T,V) */
    float loss;                        /* mean cross-entropy over B*T */
    float *grads;                      /* (num_params) d loss / d params */
} ReferenceFile;

/* Reads and validates `path` (magic, version, dimensions, num_params against
 * the shapes, exact file size, token ids in range). Returns 0 and fills *rf;
 * on failure returns -1, leaves *rf with nothing allocated, and writes a
 * one-line message naming the file and the fault into err (size err_len). */
int reference_load(const char *path, ReferenceFile *rf, char *err, size_t err_len);

/* Frees what reference_load allocated; safe on a zeroed or freed struct. */
void reference_free(ReferenceFile *rf);

#endif
