#!/usr/bin/env python3
"""dev/perf_model/gemm_costs.py -- gemm costs per shape, as a GPU timed
them: what the model prices a cuBLASLt matmul at when its shape was timed,
in place of the single GEMM_RATE (hw.py, one 8192^3 product).

Owns: the gemm cost format, its extraction from kernels/cuda/gemm.cu's
choice lines, and the table the model looks shapes up in (GemmTable).

Format: one line per timed problem, anywhere in a text file (other lines
are ignored, so a gpu_check timing.log that carries them is a table):

    gemm_cost M N K DTYPE MS

  M N K  cuda_gemm's problem (kernels/cuda/gemm.cu's key m, n, k; the
         same as ops.Gemm(m, n, k): D is m x n, the inner size k);
  DTYPE  the A and B element type, bf16 or fp32;
  MS     the chosen algorithm's median milliseconds, as gemm.cu timed its
         candidates (GEMM_TUNE_REPS runs after a warm-up, CUDA events).
A shape given more than once (two epilogues, two runs) costs the median.

Source: with TRAIN_GPT_GEMM_VERBOSE=1 or --profile-ops, gemm.cu prints one
line per choice, "gemm algo: m=M n=N k=K t=.. ld=.. bf16->bf16 ...:
candidate P of C (...) X ms, heuristic's first Y ms [timed]"; only timed
choices carry X. `gemm_costs.py LOG...` prints the gemm_cost lines of every
timed choice in LOGs (dev/gpu_check/gpu_check.sh appends them to
timing.log); exit 1 when none is found.
"""
import re
import statistics
import sys

ALGO = re.compile(r'gemm algo: m=(\d+) n=(\d+) k=(\d+) .*?\b(bf16|fp32)->\w+ .*?: candidate '
                  r'\d+ of \d+ \([^)]*\) (\d+(?:\.\d+)?) ms')
COST = re.compile(r'^gemm_cost (\d+) (\d+) (\d+) (bf16|fp32) (\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*$')


def from_algo_lines(text):
    """[(m, n, k, dtype, ms)] of the timed choices in gemm.cu's lines."""
    return [(int(m), int(n), int(k), dt, float(ms)) for m, n, k, dt, ms in ALGO.findall(text)]


def format_rows(rows):
    return ['gemm_cost %d %d %d %s %.5f' % r for r in rows]


def parse(text):
    """{(m, n, k, dtype): seconds} of the gemm_cost lines (median of repeats)."""
    seen = {}
    for line in text.splitlines():
        c = COST.match(line.strip())
        if c:
            key = (int(c.group(1)), int(c.group(2)), int(c.group(3)), c.group(4))
            seen.setdefault(key, []).append(float(c.group(5)) * 1e-3)
    return {k: statistics.median(v) for k, v in seen.items()}


class GemmTable:
    """Measured gemm costs; records which shapes the model looked up, found
    and did not find, for the line that says what the prediction used."""

    def __init__(self, costs, source):
        self.costs, self.source = costs, source
        self.hits, self.misses = set(), set()

    def seconds(self, g, dtype='bf16'):
        key = (g.m, g.n, g.k, dtype)
        if key in self.costs:
            self.hits.add(key)
            return self.costs[key]
        self.misses.add(key)
        return None


def load(path):
    """A GemmTable of the gemm_cost lines in path; ValueError when it has
    none, OSError when it cannot be read."""
    with open(path) as f:
        costs = parse(f.read())
    if not costs:
        raise ValueError('%s: no gemm_cost lines (format: dev/perf_model/gemm_costs.py)' % path)
    return GemmTable(costs, path)


def describe(table, rate):
    """What the gemm predictions used, in one line."""
    if table is None:
        return ('gemm costs: one rate for every shape, %.0f TFLOP/s (hw.py GEMM_RATE; no '
                '--gemm-costs table)' % (rate / 1e12))
    used = len(table.hits) + len(table.misses)
    return ('gemm costs: %d of the %d gemm shapes looked up were timed in %s (%d shapes there); '
            'the others at one rate, %.0f TFLOP/s (hw.py GEMM_RATE)'
            % (len(table.hits), used, table.source, len(table.costs), rate / 1e12))


def main(argv):
    rows = []
    for path in argv:
        try:
            with open(path, errors='replace') as f:
                rows += from_algo_lines(f.read())
        except OSError as e:
            print('gemm_costs.py: %s' % e, file=sys.stderr)
            return 2
    for line in format_rows(rows):
        print(line)
    return 0 if rows else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
