"""Claims restated in another notation: equal by value, walked once, scored the same.

The `*-as-layout` files (scripts/restate_layouts.py, issue 36) restate the lane-id files that
hand-type their fragments with [layout] tables. A restatement must give its parent's tables
hash-for-hash and its scores on every dataset; the scorer walks claims equal by value once
(hypothesis.value_key), so the archive test scores each file on its own."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from archive import needs_archive

from probelab import dataset, retirement
from probelab.check import observed_dims
from probelab.errors import LabError
from probelab.hypothesis import _streamed_hash, parse_hypothesis, value_key
from probelab.probe import get_probe
from probelab.scoring import score_claim, score_claims

ROOT = Path(__file__).resolve().parents[1]
PREREG = ROOT / "preregistrations"
RESTATED = sorted(PREREG.glob("*/*-as-layout.toml"))


def _file(path: Path, text: str | None = None):
    return parse_hypothesis(path, (text if text is not None else path.read_text()).encode())


def _parent_of(path: Path) -> Path:
    parent = tomllib.loads(path.read_text())["parent"]
    found = [p for p in path.parent.glob("*.toml") if tomllib.loads(p.read_text())["id"] == parent]
    assert len(found) == 1, f"{path}: parent {parent} not found once"
    return found[0]


PAIR = PREREG / "mma-f16-f32" / "ptx-fragments-as-layout.toml"


@pytest.fixture(scope="module")
def pair():
    probe = get_probe("mma-f16-f32")
    return _file(_parent_of(PAIR)), _file(PAIR), probe.stimulus(), probe.observables


def test_a_restatement_has_its_parents_value_key(pair):
    parent, child, grid, observables = pair
    assert "[layout." in PAIR.read_text() and "[layout." not in parent.path.read_text()
    key = value_key(parent, grid, observables)
    assert key is not None and value_key(child, grid, observables) == key


def test_one_slot_moved_changes_the_value_key(pair):
    _, child, grid, observables = pair
    text = PAIR.read_text().replace('a_k = "a_idx // 16', 'a_k = "(a_idx ^ 16) // 16')
    assert text != PAIR.read_text()
    moved = _file(PAIR, text)
    assert value_key(moved, grid, observables) != value_key(child, grid, observables)
    assert value_key(moved, grid, observables) is not None


def test_claims_alike_are_walked_once_and_answer_as_each_alone(pair):
    parent, child, grid, observables = pair
    together = score_claims([(parent, grid, observables, []), (child, grid, observables, [])])
    alone = score_claim(child, grid, observables, [])
    assert together[0] == together[1] == alone
    assert alone[0] == _streamed_hash(parent, grid, observables).decode()


def test_a_follower_is_still_refused_for_itself(pair):
    parent, _, grid, observables = pair
    text = PAIR.read_text() + '\n[near_misses.broken]\nsame_row = "no_such_name == 1"\n'
    broken = _file(PAIR, text)
    assert value_key(broken, grid, observables) == value_key(parent, grid, observables)
    first, second = score_claims([(parent, grid, observables, []),
                                  (broken, grid, observables, [])])
    assert not isinstance(first, LabError)
    assert isinstance(second, LabError) and "no_such_name" in str(second)


def test_a_wide_helper_is_never_compared_by_value(pair, monkeypatch):
    parent, _, grid, observables = pair
    monkeypatch.setattr("probelab.hypothesis.SHARED_LET_CELLS", 4)
    assert value_key(parent, grid, observables) is None


def test_every_restated_file_names_its_parent_and_agrees_with_it():
    assert len(RESTATED) >= 100
    for path in RESTATED:
        doc = tomllib.loads(path.read_text())
        assert doc["id"] == f"{doc['parent']}-as-layout" and doc["parent"] in doc["agrees_with"]
        assert "layout" in doc, path


@pytest.mark.slow
@needs_archive
@pytest.mark.parametrize("path", RESTATED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_restatement_scores_as_its_parent(path):
    """Hash-for-hash on the probe's stimulus, and the same scores on every dataset of the
    probe (each claim walked alone: nothing is shared between them)."""
    parent, child = _file(_parent_of(path)), _file(path)
    probe = get_probe(child.probe)
    grid = probe.stimulus()
    assert _streamed_hash(child, grid, probe.observables) == \
        _streamed_hash(parent, grid, probe.observables)
    retired = {e["path"] for e in retirement.read()}  # checked by their bytes alone
    for data in sorted((ROOT / "data" / child.probe).glob("*/*.nc")):
        if data.relative_to(ROOT).as_posix() in retired:
            continue
        ds = dataset.load_hashed(data)[0]  # lazy: the largest are over what load takes whole
        prov = dataset.provenance(ds)
        if child.targets and prov.get("target") not in child.targets:
            continue
        dims = observed_dims({n: v.dims for n, v in ds.data_vars.items()}, prov, child.probe)
        kernels = [str(k) for k in ds.kernel.values
                   if child.kernels is None or str(k) in child.kernels]
        assert score_claim(child, ds, dims, [(ds, kernels)]) == \
            score_claim(parent, ds, dims, [(ds, kernels)]), data


def _toy(let: str, where: str | None = None):
    text = ('schema = 1\nid = "t"\nprobe = "toy"\nclaim = "c"\ncoordinates = "raw"\n'
            + (f'where = "{where}"\n' if where else "")
            + f'[let]\nf = "{let}"\n[predict]\nout = "f"\n'
            + '[translations.shifted]\nlane = "lane + 32"\n')
    return parse_hypothesis(Path("t.toml"), text.encode())


def test_helpers_equal_on_the_grid_but_not_where_a_translation_moves_it_key_apart():
    """`lane` and `lane & 31` agree on lanes 0-31, not on the lanes 32-63 the translation
    reads: the tables differ, so the keys do (found in review: helpers were compared on the
    raw coordinates only); a helper that faults under the translation is never shared."""
    import numpy as np
    import xarray as xr

    grid = xr.Dataset(coords={"lane": ("lane", np.arange(32, dtype=np.uint32))})
    observables = {"out": ("lane",)}
    plain, masked = _toy("lane"), _toy("lane & 31")
    assert value_key(plain, grid, observables) != value_key(masked, grid, observables)
    together = score_claims([(plain, grid, observables, []), (masked, grid, observables, [])])
    assert together[1] == score_claim(masked, grid, observables, [])
    assert value_key(_toy("lane if lane < 32 else 1 // 0"), grid, observables) is None
    assert value_key(_toy("lane", where="f < 64"), grid, observables) != \
        value_key(_toy("lane", where="f < 32"), grid, observables)
