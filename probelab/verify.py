"""`probelab verify`: re-check every dataset under data/ against every sealed hypothesis
of its probe, and compare with the verdicts recorded beside it.

A refuted hypothesis is a result, not a failure; a hypothesis sealed after a dataset was
taken is POST-HOC for that dataset, also not a failure (but never recorded as a verdict).
Failures are: a broken ledger or manifest, a tampered, misplaced, unpinned or missing
dataset, a symbolic link, a simulated dataset in the archive, a recorded verdict that the
data no longer reproduce, and one that does not count or that no check accounts for.
"""

import itertools
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from probelab import bounded, codetree, dataset, gitinfo, manifest, retirement, written
from probelab.errors import HistoryError, IntegrityError, LabError
from probelab.notary.order import measuring_code
from probelab.notary.problems import Problem, at, from_wire
from probelab.notary.rules import Finding, Rule
from probelab.paths import data_dir, lab_root
from probelab.prereg import Record
from probelab.toolchains import identity
from probelab.verify_unit import Unit, plan, run_unit

EXPECTED_SUFFIXES = (".nc", ".verdict.json", ".png", ".svg", ".md")
VERDICT = ".verdict.json"


def archive_files(root: Path) -> tuple[list[Path], list[Path]]:
    """(plain files, symbolic links) under `root`; links are never followed."""
    files, links = [], []
    for folder, dirs, names in os.walk(root):
        base = Path(folder)
        links += [base / d for d in dirs if (base / d).is_symlink()]
        for name in names:
            (links if (base / name).is_symlink() else files).append(base / name)
    return sorted(files), sorted(links)


Runner = Callable[[list[Unit], Record, "list[dict[str, Any]] | None", bool,
                   Callable[[str], None]], list[dict[str, Any]]]


def verify_archive(write: bool = False, root: Path | None = None, jobs: int = 1,
                   runner: Runner | None = None, retired: bool = False,
                   step: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Verify the archive: the record, then each probe's unit (probelab.verify_unit), then
    what spans units. `jobs`: processes that check units side by side (0: one per core);
    `runner`: who runs the units instead (a fleet: probelab.fleet.verify_units), which must
    give each unit's result as `run_unit` does; `retired`: check retired datasets in full
    too (probelab.retirement); `step`: told of each unit done. Its "problems" are findings
    (probelab.notary.problems.Problem), said in words only by the CLI."""
    root = root or data_dir()
    result: dict[str, Any] = {"seals": [], "checks": [], "problems": [], "notes": [],
                              "toolchains": [], "datasets": 0, "retired": []}
    try:
        record = Record.read()  # read once: every check below shares it
    except IntegrityError as exc:
        rule = Rule.HISTORY_UNUSABLE if isinstance(exc, HistoryError) else Rule.LEDGER_BROKEN
        result["problems"].append(at("", Finding(rule, detail=f"{exc}")))
        return result
    problems: list[Problem] = result["problems"]
    notes = result["notes"]

    def said(rule: Rule, whys: list[str]) -> list[Problem]:
        """A lower layer's accounts, each as it said it (and where)."""
        return [at("", Finding(rule, detail=why)) for why in whys]

    files, links = archive_files(root) if root.exists() else ([], [])
    problems += [at(rel(link), Finding(Rule.ARCHIVE_LINK, os.readlink(link)))
                 for link in links]
    for stray in (p for p in files if not p.name.endswith(EXPECTED_SUFFIXES)
                  and p not in (manifest.manifest_path(), retirement.retired_path())):
        notes.append(f"stray file in the archive: {rel(stray)}")
    if root.is_symlink():
        problems.append(at("", Finding(Rule.ARCHIVE_IS_LINK, rel(root), os.readlink(root))))
    try:
        pins: list[dict[str, Any]] | None = manifest.read()
    except IntegrityError as exc:
        problems += said(Rule.MANIFEST_BROKEN, [str(exc)])
        pins = None  # and each dataset says so
    problems += said(Rule.PINNED_TWICE, manifest.duplicates(pins or []))
    rewritten_manifest = said(Rule.MANIFEST_REWRITTEN, written.manifest_problems())
    problems += rewritten_manifest
    problems += said(Rule.PIN_MALFORMED,
                     [why for why in map(manifest.pin_form_problem, pins or []) if why])
    problems += _uncommitted_pins()
    problems += [at(pin["path"], Finding(Rule.PINNED_FILE_GONE)) for pin in pins or []
                 if not (lab_root() / pin["path"]).is_file()]
    datasets = [p for p in files if p.suffix == ".nc"]
    result["datasets"] = len(datasets)
    honoured = _retirements(pins or [], problems)
    resting = {lab_root() / e["path"]: e for e in honoured
               if not retired or _too_large(lab_root() / e["path"], notes)}
    units = plan([p for p in datasets if p not in resting], record)
    # one history read for the whole archive (written.rewritten_all), made while the units
    # are checked: when the first is done, in this process, while the others still run
    history: list[dict[Path, list[str]]] = []
    if write:  # units judge no history (it is judged here, once): read it before any write
        history.append(written.rewritten_all(datasets))
        if rewritten_manifest or any(history[0].values()):
            write = False
            notes.append("no verdict file written: the archive's git history is not intact "
                         "(its problems below), and a verdict is recorded only where every "
                         "dataset it rests on stands")

    def told(line: str) -> None:
        if not history:
            history.append(written.rewritten_all(datasets))
        step(line)

    done = (runner or _local(jobs))(units, record, pins, write, told)
    changed = history[0] if history else written.rewritten_all(datasets)
    seals = {row["seq"]: row for unit in done for row in unit["seals"]}
    result["seals"] = [seals[e["seq"]] for e in record.entries]
    problems[:0] = [from_wire(w) for s in result["seals"] for w in s.pop("findings")]
    per = {name: out for unit in done for name, out in unit["datasets"].items()}
    counted: dict[tuple, list[tuple]] = {}  # (probe, target, hypothesis) -> its verdicts
    built_by: dict[str, Any] = {}  # dataset -> its provenance's toolchain record
    accounted: set[str] = set()
    for path in datasets:
        name = rel(path)
        problems += [at(name, Finding(Rule.REWRITTEN, detail=why))  # whatever it says
                     for why in changed[path]]
        if path in resting:
            accounted |= _resting(path, resting[path], result)
            continue
        out = per[name]
        problems += map(from_wire, out["problems"])
        notes += out["notes"]
        result["checks"] += out["checks"]
        for key, run in out["counted"]:
            counted.setdefault(tuple(key), []).append(tuple(run))
        built_by[name] = out.get("toolchain")
        accounted |= set(out["accounted"])
    _flips(counted, result)
    differ, rebuilt = identity.conflicts(built_by)
    problems += said(Rule.TOOLS_DIFFER, differ)
    notes += rebuilt
    _successors_verdicts(result)
    result["toolchains"] = across_toolchains(counted)
    notes += [f"{row['probe']} {row['target']} × {row['hypothesis']} (version "
              f"{row['probe_version']}): changes with the "
              "compiler (" + ", ".join(f"{v} under {t}" for t, v in row["verdicts"].items())
              + ")" for row in result["toolchains"] if not row["same"]]
    for stray in (p for p in files if p.name.endswith(VERDICT) and rel(p) not in accounted):
        problems.append(at(rel(stray), Finding(Rule.STRAY_VERDICT)))
    return result


def _too_large(path: Path, notes: list[str]) -> bool:
    """Whether a retired dataset declares more than a dataset's values may be read at
    (the version-1 lane-id files: up to 2.96 GB), so that `--retired` holds it to its pin
    only, as a plain verify does, and says so."""
    try:
        size = dataset.declared_bytes(path)
    except LabError:
        return False  # its full check says why
    if size <= dataset.MAX_DATASET_BYTES:
        return False
    notes.append(f"{rel(path)}: retired, and declaring {size:,} bytes, more than a "
                 f"dataset's values are read at ({dataset.MAX_DATASET_BYTES:,}): held to its "
                 "pin only")
    return True


def _retirements(pins: list[dict[str, Any]], problems: list[Problem]
                 ) -> list[dict[str, Any]]:
    """The retirements that hold (probelab.retirement); each one that does not is a
    problem, and its dataset is checked in full."""
    try:
        entries = retirement.read()
    except IntegrityError as exc:
        problems.append(at("", Finding(Rule.RETIREMENTS_BROKEN, detail=f"{exc}")))
        return []
    faults = retirement.problems(entries, pins)
    problems += [at(f.subject, f) for f in faults]
    faulty = {f.subject for f in faults}
    return [e for e in entries if e["path"] not in faulty]


def _resting(path: Path, entry: dict[str, Any], result: dict[str, Any]) -> set[str]:
    """A retired dataset (its bytes are its pin's: `retirement.problems`): its recorded
    verdicts, which do not count, listed (and so accounted for)."""
    recorded = sorted(path.parent.glob(f"{path.stem}.*{VERDICT}"))
    verdicts = {}
    for file in recorded:
        hypothesis = file.name[len(path.stem) + 1:-len(VERDICT)]
        verdicts[hypothesis] = _recorded_verdict(file)
    result["retired"].append({"dataset": rel(path), "reason": entry["reason"],
                              "superseded_by": entry["superseded_by"],
                              "recorded": verdicts})
    return {rel(file) for file in recorded}


def _recorded_verdict(file: Path) -> str:
    """The verdict a recorded verdict file states, read bounded ("unreadable" otherwise)."""
    try:
        doc = bounded.loads(bounded.read_regular(file, bounded.MAX_VERDICT_BYTES))
        return str(doc["verdict"]) if isinstance(doc, dict) else "unreadable"
    except (ValueError, KeyError):  # Unreadable is a ValueError
        return "unreadable"


def _successors_verdicts(result: dict[str, Any]) -> None:
    """Beside each verdict recorded on a retired dataset, what its successors give now: a
    difference is a note (the new version's data say otherwise), never hidden."""
    checked = {(row["dataset"], row["hypothesis"]): row["verdict"] for row in result["checks"]}
    for row in result["retired"]:
        row["successors"] = {h: {new: checked.get((new, h)) for new in row["superseded_by"]}
                             for h in row["recorded"]}
        for h, was in row["recorded"].items():
            for new, now in row["successors"][h].items():
                if now is None or not str(now).startswith(str(was)):
                    result["notes"].append(
                        f"{row['dataset']} (retired) × {h}: recorded {was}; its successor "
                        f"{new} gives {now or 'no verdict'}")


_SHARED: dict[str, Any] = {}  # what forked workers read: the record and pins, as read


def _local(jobs: int) -> Runner:
    """Units run here: one after another, or in `jobs` forked processes (0: one per core),
    each inheriting the record as read (fork: no copy until written)."""
    def run(units: list[Unit], record: Record, pins: list[dict[str, Any]] | None,
            write: bool, step: Callable[[str], None]) -> list[dict[str, Any]]:
        workers = min(jobs or os.cpu_count() or 1, len(units))
        if workers <= 1:
            out = []
            for i, unit in enumerate(units):
                out.append(run_unit(unit, record, pins, write))
                step(_progress(i + 1, units, unit))
            return out
        _SHARED.update(record=record, pins=pins, write=write)
        context = multiprocessing.get_context("fork")
        try:
            with ProcessPoolExecutor(workers, mp_context=context) as pool:
                futures = {pool.submit(_shared_unit, unit): unit for unit in units}
                results = {}
                for i, future in enumerate(as_completed(futures)):
                    results[futures[future]] = future.result()
                    step(_progress(i + 1, units, futures[future]))
        finally:
            _SHARED.clear()
        return [results[unit] for unit in units]
    return run


def _shared_unit(unit: Unit) -> dict[str, Any]:
    return run_unit(unit, _SHARED["record"], _SHARED["pins"], _SHARED["write"])


def _progress(done: int, units: list[Unit], unit: Unit) -> str:
    return (f"verify: {done}/{len(units)} probes ({unit.probe}: {len(unit.datasets)} "
            f"datasets, {len(unit.entries)} sealed)")


def _uncommitted_pins() -> list[Problem]:
    """Pins in the committed manifest whose datasets are not committed with them."""
    try:
        committed = set(gitinfo.git("ls-tree", "-r", "--name-only", "HEAD", "--",
                                    "data").splitlines())
        pinned = written.pins_in(gitinfo.git("show", f"HEAD:{rel(manifest.manifest_path())}"))
    except (RuntimeError, OSError, ValueError, KeyError, TypeError):
        return []  # no history, or no committed manifest yet (a broken one is said elsewhere)
    return [at(path, Finding(Rule.PIN_UNCOMMITTED)) for path, _, _ in sorted(pinned)
            if path not in committed]


def rel(path: Path) -> str:
    return path.relative_to(lab_root()).as_posix()


def _flips(counted: dict[tuple, list[tuple]], result: dict[str, Any]) -> None:
    """A sealed verdict that flips between two measurements of one probe version and target
    whose measuring code differs is a problem: the decode was changed after data were seen
    (the manifest keeps the first dataset in view), and a new decode that changes a verdict
    needs a new probe version, or a new hypothesis. With the same code, the device disagreed
    with itself: a note."""
    for (probe, target, hypothesis, toolchain), runs in sorted(counted.items(),
                                                               key=lambda kv: str(kv[0])):
        for (a, verdict_a, head_a, version_a, prov_a), (b, verdict_b, head_b, version_b,
                                                         prov_b) in itertools.combinations(runs, 2):
            if verdict_a == verdict_b or version_a != version_b:
                continue
            flip = (f"{verdict_a} on {a} but {verdict_b} on {b} ({probe} version {version_a}, "
                    f"{target}{f', {toolchain}' if toolchain else ''})")
            changed = codetree.changed_between(head_a, head_b, tuple(sorted(
                set(measuring_code(prov_a, head_a)) | set(measuring_code(prov_b, head_b))))
            ) if head_a and head_b else []
            if changed:
                result["problems"].append(at(hypothesis, Finding(
                    Rule.VERDICT_FLIPPED, flip, files=tuple(changed))))
            else:
                result["notes"].append(f"{hypothesis}: {flip}, with the same measuring code: "
                                       "the device (or its driver) disagrees with itself")


def across_toolchains(counted: dict[tuple, list[tuple]]) -> list[dict[str, Any]]:
    """Each sealed hypothesis of a static probe checked under more than one toolchain for
    one target and one probe version: its verdict on each toolchain's newest dataset of that
    version, and whether they agree (a lowering that changed with the compiler). Versions
    are never mixed: a decode that changed is not a compiler that did."""
    grouped: dict[tuple, dict[str, tuple[str, str]]] = {}
    for (probe, target, hypothesis, toolchain), runs in counted.items():
        if toolchain is None:
            continue
        for _, verdict, _, version, prov in runs:
            slot = grouped.setdefault((probe, target, hypothesis, str(version)), {})
            utc = str(prov.get("utc"))
            if toolchain not in slot or utc > slot[toolchain][0]:
                slot[toolchain] = (utc, verdict)
    return [{"probe": probe, "target": target, "hypothesis": hypothesis,
             "probe_version": version,
             "verdicts": {t: v for t, (_, v) in sorted(slot.items())},
             "same": len({v for _, v in slot.values()}) == 1}
            for (probe, target, hypothesis, version), slot in sorted(grouped.items())
            if len(slot) > 1]
