/* tests/lib/reference_file.c — see reference_file.h. */
#include "tests/lib/reference_file.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parameter count of llm.c's 16 tensors, from the header's dimensions;
 * computed here rather than via model/config.c so the reader stays
 * independent of the code it is used to check. */
static size_t expected_params(size_t Vp, size_t C, size_t L, size_t maxT)
{
    return Vp * C + maxT * C          /* wte, wpe */
           + L * (2 * C)              /* ln1w, ln1b */
           + L * (3 * C * C + 3 * C)  /* qkvw, qkvb */
           + L * (C * C + C)          /* attprojw, attprojb */
           + L * (2 * C)              /* ln2w, ln2b */
           + L * (4 * C * C + 4 * C)  /* fcw, fcb */
           + L * (4 * C * C + C)      /* fcprojw, fcprojb */
           + 2 * C;                   /* lnfw, lnfb */
}

/* Reads exactly n elements of size sz; -1 on a short read. */
static int read_exact(FILE *f, void *dst, size_t sz, size_t n)
{
    return fread(dst, sz, n, f) == n ? 0 : -1;
}

int reference_load(const char *path, ReferenceFile *rf, char *err, size_t err_len)
{
    memset(rf, 0, sizeof *rf);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_len, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    long file_size = -1;
    if (fseek(f, 0, SEEK_END) == 0) file_size = ftell(f);
    if (file_size < 0 || fseek(f, 0, SEEK_SET) != 0) {
        snprintf(err, err_len, "%s: cannot determine size: %s", path, strerror(errno));
        goto fail;
    }
    if ((size_t)file_size < sizeof rf->header ||
        read_exact(f, rf->header, sizeof(int), REFERENCE_HEADER_INTS) != 0) {
        snprintf(err, err_len, "%s: %ld bytes, shorter than the %zu-byte header", path,
                 file_size, sizeof rf->header);
        goto fail;
    }
    const int *h = rf->header;
    if (h[0] != REFERENCE_MAGIC) {
        snprintf(err, err_len, "%s: bad magic %d (expected %d)", path, h[0], REFERENCE_MAGIC);
        goto fail;
    }
    if (h[1] != REFERENCE_VERSION) {
        snprintf(err, err_len, "%s: unsupported version %d (expected %d)", path, h[1],
                 REFERENCE_VERSION);
        goto fail;
    }
    rf->B = h[2]; rf->T = h[3]; rf->L = h[4]; rf->NH = h[5];
    rf->C = h[6]; rf->V = h[7]; rf->Vp = h[8]; rf->maxT = h[9];
    /* Bounds keep every product below fit comfortably in size_t. */
    const int dims[8] = {rf->B, rf->T, rf->L, rf->NH, rf->C, rf->V, rf->Vp, rf->maxT};
    static const char *names[8] = {"B", "T", "L", "NH", "C", "V", "Vp", "maxT"};
    for (int i = 0; i < 8; i++) {
        if (dims[i] < 1 || dims[i] > 1 << 20) {
            snprintf(err, err_len, "%s: header %s = %d is outside 1..%d", path, names[i],
                     dims[i], 1 << 20);
            goto fail;
        }
    }
    if (rf->C % rf->NH != 0 || rf->Vp < rf->V || rf->maxT < rf->T) {
        snprintf(err, err_len,
                 "%s: inconsistent header (C %d, NH %d, V %d, Vp %d, T %d, maxT %d)", path,
                 rf->C, rf->NH, rf->V, rf->Vp, rf->T, rf->maxT);
        goto fail;
    }
    size_t np = expected_params(rf->Vp, rf->C, rf->L, rf->maxT);
    if (h[10] < 0 || (size_t)h[10] != np) {
        snprintf(err, err_len, "%s: header num_params %d, but the shapes give %zu", path, h[10],
                 np);
        goto fail;
    }
    rf->num_params = np;
    size_t N = (size_t)rf->B * (size_t)rf->T;
    size_t NV = N * (size_t)rf->V;
    size_t want = sizeof rf->header + 2 * N * sizeof(int) + (2 * np + NV + 1) * sizeof(float);
    if ((size_t)file_size != want) {
        snprintf(err, err_len, "%s: %ld bytes, expected exactly %zu for this header", path,
                 file_size, want);
        goto fail;
    }
    rf->inputs = malloc(N * sizeof(int));
    rf->targets = malloc(N * sizeof(int));
    rf->params = malloc(np * sizeof(float));
    rf->logits = malloc(NV * sizeof(float));
    rf->grads = malloc(np * sizeof(float));
    if (!rf->inputs || !rf->targets || !rf->params || !rf->logits || !rf->grads) {
        snprintf(err, err_len, "%s: out of memory for %zu bytes of arrays", path, want);
        goto fail;
    }
    if (read_exact(f, rf->inputs, sizeof(int), N) || read_exact(f, rf->targets, sizeof(int), N) ||
        read_exact(f, rf->params, sizeof(float), np) ||
        read_exact(f, rf->logits, sizeof(float), NV) ||
        read_exact(f, &rf->loss, sizeof(float), 1) || read_exact(f, rf->grads, sizeof(float), np)) {
        snprintf(err, err_len, "%s: read error after the header", path);
        goto fail;
    }
    for (size_t i = 0; i < N; i++) {
        if (rf->inputs[i] < 0 || rf->inputs[i] >= rf->V || rf->targets[i] < 0 ||
            rf->targets[i] >= rf->V) {
            snprintf(err, err_len, "%s: token at position %zu (input %d, target %d) is outside [0, %d)",
                     path, i, rf->inputs[i], rf->targets[i], rf->V);
            goto fail;
        }
    }
    fclose(f);
    return 0;
fail:
    fclose(f);
    reference_free(rf);
    return -1;
}

void reference_free(ReferenceFile *rf)
{
    free(rf->inputs);
    free(rf->targets);
    free(rf->params);
    free(rf->logits);
    free(rf->grads);
    rf->inputs = rf->targets = NULL;
    rf->params = rf->logits = rf->grads = NULL;
}
