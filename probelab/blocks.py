"""Blocks of an array in C order: the unit in which large tables are evaluated
(probelab.hypothesis.stream_claim), compared (probelab.scoring) and stored (a dataset's
compressed chunks, probelab.dataset.save), so that each is read and decoded once."""

from collections.abc import Iterator

import numpy as np


def block_shape(shape: tuple[int, ...], cells: int) -> tuple[int, ...]:
    """The shape of the blocks `blocks` cuts: whole trailing axes, a run of one axis, single
    indices before it; at most `cells` cells (one at least)."""
    tail, axis = 1, len(shape)
    while axis > 0 and tail * shape[axis - 1] <= cells:
        axis -= 1
        tail *= shape[axis]
    if axis == 0:
        return tuple(shape)
    return (*(1,) * (axis - 1), max(1, min(cells // tail, shape[axis - 1])), *shape[axis:])


def blocks(shape: tuple[int, ...], cells: int) -> Iterator[tuple[slice, ...]]:
    """Blocks of `block_shape` that tile `shape` in C order, as slices (the last along each
    axis may be shorter); a shape with no cells is one empty block."""
    if 0 in shape:
        yield tuple(slice(0, n) for n in shape)
        return
    block = block_shape(shape, cells)
    for corner in np.ndindex(*(-(-n // b) for n, b in zip(shape, block, strict=True))):
        yield tuple(slice(i * b, min((i + 1) * b, n))
                    for i, b, n in zip(corner, block, shape, strict=True))
