"""dev/perf_model/loops.py -- a kernel's loops, the path one iteration
takes through them, and what that path issues and waits for.

Owns: the control-flow graph of a kernel's SASS, loop discovery, path
selection, the instruction mix and the round-trip count. cost.py turns the
resulting Profile into cycles.

Method, in the order the code applies it:
  1. Basic blocks end at branches, EXIT and RET, and start at branch targets.
     Loops are the natural loops of the control-flow graph: an edge to a
     block that dominates its source is a back edge, and the loop is its
     header plus every block that reaches the back edge without passing the
     header (not always one address range: nvcc moves some blocks of a loop
     past its end). Back edges to one header make one loop. The `BRA self`
     that pads a kernel after its last EXIT is not an edge. Loops nest by
     containment.
  2. Inside a loop body (or the whole kernel), nested loops are collapsed to
     one node that costs `trips` times one iteration of their own path, and
     the remaining graph is acyclic (taken in topological order). The path
     through it is chosen as the one that does the iteration's work by the
     cheapest code the compiler emitted for it: the most tensor-core FLOPs, then the most bytes loaded
     from global memory, then the fewest instructions. That picks the
     vectorised copy of a loop the compiler versioned on alignment, the
     unmasked copy of a softmax the compiler duplicated for the diagonal
     tile, and the arm that does the math rather than a `continue` that
     skips a warp's tile. Stores are left out of the preference: a guarded
     store (`if (row < T)`) is cheap either way, and counting its bytes would
     prefer the copies nvcc unrolls for long rows over the ones a short row
     runs.
     Predicated instructions count as executed.
  3. Along that path (an iteration run twice, counted on the second pass so
     that loads issued late in one iteration and used early in the next are
     seen), every global load (LDG/LD) marks the scoreboard it writes as
     pending. The first instruction that waits on a pending scoreboard ends
     one global round trip: loads issued before that wait travel together,
     and a later load cannot start before the wait if the code placed it
     after; that wait ends the round trip of every load then in flight.
     Round trips whose loads were issued in the same iteration are
     serialized (their whole latency is exposed to the warp); those issued
     in the previous iteration were prefetched (overlapped with a whole
     iteration). cp.async (LDGSTS) travels by groups: LDGDEPBAR commits one,
     DEPBAR.LE n waits until at most n are in flight; a wait that must drain
     a group committed in this iteration is a serialized round trip, one
     that leaves younger groups in flight waits only for an older group
     (prefetched). Waits on a scoreboard written by anything else of
     variable latency (shared-memory loads, MUFU, shuffles, S2R, constant
     loads, conversions) are short waits.
The result is per warp and per iteration; nested loops contribute trips x
their own counts.
"""
from collections import Counter


class Block:
    __slots__ = ('start', 'end', 'instrs', 'succ', 'pred_blocks')

    def __init__(self, instrs):
        self.instrs = instrs
        self.start = instrs[0].addr
        self.end = instrs[-1].addr
        self.succ = []
        self.pred_blocks = []


class Loop:
    """A natural loop: its header block, the set of its blocks (by start
    address; not always one address range: nvcc places some blocks of a
    loop after it), and the loops nested in it."""
    __slots__ = ('head', 'tail', 'body', 'children', 'parent', 'depth')

    def __init__(self, head, body):
        self.head = head
        self.body = body
        self.tail = max(body)
        self.children = []
        self.parent = None
        self.depth = 0


def build_blocks(instrs):
    """Basic blocks and their successors (start addresses)."""
    if not instrs:
        return []
    addrs = {i.addr for i in instrs}
    leaders = {instrs[0].addr}
    for k, ins in enumerate(instrs):
        if ins.name in ('BRA', 'EXIT', 'RET', 'BRX', 'BRXU'):
            if k + 1 < len(instrs):
                leaders.add(instrs[k + 1].addr)
            if ins.target is not None and ins.target in addrs:
                leaders.add(ins.target)
    blocks, cur = [], []
    for ins in instrs:
        if ins.addr in leaders and cur:
            blocks.append(Block(cur))
            cur = []
        cur.append(ins)
    if cur:
        blocks.append(Block(cur))
    for k, b in enumerate(blocks):
        last = b.instrs[-1]
        nxt = blocks[k + 1].start if k + 1 < len(blocks) else None
        if last.name == 'BRA':
            if last.target is not None and last.target in addrs:
                if not (last.target == last.addr and last.pred is None):  # padding BRA self
                    b.succ.append(last.target)
            if last.pred is not None and nxt is not None:
                b.succ.append(nxt)
        elif last.name in ('EXIT', 'RET'):
            if last.pred is not None and nxt is not None:
                b.succ.append(nxt)
        elif nxt is not None:
            b.succ.append(nxt)
    by = {b.start: b for b in blocks}
    for b in blocks:
        for s in b.succ:
            by[s].pred_blocks.append(b.start)
    return blocks


def dominators(blocks):
    """{block start: set of dominating block starts}, from the entry."""
    if not blocks:
        return {}
    entry = blocks[0].start
    by = {b.start: b for b in blocks}
    order, seen = [], set()

    def dfs(v):  # iterative postorder
        stack = [(v, iter(by[v].succ))]
        seen.add(v)
        while stack:
            node, it = stack[-1]
            nxt = next((s for s in it if s not in seen), None)
            if nxt is None:
                order.append(node)
                stack.pop()
            else:
                seen.add(nxt)
                stack.append((nxt, iter(by[nxt].succ)))
    dfs(entry)
    rpo = order[::-1]
    dom = {v: set(rpo) for v in rpo}
    dom[entry] = {entry}
    changed = True
    while changed:
        changed = False
        for v in rpo[1:]:
            preds = [p for p in by[v].pred_blocks if p in dom]
            new = set.intersection(*(dom[p] for p in preds)) if preds else set()
            new = new | {v}
            if new != dom[v]:
                dom[v], changed = new, True
    return dom


def find_loops(blocks):
    """Top-level natural loops (each with its nested children)."""
    dom = dominators(blocks)
    by = {b.start: b for b in blocks}
    bodies = {}
    for b in blocks:
        for h in b.succ:
            if b.start in dom and h in dom.get(b.start, ()):  # back edge b -> h
                body = bodies.setdefault(h, {h})
                work = [b.start]
                while work:
                    v = work.pop()
                    if v not in body:
                        body.add(v)
                        work.extend(by[v].pred_blocks)
    loops = sorted((Loop(h, frozenset(body)) for h, body in bodies.items()),
                   key=lambda l: -len(l.body))
    top = []
    for k, lp in enumerate(loops):
        parents = [c for c in loops[:k] if lp.head in c.body and c.head != lp.head]
        lp.parent = min(parents, key=lambda c: len(c.body)) if parents else None
        (lp.parent.children if lp.parent else top).append(lp)
    for lp in loops:
        d, p = 0, lp.parent
        while p:
            d, p = d + 1, p.parent
        lp.depth = d
    for lp in loops:
        lp.children.sort(key=lambda c: c.head)
    top.sort(key=lambda c: c.head)
    return top


def all_loops(top):
    out = []
    for lp in top:
        out.append(lp)
        out.extend(all_loops(lp.children))
    return out


class Profile:
    """What one pass over a path issues (per warp): `classes` counts by
    class, `names` by mnemonic, plus tensor FLOPs, global and shared bytes
    per lane, serialized and prefetched round trips, short waits, barriers
    and the compiler's stall cycles. `seq` is the instruction sequence of the
    path with nested loops kept as (Profile, trips) items."""

    def __init__(self):
        self.classes = Counter()
        self.names = Counter()
        self.flops = 0
        self.wflops = 0  # the part of flops from HGMMA (warpgroup products)
        self.gbytes_ld = 0
        self.gbytes_st = 0
        self.sbytes = 0
        self.stall = 0
        self.rt_serial = 0
        self.rt_prefetch = 0
        self.short_waits = 0
        self.bars = 0
        self.mufu = Counter()
        self.instrs = 0
        self.seq = []

    def add(self, other, times=1):
        self.classes.update({k: v * times for k, v in other.classes.items()})
        self.names.update({k: v * times for k, v in other.names.items()})
        self.mufu.update({k: v * times for k, v in other.mufu.items()})
        for f in ('flops', 'wflops', 'gbytes_ld', 'gbytes_st', 'sbytes', 'stall', 'rt_serial',
                  'rt_prefetch', 'short_waits', 'bars', 'instrs'):
            setattr(self, f, getattr(self, f) + times * getattr(other, f))

    def scaled(self, times):
        p = Profile()
        p.add(self, times)
        return p

    def key(self):
        """Path preference: most tensor FLOPs, most global bytes loaded,
        fewest instructions."""
        return (self.flops, self.gbytes_ld, -self.instrs)


def count_instr(p, ins):
    p.classes[ins.klass] += 1
    p.names[ins.name] += 1
    p.instrs += 1
    p.stall += max(ins.stall, 1)
    p.flops += ins.flops
    if ins.name == 'HGMMA':
        p.wflops += ins.flops
    if ins.klass in ('ldg', 'ldgsts'):
        p.gbytes_ld += ins.width or 4
    elif ins.klass == 'stg':
        p.gbytes_st += ins.width or 4
    elif ins.klass in ('lds', 'sts', 'generic'):
        p.sbytes += ins.width or 4
    elif ins.klass == 'ldsm':
        p.sbytes += ins.width
    if ins.klass == 'ldgsts':
        p.sbytes += ins.width or 4
    if ins.klass == 'bar':
        p.bars += 1
    if ins.name == 'MUFU':
        p.mufu[ins.func] += 1


class PathFinder:
    """Paths and profiles over one kernel. trips(loop) gives a nested
    loop's trip count per iteration of its parent."""

    def __init__(self, instrs):
        self.instrs = instrs
        self.blocks = build_blocks(instrs)
        self.by_start = {b.start: b for b in self.blocks}
        self.top = find_loops(self.blocks)
        self.loops = all_loops(self.top)
        self._cache = {}

    def loop_instrs(self, loop):
        return [i for s in sorted(loop.body) for i in self.by_start[s].instrs]

    def _region_path(self, region, head, is_loop, children, trips):
        """Best path through a region (a set of block starts) with its child
        loops collapsed (method, step 2). For a loop, paths run from the
        header to a back edge; for the whole kernel, from the entry to an
        EXIT. Returns (Profile without waits, path as a list of Block or
        (Loop, trips) items)."""
        owner = {}
        for c in children:
            for v in c.body:
                owner[v] = c

        def node(v):
            return owner.get(v, self.by_start[v])

        def out_edges(n):
            if isinstance(n, Block):
                return n.succ
            return [s for v in n.body for s in self.by_start[v].succ if s not in n.body]

        # topological order of the region's nodes (edges back to the head dropped)
        order, seen = [], set()
        start = node(head)
        stack = [(start, iter(out_edges(start)))]
        seen.add(id(start))
        while stack:
            n, it = stack[-1]
            nxt = None
            for s in it:
                if s not in region or (is_loop and s == head):
                    continue
                m = node(s)
                if id(m) not in seen:
                    nxt = m
                    break
            if nxt is None:
                order.append(n)
                stack.pop()
            else:
                seen.add(id(nxt))
                stack.append((nxt, iter(out_edges(nxt))))
        order.reverse()
        best = {id(start): (Profile(), [])}
        finals = []
        for n in order:
            if id(n) not in best:
                continue
            prof, path = best[id(n)]
            p2 = Profile()
            p2.add(prof)
            if isinstance(n, Block):
                for ins in n.instrs:
                    count_instr(p2, ins)
                path2 = path + [n]
            else:
                k = trips(n)
                p2.add(self.loop_profile(n, trips)[0], k)
                path2 = path + [(n, k)]
            succ = out_edges(n)
            if not succ and not is_loop:
                finals.append((p2, path2))  # EXIT
            for s in succ:
                if is_loop and s == head:
                    finals.append((p2, path2))  # back edge: one iteration
                elif s in region:
                    m = node(s)
                    if m is n:
                        continue
                    if id(m) not in best or p2.key() > best[id(m)][0].key():
                        best[id(m)] = (p2, path2)
        if not finals:
            return Profile(), []
        return max(finals, key=lambda fp: fp[0].key())

    def loop_profile(self, loop, trips):
        """(Profile of one iteration, path) for a loop, nested loops included."""
        key = (loop.head, trips)
        if key not in self._cache:
            prof, path = self._region_path(loop.body, loop.head, True, loop.children, trips)
            self._cache[key] = (self._with_waits(prof, path, trips), path)
        return self._cache[key]

    def kernel_profile(self, trips, exclude=None):
        """(Profile, path) of one pass through the whole kernel, top-level
        loops collapsed; `exclude` (a loop) is given zero trips, so that its
        cost can be counted apart."""
        def t(lp):
            return 0 if lp is exclude else trips(lp)
        if not self.blocks:
            return Profile(), []
        region = frozenset(self.by_start)
        prof, path = self._region_path(region, self.blocks[0].start, False, self.top, t)
        return self._with_waits(prof, path, t), path

    def _flatten(self, path, trips):
        """The instruction stream of a path; nested loops become markers."""
        out = []
        for item in path:
            if isinstance(item, Block):
                out.extend(item.instrs)
            else:
                out.append(item)
        return out

    def _with_waits(self, prof, path, trips):
        """prof plus the round-trip analysis of its path (method, step 3)."""
        stream = self._flatten(path, trips)
        pending = {}  # scoreboard -> 'prev' or 'cur' (pending global load)
        short = set()  # scoreboards written by short-latency producers
        groups = []  # cp.async groups in flight: 'prev' or 'cur'
        open_group = False
        serial = prefetch = waits = 0
        for rnd in ('prev', 'cur'):
            if rnd == 'cur':
                pending = {sb: 'prev' for sb in pending}
                groups = ['prev' for _ in groups]
            for ins in stream:
                if isinstance(ins, tuple):  # a nested loop: its own counts
                    lp, n = ins
                    if rnd == 'cur':
                        sub = self.loop_profile(lp, trips)[0]
                        serial += n * sub.rt_serial
                        prefetch += n * sub.rt_prefetch
                        waits += n * sub.short_waits
                    pending.clear()
                    continue
                hit = [sb for sb in pending if ins.wait >> sb & 1]
                if hit:
                    # the first wait on a pending load ends the round trip of
                    # every load issued so far: they were in flight together
                    if rnd == 'cur':
                        if any(pending[sb] == 'cur' for sb in pending):
                            serial += 1
                        else:
                            prefetch += 1
                    pending.clear()
                if rnd == 'cur' and any(ins.wait >> sb & 1 for sb in short):
                    waits += 1
                short -= {sb for sb in range(6) if ins.wait >> sb & 1}
                if ins.name == 'LDGSTS':
                    open_group = True
                elif ins.name == 'LDGDEPBAR':
                    if open_group:
                        groups.append(rnd)
                    open_group = False
                elif ins.name == 'DEPBAR' and ins.depbar is not None:
                    drained = groups[:max(0, len(groups) - ins.depbar)]
                    groups = groups[len(drained):]
                    if drained and rnd == 'cur':
                        if 'cur' in drained:
                            serial += 1
                        else:
                            prefetch += 1
                if ins.wbar != 7:
                    if ins.klass == 'ldg':
                        pending[ins.wbar] = rnd
                        short.discard(ins.wbar)
                    elif ins.klass in ('lds', 'ldsm', 'mufu', 'shfl', 'generic', 'other',
                                       'uniform', 'conv'):
                        short.add(ins.wbar)
                        pending.pop(ins.wbar, None)
        prof.rt_serial = serial
        prof.rt_prefetch = prefetch
        prof.short_waits = waits
        return prof


def describe_loops(pf):
    """Lines describing the loop nest (for --verbose)."""
    lines = []
    for lp in pf.loops:
        ins = pf.loop_instrs(lp)
        n = len(ins)
        hm = sum(1 for i in ins if i.klass == 'tensor')
        end = pf.by_start[lp.tail].end
        lines.append('%sloop %05x-%05x: %d instructions, %d tensor' %
                     ('  ' * lp.depth, lp.head, end, n, hm))
    return lines
