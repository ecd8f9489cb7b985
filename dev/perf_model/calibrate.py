"""dev/perf_model/calibrate.py -- the model against recorded timings:
predicted-vs-measured rows, their error, and the fit of hw.py's fitted
constants.

Owns: the comparison (rows, median error) and the fit. The fit is three
stages, each on the rows that depend on its constants only:
  1. hand-written kernels (L_L2, L_HBM, L_BLOCK, T_LAUNCH_TIMED): the rows
     with no matmul (11 of run 2's 20),
     coordinate descent over a grid of each constant, minimising the sum of
     absolute log errors (robust to the one or two rows the model misses);
  2. cuBLASLt (GEMM_T0, GEMM_OUT_BW; GEMM_RATE is the measured rate of a
     large bf16 matmul on this kind of machine): the 8 matmul rows, linear
     least squares on relative error (a backward row is its two gemms plus
     the predicted bias-gradient kernels);
  3. GEMM_MISALIGNED: the head row (its gemms at 7dd63ea ran over the odd
     vocabulary), solved exactly -- one constant for one row, so that row's
     error says nothing about the model.
The step times of run 3 are never fitted: they check the whole.
"""
import math
import statistics

from . import measured
from . import ops as ops_mod
from . import predict
from . import step as step_mod

HAND_ROWS = ['encoder_forward', 'encoder_backward', 'layernorm_forward', 'layernorm_backward',
             'attention_forward', 'attention_backward', 'gelu_forward', 'gelu_backward',
             'residual_forward', 'adamw_update (124M)', 'grad_norm_sq (124M)']
GEMM_ROWS = [r for r in measured.CALIB_OPS_MS if r.startswith('matmul_')]
HEAD_ROW = 'head_forward_backward'

GRID = {
    'L_L2': [200, 250, 300, 350, 400, 450, 500, 600, 700],
    'L_HBM': [600, 800, 1000, 1200, 1300, 1400, 1600, 1800, 2200],
    'L_BLOCK': [0, 100, 200, 300, 400, 500, 700, 1000, 1500],
    'T_LAUNCH_TIMED': [1e-6, 2e-6, 3e-6, 4e-6, 5e-6, 6e-6, 8e-6, 10e-6, 12e-6],
}


def compare_ops(P, table, kernels, rows_ms, shape=ops_mod.TIMING):
    """[(row, measured ms, OpPrediction)] for rows the table knows."""
    out = []
    for row, ms in rows_ms.items():
        name = measured.op_key(row)
        if name not in table:
            continue
        out.append((row, ms, predict.predict_op(P, table, name, shape, kernels,
                                                P['T_LAUNCH_TIMED'])))
    return out


def median_error(pairs):
    """Median of |predicted / measured - 1| over (measured, predicted)."""
    errs = [abs(p / m - 1.0) for m, p in pairs if p is not None and m > 0]
    return statistics.median(errs) if errs else float('nan')


def error_verdict(pairs, limit):
    """(ok, median |error|, n) over (measured, predicted) pairs: ok when the
    median per-op |predicted / measured - 1| is at most limit; never ok
    with no pair to compare (a table that matched nothing is no pass)."""
    errs = [(m, p) for m, p in pairs if p is not None and m > 0]
    if not errs:
        return False, float('nan'), 0
    med = median_error(errs)
    return med <= limit, med, len(errs)


def compare_steps(P, table, kernels):
    out = []
    for name, B, rc, ms in measured.CALIB_STEPS_MS:
        shape = ops_mod.gpt2_124m(B) if name == '124M' else ops_mod.gpt2_xl(B)
        out.append((name, B, rc, ms, step_mod.predict_step(P, table, shape, kernels, rc)))
    return out


def _loss(P, table, kernels, rows):
    s = 0.0
    for row in rows:
        r = predict.predict_op(P, table, measured.op_key(row), ops_mod.TIMING, kernels,
                               P['T_LAUNCH_TIMED'])
        if r.seconds is None or not r.seconds > 0:
            return float('inf')
        s += abs(math.log(r.seconds * 1e3 / measured.CALIB_OPS_MS[row]))
    return s


def _solve2(A, b):
    """Least squares for a 2-column system by its normal equations."""
    a11 = sum(r[0] * r[0] for r in A)
    a12 = sum(r[0] * r[1] for r in A)
    a22 = sum(r[1] * r[1] for r in A)
    v1 = sum(r[0] * y for r, y in zip(A, b))
    v2 = sum(r[1] * y for r, y in zip(A, b))
    det = a11 * a22 - a12 * a12
    return (v1 * a22 - v2 * a12) / det, (a11 * v2 - a12 * v1) / det


def fit(P, table, kernels, log=print, rounds=3):
    """Fit the constants listed in the module doc; returns the new P."""
    P = dict(P)
    best = _loss(P, table, kernels, HAND_ROWS)
    log('stage 1: hand-written kernels, %d rows; start: sum of |log error| %.3f' %
        (len(HAND_ROWS), best))
    for rnd in range(rounds):
        for name, values in GRID.items():
            for v in values:
                trial = dict(P, **{name: v})
                loss = _loss(trial, table, kernels, HAND_ROWS)
                if loss < best - 1e-12:
                    best, P = loss, trial
        log('  round %d: %s -> %.3f' % (rnd + 1, ', '.join('%s=%g' % (k, P[k]) for k in GRID),
                                         best))
    # stage 2: gemm rule by linear least squares on relative error
    A, b = [], []
    for row in GEMM_ROWS:
        r = predict.predict_op(P, table, measured.op_key(row), ops_mod.TIMING, kernels,
                               P['T_LAUNCH_TIMED'])
        ms = measured.CALIB_OPS_MS[row] * 1e-3
        gemms = [spec for alt in table[measured.op_key(row)](ops_mod.TIMING)[0][:1]
                 for spec in alt if spec.kind == 'gemm']
        # everything but the gemms' own time: kernels and launch overheads
        other = r.seconds - sum(p[1] for p in r.parts if p[2] is None)
        flop_time = sum(g.flops for g in gemms) / P['GEMM_RATE']
        fixed = 0.0
        A.append([len(gemms) / ms, sum(g.out_bytes for g in gemms) / ms])
        b.append((ms - other - flop_time - fixed) / ms)
    t0, inv_out = _solve2(A, b)
    P['GEMM_T0'] = max(0.0, t0)
    P['GEMM_OUT_BW'] = 1.0 / inv_out if inv_out > 0 else float('inf')
    log('stage 2: cuBLASLt, %d rows, GEMM_RATE=%.4g FLOP/s (measured): GEMM_T0=%.3g s, '
        'GEMM_OUT_BW=%.4g B/s' % (len(GEMM_ROWS), P['GEMM_RATE'], P['GEMM_T0'], P['GEMM_OUT_BW']))
    # stage 3: the misaligned-gemm factor from the head row
    name = measured.op_key(HEAD_ROW)
    alts, repeat = table[name](ops_mod.TIMING)
    specs = alts[0]
    bad = [g for g in specs if g.kind == 'gemm' and not g.aligned]
    if bad:
        P1 = dict(P, GEMM_MISALIGNED=1.0)
        r = predict.predict_op(P1, table, name, ops_mod.TIMING, kernels, P['T_LAUNCH_TIMED'])
        need = measured.CALIB_OPS_MS[HEAD_ROW] * 1e-3 / repeat - r.seconds / repeat
        flop_time = sum(g.flops for g in bad) / P['GEMM_RATE']
        if need > 0:
            P['GEMM_MISALIGNED'] = flop_time / (flop_time + need)
        log('stage 3: head row: GEMM_MISALIGNED=%.3f' % P['GEMM_MISALIGNED'])
    else:
        log('stage 3: skipped (this tree\'s head runs aligned gemms)')
    return P
