/* ckpt/ownership.h — a checkpoint folder belongs to one run at a time.
 *
 * Owns: the folder's lock, run ids, and what is done with step folders
 * that are not part of the run about to continue.
 *
 * Lock. A training run holds an exclusive flock(2) on DIR/train_gpt.lock
 * from start-up to exit (the kernel drops it when the process ends, however
 * it ends). The file records the holder ("pid 1234 on host h since ..."),
 * so a second run on the same folder is refused at start naming it. On
 * local filesystems this is exact. On NFS, Linux maps flock to NFS byte-
 * range locks, which hold across clients while the lock service works (NFSv4,
 * or v3 with lockd); a mount with "nolock" makes locks local to each client,
 * and two runs on two clients are then not stopped. Where the filesystem
 * refuses locks altogether (ENOLCK, EOPNOTSUPP) the run warns and goes on.
 * The lock belongs to the folder found at start-up (its device and inode,
 * and the lock file's): own_check tells when the path names another one,
 * and the trainer then saves nothing there.
 *
 * Claim. Before training, the folder's step folders are sorted out:
 *   - another run's complete saves (a different run id, or any save when
 *     this is a new run) are refused, naming the run; with
 *     --overwrite-checkpoints they are moved into DIR/replaced_<time>/;
 *   - this run's saves newer than the one resumed (a rollback, or a corrupt
 *     newest save skipped), and newer folders whose manifest is damaged,
 *     are moved into DIR/abandoned/.
 * Nothing is deleted; every move is printed. Folders without a manifest
 * (saves cut short by a crash) are left as they are: the next save of
 * that step reuses the folder, and --keep deletes the older ones. Saves
 * made before run ids existed (version 1 manifests) count as the resumed
 * run's own. */
#ifndef CKPT_OWNERSHIP_H
#define CKPT_OWNERSHIP_H

#include <stddef.h>
#include <stdint.h>

#include "checkpoint.h"

#define OWN_LOCK_FILE "train_gpt.lock"

typedef struct {
    int fd; /* -1 when not held */
    /* The folder locked and its lock file, as found at start-up (device,
     * inode; has_dir / has_file 0 when not recorded): a folder moved,
     * deleted or replaced mid-run is no longer the one locked. */
    int has_dir, has_file;
    unsigned long long dir_dev, dir_ino, file_dev, file_ino;
} OwnLock;

/* Take DIR's lock, or fail naming its holder and the folder's flag
 * ("--checkpoint-dir", "--save-checkpoint-llmc"). Returns 0 (held, or not
 * supported here: a warning was printed), or -1 with the message. */
int own_lock(OwnLock *l, const char *flag, const char *dir, char *err, size_t err_len);
void own_unlock(OwnLock *l);

/* Is dir still the folder own_lock locked, holding the same lock file?
 * Compares device and inode of dir and DIR/train_gpt.lock (not followed
 * if a symlink) with those recorded at start-up. Returns 0, or -1 with a
 * message naming the flag, the folder and what changed. */
int own_check(const OwnLock *l, const char *flag, const char *dir, char *err, size_t err_len);

/* A fresh random run id (never 0). */
uint64_t own_new_run_id(void);

/* Sort out dir's step folders for a run that is new (resumed NULL) or
 * continues the save `resumed` (its step and identity; has_identity 0 for
 * a version 1 save, wherever it lives). overwrite: --overwrite-checkpoints.
 * move 0: only check (another run's saves refused); move 1: also move
 * another run's saves (overwrite) and this run's newer ones aside. The
 * trainer checks at start-up and moves once the run has started (its
 * resume accepted), so a run refused in between moves nothing.
 * Returns 0, or -1 with the message (another run's saves, a failed move). */
int own_claim(const char *dir, const CkptEntry *resumed, int overwrite, int move, char *err,
              size_t err_len);

#endif
