"""swmmac-iu4: which idx metadata field, held by which lane, governs which compressed A
nibble of v_swmmac_i32_16x16x{32,64}_iu4 on gfx12 (seeds/000), and which row of B it meets,
measured with the shared lane-qualified sparse engine (probelab.kits.sparse), as mma-sp is on
NVIDIA. No layout is assumed.

Version 3 moves the probe onto that engine. Version 2's lane-uniform sub-sweeps could not
have seen metadata held by another lane (as NVIDIA's is); its sealed hypotheses predict
observables this version no longer has and are kept as sealed, marked as for an earlier
version. The kernels are unchanged: lane l of wave w reads A dwords a[w][l][0..2), B
dwords b[w][l][0..4), C c[w][l][0..8) and its idx word, and writes D d[w][l][0..8).
"""

from pathlib import Path

from probelab.kits.elements import S4, S32, Codec
from probelab.kits.sparse.engine import Design, Metadata, Unit
from probelab.kits.sparse.probe import SparseProbe
from probelab.probe import Evidence

HERE = Path(__file__).parent
# gfx12 idx: one 2-bit field per compressed nibble, every value meaningful (seeds/000)
GFX12 = Metadata(group_bits=2, valid=(0, 1, 2, 3), invalid=(), contrast=(0, 3))
# K = 32 reads A dword 0, B dwords 0-1 and idx bits 0-15 (index_key 0)
UNITS = (Unit("k32", 32, 4, regs=1, b_regs=2), Unit("k64", 64, 4, regs=2, b_regs=4))
# Every other gfx12 WMMA/SWMMAC form is a near relative the kernel must not use instead.
RELATIVES = (r"v_swmmac_.*_iu8", r"v_swmmac_.*_(fp8|bf8)", r"v_swmmac_.*_(f16|bf16)",
             r"v_wmma_.*")


def evidence(unit: Unit) -> Evidence:
    """Exactly one iu4 SWMMAC of this K; A, B and idx (the accumulator is tied to D) each
    straight from a full-width global load."""
    other = 64 if unit.K == 32 else 32
    return Evidence(rf"v_swmmac_i32_16x16x{unit.K}_iu4",
                    forbidden=(*RELATIVES, rf"v_swmmac_i32_16x16x{other}_iu4"),
                    operands=("unmodified", "unmodified", "unmodified"))


PROBE = SparseProbe(
    id="swmmac-iu4", version="3",
    summary="v_swmmac_i32_16x16x{32,64}_iu4 metadata: which lane's idx field governs each "
            "compressed A nibble, and which B row it meets",
    targets=("gfx12*",), vendor="amd", source=HERE / "swmmac_iu4.hip",
    design=Design(UNITS, GFX12, Codec(S4, S32), trials=4, seed=0x5EED_0004,
                  a_regs=2, b_regs=4, d_regs=8, M=16, N=16),
    evidence=evidence, symbol=lambda unit: f"probe_swmmac_{unit.name}",
    retired={name: "version 2's lane-uniform sub-sweeps (pair, lane, random, blane, signed, "
                   "loo); version 3 measures lane by lane" for name in
             ("hit", "hit_lane", "hit_random", "hit_blane", "scaled", "loo_linear",
              "paired_q")})
