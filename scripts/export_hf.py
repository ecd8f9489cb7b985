#!/usr/bin/python3
"""scripts/export_hf.py MODEL.bin OUT [--overwrite] — an llm.c model file as a Hugging Face GPT-2 state dict.

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

OUT ending in .safetensors is written with the safetensors package (when it
is installed; an error otherwise); anything else with torch.save (a plain
dict of float32 tensors, loadable with torch.load and
GPT2LMHeadModel.load_state_dict(strict=False), the attention-mask buffers
being HF's own). A config.json beside OUT gives the shape in HF's names
(n_layer, n_head, n_embd, n_positions, vocab_size).

Nothing is replaced unasked: an OUT that exists, or a config.json beside it
that describes another shape, is refused (exit 1) before anything is written;
with --overwrite the old file is kept under a second name,
NAME.replaced_<time>, unless the new one is byte-identical. Each file is
written to a temporary name in its folder, fsynced, and renamed into place
(the folder fsynced), so a crash, of the process or the machine, leaves the
old file or the new one, never half of one.

Checked by dev/reference/hf_export_check.py: the repository's PyTorch reference
(dev/reference/gpt2_reference.py) run on the model file and an HF-semantics forward
run on the exported dict give the same logits.
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
    cfg = dict(maxT=maxT, V=V, L=L, NH=NH, C=C, Vp=Vp)
    shapes = [("wte", (Vp, C)), ("wpe", (maxT, C)), ("ln1w", (L, C)), ("ln1b", (L, C)),
              ("qkvw", (L, 3 * C, C)), ("qkvb", (L, 3 * C)), ("attprojw", (L, C, C)),
              ("attprojb", (L, C)), ("ln2w", (L, C)), ("ln2b", (L, C)),
              ("fcw", (L, 4 * C, C)), ("fcb", (L, 4 * C)), ("fcprojw", (L, C, 4 * C)),
              ("fcprojb", (L, C)), ("lnfw", (C,)), ("lnfb", (C,))]
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
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp",
                               dir=os.path.dirname(os.path.abspath(path)))
    os.close(fd)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        write(tmp)
        if os.path.islink(tmp) or not os.path.isfile(tmp):
            sys.exit(f"{PROG}: {tmp}: replaced by something else while it was written")
        sync_file(tmp)
        refuse_unsafe(path)
        commit(tmp, path)
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


def main():
    exit_on_signals()
    ap = argparse.ArgumentParser(
        prog="scripts/export_hf.py",
        description="An llm.c model file (version 3 or 5) as a Hugging Face GPT-2 state dict, "
                    "with a config.json beside it.")
    ap.add_argument("model", metavar="MODEL.bin", help="llm.c model file")
    ap.add_argument("out", metavar="OUT", help="OUT.pt (torch.save) or OUT.safetensors")
    ap.add_argument("--overwrite", action="store_true",
                    help="replace an existing OUT or config.json, keeping the old one as "
                         "NAME.replaced_<time>")
    args = ap.parse_args()
    src, out = args.model, args.out
    check_paths(src, out)
    config = os.path.join(os.path.dirname(os.path.abspath(out)), "config.json")
    refuse_unsafe(config)  # before OUT is written, not after
    refuse_existing(out, "the file exists", "Give another OUT", args.overwrite)
    cfg, p = read_model(src)
    hf_cfg = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"],
              "n_layer": cfg["L"], "n_head": cfg["NH"], "n_embd": cfg["C"],
              "n_positions": cfg["maxT"], "n_ctx": cfg["maxT"], "vocab_size": cfg["V"],
              "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
              "tie_word_embeddings": True}
    config_text = json.dumps(hf_cfg, indent=2)
    if os.path.isfile(config) and open(config).read() != config_text:
        refuse_existing(config, f"describes another model than {src} (L={cfg['L']} "
                        f"NH={cfg['NH']} C={cfg['C']} V={cfg['V']} maxT={cfg['maxT']})",
                        "Export into a folder of its own", args.overwrite)
    sd = to_hf(cfg, p)
    import torch
    tensors = {k: torch.from_numpy(v.copy()) for k, v in sd.items()}
    if out.endswith(".safetensors"):
        try:
            from safetensors.torch import save_file
        except ImportError:
            sys.exit(f"{PROG}: the safetensors package is not installed "
                     "(Debian: python3-safetensors); write a .pt file instead")
        # safetensors refuses shared storage: lm_head gets its own copy
        tensors["lm_head.weight"] = tensors["lm_head.weight"].clone()
        write_via_temp(out, lambda tmp: save_file(tensors, tmp))
    else:
        write_via_temp(out, lambda tmp: torch.save(tensors, tmp))

    def write_config(tmp):
        with open(tmp, "w") as f:
            f.write(config_text)
    write_via_temp(config, write_config)
    print(f"export_hf: wrote {out} ({len(tensors)} tensors) and config.json: L={cfg['L']} "
          f"NH={cfg['NH']} C={cfg['C']} V={cfg['V']} maxT={cfg['maxT']}")


if __name__ == "__main__":
    main()
