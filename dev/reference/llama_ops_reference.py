#!/usr/bin/python3
"""dev/reference/llama_ops_reference.py — the Llama family's ops in PyTorch, float64.

An independent reference for the cpu backend's RMSNorm, RoPE, SwiGLU and
grouped-query attention (kernels/ops.h; tests/unit/kernels/test_llama_ops_cpu.c
drives it). Each op is written from its published definition in elementary
torch ops (Hugging Face transformers' Llama: LlamaRMSNorm, rotate_half and
apply_rotary_pos_emb, the llama3 rope_type's frequency rule, repeat_kv,
F.silu), never from the C code.

usage:
    llama_ops_reference.py OP DIR KEY=VALUE... [-- OP DIR KEY=VALUE...]...
    llama_ops_reference.py selfcheck
    (selfcheck may also be one of the jobs: "-- selfcheck" prints its own
    "llama_ops_reference: selfcheck PASS")

OP DIR reads the op's inputs from DIR/NAME.f32 (raw little-endian float32,
row-major, the shapes below), runs the op in float64 on those values, and
writes each result to DIR/ref_NAME.f64 (raw little-endian float64). Input
gradients are autograd's of sum(out * dout). Jobs separated by "--" run in
order in one process (one import of torch, most of a job's time). Prints
"llama_ops_reference: PASS" once all succeeded; any fault exits 1 with one
line.

    rmsnorm   N C eps            inp(N,C) weight(C) dout(N,C)
              -> out(N,C) rstd(N) dinp(N,C) dweight(C)
    rope      B T NH KVH hs theta [pos0] [factor low high orig]
              qkv(B,T,W) dout(B,T,W), W = (NH + 2 KVH) hs
              -> out(B,T,W) dinp(B,T,W) freq(hs/2) table(T,hs)
              (row (b,t) at position pos0 + t, pos0 0 by default; table
              row t: cos(p f_i) for i < hs/2, then sin(p f_i), p = pos0 + t;
              factor > 0 turns on Llama 3's frequency scaling)
    swiglu    N F                inp(N,2F) = [gate | up] per row, dout(N,F)
              -> out(N,F) dinp(N,2F)
    attention B T NH KVH hs      qkv(B,T,W) dout(B,T,NH hs)
              -> out(B,T,NH hs) lse(B,NH,T) dqkv(B,T,W)
              (causal; query head h reads key/value head h // (NH/KVH))

selfcheck runs torch.autograd.gradcheck (central differences, float64) on
every op's function at small random shapes, so that the gradients the
reference writes are themselves checked.
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

# One thread: the tensors here are tiny, and a pool of OMP_NUM_THREADS threads
# spinning beside the suite's other job on two cores made llama_ops_reference's
# selfcheck 3 to 7 times slower (9 to 21 s against 3 s); no result here depends
# on the thread count beyond the last bits, far inside every tolerance checked.
torch.set_num_threads(1)

torch.set_default_dtype(torch.float64)


def fail(msg):
    print("llama_ops_reference: " + msg)
    sys.exit(1)


# ---- the ops, from their published definitions ----

def rmsnorm(x, weight, eps):
    """LlamaRMSNorm: weight * x / sqrt(mean(x^2) + eps)."""
    variance = x.pow(2).mean(-1, keepdim=True)
    return weight * (x * torch.rsqrt(variance + eps)), torch.rsqrt(variance + eps).squeeze(-1)


def rope_inv_freq(hs, theta, scaling=None):
    """inv_freq = 1 / theta^(2i/hs); with scaling = (factor, low, high, orig)
    transformers' _compute_llama3_parameters."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, hs, 2, dtype=torch.float64) / hs))
    if scaling is None:
        return inv_freq
    factor, low_freq_factor, high_freq_factor, old_context_len = scaling
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context_len / wavelen - low_freq_factor) / (
        high_freq_factor - low_freq_factor)
    smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope_cos_sin(T, inv_freq, pos0=0):
    t = torch.arange(pos0, pos0 + T, dtype=torch.float64)
    freqs = torch.outer(t, inv_freq)          # (T, hs/2)
    emb = torch.cat((freqs, freqs), dim=-1)   # (T, hs)
    return emb.cos(), emb.sin()


def rope_qkv(qkv, NH, KVH, hs, cos, sin):
    """apply_rotary_pos_emb on the q and k heads of (B,T,W) rows; v as is."""
    B, T, _ = qkv.shape
    q = qkv[..., : NH * hs].reshape(B, T, NH, hs)
    k = qkv[..., NH * hs: (NH + KVH) * hs].reshape(B, T, KVH, hs)
    v = qkv[..., (NH + KVH) * hs:]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    q = q * c + rotate_half(q) * s
    k = k * c + rotate_half(k) * s
    return torch.cat((q.reshape(B, T, -1), k.reshape(B, T, -1), v), dim=-1)


def swiglu(inp, F_):
    return F.silu(inp[..., :F_]) * inp[..., F_:]


def attention(qkv, NH, KVH, hs):
    """Causal attention with repeat_kv; returns out (B,T,NH hs), lse (B,NH,T)."""
    B, T, _ = qkv.shape
    q = qkv[..., : NH * hs].reshape(B, T, NH, hs).transpose(1, 2)
    k = qkv[..., NH * hs: (NH + KVH) * hs].reshape(B, T, KVH, hs).transpose(1, 2)
    v = qkv[..., (NH + KVH) * hs:].reshape(B, T, KVH, hs).transpose(1, 2)
    n_rep = NH // KVH
    # repeat_kv: (B, KVH, T, hs) -> (B, KVH * n_rep, T, hs), head h = kv head h // n_rep
    k = k[:, :, None].expand(B, KVH, n_rep, T, hs).reshape(B, NH, T, hs)
    v = v[:, :, None].expand(B, KVH, n_rep, T, hs).reshape(B, NH, T, hs)
    scores = q @ k.transpose(-1, -2) / math.sqrt(hs)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    scores = scores.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    out = torch.softmax(scores, dim=-1) @ v
    return out.transpose(1, 2).reshape(B, T, NH * hs), lse


# ---- files ----

def read_f32(d, name, shape):
    path = os.path.join(d, name + ".f32")
    n = math.prod(shape)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        fail("cannot read %s: %s" % (path, e.strerror))
    if len(raw) != 4 * n:
        fail("%s: %d bytes, expected %d (shape %s)" % (path, len(raw), 4 * n, list(shape)))
    t = torch.frombuffer(bytearray(raw), dtype=torch.float32).clone()
    return t.reshape(shape).to(torch.float64)


def write_f64(d, name, t):
    path = os.path.join(d, "ref_" + name + ".f64")
    with open(path, "wb") as f:
        f.write(t.detach().to(torch.float64).contiguous().numpy().tobytes())


def grads(out, dout, inputs):
    return torch.autograd.grad((out * dout).sum(), inputs)


def args_of(argv, names, optional=()):
    kv = {}
    for a in argv:
        if "=" not in a:
            fail("argument %r is not KEY=VALUE" % a)
        k, v = a.split("=", 1)
        kv[k] = v
    for n in names:
        if n not in kv:
            fail("missing %s=" % n)
    unknown = set(kv) - set(names) - set(optional)
    if unknown:
        fail("unknown argument(s) %s" % ", ".join(sorted(unknown)))
    return kv


def run_rmsnorm(d, argv):
    a = args_of(argv, ("N", "C", "eps"))
    N, C, eps = int(a["N"]), int(a["C"]), float(a["eps"])
    x = read_f32(d, "inp", (N, C)).requires_grad_()
    w = read_f32(d, "weight", (C,)).requires_grad_()
    dout = read_f32(d, "dout", (N, C))
    out, rstd = rmsnorm(x, w, eps)
    dx, dw = grads(out, dout, (x, w))
    for name, t in (("out", out), ("rstd", rstd), ("dinp", dx), ("dweight", dw)):
        write_f64(d, name, t)


def run_rope(d, argv):
    a = args_of(argv, ("B", "T", "NH", "KVH", "hs", "theta"),
                ("pos0", "factor", "low", "high", "orig"))
    B, T, NH, KVH, hs = (int(a[k]) for k in ("B", "T", "NH", "KVH", "hs"))
    scaling = None
    if float(a.get("factor", "0")) > 0:
        scaling = (float(a["factor"]), float(a["low"]), float(a["high"]), float(a["orig"]))
    W = (NH + 2 * KVH) * hs
    x = read_f32(d, "qkv", (B, T, W)).requires_grad_()
    dout = read_f32(d, "dout", (B, T, W))
    inv_freq = rope_inv_freq(hs, float(a["theta"]), scaling)
    cos, sin = rope_cos_sin(T, inv_freq, int(a.get("pos0", "0")))
    out = rope_qkv(x, NH, KVH, hs, cos, sin)
    (dx,) = grads(out, dout, (x,))
    table = torch.cat((cos[:, : hs // 2], sin[:, : hs // 2]), dim=-1)
    for name, t in (("out", out), ("dinp", dx), ("freq", inv_freq), ("table", table)):
        write_f64(d, name, t)


def run_swiglu(d, argv):
    a = args_of(argv, ("N", "F"))
    N, F_ = int(a["N"]), int(a["F"])
    x = read_f32(d, "inp", (N, 2 * F_)).requires_grad_()
    dout = read_f32(d, "dout", (N, F_))
    out = swiglu(x, F_)
    (dx,) = grads(out, dout, (x,))
    write_f64(d, "out", out)
    write_f64(d, "dinp", dx)


def run_attention(d, argv):
    a = args_of(argv, ("B", "T", "NH", "KVH", "hs"))
    B, T, NH, KVH, hs = (int(a[k]) for k in ("B", "T", "NH", "KVH", "hs"))
    if NH % KVH:
        fail("NH = %d not divisible by KVH = %d" % (NH, KVH))
    W = (NH + 2 * KVH) * hs
    x = read_f32(d, "qkv", (B, T, W)).requires_grad_()
    dout = read_f32(d, "dout", (B, T, NH * hs))
    out, lse = attention(x, NH, KVH, hs)
    (dx,) = grads(out, dout, (x,))
    for name, t in (("out", out), ("lse", lse), ("dqkv", dx)):
        write_f64(d, name, t)


def selfcheck():
    g = torch.Generator().manual_seed(7)

    def rnd(*shape):
        return torch.randn(*shape, generator=g).requires_grad_()

    checks = [
        ("rmsnorm", lambda x, w: rmsnorm(x, w, 1e-5)[0], (rnd(3, 8), rnd(8))),
        ("swiglu", lambda x: swiglu(x, 5), (rnd(3, 10),)),
    ]
    for scaling in (None, (8.0, 1.0, 4.0, 16.0)):
        cos, sin = rope_cos_sin(5, rope_inv_freq(8, 10000.0, scaling))
        checks.append(("rope", lambda x, c=cos, s=sin: rope_qkv(x, 2, 1, 8, c, s),
                       (rnd(2, 5, 32),)))
    checks.append(("attention", lambda x: attention(x, 4, 2, 4)[0], (rnd(2, 6, 32),)))
    checks.append(("attention lse", lambda x: attention(x, 2, 1, 4)[1], (rnd(1, 5, 16),)))
    for name, fn, inputs in checks:
        if not torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-7, rtol=1e-6):
            fail("selfcheck: %s: autograd disagrees with finite differences" % name)
    # the scaling rule's three regimes at Llama 3.2's settings
    f0 = rope_inv_freq(64, 500000.0)
    f = rope_inv_freq(64, 500000.0, (32.0, 1.0, 4.0, 8192.0))
    wl = 2 * math.pi / f0
    if not (torch.equal(f[wl < 2048], f0[wl < 2048]) and
            torch.allclose(f[wl > 8192], f0[wl > 8192] / 32) and
            ((wl >= 2048) & (wl <= 8192)).any()):
        fail("selfcheck: Llama 3 scaling regimes")


def run_job(job):
    if job == ["selfcheck"]:
        selfcheck()
        print("llama_ops_reference: selfcheck PASS")
    elif len(job) >= 2 and job[0] in ("rmsnorm", "rope", "swiglu", "attention"):
        if not os.path.isdir(job[1]):
            fail("%s is not a folder" % job[1])
        {"rmsnorm": run_rmsnorm, "rope": run_rope, "swiglu": run_swiglu,
         "attention": run_attention}[job[0]](job[1], job[2:])
    else:
        fail("usage: llama_ops_reference.py rmsnorm|rope|swiglu|attention DIR KEY=VALUE... "
             "[-- OP DIR KEY=VALUE...]... | selfcheck")


def main(argv):
    if len(argv) == 1 and argv[0] == "selfcheck":
        selfcheck()
    else:
        # several jobs in one process: importing torch is most of a job's time
        job = []
        for a in argv + ["--"]:
            if a != "--":
                job.append(a)
                continue
            run_job(job)
            job = []
    print("llama_ops_reference: PASS")


if __name__ == "__main__":
    main(sys.argv[1:])
