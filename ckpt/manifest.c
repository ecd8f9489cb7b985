/* ckpt/manifest.c — the COMPLETE manifest of a checkpoint folder: parsing
 * and checking it (checkpoint.h describes the format). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "base/fileio.h"
#include "base/json.h"

void ckpt_manifest_free(CkptManifest *man)
{
    free(man->files);
    memset(man, 0, sizeof *man);
}

/* A 16-digit lowercase hex string -> *out. */
static int get_hex64(const cJSON *obj, const char *key, uint64_t *out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsString(it) || strlen(it->valuestring) != 16) return -1;
    uint64_t v = 0;
    for (const char *c = it->valuestring; *c; c++) {
        int d = *c >= '0' && *c <= '9' ? *c - '0' : *c >= 'a' && *c <= 'f' ? *c - 'a' + 10 : -1;
        if (d < 0) return -1;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return 0;
}

static void expected_name(char *out, size_t len, int index)
{
    if (index == 0) io_err(out, len, "model.bin");
    else io_err(out, len, "state_r%05d.bin", index - 1);
}

int ckpt_parse_manifest(const char *text, size_t len, const char *what, CkptManifest *man,
                        char *err, size_t err_len)
{
    memset(man, 0, sizeof *man);
    cJSON *root = cJSON_ParseWithLength(text, len);
    int rc = -1;
    double step, world;
    int version;
    const cJSON *files = root ? cJSON_GetObjectItemCaseSensitive(root, "files") : NULL;
    if (!root) {
        io_err(err, err_len, "%s: not valid JSON (truncated or corrupt manifest)", what);
        goto out;
    }
    if (json_check_format(root, what, "train_gpt checkpoint", 1, 2, &version, err, err_len) != 0)
        goto out;
    if (version == 2 && (get_hex64(root, "run_id", &man->id.run_id) != 0 ||
                         get_hex64(root, "config_hash", &man->id.config_hash) != 0)) {
        io_err(err, err_len, "%s: \"run_id\" or \"config_hash\" missing or not 16 lowercase "
               "hex digits (a version 2 manifest has both)", what);
        goto out;
    }
    if (json_get_whole(root, "step", 0, 2147483647.0, &step) != 0) {
        io_err(err, err_len, "%s: \"step\" missing or not an integer in 0..2^31-1", what);
        goto out;
    }
    if (json_get_whole(root, "world_size", 1, CKPT_MAX_WORLD, &world) != 0) {
        io_err(err, err_len, "%s: \"world_size\" missing or not in 1..%d", what, CKPT_MAX_WORLD);
        goto out;
    }
    int n = cJSON_IsArray(files) ? cJSON_GetArraySize(files) : -1;
    if (n != (int)world + 1) {
        io_err(err, err_len, "%s: \"files\" must list model.bin and %d state file(s)", what,
                 (int)world);
        goto out;
    }
    man->files = calloc((size_t)n, sizeof(CkptFile));
    if (!man->files) {
        io_err(err, err_len, "%s: out of host memory", what);
        goto out;
    }
    for (int i = 0; i < n; i++) {
        const cJSON *f = cJSON_GetArrayItem(files, i);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(f, "name");
        double bytes, crc;
        char want[32];
        expected_name(want, sizeof want, i);
        if (!cJSON_IsString(name) || strcmp(name->valuestring, want) != 0) {
            io_err(err, err_len, "%s: file %d must be named \"%s\"", what, i, want);
            goto out;
        }
        if (json_get_whole(f, "bytes", 0, 9007199254740992.0, &bytes) != 0 ||
            json_get_whole(f, "crc32", 0, 4294967295.0, &crc) != 0) {
            io_err(err, err_len, "%s: \"%s\": \"bytes\" or \"crc32\" missing or out of range",
                     what, want);
            goto out;
        }
        snprintf(man->files[i].name, sizeof man->files[i].name, "%s", want);
        man->files[i].bytes = (uint64_t)bytes;
        man->files[i].crc = (uint32_t)crc;
    }
    man->step = (int)step;
    man->world_size = (int)world;
    man->version = version;
    man->has_identity = version == 2;
    man->n_files = n;
    rc = 0;
out:
    cJSON_Delete(root);
    if (rc != 0) ckpt_manifest_free(man);
    return rc;
}

int ckpt_read_manifest(const char *step_dir, CkptManifest *man, char *err, size_t err_len)
{
    memset(man, 0, sizeof *man);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", step_dir, CKPT_MANIFEST);
    char *text;
    size_t len;
    int rc = io_read_whole(path, 1, CKPT_MANIFEST_MAX_BYTES, "a manifest", &text, &len, err,
                           err_len);
    if (rc == 0) rc = ckpt_parse_manifest(text, len, path, man, err, err_len);
    free(text);
    if (rc != 0) return -1;
    /* The files it lists must be there with the sizes it records. */
    for (int i = 0; i < man->n_files; i++) {
        char fp[4300];
        struct stat st;
        io_err(fp, sizeof fp, "%s/%s", step_dir, man->files[i].name);
        if (stat(fp, &st) != 0) {
            io_err(err, err_len, "%s: listed in the manifest but cannot be read: %s", fp,
                     strerror(errno));
            ckpt_manifest_free(man);
            return -1;
        }
        if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != man->files[i].bytes) {
            io_err(err, err_len, "%s: %s (the manifest records %llu bytes)", fp,
                     S_ISREG(st.st_mode) ? "size differs" : "not a regular file",
                     (unsigned long long)man->files[i].bytes);
            ckpt_manifest_free(man);
            return -1;
        }
    }
    return 0;
}
