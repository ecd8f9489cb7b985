#!/usr/bin/env python3
"""dev/gpu_check/gpu_check_tools.py — the small helpers dev/gpu_check/gpu_check.sh calls.

  shard PATH NTOK VOCAB SEED      write an llm.c token shard of random tokens
  grads REF GOT L C V T TOL       compare two --dump-grads files per tensor
  lgrads REF GOT L C V NH KVH F TOL
                                  the same for an --arch llama run (untied
                                  head, no biases: config.c's Llama slots)
  same LOG_A LOG_B                per-step loss and grad norm identical?
  stats LOG WARMUP L C V T        one run's median step time, tokens/s, MFU
                                  and memory (planner total vs measured);
                                  exit 1 when they differ by more than 2%
  mem LOG                         just the memory: planner total vs measured
  ratio LOG_A LOG_B WARMUP TARGET tokens/s of B over A; exit 1 below TARGET
  mfu LOG WARMUP L C V T TARGET   MFU of one run; exit 1 below TARGET
  lstats LOG WARMUP               an --arch llama run: median step time, tok/s,
                                  train_gpt's own MFU (its FLOP count is the
                                  family's, model/flops.c) and memory as stats;
                                  exit 1 when the memory differs by more than 2%
                                  or the arenas' high-water mark is not the plan
  gelu KERNELS_LOG                which GELU cuBLASLt's epilogue computes, from
                                  check_kernels' "gelu epilogue:" lines (fp32:
                                  error against the tanh and the erf form);
                                  exit 1 unless it matches the cpu's (tanh)
                                  within 1e-5
  algos TEXT_A TEXT_B             the "gemm algo:" choices of two runs (times
                                  left out): exit 0 when the same, 1 if not
  table TIMING_LOG DTYPE ROW      one row's ms from the first DTYPE table of
                                  check_kernels --time's output (ROW: the
                                  row's name, stripped)
  headx TIMING_LOG TARGET         the bf16 table's head / its three gemms;
                                  exit 1 above TARGET
  sweeppick SWEEP_LOG B C SHAPE   check_kernels --sweep's fastest correct
                                  variants at B and C (SHAPE 0: its first
                                  "sweep best" line, whatever the shape) as
                                  "FWD,DQ,DKDV vs DEFAULTS"; exit 1 with the
                                  reason when there are none or they are the
                                  defaults
  offmem PLAN LOG                 --offload's memory: --plan's closing "device:"
                                  and "host:" lines against the run's summary
                                  (device: measured within 2%; host: the host
                                  arenas' high-water mark, to the byte)
  clocks CLOCKS_CSV               nvidia-smi --query-gpu=timestamp,clocks.sm,
                                  power.draw --format=csv's samples: count,
                                  the SM clock's median, min and max (MHz),
                                  the power's median and max (W)

--dump-grads files are float32: the loss, then every gradient in llm.c's
parameter order. Errors per tensor are max|got - ref| / max|ref|.
MFU: FLOPs per token = 6 * N_params + 6 * L * C * T (PaLM's 6N + 12LCT
with the attention term halved for the causal mask, as llm.c counts it;
N_params counts the padded vocabulary, as train_gpt prints it),
over the H100/H200 SXM dense bf16 peak of 989 TFLOP/s (GPU_CHECK_PEAK_TFLOPS
sets another: gpu_check.sh's CPU rehearsal gives its runs' --peak-tflops).
Re-forwards under --recompute 1 are not counted: MFU counts the model's FLOPs
only. stats prints train_gpt's own MFU beside (the "mfu" of its --log step
lines: model/flops.h's count over the device table's peak, or --peak-tflops;
null on a cpu run without --peak-tflops).
"""
import json
import math
import os
import re
import statistics
import struct
import sys

PEAK_FLOPS = float(os.environ.get("GPU_CHECK_PEAK_TFLOPS", "989")) * 1e12
SHARD_MAGIC, SHARD_VERSION = 20240520, 1


def cmd_shard(path, ntok, vocab, seed):
    ntok, vocab, seed = int(ntok), int(vocab), int(seed)
    header = struct.pack("<256i", SHARD_MAGIC, SHARD_VERSION, ntok, *([0] * 253))
    try:
        import numpy as np
        toks = np.random.default_rng(seed).integers(0, vocab, ntok, dtype=np.uint16).tobytes()
    except ImportError:
        import random
        r = random.Random(seed)
        toks = struct.pack(f"<{ntok}H", *(r.randrange(vocab) for _ in range(ntok)))
    with open(path, "wb") as f:
        f.write(header)
        f.write(toks)
    return 0


def param_sizes(L, C, V, T):
    Vp = (V + 127) // 128 * 128
    return [("wte", Vp * C), ("wpe", T * C), ("ln1w", L * C), ("ln1b", L * C),
            ("qkvw", L * 3 * C * C), ("qkvb", L * 3 * C), ("attprojw", L * C * C),
            ("attprojb", L * C), ("ln2w", L * C), ("ln2b", L * C), ("fcw", L * 4 * C * C),
            ("fcb", L * 4 * C), ("fcprojw", L * C * 4 * C), ("fcprojb", L * C),
            ("lnfw", C), ("lnfb", C)]


def llama_param_sizes(L, C, V, NH, KVH, F):
    """--arch llama's sixteen slots (model/config.c), untied head, no biases."""
    Vp = (V + 127) // 128 * 128
    qkv = C + 2 * KVH * (C // NH)
    return [("tok_emb", Vp * C), ("lm_head", Vp * C), ("rms1w", L * C), ("wqkv", L * qkv * C),
            ("wo", L * C * C), ("rms2w", L * C), ("w_gateup", L * 2 * F * C),
            ("w_down", L * C * F), ("rmsfw", C)]


def read_floats(path):
    """float32 file -> list-like; numpy when present (fast), else array."""
    try:
        import numpy as np
        return np.fromfile(path, dtype=np.float32)
    except ImportError:
        import array
        a = array.array("f")
        with open(path, "rb") as f:
            a.frombytes(f.read())
        return a


def rel_err(r, g):
    """max|g - r| / max|r| (or the absolute max when r is all zeros);
    inf when g holds a NaN or an infinity."""
    if not all(math.isfinite(x) for x in g):
        return float("inf")
    m = max((abs(x) for x in r), default=0.0)
    d = max((abs(x - y) for x, y in zip(g, r)), default=0.0)
    return d / m if m > 0 else d


def cmd_grads(ref_path, got_path, L, C, V, T, tol):
    L, C, V, T = int(L), int(C), int(V), int(T)
    return compare_grads(ref_path, got_path, param_sizes(L, C, V, T), float(tol))


def cmd_lgrads(ref_path, got_path, L, C, V, NH, KVH, F, tol):
    sizes = llama_param_sizes(*(int(x) for x in (L, C, V, NH, KVH, F)))
    return compare_grads(ref_path, got_path, sizes, float(tol))


def compare_grads(ref_path, got_path, sizes, tol):
    ref, got = read_floats(ref_path), read_floats(got_path)
    n = 1 + sum(s for _, s in sizes)
    if len(ref) != n or len(got) != n:
        print(f"size mismatch: expected {n} floats, got {len(ref)} and {len(got)}")
        return 1
    loss_err = abs(float(got[0]) - float(ref[0])) / abs(float(ref[0]))
    worst, worst_name, off = 0.0, "", 1
    for name, s in sizes:
        e = rel_err([float(x) for x in ref[off:off + s]], [float(x) for x in got[off:off + s]])
        off += s
        if e > worst or e != e or not worst_name:
            worst, worst_name = e, name
    ok = loss_err <= tol and worst <= tol
    print(f"loss {ref[0]:.6f} vs {got[0]:.6f} (rel {loss_err:.2e}); worst grad {worst_name} "
          f"rel {worst:.2e}; tol {tol:.0e}: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


def read_log(path):
    steps, summary = [], None
    for line in open(path):
        j = json.loads(line)
        if j.get("event") == "summary":
            summary = j
        elif "loss" in j and "ms" in j:
            steps.append(j)
    return steps, summary


def cmd_same(a, b):
    sa, _ = read_log(a)
    sb, _ = read_log(b)
    pa = [(s["step"], s["loss"], s["grad_norm"]) for s in sa]
    pb = [(s["step"], s["loss"], s["grad_norm"]) for s in sb]
    same = pa == pb and len(pa) > 0
    print(f"{len(pa)} steps; losses {', '.join(f'{p[1]:.9g}' for p in pa)} vs "
          f"{', '.join(f'{p[1]:.9g}' for p in pb)}: {'identical' if same else 'DIFFER'}")
    return 0 if same else 1


# the memory target: measured device memory within 2% of the planner's total
# (GPU_CHECK_MEM_TOL_PCT: gpu_check.sh's CPU rehearsal lifts it, its
# "measured" being the process's peak RSS)
MEM_TOLERANCE_PCT = float(os.environ.get("GPU_CHECK_MEM_TOL_PCT", "2"))  # "inf": not checked


def mem_diff_pct(summary):
    m = summary["memory"]
    return (m["peak_measured"] - m["total"]) / m["total"] * 100


def mem_text(summary):
    """Planner total against the measured device bytes of the run (cudaMemGetInfo
    after the arenas minus before them; the CUDA context and the backend's fixed
    48 MiB are measured before, and printed apart as context_overhead)."""
    m = summary["memory"]
    diff = mem_diff_pct(summary)
    ctx = m.get("context_overhead")
    ctx_text = f"; context {ctx / 2**20:.0f} MiB apart" if ctx is not None else ""
    if math.isinf(MEM_TOLERANCE_PCT):
        verdict = "not checked"
    else:
        verdict = f"{'within' if abs(diff) <= MEM_TOLERANCE_PCT else 'OUTSIDE'} {MEM_TOLERANCE_PCT:.0f}%"
    return (f"planner {m['total'] / 2**30:.2f} GiB, measured {m['peak_measured'] / 2**30:.2f} "
            f"GiB ({diff:+.1f}%, {verdict}{ctx_text})")


def cmd_mem(path):
    _, summary = read_log(path)
    if summary is None:
        print("no summary line")
        return 1
    print(mem_text(summary))
    return 0


def mfu_of(tps, L, C, V, T):
    """Model FLOPs utilisation at tps tokens/s (the formula in the docstring);
    the parameter count includes the padded vocabulary, as train_gpt counts."""
    n_params = sum(s for _, s in param_sizes(L, C, V, T))
    return tps * (6 * n_params + 6 * L * C * T) / PEAK_FLOPS


def cmd_stats(path, warmup, L, C, V, T):
    warmup, L, C, V, T = int(warmup), int(L), int(C), int(V), int(T)
    steps, summary = read_log(path)
    timed = steps[warmup:]
    if len(timed) < 1 or summary is None:
        print("no timed steps or no summary line")
        return 1
    ms = statistics.median(s["ms"] for s in timed)
    tps = statistics.median(s["tokens_per_s"] for s in timed)
    mfu = mfu_of(tps, L, C, V, T)
    # train_gpt's own MFU (null where it knows no peak: a cpu run without --peak-tflops)
    own = [s["mfu"] for s in timed if s.get("mfu") is not None]
    own_text = f" (train_gpt's {statistics.median(own):.1%})" if own else " (train_gpt's: none)"
    print(f"median of {len(timed)} steps: {ms:.1f} ms/step, {tps:,.0f} tok/s, MFU {mfu:.1%}{own_text}; "
          f"memory: {mem_text(summary)}; last loss {steps[-1]['loss']:.4f}")
    return 0 if abs(mem_diff_pct(summary)) <= MEM_TOLERANCE_PCT else 1


def cmd_lstats(path, warmup):
    steps, summary = read_log(path)
    timed = steps[int(warmup):]
    if len(timed) < 1 or summary is None:
        print("no timed steps or no summary line")
        return 1
    ms = statistics.median(s["ms"] for s in timed)
    tps = statistics.median(s["tokens_per_s"] for s in timed)
    own = [s["mfu"] for s in timed if s.get("mfu") is not None]
    own_text = f"MFU {statistics.median(own):.1%} (train_gpt's)" if own else "MFU: none"
    m = summary["memory"]
    arenas_ok = m.get("arena_high_water") == m.get("total")
    print(f"median of {len(timed)} steps: {ms:.1f} ms/step, {tps:,.0f} tok/s, {own_text}; "
          f"memory: {mem_text(summary)}; arenas' high-water {'= plan' if arenas_ok else 'DIFFERS'}"
          f"; last loss {steps[-1]['loss']:.4f}")
    return 0 if abs(mem_diff_pct(summary)) <= MEM_TOLERANCE_PCT and arenas_ok else 1


def plan_tiers(path):
    """--plan's two closing lines for --recompute MODE --offload LIST."""
    tiers = {}
    for line in open(path):
        m = re.match(r"^(device|host): ([0-9]+) bytes", line)
        if m:
            tiers[m.group(1)] = int(m.group(2))
    return tiers


def cmd_offmem(plan, path):
    tiers = plan_tiers(plan)
    _, summary = read_log(path)
    if "device" not in tiers or "host" not in tiers or summary is None:
        print(f"no device:/host: lines in --plan ({sorted(tiers)}) or no summary line")
        return 1
    m = summary["memory"]
    dev, host = tiers["device"], tiers["host"]
    diff = (m["peak_measured"] - dev) / dev * 100
    hw = m.get("host_high_water")
    dev_ok = math.isinf(MEM_TOLERANCE_PCT) or abs(diff) <= MEM_TOLERANCE_PCT
    verdict = ("not checked" if math.isinf(MEM_TOLERANCE_PCT) else
               f"{'within' if dev_ok else 'OUTSIDE'} {MEM_TOLERANCE_PCT:.0f}%")
    host_ok = hw == host and m.get("host_total") == host
    print(f"device: planned {dev / 2**30:.3f} GiB, measured {m['peak_measured'] / 2**30:.3f} GiB "
          f"({diff:+.1f}%, {verdict}); host: planned {host} bytes ({host / 2**30:.3f} GiB), "
          f"pinned arenas' high-water {hw} bytes ({'equal' if host_ok else 'DIFFERENT'})")
    return 0 if dev_ok and host_ok else 1


def median_tps(path, warmup):
    steps, _ = read_log(path)
    timed = steps[int(warmup):]
    return statistics.median(s["tokens_per_s"] for s in timed) if timed else None


def cmd_ratio(log_a, log_b, warmup, target):
    """tokens/s of run B over run A (medians after warm-up), against target."""
    a, b, target = median_tps(log_a, warmup), median_tps(log_b, warmup), float(target)
    if not a or not b:
        print("missing timed steps")
        return 1
    print(f"{b:,.0f} / {a:,.0f} tok/s = {b / a:.3f} (target >= {target})")
    return 0 if b / a >= target else 1


def cmd_mfu(path, warmup, L, C, V, T, target):
    """MFU of one run (cmd_stats' formula) against target (a fraction)."""
    L, C, V, T, target = int(L), int(C), int(V), int(T), float(target)
    tps = median_tps(path, warmup)
    if not tps:
        print("missing timed steps")
        return 1
    mfu = mfu_of(tps, L, C, V, T)
    print(f"MFU {mfu:.1%} (target >= {target:.0%})")
    return 0 if mfu >= target else 1


def cmd_gelu(path):
    """Worst error of the fused GELU against each form, per dtype."""
    worst = {}
    with open(path) as f:
        for line in f:
            if not line.startswith("gelu epilogue:"):
                continue
            dt = "bf16" if " bf16:" in line else "fp32"
            tail = line.split(":")[-1]
            t = float(tail.split("vs tanh GELU")[1].split(",")[0])
            e = float(tail.split("vs erf GELU")[1])
            w = worst.setdefault(dt, [0.0, 0.0])
            w[0], w[1] = max(w[0], t), max(w[1], e)
    if "fp32" not in worst:
        print("no fp32 'gelu epilogue:' lines (TRAIN_GPT_FUSE_GELU=1 check_kernels --only fused)")
        return 1
    t, e = worst["fp32"]
    form = "tanh" if t <= 1e-5 < e else "erf" if e <= 1e-5 < t else "neither"
    parts = [f"{dt}: vs tanh {v[0]:.2e}, vs erf {v[1]:.2e}" for dt, v in sorted(worst.items())]
    print(f"cuBLASLt's GELU is the {form} form ({'; '.join(parts)}; fp32 tol 1e-5)")
    return 0 if form == "tanh" else 1


def algo_choices(path):
    """problem -> the algorithm chosen for it (the times left out), from
    kernels/cuda/gemm.cu's "gemm algo: PROBLEM: candidate I of N (ALGO) ..." lines"""
    out = {}
    with open(path) as f:
        for line in f:
            if line.startswith("gemm algo:"):
                problem, _, choice = line.split(")")[0].partition(": candidate")
                out[problem] = choice
    return out


def cmd_algos(a, b):
    ca, cb = algo_choices(a), algo_choices(b)
    if not ca or not cb:
        print("no 'gemm algo:' lines (TRAIN_GPT_GEMM_VERBOSE=1)")
        return 1
    if ca == cb:
        print(f"the same algorithm for all {len(ca)} problems")
        return 0
    problems = ca.keys() | cb.keys()
    differ = sum(1 for p in problems if ca.get(p) != cb.get(p))
    print(f"{differ} of {len(problems)} problems chose differently (timing noise)")
    return 1


def timing_rows(path, dtype):
    """The first DTYPE table of a --time log (later ones, appended after a
    '=== ' line, are other runs)."""
    rows, on = {}, False
    with open(path) as f:
        for line in f:
            if line.startswith("(head_forward_backward") and on:
                break  # the table's last line; a model's comparison may follow
            if line.startswith("timing (") or line.startswith("=== "):
                if rows:
                    break
                on = line.startswith(f"timing ({dtype})")
                continue
            parts = line.split()
            if on and len(parts) >= 3:
                for i, p in enumerate(parts):  # the first number is the ms column
                    try:
                        rows[" ".join(parts[:i])] = float(p)
                        break
                    except ValueError:
                        continue
    return rows


def cmd_table(path, dtype, row):
    rows = timing_rows(path, dtype)
    if row not in rows:
        print(f"no row '{row}' in the {dtype} table of {path}")
        return 1
    print(f"{rows[row]:.4f}")
    return 0


def cmd_headx(path, target):
    rows, target = timing_rows(path, "bf16"), float(target)
    need = ["head vs its three gemms", "its logits gemm", "its dx gemm", "its dwte gemm",
            "its loss + dlogits kernel"]
    if any(n not in rows for n in need):
        print("the bf16 timing table has no head rows")
        return 1
    g = rows["its logits gemm"] + rows["its dx gemm"] + rows["its dwte gemm"]
    h = rows["head vs its three gemms"]
    print(f"head {h:.3f} ms / three gemms {g:.3f} ms = {h / g:.2f}x (target <= {target}); "
          f"logits {rows['its logits gemm']:.3f}, loss kernel "
          f"{rows['its loss + dlogits kernel']:.3f}, dx {rows['its dx gemm']:.3f}, "
          f"dwte {rows['its dwte gemm']:.3f} ms")
    return 0 if h / g <= target else 1


def cmd_sweeppick(path, B, C, shape):
    """The sweep's fastest correct variants (the ones to promote), beside
    the ones shipped (each kernel's "(default)" row)."""
    try:
        lines = open(path).read().splitlines()
    except OSError:
        print("the sweep did not run (GPU_CHECK_SECTIONS)")
        return 1
    defaults = []  # the first "(default)" row of each kernel, in order
    for line in lines:
        f = line.split()
        if f and line.rstrip().endswith("(default)") and f[0] not in defaults and \
                len(defaults) < 3:
            defaults.append(f[0])
    # "sweep best B=64 T=1024 C=768 NH=12: forward F 0.2 ms; backward Q + K 0.5 ms"
    for line in lines:
        f = line.split()
        if len(f) < 14 or f[:2] != ["sweep", "best"]:
            continue
        if shape != "0" and (f[2] != f"B={B}" or f[4] != f"C={C}"):
            continue
        pick = [f[7], f[11], f[13]]
        if not (pick[0].startswith("fwd-") and pick[1].startswith("dq-") and
                pick[2].startswith("dkdv-")):
            continue
        if pick == defaults:
            print(f"the sweep's fastest at {f[2]} are the defaults ({','.join(defaults)})")
            return 1
        print(f"{','.join(pick)} vs {','.join(defaults)}")
        return 0
    print(f"no correct variant for each kernel at B={B} C={C} in the sweep")
    return 1


def sweep_defaults(path, B):
    """The shipped kernels' ms at B (their "(default)" rows before the
    "sweep best B=B" line): (forward, dq + dkdv), or None."""
    rows, out = [], None
    for line in open(path).read().splitlines():
        f = line.split()
        if f[:2] == ["sweep", "best"]:
            if len(f) > 2 and f[2] == f"B={B}":
                out = rows
            rows = []
        elif line.rstrip().endswith("(default)") and len(f) > 2 and f[2] == "ms":
            rows.append((f[0], float(f[1])))
    if out is None:
        return None
    ms = {k.split("-")[0]: v for k, v in reversed(out)}  # the first row of each kernel
    if not {"fwd", "dq", "dkdv"} <= set(ms):
        return None
    return ms["fwd"], ms["dq"] + ms["dkdv"]


def cmd_modelrange(pred, what, *args):
    """A measurement against the model's printed range (cuda_perf_model.py
    --write-predictions' "ranges"): exit 1 when it falls outside, 2 when
    either side is missing. what: attn SWEEPLOG B (the default kernels'
    forward and backward, reported apart from the B=4 rows: out of
    sample), step JSONL WARMUP B T (the 124M B=64 recompute 0 step), xl
    JSONL0 JSONL1 WARMUP (throughput recompute 1 / 0)."""
    try:
        ranges = json.load(open(pred)).get("ranges", {})
    except (OSError, ValueError) as e:
        print(f"no model ranges ({e})")
        return 2

    def judge(name, got, key, unit):
        if key not in ranges:
            return f"{name}: no range for {key!r}", 2
        lo, hi = ranges[key]
        mid = (lo + hi) / 2
        err = 100 * (mid - got) / got
        ok = lo <= got <= hi
        return (f"{name} {got:.4g}{unit} {'in' if ok else 'OUTSIDE'} [{lo:.4g}, {hi:.4g}]"
                f" (mid {err:+.0f}%)"), 0 if ok else 1
    if what == "attn":
        try:
            got = sweep_defaults(args[0], args[1])
        except OSError:
            got = None
        if got is None:
            print(f"no default attention rows at B={args[1]} in the sweep")
            return 2
        parts = [judge("forward", got[0], f"attention_forward 124M B={args[1]}", " ms"),
                 judge("backward", got[1], f"attention_backward 124M B={args[1]}", " ms")]
    elif what == "step":
        steps, _ = read_log(args[0])
        timed = steps[int(args[1]):]
        if not timed:
            print("missing timed steps")
            return 2
        ms = statistics.median(s["ms"] for s in timed)
        parts = [judge("step", ms, f"step 124M B={args[2]} r0", " ms")]
    elif what == "xl":
        a, b = median_tps(args[0], args[2]), median_tps(args[1], args[2])
        if not a or not b:
            print("missing timed steps")
            return 2
        parts = [judge("r1/r0", b / a, "XL r1/r0", "")]
    else:
        print(f"modelrange: unknown {what!r}")
        return 2
    print("; ".join(p[0] for p in parts))
    return max(p[1] for p in parts)


def cmd_clocks(path):
    """The clock log's summary (its rows: "TIME, 1980 MHz, 500.00 W")."""
    try:
        lines = open(path).read().splitlines()
    except OSError:
        print("no clock log")
        return 1
    mhz, watts = [], []
    for line in lines[1:]:
        f = [x.strip() for x in line.split(",")]
        if len(f) < 3:
            continue
        try:
            mhz.append(float(f[1].split()[0]))
            watts.append(float(f[2].split()[0]))
        except (ValueError, IndexError):
            continue  # [N/A] or a partial last line
    if not mhz:
        print(f"no samples in {os.path.basename(path)}: {(lines or [''])[-1][:80]!r}")
        return 1
    med = statistics.median
    print(f"{len(mhz)} samples (every 500 ms): SM clock median {med(mhz):.0f} MHz "
          f"(min {min(mhz):.0f}, max {max(mhz):.0f}); power median {med(watts):.0f} W "
          f"(max {max(watts):.0f}); clocks.csv")
    return 0


def main():
    cmds = {"shard": cmd_shard, "grads": cmd_grads, "lgrads": cmd_lgrads, "lstats": cmd_lstats,
            "same": cmd_same, "stats": cmd_stats,
            "mem": cmd_mem, "ratio": cmd_ratio, "mfu": cmd_mfu, "gelu": cmd_gelu,
            "algos": cmd_algos, "table": cmd_table, "headx": cmd_headx,
            "sweeppick": cmd_sweeppick, "modelrange": cmd_modelrange, "clocks": cmd_clocks, "offmem": cmd_offmem}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        print(__doc__)
        return 2
    return cmds[sys.argv[1]](*sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
