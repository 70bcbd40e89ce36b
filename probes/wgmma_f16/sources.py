"""The five wgmma-f16 kernel sources, rendered from the probes' shapes (none is kept as a
file): the kit's preamble (probelab.kits.lane_id.wgmma_source: types, ARGS, a tile's shared
address, PTX's descriptor), each source's opening comment, its one macro per form (A from
registers or a tile, B's tile, the accumulators: both shared-A forms rendered by one
function, the others' text as the archive's sources hold it; the padding is theirs too, so
the bytes a build compiles are the archive's: tests/test_rendered_sources.py) and one macro
instance per kernel, its descriptor fields
as its shape declares them (the grid's per-kernel coordinates)."""

from collections.abc import Sequence

from probelab.kits.lane_id.engine import Shape
from probelab.kits.lane_id.mma_sync import comment
from probelab.kits.lane_id.wgmma_source import DESCRIPTOR, SHARED_ADDRESS, head, preamble
from probelab.kits.tiles import SWIZZLE_MODES

VENDOR = "nvidia"  # whose compilers build these kernels (their uint32_t line)

RS_PROSE = """\
wgmma-f16 probes, NVIDIA sm_90a: one warpgroup (128 threads, one block) = one wave = one
wgmma.mma_async m64n8k16 f16 x f16 -> f32, fenced, committed and waited for.
Thread t of wave w reads its values from a[w][t][0..SA), b[w][t][0..SB), c[w][t][0..4)
(two f16 per register, value i in bits [16 (i % 2), +16) of register i / 2) and writes its
four f32 accumulators to d[w][t][0..4).
An operand read from shared memory is placed there by slot: value v of thread t is the
f16 at element v * 128 + t of the operand's tile (byte 2 (v * 128 + t)), so the lane-id
decode names tile elements, and a hypothesis maps a byte offset to (row, k) through the
descriptor's layout. Each kernel's descriptor fields are constants of its source.
params[0] = number of waves."""

SS_PROSE = """\
wgmma-f16-ss probe, NVIDIA sm_90a: one warpgroup (128 threads, one block) = one wave = one
wgmma.mma_async m64n8k16 f16 x f16 -> f32 with A and B both from shared memory, fenced,
committed and waited for. Thread t of wave w reads its values from a[w][t][0..4),
b[w][t][0..2) (two f16 per register, value i in bits [16 (i % 2), +16) of register
i / 2), c[w][t][0..4), and writes its four f32 accumulators to d[w][t][0..4).
A's tile is 2 KiB (1,024 f16), B's 1 KiB (512), each 1 KiB aligned; value v of thread t
is element v * 128 + t of its tile (byte 2 (v * 128 + t)), so the lane-id decode names
tile bytes. Each kernel's descriptors are constants of its source; params[0] = waves."""

SSA_PROSE = """\
wgmma-f16-ssa probe, NVIDIA sm_90a: one warpgroup (128 threads, one block) = one wave = one
wgmma.mma_async m64n16k16 f16 x f16 -> f32 with A and B both from shared memory, fenced,
committed and waited for: A under the wide swizzles (64B, 128B) and M-major
(imm-trans-a = 1). Thread t of wave w reads its values from a[w][t][0..16), b[w][t][0..1)
(two f16 per register, value i in bits [16 (i % 2), +16) of register i / 2),
c[w][t][0..8), and writes its eight f32 accumulators to d[w][t][0..8).
A's tile is 8 KiB (4,096 f16), B's 512 bytes (256), each 1 KiB aligned; value v of thread
t is element v * 128 + t of its tile (byte 2 (v * 128 + t)), so the lane-id decode names
tile bytes. Each kernel's descriptors are constants of its source; params[0] = waves."""

MN_PROSE = ("""\
wgmma-f16-mn probe, NVIDIA sm_90a: one warpgroup (128 threads, one block) = one wave = one
wgmma.mma_async m64n64k16 f16 x f16 -> f32, A from registers, B N-major (imm-trans-b = 1:
n contiguous) from a 2 KiB shared tile (1 KiB aligned), fenced, committed and waited for."""
    """ Thread t of wave w reads
its four A registers a[w][t][0..4), its eight B values b[w][t][0..4) (two f16 per
register, value i in bits [16 (i % 2), +16) of register i / 2) and its 32 f32
accumulators c[w][t][0..32), and writes D to d[w][t][0..32). B's value v of thread t is
element v * 128 + t of the tile (byte 2 (v * 128 + t)). params[0] = number of waves.""")

N64_PROSE = """\
wgmma-f16-n64 probe, NVIDIA sm_90a: one warpgroup (128 threads, one block) = one wave = one
wgmma.mma_async m64n64k16 f16 x f16 -> f32, A from registers, B K-major from a 2 KiB
shared tile (1 KiB aligned), fenced, committed and waited for. Thread t of wave w reads
its four A registers a[w][t][0..4), its eight B values b[w][t][0..4) (two f16 per
register, value i in bits [16 (i % 2), +16) of register i / 2) and its 32 f32
accumulators c[w][t][0..32), and writes D to d[w][t][0..32). B's value v of thread t is
element v * 128 + t of the tile (byte 2 (v * 128 + t)). params[0] = number of waves."""

RS_WAVE = """\
#define WAVE(SA, SB)                                                          \\
    const uint32_t w = blockIdx.x, t = threadIdx.x;                           \\
    if (w >= params[0]) return;                                               \\
    const uint32_t* pa = a + (w * 128 + t) * (SA);                            \\
    const uint32_t* pb = b + (w * 128 + t) * (SB);                            \\
    const uint32_t* pc = c + (w * 128 + t) * 4;                               \\
    uint32_t* pd = d + (w * 128 + t) * 4;

// the values of one thread into its slots of a shared tile, 16 bits each
#define PLACE(TILE, P, VALUES)                                                \\
    _Pragma("unroll") for (int v = 0; v < (VALUES); ++v)                      \\
        TILE[v * 128 + t] = (uint16_t)(P[v / 2] >> (16 * (v % 2)));
"""

RS_FORM = """\
// written by ordinary stores, read by the async proxy: fence, then the barrier
#define PUBLISH() asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); __syncthreads();

#define ACC uint32_t d0 = pc[0], d1 = pc[1], d2 = pc[2], d3 = pc[3];
#define STORE pd[0] = d0; pd[1] = d1; pd[2] = d2; pd[3] = d3;

// A from registers (four f16x2), B from a shared tile of 512 f16 (1 KiB, 1 KiB aligned)
#define RS(NAME, MODE, LBO, SBO, START)                                                  \\
extern "C" __global__ void __launch_bounds__(128) NAME(ARGS) {                           \\
    __shared__ __align__(1024) uint16_t sb[512];                                          \\
    WAVE(4, 2)                                                                            \\
    PLACE(sb, pb, 4)                                                                      \\
    PUBLISH()                                                                             \\
    const uint64_t db = descriptor(shared_address(sb) + (START), LBO, SBO, MODE);         \\
    ACC                                                                                   \\
    asm volatile("wgmma.fence.sync.aligned;\\n"                                            \\
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, "   \\
                 "{%4, %5, %6, %7}, %8, 1, 1, 1, 0;\\n"                                    \\
                 "wgmma.commit_group.sync.aligned;\\n"                                     \\
                 "wgmma.wait_group.sync.aligned 0;"                                       \\
                 : "+r"(d0), "+r"(d1), "+r"(d2), "+r"(d3)                                 \\
                 : "r"(pa[0]), "r"(pa[1]), "r"(pa[2]), "r"(pa[3]), "l"(db) : "memory");   \\
    STORE                                                                                 \\
}
"""

_W = 89  # the column a form's continuation backslash stands after (the archive's)
_ASM = " " * 17  # where an asm statement's continuation lines start


def _shared_a(comment_line: str, define: tuple[str, int], words: tuple[int, int, int],
              db: str, n: int, immediates: str) -> str:
    """A form with A and B both from shared tiles (1 KiB aligned, f16, each as many
    elements as the warpgroup's values): the wave's pointers (`words` per thread: A, B,
    D), each thread's values placed in its slots of the tiles, the fence, A's descriptor
    from the macro's AM/AL/AS and B's (`db`), then m64n{n}k16 on its n / 2 f32
    accumulators, four to a line. `define`: the #define line and the width its backslash
    is padded to (the archive's)."""
    regs = [f"r{i}" for i in range(n // 2)]
    quads = [regs[k:k + 4] for k in range(0, len(regs), 4)]
    outs = [f"{_ASM}: " + ", ".join(f'"+r"({r})' for r in quads[0]),
            *(f"{_ASM}  " + ", ".join(f'"+r"({r})' for r in quad) for quad in quads[1:])]
    inputs = ': "l"(da), "l"(db) : "memory");'  # on the outputs' line where they fit one
    operands = ([f"{outs[0]} {inputs}"] if len(outs) == 1 else
                [*(f"{o}," for o in outs[:-1]), outs[-1], f"{_ASM}{inputs}"])
    a_words, b_words, d_words = words
    lines = [
        *(f"    __shared__ __align__(1024) uint16_t s{t}[{2 * k * 128}];"
          for t, k in zip("ab", (a_words, b_words), strict=True)),
        "    const uint32_t w = blockIdx.x, t = threadIdx.x;",
        "    if (w >= params[0]) return;",
        *(f"    const uint32_t* p{x} = {x} + (w * 128 + t) * {k};"
          for x, k in zip("abc", (a_words, b_words, d_words), strict=True)),
        f"    uint32_t* pd = d + (w * 128 + t) * {d_words};",
        *(line for t, k in zip("ab", (a_words, b_words), strict=True) for line in (
            f"    _Pragma(\"unroll\") for (int v = 0; v < {2 * k}; ++v)",
            f"        s{t}[v * 128 + t] = (uint16_t)(p{t}[v / 2] >> (16 * (v % 2)));")),
        '    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");',
        "    __syncthreads();",
        "    const uint64_t da = descriptor(shared_address(sa), AL, AS, AM);", db,
        *("    uint32_t " + ", ".join(f"{r} = pc[{r[1:]}]" for r in quad) + ";" for quad in quads),
        '    asm volatile("wgmma.fence.sync.aligned;\\n"',
        f'{_ASM}"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 "',
        f'{_ASM}"{{' + ", ".join(f"%{i}" for i in range(len(regs))) + "}, "
        + f'%{len(regs)}, %{len(regs) + 1}, 1, 1, 1, {immediates};\\n"',
        f'{_ASM}"wgmma.commit_group.sync.aligned;\\n"',
        f'{_ASM}"wgmma.wait_group.sync.aligned 0;"', *operands,
        *("    " + " ".join(f"pd[{r[1:]}] = {r};" for r in quad) for quad in quads)]
    head, width = define
    return (f"// {comment_line}\n{head.ljust(width)} \\\n"
            f'{_EXTERN.ljust(_W - 1)} \\\n'
            + "".join(f"{line.ljust(_W)} \\\n" for line in lines) + "}\n")


_EXTERN = 'extern "C" __global__ void __launch_bounds__(128) NAME(ARGS) {'
SS_FORM = _shared_a(
    "A (mode, LBO, SBO) and B (mode, LBO, SBO, start bytes past its tile), both K-major",
    ("#define SS(NAME, AM, AL, AS, BM, BL, BS, BSTART)", _W - 1), (4, 2, 4),
    "    const uint64_t db = descriptor(shared_address(sb) + (BSTART), BL, BS, BM);", 8,
    "0, 0")
SSA_FORM = _shared_a(
    "A (mode, LBO, SBO, imm-trans-a) and B (K-major, unswizzled: LBO 128, SBO 256)",
    ("#define SSA(NAME, AM, AL, AS, TA)", _W), (16, 1, 8),
    "    const uint64_t db = descriptor(shared_address(sb), 128, 256, 0);", 16, '" #TA ", 0')
WIDE_FORM = """\
#define @M(NAME, MODE, LBO, SBO)                                                         \\
extern "C" __global__ void __launch_bounds__(128) NAME(ARGS) {                           \\
    __shared__ __align__(1024) uint16_t sb[1024];                                          \\
    const uint32_t w = blockIdx.x, t = threadIdx.x;                                       \\
    if (w >= params[0]) return;                                                           \\
    const uint32_t* pa = a + (w * 128 + t) * 4;                                           \\
    const uint32_t* pb = b + (w * 128 + t) * 4;                                           \\
    const uint32_t* pc = c + (w * 128 + t) * 32;                                          \\
    uint32_t* pd = d + (w * 128 + t) * 32;                                                \\
    _Pragma("unroll") for (int v = 0; v < 8; ++v)                                         \\
        sb[v * 128 + t] = (uint16_t)(pb[v / 2] >> (16 * (v % 2)));                        \\
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");                          \\
    __syncthreads();                                                                      \\
    const uint64_t db = descriptor(shared_address(sb), LBO, SBO, MODE);                   \\
    uint32_t r[32];                                                                       \\
    _Pragma("unroll") for (int i = 0; i < 32; ++i) r[i] = pc[i];                          \\
    asm volatile("wgmma.fence.sync.aligned;\\n"                                            \\
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "                    \\
                 "@D, "                                                             \\
                 "{%32, %33, %34, %35}, %36, 1, 1, 1, @T;\\n"                               \\
                 "wgmma.commit_group.sync.aligned;\\n"                                     \\
                 "wgmma.wait_group.sync.aligned 0;"                                       \\
                 : @R                                                                  \\
                 : "r"(pa[0]), "r"(pa[1]), "r"(pa[2]), "r"(pa[3]), "l"(db) : "memory");   \\
    _Pragma("unroll") for (int i = 0; i < 32; ++i) pd[i] = r[i];                          \\
}
"""

RS_NOTE = """\
B K-major, 8 rows (n) of the tile: no swizzle (core matrices of 8 rows x 16 bytes, the
next 8 k LBO = 128 bytes on), then 32-, 64- and 128-byte swizzled rows (SBO: 8 rows on,
unused at N = 8), and the 128-byte mode started 32 bytes into its rows (the next k block)"""

SS_NOTE = """\
A: 64 rows of K = 16 (32 bytes): no swizzle (core matrices of 8 rows x 16 bytes, the next
8 k LBO = 128 on, the next 8 rows SBO = 256 on) or 32B swizzle (rows of 32 bytes, the next
8 rows SBO = 256 on), each 2 KiB. B: 8 rows (n) likewise, or swizzled by 64 bytes started
512 bytes in (address bit 9 set: where the 64- and 128-byte patterns part), or by 128."""

SSA_NOTE = """\
A K-major (64 rows m of K = 16): 64B swizzle (rows of 64 bytes, the next 8 rows SBO = 512
on: 4 KiB) and 128B (rows of 128 bytes, SBO = 1024: 8 KiB). A M-major (m contiguous): no
swizzle (8 k x 16-byte core matrices of 8 m, the next 8 m SBO = 128 on, the next 8 k
LBO = 1024 on) and 128B (rows of 64 m, 8 k rows per pattern, the next 8 k SBO = 1024 on)."""

MN_NOTE = """\
B N-major: 16 k rows of 64 n. No swizzle: core matrices of 8 k x 16 bytes (8 n each), the
next 8 n SBO = 128 on, the next 8 k LBO = 1024 on. Swizzled by 32/64/128 bytes: rows of
16/32/64 n, the next such block of n LBO on (256, 512; unused at 128B), the next 8 k
SBO = 1024 on."""

N64_NOTE = """\
B: 64 rows (n) of K = 16: no swizzle (core matrices of 8 rows x 16 bytes, the next 8 k
LBO = 128 on, the next 8 rows SBO = 256 on) or 32B swizzle (rows of 32 bytes, the next 8
rows SBO = 256 on), each 2 KiB"""


def _instances(macro: str, shapes: Sequence[Shape], taken: int) -> str:
    """probe_<kernel> and the first `taken` descriptor fields its shape declares (a swizzle
    as its mode code); a field past them must be 0: the macro does not take it."""
    rows = []
    for s in shapes:
        if any(value for _, value in s.facts[taken:]):
            raise ValueError(f"{s.name}: {macro} takes {taken} fields, not {s.facts}")
        values = (SWIZZLE_MODES[v] if f.endswith("swizzle") else v for f, v in s.facts[:taken])
        rows.append(f"{macro}(probe_{s.name}, {', '.join(map(str, values))})\n")
    return "".join(rows)


def _wide(macro: str, trans_b: int) -> str:
    """The m64n64k16 form (A from registers, B's 2 KiB tile) with B's imm-trans-b; its 32
    accumulator operands written out."""
    return (WIDE_FORM.replace("@M", macro).replace("@T", str(trans_b))
            .replace("@D", "{" + ", ".join(f"%{i}" for i in range(32)) + "}")
            .replace("@R", ", ".join(f'"+r"(r[{i}])' for i in range(32))))


BO_PROSE = """\
wgmma-f16-bo probe, NVIDIA sm_90a: one warpgroup (128 threads, one block) = one wave = one
wgmma.mma_async m64n8k16 f16 x f16 -> f32, A from registers, B K-major from a 2 KiB shared
tile (1 KiB aligned) under the 128- or 64-byte swizzle, its descriptor started START bytes
into the tile and its base offset field (bits 49-51) set to BASE, fenced, committed and
waited for. Thread t of wave w reads its four A registers a[w][t][0..4), its eight B values
b[w][t][0..4) (two f16 per register, value i in bits [16 (i % 2), +16) of register i / 2)
and its four f32 accumulators c[w][t][0..4), and writes D to d[w][t][0..4). B's value v of
thread t is element v * 128 + t of the tile (byte 2 (v * 128 + t)). params[0] = waves."""

BO_NOTE = """\
B K-major, rows n of 128 (or 64) bytes, 8 rows per pattern, SBO 1024 (512), LBO unused; the
pattern started START bytes into the tile (a multiple of 128, so the start is off the
pattern's 1024- or 512-byte boundary) with the base offset BASE: PTX's value for such a
start, (start >> 7) & 7, 0, or that value with the pattern on its boundary"""


def _base_offset_form() -> str:
    """The RS form over a 2 KiB tile (eight B values a thread) whose descriptor also sets the
    base offset field (bits 49-51)."""
    return (RS_FORM.split("// A from registers")[0] + "// A from registers (four f16x2), B "
            "from a shared tile of 1024 f16 (2 KiB, 1 KiB\n// aligned), the descriptor's base "
            "offset BASE\n"
            + RS_FORM.split("1 KiB aligned)\n")[1]
            .replace("#define RS(NAME, MODE, LBO, SBO, START)      ",
                     "#define BO(NAME, MODE, LBO, SBO, START, BASE)")
            .replace("uint16_t sb[512];  ", "uint16_t sb[1024]; ")
            .replace("WAVE(4, 2)", "WAVE(4, 4)").replace("PLACE(sb, pb, 4)", "PLACE(sb, pb, 8)")
            .replace("LBO, SBO, MODE);         \\",
                     "LBO, SBO, MODE) |        \\\n"
                     + f"{' ' * 22}((uint64_t)(BASE) << 49);".ljust(_W) + " \\"))


def _bf16(text: str) -> str:
    """An f16 -> f32 form's text as its bf16 -> f32 twin (issue 39 item 5: MN-major bf16)."""
    out = text.replace(".f32.f16.f16", ".f32.bf16.bf16").replace("wgmma-f16-mn probe",
                                                                   "wgmma-bf16-mn probe")
    return out.replace(" f16 x f16 -> f32", " bf16 x bf16 -> f32").replace(
        "(two f16 per", "(two bf16 per").replace("the f16 at", "the bf16 at")


def render(source: str, shapes: Sequence[Shape]) -> str:
    """The text of `source` (a file name) for the kernels of `shapes`."""
    if source == "wgmma_f16_bo.cu":
        return (head(VENDOR, BO_PROSE) + "\n" + RS_WAVE + "\n" + SHARED_ADDRESS + "\n" + DESCRIPTOR
                + "\n" + _base_offset_form() + "\n" + comment(BO_NOTE)
                + _instances("BO", shapes, 5))
    if source == "wgmma_bf16_mn.cu":
        return _bf16(preamble(VENDOR, MN_PROSE) + "\n" + _wide("MN", 1)) + "\n" + comment(
            MN_NOTE) + _instances("MN", shapes, 3)
    if source == "wgmma_f16.cu":
        return (head(VENDOR, RS_PROSE) + "\n" + RS_WAVE + "\n" + SHARED_ADDRESS + "\n" + DESCRIPTOR
                + "\n" + RS_FORM + "\n" + comment(RS_NOTE) + _instances("RS", shapes, 4))
    form, note, macro, taken = {
        "wgmma_f16_ss.cu": (SS_FORM, SS_NOTE, "SS", 7),
        "wgmma_f16_ssa.cu": (SSA_FORM, SSA_NOTE, "SSA", 4),
        "wgmma_f16_mn.cu": (_wide("MN", 1), MN_NOTE, "MN", 3),
        "wgmma_f16_n64.cu": (_wide("N64", 0), N64_NOTE, "N64", 3)}[source]
    prose = {"SS": SS_PROSE, "SSA": SSA_PROSE, "MN": MN_PROSE, "N64": N64_PROSE}[macro]
    return (preamble(VENDOR, prose) + "\n" + form + "\n" + comment(note)
            + _instances(macro, shapes, taken))
