"""scripts/hf_safetensors.py — Hugging Face's safetensors files, one or sharded,
written and read from the format's published layout (the safetensors package
is not in Debian 12); used by export_hf.py and import_hf.py.

Owns: a file's bytes (an 8-byte little-endian header length N, N bytes of
JSON: name -> {dtype, shape, data_offsets into the buffer that follows},
"__metadata__" {"format": "pt"}; the header padded with spaces so that the
buffer starts 8-byte aligned; tensors back to back, little-endian), the
split into shards above a size (model-0000k-of-0000n.safetensors and
model.safetensors.index.json: {"metadata": {"total_size": bytes of all
tensors}, "weight_map": name -> shard file}), and reading F32, BF16 and F16
(each widened exactly to float32) from one file or from an index.
"""
import json
import os
import re
import struct
import sys

import numpy as np

INDEX = "model.safetensors.index.json"
WIDTH = {"F32": 4, "BF16": 2, "F16": 2, "F64": 8}


def to_bf16(a):
    """float32 -> bf16 bits, rounded to nearest even (inputs are finite)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")


def tensor_bytes(a, dtype):
    return (np.ascontiguousarray(a, dtype="<f4") if dtype == "F32" else to_bf16(a)).tobytes()


def file_bytes(tensors, dtype):
    """(header bytes, [tensor bytes]) of one file of {name: float32 array}."""
    header, off, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for name, a in tensors.items():
        b = tensor_bytes(a, dtype)
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-(8 + len(h)) % 8)
    return struct.pack("<Q", len(h)) + h, blobs


def parse_size(text):
    """--max-shard-size: bytes, or a number with KB/MB/GB (powers of 1000)
    or KiB/MiB/GiB (powers of 1024), as Hugging Face reads it."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B)?\s*", text, re.IGNORECASE)
    if not m:
        raise ValueError(f"{text!r} is not a size (e.g. 5GB, 500MiB, 1000000)")
    unit = (m.group(2) or "B").upper()
    scale = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "KIB": 2**10,
             "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}[unit]
    n = int(float(m.group(1)) * scale)
    if n < 1:
        raise ValueError(f"{text!r} is not a positive size")
    return n


def plan_shards(tensors, dtype, max_bytes):
    """[[names]]: tensors in order, a new shard whenever the next would take
    the current one past max_bytes (a tensor larger than that alone)."""
    shards, cur, size = [], [], 0
    for name, a in tensors.items():
        n = a.size * WIDTH[dtype]
        if cur and size + n > max_bytes:
            shards.append(cur)
            cur, size = [], 0
        cur.append(name)
        size += n
    if cur:
        shards.append(cur)
    return shards


def folder_files(tensors, dtype, max_bytes):
    """{file name: (header, blobs) or bytes}: model.safetensors alone, or the
    shards and the index when the tensors exceed max_bytes."""
    shards = plan_shards(tensors, dtype, max_bytes) if max_bytes else [list(tensors)]
    if len(shards) == 1:
        return {"model.safetensors": file_bytes(tensors, dtype)}
    files, weight_map, total = {}, {}, 0
    for k, names in enumerate(shards):
        fname = f"model-{k + 1:05d}-of-{len(shards):05d}.safetensors"
        files[fname] = file_bytes({n: tensors[n] for n in names}, dtype)
        for n in names:
            weight_map[n] = fname
            total += tensors[n].size * WIDTH[dtype]
    files[INDEX] = json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map},
                              indent=2).encode()
    return files


def read_file(path, die):
    """{name: float32 array} of one safetensors file; F32/BF16/F16/F64 widened
    (exactly, but F64), integer buffers skipped."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        die(f"{path}: {e.strerror}")
    if len(raw) < 8:
        die(f"{path}: shorter than a safetensors header")
    n = struct.unpack("<Q", raw[:8])[0]
    if 8 + n > len(raw):
        die(f"{path}: header length {n} runs past the end of the file ({len(raw)} bytes)")
    try:
        header = json.loads(raw[8:8 + n])
    except ValueError as e:
        die(f"{path}: the safetensors header is not JSON: {e}")
    out, base = {}, 8 + n
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = info.get("dtype")
        if dtype not in WIDTH:
            continue  # integer buffers: not parameters
        lo, hi = info["data_offsets"]
        shape = tuple(info["shape"])
        count = int(np.prod(shape)) if shape else 1
        if base + hi > len(raw) or hi - lo != count * WIDTH[dtype]:
            die(f"{path}: tensor {name}: byte range {lo}..{hi} does not hold {dtype} {shape}")
        np_dtype = {"F32": "<f4", "BF16": "<u2", "F16": "<f2", "F64": "<f8"}[dtype]
        a = np.frombuffer(raw, dtype=np_dtype, offset=base + lo, count=count)
        if dtype == "BF16":  # the top half of a float32
            a = (a.astype(np.uint32) << 16).view(np.float32)
        out[name] = a.astype(np.float32).reshape(shape)
    return out


def read_index(folder, die):
    """{name: float32 array} of a sharded folder, through its index; every
    tensor the index names must be in its shard, and each once."""
    path = os.path.join(folder, INDEX)
    try:
        with open(path) as f:
            index = json.load(f)
    except (OSError, ValueError) as e:
        die(f"{path}: not a readable index: {e}")
    wm = index.get("weight_map")
    if not isinstance(wm, dict) or not wm:
        die(f"{path}: no \"weight_map\"")
    sd = {}
    for shard in sorted(set(wm.values())):
        if os.path.basename(shard) != shard:
            die(f"{path}: shard {shard!r} is not a file in the folder")
        part = read_file(os.path.join(folder, shard), die)
        for name in part:
            if wm.get(name) != shard:
                die(f"{os.path.join(folder, shard)}: holds {name}, which the index puts in "
                    f"{wm.get(name)}")
        sd.update(part)
    missing = sorted(set(wm) - set(sd))
    if missing:
        die(f"{path}: {len(missing)} tensor(s) not in their shard, first {missing[0]} "
            f"({wm[missing[0]]})")
    return sd


def read_folder(folder, die):
    """The state dict of a folder's model.safetensors or sharded files."""
    if os.path.isfile(os.path.join(folder, INDEX)):
        return read_index(folder, die)
    return read_file(os.path.join(folder, "model.safetensors"), die)


if __name__ == "__main__":
    sys.exit("hf_safetensors.py is a module of export_hf.py and import_hf.py")
