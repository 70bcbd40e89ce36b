"""One fragment vocabulary (probelab.kits.fragment, probelab.vocabulary): the kits' one
(thread, value) slot order, and the recorded translation from the archive's names (`a_reg`,
`a_regs`, `a_elem`) to the vocabulary's (`a_value`, `a_values`): a renamed grid hashes as
before, a sealed expression that names the old coordinates evaluates to the same tables on
it, an archive dataset reads in the vocabulary without a byte of it changing, and a record
that does not hold is never undone. Tests of the design, never evidence.
"""

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest
from archive import needs_archive

from probelab import dataset, vocabulary
from probelab.hypothesis import evaluate_claim, load_hypothesis, parse_hypothesis, table_sha256
from probelab.kits import fragment
from probelab.kits.fragment import THREAD_MAJOR, VALUE_MAJOR, Fragment
from probelab.kits.lane_id import engine
from probelab.kits.lane_id.engine import Shape

ROOT = Path(__file__).resolve().parents[1]
F64_MMA = (Shape("m8n8k4", 8, 8, 4, 32, 1, 1, 2), Shape("m16n8k8", 16, 8, 8, 32, 4, 2, 4))
OLD_NAMES = """schema = 1
id = "old-names"
probe = "dmma-f64"
claim = "PTX's f64 fragments, naming the archive's coordinates (a_reg, a_regs, ...)."
coordinates = "raw"
[let]
a_m = "(a_lane >> 2) + 8 * (a_reg & 1) if a_reg < a_regs else -1"
b_k = "(b_lane % 4) + 4 * b_reg if b_reg < b_regs else -2"
d_m = "(d_lane >> 2) + 8 * (d_reg >> 1) if d_reg < d_regs else -3"
[predict]
same_row = "a_m == d_m"
c_src = "d_lane + lanes * d_reg if d_reg < d_regs else 4294967294"
same_k = "a_m + b_k"
"""


def _in_vocabulary(observables: dict) -> dict:
    return {o: tuple(vocabulary.FRAGMENT_V1.get(d, d) for d in dims)
            for o, dims in observables.items()}


def _tables(h, grid, observables) -> str:
    return table_sha256(evaluate_claim(h, grid, observables)[0])


@pytest.mark.parametrize("order", [VALUE_MAJOR, THREAD_MAJOR])
def test_a_fragment_numbers_its_slots_in_one_order(order: str) -> None:
    f = Fragment("a", 32, 6, order)
    thread, value = np.meshgrid(np.arange(32), np.arange(6), indexing="ij")
    slots = f.slot(thread, value)
    want = value * 32 + thread if order == VALUE_MAJOR else thread * 6 + value
    assert (slots == want).all() and sorted(slots.ravel()) == list(range(f.slots))
    assert all((x == y).all() for x, y in zip(f.thread_value(slots), (thread, value),
                                              strict=True))
    held = f.per_thread(np.arange(2 * f.slots).reshape(2, f.slots))  # (W, threads, values)
    assert (held[1] == f.slots + slots).all()
    assert (f.flat(held) == np.arange(2 * f.slots).reshape(2, f.slots)).all()
    assert (f.lane_dim, f.value_dim, f.count) == ("a_lane", "a_value", "a_values")


def test_the_kits_number_slots_through_the_fragment() -> None:
    """The lane-id kit's order is the one order (value-major); the sparse kit's designs keep
    their own (thread-major), in which their stimulus is drawn, and their grids say so."""
    from probelab.kits import sparse  # noqa: F401 (the kit's package)
    from probelab.probe import get_probe

    size = engine.Sizes.widest(F64_MMA)
    assert size.fragment("c") == Fragment("d", 32, 4) and size.slots("a") == 32 * 4
    values = np.arange(3 * size.slots("a")).reshape(3, -1)
    held = engine.to_lane_major(values, 32)
    assert held[0, 5, 2] == 2 * 32 + 5 and (engine.from_lane_major(held) == values).all()
    grid = engine.stimulus(F64_MMA, trials=2, seed=1)
    assert grid["a_value"].attrs["slot"] == "slot = value * 32 + lane (value-major: the " \
                                            "lane fastest)"
    design = get_probe("mma-sp-f16").design
    b = design.fragment("b")
    assert b.order == THREAD_MAJOR and b.slot(3, 1) == 3 * design.b_elems + 1
    assert "thread-major" in get_probe("mma-sp-f16").stimulus()["a_value"].attrs["slot"]


def test_a_renamed_grid_hashes_and_evaluates_as_the_archive_named_it(tmp_path: Path) -> None:
    new = engine.stimulus(F64_MMA, trials=2, seed=1)  # made in the vocabulary
    grid = vocabulary.archive_names(new)  # as the archive's grids name it
    assert set(grid.dims) >= {"a_reg", "b_reg", "d_reg"} and vocabulary.RECORD not in grid
    assert vocabulary.renamed(grid).identical(new)
    assert {"a_value", "b_value", "d_value"} <= set(new.dims)
    assert not {"a_reg", "b_reg", "d_reg"} & set(new.dims)
    assert new["a_reg"].dims == ("a_value",) and (new["a_reg"] == new["a_value"]).all()
    assert new["a_regs"].dims == ("kernel",) and (new["a_values"].values == [1, 4]).all()
    assert new["gemm_a"].dims == ("trial", "a_value", "a_lane")
    assert vocabulary.recorded(new) == json.loads(str(new[vocabulary.RECORD].values))
    assert vocabulary.recorded(grid) is None and vocabulary.renamed(new) is new
    assert dataset.grid_sha256(new) == dataset.grid_sha256(grid)
    assert dataset.grid_sha256(vocabulary.archive_names(new)) == dataset.grid_sha256(grid)
    # a sealed file names the archive's coordinates: on the renamed grid they bind as aliases
    path = tmp_path / "old-names.toml"
    path.write_text(OLD_NAMES)
    h = parse_hypothesis(path, OLD_NAMES.encode())
    observables = {o: engine.OBSERVABLES[o] for o in ("same_row", "c_src", "same_k")}
    assert _in_vocabulary(observables) == observables  # the kit declares them so
    archived = {o: vocabulary.named_as(d, grid.dims) for o, d in observables.items()}
    assert archived["c_src"] == ("kernel", "d_lane", "d_reg")
    old = _tables(h, grid, archived)
    assert _tables(h, new, observables) == old
    # and the vocabulary's own names read the same values
    renamed_file = OLD_NAMES.replace("_regs", "_values").replace("_reg", "_value")
    h2 = parse_hypothesis(path, renamed_file.encode())
    assert _tables(h2, new, observables) == old


def test_a_record_that_does_not_hold_is_not_undone() -> None:
    """An alias whose values differ from its coordinate, a record that is not a flat JSON
    object of names, a name the grid lacks: the grid is hashed as stored, which is not the
    archive's grid (no seal's grid matches it)."""
    new = engine.stimulus(F64_MMA, trials=2, seed=1)
    grid = vocabulary.archive_names(new)
    before = dataset.grid_sha256(grid)
    bent = new.assign_coords(a_reg=("a_value", new["a_value"].values[::-1].copy()))
    assert vocabulary.recorded(bent) is None and dataset.grid_sha256(bent) != before
    record = json.loads(str(new[vocabulary.RECORD].values))
    for text in ("not json", "[1]", json.dumps({"a_reg": ["a_value"]}),
                 json.dumps(record | {"x_reg": "x_value"}),
                 json.dumps(record | {"lanes": "a_value"}), "{" * 3000 + "}" * 3000):
        odd = new.assign_coords({vocabulary.RECORD: ((), text)})
        assert vocabulary.recorded(odd) is None, text[:40]
        assert dataset.grid_sha256(odd) != before
    with pytest.raises(ValueError, match="both"):
        vocabulary.renamed(new.drop_vars(vocabulary.RECORD))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@needs_archive
@pytest.mark.parametrize("relative, sealed", [
    ("mma-f16-f32/sm_90/20261201T143403Z.nc", "mma-f16-f32/ptx-fragments.toml"),
    ("mma-sp-f16/sm_90/20261130T051921Z.nc", "mma-sp-f16/ptx-a-rows.toml")])
def test_an_archive_dataset_reads_through_the_recorded_translation(relative: str,
                                                                   sealed: str) -> None:
    """A committed dataset (archive names, no record of its own) reads in the vocabulary
    through FRAGMENT_V1: dims renamed, its values untouched, the old names bound as aliases,
    its grid hash the one it records, and a sealed file evaluates to its ledger's table on
    it. The file is only read."""
    path = ROOT / "data" / relative
    pinned = _sha(path)
    ds = dataset.load(path)
    prov = dataset.provenance(ds)
    read = vocabulary.translated(ds)
    assert vocabulary.recorded(read) == {old: new for old, new in vocabulary.FRAGMENT_V1.items()
                                         if old in ds.variables or old in ds.dims}
    assert "a_value" in read.dims and "a_reg" not in read.dims and "a_elem" not in read.dims
    assert dataset.grid_sha256(read) == dataset.grid_sha256(ds) == prov["grid_sha256"]
    for name, var in ds.data_vars.items():
        assert (read[name].values == var.values).all()
        assert read[name].dims == tuple(vocabulary.FRAGMENT_V1.get(d, d) for d in var.dims)
    entry = next(json.loads(line) for line in
                 (ROOT / "preregistrations/LEDGER.jsonl").read_text().splitlines()
                 if json.loads(line)["path"] == f"preregistrations/{sealed}")
    h = load_hypothesis(ROOT / "preregistrations" / sealed)
    dims = {o: ds[o].dims for o in h.predict}  # as the dataset holds them
    assert entry["grid_sha256"] == prov["grid_sha256"]
    assert _tables(h, ds, dims) == entry["table_sha256"]
    assert _tables(h, read, _in_vocabulary(dims)) == entry["table_sha256"]
    assert _sha(path) == pinned


def test_the_kits_read_the_core_translation() -> None:
    assert fragment.ALIASES is vocabulary.FRAGMENT_V1
    assert set(vocabulary.FRAGMENT_V1.values()) == {
        f"{op}_{what}" for op in "abd" for what in ("value", "values")}


@pytest.mark.parametrize("probe_id", ["mma-f16-f32", "dmma-f64", "wgmma-f16-ss", "mfma-f16",
                                      "mma-sp-f16", "swmmac-iu4"])
def test_a_new_grid_names_its_fragment_in_the_vocabulary(probe_id: str) -> None:
    """A lane-id or sparse probe's stimulus says `<op>_value` (and `<op>_values`), never the
    archive's `<op>_reg`/`<op>_elem` as a dim; the old names are alias coordinates, the
    translation is recorded, the grid hashes as the archive named it, and every observable
    is declared over the vocabulary's dims."""
    from probelab.probe import get_probe

    probe = get_probe(probe_id)
    grid = probe.stimulus()
    old = {"a_reg", "b_reg", "d_reg", "a_elem", "b_elem"}
    assert {"a_value", "b_value"} <= set(grid.dims) and not old & set(grid.dims)
    table = vocabulary.recorded(grid)
    assert table and set(table.items()) <= set(vocabulary.FRAGMENT_V1.items())
    assert vocabulary.aliases(grid) == {o for o, n in table.items() if n in grid.coords}
    for alias in vocabulary.aliases(grid):
        assert grid[alias].identical(grid[table[alias]].rename(alias))
    assert dataset.grid_sha256(grid) == dataset.grid_sha256(vocabulary.archive_names(grid))
    assert not old & {d for dims in probe.observables.values() for d in dims}
    assert {d for dims in probe.observables.values() for d in dims} <= set(grid.dims)


def test_a_probe_declaration_is_read_in_an_archive_datasets_names() -> None:
    """check.observed_dims on a dataset that records no observables (the archive's oldest)
    takes today's probe's dims in the dataset's own names: a_value as a_reg, a_value as
    a_elem, as the dataset has them."""
    assert vocabulary.named_as(("kernel", "a_lane", "a_value", "d_value"),
                               {"kernel", "a_lane", "a_reg", "d_reg"}) == \
        ("kernel", "a_lane", "a_reg", "d_reg")
    assert vocabulary.named_as(("word", "a_lane", "a_value"), {"word", "a_lane", "a_elem"}) == \
        ("word", "a_lane", "a_elem")
    dims = ("kernel", "a_lane", "a_value")
    assert vocabulary.named_as(dims, {"kernel", "a_lane", "a_value", "a_reg"}) == dims
    assert vocabulary.named_as(dims, {"kernel"}) == dims  # nothing to read it as: as it is


def test_an_archive_grid_binds_the_vocabulary_for_evaluation_only() -> None:
    """A check evaluates over an archive grid with `a_value` bound beside `a_reg` (the same
    values, over the stored dim): a file in either names evaluates alike; the grid's dims are
    as stored, and a grid in the vocabulary is taken as it is."""
    new = engine.stimulus(F64_MMA, trials=2, seed=1)
    grid = vocabulary.archive_names(new)
    both = vocabulary.bindable(grid)
    assert vocabulary.bindable(new) is new and set(both.dims) == set(grid.dims)
    assert both["a_value"].dims == ("a_reg",) and both["a_values"].dims == ("kernel",)
    assert (both["d_value"].values == grid["d_reg"].values).all()
    h = parse_hypothesis(Path("old-names.toml"), OLD_NAMES.encode())
    ours = OLD_NAMES.replace("_regs", "_values").replace("_reg", "_value")
    h2 = parse_hypothesis(Path("old-names.toml"), ours.encode())
    observables = {o: vocabulary.named_as(engine.OBSERVABLES[o], grid.dims)
                   for o in ("same_row", "c_src", "same_k")}
    assert _tables(h2, both, observables) == _tables(h, grid, observables) == \
        _tables(h, both, observables)


def _scores(h, ds, kernels, prov) -> tuple[str, dict]:
    from probelab.check import observed_dims
    from probelab.scoring import score_claim

    dims = observed_dims({str(n): v.dims for n, v in ds.data_vars.items()}, prov, h.probe)
    digest, (doc,) = score_claim(h, ds, dims, [(ds, kernels)])
    assert "misfit" not in doc, doc
    return digest, {k: {s: (v["matches"], v["cells"]) for s, v in per.items()}
                    for k, per in doc["kernels"].items()}


@needs_archive
@pytest.mark.parametrize("relative, sealed", [
    ("mma-f16-f32/sm_90/20261201T143403Z.nc", "mma-f16-f32/ptx-fragments.toml"),
    ("wgmma-f16-ss/sm_90/20261201T172917Z.nc", "wgmma-f16-ss/ptx-layouts.toml"),
    ("mma-sp-f16/sm_90/20261130T051921Z.nc", "mma-sp-f16/ptx-a-rows.toml")])
def test_an_archive_dataset_and_a_new_named_one_read_alike(relative: str, sealed: str,
                                                           tmp_path: Path) -> None:
    """The same measurement stored under the archive's names (a committed dataset) and under
    the vocabulary's (as a sweep writes it today: renamed, its translation recorded) gives
    the same lane maps through the readers and the same table hash and scores through
    check's scoring, with the observables' dims as recorded or, with no record, as today's
    probe declares them. The committed file is only read."""
    from probelab import kitmaps, layout_export

    path = ROOT / "data" / relative
    pinned = _sha(path)
    stored = dataset.load(path)
    new = vocabulary.renamed(stored)
    assert "a_value" in new.dims and vocabulary.translated(new) is new
    maps = kitmaps.maps_of(new, None, None)
    read = layout_export.source(None, path, None, None, None).maps  # opened, translated
    assert [(m.kernel, m.operand) for m in maps] == [(m.kernel, m.operand) for m in read]
    for ours, theirs in zip(maps, read, strict=True):
        assert np.array_equal(ours.rows, theirs.rows) and np.array_equal(ours.cols, theirs.cols)
    h = load_hypothesis(ROOT / "preregistrations" / sealed)
    prov = dataset.provenance(stored)
    kernels = [str(k) for k in stored.kernel.values if h.kernels is None or
               str(k) in h.kernels]
    unrecorded = {k: v for k, v in prov.items() if k != "observables"}
    want = _scores(h, stored, kernels, prov)
    assert _scores(h, stored, kernels, unrecorded) == want  # the probe's dims, as a_reg
    assert _scores(h, new, kernels, unrecorded) == want  # the probe's dims, as they are
    entry = next(json.loads(line) for line in
                 (ROOT / "preregistrations/LEDGER.jsonl").read_text().splitlines()
                 if json.loads(line)["path"] == f"preregistrations/{sealed}")
    if entry["grid_sha256"] == prov["grid_sha256"]:  # measured on the grid it was sealed on
        assert want[0] == entry["table_sha256"]
    # the sealed file written in the vocabulary's names scores alike through check, on the
    # archive dataset as stored (its cells named as the dataset names them)
    from probelab import check
    from probelab.hypothesis import Evaluations
    from probelab.notary import integrity

    text = (ROOT / "preregistrations" / sealed).read_text()
    ours = re.sub(r"\b([ab])_elem\b", r"\1_value", re.sub(
        r"\b([abd])_reg(s?)\b", lambda m: f"{m[1]}_value{m[2]}", text))
    assert ours != text and not re.search(r"\b[abd]_reg|\b[ab]_elem\b", ours)
    renamed_file = tmp_path / Path(sealed).name
    renamed_file.write_text(ours)
    judged = integrity.judge(path, history=False)
    claims = Evaluations()
    (theirs,) = check.prescore(claims, h, [(judged, kernels)])
    (mine,) = check.prescore(claims, parse_hypothesis(renamed_file, ours.encode()),
                             [(judged, kernels)])
    assert json.loads(mine) == json.loads(theirs)
    assert _sha(path) == pinned
