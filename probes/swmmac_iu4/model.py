"""gfx12's documented iu4 SWMMAC layout with seeds/000's raw law, as a sparse-kit `Law`.

For tests only (a simulated unit that follows the sealed raw-law reading must confirm it,
one that swaps fields must not), never evidence. Layout (wave32, 16x16 D): lanes l and
l + 16 hold A row l % 16, compressed nibbles of the lower and upper half of K; B column
l % 16, K half l // 16; D dword e of lane l is row 8 * (l // 16) + e, column l % 16.
"""

import numpy as np

from probelab.kits.sparse.engine import LANES, Design, Law, Unit


def documented_law(unit: Unit, design: Design, swap: bool = False, clash: str = "adds") -> Law:
    """The raw law: field n of the lane's own idx governs its nibble n (`swap`: field
    n ^ 1), value v selects position v of the nibble's group of 4; two nibbles on one
    position follow `clash` (a rule of `Law.clash`: nothing documents one)."""
    na, nb = unit.elems, unit.b_elems
    shape = (LANES, design.a_elems)
    lane = np.arange(LANES)[:, None]
    n = np.arange(design.a_elems)[None, :]
    exists = n < na
    ck = (lane // 16) * na + n  # compressed column in the row
    a_row = np.where(exists, np.broadcast_to(lane % 16, shape), -1)
    gov_field = np.broadcast_to(np.where(exists, n ^ 1 if swap else n, 0), shape).copy()
    b_kn = np.full((LANES, design.b_elems, 2), -1)
    q = np.arange(nb)[None, :]
    b_kn[:, :nb, 0] = (lane // 16) * nb + q
    b_kn[:, :nb, 1] = lane % 16
    e = np.arange(design.d_regs)[None, :]
    d_mn = np.stack(np.broadcast_arrays(8 * (lane // 16) + e, lane % 16), -1)
    return Law(a_row, np.broadcast_to(lane, shape).copy(), gov_field,
               np.broadcast_to(np.where(exists, 4 * (ck // 2), 0), shape).copy(),
               np.ones(shape, int), b_kn, d_mn, clash)
