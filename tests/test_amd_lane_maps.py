"""The AMD lane-id probes (gfx12 WMMA, CDNA MFMA) before any AMD device runs them: every
kernel passes its evidence gate on every target under every AMD toolchain found, the
simulated unit recovers hidden layouts through each probe's own stimulus and decode, and a
unit laid out as a sealed hypothesis's own [let] tables says confirms that file and refutes
its near misses. Tests of the designs on the simulated device, never evidence."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from quick import quick_first
from test_lane_id import assert_same_up_to_relabeling
from toolchains import amd_tools

from probelab.evidence import gate
from probelab.hypothesis import helper_values, parse_hypothesis, predict
from probelab.kits.lane_id.engine import Layout, random_layout
from probelab.kits.lane_id.probe import LaneIdProbe
from probelab.probe import catalog
from probelab.vendors.amd.isa import GCN

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("wmma_gfx12", "mfma_cdna")
PROBES = [p for p in catalog().probes.values() if isinstance(p, LaneIdProbe)
          and p.kernels(p.vendor)[0].source.parent.name in FOLDERS]
HELPERS = ("a_m", "a_k", "b_k", "b_n", "d_m", "d_n")


def hypotheses(probe: LaneIdProbe) -> dict[str, object]:
    """The probe's sealed files, less the restatements of another (`parent` and
    `agrees_with` it: the same tables, test_restatements.py; their helpers may differ from
    the parent's on slots a narrower kernel does not have, where no unit can be laid out)."""
    folder = ROOT / "preregistrations" / probe.id
    found = {p.stem: parse_hypothesis(p, p.read_bytes()) for p in sorted(folder.glob("*.toml"))}
    return {k: h for k, h in found.items() if h.parent is None or h.parent not in h.agrees_with}


def swept(probe: LaneIdProbe, layouts: dict[str, Layout] | None = None):
    """The probe's own grid, launch, simulated unit (hidden layouts unless given) and
    decode, as the sim backend runs them."""
    probe = dataclasses.replace(probe, sim_layouts=dict(layouts or {}))
    grid = probe.stimulus()
    launch = probe.launch(grid)
    outputs = {k.name: probe.simulate(k, launch.inputs) for k in probe.kernels("amd")}
    return probe.assemble(grid, outputs), probe


def scope(h, probe: LaneIdProbe) -> list[str]:
    """The kernels a file is about (its `kernels`, else all the probe's)."""
    return list(h.kernels) if h.kernels else [s.name for s in probe.shapes]


def tables(h, grid, kernels: list[str]) -> dict[str, np.ndarray]:
    return helper_values(h, grid.sel(kernel=kernels),
                         {n: ("kernel", f"{n[0]}_lane", f"{n[0]}_value") for n in HELPERS})


def layout_of(h, grid, probe: LaneIdProbe) -> dict[str, Layout]:
    """Per kernel in the file's scope, the (lane, value) -> (row, col) tables its [let]
    gives (the probe's other kernels keep hidden layouts)."""
    kernels = scope(h, probe)
    values = tables(h, grid, kernels)

    def pair(row: str, col: str, i: int) -> np.ndarray:  # -1 (or -2, -3): nothing there
        cells = np.stack([values[row][i], values[col][i]], -1)
        return np.where((values[row][i] < 0)[..., None], -1, cells)

    out = {}
    for i, name in enumerate(kernels):
        d = pair("d_m", "d_n", i)
        out[name] = Layout(pair("a_m", "a_k", i), pair("b_k", "b_n", i), d, d)
    return out


def fits(ds, h, probe: LaneIdProbe, kernels: list[str] | None = None) -> bool:
    sub = ds.sel(kernel=kernels or scope(h, probe))
    table = predict(h, sub, probe.observables)["literal"]
    return all(np.array_equal(sub[name].values, values) for name, values in table.items())


def test_the_folders_hold_the_probes_the_catalogue_promises() -> None:
    ids = {p.id for p in PROBES}
    assert {"wmma-f16-f32", "wmma-bf16-f32", "wmma-f16-f16", "wmma-iu8", "wmma-iu4",
            "wmma-fp8-fp8", "wmma-fp8-bf8", "wmma-bf8-fp8", "wmma-bf8-bf8"} <= ids
    assert {"mfma-f16", "mfma-bf16", "mfma-i8", "mfma-fp8-gfx942", "mfma-fp8-gfx950"} <= ids
    assert all(p.vendor == "amd" for p in PROBES)


@pytest.mark.parametrize("probe", quick_first(PROBES), ids=lambda p: p.id)
def test_every_kernel_passes_its_gate_on_every_target(probe: LaneIdProbe,
                                                      each_amd_toolchain) -> None:
    amdgpu = amd_tools()
    targets = [t for t in probe.targets if t in amdgpu.supported_targets(each_amd_toolchain)]
    if not targets:
        pytest.skip(f"{each_amd_toolchain.name} builds none of {probe.targets}")
    for target in targets:
        for kernel in probe.kernels("amd"):
            code = amdgpu.build(kernel, target).functions[kernel.symbol]
            report = gate(kernel.name, kernel.evidence, code, GCN)
            assert report.ok, (target, kernel.name, report.problems)
            assert len(report.matches) == 1
            assert [t.reaches for t in report.operands] == ["unmodified"] * 3


@pytest.mark.parametrize("probe", quick_first(PROBES), ids=lambda p: p.id)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_any_hidden_layout_is_recovered(probe: LaneIdProbe, seed: int) -> None:
    """Through the probe's own stimulus and decode, a unit with any shuffled layout is
    recovered: every relation, and the lane map up to one consistent renumbering of rows,
    k and columns; its random GEMMs read back exactly."""
    rng = np.random.default_rng(seed)
    layouts = {s.name: random_layout(s, rng, probe.size) for s in probe.shapes}
    ds, _ = swept(probe, layouts)
    assert (ds["recovered"].values == 1).all() and (ds["gemm_exact"].values == 1).all()
    for shape in probe.shapes:
        assert_same_up_to_relabeling(ds, shape, layouts[shape.name])


@pytest.mark.parametrize("probe", quick_first(PROBES), ids=lambda p: p.id)
def test_a_unit_laid_out_as_each_claim_confirms_it_and_refutes_the_others(
        probe: LaneIdProbe) -> None:
    """Each file's own tables drive the unit: the file fits every cell, and every file
    whose tables differ misses somewhere (the near misses are told apart)."""
    files = hypotheses(probe)
    assert any("recovered" in h.predict for h in files.values())  # a full layout is claimed
    grid = probe.stimulus()
    for name, h in files.items():
        ds, _ = swept(probe, layout_of(h, grid, probe))
        assert fits(ds, h, probe), name
        for other, rival in files.items():
            both = [k for k in scope(h, probe) if k in scope(rival, probe)]
            if other == name or not both:
                continue
            mine, theirs = tables(h, grid, both), tables(rival, grid, both)
            if any(not np.array_equal(mine[n], theirs[n]) for n in HELPERS):
                assert not fits(ds, rival, probe, both), (name, other)
