#!/usr/bin/env python3
"""dev/check_doc_links.py [ROOT] — every relative link in ROOT/README.md and
ROOT/docs/*.md names a file that exists and, when it has a #anchor, a heading of
that markdown file (anchors made as GitHub makes them: lower case, punctuation
but '-' and '_' dropped, spaces to '-', '-1', '-2'... for repeats). Links inside
fenced code blocks and absolute URLs are not checked. Prints each broken link as
'FILE: TARGET: why' and exits 1 if there is one; used by tests/e2e/tools/test_docs.c."""
import glob
import os
import re
import sys


def outside_fences(path):
    """The lines of a markdown file that are not inside ``` fences."""
    lines, fence = [], False
    with open(path, encoding='utf-8') as f:
        for line in f:
            if line.startswith('```'):
                fence = not fence
                continue
            if not fence:
                lines.append(line)
    return lines


def anchors(path):
    seen = set()
    for line in outside_fences(path):
        m = re.match(r'^#{1,6}\s+(.*?)\s*#*\s*$', line)
        if not m:
            continue
        base = re.sub(r'[^\w\- ]', '', m.group(1).lower()).replace(' ', '-')
        a, k = base, 1
        while a in seen:
            a, k = f'{base}-{k}', k + 1
        seen.add(a)
    return seen


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else '.'
    files = [os.path.join(root, 'README.md')] + sorted(glob.glob(os.path.join(root, 'docs', '*.md')))
    bad = 0
    for f in files:
        for target in re.findall(r'\]\(([^)\s]+)\)', ''.join(outside_fences(f))):
            if re.match(r'[a-zA-Z][a-zA-Z+.-]*:', target):
                continue
            path, _, anchor = target.partition('#')
            full = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            rel = os.path.relpath(f, root)
            if not os.path.exists(full):
                print(f'{rel}: {target}: no such file', file=sys.stderr)
                bad += 1
            elif anchor and full.endswith('.md') and anchor not in anchors(full):
                print(f'{rel}: {target}: no heading with that anchor in {os.path.relpath(full, root)}',
                      file=sys.stderr)
                bad += 1
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
