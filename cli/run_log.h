/* cli/run_log.h — the JSON-lines log (--log): every write checked, and on
 * resume no step twice.
 *
 * Owns: the log file. Each line is written whole with write(2) and checked.
 * The first failure (a full disk, a file-size limit, an I/O error) cuts the
 * file back to its last whole line, prints one warning, and drops every
 * later line, so the file stays valid JSON lines; run_log_close then reports
 * it as an error unless errors are ignored (--log-errors ignore).
 *
 * Resume. A run killed after its last save has logged steps that the
 * resumed run will train again. run_log_open for a resume at step N cuts
 * the file back to just after the training line of step N (or, when that
 * line is absent, to the first line of a later step); the lines cut are
 * appended to "<log>.abandoned", not deleted, and a note says how many.
 * Lines of step N after its training line (its val loss, the summary of a
 * segment that ended there) stay.
 *
 * Run id. A new run's log starts with the run's record (cli/run_record.h),
 * whose "run_id" is the checkpoint run id (16 hex digits). A resume given a log whose header
 * names another run id is refused, naming both, before anything is cut or
 * appended; a log without a header (older logs) is taken as the run's. */
#ifndef CLI_RUN_LOG_H
#define CLI_RUN_LOG_H

#include <stddef.h>

typedef struct {
    int fd;            /* -1: no log */
    char path[4096];
    int ignore_errors; /* --log-errors ignore */
    int failed;        /* a write failed: later lines are dropped */
    long dropped;      /* lines not written */
    long long size;    /* bytes of whole lines in the file */
    char fault[600];   /* the first failure */
} RunLog;

/* Open path (NULL: no log) for a new run (resume_step < 0; the file must
 * be empty or absent) or a run resumed at resume_step (cut back as above,
 * then appended to). The run holds an exclusive flock(2) on it until exit:
 * a second run given the same --log is refused (RUN_LOG_IN_USE), not let
 * write over it. */
#define RUN_LOG_IN_USE "another run is writing this log now (it holds a lock on it); give this " \
                       "run another --log"
int run_log_open(RunLog *l, const char *path, int resume_step, const char *run_id,
                 int ignore_errors, char *err, size_t err_len);

/* Append one line (json without its newline). No-op without a log or
 * after a failure. */
void run_log_line(RunLog *l, const char *json);

/* Close. -1 with a message when lines were lost and errors are not ignored. */
int run_log_close(RunLog *l, char *err, size_t err_len);

#endif
