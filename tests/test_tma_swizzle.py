"""tma-swizzle-b8/-b16/-b32: the kernel's tensor-map parameters are the launch's maps in
order, the code passes its gate offline (UTMALDG.2D per map, the barrier around them), and
a run on the simulated device decodes back whatever law placed the boxes, scored by the
sealed files: the probe's own law confirms swizzle-atoms (and its restatement) on every
cell and misses every rival; a law swapped for a rival is recovered as that rival."""

import re
from pathlib import Path

import numpy as np
import pytest
from quick import quick_first

from probelab.backends.guards import POISONS
from probelab.backends.ops_sim import SimBackend
from probelab.hypothesis import load_hypothesis, predict
from probelab.paths import prereg_dir
from probelab.probe import get_probe

PROBES = ("tma-swizzle-b8", "tma-swizzle-b16", "tma-swizzle-b32")
TRUTH = {"swizzle-atoms", "cute-swizzle-functor"}


def measured(probe) -> dict[str, np.ndarray]:
    """The probe's observables, as a run on the simulated device decodes them."""
    stimulus = probe.stimulus()
    (kernel,) = probe.kernels("nvidia")
    sim = SimBackend(probe, "sm_90")
    outputs = sim.run(sim.compile(kernel, "sm_90"), kernel, probe.launch(stimulus),
                      POISONS[0])
    ds = probe.assemble(stimulus, {kernel.name: outputs})
    return {name: ds[name].values[0] for name in probe.observables}


def missed(probe, data: dict[str, np.ndarray]) -> dict[str, int]:
    """Per sealed hypothesis of the probe, the cells whose prediction the data miss."""
    counts = {}
    for path in sorted((prereg_dir() / probe.id).glob("*.toml")):
        table = predict(load_hypothesis(path), probe.stimulus(), probe.observables)["literal"]
        counts[path.stem] = sum(int(np.count_nonzero(table[n].reshape(v.shape) != v))
                                for n, v in data.items())
    return counts


def test_the_kernel_takes_the_launchs_maps_in_order() -> None:
    probe = get_probe("tma-swizzle-b16")
    launch = probe.launch(probe.stimulus())
    source = Path(probe.kernels("nvidia")[0].source).read_text()
    declared = re.findall(r"MAP\((\d+)\)", source.split("{", 2)[1])
    assert [int(i) for i in declared] == list(range(len(launch.tensor_maps)))
    assert int(re.search(r"#define MAPS (\d+)", source).group(1)) == len(launch.tensor_maps)
    assert [m.buffer for m in launch.tensor_maps.values()] == ["lo", "hi"] * 6
    assert list(launch.inputs) == ["origin", "lo", "hi"]  # the kernel's pointer order


@pytest.mark.parametrize("probe_id", quick_first(PROBES))
def test_the_kernel_passes_its_gate_offline(probe_id: str) -> None:
    from probelab.asm import inspect
    from tests.toolchains import nvidia_tools

    nvidia_tools()
    reports = inspect(probe_id, "sm_90")
    assert [r.status for r in reports] == ["ok"], [r.detail for r in reports]


@pytest.mark.parametrize("probe_id", quick_first(PROBES))
def test_the_simulated_law_is_recovered_and_every_rival_missed(probe_id: str) -> None:
    probe = get_probe(probe_id)
    counts = missed(probe, measured(probe))
    assert {h for h, n in counts.items() if n == 0} == TRUTH, counts
    assert len(counts) == 8


def test_a_law_swapped_for_a_rival_is_recovered_as_that_rival(monkeypatch) -> None:
    """The box's rows XOR the chunk index (chunk-xor-box-row) instead of the address bits
    above the 128-byte line: the decode finds exactly that rival and refutes the rest."""
    probe = get_probe("tma-swizzle-b32")

    def by_box_row(s: np.ndarray, span: int, inner: int) -> np.ndarray:
        return s ^ (((s // inner) & (span // 16 - 1)) << 4) if span else s

    monkeypatch.setattr(probe, "law", by_box_row)
    counts = missed(probe, measured(probe))
    assert [h for h, n in counts.items() if n == 0] == ["chunk-xor-box-row"], counts


@pytest.mark.parametrize("probe_id", PROBES)
def test_a_byte_whose_lo_plane_kept_the_poison_is_unwritten(probe_id: str) -> None:
    """The poison byte 0xA5 in the lo plane is column byte 165, outside every box (bytes 32
    to 159): where only the hi plane landed, the shared byte holds no id, and must decode
    as none, not as (row, 165) of the tile."""
    probe = get_probe(probe_id)
    stimulus = probe.stimulus()
    (kernel,) = probe.kernels("nvidia")
    sim = SimBackend(probe, "sm_90")
    out = sim.run(sim.compile(kernel, "sm_90"), kernel, probe.launch(stimulus), POISONS[0])
    regions = out["out"].view(np.uint8).reshape(-1, 2, 2048).copy()
    regions[:, 0] = 0xA5  # no lo-plane box landed; every hi-plane box did
    ds = probe.assemble(stimulus, {kernel.name: {"out": regions.reshape(-1).view(np.uint32)}})
    landed = regions[:, 1] != 0xA5
    assert landed.any()
    for name in ("g_row", "g_col", "g_byte"):
        assert (ds[name].values[0] == 0xFFFFFFFF).all(), name
