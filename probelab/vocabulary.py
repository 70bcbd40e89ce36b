"""The names a grid is read under: the archive's names and the one fragment vocabulary.

The kits name an operand's fragment as CuTe does, (thread, value) (probelab.kits.fragment):
dims `<op>_lane` and `<op>_value`, per-kernel counts `<op>_values`. The archive's datasets
and the sealed files that name their coordinates predate that: the lane-id kit called a
value `<op>_reg` (it counts elements, not 32-bit registers), the sparse kit `<op>_elem`.
Neither is rewritten (datasets are pinned by hash, sealed files by the ledger), so the old
names are read through a translation that is recorded, never guessed:

- `FRAGMENT_V1` is the translation (archive name -> vocabulary name), here in the core, so a
  check applies it without importing a kit.
- A grid in the vocabulary says so itself: its 0-d text coordinate `vocabulary` holds the
  translation it was renamed by (JSON, old -> new), and each old name stays a coordinate of
  its own (an alias: the new coordinate's dims and values), so a sealed expression that
  reads `a_reg` or `a_regs` binds as it did. Both are coordinates, so the content hash
  covers them.
- A dataset without that record is read in the vocabulary through `FRAGMENT_V1`
  (`translated`), restricted to the names it has. Readers translate where they open a
  dataset (layout export, plots, diff), so the code after them sees one vocabulary. A check
  reads a dataset as stored (its verdicts name the cells as its variables do), evaluates a
  sealed file over it with the vocabulary's names bound beside the archive's (`bindable`:
  a file may name `a_value` or `a_reg` on any grid), and reads dims it must take from
  today's probe (a dataset older than the record of its observables) in the dataset's own
  names (`named_as`).
- A grid's hash (probelab.dataset.grid_sha256) is taken under the archive's names
  (`archive_names`): renaming is no stimulus change, so a renamed grid hashes as the grid
  its seals were evaluated on. Only a record that holds exactly (every alias equal to its
  coordinate, every name its own) is undone; any other is hashed as stored, which no seal's
  grid matches.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

import numpy as np

from probelab import bounded

if TYPE_CHECKING:  # no xarray call here: a kit imports this where discovery needs none
    import xarray as xr

RECORD = "vocabulary"  # the coordinate a renamed grid records its translation in

# archive name -> vocabulary name (lane-id: "reg" counted values; sparse: "elem")
FRAGMENT_V1: dict[str, str] = {
    "a_reg": "a_value", "b_reg": "b_value", "d_reg": "d_value",
    "a_regs": "a_values", "b_regs": "b_values", "d_regs": "d_values",
    "a_elem": "a_value", "b_elem": "b_value",
}

MAX_RECORD = 4096  # characters: a translation is a few names


def recorded(ds: xr.Dataset) -> dict[str, str] | None:
    """The translation the grid records (old -> new), or None where it records none or one
    that does not hold: not a JSON object of distinct names, a new name the grid lacks, an
    old name of a coordinate that is no alias (other dims or values than its new
    coordinate), an old name of a dim or variable still there."""
    if RECORD not in ds.coords:
        return None
    var = ds.variables[RECORD]
    if var.ndim or var.dtype.kind not in "UO":
        return None
    text = str(var.values[()])
    if len(text) > MAX_RECORD:
        return None
    try:
        table = bounded.loads(text, max_depth=2)
    except ValueError:
        return None
    if not (isinstance(table, dict) and table and all(
            isinstance(k, str) and isinstance(v, str) for k, v in table.items())):
        return None
    if len(set(table.values())) != len(table) or set(table) & set(table.values()):
        return None
    for old, new in table.items():
        if new not in ds.coords:  # a dim or variable renamed: no alias, the old name gone
            if (new not in ds.dims and new not in ds.variables) or old in ds.variables \
                    or old in ds.dims:
                return None
            continue
        if old not in ds.coords or old in ds.dims:
            return None
        a, b = ds.variables[old], ds.variables[new]
        if a.dims != b.dims or a.shape != b.shape or a.dtype != b.dtype or \
                not np.array_equal(a.values, b.values):
            return None
    return table


def renamed(ds: xr.Dataset, table: Mapping[str, str] = FRAGMENT_V1) -> xr.Dataset:
    """`ds` in the vocabulary: each name of `table` it has (dim, coordinate or variable)
    renamed, each renamed coordinate kept under its old name as an alias, and the
    translation recorded (`RECORD`). A grid that records one already is returned as it is."""
    if RECORD in ds.coords:
        return ds
    used = {old: new for old, new in table.items() if old in ds.variables or old in ds.dims}
    if clash := sorted(new for new in used.values() if new in ds.variables or new in ds.dims):
        raise ValueError(f"the grid has both the archive's and the vocabulary's names: {clash}")
    if not used:
        return ds
    out = ds.rename(used)
    aliases = {old: out.variables[new] for old, new in used.items() if new in out.coords}
    return out.assign_coords({**aliases, RECORD: ((), json.dumps(used, sort_keys=True), {
        "long_name": "archive name -> fragment vocabulary name (probelab.vocabulary): each "
                     "archive name is kept as an alias coordinate"})})


def translated(ds: xr.Dataset) -> xr.Dataset:
    """A dataset read in the vocabulary: as it is where it records its own translation,
    else through the recorded `FRAGMENT_V1` (an archive dataset, never rewritten)."""
    return renamed(ds, FRAGMENT_V1)


def bindable(ds: xr.Dataset) -> xr.Dataset:
    """`ds` with the vocabulary's names bindable beside the archive's, for evaluating
    expressions over it: a dataset that records no translation (an archive dataset) gets
    each vocabulary name of an archive coordinate it has as a coordinate of its own (that
    coordinate's dims and values: `a_value` over dim `a_reg`), so a sealed file naming
    `a_value` reads an archive grid as it reads a new one. Its dims and variables stay as
    stored (a check's cells are named as the dataset names them). A grid in the vocabulary
    binds both already (its aliases) and is returned as it is."""
    if RECORD in ds.coords:
        return ds
    add = {new: ds.variables[old] for old, new in FRAGMENT_V1.items()
           if old in ds.coords and new not in ds.variables and new not in ds.dims}
    return ds.assign_coords(add) if add else ds


def aliases(ds: xr.Dataset) -> set[str]:
    """The alias coordinates a grid keeps for the translation it records (none where it
    records none that holds)."""
    table = recorded(ds)
    return {old for old, new in (table or {}).items() if new in ds.coords}


def named_as(dims: tuple[str, ...], have: Collection[str]) -> tuple[str, ...]:
    """Dims in the vocabulary (a probe's declaration) as a dataset whose dims are `have`
    names them: each vocabulary name `have` lacks becomes the archive name of it that `have`
    holds (`FRAGMENT_V1`); any other name is left as it is."""
    back: dict[str, list[str]] = {}
    for old, new in FRAGMENT_V1.items():
        back.setdefault(new, []).append(old)
    return tuple(d if d in have else next((o for o in back.get(d, ()) if o in have), d)
                 for d in dims)


def archive_names(ds: xr.Dataset) -> xr.Dataset:
    """`ds` under the archive's names: the translation it records undone (aliases and the
    record dropped, each vocabulary name back to its archive name); as it is where it
    records none that holds."""
    table = recorded(ds)
    if table is None:
        return ds
    aliases = [old for old, new in table.items() if new in ds.coords]
    return ds.drop_vars([*aliases, RECORD]).rename({new: old for old, new in table.items()})
