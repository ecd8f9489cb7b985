/* run/checkpoint.h — checkpoint folders: layout, manifest, saving, finding
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
 *       {"format":"train_gpt checkpoint","version":1,"step":42,"world_size":1,
 *        "files":[{"name":"model.bin","bytes":N,"crc32":C}, ...]}
 * A folder is a complete save only when COMPLETE exists, parses, and lists
 * model.bin and one state file per rank with the sizes found on disk.
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
#ifndef RUN_CHECKPOINT_H
#define RUN_CHECKPOINT_H

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

typedef struct {
    int step, world_size, n_files;
    CkptFile *files; /* model.bin first, then state_r00000.bin ... in rank order */
} CkptManifest;

/* DIR/step_%08d into out. */
int ckpt_step_dir(char *out, size_t len, const char *dir, int step);

/* Create DIR and DIR/step_N (reusing it when present after an interrupted
 * save, whose COMPLETE is removed first so it never mixes two saves). */
int ckpt_begin(const char *dir, int step, char *step_dir, size_t len, char *err, size_t err_len);
int ckpt_write_model(const char *step_dir, const GPTConfig *cfg, const float *params,
                     CkptFile *out, char *err, size_t err_len);
int ckpt_write_state(const char *step_dir, int rank, const RunState *st, uint64_t num_params,
                     uint64_t offset, uint64_t count, const float *m, const float *v,
                     CkptFile *out, char *err, size_t err_len);
/* Write COMPLETE last, then delete all but the newest `keep` complete
 * saves (keep 0 keeps all) and incomplete folders older than this one. */
int ckpt_commit(const char *dir, const char *step_dir, int step, int world_size,
                const CkptFile *files, int n_files, int keep, char *err, size_t err_len);

/* One process, whole optimizer state: begin, model, state, commit. */
int ckpt_save(const char *dir, int step, int keep, const GPTConfig *cfg, const float *params,
              const RunState *st, uint64_t num_params, const float *m, const float *v,
              char *step_dir, size_t len, char *err, size_t err_len);

/* The newest complete save under dir: 1 with its folder in out and step in
 * *step, 0 when there is none, -1 when dir cannot be read. Folders whose
 * COMPLETE is unreadable are skipped with a note on stderr. */
int ckpt_find_latest(const char *dir, char *out, size_t len, int *step, char *err,
                     size_t err_len);

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
