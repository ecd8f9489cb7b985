#!/usr/bin/env python3
"""tests/gpu_check_rehearsal.py — scripts/gpu_check.sh's CPU rehearsal, checked.

`make gpu-check-rehearsal` (CI runs it after cuda-emu-check). Runs
GPU_CHECK_REHEARSAL=1 scripts/gpu_check.sh OUT with every section (or
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

Then once more with GPU_CHECK_BUDGET=0: sections 6-9 each print their SKIP
rows ("time budget (0 s) used") and the script still exits 0.
Exit 0 when all hold; otherwise every failed assertion on stderr, exit 1.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALL = "kernels sweep grads sample recompute nccl perf xlmax head auto"
BUILD = "build (make -j16, sm_80 + sm_90)"
B124 = r"124M B[0-9]+"
AUTO = r"auto vs fixed modes \((124M|XL), B8\)"


def lit(name):
    return re.escape(name)


# Per section, the GPU run's rows in order: (regex of the name, how many,
# the result the rehearsal must give: "run" = PASS or info, "skip" = SKIP
# "(rehearsal)": it needs CUDA).
def rows_of(section):
    if section == "kernels":
        return [(lit("check_kernels (fp32 1e-5, bf16 2e-2)"), 1, "run"),
                (lit("check_kernels, GELU epilogues (FUSE_GELU=1)"), 1, "run"),
                (lit("check_kernels --time"), 1, "skip"),
                (lit("target: head <= 1.3x its three gemms"), 1, "skip"),
                (lit("fc GELU fused vs unfused (bf16, ms)"), 1, "skip"),
                (lit("gemm algorithms: timed vs heuristic (bf16)"), 1, "skip")]
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
    if section == "nccl":
        return [(lit("NCCL 1-rank vs plain run (bitwise)"), 1, "run")]
    if section == "perf":
        r = [(B124 + lit(" recompute 0"), 1, "run"), (B124 + lit(" recompute 1"), 1, "run"),
             (B124 + lit(" recompute 0, heuristic gemm algos"), 1, "run"),
             (B124 + lit(" recompute 0, FUSE_GELU=1"), 1, "run"),
             (lit("124M r0: heuristic gemm algos / default"), 1, "run"),
             (lit("124M r0: FUSE_GELU=1 / default"), 1, "run"),
             (B124 + lit(" recompute 1, one-chunk head"), 1, "run"),
             (B124 + lit(" recompute 0, op profile"), 1, "run")]
        r += [(lit(f"XL (48L C1600) B8 recompute {m}"), 1, "run") for m in (0, 1)]
        return r + [(lit("target: 124M recompute 0 MFU >= 45%"), 1, "run"),
                    (lit("target: XL recompute 1 / 0 throughput >= 0.78"), 1, "run"),
                    (lit("target: 124M chunked head costs <= 3% (r1)"), 1, "run")]
    if section == "xlmax":
        return [(lit(f"XL max micro-batch (recompute {m})"), 1, "run") for m in (0, 1)]
    if section == "head":
        return [(lit("124M max micro-batch, chunked vs one-chunk head"), 1, "run")]
    if section == "auto":  # a row per budget (NBUDGETS=2), per shape
        return [(AUTO + r", budget [0-9.]+MiB", 4, "run")]
    raise ValueError(section)


# With GPU_CHECK_BUDGET=0: the rows of sections 6-9 that say so
def budget_rows_of(section):
    if section == "perf":  # B124 stays its default, 16: --plan is not run
        return [(lit(f"124M B16 recompute {n}"), 1, "budget") for n in
                ("0", "1", "0, heuristic gemm algos", "0, FUSE_GELU=1", "1, one-chunk head",
                 "0, op profile")] + \
               [(lit(f"XL (48L C1600) B8 recompute {m}"), 1, "budget") for m in (0, 1)]
    if section == "xlmax":
        return [(lit(f"XL max micro-batch (recompute {m})"), 1, "budget") for m in (0, 1)]
    if section == "head":
        return [(lit("124M max micro-batch, chunked vs one-chunk head"), 1, "budget")]
    if section == "auto":
        return [(AUTO, 2, "budget")]
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
                  "budget": result == "SKIP" and "time budget (0 s) used" in detail}[want]
            if not ok:
                errors.append(f"row {name!r}: {result} {detail!r}, expected {want}")
    for i, r in enumerate(rows):
        if not used[i]:
            errors.append(f"unexpected row {r[0]!r}: {r[1]} {r[2]!r}")


def run(sections, out, extra_env, errors):
    env = dict(os.environ, GPU_CHECK_REHEARSAL="1", GPU_CHECK_SECTIONS=sections, **extra_env)
    p = subprocess.run(["scripts/gpu_check.sh", out], cwd=ROOT, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        errors.append(f"scripts/gpu_check.sh exited {p.returncode}")
    last = p.stdout.rstrip().splitlines()[-1:] or [""]
    if last[0] != "gpu_check: all PASS":
        errors.append(f"last line {last[0]!r}, expected 'gpu_check: all PASS'")
    return p.stdout


def main():
    sections = os.environ.get("GPU_CHECK_SECTIONS", ALL).split()
    errors = []
    tmp = tempfile.mkdtemp(prefix="gpu_check_rehearsal.")
    try:
        # 1. every section
        out = os.path.join(tmp, "out")
        console = run(" ".join(sections), out, {}, errors)
        expected = [(lit(BUILD), 1, "skip")] + [r for s in sections for r in rows_of(s)]
        check_summary(out, expected, errors)
        log = open(os.path.join(out, "train.log")).read()
        runs = re.findall(r"^=== (.*): exit (\d+) after", log, re.M)
        if not runs:
            errors.append("train.log: no train_gpt runs")
        errors += [f"train.log: run {n!r} exited {rc}" for n, rc in runs if rc != "0"]
        want = {"summary.txt", "train.log", "train_json.log", "nvidia-smi.txt", "build.log"}
        want |= {"kernels.log"} if "kernels" in sections else set()
        want |= {"timing.log"} if "sweep" in sections else set()
        want |= {"dist.log"} if "nccl" in sections else set()
        have = set(os.listdir(out))
        errors += [f"OUTDIR: no {f}" for f in sorted(want - have)]
        errors += [f"OUTDIR: {f} is empty" for f in sorted(want - {"build.log"} & have)
                   if os.path.getsize(os.path.join(out, f)) == 0]
        if len(have) > 8:
            errors.append(f"OUTDIR: {len(have)} files, the device tool returns at most 8")
        if errors:
            sys.stderr.write(console)
        # 2. sections 6-9 past the time budget: SKIP rows, exit 0
        late = [s for s in sections if s in ("perf", "xlmax", "head", "auto")]
        if late:
            out0 = os.path.join(tmp, "out_budget0")
            n = len(errors)
            console = run(" ".join(late), out0, {"GPU_CHECK_BUDGET": "0"}, errors)
            check_summary(out0, [(lit(BUILD), 1, "skip")] +
                          [r for s in late for r in budget_rows_of(s)], errors)
            if len(errors) > n:
                sys.stderr.write(console)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for e in errors:
        print(f"gpu_check_rehearsal: {e}", file=sys.stderr)
    print(f"gpu_check_rehearsal: {'FAIL' if errors else 'PASS'} (sections: {' '.join(sections)})")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
