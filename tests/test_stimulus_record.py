"""Datasets describe their stimulus wholly (issue 37): a sweep records, in the probe's facts,
what the lane-id kit's named waves are made of (the recipe, its plan, the seed, how the
buffers hold the elements, every shared-memory tile: descriptor, alignment, element order,
MN- or K-major), the sparse kit's (seed, codec and levels, slot order, metadata, block
order), the numerics probes' (where a case's values sit, B's wgmma tile), the bit-op kit's
(which coordinates are inputs, the launched axes, the axis of immediates) and the
matrix-move kit's (its packing, the seed), and each kit's `recipe.inputs` rebuilds every
wave's launch inputs from a saved dataset alone, with the probe's code gone."""

import shutil
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from probelab import dataset
from probelab.errors import UsageError
from probelab.kits import recorded_stimulus
from probelab.kits.bitops import recipe as bitops_recipe
from probelab.kits.lane_id import recipe
from probelab.kits.matrix_move import recipe as matrix_move_recipe
from probelab.kits.numerics import recipe as numerics_recipe
from probelab.kits.sparse import recipe as sparse_recipe
from probelab.kits.tiles import Tile, grid_facts
from probelab.probe import INFO_KEY, catalog, get_probe, info, supports
from probelab.sweep import run_sweep

KITS: dict[str, ModuleType] = {m.KIT: m for m in (recipe, sparse_recipe, numerics_recipe,
                                                   bitops_recipe, matrix_move_recipe)}


def _probes(kit: str) -> dict[str, str]:
    """Every probe of the repository whose facts are `kit`'s -> its folder."""
    folders = {e.id: e.folder for e in catalog().entries()}
    return {p.id: folders[p.id] for p in catalog().probes.values()
            if info(p).stimulus.get("kit") == kit}


LANE_ID, SPARSE, NUMERICS, BITOPS, MATRIX_MOVE = (_probes(k) for k in KITS)
# quick, one per kit: A and B from tiles (a descriptor starting 512 bytes in); a sparse
# probe; a numerics probe whose B is placed in a wgmma tile; a bit-op probe with an axis of
# immediates; a matrix-move probe with addresses and a tile (the others: the slow run)
WITNESS = "wgmma-f16-ss"
WITNESSES = (WITNESS, "mma-sp-s8", "numerics-wgmma-f16-f32", "lop3", "ldmatrix-b16")
ALL = LANE_ID | SPARSE | NUMERICS | BITOPS | MATRIX_MOVE
SIM_TARGETS = ("sm_90", "gfx942", "gfx950", "gfx1201")  # the first a probe targets


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
    target = next(t for t in SIM_TARGETS if supports(probe, t))
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
                                    monkeypatch) -> None:
    """The launch inputs rebuilt from the saved dataset equal the launched ones bit for bit,
    and the recorded facts are the probe's."""
    path, launched, probe = _swept_then_forgotten(probe_id, folder, own_lab, tmp_path,
                                                  monkeypatch)
    kit = KITS[info(probe).stimulus["kit"]]
    ds = dataset.load(path)
    rebuilt = kit.inputs(ds)
    _same({k: v.reshape(-1) for k, v in launched.items()},
          {k: v.reshape(-1) for k, v in rebuilt.items()})
    assert recorded_stimulus(ds, kit.KIT) == info(probe).stimulus


@pytest.mark.parametrize("probe_id", sorted(WITNESSES))
def test_a_witness_is_rebuilt_from_its_dataset_with_its_probe_gone(probe_id: str, own_lab,
                                                                   tmp_path, monkeypatch) -> None:
    _rebuilt_from_the_dataset_alone(probe_id, ALL[probe_id], own_lab, tmp_path, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("probe_id", sorted(set(LANE_ID) - set(WITNESSES)))
def test_every_lane_id_probe_is_rebuilt_from_its_recorded_facts(probe_id: str) -> None:
    _rebuilt_from_its_facts(probe_id)


def test_every_probe_of_the_other_kits_is_rebuilt_from_its_recorded_facts() -> None:
    """Every sparse, numerics, bit-op and matrix-move probe (the lane-id ones: slow)."""
    assert len(BITOPS) == 10 and len(MATRIX_MOVE) == 3  # the scan sees every probe of theirs
    for probe_id in sorted(SPARSE | NUMERICS | BITOPS | MATRIX_MOVE):
        _rebuilt_from_its_facts(probe_id)


def _rebuilt_from_its_facts(probe_id: str) -> None:
    """The probe's facts, through a provenance as a sweep writes it beside the grid, rebuild
    its launch inputs bit for bit (the sweep itself, and the probe's folder gone: the
    witnesses above; sweeping every probe on the simulator costs minutes each and proves
    no more about the record)."""
    probe = get_probe(probe_id)
    grid = probe.stimulus()
    prov = {"probe": probe_id, "probe_version": probe.version, INFO_KEY: info(probe).record()}
    kit = KITS[info(probe).stimulus["kit"]]
    rebuilt = kit.inputs(dataset.with_provenance(grid, prov))
    _same({k: np.asarray(v).reshape(-1) for k, v in probe.launch(grid).inputs.items()},
          {k: v.reshape(-1) for k, v in rebuilt.items()})


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
    with pytest.raises(UsageError, match="cannot be read"):  # no JSON object: not a record
        recipe.inputs(dataset.with_provenance(grid, prov | {INFO_KEY: facts | {"stimulus": []}}))
    for other in (sparse_recipe, bitops_recipe, matrix_move_recipe):  # another kit's
        with pytest.raises(UsageError, match=f"records no {other.KIT} stimulus"):
            other.inputs(dataset.with_provenance(grid, prov))
    assert recipe.inputs(dataset.with_provenance(grid, prov))["params"].tolist() == [3076]
