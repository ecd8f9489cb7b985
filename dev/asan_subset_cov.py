#!/usr/bin/env python3
"""dev/asan_subset_cov.py — compare the product lines the whole suite runs with
the lines make test-asan's subset runs (dev/asan_subset_check.sh runs it).

Input: a coverage build (--build, gcc --coverage: its .gcno beside each object)
and one folder of counters per test (--units DIR/SUITE/@TEST/<absolute path of
the build>/..., from GCOV_PREFIX; DIR/tests.txt lists every test, DIR/times.txt
their wall times). For each test, gcov's JSON (gcov --json-format --stdout)
gives the product lines with a count > 0; the set is cached in
DIR/SUITE/@TEST.lines.json. The product: every .c and .h outside tests/ and dev/
(the library, cli/, train_gpt.c, tokenize.c; the hooked copies of
base/test_hooks.h's files count as their source file). A line is (file, line
number), a function (file, name).

Output: the lines and functions the whole suite and the subset cover, per file
where they differ; every line the suite covers and the subset does not, with
the cheapest tests that cover it. Exit 0 when the subset misses no line, 1
otherwise.
"""
import argparse
import fnmatch
import glob
import json
import multiprocessing
import os
import subprocess
import sys

PRODUCT_TOP = ("base/", "kernels/", "model/", "data/", "distributed/", "ckpt/",
               "interop/", "eval/", "cli/", "train_gpt.c", "tokenize.c")


def is_product(path):
    return path.startswith(PRODUCT_TOP) and path.endswith((".c", ".h"))


def suite_cover(build, sdir):
    """(lines, funcs) of one suite: sets of "file:line" and "file:function"."""
    cache = sdir + ".lines.json"
    if os.path.exists(cache) and os.path.getmtime(cache) >= os.path.getmtime(sdir):
        with open(cache) as f:
            d = json.load(f)
        return set(d["lines"]), set(d["funcs"])
    root = os.path.join(sdir, os.path.abspath(build).lstrip("/"))
    gcdas = sorted(glob.glob(os.path.join(root, "**", "*.gcda"), recursive=True))
    lines, funcs = set(), set()
    for gcda in gcdas:
        rel = os.path.relpath(gcda, root)
        gcno = os.path.join(build, rel[:-len(".gcda")] + ".gcno")
        link = gcda[:-len(".gcda")] + ".gcno"
        if not os.path.exists(link):
            os.symlink(os.path.abspath(gcno), link)
    # one gcov per suite: each object's JSON on a line of its own
    for i in range(0, len(gcdas), 64):
        r = subprocess.run(["gcov", "--json-format", "--stdout"] + gcdas[i:i + 64],
                           capture_output=True, text=True)
        # counters of an earlier build of an object (a commit rebuilds
        # cli/version.o): gcov skips them, which would drop lines silently
        if r.returncode != 0 or "mismatch" in r.stderr:
            raise RuntimeError("asan_subset_cov: %s: gcov: %s (counters from another build: run "
                     "dev/asan_subset_check.sh again)" % (sdir, r.stderr.strip()[:400]))
        for doc in r.stdout.splitlines():
            if not doc.strip():
                continue
            for f in json.loads(doc)["files"]:
                path = os.path.normpath(f["file"])
                if not is_product(path):
                    continue
                for ln in f["lines"]:
                    if ln["count"] > 0:
                        lines.add("%s:%d" % (path, ln["line_number"]))
                for fn in f["functions"]:
                    if fn["execution_count"] > 0:
                        funcs.add("%s:%s" % (path, fn["demangled_name"]))
    with open(cache, "w") as f:
        json.dump({"lines": sorted(lines), "funcs": sorted(funcs)}, f)
    return lines, funcs


def all_lines(build):
    """Every product line and function gcov knows of (the .gcno alone)."""
    cache = os.path.join(build, "units", "all.lines.json")
    # the build's own notes, not the links to them beside the counters
    units = os.path.join(build, "units") + os.sep
    gcnos = sorted(g for g in glob.glob(os.path.join(build, "**", "*.gcno"), recursive=True)
                   if not g.startswith(units) and not os.path.islink(g))
    lines, funcs = set(), set()
    if os.path.exists(cache):
        with open(cache) as f:
            d = json.load(f)
        return set(d["lines"]), set(d["funcs"])
    for i in range(0, len(gcnos), 64):
        r = subprocess.run(["gcov", "--json-format", "--stdout"] + gcnos[i:i + 64],
                           capture_output=True, text=True, check=True)
        for doc in r.stdout.splitlines():
            if not doc.strip():
                continue
            for f in json.loads(doc)["files"]:
                path = os.path.normpath(f["file"])
                if is_product(path):
                    lines.update("%s:%d" % (path, ln["line_number"]) for ln in f["lines"])
                    funcs.update("%s:%s" % (path, fn["demangled_name"]) for fn in f["functions"])
    with open(cache, "w") as f:
        json.dump({"lines": sorted(lines), "funcs": sorted(funcs)}, f)
    return lines, funcs


def read_subset(path):
    globs = []
    with open(path) as f:
        for raw in f:
            s = raw.split("#", 1)[0].strip()
            if s:
                globs.append(s)
    return globs


def by_file(keys):
    out = {}
    for k in keys:
        f, _, rest = k.partition(":")
        out.setdefault(f, []).append(rest)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--units", required=True)
    # the subset: a list of the tests it runs (--subset), or of those it
    # leaves out (--skip: tests/asan_skip.txt, make test-asan's list)
    which = ap.add_mutually_exclusive_group(required=True)
    which.add_argument("--subset")
    which.add_argument("--skip")
    a = ap.parse_args()
    # the units: DIR/SUITE/@TEST, one test's counters each
    units = sorted("%s/%s" % (os.path.basename(os.path.dirname(d)), os.path.basename(d)[1:])
                   for d in glob.glob(os.path.join(a.units, "*", "@*")) if os.path.isdir(d))
    with open(os.path.join(a.units, "tests.txt")) as f:
        listed = [t.strip() for t in f if t.strip()]
    lacking = [t for t in listed if t not in units and t.split("/")[0] + "/suite" not in units]
    if lacking:
        sys.exit("asan_subset_cov: %s: no counters for %d tests, e.g. %s (run dev/asan_subset_check.sh)"
                 % (a.units, len(lacking), lacking[0]))
    times = {}
    tpath = os.path.join(a.units, "times.txt")
    if os.path.exists(tpath):
        with open(tpath) as f:
            for row in f:
                name, secs, rc = row.split()
                times[name] = int(secs)
    listfile = a.subset or a.skip
    subset = read_subset(listfile)
    matched = [u for u in units if any(fnmatch.fnmatchcase(u, g) for g in subset)]
    chosen = matched if a.subset else [u for u in units if u not in set(matched)]
    unknown = [g for g in subset if not any(fnmatch.fnmatchcase(u, g) for u in units)]
    if unknown:
        sys.exit("asan_subset_cov: %s: no test matches %s" % (listfile, ", ".join(unknown)))
    dirs = [os.path.join(a.units, u.split("/")[0], "@" + u.split("/")[1]) for u in units]
    with multiprocessing.Pool(os.cpu_count()) as pool:
        got = pool.starmap(suite_cover, [(a.build, d) for d in dirs])
    cover = dict(zip(units, got))
    full_l = set().union(*(c[0] for c in cover.values()))
    full_f = set().union(*(c[1] for c in cover.values()))
    sub_l = set().union(*(cover[u][0] for u in chosen))
    sub_f = set().union(*(cover[u][1] for u in chosen))
    known_l, known_f = all_lines(a.build)
    t_full = sum(times.get(u, 0) for u in units)
    t_sub = sum(times.get(u, 0) for u in chosen)
    print("product (coverage build): %d files, %d lines, %d functions" %
          (len(by_file(known_l)), len(known_l), len(known_f)))
    print("whole suite: %d tests, %d lines covered, %d functions run, %d s summed" %
          (len(units), len(full_l), len(full_f), t_full))
    print("subset:      %d tests, %d lines covered, %d functions run, %d s summed" %
          (len(chosen), len(sub_l), len(sub_f), t_sub))
    full_files = by_file(full_l)
    sub_files = by_file(sub_l)
    print("per file (lines covered by the whole suite / by the subset), where they differ:")
    for f in sorted(full_files):
        if len(full_files[f]) != len(sub_files.get(f, [])):
            print("  %-36s %5d %5d" % (f, len(full_files[f]), len(sub_files.get(f, []))))
    miss_l = full_l - sub_l
    miss_f = full_f - sub_f
    if not miss_l and not miss_f:
        print("asan_subset_cov: the subset covers every product line and function the suite does")
        return 0
    print("asan_subset_cov: the subset misses %d lines, %d functions:" % (len(miss_l), len(miss_f)))
    for f, fns in sorted(by_file(miss_f).items()):
        print("  %s: functions %s" % (f, ", ".join(sorted(fns))))
    for f, lns in sorted(by_file(miss_l).items()):
        nums = sorted(int(x) for x in lns)
        print("  %s: lines %s" % (f, " ".join(map(str, nums))))
        whos = {}
        for n in nums:
            for u in units:
                if "%s:%d" % (f, n) in cover[u][0]:
                    whos[u] = whos.get(u, 0) + 1
        for u, k in sorted(whos.items(), key=lambda x: times.get(x[0], 0))[:5]:
            print("    %-60s covers %3d of them (%d s)" % (u, k, times.get(u, 0)))
    return 1


if __name__ == "__main__":
    sys.exit(main())
