#!/usr/bin/python3
"""dev/reference/hf_llama_check.py HF_FOLDER VAL.bin B T [HF_FOLDER...] — the loss of a
Hugging Face Llama / Qwen2 / Qwen3 folder on llm.c's first val batch, by Hugging Face's
conventions.

Written for the export's check (tests/e2e/interop/test_hf_llama.c) from Hugging
Face transformers' published model definitions and file formats, sharing no code
with scripts/ or the C model: it reads the folder as from_pretrained does, BY
HUGGING FACE'S TENSOR NAMES (config.json; model.safetensors, or the shards that
model.safetensors.index.json's weight_map names; F32, BF16 or F16), and runs
LlamaForCausalLM's forward in float64:
  - embed_tokens; per layer: input_layernorm (RMSNorm: w * x / sqrt(mean(x^2) +
    rms_norm_eps)); q/k/v_proj (with their biases when stored: Qwen2, or
    attention_bias); Qwen3's q_norm / k_norm over each head's head_dim features;
    rotary embedding by rotate_half (cat(-x2, x1) with x1, x2 the two halves of
    a head) with inverse frequencies 1 / rope_theta^(2i / head_dim), rescaled by
    rope_scaling's "llama3" rule when given; repeat_kv (query head h reads
    key/value head h // (heads / kv_heads)); causal softmax(q k^T / sqrt(head_dim))
    v; o_proj (+ bias if stored); residual; post_attention_layernorm;
    down_proj(silu(gate_proj(x)) * up_proj(x)); residual; model.norm; lm_head
    (embed_tokens when tie_word_embeddings).
  - the batch: llm.c's loader's first val batch, B*T+1 tokens from the start of
    VAL.bin (a 256-int32 header, magic 20240520, version 1: uint16 tokens,
    version 2: uint32), inputs the first B*T (B rows of T), targets the same
    shifted by one.
Prints "hf_llama_check: loss %.17g" (the mean cross-entropy over B*T) and
"hf_llama_check: PASS"; a fault exits 1 with one line. More HF_FOLDERs after
T (the same batch) print their losses in order, on lines of their own, in the
same start of torch (most of a check's time).
"""
import json
import math
import os
import struct
import sys

import numpy as np
import torch

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)


def fail(msg):
    print("hf_llama_check: " + msg)
    sys.exit(1)


def load_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    base, out = 8 + n, {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        lo, hi = t["data_offsets"]
        buf = raw[base + lo:base + hi]
        if t["dtype"] == "F32":
            a = np.frombuffer(buf, "<f4").astype(np.float64)
        elif t["dtype"] == "F16":
            a = np.frombuffer(buf, "<f2").astype(np.float64)
        elif t["dtype"] == "BF16":
            a = (np.frombuffer(buf, "<u2").astype(np.uint32) << 16).view(np.float32)
            a = a.astype(np.float64)
        else:
            fail(f"{path}: {name}: dtype {t['dtype']}")
        out[name] = torch.from_numpy(a.reshape(t["shape"]).copy())
    return out


def load_folder(folder):
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.isfile(index):
        with open(index) as f:
            wm = json.load(f)["weight_map"]
        sd = {}
        for shard in sorted(set(wm.values())):
            sd.update(load_safetensors(os.path.join(folder, shard)))
        if set(sd) != set(wm):
            fail(f"{index}: the shards hold other tensors than the weight_map names")
        return sd
    return load_safetensors(os.path.join(folder, "model.safetensors"))


def rmsnorm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    x1, x2 = x[..., :x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def inv_freq(c, head_dim):
    base = float(c.get("rope_theta", 10000.0))
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    rs = c.get("rope_scaling")
    if not rs:
        return inv
    kind = rs.get("rope_type", rs.get("type"))
    if kind == "default":
        return inv
    if kind != "llama3":
        fail(f"rope_scaling {kind} is not modelled here")
    factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old = rs["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low, old / high
    wavelen = 2 * math.pi / inv
    inv_l = torch.where(wavelen > low_wavelen, inv / factor, inv)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
    medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
    return torch.where(medium, smoothed, inv_l)


def forward(c, sd, ids):
    B, T = ids.shape
    H, NH = c["hidden_size"], c["num_attention_heads"]
    NKV = c.get("num_key_value_heads") or NH
    hd = c.get("head_dim") or H // NH
    eps = c.get("rms_norm_eps", 1e-6)
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq(c, hd))
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    x = sd["model.embed_tokens.weight"][ids]
    mask = torch.full((T, T), float("-inf")).triu(1)

    def lin(name, v):
        y = v @ sd[name + ".weight"].T
        return y + sd[name + ".bias"] if name + ".bias" in sd else y

    for l in range(c["num_hidden_layers"]):
        a = f"model.layers.{l}."
        h = rmsnorm(x, sd[a + "input_layernorm.weight"], eps)
        q = lin(a + "self_attn.q_proj", h).view(B, T, NH, hd)
        k = lin(a + "self_attn.k_proj", h).view(B, T, NKV, hd)
        v = lin(a + "self_attn.v_proj", h).view(B, T, NKV, hd).transpose(1, 2)
        if c["model_type"] == "qwen3":
            q = rmsnorm(q, sd[a + "self_attn.q_norm.weight"], eps)
            k = rmsnorm(k, sd[a + "self_attn.k_norm.weight"], eps)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = NH // NKV
        k = k[:, :, None].expand(B, NKV, rep, T, hd).reshape(B, NH, T, hd)
        v = v[:, :, None].expand(B, NKV, rep, T, hd).reshape(B, NH, T, hd)
        att = torch.softmax(q @ k.transpose(2, 3) / math.sqrt(hd) + mask, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, NH * hd)
        x = x + lin(a + "self_attn.o_proj", y)
        h = rmsnorm(x, sd[a + "post_attention_layernorm.weight"], eps)
        g = lin(a + "mlp.gate_proj", h)
        x = x + lin(a + "mlp.down_proj", torch.nn.functional.silu(g) * lin(a + "mlp.up_proj", h))
    x = rmsnorm(x, sd["model.norm.weight"], eps)
    head = sd.get("lm_head.weight")
    if c.get("tie_word_embeddings", False) or head is None:
        head = sd["model.embed_tokens.weight"]
    return x @ head.T


def loss_of(folder, ids, targets, B, T):
    """The mean cross-entropy of folder's model on (ids, targets)."""
    with open(os.path.join(folder, "config.json")) as f:
        c = json.load(f)
    if c.get("model_type") not in ("llama", "qwen2", "qwen3"):
        fail(f"{folder}: model_type {c.get('model_type')} is not llama, qwen2 or qwen3")
    sd = load_folder(folder)
    logits = forward(c, sd, ids)
    return torch.nn.functional.cross_entropy(logits.reshape(B * T, -1), targets.reshape(-1))


def main():
    if len(sys.argv) < 5:
        fail("usage: hf_llama_check.py HF_FOLDER VAL.bin B T [HF_FOLDER...]")
    val, B, T = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    folders = [sys.argv[1]] + sys.argv[5:]
    with open(val, "rb") as f:
        raw = f.read()
    h = struct.unpack("<256i", raw[:1024])
    if h[0] != 20240520 or h[1] not in (1, 2):
        fail(f"{val}: not an llm.c token shard")
    toks = np.frombuffer(raw, "<u2" if h[1] == 1 else "<u4", offset=1024, count=h[2])
    if len(toks) < B * T + 1:
        fail(f"{val}: {len(toks)} tokens, fewer than B*T+1")
    buf = torch.from_numpy(toks[:B * T + 1].astype(np.int64))
    ids, targets = buf[:-1].view(B, T), buf[1:].view(B, T)
    for folder in folders:  # one start of torch for them all
        print("hf_llama_check: loss %.17g" % loss_of(folder, ids, targets, B, T).item())
    print("hf_llama_check: PASS")


if __name__ == "__main__":
    main()
