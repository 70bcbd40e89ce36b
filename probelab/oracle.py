"""`probelab oracle NAME DATASET`: an outside numeric model run on the inputs a numerics
dataset stores, its D compared bit for bit with the measured D, family by family.

An oracle cross-checks the lab's own models (probelab.numerics) against someone else's
implementation; it is never a verdict: what it says is printed, never sealed, and verify
never reads it. Oracles are found by name, as backends are: `oracle_<name>.py` in a
vendor's folder (its models name that vendor's instructions), exposing

`model(ds, kernel) -> Model`: what it models for that kernel of the dataset, raising `NoModel`
(why) where it models nothing of it, and `Unavailable` (how to install it) where what it
imports is missing: an oracle imports its package only when asked, so `probelab` never needs
it.
"""

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from probelab import dataset, manifest, retirement, vendors
from probelab.errors import UsageError
from probelab.formats import FORMATS
from probelab.notary.integrity import Standing, read_dataset, standing
from probelab.paths import shown

INPUTS = ("a_bits", "b_bits", "c_bits", "family", "a_format", "b_format", "d_format")
SHOWN = 8  # disagreeing cases printed per kernel (all of them in --json)


class NoModel(UsageError):
    """The oracle models nothing of this dataset's kernel (the message says why)."""


@dataclass(frozen=True)
class Model:
    """What an oracle models for one kernel: its own name of the instruction, and the D it
    predicts, one bit pattern per case (uint64, in the D format's width)."""

    instruction: str
    predict: Callable[[], np.ndarray]


@dataclass(frozen=True)
class Family:
    name: str
    cases: int
    agree: int  # bit for bit
    nan_payload: int  # both NaN, with different bits
    disagree: int


@dataclass
class Report:
    """One kernel of a dataset against the oracle's model of it."""

    oracle: str
    path: Path
    kernel: str
    instruction: str
    simulated: bool
    standing: Standing
    retired: bool = False
    families: list[Family] = field(default_factory=list)
    disagreeing: list[dict[str, str]] = field(default_factory=list)  # case, measured, oracle

    @property
    def disagree(self) -> int:
        return sum(f.disagree for f in self.families)

    @property
    def exact(self) -> bool:
        """Every case bit for bit (a NaN with other bits is not)."""
        return all(f.agree == f.cases for f in self.families)

    def marks(self) -> list[str]:
        return [m for m in (self.standing.words(),
                            "SIMULATED (a model's data: never evidence)" if self.simulated
                            else None,
                            "RETIRED (superseded: data/RETIRED.jsonl)" if self.retired else None)
                if m]

    def as_json(self) -> dict[str, Any]:
        return {"oracle": self.oracle, "dataset": shown(self.path), "kernel": self.kernel,
                "instruction": self.instruction, "simulated": self.simulated,
                "retired": self.retired, "integrity": self.standing.words(),
                "families": [vars(f) for f in self.families],
                "disagreeing": self.disagreeing}


@dataclass(frozen=True)
class Unmodelled:
    """A kernel the oracle models nothing of, and why."""

    path: Path
    kernel: str
    why: str

    def as_json(self) -> dict[str, str]:
        return {"dataset": shown(self.path), "kernel": self.kernel, "why": self.why}


def oracle_module(name: str) -> Any:
    """The oracle called `name`: the first vendor folder holding oracle_<name>.py."""
    found = {p.stem[len("oracle_"):]: f"{vendors.__name__}.{vendor}.{p.stem}"
             for vendor in vendors.table() for p in vendors.folder(vendor).glob("oracle_*.py")}
    if name not in found:
        raise UsageError(f"no oracle {name!r} (known: {', '.join(sorted(found)) or 'none'})")
    return importlib.import_module(found[name])


def measured_bits(ds: xr.Dataset, kernel: str) -> np.ndarray:
    """D(0, 0) of every case as the numerics kit stores it: `d_bits`, or an f64's two
    halves `d_hi`, `d_lo`."""
    one = ds.sel(kernel=kernel)
    if "d_bits" in ds:
        return one["d_bits"].values.astype(np.uint64)
    if "d_hi" in ds and "d_lo" in ds:
        return (one["d_hi"].values.astype(np.uint64) << np.uint64(32)) | \
            one["d_lo"].values.astype(np.uint64)
    raise UsageError("not a numerics dataset: no d_bits (or d_hi and d_lo)")


def _nan(bits: np.ndarray, fmt: str) -> np.ndarray:
    f = FORMATS[fmt]
    exponent = (bits >> np.uint64(f.fraction)) & np.uint64((1 << f.exponent) - 1)
    return (exponent == (1 << f.exponent) - 1) & (bits & np.uint64((1 << f.fraction) - 1) > 0)


def compared(ds: xr.Dataset, kernel: str, predicted: np.ndarray) -> tuple[list[Family],
                                                                         list[dict[str, str]]]:
    """Per family: cases, bit-for-bit agreements, NaN against NaN with other bits, and
    disagreements; and every disagreeing case (its name, both D in hex)."""
    measured = measured_bits(ds, kernel)
    if predicted.shape != measured.shape:
        raise UsageError(f"the oracle predicted {predicted.shape} values for {measured.shape} "
                         "cases")
    fmt = str(ds["d_format"].values)
    same = measured == predicted
    both_nan = ~same & _nan(measured, fmt) & _nan(predicted, fmt)
    families = [str(f) for f in ds["family"].values]
    out = []
    for name in dict.fromkeys(families):
        mine = np.array([f == name for f in families])
        out.append(Family(name, int(mine.sum()), int((same & mine).sum()),
                          int((both_nan & mine).sum()), int((~same & ~both_nan & mine).sum())))
    width = (FORMATS[fmt].bits + 3) // 4
    names = ds["case_name"].values if "case_name" in ds else ds["case"].values
    wrong = [{"case": str(names[i]), "measured": f"{int(measured[i]):0{width}x}",
              "oracle": f"{int(predicted[i]):0{width}x}"}
             for i in np.flatnonzero(~same & ~both_nan)]
    return out, wrong


def _retired(path: Path) -> bool:
    relative = manifest.archive_relative(path)
    return relative is not None and any(e.get("path") == relative for e in retirement.read())


def run(name: str, path: Path) -> tuple[list[Report], list[Unmodelled]]:
    """The oracle `name` on every kernel of the dataset at `path`: a report for each kernel
    it models, and each one it does not, with why."""
    module = oracle_module(name)
    read = read_dataset(path)
    ds = read.open()
    if missing := [n for n in INPUTS if n not in ds.variables]:
        raise UsageError(f"{shown(path)} is not a numerics dataset (no {', '.join(missing)})")
    where, simulated, retired = standing(read), dataset.simulated(read.prov), _retired(path)
    reports, unmodelled = [], []
    for kernel in (str(k) for k in ds["kernel"].values):
        try:
            model = module.model(ds, kernel)
        except NoModel as exc:
            unmodelled.append(Unmodelled(path, kernel, str(exc)))
            continue
        report = Report(name, path, kernel, model.instruction, simulated, where, retired)
        report.families, report.disagreeing = compared(ds, kernel, model.predict())
        reports.append(report)
    return reports, unmodelled


def render(reports: list[Report], unmodelled: list[Unmodelled]) -> str:
    """The reports as a reader wants them: one table per kernel, the first disagreements,
    then every kernel not compared."""
    lines = []
    for r in reports:
        lines.append(f"{shown(r.path)} {r.kernel}: oracle {r.oracle} as {r.instruction}"
                     + "".join(f" [{m}]" for m in r.marks()))
        lines.append(f"  {'family':<12} {'cases':>6} {'agree':>6} {'nan≠':>6} {'disagree':>8}")
        for f in r.families:
            lines.append(f"  {f.name:<12} {f.cases:>6} {f.agree:>6} {f.nan_payload:>6} "
                         f"{f.disagree:>8}")
        total = sum(f.cases for f in r.families)
        lines.append(f"  {'all':<12} {total:>6} {sum(f.agree for f in r.families):>6} "
                     f"{sum(f.nan_payload for f in r.families):>6} {r.disagree:>8}")
        for case in r.disagreeing[:SHOWN]:
            lines.append(f"  differs: {case['case']}: measured {case['measured']}, "
                         f"oracle {case['oracle']}")
        if len(r.disagreeing) > SHOWN:
            lines.append(f"  ... {len(r.disagreeing) - SHOWN} more (--json lists them all)")
    lines += [f"{shown(u.path)} {u.kernel}: not compared: {u.why}" for u in unmodelled]
    return "\n".join(lines)
