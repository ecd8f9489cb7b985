#!/usr/bin/python3
"""dev/reference/hf_transformers_check.py MODEL.bin WORKDIR — export_hf.py's folder loaded by transformers itself.

scripts/export_hf.py writes its default output, a folder, under WORKDIR;
GPT2LMHeadModel.from_pretrained loads it and its logits (float32, eval
mode) are compared with the repository's reference
(dev/reference/gpt2_reference.py, float64) on the model file: within 1e-4
relative to their largest magnitude (float32 sums over C and 4C terms).
When the folder holds the tokenizer files, GPT2TokenizerFast loads them and
must encode "Hello world" as GPT-2 does: [15496, 995].

Prints "hf_transformers_check: SKIP: ..." and exits 0 where transformers is
not installed (Debian has no package of it); "hf_transformers_check: PASS"
otherwise, or exits 1 with the worst difference.
"""
import importlib.util
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    model, work = sys.argv[1], sys.argv[2]
    # transformers first: where it is not installed (Debian has no package of
    # it) the check skips without importing torch (2 to 3 CPU-s a start on
    # the 2-core build VM)
    if importlib.util.find_spec("transformers") is None:
        print("hf_transformers_check: SKIP: transformers is not installed")
        return
    import torch
    # One thread: the tensors here are tiny, and a pool of OMP_NUM_THREADS threads
    # spinning beside the suite's other job on two cores made llama_ops_reference's
    # selfcheck 3 to 7 times slower (9 to 21 s against 3 s); no result here depends
    # on the thread count beyond the last bits, far inside every tolerance checked.
    torch.set_num_threads(1)
    sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
    import gpt2_reference as ref
    import export_hf
    try:
        import transformers
    except ImportError:
        print("hf_transformers_check: SKIP: transformers is not installed")
        return
    out = os.path.join(work, "hf_transformers")
    subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "scripts", "export_hf.py"),
                    model, out], check=True, stdout=subprocess.DEVNULL)
    cfg, p = export_hf.read_model(model)
    gen = torch.Generator().manual_seed(5)
    B, T = 2, min(cfg["maxT"], 7)
    tokens = torch.randint(0, cfg["V"], (B, T), generator=gen)
    rp = {k: torch.from_numpy(v).to(torch.float64) for k, v in p.items()}
    want, _ = ref.forward(rp, cfg, tokens, tokens)
    hf = transformers.GPT2LMHeadModel.from_pretrained(out).eval()
    with torch.no_grad():
        got = hf(tokens).logits.to(torch.float64)
    if got.shape != want.shape:
        sys.exit(f"hf_transformers_check: FAIL: logits shape {tuple(got.shape)} != "
                 f"{tuple(want.shape)}")
    err = ((got - want).abs().max() / want.abs().max()).item()
    print(f"hf_transformers_check: from_pretrained logits max rel diff {err:.3e}")
    if err > 1e-4:
        sys.exit(f"hf_transformers_check: FAIL: logits differ by {err:.3e} (tol 1e-4)")
    if os.path.isfile(os.path.join(out, "vocab.json")):
        ids = transformers.GPT2TokenizerFast.from_pretrained(out)("Hello world")["input_ids"]
        if ids != [15496, 995]:
            sys.exit(f"hf_transformers_check: FAIL: the tokenizer gives {ids} for 'Hello world'")
    print("hf_transformers_check: PASS")


if __name__ == "__main__":
    main()
