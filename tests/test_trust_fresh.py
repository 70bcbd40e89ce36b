"""Trust under attack: a law read from data, sealed, then "confirmed" on the stimulus it was
read from (issue 38 item 3, docs/trust.md row 40). On a deterministic unit a replicate of
the same cases repeats them bit for bit, so such a confirmation tests nothing. A file that
names the datasets it was read from (`fitted_from`) is CONFIRMED only on a dataset whose
stimulus seed differs from theirs and whose claimed cells lie, at least 32 of them, on cases
none of them holds; otherwise its verdict is POST-HOC under Rule.SEEN_STIMULUS, never
recorded. A refutation on seen data still counts."""

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from toylab import TOY_CU, ToyLab

from probelab import dataset, prereg
from probelab.check import assess
from probelab.errors import UsageError
from probelab.notary import freshness
from probelab.notary.rules import Outcome, Rule
from probelab.notary.verdict_files import verdict_path
from probelab.notary.verdicts import Judgement
from probelab.probe import catalog
from probelab.sweep import run_sweep
from probelab.verify import verify_archive

# numeric cases (A's, B's and C's bits, in f32): 8 fixed ones, then DRAWN drawn from
# DRAW_FROM; the grid records SEED (an honest probe draws from the seed it records: the
# attack parts them)
FRESH_PROBE = '''"""fresh: a test-only probe of numeric cases; value = c + 1 (simulated)."""

from pathlib import Path
from types import MappingProxyType

import numpy as np
import xarray as xr

from probelab.probe import Evidence, Kernel, Launch, stack_kernels

HERE = Path(__file__).parent
SEED, DRAW_FROM, DRAWN = {seed}, {draw_from}, 40


class Fresh:
    id = "fresh"
    version = "{seed}"
    summary = "test-only probe of numeric cases: value = c + 1"
    targets = ("sm_*",)
    observables = MappingProxyType({{"value": ("case",)}})
    plots = MappingProxyType({{}})

    def kernels(self, vendor):
        if vendor != "nvidia":
            return []
        return [Kernel("add", "probe_add", HERE / "toy.cu", "nvidia", Evidence(r"IADD3"))]

    def stimulus(self):
        drawn = np.random.default_rng(DRAW_FROM).integers(1 << 20, 1 << 30, DRAWN)
        c = np.concatenate([np.arange(8), drawn]).astype(np.uint32)
        zeros = np.zeros((len(c), 2), np.uint32)
        return xr.Dataset(coords={{
            "case": ("case", np.arange(len(c), dtype=np.uint32)),
            "a_bits": (("case", "k"), zeros), "b_bits": (("case", "k"), zeros),
            "c_bits": ("case", c),
            "drawn": ("case", (np.arange(len(c)) >= 8).astype(np.uint32)),
            {formats}
            "stimulus_seed": {seed_coord}}})

    def launch(self, stimulus):
        n = stimulus.sizes["case"]
        return Launch(inputs={{"c": stimulus["c_bits"].values}}, outputs={{"out": n}},
                      threads=n)

    def assemble(self, stimulus, outputs):
        ds, values = stack_kernels(stimulus, outputs, "out", ("case",))
        ds["value"] = (("kernel", "case"), values)
        return ds

    def simulate(self, kernel, inputs):
        return {{"out": (inputs["c"].astype(np.uint64) + 1).astype(np.uint32)}}


PROBE = Fresh()
'''
MODULE = "probelab_probe_fresh_probe"


@pytest.fixture(autouse=True)
def _forget_the_probe() -> Iterator[None]:
    yield
    sys.modules.pop(MODULE, None)


F32 = '"a_format": ((), "f32"), "b_format": ((), "f32"), "d_format": ((), "f32"),'


def _probe(lab: ToyLab, seed: int, draw_from: int, formats: str = F32,
           seed_coord: str = "((), np.uint32(SEED))") -> None:
    """The fresh probe, drawing from `draw_from` and recording `seed` (as `seed_coord`
    spells it), its grid's `formats` as given, committed."""
    folder = lab.root / "probes" / "fresh"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "probe.py").write_text(FRESH_PROBE.format(
        seed=seed, draw_from=draw_from, formats=formats, seed_coord=seed_coord))
    (folder / "toy.cu").write_text(TOY_CU)
    lab.git("add", "-A")
    lab.git("commit", "-qm", f"fresh probe, seed {seed}")
    sys.modules.pop(MODULE, None)  # load_sibling keeps a probe module by its folder's name
    catalog.cache_clear()


def _measured(lab: ToyLab) -> Path:
    lab._runs += 1
    sim = run_sweep("fresh", "sim", out_root=lab.root / "sim-data" / f"r{lab._runs}",
                    repeats=2).path
    data = lab.as_measured(sim)
    lab.git("add", "-A")
    lab.git("commit", "-qm", f"measured {data.name}")
    return data


def _law(lab: ToyLab, name: str, fitted_from: list[str] | None, where: str = "1",
         predict: str = "c_bits + 1", agrees: tuple[str, ...] = (), parent: str | None = None,
         extra: tuple[str, ...] = ()) -> Path:
    """A law of the fresh probe (`extra`: tables after [predict]); no fitted_from where
    None."""
    path = lab.root / "preregistrations" / "fresh" / f"{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["schema = 1", f'id = "{name}"', 'probe = "fresh"',
             'claim = "read from the first dataset"', 'coordinates = "raw"',
             f'where = "{where}"']
    if fitted_from is not None:
        lines.append(f"fitted_from = {json.dumps(fitted_from)}")
    if agrees:
        lines.append(f"agrees_with = {json.dumps(list(agrees))}")
    if parent:
        lines.append(f'parent = "{parent}"')
    path.write_text("\n".join([*lines, "", "[predict]", f'value = "{predict}"', *extra, ""]))
    return path


def _named(lab: ToyLab, *data: Path) -> list[str]:
    return [str(d.relative_to(lab.root)) for d in data]


def _seen(judged: Judgement, says: str) -> None:
    assert (judged.outcome, judged.rules) == (Outcome.POST_HOC, {Rule.SEEN_STIMULUS})
    assert says in judged.doc["reasons"][0], judged.doc["reasons"]


def test_a_law_confirmed_on_the_stimulus_it_was_read_from_is_not_counted(
        toylab: ToyLab) -> None:
    _probe(toylab, seed=1, draw_from=1)
    seen = _measured(toylab)
    named = [str(seen.relative_to(toylab.root))]
    law = _law(toylab, "law", named)
    scoped = _law(toylab, "law-on-fixed-cases", named, where="drawn == 0",
                  agrees=("law",))
    wrong = _law(toylab, "wrong-law", named, predict="c_bits + 2")
    for path in (law, scoped, wrong):
        prereg.seal(path)

    replicate = _measured(toylab)  # the same seed, the same cases: no test of the law
    judged = assess(law, replicate)
    assert (judged.outcome, judged.rules) == (Outcome.POST_HOC, {Rule.SEEN_STIMULUS})
    assert "stimulus seed (1)" in judged.doc["reasons"][0]
    assert assess(wrong, replicate).outcome == Outcome.REFUTED  # a refutation still counts

    _probe(toylab, seed=2, draw_from=1)  # a new seed that draws the same cases
    relabelled = _measured(toylab)
    judged = assess(law, relabelled)
    assert (judged.outcome, judged.rules) == (Outcome.POST_HOC, {Rule.SEEN_STIMULUS})
    assert judged.doc["fresh"] | {"fitted_from": None} == {
        "fitted_from": None, "stimulus_seed": "2", "floor": 32, "claimed_cells": 48,
        "new_cells": 0}

    _probe(toylab, seed=3, draw_from=3)  # new cases, 40 of them
    fresh = _measured(toylab)
    confirmed = assess(law, fresh)
    assert (confirmed.outcome, confirmed.findings) == (Outcome.CONFIRMED, ())
    assert confirmed.doc["fresh"]["new_cells"] == 40
    # ... but not where the claim does not look: its new cases are all drawn ones
    judged = assess(scoped, fresh)
    assert (judged.outcome, judged.rules) == (Outcome.POST_HOC, {Rule.SEEN_STIMULUS})
    assert "only 0 of the 8 cells it claims here" in judged.doc["reasons"][0]

    result = verify_archive(write=True)
    assert not result["problems"]
    outcomes = {(Path(c["dataset"]).name, c["hypothesis"]): c["outcome"]
                for c in result["checks"]}
    assert outcomes[(replicate.name, "law")] == outcomes[(fresh.name, "law-on-fixed-cases")] \
        == Outcome.POST_HOC.value
    assert outcomes[(fresh.name, "law")] == Outcome.CONFIRMED.value
    assert not verdict_path(replicate, "law").exists()  # never recorded as a result
    assert verdict_path(fresh, "law").exists()

    edited = dataset.load(seen)  # what the law was read from, changed: it vouches for nothing
    edited["value"].values[0, 0] += 1
    dataset.save(edited, seen, dataset.provenance(edited))
    judged = assess(law, fresh)
    assert (judged.outcome, judged.rules) == (Outcome.POST_HOC, {Rule.SEEN_STIMULUS})
    assert "is not what its sweep saved" in judged.doc["reasons"][0]


def test_a_law_may_name_only_archived_datasets_of_its_probe(toylab: ToyLab) -> None:
    """`prereg seal` refuses a name no pin of the probe holds (a made-up one, a file copied
    into the folder by hand) and a name that is no dataset path of the file's own probe."""
    _probe(toylab, seed=1, draw_from=1)
    data = _measured(toylab)
    stray = data.with_name("20200101T000000Z.nc")
    stray.write_bytes(data.read_bytes())
    for name in ("data/fresh/sm_90/19990101T000000Z.nc", str(stray.relative_to(toylab.root))):
        with pytest.raises(UsageError, match="is not an archived dataset of fresh"):
            prereg.seal(_law(toylab, "law", [name]))
    for names in ([], ["data/toy/sm_90/x.nc"], ["data/fresh/sm_90/../x.nc"], [named := str(
            data.relative_to(toylab.root)), named]):
        with pytest.raises(UsageError, match="'fitted_from' lists the datasets"):
            prereg.seal(_law(toylab, "law", names))
    assert not toylab.ledger.exists()


def test_a_translation_is_held_to_new_cases_where_it_scores(toylab: ToyLab) -> None:
    """A kernel confirmed under a translation is counted on the cells that translation
    scores: one whose scope moves onto the fixed (seen) cases confirms nothing new, though
    the literal scope lies on new ones."""
    _probe(toylab, seed=1, draw_from=1)
    named = _named(toylab, _measured(toylab))
    moved = _law(toylab, "moved", named, where="drawn == 1",  # right on the fixed cases only
                 predict="(c_bits + 1) * (c_bits < 8)",
                 extra=("", "[translations.flipped]", 'drawn = "1 - drawn"'))
    prereg.seal(moved)
    _probe(toylab, seed=3, draw_from=3)
    judged = assess(moved, _measured(toylab))
    assert judged.doc["kernels"]["add"]["via"] == "flipped"
    _seen(judged, "only 0 of the 8 cells it claims here (add)")


def test_a_named_dataset_vouches_only_as_measured_and_pinned(toylab: ToyLab) -> None:
    """A named dataset replaced by a simulated one (no finding of its own: a simulated file
    is judged nothing but simulated), or gone, vouches for no new cases: seen, committed or
    not."""
    _probe(toylab, seed=1, draw_from=1)
    seen = _measured(toylab)
    law = _law(toylab, "law", _named(toylab, seen))
    prereg.seal(law)
    replicate = _measured(toylab)
    _probe(toylab, seed=3, draw_from=3)  # other cases, simulated, in the named one's place
    other = run_sweep("fresh", "sim", out_root=toylab.root / "sim-data" / "other",
                      repeats=2).path
    _probe(toylab, seed=1, draw_from=1)
    seen.write_bytes(other.read_bytes())
    _seen(assess(law, replicate), "is not the measured dataset its pin holds")
    toylab.git("add", "-A")
    toylab.git("commit", "-qm", "the named dataset swapped")
    _seen(assess(law, replicate), "is not the measured dataset its pin holds")
    found = {r for problem in verify_archive(write=True)["problems"] for r in problem.rules}
    assert Rule.SIMULATED_IN_ARCHIVE in found  # and no verdict of the law is recorded
    assert not verdict_path(replicate, "law").exists()
    seen.unlink()
    _seen(assess(law, replicate), "cannot be read")


def test_no_verdict_is_written_while_a_held_dataset_is_rewritten_in_git(
        toylab: ToyLab) -> None:
    """A dataset the law was read from, edited after the seal, re-pinned under a rebuilt
    manifest and committed: `check` says TAMPERED, and `verify --write` (whose units judge no
    history: it judges the archive's once) fails on the rewrite and writes no verdict file
    (red-team: it recorded the law's CONFIRMED on a fresh dataset while it failed)."""
    from probelab import manifest

    _probe(toylab, seed=1, draw_from=1)
    seen = _measured(toylab)
    law = _law(toylab, "law", _named(toylab, seen))
    prereg.seal(law)
    _probe(toylab, seed=3, draw_from=3)
    fresh = _measured(toylab)
    assert assess(law, fresh).outcome == Outcome.CONFIRMED
    _probe(toylab, seed=1, draw_from=1)
    edited = dataset.load(seen)
    edited["value"].values[0, 0] += 1
    dataset.save(edited, seen, dataset.provenance(edited))
    manifest.manifest_path().unlink()
    for path in sorted((toylab.root / "data").rglob("*.nc")):
        toylab.pin(path)
    toylab.git("add", "-A")
    toylab.git("commit", "-qm", "the held dataset rewritten, its pin too")
    assert assess(law, fresh).outcome == Outcome.TAMPERED
    result = verify_archive(write=True)
    found = {r for problem in result["problems"] for r in problem.rules}
    assert {Rule.REWRITTEN, Rule.MANIFEST_REWRITTEN} <= found
    assert not verdict_path(fresh, "law").exists()
    assert any(note.startswith("no verdict file written") for note in result["notes"])


def test_a_restatement_of_a_fitted_law_names_what_it_was_read_from(toylab: ToyLab) -> None:
    """`prereg seal` refuses a file whose parent or agrees_with is a law read from data
    unless it names those datasets too: restated without them, the law would be CONFIRMED on
    the stimulus it was read from."""
    _probe(toylab, seed=1, draw_from=1)
    first, second = _measured(toylab), _measured(toylab)
    prereg.seal(_law(toylab, "law", _named(toylab, first)))
    for name, fitted, agrees, parent in (("bare", None, ("law",), "law"),
                                         ("agreeing", None, ("law",), None),
                                         ("amending", _named(toylab, second), (), "law")):
        with pytest.raises(UsageError, match=r"restates law, which was read from \['data/"):
            prereg.seal(_law(toylab, name, fitted, agrees=agrees, parent=parent))
    prereg.seal(_law(toylab, "law-2", _named(toylab, second, first), agrees=("law",),
                     parent="law"))


def test_every_dataset_measured_before_the_seal_is_held(toylab: ToyLab) -> None:
    """Naming some of the datasets a law could have been read from holds it to all of them:
    every pinned dataset of its probe not provably measured after its seal. Those measured
    after it are tests of the law, not what it was read from: a replicate of one confirms."""
    _probe(toylab, seed=1, draw_from=1)
    first = _measured(toylab)
    _probe(toylab, seed=3, draw_from=3)
    unnamed = _measured(toylab)  # measured before the seal, not named
    law = _law(toylab, "law", _named(toylab, first))
    prereg.seal(law)
    (held,) = _named(toylab, unnamed)
    _seen(assess(law, _measured(toylab)), f"its stimulus seed (3) is {held}'s too")
    _probe(toylab, seed=5, draw_from=5)
    for fresh in (_measured(toylab), _measured(toylab)):
        judged = assess(law, fresh)
        assert (judged.outcome, judged.doc["fresh"]["new_cells"]) == (Outcome.CONFIRMED, 40)


@pytest.mark.parametrize(("formats", "says"), [
    (F32.replace('"d_format": ((), "f32"),', ""), "its d_format is no format the lab knows"),
    (F32.replace('"d_format": ((), "f32")', '"d_format": ((), "f16")'),
     "its cases are not spelled as"),
], ids=["d_format dropped", "d_format changed"])
def test_cases_relabelled_by_their_formats_are_seen(toylab: ToyLab, formats: str,
                                                    says: str) -> None:
    """The seen cases under new format labels (one dropped, one changed), the launch the
    same: their keys cannot be compared bit for bit, so nothing is new."""
    _probe(toylab, seed=1, draw_from=1)
    law = _law(toylab, "law", _named(toylab, _measured(toylab)))
    prereg.seal(law)
    _probe(toylab, seed=2, draw_from=1, formats=formats)
    _seen(assess(law, _measured(toylab)), says)


@pytest.mark.parametrize("seed_coord", ["(('case',), np.full(len(c), SEED, np.uint32))",
                                        "((), np.float64(SEED) + 0.5)"],
                         ids=["one per case", "a float"])
def test_a_seed_that_is_no_single_integer_is_seen(toylab: ToyLab, seed_coord: str) -> None:
    _probe(toylab, seed=1, draw_from=1)
    law = _law(toylab, "law", _named(toylab, _measured(toylab)))
    prereg.seal(law)
    _probe(toylab, seed=3, draw_from=3, seed_coord=seed_coord)
    _seen(assess(law, _measured(toylab)), "its stimulus_seed is no single integer")


def test_the_freshness_floor_is_not_the_files_power_floor(toylab: ToyLab) -> None:
    """A file's [power] floor lowers the cells a pair with it must part on, never the new
    cells a fitted law is confirmed on: 32, fixed."""
    _probe(toylab, seed=1, draw_from=1)
    law = _law(toylab, "one-new-case", _named(toylab, _measured(toylab)), where="case < 9",
               extra=("", "[power]", "floor = 1", 'reason = "one new case is enough"'))
    prereg.seal(law)
    _probe(toylab, seed=3, draw_from=3)
    judged = assess(law, _measured(toylab))
    _seen(judged, "only 1 of the 9 cells it claims here (add)")
    assert judged.doc["fresh"]["floor"] == 32


def _grid(c: list[int], dtype: type = np.uint32, formats: str = "f32",
          a_dims: tuple[str, str] = ("case", "k")) -> xr.Dataset:
    a = np.array([[x, 2 * x] for x in c]).astype(dtype)
    return xr.Dataset(coords={
        "a_bits": (a_dims, a if a_dims == ("case", "k") else a.T),
        "b_bits": (("case", "k"), np.zeros((len(c), 2), dtype)),
        "c_bits": ("case", np.array(c).astype(dtype)),
        **{n: ((), formats) for n in ("a_format", "b_format", "d_format")}})


@pytest.mark.parametrize(("one", "other"), [
    (_grid([-1, 5], np.int32), _grid([0xFFFFFFFF, 5])),  # sign extension
    (_grid([5 | 1 << 32, 7], np.uint64), _grid([5, 7])),  # above the format's width
    (_grid([0x1FF], formats="e4m3"), _grid([0xFF], formats="e4m3")),
    (_grid([0xFFF], formats="tf32"), _grid([0], formats="tf32")),  # tf32's ignored bits
    (_grid([3, 4], a_dims=("k", "case")), _grid([3, 4])),  # stored transposed
])
def test_cases_are_keyed_as_launched(one: xr.Dataset, other: xr.Dataset) -> None:
    assert freshness.cases(one) == freshness.cases(other)


def test_cases_that_cannot_be_keyed_are_refused() -> None:
    assert freshness.cases(_grid([1 << 13], formats="tf32")) != \
        freshness.cases(_grid([0], formats="tf32"))
    for grid in (_grid([1.5], np.float64), _grid([1], formats="f128"),
                 _grid([1]).drop_vars("b_format"), _grid([1]).drop_vars("a_bits")):
        with pytest.raises(freshness.Unkeyed):
            freshness.cases(grid)
    assert freshness.seed(_grid([1])) == "none"
    assert freshness.seed(_grid([1]).assign_coords(stimulus_seed=((), 2.0))) is None
