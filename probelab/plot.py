"""`probelab plot`: draw a dataset's figures with its probe's plot functions."""

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import xarray as xr

from probelab import dataset, vocabulary
from probelab.errors import IntegrityError, UsageError
from probelab.probe import Probe, get_probe

if TYPE_CHECKING:
    from probelab.notary.integrity import Standing
    from probelab.notary.verdicts import Judgement


def plot_kinds(ds: xr.Dataset, probe: Probe) -> dict[str, Callable[..., dict]]:
    """The plot kinds a dataset offers, by name: those it records its probe offered when it
    was made (all its probe's, for a dataset older than that record), and, for a dataset of
    the probe's current version, any the probe has offered since (a version names what a
    dataset holds, so a plot added within it reads what it needs; an older version's dataset
    is drawn only by the kinds it recorded), drawn by the probe's functions (a kit's probe
    class brings its family's figures, e.g. the lane-id kit's lanemap)."""
    prov = dataset.provenance(ds)
    recorded = prov.get("plots")
    current = str(prov.get("probe_version")) == str(probe.version)
    offered = set(recorded) if isinstance(recorded, list) and not current else set(probe.plots)
    return {kind: draw for kind, draw in probe.plots.items() if kind in offered}


def draw(dataset_path: Path, kinds: list[str] | None, prereg: Path | None, scoring: str,
         out_dir: Path | None, tampered: bool = False) -> list[Path]:
    """Draw the dataset's figures. The dataset is read as `check` reads it: one that is not
    what its sweep saved into the archive is refused (IntegrityError) unless `tampered`,
    and then every figure is marked TAMPERED; a measurement outside the archive is drawn,
    every figure marked UNPINNED."""
    from probelab.check import assess
    from probelab.notary.integrity import read_dataset, standing

    read = read_dataset(dataset_path)
    probe = get_probe(read.prov["probe"])
    # judging the dataset (and checking the claim) is mostly git's time (its processes, the
    # history), so it runs while the figures' code is imported and the prediction made
    with ThreadPoolExecutor(2, thread_name_prefix="probelab-check") as checking:
        judged = checking.submit(standing, read)
        checked = None if prereg is None else (prereg, checking.submit(assess, prereg,
                                                                       dataset_path))
        # drawn in the fragment vocabulary: an archive dataset through its recorded
        # translation (probelab.vocabulary), as today's probe declares its observables
        return _draw(vocabulary.translated(read.open().load()), probe, dataset_path, kinds,
                     scoring, out_dir, checked, judged, tampered)


def _draw(ds: xr.Dataset, probe: Probe, dataset_path: Path, kinds: list[str] | None,
          scoring: str, out_dir: Path | None,
          prereg_checked: "tuple[Path, Future[Judgement]] | None",
          judged: "Future[Standing]", tampered: bool) -> list[Path]:
    from probelab.drawing import save_output, saving_behind

    plots = plot_kinds(ds, probe)
    unknown = set(kinds or ()) - set(plots)
    if unknown:
        raise UsageError(f"{probe.id} has no plot {sorted(unknown)} (it has {sorted(plots)})")
    tables, tag, about = None, "", None
    if prereg_checked is not None:
        prereg, checked = prereg_checked
        from probelab.check import literally_confirmed, not_applicable, verdict_words
        from probelab.hypothesis import load_hypothesis, predict
        from probelab.notary.rules import Outcome

        h = load_hypothesis(prereg)
        if h.probe != probe.id:
            raise UsageError(f"{prereg} is about {h.probe}, the dataset is {probe.id}")
        if why := not_applicable(h, ds):
            raise UsageError(f"{h.id} does not apply to {dataset_path}: {why}")
        tables = predict(h, ds, probe.observables)
        if scoring not in tables:
            raise UsageError(f"{h.id} has no scoring {scoring!r} (it has {sorted(tables)})")
        tag = f".{h.id}.{scoring}"
        verdict = checked.result()
        doc = verdict.doc
        if verdict.outcome == Outcome.TAMPERED:  # nothing of an edited seal is drawn as if held
            raise IntegrityError(f"{prereg} is TAMPERED ({'; '.join(doc['reasons'])}): no "
                                 "figure is drawn of it")
        about = {"id": h.id, "scoring": scoring, "verdict": verdict_words(doc),
                 "claimed": doc["hypothesis"]["kernels"], "hypothesis": h,
                 # a figure numbered as the file's table needs its literal scoring to hold
                 "literal_confirmed": literally_confirmed(doc)}
    chosen = kinds or [k for k in plots if tables is not None or not k.startswith("mismatch")]
    if not chosen:
        offered = f"it has {', '.join(sorted(plots))}, which need --prereg" if plots else \
            "it has none"
        raise UsageError(f"{probe.id} offers no plot for {dataset_path} ({offered})")
    stands = judged.result()
    if stands.problem and not tampered:
        raise IntegrityError(f"{dataset_path} is TAMPERED ({stands.problem}): no figure is "
                             "drawn of it (--tampered draws it, every figure marked so)")
    mark = stands.words()
    folder = out_dir or dataset_path.parent / "figures"
    written: list[Path] = []
    with saving_behind():  # each figure encoded and written while the next is drawn
        for kind in chosen:
            if kind.startswith("mismatch") and tables is None:
                raise UsageError(f"{kind} compares with a hypothesis: give --prereg FILE")
            suffix = tag if kind.startswith("mismatch") else ""  # only these depend on it
            extra = {"about": about} if about is not None else {}  # a lane map's numbering
            for name, figure in plots[kind](ds, tables=tables, scoring=scoring,
                                            **extra).items():
                if mark:  # on the figure itself: a file shown alone still says it
                    figure.text(0.5, 0.999, mark, ha="center", va="top", fontsize=9,
                                fontweight="bold", color="#b00000")
                stem = folder / f"{dataset_path.stem}.{kind}{suffix}.{name}"
                written += save_output(figure, stem)
    return written
