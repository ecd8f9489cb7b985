#!/usr/bin/python3
"""scripts/import_hf.py HF OUT.bin [--heads N] [--dtype fp32|bf16] [--overwrite]
— a Hugging Face GPT-2 checkpoint as an llm.c model file, for --init-from.

The inverse of scripts/export_hf.py. HF is a folder holding model.safetensors
or pytorch_model.bin (and config.json), as export_hf.py's default output
is, or one such file. Both key styles are
read: GPT2LMHeadModel's ("transformer.h.0.attn.c_attn.weight") and
GPT2Model's ("h.0.attn.c_attn.weight", as OpenAI's gpt2 checkpoints on the
Hub hold them). Conv1D weights, stored (in, out), are transposed to llm.c's
(out, in); the vocabulary is padded to a multiple of 128 with zero rows;
lm_head.weight must equal wte (llm.c ties them; an untied head is refused).
The attention-mask buffers (attn.bias, attn.masked_bias) are skipped.

A folder whose config.json names model_type llama, qwen2 or qwen3 is read
as the Llama family instead (scripts/hf_llama.py: one model.safetensors,
shards with model.safetensors.index.json, or pytorch_model.bin; F32, BF16,
F16), every config key or value the C model does not compute refused by
name; --max-seq-len and --allow-key are for it (docs/interop.md).

The shape comes from the tensors (layers, width, vocabulary, positions),
except the head count, which only config.json ("n_head") or --heads give.
The output is llm.c's model file, version 3 (fp32) or 5 (bf16, rounded to
nearest even, as train_gpt's --save-dtype bf16). An existing OUT is refused
unless --overwrite (the old file kept as OUT.replaced_<time>), and every
tensor is checked for its shape and for NaN or Inf before anything is
written.

.safetensors files are read with the safetensors package when it is
installed, else by reading the format's published layout directly (an
8-byte little-endian header length, a JSON header of name -> dtype, shape
and byte range, then the raw little-endian data); .bin/.pt with
torch.load(weights_only=True). Checked by tests/e2e/interop/test_export_hf.c and
test_export_hf_layout.c: a model file exported with export_hf.py (its
folder, .pt or .safetensors) and imported back is the same bytes.
"""
import argparse
import json
import os
import sys

import numpy as np

import export_hf
import hf_llama
import hf_safetensors
import hf_tokenizer

export_hf.PROG = "import_hf"
HEADER_INTS = 256


def die(msg):
    sys.exit(f"import_hf: {msg}")


def find_files(src):
    """(weights path, config.json path or None)."""
    if os.path.isdir(src):
        for name in ("model.safetensors", "pytorch_model.bin"):
            if os.path.isfile(os.path.join(src, name)):
                weights = os.path.join(src, name)
                break
        else:
            die(f"{src}: holds neither model.safetensors nor pytorch_model.bin")
    elif os.path.isfile(src):
        weights = src
    else:
        die(f"{src}: no such file or folder")
    config = os.path.join(os.path.dirname(os.path.abspath(weights)), "config.json")
    return weights, config if os.path.isfile(config) else None


def read_safetensors(path):
    try:
        from safetensors.numpy import load_file
    except ImportError:
        load_file = None
    if load_file is not None:
        try:
            return {k: v.astype(np.float32) for k, v in load_file(path).items()
                    if v.dtype.kind == "f"}
        except Exception as e:  # the package's own message, one line
            die(f"{path}: not a readable safetensors file: {e}")
    return hf_safetensors.read_file(path, die)


def read_torch(path):
    import torch
    try:
        sd = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        die(f"{path}: not a readable PyTorch state dict: {e}")
    if not isinstance(sd, dict):
        die(f"{path}: holds a {type(sd).__name__}, not a state dict")
    return {k: v.float().numpy() for k, v in sd.items()
            if hasattr(v, "is_floating_point") and v.is_floating_point()}


def from_hf(sd, heads, path):
    """(cfg, {llm.c name: float32 array}) from an HF GPT-2 state dict."""
    pre = "transformer." if "transformer.wte.weight" in sd else ""
    if pre + "wte.weight" not in sd:
        die(f"{path}: no wte.weight or transformer.wte.weight: not a GPT-2 checkpoint")

    def get(name, shape):
        key = pre + name
        if key not in sd:
            die(f"{path}: {key} is missing")
        a = sd[key]
        if a.shape != shape:
            die(f"{path}: {key} has shape {tuple(a.shape)}, expected {shape}")
        if not np.isfinite(a).all():
            die(f"{path}: {key} holds {int((~np.isfinite(a)).sum())} NaN or Inf values")
        return a

    V, C = sd[pre + "wte.weight"].shape
    maxT = sd[pre + "wpe.weight"].shape[0] if pre + "wpe.weight" in sd else 0
    L = 0
    while f"{pre}h.{L}.ln_1.weight" in sd:
        L += 1
    if L == 0:
        die(f"{path}: no {pre}h.0.* tensors: not a GPT-2 checkpoint")
    if heads is None or heads < 1 or C % heads:
        die(f"{path}: {heads} heads do not divide the width {C}")
    Vp = (V + 127) // 128 * 128
    wte = get("wte.weight", (V, C))
    head = sd.get("lm_head.weight")
    if head is not None and not np.array_equal(head, wte):
        die(f"{path}: lm_head.weight differs from wte.weight; llm.c's model ties them, so an "
            "untied head cannot be carried over")
    p = {"wte": np.concatenate([wte, np.zeros((Vp - V, C), np.float32)]),
         "wpe": get("wpe.weight", (maxT, C))}
    per_layer = [("ln1w", "ln_1.weight", (C,), False), ("ln1b", "ln_1.bias", (C,), False),
                 ("qkvw", "attn.c_attn.weight", (C, 3 * C), True),
                 ("qkvb", "attn.c_attn.bias", (3 * C,), False),
                 ("attprojw", "attn.c_proj.weight", (C, C), True),
                 ("attprojb", "attn.c_proj.bias", (C,), False),
                 ("ln2w", "ln_2.weight", (C,), False), ("ln2b", "ln_2.bias", (C,), False),
                 ("fcw", "mlp.c_fc.weight", (C, 4 * C), True),
                 ("fcb", "mlp.c_fc.bias", (4 * C,), False),
                 ("fcprojw", "mlp.c_proj.weight", (4 * C, C), True),
                 ("fcprojb", "mlp.c_proj.bias", (C,), False)]
    for ours, theirs, shape, conv1d in per_layer:
        # Conv1D stores (in, out); llm.c's matmuls take (out, in)
        p[ours] = np.stack([get(f"h.{l}.{theirs}", shape).T if conv1d
                            else get(f"h.{l}.{theirs}", shape) for l in range(L)])
    p["lnfw"], p["lnfb"] = get("ln_f.weight", (C,)), get("ln_f.bias", (C,))
    return dict(maxT=maxT, V=V, L=L, NH=heads, C=C, Vp=Vp), p


def to_bf16(a):
    """float32 -> bf16 bits, rounded to nearest even (inputs are finite)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")


def main():
    export_hf.exit_on_signals()
    ap = argparse.ArgumentParser(
        prog="scripts/import_hf.py",
        description="A Hugging Face GPT-2 checkpoint as an llm.c model file (--init-from).")
    ap.add_argument("src", metavar="HF", help="a folder with model.safetensors or "
                    "pytorch_model.bin (and config.json), or one such file")
    ap.add_argument("out", metavar="OUT.bin", help="the llm.c model file to write")
    ap.add_argument("--heads", type=int, help="attention heads (default: config.json's n_head)")
    ap.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32",
                    help="fp32 = llm.c version 3, bf16 = version 5 (default fp32)")
    ap.add_argument("--overwrite", action="store_true",
                    help="replace an existing OUT, keeping the old one as OUT.replaced_<time>")
    ap.add_argument("--max-seq-len", type=int, metavar="N", help="Llama family: the model "
                    "file's maximum sequence length (default: max_position_embeddings)")
    ap.add_argument("--allow-key", action="append", default=[], metavar="KEY",
                    help="Llama family: a config.json key this importer does not know, which "
                         "you know leaves the model's outputs unchanged (repeatable)")
    args = ap.parse_args()
    c = llama_config(args.src)
    if c is not None:
        export_hf.check_paths(os.path.join(args.src, "config.json"), args.out)
        export_hf.refuse_existing(args.out, "the file exists", "Give another OUT",
                                  args.overwrite)
        import_llama(args, args.src, c)
        return
    weights, config = find_files(args.src)
    export_hf.check_paths(weights, args.out)
    export_hf.refuse_existing(args.out, "the file exists", "Give another OUT", args.overwrite)
    heads = args.heads
    if heads is None:
        if config is None:
            die(f"{weights}: no config.json beside it to give the head count; pass --heads N "
                "(GPT-2 124M: 12, 350M: 16, 774M: 20, 1558M: 25)")
        try:
            with open(config) as f:
                heads = json.load(f).get("n_head")
        except ValueError as e:
            die(f"{config}: not JSON: {e}")
        if not isinstance(heads, int):
            die(f"{config}: no integer \"n_head\"; pass --heads N")
    sd = read_safetensors(weights) if weights.endswith(".safetensors") else read_torch(weights)
    cfg, p = from_hf(sd, heads, weights)
    version = 3 if args.dtype == "fp32" else 5
    header = np.zeros(HEADER_INTS, dtype="<i4")
    header[:8] = [export_hf.MAGIC, version, cfg["maxT"], cfg["V"], cfg["L"], cfg["NH"], cfg["C"],
                  cfg["Vp"]]
    order = ["wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb", "ln2w",
             "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb"]
    flat = np.concatenate([p[k].reshape(-1) for k in order]).astype(np.float32)
    if os.path.isdir(args.src):  # a folder's tokenizer is the model's (hf_tokenizer.py)
        conf = {}
        if config is not None:
            with open(config) as f:
                conf = json.load(f)
        hf_tokenizer.set_header_id(header, hf_tokenizer.folder_id(args.src, conf))
    write_model(args.out, header, flat, version, f"L={cfg['L']} NH={cfg['NH']} C={cfg['C']} "
                f"V={cfg['V']} maxT={cfg['maxT']}")


def write_model(out, header, flat, version, line):
    """The model file: header, then flat as fp32 (version 3) or bf16 (5)."""
    body = flat.astype("<f4") if version == 3 else to_bf16(flat)

    def write(tmp):
        with open(tmp, "wb") as f:
            f.write(header.tobytes())
            f.write(body.tobytes())
            f.flush()
            os.fsync(f.fileno())
    export_hf.run_or_undo("import_hf", export_hf.write_via_temp, out, write)
    print(f"import_hf: wrote {out} (llm.c version {version}, {flat.size} parameters): {line}")


def llama_config(src):
    """config.json of a folder whose model_type is not gpt2 (the Llama
    family, or one refused by name), else None (GPT-2's path)."""
    path = os.path.join(src, "config.json")
    if not os.path.isdir(src) or not os.path.isfile(path):
        return None
    try:
        with open(path) as f:
            c = json.load(f)
    except (OSError, ValueError) as e:
        die(f"{path}: not readable JSON: {e}")
    if not isinstance(c, dict):
        die(f"{path}: not a JSON object")
    mt = c.get("model_type")
    return None if mt == "gpt2" or (mt is None and "n_head" in c) else c


def import_llama(args, src, c):
    """A LlamaForCausalLM / Qwen2ForCausalLM / Qwen3ForCausalLM folder (one
    model.safetensors, shards with model.safetensors.index.json, or
    pytorch_model.bin) as a Llama-family model file (scripts/hf_llama.py)."""
    where = os.path.join(src, "config.json")
    hf_llama.check_config(c, where, set(args.allow_key))  # refusals before reading weights
    if args.heads is not None and args.heads != c["num_attention_heads"]:
        die(f"--heads {args.heads}: {where} says num_attention_heads "
            f"{c['num_attention_heads']}")
    index = os.path.join(src, hf_safetensors.INDEX)
    if os.path.isfile(index) or os.path.isfile(os.path.join(src, "model.safetensors")):
        sd = hf_safetensors.read_folder(src, die)
    elif os.path.isfile(os.path.join(src, "pytorch_model.bin")):
        sd = read_torch(os.path.join(src, "pytorch_model.bin"))
    else:
        die(f"{src}: holds neither model.safetensors, {hf_safetensors.INDEX} nor "
            "pytorch_model.bin")
    cfg, p = hf_llama.from_hf(c, sd, src, args.max_seq_len, args.allow_key)
    version = 3 if args.dtype == "fp32" else 5
    header = hf_llama.header_words(cfg, version)
    hf_tokenizer.set_header_id(header, hf_tokenizer.folder_id(src, c))
    write_model(args.out, header, hf_llama.flat_params(cfg, p), version, hf_llama.shape_line(cfg))


if __name__ == "__main__":
    main()
