#!/usr/bin/python3
"""dev/reference/hf_import_check.py MODEL.bin WORKDIR — scripts/import_hf.py against its inverse.

MODEL.bin is an llm.c fp32 model file (version 3). scripts/export_hf.py (whose
export dev/reference/hf_export_check.py checks against the PyTorch reference) writes
it as a Hugging Face state dict; import_hf.py must give MODEL.bin back byte
for byte, from:
  1. the .pt export (GPT2LMHeadModel keys, config.json beside it);
  2. a .safetensors file in OpenAI's GPT2Model style: no "transformer."
     prefix, no lm_head, the attention-mask buffers (attn.bias,
     attn.masked_bias) present, no config.json (so --heads), written here
     from the format's published layout;
and must refuse, exit 1, one line naming the file and the fault, writing
nothing: an untied lm_head, a NaN, a tensor of the wrong shape, a missing
tensor (each a .safetensors file of the .pt export's tensors, so that its
import starts without torch: from_hf checks either format's tensors alike),
and no head count. Also imports the .pt export with --dtype bf16 into
WORKDIR/b16.bin (tests/e2e/interop/test_export_hf.c compares it with the C
writer's version 5 file). Each run of the scripts is a fork of this process
(dev/reference/script_runs.py), so torch and numpy are imported once.
Prints "hf_import_check: PASS" or exits non-zero.
"""
import json
import os
import struct
import sys

import numpy as np
import torch

# One thread: the tensors here are tiny, and a pool of OMP_NUM_THREADS threads
# spinning beside the suite's other job on two cores made llama_ops_reference's
# selfcheck 3 to 7 times slower (9 to 21 s against 3 s); no result here depends
# on the thread count beyond the last bits, far inside every tolerance checked.
torch.set_num_threads(1)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import script_runs  # noqa: E402

SCRIPTS = script_runs.SCRIPTS
script_runs.preload(torch=True)


class Run:
    def __init__(self, rc, stdout, stderr):
        self.returncode, self.stdout, self.stderr = rc, stdout, stderr


def run(script, *args):
    """`python3 SCRIPT ARGS` as a fork of this process (dev/reference/script_runs.py):
    its exit status and output as the interpreter's, without importing torch
    and numpy again for each of the ten runs."""
    return Run(*script_runs.run(script, args))


def write_safetensors(path, tensors):
    """name -> float32 array, in the published layout (F32, offsets from the
    end of the header)."""
    header, off, blobs = {}, 0, []
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def fail(msg):
    sys.exit(f"hf_import_check: FAIL: {msg}")


def main():
    model, work = sys.argv[1], sys.argv[2]
    with open(model, "rb") as f:
        want = f.read()
    nh = struct.unpack("<256i", want[:1024])[5]
    hf = os.path.join(work, "hf")
    os.makedirs(hf, exist_ok=True)
    pt = os.path.join(hf, "model.pt")
    r = run(os.path.join(SCRIPTS, "export_hf.py"), model, pt)
    if r.returncode:
        fail(f"export_hf: {r.stderr}")
    imp = os.path.join(SCRIPTS, "import_hf.py")
    # 1. the .pt export, heads from config.json
    out = os.path.join(work, "back_pt.bin")
    r = run(imp, pt, out)
    if r.returncode:
        fail(f"import of {pt}: {r.stderr}")
    with open(out, "rb") as f:
        if f.read() != want:
            fail(f"{out} differs from {model}")
    # the .pt export as bf16: WORK/b16.bin, for the caller to compare with its
    # own writer's version 5 file of the same weights (this script has no bf16
    # rounding of its own to hold it against)
    r = run(imp, pt, os.path.join(work, "b16.bin"), "--dtype", "bf16")
    if r.returncode:
        fail(f"--dtype bf16 import of {pt}: {r.stderr}")
    # 2. GPT2Model-style safetensors with buffers, no config.json: --heads
    sd = {k: v.numpy() for k, v in torch.load(pt, weights_only=True).items()}
    plain = {k[len("transformer."):]: v for k, v in sd.items() if k.startswith("transformer.")}
    T = plain["wpe.weight"].shape[0]
    L = sum(1 for k in plain if k.endswith(".ln_1.weight"))
    for l in range(L):
        plain[f"h.{l}.attn.bias"] = np.tril(np.ones((T, T), np.float32)).reshape(1, 1, T, T)
        plain[f"h.{l}.attn.masked_bias"] = np.array(-1e4, np.float32)
    st_dir = os.path.join(work, "st")
    os.makedirs(st_dir, exist_ok=True)
    st = os.path.join(st_dir, "model.safetensors")
    write_safetensors(st, plain)
    r = run(imp, st_dir, os.path.join(work, "x.bin"))
    if r.returncode != 1 or "pass --heads N" not in r.stderr:
        fail(f"no config.json and no --heads: exit {r.returncode}, {r.stderr!r}")
    out = os.path.join(work, "back_st.bin")
    r = run(imp, st_dir, out, "--heads", str(nh))
    if r.returncode:
        fail(f"import of {st}: {r.stderr}")
    with open(out, "rb") as f:
        if f.read() != want:
            fail(f"{out} differs from {model}")
    # refusals: each writes nothing
    cases = []
    d = dict(sd)
    d["lm_head.weight"] = d["lm_head.weight"] + 1.0
    cases.append(("untied", d, "lm_head.weight differs from wte.weight"))
    d = dict(sd)
    d["transformer.h.0.mlp.c_fc.bias"] = d["transformer.h.0.mlp.c_fc.bias"].copy()
    d["transformer.h.0.mlp.c_fc.bias"][3] = np.nan
    cases.append(("nan", d, "transformer.h.0.mlp.c_fc.bias holds 1 NaN or Inf values"))
    d = dict(sd)
    d["transformer.h.0.attn.c_proj.weight"] = d["transformer.h.0.attn.c_proj.weight"][:, :-1]
    cases.append(("shape", d, "transformer.h.0.attn.c_proj.weight has shape"))
    d = dict(sd)
    del d["transformer.ln_f.bias"]
    cases.append(("missing", d, "transformer.ln_f.bias is missing"))
    for name, d, msg in cases:
        path = os.path.join(hf, f"{name}.safetensors")
        write_safetensors(path, d)
        out = os.path.join(work, f"{name}.bin")
        r = run(imp, path, out)
        lines = r.stderr.strip().splitlines()
        if r.returncode != 1 or len(lines) != 1 or msg not in lines[0] or path not in lines[0]:
            fail(f"{name}: exit {r.returncode}, {r.stderr!r} (wanted '{msg}')")
        if os.path.exists(out) or any(f.endswith(".tmp") for f in os.listdir(work)):
            fail(f"{name}: a refused import wrote a file")
    print("hf_import_check: PASS")


if __name__ == "__main__":
    main()
