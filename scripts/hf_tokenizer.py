"""scripts/hf_tokenizer.py — the tokenizer identity across a Hugging Face folder.

A model file records the tokenizer it was trained with in header words 28
(low) and 29 (high 32 bits): the dataset manifest's "id", the first 8 bytes,
big-endian, of the SHA-256 of the tokenizer files' 32-byte SHA-256 digests in
order (data/dataset_manifest.c; 0 = none recorded, an id of 0 is written 1).
The files, in that order: GPT-2's encoder.json and vocab.bpe (a folder's
vocab.json and merges.txt: the same bytes), or one Hugging Face
tokenizer.json, or one tiktoken rank file.

export_hf.py writes the files of the model's tokenizer into the folder
(export_files), and import_hf.py and --init-from FOLDER (interop/hf_tokenizer.c,
the same rule) record the folder's (folder_id), so that model -> folder ->
model gives the same bytes, words 28/29 included. A model recording none whose
export still gets GPT-2's files (today's default at GPT-2's vocabulary) lists
"tokenizer" under config.json's llmc_defaults, and the import records 0 again.
"""
import hashlib
import os
import sys

GPT2_ID = 0x94c264325d7a03de  # encoder.json + vocab.bpe (docs/file-formats.md)
WORD = 28  # header words 28 (low) and 29 (high)
MARK = "tokenizer"  # in llmc_defaults: the model file recorded no tokenizer


def ident(paths):
    """The identity of the tokenizer files at paths, in order."""
    outer = hashlib.sha256()
    for p in paths:
        with open(p, "rb") as f:
            outer.update(hashlib.sha256(f.read()).digest())
    v = int.from_bytes(outer.digest()[:8], "big")
    return v or 1


def header_id(h):
    """The identity a model file's header words record (0: none)."""
    return (h[WORD] & 0xffffffff) | (h[WORD + 1] & 0xffffffff) << 32


def set_header_id(header, tid):
    """Words 28/29 of an int32 header array (numpy) set to tid."""
    lo, hi = tid & 0xffffffff, tid >> 32
    header[WORD] = lo - (1 << 32) if lo >= 1 << 31 else lo
    header[WORD + 1] = hi - (1 << 32) if hi >= 1 << 31 else hi


def folder_files(folder):
    """The tokenizer files of a folder in identity order: tokenizer.json;
    else vocab.json and merges.txt; else its one *.tiktoken file; else []."""
    def at(n):
        return os.path.join(folder, n)
    if os.path.isfile(at("tokenizer.json")):
        return [at("tokenizer.json")]
    if os.path.isfile(at("vocab.json")) and os.path.isfile(at("merges.txt")):
        return [at("vocab.json"), at("merges.txt")]
    tk = sorted(n for n in os.listdir(folder) if n.endswith(".tiktoken"))
    return [at(tk[0])] if len(tk) == 1 else []


def folder_id(folder, config):
    """The identity an import records for folder (config.json's dict)."""
    if MARK in (config.get("llmc_defaults") or []):
        return 0
    files = folder_files(folder)
    return ident(files) if files else 0


def cache_candidates():
    """Tokenizer files this machine has (data/source.h's chain): the
    environment's overrides, then the user's cache (scripts/fetch_tokenizers.sh)."""
    xdg = os.environ.get("XDG_DATA_HOME", "")
    cache = os.path.join(xdg if xdg.startswith("/") else
                         os.path.join(os.path.expanduser("~"), ".local", "share"), "train_gpt")
    out = [os.environ.get(v) for v in ("TRAIN_GPT_LLAMA3_TOKENIZER", "TRAIN_GPT_QWEN25_TOKENIZER",
                                       "TRAIN_GPT_QWEN3_TOKENIZER")]
    for sub, name in (("llama3", "tokenizer.json"), ("qwen2_5", "tokenizer.json"),
                      ("qwen3", "tokenizer.json"), ("cl100k_base", "cl100k_base.tiktoken"),
                      ("o200k_base", "o200k_base.tiktoken")):
        out.append(os.path.join(cache, sub, name))
    return [p for p in out if p and os.path.isfile(p)], cache


def out_name(path):
    """The name a tokenizer file gets in the folder: tokenizer.json for a
    Hugging Face one (JSON), a rank file keeps its *.tiktoken name."""
    with open(path, "rb") as f:
        head = f.read(64).lstrip()
    if head.startswith(b"{"):
        return "tokenizer.json"
    base = os.path.basename(path)
    return base if base.endswith(".tiktoken") else None


def export_files(prog, args, tid, V, model, gpt2_files):
    """({name: bytes}, mark): the tokenizer files for the folder of a model
    recording tid, and whether config.json lists MARK. gpt2_files() gives
    GPT-2's {name: bytes} (each exporter its own set)."""
    def read(p):
        with open(p, "rb") as f:
            return f.read()
    if args.no_tokenizer:
        return {}, False
    if args.tokenizer:
        path = args.tokenizer
        if not os.path.isfile(path):
            sys.exit(f"{prog}: --tokenizer {path}: not a file")
        name = out_name(path)
        if name is None:
            sys.exit(f"{prog}: --tokenizer {path}: neither a Hugging Face tokenizer.json nor a "
                     "tiktoken rank file (*.tiktoken)")
        got = ident([path])
        if tid and got != tid:
            sys.exit(f"{prog}: --tokenizer {path}: tokenizer {got:016x}, but {model} was "
                     f"trained with tokenizer {tid:016x} (the manifest's \"id\" of its data); "
                     "give that tokenizer's file, or --no-tokenizer")
        if not tid:
            print(f"{prog}: note: {model} records no tokenizer; the folder's ({got:016x}, "
                  f"{path}) is what an import will record")
        return {name: read(path)}, False
    if getattr(args, "tokenizer_dir", None):
        return None, False  # the Llama exporter's copy; checked by check_dir
    if tid == GPT2_ID or (tid == 0 and V == 50257):
        return gpt2_files(), tid == 0
    if tid == 0:
        return {}, False
    found, cache = cache_candidates()
    for p in found:
        if ident([p]) == tid:
            print(f"{prog}: tokenizer: {p} (the model's {tid:016x})")
            return {out_name(p) or os.path.basename(p): read(p)}, False
    sys.exit(f"{prog}: {model} was trained with tokenizer {tid:016x}, whose file is not in "
             f"{cache} (scripts/fetch_tokenizers.sh); pass --tokenizer FILE (its "
             "tokenizer.json), or --no-tokenizer")


def check_dir(prog, folder, tid, model):
    """--tokenizer-dir's files must be the model's tokenizer when it records one."""
    files = folder_files(folder)
    got = ident(files) if files else 0
    if tid and got != tid:
        what = f"tokenizer {got:016x}" if got else "no tokenizer.json, vocab.json+merges.txt " \
            "or *.tiktoken"
        sys.exit(f"{prog}: --tokenizer-dir {folder}: {what}, but {model} was trained with "
                 f"tokenizer {tid:016x}; give that tokenizer's files, or --no-tokenizer")
