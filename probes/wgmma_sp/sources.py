"""The wgmma-sp kernel source, rendered from the probes' units (never kept as a file): the
lane-id kit's wgmma pieces (shared address, PTX's descriptor), the sparse kit's buffers
(a metadata word per thread), one macro per A source (registers or a shared tile) and one
instance per kernel: its tile element type, PTX form, selector and the immediates after
scale-d. The tiles' descriptors are the units' declared tiles, written into the macros."""

from collections.abc import Sequence

from probelab.kits.lane_id.mma_sync import comment, typedef
from probelab.kits.lane_id.wgmma_source import DESCRIPTOR, SHARED_ADDRESS
from probelab.kits.sparse.engine import Unit
from probelab.kits.tiles import Tile

VENDOR = "nvidia"  # whose compilers build these kernels (their uint32_t line)

PROSE = """\
wgmma-sp probes, NVIDIA sm_90a: one warpgroup (128 threads, one block) = one wave = one
sparse wgmma.mma_async.sp m64n8 (2:4; tf32 1:2), fenced, committed and waited for.
Thread t of wave w reads a[w][t][0..4) (A's compressed values, packed low to high),
b[w][t][0..1), c[w][t][0..4) and its metadata word e[w * 128 + t], and writes its four
accumulators to d[w][t][0..4). B always, and A in the SS kernels, are placed in shared
tiles by slot: value v of thread t is element v * 128 + t of the tile, so the sparse
decode names tile elements, and a hypothesis maps them to (row, k) through the
descriptor's layout. params[0] = number of waves."""

ARGS = ("#define ARGS const uint32_t* params, const uint32_t* a, const uint32_t* b, \\\n"
        "             const uint32_t* c, const uint32_t* e, uint32_t* d\n")

WAVE = """\
#define WAVE                                                                  \\
    const uint32_t w = blockIdx.x, t = threadIdx.x;                           \\
    if (w >= params[0]) return;                                               \\
    const uint32_t* pa = a + (w * 128 + t) * 4;                               \\
    const uint32_t* pb = b + (w * 128 + t);                                   \\
    const uint32_t* pc = c + (w * 128 + t) * 4;                               \\
    const uint32_t meta = e[w * 128 + t];                                     \\
    uint32_t* pd = d + (w * 128 + t) * 4;                                     \\
    uint32_t d0 = pc[0], d1 = pc[1], d2 = pc[2], d3 = pc[3];

// value v of this thread (PER to a register, low bits first) to element v * 128 + t
#define PLACE(TILE, T, P, BYTES)                                              \\
    _Pragma("unroll") for (int v = 0; v < (BYTES) / (int)sizeof(T) / 128; ++v) \\
        TILE[v * 128 + t] = (T)(P[v / (4 / sizeof(T))] >>                     \\
                                (8 * sizeof(T) * (v % (4 / sizeof(T)))));

// written by ordinary stores, read by the async proxy: fence, then the barrier
#define PUBLISH asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); __syncthreads();
#define STORE pd[0] = d0; pd[1] = d1; pd[2] = d2; pd[3] = d3;
"""

_W = 90  # where a macro line's backslash stands
_ASM = " " * 17  # where an asm statement's continuation lines start


def _macro(comment_line: str, macro: str, a: Tile | None, b: Tile, bytes_: dict[str, int]
           ) -> str:
    """One kernel macro (NAME, T, FORM, SEL, TAIL): A from four registers, or with `a` from
    its tile; B from its tile; each tile's descriptor as declared."""
    tiles = {"a": a, "b": b} if a else {"b": b}
    operands = ('"%4, %5, %6, " #SEL ", 1" TAIL ";\\n"' if a else
                '"{%4, %5, %6, %7}, %8, %9, " #SEL ", 1" TAIL ";\\n"')
    inputs = ('"l"(da), "l"(db), "r"(meta) : "memory");' if a else
              '"r"(pa[0]), "r"(pa[1]), "r"(pa[2]), "r"(pa[3]), "l"(db), "r"(meta)')
    lines = [
        'extern "C" __global__ void __launch_bounds__(128) NAME(ARGS) {',
        *(f"    __shared__ __align__({t.align}) T s{o}[{bytes_[o]} / sizeof(T)];"
          for o, t in tiles.items()),
        "    WAVE",
        *(f"    PLACE(s{o}, T, p{o}, {bytes_[o]})" for o in tiles),
        "    PUBLISH",
        *(f"    const uint64_t d{o} = descriptor(shared_address(s{o}), {t.lbo}, {t.sbo}, "
          f"{t.mode});" for o, t in tiles.items()),
        '    asm volatile("wgmma.fence.sync.aligned;\\n"',
        f'{_ASM}"wgmma.mma_async.sp.sync.aligned." FORM " {{%0, %1, %2, %3}}, "',
        f"{_ASM}{operands}",
        f'{_ASM}"wgmma.commit_group.sync.aligned;\\n"',
        f'{_ASM}"wgmma.wait_group.sync.aligned 0;"',
        f'{_ASM}: "+r"(d0), "+r"(d1), "+r"(d2), "+r"(d3)',
        f"{_ASM}: {inputs}", *(() if a else (f'{_ASM}: "memory");',)),
        "    STORE"]
    return (f"// {comment_line}\n" + f"#define {macro}(NAME, T, FORM, SEL, TAIL)".ljust(_W)
            + " \\\n"
            + "".join(f"{line.ljust(_W)} \\\n" for line in lines) + "}\n")


NOTE = ("// immediates after scale-d: scale-a, scale-b, and for 16-bit types trans-a (SS)\n"
        "// and trans-b\n")


def _instance(unit: Unit, form: str) -> str:
    """One kernel: the tile's element type, `form` (m64n8kK.D.A.B), the selector and the
    immediates the element type takes (PTX: imm-trans-a (SS) and imm-trans-b for .f16 and
    .bf16 only; none but scale-d for integers)."""
    shared_a = any(t.operand == "a" for t in unit.smem)
    element = form.split(".")[-1]
    trans = ", 0" * (2 if shared_a else 1)
    tail = {"f16": f", 1, 1{trans}", "bf16": f", 1, 1{trans}", "s8": ""}.get(element, ", 1, 1")
    return (f'{"SS" if shared_a else "RS"}(probe_{unit.name}, uint{unit.bits}_t, "{form}", '
            f'{unit.sel}, "{tail}")\n')


def render(units: Sequence[tuple[Unit, str]], a_tile: Tile, b_tile: Tile, a_bytes: int,
           b_bytes: int) -> str:
    """The source of every (unit, PTX form) given, with A's and B's declared tiles."""
    sizes = {"a": a_bytes, "b": b_bytes}
    return (comment(PROSE) + typedef(VENDOR) + "typedef unsigned long long uint64_t;\n"
            "typedef unsigned short uint16_t;\ntypedef unsigned char uint8_t;\n\n" + ARGS
            + "\n" + SHARED_ADDRESS + "\n" + DESCRIPTOR + "\n" + WAVE + "\n"
            + _macro("A from four registers, B from its tile", "RS", None, b_tile, sizes)
            + "\n" + _macro("A and B from their tiles", "SS", a_tile, b_tile, sizes) + "\n"
            + NOTE + "".join(_instance(u, f) for u, f in units))
