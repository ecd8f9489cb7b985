#!/usr/bin/env python3
"""dev/suite_times.py LOG... — where the suite's time goes, from Criterion's
--verbose output (`[PASS] suite::name: (12.34s)`, one line a test).

Prints the N slowest tests (N from $N, default 20), slowest first, with the
log each came from, then the count and the sum of their times, then the
suites by their summed time. Each time is that test's wall time as
Criterion measured it, so on a loaded machine it holds the waits for a
core too: compare runs at a like load, and the CPU time of the whole run
(`time`) beside them. Used for dev/notes/suite-speed.md:

  build/run_tests --jobs 2 --verbose --filter '!(@(SERIAL))' > par.log 2>&1
  build/run_tests --jobs 1 --verbose --filter '@(SERIAL)' > ser.log 2>&1
  python3 dev/suite_times.py par.log ser.log

(SERIAL: the Makefile's TEST_SERIAL joined with `|`, as `make test` runs
them.) Exit 0; 2 when a log cannot be read.
"""
import collections
import os
import re
import sys

ROW = re.compile(r"\[(PASS|FAIL|SKIP|CRASH|----)\] (\w+)::(\w+): \(([0-9.]+)s\)")


def main(paths):
    rows = []
    for path in paths:
        try:
            with open(path, errors="replace") as f:
                for line in f:
                    m = ROW.search(line)
                    if m:
                        rows.append((float(m.group(4)), f"{m.group(2)}/{m.group(3)}",
                                     m.group(1), os.path.basename(path)))
        except OSError as e:
            print(f"suite_times: {path}: {e.strerror}", file=sys.stderr)
            return 2
    rows.sort(reverse=True)
    for t, name, status, log in rows[:int(os.environ.get("N", "20"))]:
        print(f"{t:8.2f} s  {status:4} {name}  ({log})")
    print(f"{len(rows)} tests, {sum(r[0] for r in rows):.0f} s summed")
    suites = collections.Counter()
    for t, name, _, _ in rows:
        suites[name.split("/")[0]] += t
    print("by suite: " + ", ".join(f"{s} {t:.0f} s" for s, t in suites.most_common(15)))
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: dev/suite_times.py LOG...", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
