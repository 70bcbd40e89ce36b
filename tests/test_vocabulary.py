"""One fragment vocabulary (probelab.kits.fragment, probelab.vocabulary): the kits' one
(thread, value) slot order, and the recorded translation from the archive's names (`a_reg`,
`a_regs`, `a_elem`) to the vocabulary's (`a_value`, `a_values`): a renamed grid hashes as
before, a sealed expression that names the old coordinates evaluates to the same tables on
it, an archive dataset reads in the vocabulary without a byte of it changing, and a record
that does not hold is never undone. Tests of the design, never evidence.
"""

import hashlib
import json
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
    assert grid["a_reg"].attrs["slot"] == "slot = value * 32 + lane (value-major: the lane " \
                                          "fastest)"
    design = get_probe("mma-sp-f16").design
    b = design.fragment("b")
    assert b.order == THREAD_MAJOR and b.slot(3, 1) == 3 * design.b_elems + 1
    assert "thread-major" in get_probe("mma-sp-f16").stimulus()["a_elem"].attrs["slot"]


def test_a_renamed_grid_hashes_and_evaluates_as_the_archive_named_it(tmp_path: Path) -> None:
    grid = engine.stimulus(F64_MMA, trials=2, seed=1)
    new = vocabulary.renamed(grid)
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
    old = _tables(h, grid, observables)
    assert _tables(h, new, _in_vocabulary(observables)) == old
    # and the vocabulary's own names read the same values
    renamed_file = OLD_NAMES.replace("_regs", "_values").replace("_reg", "_value")
    h2 = parse_hypothesis(path, renamed_file.encode())
    assert _tables(h2, new, _in_vocabulary(observables)) == old


def test_a_record_that_does_not_hold_is_not_undone() -> None:
    """An alias whose values differ from its coordinate, a record that is not a flat JSON
    object of names, a name the grid lacks: the grid is hashed as stored, which is not the
    archive's grid (no seal's grid matches it)."""
    grid = engine.stimulus(F64_MMA, trials=2, seed=1)
    new = vocabulary.renamed(grid)
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
