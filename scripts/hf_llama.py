"""scripts/hf_llama.py — the Llama family (Llama, Qwen2, Qwen3) between llm.c's
model file and Hugging Face's names; used by export_hf.py and import_hf.py.

Owns: the Llama family's model-file layout (interop/model_file.h's extension
words [16..27] and [30], then model/config.h's Llama slots), the mapping to and from
Hugging Face's LlamaForCausalLM / Qwen2ForCausalLM / Qwen3ForCausalLM tensor
names, their config.json, and the refusals of what the C model cannot run.

Slots (model/config.h), per layer stacked over L, hs the head size (header
word 30, config.json's head_dim; 0 there: C / NH), Q = NH hs, W = Q + 2 NKV hs:
  tok_emb (Vp, C)     model.embed_tokens.weight (V, C): the padded rows dropped
  lm_head (Vp, C)     lm_head.weight (V, C), untied only
  rms1w (L, C)        model.layers.l.input_layernorm.weight
  q_norm (L, hs)      model.layers.l.self_attn.q_norm.weight (Qwen3)
  wqkv (L, W, C)      q_proj (Q rows), k_proj (NKV hs), v_proj (NKV hs) .weight
  bqkv (L, W)         q_proj, k_proj, v_proj .bias (Qwen2)
  wo (L, C, Q)        self_attn.o_proj.weight
  rms2w (L, C)        post_attention_layernorm.weight
  k_norm (L, hs)      self_attn.k_norm.weight (Qwen3)
  w_gateup (L, 2F, C) mlp.gate_proj (F rows) then mlp.up_proj (F rows)
  w_down (L, C, F)    mlp.down_proj.weight
  rmsfw (C)           model.norm.weight
No row is permuted: the kernels rotate pair (x_i, x_{i+hs/2}) of each head
(kernels/cpu/rope.c), which is Hugging Face's rotate_half on q and k as its
checkpoints store them (dev/reference/hf_llama_check.py checks a loss).
"""
import json
import struct
import sys

import numpy as np

ARCH_WORD = 16
HEAD_DIM_WORD = 30  # the head size when not C / NH (0: C / NH)
FAMILIES = {  # model_type: (architecture, qkv bias, qk norm)
    "llama": ("LlamaForCausalLM", False, False),
    "qwen2": ("Qwen2ForCausalLM", True, False),
    "qwen3": ("Qwen3ForCausalLM", False, True),
}
DEFAULT_THETA, DEFAULT_EPS = 10000.0, 1e-5
# Header words a model file may leave 0 ("the default"); config.json carries
# the resolved value and lists these under llmc_defaults, so that the import
# writes 0 again and the file comes back byte for byte.
DEFAULTABLE = ("num_key_value_heads", "intermediate_size", "rope_theta", "rms_norm_eps")


def f32(x):
    """x rounded to float32, as the shortest decimal that reads back to the
    same float32 (1e-05, not 9.999999747378752e-06): config.json's form."""
    return float(np.format_float_positional(np.float32(x), unique=True, trim="-")) \
        if x else 0.0


def bits_f32(word):
    return struct.unpack("<f", struct.pack("<i", word))[0]


def default_ffn(C):
    f = (8 * C + 2) // 3
    return (f + 255) // 256 * 256


def header_cfg(h):
    """cfg dict from a Llama model file's 256 header words."""
    cfg = dict(maxT=h[2], V=h[3], L=h[4], NH=h[5], C=h[6], Vp=h[7], arch=1)
    w = h[ARCH_WORD:ARCH_WORD + 12]
    cfg.update(raw_kv=w[1], raw_ffn=w[2], untied=w[3], raw_theta=bits_f32(w[4]),
               raw_eps=bits_f32(w[5]), qkv_bias=w[6], qk_norm=w[7], factor=bits_f32(w[8]),
               low=bits_f32(w[9]), high=bits_f32(w[10]), orig=w[11])
    cfg["NKV"] = w[1] if w[1] > 0 else cfg["NH"]
    cfg["F"] = w[2] if w[2] > 0 else default_ffn(cfg["C"])
    cfg["theta"] = cfg["raw_theta"] if cfg["raw_theta"] > 0 else DEFAULT_THETA
    cfg["eps"] = cfg["raw_eps"] if cfg["raw_eps"] > 0 else DEFAULT_EPS
    cfg["raw_hd"] = h[HEAD_DIM_WORD]
    cfg["hs"] = h[HEAD_DIM_WORD] if h[HEAD_DIM_WORD] > 0 else cfg["C"] // cfg["NH"]
    return cfg


def header_words(cfg, version):
    """The 256 int32 header of cfg (the inverse of header_cfg)."""
    h = np.zeros(256, dtype="<i4")
    h[:8] = [20240326, version, cfg["maxT"], cfg["V"], cfg["L"], cfg["NH"], cfg["C"], cfg["Vp"]]
    fbits = lambda x: struct.unpack("<i", struct.pack("<f", x))[0]  # noqa: E731
    h[ARCH_WORD:ARCH_WORD + 12] = [
        1, cfg["raw_kv"], cfg["raw_ffn"], cfg["untied"], fbits(cfg["raw_theta"]),
        fbits(cfg["raw_eps"]), cfg["qkv_bias"], cfg["qk_norm"], fbits(cfg["factor"]),
        fbits(cfg["low"]), fbits(cfg["high"]), cfg["orig"]]
    h[HEAD_DIM_WORD] = cfg["raw_hd"]
    return h


def slots(cfg):
    """[(name, shape)] of the parameters in the file's order (empty slots left out)."""
    Vp, C, L, hs, F = cfg["Vp"], cfg["C"], cfg["L"], cfg["hs"], cfg["F"]
    Q = cfg["NH"] * hs
    W = Q + 2 * cfg["NKV"] * hs
    s = [("tok_emb", (Vp, C))]
    if cfg["untied"]:
        s.append(("lm_head", (Vp, C)))
    s.append(("rms1w", (L, C)))
    if cfg["qk_norm"]:
        s.append(("q_norm", (L, hs)))
    s.append(("wqkv", (L, W, C)))
    if cfg["qkv_bias"]:
        s.append(("bqkv", (L, W)))
    s += [("wo", (L, C, Q)), ("rms2w", (L, C))]
    if cfg["qk_norm"]:
        s.append(("k_norm", (L, hs)))
    s += [("w_gateup", (L, 2 * F, C)), ("w_down", (L, C, F)), ("rmsfw", (C,))]
    return s


def family(cfg):
    """(model_type, architecture) for cfg, or a reason no family fits."""
    if cfg["qkv_bias"] and cfg["qk_norm"]:
        # Qwen3 with attention_bias also biases o_proj, which this model lacks
        return None, "qkv bias together with qk-norm fits none of Llama, Qwen2, Qwen3"
    if cfg["qkv_bias"]:
        return "qwen2", None
    return ("qwen3" if cfg["qk_norm"] else "llama"), None


def to_hf(cfg, p):
    """{Hugging Face name: float32 array}, in the order the files list them."""
    V, C, L, hs, F, NKV = cfg["V"], cfg["C"], cfg["L"], cfg["hs"], cfg["F"], cfg["NKV"]
    K, Q = NKV * hs, cfg["NH"] * hs
    sd = {"model.embed_tokens.weight": p["tok_emb"][:V]}
    for l in range(L):
        a = f"model.layers.{l}."
        wqkv = p["wqkv"][l]
        sd[a + "self_attn.q_proj.weight"] = wqkv[:Q]
        sd[a + "self_attn.k_proj.weight"] = wqkv[Q:Q + K]
        sd[a + "self_attn.v_proj.weight"] = wqkv[Q + K:]
        if cfg["qkv_bias"]:
            b = p["bqkv"][l]
            sd[a + "self_attn.q_proj.bias"] = b[:Q]
            sd[a + "self_attn.k_proj.bias"] = b[Q:Q + K]
            sd[a + "self_attn.v_proj.bias"] = b[Q + K:]
        sd[a + "self_attn.o_proj.weight"] = p["wo"][l]
        if cfg["qk_norm"]:
            sd[a + "self_attn.q_norm.weight"] = p["q_norm"][l]
            sd[a + "self_attn.k_norm.weight"] = p["k_norm"][l]
        sd[a + "mlp.gate_proj.weight"] = p["w_gateup"][l][:F]
        sd[a + "mlp.up_proj.weight"] = p["w_gateup"][l][F:]
        sd[a + "mlp.down_proj.weight"] = p["w_down"][l]
        sd[a + "input_layernorm.weight"] = p["rms1w"][l]
        sd[a + "post_attention_layernorm.weight"] = p["rms2w"][l]
    sd["model.norm.weight"] = p["rmsfw"]
    if cfg["untied"]:
        sd["lm_head.weight"] = p["lm_head"][:V]
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in sd.items()}


def hf_config(cfg, dtype, eot=None):
    """config.json of cfg: the fields LlamaConfig / Qwen2Config / Qwen3Config read."""
    model_type, why = family(cfg)
    if model_type is None:
        sys.exit(f"export_hf: {why}; not exported")
    c = {"architectures": [FAMILIES[model_type][0]], "model_type": model_type,
         "vocab_size": cfg["V"], "hidden_size": cfg["C"], "intermediate_size": cfg["F"],
         "num_hidden_layers": cfg["L"], "num_attention_heads": cfg["NH"],
         "num_key_value_heads": cfg["NKV"], "head_dim": cfg["hs"], "hidden_act": "silu",
         "max_position_embeddings": cfg["maxT"], "rms_norm_eps": f32(cfg["eps"]),
         "rope_theta": f32(cfg["theta"]), "rope_scaling": None,
         "tie_word_embeddings": not cfg["untied"], "attention_dropout": 0.0,
         "torch_dtype": "bfloat16" if dtype == "bf16" else "float32", "use_cache": True}
    if model_type == "llama":
        c.update(attention_bias=False, mlp_bias=False, pretraining_tp=1)
    else:
        c.update(use_sliding_window=False, sliding_window=None, max_window_layers=cfg["L"])
    if model_type == "qwen3":
        c["attention_bias"] = False
    if cfg["factor"] > 0:
        c["rope_scaling"] = {"rope_type": "llama3", "factor": f32(cfg["factor"]),
                             "low_freq_factor": f32(cfg["low"]),
                             "high_freq_factor": f32(cfg["high"]),
                             "original_max_position_embeddings": cfg["orig"]}
    if eot is not None:
        c["bos_token_id"] = c["eos_token_id"] = eot
    raw = {"num_key_value_heads": cfg["raw_kv"], "intermediate_size": cfg["raw_ffn"],
           "rope_theta": cfg["raw_theta"], "rms_norm_eps": cfg["raw_eps"]}
    zero = [k for k in DEFAULTABLE if raw[k] == 0]
    if zero:
        c["llmc_defaults"] = zero
    return c


# --- import ------------------------------------------------------------------

# Keys read below, and keys that change nothing the model computes (token
# ids, caching, the initialiser, dropout at 0, versions). Any other key is
# refused by name (--allow-key KEY takes one the user knows to be harmless).
USED = {"architectures", "model_type", "vocab_size", "hidden_size", "intermediate_size",
        "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
        "hidden_act", "max_position_embeddings", "rms_norm_eps", "rope_theta", "rope_scaling",
        "tie_word_embeddings", "attention_bias", "mlp_bias", "use_sliding_window",
        "sliding_window", "max_window_layers", "layer_types", "attention_dropout",
        "llmc_defaults", "pretraining_tp"}
INERT = {"bos_token_id", "eos_token_id", "pad_token_id", "torch_dtype", "dtype", "use_cache",
         "initializer_range", "transformers_version", "_name_or_path", "use_bfloat16",
         "tokenizer_class", "_attn_implementation_autoset"}


def die(msg):
    sys.exit(f"import_hf: {msg}")


def check_config(c, where, allow):
    """The family and the fields of config.json c; refuses by name what the
    C model does not compute (one line, exit 1)."""
    mt = c.get("model_type")
    if mt not in FAMILIES:
        die(f"{where}: model_type {mt!r} is not one of gpt2, {', '.join(FAMILIES)}")
    for k in c:
        if k not in USED and k not in INERT and k not in allow:
            die(f"{where}: key {k!r} is not understood by this importer (nothing is written); "
                f"if it does not change the model's outputs, pass --allow-key {k}")
    arch = c.get("architectures") or [FAMILIES[mt][0]]
    if arch != [FAMILIES[mt][0]]:
        die(f"{where}: architectures {arch} is not [{FAMILIES[mt][0]!r}] (model_type {mt})")
    act = c.get("hidden_act", "silu")
    if act != "silu":
        die(f"{where}: hidden_act {act!r} is not supported (the MLP is SwiGLU: silu only)")
    if c.get("mlp_bias"):
        die(f"{where}: mlp_bias true is not supported (the MLP has no biases)")
    if c.get("use_sliding_window"):
        die(f"{where}: use_sliding_window true is not supported (attention is full causal)")
    lt = c.get("layer_types")
    if lt is not None and any(t != "full_attention" for t in lt):
        die(f"{where}: layer_types {sorted(set(lt))} holds sliding attention; only "
            "full_attention is supported")
    if c.get("attention_dropout", 0.0) not in (0, 0.0):
        die(f"{where}: attention_dropout {c['attention_dropout']} is not supported (0 only)")
    rs = c.get("rope_scaling")
    if rs is not None:
        kind = rs.get("rope_type", rs.get("type"))
        if kind not in ("llama3", "default"):
            die(f"{where}: rope_scaling type {kind!r} is not supported (llama3 only)")
        if kind == "llama3":
            for k in ("factor", "low_freq_factor", "high_freq_factor",
                      "original_max_position_embeddings"):
                if not isinstance(rs.get(k), (int, float)):
                    die(f"{where}: rope_scaling (llama3) has no number {k!r}")
            extra = set(rs) - {"rope_type", "type", "factor", "low_freq_factor",
                               "high_freq_factor", "original_max_position_embeddings"}
            if extra:
                die(f"{where}: rope_scaling key(s) {sorted(extra)} not supported")
    for k in ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
              "intermediate_size"):
        if not isinstance(c.get(k), int) or c[k] < 1:
            die(f"{where}: no positive integer {k!r}")
    C, NH = c["hidden_size"], c["num_attention_heads"]
    hd = c.get("head_dim")
    if hd is not None and (not isinstance(hd, int) or isinstance(hd, bool) or hd < 1):
        die(f"{where}: head_dim {hd!r} is not a positive integer")
    if hd is not None and hd % 2:
        die(f"{where}: head_dim {hd} is odd (RoPE turns pairs of a head's features)")
    if C % NH and hd is None:
        die(f"{where}: num_attention_heads {NH} does not divide hidden_size {C} and no "
            "head_dim is given")
    NKV = c.get("num_key_value_heads") or NH
    if NH % NKV:
        die(f"{where}: num_key_value_heads {NKV} does not divide num_attention_heads {NH}")
    return mt


def config_to_cfg(c, mt, V, maxT):
    """cfg dict (header_cfg's keys) from a checked config.json."""
    defaults = set(c.get("llmc_defaults") or [])
    C, NH = c["hidden_size"], c["num_attention_heads"]
    hd = c.get("head_dim")
    # the default head size (C / NH) is written as 0, as the trainer writes it
    raw_hd = 0 if hd is None or (C % NH == 0 and hd == C // NH) else hd
    NKV = c.get("num_key_value_heads") or NH
    F = c["intermediate_size"]
    theta = f32(c.get("rope_theta", DEFAULT_THETA))
    eps = f32(c.get("rms_norm_eps", 1e-6))
    cfg = dict(maxT=maxT, V=V, L=c["num_hidden_layers"], NH=NH, C=C, Vp=(V + 127) // 128 * 128,
               arch=1, NKV=NKV, F=F, theta=theta, eps=eps, hs=raw_hd or C // NH, raw_hd=raw_hd,
               raw_kv=0 if "num_key_value_heads" in defaults and NKV == NH else NKV,
               raw_ffn=0 if "intermediate_size" in defaults and F == default_ffn(C) else F,
               raw_theta=0.0 if "rope_theta" in defaults and theta == DEFAULT_THETA else theta,
               raw_eps=0.0 if "rms_norm_eps" in defaults and eps == f32(DEFAULT_EPS) else eps,
               qkv_bias=int(FAMILIES[mt][1]), qk_norm=int(FAMILIES[mt][2]),
               factor=0.0, low=0.0, high=0.0, orig=0)
    rs = c.get("rope_scaling")
    if rs is not None and rs.get("rope_type", rs.get("type")) == "llama3":
        cfg.update(factor=f32(rs["factor"]), low=f32(rs["low_freq_factor"]),
                   high=f32(rs["high_freq_factor"]),
                   orig=int(rs["original_max_position_embeddings"]))
        if not (cfg["factor"] > 0 and 0 < cfg["low"] < cfg["high"] and cfg["orig"] >= 1):
            die("rope_scaling (llama3) needs factor > 0, 0 < low_freq_factor < "
                "high_freq_factor and original_max_position_embeddings >= 1")
    return cfg


def from_hf(c, sd, where, maxT=None, allow=()):
    """(cfg, {slot: float32 array}) from config.json c and a state dict sd
    (Hugging Face names, float32 arrays)."""
    mt = check_config(c, where, set(allow))
    emb = sd.get("model.embed_tokens.weight")
    if emb is None:
        die(f"{where}: model.embed_tokens.weight is missing")
    V = emb.shape[0]
    if V != c["vocab_size"]:
        die(f"{where}: model.embed_tokens.weight has {V} rows, config.json's vocab_size is "
            f"{c['vocab_size']}")
    maxT = maxT or c.get("max_position_embeddings")
    if not isinstance(maxT, int) or maxT < 1:
        die(f"{where}: no positive integer max_position_embeddings; pass --max-seq-len N")
    cfg = config_to_cfg(c, mt, V, maxT)
    C, L, hs, F, K = cfg["C"], cfg["L"], cfg["hs"], cfg["F"], cfg["NKV"] * cfg["hs"]
    Q = cfg["NH"] * hs
    used = set()

    def get(name, shape):
        a = sd.get(name)
        if a is None:
            die(f"{where}: {name} is missing")
        if tuple(a.shape) != shape:
            die(f"{where}: {name} has shape {tuple(a.shape)}, expected {shape}")
        if not np.isfinite(a).all():
            die(f"{where}: {name} holds {int((~np.isfinite(a)).sum())} NaN or Inf values")
        used.add(name)
        return a

    pad = lambda a: np.concatenate([a, np.zeros((cfg["Vp"] - V, C), np.float32)])  # noqa: E731
    p = {"tok_emb": pad(get("model.embed_tokens.weight", (V, C)))}
    tied = c.get("tie_word_embeddings", False)
    if "lm_head.weight" in sd:
        head = get("lm_head.weight", (V, C))
        if tied and not np.array_equal(head, emb):
            die(f"{where}: lm_head.weight differs from model.embed_tokens.weight though "
                "config.json says tie_word_embeddings")
        tied = tied or False
    elif not tied:
        die(f"{where}: lm_head.weight is missing and tie_word_embeddings is false")
    cfg["untied"] = 0 if tied else 1
    if cfg["untied"]:
        p["lm_head"] = pad(head)
    bias = cfg["qkv_bias"] or c.get("attention_bias", False)
    layers = {k: [] for k in ("rms1w", "q_norm", "wqkv", "bqkv", "wo", "rms2w", "k_norm",
                              "w_gateup", "w_down")}
    for l in range(L):
        a = f"model.layers.{l}."
        s = a + "self_attn."
        layers["rms1w"].append(get(a + "input_layernorm.weight", (C,)))
        layers["rms2w"].append(get(a + "post_attention_layernorm.weight", (C,)))
        layers["wqkv"].append(np.concatenate([get(s + "q_proj.weight", (Q, C)),
                                              get(s + "k_proj.weight", (K, C)),
                                              get(s + "v_proj.weight", (K, C))]))
        if bias:
            layers["bqkv"].append(np.concatenate([get(s + "q_proj.bias", (Q,)),
                                                  get(s + "k_proj.bias", (K,)),
                                                  get(s + "v_proj.bias", (K,))]))
        layers["wo"].append(get(s + "o_proj.weight", (C, Q)))
        if s + "o_proj.bias" in sd:
            ob = get(s + "o_proj.bias", (C,))
            if ob.any():
                die(f"{where}: {s}o_proj.bias is not zero (attention_bias biases o_proj too; "
                    "this model has no o_proj bias)")
        if cfg["qk_norm"]:
            layers["q_norm"].append(get(s + "q_norm.weight", (hs,)))
            layers["k_norm"].append(get(s + "k_norm.weight", (hs,)))
        layers["w_gateup"].append(np.concatenate([get(a + "mlp.gate_proj.weight", (F, C)),
                                                  get(a + "mlp.up_proj.weight", (F, C))]))
        layers["w_down"].append(get(a + "mlp.down_proj.weight", (C, F)))
    cfg["qkv_bias"] = int(bool(bias))
    for k, v in layers.items():
        if v:
            p[k] = np.stack(v)
    p["rmsfw"] = get("model.norm.weight", (C,))
    left = sorted(k for k in sd if k not in used and not k.endswith("rotary_emb.inv_freq")
                  and not k.endswith("o_proj.bias"))
    if left:
        die(f"{where}: {len(left)} tensor(s) this model has no place for, first {left[0]}")
    return cfg, p


def flat_params(cfg, p):
    """The model file's parameters, one float32 vector in slot order."""
    out = []
    for name, shape in slots(cfg):
        a = p[name]
        if tuple(a.shape) != shape:
            die(f"internal: {name} has shape {a.shape}, expected {shape}")
        out.append(a.reshape(-1))
    return np.concatenate(out).astype(np.float32)


def shape_line(cfg):
    return (f"llama L={cfg['L']} NH={cfg['NH']} NKV={cfg['NKV']} C={cfg['C']} F={cfg['F']} "
            f"V={cfg['V']} maxT={cfg['maxT']}" +
            (f" head-dim {cfg['hs']}" if cfg["raw_hd"] else "") +
            (" untied" if cfg["untied"] else " tied") +
            (" qkv-bias" if cfg["qkv_bias"] else "") + (" qk-norm" if cfg["qk_norm"] else "") +
            (f" rope-scaling {cfg['factor']:g}" if cfg["factor"] > 0 else ""))


def dumps(c):
    return json.dumps(c, indent=2)
