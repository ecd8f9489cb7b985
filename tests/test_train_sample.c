/* tests/test_train_sample.c — from text to a model that writes text.
 *
 * ./tokenize turns tinyshakespeare (data/source.h finds it)
 * into GPT-2 BPE shards, ./train_gpt trains a tiny model on them for 100
 * steps, and ./train_gpt --generate samples from the saved model. The val
 * loss starts at ln(50257) = 10.8 and must fall below 7.2 (measured: 6.7 at
 * 120 steps; a model that learned nothing stays near 10.8), and the sample
 * must decode to printable text: printable ASCII, newlines, or well-formed
 * UTF-8 sequences. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static int printable_utf8(const unsigned char *s, size_t n, size_t *bad)
{
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        if (c == '\n' || c == '\t' || c == '\r' || (c >= 0x20 && c < 0x7f)) {
            i++;
            continue;
        }
        int len = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
        if (c >= 0xf5) len = 0;
        if (len == 0 || i + len > n) goto fail;
        for (int k = 1; k < len; k++)
            if ((s[i + k] & 0xc0) != 0x80) goto fail;
        i += len;
        continue;
    fail:
        *bad = i;
        return 0;
    }
    return 1;
}

Test(train_sample, bpe_tinyshakespeare_learns_and_writes_text, .timeout = 600)
{
    char *d = tu_tempdir(), cmd[4096], path[512];
    snprintf(cmd, sizeof cmd,
             "./tokenize --quiet --split-blank-lines --val-tokens 32768 --out %s/shakespeare "
             "'%s' > %s/tok.txt 2>&1", d, TU_SHAKESPEARE, d);
    cr_assert_eq(tu_run(cmd), 0, "tokenize failed: %s", cmd);
    snprintf(cmd, sizeof cmd,
             "./train_gpt --layers 2 --channels 64 --heads 4 --seq-len 32 --batch 8 --steps 100 "
             "--lr 4e-3 --warmup 10 --lr-schedule cosine --lr-min-frac 0.1 --val-every 0 "
             "--val-batches 8 --threads 2 --train-data '%s/shakespeare_train_*.bin' "
             "--val-data '%s/shakespeare_val_*.bin' --save %s/model.bin > %s/train.txt 2>&1",
             d, d, d, d);
    cr_assert_eq(tu_run(cmd), 0, "train_gpt failed: %s", cmd);
    snprintf(path, sizeof path, "%s/train.txt", d);
    char *out = tu_read_file(path, NULL), *v = out ? strstr(out, "val loss ") : NULL;
    cr_assert_not_null(v, "no val loss in %s", path);
    double val = atof(v + strlen("val loss "));
    cr_expect_lt(val, 7.2, "val loss %.4f after 100 steps, want < 7.2", val);
    free(out);

    snprintf(cmd, sizeof cmd,
             "./train_gpt --init-from %s/model.bin --generate 60 --prompt 'ROMEO:' --seq-len 32 "
             "--temperature 0.8 --seed 1 --threads 2 > %s/sample.txt 2> %s/sample.err", d, d, d);
    cr_assert_eq(tu_run(cmd), 0, "generate failed: %s", cmd);
    size_t n, bad = 0;
    snprintf(path, sizeof path, "%s/sample.txt", d);
    char *text = tu_read_file(path, &n);
    cr_assert_not_null(text);
    cr_expect_geq(n, 60, "60 tokens decode to at least 60 bytes (got %zu)", n);
    cr_expect_eq(strncmp(text, "ROMEO:", 6), 0, "the sample continues the prompt");
    cr_expect(printable_utf8((unsigned char *)text, n, &bad), "unprintable byte 0x%02x at %zu",
              (unsigned char)text[bad], bad);
    free(text);
    free(d);
}

Test(train_sample, prompt_errors_name_the_flag)
{
    char *d = tu_tempdir(), cmd[1024], path[512];
    /* a vocabulary that is neither GPT-2 nor bytes takes ids: 99 is out of range */
    snprintf(cmd, sizeof cmd, "./train_gpt --layers 1 --channels 8 --heads 2 --seq-len 8 --vocab 50 "
             "--generate 3 --prompt '1 99' 2> %s/err.txt", d);
    cr_expect_neq(tu_run(cmd), 0);
    snprintf(path, sizeof path, "%s/err.txt", d);
    char *e = tu_read_file(path, NULL);
    cr_expect(e && strstr(e, "--prompt: token id 99 outside the vocabulary (50)"), "%s", e);
    free(e);
    free(d);
}
