/* data/tokenizer.h — byte-level BPE tokenizers: bytes <-> token ids.
 *
 * Owns: the Tokenizer (decode table, merge table, pre-tokenizer, literal
 * tokens) and its three loaders: OpenAI's GPT-2 vocabulary (encoder.json +
 * vocab.bpe, checked by sha256; this header and tokenizer.c), a Hugging Face
 * tokenizer.json with a byte-level BPE model (Llama 3, Qwen2;
 * tokenizer_hf.c) and tiktoken's cl100k_base / o200k_base rank files
 * (tokenizer_tiktoken.c); pre-tokenization, byte-pair merging, decoding, and
 * finding the default vocabulary files. docs/tokenizer.md describes the
 * family; what follows is GPT-2's.
 *
 * Reference: OpenAI's gpt-2 src/encoder.py. Text is split by GPT-2's pattern
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * (PCRE2, UTF mode; \s is spelled out as Unicode's White_Space property, as
 * the Python `regex` module that encoder.py uses defines it), each piece's
 * UTF-8 bytes are mapped through bytes_to_unicode and merged by rank. Ids are
 * those of encoder.py (and of the npm package gpt-3-encoder on valid UTF-8,
 * except where JavaScript's \s differs: U+0085 and U+FEFF).
 *
 * Arbitrary bytes: input need not be valid UTF-8. A byte that is not part of
 * a well-formed UTF-8 sequence counts as one character that is neither a
 * letter, a number nor a space (what Python's surrogateescape makes of it:
 * a lone surrogate, category Cs), and its token bytes are the raw byte. So
 * decode(encode(x)) == x for every byte string x, and on valid UTF-8 nothing
 * changes. The text "<|endoftext|>" inside the input is ordinary text; the
 * EOT id is only ever inserted by the caller.
 *
 * Not thread-safe: a Tokenizer has one match context and one cache; use one
 * Tokenizer per thread. */
#ifndef DATA_TOKENIZER_H
#define DATA_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#define GPT2_VOCAB_SIZE 50257
#define GPT2_EOT 50256           /* <|endoftext|> */
#define GPT2_NUM_MERGES 50000

/* sha256 of the only vocabulary files accepted. */
#define GPT2_ENCODER_SHA256 "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"
#define GPT2_VOCAB_SHA256 "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"

/* Environment variable naming a folder holding encoder.json and vocab.bpe. */
#define GPT2_DIR_ENV "TRAIN_GPT_GPT2_DIR"

/* A growable array of token ids (encode appends). Zero-initialise; free with
 * free(ids.data). */
typedef struct {
    int32_t *data;
    size_t len, cap;
} TokenIds;

/* A growable byte buffer (decode appends). Zero-initialise; free with
 * free(text.data). */
typedef struct {
    uint8_t *data;
    size_t len, cap;
} TokenText;

typedef struct {
    uint64_t key;                   /* ((uint64)left << 32 | right) + 1; 0 = empty slot */
    uint32_t rank;                  /* lower merges first (GPT-2: line of vocab.bpe, 0-based) */
    int32_t out;                    /* id of the merged token */
} TokenizerMerge;

typedef struct TokenizerCache TokenizerCache; /* piece bytes -> ids (tokenizer_encode.h) */
typedef struct TokenizerWork TokenizerWork;   /* one piece's BPE scratch (tokenizer_encode.h) */

enum { TOKENIZER_GPT2, TOKENIZER_HF, TOKENIZER_TIKTOKEN };

/* A loader's return for a file that uses a feature this tokenizer does not
 * implement (the message names it); ./tokenize exits 3 on it. */
enum { TOKENIZER_UNSUPPORTED = -3 };

typedef struct {
    int kind;                       /* TOKENIZER_GPT2, _HF or _TIKTOKEN */
    int vocab_size;                 /* every id: 1 + the largest (GPT-2: 50257); ids
                                       with no token (tiktoken's gaps) have 0 bytes */
    int32_t doc_id;                 /* put before each document by ./tokenize; -1: none */
    char name[64];                  /* for messages: "GPT-2", "cl100k_base", the file's name */
    /* decode table: token id -> its raw bytes */
    uint8_t *tok_bytes;             /* all tokens' bytes, concatenated */
    uint32_t *tok_off;              /* [vocab_size + 1] offsets into tok_bytes */
    int32_t byte_id[256];           /* id of each single-byte token */
    /* merges: open-addressing table (left id, right id) -> rank, result id;
     * one 16-byte slot per pair, so a lookup costs one cache miss (Llama 3's
     * table, 2^20 slots, is far larger than the caches) */
    TokenizerMerge *merges;
    size_t merge_mask;              /* table capacity - 1 (a power of two) */
    /* pre-tokenizer: PCRE2 code and match data (opaque here) */
    void *re, *match_data;
    /* the input with ill-formed UTF-8 bytes replaced by '!' (same length) */
    uint8_t *repair;
    size_t repair_cap;
    /* nfc: NFC-normalize each stretch of text between literal tokens before
     * pre-tokenizing (a tokenizer.json's "normalizer": NFC); norm holds the
     * normalized copy (norm_len bytes used, norm_cap allocated) */
    int nfc;
    uint8_t *norm;
    size_t norm_cap;
    TokenizerWork *work;
    TokenizerCache *cache;
    /* pre-tokenizer pattern (PCRE2, UTF + UCP, not anchored: text between
     * matches is a piece too); NULL: GPT-2's, anchored */
    char *pattern;
    /* whole_piece: a piece that is a vocabulary token is that token, unmerged
     * (tiktoken; Hugging Face's ignore_merges). piece_slot maps a token's
     * bytes to its id over the merge vocabulary (tokenizer_pieces.h) */
    int whole_piece;
    struct TokenizerPieceSlot *piece_slot;
    /* scan: the pattern is cl100k's (Llama 3's): pieces of ASCII text are cut
     * by tokenizer_scan.h, PCRE2 asked only where that cannot tell */
    int scan;
    size_t piece_mask;
    /* literal tokens, matched in the raw text before pre-tokenizing, longest
     * first at the leftmost place: Hugging Face's non-special added tokens
     * always, special tokens only with allow_special. Their bytes are in the
     * decode table. */
    int num_literals;
    int32_t *literal_id;
    uint8_t literal_first[256];     /* 1: some literal starts with this byte */
    int no_safe_cut;                /* a literal holds a letter then a space */
} Tokenizer;

/* Load the vocabulary. Both files' sha256 must match the constants above.
 * Returns 0, or -1 with "<file>: <fault>" in err (nothing to free then). */
int tokenizer_load(Tokenizer *tk, const char *encoder_json, const char *vocab_bpe, char *err,
                   size_t err_len);

/* Encode len bytes of text (any bytes), appending ids to out. Returns 0, or
 * -1 with a message in err (out of memory; a PCRE2 failure). */
int tokenizer_encode(Tokenizer *tk, const uint8_t *text, size_t len, TokenIds *out, char *err,
                     size_t err_len);

/* Decode n ids, appending their exact bytes to out. Returns 0, or -1 with a
 * message in err when an id is out of range (nothing appended then) or on
 * out of memory. */
int tokenizer_decode(const Tokenizer *tk, const int32_t *ids, size_t n, TokenText *out, char *err,
                     size_t err_len);

/* The raw bytes of one token (for printing samples token by token); sets
 * *len. NULL when id is out of range. GPT2_EOT decodes to "<|endoftext|>". */
const uint8_t *tokenizer_token_bytes(const Tokenizer *tk, int32_t id, size_t *len);

void tokenizer_free(Tokenizer *tk);

/* Where the vocabulary files are when not given explicitly: the chain of
 * data/source.h for SOURCE_GPT2 ($TRAIN_GPT_GPT2_DIR, the user's cache, npm,
 * the public URLs; sha256-checked). Writes the paths
 * into enc and vocab (cap bytes each) and the place that served them into
 * from, and returns 0; or -1 with everything tried in err. */
int tokenizer_find_files(char *enc, char *vocab, size_t cap, char *from, size_t from_len,
                         char *err, size_t err_len);

/* tokenizer_load of enc_path and voc_path; where either is NULL, of the
 * files tokenizer_find_files finds, with "tokenize: GPT-2 vocabulary from
 * <place>" on stderr unless quiet (./tokenize's jobs start here). -1 with
 * the fault in err; a failed search ends "; or give --encoder and --vocab". */
int tokenizer_load_or_find(Tokenizer *tk, const char *enc_path, const char *voc_path, int quiet,
                           char *err, size_t err_len);

/* Length of the longest prefix of text[0..len) after which text can be cut
 * without changing the encoding: encode(prefix) ++ encode(rest) ==
 * encode(text). The cut is between an ASCII letter and an ASCII space ' ':
 * no piece of GPT-2's, Llama 3's, cl100k's or o200k's pattern holds a letter
 * followed by a space, and none looks behind (a tokenizer whose literal
 * tokens hold a letter then a space gets no cut). Returns 0 when there is no
 * such spot. Used to encode long inputs in chunks. */
size_t tokenizer_safe_cut(const Tokenizer *tk, const uint8_t *text, size_t len);

/* Which tokenizer ./tokenize uses: GPT-2's (the default: encoder_path and
 * vocab_path, NULL = searched), a tokenizer.json (hf_json) or a tiktoken
 * encoding by name (encoding, its rank file searched along data/source.h's
 * chain). At most one of hf_json and encoding. allow_special: special tokens
 * written in the text ("<|endoftext|>", "<|begin_of_text|>") are matched as
 * their ids; default off: they are plain text. */
typedef struct {
    const char *encoder_path, *vocab_path;
    const char *hf_json;
    const char *encoding;
    int allow_special;
    int quiet;
} TokenizerChoice;

/* Load the chosen tokenizer, saying where its files came from on stderr
 * unless quiet. 0; -1 with the fault in err; TOKENIZER_UNSUPPORTED when the
 * file uses a feature not implemented here (err names it). */
int tokenizer_open(Tokenizer *tk, const TokenizerChoice *c, char *err, size_t err_len);

/* tokenizer.json (tokenizer_hf.c): model BPE over ByteLevel's byte alphabet;
 * returns as tokenizer_open. */
int tokenizer_load_hf(Tokenizer *tk, const char *path, int allow_special, char *err,
                      size_t err_len);

/* A tiktoken encoding ("cl100k_base", "o200k_base") from its rank file
 * (tokenizer_tiktoken.c); path NULL: searched. Returns as tokenizer_open. */
int tokenizer_load_tiktoken(Tokenizer *tk, const char *encoding, const char *path,
                            int allow_special, int quiet, char *err, size_t err_len);

#endif
