"""dev/perf_model/predict.py -- per-op predictions: an op of ops.py
resolved against compiled kernels and costed by cost.py.

Owns: OpPrediction and predict_op; the step (step.py) and the reports
build on them.
"""
from . import cost
from . import ops as ops_mod


class OpPrediction:
    """seconds: the op's predicted time (None when no alternative of the
    table matched the compiled kernels); parts: (label, seconds, KernelResult
    or None, KernelInfo or None) per launch of one repeat; launches: kernel
    launches per call (gemms included)."""

    def __init__(self, name, shape, seconds, parts, repeat, note=''):
        self.name, self.shape, self.seconds = name, shape, seconds
        self.parts, self.repeat, self.note = parts, repeat, note
        self.launches = len(parts) * repeat

    def flops(self):
        return ops_mod.op_flops(self.name, self.shape)


def _label(spec, k):
    if spec.kind == 'gemm':
        return 'cuBLASLt %s %dx%dx%d%s' % (spec.label, spec.m, spec.n, spec.k,
                                          '' if spec.aligned else ' (misaligned)')
    return k.short if k is not None else spec.kernel


def predict_op(P, table, name, shape, kernels, first, each=None):
    """The op `name` at `shape`. Launch overhead: `first` for the op's
    first launch, `each` (default T_LAUNCH_STEP) for every other one; a
    step passes T_LAUNCH_STEP for both, a row timed alone T_LAUNCH_TIMED
    as `first`."""
    each = P['T_LAUNCH_STEP'] if each is None else each
    alts, repeat = table[name](shape)
    missing = []
    for alt in alts:
        parts, ok = [], True
        for spec in alt:
            secs, res, k, why = cost.launch_time(P, spec, shape, kernels)
            if secs is None:
                ok = False
                missing.append(why)
                break
            parts.append((_label(spec, k), secs, res, k))
        if ok:
            n = repeat * len(parts)
            total = repeat * sum(p[1] for p in parts) + first + (n - 1) * each
            return OpPrediction(name, shape, total, parts, repeat)
    return OpPrediction(name, shape, None, [], repeat, 'not modelled: ' + '; '.join(missing))
