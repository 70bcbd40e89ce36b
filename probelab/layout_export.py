"""`probelab layout show|compare`: a probe's measured lane maps as CuTe layouts, linear
layouts, CSV and JSON, and a user's layout scored against them (probelab.lanemaps).

The dataset is the probe's newest pinned one that is not retired (or the one given), read
as `check` reads it: one that is not what its sweep saved, or simulated, is refused. A map is
shown in the dataset's own labels, or (`--prereg FILE`) numbered as a sealed file's table
for the kernels its literal scoring CONFIRMS, as `plot lanemap --prereg` draws it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from probelab import dataset, kitmaps, lanemaps, vocabulary
from probelab.errors import IntegrityError, UsageError
from probelab.lanemaps import LaneMap, Score
from probelab.layouts import Cute, Layout, Linear, Table, parse_cute, parse_linear, parse_table
from probelab.paths import shown

FORMS = ("cute", "linear", "csv", "json")
SHOWN = 8  # first differing cells printed by compare


@dataclass(frozen=True)
class Source:
    """Where the maps come from: the dataset, and the numbering they are shown in."""

    path: Path
    probe: str
    maps: list[LaneMap]


def newest_dataset(probe: str) -> Path:
    """The probe's newest pinned dataset that is not retired."""
    from probelab import manifest, retirement
    from probelab.paths import lab_root

    retired = {e["path"] for e in retirement.read()}
    pinned = [e for e in manifest.read() if e["probe"] == probe and e["path"] not in retired]
    if not pinned:
        raise UsageError(f"no pinned dataset of {probe!r} (`probelab list --measured` shows "
                         "what is measured), or give one with --dataset")
    newest = max(pinned, key=lambda e: (manifest.measured_at(e), e["path"]))
    return lab_root() / newest["path"]


def source(probe: str | None, path: Path | None, kernel: str | None, operand: str | None,
           prereg: Path | None) -> Source:
    """The maps of the dataset (`path`, or `probe`'s newest), judged as `check` judges it."""
    from probelab.notary.integrity import judge

    if path is None:
        if probe is None:
            raise UsageError("give a PROBE, or a dataset with --dataset")
        path = newest_dataset(probe)
    judged = judge(path, history=False)
    if judged.problem:
        raise IntegrityError(f"{path} is TAMPERED ({judged.problem}): no layout is read off it")
    if dataset.simulated(judged.prov):
        raise UsageError(f"{path} is simulated: a model's output, never a measured map")
    if probe is not None and judged.prov.get("probe") != probe:
        raise UsageError(f"{path} is a dataset of {judged.prov.get('probe')}, not {probe}")
    ds = vocabulary.translated(judged.read.open())  # an archive dataset: its recorded names
    maps = kitmaps.maps_of(ds, kernel, operand)
    if prereg is not None:
        maps = _numbered(maps, ds, path, prereg)
    return Source(path, str(judged.prov.get("probe")), maps)


def sealed_source(prereg: Path, kernel: str | None, operand: str | None) -> Source:
    """The maps a sealed file's table PREDICTS on its probe's grid (its a_m, a_k, b_k, b_n,
    d_m, d_n): for a layout nobody has measured yet (the AMD probes'), marked as such. The
    file must be sealed and unedited (its bytes hash to its ledger entry)."""
    import hashlib

    from probelab import ledger
    from probelab.hypothesis import helper_values, load_hypothesis, read_capped
    from probelab.lanemaps import HELPER_DIMS, HELPERS
    from probelab.paths import ledger_path, relative
    from probelab.probe import get_probe

    entries = ledger.read(ledger_path())
    ledger.verify_chain(entries)  # a line rewritten to hash as an edited file breaks it
    entry = ledger.find(entries, relative(prereg))
    raw = read_capped(prereg) if entry else None
    if raw is None or entry is None or hashlib.sha256(raw).hexdigest() != entry["file_sha256"]:
        raise IntegrityError(f"{prereg} is not a sealed file as its ledger entry records it "
                             "(unsealed, or edited since): no table is read off it")
    h = load_hypothesis(prereg)
    grid = vocabulary.translated(get_probe(h.probe).stimulus())
    labels = helper_values(h, grid, HELPER_DIMS)
    kernels = [str(k) for k in grid["kernel"].values]
    if kernel is not None and kernel not in kernels:
        raise UsageError(f"no kernel {kernel!r} on {h.probe}'s grid (it has "
                         f"{', '.join(kernels)})")
    words = f"PREDICTED by sealed {h.id} (a table, not a measurement)"
    maps = []
    for at, name in enumerate(kernels):
        for op, (row, col) in HELPERS.items():
            if kernel not in (None, name) or operand not in (None, op):
                continue
            count = lanemaps.value_count(grid, op, at)
            rows, cols = (np.where(labels[n][at] >= 0, labels[n][at], -1)[:, :count]
                          for n in (row, col))
            maps.append(LaneMap(name, op, rows, cols, words, documented=True))
    if not maps:
        raise UsageError(f"{h.id} gives no map of operand {operand.upper() if operand else '?'}")
    return Source(prereg, h.probe, maps)


def _numbered(maps: list[LaneMap], ds: xr.Dataset, path: Path, prereg: Path
              ) -> list[LaneMap]:
    """The maps in the sealed file's numbering: only kernels its literal scoring CONFIRMS."""
    from probelab.check import assess, literally_confirmed
    from probelab.hypothesis import load_hypothesis
    from probelab.lanemaps import AXES, numberings
    from probelab.notary.rules import Outcome

    if any(m.operand not in lanemaps.OPERANDS for m in maps):
        raise UsageError("--prereg numbers a lane-id probe's maps (canonical labels); these "
                         "are in the dataset's physical labels already")
    h = load_hypothesis(prereg)
    verdict = assess(prereg, path)
    doc = verdict.doc
    if verdict.outcome == Outcome.TAMPERED:
        raise IntegrityError(f"{prereg} is TAMPERED ({'; '.join(doc['reasons'])})")
    wanted = sorted({m.kernel for m in maps} & set(literally_confirmed(doc)))
    if not wanted:
        raise UsageError(f"{h.id}'s literal scoring confirms none of these kernels on {path}: "
                         "a map is numbered only as a confirmed table")
    found = numberings(ds, h, wanted)
    words = f"numbered as {h.id} (CONFIRMED literally on this kernel)"
    out = []
    for m in maps:
        if m.kernel not in found:
            continue
        rows, cols = (lanemaps.relabelled(labels, found[m.kernel][axis])
                      for labels, axis in zip((m.rows, m.cols), AXES[m.operand], strict=True))
        out.append(replace(m, rows=rows, cols=cols, numbering=words, documented=True))
    return out


def describe(m: LaneMap) -> dict[str, Any]:
    """Everything `show` says of one map: both forms (or why not), proved on every cell."""
    rows, cols = m.shape
    out: dict[str, Any] = {"kernel": m.kernel, "operand": m.operand.upper(),
                           "axes": list(lanemaps.AXES[m.operand]), "shape": [rows, cols],
                           "threads": m.lanes, "values": m.values, "tile": m.tile,
                           "numbering": m.numbering,
                           "cells": m.held}
    for form, found in (("cute", lanemaps.cute_of(m)), ("linear", lanemaps.linear_of(m))):
        if isinstance(found, str):
            out[form] = None
            out[f"{form}_fails"] = found
            continue
        score = lanemaps.reproduces(found, m)
        out[form] = found.text() if isinstance(found, Cute) else _linear_json(found)
        out[f"{form}_reproduces"] = [score.matches, score.cells]
        if isinstance(found, Cute) and found.offset:
            out["base_offset"] = found.offset
    out["f2_linear"] = out["linear"] is not None
    return out


def _offset_note(m: LaneMap, offset: int) -> str:
    """What a CuTe form's base offset means: CuTe's ComposedLayout O o L (a plain layout
    maps (0, 0) to 0; the offset is the honest part of the form, said in words)."""
    if m.tile:
        return (f"(element (0, 0) at tile offset {offset}: CuTe's ComposedLayout, the swizzle "
                "applied to that offset + the layout, as a tensor whose pointer starts that "
                "far into the tile)")
    return (f"((thread 0, value 0) holds index {offset}: the layout's index plus that "
            "constant, the O of CuTe's ComposedLayout A o O o L with A the identity; an affine "
            "map, so not F2-linear)")


def _linear_json(layout: Linear) -> dict[str, list[list[int]]]:
    return {dim: [list(v) for v in vectors] for dim, vectors in layout.bases}


def csv_text(m: LaneMap) -> str:
    """lane,value,row,col: a table `[layout]` and `layout compare --table` read (first input
    fastest), every slot, -1 where it holds nothing."""
    lines = ["lane,value,row,col"]
    for value in range(m.values):
        for lane in range(m.lanes):
            lines.append(f"{lane},{value},{m.rows[lane, value]},{m.cols[lane, value]}")
    return "\n".join(lines) + "\n"


def show_text(src: Source, form: str) -> str:
    """The maps in `form`, each headed by what it is and where it comes from."""
    if form == "json":
        return json.dumps({"dataset": shown(src.path), "probe": src.probe,
                           "maps": [describe(m) | {"table": _cells(m)} for m in src.maps]},
                          indent=1) + "\n"
    if form == "csv":
        if len(src.maps) != 1:
            raise UsageError(f"--as csv writes one map, and {len(src.maps)} match: give "
                             "--kernel and --operand (or --out DIR for a file each)")
        return csv_text(src.maps[0])
    lines = []
    for m in src.maps:
        d = describe(m)
        slots = f"a memory tile of {m.lanes * m.values} elements (cute: (row, col) -> " \
            "offset)" if m.tile else f"{m.lanes} threads x {m.values} values"
        lines.append(f"{src.probe} {m.kernel} {d['operand']}: {d['shape'][0]} x "
                     f"{d['shape'][1]} ({' x '.join(d['axes'])}), {slots}, {m.numbering}; "
                     f"{shown(src.path)}")
        if form == "cute":
            lines.append(f"  cute   {d['cute']}   reproduces {d['cute_reproduces'][0]}/"
                         f"{d['cute_reproduces'][1]} cells" if d["cute"] else
                         f"  cute   {d['cute_fails']}")
            if d.get("base_offset"):
                lines.append("  " + _offset_note(m, d["base_offset"]))
            lines.append("  F2-linear: " + ("yes" if d["f2_linear"] else "no, " +
                                            d["linear_fails"].removeprefix("not F2-linear: ")))
        else:
            lines.append(f"  linear {json.dumps(d['linear'])}   reproduces "
                         f"{d['linear_reproduces'][0]}/{d['linear_reproduces'][1]} cells"
                         if d["linear"] else f"  linear {d['linear_fails']}")
    return "\n".join(lines) + "\n"


def _cells(m: LaneMap) -> list[list[int]]:
    return [[lane, value, int(m.rows[lane, value]), int(m.cols[lane, value])]
            for value in range(m.values) for lane in range(m.lanes)]


def write_each(src: Source, form: str, folder: Path) -> list[Path]:
    """One file per map under `folder`: <dataset stem>.<kernel>.<operand>.<form ext>."""
    from probelab.storage import atomic_write_bytes

    written = []
    ext = {"cute": "cute.txt", "linear": "linear.txt"}.get(form, form)
    folder.mkdir(parents=True, exist_ok=True)
    for m in src.maps:
        one = Source(src.path, src.probe, [m])
        path = folder / f"{src.path.stem}.{m.kernel}.{m.operand}.{ext}"
        atomic_write_bytes(path, show_text(one, form).encode())
        written.append(path)
    return written


# -- compare ---------------------------------------------------------------------------------

def their_layout(cute: str | None, linear: Path | None, table: Path | None) -> Layout:
    """The user's layout, from exactly one of the three forms (files read bounded)."""
    from probelab import bounded
    from probelab.layouts import MAX_TABLE_BYTES

    given = [x for x in (cute, linear, table) if x is not None]
    if len(given) != 1:
        raise UsageError("give exactly one layout: --cute TEXT, --linear FILE.json or "
                         "--table FILE.csv")
    if cute is not None:
        return parse_cute(cute)
    path = linear if linear is not None else table
    assert path is not None
    try:
        raw = bounded.read_regular(path, MAX_TABLE_BYTES)
    except bounded.Unreadable as exc:
        raise UsageError(f"{path}: {exc}") from None
    if table is not None:
        return parse_table(raw, 2, str(path))
    try:
        spec = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"{path}: not JSON ({exc})") from None
    return parse_linear(spec.get("bases", spec) if isinstance(spec, dict) else spec)


def compare(layout: Layout, m: LaneMap) -> Score:
    """Score the layout on the map: literally where the map is in a sealed file's numbering
    (--prereg, --sealed), else up to one renumbering per axis (what the dataset's own labels
    determine)."""
    return lanemaps.reproduces(layout, m, relabel=not m.documented)


def compare_text(src: Source, layout: Layout, score: Score) -> str:
    m = src.maps[0]
    how = ("up to a renumbering of each axis (a lane-id experiment determines the map so "
           "far; --prereg FILE compares literally, in a confirmed table's numbering)"
           if score.relabelled else f"literally, {m.numbering}")
    verdict = "MATCH" if score.matches == score.cells else "MISMATCH"
    lines = [f"{verdict}: {'the table' if isinstance(layout, Table) else layout.text()}"
             f" reproduces {score.matches}/{score.cells} cells of {src.probe} {m.kernel} "
             f"{m.operand.upper()} ({shown(src.path)}), {how}"]
    said = " in the layout's numbering" if score.relabelled else ""
    word = "predicted" if m.numbering.startswith("PREDICTED") else "measured"
    for lane, value, row, col, their_row, their_col in score.first[:SHOWN]:
        lines.append(f"  lane {lane}, value {value}: {word} ({row}, {col}){said}, "
                     f"the layout gives ({their_row}, {their_col})")
    return "\n".join(lines) + "\n"


def mismatch_figure(src: Source, score: Score, stem: Path) -> list[Path]:
    """The (lane, value) slots, the mismatching ones marked: PNG and SVG at `stem`."""
    from probelab.drawing import new_figure, save_figure

    m = src.maps[0]
    fig = new_figure(max(4.0, 0.12 * m.lanes + 1.5), max(2.5, 0.3 * m.values + 1.2))
    ax = fig.add_subplot()
    ax.imshow(score.mismatched.T, cmap="Reds", vmin=0, vmax=1, aspect="auto",
              interpolation="nearest")
    ax.set_xlabel("lane (thread)")
    ax.set_ylabel("value")
    ax.set_title(f"{src.probe} {m.kernel} {m.operand.upper()}: {score.cells - score.matches} "
                 f"of {score.cells} slots differ (red)", fontsize=9)
    return save_figure(fig, stem)
