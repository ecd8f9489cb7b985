/* tests/lib/cli_harness.h — helpers for the end-to-end tests that drive
 * ./train_gpt as a separate process (resume, signals, hostile inputs).
 * The binary is $TRAIN_GPT_BIN when set (make test points it at
 * build/test/train_gpt, make test-asan at build/asan/test/train_gpt), else
 * build/test/train_gpt when it exists, else ./train_gpt. The test build's
 * programs are the ones with the TRAIN_GPT_TEST_* hooks (base/test_hooks.h);
 * ./train_gpt has none. */
#ifndef TESTS_TRAIN_CLI_H
#define TESTS_TRAIN_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TC_MAX_STEPS 4096

/* mpirun in a container, as root, on 2 cores: shared memory (vader)
 * without the single-copy (CMA/ptrace) path, no core binding. Callers add
 * a timeout in front and -np N after.
 * What a launch spends, cut (Open MPI 4.1 on one node; perf and strace of
 * `mpirun -np 2` over MPI_Init + a barrier, then the suites):
 *  - mpirun and each rank ran hwloc's whole I/O discovery (PCI config
 *    space read through the hypervisor, libpciaccess naming, the GL plugin
 *    probing X displays), PMIx set up its shared-memory job store (ds21)
 *    for each job, and each rank opened pml cm with the psm/psm2 MTLs only
 *    to select ob1: no I/O devices (nothing here uses their locality),
 *    PMIx's hash store and ob1 named took a trivial launch from 0.42 to
 *    0.25 CPU-s and 1.25 to 0.71 s wall (alternating runs, load 11);
 *  - a rank waiting in a collective polls shared memory without pause
 *    unless Open MPI counts the node oversubscribed (more ranks than
 *    cores): 2 ranks beside another test job (and other load) burn the
 *    core the rank they wait for needs; yielding in that loop took
 *    the zero3eval suite from 9.4 to 5.9 CPU-s and 41 to 26 s wall.
 * The ranks' results do not change: the same btl (vader), pml and
 * collective components; dev/notes/suite-speed.md has the runs.
 * Each launch's session files under its own folder, $TMPDIR/mpi.<the
 * shell's pid>: mpirun makes $TMPDIR/ompi.<host>.<uid> and removes it at
 * its end when empty, so two test jobs' launches in one $TMPDIR raced
 * (the rank suites at --jobs 2 and 3, twice in eight runs: "mkdir ...
 * ompi.vm.0: File exists", orte_session_dir failed, exit 1). */
#define TC_MPIRUN                                                                              \
    "env HWLOC_PLUGINS_BLACKLIST=hwloc_gl,hwloc_opencl,hwloc_pci HWLOC_COMPONENTS=-linuxio "     \
    "PMIX_MCA_gds=hash "                                                                        \
    "mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader "           \
    "--mca btl_vader_single_copy_mechanism none --mca pml ob1 --mca mpi_yield_when_idle 1 "     \
    "--mca orte_tmpdir_base \"${TMPDIR:-/tmp}/mpi.$$\""

const char *tc_bin(void);
/* $TRAIN_GPT_TOKENIZE_BIN when set, else build/test/tokenize when it
 * exists, else ./tokenize. */
const char *tc_tokenize_bin(void);

/* Byte-level shards (vocab 256) from tinyshakespeare (TU_SHAKESPEARE):
 * dir/train_0.bin ... each of `tokens` tokens, from consecutive text, and
 * dir/val.bin, the text's last `tokens` bytes (outside the train glob). */
void tc_make_shards(const char *dir, int nshards, size_t tokens);

/* The flags of the tiny model every end-to-end test trains: L=2, C=32,
 * NH=4, T=16, V=256, B=2, on dir/train_*.bin, validated on dir/val.bin
 * (at the end only),
 * one thread (a busy 2-core machine stalls OpenMP teams, not results). */
const char *tc_model_args(const char *dir);

/* The same without the shape flags (--layers, --channels, --heads,
 * --vocab), for runs whose shape comes from --init-from: shape flags that
 * contradict the file are refused (exit 2). */
const char *tc_data_args(const char *dir);

/* Run "env BIN args" with stdout/stderr to out_prefix.out/.err; returns the
 * exit status (-1 when it did not exit normally, e.g. killed). */
int tc_run(const char *env, const char *args, const char *out_prefix);

/* tc_run with out_prefix dir/run; expects exit status rc and `want` in
 * run.out or run.err (Criterion expectations, which print both). */
void tc_run_expect(const char *dir, const char *args, int rc, const char *want);

/* Start the same in the background; returns the pid of train_gpt itself. */
pid_t tc_spawn(const char *env, const char *args, const char *out_prefix);

/* Run the shell command cmd under script(1), whose pty makes its stdin,
 * stdout and stderr a terminal; everything it prints goes to the file out,
 * and what is written to *to_tty is typed into it. Returns script's pid
 * (tc_wait it; close *to_tty when done). Needs bsdutils' script. */
pid_t tc_spawn_in_pty(const char *cmd, const char *out, int *to_tty);

/* Wait up to timeout_ms; returns the wait status, or -1 on timeout (the
 * process is then SIGKILLed and reaped). */
int tc_wait(pid_t pid, int timeout_ms);

/* From a JSON-lines log: the training lines ("loss" present), in order.
 * Returns how many; steps/losses/skipped may be NULL. */
int tc_log_losses(const char *path, int *steps, double *losses, int *skipped, int max);

/* From a JSON-lines log (each line asserted to be JSON): the last line
 * that has `key` ("event": the summary), parsed; NULL when none has. The
 * caller cJSON_Deletes it. */
struct cJSON;
struct cJSON *tc_log_last_with(const char *log, const char *key);

/* 1 when the file contains the text. */
int tc_file_has(const char *path, const char *text);

/* Bytewise equality of two files (both must exist). */
int tc_files_equal(const char *a, const char *b);

void tc_sleep_ms(int ms);

/* Poll (every 10 ms, up to timeout_ms) until the file holds text: 1, or 0
 * at the timeout. */
int tc_wait_for_text(const char *path, const char *text, int timeout_ms);

/* Poll the same until a JSON-lines log has n training lines. */
int tc_wait_for_steps(const char *log, int n, int timeout_ms);

/* A staged race (base/fileio.h io_test_pause): tc_pause_env(file, at)
 * is the environment that pauses the run at the points listed in `at`
 * ("step:3", "block:val 2/50", "startup:op costs", "commit:m.bin", comma
 * separated), each time writing `file`; tc_paused waits until `file` says
 * the run is held at `here` (timeout_ms only guards against a run that
 * never gets there: 0 then), and tc_release lets it go. The returned
 * string is static: use it before the next call. */
const char *tc_pause_env(const char *file, const char *at);
int tc_paused(const char *file, const char *here, int timeout_ms);
void tc_release(const char *file);

/* Hostile inputs (test_hostile_inputs.c): a good file damaged by one edit at a
 * time, each copy run on, each run refused (exit 1, a message naming the
 * file and the fault, no sanitizer report). */
/* (Short names: the tables in test_hostile_inputs.c spell them on every row.) */
typedef enum { TRUNCATE, SET_I32, SET_U64, EMPTY, FOLDER, FLIP, REPLACE } TcEdit;

typedef struct {
    const char *name;
    TcEdit edit;
    long at;          /* byte offset (TRUNCATE: new length; <0 = from the end) */
    int64_t value;
    const char *text; /* REPLACE: the whole new content */
    const char *msg;  /* expected in stderr */
    long at2;         /* a second SET_U64 at at2 when > 0 */
    int64_t value2;
} TcCase;

#define TC_NCASES(a) (sizeof(a) / sizeof((a)[0]))

/* What one table of cases damages and how the program is run on each copy. */
typedef struct TcTarget TcTarget;
struct TcTarget {
    const char *dir;  /* the test's temp folder: each run's .out/.err go here */
    const char *path; /* the file every case rewrites */
    const char *orig; /* its good bytes */
    size_t len;
    const char *args;  /* the program's flags, the same for every case */
    const char *named; /* what the message must name; NULL: path */
    const char *tag;   /* prefix of the runs' output names; NULL: "run" */
    int tokenize;      /* run tc_tokenize_bin() rather than tc_bin() */
    /* called after each case's file is written, before the run (NULL: none) */
    void (*after_damage)(const TcTarget *t, const TcCase *c);
    const void *user; /* for after_damage */
};

/* The run with output prefix `prefix` exited rc: expects exit 1, and in
 * prefix.err `file`, `msg` and no sanitizer report ("runtime error",
 * "Sanitizer"); `name` labels the failures. */
void tc_expect_refusal(const char *name, int rc, const char *prefix, const char *file,
                       const char *msg);

/* Each case in turn: orig with the case's edit written at t->path (what
 * was there removed first), after_damage, the run, tc_expect_refusal. */
void tc_refuse_all(const TcTarget *t, const TcCase *cases, size_t n);

#endif
