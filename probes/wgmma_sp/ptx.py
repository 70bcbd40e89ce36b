"""The sealed reading of wgmma.mma_async.sp (PTX ISA's sparse storage; CuTe's SM90 sparse
GMMA traits: the register A layouts ALayout_64x16/32/64, the metadata layouts ELayout_64x16
/32/64, CLayout_64x8) as a `probelab.kits.sparse.engine.Law`, element by element, with the
declared tiles' bytes read through `Tile.byte`.

Not evidence: the tests check the sealed hypotheses' expressions against this independent
transcription (a simulated unit following it must confirm them, their near misses must not).
"""

import numpy as np

from probelab.kits.sparse.engine import Design, Law, Unit
from probelab.kits.tiles import Tile


def _cells(tile: Tile, columns: int, rows: int, element_bytes: int) -> dict[int, tuple[int, int]]:
    """Byte -> (k, row) of a K-major tile (`columns` elements of k per row)."""
    return {tile.byte(k, mn, element_bytes): (k, mn)
            for k in range(columns) for mn in range(rows)}


def governor(kind_bits: int, whole: bool, K: int, sel: int, row: int, ck: int
             ) -> tuple[int, int, int]:
    """(thread, field, chunk) whose metadata places compressed element (row, ck): per warp
    of 16 rows as mma.sp m16n8k32 (16-bit), k16 (tf32) and k64 (8-bit) read it."""
    warp, g, half = row // 16, row % 8, (row % 16) // 8
    if kind_bits == 8:  # all four threads of the quad: row half, then k half
        chunk = ck // 2
        return 32 * warp + 4 * g + half + 2 * (chunk // 8), 2 * (chunk % 8) + ck % 2, chunk
    chunk = ck if whole else ck // 2  # tf32: one kept element per 2-wide chunk
    field = 2 * (chunk % 4 + 4 * half) + (0 if whole else ck % 2)
    return 32 * warp + 4 * g + 2 * sel + chunk // 4, field, chunk


def ptx_law(unit: Unit, design: Design) -> Law:
    """The reading for one kernel (A from registers, or from its declared tile)."""
    lanes, per, eb = design.lanes, 32 // unit.bits, unit.bits // 8
    whole = design.meta.whole_group
    tiles = {t.operand: t for t in unit.smem}
    a_cells = _cells(tiles["a"], unit.K // 2, design.M, eb) if "a" in tiles else None
    shape = (lanes, design.a_elems)
    a_row, gov_lane, gov_field, base = (np.full(shape, -1) for _ in range(4))
    for lane in range(lanes):
        warp, g, t = lane // 32, (lane % 32) // 4, lane % 4
        for n in range(unit.elems):
            if a_cells is None:  # registers: ALayout_64x{16,32,64} in compressed terms
                r = n // per
                row = 16 * warp + g + 8 * (r & 1)
                ck = per * t + n % per + (r >> 1) * unit.K // 4
            else:  # the tile: value n of this lane is element n * lanes + lane
                ck, row = a_cells[(n * lanes + lane) * eb]
            owner, field, chunk = governor(unit.bits, whole, unit.K, unit.sel, row, ck)
            a_row[lane, n], gov_lane[lane, n], gov_field[lane, n] = row, owner, field
            base[lane, n] = (2 if whole else 4) * chunk
    b_cells = _cells(tiles["b"], unit.K, design.N, eb)
    b_kn = np.full((lanes, design.b_elems, 2), -1)
    for lane in range(lanes):
        for i in range(unit.b_elems):
            b_kn[lane, i] = b_cells[(i * lanes + lane) * eb]
    d_mn = np.array([[(16 * (lane // 32) + (lane % 32) // 4 + 8 * (i >> 1),
                       2 * (lane % 4) + (i & 1)) for i in range(design.d_regs)]
                     for lane in range(lanes)])
    return Law(a_row, gov_lane, gov_field, base, np.ones(shape, int), b_kn, d_mn,
               shift=int(whole))
