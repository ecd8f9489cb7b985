"""dev/perf_model/measured.py -- timings a GPU measured, for
calibration and for predicted-vs-measured tables.

Owns: the rows recorded in dev/notes/gpu-results.md that the model is calibrated
on (copied exactly, with run and commit), and the parser for a
check_kernels --time table (gpu_check's timing.log).
"""
import re

# dev/notes/gpu-results.md, run 2 (2026-11-29, H200, commit 7dd63ea): the bf16
# timing table of `check_kernels --time`, B=4 T=1024 C=768 NH=12, ms.
CALIB_COMMIT = '7dd63ea'
CALIB_OPS_MS = {
    'encoder_forward': 0.0192,
    'encoder_backward': 0.0788,
    'layernorm_forward': 0.0122,
    'layernorm_backward': 0.0402,
    'matmul_forward qkv': 0.0327,
    'matmul_backward qkv': 0.0658,
    'matmul_forward attn proj': 0.0186,
    'matmul_backward attn proj': 0.0369,
    'matmul_forward fc': 0.0395,
    'matmul_backward fc': 0.0800,
    'matmul_forward fc proj': 0.0349,
    'matmul_backward fc proj': 0.0775,
    'attention_forward': 0.5577,
    'attention_backward': 3.5862,
    'gelu_forward': 0.0418,
    'gelu_backward': 0.0458,
    'residual_forward': 0.0133,
    'head_forward_backward': 8.1750,
    'adamw_update (124M)': 1.0114,
    'grad_norm_sq (124M)': 0.1537,
}
# check_timing's rows for the fused ops and the Llama family's, newer than
# the calibration run: predicted at B=4 beside those above
# (--write-predictions, --measured)
TIMED_SINCE = ['residual_layernorm_forward', 'matmul_gelu_forward fc',
               'matmul_backward_gelu fc proj', 'rmsnorm_forward', 'rmsnorm_backward',
               'rope_forward', 'rope_backward', 'swiglu_forward', 'swiglu_backward',
               'qknorm_forward', 'qknorm_backward']
# dev/notes/gpu-results.md, run 3 (same GPU, commit 7dd63ea): median step times
# of gpu_check's throughput section, bf16, T=1024, ms.
CALIB_STEPS_MS = [
    ('124M', 16, 0, 263.4),
    ('124M', 16, 1, 297.9),
    ('XL', 8, 0, 1040.5),
    ('XL', 8, 1, 1192.5),
]


def op_key(row_name):
    """check_timing's row name -> ops.py's op name ('adamw_update (124M)'
    -> 'adamw_update')."""
    return re.sub(r'\s*\(124M\)$', '', row_name.strip())


def parse_timing(text, dtype='bf16'):
    """{row name: ms} of the `timing (DTYPE)` table of check_kernels --time.
    Indented rows (the head's parts) keep their leading spaces stripped and
    are returned too."""
    rows, on = {}, False
    for line in text.splitlines():
        if line.startswith('timing ('):
            on = line.startswith('timing (%s)' % dtype)
            continue
        if not on:
            continue
        m = re.match(r'^(\s*\S.*?)\s+(\d+\.\d+)\s+\d+\.\d+\s+(TFLOP/s|GB/s)\s*$', line)
        if m:
            rows[m.group(1).strip()] = float(m.group(2))
        elif line.startswith('(') or not line.strip():
            if rows:
                on = False
    return rows


def compare_pairs(rows, pred_ops):
    """[(row name, measured ms, predicted ms)] for the timing rows (as
    parse_timing gives them) that pred_ops ({op name: ms}, the JSON of
    --write-predictions) predicts, in the table's order."""
    return [(row, ms, pred_ops[op_key(row)]) for row, ms in rows.items()
            if op_key(row) in pred_ops and ms > 0]
