#!/usr/bin/python3
"""GPT-2 reference file for the CPU backend's tests (loss, logits, every gradient).

An independent PyTorch implementation of llm.c's GPT-2: learned token (wte) and
position (wpe) embeddings; L pre-LayerNorm blocks
    x = x + attproj(causal_mha(qkv(ln1(x))))
    x = x + fcproj(gelu_tanh(fc(ln2(x))))
then a final LayerNorm and tied logits lnf(x) . wte^T; the cross-entropy is
taken over the real vocabulary only (columns V..Vp-1 are padding) and averaged
over all B*T positions. LayerNorm eps is 1e-5; GELU is the tanh approximation;
attention scales scores by 1/sqrt(C/NH); linear layers are y = x W^T + b with
W stored (out, in); qkv's output row is [q | k | v], each C wide, head h taking
columns h*hs..(h+1)*hs of each.

Parameters are drawn in float64, rounded to float32 (the values written), and
the model then runs in float64 on those rounded values, so the stored loss,
logits and gradients are the float64 truth for the float32 parameters, rounded
once to float32 on output.

Before writing, the script asserts (a) that a second forward pass built from
torch.nn.functional (layer_norm, gelu(approximate="tanh"), softmax,
cross_entropy) matches the hand-written one, and (b) that central finite
differences agree with autograd on sampled entries of every parameter tensor
(tolerances in FD_* below).

File format (little-endian, no padding between sections):
    int32   header[32]: [0]=20261129 magic, [1]=1 version, [2]=B, [3]=T, [4]=L,
            [5]=NH, [6]=C, [7]=V, [8]=Vp, [9]=maxT, [10]=num_params (floats),
            [11..31]=0
    int32   inputs[B*T]            token ids in [0, V), row-major (B, T)
    int32   targets[B*T]
    float32 params[num_params]     llm.c order: wte (Vp,C), wpe (maxT,C),
            ln1w (L,C), ln1b (L,C), qkvw (L,3C,C), qkvb (L,3C), attprojw (L,C,C),
            attprojb (L,C), ln2w (L,C), ln2b (L,C), fcw (L,4C,C), fcb (L,4C),
            fcprojw (L,C,4C), fcprojb (L,C), lnfw (C), lnfb (C)
    float32 logits[B*T*V]          real vocabulary only
    float32 loss                   mean cross-entropy
    float32 grads[num_params]      d loss / d params, same order; wte rows
                                   V..Vp-1 are zero

Usage:
    /usr/bin/python3 dev/reference/gpt2_reference.py [--out FILE] [--seed N] [--B ...]
    /usr/bin/python3 dev/reference/gpt2_reference.py --check FILE
    /usr/bin/python3 dev/reference/gpt2_reference.py eval --eval-file FILE ...
        (multiple-choice losses and a greedy sample: dev/reference/gpt2_reference_eval.py)
"""
import argparse
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

MAGIC = 20261129
VERSION = 1
HEADER_INTS = 32
LN_EPS = 1e-5

# Finite differences: central, step FD_STEP, in float64. Pass when
# |fd - autograd| <= FD_RTOL * |autograd| + FD_ATOL.
FD_STEP = 1e-5
FD_RTOL = 1e-6
FD_ATOL = 1e-9
FD_SAMPLES_PER_TENSOR = 3

PARAM_NAMES = ["wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
               "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb"]


def param_shapes(cfg):
    Vp, C, L, maxT = cfg["Vp"], cfg["C"], cfg["L"], cfg["maxT"]
    return {
        "wte": (Vp, C), "wpe": (maxT, C),
        "ln1w": (L, C), "ln1b": (L, C),
        "qkvw": (L, 3 * C, C), "qkvb": (L, 3 * C),
        "attprojw": (L, C, C), "attprojb": (L, C),
        "ln2w": (L, C), "ln2b": (L, C),
        "fcw": (L, 4 * C, C), "fcb": (L, 4 * C),
        "fcprojw": (L, C, 4 * C), "fcprojb": (L, C),
        "lnfw": (C,), "lnfb": (C,),
    }


def num_params(cfg):
    return sum(math.prod(s) for s in param_shapes(cfg).values())


def make_params(cfg, gen):
    """Random float64 parameters, already rounded through float32.

    Larger than GPT-2's init (std 0.1 rather than 0.02, LayerNorm weights
    1 + N(0, 0.1), biases N(0, 0.1)) so every gradient is well above fp32 noise."""
    p = {}
    for name, shape in param_shapes(cfg).items():
        z = torch.randn(shape, generator=gen, dtype=torch.float64) * 0.1
        if name in ("ln1w", "ln2w", "lnfw"):
            z = z + 1.0
        p[name] = z
    p["wte"][cfg["V"]:, :] = 0.0  # padded vocabulary rows, as llm.c leaves them
    return {k: v.to(torch.float32).to(torch.float64) for k, v in p.items()}


# ---- the model, from elementary ops ----

def layernorm(x, w, b):
    # x (..., C); biased variance, as GPT-2
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + LN_EPS) * w + b


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def linear(x, w, b):
    # x (..., IC), w (OC, IC), b (OC)
    return x @ w.transpose(0, 1) + b


def causal_attention(qkv, NH):
    # qkv (B, T, 3C) -> (B, T, C)
    B, T, C3 = qkv.shape
    C = C3 // 3
    hs = C // NH
    q, k, v = qkv[..., :C], qkv[..., C:2 * C], qkv[..., 2 * C:]
    # (B, T, C) -> (B, NH, T, hs): head h owns columns h*hs..(h+1)*hs
    q, k, v = (t.reshape(B, T, NH, hs).permute(0, 2, 1, 3) for t in (q, k, v))
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(hs)           # (B, NH, T, T)
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    scores = scores.masked_fill(future, float("-inf"))
    att = torch.exp(scores - scores.max(dim=-1, keepdim=True).values)
    att = att / att.sum(dim=-1, keepdim=True)
    y = att @ v                                                    # (B, NH, T, hs)
    return y.permute(0, 2, 1, 3).reshape(B, T, C)


def forward(p, cfg, inputs, targets):
    """Returns (logits (B,T,V), loss) in float64."""
    B, T = inputs.shape
    L, NH, V = cfg["L"], cfg["NH"], cfg["V"]
    x = p["wte"][inputs] + p["wpe"][:T]                            # (B, T, C)
    for l in range(L):
        h = layernorm(x, p["ln1w"][l], p["ln1b"][l])
        h = linear(h, p["qkvw"][l], p["qkvb"][l])                  # (B, T, 3C)
        h = causal_attention(h, NH)
        x = x + linear(h, p["attprojw"][l], p["attprojb"][l])
        h = layernorm(x, p["ln2w"][l], p["ln2b"][l])
        h = gelu_tanh(linear(h, p["fcw"][l], p["fcb"][l]))         # (B, T, 4C)
        x = x + linear(h, p["fcprojw"][l], p["fcprojb"][l])
    x = layernorm(x, p["lnfw"], p["lnfb"])
    logits = (x @ p["wte"].transpose(0, 1))[..., :V]               # (B, T, V), real vocab
    m = logits.max(dim=-1, keepdim=True).values
    lse = (m + torch.log(torch.exp(logits - m).sum(dim=-1, keepdim=True))).squeeze(-1)
    picked = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    loss = (lse - picked).mean()
    return logits, loss


def forward_functional(p, cfg, inputs, targets):
    """The same model from torch.nn.functional building blocks (cross-check)."""
    B, T = inputs.shape
    L, NH, C, V = cfg["L"], cfg["NH"], cfg["C"], cfg["V"]
    hs = C // NH
    x = F.embedding(inputs, p["wte"]) + p["wpe"][:T]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for l in range(L):
        h = F.layer_norm(x, (C,), p["ln1w"][l], p["ln1b"][l], eps=LN_EPS)
        q, k, v = F.linear(h, p["qkvw"][l], p["qkvb"][l]).split(C, dim=-1)
        q, k, v = (t.view(B, T, NH, hs).transpose(1, 2) for t in (q, k, v))
        s = torch.einsum("bhtd,bhsd->bhts", q, k) * (hs ** -0.5)
        a = F.softmax(s.masked_fill(~mask, float("-inf")), dim=-1)
        y = torch.einsum("bhts,bhsd->bhtd", a, v).transpose(1, 2).reshape(B, T, C)
        x = x + F.linear(y, p["attprojw"][l], p["attprojb"][l])
        h = F.layer_norm(x, (C,), p["ln2w"][l], p["ln2b"][l], eps=LN_EPS)
        h = F.gelu(F.linear(h, p["fcw"][l], p["fcb"][l]), approximate="tanh")
        x = x + F.linear(h, p["fcprojw"][l], p["fcprojb"][l])
    x = F.layer_norm(x, (C,), p["lnfw"], p["lnfb"], eps=LN_EPS)
    logits = F.linear(x, p["wte"])[..., :V]
    loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))
    return logits, loss


# ---- checks ----

def check_functional(p, cfg, inputs, targets, logits, loss):
    with torch.no_grad():
        logits2, loss2 = forward_functional(p, cfg, inputs, targets)
    dl = (logits - logits2).abs().max().item()
    dloss = abs(loss.item() - loss2.item())
    assert dl <= 1e-12, f"functional cross-check: logits differ by {dl:.3e} (> 1e-12)"
    assert dloss <= 1e-12, f"functional cross-check: loss differs by {dloss:.3e} (> 1e-12)"
    return dl, dloss


def check_finite_differences(p, cfg, inputs, targets, grads, gen):
    """Central differences on FD_SAMPLES_PER_TENSOR random entries of every tensor
    (plus one entry of a padded wte row, whose gradient must be exactly 0)."""
    worst = 0.0
    checked = 0
    V = cfg["V"]
    with torch.no_grad():
        for name in PARAM_NAMES:
            t = p[name]
            n = t.numel()
            hi = V * cfg["C"] if name == "wte" else n  # sample real rows of wte
            idx = torch.randint(0, hi, (FD_SAMPLES_PER_TENSOR,), generator=gen).tolist()
            if name == "wte":
                idx.append(V * cfg["C"] + int(torch.randint(0, n - V * cfg["C"], (1,),
                                                            generator=gen)))
            flat = t.view(-1)
            for i in idx:
                orig = flat[i].item()
                flat[i] = orig + FD_STEP
                _, lp = forward(p, cfg, inputs, targets)
                flat[i] = orig - FD_STEP
                _, lm = forward(p, cfg, inputs, targets)
                flat[i] = orig
                fd = (lp.item() - lm.item()) / (2 * FD_STEP)
                ag = grads[name].view(-1)[i].item()
                err = abs(fd - ag)
                tol = FD_RTOL * abs(ag) + FD_ATOL
                assert err <= tol, (f"finite differences: {name}[{i}] autograd {ag:.10e} "
                                    f"fd {fd:.10e} |diff| {err:.3e} > tol {tol:.3e}")
                worst = max(worst, err / tol)
                checked += 1
    return checked, worst


def check_file(path):
    """Re-read a written file: header, sizes, finiteness, padded rows. Returns a summary."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        data = f.read()
    assert size >= 4 * HEADER_INTS, f"{path}: {size} bytes, shorter than the 128-byte header"
    hdr = struct.unpack("<32i", data[:4 * HEADER_INTS])
    assert hdr[0] == MAGIC, f"{path}: bad magic {hdr[0]} (expected {MAGIC})"
    assert hdr[1] == VERSION, f"{path}: unsupported version {hdr[1]} (expected {VERSION})"
    B, T, L, NH, C, V, Vp, maxT, nparams = hdr[2:11]
    assert all(h == 0 for h in hdr[11:]), f"{path}: header ints 11..31 must be 0"
    assert min(B, T, L, NH, C, V, Vp, maxT) >= 1, f"{path}: non-positive dimension in header"
    assert C % NH == 0 and Vp >= V and maxT >= T, f"{path}: inconsistent dimensions in header"
    cfg = dict(B=B, T=T, L=L, NH=NH, C=C, V=V, Vp=Vp, maxT=maxT)
    assert nparams == num_params(cfg), (f"{path}: num_params {nparams} but the shapes give "
                                        f"{num_params(cfg)}")
    N = B * T
    expect = 4 * (HEADER_INTS + 2 * N + 2 * nparams + N * V + 1)
    assert size == expect, f"{path}: {size} bytes, expected exactly {expect}"
    off = 4 * HEADER_INTS
    ints = np.frombuffer(data, dtype="<i4", count=2 * N, offset=off)
    off += 8 * N
    floats = np.frombuffer(data, dtype="<f4", offset=off)
    params = floats[:nparams]
    logits = floats[nparams:nparams + N * V]
    loss = float(floats[nparams + N * V])
    grads = floats[nparams + N * V + 1:]
    assert ints.min() >= 0 and ints.max() < V, f"{path}: token id outside [0, {V})"
    for name, arr in (("params", params), ("logits", logits), ("grads", grads)):
        assert np.isfinite(arr).all(), f"{path}: non-finite value in {name}"
    assert math.isfinite(loss), f"{path}: loss is not finite"
    assert not params[V * C:Vp * C].any(), f"{path}: padded wte rows of params are not zero"
    assert not grads[V * C:Vp * C].any(), f"{path}: padded wte rows of grads are not zero"
    return cfg, nparams, loss, size


def write_file(path, cfg, inputs, targets, p, logits, loss, grads):
    hdr = [0] * HEADER_INTS
    hdr[:11] = [MAGIC, VERSION, cfg["B"], cfg["T"], cfg["L"], cfg["NH"], cfg["C"], cfg["V"],
                cfg["Vp"], cfg["maxT"], num_params(cfg)]
    f32 = lambda t: t.detach().reshape(-1).to(torch.float32).numpy().astype("<f4").tobytes()
    i32 = lambda t: t.reshape(-1).to(torch.int32).numpy().astype("<i4").tobytes()
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<32i", *hdr))
        f.write(i32(inputs))
        f.write(i32(targets))
        for name in PARAM_NAMES:
            f.write(f32(p[name]))
        f.write(f32(logits))
        f.write(f32(loss))
        for name in PARAM_NAMES:
            f.write(f32(grads[name]))
    os.replace(tmp, path)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "eval":
        import gpt2_reference_eval
        gpt2_reference_eval.main(sys.argv[2:])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/data/gpt2_reference_tiny.bin",
                    help="file to write (default: %(default)s)")
    ap.add_argument("--check", metavar="FILE", help="only verify an existing file's header and sizes")
    ap.add_argument("--seed", type=int, default=1337)
    for k, v in dict(B=2, T=8, L=2, NH=4, C=32, V=64, Vp=128, maxT=None).items():
        ap.add_argument("--" + k, type=int, default=v,
                        help=f"(default: {v if v is not None else 'T'})")
    a = ap.parse_args()

    if a.check:
        try:
            cfg, n, loss, size = check_file(a.check)
        except (AssertionError, OSError) as e:
            sys.exit(f"gpt2_reference: {e}")
        print(f"{a.check}: ok, {size} bytes, {cfg}, num_params={n}, loss={loss:.6f}")
        return

    cfg = dict(B=a.B, T=a.T, L=a.L, NH=a.NH, C=a.C, V=a.V, Vp=a.Vp,
               maxT=a.maxT if a.maxT is not None else a.T)
    for k, v in cfg.items():
        if v < 1:
            sys.exit(f"gpt2_reference: --{k} must be >= 1 (got {v})")
    if cfg["C"] % cfg["NH"]:
        sys.exit(f"gpt2_reference: --NH {cfg['NH']} must divide --C {cfg['C']}")
    if cfg["Vp"] < cfg["V"]:
        sys.exit(f"gpt2_reference: --Vp {cfg['Vp']} is smaller than --V {cfg['V']}")
    if cfg["maxT"] < cfg["T"]:
        sys.exit(f"gpt2_reference: --maxT {cfg['maxT']} is smaller than --T {cfg['T']}")

    torch.set_grad_enabled(True)
    gen = torch.Generator().manual_seed(a.seed)
    p = make_params(cfg, gen)
    inputs = torch.randint(0, cfg["V"], (cfg["B"], cfg["T"]), generator=gen)
    targets = torch.randint(0, cfg["V"], (cfg["B"], cfg["T"]), generator=gen)

    for t in p.values():
        t.requires_grad_(True)
    logits, loss = forward(p, cfg, inputs, targets)
    loss.backward()
    grads = {k: v.grad.detach().clone() for k, v in p.items()}
    p = {k: v.detach() for k, v in p.items()}
    logits = logits.detach()

    V, C = cfg["V"], cfg["C"]
    assert torch.isfinite(loss) and all(torch.isfinite(g).all() for g in grads.values())
    assert not grads["wte"][V:].any(), "padded wte rows got a nonzero gradient"
    # Adding one vector to every key shifts each row of scores by a constant,
    # which softmax ignores: the k-bias gradient is zero in exact arithmetic.
    kb = grads["qkvb"][:, C:2 * C].abs().max().item()
    assert kb < 1e-12, f"k-bias gradient {kb:.3e} should be ~0: is qkv laid out [q | k | v]?"
    dl, dloss = check_functional(p, cfg, inputs, targets, logits, loss)
    checked, worst = check_finite_differences(p, cfg, inputs, targets, grads, gen)
    # Every tensor's gradient must be far above fp32 rounding of the values
    # the C side accumulates, or a relative-error test on it means little.
    for name in PARAM_NAMES:
        g = grads[name][:V] if name == "wte" else grads[name]
        rms = g.pow(2).mean().sqrt().item()
        assert rms > 1e-5, f"gradient of {name} is too small to test (rms {rms:.3e})"

    out_dir = os.path.dirname(a.out)
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    write_file(a.out, cfg, inputs, targets, p, logits, loss, grads)
    cfg2, n, loss32, size = check_file(a.out)
    assert cfg2 == cfg and loss32 == np.float32(loss.item())

    print(f"torch {torch.__version__}; config {cfg}; seed {a.seed}; num_params {n}")
    print(f"loss {loss.item():.10f} (ln V = {math.log(V):.6f})")
    print(f"functional cross-check: max |dlogits| {dl:.2e}, |dloss| {dloss:.2e}")
    print(f"finite differences: {checked} entries, step {FD_STEP}, tol {FD_RTOL}*|g| + {FD_ATOL}, "
          f"worst err/tol {worst:.3f}")
    for name in PARAM_NAMES:
        g = grads[name][:V] if name == "wte" else grads[name]
        print(f"  grad {name:9s} rms {g.pow(2).mean().sqrt().item():.3e} "
              f"max {g.abs().max().item():.3e}")
    print(f"wrote {a.out} ({size} bytes)")


if __name__ == "__main__":
    main()
