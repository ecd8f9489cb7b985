#!/usr/bin/env python3
"""dev/check_layers.py [ROOT] — every #include points down the layers.

The allowed order is written once, in dev/layers: one line per layer,
`layer  may include: a b c` (the layer itself is always allowed; `#` starts
a comment). A layer is a top-level folder (ckpt, model, data, ...); `cli` is
cli/ and the programs at the top of the tree (train_gpt.c, tokenize.c).
tests/, dev/ and scripts/ test or measure every layer and are not checked.

For each quoted include in a C, CUDA or header file of a checked layer, the
included file is found as the compiler would find it: next to the includer
first, then from the root (-I.). Angle-bracket includes are system or
library headers, except that they must not name a file of the tree.

Prints one line per violation, `file:line: layer X includes Y (layer Z)`,
and exits 1; exits 0 when every include points down; exits 2 when
dev/layers is missing or malformed. Used by tests/e2e/tools/test_layers.c.
"""
import os
import re
import sys

SOURCE_EXT = ('.c', '.h', '.cu', '.cuh')
UNCHECKED = {'tests', 'dev', 'scripts', 'docs', 'build', '.git', '.ci', 'gpu_bundle',
             'datasets', 'out'}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def read_rules(root):
    """{layer: set of layers it may include} from dev/layers."""
    path = os.path.join(root, 'dev', 'layers')
    try:
        text = open(path, encoding='utf-8').read()
    except OSError as e:
        print(f'check_layers: {path}: {e.strerror}', file=sys.stderr)
        sys.exit(2)
    rules = {}
    for line in text.splitlines():
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        mm = re.match(r'^([a-z_]+)\s+may include:\s*(.*)$', line)
        if not mm:
            print(f'check_layers: {path}: not a rule: {line!r} '
                  '(expected "model  may include: kernels base")', file=sys.stderr)
            sys.exit(2)
        below = mm.group(2).replace(',', ' ').split()
        rules[mm.group(1)] = {mm.group(1)} | {b for b in below if b != '-'}
    if 'cli' not in rules or len(rules) < 2:
        print(f'check_layers: {path}: names no layers '
              '(expected lines like "model  may include: kernels base")', file=sys.stderr)
        sys.exit(2)
    for layer, allowed in rules.items():
        unknown = allowed - set(rules)
        if unknown:
            print(f'check_layers: {path}: layer {layer} may include unknown layer(s) '
                  f'{" ".join(sorted(unknown))}', file=sys.stderr)
            sys.exit(2)
    return rules


def layer_of(relpath):
    """The layer of a file given relative to the root, or None if unchecked."""
    parts = relpath.split(os.sep)
    if len(parts) == 1:
        return 'cli'
    return None if parts[0] in UNCHECKED else parts[0]


def resolve(root, includer, name):
    """Path of an included file relative to root, or None if not in the tree."""
    for base in (os.path.dirname(includer), ''):
        cand = os.path.normpath(os.path.join(base, name))
        if not cand.startswith('..') and os.path.isfile(os.path.join(root, cand)):
            return cand
    return None


def check(root):
    rules = read_rules(root)
    bad = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir == '.':
            dirnames[:] = [d for d in dirnames if d not in UNCHECKED]
        for fn in sorted(filenames):
            if not fn.endswith(SOURCE_EXT):
                continue
            rel = os.path.normpath(os.path.join(rel_dir, fn))
            layer = layer_of(rel)
            if layer is None:
                continue
            if layer not in rules:
                bad.append(f'{rel}: folder {layer}/ is not a layer in dev/layers')
                continue
            with open(os.path.join(root, rel), encoding='utf-8', errors='replace') as f:
                for n, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    target = resolve(root, rel, m.group(2))
                    if target is None:
                        continue  # a system or library header
                    tlayer = layer_of(target) or target.split(os.sep)[0]
                    if m.group(1) == '<':
                        bad.append(f'{rel}:{n}: <{m.group(2)}> names a file of the tree '
                                   f'({target}); use quotes')
                    elif tlayer not in rules.get(layer, ()):
                        bad.append(f'{rel}:{n}: layer {layer} includes {m.group(2)} '
                                   f'(layer {tlayer}), which it may not')
    return bad


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else '.'
    bad = check(root)
    for b in bad:
        print(b)
    if bad:
        print(f'check_layers: {len(bad)} include(s) point up or sideways; the allowed order '
              'is in dev/layers', file=sys.stderr)
        return 1
    print('check_layers: every include points down the layers')
    return 0


if __name__ == '__main__':
    sys.exit(main())
