"""The wgmma-<type>-wide and -n256 probes: their generated kernel sources are what the
generator writes, each kernel builds the descriptors its grid declares (in the source and in
the SASS's constants), every kernel passes the gate offline, and the APART design recovers a
simulated unit's hidden layout through a whole sweep."""

import re
from pathlib import Path

import pytest
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


def test_the_committed_sources_are_what_the_generator_writes() -> None:
    assert generate.SOURCE.read_text() == generate.source(), \
        "run python probes/wgmma_n/generate.py and commit its output"


@pytest.mark.parametrize("probe_id", PROBES)
def test_each_kernel_builds_the_descriptors_its_grid_declares(probe_id: str) -> None:
    probe = get_probe(probe_id)
    text = Path(probe.source).read_text()
    bodies = dict(re.findall(r"void __launch_bounds__\(128\) probe_(\w+)\(ARGS\) \{(.*?)\n\}",
                             text, re.S))
    for shape in probe.shapes:
        built = {tile: tuple(int(x) for x in (mode, lbo, sbo)) for tile, lbo, sbo, mode in
                 re.findall(r"descriptor\(shared_address\((s[ab])\), (\d+), (\d+), (\d+)\)",
                            bodies[shape.name])}
        assert built == _tiles(dict(shape.facts)), shape.name
        assert f".m64n{shape.N}k{shape.K}." in bodies[shape.name]


@pytest.mark.parametrize("probe_id", PROBES)
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


def test_the_apart_design_recovers_the_hidden_layouts_through_a_sweep(tmp_path: Path,
                                                                      monkeypatch) -> None:
    """`probelab sweep wgmma-tf32-f32-wide --backend sim`: five kernels (N = 8 to 64, A from
    registers and from a tile), each the probe's own hidden layout, recovered; the dataset
    stores b_src, the one table the relations project, and no relation tables."""
    monkeypatch.delenv("PROBELAB_GIT_HEAD", raising=False)
    probe = get_probe("wgmma-tf32-f32-wide")
    assert probe.design == engine.APART and set(probe.observables) == set(
        engine.OBSERVABLES_APART)
    ds = run_sweep(probe.id, "sim", target="sm_90", out_root=tmp_path,
                   allow_blind=True).dataset
    assert ds["recovered"].values.all(), ds["recovered"].attrs["why"]
    assert ds["gemm_exact"].values.all() and "same_col" not in ds
    assert str(ds["design"].values) == engine.APART
    for shape in probe.shapes:
        assert_same_up_to_relabeling(ds, shape, probe.hidden_layout(shape))
