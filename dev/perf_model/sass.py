"""dev/perf_model/sass.py -- the SASS of an sm_80/sm_90 cubin, read
without cuobjdump or nvdisasm (this CUDA install has neither).

Owns: the ELF reader for cubins, the instruction decoder and the opcode
table. Nothing here knows about kernels' meaning or time; loops.py and
cost.py build on the Instr records.

What is decoded, and how each field was established (the probes are
PTX snippets compiled here with nvcc 13.0; test_perf_model.py repeats them,
so a compiler whose encoding moved fails the self-test):
  * every instruction is 128 bits, two little-endian 64-bit words lo, hi;
  * opcode: lo bits 0..8; bits 9..11 say which operand form (register,
    immediate, constant bank, uniform register) and are not part of the name;
  * guard predicate: lo bits 12..14 (7 = PT, always), bit 15 negates it;
  * control word, hi bits 41..63: stall cycles (4 bits), yield (1), write
    scoreboard (3; 7 = none), read scoreboard (3), wait mask (6 bits, one per
    scoreboard), operand reuse (4). A variable-latency instruction (a load,
    MUFU, SHFL, ...) names the scoreboard it releases when its result lands;
    a consumer waits on that scoreboard's bit. That is the data dependence
    the round-trip count in loops.py follows;
  * memory width (LDG, STG, LDS, STS, LDGSTS, LD, ST): hi bits 9..11, codes
    0/1 = 8-bit, 2/3 = 16-bit, 4 = 32, 5 = 64, 6 = 128 (probe: ld/st.global
    and .shared u8, u16, u32, v2.u32, v4.u32; cp.async 4, 8, 16 bytes);
  * LDSM: hi bits 8..9 = .x1/.x2/.x4 (0, 1, 2), hi bit 14 = .trans;
  * HMMA: hi bit 11 set = m16n8k16 (4096 FLOPs), clear = m16n8k8 (2048);
  * HGMMA (wgmma.mma_async, sm_90a): N of m64nNk16 = 8 (lo bits 53..58 + 1)
    (probe: m64nNk16 bf16 for N = 8, 16, 32, 64, 128, 256 gave 0, 1, 3, 7,
    15, 31); FLOPs per warp = a quarter of the warpgroup's 2 x 64 x N x 16;
  * MUFU: hi bits 10..13 = function (2 = EX2, 3 = LG2, 4 = RCP, ...);
  * DEPBAR (cp.async.wait_group N): N in lo bits 38..43;
  * BRA/CALL target: byte offset from the next instruction =
    4 * (lo bits 16..23) + 256 * signed(lo bits 32..63) (checked: the
    closing `BRA self` after EXIT is -16, loops land on instructions inside
    the function); BSSY's reconvergence point: signed(lo bits 32..63) bytes.
The opcode names are the instruction set's public mnemonics; the few the
public sm_80 lists lack were named here from probes (0x036 VIADD from
integer adds, 0x044 STSM from stmatrix, 0x1f0 HGMMA from wgmma.mma_async on
sm_90a, 0x1a7/0x1b2 SYNCS from mbarrier waits and arrives, 0x1c5
WARPGROUP from wgmma.fence). An opcode not in the table reads UNK_xxx and
counts as "other".

This replaces the opcode lister under ../shared/tools/sass for the project
(a user's clone has no ../shared), written anew with the fields above.
Run as a program it lists a cubin:
    python3 dev/perf_model/sass.py FILE.cubin            kernels, sizes
    python3 dev/perf_model/sass.py FILE.cubin REGEX      listing
"""
import re
import struct
import subprocess
import sys

# opcode (lo bits 0..8) -> (mnemonic, class). Classes, as loops.py counts them:
#   tensor  matrix-unit instructions     ldsm   ldmatrix
#   lds     shared loads                 sts    shared stores (STS, STSM)
#   ldg     global loads                 stg    global stores and reductions
#   generic loads and stores through a generic address (LD, ST): what the
#           compiler emits when it cannot prove a pointer's space; in this
#           project's kernels that is shared memory reached through pointer
#           arithmetic (wmma fragments), so cost.py counts them as shared
#   ldgsts  cp.async copies              local  local memory (spills, arrays)
#   bar     block barriers               mufu   special functions (exp2, rcp, ...)
#   fp32    FP32 arithmetic              conv   conversions, packed half math
#   int     integer and address arithmetic, moves and selects
#   uniform uniform-datapath (per-warp scalar) instructions
#   shfl    warp shuffles and votes      ctrl   branches, reconvergence, waits
#   other   everything else (S2R, LDC, ...)
OPCODES = {
    0x002: ('MOV', 'int'), 0x003: ('P2R', 'int'), 0x004: ('R2P', 'int'),
    0x005: ('CS2R', 'other'), 0x006: ('VOTE', 'shfl'), 0x007: ('SEL', 'int'),
    0x008: ('FSEL', 'fp32'), 0x009: ('FMNMX', 'fp32'), 0x00a: ('FSET', 'fp32'),
    0x00b: ('FSETP', 'fp32'), 0x00c: ('ISETP', 'int'), 0x010: ('IADD3', 'int'),
    0x011: ('LEA', 'int'), 0x012: ('LOP3', 'int'), 0x013: ('IABS', 'int'),
    0x015: ('VABSDIFF4', 'int'), 0x016: ('PRMT', 'int'), 0x017: ('IMNMX', 'int'),
    0x019: ('SHF', 'int'), 0x01a: ('SGXT', 'int'), 0x01b: ('BMSK', 'int'),
    0x01c: ('PLOP3', 'int'), 0x020: ('FMUL', 'fp32'), 0x021: ('FADD', 'fp32'),
    0x022: ('FSWZADD', 'fp32'), 0x023: ('FFMA', 'fp32'), 0x024: ('IMAD', 'int'),
    0x025: ('IMAD.WIDE', 'int'), 0x026: ('IDP', 'int'), 0x027: ('IMAD.HI', 'int'),
    0x028: ('DMUL', 'other'), 0x029: ('DADD', 'other'), 0x02a: ('DSETP', 'other'),
    0x02b: ('DFMA', 'other'), 0x030: ('HADD2', 'conv'), 0x031: ('HFMA2', 'conv'),
    0x032: ('HMUL2', 'conv'), 0x033: ('HSET2', 'conv'), 0x034: ('HSETP2', 'conv'),
    0x036: ('VIADD', 'int'), 0x037: ('IMMA', 'tensor'), 0x038: ('I2I', 'conv'),
    0x039: ('I2IP', 'conv'), 0x03a: ('MOVM', 'other'), 0x03b: ('LDSM', 'ldsm'),
    0x03c: ('HMMA', 'tensor'), 0x03d: ('BMMA', 'tensor'), 0x03e: ('F2FP', 'conv'),
    0x03f: ('DMMA', 'tensor'), 0x040: ('HMNMX2', 'conv'), 0x043: ('F2IP', 'conv'),
    0x044: ('STSM', 'sts'), 0x045: ('I2FP', 'conv'),
    0x082: ('UMOV', 'uniform'), 0x083: ('UP2UR', 'uniform'), 0x086: ('VOTEU', 'uniform'),
    0x087: ('USEL', 'uniform'), 0x08c: ('UISETP', 'uniform'), 0x090: ('UIADD3', 'uniform'),
    0x091: ('ULEA', 'uniform'), 0x092: ('ULOP3', 'uniform'), 0x096: ('UPRMT', 'uniform'),
    0x097: ('UIADD3', 'uniform'), 0x099: ('USHF', 'uniform'), 0x09a: ('USGXT', 'uniform'),
    0x09c: ('UPLOP3', 'uniform'), 0x0a4: ('UIMAD', 'uniform'), 0x0a5: ('UIMAD.WIDE', 'uniform'),
    0x0b9: ('ULDC', 'uniform'), 0x0bb: ('ULDC', 'uniform'), 0x0bd: ('UFLO', 'uniform'),
    0x0be: ('UBREV', 'uniform'), 0x0bf: ('UPOPC', 'uniform'),
    0x100: ('FLO', 'int'), 0x101: ('BREV', 'int'), 0x102: ('FCHK', 'fp32'),
    0x104: ('F2F', 'conv'), 0x105: ('F2I', 'conv'), 0x106: ('I2F', 'conv'),
    0x107: ('FRND', 'conv'), 0x108: ('MUFU', 'mufu'), 0x109: ('POPC', 'int'),
    0x110: ('F2F', 'conv'), 0x111: ('F2I', 'conv'), 0x112: ('I2F', 'conv'),
    0x113: ('FRND', 'conv'), 0x118: ('NOP', 'ctrl'), 0x119: ('S2R', 'other'),
    0x11a: ('DEPBAR', 'ctrl'), 0x11c: ('B2R', 'other'), 0x11d: ('BAR', 'bar'),
    0x141: ('BSYNC', 'ctrl'), 0x142: ('BREAK', 'ctrl'), 0x143: ('CALL', 'ctrl'),
    0x144: ('CALL', 'ctrl'), 0x145: ('BSSY', 'ctrl'), 0x146: ('YIELD', 'ctrl'),
    0x147: ('BRA', 'ctrl'), 0x148: ('WARPSYNC', 'ctrl'), 0x149: ('BRX', 'ctrl'),
    0x14d: ('EXIT', 'ctrl'), 0x150: ('RET', 'ctrl'), 0x155: ('BMOV', 'ctrl'),
    0x156: ('BMOV', 'ctrl'), 0x158: ('BRXU', 'ctrl'), 0x15d: ('NANOSLEEP', 'ctrl'),
    0x180: ('LD', 'generic'), 0x181: ('LDG', 'ldg'), 0x182: ('LDC', 'other'),
    0x183: ('LDL', 'local'), 0x184: ('LDS', 'lds'), 0x185: ('ST', 'generic'),
    0x186: ('STG', 'stg'), 0x187: ('STL', 'local'), 0x188: ('STS', 'sts'),
    0x189: ('SHFL', 'shfl'), 0x18a: ('ATOM', 'stg'), 0x18b: ('ATOM', 'stg'),
    0x18c: ('ATOMS', 'sts'), 0x18d: ('ATOMS', 'sts'), 0x18e: ('RED', 'stg'),
    0x18f: ('CCTL', 'other'), 0x192: ('MEMBAR', 'other'), 0x1a7: ('SYNCS', 'ctrl'),
    0x1a8: ('ATOMG', 'stg'), 0x1a9: ('ATOMG', 'stg'), 0x1ae: ('LDGSTS', 'ldgsts'),
    0x1af: ('LDGDEPBAR', 'ctrl'), 0x1b2: ('SYNCS', 'ctrl'), 0x1c2: ('R2UR', 'uniform'),
    0x1c3: ('S2UR', 'uniform'), 0x1c4: ('REDUX', 'shfl'), 0x1c5: ('WARPGROUP', 'ctrl'),
    0x1f0: ('HGMMA', 'tensor'),
}

# memory width code (hi bits 9..11) -> bytes per lane
WIDTH_BYTES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 8, 6: 16}
WIDTH_OPS = ('LDG', 'STG', 'LDS', 'STS', 'LDGSTS', 'LD', 'ST', 'LDL', 'STL')
MUFU_FUNCS = {0: 'COS', 1: 'SIN', 2: 'EX2', 3: 'LG2', 4: 'RCP', 5: 'RSQ', 8: 'SQRT', 9: 'TANH'}


class Instr:
    """One decoded instruction. width: bytes per lane of a memory access
    (LDSM: bytes per lane for .x1/.x2/.x4 = 4, 8, 16); flops: per warp, for
    tensor instructions; target: branch or BSSY target address."""
    __slots__ = ('addr', 'op', 'name', 'klass', 'pred', 'stall', 'wbar', 'rbar', 'wait',
                 'target', 'width', 'flops', 'depbar', 'func', 'trans')

    def __init__(self, addr, lo, hi):
        self.addr = addr
        self.op = lo & 0x1ff
        self.name, self.klass = OPCODES.get(self.op, ('UNK_%03x' % self.op, 'other'))
        p = (lo >> 12) & 0xf
        self.pred = None if p == 7 else ('!' if p & 8 else '') + 'P%d' % (p & 7)
        ctrl = hi >> 41
        self.stall = ctrl & 0xf
        self.wbar = (ctrl >> 5) & 7
        self.rbar = (ctrl >> 8) & 7
        self.wait = (ctrl >> 11) & 0x3f
        self.target = self.width = self.depbar = self.func = None
        self.flops = 0
        self.trans = False
        if self.name in ('BRA', 'CALL'):
            self.target = addr + 16 + 4 * ((lo >> 16) & 0xff) + 256 * _signed32(lo >> 32)
        elif self.name == 'BSSY':
            self.target = addr + 16 + _signed32(lo >> 32)
        elif self.name in WIDTH_OPS:
            self.width = WIDTH_BYTES.get((hi >> 9) & 7, 16)
        elif self.name == 'LDSM':
            self.width = 4 << ((hi >> 8) & 3)
            self.trans = bool((hi >> 14) & 1)
        elif self.name == 'HMMA':
            self.flops = 4096 if (hi >> 11) & 1 else 2048
        elif self.name == 'HGMMA':
            self.flops = 512 * 8 * (((lo >> 53) & 0x3f) + 1)
        elif self.name == 'MUFU':
            self.func = MUFU_FUNCS.get((hi >> 10) & 0xf, '?')
        elif self.name == 'DEPBAR':
            self.depbar = (lo >> 38) & 0x3f

    def text(self):
        s = '%05x  %s%s' % (self.addr, '@%s ' % self.pred if self.pred else '', self.name)
        if self.width:
            s += '.%d' % (self.width * 8)
        if self.func:
            s += '.' + self.func
        if self.depbar is not None:
            s += '.LE %d' % self.depbar
        if self.target is not None:
            s += ' -> %05x' % self.target
        ctl = ' st%d' % self.stall
        if self.wbar != 7:
            ctl += ' wr:SB%d' % self.wbar
        if self.wait:
            ctl += ' wait:' + ','.join('SB%d' % b for b in range(6) if self.wait >> b & 1)
        return '%-40s%s' % (s, ctl)


def _signed32(v):
    v &= 0xffffffff
    return v - (1 << 32) if v & 0x80000000 else v


class ElfError(Exception):
    pass


def _elf_tables(data):
    """Sections (name, type, offset, size) and symbols (name, value, size,
    type, section index) of a 64-bit little-endian ELF file."""
    if data[:4] != b'\x7fELF' or data[4] != 2 or data[5] != 1:
        raise ElfError('not a 64-bit little-endian ELF file (is it a cubin?)')
    shoff, = struct.unpack_from('<Q', data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', data, 0x3a)
    raw = [struct.unpack_from('<IIQQQQII', data, shoff + i * shentsize) for i in range(shnum)]
    strtab_off = raw[shstrndx][4]

    def cstr(off):
        return data[off:data.index(b'\0', off)].decode('latin-1')

    sections = [(cstr(strtab_off + r[0]), r[1], r[4], r[5], r[6]) for r in raw]
    symbols = []
    for name, typ, off, size, link in sections:
        if typ != 2:  # SHT_SYMTAB
            continue
        str_off = sections[link][2]
        for k in range(size // 24):
            st_name, st_info, _, st_shndx, st_value, st_size = struct.unpack_from(
                '<IBBHQQ', data, off + 24 * k)
            symbols.append((cstr(str_off + st_name), st_value, st_size, st_info & 0xf, st_shndx))
    return sections, symbols


def demangle(names):
    """Demangled names (c++filt, one process for all); the names themselves
    where c++filt is missing."""
    try:
        out = subprocess.run(['c++filt'], input='\n'.join(names), capture_output=True,
                             text=True, check=True).stdout.splitlines()
        if len(out) == len(names):
            return out
    except (OSError, subprocess.CalledProcessError):
        pass
    return list(names)


class Kernel:
    """A kernel's code: its instructions (subroutines it CALLs, such as a
    division's slow path, are cut out and kept apart in `subs`)."""

    def __init__(self, mangled, instrs, subs):
        self.mangled = mangled
        self.name = mangled
        self.instrs = instrs
        self.subs = subs


def read_cubin(path):
    """Every kernel of a cubin, in section order, with demangled names."""
    with open(path, 'rb') as f:
        data = f.read()
    sections, symbols = _elf_tables(data)
    kernels = []
    for idx, (name, _, off, size, _) in enumerate(sections):
        if not name.startswith('.text.'):
            continue
        # FUNC symbols other than the kernel's own: subroutines at an offset
        subs = sorted((v, v + s) for n, v, s, t, shndx in symbols
                      if shndx == idx and t == 2 and v > 0 and s > 0)
        instrs = []
        for a in range(0, size - 15, 16):
            if any(lo <= a < hi for lo, hi in subs):
                continue
            lo_w, hi_w = struct.unpack_from('<QQ', data, off + a)
            instrs.append(Instr(a, lo_w, hi_w))
        kernels.append(Kernel(name[len('.text.'):], instrs, subs))
    for k, dn in zip(kernels, demangle([k.mangled for k in kernels])):
        k.name = re.sub(r'^void ', '', dn)
    return kernels


def short_name(name):
    """A demangled name without its parameter list: amma_fwd_kernel<64>."""
    depth = 0
    for i, ch in enumerate(name):
        if ch == '<':
            depth += 1
        elif ch == '>':
            depth -= 1
        elif ch == '(' and depth == 0:
            return name[:i]
    return name


def main(argv):
    if len(argv) not in (2, 3):
        print('usage: sass.py FILE.cubin [REGEX]', file=sys.stderr)
        return 2
    try:
        kernels = read_cubin(argv[1])
    except (OSError, ElfError) as e:
        print('sass.py: %s: %s' % (argv[1], e), file=sys.stderr)
        return 1
    for k in kernels:
        if len(argv) == 2:
            print('%6d  %s' % (len(k.instrs), k.name))
        elif re.search(argv[2], k.name):
            print('== %s (%d instructions)' % (k.name, len(k.instrs)))
            for ins in k.instrs:
                print('  ' + ins.text())
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
