"""Datasets describe their stimulus wholly (issue 37): a sweep records, in the probe's facts,
what the lane-id kit's named waves are made of (the recipe, its plan, the seed, how the
buffers hold the elements, every shared-memory tile: descriptor, alignment, element order,
MN- or K-major) and the sparse kit's (seed, codec and levels, slot order, metadata, block
order), and each kit's `recipe.inputs` rebuilds every wave's launch inputs from a saved
dataset alone, with the probe's code gone."""

import shutil
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from probelab import dataset
from probelab.errors import UsageError
from probelab.kits import recorded_stimulus
from probelab.kits.lane_id import recipe
from probelab.kits.lane_id.probe import LaneIdProbe
from probelab.kits.sparse import recipe as sparse_recipe
from probelab.kits.sparse.probe import SparseProbe
from probelab.kits.tiles import Tile, grid_facts
from probelab.probe import INFO_KEY, catalog, get_probe, info
from probelab.sweep import run_sweep

KITS: dict[type, ModuleType] = {LaneIdProbe: recipe, SparseProbe: sparse_recipe}


def _probes(kind: type) -> dict[str, str]:
    """Every probe of the repository built on `kind` -> its folder."""
    return {p.id: Path(getattr(p.source, "path", p.source)).parent.name
            for p in catalog().probes.values() if isinstance(p, kind)}


LANE_ID, SPARSE = _probes(LaneIdProbe), _probes(SparseProbe)
WITNESS = "wgmma-f16-ss"  # A and B from tiles, one descriptor starting 512 bytes in
SPARSE_WITNESS = "mma-sp-s8"
SIM_TARGETS = {"gfx12*": "gfx1201"}  # a target pattern that names no one target


def _same(want: Mapping[str, np.ndarray], got: Mapping[str, np.ndarray]) -> None:
    assert want.keys() == got.keys()
    for name in want:
        assert got[name].dtype == want[name].dtype, name
        assert np.array_equal(got[name], want[name]), f"{name} rebuilt differs"


def _swept_then_forgotten(probe_id: str, folder: str, own_lab, tmp_path: Path, monkeypatch
                          ) -> tuple[Path, dict[str, np.ndarray], object]:
    """Sweep the probe on the sim backend in a lab of its own, keeping the inputs every
    kernel was launched with, then delete the probe's folder."""
    monkeypatch.delenv("PROBELAB_GIT_HEAD", raising=False)
    root = own_lab(folder)
    probe = get_probe(probe_id)
    launched: dict[str, Mapping[str, np.ndarray]] = {}
    simulate = probe.simulate

    def kept(kernel, inputs):
        launched[kernel.name] = {k: np.array(v) for k, v in inputs.items()}
        return simulate(kernel, inputs)

    monkeypatch.setattr(probe, "simulate", kept)
    pattern = probe.targets[0]
    target = SIM_TARGETS.get(pattern, pattern.rstrip("*"))  # sm_90* -> sm_90
    path = run_sweep(probe_id, "sim", target=target, out_root=tmp_path / "out",
                     repeats=2, allow_blind=True).path
    first, *others = launched.values()
    for each in others:  # one launch covers every kernel: they share their inputs
        _same(first, each)
    shutil.rmtree(root / "probes" / folder)
    catalog.cache_clear()
    with pytest.raises(UsageError, match="unknown probe"):
        get_probe(probe_id)
    return path, dict(first), probe


def _rebuilt_from_the_dataset_alone(probe_id: str, folder: str, own_lab, tmp_path: Path,
                                    monkeypatch) -> Mapping[str, object]:
    """The launch inputs rebuilt from the saved dataset equal the launched ones bit for bit,
    and the recorded facts are the probe's; returns them."""
    path, launched, probe = _swept_then_forgotten(probe_id, folder, own_lab, tmp_path,
                                                  monkeypatch)
    kit = KITS[type(probe)]
    ds = dataset.load(path)
    rebuilt = kit.inputs(ds)
    _same({k: v.reshape(-1) for k, v in launched.items()},
          {k: v.reshape(-1) for k, v in rebuilt.items()})
    facts = recorded_stimulus(ds, kit.KIT)
    assert facts == info(probe).stimulus
    return facts


def test_a_lane_id_witness_is_rebuilt_from_its_dataset_with_its_probe_gone(
        own_lab, tmp_path, monkeypatch) -> None:
    facts = _rebuilt_from_the_dataset_alone(WITNESS, LANE_ID[WITNESS], own_lab, tmp_path,
                                            monkeypatch)
    assert sorted(facts["kernels"]["ss_sw64_hi"]["tiles"]) == ["a", "b"]


def test_a_sparse_witness_is_rebuilt_from_its_dataset_with_its_probe_gone(
        own_lab, tmp_path, monkeypatch) -> None:
    facts = _rebuilt_from_the_dataset_alone(SPARSE_WITNESS, SPARSE[SPARSE_WITNESS], own_lab,
                                            tmp_path, monkeypatch)
    assert facts["slot_order"].startswith("slot = lane * ")  # thread-major, as drawn


@pytest.mark.slow
@pytest.mark.parametrize("probe_id", sorted(set(LANE_ID | SPARSE) - {WITNESS, SPARSE_WITNESS}))
def test_every_lane_id_and_sparse_probe_is_rebuilt_from_its_dataset(
        probe_id: str, own_lab, tmp_path, monkeypatch) -> None:
    _rebuilt_from_the_dataset_alone(probe_id, (LANE_ID | SPARSE)[probe_id], own_lab, tmp_path,
                                    monkeypatch)


def test_every_tile_a_lane_id_kernel_reads_is_declared_and_recorded() -> None:
    """Each tiled operand has its Tile (so its dataset records it); the recorded facts are
    the kernel sources': the plain wgmma-<type> tiles' B descriptor, 1 KiB alignment, the
    element order, B transposed in wgmma-f16-mn, a start offset."""
    for probe_id in LANE_ID:
        probe = get_probe(probe_id)
        kernels = info(probe).stimulus["kernels"]
        for shape in probe.shapes:
            assert sorted(kernels[shape.name]["tiles"]) == sorted(shape.tiles), shape.name
    plain = info(get_probe("wgmma-bf16-f32")).stimulus["kernels"]["bf16_f32_m64n8k16"]
    assert plain["tiles"]["b"] | {"element_order": ""} == {
        "swizzle": 0, "swizzle_mode": 0, "lbo": 128, "sbo": 256, "start": 0, "base_offset": 0,
        "major": "K", "align": 1024, "bytes": 1024, "element_bits": 16, "elements": 512,
        "element_order": ""}
    assert "v * lanes + l" in plain["tiles"]["b"]["element_order"]
    mn = info(get_probe("wgmma-f16-mn")).stimulus["kernels"]
    assert {k["tiles"]["b"]["major"] for k in mn.values()} == {"MN"}
    ss = info(get_probe("wgmma-f16-ss")).stimulus["kernels"]["ss_sw64_hi"]["tiles"]
    assert (ss["a"]["swizzle_mode"], ss["b"]["swizzle_mode"], ss["b"]["start"]) == (3, 2, 512)


def test_grid_facts_are_read_off_the_tiles() -> None:
    a, b = Tile("a", 128, 16, 1024, trans=True), Tile("b", 32, 16, 256, start=64)
    assert grid_facts((a, b), ("a_tile", "a_trans", "a_sbo", "b_swizzle", "b_start")) == (
        ("a_tile", 1), ("a_trans", 1), ("a_sbo", 1024), ("b_swizzle", 32), ("b_start", 64))
    assert grid_facts((b,), ("a_tile", "a_lbo", "swizzle")) == (
        ("a_tile", 0), ("a_lbo", 0), ("swizzle", 32))
    with pytest.raises(ValueError, match="no field of one tile"):
        grid_facts((a, b), ("swizzle",))
    with pytest.raises(ValueError, match="a tile's fields"):
        grid_facts((a,), ("a_width",))
    with pytest.raises(ValueError, match="swizzled by one of"):
        Tile("b", 16, 16, 256)


def test_a_dataset_that_records_no_stimulus_facts_is_not_rebuilt_from_conventions() -> None:
    """The archive's datasets predate the record: nothing is rebuilt for them by guesswork."""
    grid = get_probe(WITNESS).stimulus()
    facts = info(get_probe(WITNESS)).record()
    prov = {"probe": WITNESS, "probe_version": "1", INFO_KEY: facts}
    older = {k: v for k, v in facts.items() if k != "stimulus"}
    with pytest.raises(UsageError, match="records no lane-id stimulus"):
        recipe.inputs(dataset.with_provenance(grid, prov | {INFO_KEY: older}))
    with pytest.raises(UsageError, match="records no lane-id stimulus"):
        recipe.inputs(dataset.with_provenance(grid, {"probe": WITNESS}))
    with pytest.raises(UsageError, match="records no sparse stimulus"):  # another kit's
        sparse_recipe.inputs(dataset.with_provenance(grid, prov))
    assert recipe.inputs(dataset.with_provenance(grid, prov))["params"].tolist() == [3076]
