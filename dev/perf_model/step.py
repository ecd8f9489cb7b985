"""dev/perf_model/step.py -- a training step from the per-op
predictions: the op sequence model/gpt.c runs, its FLOPs (model/flops.c's
counts) and the MFU gpu_check prints.

Owns: the per-layer op lists, the recompute-1 re-forward, the step time and
MFU. Keep BLOCK_FWD, BLOCK_BWD and HEAD in step with gpt.c's block_forward,
block_backward and gpt_step.
"""
from . import predict

# gpt.c block_forward with the fusions it makes by default, for modes 0 and
# 1 (each forward step's closing residual add is followed by the LayerNorm
# that reads it, so run_steps fuses them): qkv, attention, proj, the
# mid-block residual add fused with LN2, the fc matmul and its GELU
# (matmul_gelu_forward; ops.py says which kernels it launches), fc proj, and
# the closing residual add fused with the next block's LN1 (or, after the
# last block, LN_f). Block 0's LN1 is the one plain layernorm_forward of the
# forward sweep (HEAD).
BLOCK_FWD = ['matmul_forward qkv', 'attention_forward', 'matmul_forward attn proj',
             'residual_layernorm_forward', 'matmul_gelu_forward fc', 'matmul_forward fc proj',
             'residual_layernorm_forward']
# a re-forward (recompute 1: out = SLOT_NONE, after a backward step) writes
# its own LN1 and stops at the GELU
BLOCK_REFWD = ['layernorm_forward'] + BLOCK_FWD[:-2]
# gpt.c block_backward (full tape): the fc projection's backward with the
# GELU backward (matmul_backward_gelu), fc, LN2, proj, attention, qkv, LN1
BLOCK_BWD = ['matmul_backward_gelu fc proj', 'matmul_backward fc', 'layernorm_backward',
             'matmul_backward attn proj', 'attention_backward', 'matmul_backward qkv',
             'layernorm_backward']
# gpt_step outside the blocks: the embedding, block 0's LN1, the head, LN_f's
# backward, the embedding's backward; then the optimizer (grad norm, AdamW)
HEAD = ['encoder_forward', 'layernorm_forward', 'head_forward_backward', 'layernorm_backward',
        'encoder_backward']
OPTIMIZER = ['grad_norm_sq', 'adamw_update']


def step_ops():
    """Every op a step of mode 0 or 1 runs, sorted."""
    return sorted(set(BLOCK_FWD + BLOCK_REFWD + BLOCK_BWD + HEAD + OPTIMIZER))


def flop_counts(s):
    """model/flops.c's flops_count for shape s (B, T, C, L, Vp)."""
    N, C, Vp, L = s.N, s.C, s.Vp, s.L
    ln, add, gelu = 8 * N * C, N * C, 9 * N * 4 * C
    qkv, attn, attproj = 2 * N * C * 3 * C, 2 * s.B * s.T * s.T * C, 2 * N * C * C
    fc, fcproj = 2 * N * C * 4 * C, 2 * N * 4 * C * C
    mm, elem = qkv + attproj + fc + fcproj, ln + add + ln + gelu + add
    f = {'block_fwd': mm + attn + elem}
    f['block_fwd_noout'] = f['block_fwd'] - fcproj - add
    f['block_bwd'] = 2 * mm + attn * 5 // 2 + 2 * elem
    f['embed'] = N * C + 2 * N * C
    f['head'] = 3 * (ln + 2 * N * C * Vp + 5 * N * Vp)
    f['step'] = f['embed'] + L * (f['block_fwd'] + f['block_bwd']) + f['head']
    return f


def mfu_flops_per_token(s):
    """gpu_check's MFU numerator per token: 6 N + 6 L C T."""
    return 6 * s.params() + 6 * s.L * s.C * s.T


class StepPrediction:
    def __init__(self, shape, recompute, rows, ops):
        self.shape, self.recompute, self.rows, self.ops = shape, recompute, rows, ops
        self.seconds = sum(r[2] for r in rows)
        self.missing = sorted({n for n, o in ops.items() if o.seconds is None})

    def flops(self):
        """(model FLOPs of the step, FLOPs the recompute adds), flops.c's."""
        f = flop_counts(self.shape)
        extra = self.shape.L * f['block_fwd_noout'] if self.recompute == 1 else 0
        return f['step'], extra

    def tokens_per_s(self):
        return self.shape.N / self.seconds

    def mfu(self, peak):
        return self.tokens_per_s() * mfu_flops_per_token(self.shape) / peak


def predict_step(P, table, shape, kernels, recompute):
    """Rows (group, op, seconds per step, calls per step) and the op
    predictions; ops no kernel matched count 0 and are listed in .missing."""
    launch = P['T_LAUNCH_STEP']
    names = set(step_ops())
    ops = {n: predict.predict_op(P, table, n, shape, kernels, launch, launch)
           for n in sorted(names)}
    L = shape.L
    calls = {}

    def add(group, seq, times):
        for n in seq:
            key = (group, n)
            calls[key] = calls.get(key, 0) + times
    add('layers forward', BLOCK_FWD, L)
    if recompute == 1:
        add('layers re-forward', BLOCK_REFWD, L)
    add('layers backward', BLOCK_BWD, L)
    add('embedding, head', HEAD, 1)
    add('optimizer', OPTIMIZER, 1)
    rows = []
    for (group, n), c in calls.items():
        secs = ops[n].seconds
        rows.append((group, n, (secs or 0.0) * c, c))
    return StepPrediction(shape, recompute, rows, ops)
