/* tests/unit/lib/test_reference_file.c — the committed PyTorch reference file loads,
 * has the documented shape, and is self-consistent; bad files are refused with
 * a message naming the file and the fault. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/reference_file.h"
#include "tests/lib/test_util.h"

#define REF_PATH "tests/data/gpt2_reference_tiny.bin"

Test(reference_file, header_matches_tiny_config)
{
    ReferenceFile rf;
    char err[512];
    cr_assert_eq(reference_load(REF_PATH, &rf, err, sizeof err), 0, "%s", err);
    cr_assert_eq(rf.header[0], REFERENCE_MAGIC);
    cr_assert_eq(rf.header[1], REFERENCE_VERSION);
    cr_assert_eq(rf.B, 2);
    cr_assert_eq(rf.T, 8);
    cr_assert_eq(rf.L, 2);
    cr_assert_eq(rf.NH, 4);
    cr_assert_eq(rf.C, 32);
    cr_assert_eq(rf.V, 64);
    cr_assert_eq(rf.Vp, 128);
    cr_assert_eq(rf.maxT, 8);
    /* Hand count for C=32, L=2, Vp=128, maxT=8: wte 4096 + wpe 256
     * + per layer (64 ln1 + 3168 qkv + 1056 attproj + 64 ln2 + 4224 fc
     * + 4128 fcproj = 12704) * 2 + lnf 64 = 29824. */
    cr_assert_eq(rf.num_params, (size_t)29824);
    for (int i = 11; i < REFERENCE_HEADER_INTS; i++) cr_assert_eq(rf.header[i], 0);
    reference_free(&rf);
}

/* The stored loss is the mean of logsumexp(logits[n,:V]) - logits[n,target],
 * recomputed here in double from the stored fp32 logits. Tolerance 1e-5
 * relative: the logits carry fp32 rounding (~6e-8 relative), nothing more. */
Test(reference_file, loss_is_consistent_with_logits)
{
    ReferenceFile rf;
    char err[512];
    cr_assert_eq(reference_load(REF_PATH, &rf, err, sizeof err), 0, "%s", err);
    /* Sanity range: random weights give a near-uniform prediction, so the
     * loss sits near ln V = 4.159; accept [0.5 ln V, 2 ln V]. */
    double lnV = log((double)rf.V);
    cr_assert(rf.loss > 0.5 * lnV && rf.loss < 2.0 * lnV, "loss %f outside [%f, %f]",
              (double)rf.loss, 0.5 * lnV, 2.0 * lnV);
    int N = rf.B * rf.T, V = rf.V;
    double sum = 0.0;
    for (int n = 0; n < N; n++) {
        const float *row = rf.logits + (size_t)n * V;
        double m = row[0];
        for (int v = 1; v < V; v++) m = fmax(m, row[v]);
        double s = 0.0;
        for (int v = 0; v < V; v++) s += exp(row[v] - m);
        sum += m + log(s) - row[rf.targets[n]];
    }
    double loss = sum / N;
    cr_assert(fabs(loss - rf.loss) <= 1e-5 * fabs(loss), "loss %.8f vs recomputed %.8f",
              (double)rf.loss, loss);
    reference_free(&rf);
}

/* llm.c zeroes the padded vocabulary rows V..Vp-1 of wte, and they never
 * reach the loss (the embedding reads ids < V; the head drops columns >= V),
 * so their gradient is exactly zero; the real rows' is not. */
Test(reference_file, padded_wte_rows_are_zero)
{
    ReferenceFile rf;
    char err[512];
    cr_assert_eq(reference_load(REF_PATH, &rf, err, sizeof err), 0, "%s", err);
    size_t C = (size_t)rf.C, V = (size_t)rf.V, Vp = (size_t)rf.Vp;
    for (size_t i = V * C; i < Vp * C; i++) {
        cr_assert_eq(rf.grads[i], 0.0f, "dwte[%zu] = %g", i, (double)rf.grads[i]);
        cr_assert_eq(rf.params[i], 0.0f, "wte[%zu] = %g", i, (double)rf.params[i]);
    }
    double real_sq = 0.0;
    for (size_t i = 0; i < V * C; i++) real_sq += (double)rf.grads[i] * rf.grads[i];
    cr_assert(sqrt(real_sq / (double)(V * C)) > 1e-3, "real wte rows' grad rms %g",
              sqrt(real_sq / (double)(V * C)));
    reference_free(&rf);
}

/* ---- refusals: copy the committed file, damage it, and expect -1 with a
 * message that names the file and says what is wrong. ---- */

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s: cannot open", path);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(*len + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, *len, f), *len);
    fclose(f);
    return buf;
}

static void expect_refused(const unsigned char *buf, size_t len, const char *fault)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/test_reference_file_XXXXXX", tu_tmp());
    int fd = mkstemp(path);
    cr_assert(fd >= 0, "mkstemp failed");
    cr_assert_eq(write(fd, buf, len), (ssize_t)len);
    close(fd);
    ReferenceFile rf;
    char err[512] = "";
    int rc = reference_load(path, &rf, err, sizeof err);
    unlink(path);
    cr_assert_eq(rc, -1, "damaged file was accepted (expected '%s')", fault);
    cr_assert_not_null(strstr(err, path), "message '%s' does not name the file", err);
    cr_assert_not_null(strstr(err, fault), "message '%s' lacks '%s'", err, fault);
    cr_assert_null(rf.params);
    cr_assert_null(rf.grads);
}

Test(reference_file, refuses_damaged_files)
{
    size_t len;
    unsigned char *buf = slurp(REF_PATH, &len);
    int *hdr = (int *)buf;

    expect_refused(buf, len - 1, "expected exactly");      /* truncated */
    buf[len] = 0;
    expect_refused(buf, len + 1, "expected exactly");      /* trailing byte */
    expect_refused(buf, 100, "shorter than");              /* inside the header */

    hdr[0] ^= 1;
    expect_refused(buf, len, "bad magic");
    hdr[0] ^= 1;
    hdr[1] = 2;
    expect_refused(buf, len, "unsupported version");
    hdr[1] = REFERENCE_VERSION;
    hdr[10] += 1;
    expect_refused(buf, len, "num_params");
    hdr[10] -= 1;
    hdr[5] = 5; /* NH no longer divides C */
    expect_refused(buf, len, "inconsistent header");
    hdr[5] = 4;
    int *inputs = hdr + REFERENCE_HEADER_INTS;
    int saved = inputs[3];
    inputs[3] = 64; /* == V */
    expect_refused(buf, len, "outside [0, 64)");
    inputs[3] = saved;
    free(buf);

    ReferenceFile rf;
    char err[512];
    cr_assert_eq(reference_load("tests/data/no_such_reference.bin", &rf, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "tests/data/no_such_reference.bin: cannot open"), "%s", err);
}
