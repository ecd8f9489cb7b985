"""dev/perf_model/test_perf_model.py -- the model's own tests, run by
`dev/cuda_perf_model.py --self-test` (and `make cuda-perf-model`).

Hand-computed values for toy inputs: the decoder on instruction words built
from the documented bit layout, loops and round trips on small synthetic
kernels, occupancy, the pipe and chain arithmetic, the block scheduler, the
stream and gemm formulas, FLOP counts (tests/unit/model/test_flops.c's shape), and the
parsers. With nvcc present, the decoder also reads probe kernels whose PTX
says which instructions they must contain, so a compiler whose encoding
moved fails here rather than skewing the predictions.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from . import build, calibrate, cost, gemm_costs, hw, loops, measured, ops, sass, step

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPS = {v[0]: k for k, v in sass.OPCODES.items()}


def word(name, pred=7, stall=1, wbar=7, rbar=7, wait=0, width=None, target=None, addr=0,
         hi_extra=0, lo_extra=0):
    """(lo, hi) of an instruction, built from the layout sass.py documents."""
    lo = OPS[name] | (pred << 12) | lo_extra
    hi = hi_extra | ((stall | (1 << 4) | (wbar << 5) | (rbar << 8) | (wait << 11)) << 41)
    if width is not None:
        code = {1: 0, 2: 2, 4: 4, 8: 5, 16: 6}[width]
        hi |= code << 9
    if target is not None:
        off = target - (addr + 16)
        hi32, low = off // 256, (off % 256) // 4
        lo |= (low << 16) | ((hi32 & 0xffffffff) << 32)
    return lo, hi


def kernel(rows):
    """Instr list from rows of word() keyword dicts, at addresses 0, 16, ..."""
    out = []
    for k, kw in enumerate(rows):
        lo, hi = word(addr=16 * k, **kw)
        out.append(sass.Instr(16 * k, lo, hi))
    return out


class Fake:
    """Just enough of a KernelInfo for cost.py."""

    def __init__(self, instrs, regs=32, smem=0, short='toy'):
        self.kernel = type('K', (), {'instrs': instrs})()
        self.regs, self.smem_static, self.short = regs, smem, short


# a loop: LDG.128 -> FFMA waiting on it -> STG.128 -> @P0 BRA back; EXIT; BRA self
STREAM_LOOP = [dict(name='LDG', wbar=2, width=16, stall=2),
               dict(name='FFMA', wait=1 << 2, stall=4),
               dict(name='STG', width=16, stall=1),
               dict(name='BRA', pred=0, target=0, stall=5),
               dict(name='EXIT', stall=3),
               dict(name='BRA', target=80)]


class DecoderTest(unittest.TestCase):
    def test_fields_from_layout(self):
        ins = kernel(STREAM_LOOP)
        self.assertEqual([i.name for i in ins], ['LDG', 'FFMA', 'STG', 'BRA', 'EXIT', 'BRA'])
        self.assertEqual((ins[0].width, ins[0].wbar, ins[0].stall), (16, 2, 2))
        self.assertEqual(ins[1].wait, 4)
        self.assertEqual(ins[3].pred, 'P0')
        self.assertEqual(ins[3].target, 0)
        self.assertEqual(ins[5].target, 80)  # the padding BRA self
        lo, hi = word('HMMA', hi_extra=1 << 11)
        self.assertEqual(sass.Instr(0, lo, hi).flops, 4096)
        lo, hi = word('HMMA')
        self.assertEqual(sass.Instr(0, lo, hi).flops, 2048)
        lo, hi = word('LDSM', hi_extra=(2 << 8) | (1 << 14))
        i = sass.Instr(0, lo, hi)
        self.assertEqual((i.width, i.trans), (16, True))
        lo, hi = word('DEPBAR', lo_extra=1 << 38)
        self.assertEqual(sass.Instr(0, lo, hi).depbar, 1)

    def test_short_name(self):
        self.assertEqual(sass.short_name('amma_dkdv_kernel<64, 64>(bf16*, int)'),
                         'amma_dkdv_kernel<64, 64>')


class LoopsTest(unittest.TestCase):
    def test_stream_loop_profile(self):
        pf = loops.PathFinder(kernel(STREAM_LOOP))
        self.assertEqual(len(pf.loops), 1)
        prof, _ = pf.loop_profile(pf.loops[0], lambda lp: 1)
        self.assertEqual((prof.instrs, prof.gbytes_ld, prof.gbytes_st), (4, 16, 16))
        self.assertEqual((prof.rt_serial, prof.rt_prefetch), (1, 0))
        self.assertEqual(prof.stall, 2 + 4 + 1 + 5)

    def test_batched_loads_are_one_round_trip(self):
        k = kernel([dict(name='LDG', wbar=2, width=4), dict(name='LDG', wbar=3, width=4),
                    dict(name='FADD', wait=1 << 2), dict(name='FADD', wait=1 << 3),
                    dict(name='LDG', wbar=2, width=4), dict(name='FADD', wait=1 << 2),
                    dict(name='BRA', pred=0, target=0), dict(name='EXIT')])
        pf = loops.PathFinder(k)
        prof, _ = pf.loop_profile(pf.loops[0], lambda lp: 1)
        self.assertEqual(prof.rt_serial, 2)  # {LDG, LDG} then {LDG}

    def test_prefetched_load(self):
        # the load is used at the top of the next iteration
        k = kernel([dict(name='FADD', wait=1 << 2), dict(name='LDG', wbar=2, width=4),
                    dict(name='BRA', pred=0, target=0), dict(name='EXIT')])
        pf = loops.PathFinder(k)
        prof, _ = pf.loop_profile(pf.loops[0], lambda lp: 1)
        self.assertEqual((prof.rt_serial, prof.rt_prefetch), (0, 1))

    def test_path_prefers_vector_copy(self):
        # if (P1) { 8 x LDG.16 } else { LDG.128 }: the same 16 bytes, fewer instructions
        rows = [dict(name='BRA', pred=1, target=16 * 11)]
        rows += [dict(name='LDG', wbar=2, width=2) for _ in range(8)]
        rows += [dict(name='STS', wait=1 << 2, width=16), dict(name='BRA', target=16 * 13)]
        rows += [dict(name='LDG', wbar=2, width=16), dict(name='STS', wait=1 << 2, width=16)]
        rows += [dict(name='BRA', pred=0, target=0), dict(name='EXIT')]
        pf = loops.PathFinder(kernel(rows))
        prof, _ = pf.loop_profile(pf.loops[0], lambda lp: 1)
        self.assertEqual(prof.names['LDG'], 1)
        self.assertEqual(prof.gbytes_ld, 16)

    def test_path_prefers_the_math(self):
        # if (P1) continue; HMMA x2: the iteration that does the work
        rows = [dict(name='BRA', pred=1, target=16 * 3), dict(name='HMMA', hi_extra=1 << 11),
                dict(name='HMMA', hi_extra=1 << 11), dict(name='BRA', pred=0, target=0),
                dict(name='EXIT')]
        pf = loops.PathFinder(kernel(rows))
        prof, _ = pf.loop_profile(pf.loops[0], lambda lp: 1)
        self.assertEqual(prof.flops, 8192)


class CostTest(unittest.TestCase):
    def setUp(self):
        self.P = hw.params()

    def test_occupancy(self):
        o = cost.Occupancy(self.P, 128, 124, 18432)  # amma_fwd_kernel<64>
        self.assertEqual((o.blocks, o.limiter), (4, 'registers'))  # 65536 / (128 x 128)
        o = cost.Occupancy(self.P, 128, 221, 37376)  # regs round up to 224
        self.assertEqual((o.blocks, o.limiter), (2, 'registers'))
        o = cost.Occupancy(self.P, 128, 80, 71680)  # 233472 / (71680 + 1024) = 3.2
        self.assertEqual((o.blocks, o.limiter), (3, 'smem'))
        o = cost.Occupancy(self.P, 32, 16, 0)
        self.assertEqual((o.blocks, o.limiter), (32, 'blocks'))

    def test_chain_and_pipes(self):
        p = loops.Profile()
        p.stall, p.rt_serial, p.short_waits, p.bars = 100, 2, 3, 1
        P = dict(self.P, L_SHORT=30, L_BAR=40)
        self.assertEqual(cost.warp_cycles(P, p, 500), 100 + 1000 + 90 + 40)
        p.instrs, p.flops, p.sbytes, p.gbytes_ld = 100, 8 * 4096, 16, 16
        p.names.update({'IADD3': 10, 'FFMA': 20})
        p.classes['mufu'] = 4
        P.update(MMA_SYNC_FLOP_PER_CLK=2048.0, L2_BW=132 * 64 * 1e9, CLOCK_HZ=1e9)
        c = cost.pipe_cycles(P, p, 4)
        self.assertEqual(c['issue'], 100.0)          # 4 x 100 / 4
        self.assertEqual(c['alu'], 20.0)             # 4 x 10 / 2
        self.assertEqual(c['mufu'], 32.0)            # 4 x 4 / 0.5
        self.assertEqual(c['tensor'], 64.0)          # 4 x 32768 / 2048
        self.assertEqual(c['smem'], 16.0)            # 4 x 32 x 16 / 128
        self.assertAlmostEqual(c['l2'], 32.0)        # 2048 bytes at 64 per clock

    def test_contention_and_roofline_share(self):
        # the default forward's per-SM round as an independent review counted
        # it by hand (16 warps: LDSM and cp.async 2560 clocks of shared memory
        # at 128 B/clock, HMMA 1536 at the mma.sync rate, issue 1644)
        pipes = {'smem': 2560.0, 'tensor': 1536.0, 'issue': 1644.0, 'alu': 0.0, 'mufu': 0.0,
                 'l2': 100.0}
        P = dict(self.P, CONTENTION=0.0)  # the old model: perfect overlap
        self.assertEqual(cost.busy_cycles(P, pipes), 2560.0)
        old = cost.roof_share(P, pipes, 2560.0, P['CLOCK_HZ'])
        self.assertAlmostEqual(old, 1.0)  # 100% of the roofline: above any mma.sync kernel
        self.assertGreater(old, self.P['MMA_ROOF_SHARE_MAX'])
        P = dict(self.P, CONTENTION=0.4)
        busy = cost.busy_cycles(P, pipes)
        self.assertAlmostEqual(busy, 2560.0 + 0.4 * (1536.0 + 1644.0))  # 3832
        share = cost.roof_share(P, pipes, busy, 1.83e9)  # at the sustained tensor clock
        self.assertAlmostEqual(share, 2560.0 / 3832.0 * 1.83 / 1.98, places=6)  # 0.617
        self.assertLessEqual(share, self.P['MMA_ROOF_SHARE_MAX'])
        # the pipes outside the contended set (l2) only bound from below
        self.assertEqual(cost.busy_cycles(P, {'l2': 5000.0, 'smem': 10.0}), 5000.0)

    def test_band_brackets_the_defaults(self):
        lo, hi = hw.band(self.P)
        self.assertEqual((lo['CONTENTION'], lo['TENSOR_CLOCK_HZ']), (0.0, self.P['CLOCK_HZ']))
        self.assertEqual(hi['CONTENTION'], 1.0)
        self.assertLess(hi['TENSOR_CLOCK_HZ'], self.P['TENSOR_CLOCK_HZ'])
        self.assertLessEqual(hi['GEMM_RATE'], self.P['GEMM_RATE'])
        self.assertGreater(hi['L_L2'], self.P['L_L2'])
        g = ops.Gemm(768, 65536, 3072, 0)
        self.assertLess(cost.gemm_time(lo, g), cost.gemm_time(hi, g))

    def test_scheduler(self):
        P = dict(self.P, SMS=1)
        # throughput-bound: a round of n blocks takes 10 n cycles
        self.assertAlmostEqual(cost.simulate(P, [2, 1, 1], 2, lambda n: 10.0 * n), 40.0)
        # latency-bound: 10 cycles whatever n
        self.assertAlmostEqual(cost.simulate(P, [2, 1, 1], 2, lambda n: 10.0), 20.0)
        P = dict(self.P, SMS=2)
        self.assertAlmostEqual(cost.simulate(P, [3, 1, 1, 1], 1, lambda n: 5.0), 15.0)

    def test_stream_time(self):
        P = dict(self.P, SMS=132, CLOCK_HZ=1e9, L_L2=500, L_BLOCK=100, L_SHORT=30, L_BAR=40,
                 HBM_BW=1e15, L2_BW=1e15)
        spec = ops.Stream('toy', 32, lambda s: 132, hbm=lambda s: 1000,
                          moved=lambda s: 132 * 32 * 32 * 10)
        r = cost.stream_time(P, Fake(kernel(STREAM_LOOP)), spec, ops.TIMING)
        # unit: 32 B per lane, so 10 units per warp, one warp per SM, one wave;
        # chain = L_BLOCK + EXIT's path outside the loop (stall 3) + 10 round trips x 500
        #         + 10 x (stall 12)
        self.assertEqual(r.bound, 'latency')
        self.assertAlmostEqual(r.seconds, (100 + 3 + 10 * 500 + 10 * 12) / 1e9)

    def test_gemm_time(self):
        P = dict(self.P, GEMM_T0=1e-6, GEMM_RATE=1e15, GEMM_OUT_BW=1e12, GEMM_MISALIGNED=0.5)
        g = ops.Gemm(1000, 1000, 500, 2e6)
        self.assertAlmostEqual(cost.gemm_time(P, g), 1e-6 + 1e9 / 1e15 + 2e6 / 1e12)
        g = ops.Gemm(1000, 1000, 500, 2e6, aligned=False)
        self.assertAlmostEqual(cost.gemm_time(P, g), 1e-6 + 2e9 / 1e15 + 2e6 / 1e12)


class StepTest(unittest.TestCase):
    def test_flop_counts_match_flops_c(self):
        s = ops.Shape('tiny', B=2, T=4, C=8, NH=2, L=4, V=100, Vp=128)
        f = step.flop_counts(s)  # tests/unit/model/test_flops.c's hand counts
        self.assertEqual(f['block_fwd'], 12288 + 512 + 3456)
        self.assertEqual(f['block_fwd_noout'], 16256 - 4096 - 64)
        self.assertEqual(f['block_bwd'], 2 * 12288 + 5 * 256 + 2 * 3456)
        self.assertEqual(f['step'], 64 + 128 + 4 * (16256 + 32768) + 22016 + 44032)

    def test_params_and_mfu(self):
        self.assertEqual(ops.gpt2_124m(4).params(), 124475904)  # check_timing's count
        self.assertEqual(step.mfu_flops_per_token(ops.gpt2_124m(1)),
                         6 * 124475904 + 6 * 12 * 768 * 1024)

    def test_recompute_one_skips_the_projection(self):
        # a re-forward writes its own LN1, then stops at the GELU
        self.assertEqual(step.BLOCK_REFWD, ['layernorm_forward'] + step.BLOCK_FWD[:-2])
        self.assertEqual(step.BLOCK_FWD[-2:],
                         ['matmul_forward fc proj', 'residual_layernorm_forward'])

    def test_step_runs_the_fused_ops(self):
        """gpt.c's default op sequence: every residual add fused with the
        LayerNorm after it, so one plain LayerNorm forward per sweep (block
        0's LN1; LN_f is fused) plus one per re-forward; the fc GELU inside
        matmul_gelu_forward / matmul_backward_gelu."""
        for gone in ('residual_forward', 'gelu_forward', 'gelu_backward', 'matmul_forward fc',
                     'matmul_backward fc proj'):
            self.assertNotIn(gone, step.step_ops())
        s = ops.Shape('tiny', B=1, T=64, C=64, NH=1, L=4)
        P = hw.params()
        table = ops.op_table(ROOT)
        for rc, ln, resln, mmgelu in ((0, 1, 2 * 4, 4), (1, 1 + 4, 3 * 4, 2 * 4)):
            calls = {}
            for _, name, _, c in step.predict_step(P, table, s, [], rc).rows:
                calls[name] = calls.get(name, 0) + c
            self.assertEqual(calls['layernorm_forward'], ln)
            self.assertEqual(calls['residual_layernorm_forward'], resln)
            self.assertEqual(calls['matmul_gelu_forward fc'], mmgelu)
            self.assertEqual(calls['matmul_backward_gelu fc proj'], 4)
            self.assertEqual(calls['layernorm_backward'], 2 * 4 + 1)


def fake_kernels(*names):
    return [Fake(kernel(STREAM_LOOP), short=n) for n in names]


class MatchTest(unittest.TestCase):
    """Which launches an op resolves to, newest alternative first."""

    def setUp(self):
        self.P = hw.params()
        self.table = ops.op_table(ROOT)

    def labels(self, name, kernels, table=None):
        from . import predict
        r = predict.predict_op(self.P, table or self.table, name, ops.TIMING, kernels, 0.0)
        return [lab for lab, _, _, _ in r.parts]

    def test_residual_layernorm_fused_else_the_pair(self):
        ks = fake_kernels('elementwise_kernel<__nv_bfloat16, 2>',
                          'layernorm_forward_kernel<__nv_bfloat16>')
        self.assertEqual(self.labels('residual_layernorm_forward', ks),
                         ['elementwise_kernel<__nv_bfloat16, 2>',
                          'layernorm_forward_kernel<__nv_bfloat16>'])
        ks += fake_kernels('residual_layernorm_kernel<__nv_bfloat16>')
        self.assertEqual(self.labels('residual_layernorm_forward', ks),
                         ['residual_layernorm_kernel<__nv_bfloat16>'])

    def test_fc_gelu_is_a_separate_pass_unless_fused(self):
        ks = fake_kernels('elementwise_kernel<__nv_bfloat16, 0>',
                          'elementwise_kernel<__nv_bfloat16, 1>',
                          'colsum_partials_kernel<__nv_bfloat16, 8>',
                          'colsum_finish_kernel<__nv_bfloat16>')
        self.assertEqual(self.labels('matmul_gelu_forward fc', ks),
                         ['cuBLASLt fwd 3072x4096x768', 'elementwise_kernel<__nv_bfloat16, 0>'])
        bwd = self.labels('matmul_backward_gelu fc proj', ks)
        self.assertEqual(bwd[0], 'cuBLASLt dinp 3072x4096x768')
        self.assertEqual(bwd[-1], 'elementwise_kernel<__nv_bfloat16, 1>')
        fused = ops.op_table(ROOT, fuse_gelu=True)
        self.assertEqual(self.labels('matmul_gelu_forward fc', ks, fused),
                         ['cuBLASLt fwd+GELU_AUX 3072x4096x768'])
        bwd = self.labels('matmul_backward_gelu fc proj', ks, fused)
        self.assertEqual(bwd[0], 'cuBLASLt dinp+DGELU 3072x4096x768')
        self.assertNotIn('elementwise_kernel<__nv_bfloat16, 1>', bwd)

    def test_layernorm_backward_occupancy_counts_its_dynamic_smem(self):
        spec = self.table['layernorm_backward'](ops.gpt2_xl(8))[0][0][0]
        k = Fake(kernel(STREAM_LOOP), regs=56, short='layernorm_backward_kernel<__nv_bfloat16>')
        r = cost.stream_time(self.P, k, spec, ops.gpt2_xl(8))
        # 233472 / (4 warps x 2 x 1600 x 4 bytes + 1024) = 4.5; registers allow 9
        self.assertEqual((r.occ.blocks, r.occ.limiter), (4, 'smem'))


class ErrorPathTest(unittest.TestCase):
    def test_unmatched_op_is_reported_not_dropped(self):
        P = hw.params()
        table = ops.op_table(ROOT)
        from . import predict
        r = predict.predict_op(P, table, 'attention_forward', ops.TIMING, [], 0.0)
        self.assertIsNone(r.seconds)
        self.assertIn('no compiled kernel matches amma_fwd_kernel<AmmaCfg<64, 4, 64, 2, [24]', r.note)
        self.assertIn('no compiled kernel matches amma_fwd_kernel<64', r.note)  # an older tree's
        sp = step.predict_step(P, table, ops.TIMING, [], 0)
        self.assertIn('attention_forward', sp.missing)
        self.assertNotIn('matmul_forward qkv', sp.missing)  # cuBLASLt needs no kernel

    def cli(self, args, env=None):
        e = dict(os.environ, **(env or {}))
        return subprocess.run(['python3', os.path.join(ROOT, 'dev', 'cuda_perf_model.py')] +
                              args, capture_output=True, text=True, env=e)

    def test_cli_errors(self):
        p = self.cli(['--compare', '/nonexistent/timing.log'])
        self.assertEqual(p.returncode, 2)
        self.assertIn('--compare and --predictions go together', p.stderr)
        with tempfile.TemporaryDirectory() as d:
            t = os.path.join(d, 'timing.log')
            with open(t, 'w') as f:
                f.write('no table here\n')
            j = os.path.join(d, 'p.json')
            with open(j, 'w') as f:
                f.write('{"ops": {"attention_forward": 0.1}}')
            p = self.cli(['--compare', t, '--predictions', j])
            self.assertEqual(p.returncode, 2)
            self.assertIn('no "timing (bf16)" table', p.stderr)
            with open(t, 'w') as f:
                f.write('timing (bf16): B=4\nop  ms  rate\n'
                        'attention_forward   0.2000   10.0 TFLOP/s\n')
            p = self.cli(['--compare', t, '--predictions', j])
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn('-50%', p.stdout)
        p = self.cli(['--bogus'])
        self.assertEqual(p.returncode, 2)

    def test_prebuilt_errors(self):
        p = self.cli(['--prebuilt', '/nonexistent', '--commit', 'HEAD'])
        self.assertEqual(p.returncode, 2)
        self.assertIn('--prebuilt is the working tree', p.stderr)
        # a folder without the cubins: the missing file is named, nothing compiled
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(build.BuildError) as e:
                build.compile_tree(ROOT, files=['kernels/cuda/adamw.cu'], prebuilt=d)
            self.assertIn('no prebuilt report for kernels/cuda/adamw.cu', str(e.exception))
            os.makedirs(os.path.join(d, 'kernels', 'cuda'))
            with open(os.path.join(d, 'kernels', 'cuda', 'adamw.sm_90a.log'), 'w') as f:
                f.write('')
            with self.assertRaises(build.BuildError) as e:
                build.compile_tree(ROOT, files=['kernels/cuda/adamw.cu'], prebuilt=d)
            self.assertIn('no prebuilt cubin for kernels/cuda/adamw.cu', str(e.exception))

    def test_without_nvcc_it_skips(self):
        p = self.cli([], env={'NVCC': '/nonexistent/nvcc'})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('nvcc not found', p.stdout)


class ParserTest(unittest.TestCase):
    def test_ptxas(self):
        text = ("ptxas info    : Compiling entry function '_Z3fooPf' for 'sm_90'\n"
                "ptxas info    : Function properties for _Z3fooPf\n"
                "    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
                "ptxas info    : Used 40 registers, used 1 barriers, 128 bytes smem, "
                "392 bytes cmem[0]\n")
        r = build.parse_ptxas(text)['_Z3fooPf']
        self.assertEqual((r['regs'], r['smem'], r['stack'], r['spill_st'], r['spill_ld']),
                         (40, 128, 8, 4, 12))

    def test_calibration_rows_are_the_recorded_ones(self):
        """measured.py's copy of run 2's table equals dev/notes/gpu-results.md's."""
        with open(os.path.join(ROOT, 'dev', 'notes', 'gpu-results.md')) as f:
            doc = f.read()
        run2 = doc[doc.index('### Run 2'):doc.index('### Run 3')]
        rows = measured.parse_timing(run2)
        self.assertEqual(rows, measured.CALIB_OPS_MS)
        run3 = doc[doc.index('### Run 3'):]
        for name, B, rc, ms in measured.CALIB_STEPS_MS:
            label = '124M B16' if name == '124M' else 'XL (48L C1600) B8'
            m = re.search(re.escape('%s recompute %d' % (label, rc)) +
                          r'\s+PASS\s+median of 10 steps: ([\d.]+) ms/step', run3)
            self.assertEqual(float(m.group(1)), ms)

    def test_median_error(self):
        self.assertAlmostEqual(calibrate.median_error([(1.0, 1.1), (2.0, 1.0), (4.0, 4.0)]),
                               0.1)


# kernels/cuda/gemm.cu's print_choice format: a timed choice, then one
# that carries no times (the only candidate)
ALGO_LINES = (
    "gemm algo: m=2304 n=4096 k=768 t=10 ld=768,768,2304 bf16->bf16 bias=1 beta=0 epi=0 "
    "align=1: candidate 2 of 8 (id 21 tile 18 stages 12 splitk 1) 0.0301 ms, heuristic's "
    "first 0.0320 ms [timed]\n"
    "gemm algo: m=768 n=4096 k=768 t=00 ld=768,768,768 fp32->fp32 bias=0 beta=1 epi=0 "
    "align=1: candidate 0 of 1 (id 5 tile 3 stages 8 splitk 1) [the only candidate]\n"
    "gemm algo: m=768 n=4096 k=3072 t=00 ld=3072,3072,768 bf16->bf16 bias=1 beta=0 epi=0 "
    "align=1: candidate 0 of 8 (id 21 tile 18 stages 12 splitk 1) 0.0410 ms, heuristic's "
    "first 0.0410 ms [timed]\n")


class GemmCostsTest(unittest.TestCase):
    def test_algo_lines_to_costs(self):
        rows = gemm_costs.from_algo_lines(ALGO_LINES)
        self.assertEqual(rows, [(2304, 4096, 768, 'bf16', 0.0301),
                                (768, 4096, 3072, 'bf16', 0.0410)])
        text = '\n'.join(gemm_costs.format_rows(rows) + ['noise', 'gemm_cost 1 2 3 bf16 x',
                                                          'gemm_cost 2304 4096 768 bf16 0.0401'])
        costs = gemm_costs.parse(text)
        # the repeated shape costs its median, (0.0301 + 0.0401) / 2 ms
        self.assertAlmostEqual(costs[(2304, 4096, 768, 'bf16')], 0.0351e-3)
        self.assertAlmostEqual(costs[(768, 4096, 3072, 'bf16')], 0.0410e-3)
        self.assertEqual(len(costs), 2)

    def test_table_or_rate(self):
        P = dict(hw.params(), GEMM_T0=1e-6, GEMM_RATE=1e15, GEMM_OUT_BW=1e12)
        t = gemm_costs.GemmTable({(1000, 1000, 500, 'bf16'): 7e-6}, 'fake.log')
        P['GEMM_TABLE'] = t
        self.assertEqual(cost.gemm_time(P, ops.Gemm(1000, 1000, 500, 2e6)), 7e-6)
        self.assertAlmostEqual(cost.gemm_time(P, ops.Gemm(1000, 1000, 501, 2e6)),
                               1e-6 + 1.002e9 / 1e15 + 2e6 / 1e12)
        line = gemm_costs.describe(t, P['GEMM_RATE'])
        self.assertIn('1 of the 2 gemm shapes looked up were timed in fake.log', line)
        self.assertIn('1000 TFLOP/s', line)
        self.assertIn('one rate for every shape, 788 TFLOP/s',
                      gemm_costs.describe(None, 788e12))
        with tempfile.TemporaryDirectory() as d:
            f = os.path.join(d, 'empty.log')
            with open(f, 'w') as fh:
                fh.write('no costs\n')
            with self.assertRaises(ValueError):
                gemm_costs.load(f)

    def test_cli_prints_the_timed_choices(self):
        with tempfile.TemporaryDirectory() as d:
            f = os.path.join(d, 'train.log')
            with open(f, 'w') as fh:
                fh.write(ALGO_LINES)
            tool = os.path.join(ROOT, 'dev', 'perf_model', 'gemm_costs.py')
            p = subprocess.run(['python3', tool, f], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout, 'gemm_cost 2304 4096 768 bf16 0.03010\n'
                             'gemm_cost 768 4096 3072 bf16 0.04100\n')
            with open(f, 'w') as fh:
                fh.write('nothing timed\n')
            p = subprocess.run(['python3', tool, f], capture_output=True, text=True)
            self.assertEqual(p.returncode, 1)


class ErrorVerdictTest(unittest.TestCase):
    """gpu_check's row: --compare --max-error 0.25 on fabricated timing
    tables and predictions (median per-op error 20%: pass; 30%: fail)."""

    def run_compare(self, meas, pred):
        with tempfile.TemporaryDirectory() as d:
            t = os.path.join(d, 'timing.log')
            with open(t, 'w') as f:
                f.write('timing (bf16): B=4 T=1024\nop  ms  rate\n')
                for name, ms in meas.items():
                    f.write('%-28s %8.4f %8.1f TFLOP/s\n' % (name, ms, 1.0))
                f.write('\n')
            j = os.path.join(d, 'p.json')
            with open(j, 'w') as f:
                json.dump({'source': 'fake', 'ops': pred}, f)
            return subprocess.run(['python3', os.path.join(ROOT, 'dev', 'cuda_perf_model.py'),
                                   '--compare', t, '--predictions', j, '--max-error', '0.25'],
                                  capture_output=True, text=True)

    def test_pass_and_fail(self):
        meas = {'attention_forward': 1.0, 'attention_backward': 2.0, 'gelu_forward': 4.0,
                'adamw_update (124M)': 1.0}
        # errors +10%, -20%, +30% and one op not predicted: median 20%
        p = self.run_compare(meas, {'attention_forward': 1.1, 'attention_backward': 1.6,
                                    'gelu_forward': 5.2})
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn('median |error| over 3 ops: 20.0% (target: <= 25%): PASS', p.stdout)
        # +30%, -40%, +10%, -26% (adamw_update keyed without its suffix): median 28%
        p = self.run_compare(meas, {'attention_forward': 1.3, 'attention_backward': 1.2,
                                    'gelu_forward': 4.4, 'adamw_update': 0.74})
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn('median |error| over 4 ops: 28.0% (target: <= 25%): FAIL', p.stdout)
        # nothing in common: no pass
        p = self.run_compare(meas, {'matmul_forward qkv': 1.0})
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)

    def test_verdict(self):
        self.assertEqual(calibrate.error_verdict([(1.0, 1.25)], 0.25), (True, 0.25, 1))
        self.assertFalse(calibrate.error_verdict([], 0.25)[0])
        self.assertFalse(calibrate.error_verdict([(1.0, 1.3), (1.0, None)], 0.25)[0])


PROBE = r'''
#include <stdint.h>
extern "C" __global__ void probe(float *o, const char *g, float x) {
  __shared__ __align__(16) uint32_t s[2048];
  unsigned c = (unsigned)__cvta_generic_to_shared(s + threadIdx.x * 4);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(c), "l"(g + threadIdx.x * 16));
  asm volatile("cp.async.commit_group;");
  asm volatile("cp.async.wait_group 1;" ::: "memory");
  uint32_t v0, v1, v2, v3, a0, a1, a2, a3;
  asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3)
               : "l"(g + 65536 + threadIdx.x * 16));
  asm volatile("st.shared.v2.u32 [%0], {%1,%2};" :: "r"(c + 4096), "r"(v0), "r"(v1));
  asm volatile("bar.sync 0;");
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : "r"(c));
  float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
               "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(v2), "r"(v3));
  float e;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(d0 * x));
  o[threadIdx.x] = e + d1 + d2 + d3;
}
'''


@unittest.skipIf(build.find_nvcc() is None, 'nvcc not found')
class ProbeTest(unittest.TestCase):
    """The decoder against a kernel whose PTX names its instructions."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix='perf_model_probe.')
        src = os.path.join(cls.tmp, 'probe.cu')
        with open(src, 'w') as f:
            f.write(PROBE)
        cubin = os.path.join(cls.tmp, 'probe.cubin')
        subprocess.run([build.find_nvcc(), '-cubin', '-arch=sm_90', '-O3', src, '-o', cubin],
                       check=True, capture_output=True)
        cls.k = sass.read_cubin(cubin)[0]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def find(self, name):
        return [i for i in self.k.instrs if i.name == name]

    def test_instructions_and_fields(self):
        self.assertEqual(self.k.name, 'probe')
        self.assertEqual([i.width for i in self.find('LDGSTS')], [16])
        self.assertEqual([i.depbar for i in self.find('DEPBAR')], [1])
        self.assertEqual(len(self.find('LDGDEPBAR')), 1)
        self.assertIn(16, [i.width for i in self.find('LDG')])
        self.assertIn(8, [i.width for i in self.find('STS')])
        self.assertEqual([(i.width, i.trans) for i in self.find('LDSM')], [(16, True)])
        self.assertEqual([i.flops for i in self.find('HMMA')], [4096])
        self.assertEqual([i.func for i in self.find('MUFU')], ['EX2'])
        self.assertEqual(len(self.find('BAR')), 1)
        self.assertFalse([i for i in self.k.instrs if i.name.startswith('UNK_')])

    def test_branches_land_on_instructions(self):
        addrs = {i.addr for i in self.k.instrs}
        for i in self.find('BRA'):
            self.assertIn(i.target, addrs)
        last = self.find('BRA')[-1]
        self.assertEqual(last.target, last.addr)  # the padding BRA self after EXIT
        ldg = [i for i in self.k.instrs if i.name == 'LDG' and i.wbar != 7][0]
        self.assertTrue(any(i.wait >> ldg.wbar & 1 for i in self.k.instrs if i.addr > ldg.addr))


WG_PROBE = r'''
#include <stdint.h>
__global__ void wg_probe(float *o, uint64_t desc, uint32_t a0)
{
  float d[32], e[128];
  for (int i = 0; i < 32; i++) d[i] = o[i];
  for (int i = 0; i < 128; i++) e[i] = o[i + 32];
  asm volatile("wgmma.fence.sync.aligned;");
  asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, "
               "%6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
               "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, "
               "1, 1, 1, 1;"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                 "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                 "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                 "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                 "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                 "+f"(d[30]), "+f"(d[31])
               : "r"(a0), "r"(a0 + 1), "r"(a0 + 2), "r"(a0 + 3), "l"(desc));
  asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, "
               "%4, %5, 1, 1, 1, 0, 0;"
               : "+f"(e[0]), "+f"(e[1]), "+f"(e[2]), "+f"(e[3]) : "l"(desc), "l"(desc + 64));
  asm volatile("wgmma.commit_group.sync.aligned;");
  asm volatile("wgmma.wait_group.sync.aligned 0;");
  for (int i = 0; i < 32; i++) o[i + 160 * threadIdx.x] = d[i];
  for (int i = 0; i < 4; i++) o[i + 32 + 160 * threadIdx.x] = e[i];
}
'''


@unittest.skipIf(build.find_nvcc() is None, 'nvcc not found')
class WgmmaProbeTest(unittest.TestCase):
    """HGMMA's N (wgmma.mma_async m64nNk16, sm_90a), as sass.py decodes it:
    FLOPs per warp = 2 x 64 x N x 16 / 4."""

    def test_hgmma_flops(self):
        tmp = tempfile.mkdtemp(prefix='perf_model_wg.')
        try:
            src = os.path.join(tmp, 'wg.cu')
            with open(src, 'w') as f:
                f.write(WG_PROBE)
            cubin = os.path.join(tmp, 'wg.cubin')
            subprocess.run([build.find_nvcc(), '-cubin', '-arch=sm_90a', '-O3', src, '-o',
                            cubin], check=True, capture_output=True)
            k = sass.read_cubin(cubin)[0]
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self.assertEqual(sorted(i.flops for i in k.instrs if i.name == 'HGMMA'),
                         [512 * 8, 512 * 64])
        self.assertTrue(any(i.name == 'WARPGROUP' for i in k.instrs))
        self.assertFalse([i for i in k.instrs if i.name.startswith('UNK_')])


if __name__ == '__main__':
    unittest.main()


class TestDevices(unittest.TestCase):
    """The parameter set is chosen from the name the run reports."""

    def test_names(self):
        self.assertEqual(hw.device_of('NVIDIA H100 80GB HBM3'), 'H100')
        self.assertEqual(hw.device_of('GPU 0: NVIDIA H200 (UUID: GPU-1)'), 'H200')
        self.assertEqual(hw.device_of('NVIDIA H100 NVL'), 'H100')
        self.assertIsNone(hw.device_of('NVIDIA A100-SXM4-80GB'))
        self.assertIsNone(hw.device_of(''))

    def test_h100_differs_in_memory_only(self):
        a, b = hw.params('H200'), hw.params('H100')
        self.assertEqual(set(a), set(b))
        self.assertEqual(hw.params(None), a)
        differ = {k for k in a if a[k] != b[k]}
        self.assertEqual(differ, {'HBM_BW', 'L2_BYTES', 'GEMM_OUT_BW'})
        self.assertAlmostEqual(b['HBM_BW'] / a['HBM_BW'], 3.35 / 4.8)
        self.assertEqual(b['L2_BYTES'], 50e6)
        for k in ('SMS', 'DENSE_BF16_PEAK', 'GEMM_RATE', 'CLOCK_HZ'):
            self.assertEqual(a[k], b[k])

    def test_every_constant_listed_by_origin(self):
        doc = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           'notes', 'perf-model.md')
        text = open(doc).read()
        part = text[text.index('## The constants by origin'):]
        part = part[:part.index('\n## ')]
        for k in hw.params():
            self.assertRegex(part, r'\b%s\b' % k, '%s is not in perf-model.md\'s origins' % k)
