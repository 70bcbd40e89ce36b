"""What a sparse dataset records of its stimulus beyond the grid's coordinates, and the
launch inputs rebuilt from a dataset alone.

The grid holds the metadata words of every configuration, the B slot ids, the random words
and the dense and collision A values; the waves are a recipe over them
(probelab.kits.sparse.engine.waves) fixed by the element codec (its levels carry B's id
digits), the slot order the A one-hot waves follow (thread-major) and the block order.
`record` writes those, the seed the grid's random parts were drawn with, the metadata's
geometry and contract, and the buffers' strides into the probe's facts, which every sweep
keeps in its provenance (ProbeInfo.stimulus); `inputs` rebuilds every wave's params, a, b,
c and e buffers from that record and the grid, importing no probe code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from probelab.errors import UsageError
from probelab.formats import ELEMENTS
from probelab.kits import recorded_stimulus
from probelab.kits.elements import Codec
from probelab.kits.sparse import engine
from probelab.kits.sparse.engine import BLOCKS, FIELD_BITS, Design

if TYPE_CHECKING:  # xarray is imported where a dataset is built: discovery needs none
    import xarray as xr

KIT = "sparse"
TILE_ORDER = "value v of lane l at element v * lanes + l"
PACKING = ("buffer[wave][lane][word]: the lane's values in its own order, element i at "
           "bits [i * bits, (i + 1) * bits) of its words read as one little-endian bit "
           "string; e[wave][lane]: one metadata word; c: zeros")
WAVES = [f"one-hot blocks in the order {', '.join(BLOCKS)} (those the grid has): per "
         "configuration (word: and digit) and A slot s, A = 1 at s else 0, B slot t = level "
         "digit(b_id[t]) (digit p of the id in base len(levels); the word block's every digit, "
         "the others digit 0), e = the configuration's words per lane",
         "dense: per word then per trial, A = dense_a, B digit 0, e = word or rmeta",
         "clash (where the grid has cword): per clash word and trial, A = clash_a, B digit 0"]


def record(design: Design) -> dict[str, object]:
    """A probe's stimulus facts as its datasets record them."""
    meta, codec = design.meta, design.codec
    return {
        "kit": KIT, "seed": design.seed, "trials": design.trials, "lanes": design.lanes,
        "M": design.M, "N": design.N,
        "codec": {"operand": codec.operand.name, "accumulator": codec.accumulator.name},
        "levels": [float(v) for v in codec.levels],
        "slot_order": design.fragment("a").describe(), "field_bits": FIELD_BITS,
        "metadata": {"group_bits": meta.group_bits, "groups": meta.groups,
                     "valid": list(meta.valid), "invalid": list(meta.invalid),
                     "contrast": list(meta.contrast), "outside": list(meta.outside),
                     "clash": list(meta.clash), "whole_group": meta.whole_group},
        "waves": WAVES, "packing": PACKING,
        "buffers": {"a": design.a_regs, "b": design.b_regs, "c": design.d_regs, "e": 1},
    } | _tiles(design)


def _tiles(design: Design) -> dict[str, object]:
    """The shared-memory tiles each kernel reads an operand from, where any does (wgmma):
    value v of lane l at element v * lanes + l of its tile (recorded as `element_order`)."""
    if not any(u.smem for u in design.units):
        return {}
    counts = {u.name: {"a": u.elems, "b": u.b_elems} for u in design.units}
    return {"kernels": {u.name: {"tiles": {t.operand: t.record(
        u.bits, design.lanes * counts[u.name][t.operand]) | {"element_order": TILE_ORDER}
        for t in u.smem}} for u in design.units}}


def inputs(ds: xr.Dataset) -> dict[str, np.ndarray]:
    """Every wave's launch inputs, rebuilt from the dataset alone: params (the wave count),
    a and b ((waves, lanes, words) uint32), c (zeros) and e ((waves, lanes) metadata)."""
    facts = recorded_stimulus(ds, KIT)
    codec = Codec(ELEMENTS[facts["codec"]["operand"]], ELEMENTS[facts["codec"]["accumulator"]])
    if [float(v) for v in codec.levels] != facts["levels"]:
        raise UsageError(f"{codec.operand.name}'s levels are not those the dataset records: "
                         "its B ids cannot be rebuilt")
    w = engine.waves(ds, codec)
    waves = w["e"].shape[0]
    return {"params": np.array([waves], np.uint32), "a": w["a"], "b": w["b"],
            "c": np.zeros((waves, facts["lanes"], facts["buffers"]["c"]), np.uint32),
            "e": w["e"]}
