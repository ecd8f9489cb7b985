#!/usr/bin/env python3
"""dev/reference/llmc_state.py — an independent writer and reader of llm.c's
optimizer state file (state_%08d_%05d.bin), written from its published
layout (llm.c's train_gpt2.cu save_state / load_state), for the tests in
tests/e2e/interop/test_llmc.c. Not shared with the C code.

Layout: int32 header[256], zero except [0] 20240527, [1] 1, [2]
num_processes, [3] rank, [4] use_master_weights, [5] should_shuffle,
[10] step, [20..21] rng_state, [22..23] rng_state_last_update,
[30..31] current_shard_idx, [32..33] current_sample_idx (u64 as two
int32, low first); then float32 m, v and (if [4]) master weights.

  write STATE MODEL --step S --shard I --sample J [--nproc P --rank R
        --master 0|1 --shuffle 0|1 --count N --seed K]
      m ~ N(0, 1e-3), v ~ |N(0, 1e-4)|, master = MODEL's fp32 weights
  check STATE MODEL --step S --shards GLOB --reads K --B B --T T
        [--nproc P --rank R --from-shard I --from-sample J]
      every header field, the size, the master weights against the model
      file (equal for version 3, rounded to bf16 nearest-even for 5), and
      the data position simulated with llm.c's dataloader over K reads
  adamw BEFORE AFTER --lr X --beta1 --beta2 --eps --wd --t T
      one AdamW update from BEFORE's state gives AFTER's: g from m, then
      v, then the master weights, with bias corrections for t
"""
import argparse
import glob
import struct
import sys

import numpy as np

MAGIC, VERSION = 20240527, 1


def read_model(path):
    with open(path, "rb") as f:
        h = np.frombuffer(f.read(1024), dtype="<i4")
        body = f.read()
    assert h[0] == 20240326, f"{path}: model magic {h[0]}"
    if h[1] == 3:
        return 3, np.frombuffer(body, dtype="<f4").copy()
    assert h[1] == 5, f"{path}: model version {h[1]}"
    bits = np.frombuffer(body, dtype="<u2").astype(np.uint32) << 16
    return 5, bits.view(np.float32).copy(), np.frombuffer(body, dtype="<u2").copy()


def bf16_rne(x):
    b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    r = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return r.astype(np.uint16)


def read_state(path):
    with open(path, "rb") as f:
        raw = f.read()
    assert len(raw) >= 1024, f"{path}: {len(raw)} bytes"
    h = list(struct.unpack("<256i", raw[:1024]))
    u64 = lambda i: (h[i] & 0xFFFFFFFF) | ((h[i + 1] & 0xFFFFFFFF) << 32)
    st = dict(magic=h[0], version=h[1], nproc=h[2], rank=h[3], master=h[4], shuffle=h[5],
              step=h[10], rng=u64(20), rng_last=u64(22), shard=u64(30), sample=u64(32))
    used = {0, 1, 2, 3, 4, 5, 10, 20, 21, 22, 23, 30, 31, 32, 33}
    st["nonzero_unused"] = [i for i in range(256) if i not in used and h[i] != 0]
    arrays = 2 + (1 if st["master"] == 1 else 0)
    body = np.frombuffer(raw[1024:], dtype="<f4")
    assert body.size % arrays == 0, f"{path}: {body.size} floats for {arrays} arrays"
    n = body.size // arrays
    st["m"], st["v"] = body[:n].copy(), body[n:2 * n].copy()
    st["w"] = body[2 * n:].copy() if arrays == 3 else None
    return st


def write_state(a):
    _, w = read_model(a.model)[:2]
    n = a.count or w.size
    rng = np.random.default_rng(a.seed)
    m = rng.normal(0, 1e-3, n).astype(np.float32)
    v = np.abs(rng.normal(0, 1e-4, n)).astype(np.float32)
    h = [0] * 256
    h[0], h[1], h[2], h[3], h[4], h[5], h[10] = MAGIC, VERSION, a.nproc, a.rank, a.master, \
        a.shuffle, a.step
    for i, val in ((20, 0x9E3779B97F4A7C15), (22, 0x9E3779B97F4A7C15), (30, a.shard),
                   (32, a.sample)):
        h[i], h[i + 1] = struct.unpack("<ii", struct.pack("<Q", val))
    with open(a.state, "wb") as f:
        f.write(struct.pack("<256i", *h))
        f.write(m.tobytes())
        f.write(v.tobytes())
        if a.master:
            f.write(w[:n].astype(np.float32).tobytes())
    print("llmc_state: wrote", a.state)


def llmc_position(paths, nproc, B, T, shard, sample, reads):
    """llm.c's dataloader.h: samples per shard = (ntok*2 - 2) / (nproc*B*T*2);
    each read takes one sample, then moves to the next shard (wrapping)."""
    ntok = []
    for p in paths:
        with open(p, "rb") as f:
            ntok.append(struct.unpack("<256i", f.read(1024))[2])
    for _ in range(reads):
        per = (ntok[shard] * 2 - 2) // (nproc * B * T * 2)
        sample += 1
        if sample >= per:
            shard, sample = (shard + 1) % len(paths), 0
    return shard, sample


def check_state(a):
    st = read_state(a.state)
    model = read_model(a.model)
    fails = []
    want = dict(magic=MAGIC, version=VERSION, nproc=a.nproc, rank=a.rank, master=1, shuffle=0,
                step=a.step)
    for k, val in want.items():
        if st[k] != val:
            fails.append(f"header {k}: {st[k]}, expected {val}")
    if st["nonzero_unused"]:
        fails.append(f"header ints {st['nonzero_unused']} are not zero")
    if st["rng"] == 0:
        fails.append("rng_state is 0 (llm.c's xorshift would stay 0)")
    shard, sample = llmc_position(sorted(glob.glob(a.shards)), a.nproc, a.B, a.T, a.from_shard,
                                  a.from_sample, a.reads)
    if (st["shard"], st["sample"]) != (shard, sample):
        fails.append(f"data position (shard {st['shard']}, sample {st['sample']}), llm.c's "
                     f"loader would be at (shard {shard}, sample {sample})")
    w = st["w"]
    if w is None or w.size != model[1].size or st["m"].size != w.size:
        fails.append(f"array sizes m {st['m'].size}, master "
                     f"{None if w is None else w.size}, model {model[1].size}")
    elif model[0] == 3 and not np.array_equal(w.view(np.uint32), model[1].view(np.uint32)):
        fails.append("master weights differ from the version 3 model file")
    elif model[0] == 5 and not np.array_equal(bf16_rne(w), model[2]):
        fails.append("the version 5 model file is not the master weights rounded to bf16")
    if not (np.isfinite(st["m"]).all() and np.isfinite(st["v"]).all() and (st["v"] >= 0).all()):
        fails.append("m or v not finite, or v negative")
    report(fails, f"step {st['step']}, position ({st['shard']}, {st['sample']}), "
                  f"{st['m'].size} parameters, model version {model[0]}")


def check_adamw(a):
    b, f = read_state(a.before), read_state(a.after)
    m0, v0, p0 = (x.astype(np.float64) for x in (b["m"], b["v"], b["w"]))
    m1, v1, p1 = (x.astype(np.float64) for x in (f["m"], f["v"], f["w"]))
    g = (m1 - a.beta1 * m0) / (1 - a.beta1)
    v_want = a.beta2 * v0 + (1 - a.beta2) * g * g
    bc1, bc2 = 1 - a.beta1 ** a.t, 1 - a.beta2 ** a.t
    p_want = p0 - a.lr * ((m1 / bc1) / (np.sqrt(v1 / bc2) + a.eps) + a.wd * p0)
    fails = []
    ev = np.max(np.abs(v1 - v_want) / (np.abs(v_want) + 1e-12))
    ep = np.max(np.abs(p1 - p_want))
    moved = np.max(np.abs(p1 - p0))
    if ev > 1e-3:
        fails.append(f"v is not beta2*v + (1-beta2)*g^2 of the imported v: rel error {ev:.3g}")
    if ep > 2e-6:
        fails.append(f"the master weights are not one AdamW update (t={a.t}) of the imported "
                     f"ones: max error {ep:.3g} (update size {moved:.3g})")
    report(fails, f"v rel error {ev:.2g}, weights abs error {ep:.2g}, update {moved:.2g}")


def report(fails, ok):
    if fails:
        print("llmc_state: FAIL\n  " + "\n  ".join(fails))
        sys.exit(1)
    print("llmc_state: PASS:", ok)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("state")
    w.add_argument("model")
    c = sub.add_parser("check")
    c.add_argument("state")
    c.add_argument("model")
    for p in (w, c):
        p.add_argument("--step", type=int, required=True)
        p.add_argument("--nproc", type=int, default=1)
        p.add_argument("--rank", type=int, default=0)
    w.add_argument("--shard", type=int, default=0)
    w.add_argument("--sample", type=int, default=0)
    w.add_argument("--master", type=int, default=1)
    w.add_argument("--shuffle", type=int, default=0)
    w.add_argument("--count", type=int, default=0)
    w.add_argument("--seed", type=int, default=1)
    c.add_argument("--shards", required=True)
    c.add_argument("--reads", type=int, required=True)
    c.add_argument("--B", type=int, required=True)
    c.add_argument("--T", type=int, required=True)
    c.add_argument("--from-shard", type=int, default=0)
    c.add_argument("--from-sample", type=int, default=0)
    d = sub.add_parser("adamw")
    d.add_argument("before")
    d.add_argument("after")
    for k in ("lr", "beta1", "beta2", "eps", "wd"):
        d.add_argument("--" + k, type=float, required=True)
    d.add_argument("--t", type=int, required=True)
    a = ap.parse_args()
    {"write": write_state, "check": check_state, "adamw": check_adamw}[a.cmd](a)


if __name__ == "__main__":
    main()
