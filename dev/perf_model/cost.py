"""dev/perf_model/cost.py -- the cost model: ptxas resources and SASS
profiles (loops.py) in, predicted seconds out.

Owns: occupancy, the per-kernel time of the three launch kinds of ops.py,
and the block scheduler simulation. Every constant comes from hw.py through
the dict P, so a fit can vary them.

Occupancy: resident blocks per SM = the least of 32, 2048 / threads,
65536 / (registers rounded up to 8, x threads), and 228 KiB / (static +
dynamic shared memory + 1 KiB reserved per block).

Tile kernels (attention). One iteration of the hot loop (one tile) of one
warp is a Profile: instructions by class, tensor FLOPs, shared and global
bytes, round trips, short waits, barriers and the compiler's stall cycles.
  T_warp  = stall + serialized round trips x L_L2 + short waits x L_SHORT
            + barriers x L_BAR (+ the part of L_L2 a prefetched round trip
            cannot hide behind the rest): the time one warp needs for a tile
            when nothing else competes (its dependence chain; the tiles a
            block loads were loaded by the blocks of the same head before it,
            so they come from L2);
  T_res(n)= the busiest SM pipe, plus CONTENTION x the rest of the work
            of the pipes that share issue slots and the MIO queue (issue,
            ALU, MUFU, tensor, shared memory; busy_cycles), when n resident
            blocks of W warps each do one tile: issue (4 per clock), integer/compare ALU (2 per clock),
            MUFU (0.5), tensor FLOPs (MMA_SYNC_FLOP_PER_CLK; HGMMA's at
            WGMMA_FLOP_PER_CLK, the spec peak), shared-memory
            bytes (128 per clock), global bytes from L2 (L2_BW / 132);
  a round of the n blocks takes max(T_res(n), T_warp) cycles: throughput-
            bound when their work fills the pipes, latency-bound otherwise.
  Blocks are dispatched in launch order (blockIdx.x fastest) to the first
  free slot of 132 SMs x occupancy; an SM shares its time among its
  resident blocks (the round time above, with n the blocks it holds now), so
  the tail of a launch, where SMs run fewer blocks, runs each faster.
  Each block also pays L_BLOCK and the T_warp of its code outside the hot
  loop (prologue and epilogue) once.
  Trip counts of copy loops nested in the hot loop come from the bytes the
  launch spec says one block stages per tile: trips = bytes / (bytes per
  lane per iteration x threads); other nested loops run spec.inner times.
  Kernel time = simulated makespan / clock (TENSOR_CLOCK_HZ when the hot
  loop has tensor work, the clock a sustained tensor load holds; else
  CLOCK_HZ), at least the launch's HBM bytes / HBM_BW.

Stream kernels (everything memory-bound). The kernel's path (every loop
once) is found as above; its steady loop is the global-loading loop on it
with the most bytes per serialized round trip (the unrolled body of a
grid-stride or row loop), and its Profile is the unit of work. The launch
moves `moved` bytes, so each warp runs reps = moved / (warps x 32 x bytes
per lane of the unit) units. A warp's chain = L_BLOCK + T_warp of the code
outside the loop + max(1, reps x round trips) x latency + reps x the rest of
the unit's T_warp (a row kernel whose warps each do less than one unit
still waits for one load). Round trips cost L_HBM when the launch's HBM
bytes exceed the L2 (L2_BYTES), else L_L2. Time = max(waves x chain, the
busiest pipe over all warps, HBM bytes / HBM_BW, moved / L2_BW).

Gemms (cuBLASLt, no SASS): GEMM_T0 + FLOPs /
(GEMM_RATE x (GEMM_MISALIGNED when a dimension is not a multiple of 8)) +
output bytes / GEMM_OUT_BW: the rate is a large matmul's, measured; T0
and OUT_BW (the fill, drain and epilogue of a small one) are fitted on the
recorded matmul rows.

Launch overheads are added per op by predict.py: the first launch of an op
timed alone between CUDA events costs T_LAUNCH_TIMED, every further launch
(inside that op, or any launch inside a training step) T_LAUNCH_STEP.
"""
import heapq
import math
import re

from . import loops as loops_mod

ALU_NAMES = {'IADD3', 'LOP3', 'SHF', 'LEA', 'ISETP', 'SEL', 'IMNMX', 'PRMT', 'VIADD', 'IABS',
             'PLOP3', 'SGXT', 'BMSK', 'FSETP', 'FMNMX', 'FSEL', 'FSET', 'P2R', 'R2P', 'POPC',
             'FLO', 'BREV', 'MOV'}


class Occupancy:
    """Resident blocks per SM for a launch of `threads` per block, `regs`
    per thread and `smem` bytes of shared memory per block (static plus
    dynamic), and which limit sets it."""

    def __init__(self, P, threads, regs, smem):
        warps = -(-threads // 32)
        regs_t = max(8, -(-max(regs, 1) // P['REG_GRANULE']) * P['REG_GRANULE'])
        lim = {
            'blocks': P['MAX_BLOCKS_PER_SM'],
            'threads': P['MAX_THREADS_PER_SM'] // (warps * 32),
            'registers': P['REGS_PER_SM'] // (regs_t * warps * 32),
            'smem': P['SMEM_PER_SM'] // (smem + P['SMEM_RESERVED']),
        }
        self.blocks = max(0, min(lim.values()))
        self.limiter = min(lim, key=lambda k: (lim[k], k != 'smem'))
        self.warps = warps
        self.fits = smem <= P['SMEM_PER_BLOCK'] and regs <= 255 and self.blocks > 0


def hot_loop(pf):
    """The loop a tile kernel spends its time in: the one whose range holds
    the most tensor-core instructions (ties: the innermost); without any,
    the one with the most global loads."""
    best, key = None, None
    for lp in pf.loops:
        ins = pf.loop_instrs(lp)
        k = (sum(i.klass == 'tensor' for i in ins), sum(i.klass in ('ldg', 'ldgsts') for i in ins),
             -len(lp.body))
        if key is None or k > key:
            best, key = lp, k
    return best


def warp_cycles(P, prof, lat):
    """T_warp of a profile: the dependence chain of one warp through it,
    with global round trips of `lat` cycles."""
    base = (prof.stall + prof.rt_serial * lat + prof.short_waits * P['L_SHORT'] +
            prof.bars * P['L_BAR'])
    exposed = max(0.0, lat - base) if prof.rt_prefetch else 0.0
    return base + exposed


def pipe_cycles(P, prof, warps):
    """Cycles each SM pipe needs for `warps` warps each running prof once."""
    alu = sum(v for k, v in prof.names.items() if k in ALU_NAMES)
    l2_per_clk = P['L2_BW'] / P['SMS'] / P['CLOCK_HZ']
    return {
        'issue': warps * prof.instrs / P['ISSUE_PER_CLK'],
        'alu': warps * alu / P['ALU_PER_CLK'],
        'mufu': warps * prof.classes['mufu'] / P['MUFU_PER_CLK'],
        'tensor': warps * ((prof.flops - prof.wflops) / P['MMA_SYNC_FLOP_PER_CLK'] +
                           prof.wflops / P['WGMMA_FLOP_PER_CLK']),
        'smem': warps * 32 * prof.sbytes / P['SMEM_BYTES_PER_CLK'],
        'l2': warps * 32 * (prof.gbytes_ld + prof.gbytes_st) / l2_per_clk,
    }


# the pipes that share the issue slots and the MIO queue (hw.py: CONTENTION)
CONTENDED = ('issue', 'alu', 'mufu', 'tensor', 'smem')


def busy_cycles(P, pipes):
    """Cycles a round of pipe work takes: the busiest pipe, plus CONTENTION
    times the rest of the contended pipes' work (hw.py)."""
    top = max(pipes.values())
    c = [pipes[k] for k in CONTENDED if k in pipes]
    if not c:
        return top
    return max(top, max(c) + P['CONTENTION'] * (sum(c) - max(c)))


def roof_share(P, pipes, round_cycles, clock_hz):
    """The share of its binding roofline (the busiest pipe at the boost
    clock, perfect overlap) a round of round_cycles at clock_hz reaches."""
    roof = max(pipes.values()) / P['CLOCK_HZ']
    return roof / (round_cycles / clock_hz) if round_cycles > 0 else 0.0


class KernelResult:
    """A prediction for one launch: seconds, and what set it."""

    def __init__(self, seconds, bound, occ, prof, detail):
        self.seconds, self.bound, self.occ = seconds, bound, occ
        self.prof, self.detail = prof, detail


def _pattern(spec, shape):
    return re.compile('^' + spec.kernel.replace('{hsp}', str(shape.hsp)) + '$')


def find_kernel(spec, shape, kernels):
    pat = _pattern(spec, shape)
    for k in kernels:
        if pat.match(k.short):
            return k
    return None


_CACHE = {}


def _memo(kind, k, spec, shape, fn):
    """Profiles depend on the kernel, the spec and the shape, not on P."""
    inner = spec.inner(shape) if callable(spec.inner) else spec.inner
    staged = tuple(spec.staged(shape)) if hasattr(spec, 'staged') else ()
    key = (kind, id(k), spec.kernel, spec.threads, inner, staged, shape.hsp)
    if key not in _CACHE:
        _CACHE[key] = fn()
    return _CACHE[key]


def tile_profiles(k, spec, shape):
    """(hot loop, its per-tile Profile, the prologue+epilogue Profile)."""
    return _memo('tile', k, spec, shape, lambda: _tile_profiles(k, spec, shape))


def _tile_profiles(k, spec, shape):
    pf = loops_mod.PathFinder(k.kernel.instrs)
    hot = hot_loop(pf)
    if hot is None:
        return None, None, None
    inner = spec.inner(shape) if callable(spec.inner) else spec.inner
    staged = list(spec.staged(shape))
    trips = {}

    def t1(lp):
        return trips.get(lp.head, inner)

    _, path = pf.loop_profile(hot, t1)
    copies = [lp for item in path if isinstance(item, tuple) for lp in [item[0]]
              if pf.loop_profile(lp, t1)[0].gbytes_ld > 0]
    for lp, nbytes in zip(copies, staged):
        per_iter = pf.loop_profile(lp, t1)[0].gbytes_ld * spec.threads
        trips[lp.head] = max(1, round(nbytes / per_iter))
    first = staged[0] if staged else 0

    def t2(lp):
        if lp.head in trips:
            return trips[lp.head]
        if lp.parent is None and first:  # prologue copy loops: one tile
            own = pf.loop_profile(lp, lambda x: inner)[0].gbytes_ld
            if own:
                return max(1, round(first / (own * spec.threads)))
        return inner

    pf2 = loops_mod.PathFinder(k.kernel.instrs)  # fresh cache for the final trips
    prof = pf2.loop_profile(hot, t2)[0]
    edge = pf2.kernel_profile(lambda lp: 0 if lp.head == hot.head else t2(lp))[0]
    return hot, prof, edge


def simulate(P, works, occ_blocks, round_cycles):
    """Makespan (cycles) of blocks with `works` (iterations, in dispatch
    order) on SMS SMs x occ_blocks slots; an SM holding n blocks advances
    each by one iteration per round_cycles(n)."""
    sms = P['SMS']
    queue = list(works)
    qi = 0
    active = [[] for _ in range(sms)]  # remaining iterations per resident block
    for slot in range(occ_blocks):
        for s in range(sms):
            if qi < len(queue):
                active[s].append(float(queue[qi]))
                qi += 1
    heap = []
    clock = [0.0] * sms
    for s in range(sms):
        if active[s]:
            heapq.heappush(heap, (min(active[s]) * round_cycles(len(active[s])), s))
    end = 0.0
    while heap:
        t, s = heapq.heappop(heap)
        n = len(active[s])
        step = (t - clock[s]) / round_cycles(n)
        active[s] = [w - step for w in active[s]]
        clock[s] = t
        active[s] = [w for w in active[s] if w > 1e-9]
        while len(active[s]) < occ_blocks and qi < len(queue):
            active[s].append(float(queue[qi]))
            qi += 1
        end = max(end, t)
        if active[s]:
            heapq.heappush(heap, (t + min(active[s]) * round_cycles(len(active[s])), s))
    return end


def tile_time(P, k, spec, shape):
    hot, prof, edge = tile_profiles(k, spec, shape)
    smem = spec.smem(shape) + k.smem_static
    occ = Occupancy(P, spec.threads, k.regs, smem)
    if not occ.fits:
        return KernelResult(float('nan'), 'does not fit', occ, prof, {})
    W = occ.warps
    gx, gy, gz = spec.grid(shape)
    works = [spec.tiles(shape, x) for _ in range(gz) for _ in range(gy) for x in range(gx)]
    t_warp = warp_cycles(P, prof, P['L_L2'])
    edge_cycles = P['L_BLOCK'] + warp_cycles(P, edge, P['L_L2'])

    def round_cycles(n):
        return max(busy_cycles(P, pipe_cycles(P, prof, n * W)), t_warp)

    full = round_cycles(occ.blocks)
    works = [w + edge_cycles / full for w in works]
    cyc = simulate(P, works, occ.blocks, round_cycles)
    pipes = pipe_cycles(P, prof, occ.blocks * W)
    bound = max(pipes, key=pipes.get) if busy_cycles(P, pipes) >= t_warp else 'latency'
    # tensor work runs at the clock a sustained tensor load holds
    clock = P['TENSOR_CLOCK_HZ'] if prof.flops > 0 else P['CLOCK_HZ']
    secs = cyc / clock
    hbm = spec.hbm(shape) / P['HBM_BW']
    if hbm > secs:
        secs, bound = hbm, 'hbm'
    detail = {'t_warp': t_warp, 'pipes': pipes, 'round': full, 'edge': edge_cycles,
              'blocks': len(works), 'hot': hot,
              'roof_share': roof_share(P, pipes, full, clock),
              'mma_sync': prof.flops - prof.wflops > 0}
    return KernelResult(secs, bound, occ, prof, detail)


def steady_loop(pf, path, trips):
    """The loop a memory-bound kernel streams in: of the global-loading
    loops on its path, the one with the most global bytes per serialized
    round trip (then per instruction); None when the path has none."""
    best, key = None, None
    for item in path:
        if not isinstance(item, tuple):
            continue
        prof = pf.loop_profile(item[0], trips)[0]
        b = prof.gbytes_ld + prof.gbytes_st
        if prof.gbytes_ld == 0:
            continue
        k = (b / max(1, prof.rt_serial), b / max(1, prof.instrs))
        if key is None or k > key:
            best, key = prof, k
    return best


def stream_profiles(k, spec, shape):
    """(the unit Profile: steady loop or whole path, the code outside it or
    None)."""
    def run():
        pf = loops_mod.PathFinder(k.kernel.instrs)
        inner = spec.inner(shape) if callable(spec.inner) else spec.inner

        def trips(lp):
            return 1 if lp.parent is None else inner
        whole, path = pf.kernel_profile(trips)
        prof = steady_loop(pf, path, trips) or whole
        edge = pf.kernel_profile(lambda lp: 0)[0] if prof is not whole else None
        return prof, edge
    return _memo('stream', k, spec, shape, run)


def stream_time(P, k, spec, shape):
    prof, edge = stream_profiles(k, spec, shape)
    occ = Occupancy(P, spec.threads, k.regs, k.smem_static + spec.smem(shape))
    W = occ.warps
    blocks = spec.grid(shape)
    warps = blocks * W
    lane_bytes = max(1, prof.gbytes_ld + prof.gbytes_st)
    moved = spec.moved(shape)
    reps = moved / (warps * 32.0 * lane_bytes)  # passes of the steady loop per warp
    waves = math.ceil(blocks / (P['SMS'] * max(1, occ.blocks)))
    lat = P['L_HBM'] if spec.hbm(shape) > P['L2_BYTES'] else P['L_L2']
    # a warp's chain: block start, the code outside the loop, its share of
    # the loop's work, but at least one round trip
    chain = (P['L_BLOCK'] + (warp_cycles(P, edge, lat) if edge else 0.0) +
             max(1.0, reps * prof.rt_serial) * lat +
             reps * (warp_cycles(P, prof, lat) - prof.rt_serial * lat))
    t_lat = waves * chain
    sms_used = min(P['SMS'], blocks)
    pipes = pipe_cycles(P, prof, warps * reps / sms_used)
    pipes['latency'] = t_lat
    secs = {k_: v / P['CLOCK_HZ'] for k_, v in pipes.items()}
    secs['hbm'] = spec.hbm(shape) / P['HBM_BW']
    secs['l2'] = moved / P['L2_BW']
    bound = max(secs, key=secs.get)
    detail = {'reps': reps, 'waves': waves, 'secs': secs}
    return KernelResult(secs[bound], bound, occ, prof, detail)


def gemm_time(P, g):
    """A gemm's seconds: as a GPU timed its shape when P['GEMM_TABLE'] (a
    gemm_costs.GemmTable, --gemm-costs) has it, else from the one rate."""
    table = P.get('GEMM_TABLE')
    t = table.seconds(g) if table is not None else None
    if t is not None:
        return t
    rate = P['GEMM_RATE'] * (1.0 if g.aligned else P['GEMM_MISALIGNED'])
    return P['GEMM_T0'] + g.flops / rate + g.out_bytes / P['GEMM_OUT_BW']


def launch_time(P, spec, shape, kernels):
    """(seconds, KernelResult or None, kernel or None, why) of one launch
    spec, launch overhead not included (predict.py adds it per op); seconds
    is None, with the reason in why, when the launch cannot be modelled."""
    if spec.kind == 'gemm':
        return gemm_time(P, spec), None, None, ''
    k = find_kernel(spec, shape, kernels)
    if k is None:
        return None, None, None, 'no compiled kernel matches %s' % spec.kernel.replace(
            '{hsp}', str(shape.hsp))
    if spec.kind == 'tile' and tile_profiles(k, spec, shape)[0] is None:
        return None, None, k, '%s has no loop to take as its hot loop' % k.short
    r = (tile_time if spec.kind == 'tile' else stream_time)(P, k, spec, shape)
    if not r.seconds == r.seconds:  # NaN: the launch does not fit an SM
        return None, r, k, '%s: %s' % (k.short, r.bound)
    return r.seconds, r, k, ''
