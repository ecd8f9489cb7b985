/* interop/hf_tokenizer.c — see hf_tokenizer.h. */
#include "hf_tokenizer.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "data/dataset.h"

static int is_file(const char *folder, const char *name, char *path, size_t len)
{
    struct stat st;
    snprintf(path, len, "%s/%s", folder, name);
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The folder's one *.tiktoken file into path: 1, else 0 (none, or several). */
static int one_tiktoken(const char *folder, char *path, size_t len)
{
    DIR *d = opendir(folder);
    if (!d) return 0;
    int n = 0;
    const struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t k = strlen(e->d_name);
        if (k > 9 && strcmp(e->d_name + k - 9, ".tiktoken") == 0 &&
            is_file(folder, e->d_name, path, len))
            n++;
        if (n > 1) break;
    }
    closedir(d);
    if (n == 1) return 1; /* path holds the last match, the only one */
    return 0;
}

int hf_tokenizer_folder_id(const char *folder, const cJSON *config, uint64_t *id, char *err,
                           size_t err_len)
{
    *id = 0;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(config, "llmc_defaults"), *e;
    cJSON_ArrayForEach(e, d) if (cJSON_IsString(e) && strcmp(e->valuestring, "tokenizer") == 0)
        return 0;
    char a[4400], b[4400];
    const char *files[2] = {NULL, NULL};
    if (is_file(folder, "tokenizer.json", a, sizeof a)) files[0] = a;
    else if (is_file(folder, "vocab.json", a, sizeof a) &&
             is_file(folder, "merges.txt", b, sizeof b))
        files[0] = a, files[1] = b;
    else if (one_tiktoken(folder, a, sizeof a)) files[0] = a;
    if (!files[0]) return 0;
    DatasetTokenizer t;
    memset(&t, 0, sizeof t);
    for (int i = 0; i < 2 && files[i]; i++)
        if (dataset_tokenizer_add_file(&t, files[i], err, err_len) != 0) return -1;
    *id = t.id;
    return 0;
}
