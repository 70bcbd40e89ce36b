"""What a matrix-move dataset records of its stimulus beyond the grid's coordinates, and the
launch inputs rebuilt from a dataset alone.

The grid holds everything a wave reads: each lane's address row and the tile (ldmatrix) or
the registers' values (stmatrix, movmatrix), ids and seeded random words alike, so the
inputs follow from it by the kit's packing (engine.buffers) with no probe declaration.
`record` names the kit, that packing and the seed the random words were drawn with in the
probe's facts, which every sweep keeps in its provenance (ProbeInfo.stimulus); `inputs`
rebuilds params and every buffer from a dataset that records them, importing no probe code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from probelab.kits import recorded_stimulus
from probelab.kits.matrix_move import engine

if TYPE_CHECKING:  # xarray is imported where a dataset is built: discovery needs none
    import numpy as np
    import xarray as xr

KIT = "matrix-move"
PACKING = ("params = [waves]; address[wave][lane]: the tile row (16 bytes) the lane's "
           "address points at (not movmatrix); tile[wave][row][word] (ldmatrix) or "
           "held[wave][lane][reg] (stmatrix, movmatrix): the grid's 16-bit values two to a "
           "word, element 2i in the low half of word i")


def record(seed: int) -> dict[str, object]:
    """A probe's stimulus facts as its datasets record them."""
    return {"kit": KIT, "seed": seed, "packing": PACKING}


def inputs(ds: xr.Dataset) -> dict[str, np.ndarray]:
    """Every launch input, rebuilt from the dataset alone (its grid, as its record says)."""
    recorded_stimulus(ds, KIT)
    return engine.buffers(ds)
