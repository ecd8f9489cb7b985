#!/usr/bin/python3
"""dev/reference/llama_model_reference.py — a whole Llama-family model in PyTorch, float64.

An independent reference for the model's forward and backward (model/llama_run.c
through model/gpt.c; tests/unit/model/test_llama_reference.c drives it), written
from the published definition (Hugging Face transformers' LlamaModel and
LlamaForCausalLM: LlamaRMSNorm, rotate_half and apply_rotary_pos_emb, repeat_kv,
causal scaled dot-product attention, LlamaMLP's down(silu(gate(x)) * up(x)), a
final norm and the lm_head; Qwen2's biases on q_proj, k_proj and v_proj;
Qwen3's q_norm and k_norm, RMSNorms over each head's features before the
rotation; Llama 3's frequency scaling of the rotation, as Hugging Face's
"llama3" rope_type computes its inverse frequencies), in elementary torch ops,
never from the C code.

usage:
    llama_model_reference.py DIR B T L C NH KVH F V Vp THETA EPS UNTIED
                             [QKV_BIAS QK_NORM FACTOR LOW HIGH ORIG [HEAD_DIM]]
                             [-- DIR B T ...]...

The six optional arguments (all or none; default 0 0 0 0 0 0): QKV_BIAS 1
adds bqkv, QK_NORM 1 adds q_norm and k_norm, FACTOR > 0 scales RoPE's
frequencies with low_freq_factor LOW, high_freq_factor HIGH and
original_max_position_embeddings ORIG. HEAD_DIM (after them; 0 or absent:
C / NH) is each head's width hs, as Hugging Face's head_dim: q_proj maps C
to NH hs, k_proj and v_proj to KVH hs, o_proj NH hs back to C.

reads DIR/params.f32 (raw little-endian float32, the model's flat parameter
vector in model/config.h's Llama slot order: tok_emb (Vp,C), lm_head (Vp,C)
when UNTIED is 1, then per layer stacked over L: rms1w (C), q_norm (hs) with
QK_NORM, wqkv (NH hs + 2 KVH hs, C) with q rows, then k, then v, bqkv
(NH hs + 2 KVH hs) with QKV_BIAS, wo (C, NH hs), rms2w (C), k_norm (hs) with QK_NORM,
w_gateup (2F, C) with gate rows then up rows, w_down (C,F); then rmsfw (C)) and
DIR/tokens.i32 (int32: inputs (B,T), then targets (B,T)). More jobs, each
after a "--", run in order in the same process (one import of torch, most
of a job's time). Writes, raw
little-endian float64: DIR/ref_logits.f64 (B,T,V: the real vocabulary),
DIR/ref_loss.f64 (the mean cross-entropy over B*T) and DIR/ref_grads.f64
(d loss / d params, the same layout as params.f32). Prints
"llama_model_reference: PASS" on success; a fault exits 1 with one line.
"""
import math
import sys

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)


def fail(msg):
    print("llama_model_reference: " + msg)
    sys.exit(1)


def rmsnorm(x, weight, eps):
    """LlamaRMSNorm: weight * x / sqrt(mean(x^2) + eps)."""
    return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def inv_frequencies(hs, d):
    """theta^(-2i/hs), i < hs/2; with FACTOR > 0, Llama 3's rule: wavelengths
    2 pi / f longer than ORIG / LOW divided by FACTOR, shorter than ORIG / HIGH
    kept, those between blended by s = (ORIG / wavelength - LOW) / (HIGH - LOW)
    as (1 - s) f / FACTOR + s f."""
    inv_freq = 1.0 / (d["theta"] ** (torch.arange(0, hs, 2, dtype=torch.float64) / hs))
    factor = d["factor"]
    if factor <= 0:
        return inv_freq
    low, high, orig = d["low"], d["high"], d["orig"]
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > orig / low, inv_freq / factor, inv_freq)
    s = (orig / wavelen - low) / (high - low)
    smoothed = (1 - s) * scaled / factor + s * scaled
    medium = ~(wavelen < orig / high) & ~(wavelen > orig / low)
    return torch.where(medium, smoothed, scaled)


def rope(x, T, hs, d):
    """apply_rotary_pos_emb on x (B, heads, T, hs) at positions 0..T-1."""
    inv_freq = inv_frequencies(hs, d)
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return x * emb.cos() + rotate_half(x) * emb.sin()


def repeat_kv(x, n_rep):
    """(B, KVH, T, hs) -> (B, KVH * n_rep, T, hs), each kv head n_rep times in turn."""
    B, KVH, T, hs = x.shape
    return x[:, :, None, :, :].expand(B, KVH, n_rep, T, hs).reshape(B, KVH * n_rep, T, hs)


def model_loss(p, inputs, targets, d):
    B, T, C, NH, KVH, V = d["B"], d["T"], d["C"], d["NH"], d["KVH"], d["V"]
    hs = d["hs"]
    Q = NH * hs  # the query width: C unless HEAD_DIM is given
    x = p["tok_emb"][inputs]  # (B,T,C)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    for l in range(d["L"]):
        h = rmsnorm(x, p["rms1w"][l], d["eps"])
        qkv = h @ p["wqkv"][l].T
        if d["qkv_bias"]:
            qkv = qkv + p["bqkv"][l]
        q = qkv[..., :Q].view(B, T, NH, hs)
        k = qkv[..., Q:Q + KVH * hs].view(B, T, KVH, hs)
        v = qkv[..., Q + KVH * hs:].view(B, T, KVH, hs).transpose(1, 2)
        if d["qk_norm"]:  # Qwen3: per head, before the rotation
            q, k = rmsnorm(q, p["q_norm"][l], d["eps"]), rmsnorm(k, p["k_norm"][l], d["eps"])
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        q, k = rope(q, T, hs, d), rope(k, T, hs, d)
        k, v = repeat_kv(k, NH // KVH), repeat_kv(v, NH // KVH)
        att = (q @ k.transpose(-1, -2)) / hs ** 0.5
        att = att.masked_fill(~causal, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, Q)
        x = x + y @ p["wo"][l].T
        h = rmsnorm(x, p["rms2w"][l], d["eps"])
        gu = h @ p["w_gateup"][l].T
        x = x + (F.silu(gu[..., :d["F"]]) * gu[..., d["F"]:]) @ p["w_down"][l].T
    x = rmsnorm(x, p["rmsfw"], d["eps"])
    head = p["lm_head"] if d["untied"] else p["tok_emb"]
    logits = x @ head[:V].T
    loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))
    return logits, loss


def run_job(argv):
    """One job: argv is DIR B T ... as in the usage."""
    if len(argv) not in (13, 19, 20):
        fail("usage: llama_model_reference.py DIR B T L C NH KVH F V Vp THETA EPS UNTIED "
             "[QKV_BIAS QK_NORM FACTOR LOW HIGH ORIG [HEAD_DIM]] [-- DIR ...]...")
    out = argv[0]
    keys = ["B", "T", "L", "C", "NH", "KVH", "F", "V", "Vp"]
    d = {k: int(v) for k, v in zip(keys, argv[1:10])}
    d["theta"], d["eps"], d["untied"] = float(argv[10]), float(argv[11]), int(argv[12])
    opt = argv[13:19] if len(argv) >= 19 else ["0"] * 6
    head_dim = int(argv[19]) if len(argv) == 20 else 0
    d["qkv_bias"], d["qk_norm"] = int(opt[0]), int(opt[1])
    d["factor"], d["low"], d["high"], d["orig"] = (float(x) for x in opt[2:])
    B, T, L, C, NH, KVH, Fw, V, Vp = (d[k] for k in keys)
    if (not head_dim and C % NH) or NH % KVH or (head_dim or C // NH) % 2:
        fail("bad shape: NH must divide C (without HEAD_DIM), KVH divide NH, and the head "
             "size be even")
    hs = head_dim or C // NH
    d["hs"] = hs
    W = NH * hs + 2 * KVH * hs
    shapes = [("tok_emb", (Vp, C))]
    if d["untied"]:
        shapes.append(("lm_head", (Vp, C)))
    shapes.append(("rms1w", (L, C)))
    if d["qk_norm"]:
        shapes.append(("q_norm", (L, hs)))
    shapes.append(("wqkv", (L, W, C)))
    if d["qkv_bias"]:
        shapes.append(("bqkv", (L, W)))
    shapes += [("wo", (L, C, NH * hs)), ("rms2w", (L, C))]
    if d["qk_norm"]:
        shapes.append(("k_norm", (L, hs)))
    shapes += [("w_gateup", (L, 2 * Fw, C)), ("w_down", (L, C, Fw)), ("rmsfw", (C,))]
    try:
        with open(out + "/params.f32", "rb") as f:
            flat = torch.frombuffer(bytearray(f.read()), dtype=torch.float32).to(torch.float64)
        with open(out + "/tokens.i32", "rb") as f:
            tok = torch.frombuffer(bytearray(f.read()), dtype=torch.int32).to(torch.int64)
    except OSError as e:
        fail(str(e))
    n = sum(torch.Size(s).numel() for _, s in shapes)
    if flat.numel() != n or tok.numel() != 2 * B * T:
        fail("params.f32 holds %d floats (want %d), tokens.i32 %d ints (want %d)"
             % (flat.numel(), n, tok.numel(), 2 * B * T))
    p, at = {}, 0
    for name, s in shapes:
        k = torch.Size(s).numel()
        p[name] = flat[at:at + k].view(s).clone().requires_grad_(True)
        at += k
    inputs, targets = tok[:B * T].view(B, T), tok[B * T:].view(B, T)
    if int(tok.min()) < 0 or int(tok.max()) >= V:
        fail("a token outside [0, V)")
    logits, loss = model_loss(p, inputs, targets, d)
    loss.backward()
    grads = torch.cat([p[name].grad.reshape(-1) for name, _ in shapes])
    logits.detach().numpy().astype("<f8").tofile(out + "/ref_logits.f64")
    loss.detach().reshape(1).numpy().astype("<f8").tofile(out + "/ref_loss.f64")
    grads.numpy().astype("<f8").tofile(out + "/ref_grads.f64")


def main():
    jobs, job = [], []
    for a in sys.argv[1:] + ["--"]:
        if a == "--":
            jobs.append(job)
            job = []
        else:
            job.append(a)
    for job in jobs:  # in order, in one start of torch
        run_job(job)
    print("llama_model_reference: PASS")


if __name__ == "__main__":
    main()
