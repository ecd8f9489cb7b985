#!/usr/bin/python3
"""scripts/export_hf.py MODEL.bin OUT [--overwrite] — an llm.c model file for Hugging Face transformers.

Reads llm.c's model file (version 3 fp32 or 5 bf16: a 256-int32 header, then
every parameter in llm.c's order) and writes the tensors under the names and
layouts of Hugging Face transformers' GPT2LMHeadModel:

  transformer.wte.weight           (V, C)   wte without the padded rows V..Vp-1
  transformer.wpe.weight           (maxT, C)
  transformer.h.{l}.ln_1.weight/bias, ln_2.weight/bias      (C,)
  transformer.h.{l}.attn.c_attn.weight (C, 3C)  = qkvw[l] transposed: HF's
                                        Conv1D computes x @ W + b, with W
                                        stored (in, out); llm.c stores (out, in)
  transformer.h.{l}.attn.c_attn.bias   (3C,)
  transformer.h.{l}.attn.c_proj.weight (C, C)   = attprojw[l] transposed
  transformer.h.{l}.mlp.c_fc.weight    (C, 4C)  = fcw[l] transposed
  transformer.h.{l}.mlp.c_proj.weight  (4C, C)  = fcprojw[l] transposed
  (and each one's bias), transformer.ln_f.weight/bias, lm_head.weight (= wte, tied)

OUT a folder (the default use; made if missing, its parent must exist): the
layout GPT2LMHeadModel.from_pretrained(OUT) reads:
  config.json             the shape in HF's names (n_layer, n_head, n_embd,
                          n_positions, vocab_size), gelu_new, tied embeddings
  model.safetensors       written here from the format's specification (an
                          8-byte little-endian header length N, N bytes of
                          JSON: name -> dtype "F32", shape, data_offsets into
                          the byte buffer that follows, plus __metadata__
                          {"format": "pt"}; the header padded with spaces so
                          the buffer starts 8-byte aligned; tensors back to
                          back, no holes). lm_head.weight is left out, as
                          save_pretrained leaves out a tied head.
                          (--weights pt: pytorch_model.bin, torch.save, instead)
  generation_config.json  bos/eos = 50256 (<|endoftext|>)
  vocab.json, merges.txt  GPT-2's tokenizer: encoder.json and vocab.bpe
                          (found as ./tokenize --fetch gpt2 finds them, or
                          --encoder/--vocab), when the model records GPT-2's
                          tokenizer (or none, at 50257 tokens); a model of
                          another tokenizer gets its tokenizer.json or
                          *.tiktoken (--tokenizer FILE, checked against the
                          identity the model records, or found in the user's
                          cache: scripts/hf_tokenizer.py)
OUT a file ending in .pt or .bin (torch.save: a plain dict of float32
tensors, lm_head included) or .safetensors (this writer): that one file,
with a config.json beside it, as before.

Nothing is replaced unasked: a file that exists with other bytes (for
model.safetensors/OUT, any that exists) is refused (exit 1) before anything
is written; with --overwrite the old file is kept under a second name,
NAME.replaced_<time>, unless the new one is byte-identical. Each file is
written to a temporary name in its folder, fsynced, and renamed into place
(the folder fsynced), so a crash, of the process or the machine, leaves the
old file or the new one, never half of one. An I/O error (a full disk, a
quota, EIO) ends the script with one line naming the file and the fault,
exit 1, after taking back what the run did: the files it made are removed,
each old file it had moved aside is put back, and a folder it made goes
(import_hf.py the same for its one file).

A Llama-family model file (header word 16 = 1) becomes a LlamaForCausalLM,
Qwen2ForCausalLM or Qwen3ForCausalLM folder instead (scripts/export_hf_llama.py:
--dtype fp32|bf16, --max-shard-size, --tokenizer-dir; docs/interop.md).

Checked by dev/reference/hf_export_check.py: the repository's PyTorch reference
(dev/reference/gpt2_reference.py) run on the model file and an HF-semantics forward
run on the exported tensors give the same logits; tests/e2e/interop/test_export_hf.c
parses the folder's safetensors header against the specification.
"""
import argparse
import filecmp
import json
import os
import signal
import struct
import sys
import tempfile
import time

import numpy as np

import hf_llama
import hf_safetensors
import hf_tokenizer

MAGIC = 20240326
PROG = "export_hf"  # the name messages start with (scripts/import_hf.py sets its own)


def read_model(path):
    """(cfg dict, {name: float32 array}) in llm.c's names and layouts."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 1024:
        sys.exit(f"{PROG}: {path}: shorter than the 1024-byte header")
    h = struct.unpack("<256i", raw[:1024])
    if h[0] != MAGIC or h[1] not in (3, 5):
        sys.exit(f"{PROG}: {path}: not an llm.c model file (magic {h[0]}, version {h[1]})")
    maxT, V, L, NH, C, Vp = h[2], h[3], h[4], h[5], h[6], h[7]
    if h[hf_llama.ARCH_WORD] == 1:  # the Llama family (interop/model_file.h)
        # the head size is header word 30 when given, else C / NH
        if NH < 1 or (C % NH and h[hf_llama.HEAD_DIM_WORD] < 1) or L < 1 or V < 1 or Vp < V:
            sys.exit(f"{PROG}: {path}: bad header (L={L} NH={NH} C={C} V={V} Vp={Vp})")
        cfg = hf_llama.header_cfg(h)
        shapes = hf_llama.slots(cfg)
    elif h[hf_llama.ARCH_WORD] != 0:
        sys.exit(f"{PROG}: {path}: unknown family {h[hf_llama.ARCH_WORD]} in header word "
                 f"{hf_llama.ARCH_WORD} (0 = gpt2, 1 = llama)")
    else:
        cfg = dict(maxT=maxT, V=V, L=L, NH=NH, C=C, Vp=Vp, arch=0)
        shapes = [("wte", (Vp, C)), ("wpe", (maxT, C)), ("ln1w", (L, C)), ("ln1b", (L, C)),
                  ("qkvw", (L, 3 * C, C)), ("qkvb", (L, 3 * C)), ("attprojw", (L, C, C)),
                  ("attprojb", (L, C)), ("ln2w", (L, C)), ("ln2b", (L, C)),
                  ("fcw", (L, 4 * C, C)), ("fcb", (L, 4 * C)), ("fcprojw", (L, C, 4 * C)),
                  ("fcprojb", (L, C)), ("lnfw", (C,)), ("lnfb", (C,))]
    cfg["version"] = h[1]
    cfg["tid"] = hf_tokenizer.header_id(h)
    n = sum(int(np.prod(s)) for _, s in shapes)
    width = 4 if h[1] == 3 else 2
    if len(raw) != 1024 + n * width:
        sys.exit(f"{PROG}: {path}: {len(raw)} bytes, expected {1024 + n * width}")
    if h[1] == 3:
        flat = np.frombuffer(raw, dtype="<f4", offset=1024, count=n)
    else:  # bf16: the top half of a float32
        half = np.frombuffer(raw, dtype="<u2", offset=1024, count=n).astype(np.uint32)
        flat = (half << 16).view(np.float32)
    params, off = {}, 0
    for name, shape in shapes:
        k = int(np.prod(shape))
        params[name] = flat[off:off + k].reshape(shape).astype(np.float32)
        off += k
    return cfg, params


def to_hf(cfg, p):
    """{HF name: float32 array}."""
    V, L = cfg["V"], cfg["L"]
    sd = {"transformer.wte.weight": p["wte"][:V], "transformer.wpe.weight": p["wpe"]}
    for l in range(L):
        pre = f"transformer.h.{l}."
        sd[pre + "ln_1.weight"], sd[pre + "ln_1.bias"] = p["ln1w"][l], p["ln1b"][l]
        sd[pre + "attn.c_attn.weight"] = p["qkvw"][l].T
        sd[pre + "attn.c_attn.bias"] = p["qkvb"][l]
        sd[pre + "attn.c_proj.weight"] = p["attprojw"][l].T
        sd[pre + "attn.c_proj.bias"] = p["attprojb"][l]
        sd[pre + "ln_2.weight"], sd[pre + "ln_2.bias"] = p["ln2w"][l], p["ln2b"][l]
        sd[pre + "mlp.c_fc.weight"] = p["fcw"][l].T
        sd[pre + "mlp.c_fc.bias"] = p["fcb"][l]
        sd[pre + "mlp.c_proj.weight"] = p["fcprojw"][l].T
        sd[pre + "mlp.c_proj.bias"] = p["fcprojb"][l]
    sd["transformer.ln_f.weight"], sd["transformer.ln_f.bias"] = p["lnfw"], p["lnfb"]
    sd["lm_head.weight"] = sd["transformer.wte.weight"]
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in sd.items()}


def refuse_unsafe(path):
    """A file these scripts write is renamed into place: never over a
    symbolic link (that would replace the link, not the file it names) nor
    anything under /dev or /proc (as root, /dev/stdout itself)."""
    why = "is a symbolic link" if os.path.islink(path) else None
    real = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    for top in ("/dev", "/proc"):
        if why is None and (real == top or real.startswith(top + "/")):
            why = f"is under {top}"
    if why:
        sys.exit(f"{PROG}: {path}: {why}; not replaced (give the path of a regular file)")


def check_paths(src, out):
    """Refuse, before any work, what would fail later with a traceback: a
    MODEL.bin that is no readable file, an OUT that is a folder or whose
    folder is missing or read-only."""
    if not os.path.isfile(src) or not os.access(src, os.R_OK):
        why = "no such file" if not os.path.exists(src) else \
              "a folder, not a model file" if os.path.isdir(src) else "not a readable file"
        sys.exit(f"{PROG}: {src}: {why}")
    if out.endswith("/") or os.path.isdir(out):
        sys.exit(f"{PROG}: {out}: is a folder; give a file name (e.g. {out.rstrip('/')}/model.pt)")
    refuse_unsafe(out)
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        sys.exit(f"{PROG}: {out}: its folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        sys.exit(f"{PROG}: {out}: its folder {folder} is not writable")


def refuse_existing(path, what, instead, overwrite):
    """A file the user has at path is not replaced without --overwrite."""
    if os.path.isfile(path) and os.path.getsize(path) > 0 and not overwrite:
        sys.exit(f"{PROG}: {path}: {what} ({os.path.getsize(path)} bytes) and would be "
                 f"replaced; nothing was written. {instead}, or pass --overwrite (the old file "
                 f"is kept as {os.path.basename(path)}.replaced_<time>)")


class WriteFailed(Exception):
    """An I/O error writing `path` (a full disk, a quota, EIO, a folder made
    read-only): its temporary file is gone already; undo_run() takes back
    the rest of the run before the one-line message."""

    def __init__(self, path, why):
        super().__init__(f"{path}: {why}")
        self.path, self.why = path, why


# What this run has done so far, undone when a later write fails, so that a
# failed export leaves no half of a folder: files and folders it made (the
# newest last) and old files it moved aside to NAME.replaced_<time>.
MADE = []
REPLACED = []


def io_why(e):
    """One line for an I/O error: errno's text, else the first line of the
    message (torch.save reports a failed write as a RuntimeError)."""
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def undo_run():
    """Remove what MADE lists (a folder only when empty: never what was in
    it before) and move each replaced file back; errors here are ignored,
    the first one is the one reported."""
    for kept, path in reversed(REPLACED):
        try:
            os.replace(kept, path)
        except OSError:
            pass
    for path in reversed(MADE):
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                os.rmdir(path)
            elif not any(path == p for _, p in REPLACED):
                os.unlink(path)
        except OSError:
            pass


def run_or_undo(prog, fn, *args):
    """fn(*args); a write that fails ends the script with one line naming
    the file and the fault, exit 1, after undo_run()."""
    try:
        fn(*args)
    except WriteFailed as e:
        undo_run()
        sys.exit(f"{prog}: {e.path}: {e.why}; nothing was written (what this run had "
                 "written is removed)")


def make_folder(out):
    """os.makedirs(out), each folder it makes recorded in MADE."""
    made, d = [], os.path.abspath(out)
    while not os.path.isdir(d):
        made.append(d)
        d = os.path.dirname(d)
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        MADE.extend(reversed(made))
        raise WriteFailed(out, f"cannot make the folder: {io_why(e)}") from e
    MADE.extend(reversed(made))


def commit(tmp, path):
    """Rename tmp over path; an old path with other bytes first gets a second
    name, path.replaced_<time> (a hard link: nothing is copied or deleted)."""
    if os.path.isfile(path) and os.path.getsize(path) > 0:
        if filecmp.cmp(tmp, path, shallow=False):
            os.unlink(tmp)
            return
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for k in range(1, 100):
            kept = f"{path}.replaced_{stamp}" + ("" if k == 1 else f"-{k}")
            try:
                os.link(path, kept)
                break
            except FileExistsError:
                continue
        print(f"{PROG}: the old {path} is kept as {kept}")
        REPLACED.append((kept, path))
    os.replace(tmp, path)
    sync_dir(os.path.dirname(os.path.abspath(path)))


def sync_file(path):
    """Its bytes on disk before it is renamed into place: without this a
    power cut after the rename can leave the new name holding nothing."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_dir(folder):
    """The rename itself on disk (the folder's entries)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_via_temp(path, write):
    """write(tmp) into a temporary file beside path (the mode a new file
    gets), then commit it; on any failure the temporary file goes. mkstemp
    makes a new name with O_EXCL|O_NOFOLLOW: no planted link is followed."""
    refuse_unsafe(path)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp",
                                   dir=folder)
    except OSError as e:
        raise WriteFailed(path, f"cannot make a temporary file in {folder}: {io_why(e)}") from e
    os.close(fd)
    existed = os.path.lexists(path)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        write(tmp)
        if os.path.islink(tmp) or not os.path.isfile(tmp):
            sys.exit(f"{PROG}: {tmp}: replaced by something else while it was written")
        sync_file(tmp)
        refuse_unsafe(path)
        if not existed:
            MADE.append(path)
        commit(tmp, path)
    except (OSError, RuntimeError) as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise WriteFailed(path, f"cannot write: {io_why(e)}") from e
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def exit_on_signals():
    """SIGTERM and SIGHUP end the script as Ctrl-C does, through the except
    clauses, so write_via_temp removes its temporary file (exit 128 + N).
    A signal ignored at start (nohup) stays ignored."""
    def stop(signum, frame):
        raise SystemExit(128 + signum)
    for s in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(s) is not signal.SIG_IGN:
            signal.signal(s, stop)


WEIGHT_SUFFIXES = (".safetensors", ".pt", ".bin")
GPT2_VOCAB = 50257
EOT = 50256


def is_file_out(out):
    """OUT names one weights file (the old use) rather than a folder."""
    return out.endswith(WEIGHT_SUFFIXES) and not os.path.isdir(out)


def check_folder(src, out):
    """The folder form of check_paths: MODEL.bin readable, OUT a folder or a
    name whose parent folder exists and is writable (OUT is made there)."""
    if os.path.exists(out) and not os.path.isdir(out):
        check_paths(src, out)
        sys.exit(f"{PROG}: {out}: is a file, not a folder; give a folder for the Hugging Face "
                 f"layout, or a name ending in {', '.join(WEIGHT_SUFFIXES)} for one weights file")
    # a file inside OUT, or OUT itself when it is to be made, passes check_paths
    check_paths(src, os.path.join(out, "config.json") if os.path.isdir(out) else out.rstrip("/"))


def safetensors_bytes(tensors, metadata):
    """(header bytes, [tensor bytes]) of a safetensors file: the 8-byte
    little-endian length N, then N bytes of JSON, padded with spaces so the
    data (offsets counted from its start) begins on an 8-byte boundary."""
    header, off, blobs = {"__metadata__": metadata}, 0, []
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-(8 + len(h)) % 8)
    return struct.pack("<Q", len(h)) + h, blobs


def write_safetensors(path, tensors, metadata):
    head, blobs = safetensors_bytes(tensors, metadata)

    def write(tmp):
        with open(tmp, "wb") as f:
            f.write(head)
            for b in blobs:
                f.write(b)
    write_via_temp(path, write)


def find_tokenizer(encoder, vocab):
    """(encoder.json, vocab.bpe): the ones given, else the paths ./tokenize
    --fetch gpt2 prints (its search chain: $TRAIN_GPT_GPT2_DIR, the cache,
    a fetch), checked by sha256 there."""
    if encoder and vocab:
        return encoder, vocab
    import subprocess
    tok = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tokenize")
    tok = os.environ.get("TRAIN_GPT_TOKENIZE_BIN", tok)
    if not os.access(tok, os.X_OK):
        sys.exit(f"{PROG}: {tok}: not built (make tokenize), and it finds GPT-2's tokenizer "
                 "files; or pass --encoder encoder.json --vocab vocab.bpe, or --no-tokenizer")
    r = subprocess.run([tok, "--fetch", "gpt2", "--quiet"], capture_output=True, text=True)
    paths = r.stdout.split()
    if r.returncode or len(paths) != 2:
        sys.exit(f"{PROG}: GPT-2's tokenizer files not found ({r.stderr.strip()}); pass "
                 "--encoder encoder.json --vocab vocab.bpe, or --no-tokenizer")
    found = {os.path.basename(x): x for x in paths}
    return encoder or found.get("encoder.json", paths[0]), vocab or found.get("vocab.bpe", paths[1])


def read_bytes(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        sys.exit(f"{PROG}: {path}: {e.strerror}")


def write_bytes(path, data):
    def write(tmp):
        with open(tmp, "wb") as f:
            f.write(data)
    write_via_temp(path, write)


def hf_config(cfg):
    return {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"],
            "n_layer": cfg["L"], "n_head": cfg["NH"], "n_embd": cfg["C"],
            "n_positions": cfg["maxT"], "n_ctx": cfg["maxT"], "vocab_size": cfg["V"],
            "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
            "tie_word_embeddings": True, "bos_token_id": EOT, "eos_token_id": EOT}


def shape_line(cfg):
    return f"L={cfg['L']} NH={cfg['NH']} C={cfg['C']} V={cfg['V']} maxT={cfg['maxT']}"


def is_llama_file(path):
    with open(path, "rb") as f:
        h = f.read(4 * (hf_llama.ARCH_WORD + 1))
    return len(h) == 4 * (hf_llama.ARCH_WORD + 1) and \
        struct.unpack("<i", h[-4:])[0] == 1


def export_file(args, cfg, p):
    """OUT a single weights file, config.json beside it (the old form)."""
    src, out = args.model, args.out
    config = os.path.join(os.path.dirname(os.path.abspath(out)), "config.json")
    refuse_unsafe(config)  # before OUT is written, not after
    config_text = json.dumps(hf_config(cfg), indent=2)
    if os.path.isfile(config) and open(config).read() != config_text:
        refuse_existing(config, f"describes another model than {src} ({shape_line(cfg)})",
                        "Export into a folder of its own", args.overwrite)
    sd = to_hf(cfg, p)
    if out.endswith(".safetensors"):
        write_safetensors(out, sd, {"format": "pt"})
    else:
        import torch
        tensors = {k: torch.from_numpy(v.copy()) for k, v in sd.items()}
        write_via_temp(out, lambda tmp: torch.save(tensors, tmp))
    write_bytes(config, config_text.encode())
    print(f"export_hf: wrote {out} ({len(sd)} tensors) and config.json: {shape_line(cfg)}")


def export_folder(args, cfg, p):
    """OUT a folder in the layout from_pretrained reads. Every file's bytes
    are settled, and every refusal made, before the first one is written."""
    src, out = args.model, args.out
    files = {"config.json": json.dumps(hf_config(cfg), indent=2).encode(),
             "generation_config.json": json.dumps(
                 {"bos_token_id": EOT, "eos_token_id": EOT}, indent=2).encode()}
    def gpt2_files():
        enc, bpe = find_tokenizer(args.encoder, args.vocab)
        return {"vocab.json": read_bytes(enc), "merges.txt": read_bytes(bpe)}
    tok, mark = hf_tokenizer.export_files(PROG, args, cfg["tid"], cfg["V"], src, gpt2_files)
    if mark:  # the model records no tokenizer: the import writes 0 again
        conf = hf_config(cfg)
        conf["llmc_defaults"] = [hf_tokenizer.MARK]
        files["config.json"] = json.dumps(conf, indent=2).encode()
    files.update(tok)
    tokenizer = bool(tok)
    weights = "model.safetensors" if args.weights == "safetensors" else "pytorch_model.bin"
    for name in list(files) + [weights]:  # every refusal before the first write
        refuse_unsafe(os.path.join(out, name))
    for name, data in files.items():
        path = os.path.join(out, name)
        if os.path.isfile(path) and read_bytes(path) != data:
            refuse_existing(path, "the file exists with other contents", "Export into a folder "
                            "of its own", args.overwrite)
    refuse_existing(os.path.join(out, weights), "the file exists", "Export into a folder of "
                    "its own", args.overwrite)
    sd = to_hf(cfg, p)
    make_folder(out)
    if weights == "model.safetensors":
        del sd["lm_head.weight"]  # tied: from_pretrained ties it to wte again
        write_safetensors(os.path.join(out, weights), sd, {"format": "pt"})
    else:
        import torch
        tensors = {k: torch.from_numpy(v.copy()) for k, v in sd.items()}
        write_via_temp(os.path.join(out, weights), lambda tmp: torch.save(tensors, tmp))
    for name, data in files.items():
        write_bytes(os.path.join(out, name), data)
    print(f"export_hf: wrote {out}/: {weights} ({len(sd)} tensors), "
          f"{', '.join(files)}: {shape_line(cfg)}")
    if not tokenizer and not args.no_tokenizer:
        print(f"export_hf: note: the model records no tokenizer and the vocabulary "
              f"({cfg['V']} tokens) is not GPT-2's ({GPT2_VOCAB}): no tokenizer files written "
              "(--tokenizer FILE writes one)")


def main():
    exit_on_signals()
    ap = argparse.ArgumentParser(
        prog="scripts/export_hf.py",
        description="An llm.c model file (version 3 or 5) as a Hugging Face GPT-2 folder "
                    "(config.json, model.safetensors, generation_config.json, vocab.json, "
                    "merges.txt) that GPT2LMHeadModel.from_pretrained loads.")
    ap.add_argument("model", metavar="MODEL.bin", help="llm.c model file")
    ap.add_argument("out", metavar="OUT", help="a folder (made if missing); or one file, "
                    "OUT.safetensors or OUT.pt/.bin (torch.save), with config.json beside it")
    ap.add_argument("--weights", choices=("safetensors", "pt"), default="safetensors",
                    help="the folder's weights: model.safetensors (default) or "
                         "pytorch_model.bin (torch.save)")
    ap.add_argument("--encoder", metavar="PATH", help="GPT-2's encoder.json (vocab.json); "
                    "default: the path ./tokenize --fetch gpt2 prints")
    ap.add_argument("--vocab", metavar="PATH", help="GPT-2's vocab.bpe (merges.txt); default: "
                    "the path ./tokenize --fetch gpt2 prints")
    ap.add_argument("--no-tokenizer", action="store_true",
                    help="write no tokenizer files")
    ap.add_argument("--tokenizer", metavar="FILE", help="the tokenizer.json (or *.tiktoken) "
                    "the model was trained with, written into the folder; refused when the "
                    "model records another (default: GPT-2's, or the one in the user's cache "
                    "whose identity the model records)")
    ap.add_argument("--tokenizer-dir", metavar="DIR", help="Llama family: copy the tokenizer "
                    "files found in DIR (tokenizer.json, tokenizer_config.json, ...)")
    ap.add_argument("--dtype", choices=("fp32", "bf16"), help="Llama family: the tensors' "
                    "precision (default: the model file's, fp32 for version 3, bf16 for 5)")
    ap.add_argument("--max-shard-size", default="5GB", metavar="SIZE", help="Llama family: "
                    "split the weights into model-0000k-of-0000n.safetensors with "
                    "model.safetensors.index.json above SIZE (5GB, 500MiB, bytes; default 5GB)")
    ap.add_argument("--overwrite", action="store_true",
                    help="replace existing files, keeping each old one as NAME.replaced_<time>")
    args = ap.parse_args()
    if is_file_out(args.out):
        check_paths(args.model, args.out)
        if is_llama_file(args.model):
            sys.exit(f"{PROG}: {args.out}: a Llama-family model is exported to a folder "
                     "(give a folder name)")
        refuse_existing(args.out, "the file exists", "Give another OUT", args.overwrite)
        cfg, p = read_model(args.model)
        run_or_undo(PROG, export_file, args, cfg, p)
    else:
        check_folder(args.model, args.out)
        cfg, p = read_model(args.model)
        if cfg["arch"] == 1:
            if args.weights != "safetensors":
                sys.exit(f"{PROG}: --weights pt: a Llama-family model is exported as "
                         "safetensors only")
            sys.modules.setdefault("export_hf", sys.modules[__name__])  # one MADE list
            import export_hf_llama
            run_or_undo(PROG, export_hf_llama.export, args, cfg, p)
        else:
            if args.dtype == "bf16" or args.tokenizer_dir:
                sys.exit(f"{PROG}: --dtype and --tokenizer-dir are for the Llama family; "
                         f"{args.model} is a GPT-2 model")
            run_or_undo(PROG, export_folder, args, cfg, p)


if __name__ == "__main__":
    main()
