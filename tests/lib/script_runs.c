/* tests/lib/script_runs.c — scripts/ programs run as forks of one Python
 * (script_runs.h; the runner: dev/reference/script_runs.py). */
#include "tests/lib/script_runs.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/test_util.h"

ScriptRuns script_runs_new(const char *dir)
{
    ScriptRuns sr = {.dir = strdup(dir), .jobs = strdup(""), .n = 0};
    cr_assert(sr.dir && sr.jobs);
    return sr;
}

int script_runs_add(ScriptRuns *sr, const char *script, const char *args)
{
    size_t have = strlen(sr->jobs), n = have + strlen(script) + strlen(args) + 3;
    char *j = realloc(sr->jobs, n);
    cr_assert_not_null(j);
    char *p = j + have;
    p += sprintf(p, "%s", script);
    for (const char *a = args; *a;) {
        while (*a == ' ') a++;
        if (!*a) break;
        *p++ = '\t';
        while (*a && *a != ' ') *p++ = *a++;
    }
    *p++ = '\n', *p = 0;
    sr->jobs = j;
    return sr->n++;
}

void script_runs_go(ScriptRuns *sr, int torch)
{
    char jobs[4200], cmd[9000], *out = NULL;
    snprintf(jobs, sizeof jobs, "%s/script_runs.jobs", sr->dir);
    tu_write_text(jobs, sr->jobs);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 dev/reference/script_runs.py %s %s %s",
             torch ? "--torch" : "", jobs, sr->dir);
    int rc = tu_run_output(cmd, &out, &out);
    cr_assert(rc == 0 && out && strstr(out, "script_runs: PASS"),
              "%s: exit %d: %s (needs /usr/bin/python3 with numpy%s)", cmd, rc, out ? out : "",
              torch ? " and torch" : "");
    free(out);
}

static const char *job_file(const ScriptRuns *sr, int k, const char *ext)
{
    char name[32];
    cr_assert(k >= 0 && k < sr->n, "no run %d", k);
    snprintf(name, sizeof name, "%d.%s", k, ext);
    return tu_path(sr->dir, name);
}

int script_runs_rc(const ScriptRuns *sr, int k)
{
    char *t = tu_read_file(job_file(sr, k, "rc"), NULL);
    cr_assert_not_null(t, "run %d has no status", k);
    int rc = atoi(t);
    free(t);
    return rc;
}

char *script_runs_output(const ScriptRuns *sr, int k)
{
    char *t = tu_read_file(job_file(sr, k, "out"), NULL);
    return t ? t : strdup("");
}

void script_runs_free(ScriptRuns *sr)
{
    free(sr->dir), free(sr->jobs);
    sr->dir = sr->jobs = NULL;
}
