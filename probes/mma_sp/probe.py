"""mma-sp: which metadata bits, held by which lane, govern which compressed A element of
NVIDIA's 2:4 sparse mma.sync (mma.sp and mma.sp::ordered_metadata), and which row of B it
meets, measured with lane-qualified one-hot waves (probelab.kits.sparse); no layout assumed.

Seven probes share this folder and its kernel source, one per element type, so each grid
fits its own registers: mma-sp-f16 (m16n8k16 selectors 0-3, m16n8k32 selectors 0-1, the
reference case), mma-sp-s8 (m16n8k32 selectors 0-1, m16n8k64) and mma-sp-s4 (m16n8k64
selectors 0-1, m16n8k128; ptxas lowers these to s8 sparse IMMA on sm_90); mma-sp-bf16 (as
f16), mma-sp-tf32 (m16n8k8 selectors 0-3, m16n8k16 selectors 0-1; 1:2, one element per
register) and mma-sp-e4m3, mma-sp-e5m2 (m16n8k64 into f32, selector 0: the only fp8 sparse
form sm_90 has; f16 C/D and .kind::f8f6f4 need sm_120a). Every kernel comes in both metadata
forms, `sp` and `om` (::ordered_metadata).
"""

from pathlib import Path

from probelab.formats import BF16, E4M3, E5M2, F16, F32, S4, S8, S32, TF32
from probelab.kits.elements import Codec
from probelab.kits.sparse.engine import Design, Metadata, Unit
from probelab.kits.sparse.probe import SparseProbe
from probelab.probe import Evidence

HERE = Path(__file__).parent
# 2:4 metadata: one nibble per chunk, bits [1:0] the first kept element, [3:2] the second.
NVIDIA = Metadata(
    group_bits=4,
    valid=(0x4, 0x8, 0xC, 0x9, 0xD, 0xE),  # ascending pairs: what ::ordered_metadata allows
    invalid=(0x0, 0x5, 0xA, 0xF,  # equal pairs: invalid for every form (PTX)
             0x1, 0x2, 0x3, 0x6, 0x7, 0xB),  # descending pairs: undefined for ordered
    contrast=(0x4, 0xE),  # (0, 1) against (2, 3): every field differs
)
# tf32 1:2 (PTX "Sparse matrix storage"): 0x4 keeps the first of a 2-wide chunk, 0xE the
# second; "any other values result in an undefined behavior" (recorded only)
NVIDIA_TF32 = Metadata(group_bits=4, valid=(0x4, 0xE),
                       invalid=tuple(v for v in range(16) if v not in (0x4, 0xE)),
                       contrast=(0x4, 0xE), whole_group=True)
SHAPES = {"f16": ((16, 2, (0, 1, 2, 3)), (32, 4, (0, 1))),
          "s8": ((32, 2, (0, 1)), (64, 4, (0,))),
          "s4": ((64, 2, (0, 1)), (128, 4, (0,))),
          "bf16": ((16, 2, (0, 1, 2, 3)), (32, 4, (0, 1))),
          "tf32": ((8, 2, (0, 1, 2, 3)), (16, 4, (0, 1))),
          "e4m3": ((64, 4, (0,)),), "e5m2": ((64, 4, (0,)),)}
CODECS = {"f16": Codec(F16, F32), "s8": Codec(S8, S32), "s4": Codec(S4, S32),
          "bf16": Codec(BF16, F32), "tf32": Codec(TF32, F32), "e4m3": Codec(E4M3, F32),
          "e5m2": Codec(E5M2, F32)}
BITS = {kind: codec.bits for kind, codec in CODECS.items()}
META = {"tf32": NVIDIA_TF32}  # every other type: 2:4 (s4: pairs, 4:8)
# SASS on sm_90: the sparse instruction, and the relatives that must not appear instead
NATIVE = {"f16": (r"HMMA\.SP\.168{K}\.F32", (r"IMMA.*", r"HMMA\.(?!SP).*")),
          "s8": (r"IMMA\.SP\.168{K}\.S8\.S8", (r"HMMA.*", r"IMMA\.(?!SP).*")),
          "bf16": (r"HMMA\.SP\.168{K}\.F32\.BF16", (r"IMMA.*", r"HMMA\.(?!SP).*")),
          "tf32": (r"HMMA\.SP\.168{K}\.F32\.TF32", (r"IMMA.*", r"HMMA\.(?!SP).*"))}


def kind_of(unit: Unit) -> str:
    return unit.name.split("_")[0]


def units(kind: str) -> tuple[Unit, ...]:
    return tuple(Unit(f"{kind}_k{k}_s{s}_{form}", k, BITS[kind], regs, s, form == "om",
                      pairwise=kind == "s4")  # s4 indices name pairs (4:8)
                 for form in ("sp", "om") for k, regs, sels in SHAPES[kind] for s in sels)


def evidence(unit: Unit) -> Evidence:
    """f16, bf16, tf32 and s8: exactly one sparse HMMA/IMMA of this shape, every operand
    straight from its loads. s4: sm_90 has no 4-bit sparse unit; ptxas unpacks A and B and
    issues two s8 sparse IMMAs of half the K, so exactly two of those, A and B from memory
    through the unpacking (the gate records the path), the metadata straight from its load.
    fp8: `fp8_evidence`."""
    kind = kind_of(unit)
    if kind in NATIVE:
        instruction, forbidden = NATIVE[kind]
        return Evidence(instruction.format(K=unit.K), forbidden=forbidden,
                        operands=("unmodified",) * 4, spans=(unit.regs, unit.regs, 4, 1))
    if kind in ("e4m3", "e5m2"):
        return fp8_evidence(unit, kind.upper())
    return Evidence(rf"IMMA\.SP\.168{unit.K // 2}\.S8\.S8", count=2,
                    lowered=f"sm_90 has no 4-bit sparse unit: ptxas unpacks A and B and "
                            f"issues two s8 sparse IMMA m16n8k{unit.K // 2} with one metadata "
                            "register and the selector",
                    forbidden=(r"HMMA.*", r"IMMA\.(?!SP).*", r"IMMA.*\.S4.*"),
                    operands=("from_memory", "from_memory", "any", "unmodified"),
                    spans=(unit.regs, unit.regs, 1, 1))


def fp8_evidence(unit: Unit, element: str) -> Evidence:
    """sm_90 has no fp8 sparse unit: ptxas unpacks A and B to f16 (F2FP UNPACK_B, two per
    register), rewrites each lane's metadata for f16 and exchanges it and B's halves between
    lanes (SHFL), issues two f16 sparse HMMA m16n8k32 (selectors 0 and 1, the first from a
    zero C) and adds C after them (FADD). So exactly two of those HMMA, A and the metadata
    from the loads through that work; B "any": some of its registers are chosen per lane
    (SEL) between shuffled loads and R1, a register no load feeds (the gate records the
    paths; the sweep's superposition waves test what the products are)."""
    return Evidence(
        r"HMMA\.SP\.16832\.F32", count=2,
        lowered=f"sm_90 has no fp8 sparse unit: ptxas unpacks A and B to f16 "
                f"(F2FP.F16.{element}.UNPACK_B), rewrites the metadata for f16 and exchanges "
                "it and B's halves between lanes (SHFL), issues two f16 sparse HMMA m16n8k32 "
                "(selectors 0 and 1, the first from a zero C) and adds C after them (FADD)",
        forbidden=(r"HMMA\.(?!SP\.16832\.F32$).*", r"IMMA.*", r"QGMMA.*", r"HGMMA.*"),
        operands=("from_memory", "any", "any", "from_memory"),
        spans=(4, 4, 1, 1),
        companions=((rf"F2FP\.F16\.{element}\.UNPACK_B", "before", 4 * unit.regs),
                    (r"SHFL\..*", "before", None), (r"FADD", "after", 4)))


def probe(kind: str, seed: int) -> SparseProbe:
    return SparseProbe(
        id=f"mma-sp-{kind}", version="1",
        summary=f"{kind} mma.sp / ::ordered_metadata: which lane's metadata field governs "
                "each compressed A element, and which B row it meets",
        targets=("sm_90*",), vendor="nvidia", source=HERE / "mma_sp.cu",
        design=Design(units(kind), META.get(kind, NVIDIA), CODECS[kind], trials=4,
                      seed=seed),
        evidence=evidence,
        excluded={"sm_[5-7]?": "sparse mma.sync needs sm_80",
                  "sm_8?": "measured and sealed for sm_90 (the s4 lowering is sm_90's)",
                  "sm_1??*": "measured and sealed for sm_90; on sm_100a/sm_120a plain .sp "
                             "compiles to a metadata-sorting routine, not measured here"})


PROBES = (probe("f16", 0x5EED_0006), probe("s8", 0x5EED_0007), probe("s4", 0x5EED_0008),
          probe("bf16", 0x5EED_0009), probe("tf32", 0x5EED_000A), probe("e4m3", 0x5EED_000B),
          probe("e5m2", 0x5EED_000C))
