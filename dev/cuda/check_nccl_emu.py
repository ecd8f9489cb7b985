#!/usr/bin/env python3
"""dev/cuda/check_nccl_emu.py BIN — the NCCL path (distributed/dist_nccl.c) on the
CPU emulator: BIN (build/train_gpt_emu, `make cuda-emu-train`) under
`mpirun -np 2` with --device cuda, whose collectives are the emulated NCCL
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
  - cuda --zero 0, 1, 2, 3 with EMU_ORDER=rev bitwise EMU_ORDER=fwd: the
    communication and gather streams run at the earliest moment their
    waits allow, then at the latest (a prefetch not waited for reads the
    block two before's parameters in fwd);
  - one emulated device for two ranks (EMU_DEVICES=1): ncclCommInitRank
    refuses, the run exits non-zero naming the devices it needs.
About 25 CPU-seconds (2 ranks, 14 runs). Needs python3's standard library and mpirun.
"""
import contextlib
import io
import os
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
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "--mca", "btl",
          "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none", "-np", str(NP),
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

    def train(self, name, device, zero, env=None, extra=(), quiet=False):
        """mpirun -np 2 BIN ...: 0 or the exit status; output in WORK/name.out."""
        args = ["--train-data", self.path("train_*.bin"), "--val-data", self.path("val.bin"),
                "--val-every", "0", "--val-batches", "1", "--vocab", str(V), "--lr", "1e-3",
                "--weight-decay", "0.1", "--layers", str(L), "--channels", str(C),
                "--heads", str(NH), "--seq-len", str(T), "--batch", str(B), "--steps", "3",
                "--device", device, "--dtype", "fp32", "--zero", str(zero),
                "--dump-grads", self.path(name + ".grads"), "--save", self.path(name + ".model"),
                "--log", self.path(name + ".jsonl")] + list(extra)
        if device == "cpu":
            args += ["--threads", "1"]
        e = dict(os.environ, OMP_NUM_THREADS="1", EMU_DEVICES=str(NP), EMU_ORDER="fwd",
                 TRAIN_GPT_CACHE_DIR=self.path("cache"))
        e.update(env or {})
        with open(self.path(name + ".out"), "wb") as out:
            try:
                rc = subprocess.call(MPIRUN + [self.bin] + args, stdout=out,
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

    for z in (0, 1, 2, 3):
        name = f"cuda_z{z}_rev"
        ok = r.train(name, "cuda", z, env={"EMU_ORDER": "rev"}) == 0
        d = r.same_bits(f"cuda_z{z}", name) if ok and os.path.exists(r.path(f"cuda_z{z}.model")) \
            else "a run failed"
        row(f"cuda --zero {z}: EMU_ORDER=rev vs fwd bitwise", not d,
            f"differ: {d}" if d else "grads, saved model, losses identical")

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
