#!/usr/bin/env python3
"""dev/cuda/check_nccl_emu.py BIN — the NCCL path (distributed/dist_nccl.c) on the
CPU emulator: BIN (build/train_gpt_emu, `make cuda-emu-train`) under
`mpirun -np 2` (and 4: rank_order_rows) with --device cuda, whose collectives are the emulated NCCL
(dev/cuda/emu/emu_nccl.cpp, over MPI), against the same binary's --device cpu
at the same world size (MPI collectives, the fp32 reference). dev/cuda/README.md,
"The NCCL path on the emulator". A tiny GPT-2: L=2, C=64, 4 heads, T=32, B=2 per
rank, a byte vocabulary, fp32, 3 AdamW steps with weight decay; random-byte
shards written here. Rows, each PASS or FAIL (exit 1 on any FAIL):

  - --zero 0, 1, 2, 3: cuda against cpu --zero 0, both at 2 ranks (the cpu's
    --zero levels train the same bits: tests/e2e/ranks): the step-1 loss and
    every gradient (--dump-grads: summed over the ranks) within 1e-4 per
    tensor (max|cuda - cpu| / max|cpu|, check_train_emu.py's tolerance for
    one rank), the 3 steps' losses within 1e-4 relative, and the saved
    parameters after step 3 within 1e-5 absolute (1% of the learning rate,
    the most one AdamW step moves a parameter: a relative bound would not
    do, as AdamW turns a gradient that is rounding noise, such as the key
    bias's, zero in exact arithmetic, into a step of up to lr either way);
  - cuda --zero 1, 2 and 3 bitwise cuda --zero 0 (grads, saved model,
    every step's loss and grad norm; the cpu's grad norms differ in the
    last bits of the double between --zero levels, its models do not);
  - cuda --zero 3 with --recompute 1, 2 and selective bitwise recompute 0
    (the gathers of recomputed blocks, the next block's prefetch);
  - sums in rank order (rank_order_rows): at 4 ranks, on a smaller model
    (L=2, C=32, 2 heads, T=16), cuda bf16 --zero 1, 2, 3 and fp32 --zero 3
    bitwise --zero 0 of the same dtype (grads, saved model, every loss and
    grad norm), the --zero 3 runs with --recompute selective (bf16) and 1
    (fp32), the runs alternating EMU_ORDER=rev and fwd (the communication
    and gather streams run at the latest moment their waits allow, then at
    the earliest: a prefetch not waited for reads the block two before's
    parameters in fwd); the emulated NCCL's own reductions add in a ring's
    order and round bf16 at each step, so a --zero level that leaves the
    order to them differs here (main's NCCL path, before the rank-order
    sums, failed all four rows); and every such run's arenas reach the plan
    to the byte (the receive buffer is planned);
  - one emulated device for two ranks (EMU_DEVICES=1): ncclCommInitRank
    refuses, the run exits non-zero naming the devices it needs.
About 50 CPU-seconds (user + sys) on the shared 2-core machine (2 ranks: 9
runs; 4 ranks: 6 runs, which replaced 4 reruns of 2 ranks in EMU_ORDER=rev:
36 CPU-seconds before, measured twice each, alternated). Needs python3's
standard library and mpirun.
"""
import contextlib
import io
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "gpu_check"))
sys.path.insert(0, HERE)
import gpu_check_tools as tools  # noqa: E402
from check_train_emu import shard  # noqa: E402

L, C, NH, T, B, V = 2, 64, 4, 32, 2, 256
NP = 2
# The rank-order rows' smaller model (4 ranks a run: the dearest runs here)
L_ORD, C_ORD, NH_ORD, T_ORD = 2, 32, 2, 16


def mpirun(np):
    return ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "--mca", "btl",
            "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none", "-np", str(np),
            "-x", "EMU_DEVICES", "-x", "EMU_ORDER", "-x", "OMP_NUM_THREADS"]
fails = 0


def row(name, ok, detail):
    global fails
    fails += 0 if ok else 1
    print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}", flush=True)


class Runner:
    def __init__(self, binary, work):
        self.bin, self.work = binary, work
        shard(f"{work}/train_000.bin", 8000, 1)
        shard(f"{work}/val.bin", 1000, 2)

    def path(self, name):
        return os.path.join(self.work, name)

    def train(self, name, device, zero, env=None, extra=(), quiet=False, np=NP, dtype="fp32",
              shape=(L, C, NH, T)):
        """mpirun -np np BIN ...: 0 or the exit status; output in WORK/name.out."""
        lay, ch, nh, t = shape
        args = ["--train-data", self.path("train_*.bin"), "--val-data", self.path("val.bin"),
                "--val-every", "0", "--val-batches", "1", "--vocab", str(V), "--lr", "1e-3",
                "--weight-decay", "0.1", "--layers", str(lay), "--channels", str(ch),
                "--heads", str(nh), "--seq-len", str(t), "--batch", str(B), "--steps", "3",
                "--device", device, "--dtype", dtype, "--zero", str(zero),
                "--dump-grads", self.path(name + ".grads"), "--save", self.path(name + ".model"),
                "--log", self.path(name + ".jsonl")] + list(extra)
        if device == "cpu":
            args += ["--threads", "1"]
        e = dict(os.environ, OMP_NUM_THREADS="1", EMU_DEVICES=str(np), EMU_ORDER="fwd",
                 TRAIN_GPT_CACHE_DIR=self.path("cache"))
        e.update(env or {})
        with open(self.path(name + ".out"), "wb") as out:
            try:
                rc = subprocess.call(mpirun(np) + [self.bin] + args, stdout=out,
                                     stderr=subprocess.STDOUT, env=e, timeout=300)
            except subprocess.TimeoutExpired:
                rc = "timeout (300 s)"
        if rc != 0 and not quiet:
            tail = open(self.path(name + ".out"), errors="replace").read().splitlines()[-6:]
            print(f"  {name}: exit {rc}\n  " + "\n  ".join(tail))
        return rc

    def steps(self, name):
        st, _ = tools.read_log(self.path(name + ".jsonl"))
        return [(s["step"], s["loss"], s["grad_norm"]) for s in st]

    def same_bits(self, a, b):
        """'' when runs a and b wrote the same gradients, model and steps."""
        diff = [ext for ext in ("grads", "model")
                if open(self.path(f"{a}.{ext}"), "rb").read() != open(self.path(f"{b}.{ext}"), "rb").read()]
        if self.steps(a) != self.steps(b):
            diff.append("losses/grad norms")
        return ", ".join(diff)


def model_err(r, ref, got, sizes):
    """The saved models' parameters: (the largest |got - ref|, its tensor's name)."""
    a = tools.read_floats(r.path(ref + ".model"))
    b = tools.read_floats(r.path(got + ".model"))
    head = 256  # the file's 256-int header, then the parameters
    n = sum(s for _, s in sizes)
    if len(a) != len(b) or len(a) != head + n:
        return float("inf"), f"size {len(a)} vs {len(b)} floats (expected {head + n})"
    if bytes(memoryview(a[:head])) != bytes(memoryview(b[:head])):
        return float("inf"), "headers differ"
    worst, name, off = 0.0, "", head
    for nm, s in sizes:
        e = max((abs(float(x) - float(y)) for x, y in zip(a[off:off + s], b[off:off + s])),
                default=0.0)
        if not all(float(y) == float(y) for y in b[off:off + s]):
            e = float("inf")
        off += s
        if e > worst or e != e or not name:
            worst, name = e, nm
    return worst, name


def rank_order_rows(r):
    """Every --zero adds its sums over ranks in rank order (distributed/dist.h, Order of sums),
    so the stages train the same bits at 4 ranks too, where the emulated NCCL's own reductions
    add in its ring's order (an all-reduce's and a reduce-scatter's differ) and, in bf16,
    round each partial sum. 4 ranks, a smaller model (L_ORD...: these rows are about the
    sums, not the kernels), runs of 4 ranks being the dearest: bf16 at --zero 0, 1, 2, 3 and
    fp32 at --zero 0 and 3; each --zero 3 run with a recompute mode (bitwise recompute 0's
    --zero 0), and the runs alternate EMU_ORDER (bitwise across orders too, in place of
    a second run of each; --zero 3's missing gather wait shows in fwd, so it runs fwd).
    2 ranks: the fp32 rows above (at 2 ranks a sum is x0 + x1 in any order, one
    rounding in bf16 too, so a bf16 run there would check nothing the 4-rank ones do not)."""
    shape = (L_ORD, C_ORD, NH_ORD, T_ORD)
    runs = {"bf16": ((0, "rev", "0"), (1, "rev", "0"), (2, "fwd", "0"), (3, "fwd", "selective")),
            "fp32": ((0, "fwd", "0"), (3, "rev", "1"))}
    planned = []  # runs whose arenas' high-water mark is not the plan (rank 0's summary)
    for dtype, cases in runs.items():
        tag = f"ord4_{dtype}"
        for z, order, rec in cases:
            name = f"{tag}_z{z}"
            if r.train(name, "cuda", z, np=4, dtype=dtype, shape=shape,
                       env={"EMU_ORDER": order}, extra=["--recompute", rec]) == 0:
                out = open(r.path(name + ".out"), errors="replace").read()
                if not re.search(r"memory: arenas planned \d+ bytes; their high-water mark \d+ "
                                 r"bytes \(equal\)", out):
                    planned.append(name)
        for z, order, rec in cases[1:]:
            a, b = f"{tag}_z0", f"{tag}_z{z}"
            ok = all(os.path.exists(r.path(n + ".model")) for n in (a, b))
            d = r.same_bits(a, b) if ok else "a run failed"
            if ok and d:
                d += "; step: loss/grad norm " + " | ".join(
                    f"{n}: " + ", ".join(f"{s[1]:.9g}/{s[2]:.9g}" for s in r.steps(n)) for n in (a, b))
            row(f"cuda {dtype} --zero {z} ({order}, recompute {rec}) vs --zero 0 ({cases[0][1]}) "
                f"bitwise, 4 ranks", not d,
                f"differ: {d}" if d else "step-1 grads, saved model, losses and grad norms identical")
    row("4 ranks: the arenas' high-water mark is the plan (receive buffer included)", not planned,
        f"not in {', '.join(planned)}" if planned else "equal in every run above")


def main():
    if len(sys.argv) != 2 or not os.access(sys.argv[1], os.X_OK):
        print("usage: dev/cuda/check_nccl_emu.py BIN (build/train_gpt_emu)", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="check_nccl_emu.")
    r = Runner(os.path.abspath(sys.argv[1]), work)
    sizes = tools.param_sizes(L, C, V, T)

    cpu = "cpu_z0"
    if r.train(cpu, "cpu", 0) != 0:
        row(f"cpu at {NP} ranks", False, "the reference run failed (output above)")
        return 1
    for z in (0, 1, 2, 3):
        cu = f"cuda_z{z}"
        if r.train(cu, "cuda", z) != 0:
            row(f"cuda --zero {z} vs cpu --zero 0 at {NP} ranks", False, "a run failed (output above)")
            continue
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = tools.compare_grads(r.path(cpu + ".grads"), r.path(cu + ".grads"), sizes, 1e-4)
        row(f"cuda --zero {z} vs cpu --zero 0 at {NP} ranks, step-1 loss and grads (tol 1e-4)", rc == 0,
            buf.getvalue().strip())
        ref, got = r.steps(cpu), r.steps(cu)
        worst = max((abs(g[1] - c[1]) / abs(c[1]) for c, g in zip(ref, got)), default=float("inf"))
        row(f"cuda --zero {z} vs cpu --zero 0 at {NP} ranks, losses of 3 steps (tol 1e-4)",
            len(ref) == 3 == len(got) and worst <= 1e-4,
            f"{', '.join(f'{s[1]:.6f}' for s in got)} vs {', '.join(f'{s[1]:.6f}' for s in ref)}; "
            f"worst rel {worst:.2e}")
        e, name = model_err(r, cpu, cu, sizes)
        row(f"cuda --zero {z} vs cpu --zero 0 at {NP} ranks, parameters after 3 steps (tol 1e-5 abs)",
            e <= 1e-5, f"largest |cuda - cpu| {e:.2e}, in {name}")

    for z in (1, 2, 3):
        a, b = "cuda_z0", f"cuda_z{z}"
        ok = os.path.exists(r.path(a + ".model")) and os.path.exists(r.path(b + ".model"))
        d = r.same_bits(a, b) if ok else "a run failed"
        row(f"cuda --zero {z} vs --zero 0 bitwise ({NP} ranks)", not d,
            f"differ: {d}" if d else "step-1 grads, saved model, losses and grad norms identical")

    for m in ("1", "2", "selective"):
        name = f"cuda_z3_r{m}"
        ok = r.train(name, "cuda", 3, extra=["--recompute", m]) == 0
        d = r.same_bits("cuda_z3", name) if ok and os.path.exists(r.path("cuda_z3.model")) \
            else "a run failed"
        row(f"cuda --zero 3 --recompute {m} vs 0 bitwise", not d,
            f"differ: {d}" if d else "grads, saved model, losses identical")

    rank_order_rows(r)

    rc = r.train("onedev", "cuda", 0, env={"EMU_DEVICES": "1"}, quiet=True)
    out = open(r.path("onedev.out"), errors="replace").read()
    want = f"{NP} ranks on this node need {NP} visible devices"
    row(f"{NP} ranks on one emulated device: refused", rc not in (0, "timeout (300 s)") and want in out
        and "duplicate GPU" in out, f"exit {rc}; names the devices it needs: {want in out}")

    print(f"check_nccl_emu: {'all PASS' if fails == 0 else f'{fails} FAIL'} (runs in {work})")
    if fails == 0:
        subprocess.call(["rm", "-rf", work])
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
