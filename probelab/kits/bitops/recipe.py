"""What a bit-op dataset records of its stimulus beyond the grid's coordinates, and the
launch inputs rebuilt from a dataset alone.

The grid holds every operand word and parameter value; which of its coordinates a kernel
reads (and in which argument order), which axes the launch covers (one thread per cell) and
which axis holds compile-time immediates instead are the probe's declarations. `record`
writes those into the probe's facts, which every sweep keeps in its provenance
(ProbeInfo.stimulus); `inputs` rebuilds params and every input buffer from that record and
the grid, importing no probe code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from probelab.errors import UsageError
from probelab.kits import recorded_stimulus

if TYPE_CHECKING:  # xarray is imported where a dataset is built: discovery needs none
    import xarray as xr

KIT = "bitops"
PACKING = ("params = [cells]; one uint32 buffer per input, in argument order, holding its "
           "coordinate at every launched cell in C order of the launched axes (cell i on "
           "thread i); an unrolled axis's values are immediates of the kernel text, not "
           "inputs")


def record(inputs: Sequence[str], launched: Sequence[str], unrolled: str | None
           ) -> dict[str, object]:
    """A probe's stimulus facts as its datasets record them."""
    return {"kit": KIT, "inputs": list(inputs), "launched": list(launched),
            "unrolled": unrolled, "packing": PACKING}


def buffers(grid: xr.Dataset, inputs: Sequence[str], launched: Sequence[str]
            ) -> dict[str, np.ndarray]:
    """params (the launched cell count) and each input coordinate at every launched cell,
    as PACKING says: its axes put in the launched order first (a grid may store them in any),
    and refused where it lies along an axis the launch does not cover or holds a value no
    uint32 word holds (nothing is wrapped into another word)."""
    shape = [grid.sizes[d] for d in launched]
    out = {"params": np.array([int(np.prod(shape))], np.uint32)}
    for name in inputs:
        var = grid[name]
        if outside := [str(d) for d in var.dims if d not in launched]:
            raise UsageError(f"input {name} lies along {outside}, which the launch "
                             f"({list(launched)}) does not cover")
        values = var.transpose(*(d for d in launched if d in var.dims)).values
        if not np.issubdtype(values.dtype, np.integer) or np.any(
                (values < 0) | (values > np.iinfo(np.uint32).max)):
            raise UsageError(f"input {name} holds values that are no uint32 words")
        index = tuple(slice(None) if d in var.dims else None for d in launched)
        out[name] = np.broadcast_to(values.astype(np.uint32)[index], shape).reshape(-1)
    return out


def inputs(ds: xr.Dataset) -> dict[str, np.ndarray]:
    """Every launch input, rebuilt from the dataset alone (its recorded facts and grid)."""
    facts = recorded_stimulus(ds, KIT)
    return buffers(ds, facts["inputs"], facts["launched"])
