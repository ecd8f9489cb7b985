#!/usr/bin/env python3
"""dev/check_paths.py [ROOT] — the tree's own words about the tree are true.

Two checks, over the files git tracks (or every file below ROOT outside git):
1. Include guards. A header of the product (outside dev/, tests/, scripts/)
   opens with `#ifndef GUARD` / `#define GUARD`, and GUARD is its path in
   capitals with `/` and `.` as `_`: cli/recompute.h -> CLI_RECOMPUTE_H. A
   guard named after a file that moved is how a reader is sent to the wrong
   place.
2. Paths quoted in comments and docs. Every `folder/.../name.ext` whose first
   folder is one of the tree's top-level folders must exist, in source files
   (C, CUDA, Python, shell, the Makefile) and in Markdown. Paths that name
   other projects' files (llm.c's dev/data/hellaswag.py, say) are listed in
   FOREIGN; generated ones (build/, datasets/) are not checked, since their
   folders are not in the tree.

Prints one line per fault, `file:line: ...`, and exits 1; exits 0 when none.
Run by tests/e2e/tools/test_docs.c.
"""
import os
import re
import subprocess
import sys

PRODUCT_HEADER_EXT = ('.h', '.cuh')
UNGUARDED_FOLDERS = ('dev/', 'tests/', 'scripts/')
TEXT_EXT = ('.c', '.h', '.cu', '.cuh', '.cpp', '.py', '.sh', '.md')
TEXT_NAMES = ('Makefile', 'run', 'layers')
# The tree's top-level folders whose files a path may name.
TOP = ('base', 'cli', 'ckpt', 'data', 'distributed', 'eval', 'interop', 'kernels', 'model',
       'tests', 'dev', 'scripts', 'docs')
# Data files (.bin, .jsonl) are left out: the paths that name them are a
# user's or a run's, made at run time.
EXT = r'(?:c|h|cu|cuh|cpp|py|sh|md|json|csv|png|txt)'
PATH = re.compile(r'(?<![\w./-])((?:' + '|'.join(TOP) + r')/[\w./-]*?\w\.' + EXT + r')(?![\w/])')
# Other projects' files that share a folder name with ours (llm.c's tree).
FOREIGN = {
    'dev/data/hellaswag.py', 'dev/data/tinyshakespeare.py', 'dev/data/fineweb.py',
    'dev/data/data_common.py', 'dev/cuda/attention_forward.cu', 'dev/cuda/attention_backward.cu',
    'dev/cuda/Makefile', 'dev/test/test_dataloader.c', 'dev/eval/export_hf.sh',
    'dev/cuda/layernorm_forward.cu', 'dev/cuda/matmul_forward.cu',
}


# This checker's own test plants paths that must not exist.
SELF_TEST = 'tests/e2e/tools/test_paths.c'


def tracked(root):
    try:
        out = subprocess.run(['git', '-C', root, 'ls-files'], capture_output=True, text=True,
                             check=True).stdout
        return [p for p in out.splitlines() if os.path.isfile(os.path.join(root, p))]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith('.') and x not in ('build', 'datasets')]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return files


def guard_faults(root, path):
    want = re.sub(r'[/.]', '_', path).upper()
    lines = open(os.path.join(root, path), encoding='utf-8', errors='replace').read().splitlines()
    for i, line in enumerate(lines):
        m = re.match(r'\s*#\s*ifndef\s+(\w+)', line)
        if m:
            if m.group(1) != want:
                return [f'{path}:{i + 1}: include guard {m.group(1)}, not {want}']
            nxt = lines[i + 1] if i + 1 < len(lines) else ''
            if not re.match(r'\s*#\s*define\s+' + want + r'\b', nxt):
                return [f'{path}:{i + 2}: #ifndef {want} is not followed by its #define']
            return []
        if re.match(r'\s*#\s*(include|define|if)', line):
            break
    return [f'{path}:1: no include guard (want #ifndef {want})']


def path_faults(root, path, existing):
    faults = []
    text = open(os.path.join(root, path), encoding='utf-8', errors='replace').read()
    base = os.path.dirname(path)
    for n, line in enumerate(text.splitlines(), 1):
        for m in PATH.finditer(line):
            p = m.group(1).rstrip('.')
            # a placeholder (NAME, <layer>) or a test's deliberately missing file
            if p in FOREIGN or p in existing or 'no_such' in p or re.search(r'/[A-Z]+[./]', p):
                continue
            # a Markdown link or a path written relative to its own folder
            if os.path.normpath(os.path.join(base, p)) in existing:
                continue
            faults.append(f'{path}:{n}: names {p}, which does not exist')
    return faults


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else '.'
    files = tracked(root)
    existing = set(os.path.normpath(p) for p in files)
    faults = []
    for p in files:
        if p.endswith(PRODUCT_HEADER_EXT) and not p.startswith(UNGUARDED_FOLDERS):
            faults += guard_faults(root, p)
        name = os.path.basename(p)
        if (p.endswith(TEXT_EXT) or name in TEXT_NAMES) and not p.startswith('tests/data/') \
                and p != SELF_TEST:
            faults += path_faults(root, p, existing)
    for f in faults:
        print(f)
    if faults:
        print(f'check_paths: {len(faults)} fault(s)', file=sys.stderr)
        return 1
    print('check_paths: every guard matches its file and every quoted path exists')
    return 0


if __name__ == '__main__':
    sys.exit(main())
