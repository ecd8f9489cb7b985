"""dev/perf_model/build.py -- the kernels as compiled: every
kernels/cuda/*.cu of a source tree, and the attention variants the checker's
sweep holds (dev/cuda/attention*.cu), to an sm_90a cubin, with ptxas's
report.

Owns: nvcc invocation, the ptxas report parser, and source trees taken from
git (`--commit REV`: `git archive REV kernels` into a temporary folder, so
an old kernel is analysed exactly as it was built then).

One nvcc per file (in parallel, JOBS at a time) with the Makefile's device
flags for sm_90a (-O3 -std=c++17 -I. -DHAVE_CUDA) plus -cubin and
-Xptxas -v: the cubin gives the SASS (sass.py), the report gives registers,
spills, stack and static shared memory per kernel. Or none: `prebuilt`, a
folder where the Makefile's build/kres/ rules (the same command) left
PATH.sm_90a.cubin and its report PATH.sm_90a.log for each source PATH.cu,
up to date (`make cuda-perf-model` builds them first; cuda-resources reads
the same reports).
"""
import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor

from . import sass


class BuildError(Exception):
    pass


def find_nvcc():
    """$NVCC when set (None if it is not an executable file), else nvcc on
    PATH or in /usr/local/cuda/bin; None when absent."""
    env = os.environ.get('NVCC')
    cands = [env] if env else [shutil.which('nvcc'), '/usr/local/cuda/bin/nvcc']
    for cand in cands:
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


class KernelInfo:
    """One compiled kernel: SASS, ptxas resources, the file it came from."""

    def __init__(self, kernel, file, res):
        self.kernel = kernel              # sass.Kernel
        self.name = kernel.name           # demangled, with parameters
        self.short = sass.short_name(kernel.name)
        self.file = file
        self.regs = res.get('regs', 0)
        self.spill_st = res.get('spill_st', 0)
        self.spill_ld = res.get('spill_ld', 0)
        self.stack = res.get('stack', 0)
        self.smem_static = res.get('smem', 0)
        self.barriers = res.get('barriers', 0)


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\d+a?)'")


def parse_ptxas(text):
    """{mangled name: resources} from `ptxas -v` output (one architecture)."""
    out, cur = {}, None
    for line in text.splitlines():
        m = _ENTRY.search(line)
        if m:
            cur = out.setdefault(m.group(1), {})
            continue
        if cur is None:
            continue
        m = re.search(r'(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads',
                      line)
        if m:
            cur['stack'], cur['spill_st'], cur['spill_ld'] = map(int, m.groups())
        m = re.search(r'Used (\d+) registers', line)
        if m:
            cur['regs'] = int(m.group(1))
            sm = re.search(r'(\d+) bytes smem', line)
            cur['smem'] = int(sm.group(1)) if sm else 0
            br = re.search(r'used (\d+) barriers', line)
            cur['barriers'] = int(br.group(1)) if br else 0
    return out


def _compile_one(nvcc, root, src, outdir):
    name = os.path.splitext(os.path.basename(src))[0]
    cubin = os.path.join(outdir, name + '.cubin')
    cmd = [nvcc, '-cubin', '-arch=sm_90a', '-O3', '-std=c++17', '-I.', '-DHAVE_CUDA',
           '-Xptxas', '-v', src, '-o', cubin]
    p = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if p.returncode != 0:
        raise BuildError('nvcc failed on %s:\n%s%s' % (src, p.stdout, p.stderr))
    return src, cubin, p.stdout + p.stderr


def _prebuilt_one(prebuilt, src):
    base = os.path.join(prebuilt, os.path.splitext(src)[0] + '.sm_90a')
    try:
        with open(base + '.log') as f:
            log = f.read()
    except OSError as e:
        raise BuildError('%s: no prebuilt report for %s (%s; `make cuda-perf-model` builds it)'
                         % (prebuilt, src, e.strerror))
    if not os.path.isfile(base + '.cubin'):
        raise BuildError('%s: no prebuilt cubin for %s (`make cuda-perf-model` builds it)'
                         % (prebuilt, src))
    return src, base + '.cubin', log


def compile_tree(root, jobs=None, outdir=None, files=None, prebuilt=None):
    """Every kernels/cuda/*.cu and dev/cuda/attention*.cu under root (or
    `files`, paths relative to root) -> list of KernelInfo, in file order,
    then section order. With `prebuilt` (a folder), their cubins and
    reports are read from there and nothing is compiled."""
    nvcc = find_nvcc()
    if nvcc is None and prebuilt is None:
        raise BuildError('nvcc not found (set NVCC=/path/to/nvcc)')
    kdir = os.path.join(root, 'kernels', 'cuda')
    if files is None:
        if not os.path.isdir(kdir):
            raise BuildError('%s: no kernels/cuda folder' % root)
        files = sorted(os.path.join('kernels', 'cuda', f) for f in os.listdir(kdir)
                       if f.endswith('.cu'))
        vdir = os.path.join(root, 'dev', 'cuda')  # absent from older trees
        if os.path.isdir(vdir):
            files += sorted(os.path.join('dev', 'cuda', f) for f in os.listdir(vdir)
                            if f.startswith('attention') and f.endswith('.cu'))
    own = outdir is None and prebuilt is None
    outdir = outdir or (None if prebuilt else tempfile.mkdtemp(prefix='perf_model.'))
    try:
        if prebuilt:
            results = [_prebuilt_one(prebuilt, f) for f in files]
        else:
            with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as ex:
                results = list(ex.map(lambda f: _compile_one(nvcc, root, f, outdir), files))
        infos = []
        for src, cubin, log in results:
            res = parse_ptxas(log)
            for k in sass.read_cubin(cubin):
                infos.append(KernelInfo(k, src, res.get(k.mangled, {})))
        return infos
    finally:
        if own:
            shutil.rmtree(outdir, ignore_errors=True)


def tree_at_commit(repo, rev, dest):
    """Extract the tree of commit `rev` of the git repository `repo` into
    dest (which must exist): all of it, so that every header a kernel
    includes is the one of that commit. Raises BuildError naming the commit."""
    try:
        arch = subprocess.run(['git', '-C', repo, 'archive', rev],
                              capture_output=True, check=True).stdout
    except FileNotFoundError:
        raise BuildError('git not found: --commit needs git')
    except subprocess.CalledProcessError as e:
        raise BuildError('git archive %s failed: %s' %
                         (rev, e.stderr.decode(errors='replace').strip()))
    subprocess.run(['tar', '-x', '-C', dest], input=arch, check=True)
    return dest


def commit_id(repo, rev='HEAD'):
    p = subprocess.run(['git', '-C', repo, 'rev-parse', '--short', rev], capture_output=True,
                       text=True)
    return p.stdout.strip() if p.returncode == 0 else 'unknown'
