"""dev/perf_model/hw.py -- the machine the model predicts for: one
NVIDIA H200 SXM (Hopper, sm_90), or an H100 SXM (DEVICES, below: the
constants that differ), and every constant of the cost model.

Owns: the numbers. Each says where it comes from:
  measured  read on a lent H200 of this workplace (.library/device/KINDS.md)
  spec      the vendor's published figure for the chip
  lead      a literature or rule-of-thumb value nobody has measured here yet
  derived   computed from the others and a published figure (the H100's)
  fitted    chosen by `dev/cuda_perf_model.py --fit` against the timings
            recorded in dev/notes/gpu-results.md (run 2, commit 7dd63ea); the fit
            prints the search and its result, so it can be repeated
A GPU run that measures one of the leads should replace it here, with the
command that measured it.
"""

# ---- the chip ----
SMS = 132                      # spec; measured (PyTorch reported 132)
CLOCK_HZ = 1.98e9              # measured: SM clock 1980 MHz right after matrix products
SUBPARTITIONS = 4              # spec: 4 schedulers per SM, one warp-instruction each per clock
SMEM_PER_SM = 228 * 1024       # spec: shared memory per SM
SMEM_PER_BLOCK = 227 * 1024    # spec: the most one block may opt into
SMEM_RESERVED = 1024           # spec: per resident block, for the system
REGS_PER_SM = 65536            # spec
REG_GRANULE = 8                # spec: registers are allocated per thread in multiples of 8
MAX_THREADS_PER_SM = 2048      # spec
MAX_BLOCKS_PER_SM = 32         # spec
HBM_BW = 4.3e12                # measured: device-to-device copy, bytes read + written per second
L2_BW = 9.0e12                 # lead: L2 to SMs, about twice HBM (H100 microbenchmarks: 7-10 TB/s)
DENSE_BF16_PEAK = 989e12       # spec (H100/H200 SXM dense bf16), MFU's denominator in gpu_check

# ---- per-SM pipe rates, in warp-instructions (or bytes) per clock per SM ----
ISSUE_PER_CLK = 4.0            # spec: one per scheduler
ALU_PER_CLK = 2.0              # spec: 16 integer/compare lanes per scheduler: half a warp a clock
MUFU_PER_CLK = 0.5             # spec: 16 special-function results per clock per SM
SMEM_BYTES_PER_CLK = 128.0     # spec: 32 banks x 4 bytes
# mma.sync (HMMA) FLOPs per clock per SM. Hopper's dense bf16 peak is 4096
# FLOP/clock/SM through wgmma; the warp-level mma.sync path reaches about
# two thirds of it in published microbenchmarks (lead).
MMA_SYNC_FLOP_PER_CLK = 4096 * 2 / 3
WGMMA_FLOP_PER_CLK = 4096.0    # spec

# ---- what the roofline leaves out: contention, the clock, the model's range ----
# A pipe-bound round of a tile kernel takes max + CONTENTION x (sum - max)
# over the pipes that share the issue slots and the MIO queue (issue, ALU,
# MUFU, tensor, shared memory); 0 would be perfect overlap, 1 no overlap.
CONTENTION = 0.4               # lead: keeps an mma.sync kernel whose LDSM, HMMA and issue
                               # loads are each over 60% near 60-65% of its roofline, where
                               # published kernels of that kind sit (60-75%)
TENSOR_CLOCK_HZ = 1.83e9       # spec-derived: 989 TFLOP/s = 4096 FLOP/clk x 132 SMs x 1.83 GHz,
                               # the clock the datasheet's tensor rate assumes; tile kernels
                               # with tensor work are timed at it, not at the 1.98 GHz boost
MMA_ROOF_SHARE_MAX = 0.65      # lead: the most of its binding roofline (its busiest pipe at
                               # the boost clock, perfect overlap) an mma.sync kernel may be
                               # predicted to reach; `make cuda-perf-model` fails above it


def band(P):
    """(optimistic, pessimistic) copies of P: every prediction is printed
    as a range between the two. Optimistic: perfect overlap at the boost
    clock. Pessimistic: no overlap of the contended pipes, 1.755 GHz under
    a sustained tensor load (H100 reports), gemms at 600 TFLOP/s (K=768
    shapes, against the 788 of one 8192^3 product), L2 round trips 30%
    slower (the fit's L_L2 was set on latency-bound kernels only)."""
    lo = dict(P, CONTENTION=0.0, TENSOR_CLOCK_HZ=P['CLOCK_HZ'])
    hi = dict(P, CONTENTION=1.0, TENSOR_CLOCK_HZ=1.755e9, GEMM_RATE=min(P['GEMM_RATE'], 600e12),
              L_L2=1.3 * P['L_L2'])
    return lo, hi


# ---- latencies, in SM clocks ----
L_L2 = 500                     # fitted (lead: 260-450): a serialized global round trip that hits L2
L_HBM = 1000                   # fitted: one that goes to HBM under a streaming load (queues too)
L2_BYTES = 60e6                # measured (PyTorch: 60 MB): a launch whose HBM bytes exceed this
                               # streams from HBM (L_HBM); tile re-reads of attention hit L2 (L_L2)
L_SHORT = 30                   # lead: a wait on a shared-memory load, MUFU, shuffle or S2R result
L_BAR = 40                     # lead: one __syncthreads with the block's warps arriving together
L_BLOCK = 700                  # fitted: starting and retiring one block on an SM slot

# ---- launches ----
T_LAUNCH_TIMED = 6.0e-6        # fitted: one kernel timed alone between CUDA events (check_timing)
T_LAUNCH_STEP = 2.0e-6         # lead: what one more launch adds after another in a stream
                               # (the gap, the ramp-up and the tail of a dependent kernel)

# ---- cuBLASLt (no SASS to read): time = T0 + FLOPs / RATE + output bytes / OUT_BW ----
GEMM_T0 = 3.7e-6               # fitted: fixed cost of one matmul launch (set-up, fill, drain)
GEMM_RATE = 788e12             # measured: 8192^3 bf16 matmul through PyTorch, random data
GEMM_OUT_BW = 4.8e12           # fitted: epilogue and tile count, as a cost per output byte
GEMM_MISALIGNED = 0.16         # fitted (one row): rate factor when a dimension or leading
                               # dimension is not a multiple of 8 elements


# ---- the other card: an H100 SXM beside the H200 ----
# The two share the chip (132 SMs, 989 TFLOP/s dense bf16); the H100 SXM has
# 3.35 TB/s HBM3 (the H200 4.8 TB/s HBM3e) and a 50 MB L2 (spec). Its memory
# constants are the H200's scaled by the published bandwidths (derived: the
# H200's measured share of its spec, 4.3 of 4.8, assumed for the H100 too);
# nothing here was measured on an H100, so its first run replaces these.
DEVICES = {
    'H200': {},
    'H100': {
        'HBM_BW': 3.35e12 * 4.3 / 4.8,        # derived: spec x the H200's measured share
        'L2_BYTES': 50e6,                      # spec
        'GEMM_OUT_BW': 4.8e12 * 3.35 / 4.8,    # derived: the fitted epilogue cost, by HBM's ratio
    },
}


def device_of(name):
    """The parameter set for a device name as the run reports it
    (nvidia-smi -L, cudaGetDeviceProperties): 'H100' or 'H200'; None for
    a card the model has no set for (its predictions are then the H200's
    and say so)."""
    up = (name or '').upper()
    for d in ('H200', 'H100'):  # an H200's name holds no "H100", and the reverse
        if d in up:
            return d
    return None


def params(device='H200'):
    """The tunable constants, by name (what --fit and --param change), for
    device (a DEVICES key; None means the H200's)."""
    P = {k: v for k, v in globals().items() if k.isupper() and k != 'DEVICES'}
    P.update(DEVICES[device or 'H200'])
    return P
