"""What a lane-id dataset records of its stimulus beyond the grid's coordinates, and the
launch inputs rebuilt from a dataset alone.

The grid holds every size, the element types and the random GEMM trials; the named waves
are a recipe over slot ids (probelab.kits.lane_id.engine) fixed by the design and the plan
(digit bases, C's scale, digit counts, the presence wave). `record` writes those, the
stimulus seed, how the buffers hold the elements and each kernel's shared-memory tiles
(probelab.kits.tiles: size, alignment, element order, descriptor, MN-major or K-major) into
the probe's facts, which every sweep keeps in its provenance (ProbeInfo.stimulus); `inputs`
rebuilds every wave's params, a, b and c buffers from that record and the grid, importing no
probe code and planning nothing anew.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from probelab.errors import UsageError
from probelab.formats import ELEMENTS
from probelab.kits import recorded_stimulus
from probelab.kits.elements import pack, words
from probelab.kits.lane_id import engine
from probelab.kits.lane_id.engine import BOTH, Plan, Shape, Sizes

if TYPE_CHECKING:  # xarray is imported where a dataset is built: discovery needs none
    import xarray as xr

KIT = "lane-id"
BUFFERS = ("a", "b", "c")  # what a kernel reads; d is what it writes
PACKING = ("buffer[wave][lane][word]: the lane's fragment values in slot order, element i "
           "at bits [i * bits, (i + 1) * bits) of its words read as one little-endian bit "
           "string (a 64-bit element: two words, low first), strided for the widest kernel")
SLOT_ORDER = "slot = value * lanes + lane (value-major: the lane fastest)"
# how every lane-id kernel fills a tile from its operand's buffer
ELEMENT_ORDER = ("value v of lane l is element v * lanes + l, at byte (v * lanes + l) * "
                 "element bytes")
# the waves, in launch order, per design (engine.waves; digit p of an id in base b:
# floor(id / b**p) % b)
WAVES = {
    BOTH: ["a-named: per round (the presence round, if any, then digit p) and hot B slot "
           "j: A slot s = digit p of s in base `base` + 1 (with a presence round: + 0, and 1 "
           "in that round), B = 1 at j else 0, C slot c = scale * (digit p of c in base "
           "c_base + 1) (the presence round: digit 0)",
           "b-named: the same per round and hot A slot, A and B swapped",
           "gemm: per trial, A, B, C = the grid's gemm_a, gemm_b, gemm_c in slot order"],
    engine.APART: ["c-named: per C digit p, A = B = 0, C slot c = digit p of c in base "
                   "c_base + 1",
                   "b-named: per digit p and hot A slot i: A = 1 at i else 0, B slot s = "
                   "digit p of s in base `base` + 1, C = 0",
                   "gemm: per trial, A, B, C = the grid's gemm_a, gemm_b, gemm_c in slot "
                   "order"],
}


def record(shapes: Sequence[Shape], seed: int, trials: int, design: str
           ) -> dict[str, object]:
    """A probe's stimulus facts as its datasets record them."""
    size, codec = Sizes.widest(shapes), engine.codec_of(shapes)
    plan = Plan.of(codec, size, max(s.K for s in shapes), design=design)
    values = {"a": size.a_values, "b": size.b_values, "c": size.d_values}
    return {
        "kit": KIT, "seed": seed, "trials": trials, "design": design, "plan": plan.record(),
        "waves": WAVES[design], "slot_order": SLOT_ORDER, "packing": PACKING,
        "buffers": {n: {"element": codec.element(n).name, "values": v,
                        "words": words(codec.element(n), v)} for n, v in values.items()},
        "kernels": {s.name: {"tiles": {t.operand: t.record(
            codec.element(t.operand).bits, size.lanes * getattr(s, f"{t.operand}_values"))
            | {"element_order": ELEMENT_ORDER} for t in s.smem}} for s in shapes},
    }


def inputs(ds: xr.Dataset) -> dict[str, np.ndarray]:
    """Every wave's launch inputs, rebuilt from the dataset alone: params (the wave count)
    and the a, b, c buffers (uint32, (waves, lanes, words)), by the recorded plan and
    packing over the grid's sizes and GEMM trials."""
    facts = recorded_stimulus(ds, KIT)
    numbers = engine.waves(ds, plan=Plan(**facts["plan"]))
    lanes, buffers = int(ds["lanes"].values), facts["buffers"]
    out = {"params": np.array([numbers["a"].shape[0]], np.uint32)}
    for n in BUFFERS:
        element, want = ELEMENTS[buffers[n]["element"]], buffers[n]["words"]
        out[n] = pack(element, engine.to_lane_major(numbers[n], lanes))
        if out[n].shape[-1] != want:
            raise UsageError(f"buffer {n}: {out[n].shape[-1]} words per lane rebuilt, the "
                             f"dataset records {want}")
    return out
