/* ckpt/rollback.c — which save a run continues from (session.h):
 * session_locate, with its fall-back past a corrupt newest save, and the
 * rollback point a non-finite abort points the user to. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "session.h"

/* PATH names one step folder: it has a COMPLETE, or a step_N name. */
static int is_step_folder(const char *path)
{
    char mp[4200];
    struct stat st;
    io_err(mp, sizeof mp, "%s/%s", path, CKPT_MANIFEST);
    if (stat(mp, &st) == 0) return 1;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strncmp(base, "step_", 5) == 0;
}

/* --resume=DIR/step_N: exactly that save, or an error. */
static int locate_strict(RunSession *s, char *save_dir, size_t len, char *err, size_t err_len)
{
    const char *path = s->cfg.resume_path;
    CkptManifest man;
    char why[3000];
    if (ckpt_read_manifest(path, &man, why, sizeof why) != 0) {
        io_err(err, err_len, "--resume=%s: not a complete save: %s", path, why);
        return -1;
    }
    s->resumed.step = man.step;
    s->resumed.complete = 1;
    s->resumed.has_identity = man.has_identity;
    s->resumed.id = man.id;
    ckpt_manifest_free(&man);
    io_err(save_dir, len, "%s", path);
    return 1;
}

/* Rank 0: the newest complete save under dir that verifies whole, with a
 * note for each newer one skipped. 1 (found), 0 (none), -1 (error: cannot
 * list, or saves found and none intact). */
static int pick_newest_intact(RunSession *s, const char *dir, char *err, size_t err_len)
{
    CkptEntry *saves;
    int n, found = 0, corrupt = 0;
    char first_fault[1200] = "";
    if (ckpt_list(dir, &saves, &n, err, err_len) != 0) return -1;
    for (int i = n - 1; i >= 0 && !found; i--) {
        char sd[4300], why[1100];
        ckpt_step_dir(sd, sizeof sd, dir, saves[i].step);
        if (!saves[i].complete) {
            if (saves[i].note[0]) fprintf(stderr, "note: skipping %s: %s\n", sd, saves[i].note);
            continue;
        }
        CkptManifest man;
        int ok = ckpt_read_manifest(sd, &man, why, sizeof why) == 0;
        if (ok) {
            ok = ckpt_verify(sd, &man, why, sizeof why) == 0;
            ckpt_manifest_free(&man);
        }
        if (!ok) {
            fprintf(stderr, "note: skipping %s: %s; trying the previous complete save\n", sd,
                    why);
            if (!corrupt++) io_err(first_fault, sizeof first_fault, "%s", why);
            continue;
        }
        s->resumed = saves[i];
        found = 1;
    }
    free(saves);
    if (!found && corrupt)
        io_err(err, err_len, "--resume: no intact save in %s: %d complete save%s failed %s "
               "checks (the newest: %s)", dir, corrupt, corrupt == 1 ? "" : "s",
               corrupt == 1 ? "its" : "their", first_fault);
    return found ? 1 : corrupt ? -1 : 0;
}

int session_locate(RunSession *s, Dist *d, char *save_dir, size_t len, char *err,
                   size_t err_len)
{
    s->resumed.step = -1;
    if (!s->cfg.resume) return 0;
    if (s->cfg.resume_path && is_step_folder(s->cfg.resume_path))
        return locate_strict(s, save_dir, len, err, err_len);
    const char *dir = s->cfg.resume_path ? s->cfg.resume_path : s->dir;
    /* Rank 0 reads and checks; {result, entry} go to every rank, so all
     * ranks resume the same save. */
    int rc = s->rank == 0 ? pick_newest_intact(s, dir, err, err_len) : 0;
    struct {
        int rc;
        CkptEntry e;
    } pick = {rc, s->resumed};
    dist_broadcast(d, &pick, sizeof pick);
    s->resumed = pick.e;
    if (pick.rc < 0 && s->rank != 0) io_err(err, err_len, "rank 0 found no save to resume");
    if (pick.rc <= 0) {
        s->resumed.step = -1;
        if (pick.rc == 0 && s->cfg.resume_path)
            io_err(err, err_len, "--resume=%s: no complete save there (a save is a step_N "
                   "folder with a COMPLETE manifest)", s->cfg.resume_path);
        else if (pick.rc == 0)
            printf("resume: no complete save in %s yet: starting a new run\n", dir);
        return pick.rc == 0 && !s->cfg.resume_path ? 0 : -1;
    }
    ckpt_step_dir(save_dir, len, dir, s->resumed.step);
    return 1;
}

int session_rollback_point(const RunSession *s, char *out, size_t len)
{
    int step;
    CkptIdentity id = {s->run_id, 0};
    if (!s->dir[0] || !ckpt_find_rollback(s->dir, &id, &step)) return 0;
    ckpt_step_dir(out, len, s->dir, step);
    return 1;
}
