#!/usr/bin/env python3
"""dev/cuda/check_train_emu.py BIN — the whole trainer on the CUDA backend under
the CPU emulator (BIN: build/train_gpt_emu, `make cuda-emu-train`; dev/cuda/README.md,
"The trainer on the emulator"), for the Llama family, against the same binary's
cpu backend (the fp32 reference). A tiny grouped-query model: L=2, C=64, 4 heads,
2 KV heads, F=96, T=32, B=2, a byte vocabulary (256), untied head; random-byte
shards written here. Rows, each PASS or FAIL (exit 1 on any FAIL):

  - fp32, step 1: the loss and every gradient (--dump-grads) within 1e-4 of the
    cpu's, per tensor max|cuda - cpu| / max|cpu| (the GPU check's tolerance);
    the losses of 3 steps (AdamW between them) within 1e-4 relative;
  - fp32 and bf16: --recompute 1, 2 and selective bitwise recompute 0's (cmp of
    the step-1 gradients and of the model saved after step 3; every step's loss
    and grad norm in the --log lines);
  - bf16, step 1: the loss within 2e-2 of the cpu's (the kernels' bf16
    tolerance), the gradients' error printed;
  - the host tier: recompute 1 with --offload checkpoints,optimizer bitwise
    recompute 0 without (gradients, saved model, losses), fp32 and bf16, in
    both EMU_ORDER orders (the copy stream runs latest, then earliest);
  - decode: --generate through the KV cache (--kv-cache 1) writes the text of
    the uncached forward (--kv-cache 0) and of the cpu backend (fp32);
  - op costs: --recompute auto --op-costs measure times the Llama block's ops
    on the cuda backend, writes a cost file naming the family, and trains with
    recompute 0's gradients;
  - --plan --device cuda, fp32 and bf16: each mode's peak (0, 1, 2, selective)
    equal to the arenas of that mode's run above, to the byte (the emulator's
    device holds nothing else: no baseline);
  - Qwen's options and Llama 3's scaling: 3 losses within 1e-4 of the cpu's,
    recompute 1 bitwise 0;
  - --head-dim 32 with --qk-norm (4 heads of 32 at C 64: attention 128 wide,
    as Qwen3's 16 x 128 at 1024): fp32 3 losses within 1e-4 of the cpu's,
    recompute 1 bitwise 0, --generate with and without the cache the cpu's
    text; bf16 step-1 loss within 2e-2, recompute 1 bitwise 0;
  - every cuda run: the arenas' high-water mark equal to the plan (the
    --log summary's arena_high_water and total);
  - GPT-2 through the same binary: fp32 step-1 gradients within 1e-4 of the
    cpu's (the emulated trainer itself, apart from the family).
About 1 to 2 minutes on one core. Needs python3's standard library only.
"""
import contextlib
import io
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu_check"))
import gpu_check_tools as tools  # noqa: E402

L, C, NH, KVH, F, T, B, V = 2, 64, 4, 2, 96, 32, 2, 256
LLAMA = ["--arch", "llama", "--kv-heads", str(KVH), "--ffn", str(F)]
fails = 0


def row(name, ok, detail):
    global fails
    fails += 0 if ok else 1
    print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}", flush=True)


def shard(path, n, seed):
    r = random.Random(seed)
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", 20240520, 1, n, *([0] * 253)))
        f.write(struct.pack(f"<{n}H", *(r.randrange(32, 127) for _ in range(n))))


class Runner:
    def __init__(self, binary, work):
        self.bin, self.work = binary, work
        shard(f"{work}/train_000.bin", 4000, 1)
        shard(f"{work}/val.bin", 1000, 2)
        self.data = ["--train-data", f"{work}/train_*.bin", "--val-data", f"{work}/val.bin",
                     "--val-every", "0", "--val-batches", "1", "--vocab", str(V), "--lr", "1e-3"]

    def path(self, name):
        return os.path.join(self.work, name)

    def run(self, name, args, env=None, shape=True):
        """./BIN args; 0 or its exit status, its output in WORK/name.out."""
        cmd = [self.bin] + (self.data + ["--layers", str(L), "--channels", str(C), "--heads",
                                         str(NH), "--seq-len", str(T), "--batch", str(B)]
                            if shape else []) + args
        e = dict(os.environ, OMP_NUM_THREADS="1", TRAIN_GPT_CACHE_DIR=self.path("cache"))
        e.update(env or {})
        with open(self.path(name + ".out"), "wb") as out:
            rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT, env=e, timeout=600)
        if rc != 0:
            print(f"  {name}: exit {rc}: {' '.join(cmd)}\n  " +
                  "\n  ".join(open(self.path(name + ".out"), errors="replace").read().splitlines()[-5:]))
        return rc

    def train(self, name, device, dtype, recompute, steps=3, extra=(), env=None, family=LLAMA):
        """A training run with its step-1 gradients, saved model and log."""
        args = family + ["--device", device, "--dtype", dtype, "--recompute", str(recompute),
                         "--steps", str(steps), "--dump-grads", self.path(name + ".grads"),
                         "--save", self.path(name + ".model"), "--log", self.path(name + ".jsonl")]
        if device == "cpu":
            args += ["--threads", "1"]
        return self.run(name, args + list(extra), env) == 0

    def steps(self, name):
        st, summary = tools.read_log(self.path(name + ".jsonl"))
        return [(s["step"], s["loss"], s["grad_norm"]) for s in st], summary

    def same_bits(self, a, b):
        """'' when runs a and b wrote the same gradients, model and steps."""
        diff = []
        for ext in ("grads", "model"):
            if open(self.path(f"{a}.{ext}"), "rb").read() != open(self.path(f"{b}.{ext}"), "rb").read():
                diff.append(ext)
        if self.steps(a)[0] != self.steps(b)[0]:
            diff.append("losses/grad norms")
        return ", ".join(diff)


def arenas_equal_plan(r, name):
    _, summary = r.steps(name)
    m = summary["memory"] if summary else {}
    return m.get("arena_high_water") is not None and m.get("arena_high_water") == m.get("total")


def grads_cmp(r, ref, got, tol, sizes):
    """gpu_check_tools' per-tensor comparison of two --dump-grads files: (rc, its line)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = tools.compare_grads(r.path(ref + ".grads"), r.path(got + ".grads"), sizes, tol)
    return rc, buf.getvalue().strip()


def grads_row(r, name, ref, got, tol, sizes):
    rc, text = grads_cmp(r, ref, got, tol, sizes)
    row(name, rc == 0, text)


def main():
    if len(sys.argv) != 2 or not os.access(sys.argv[1], os.X_OK):
        print("usage: dev/cuda/check_train_emu.py BIN (build/train_gpt_emu)", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="check_train_emu.")
    r = Runner(os.path.abspath(sys.argv[1]), work)
    sizes = tools.llama_param_sizes(L, C, V, NH, KVH, F)
    cuda_runs = []

    # fp32 against the cpu
    if not (r.train("cpu", "cpu", "fp32", 0) and r.train("c32_0", "cuda", "fp32", 0)):
        row("llama fp32 cuda vs cpu", False, "a run failed (output above)")
        return 1
    cuda_runs.append("c32_0")
    grads_row(r, "llama fp32 cuda vs cpu, step 1 (tol 1e-4)", "cpu", "c32_0", 1e-4, sizes)
    ref, got = r.steps("cpu")[0], r.steps("c32_0")[0]
    worst = max(abs(g[1] - c[1]) / abs(c[1]) for c, g in zip(ref, got))
    row("llama fp32 cuda vs cpu, losses of 3 steps (tol 1e-4)", len(ref) == 3 == len(got) and worst <= 1e-4,
        f"{', '.join(f'{s[1]:.6f}' for s in got)} vs {', '.join(f'{s[1]:.6f}' for s in ref)}; "
        f"worst rel {worst:.2e}")

    # recompute modes, bitwise, fp32 and bf16
    for dt in ("fp32", "bf16"):
        base = f"c{dt[-2:]}_0"
        if dt == "bf16":
            if not r.train(base, "cuda", "bf16", 0):
                row("llama bf16 cuda", False, "recompute 0 failed")
                continue
            cuda_runs.append(base)
            c, g = r.steps("cpu")[0][0][1], r.steps(base)[0][0][1]
            row("llama bf16 cuda vs cpu, step-1 loss (tol 2e-2)", abs(g - c) / abs(c) <= 2e-2,
                f"{g:.6f} vs {c:.6f} (rel {abs(g - c) / abs(c):.2e})")
            print(f"info  llama bf16 cuda vs cpu, step-1 grads: {grads_cmp(r, 'cpu', base, 2e-2, sizes)[1]}")
        for m in ("1", "2", "selective"):
            name = f"c{dt[-2:]}_{m}"
            if not r.train(name, "cuda", dt, m):
                row(f"llama {dt} cuda recompute {m} vs 0 bitwise", False, "the run failed")
                continue
            cuda_runs.append(name)
            d = r.same_bits(base, name)
            row(f"llama {dt} cuda recompute {m} vs 0 bitwise", not d,
                f"differ: {d}" if d else "step-1 grads, saved model, 3 steps' losses and grad norms identical")

    # the host tier, both stream orders
    for dt in ("fp32", "bf16"):
        for order in ("fwd", "rev"):
            name = f"off{dt[-2:]}_{order}"
            ok = r.train(name, "cuda", dt, 1, extra=["--offload", "checkpoints,optimizer"],
                         env={"EMU_ORDER": order})
            d = r.same_bits(f"c{dt[-2:]}_0", name) if ok else "the run failed"
            if ok:
                cuda_runs.append(name)
            row(f"llama {dt} cuda r1 + --offload checkpoints,optimizer vs r0 (EMU_ORDER={order})",
                not d, f"differ: {d}" if d else "bitwise: grads, saved model, losses")

    # decode: the cache's text = the uncached forward's = the cpu's
    texts = {}
    for name, dev, kv in (("gen_c1", "cuda", 1), ("gen_c0", "cuda", 0), ("gen_cpu", "cpu", 1)):
        args = LLAMA + ["--device", dev, "--dtype", "fp32", "--init-from", r.path("c32_0.model"),
                        "--generate", "24", "--num-samples", "2", "--seed", "7", "--prompt", "ROMEO:",
                        "--kv-cache", str(kv), "--seq-len", str(T)]
        if r.run(name, args, shape=False) == 0:
            out = open(r.path(name + ".out"), "rb").read()  # bytes: sampled ids are any byte
            texts[name] = out[out.find(b"ROMEO:"):] if b"ROMEO:" in out else None
    ok = len(texts) == 3 and texts["gen_c1"] and len(set(texts.values())) == 1
    row("llama fp32 cuda --generate: kv-cache 1 = kv-cache 0 = cpu", bool(ok),
        "identical samples" if ok else f"differ or failed: {texts}")

    # op costs measured on the cuda backend, auto's schedule from them
    ok = r.train("auto", "cuda", "fp32", "auto", steps=3, extra=["--op-costs", "measure"])
    files = [f for f in os.listdir(r.path("cache"))] if os.path.isdir(r.path("cache")) else []
    named = any(json.load(open(os.path.join(r.path("cache"), f))).get("arch") == "llama"
                for f in files)
    d = r.same_bits("c32_0", "auto") if ok else "the run failed"
    if ok:
        cuda_runs.append("auto")
    row("llama fp32 cuda --recompute auto --op-costs measure", ok and named and not d,
        f"cost file {files} names the family: {named}; vs r0: {d or 'bitwise'}")

    # the planner's table on the cuda backend: each mode's peak is its run's arenas
    for dt in ("fp32", "bf16"):
        rc = r.run("plan_" + dt, LLAMA + ["--plan", "--device", "cuda", "--dtype", dt])
        peaks = {}
        for line in open(r.path(f"plan_{dt}.out"), errors="replace"):
            f = line.split()
            if len(f) > 3 and f[0] in ("0", "1", "2,k=1", "selective") and f[3].isdigit():
                peaks[f[0].split(",")[0]] = int(f[3])
        got, bad = {}, []
        for m in ("0", "1", "2", "selective"):
            run = f"c{dt[-2:]}_{m}"
            _, summary = r.steps(run) if os.path.exists(r.path(run + ".jsonl")) else (None, None)
            got[m] = summary["memory"]["total"] if summary else None
            if got[m] is None or peaks.get(m) != got[m]:
                bad.append(m)
        row(f"llama --plan --device cuda --dtype {dt}: each mode's peak = its run's arenas",
            rc == 0 and not bad, f"exit {rc}; plan {peaks}; runs {got}")

    # Qwen's options (qkv bias, qk-norm) and Llama 3's RoPE scaling (its table past 16
    # positions scaled): the losses of 3 steps against the cpu's, recompute 1 bitwise 0
    qw = ["--qkv-bias", "--qk-norm", "--rope-scaling", "4", "--rope-original-max-pos", "16"]
    if r.train("q_cpu", "cpu", "fp32", 0, extra=qw) and r.train("q_c0", "cuda", "fp32", 0, extra=qw) \
            and r.train("q_c1", "cuda", "fp32", 1, extra=qw):
        cuda_runs += ["q_c0", "q_c1"]
        ref, got = r.steps("q_cpu")[0], r.steps("q_c0")[0]
        worst = max(abs(g[1] - c[1]) / abs(c[1]) for c, g in zip(ref, got))
        row("llama + qkv bias, qk-norm, rope scaling: fp32 cuda vs cpu, 3 losses (tol 1e-4)",
            len(ref) == 3 == len(got) and worst <= 1e-4, f"worst rel {worst:.2e}")
        d = r.same_bits("q_c0", "q_c1")
        row("llama + qkv bias, qk-norm, rope scaling: cuda recompute 1 vs 0 bitwise", not d,
            f"differ: {d}" if d else "grads, saved model, losses identical")
    else:
        row("llama + qkv bias, qk-norm, rope scaling on cuda", False, "a run failed (output above)")

    # a head size that is not C / NH (--head-dim, Qwen3's 128 at 1024 / 16): 4 heads of
    # 32 at C 64 (attention 128 wide), with qk-norm; the kernels take the query width
    hd = ["--head-dim", "32", "--qk-norm"]
    if r.train("h_cpu", "cpu", "fp32", 0, extra=hd) \
            and r.train("h_c0", "cuda", "fp32", 0, extra=hd) \
            and r.train("h_c1", "cuda", "fp32", 1, extra=hd):
        cuda_runs += ["h_c0", "h_c1"]
        ref, got = r.steps("h_cpu")[0], r.steps("h_c0")[0]
        worst = max(abs(g[1] - c[1]) / abs(c[1]) for c, g in zip(ref, got))
        row("llama --head-dim 32 (C 64, 4 heads), qk-norm: fp32 cuda vs cpu, 3 losses (tol 1e-4)",
            len(ref) == 3 == len(got) and worst <= 1e-4, f"worst rel {worst:.2e}")
        d = r.same_bits("h_c0", "h_c1")
        row("llama --head-dim 32: cuda recompute 1 vs 0 bitwise", not d,
            f"differ: {d}" if d else "grads, saved model, losses identical")
        texts = {}
        for name, dev, kv in (("hg_c1", "cuda", 1), ("hg_c0", "cuda", 0), ("hg_cpu", "cpu", 1)):
            args = LLAMA + hd + ["--device", dev, "--dtype", "fp32", "--init-from",
                                 r.path("h_c0.model"), "--generate", "24", "--num-samples", "2",
                                 "--seed", "7", "--prompt", "ROMEO:", "--kv-cache", str(kv),
                                 "--seq-len", str(T)]
            if r.run(name, args, shape=False) == 0:
                out = open(r.path(name + ".out"), "rb").read()
                texts[name] = out[out.find(b"ROMEO:"):] if b"ROMEO:" in out else None
        ok = len(texts) == 3 and texts["hg_c1"] and len(set(texts.values())) == 1
        row("llama --head-dim 32 fp32 cuda --generate: kv-cache 1 = kv-cache 0 = cpu", bool(ok),
            "identical samples" if ok else f"differ or failed: {texts}")
    else:
        row("llama --head-dim 32 on cuda", False, "a run failed (output above)")
    if r.train("h_b0", "cuda", "bf16", 0, extra=hd) \
            and r.train("h_b1", "cuda", "bf16", 1, extra=hd):
        cuda_runs += ["h_b0", "h_b1"]
        ref, got = r.steps("h_cpu")[0], r.steps("h_b0")[0]
        rel = abs(got[0][1] - ref[0][1]) / abs(ref[0][1]) if ref and got else 1.0
        row("llama --head-dim 32 bf16 cuda vs cpu, step-1 loss (tol 2e-2)", rel <= 2e-2,
            f"rel {rel:.2e}")
        d = r.same_bits("h_b0", "h_b1")
        row("llama --head-dim 32 bf16 cuda recompute 1 vs 0 bitwise", not d,
            f"differ: {d}" if d else "grads, saved model, losses identical")
    else:
        row("llama --head-dim 32 bf16 on cuda", False, "a run failed (output above)")

    bad = [n for n in cuda_runs if not arenas_equal_plan(r, n)]
    row(f"arenas' high-water mark = plan ({len(cuda_runs)} cuda runs)", not bad,
        f"differ: {bad}" if bad else "equal in every run")

    # GPT-2 through the same emulated trainer
    if r.train("g_cpu", "cpu", "fp32", 0, steps=1, family=[]) and \
            r.train("g_c32", "cuda", "fp32", 0, steps=1, family=[]):
        grads_row(r, "gpt2 fp32 cuda vs cpu, step 1 (tol 1e-4)", "g_cpu", "g_c32", 1e-4,
                  tools.param_sizes(L, C, V, T))
    else:
        row("gpt2 fp32 cuda vs cpu", False, "a run failed")

    print(f"check_train_emu: {'all PASS' if fails == 0 else f'{fails} FAIL'} (runs in {work})")
    if fails == 0:
        subprocess.call(["rm", "-rf", work])
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
