/* tests/lib/cli_harness.c — see train_cli.h. */
#include "tests/lib/cli_harness.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "data/shard.h"
#include "tests/lib/test_util.h"

/* $var, else the test build's program (base/test_hooks.h) when it is
 * there, else the product's. */
static const char *program(const char *var, const char *test_build, const char *product)
{
    const char *b = getenv(var);
    if (b && *b) return b;
    return access(test_build, X_OK) == 0 ? test_build : product;
}

const char *tc_bin(void)
{
    return program("TRAIN_GPT_BIN", "build/test/train_gpt", "./train_gpt");
}

const char *tc_tokenize_bin(void)
{
    return program("TRAIN_GPT_TOKENIZE_BIN", "build/test/tokenize", "./tokenize");
}

void tc_make_shards(const char *dir, int nshards, size_t tokens)
{
    size_t len;
    char *text = tu_read_file(TU_SHAKESPEARE, &len);
    cr_assert_not_null(text, "%s is missing", TU_SHAKESPEARE);
    cr_assert(len >= nshards * tokens);
    uint16_t *tok = malloc(tokens * sizeof(uint16_t));
    for (int s = 0; s < nshards; s++) {
        for (size_t i = 0; i < tokens; i++) tok[i] = (unsigned char)text[s * tokens + i];
        char path[512], err[512];
        snprintf(path, sizeof path, "%s/train_%d.bin", dir, s);
        cr_assert_eq(shard_write(path, tok, tokens, err, sizeof err), 0, "%s", err);
    }
    /* the val shard: the text's last `tokens` bytes, a file of its own (a
     * val shard inside the train glob draws a warning) */
    for (size_t i = 0; i < tokens; i++) tok[i] = (unsigned char)text[len - tokens + i];
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/val.bin", dir);
    cr_assert_eq(shard_write(path, tok, tokens, err, sizeof err), 0, "%s", err);
    free(tok);
    free(text);
}

const char *tc_model_args(const char *dir)
{
    static char buf[1024];
    snprintf(buf, sizeof buf,
             "--train-data '%s/train_*.bin' --val-data '%s/val.bin' --val-every 0 "
             "--val-batches 1 --layers 2 --channels 32 --heads 4 --seq-len 16 --vocab 256 "
             "--batch 2 --lr 1e-3 --device cpu --threads 1",
             dir, dir);
    return buf;
}

const char *tc_data_args(const char *dir)
{
    static char buf[1024];
    snprintf(buf, sizeof buf,
             "--train-data '%s/train_*.bin' --val-data '%s/val.bin' --val-every 0 "
             "--val-batches 1 --seq-len 16 --batch 2 --lr 1e-3 --device cpu --threads 1",
             dir, dir);
    return buf;
}

int tc_run(const char *env, const char *args, const char *out_prefix)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s %s %s >'%s.out' 2>'%s.err'", env ? env : "", tc_bin(), args,
             out_prefix, out_prefix);
    return tu_run(cmd);
}

void tc_run_expect(const char *d, const char *args, int rc, const char *want)
{
    char p[700];
    snprintf(p, sizeof p, "%s/run", d);
    int got = tc_run(NULL, args, p);
    char *out = tu_read_file(tu_path(d, "run.out"), NULL);
    char *err = tu_read_file(tu_path(d, "run.err"), NULL);
    cr_expect_eq(got, rc, "exit %d (expected %d) for %s: %s%s", got, rc, args, out ? out : "",
                 err ? err : "");
    cr_expect((out && strstr(out, want)) || (err && strstr(err, want)),
              "'%s' not printed for %s: %s%s", want, args, out ? out : "", err ? err : "");
    free(out);
    free(err);
}

pid_t tc_spawn(const char *env, const char *args, const char *out_prefix)
{
    char cmd[8192];
    /* exec: the shell becomes train_gpt, so the pid is the trainer's. */
    snprintf(cmd, sizeof cmd, "exec %s %s %s >'%s.out' 2>'%s.err'", env ? env : "", tc_bin(),
             args, out_prefix, out_prefix);
    if (env && *env) /* "exec VAR=x prog" is not sh syntax: export first */
        snprintf(cmd, sizeof cmd, "export %s; exec %s %s >'%s.out' 2>'%s.err'", env, tc_bin(),
                 args, out_prefix, out_prefix);
    /* Empty both files before the fork, not in the child's shell: a caller
     * that waits for a line in PREFIX.out must never find the one an
     * earlier run of the same prefix wrote. */
    char path[4096];
    const char *ext[2] = {"out", "err"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s.%s", out_prefix, ext[i]);
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f, "%s", path);
        fclose(f);
    }
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

int tc_wait_for_text(const char *path, const char *text, int timeout_ms)
{
    for (int t = 0; t < timeout_ms; t += 10) {
        if (tc_file_has(path, text)) return 1;
        tc_sleep_ms(10);
    }
    return 0;
}

int tc_wait_for_steps(const char *log, int n, int timeout_ms)
{
    for (int t = 0; t < timeout_ms; t += 10) {
        if (tc_log_losses(log, NULL, NULL, NULL, TC_MAX_STEPS) >= n) return 1;
        tc_sleep_ms(10);
    }
    return 0;
}

const char *tc_pause_env(const char *file, const char *at)
{
    static char env[4400];
    snprintf(env, sizeof env, "TRAIN_GPT_TEST_PAUSE_AT='%s' TRAIN_GPT_TEST_PAUSE_FILE='%s'", at,
             file);
    return env;
}

int tc_paused(const char *file, const char *here, int timeout_ms)
{
    char want[300];
    snprintf(want, sizeof want, "paused at %s\n", here);
    return tc_wait_for_text(file, want, timeout_ms);
}

void tc_release(const char *file) { unlink(file); }

void tc_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

int tc_wait(pid_t pid, int timeout_ms)
{
    int st;
    for (int waited = 0; waited <= timeout_ms; waited += 5) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) return st;
        tc_sleep_ms(5);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

int tc_log_losses(const char *path, int *steps, double *losses, int *skipped, int max)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[4096];
    int n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        cJSON *j = cJSON_Parse(line);
        const cJSON *loss = cJSON_GetObjectItemCaseSensitive(j, "loss");
        if (j && loss) {
            const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "step");
            if (steps) steps[n] = st ? st->valueint : -1;
            if (losses) losses[n] = cJSON_IsNumber(loss) ? loss->valuedouble : NAN;
            if (skipped) skipped[n] = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "skipped"));
            n++;
        }
        cJSON_Delete(j);
    }
    fclose(f);
    return n;
}

cJSON *tc_log_last_with(const char *log, const char *key)
{
    char *text = tu_read_file(log, NULL);
    cr_assert_not_null(text, "no log at %s", log);
    cJSON *found = NULL;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *j = cJSON_Parse(line);
        cr_assert_not_null(j, "%s: log line is not JSON: %s", log, line);
        if (cJSON_GetObjectItem(j, key)) {
            cJSON_Delete(found);
            found = j;
        } else {
            cJSON_Delete(j);
        }
    }
    free(text);
    return found;
}

int tc_file_has(const char *path, const char *text)
{
    char *s = tu_read_file(path, NULL);
    int has = s && strstr(s, text) != NULL;
    free(s);
    return has;
}

int tc_files_equal(const char *a, const char *b)
{
    size_t na, nb;
    char *x = tu_read_file(a, &na), *y = tu_read_file(b, &nb);
    int eq = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return eq;
}

/* Write orig (len bytes) with c's edit at path, removing what was there. */
static void damage_write(const char *path, const char *orig, size_t len, const TcCase *c)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    tu_run(cmd);
    if (c->edit == FOLDER) {
        snprintf(cmd, sizeof cmd, "mkdir '%s'", path);
        cr_assert_eq(tu_run(cmd), 0);
        return;
    }
    if (c->edit == REPLACE) {
        tu_write_file(path, c->text, strlen(c->text));
        return;
    }
    unsigned char *b = malloc(len + 8);
    memcpy(b, orig, len);
    size_t n = len;
    if (c->edit == EMPTY) n = 0;
    if (c->edit == TRUNCATE) n = c->at >= 0 ? (size_t)c->at : len + c->at;
    if (c->edit == SET_I32) {
        int32_t v = (int32_t)c->value;
        memcpy(b + c->at, &v, 4);
    }
    if (c->edit == SET_U64) memcpy(b + c->at, &c->value, 8);
    if (c->at2 > 0) memcpy(b + c->at2, &c->value2, 8);
    if (c->edit == FLIP) b[c->at >= 0 ? (size_t)c->at : len + c->at] ^= 0x40;
    tu_write_file(path, b, n);
    free(b);
}

void tc_expect_refusal(const char *name, int rc, const char *prefix, const char *file,
                       const char *msg)
{
    char e[800];
    snprintf(e, sizeof e, "%s.err", prefix);
    char *err = tu_read_file(e, NULL);
    cr_expect_eq(rc, 1, "%s: exit status %d (expected 1): %s", name, rc, err ? err : "");
    cr_expect(err && strstr(err, file), "%s: message does not name %s: %s", name, file,
              err ? err : "");
    cr_expect(err && strstr(err, msg), "%s: message lacks '%s': %s", name, msg, err ? err : "");
    cr_expect(err && !strstr(err, "runtime error") && !strstr(err, "Sanitizer"),
              "%s: sanitizer report: %s", name, err ? err : "");
    free(err);
}

void tc_refuse_all(const TcTarget *t, const TcCase *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const TcCase *c = &cases[i];
        char p[700], cmd[8192];
        damage_write(t->path, t->orig, t->len, c);
        if (t->after_damage) t->after_damage(t, c);
        snprintf(p, sizeof p, "%s/%s_%s", t->dir, t->tag ? t->tag : "run", c->name);
        int rc;
        if (t->tokenize) {
            snprintf(cmd, sizeof cmd, "%s %s >'%s.out' 2>'%s.err'", tc_tokenize_bin(), t->args,
                     p, p);
            rc = tu_run(cmd);
        } else {
            rc = tc_run(NULL, t->args, p);
        }
        tc_expect_refusal(c->name, rc, p, t->named ? t->named : t->path, c->msg);
    }
}

pid_t tc_spawn_in_pty(const char *cmd, const char *out, int *to_tty)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(p[0], 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(126);
        close(p[0]);
        close(p[1]);
        execlp("script", "script", "-qfec", cmd, "/dev/null", (char *)NULL);
        _exit(127);
    }
    close(p[0]);
    *to_tty = p[1];
    return pid;
}
