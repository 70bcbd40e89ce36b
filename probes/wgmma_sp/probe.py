"""wgmma-sp-<type>: which metadata bits, held by which thread of the warpgroup, govern which
compressed A element of Hopper's sparse warpgroup MMA (`wgmma.mma_async.sp`, sm_90a), which
row of B it meets, and what the sparsity selector picks, with A from registers (RS) and from
a shared tile (SS), measured with the sparse kit's lane-qualified one-hot waves over one
warpgroup (128 threads) and no layout assumed.

One probe per element type (a probe's kernels share one codec): f16, bf16 (m64n8k32) and tf32
(m64n8k16, 1:2) with selectors 0 and 1, e4m3, e5m2 and s8 (m64n8k64) with selector 0: the
selectors ptxas accepts (13.0: "expected to be 0 or 1" for floating types, "expected to be
0" for FP8 and integer types). N = 8, the smallest N: D is four registers a thread and B one,
and N moves neither A nor its metadata. No `::ordered_metadata` form exists for wgmma.
"""

from pathlib import Path

from probelab.formats import BF16, E4M3, E5M2, F16, F32, S8, S32, TF32
from probelab.kits.elements import Codec
from probelab.kits.sparse.engine import Design, Metadata, Unit
from probelab.kits.sparse.probe import SparseProbe
from probelab.kits.tiles import Tile, grid_facts
from probelab.probe import Evidence, Rendered, load_sibling

HERE = Path(__file__).parent
sources = load_sibling(HERE / "sources.py")  # the kernel source, rendered from the units
LANES = 128  # a warpgroup
# 2:4 metadata (PTX ISA, "Sparse matrix storage"): a nibble per chunk of four, bits [1:0]
# the first kept element's position, [3:2] the second's. The contract words are the
# ascending pairs; equal pairs are invalid, descending ones not promised (recorded only).
PAIRS = [(lo, hi) for lo in range(4) for hi in range(4)]
ASCENDING = tuple(hi << 2 | lo for lo, hi in PAIRS if lo < hi)
TWO_FOUR = Metadata(group_bits=4, valid=ASCENDING,
                    invalid=tuple(hi << 2 | lo for lo, hi in PAIRS if lo >= hi),
                    contrast=(0x4, 0xE))
# tf32 1:2: 0x4 keeps the first of a 2-wide chunk, 0xE the second; others undefined
ONE_TWO = Metadata(group_bits=4, valid=(0x4, 0xE), contrast=(0x4, 0xE), whole_group=True,
                   invalid=tuple(v for v in range(16) if v not in (0x4, 0xE)))
# QGMMA into f32 keeps sums exact only below 2**14 (probes/wgmma_types, version 2)
FP8_SUMS = 2**14
# kind -> codec, K, selectors, SASS mnemonic and its form suffix
KINDS = {"f16": (Codec(F16, F32), 32, (0, 1), "HGMMA", "F32"),
         "bf16": (Codec(BF16, F32), 32, (0, 1), "HGMMA", "F32.BF16"),
         "tf32": (Codec(TF32, F32), 16, (0, 1), "HGMMA", "F32.TF32"),
         "e4m3": (Codec(E4M3, F32, sums_exact=FP8_SUMS), 64, (0,), "QGMMA", "F32.E4M3.E4M3"),
         "e5m2": (Codec(E5M2, F32, sums_exact=FP8_SUMS), 64, (0,), "QGMMA", "F32.E5M2.E5M2"),
         "s8": (Codec(S8, S32), 64, (0,), "IGMMA", "S8.S8")}
SEEDS = {kind: 0x5EED_3017 + 0x100 * i for i, kind in enumerate(KINDS)}
# compressed A: 64 rows of 32 bytes (K / 2 elements), K-major, unswizzled: core matrices of
# 8 rows x 16 bytes, the next 16 bytes of k LBO = 128 on, the next 8 rows SBO = 256 on (2 KiB);
# B: 8 rows (n) of 64 bytes (K elements) likewise, four core matrices along k (512 bytes)
A_TILE, B_TILE = Tile("a", 0, 128, 256), Tile("b", 0, 128, 512)
A_BYTES, B_BYTES = 2048, 512
STORES = {8: r"STS\.U8", 16: r"STS\.U16", 32: r"STS"}


def units(kind: str) -> tuple[Unit, ...]:
    codec, k, selectors, _, _ = KINDS[kind]
    forms = {"rs": (B_TILE,), "ss": (A_TILE, B_TILE)}
    return tuple(Unit(f"{kind}_k{k}_s{s}_{form}", k, codec.bits, 4, s, b_regs=1, smem=tiles,
                      facts=grid_facts(tiles, ("a_tile",)))
                 for form, tiles in forms.items() for s in selectors)


def ptx_form(kind: str) -> str:
    codec, k, _, _, _ = KINDS[kind]
    return f"m64n8k{k}.{codec.accumulator.name}.{codec.operand.name}.{codec.operand.name}"


def evidence(kind: str):
    _, k, _, unit_name, suffix = KINDS[kind]
    form = rf"{unit_name}\.SP\.64x8x{k}\.{suffix}"

    def of(unit: Unit) -> Evidence:
        """Exactly one sparse warpgroup MMA of this form and no other matrix instruction;
        A's four registers (RS), C and the metadata straight from their loads, the
        descriptors "any"; the tiles placed by their stores, then the async-proxy fence,
        the warpgroup's arrive before the MMA and its wait after."""
        shared_a = any(t.operand == "a" for t in unit.smem)
        stores = (B_BYTES + (A_BYTES if shared_a else 0)) * 8 // unit.bits // LANES
        return Evidence(form, forbidden=(rf"(?!{form}$)[HIQ]GMMA.*", r"[HID]MMA.*"),
                        operands=(() if shared_a else ("unmodified",))
                        + ("any", "unmodified", "unmodified"),
                        spans=(() if shared_a else (4,)) + (1, 4, 1),
                        companions=((STORES[unit.bits], "before", stores),
                                    (r"FENCE\.VIEW\.ASYNC\.S", "before", 1),
                                    (r"WARPGROUP\.ARRIVE", "before", 1),
                                    (r"WARPGROUP\.DEPBAR\.LE", "after", 1)))
    return of


def render() -> str:
    return sources.render([(u, ptx_form(kind)) for kind in KINDS for u in units(kind)],
                          A_TILE, B_TILE, A_BYTES, B_BYTES)


def probe(kind: str) -> SparseProbe:
    codec = KINDS[kind][0]
    return SparseProbe(
        id=f"wgmma-sp-{kind}", version="1",
        summary=f"{kind} wgmma.mma_async.sp m64n8, A from registers and from shared memory: "
                "which thread's metadata field governs each compressed A element, which B row "
                "it meets, what the selector picks",
        targets=("sm_90*",), vendor=sources.VENDOR,
        source=Rendered(HERE / "wgmma_sp.cu", render),
        design=Design(units(kind), ONE_TWO if kind == "tf32" else TWO_FOUR, codec, trials=4,
                      seed=SEEDS[kind], a_regs=4, b_regs=1, d_regs=4, M=64, N=8, lanes=LANES),
        evidence=evidence(kind), block=LANES, options={"arch": "sm_90a"},
        excluded={"sm_[0-8]*": "wgmma is Hopper's (sm_90a)",
                  "sm_1??*": "wgmma is sm_90a only (Blackwell has tcgen05)"})


PROBES = tuple(probe(kind) for kind in KINDS)
