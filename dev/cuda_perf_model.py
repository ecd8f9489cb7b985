#!/usr/bin/env python3
"""dev/cuda_perf_model.py -- the static performance model of the CUDA
backend (`make cuda-perf-model`): what every hand-written kernel should take
on an H200, predicted on a machine without a GPU;
dev/notes/perf-model.md says how it works and what it predicts.

  dev/cuda_perf_model.py                  predictions for this tree:
        ptxas resources of every kernel; for the modelled launches at GPT-2
        124M (B=64, gpu_check's micro-batch) and XL (B=8): occupancy, the
        SASS mix of the hot loop, round trips, the bound and the time; the
        per-op times (also at check_timing's B=4 shape); the step and MFU at
        recompute 0 and 1; then the calibration on the recorded old kernels
  --commit REV                analyse kernels/ as of commit REV instead
  --calibrate [REV]           only the calibration: the tree of REV (default
                              7dd63ea, the commit of the recorded timings)
                              against dev/notes/gpu-results.md's runs 2 and 3
  --fit                       the calibration, then the fit of hw.py's
                              fitted constants (prints them; hw.py keeps the
                              values a fit printed)
  --measured TIMING.LOG       predicted (this tree, B=4) beside a GPU run's
                              check_kernels --time table, with the median
                              error: the table dev/notes/gpu-results.md records
  --write-predictions FILE    the per-op predictions at B=4 as JSON (for
                              dev/gpu_check/gpu_bundle.sh)
  --compare TIMING.LOG --predictions FILE [--max-error F]
                              that JSON beside a timing table; needs no nvcc
                              (dev/gpu_check/gpu_check.sh runs it on the GPU);
                              with --max-error, exit 1 when the median
                              per-op |predicted - measured| / measured is
                              over F (gpu_check: 0.25) or no op compares
  --gemm-costs FILE           price each gemm whose shape FILE's gemm_cost
                              lines time (dev/perf_model/gemm_costs.py; a
                              gpu_check timing.log carries them) at that
                              time, the others at hw.py's one GEMM_RATE;
                              the output says which it used
  --no-calibrate              skip the calibration section
  --fuse-gelu                 model the fc GELU in cuBLASLt's epilogues
                              (TRAIN_GPT_FUSE_GELU=1) instead of the
                              default separate pass
  --device NAME                the parameter set (dev/perf_model/hw.py DEVICES)
                              for a device as the run names it, e.g. "NVIDIA
                              H100 80GB HBM3": H100 or H200 (default H200)
  --self-test                 the model's own tests (test_perf_model.py)
  --verbose                   also the loop nest of every modelled kernel
  --jobs N                    parallel nvcc runs (default: the CPU count)
  --prebuilt DIR              the working tree's sm_90a cubins and ptxas
                              reports from DIR (the Makefile's build/kres/,
                              which `make cuda-perf-model` brings up to date
                              and passes) instead of compiling them; not
                              with --commit

Exit status: 0; 1 when an op of the step matches no compiled kernel (the
table in dev/perf_model/ops.py needs an entry for it), a self-test
fails, or --compare's median error is over --max-error; 2 on a bad argument, an unreadable file or an nvcc failure. Without
nvcc it prints that it skipped and exits 0, as there is nothing to analyse.
Environment: NVCC (the compiler), JOBS.
"""
import argparse
import atexit
import json
import os
import statistics
import sys
import shutil
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from perf_model import build, calibrate, gemm_costs, hw, measured, predict, report  # noqa: E402
from perf_model import ops as ops_mod  # noqa: E402
from perf_model import step as step_mod  # noqa: E402
from perf_model import loops as loops_mod  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BANNER = ('PREDICTIONS of the static model (dev/cuda_perf_model.py; no GPU ran this). '
          'Measured numbers are in dev/notes/gpu-results.md.')


def out(line=''):
    print(line, flush=True)


def fail(msg, code=2):
    print('cuda_perf_model.py: ' + msg, file=sys.stderr)
    sys.exit(code)


def compile_at(rev, jobs, prebuilt=None):
    """(kernels, tree root, label) for the working tree (its cubins from
    prebuilt when given) or commit rev."""
    if rev is None:
        return build.compile_tree(ROOT, jobs=jobs, prebuilt=prebuilt), ROOT, \
            'working tree at %s' % build.commit_id(ROOT)
    tmp = tempfile.mkdtemp(prefix='perf_model_tree.')
    atexit.register(shutil.rmtree, tmp, True)
    build.tree_at_commit(ROOT, rev, tmp)
    return build.compile_tree(tmp, jobs=jobs), tmp, 'commit %s' % build.commit_id(ROOT, rev)


def timing_preds(P, table, kernels):
    """Per-op predictions at check_timing's shape, as a row timed alone."""
    names = [measured.op_key(r) for r in measured.CALIB_OPS_MS] + measured.TIMED_SINCE
    return [predict.predict_op(P, table, n, ops_mod.TIMING, kernels, P['T_LAUNCH_TIMED'])
            for n in names if n in table]


BAND = ('optimistic (perfect overlap, %.2f GHz) to pessimistic (no overlap of the contended '
        'pipes, 1.755 GHz tensor clock, gemms at 600 TFLOP/s, L2 round trips +30%%)'
        % (hw.CLOCK_HZ / 1e9))


def banded(P, fn):
    """fn(P) and (fn(optimistic P), fn(pessimistic P)): hw.band's range."""
    lo, hi = hw.band(P)
    return fn(P), (fn(lo), fn(hi))


def section(title):
    out()
    out('==== ' + title + ' ====')


def variant_rows(P, table, shape, kernels, missing):
    """The compiled variants that are not the default (ops.VARIANTS), each
    beside its op, timed alone. A variant row the table cannot model is
    reported like a missing op of the step."""
    vt = ops_mod.variant_table()
    both = dict(table, **vt)
    section('attention variants at %s: PREDICTIONS, never measured (assumes HGMMA at the '
            'spec peak WGMMA_FLOP_PER_CLK = %.0f FLOP/clk/SM, HMMA at MMA_SYNC_FLOP_PER_CLK = '
            '%.0f, and wgmma waits costed by the compiler\'s stall counts only)' %
            (shape, P['WGMMA_FLOP_PER_CLK'], P['MMA_SYNC_FLOP_PER_CLK']))
    preds, band = banded(P, lambda Q: [
        predict.predict_op(Q, both, n, shape, kernels, Q['T_LAUNCH_TIMED'])
        for n in ['attention_forward', 'attention_backward'] + sorted(vt)])
    report.op_rows(preds, out, band=band)
    for p in preds:
        if p.seconds is None:
            missing['%s at %s' % (p.name, shape.name)] = p.note


def show_predictions(P, kernels, root, label, verbose, fuse_gelu=False):
    table = ops_mod.op_table(root, fuse_gelu)
    out(BANNER)
    out('kernels: %s; %s (%d SMs, %.2f GHz, HBM %.1f TB/s); constants: dev/perf_model/hw.py'
        % (label, P_DEVICE[0], P['SMS'], P['CLOCK_HZ'] / 1e9, P['HBM_BW'] / 1e12))
    out('fc GELU: ' + ("in cuBLASLt's epilogues (TRAIN_GPT_FUSE_GELU=1; --fuse-gelu)" if fuse_gelu
                       else 'a separate pass (the default: TRAIN_GPT_FUSE_GELU unset)'))
    section('ptxas (sm_90a): registers, spill stores/loads and stack (bytes per thread), '
            'static shared memory (bytes per block)')
    report.resources(kernels, out)
    missing, over = {}, {}
    steps, steps_lo, steps_hi = [], [], []
    for shape in report.shapes_default():
        section('modelled launches at %s: blocks/SM (limiter), the unit of work (one tile of '
                'the hot loop starting at the address shown, or one pass of the steady loop of '
                'a memory-bound kernel) per warp: instructions, mix in %% of issue, '
                'serialized/prefetched global round trips, T_warp (cycles), bound' % shape)
        report.kernel_table(P, table, shape, kernels, out)
        if verbose:
            for k in kernels:
                pf = loops_mod.PathFinder(k.kernel.instrs)
                out('  %s:' % k.short)
                for line in loops_mod.describe_loops(pf) or ['no loops']:
                    out('    ' + line)
        section('tile kernels at %s, the defaults and the variants: the share of its binding '
                'roofline each is predicted to reach (busiest pipe at %.2f GHz, perfect overlap); mma.sync at most %.0f%% '
                '(hw.py MMA_ROOF_SHARE_MAX)' % (shape, P['CLOCK_HZ'] / 1e9,
                                                100 * P['MMA_ROOF_SHARE_MAX']))
        for kname, share in report.roof_rows(P, dict(table, **ops_mod.variant_table()), shape,
                                             kernels, out):
            over['%s at %s' % (kname, shape.name)] = share
        section('per-op predictions at %s (one call, inside a step); range: %s' % (shape, BAND))
        preds, band = banded(P, lambda Q: [
            predict.predict_op(Q, table, n, shape, kernels, Q['T_LAUNCH_STEP'])
            for n in step_mod.step_ops()])
        report.op_rows(preds, out, band=band)
        variant_rows(P, table, shape, kernels, missing)
        for rc in (0, 1):
            sp, sband = banded(P, lambda Q: step_mod.predict_step(Q, table, shape, kernels, rc))
            steps.append(sp)
            steps_lo.append(sband[0])
            steps_hi.append(sband[1])
    section('per-op predictions at check_timing\'s shape %s (each timed alone); range: %s'
            % (ops_mod.TIMING, BAND))
    preds, band = banded(P, lambda Q: timing_preds(Q, table, kernels))
    report.op_rows(preds, out, band=band)
    section('step: predicted time and MFU (gpu_check\'s formula: tokens/s x (6N + 6LCT) / '
            '989 TFLOP/s); range: %s' % BAND)
    report.step_summary(steps, P['DENSE_BF16_PEAK'], out, band=(steps_lo, steps_hi))
    for sp in steps:
        out()
        report.step_table(sp, P['DENSE_BF16_PEAK'], out)
        missing.update({n: sp.ops[n].note for n in sp.missing})
    out()
    out(gemm_costs.describe(P.get('GEMM_TABLE'), P['GEMM_RATE']))
    return missing, over


def show_calibration(P, kernels, root, label):
    table = ops_mod.op_table(root)
    section('calibration: %s against dev/notes/gpu-results.md run 2 (check_kernels --time, B=4) '
            'and run 3 (steps); fitted constants were fitted on these rows, the steps never' %
            label)
    rows = calibrate.compare_ops(P, table, kernels, measured.CALIB_OPS_MS)
    meas = {measured.op_key(r): ms for r, ms, _ in rows}
    report.op_rows([p for _, _, p in rows], out, meas)
    err = calibrate.median_error([(ms, p.seconds * 1e3 if p.seconds else None)
                                  for _, ms, p in rows])
    out('median |error| over %d ops: %.1f%% (the head row is exact by construction: its '
        'misaligned-gemm factor is fitted on it)' % (len(rows), 100 * err))
    out()
    out('%-26s %10s %10s %7s %7s' % ('step (run 3)', 'meas ms', 'pred ms', 'error', 'MFU'))
    errs = []
    for name, B, rc, ms_, sp in calibrate.compare_steps(P, table, kernels):
        e = sp.seconds * 1e3 / ms_ - 1
        errs.append(abs(e))
        out('%-26s %10.1f %10.1f %+6.0f%% %6.1f%%' % ('%s B=%d recompute %d' % (name, B, rc), ms_,
                                                     sp.seconds * 1e3, 100 * e,
                                                     100 * sp.mfu(P['DENSE_BF16_PEAK'])))
    out('median |error| over %d steps: %.1f%%' % (len(errs), 100 * statistics.median(errs)))
    return err


def show_measured(P, kernels, root, label, path, fuse_gelu=False):
    try:
        with open(path) as f:
            rows = measured.parse_timing(f.read())
    except OSError as e:
        fail('--measured %s: %s' % (path, e))
    if not rows:
        fail('--measured %s: no "timing (bf16)" table in it' % path)
    table = ops_mod.op_table(root, fuse_gelu)
    preds = timing_preds(P, table, kernels)
    meas = {measured.op_key(r): v for r, v in rows.items()}
    out(BANNER)
    section('predicted (%s) vs measured (%s), B=4 T=1024 C=768 NH=12' % (label, path))
    report.op_rows(preds, out, meas)
    err = calibrate.median_error([(meas[p.name], p.seconds * 1e3) for p in preds
                                  if p.name in meas and p.seconds])
    out('median |error| over the %d timed ops: %.1f%%' %
        (sum(1 for p in preds if p.name in meas and p.seconds), 100 * err))
    out(gemm_costs.describe(P.get('GEMM_TABLE'), P['GEMM_RATE']))


def compare_json(timing, pred_path, max_error=None):
    """The predictions beside the measured rows; returns the exit status:
    1 when max_error is given and the median error is over it (or nothing
    compared), else 0."""
    try:
        with open(timing) as f:
            rows = measured.parse_timing(f.read())
        with open(pred_path) as f:
            pred = json.load(f)
    except (OSError, ValueError) as e:
        fail('--compare: %s' % e)
    if not rows:
        fail('--compare %s: no "timing (bf16)" table in it' % timing)
    out('model predictions (%s, %s) beside the measured bf16 rows:' %
        (pred.get('source', '?'), pred.get('note', '')))
    out('%-28s %10s %10s %7s' % ('op', 'pred ms', 'meas ms', 'error'))
    pairs = measured.compare_pairs(rows, pred.get('ops', {}))
    for row, ms_, p in pairs:
        out('%-28s %10.4f %10.4f %+6.0f%%' % (row, p, ms_, 100 * (p / ms_ - 1)))
    ok, med, n = calibrate.error_verdict([(m, p) for _, m, p in pairs],
                                         0.25 if max_error is None else max_error)
    out('median |error| over %d ops: %.1f%% (target: <= %.0f%%)%s' %
        (n, 100 * med, 100 * (0.25 if max_error is None else max_error),
         '' if max_error is None else (': PASS' if ok else ': FAIL')))
    return 0 if max_error is None or ok else 1


def model_ranges(P, table, kernels):
    """The printed ranges (hw.band) that gpu_check.sh FAILs a measurement
    outside of: the default attention kernels at 124M B=64 timed alone (the
    sweep's rows; backward = dq + dkdv), the 124M B=64 recompute 0 step (ms)
    and the XL B=8 throughput ratio recompute 1 / 0."""
    s124, sxl = report.shapes_default()
    lo, hi = hw.band(P)
    r = {}
    for n in ('attention_forward', 'attention_backward'):
        t = [predict.predict_op(Q, table, n, s124, kernels, Q['T_LAUNCH_TIMED']).seconds
             for Q in (lo, hi)]
        if None not in t:
            r['%s 124M B=64' % n] = [round(min(t) * 1e3, 5), round(max(t) * 1e3, 5)]
    t = [step_mod.predict_step(Q, table, s124, kernels, 0).seconds for Q in (lo, hi)]
    r['step 124M B=64 r0'] = [round(min(t) * 1e3, 4), round(max(t) * 1e3, 4)]
    q = [step_mod.predict_step(Q, table, sxl, kernels, 0).seconds /
         step_mod.predict_step(Q, table, sxl, kernels, 1).seconds for Q in (lo, hi)]
    r['XL r1/r0'] = [round(min(q), 4), round(max(q), 4)]
    return r


def write_predictions(P, kernels, root, label, path, fuse_gelu=False):
    table = ops_mod.op_table(root, fuse_gelu)
    preds = timing_preds(P, table, kernels)
    doc = {'source': label, 'device': P_DEVICE[0], 'note': 'PREDICTIONS at check_timing\'s shape, ms per call',
           'ops': {p.name: round(p.seconds * 1e3, 5) for p in preds if p.seconds},
           'ranges': model_ranges(P, table, kernels)}
    try:
        with open(path, 'w') as f:
            json.dump(doc, f, indent=1, sort_keys=True)
    except OSError as e:
        fail('--write-predictions %s: %s' % (path, e))


P_DEVICE = ['H200']  # the parameter set main() chose (--device), for the banner and the JSON


def self_test():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'perf_model')
    suite = unittest.defaultTestLoader.discover(here, pattern='test_*.py',
                                                top_level_dir=os.path.dirname(here))
    res = unittest.TextTestRunner(verbosity=1).run(suite)
    return 0 if res.wasSuccessful() else 1


def main(argv):
    ap = argparse.ArgumentParser(prog='cuda_perf_model.py', add_help=True,
                                 description='Static performance model of the CUDA kernels.')
    ap.add_argument('--commit')
    ap.add_argument('--calibrate', nargs='?', const=measured.CALIB_COMMIT)
    ap.add_argument('--fit', action='store_true')
    ap.add_argument('--measured')
    ap.add_argument('--write-predictions')
    ap.add_argument('--compare')
    ap.add_argument('--predictions')
    ap.add_argument('--max-error', type=float)
    ap.add_argument('--gemm-costs')
    ap.add_argument('--no-calibrate', action='store_true')
    ap.add_argument('--fuse-gelu', action='store_true')
    ap.add_argument('--device', default='H200')
    ap.add_argument('--self-test', action='store_true')
    ap.add_argument('--verbose', action='store_true')
    ap.add_argument('--jobs', type=int, default=int(os.environ.get('JOBS', 0)) or None)
    ap.add_argument('--prebuilt')
    a = ap.parse_args(argv)
    if a.prebuilt and a.commit:
        fail('--prebuilt is the working tree\'s build: not with --commit')
    if a.self_test:
        return self_test()
    if a.compare or a.predictions:
        if not (a.compare and a.predictions):
            fail('--compare and --predictions go together')
        return compare_json(a.compare, a.predictions, a.max_error)
    if a.max_error is not None:
        fail('--max-error goes with --compare')
    if build.find_nvcc() is None:
        out('cuda_perf_model.py: nvcc not found (set NVCC=/path/to/nvcc); nothing to analyse, '
            'skipped')
        return 0
    dev = hw.device_of(a.device)
    if dev is None:
        out('cuda_perf_model.py: no parameter set for %r: the H200\'s' % a.device)
    P = hw.params(dev)
    P_DEVICE[0] = dev or 'H200'
    if a.gemm_costs:
        try:
            P['GEMM_TABLE'] = gemm_costs.load(a.gemm_costs)
        except (OSError, ValueError) as e:
            fail('--gemm-costs: %s' % e)
    t0 = time.time()
    missing, over = {}, {}
    try:
        if a.calibrate or a.fit:
            rev = a.calibrate or measured.CALIB_COMMIT
            kernels, root, label = compile_at(rev, a.jobs)
            out(BANNER)
            if a.fit:
                table = ops_mod.op_table(root)
                section('fit on %s' % label)
                P = calibrate.fit(P, table, kernels, log=out)
                out('fitted constants (copy into dev/perf_model/hw.py): ' + ', '.join(
                    '%s = %.4g' % (k, P[k]) for k in
                    list(calibrate.GRID) + ['GEMM_T0', 'GEMM_OUT_BW', 'GEMM_MISALIGNED']))
            show_calibration(P, kernels, root, label)
            out('(%.0f s)' % (time.time() - t0))
            return 0
        kernels, root, label = compile_at(a.commit, a.jobs, a.prebuilt)
        if a.measured:
            show_measured(P, kernels, root, label, a.measured, a.fuse_gelu)
            return 0
        if a.write_predictions:
            write_predictions(P, kernels, root, label, a.write_predictions, a.fuse_gelu)
            return 0
        missing, over = show_predictions(P, kernels, root, label, a.verbose, a.fuse_gelu)
        if not a.no_calibrate:
            try:
                ok, oroot, olabel = compile_at(measured.CALIB_COMMIT, a.jobs)
                show_calibration(P, ok, oroot, olabel)
            except build.BuildError as e:
                out()
                out('calibration skipped: %s' % e)
    except build.BuildError as e:
        fail(str(e))
    out()
    out('(%.0f s)' % (time.time() - t0))
    for name, share in sorted(over.items()):
        print('cuda_perf_model.py: %s is predicted at %.0f%% of its binding roofline, over the '
              '%.0f%% an mma.sync kernel reaches (hw.py MMA_ROOF_SHARE_MAX): the model is too '
              'optimistic for it' % (name, 100 * share, 100 * P['MMA_ROOF_SHARE_MAX']),
              file=sys.stderr)
    if missing:
        for name, note in sorted(missing.items()):
            print('cuda_perf_model.py: op %s: %s' % (name, note), file=sys.stderr)
        print('cuda_perf_model.py: %d op(s) of the step not modelled: update the table in '
              'dev/perf_model/ops.py (dev/notes/perf-model.md)' % len(missing), file=sys.stderr)
    return 1 if missing or over else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
