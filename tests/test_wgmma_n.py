"""The wgmma-<type>-wide and -n256 probes (their rendered kernel source is the archive's:
tests/test_rendered_sources.py): each kernel builds the descriptors its grid declares (in
the source and in the SASS's constants), every kernel passes the gate offline, and the APART
design recovers a simulated unit's hidden layout through a whole sweep."""

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from quick import quick_first
from test_lane_id import assert_same_up_to_relabeling

from probelab.kits.lane_id import engine
from probelab.probe import get_probe, load_sibling
from probelab.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "probes" / "wgmma_n"
kinds = load_sibling(HERE / "kinds.py")
generate = load_sibling(HERE / "generate.py")
PROBES = [f"wgmma-{k}-{g}" for g in kinds.FORMS for k in kinds.KINDS]
MODE = {0: 0, 128: 1, 64: 2, 32: 3}


def _tiles(facts: dict[str, int]) -> dict[str, tuple[int, int, int]]:
    """{"sa"/"sb": (mode code, LBO, SBO)} for each tile the kernel's facts declare."""
    out = {"sb": (MODE[facts["b_swizzle"]], facts["b_lbo"], facts["b_sbo"])}
    if facts["a_tile"]:
        out["sa"] = (MODE[facts["a_swizzle"]], facts["a_lbo"], facts["a_sbo"])
    return out


@pytest.mark.parametrize("probe_id", PROBES)
def test_each_kernel_builds_the_descriptors_its_grid_declares(probe_id: str) -> None:
    probe = get_probe(probe_id)
    text = generate.source()
    bodies = dict(re.findall(r"void __launch_bounds__\(128\) probe_(\w+)\(ARGS\) \{(.*?)\n\}",
                             text, re.S))
    for shape in probe.shapes:
        built = {tile: tuple(int(x) for x in (mode, lbo, sbo)) for tile, lbo, sbo, mode in
                 re.findall(r"descriptor\(shared_address\((s[ab])\), (\d+), (\d+), (\d+)\)",
                            bodies[shape.name])}
        assert built == _tiles(dict(shape.facts)), shape.name
        assert f".m64n{shape.N}k{shape.K}." in bodies[shape.name]


@pytest.mark.parametrize("probe_id", quick_first(PROBES))
def test_every_kernel_passes_the_gate_and_carries_its_descriptors_offline(probe_id: str
                                                                          ) -> None:
    """The gate (one MMA of the form, operands, stores, fence, arrive, wait) on every
    kernel, and each descriptor's upper word (SBO >> 4, the mode in bits 30-31) is a
    constant of its SASS."""
    from probelab.asm import inspect
    from tests.toolchains import nvidia_tools

    reports = inspect(probe_id, "sm_90")
    assert [r.status for r in reports] == ["ok"] * len(reports) and reports, \
        [r.detail for r in reports]
    nvidia = nvidia_tools()
    facts = {s.name: dict(s.facts) for s in get_probe(probe_id).shapes}
    for kernel in get_probe(probe_id).kernels("nvidia"):
        texts = [i.text for i in nvidia.build(kernel, "sm_90").functions[kernel.symbol]]
        for mode, _, sbo in _tiles(facts[kernel.name]).values():
            high = mode << 30 | sbo >> 4
            assert any(re.search(rf"\b{high:#x}\b", t) for t in texts), (kernel.name, hex(high))


@pytest.mark.slow
def test_the_apart_design_recovers_the_hidden_layouts_through_a_sweep(tmp_path: Path,
                                                                      monkeypatch) -> None:
    """`probelab sweep wgmma-tf32-f32-wide --backend sim`: five kernels (N = 8 to 64, A from
    registers and from a tile), each the probe's own hidden layout, recovered; the dataset
    stores b_src, the one table the relations project, and no relation tables, in the kit's
    compact form (no d_bnamed: b_src spells it; no exception on a clean unit), on the grid
    its hypotheses were sealed on, and its lane maps draw."""
    from probelab import dataset
    from probelab.kits.lane_id.figures import lane_map_table, tile_operands

    monkeypatch.delenv("PROBELAB_GIT_HEAD", raising=False)
    probe = get_probe("wgmma-tf32-f32-wide")
    assert probe.design == engine.APART and set(probe.observables) == set(
        engine.OBSERVABLES_APART) and probe.compact
    result = run_sweep(probe.id, "sim", target="sm_90", out_root=tmp_path, repeats=2,
                       allow_blind=True)
    ds = dataset.load(result.path)
    assert ds["recovered"].values.all(), ds["recovered"].attrs["why"]
    assert ds["gemm_exact"].values.all() and "same_col" not in ds
    assert str(ds["design"].values) == engine.APART
    assert "d_bnamed" not in ds and ds.sizes["odd"] == 0 and ds["d_gemm"].dtype == "int16"
    assert result.provenance["grid_sha256"] == dataset.grid_sha256(probe.stimulus())
    for shape in probe.shapes:
        assert_same_up_to_relabeling(ds, shape, probe.hidden_layout(shape))
        assert lane_map_table(ds, shape.name).rows and tile_operands(ds, shape.name)


def _documented(probe, hypothesis) -> dict[str, engine.Layout]:
    """The layout a sealed file's [let] helpers give each kernel's slots (a_m, a_k; b_k,
    b_n; d_m, d_n; negative: no element), for a simulated unit built as documented."""
    from probelab.hypothesis import helper_values

    pairs = {"a": ("a_m", "a_k"), "b": ("b_k", "b_n"), "d": ("d_m", "d_n")}
    labels = helper_values(hypothesis, probe.stimulus(), {
        h: ("kernel", f"{op}_lane", f"{op}_value") for op, hs in pairs.items() for h in hs})
    layouts = {}
    for i, shape in enumerate(probe.shapes):
        cells = {}
        for op, (r, c) in pairs.items():
            cell = np.stack([labels[r][i], labels[c][i]], -1)
            cells[op] = np.where((cell < 0).any(-1, keepdims=True), -1, cell)
        layouts[shape.name] = engine.Layout(cells["a"], cells["b"], cells["d"], cells["d"])
    return layouts


@pytest.mark.slow
def test_the_compact_form_scores_every_sealed_claim_as_the_float_form_did(tmp_path: Path,
                                                                          monkeypatch) -> None:
    """A simulated unit laid out as wgmma-tf32-f32-wide's sealed ptx-layouts says, swept in
    the compact form: ptx-layouts and cute-gmma match every claimed cell of every kernel,
    the near misses miss some, and each sealed file scores the compact dataset exactly as
    it scores the float form (version 1's) assembled from the same registers."""
    from probelab.hypothesis import load_hypothesis
    from probelab.scoring import score_claim

    monkeypatch.delenv("PROBELAB_GIT_HEAD", raising=False)
    probe = get_probe("wgmma-tf32-f32-wide")
    sealed = {p.stem: load_hypothesis(p)
              for p in sorted((ROOT / "preregistrations" / probe.id).glob("*.toml"))}
    for name, layout in _documented(probe, sealed["ptx-layouts"]).items():
        monkeypatch.setitem(probe.sim_layouts, name, layout)
    ds = run_sweep(probe.id, "sim", target="sm_90", out_root=tmp_path, repeats=2,
                   allow_blind=True).dataset
    grid = probe.stimulus()
    launch = probe.launch(grid)
    raw = {k.name: probe.simulate(k, launch.inputs) for k in probe.kernels("nvidia")}
    floated = replace(probe, compact=False).assemble(grid, raw)  # as version 1 stored them
    assert "d_bnamed" in floated and "d_bnamed" not in ds
    kernels = [k.name for k in probe.shapes]
    scored = {}
    for hid, h in sealed.items():
        _, (got, was) = score_claim(h, grid, probe.observables, [(ds, kernels),
                                                                 (floated, kernels)])
        assert got == was, hid
        scored[hid] = got["kernels"]
        for name in kernels:
            literal = got["kernels"][name]["literal"]
            if hid in ("ptx-layouts", "cute-gmma"):
                assert literal["matches"] == literal["cells"] > 0, (hid, name)
    rivals = [h for h in sealed if h.endswith("-rival")]
    assert rivals and all(any(
        scored[h][k]["literal"]["matches"] < scored[h][k]["literal"]["cells"]
        for k in kernels) for h in rivals)
