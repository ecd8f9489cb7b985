"""Multiple-choice (HellaSwag) and greedy-sampling reference: `gpt2_reference.py eval ...`.

Scores an llm.c eval file (eval/eval_file.h's format, read here by its own
reader) with the float64 PyTorch model of gpt2_reference.py, as llm.c's
dev/data/hellaswag.py scores it: for each ending, the losses of its tokens
given the context and the ending's earlier tokens; acc from their sum,
acc_norm from their mean; the lowest index wins a tie. A row of T
positions keeps the context's last min(ctx_len, T + 1 - len) tokens
(eval/score.h); each row is run at its own length, without padding.

Two uses:

  gpt2_reference.py eval --eval-file F [--out tests/data/eval_reference_tiny.bin]
      Parameters generated as tests/lib/test_util.c's tu_random_params(cfg, seed)
      makes them (splitmix64; mirrored here in numpy, and checked through the
      stored parameter hash), V = 50257 so GPT-2 tokens fit, L=2 NH=4 C=32
      maxT=128. Writes every completion's loss sum and mean at T = 64 and
      T = 128, the accuracies, and a greedy continuation (a window of T = 16
      with docs/sampling.md's context shift) for tests/unit/eval/test_hellaswag.c.
      Asserts margins: at every example
      the best and second-best scores differ by > 1e-4 and every greedy step's
      top two logits by > 1e-4, so fp32 results must give the same choices.

  gpt2_reference.py eval --eval-file F --model M.bin --T N --compare DUMP
      Parameters from an llm.c model file (version 3, fp32); compares with the
      per-completion dump the test build's build/test/train_gpt writes under
      TRAIN_GPT_TEST_EVAL_DUMP (cli/evaluate.h; ./train_gpt has no test
      hooks): every sum and mean within 1e-5 relative, and the same
      acc and acc_norm. Exits 1 otherwise.

Output file (little-endian):
    int32 header[32]: [0] 20261130 magic, [1] 1 version, [2] L, [3] NH, [4] C,
          [5] V, [6] Vp, [7] maxT, [8] examples n, [9] seed, [10] number of
          row lengths R (2), [11..12] the row lengths T, [13..16] acc count and
          acc_norm count per row length, [17] greedy prompt length P,
          [18] greedy tokens G, [19] the greedy window T, rest 0
    uint64  FNV-1a hash of the float32 parameters in llm.c order (dist_hash_floats)
    per row length, per example, per completion (n*4 records):
          int32 ctx_used, int32 len, float64 loss sum, float64 loss mean
    int32 prompt[P], int32 greedy[G]
"""
import math
import struct
import sys

import numpy as np
import torch

import gpt2_reference as ref

MAGIC = 20261130
VERSION = 1
MARGIN = 1e-4


# ---- the eval file (its own reader; the format is eval/eval_file.h's) ----

def read_evalfile(path):
    with open(path, "rb") as f:
        data = f.read()
    h = struct.unpack("<256i", data[:1024])
    assert h[0] == 20240522 and h[1] == 1, f"{path}: not an llm.c eval file (version 1)"
    v = struct.unpack("<%dH" % ((len(data) - 1024) // 2), data[1024:])
    examples, at = [], 0
    for i in range(h[2]):
        assert v[at] == 65535 and v[at + 2] == i and v[at + 4] == 4, f"{path}: example {i}"
        end = at + v[at + 1] // 2
        label, p = v[at + 3], at + 5
        parts = []
        for _ in range(5):
            parts.append(list(v[p + 1:p + 1 + v[p]]))
            p += 1 + v[p]
        assert p == end, f"{path}: example {i}: record length"
        examples.append((label, parts[0], parts[1:]))
        at = end
    assert at == len(v), f"{path}: trailing data"
    return examples


# ---- parameters ----

def splitmix_draws(seed, count):
    """The first `count` outputs of base/rng.h's rng_next from state `seed`."""
    gamma = np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + (np.arange(1, count + 1, dtype=np.uint64) * gamma)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def tu_random_params(cfg, seed):
    """tests/lib/test_util.c's tu_random_params: per element, the sum of 4 uniforms
    in [-0.5, 0.5) times 0.1*sqrt(3) (LayerNorm weights 1 + that), as float32;
    wte's padded rows zeroed after drawing."""
    shapes = ref.param_shapes(cfg)
    total = sum(math.prod(s) for s in shapes.values())
    x = splitmix_draws(seed, 4 * total).reshape(total, 4)
    d = (x >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0) - 0.5
    u = ((d[:, 0] + d[:, 1]) + d[:, 2]) + d[:, 3]  # the C loop's order
    p, off = {}, 0
    for name in ref.PARAM_NAMES:
        n = math.prod(shapes[name])
        base = 1.0 if name in ("ln1w", "ln2w", "lnfw") else 0.0
        val = (base + u[off:off + n] * 0.1 * 1.7320508).astype(np.float32)
        if name == "wte":
            val[cfg["V"] * cfg["C"]:] = 0.0
        p[name] = torch.from_numpy(val.reshape(shapes[name]).astype(np.float64))
        off += n
    return p


def load_model_file(path):
    with open(path, "rb") as f:
        data = f.read()
    h = struct.unpack("<256i", data[:1024])
    assert h[0] == 20240326 and h[1] == 3, f"{path}: not an llm.c fp32 model file (version 3)"
    maxT, V, L, NH, C, Vp = h[2:8]
    cfg = dict(B=1, T=maxT, L=L, NH=NH, C=C, V=V, Vp=Vp, maxT=maxT)
    flat = np.frombuffer(data, dtype="<f4", offset=1024).astype(np.float64)
    assert flat.size == ref.num_params(cfg), f"{path}: size does not match its header"
    p, off = {}, 0
    for name, shape in ref.param_shapes(cfg).items():
        n = math.prod(shape)
        p[name] = torch.from_numpy(flat[off:off + n].reshape(shape).copy())
        off += n
    return cfg, p


# ---- scoring ----

def token_losses(p, cfg, seq):
    """-log p(seq[t+1] | seq[:t+1]) for t < len(seq) - 1, float64."""
    x = torch.tensor([seq[:-1]])
    y = torch.tensor([seq[1:]])
    logits, _ = ref.forward(p, cfg, x, y)
    m = logits.max(dim=-1, keepdim=True).values
    lse = (m + torch.log(torch.exp(logits - m).sum(dim=-1, keepdim=True))).squeeze(-1)
    return (lse - logits.gather(-1, y.unsqueeze(-1)).squeeze(-1))[0]


def score(p, cfg, examples, T):
    """Per example: (label, [(ctx_used, len, sum, mean)] * 4)."""
    out = []
    with torch.no_grad():
        for label, ctx, ends in examples:
            rows = []
            for e in ends:
                used = min(len(ctx), T + 1 - len(e))
                assert used >= 1, f"a completion of {len(e)} tokens does not fit T={T}"
                l = token_losses(p, cfg, ctx[len(ctx) - used:] + e)[used - 1:]
                s = float(l.sum())
                rows.append((used, len(e), s, s / len(e)))
            out.append((label, rows))
    return out


def argmin(v):
    return min(range(len(v)), key=lambda i: (v[i], i))


def accuracy(scored, check_margin):
    acc = acc_norm = 0
    for i, (label, rows) in enumerate(scored):
        for k, name in ((2, "sum"), (3, "mean")):
            v = [r[k] for r in rows]
            if check_margin:
                a, b = sorted(v)[:2]
                assert b - a > MARGIN, (f"example {i}: the two best {name}s differ by {b - a:.2e} "
                                        f"(<= {MARGIN}); choose another seed")
        acc += argmin([r[2] for r in rows]) == label
        acc_norm += argmin([r[3] for r in rows]) == label
    return acc, acc_norm


def greedy(p, cfg, prompt, count, window):
    """Greedy tokens under docs/sampling.md's context rule: the model sees the
    prompt's last `window` tokens; once a token makes the context longer than
    `window`, only its last window - window // 2 stay, at positions 0 ..."""
    seq, out = list(prompt[-window:]), []
    with torch.no_grad():
        for _ in range(count):
            x = torch.tensor([seq])
            logits, _ = ref.forward(p, cfg, x, torch.zeros_like(x))
            last = logits[0, -1]
            top = torch.topk(last, 2).values
            assert float(top[0] - top[1]) > MARGIN, "greedy step within the margin; another seed"
            t = int(torch.argmax(last))
            seq.append(t)
            out.append(t)
            if len(seq) > window:
                seq = seq[len(seq) - (window - window // 2):]
    return out


def fnv1a_floats(values):
    """dist_hash_floats (distributed/dist.c): FNV-1a over the 32-bit words of float32 values."""
    h, mask = 0xCBF29CE484222325, (1 << 64) - 1
    for w in values.astype("<f4").view("<u4").tolist():
        h = ((h ^ w) * 0x100000001B3) & mask
    return h


def write_reference(path, cfg, seed, n, Ts, scored_by_T, accs, phash, prompt, gen, window):
    h = [0] * 32
    h[:11] = [MAGIC, VERSION, cfg["L"], cfg["NH"], cfg["C"], cfg["V"], cfg["Vp"], cfg["maxT"], n,
              seed, len(Ts)]
    h[11:13] = Ts
    h[13:17] = [accs[0][0], accs[0][1], accs[1][0], accs[1][1]]
    h[17:20] = [len(prompt), len(gen), window]
    import os
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<32i", *h))
        f.write(struct.pack("<Q", phash))
        for scored in scored_by_T:
            for _, rows in scored:
                for used, length, s, m in rows:
                    f.write(struct.pack("<iidd", used, length, s, m))
        f.write(struct.pack("<%di" % len(prompt), *prompt))
        f.write(struct.pack("<%di" % len(gen), *gen))
    os.replace(path + ".tmp", path)


def compare(scored, dump_path, T):
    got = {}
    with open(dump_path) as f:
        for line in f:
            i, c, used, length, s, m = line.split()
            got[(int(i), int(c))] = (int(used), int(length), float(s), float(m))
    worst = 0.0
    for i, (_, rows) in enumerate(scored):
        for c, (used, length, s, m) in enumerate(rows):
            g = got[(i, c)]
            assert g[:2] == (used, length), f"example {i} completion {c}: rows differ {g[:2]}"
            for a, b in ((g[2], s), (g[3], m)):
                worst = max(worst, abs(a - b) / abs(b))
    acc_c = [0, 0]
    for i, (label, _) in enumerate(scored):
        acc_c[0] += argmin([got[(i, c)][2] for c in range(4)]) == label
        acc_c[1] += argmin([got[(i, c)][3] for c in range(4)]) == label
    return worst, acc_c


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="gpt2_reference.py eval", description=__doc__.split("\n")[0])
    ap.add_argument("--eval-file", required=True)
    ap.add_argument("--out", default="tests/data/eval_reference_tiny.bin")
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--model", help="llm.c model file (version 3) instead of generated parameters")
    ap.add_argument("--T", type=int, help="row length for --model")
    ap.add_argument("--compare", help="train_gpt's TRAIN_GPT_TEST_EVAL_DUMP file")
    a = ap.parse_args(argv)
    examples = read_evalfile(a.eval_file)
    torch.set_grad_enabled(False)
    if a.model:
        cfg, p = load_model_file(a.model)
        T = a.T or cfg["maxT"]
        scored = score(p, cfg, examples, T)
        acc = accuracy(scored, False)
        n = len(examples)
        print(f"reference (float64): {n} examples, T={T}: acc {acc[0] / n:.4f} ({acc[0]}), "
              f"acc_norm {acc[1] / n:.4f} ({acc[1]})")
        if a.compare:
            worst, acc_c = compare(scored, a.compare, T)
            print(f"{a.compare}: acc {acc_c[0] / n:.4f} ({acc_c[0]}), acc_norm {acc_c[1] / n:.4f} "
                  f"({acc_c[1]}); worst relative difference of a loss sum or mean {worst:.2e}")
            if worst > 1e-5 or tuple(acc_c) != tuple(acc):
                sys.exit("gpt2_reference eval: MISMATCH (tolerance 1e-5 relative, equal accuracies)")
            print("match: every loss within 1e-5 relative, accuracies identical")
        return
    cfg = dict(B=1, T=128, L=2, NH=4, C=32, V=50257, Vp=50304, maxT=128)
    p = tu_random_params(cfg, a.seed)
    phash = fnv1a_floats(np.concatenate([p[k].numpy().reshape(-1) for k in ref.PARAM_NAMES]))
    Ts, scored_by_T, accs = [64, 128], [], []
    for T in Ts:
        scored_by_T.append(score(p, cfg, examples, T))
        accs.append(accuracy(scored_by_T[-1], True))
    prompt, window = examples[0][1], 16
    gen = greedy(p, cfg, prompt, 20, window)
    write_reference(a.out, cfg, a.seed, len(examples), Ts, scored_by_T, accs, phash, prompt, gen,
                    window)
    n = len(examples)
    for T, (c, cn), scored in zip(Ts, accs, scored_by_T):
        cut = sum(r[0] < len(ex[1]) for (_, rows), ex in zip(scored, examples) for r in rows)
        print(f"T={T}: acc {c}/{n}, acc_norm {cn}/{n}, {cut} completions with a cut context")
    print(f"torch {torch.__version__}; parameter hash {phash:#018x}; greedy {gen}")
    print(f"wrote {a.out}")
