"""scripts/export_hf_llama.py — export_hf.py's Llama-family folder.

Owns: the folder a Llama-family model file (interop/model_file.h's
extension, family 1) becomes: config.json for LlamaForCausalLM,
Qwen2ForCausalLM or Qwen3ForCausalLM (scripts/hf_llama.py), the weights as
model.safetensors, or shards with model.safetensors.index.json above
--max-shard-size (scripts/hf_safetensors.py), in fp32 or bf16,
generation_config.json at GPT-2's vocabulary, and the tokenizer files. The
writing (temporary files, fsync, rename, the undo on an I/O error) is
export_hf.py's.
"""
import json
import os
import sys

import export_hf as ex
import hf_llama
import hf_safetensors
import hf_tokenizer

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "tokenizer.model", "vocab.json", "merges.txt", "added_tokens.json")


def tokenizer_files(args, cfg):
    """({name: bytes}, mark): the tokenizer files in --tokenizer-dir (the
    model's tokenizer, when it records one); else hf_tokenizer.export_files'
    choice: --tokenizer, GPT-2's vocab.json and merges.txt with a
    tokenizer_config.json naming GPT2Tokenizer (a llama model_type would
    otherwise get Llama's), or the cached file of the model's identity."""
    if args.tokenizer_dir and not args.no_tokenizer:
        hf_tokenizer.check_dir(ex.PROG, args.tokenizer_dir, cfg["tid"], args.model)
        got = {n: ex.read_bytes(os.path.join(args.tokenizer_dir, n)) for n in TOKENIZER_FILES
               if os.path.isfile(os.path.join(args.tokenizer_dir, n))}
        if not got:
            sys.exit(f"{ex.PROG}: --tokenizer-dir {args.tokenizer_dir}: holds none of "
                     f"{', '.join(TOKENIZER_FILES)}")
        return got, False

    def gpt2_files():
        enc, bpe = ex.find_tokenizer(args.encoder, args.vocab)
        tc = {"tokenizer_class": "GPT2Tokenizer", "bos_token": "<|endoftext|>",
              "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>",
              "model_max_length": cfg["maxT"]}
        return {"vocab.json": ex.read_bytes(enc), "merges.txt": ex.read_bytes(bpe),
                "tokenizer_config.json": json.dumps(tc, indent=2).encode()}
    got, mark = hf_tokenizer.export_files(ex.PROG, args, cfg["tid"], cfg["V"], args.model,
                                          gpt2_files)
    if not got and not args.no_tokenizer:
        print(f"{ex.PROG}: note: the model records no tokenizer and the vocabulary "
              f"({cfg['V']} tokens) is not GPT-2's ({ex.GPT2_VOCAB}): no tokenizer files "
              "written (--tokenizer FILE or --tokenizer-dir DIR writes them)")
    return got, mark


def export(args, cfg, p):
    """A Llama-family model file as a LlamaForCausalLM / Qwen2ForCausalLM /
    Qwen3ForCausalLM folder (scripts/hf_llama.py); every refusal before the
    first write, as export_folder's."""
    out = args.out
    dtype = args.dtype or ("bf16" if cfg["version"] == 5 else "fp32")
    try:
        max_bytes = hf_safetensors.parse_size(args.max_shard_size)
    except ValueError as e:
        sys.exit(f"{ex.PROG}: --max-shard-size: {e}")
    eot = ex.EOT if cfg["V"] == ex.GPT2_VOCAB else None
    tok, mark = tokenizer_files(args, cfg)
    conf = hf_llama.hf_config(cfg, dtype, eot)
    if mark:  # the model records no tokenizer: the import writes 0 again
        conf["llmc_defaults"] = list(conf.get("llmc_defaults") or []) + [hf_tokenizer.MARK]
    files = {"config.json": hf_llama.dumps(conf).encode()}
    if eot is not None:
        files["generation_config.json"] = json.dumps(
            {"bos_token_id": ex.EOT, "eos_token_id": ex.EOT}, indent=2).encode()
    files.update(tok)
    pad = [n for n in ("tok_emb", "lm_head") if n in p and p[n][cfg["V"]:].any()]
    sd = hf_llama.to_hf(cfg, p)
    weights = hf_safetensors.folder_files(sd, "BF16" if dtype == "bf16" else "F32", max_bytes)
    for name in list(files) + list(weights):
        ex.refuse_unsafe(os.path.join(out, name))
    for name, data in files.items():
        path = os.path.join(out, name)
        if os.path.isfile(path) and ex.read_bytes(path) != data:
            ex.refuse_existing(path, "the file exists with other contents", "Export into a "
                               "folder of its own", args.overwrite)
    if os.path.isdir(out):  # weights of another export would be loaded instead, or mixed in
        for name in sorted(os.listdir(out)):
            stale = name.endswith(".safetensors") or name == hf_safetensors.INDEX
            if name in weights:
                ex.refuse_existing(os.path.join(out, name), "the file exists", "Export into a "
                                   "folder of its own", args.overwrite)
            elif stale:
                sys.exit(f"{ex.PROG}: {os.path.join(out, name)}: weights of another export, "
                         "which Hugging Face would load with or instead of these; nothing was "
                         "written. Export into a folder of its own, or remove it")
    ex.make_folder(out)
    for name, data in weights.items():
        if isinstance(data, bytes):
            ex.write_bytes(os.path.join(out, name), data)
            continue

        def write(tmp, head=data[0], blobs=data[1]):
            with open(tmp, "wb") as f:
                f.write(head)
                for b in blobs:
                    f.write(b)
        ex.write_via_temp(os.path.join(out, name), write)
    for name, data in files.items():
        ex.write_bytes(os.path.join(out, name), data)
    nshard = sum(1 for n in weights if n.endswith(".safetensors"))
    print(f"export_hf: wrote {out}/: {nshard} safetensors file{'s' if nshard > 1 else ''} "
          f"({len(sd)} tensors, {dtype}), {', '.join(files)}: {hf_llama.shape_line(cfg)}")
    if pad:
        print(f"export_hf: note: the padded vocabulary rows of {', '.join(pad)} are not zero; "
              "Hugging Face has no such rows, so they are not exported")
