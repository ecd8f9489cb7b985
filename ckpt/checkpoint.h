/* ckpt/checkpoint.h — checkpoint folders: layout, manifest, saving, finding
 * the newest complete save, loading, keeping the newest K.
 *
 * Owns: the folder layout and the COMPLETE manifest. One save is a folder
 *   DIR/step_00000042/
 *     model.bin           llm.c model file, version 3 (fp32): the parameters
 *                         (the fp32 master copy where the backend keeps one);
 *                         loadable by --init-from
 *     state_r00000.bin    run state + AdamW m and v of rank 0's slice
 *     state_r00001.bin    ... one per rank that holds optimizer state
 *     COMPLETE            the manifest, JSON, written last:
 *       {"format":"train_gpt checkpoint","version":2,"step":42,"world_size":1,
 *        "run_id":"9f0c...","config_hash":"51d2...",
 *        "files":[{"name":"model.bin","bytes":N,"crc32":C}, ...]}
 * A folder is a complete save only when COMPLETE exists, parses, and lists
 * model.bin and one state file per rank with the sizes found on disk.
 *
 * The run identity (version 2): run_id is drawn at random when a run starts
 * and kept across its resumes; config_hash is run_state_config_hash of the
 * configuration. Both are 16 lowercase hex digits. Version 1 manifests
 * (saves made before identities existed) are still read; they have none.
 * Pruning (--keep) deletes only saves of the committing run or without an
 * identity, never another run's, and never the rollback point: the newest
 * complete save whose run state records no non-finite streak (bad-steps 0).
 * Every file is written as "<name>.tmp", fsynced and renamed; the folder is
 * fsynced before COMPLETE is written and again after, so a kill at any moment
 * leaves the previous complete save as it was. Loading checks model.bin's
 * size and crc32 against the manifest and each state file's own checksums.
 *
 * Several ranks (ZeRO-1): rank 0 calls ckpt_begin; after a barrier every
 * rank writes its state file with ckpt_write_state (its slice of m and v,
 * the range recorded in the file); rank 0 writes model.bin, gathers the
 * CkptFile entries and calls ckpt_commit. ckpt_load_state reads any range
 * from the files that cover it, so the optimizer state can be re-sharded
 * for another world size. Every function returns 0, or -1 with
 * "<path>: <fault>" in err. */
#ifndef CKPT_CHECKPOINT_H
#define CKPT_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "model/config.h"
#include "run_state.h"

#define CKPT_MAX_WORLD 4096
#define CKPT_MANIFEST "COMPLETE"
#define CKPT_MANIFEST_MAX_BYTES (1 << 20)

typedef struct {
    char name[32];
    uint64_t bytes;
    uint32_t crc;
} CkptFile;

/* Which run made a save (see the top). */
typedef struct {
    uint64_t run_id, config_hash;
} CkptIdentity;

typedef struct {
    int step, world_size, n_files;
    int version;          /* 1 or 2 */
    int has_identity;     /* version 2 */
    CkptIdentity id;
    CkptFile *files; /* model.bin first, then state_r00000.bin ... in rank order */
} CkptManifest;

/* One step folder found in a checkpoint folder. */
typedef struct {
    int step;
    int complete;     /* COMPLETE parses and matches the files on disk */
    int has_identity; /* complete and version 2 */
    CkptIdentity id;
    int is_link;      /* step_N is a symbolic link: read, never written, emptied or moved */
    char note[400];   /* why an existing COMPLETE was not accepted; "" otherwise */
} CkptEntry;

/* DIR/step_%08d into out. */
int ckpt_step_dir(char *out, size_t len, const char *dir, int step);

/* Create DIR and DIR/step_N (reusing it when present after an interrupted
 * save, whose COMPLETE is removed first so it never mixes two saves). A
 * step_N that is a symbolic link is refused, never written through. */
int ckpt_begin(const char *dir, int step, char *step_dir, size_t len, char *err, size_t err_len);
int ckpt_write_model(const char *step_dir, const GPTConfig *cfg, const float *params,
                     CkptFile *out, char *err, size_t err_len);
int ckpt_write_state(const char *step_dir, int rank, const RunState *st, uint64_t num_params,
                     uint64_t offset, uint64_t count, const float *m, const float *v,
                     CkptFile *out, char *err, size_t err_len);
/* Write COMPLETE last (with the identity id; NULL writes a version 1
 * manifest, without one), then ckpt_prune with keep, unless keep is
 * CKPT_PRUNE_LATER (the caller prunes once it has said the save). */
#define CKPT_PRUNE_LATER (-1)
int ckpt_commit(const char *dir, const char *step_dir, int step, int world_size,
                const CkptFile *files, int n_files, int keep, const CkptIdentity *id,
                char *err, size_t err_len);

/* Delete all but the newest `keep` complete saves of run id (keep 0 keeps
 * all), keeping the rollback point, and incomplete folders older than the
 * newest complete save; a note on stdout for each. A save that cannot be
 * deleted is warned about once: its COMPLETE is gone by then, and the
 * incomplete folder it leaves is retried quietly at later saves. */
void ckpt_prune(const char *dir, int keep, const CkptIdentity *id);

/* One process, whole optimizer state: begin, model, state, commit. */
int ckpt_save(const char *dir, int step, int keep, const CkptIdentity *id, const GPTConfig *cfg,
              const float *params, const RunState *st, uint64_t num_params, const float *m,
              const float *v, char *step_dir, size_t len, char *err, size_t err_len);

/* Every step folder under dir, sorted by step (oldest first), each marked
 * complete or not; nothing is printed (the caller says what matters).
 * *out is malloc'd (NULL when there are none). A missing dir has none;
 * -1 when dir cannot be read. */
int ckpt_list(const char *dir, CkptEntry **out, int *n, char *err, size_t err_len);

/* The newest complete save under dir: 1 with its folder in out and step in
 * *step, 0 when there is none, -1 when dir cannot be read. Prints nothing. */
int ckpt_find_latest(const char *dir, char *out, size_t len, int *step, char *err,
                     size_t err_len);

/* Read every file the manifest lists and check its size and crc32: the
 * whole save, as a resume will read it. */
int ckpt_verify(const char *step_dir, const CkptManifest *man, char *err, size_t err_len);

/* The consecutive non-finite steps recorded in step_dir's rank-0 state
 * file (its header and entries only). */
int ckpt_read_bad_steps(const char *step_dir, int64_t *bad_steps, char *err, size_t err_len);

/* The rollback point among this run's saves in dir (id NULL: any save):
 * the newest complete save with bad-steps 0. 1 with its step, 0 if none. */
int ckpt_find_rollback(const char *dir, const CkptIdentity *id, int *step);

/* Parse and check step_dir/COMPLETE (and the sizes of the files it lists). */
int ckpt_read_manifest(const char *step_dir, CkptManifest *man, char *err, size_t err_len);
/* Parse a manifest from memory; `what` names it in messages. */
int ckpt_parse_manifest(const char *text, size_t len, const char *what, CkptManifest *man,
                        char *err, size_t err_len);
void ckpt_manifest_free(CkptManifest *man);

/* model.bin: size and crc32 against the manifest, then the llm.c reader.
 * *params is malloc'd (config_num_params(cfg) floats). */
int ckpt_load_model(const char *step_dir, const CkptManifest *man, GPTConfig *cfg,
                    float **params, char *err, size_t err_len);

/* The run state (from rank 0's file; it owns its shard hashes:
 * run_state_free, also done here on failure) and elements [offset,
 * offset+count) of m and v, gathered from whichever state files hold them. */
int ckpt_load_state(const char *step_dir, const CkptManifest *man, RunState *st,
                    uint64_t num_params, uint64_t offset, uint64_t count, float *m, float *v,
                    char *err, size_t err_len);

#endif
