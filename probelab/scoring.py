"""Scores of a claim against datasets, streamed: the claim's tables come a block at a time
(probelab.hypothesis.stream_claim), each block is compared with the same block of every
dataset's observed variable (read lazily, never whole) and hashed, so one pass over a grid
gives the table hash a seal is checked against and every dataset's scores, in bounded memory.

A score is, per kernel and per scoring (the literal reading, each translation): the claimed
cells, those that match, and the first mismatches with their coordinates, in the order the
observables are predicted and, within one, in C order.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

from probelab.errors import LabError
from probelab.hypothesis import (
    Block,
    Hypothesis,
    Piece,
    TableHash,
    claim_blocks,
    table_shapes,
    value_key,
)
from probelab.vocabulary import RECORD

MISMATCHES_SHOWN = 8
# observed values are read as slabs (a variable whole, else a kernel's values) so every
# compressed chunk of the file is decoded once (blocks read alone would decode a chunk once
# per block it spans); the slabs of all the datasets one scoring walk compares with (a
# grid's datasets, side by side) hold at most this much at once, beyond it blocks are read
# alone (a dataset saved now has its chunks cut as the blocks are). Room for both kernels'
# slabs of an N = 256 lane-id dataset (2 x 134 MB), which its claims walk twice
SLAB_BYTES = 288 << 20


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _cell(ds: xr.Dataset, observable: str, index: tuple[int, ...],
          coords: dict[str, np.ndarray]) -> dict[str, Any]:
    """Every coordinate of one cell: the grid dims and the labels that hang on them (read
    from the variables once, into `coords`: a lazily opened dataset reads a coordinate
    from the file each time it is asked). A grid's record of its vocabulary is no label of
    a cell (its aliases are: the names a sealed file reads)."""
    dims = ds.variables[observable].dims
    point = dict(zip(dims, index, strict=True))
    cell = {}
    for name in ds.coords:
        coord = ds.variables[name]
        if name not in ("kernel", RECORD) and set(coord.dims) <= set(dims):
            if name not in coords:
                coords[str(name)] = np.asarray(coord.values)
            cell[str(name)] = _plain(coords[str(name)][tuple(point[d] for d in coord.dims)])
    return cell


def shape_misfit(ds: xr.Dataset, shapes: Mapping[str, tuple[int, ...]]) -> str | None:
    """A prediction that cannot be laid over the observed variable (its dims disagree with
    the dataset's own): nothing can be scored."""
    for observable, want in shapes.items():
        got = ds[observable].shape
        if want not in (got, got[1:]):
            return (f"the prediction for {observable} has shape {want}, the dataset's "
                    f"variable {got}: the dataset's dims contradict its record")
    return None


@dataclass
class _Tally:
    matches: int = 0
    cells: int = 0
    shown: list[dict[str, Any]] = field(default_factory=list)


class _Room:
    """The bytes of slabs the datasets of one walk may still hold."""

    def __init__(self, free: int) -> None:
        self.free = free


class _Observed:
    """One dataset's observed values as blocks walk them, shared by every claim scored on
    it: slabs (a variable whole where small enough, else one kernel's where the blocks go
    kernel by kernel) kept while `room` has space for them, its own least recently used
    given up first when a new one needs the space (a claim's second scoring walks the same
    slabs again, after the others: each was decoded twice when only the last was kept), and
    the coordinates a mismatch is named by, read once."""

    def __init__(self, ds: xr.Dataset, room: _Room) -> None:
        self.ds, self._room = ds, room
        self._slabs: dict[tuple[str, int | None], np.ndarray] = {}  # least recently used first
        self.coords: dict[str, np.ndarray] = {}

    def values(self, observable: str, ki: int, rest: tuple[slice, ...], per_kernel: bool
               ) -> np.ndarray:
        """The observed values of kernel `ki` at `rest`: from a slab, else (a kernel's values
        too large to keep, or no room left) read for this block alone."""
        var = self.ds.variables[observable]
        whole = var.size * var.dtype.itemsize
        if whole <= SLAB_BYTES:
            slab: tuple[str, int | None] = observable, None
        elif per_kernel and whole // max(var.shape[0], 1) <= SLAB_BYTES:
            slab = observable, ki
        else:
            return np.asarray(var[(ki, *rest)].values)
        kept = self._slabs.pop(slab, None)
        if kept is None:
            part = var if slab[1] is None else var[ki]
            need = part.size * var.dtype.itemsize
            while self._slabs and need > self._room.free:  # freed before the next is read
                self._room.free += self._slabs.pop(next(iter(self._slabs))).nbytes
            if need > self._room.free:
                return np.asarray(var[(ki, *rest)].values)
            kept = self._read(part)
            self._room.free -= kept.nbytes
        self._slabs[slab] = kept  # now the most recently used
        return kept[(ki, *rest) if slab[1] is None else rest]

    @staticmethod
    def _read(var: xr.Variable) -> np.ndarray:
        return np.asarray(var.values)


class _Target:
    """One dataset being scored on one claim: a tally per (kernel, scoring, observable)."""

    def __init__(self, observed: _Observed, kernels: Sequence[str]) -> None:
        self.observed, self.ds, self.kernels = observed, observed.ds, list(kernels)
        labels = [str(k) for k in self.ds.kernel.values]
        self.index = {k: labels.index(k) for k in self.kernels}
        self.tallies: dict[tuple[str, str, str], _Tally] = {}

    def compare(self, piece: Piece) -> None:
        var = self.ds.variables[piece.observable]
        per_kernel = len(piece.shape) == var.ndim  # predicted per kernel: dims start with it
        for kernel in self.kernels:
            ki = self.index[kernel]
            if per_kernel:
                first = piece.index[0]
                if not first.start <= ki < first.stop:
                    continue
                rest, at = piece.index[1:], ki - first.start
                want = piece.values[at]
                claimed = None if piece.scope is None else piece.scope[at]
            else:
                rest, want, claimed = piece.index, piece.values, piece.scope
            got = self.observed.values(piece.observable, ki, rest, per_kernel)
            self._tally(kernel, piece, rest, want, got, claimed)

    def _tally(self, kernel: str, piece: Piece, rest: tuple[slice, ...], want: np.ndarray,
               got: np.ndarray, claimed: np.ndarray | None) -> None:
        tally = self.tallies.setdefault((kernel, piece.scoring, piece.observable), _Tally())
        diff = got != want
        if claimed is None:  # every cell claimed
            count = int(np.size(want))
        else:
            diff = diff & claimed
            count = int(np.count_nonzero(claimed))
        tally.cells += count
        tally.matches += count - int(np.count_nonzero(diff))
        room = MISMATCHES_SHOWN - len(tally.shown)
        wanted = np.broadcast_to(want, diff.shape)
        for flat in np.flatnonzero(diff)[:room] if room > 0 else ():
            local = np.unravel_index(flat, diff.shape)
            index = tuple(int(i) + (s.start if rest else 0)
                          for i, s in zip(local, rest or [slice(0, 0)] * len(local),
                                          strict=True))
            tally.shown.append(_cell(self.ds, piece.observable, (self.index[kernel], *index),
                                     self.observed.coords)
                               | {"observable": piece.observable,
                                  "predicted": f"{int(wanted[local]):#010x}",
                                  "observed": f"{int(got[local]):#010x}"})

    def scores(self, h: Hypothesis) -> dict[str, dict[str, Any]]:
        """{kernel: {scoring: {matches, cells, first_mismatches}}}."""
        out: dict[str, dict[str, Any]] = {}
        for kernel in self.kernels:
            per = out.setdefault(kernel, {})
            for scoring in h.scorings():
                tallies = [self.tallies.get((kernel, scoring, o), _Tally()) for o in h.predict]
                shown = [cell for t in tallies for cell in t.shown][:MISMATCHES_SHOWN]
                per[scoring] = {"matches": sum(t.matches for t in tallies),
                                "cells": sum(t.cells for t in tallies),
                                "first_mismatches": shown}
        return out


Targets = Sequence[tuple[xr.Dataset, Sequence[str]]]
Scored = tuple[str, list[dict[str, Any]]]


def score_claim(h: Hypothesis, grid: xr.Dataset, observables: Mapping[str, tuple[str, ...]],
                targets: Targets) -> Scored:
    """(the claim's table hash on `grid`, per target the scores of its kernels or its shape
    misfit): one pass over the claim's tables for every dataset of `targets` (datasets of the
    grid's own coordinates, each with the kernels to score)."""
    (scored,) = score_claims([(h, grid, observables, targets)])
    if isinstance(scored, LabError):
        raise scored
    return scored


Claim = tuple[Hypothesis, xr.Dataset, Mapping[str, tuple[str, ...]], Targets]


def score_claims(claims: Sequence[Claim]) -> list[Scored | LabError]:
    """`score_claim` of each claim, walked side by side: the claims take turns block by block
    so that every block comparing with the observed values now read (a dataset keeps one
    slab) is compared before the next slab is read. Several claims on one large dataset then
    read each slab once, not once per claim and scoring; each claim's own blocks keep their
    order (its hash, its first mismatches). A claim refused (its evaluation, a LabError)
    gives its error in its place; the others go on. Claims whose tables are equal by value
    (`_alike`) are walked once."""
    leaders, follows = _alike(claims)
    scored = _score_walked([claims[i] for i in leaders])
    out: dict[int, Scored | LabError] = dict(zip(leaders, scored, strict=True))
    alone = []
    for i, leader in follows.items():
        h, grid, observables, _ = claims[i]
        if isinstance(out[leader], LabError):  # its own walk says what is wrong with it
            alone.append(i)
            continue
        try:
            table_shapes(h, grid, observables)  # refused as its own walk would refuse it
            out[i] = out[leader]
        except LabError as exc:
            out[i] = exc
    for i, result in zip(alone, _score_walked([claims[i] for i in alone]), strict=True):
        out[i] = result
    return [out[i] for i in range(len(claims))]


def _alike(claims: Sequence[Claim]) -> tuple[list[int], dict[int, int]]:
    """(the claims to walk, {a claim: the earlier one whose answers it takes}): claims
    with one value key (probelab.hypothesis.value_key: equal tables, however their helpers
    are written) on the same grid, scored on the same datasets and kernels."""
    first: dict[tuple, int] = {}
    leaders, follows = [], {}
    for i, (h, grid, observables, targets) in enumerate(claims):
        key = value_key(h, grid, observables)
        alike = (key, id(grid), tuple((id(ds), tuple(kernels)) for ds, kernels in targets))
        if key is not None and alike in first:
            follows[i] = first[alike]
        else:
            first.setdefault(alike, i)
            leaders.append(i)
    return leaders, follows


def _score_walked(claims: Sequence[Claim]) -> list[Scored | LabError]:
    observed: dict[int, _Observed] = {}  # a dataset's, by identity: shared by its claims
    room = _Room(SLAB_BYTES)
    walks: list[_Walk | LabError] = []
    for h, grid, observables, targets in claims:
        try:
            walks.append(_Walk(h, grid, observables, [
                (observed.setdefault(id(ds), _Observed(ds, room)), kernels)
                for ds, kernels in targets]))
        except LabError as exc:
            walks.append(exc)
    while live := [w for w in walks if isinstance(w, _Walk) and w.head is not None]:
        key = _slab_key(live[0].head)
        for walk in live:
            try:
                while walk.head is not None and _slab_key(walk.head) == key:
                    walk.step()
            except LabError as exc:
                walks[walks.index(walk)] = exc
    return [w if isinstance(w, LabError) else w.scored() for w in walks]


def _slab_key(block: Block) -> tuple[str, int | None]:
    """What a block is compared with: its observable, from its first kernel on."""
    return block.observable, block.index[0].start if block.index else None


class _Walk:
    """One claim being scored: its blocks, the next one not yet computed, its table hash
    and the tallies of its datasets."""

    def __init__(self, h: Hypothesis, grid: xr.Dataset,
                 observables: Mapping[str, tuple[str, ...]],
                 targets: Sequence[tuple[_Observed, Sequence[str]]]) -> None:
        shapes = table_shapes(h, grid, observables)
        self.h, self.live = h, [_Target(observed, kernels) for observed, kernels in targets]
        self.misfits = [shape_misfit(t.ds, shapes) for t in self.live]
        self.fitting = [t for t, misfit in zip(self.live, self.misfits, strict=True)
                        if misfit is None]
        self.hasher = TableHash(h.where is not None)
        self._blocks = claim_blocks(h, grid, observables)
        self.head: Block | None = next(self._blocks, None)

    def step(self) -> None:
        """Compute the next block, hash it, compare it with every fitting dataset."""
        assert self.head is not None
        piece = self.head.compute()
        self.hasher.feed(piece)
        for target in self.fitting:
            target.compare(piece)
        self.head = next(self._blocks, None)

    def scored(self) -> Scored:
        digest = self.hasher.hexdigest()
        return digest, [{"misfit": misfit} if misfit else
                        {"table_sha256": digest, "kernels": target.scores(self.h)}
                        for target, misfit in zip(self.live, self.misfits, strict=True)]
