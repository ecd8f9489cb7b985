/* tests/lib/script_runs.h — several runs of scripts/ programs in one start
 * of Python.
 *
 * Owns: ScriptRuns. A run of scripts/export_hf.py or import_hf.py on a tiny
 * model is mostly Python's start and its import of numpy (0.3 CPU-s on the
 * 2-core build VM; with torch, for .pt files, 2 to 3); the Hugging Face
 * suites make dozens. dev/reference/script_runs.py imports them once and
 * runs each job as a fork() of itself that executes the script as
 * `/usr/bin/python3 SCRIPT ARGS` would: its own exit status, its stdout and
 * stderr, no module state of another run. The suites keep a few plain
 * starts of each script for the command line itself. Test-only. */
#ifndef TESTS_SCRIPT_RUNS_H
#define TESTS_SCRIPT_RUNS_H

typedef struct {
    char *dir;  /* the jobs file and each run's output: a folder of the caller's */
    char *jobs; /* one run a line, tab-separated */
    int n;
} ScriptRuns;

/* A batch whose files go in folder dir (the caller's; it must exist). */
ScriptRuns script_runs_new(const char *dir);

/* Adds the run `SCRIPT ARGS` (ARGS split at spaces: no argument may hold
 * one); returns its index. */
int script_runs_add(ScriptRuns *sr, const char *script, const char *args);

/* Runs the jobs in order in one Python (torch imported first when `torch`);
 * asserts the runner itself ran to its end. */
void script_runs_go(ScriptRuns *sr, int torch);

/* Run k's exit status; its stdout and stderr together (malloc'd text). */
int script_runs_rc(const ScriptRuns *sr, int k);
char *script_runs_output(const ScriptRuns *sr, int k);

void script_runs_free(ScriptRuns *sr);

#endif
