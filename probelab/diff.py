"""`probelab diff`: where two datasets of one probe disagree, cell by cell.

The porting-hazard report: e.g. CUDA's __byte_perm on an H200 against HIP's on gfx1201, over
the same stimulus. Both datasets must come from the same probe and the same stimulus grid
(`grid_sha256`), so cell (i, j) of one is cell (i, j) of the other. Nothing here is a
verdict: a diff says where two devices (or a device and a model) differ, not who is right.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from probelab import dataset, vocabulary
from probelab.errors import UsageError
from probelab.notary.integrity import Standing, read_dataset, standing
from probelab.paths import shown
from probelab.probe import get_probe
from probelab.records import Provenance, toolchain_name

FIRST_SHOWN = 8
CASES_SHOWN = 40  # changed cases of two static datasets printed (all in --json)
MAX_INDEX_DECIMAL = 256  # index-like dimension coordinates shorter than this print in decimal


@dataclass
class Side:
    """One argument of the diff: a dataset, the kernel asked for (None: by name), and how
    the dataset stands by check's reading (a TAMPERED or unpinned side is named)."""

    path: Path
    kernel: str | None
    ds: xr.Dataset = field(repr=False)
    standing: Standing = field(default_factory=lambda: Standing(None))

    @property
    def provenance(self) -> Provenance:
        return dataset.provenance(self.ds)

    @property
    def kernels(self) -> list[str]:
        return [str(k) for k in self.ds["kernel"].values]

    def describe(self) -> dict[str, Any]:
        prov = self.provenance
        return {"path": shown(self.path), "device": prov.get("device"),
                "target": prov.get("target"), "toolchain": toolchain_name(prov),
                "utc": prov.get("utc"),
                "git_head": prov.get("git_head"), "kernels": self.kernels,
                "simulated": dataset.simulated(prov), "integrity": self.standing.words()}


@dataclass
class PairDiff:
    a_kernel: str
    b_kernel: str
    cells: int
    differing: int
    masks: dict[str, np.ndarray] = field(repr=False)  # observable -> bool, True where differ
    first: list[dict[str, Any]] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return self.differing == 0

    def to_dict(self) -> dict[str, Any]:
        return {"a_kernel": self.a_kernel, "b_kernel": self.b_kernel, "cells": self.cells,
                "differing": self.differing, "identical": self.identical,
                "observables": {o: {"cells": int(m.size), "differing": int(np.count_nonzero(m))}
                                for o, m in self.masks.items()},
                "first_differences": self.first}


def parse_spec(text: str) -> tuple[Path, str | None]:
    """`PATH` or `PATH:KERNEL`. A path that exists as given is never split."""
    path, sep, kernel = text.rpartition(":")
    if not sep or not kernel or not path or "/" in kernel or Path(text).exists():
        return Path(text), None
    return Path(path), kernel


def load_side(text: str) -> Side:
    """A side read as check reads a dataset: once, bounded, its integrity judged; in the
    fragment vocabulary (an archive dataset through its recorded translation,
    probelab.vocabulary), so two sides of one grid name its cells alike."""
    path, kernel = parse_spec(text)
    read = read_dataset(path)
    side = Side(path, kernel, vocabulary.translated(read.open()), standing(read))
    if kernel is not None and kernel not in side.kernels:
        raise UsageError(f"{path} has no kernel {kernel!r} (it has {', '.join(side.kernels)})")
    return side


def pairs(a: Side, b: Side) -> list[tuple[str, str]]:
    """The kernels to compare: the ones asked for (a kernel named on one side only is looked
    up by the same name on the other), else every kernel name both datasets have."""
    if a.kernel is None and b.kernel is None:
        common = [k for k in a.kernels if k in b.kernels]
        if not common:
            raise UsageError(f"no common kernel: {shown(a.path)} has {', '.join(a.kernels)}; "
                             f"{shown(b.path)} has {', '.join(b.kernels)} (name them: "
                             "A:KERNEL B:KERNEL)")
        return [(k, k) for k in common]
    ka = a.kernel or b.kernel
    kb = b.kernel or a.kernel
    assert ka is not None and kb is not None
    for side, k in ((a, ka), (b, kb)):
        if k not in side.kernels:
            raise UsageError(f"{shown(side.path)} has no kernel {k!r} (it has "
                             f"{', '.join(side.kernels)}; name it: PATH:KERNEL)")
    return [(ka, kb)]


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _cell(da: xr.DataArray, index: tuple[int, ...], skip: set[str]) -> dict[str, Any]:
    """Every coordinate of one cell but `skip`'s: the grid dims and the labels on them."""
    point = dict(zip(da.dims, index, strict=True))
    return {str(name): _plain(coord.isel({d: point[d] for d in coord.dims}).values[()])
            for name, coord in da.coords.items()
            if name not in skip and set(coord.dims) <= set(da.dims)}


def compare(a: Side, b: Side, ka: str, kb: str, observables: list[str],
            first: int = FIRST_SHOWN) -> PairDiff:
    masks, shown_cells = {}, []
    # no kernel, nor the vocabulary's record or the archive names it keeps as aliases
    skip = {"kernel", vocabulary.RECORD, *vocabulary.aliases(a.ds)}
    for observable in observables:
        va = a.ds[observable].sel(kernel=ka)
        vb = b.ds[observable].sel(kernel=kb).transpose(*va.dims)
        differ = np.asarray(va.values != vb.values)
        masks[observable] = differ
        for flat in np.flatnonzero(differ)[: max(first - len(shown_cells), 0)]:
            index = tuple(int(i) for i in np.unravel_index(flat, differ.shape))
            shown_cells.append(_cell(va, index, skip) | {
                "observable": observable,
                "a": f"{int(va.values[index]):#010x}", "b": f"{int(vb.values[index]):#010x}"})
    cells = sum(int(m.size) for m in masks.values())
    differing = sum(int(np.count_nonzero(m)) for m in masks.values())
    return PairDiff(ka, kb, cells, differing, masks, shown_cells)


def _observables(a: Side, b: Side) -> tuple[list[str], dict[str, str]]:
    """The observables both sides have, and {observable: the side that lacks it} for the
    probe's others: a diff says what it did not compare."""
    probe = get_probe(a.provenance["probe"])
    names = [o for o in probe.observables if o in a.ds and o in b.ds]
    if not names:
        raise UsageError(f"the datasets share none of {probe.id}'s observables "
                         f"{sorted(probe.observables)}")
    missing = {o: "A" if o not in a.ds else "B" if o not in b.ds else "A and B"
               for o in probe.observables if o not in names}
    return names, missing


def _uncompared_kernels(a: Side, b: Side, compared: list[tuple[str, str]]) -> dict[str, list]:
    return {"A": [k for k in a.kernels if k not in {ka for ka, _ in compared}],
            "B": [k for k in b.kernels if k not in {kb for _, kb in compared}]}


def check_comparable(a: Side, b: Side) -> None:
    pa, pb = a.provenance.get("probe"), b.provenance.get("probe")
    if pa != pb:
        raise UsageError(f"different probes: {shown(a.path)} is {pa!r}, {shown(b.path)} is "
                         f"{pb!r}")
    ga, gb = dataset.grid_sha256(a.ds), dataset.grid_sha256(b.ds)
    if ga != gb:
        raise UsageError(f"different stimulus grids (grid_sha256 {ga[:12]} vs {gb[:12]}): "
                         "cells of the two datasets are not the same cells")


def diff(a_spec: str, b_spec: str) -> tuple[dict[str, Any], Side, Side, list[PairDiff]]:
    """(report, A, B, per-pair results). Refuses (UsageError) what cannot be compared."""
    a, b = load_side(a_spec), load_side(b_spec)
    check_comparable(a, b)
    observables, missing = _observables(a, b)
    compared = pairs(a, b)
    results = [compare(a, b, ka, kb, observables) for ka, kb in compared]
    sides = {"a": a.describe(), "b": b.describe()}
    changed = (changed_cases(a, b, results[0]) if all(s["toolchain"] for s in sides.values())
               else None)
    doc = {"probe": a.provenance["probe"], "grid_sha256": dataset.grid_sha256(a.ds),
           **sides, "any_simulated": any(s["simulated"] for s in sides.values()),
           "broken": [n for n, s in (("A", a), ("B", b)) if s.standing.words()],
           "identical": all(r.identical for r in results),
           "pairs": [r.to_dict() for r in results],
           "not_compared": {"observables": missing,
                            "kernels": _uncompared_kernels(a, b, compared)}}
    if changed is not None:  # a printed instruction that changed is a difference too
        doc["changed_cases"] = changed
        doc["identical"] = doc["identical"] and not changed
    return doc, a, b, results


def changed_cases(a: Side, b: Side, result: PairDiff) -> list[dict[str, Any]]:
    """Two static datasets (one per toolchain): every case whose observables or text
    outputs differ, with the case's coordinates, what differs, and both texts."""
    texts = [str(t) for t, v in a.ds.data_vars.items()  # the dataset's own text outputs
             if v.dims == ("case",) and v.dtype.kind == "U" and t in b.ds]
    rows = []
    for i in range(a.ds.sizes["case"]):
        values = [o for o, m in result.masks.items() if m.reshape(-1)[i]]
        words = [t for t in texts if str(a.ds[t].values[i]) != str(b.ds[t].values[i])]
        if not values and not words:
            continue
        case = {str(c): _plain(a.ds[c].values[i]) for c in a.ds.coords
                if a.ds[c].dims == ("case",)}
        rows.append(case | {"differs": values + words,
                            "a": {t: str(a.ds[t].values[i]) for t in words},
                            "b": {t: str(b.ds[t].values[i]) for t in words}})
    return rows


def _where(side: dict[str, Any]) -> str:
    device, target = str(side.get("device")), str(side.get("target"))
    where = device if target in device else f"{device}, {target}"
    if side.get("toolchain"):
        where = f"{target}, built by {side['toolchain']}"
    return where + (", SIMULATED" if side["simulated"] else ", measured")


def _value(name: str, value: Any, ds: xr.Dataset | None) -> str:
    if not isinstance(value, int) or isinstance(value, bool):
        return f"{name}={value}"
    if ds is None or name not in ds.coords:
        return f"{name}={value:#x}"
    display = ds[name].attrs.get("display")  # as the probe declares it
    if display == "decimal" or (display is None and name in ds.dims and
                                ds.sizes[name] < MAX_INDEX_DECIMAL):  # older datasets
        return f"{name}={value}"
    digits = len(f"{int(ds[name].values.max()):x}")  # as wide as the coordinate's largest
    return f"{name}=0x{value:0{digits}x}"


def render(doc: dict[str, Any], ds: xr.Dataset | None = None) -> str:
    """Plain text: one block per compared pair."""
    a, b = doc["a"], doc["b"]
    lines = [f"diff {doc['probe']} (grid {doc['grid_sha256'][:12]}):",
             f"  A = {a['path']} ({_where(a)})", f"  B = {b['path']} ({_where(b)})"]
    simulated = [n for n, s in (("A", a), ("B", b)) if s["simulated"]]
    lines.append("  SIMULATED: " + " and ".join(simulated) + " — a simulated side is a model, "
                 "never evidence" if simulated else "  neither side is simulated")
    for name in doc["broken"]:
        lines.append(f"  {name} is {doc[name.lower()]['integrity']}: this diff is not "
                     "between the archive's measurements")
    for p in doc["pairs"]:
        share = 100 * p["differing"] / p["cells"] if p["cells"] else 0.0
        lines.append(f"{p['a_kernel']} (A) vs {p['b_kernel']} (B): {p['differing']:,} / "
                     f"{p['cells']:,} cells differ ({share:.2f}%)"
                     + (" — identical" if p["identical"] else ""))
        for cell in p["first_differences"]:
            coords = " ".join(_value(k, v, ds) for k, v in cell.items()
                              if k not in ("a", "b", "observable"))
            lines.append(f"  {cell['observable']} at {coords}: A {cell['a']}  B {cell['b']}")
        if p["differing"] > len(p["first_differences"]):
            lines.append(f"  ... and {p['differing'] - len(p['first_differences']):,} more")
    if "changed_cases" in doc:
        rows, ta, tb = doc["changed_cases"], doc["a"]["toolchain"], doc["b"]["toolchain"]
        lines.append(f"cases that changed with the compiler ({ta} → {tb}): {len(rows)}"
                     if ta != tb else f"cases that differ (both built by {ta}): {len(rows)}")
        for row in rows[:CASES_SHOWN]:
            labels = " ".join(f"{k}={v}" for k, v in row.items()
                              if k not in ("differs", "a", "b"))
            lines.append(f"  {labels}: {', '.join(row['differs'])}")
            for text in row["a"]:
                lines.append(f"    {text}: A {row['a'][text]!r}  B {row['b'][text]!r}")
        if len(rows) > CASES_SHOWN:
            lines.append(f"  ... and {len(rows) - CASES_SHOWN} more (--json lists them all)")
    skipped = doc["not_compared"]
    for observable, lacking in skipped["observables"].items():
        lines.append(f"  not compared: observable {observable} ({lacking} lacks it)")
    for side, kernels in skipped["kernels"].items():
        if kernels:
            lines.append(f"  not compared: kernels {', '.join(kernels)} of {side} (no "
                         "counterpart; name pairs as A:KERNEL B:KERNEL)")
    return "\n".join(lines)


def _stem(side: dict[str, Any], path: Path) -> str:
    return f"{side.get('target')}-{path.stem}"


def plot(doc: dict[str, Any], a: Side, b: Side, results: list[PairDiff], out_dir: Path
         ) -> list[Path]:
    """The probe's mismatch-map per pair, with B's values standing in for A's prediction."""
    from probelab.drawing import save_figure, saving_behind

    probe = get_probe(doc["probe"])
    if "mismatch-map" not in probe.plots:
        raise UsageError(f"{probe.id} has no mismatch-map plot to draw a diff with")
    draw = probe.plots["mismatch-map"]
    written: list[Path] = []
    with saving_behind():  # each figure encoded and written while the next is drawn
        for r in results:
            # The plot's shape: {scoring: {observable: values over the observable's grid}}.
            scoring = f"B {r.b_kernel}"
            tables = {scoring: {o: b.ds[o].sel(kernel=r.b_kernel)
                                .transpose(*a.ds[o].sel(kernel=r.a_kernel).dims).values
                                for o in r.masks}}
            one = a.ds.sel(kernel=[r.a_kernel])
            versus = f"{r.b_kernel} on {_where(doc['b'])}"
            figures = draw(one, tables=tables, scoring=scoring, versus=versus,
                           versus_simulated=doc["b"]["simulated"])
            for figure in figures.values():
                stem = (f"diff.{_stem(doc['a'], a.path)}.{r.a_kernel}.vs."
                        f"{_stem(doc['b'], b.path)}.{r.b_kernel}")
                written += save_figure(figure, out_dir / stem)
    return written
