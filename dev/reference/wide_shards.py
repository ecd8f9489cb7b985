#!/usr/bin/env python3
"""dev/reference/wide_shards.py TEXT PREFIX TOKENIZER_FILE [VAL_TOKENS]

An independent writer of a uint32 dataset (llm.c's version 7 shards and this
project's dataset manifest, docs/file-formats.md), for checking the C
reader and for runs by hand before a tokenizer of more than 65536 ids
exists here: every byte b of TEXT becomes the id 65536 + b (a vocabulary of
65792, so every id needs the wide format), the first VAL_TOKENS (default
10%) go to PREFIX_val_000000.bin and the rest to PREFIX_train_000000.bin;
the manifest names TOKENIZER_FILE (any file: its SHA-256 is the identity)
as a tokenizer of 65792 ids. Written from the documented layouts only:
header of 256 little-endian int32 ([0] 20240801, [1] 7, [2] count, [3], [4]
the dataset id's low and high halves), then uint32 tokens."""
import hashlib
import json
import os
import struct
import sys

VOCAB = 65536 + 256


def signed(v):
    return v - (1 << 32) if v >= (1 << 31) else v


def shard_bytes(tokens, dataset_id):
    header = [0] * 256
    header[0], header[1], header[2] = 20240801, 7, len(tokens)
    header[3], header[4] = signed(dataset_id & 0xFFFFFFFF), signed(dataset_id >> 32)
    return struct.pack("<256i", *header) + struct.pack("<%dI" % len(tokens), *tokens)


def main():
    text_path, prefix, tok_path = sys.argv[1:4]
    data = open(text_path, "rb").read()
    tokens = [65536 + b for b in data]
    nval = int(sys.argv[4]) if len(sys.argv) > 4 else len(tokens) // 10
    stream = struct.pack("<%dI" % len(tokens), *tokens)
    dataset_id = int.from_bytes(hashlib.sha256(stream).digest()[:8], "big") or 1
    base = os.path.basename(prefix)
    shards = []
    for split, part in (("val", tokens[:nval]), ("train", tokens[nval:])):
        if not part:
            continue
        name = "%s_%s_000000.bin" % (base, split)
        raw = shard_bytes(part, dataset_id)
        with open(os.path.join(os.path.dirname(prefix) or ".", name), "wb") as f:
            f.write(raw)
        shards.append({"name": name, "tokens": len(part), "bytes": len(raw),
                       "sha256": hashlib.sha256(raw).hexdigest()})
    tok_digest = hashlib.sha256(open(tok_path, "rb").read()).digest()
    manifest = {
        "format": "train_gpt dataset", "version": 1, "dataset_id": "%016x" % dataset_id,
        "hash": "sha256", "tokens": len(tokens),
        "sha256": hashlib.sha256(b"".join(bytes.fromhex(s["sha256"]) for s in shards)).hexdigest(),
        "token_bytes": 4,
        "tokenizer": {"name": "bytes+65536", "vocab_size": VOCAB,
                      "id": hashlib.sha256(tok_digest).hexdigest()[:16],
                      "files": [{"name": os.path.basename(tok_path), "sha256": tok_digest.hex()}]},
        "shards": shards,
    }
    with open(prefix + ".manifest.json", "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print("%s: %d tokens (val %d), dataset %016x, tokenizer %s" %
          (prefix, len(tokens), nval, dataset_id, manifest["tokenizer"]["id"]))


if __name__ == "__main__":
    main()
