#!/usr/bin/python3
"""dev/reference/hf_export_check.py MODEL.bin WORKDIR [MODEL.bin WORKDIR]... — scripts/export_hf.py
against the PyTorch reference.

1. The repository's reference (dev/reference/gpt2_reference.py: llm.c's names and
   layouts, y = x W^T + b) computes logits from the model file directly.
2. scripts/export_hf.py writes the Hugging Face tensors: as one .pt file,
   one .safetensors file, and its default, a folder (model.safetensors,
   read here with the safetensors package when installed, else with
   import_hf's reader of the published layout; the tied lm_head, left out
   of the folder as save_pretrained leaves it out, is wte).
3. A forward pass written here in Hugging Face GPT-2's own conventions
   (Conv1D: y = x @ W + b with W stored (in, out); c_attn's output split
   into q, k, v; tied lm_head over the V real rows) runs on the loaded dict.
Both in float64 on the same tokens; the logits must agree within 1e-9
relative to their largest magnitude (the same float32 values feed both, so
only summation order differs). Prints "hf_export_check: MODEL.bin: PASS" for
each model that passes, else "hf_export_check: MODEL.bin: FAIL: ..." with the
worst difference; then "hf_export_check: PASS", or exits 1 when any failed.
More pairs are checked in the same start of torch (most of a check's time).
"""
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import gpt2_reference as ref  # noqa: E402
import export_hf  # noqa: E402
import import_hf  # noqa: E402
import script_runs  # noqa: E402

# One thread: the tensors here are tiny, and a pool of OMP_NUM_THREADS threads
# spinning beside the suite's other job on two cores made llama_ops_reference's
# selfcheck 3 to 7 times slower (9 to 21 s against 3 s); no result here depends
# on the thread count beyond the last bits, far inside every tolerance checked.
torch.set_num_threads(1)


def hf_forward(sd, n_layer, n_head, tokens):
    """Logits (B, T, V) from an HF GPT-2 state dict, float64."""
    sd = {k: v.to(torch.float64) for k, v in sd.items()}

    def ln(x, pre):
        m = x.mean(-1, keepdim=True)
        v = ((x - m) ** 2).mean(-1, keepdim=True)
        return (x - m) / torch.sqrt(v + 1e-5) * sd[pre + ".weight"] + sd[pre + ".bias"]

    def conv1d(x, pre):  # HF's Conv1D: weight (in, out)
        return x @ sd[pre + ".weight"] + sd[pre + ".bias"]

    B, T = tokens.shape
    x = sd["transformer.wte.weight"][tokens] + sd["transformer.wpe.weight"][:T]
    C = x.shape[-1]
    hs = C // n_head
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    for l in range(n_layer):
        p = f"transformer.h.{l}"
        q, k, v = conv1d(ln(x, p + ".ln_1"), p + ".attn.c_attn").split(C, dim=-1)
        q, k, v = (t.view(B, T, n_head, hs).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1) / math.sqrt(hs)).masked_fill(mask, float("-inf"))
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
        x = x + conv1d(y, p + ".attn.c_proj")
        h = conv1d(ln(x, p + ".ln_2"), p + ".mlp.c_fc")
        h = 0.5 * h * (1 + torch.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h ** 3)))
        x = x + conv1d(h, p + ".mlp.c_proj")
    x = ln(x, "transformer.ln_f")
    return x @ sd["lm_head.weight"].T


class Failed(Exception):
    pass


def check(model, work):
    """Model's three exports under work against the reference; raises Failed."""
    cfg, p = export_hf.read_model(model)
    gen = torch.Generator().manual_seed(5)
    B, T = 2, min(cfg["maxT"], 7)
    tokens = torch.randint(0, cfg["V"], (B, T), generator=gen)
    rp = {k: torch.from_numpy(v).to(torch.float64) for k, v in p.items()}
    want, _ = ref.forward(rp, cfg, tokens, tokens)
    outs = [os.path.join(work, "hf.pt"), os.path.join(work, "hf.safetensors"),
            os.path.join(work, "hf_folder")]
    worst = 0.0
    for out in outs:
        # a fork of this process (dev/reference/script_runs.py): torch is imported once
        rc, _, err = script_runs.run(os.path.join(script_runs.SCRIPTS, "export_hf.py"),
                                     [model, out])
        if rc:
            raise Failed(f"export_hf.py {model} {out}: exit {rc}: {err}")
        if out.endswith(".pt"):
            sd = torch.load(out)
        else:
            path = out if out.endswith(".safetensors") else os.path.join(out, "model.safetensors")
            try:
                from safetensors.torch import load_file
                sd = load_file(path)
            except ImportError:
                sd = {k: torch.from_numpy(v) for k, v in import_hf.read_safetensors(path).items()}
        sd.setdefault("lm_head.weight", sd["transformer.wte.weight"])
        got = hf_forward(sd, cfg["L"], cfg["NH"], tokens)
        if got.shape != want.shape:
            raise Failed(f"{out}: logits shape {tuple(got.shape)} != {tuple(want.shape)}")
        err = ((got - want).abs().max() / want.abs().max()).item()
        worst = max(worst, err)
        print(f"hf_export_check: {os.path.basename(out)}: logits max rel diff {err:.3e}")
    if worst > 1e-9:
        raise Failed(f"logits differ by {worst:.3e} (tol 1e-9)")


def main():
    args = sys.argv[1:]
    if not args or len(args) % 2:
        sys.exit("usage: hf_export_check.py MODEL.bin WORKDIR [MODEL.bin WORKDIR]...")
    failed = 0
    for model, work in zip(args[0::2], args[1::2]):  # one start of torch for them all
        try:
            check(model, work)
            print(f"hf_export_check: {model}: PASS")
        except Failed as e:
            print(f"hf_export_check: {model}: FAIL: {e}")
            failed += 1
    if failed:
        sys.exit(f"hf_export_check: FAIL: {failed} of {len(args) // 2} models")
    print("hf_export_check: PASS")


if __name__ == "__main__":
    main()
