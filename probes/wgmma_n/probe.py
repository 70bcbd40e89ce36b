"""wgmma-<type>-wide and wgmma-<type>-n256: Hopper's warpgroup MMA at the widths users tile
with, for every element type (f16 and bf16 -> f32, f16 -> f16, tf32, e4m3/e5m2 -> f32, s8 ->
s32): which (thread, value) of the accumulator holds D(m, n), which register value of an RS
A feeds A(m, k), and which element of each shared tile (A's in SS, B's always) feeds which
(m, k) or (k, n), under no swizzle and the 32-byte swizzle, measured label-free with the
lane-id kit's APART design (C's ids in waves of their own, then one b-named wave per A slot
and digit: the raw waves stay mostly zeros, so N = 256's 16384 D slots fit). The observable
is b_src itself, which B slot met which A slot at which D slot: it holds every relation.
Version 2 stores the lane-id kit's compact form (b_src spells the raw b-named waves, which
are not stored beside it; README), within the bounds a new dataset has.

-wide: N = 16 and 64 with A from registers, N = 8, 16 and 64 with A from a shared tile
(N = 8 from registers is probes/wgmma_types). -n256: N = 256, A from registers and from a
tile. Kernels: wgmma_n.cu, rendered by generate.py from kinds.py (kept in no file).
"""

from pathlib import Path

from probelab.kits.lane_id import engine
from probelab.kits.lane_id.probe import LaneIdProbe, Shape
from probelab.probe import Evidence, Rendered, load_sibling

HERE = Path(__file__).parent
kinds = load_sibling(HERE / "kinds.py")
generate = load_sibling(HERE / "generate.py")
STORES = {1: r"STS\.U8", 2: r"STS\.U16", 4: r"STS"}


def shape(kind_name: str, form) -> Shape:
    kind = kinds.KINDS[kind_name]
    return Shape(kinds.kernel_name(kind_name, form), 64, form.n, kind.k, 128,
                 a_values=64 * kind.k // 128, b_values=kinds.b_values(kind, form),
                 d_values=form.n // 2, codec=kind.codec,
                 smem=form.tiles, facts=form.facts)


def evidence(kind_name: str):
    kind = kinds.KINDS[kind_name]

    def of(s: Shape) -> Evidence:
        """Exactly one warpgroup MMA of the shape's form and no other matrix instruction; A
        (four registers, RS) and C straight from their loads, the tiles through descriptor
        operands; each tile placed by its stores, then the async-proxy fence, the
        warpgroup's arrive before the MMA and its wait after."""
        form = rf"{kind.unit}\.64x{s.N}x{s.K}\.{kind.sass}"
        rs = "a" not in s.tiles
        stores = s.b_values + (0 if rs else s.a_values)
        return Evidence(form, forbidden=(rf"(?!{form}$)[HIQ]GMMA.*", r"[HID]MMA.*"),
                        operands=(("unmodified",) if rs else ()) + ("any", "unmodified"),
                        spans=((4,) if rs else ()) + (1, s.registers("d")),
                        companions=((STORES[kind.bytes], "before", stores),
                                    (r"FENCE\.VIEW\.ASYNC\.S", "before", 1),
                                    (r"WARPGROUP\.ARRIVE", "before", 1),
                                    (r"WARPGROUP\.DEPBAR\.LE", "after", 1)))
    return of


def probe(kind_name: str, group: str, seed: int) -> LaneIdProbe:
    n = "N = 16 and 64 from registers, N = 8, 16, 64 with A from shared memory" \
        if group == "wide" else "N = 256, A from registers and from shared memory"
    return LaneIdProbe(
        # version 2: the kit's compact storage form (README): the same waves and observables
        id=f"wgmma-{kind_name}-{group}", version="2",
        summary=f"{kind_name.replace('-', ' -> ')} wgmma {n}: (thread, value) <-> (m, n) of "
                "D, A's registers or tile and B's tile -> (m, k), (k, n)",
        targets=("sm_90*",), vendor=generate.VENDOR,
        source=Rendered(generate.SOURCE, generate.source),
        shapes=tuple(shape(kind_name, f) for f in kinds.FORMS[group]),
        evidence=evidence(kind_name), seed=seed, block=128, options={"arch": "sm_90a"},
        design=engine.APART, compact=True,
        excluded={"sm_[0-8]*": "wgmma is Hopper's (sm_90a)",
                  "sm_1??*": "wgmma is sm_90a only (Blackwell has tcgen05)"})


PROBES = tuple(probe(kind, group, 0x5EED_2117 + 0x100 * i + 0x10 * j)
               for j, group in enumerate(kinds.FORMS) for i, kind in enumerate(kinds.KINDS))
