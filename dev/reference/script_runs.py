#!/usr/bin/python3
"""dev/reference/script_runs.py — runs of scripts/ programs, each a fork of one Python.

Starting Python and importing numpy (and torch) is most of what a run of
scripts/export_hf.py or import_hf.py costs on a tiny model (0.3 CPU-s with
numpy, 2 to 3 with torch, on the 2-core build VM), and the suite runs them
dozens of times. Here the modules are imported once; each run is then a
fork() of this process that executes the script as `python3 SCRIPT ARGS`
would (runpy.run_path as __main__, sys.argv and sys.path[0] set, its stdout
and stderr the given file descriptors) and ends with the status the
interpreter would give: 0, SystemExit's integer, 1 with the message on
stderr for SystemExit's text, 1 with the traceback for an uncaught
exception. The child is a copy of the parent taken before any run, so no
run sees another's module state (export_hf's MADE list, its PROG name).
Test-only: nothing in scripts/ depends on it.

As a library (the reference checks): run(script, args) -> (status, stdout,
stderr) as text, like subprocess.run(..., capture_output=True, text=True).

As a program (tests/lib/script_runs.h):
    script_runs.py [--torch] JOBS OUTDIR
JOBS holds one run a line, tab-separated: SCRIPT ARG...; run k's stdout and
stderr go, together, to OUTDIR/k.out, and its status to OUTDIR/k.rc, in
order. --torch imports torch first too (for .pt files). Prints
"script_runs: PASS" when every run was made, whatever their statuses.
"""
import os
import runpy
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.normpath(os.path.join(HERE, "..", "..", "scripts"))


def preload(torch=False):
    """Import what the scripts import, so that each fork finds it done."""
    if SCRIPTS not in sys.path:
        sys.path.insert(0, SCRIPTS)
    import numpy  # noqa: F401
    import hf_llama  # noqa: F401
    import hf_safetensors  # noqa: F401
    import hf_tokenizer  # noqa: F401
    if torch:
        import torch as t
        t.set_num_threads(1)


def _child(script, args, out_fd, err_fd):
    """In the fork: the script as __main__; never returns."""
    try:
        sys.stdout.flush(), sys.stderr.flush()
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        sys.argv = [script] + list(args)
        # sys.path as `python3 SCRIPT` has it: the script's folder first
        sys.path[:] = [os.path.dirname(os.path.abspath(script))] + \
            [p for p in sys.path if os.path.normpath(p) not in (HERE, SCRIPTS)]
        try:
            runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as e:
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code & 0xFF
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush(), sys.stderr.flush()
    except BaseException:
        code = 99
    os._exit(code)


def run_fds(script, args, out_fd, err_fd):
    """The exit status of SCRIPT ARGS run in a fork, output to the fds."""
    pid = os.fork()
    if pid == 0:
        _child(script, args, out_fd, err_fd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def run(script, args):
    """(status, stdout, stderr) of SCRIPT ARGS, run in a fork."""
    with tempfile.TemporaryFile() as o, tempfile.TemporaryFile() as e:
        rc = run_fds(script, [str(a) for a in args], o.fileno(), e.fileno())
        o.seek(0), e.seek(0)
        return rc, o.read().decode(errors="replace"), e.read().decode(errors="replace")


def main(argv):
    torch = argv[:1] == ["--torch"]
    argv = argv[1:] if torch else argv
    if len(argv) != 2:
        sys.exit("usage: script_runs.py [--torch] JOBS OUTDIR")
    jobs, outdir = argv
    preload(torch)
    with open(jobs) as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]
    for k, line in enumerate(lines):
        script, *args = line.split("\t")
        fd = os.open(os.path.join(outdir, f"{k}.out"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                     0o644)
        rc = run_fds(script, args, fd, fd)
        os.close(fd)
        with open(os.path.join(outdir, f"{k}.rc"), "w") as f:
            f.write(f"{rc}\n")
    print("script_runs: PASS")


if __name__ == "__main__":
    main(sys.argv[1:])
