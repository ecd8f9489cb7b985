#!/usr/bin/env python3
"""dev/gpu_check/gpu_check_rehearsal.py — dev/gpu_check/gpu_check.sh's CPU rehearsal, checked.

`make gpu-check-rehearsal` (CI runs it after cuda-emu-check). Runs
GPU_CHECK_REHEARSAL=1 dev/gpu_check/gpu_check.sh OUT with every section (or
GPU_CHECK_SECTIONS) on the cpu backend at tiny shapes, then asserts:

  - exit 0 and "gpu_check: all PASS" last;
  - summary.txt holds exactly the rows the GPU run prints for those sections
    (the names below, written from the script's GPU path, with the GPU's
    shapes in them; B124 and the auto budgets vary): the rows that need
    CUDA are SKIP "(rehearsal)", every other row PASS or info, no FAIL, no
    row twice, none unexpected;
  - every train_gpt run in train.log exited 0;
  - OUT holds the logs of those sections and at most 8 files (the device
    tool returns no more).

Then once more with GPU_CHECK_BUDGET=0: sections 6-10 each print their SKIP
rows ("time budget (0 s) used") and the script still exits 0. Then the
hang: sections kernels and grads with CHECK_KERNELS_TEST_HANG=1 (the
emulator's checker launches a kernel that never returns, dev/cuda/
check_hang.cu) and 4 s limits: the three check_kernels rows FAIL as timed
out, kernels.log in OUT keeps the rows printed before the hang and says
where each process was stopped, and the grads rows after it still run
(about 20 s). And the
parsers of what only a GPU prints (the rehearsal's SKIP rows), on text in
the printf formats of dev/cuda/check_timing.c (check_kernels --time) and
kernels/cuda/gemm.cu ("gemm algo:" lines) and dev/cuda/check_sweep.c
("sweep best" lines): gpu_check_tools.py table, headx, algos and sweeppick.
Then the wedge: the same planted hang with GPU_CHECK_REHEARSAL_WEDGE=1, so
the device probe after the first timeout hangs too: the run stops there
(FAIL "wedged", exit 1, the logs so far kept, no row after it). Then the
bundle path in a fresh copy of the tree as the device tool sends it
(tracked and untracked-not-ignored files: no build/, no ./train_gpt),
with a stand-in bundle of what is built here, GPU_CHECK_PLAN=first and a
compute-sanitizer that refuses the device: the bundle row PASSes, its
checker runs from build/ (which the script creates), the sanitizer rows
SKIP. The first run has a torch module without CUDA on its path (a stub):
the reference row SKIPs with that reason.
GPU_CHECK_REHEARSAL_JOBS=2 (CI): the first run (every section, the longest)
runs beside the parsers, the budget-0 run and the fresh tree (one after
another): each has its own OUTDIR and gpu_check.sh its own WORK folder; the
hang and the wedge run after it, alone (their 4 s limits). Default 1: one
phase at a time. Results are reported in the order above either way.
Exit 0 when all hold; otherwise every failed assertion on stderr, exit 1.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ALL = "kernels sweep grads sample recompute nccl perf sanitizer llama xlmax head auto offload"
CLOCKS = "SM clock and power (nvidia-smi -lms 500)"
BUILD = "build (make -j16, sm_80 + sm_90a)"
BUNDLE_BUILD = "build (prebuilt gpu_bundle, sm_80 + sm_90a)"
PROBE = "device probe (nvidia-smi -L, one kernel)"
TORCH = "reference: torch SDPA and matmul (bf16)"
B124 = r"124M B[0-9]+"
AUTO = r"auto vs fixed modes \((124M|XL), B8\)"


def lit(name):
    return re.escape(name)


# the measurements against the model's ranges: no predictions without a bundle
MODEL_ROWS = [(lit(n), 1, "skip") for n in (
    "model: attention B=64, out of sample (sweep)", "model: 124M B=64 recompute 0 step",
    "model: XL recompute 1 / 0 throughput")]


# Per section, the GPU run's rows in order: (regex of the name, how many,
# the result the rehearsal must give: "run" = PASS or info, "skip" = SKIP
# "(rehearsal)": it needs CUDA).
def rows_of(section):
    if section == "kernels":
        return [(lit("check_kernels (fp32 1e-5, bf16 2e-2)"), 1, "run"),
                (lit("check_kernels, GELU epilogues (FUSE_GELU=1)"), 1, "run"),
                (lit("attention, unmeasured variants (bf16)"), 1, "run"),
                (lit("check_kernels --time"), 1, "skip"),
                (lit("encoder_backward on text (bf16, ms)"), 1, "skip"),
                (lit("target: head <= 1.3x its three gemms"), 1, "skip"),
                (lit("model: median per-op error <= 25% (B=4)"), 1, "skip"),
                (lit("fc GELU fused vs unfused (bf16, ms)"), 1, "skip"),
                (lit("gemm algorithms: timed vs heuristic (bf16)"), 1, "skip"),
                (lit(TORCH), 1, "skip")]
    if section == "sweep":
        return [(lit("attention variants sweep (bf16)"), 1, "run")]
    if section == "grads":
        return [(lit(f"{d} GPU vs cpu grads ({s})"), 1, "run")
                for s in ("L2 C64 NH4 T64", "L2 C40 NH4 T65") for d in ("fp32", "bf16")]
    if section == "sample":
        return [(lit("seeded sample, cpu vs GPU fp32 (4 x 64 tokens)"), 1, "run")]
    if section == "recompute":
        r = [(lit(f"recompute {m} vs 0 bitwise ({d}, L4 C128 T256)"), 1, "run")
             for d in ("bf16", "fp32") for m in ("1", "2", "selective")]
        return r + [(lit("recompute 1 vs 0 bitwise (bf16, timed gemm algos)"), 1, "run"),
                    (lit("recompute 1 vs 0 bitwise (bf16, FUSE_GELU=1)"), 1, "run"),
                    (lit("recompute selective vs 0 bitwise (bf16, FUSE_GELU=1)"), 1, "run")]
    if section == "sanitizer":  # the emulator's run of the same command, no tool
        return [(lit(f"compute-sanitizer {t} (attention, small shapes)"), 1, "run")
                for t in ("memcheck", "racecheck", "synccheck")]
    if section == "nccl":
        return [(lit("NCCL 1-rank vs plain run (bitwise)"), 1, "run")]
    if section == "perf":
        r = [(B124 + lit(" recompute 0"), 1, "run"), (B124 + lit(" recompute 1"), 1, "run"),
             (B124 + lit(" recompute 0, heuristic gemm algos"), 1, "run"),
             (B124 + lit(" recompute 0, FUSE_GELU=1"), 1, "run"),
             # the emulator sweep's first pick, named (nothing runs it)
             (lit("124M r0: sweep's pick to promote"), 1, "run"),
             (lit("124M r0: heuristic gemm algos / default"), 1, "run"),
             (lit("124M r0: FUSE_GELU=1 / default"), 1, "run"),
             (B124 + lit(" recompute 1, one-chunk head"), 1, "run"),
             (B124 + lit(" recompute 0, op profile"), 1, "run"),
             (lit("gemm costs per shape (cuBLASLt, timed)"), 1, "skip")]
        r += [(lit(f"XL (48L C1600) B8 recompute {m}"), 1, "run") for m in (0, 1)]
        return r + [(lit("target: 124M recompute 0 MFU >= 45%"), 1, "run"),
                    (lit("target: XL recompute 1 / 0 throughput >= 0.78"), 1, "run"),
                    (lit("target: 124M chunked head costs <= 3% (r1)"), 1, "run")] + MODEL_ROWS
    if section == "xlmax":
        return [(lit(f"XL max micro-batch (recompute {m})"), 1, "run") for m in (0, 1)]
    if section == "head":
        return [(lit("124M max micro-batch, chunked vs one-chunk head"), 1, "run")]
    if section == "auto":  # a row per budget (NBUDGETS=2), per shape
        return [(AUTO + r", budget [0-9.]+MiB", 4, "run")]
    if section == "offload":
        return [(r, 1, "run") for r in offload_rows()]
    if section == "llama":
        return [(r, 1, "run") for r in llama_rows()]
    raise ValueError(section)


def llama_rows():
    r = [lit(f"llama {d} GPU vs cpu grads (L2 C64 NH4 KVH2 T64)") for d in ("fp32", "bf16")]
    r += [lit(f"llama recompute {m} vs 0 bitwise ({d}, L4 C128 T256)") for d in ("bf16", "fp32")
          for m in (1, 2)]
    r += [lit("llama offload bitwise: r1 + checkpoints,optimizer vs r0 (bf16)")]
    r += [lit(f"llama-125m B8 recompute {m}") for m in (0, 1)]
    return r + [lit("llama fp32 --generate: GPU kv-cache 1 = 0 = cpu")]


def offload_rows():
    r = [lit(f"offload bitwise: r1 + checkpoints,optimizer vs r0 ({d}, L4 C128 T256)")
         for d in ("bf16", "fp32")]
    r += [lit("offload 124M B8 recompute 1, checkpoints,optimizer"),
          lit("offload 124M B8 memory vs --plan (r1, checkpoints,optimizer)"),
          lit("offload 124M B8 recompute 1"), lit("offload 124M B8 recompute 1, checkpoints")]
    r += [lit(f"offload XL (48L C1600) B8 recompute 1{v}") for v in ("", ", checkpoints", ", optimizer")]
    r += [lit("target: 124M checkpoint offload >= 0.95x tok/s"),
          lit("target: XL checkpoint offload >= 0.95x tok/s"),
          lit("target: XL optimizer offload step <= 1.5x"),
          lit("long context: 124M T8192 B1, r1 + checkpoints,optimizer")]
    return r


# With GPU_CHECK_BUDGET=0: the rows of sections 6-9 that say so
def budget_rows_of(section):
    if section == "perf":  # B124 stays its default, 16: --plan is not run
        return [(lit(f"124M B16 recompute {n}"), 1, "budget") for n in
                ("0", "1", "0, heuristic gemm algos", "0, FUSE_GELU=1", "1, one-chunk head",
                 "0, op profile")] + \
               [(lit("124M r0: sweep's pick to promote"), 1, "run"),
                (lit("gemm costs per shape (cuBLASLt, timed)"), 1, "skip")] + \
               [(lit(f"XL (48L C1600) B8 recompute {m}"), 1, "budget") for m in (0, 1)] + MODEL_ROWS
    if section == "xlmax":
        return [(lit(f"XL max micro-batch (recompute {m})"), 1, "budget") for m in (0, 1)]
    if section == "head":
        return [(lit("124M max micro-batch, chunked vs one-chunk head"), 1, "budget")]
    if section == "auto":
        return [(AUTO, 2, "budget")]
    if section == "sample":
        return [(lit("seeded sample, cpu vs GPU fp32 (4 x 64 tokens)"), 1, "budget")]
    if section == "offload":  # the targets SKIP for want of their runs
        return [(r, 1, "skip-runs" if r.startswith("target") else "budget") for r in offload_rows()]
    return rows_of(section)


ROW = re.compile(r"^(.*?) +(PASS|FAIL|SKIP|info)(?: +(.*))?$")


def check_summary(out, expected, errors):
    lines = open(os.path.join(out, "summary.txt")).read().splitlines()
    rows = []
    for line in lines:
        m = ROW.match(line)
        if not m:
            errors.append(f"summary.txt: not a row: {line!r}")
        else:
            rows.append(m.groups())
    used = [False] * len(rows)
    for pattern, count, want in expected:
        hits = [i for i, r in enumerate(rows) if re.fullmatch(pattern, r[0])]
        if len(hits) != count:
            errors.append(f"row /{pattern}/: {len(hits)} in summary.txt, expected {count}")
        for i in hits:
            used[i] = True
            name, result, detail = rows[i][0], rows[i][1], rows[i][2] or ""
            ok = {"run": result in ("PASS", "info"),
                  "skip": result == "SKIP" and detail.startswith("(rehearsal)"),
                  "budget": result == "SKIP" and "time budget (0 s) used" in detail,
                  "skip-runs": result == "SKIP" and "did not run" in detail}[want]
            if not ok:
                errors.append(f"row {name!r}: {result} {detail!r}, expected {want}")
    for i, r in enumerate(rows):
        if not used[i]:
            errors.append(f"unexpected row {r[0]!r}: {r[1]} {r[2]!r}")


def run(sections, out, extra_env, errors):
    env = dict(os.environ, GPU_CHECK_REHEARSAL="1", GPU_CHECK_SECTIONS=sections, **extra_env)
    p = subprocess.run(["dev/gpu_check/gpu_check.sh", out], cwd=ROOT, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        errors.append(f"dev/gpu_check/gpu_check.sh exited {p.returncode}")
    last = p.stdout.rstrip().splitlines()[-1:] or [""]
    if last[0] != "gpu_check: all PASS":
        errors.append(f"last line {last[0]!r}, expected 'gpu_check: all PASS'")
    return p.stdout


def timing_table(dtype, scale):
    """check_kernels --time's table for one dtype, in check_timing.c's printf
    formats; every ms is its row's index times scale (the head's parts:
    logits 1, loss 0.2, dx 1, dwte 1, head 3.6: 1.2x its three gemms)."""
    t = "\ntiming (%s): B=4 T=1024 C=768 NH=12 V=50257, median of 20 after 3 warm-ups\n" % dtype
    t += "%-28s %10s %12s\n" % ("op", "ms", "rate")
    names = ["encoder_forward", "layernorm_forward"]
    for mm in ("qkv", "attn proj", "fc", "fc proj"):
        names += ["matmul_forward " + mm, "matmul_backward " + mm]
    names += ["attention_forward", "matmul_gelu_forward fc", "matmul_backward_gelu fc proj",
              "head_forward_backward", "  its forward (gemm + loss)"]
    for i, n in enumerate(names):
        t += "%-28s %10.4f %9.1f %s\n" % (n, (i + 1) * scale, 123.4, "TFLOP/s")
    parts = [("  its logits gemm", 1.0), ("  its loss + dlogits kernel", 0.2),
             ("  its dx gemm", 1.0), ("  its dwte gemm", 1.0)]
    for n, ms in parts:
        t += "%-28s %10.4f %9.1f %s\n" % (n, ms * scale, 99.0, "TFLOP/s")
    t += "%-28s %10.4f %9.3f x  (head / its three gemms; goal <= 1.3)\n" % (
        "  head vs its three gemms", 3.6 * scale, 1.2)
    t += "%-28s %10.4f %9.1f %s\n" % ("adamw_update (124M)", 0.5, 800.0, "GB/s")
    return t + "(head_forward_backward: chunk 4096 tokens)\n"


def gemm_algo(m, pick, algo_id, ms):
    """One line of kernels/cuda/gemm.cu's print_choice."""
    return ("gemm algo: m=%d n=768 k=768 t=01 ld=768,768,768 bf16->bf16 bias=1 beta=0 epi=0 "
            "align=16: candidate %d of 8 (id %d tile 18 stages 0 splitk 1) %.4f ms, heuristic's "
            "first %.4f ms [timed]\n" % (m, pick, algo_id, ms, ms * 1.1))


def check_model_ranges(tmp, tools, expect):
    """gpu_check_tools.py modelrange on fabricated predictions, sweep and
    step logs: inside passes, outside fails, missing skips."""
    pred = os.path.join(tmp, "perf_model.json")
    with open(pred, "w") as f:
        f.write('{"ops": {}, "ranges": {"attention_forward 124M B=64": [0.5, 1.0], '
                '"attention_backward 124M B=64": [1.5, 3.0], "step 124M B=64 r0": [300, 400], '
                '"XL r1/r0": [0.7, 0.8]}}')
    sw = os.path.join(tmp, "sweep_model.log")
    row = "  %-23s %10.4f ms %8.1f TFLOP/s   err %.1e%s\n"
    best = "sweep best B=%d T=1024 C=768 NH=12: forward a 1 ms; backward b + c 1 ms\n"
    with open(sw, "w") as f:
        for B, fwd in ((4, 0.1), (64, 0.8)):
            f.write(row % ("fwd-w4-k64-s2-b4", fwd, 300.0, 0.0, "   (default)") +
                    row % ("fwd-w8-k64-s2-b2", fwd / 2, 310.0, 0.0, "") +
                    row % ("dq-w4-k64-s2-b4", 1.0, 300.0, 0.0, "   (default)") +
                    row % ("dkdv-w4-q64-s2-b3", 4.0 if B == 64 else 0.2, 300.0, 0.0, "   (default)") +
                    best % B)
    expect("modelrange attn (backward outside)", tools("modelrange", pred, "attn", sw, "64"), 1,
           "backward 5 ms OUTSIDE [1.5, 3]")
    expect("modelrange attn (no such B)", tools("modelrange", pred, "attn", sw, "16"), 2,
           "no default attention rows at B=16")

    def jsonl(name, ms, tps):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            for i, (m, t) in enumerate(zip(ms, tps)):
                f.write('{"step": %d, "loss": 5.0, "ms": %g, "tokens_per_s": %g}\n' % (i + 1, m, t))
        return path
    r0 = jsonl("r0.jsonl", [900, 900, 350, 360, 340], [1e5, 1e5, 2e5, 2e5, 2e5])
    r1 = jsonl("r1.jsonl", [900, 900, 450, 460, 440], [1e5, 1e5, 1.5e5, 1.5e5, 1.5e5])
    expect("modelrange step (inside)", tools("modelrange", pred, "step", r0, "2", "64"), 0,
           "step 350 ms in [300, 400]")
    expect("modelrange step (outside)", tools("modelrange", pred, "step", r1, "2", "64"), 1,
           "step 450 ms OUTSIDE")
    expect("modelrange xl (inside)", tools("modelrange", pred, "xl", r0, r1, "2"), 0,
           "r1/r0 0.75 in [0.7, 0.8]")
    expect("modelrange xl (outside)", tools("modelrange", pred, "xl", r1, r0, "2"), 1,
           "r1/r0 1.333 OUTSIDE")
    expect("modelrange (no ranges)", tools("modelrange", sw, "xl", r0, r1, "2"), 2, "no model ranges")


def check_gpu_parsers(tmp, errors):
    def tools(*args):
        p = subprocess.run([sys.executable, "dev/gpu_check/gpu_check_tools.py", *args], cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return p.returncode, p.stdout.strip()

    def expect(what, got, rc, text):
        if got[0] != rc or text not in got[1]:
            errors.append(f"gpu_check_tools.py {what}: exit {got[0]} {got[1]!r}, expected "
                          f"exit {rc} with {text!r}")

    t = os.path.join(tmp, "timing.log")
    with open(t, "w") as f:  # as gpu_check.sh writes it: --dtype both, then appended runs
        f.write("check_kernels: seed 1 (rerun with --seed 1)\n" + timing_table("fp32", 10) +
                timing_table("bf16", 1) + "\n=== TRAIN_GPT_FUSE_GELU=1 ./build/"
                "check_kernels --time --dtype bf16\n" + timing_table("bf16", 100))
    expect("table (bf16, the first table)", tools("table", t, "bf16", "matmul_gelu_forward fc"),
           0, "12.0000")
    expect("table (fp32)", tools("table", t, "fp32", "matmul_backward fc proj"), 0, "100.0000")
    expect("table (head part)", tools("table", t, "bf16", "its dwte gemm"), 0, "1.0000")
    expect("table (no such row)", tools("table", t, "bf16", "matmul_forward xyz"), 1, "no row")
    expect("headx", tools("headx", t, "1.3"), 0, "= 1.20x (target <= 1.3)")
    expect("headx (over target)", tools("headx", t, "1.1"), 1, "1.20x")
    a, b, c = (os.path.join(tmp, n) for n in ("a.txt", "b.txt", "c.txt"))
    with open(a, "w") as f:
        f.write("step 1/3\n" + gemm_algo(4096, 2, 21, 0.5) + gemm_algo(8192, 0, 6, 0.7))
    with open(b, "w") as f:  # the same choices, other times, another order
        f.write(gemm_algo(8192, 0, 6, 0.9) + gemm_algo(4096, 2, 21, 0.4))
    with open(c, "w") as f:  # one problem chose another algorithm
        f.write(gemm_algo(8192, 0, 6, 0.9) + gemm_algo(4096, 3, 31, 0.4))
    expect("algos (same)", tools("algos", a, b), 0, "the same algorithm for all 2 problems")
    expect("algos (differ)", tools("algos", a, c), 1, "1 of 2 problems chose differently")
    # check_kernels --sweep's lines (dev/cuda/check_sweep.c's printf formats), two shapes
    sw = os.path.join(tmp, "sweep.log")
    row = "  %-23s %10.4f ms %8.1f TFLOP/s   err %.1e%s\n"
    best = ("sweep best B=%d T=1024 C=%d NH=12: forward %s %.4f ms; backward %s + %s %.4f "
            "ms\n")
    with open(sw, "w") as f:
        for B, fwd in ((4, "fwd-w4-k64-s2-b4"), (64, "fwd-w8-k64-s2-b2")):
            f.write(row % ("fwd-w4-k64-s2-b4", 0.2, 300.0, 0.0, "   (default)") +
                    row % ("fwd-w8-k64-s2-b2", 0.1, 310.0, 0.0, "") +
                    row % ("dq-w4-k64-s2-b4", 0.3, 300.0, 0.0, "   (default)") +
                    row % ("dkdv-w4-q64-s2-b3", 0.3, 300.0, 0.0, "   (default)") +
                    best % (B, 768, fwd, 0.1, "dq-w4-k64-s2-b4", "dkdv-w4-q64-s2-b3", 0.5))
        f.write(best % (8, 1600, "(none correct)", 0.0, "dq-w4-k64-s2-b4", "dkdv-w4-q64-s2-b3",
                        0.5))
    expect("sweeppick (a faster variant)", tools("sweeppick", sw, "64", "768", "1"), 0,
           "fwd-w8-k64-s2-b2,dq-w4-k64-s2-b4,dkdv-w4-q64-s2-b3 vs fwd-w4-k64-s2-b4,"
           "dq-w4-k64-s2-b4,dkdv-w4-q64-s2-b3")
    expect("sweeppick (the defaults)", tools("sweeppick", sw, "4", "768", "1"), 1,
           "are the defaults")
    expect("sweeppick (none correct)", tools("sweeppick", sw, "8", "1600", "1"), 1,
           "no correct variant")
    expect("sweeppick (no sweep)", tools("sweeppick", sw + ".none", "64", "768", "1"), 1,
           "the sweep did not run")
    check_model_ranges(tmp, tools, expect)


HANG_ROWS = ("check_kernels (fp32 1e-5, bf16 2e-2)", "check_kernels, GELU epilogues (FUSE_GELU=1)",
             "attention, unmeasured variants (bf16)")


def check_hang(tmp, errors):
    out = os.path.join(tmp, "out_hang")
    limits = {f"GPU_CHECK_LIMIT_{k}": "4" for k in ("CHECKS", "GELU", "UNMEASURED")}
    env = dict(os.environ, GPU_CHECK_REHEARSAL="1", GPU_CHECK_SECTIONS="kernels grads",
               CHECK_KERNELS_TEST_HANG="1", **limits)
    p = subprocess.run(["dev/gpu_check/gpu_check.sh", out], cwd=ROOT, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    if p.returncode != 1:
        errors.append(f"hang: gpu_check.sh exited {p.returncode}, expected 1 (the hung rows FAIL)")
    last = (p.stdout.rstrip().splitlines() or [""])[-1]
    if last != "gpu_check: 3 FAIL":
        errors.append(f"hang: last line {last!r}, expected 'gpu_check: 3 FAIL'")
    rows = {}
    for line in open(os.path.join(out, "summary.txt")).read().splitlines():
        m = ROW.match(line)
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3) or "")
    for name in HANG_ROWS:
        result, detail = rows.get(name, ("missing", ""))
        if result != "FAIL" or "timed out" not in detail:
            errors.append(f"hang: row {name!r}: {result} {detail!r}, expected FAIL, timed out")
    grads = [n for n in rows if n.endswith(" GPU vs cpu grads (L2 C64 NH4 T64)") or
             n.endswith(" GPU vs cpu grads (L2 C40 NH4 T65)")]
    if len(grads) != 4 or any(rows[n][0] not in ("PASS", "info") for n in grads):
        errors.append(f"hang: the grads rows after the hang: {[(n, rows[n]) for n in grads]}, "
                      "expected 4, PASS or info")
    klog = open(os.path.join(out, "kernels.log")).read()
    stops = len(re.findall(r"^=== gpu_check: stopped at its limit, 4 s", klog, re.M))
    if stops != 3:
        errors.append(f"hang: kernels.log says {stops} processes were stopped, expected 3")
    # each hung process's rows before the hang are in the log: line-buffered, not lost
    for part in re.split(r"^=== (?!gpu_check)", klog, flags=re.M):
        if "launching a kernel that never returns" in part and \
                not re.search(r"^PASS ", part.split("launching a kernel")[0], re.M):
            errors.append("hang: a hung process's rows before the hang are not in kernels.log")
    if klog.count("launching a kernel that never returns") != 3:
        errors.append("hang: kernels.log does not show the three injected hangs")
    return p.stdout


def summary_rows(out):
    rows = {}
    for line in open(os.path.join(out, "summary.txt")).read().splitlines():
        m = ROW.match(line)
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3) or "")
    return rows


def check_wedge(tmp, errors):
    """The planted hang leaves the fake device wedged: the probe after the
    first timeout hangs too, and the script stops there with its logs."""
    out = os.path.join(tmp, "out_wedge")
    env = dict(os.environ, GPU_CHECK_REHEARSAL="1", GPU_CHECK_SECTIONS="kernels grads",
               CHECK_KERNELS_TEST_HANG="1", GPU_CHECK_REHEARSAL_WEDGE="1",
               GPU_CHECK_LIMIT_CHECKS="4", GPU_CHECK_LIMIT_PROBE="4")
    p = subprocess.run(["dev/gpu_check/gpu_check.sh", out], cwd=ROOT, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    if p.returncode != 1:
        errors.append(f"wedge: gpu_check.sh exited {p.returncode}, expected 1")
    rows = summary_rows(out)
    names = list(rows)
    want = [BUILD, PROBE, "device probe after a timeout (checks)"]
    if names != want:
        errors.append(f"wedge: rows {names}, expected {want} (nothing after the wedge)")
    elif rows[want[2]][0] != "FAIL" or "wedged after checks timed out" not in rows[want[2]][1]:
        errors.append(f"wedge: row {want[2]!r}: {rows[want[2]]}, expected FAIL, wedged")
    klog = open(os.path.join(out, "kernels.log")).read() if os.path.exists(
        os.path.join(out, "kernels.log")) else ""
    if not re.search(r"^PASS ", klog, re.M) or "device probe 2" not in klog:
        errors.append("wedge: kernels.log lacks the rows before the hang or the second probe")
    return p.stdout


def tree_copy(dst):
    """The tree as the device tool sends it: tracked files and untracked ones
    git does not ignore (no build/, no ./train_gpt, no gpu_bundle/)."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=ROOT, stdout=subprocess.PIPE, check=True).stdout.split(b"\0")
    for f in files:
        f = f.decode()
        src = os.path.join(ROOT, f)
        if not f or not os.path.lexists(src):  # deleted, not yet committed
            continue
        os.makedirs(os.path.dirname(os.path.join(dst, f)), exist_ok=True)
        shutil.copy2(src, os.path.join(dst, f), follow_symlinks=False)


def check_fresh_tree(tmp, errors):
    """The bundle path in a fresh copy of the tree: unpack, copy into the
    folders the copy lacks (build/), run the checker from the bundle. The
    bundle is a stand-in with gpu_bundle.sh's layout, packed from what is
    built here (./train_gpt, the emulator as bin/check_kernels): a CUDA
    build takes minutes and its checker cannot run without a GPU. The
    sanitizer rows see a tool that refuses the device: SKIP."""
    tree = os.path.join(tmp, "fresh")
    tree_copy(tree)
    stage = os.path.join(tmp, "stage")
    for d in ("bin", "lib", "lib-mpi"):
        os.makedirs(os.path.join(stage, d))
    shutil.copy2(os.path.join(ROOT, "train_gpt"), os.path.join(stage, "bin", "train_gpt"))
    shutil.copy2(os.path.join(ROOT, "build", "check_kernels_emu"),
                 os.path.join(stage, "bin", "check_kernels"))
    src = subprocess.run(["dev/gpu_check/gpu_bundle.sh", "--source-hash"], cwd=tree,
                         stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
    with open(os.path.join(stage, "MANIFEST"), "w") as f:
        f.write(f"commit rehearsal (a stand-in bundle)\nsources {src}\nnvcc release none\n")
    os.makedirs(os.path.join(tree, "gpu_bundle"))
    # xz's fastest level: the stand-in is never carried anywhere, and its
    # binaries (about 10 MB) took 6.8 CPU-s at xz's default level, 0.9 at -0
    subprocess.run(["tar", "-cJf", os.path.join(tree, "gpu_bundle", "bundle.tar.xz"), "-C", stage, "."],
                   check=True, env=dict(os.environ, XZ_OPT="-0"))
    out = os.path.join(tmp, "out_fresh")
    env = dict(os.environ, GPU_CHECK_REHEARSAL="1", GPU_CHECK_REHEARSAL_BUNDLE="1",
               GPU_CHECK_PLAN="first", GPU_CHECK_SECTIONS="kernels sanitizer",
               GPU_CHECK_REHEARSAL_SAN_REFUSE="1")
    p = subprocess.run(["dev/gpu_check/gpu_check.sh", out], cwd=tree, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    if p.returncode != 0:
        errors.append(f"fresh tree: gpu_check.sh exited {p.returncode}, expected 0")
    rows = summary_rows(out)
    if rows.get(BUNDLE_BUILD, ("missing",))[0] != "PASS":
        errors.append(f"fresh tree: row {BUNDLE_BUILD!r}: {rows.get(BUNDLE_BUILD)}, expected PASS")
    if rows.get(PROBE, ("missing",))[0] != "PASS":
        errors.append(f"fresh tree: row {PROBE!r}: {rows.get(PROBE)}, expected PASS")
    ck = rows.get(HANG_ROWS[0], ("missing", ""))
    if ck[0] != "PASS":
        errors.append(f"fresh tree: row {HANG_ROWS[0]!r}: {ck}, expected PASS (the bundle's checker)")
    for t in ("memcheck", "racecheck", "synccheck"):
        r = rows.get(f"compute-sanitizer {t} (attention, small shapes)", ("missing", ""))
        if r[0] != "SKIP" or "refused" not in r[1]:
            errors.append(f"fresh tree: compute-sanitizer {t}: {r}, expected SKIP, refused")
    return p.stdout


def check_all(sections, tmp, errors):
    """1. every section: the rows, the runs, OUTDIR; its console when an
    assertion failed."""
    out = os.path.join(tmp, "out")
    # a torch without CUDA (a stand-in module): the reference row SKIPs
    stub = os.path.join(tmp, "stub", "torch")
    os.makedirs(stub)
    with open(os.path.join(stub, "__init__.py"), "w") as f:
        f.write("__version__ = '0.0+rehearsal'\n\n\nclass cuda:\n"
                "    @staticmethod\n    def is_available():\n        return False\n")
    path = os.pathsep.join(p for p in (os.path.dirname(stub), os.environ.get("PYTHONPATH")) if p)
    console = run(" ".join(sections), out, {"PYTHONPATH": path}, errors)
    if "kernels" in sections and "without CUDA" not in summary_rows(out).get(TORCH, ("", ""))[1]:
        errors.append(f"row {TORCH!r}: {summary_rows(out).get(TORCH)}, expected SKIP, without CUDA")
    expected = [(lit(BUILD), 1, "skip"), (lit(PROBE), 1, "run")] + [r for s in sections for r in rows_of(s)]
    if {"sweep", "perf"} & set(sections):  # the clock log ran during their rows
        expected.append((lit(CLOCKS), 1, "run"))
    check_summary(out, expected, errors)
    log = open(os.path.join(out, "train.log")).read()
    runs = re.findall(r"^=== (.*): exit (\d+) after", log, re.M)
    if not runs:
        errors.append("train.log: no train_gpt runs")
    errors += [f"train.log: run {n!r} exited {rc}" for n, rc in runs if rc != "0"]
    want = {"summary.txt", "train.log", "train_json.log", "nvidia-smi.txt", "build.log"}
    want |= {"kernels.log"} if "kernels" in sections else set()
    want |= {"timing.log"} if "sweep" in sections else set()
    want |= {"clocks.csv"} if {"sweep", "perf"} & set(sections) else set()
    have = set(os.listdir(out))
    errors += [f"OUTDIR: no {f}" for f in sorted(want - have)]
    errors += [f"OUTDIR: {f} is empty" for f in sorted(want - {"build.log"} & have)
               if os.path.getsize(os.path.join(out, f)) == 0]
    if len(have) > 8:
        errors.append(f"OUTDIR: {len(have)} files, the device tool returns at most 8")
    return console


def check_budget0(late, tmp, errors):
    """2. sections 6-9 past the time budget: SKIP rows, exit 0."""
    out0 = os.path.join(tmp, "out_budget0")
    console = run(" ".join(late), out0, {"GPU_CHECK_BUDGET": "0"}, errors)
    check_summary(out0, [(lit(BUILD), 1, "skip"), (lit(PROBE), 1, "run")] +
                  [r for s in late for r in budget_rows_of(s)], errors)
    return console


def phase(fn, *args):
    """fn(*args, errors), which returns its gpu_check.sh console: (its
    errors, that console when there are any, else '')."""
    errors = []
    try:
        console = fn(*args, errors)
    except Exception as e:  # e.g. no summary.txt: this phase fails, the others still report
        errors.append(f"{fn.__name__}: {type(e).__name__}: {e}")
        console = traceback.format_exc()
    return errors, (console or "") if errors else ""


def main():
    sections = os.environ.get("GPU_CHECK_SECTIONS", ALL).split()
    # The phases are independent (each its own OUTDIR and gpu_check.sh WORK
    # folder; the fresh tree its own copy). With GPU_CHECK_REHEARSAL_JOBS=2
    # (CI's two idle cores) the first, every section (the longest: its
    # train_gpt runs are one thread each), runs beside the parsers, budget 0
    # and the fresh tree (limits of 30 s and more for runs of a few CPU-s);
    # the hang and the wedge run after it, alone: their 4 s limits must not
    # stop the rows before the hang, nor the wedge's first probe (about 1.3
    # CPU-s). Beside the first phase on a machine loaded by others, the fresh
    # tree's 40 s limits were missed, hence one at a time by default.
    # Results in the phases' order either way.
    jobs = os.environ.get("GPU_CHECK_REHEARSAL_JOBS", "1")
    if jobs not in ("1", "2"):
        print(f"gpu_check_rehearsal: GPU_CHECK_REHEARSAL_JOBS: expected 1 or 2, got {jobs!r}",
              file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="gpu_check_rehearsal.")
    late = [s for s in sections if s in ("perf", "xlmax", "head", "auto", "sample", "offload")]
    results = {}
    first = threading.Thread(target=lambda: results.update(all=phase(check_all, sections, tmp)))
    try:
        if jobs == "2":
            first.start()
        else:
            first.run()  # here, before the others
        results["parsers"] = phase(check_gpu_parsers, tmp)
        if late:
            results["budget0"] = phase(check_budget0, late, tmp)
        if "kernels" in sections:
            # 5. the bundle, unpacked into a fresh copy of the tree
            results["fresh"] = phase(check_fresh_tree, tmp)
        if first.is_alive():
            first.join()
        if "kernels" in sections:
            # 3. an injected hang: timeouts fire, partial logs stay, later sections run
            results["hang"] = phase(check_hang, tmp)
            # 4. a hang that wedges the device: the run stops at once
            results["wedge"] = phase(check_wedge, tmp)
    finally:
        if first.is_alive():
            first.join()
        shutil.rmtree(tmp, ignore_errors=True)
    errors = []
    for name in ("parsers", "all", "budget0", "hang", "wedge", "fresh"):
        if name in results:
            errors += results[name][0]
            sys.stderr.write(results[name][1])
    for e in errors:
        print(f"gpu_check_rehearsal: {e}", file=sys.stderr)
    print(f"gpu_check_rehearsal: {'FAIL' if errors else 'PASS'} (sections: {' '.join(sections)})")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
