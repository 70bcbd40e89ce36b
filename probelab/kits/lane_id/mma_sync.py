"""Kernel text of the lane-id kit's warp-wide mma.sync probes, rendered from their shapes and
PTX instruction (one template, so no probe restates a shape's plumbing by hand): one warp is
one wave; lane l of wave w reads its fragment registers from a[w][l][..], b and c (strided
for the probe's widest shape) and writes D to d[w][l][0..4), zeros past its own registers,
so no cell is left unwritten. Every operand of the instruction is one of those loads, so the
evidence gate can trace it. What a probe chooses is its prose, its A and B strides, and
whether a kernel is spelled out or made by a macro per shape over its element types."""

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from probelab.formats import S4, S8, S32, U4, U8, Element
from probelab.kits.elements import Codec
from probelab.kits.lane_id.engine import Shape
from probelab.kits.lane_id.probe import LaneIdProbe, warp_shapes
from probelab.probe import Evidence, Rendered
from probelab.vendors import VENDORS

ARGS = ("#define ARGS const uint32_t* params, const uint32_t* a, const uint32_t* b, \\\n"
        "             const uint32_t* c, uint32_t* d\n")
D_WORDS = 4  # D's and C's registers per lane in a buffer: the widest shape's
_ASM = " " * 17  # where an asm statement's continuation lines start
_LINE = 100  # a two-register D's inputs share its line where the line stays this narrow


def typedef(vendor: str) -> str:
    """uint32_t, declared as `vendor`'s compilers take it (the vendor table's line)."""
    return VENDORS[vendor].uint32_typedef


def comment(prose: str) -> str:
    return "".join(f"// {line}\n" for line in prose.splitlines())


def continued(lines: Sequence[str], width: int) -> str:
    """A macro: each line but the last padded to `width` and continued by a backslash."""
    return "".join(f"{line.ljust(width)} \\\n" for line in lines[:-1]) + lines[-1] + "\n"


def wave(a: object, b: object, params: str = "", d: object = D_WORDS) -> str:
    """The WAVE macro: lane l of wave w's fragment pointers, A, B and C/D strided by `a`,
    `b` and `d` (numbers, or the macro's `params`)."""
    return continued([f"#define WAVE{params}",
                      "    const uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;",
                      "    const uint32_t lane = threadIdx.x % 32;",
                      "    if (w >= params[0]) return;",
                      f"    const uint32_t* pa = a + (w * 32 + lane) * {a};",
                      f"    const uint32_t* pb = b + (w * 32 + lane) * {b};",
                      f"    const uint32_t* pc = c + (w * 32 + lane) * {d};",
                      f"    uint32_t* pd = d + (w * 32 + lane) * {d};"], 76)


def body(shape: Shape, instruction: str, wave_call: str = "WAVE",
         d_words: int = D_WORDS) -> list[str]:
    """One kernel's statements: its fragment pointers, the instruction on D's registers
    from A's, B's and C's loads, and D's `d_words` stores (zeros past its registers). A
    two-register D shares one line with the inputs where it fits; otherwise D has its
    own, A and B the next, C the last."""
    counts = {n: shape.registers(n) for n in "abd"}
    d = [f"d{i}" for i in range(counts["d"])]
    loads = {n: [f'"r"(p{n}[{i}])' for i in range(counts["d" if n == "c" else n])]
             for n in "abc"}
    numbered, first = [], 0
    for n in "dabc":
        size = len(d) if n == "d" else len(loads[n])
        numbered.append("{" + ", ".join(f"%{first + i}" for i in range(size)) + "}")
        first += size
    outputs = ", ".join(f'"=r"({r})' for r in d)
    lines = [f"    {wave_call}", f"    uint32_t {', '.join(d)};",
             f'    asm volatile("{instruction} "', f'{_ASM}"{", ".join(numbered)};"']
    one = f"{_ASM}: {outputs} : {', '.join(loads['a'] + loads['b'] + loads['c'])});"
    if len(d) == 2 and len(one) <= _LINE:
        lines.append(one)
    else:
        lines += [f"{_ASM}: {outputs}", f"{_ASM}: {', '.join(loads['a'] + loads['b'])},",
                  f"{_ASM}  {', '.join(loads['c'])});"]
    return [*lines, "    " + " ".join(f"pd[{i}] = {d[i] if i < len(d) else 0};"
                                      for i in range(d_words))]


def kernel(symbol: str, statements: list[str], spelled: bool = False) -> list[str]:
    """An entry point taking the ARGS, or with them `spelled` out."""
    head = f'extern "C" __global__ void {symbol}('
    if not spelled:
        return [f"{head}ARGS) {{", *statements, "}"]
    indent = " " * len(head)
    return [f"{head}const uint32_t* params, const uint32_t* a,",
            f"{indent}const uint32_t* b, const uint32_t* c,", f"{indent}uint32_t* d) {{",
            *statements, "}"]


def kernels(each: Iterable[list[str]]) -> str:
    """Kernels one after another, a blank line apart."""
    return "\n".join("".join(f"{line}\n" for line in lines) for lines in each)


def typed_macro(name: str, shape: Shape, instruction: str, wave_call: str = "WAVE",
                d_words: int = D_WORDS) -> str:
    """A macro taking a kernel's NAME and its element TYPES (the PTX type words, quoted:
    `instruction` places them as `" TYPES "`) that makes the kernel of `shape`."""
    return continued([f"#define {name}(NAME, TYPES)",
                      *kernel("NAME", body(shape, instruction, wave_call, d_words))], 84)


def typed_family(vendor: str, prose: str, shapes: Sequence[Shape],
                 instruction: Callable[[Shape], str], types: Sequence[tuple[str, str]],
                 strides: tuple[int, int]) -> str:
    """A `vendor`'s source with one macro per shape, taking the kernel's NAME and its
    element TYPES (the PTX type words, quoted: `instruction` places them as `" TYPES "`), and
    one FAMILY macro instance per (kind, types) pair making kernel probe_<kind>_<shape>."""
    def macro(shape: Shape) -> str:
        return f"M{shape.M}N{shape.N}K{shape.K}"

    tail = [s.name.split("_", 1)[1] for s in shapes]  # the shape part of each kernel's name
    macros = "\n".join(typed_macro(macro(s), s, instruction(s)) for s in shapes)
    family = continued(["#define FAMILY(KIND, TYPES)",
                        *(f"    {macro(s)}(probe_##KIND##_{t}, TYPES)"
                          for s, t in zip(shapes, tail, strict=True))], 49)
    return (comment(prose) + typedef(vendor) + "\n" + wave(*strides) + "\n" + ARGS + "\n"
            + macros + "\n" + family + "\n" + "".join(f'FAMILY({kind}, "{words}")\n'
                                            for kind, words in types))


def exactly_one(shape: Shape, form: str, *others: str) -> Evidence:
    """The gate of a native warp MMA: exactly one `form` (a SASS regex, MNEMONIC\\.rest),
    no other form of its mnemonic and nothing matching `others`; A, B and C each straight
    from their loads, every register of the fragment (SASS names only the first of each)."""
    mnemonic, rest = form.split("\\.", 1)
    return Evidence(form, forbidden=(rf"{mnemonic}\.(?!{rest}$).*", *others),
                    operands=("unmodified",) * 3,
                    spans=tuple(shape.registers(n) for n in "abd"))


def per_shape(vendor: str, prose: str, groups: Sequence[Sequence[Shape]],
              instruction: Callable[[Shape], str], spelled: bool = False) -> str:
    """A `vendor`'s source with one kernel per shape, probe_<shape name>, its entry point
    taking ARGS or, `spelled`, the arguments spelled out. One group of shapes (one probe's)
    fixes WAVE's A and B strides; several (probes sharing the source, each with its own
    buffers) make WAVE take them, each kernel its group's widest."""
    def strides(group: Sequence[Shape]) -> tuple[int, int]:
        return max(s.registers("a") for s in group), max(s.registers("b") for s in group)

    single = len(groups) == 1
    wave_macro = wave(*strides(groups[0])) if single else wave("SA", "SB", "(SA, SB)")
    made = kernels(kernel(f"probe_{s.name}", body(
        s, instruction(s), "WAVE" if single else "WAVE({}, {})".format(*strides(group))),
        spelled) for group in groups for s in group)
    return (comment(prose) + typedef(vendor) + "\n" + wave_macro + "\n"
            + ("" if spelled else ARGS + "\n") + made)


_INTEGER = """\
mma-s{w} probes, {vendor} side: one warp = one wave = one dense {w}-bit integer mma.sync into
s32. Lane l of wave w reads its fragment registers from a[w][l][0..{a}), b[w][l][0..{b}),
c[w][l][0..4) (the widest shape's strides: {widest}) and writes d[w][l][0..4), {per} {w}-bit
elements per A/B register (element i in bits [{w} (i % {n}), +{w}) of register i / {n}), one s32
per C/D register; {first}'s D has two registers, the other two are written 0 so no cell
is left unwritten. Operands come straight from global memory (the evidence gate traces
them). params[0] = number of waves."""
_WORDS = {4: "eight", 8: "four"}  # elements per 32-bit register, in words
_SIGNED = {4: (S4, U4), 8: (S8, U8)}
Row = tuple[str, int, int, int, int, int, int]  # (name, M, N, K, A, B, D values per lane)


def integer_source(vendor: str, bits: int, shapes: Sequence[Shape], kinds: Iterable[str]
                   ) -> str:
    """`vendor`'s source of the dense `bits`-bit integer mma.sync probes (s32
    accumulators): one kernel per shape for each signedness pair in `kinds` (e.g. "s4u4":
    s4 x u4)."""
    strides = (max(s.registers("a") for s in shapes), max(s.registers("b") for s in shapes))
    prose = _INTEGER.format(vendor=VENDORS[vendor].title, w=bits, a=strides[0], b=strides[1],
                            per=_WORDS[bits], n=32 // bits, widest=shapes[-1].name.split("_", 1)[1],
                            first=shapes[0].name.split("_", 1)[1])
    types = [(k, f"{k[:len(k) // 2]}.{k[len(k) // 2:]}") for k in kinds]
    return typed_family(vendor, prose, shapes, lambda s: f'mma.sync.aligned.m{s.M}n{s.N}k{s.K}'
                        '.row.col.s32." TYPES ".s32', types, strides)


def integer_types(bits: int) -> dict[str, tuple[Element, Element]]:
    """The four signedness pairs of a `bits`-bit integer mma.sync by name, A's type first:
    s4s4, u4u4, s4u4, u4s4."""
    s, u = _SIGNED[bits]
    return {f"{a.name}{b.name}": (a, b) for a, b in ((s, s), (u, u), (s, u), (u, s))}


def integer_probes(bits: int, folder: Path, rows: tuple[Row, ...], seeds: Mapping[str, int],
                   versions: tuple[str, str], evidence: Callable[[str], Callable[[Shape],
                                                                                Evidence]],
                   summary: str, excluded: Mapping[str, str], vendor: str,
                   targets: tuple[str, ...]) -> tuple[LaneIdProbe, ...]:
    """One probe per signedness pair (`versions`: same-signedness, mixed) of the dense
    `bits`-bit integer mma.sync into s32 on `vendor`'s `targets`, each named mma-<pair>;
    their kernels are rendered into one source, mma_s<bits>.cu (`integer_source`)."""
    types = integer_types(bits)
    shapes = {k: warp_shapes(k, rows, Codec(a, S32, b)) for k, (a, b) in types.items()}
    source = Rendered(folder / f"mma_s{bits}.cu",
                      lambda: integer_source(vendor, bits, next(iter(shapes.values())), types))
    return tuple(LaneIdProbe(
        id=f"mma-{k}", version=versions[a.kind != b.kind],
        summary=f"{a.name} x {b.name} -> s32 mma.sync {summary}: (lane, value) <-> (row, col)",
        targets=targets, vendor=vendor, source=source, shapes=shapes[k],
        evidence=evidence(k), seed=seeds[k], block=128, excluded=dict(excluded))
        for k, (a, b) in types.items())
