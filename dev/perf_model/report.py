"""dev/perf_model/report.py -- the model's tables, as text.

Owns: formatting only (kernel resources and occupancy, hot-loop mixes,
per-op predictions, step breakdowns, predicted-vs-measured tables).
"""
from . import cost
from . import ops as ops_mod

MIX = [('tensor', ('tensor',)), ('LDS/STS/LDSM', ('lds', 'sts', 'ldsm', 'generic')),
       ('LDG/STG/LDGSTS', ('ldg', 'stg', 'ldgsts')), ('BAR', ('bar',)), ('MUFU', ('mufu',)),
       ('int/addr', ('int', 'uniform')), ('fp32', ('fp32', 'conv')),
       ('other', ('shfl', 'ctrl', 'other', 'local'))]


def ms(x):
    return '%.4f' % (x * 1e3) if x is not None else '  n/a'


def resources(kernels, out):
    """Every compiled kernel: file, registers, spills, stack, static smem."""
    out('%-24s %5s %7s %6s %6s  %s' % ('file', 'regs', 'spill', 'stack', 'smem', 'kernel'))
    for k in kernels:
        out('%-24s %5d %7s %6d %6d  %s' % (k.file.split('/')[-1], k.regs,
                                          '%d/%d' % (k.spill_st, k.spill_ld), k.stack,
                                          k.smem_static, k.short))


def mix_cells(prof):
    n = max(1, prof.instrs)
    return ['%5.1f' % (100.0 * sum(prof.classes[c] for c in cls) / n) for _, cls in MIX]


def kernel_table(P, table, shape, kernels, out):
    """The modelled launches at a shape: occupancy, the unit of work's mix
    (hot loop per tile for tile kernels, steady loop for stream kernels)
    and round trips, the bound and the predicted time."""
    out('%-30s %4s %8s %-9s %10s %6s  %s  %6s %9s %-8s %9s' % (
        'kernel (%s B=%d)' % (shape.name, shape.B), 'regs', 'smem', 'blocks/SM', 'unit',
        'instr', ' '.join('%5s' % m[0][:5] for m in MIX), 'RT', 'T_warp', 'bound', 'ms'))
    seen = set()
    for name in table:
        alts, _ = table[name](shape)
        for alt in alts:
            found = [(s, cost.find_kernel(s, shape, kernels)) for s in alt if s.kind != 'gemm']
            if not all(k for _, k in found):
                continue
            for spec, k in found:
                if k.short in seen:
                    continue
                seen.add(k.short)
                secs, res, _, _ = cost.launch_time(P, spec, shape, kernels)
                if res is None:
                    continue
                smem = k.smem_static + spec.smem(shape)
                prof = res.prof
                hot = res.detail.get('hot')
                unit = ('tile@%05x' % hot.head) if hot is not None else 'pass'
                tw = cost.warp_cycles(P, prof, P['L_L2'])
                rt = '%d/%d' % (prof.rt_serial, prof.rt_prefetch)
                out('%-30s %4d %8d %3d %-5s %10s %6d  %s  %6s %9.0f %-8s %9s' % (
                    k.short[:30], k.regs, smem, res.occ.blocks, res.occ.limiter[:5], unit,
                    prof.instrs, ' '.join(mix_cells(prof)), rt, tw, res.bound[:8], ms(secs)))
            break


def span(lo, hi, scale=1e3, fmt='%.4f'):
    """'lo-hi' of two predictions (seconds; either may be None)."""
    if lo is None or hi is None:
        return 'n/a'
    a, b = sorted((lo, hi))
    return (fmt + '-' + fmt) % (a * scale, b * scale)


def op_rows(preds, out, measured=None, band=None):
    """Per-op predictions, with measurements beside them when given; band:
    (optimistic, pessimistic) predictions of the same ops (hw.band), printed
    as the range of each."""
    head = '%-28s %10s' % ('op', 'pred ms')
    if band is not None:
        head += ' %17s' % 'range ms'
    if measured is not None:
        head += ' %10s %7s' % ('meas ms', 'error')
    out(head + '  %10s  %s' % ('rate', 'parts (ms, bound)'))
    for i, p in enumerate(preds):
        line = '%-28s %10s' % (p.name, ms(p.seconds))
        if band is not None:
            line += ' %17s' % span(band[0][i].seconds, band[1][i].seconds)
        if measured is not None:
            m = measured.get(p.name)
            if m is not None and p.seconds:
                line += ' %10.4f %+6.0f%%' % (m, 100.0 * (p.seconds * 1e3 / m - 1.0))
            else:
                line += ' %10s %7s' % ('-', '')
        fl = p.flops()
        rate = ('%6.1f TF/s' % (fl / p.seconds / 1e12)) if fl and p.seconds else ''
        parts = '; '.join('%s %s%s' % (lab, ms(s), ' ' + r.bound if r else '')
                          for lab, s, r, _ in p.parts)
        if p.repeat > 1:
            parts = '%d x [%s]' % (p.repeat, parts)
        out(line + '  %10s  %s' % (rate, parts or p.note))


def step_table(sp, peak, out):
    s = sp.shape
    out('%s, recompute %d: %.1f ms/step, %.0f tok/s, MFU %.1f%%' % (
        s, sp.recompute, sp.seconds * 1e3, sp.tokens_per_s(), 100 * sp.mfu(peak)))
    model, extra = sp.flops()
    out('  FLOPs per step (model/flops.c): %.1f TFLOP, %.0f TFLOP/s achieved%s' % (
        model / 1e12, model / sp.seconds / 1e12,
        '; the re-forwards add %.1f%%' % (100.0 * extra / model) if extra else ''))
    groups = {}
    for group, name, secs, calls in sp.rows:
        groups.setdefault(group, []).append((name, secs, calls))
    for group, rows in groups.items():
        tot = sum(r[1] for r in rows)
        out('  %-18s %8.2f ms  %5.1f%%' % (group, tot * 1e3, 100 * tot / sp.seconds))
        for name, secs, calls in sorted(rows, key=lambda r: -r[1]):
            out('    %-26s %8.2f ms  (%d calls)' % (name, secs * 1e3, calls))
    if sp.missing:
        out('  not modelled (no matching kernel; counted as 0): ' + ', '.join(sp.missing))


def step_summary(steps, peak, out, band=None):
    """band: (optimistic, pessimistic) steps, aligned with steps: the range
    of ms/step and MFU beside each."""
    out('%-34s %4s %11s %15s %10s %6s %11s  %s' % (
        'shape', 'rc', 'ms/step', 'range', 'tok/s', 'MFU', 'MFU range', 'largest ops'))
    for i, sp in enumerate(steps):
        if band is not None:
            lo, hi = band[0][i], band[1][i]
            rng = span(lo.seconds, hi.seconds, fmt='%.1f')
            mfu = '%.1f-%.1f%%' % tuple(sorted((100 * lo.mfu(peak), 100 * hi.mfu(peak))))
        else:
            rng = mfu = ''
        agg = {}
        for _, name, secs, _ in sp.rows:
            agg[name] = agg.get(name, 0.0) + secs
        top = ', '.join('%s %.1f' % (n, v * 1e3)
                        for n, v in sorted(agg.items(), key=lambda kv: -kv[1])[:3])
        out('%-34s %4d %11.1f %15s %10.0f %5.1f%% %11s  %s' % (
            '%s B=%d' % (sp.shape.name, sp.shape.B), sp.recompute, sp.seconds * 1e3, rng,
            sp.tokens_per_s(), 100 * sp.mfu(peak), mfu, top))


def roof_rows(P, table, shape, kernels, out):
    """Every tile kernel at a shape: the share of its binding roofline the
    model predicts (cost.roof_share); returns the mma.sync kernels over
    hw.py's MMA_ROOF_SHARE_MAX, as (kernel, share)."""
    out('%-40s %-8s %8s %6s  %s' % ('kernel (%s B=%d)' % (shape.name, shape.B), 'bound',
                                     'share', 'limit', 'tensor path'))
    over, seen = [], set()
    for name in table:
        alts, _ = table[name](shape)
        for alt in alts:
            for spec in alt:
                if spec.kind != 'tile':
                    continue
                k = cost.find_kernel(spec, shape, kernels)
                if k is None or k.short in seen:
                    continue
                seen.add(k.short)
                res = cost.launch_time(P, spec, shape, kernels)[1]
                if res is None or 'roof_share' not in res.detail:
                    continue
                share, mma = res.detail['roof_share'], res.detail['mma_sync']
                bad = mma and share > P['MMA_ROOF_SHARE_MAX']
                if bad:
                    over.append((k.short, share))
                out('%-40s %-8s %7.1f%% %5.0f%%  %s%s' % (
                    k.short[:40], res.bound[:8], 100 * share, 100 * P['MMA_ROOF_SHARE_MAX'],
                    'mma.sync' if mma else 'wgmma/none', '  OVER' if bad else ''))
    return over


def shapes_default():
    """The shapes the issue names: gpu_check's 124M micro-batch and XL B=8."""
    return [ops_mod.gpt2_124m(64), ops_mod.gpt2_xl(8)]
