"""swmmac-iu4: which idx metadata field, held by which lane, governs which compressed A
nibble of v_swmmac_i32_16x16x{32,64}_iu4 on gfx12 (seeds/000), and which row of B it meets,
measured with the shared lane-qualified sparse engine (probelab.kits.sparse), as mma-sp is on
NVIDIA. No layout is assumed.

Version 4 keeps the pairing apart from collisions. Version 3's uniform words gave both
fields of every group one value, so both kept nibbles of a group landed on one B position
and its sums assumed they add. Now the pairing is read under the contract words (Idx0 <
Idx1, seeds/000's "documented 2:4 contract"), the descending pairs are an observable of
their own outside it (`out_*`), and the equal pairs drive dense collision waves (`clash`:
adds, last wins or first wins). Version 3's `superposed` is retired; its sealed files are
kept as for an earlier version. The kernels are unchanged: lane l of wave w reads A dwords
a[w][l][0..2), B dwords b[w][l][0..4), C c[w][l][0..8) and its idx word, and writes D
d[w][l][0..8).
"""

from pathlib import Path

from probelab.formats import S4, S32
from probelab.kits.elements import Codec
from probelab.kits.sparse.engine import Design, Metadata, Unit
from probelab.kits.sparse.probe import SparseProbe
from probelab.probe import Evidence

HERE = Path(__file__).parent
# gfx12 idx: a 2-bit field per compressed nibble, two per group of 4 dense columns, read
# here as a nibble (Idx0 | Idx1 << 2). Seeds/000 found every value meaningful; the contract
# is Idx0 < Idx1. Descending pairs keep the two apart (outside the contract); equal pairs
# put both on one position (a collision): recorded one-hot, and measured densely as `clash`.
ASCENDING = (0x4, 0x8, 0xC, 0x9, 0xD, 0xE)
DESCENDING = (0x1, 0x2, 0x3, 0x6, 0x7, 0xB)
EQUAL = (0x0, 0x5, 0xA, 0xF)
GFX12 = Metadata(group_bits=4, valid=ASCENDING, invalid=EQUAL, contrast=(0x4, 0xE),
                 outside=DESCENDING, clash=EQUAL)
# K = 32 reads A dword 0, B dwords 0-1 and idx bits 0-15 (index_key 0)
UNITS = (Unit("k32", 32, 4, regs=1, b_regs=2), Unit("k64", 64, 4, regs=2, b_regs=4))
# Every other gfx12 WMMA/SWMMAC form is a near relative the kernel must not use instead.
RELATIVES = (r"v_swmmac_.*_iu8", r"v_swmmac_.*_(fp8|bf8)", r"v_swmmac_.*_(f16|bf16)",
             r"v_wmma_.*")


def evidence(unit: Unit) -> Evidence:
    """Exactly one iu4 SWMMAC of this K, A and B signed (neg_lo:[1,1,0]) and nothing else
    (no clamp, no index_key); A, B and idx (the accumulator is tied to D) each straight from
    a full-width global load."""
    other = 64 if unit.K == 32 else 32
    return Evidence(rf"v_swmmac_i32_16x16x{unit.K}_iu4",
                    forbidden=(*RELATIVES, rf"v_swmmac_i32_16x16x{other}_iu4"),
                    operands=("unmodified", "unmodified", "unmodified"),
                    modifiers=("neg_lo:[1,1,0]",))


PROBE = SparseProbe(
    id="swmmac-iu4", version="4",
    summary="v_swmmac_i32_16x16x{32,64}_iu4 metadata: which lane's idx field governs each "
            "compressed A nibble, and which B row it meets",
    targets=("gfx12*",), vendor="amd", source=HERE / "swmmac_iu4.hip",
    design=Design(UNITS, GFX12, Codec(S4, S32), trials=4, seed=0x5EED_0004,
                  a_regs=2, b_regs=4, d_regs=8, M=16, N=16),
    evidence=evidence, symbol=lambda unit: f"probe_swmmac_{unit.name}",
    retired={**{name: "version 2's lane-uniform sub-sweeps (pair, lane, random, blane, "
                      "signed, loo); version 3 measures lane by lane" for name in
                ("hit", "hit_lane", "hit_random", "hit_blane", "scaled", "loo_linear",
                 "paired_q")},
             "superposed": "version 3's dense sums included uniform words that collide (both "
                           "nibbles of a group on one position); version 4 sums collision-free "
                           "words (superposed_apart) and measures collisions as clash"})
