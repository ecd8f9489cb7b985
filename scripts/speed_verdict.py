#!/usr/bin/env python3
"""scripts/speed_verdict.py — tokens/s of repeated, alternated runs per mode,
as a median with its spread, and whether the modes differ beyond it.

usage: speed_verdict.py [--label NAME] < lines of "MODE TOKENS_PER_S" (one run each)

Prints one line per mode, in the order the modes first appear:
    tokens/s MODE: median M (min-max LO-HI over N runs)
and then, for each mode after the first, a verdict against the first:
    "tokens/s MODE vs FIRST: within noise (the ranges overlap)" when the two
    min-max ranges overlap (or either mode has a single run: no spread,
    so nothing it shows is a difference), else
    "tokens/s MODE vs FIRST: MODE P% faster|slower (the ranges do not overlap)"
(NAME for "tokens/s" with --label).
A difference is claimed only when every run of one mode beat every run of
the other: the spread of a shared machine is larger than the median's
error, and two overlapping ranges support no ordering. Used by
scripts/compare_memory.sh and scripts/memory_report.sh; tested on canned
numbers by tests/e2e/tools/test_speed_verdict.c."""
import statistics
import sys


def summarize(runs):
    return statistics.median(runs), min(runs), max(runs)


def verdict(mode, runs, first, first_runs):
    med, lo, hi = summarize(runs)
    med0, lo0, hi0 = summarize(first_runs)
    if len(runs) < 2 or len(first_runs) < 2:
        return f"{mode} vs {first}: within noise (one run of a mode has no spread)"
    if lo <= hi0 and lo0 <= hi:
        return f"{mode} vs {first}: within noise (the ranges overlap)"
    pct = 100.0 * (med - med0) / med0
    return (f"{mode} vs {first}: {mode} {abs(pct):.1f}% {'faster' if pct > 0 else 'slower'} "
            f"(the ranges do not overlap)")


def main():
    label = "tokens/s"
    if len(sys.argv) == 3 and sys.argv[1] == "--label":
        label = sys.argv[2]
    elif len(sys.argv) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    order, runs = [], {}
    for n, line in enumerate(sys.stdin, 1):
        f = line.split()
        if not f:
            continue
        try:
            mode, v = f[0], float(f[1])
        except (IndexError, ValueError):
            print(f"speed_verdict.py: line {n}: expected 'MODE TOKENS_PER_S', got {line!r}",
                  file=sys.stderr)
            return 1
        if mode not in runs:
            order.append(mode)
            runs[mode] = []
        runs[mode].append(v)
    if not order:
        print("speed_verdict.py: no runs on stdin", file=sys.stderr)
        return 1
    for m in order:
        med, lo, hi = summarize(runs[m])
        print(f"{label} {m}: median {med:,.0f} (min-max {lo:,.0f}-{hi:,.0f} over "
              f"{len(runs[m])} run{'s' if len(runs[m]) != 1 else ''})")
    for m in order[1:]:
        print(f"{label} {verdict(m, runs[m], order[0], runs[order[0]])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
