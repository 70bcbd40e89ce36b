"""The launch inputs of a numerics dataset, rebuilt from the dataset alone.

The grid holds every case's raw bits (`a_bits`, `b_bits` over k, `c_bits`) and the formats;
where they go is the probe's (its fragment figures and, for wgmma, B's shared tile), and
every sweep records it in the probe's facts (ProbeInfo.stimulus, kit "numerics"): the
[lane, element, k] that carry A's row 0 and B's column 0, the (lane, element) of C's
D(0, 0), the elements per lane, and B's tile with the byte of each B(k, 0). `inputs`
places the bits by that record, importing no probe code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from probelab.formats import FORMATS
from probelab.kits import recorded_stimulus
from probelab.kits.elements import pack_bits

if TYPE_CHECKING:  # xarray is imported where a dataset is built: discovery needs none
    import xarray as xr

KIT = "numerics"


def _placed(bits: np.ndarray, cells: list[list[int]], lanes: int, elements: int
            ) -> np.ndarray:
    """(waves, k) bit patterns at the recorded [lane, element, k] -> (waves, lanes,
    elements), zero elsewhere."""
    out = np.zeros((bits.shape[0], lanes, elements), np.uint64)
    for lane, element, k in cells:
        out[:, lane, element] = bits[:, k]
    return out


def inputs(ds: xr.Dataset) -> dict[str, np.ndarray]:
    """Every wave's (case's) params, a, b and c buffers (flat uint32), from the grid's bits
    placed by the recorded facts."""
    facts = recorded_stimulus(ds, KIT)
    a, b, c = (ds[n].values.astype(np.uint64) for n in ("a_bits", "b_bits", "c_bits"))
    bits = FORMATS[str(ds["a_format"].values)].bits
    out_bits = FORMATS[str(ds["d_format"].values)].bits
    lanes, elements, waves = facts["lanes"], facts["elements"], len(c)
    if "b_tile" in facts:  # B(k, 0)'s bytes at their tile bytes, word t to thread t
        tile = np.zeros((waves, facts["b_tile"]["bytes"]), np.uint64)
        for k, at in enumerate(facts["b_tile"]["k_bytes"]):
            for byte in range(bits // 8):
                tile[:, at + byte] = (b[:, k] >> np.uint64(8 * byte)) & np.uint64(0xFF)
        b_words = pack_bits(tile, 8)
    else:
        b_words = pack_bits(_placed(b, facts["b_col0"], lanes, elements["b"]), bits)
    lane, element = facts["c_cell"]
    cv = np.zeros((waves, lanes, elements["c"]), np.uint64)
    cv[:, lane, element] = c
    return {"params": np.array([waves], np.uint32),
            "a": pack_bits(_placed(a, facts["a_row0"], lanes, elements["a"]), bits).reshape(-1),
            "b": b_words.reshape(-1), "c": pack_bits(cv, out_bits).reshape(-1)}
