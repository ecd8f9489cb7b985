/* tests/fuzz/fuzz_eval_file.c — llm.c's eval file reader: eval_file_read, then the
 * vocabulary check and a walk over every example's tokens through the
 * offsets the reader recorded (ASan catches one out of bounds). Any input
 * must be refused with a message or read within bounds. */
#include <string.h>

#include "eval/eval_file.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[512];
    int fd = fuzz_file(data, size, path, sizeof path);
    EvalSet es;
    if (eval_file_read(path, &es, err, sizeof err) == 0) {
        if (es.num_examples < 1 || es.longest_values > EVAL_MAX_RECORD_VALUES) abort();
        if (es.longest_bytes != es.longest_values * (es.version == 2 ? 4 : 2)) abort();
        unsigned sum = 0;
        for (int i = 0; i < es.num_examples; i++) {
            const EvalExample *e = &es.ex[i];
            if (e->label < 0 || e->label >= EVAL_COMPLETIONS || e->ctx_len < 1) abort();
            for (int k = 0; k < e->ctx_len; k++) sum += es.tokens[e->ctx_off + (size_t)k];
            for (int c = 0; c < EVAL_COMPLETIONS; c++)
                for (int k = 0; k < e->comp_len[c]; k++)
                    sum += es.tokens[e->comp_off[c] + (size_t)k];
        }
        eval_set_check_vocab(&es, 300 + (int)(sum % 2), path, err, sizeof err);
        eval_set_free(&es);
    }
    close(fd);
    return 0;
}
