"""The PTX ISA's sparse fragment tables as a `probelab.kits.sparse.engine.Law`, element by element.

Two uses, neither of them evidence: the tests check the sealed hypotheses' expressions
against this independent transcription (a simulated PTX unit must confirm them), and the
outside-contract summary (`outside.py`) uses it, once the sweep has confirmed the reading,
to name the dense position an invalid index would select if it were simply honoured.
"""

import numpy as np

from probelab.kits.sparse.engine import LANES, Design, Law, Unit


def ptx_law(unit: Unit, design: Design) -> Law:
    """The PTX ISA's sparse fragments for one kernel (see the sealed ptx-sparse-storage claims)."""
    per = 32 // unit.bits
    shape = (LANES, design.a_elems)
    a_row, gov_lane, gov_field = (np.full(shape, -1) for _ in range(3))
    base, stride = np.zeros(shape, int), np.ones(shape, int)
    for lane in range(LANES):
        g, t = divmod(lane, 4)
        for n in range(unit.elems):
            r = n // per
            half = r & 1
            ck = per * t + n % per + (r >> 1) * unit.K // 4
            if unit.pairwise:  # indices name pairs of an 8-wide chunk
                chunk, survivor = divmod(ck // 2, 2)
                base[lane, n], stride[lane, n] = 8 * chunk + ck % 2, 2
            elif design.meta.whole_group:  # tf32 1:2: one element of a 2-wide chunk
                chunk, survivor = ck, 0
                base[lane, n] = 2 * chunk
            else:
                chunk, survivor = divmod(ck, 2)
                base[lane, n] = 4 * chunk
            if unit.bits >= 16 and unit.K * unit.bits == 256:  # f16/bf16 k16, tf32 k8
                owner, nibble = 4 * g + unit.sel, chunk + 4 * half
            elif unit.bits >= 16:  # f16/bf16 k32, tf32 k16
                owner, nibble = 4 * g + 2 * unit.sel + chunk // 4, chunk % 4 + 4 * half
            elif unit.regs == 2:  # s8 m16n8k32, s4 m16n8k64
                owner, nibble = 4 * g + 2 * unit.sel + half, chunk
            else:  # s8 m16n8k64, s4 m16n8k128: (g, low K), (g+8, low K), (g, high), (g+8, high)
                owner, nibble = 4 * g + half + 2 * (chunk // 8), chunk % 8
            a_row[lane, n] = g + 8 * half
            gov_lane[lane, n], gov_field[lane, n] = owner, 2 * nibble + survivor
    b_kn = np.full((LANES, design.b_elems, 2), -1)
    for lane in range(LANES):
        g, t = divmod(lane, 4)
        for i in range(unit.b_elems):
            b_kn[lane, i] = (per * t + i % per + 4 * per * (i // per), g)
    d_mn = np.array([[(lane // 4 + 8 * (i >> 1), 2 * (lane % 4) + (i & 1))
                      for i in range(design.d_regs)] for lane in range(LANES)])
    return Law(a_row, gov_lane, gov_field, base, stride, b_kn, d_mn,
               shift=int(design.meta.whole_group))
