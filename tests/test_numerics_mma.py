"""numerics-mma-f16-f32 end to end on the simulated unit: the cases reach D(0, 0) through
the fragments placed by the PTX m16n8k16 maps, the dataset's d_bits are what the unit's own
model predicts (and not what a rival one parameter away predicts), and every other D
element is +0 exactly where the inputs are finite."""

from pathlib import Path

import numpy as np
import pytest

from probelab.hypothesis import evaluate_claim, parse_hypothesis
from probelab.numerics.models import FusedDot
from probelab.probe import get_probe, load_sibling
from probelab.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]


def _model_file(model: str, probe_id: str) -> bytes:
    return (f'schema = 1\nid = "m"\nprobe = "{probe_id}"\nclaim = "x"\n'
            f'coordinates = "raw"\nwhere = "finite_inputs == 1"\n\n[model]\n{model}\n\n'
            '[predict]\nd_bits = "model"\nrest_zero = "1"\n').encode()


def test_the_fragment_maps_place_each_element_once() -> None:
    mod = load_sibling(ROOT / "probes" / "numerics_mma" / "probe.py")
    for kind in mod.KINDS.values():
        for table, cells in ((kind.a_map, 16 * kind.k), (kind.b_map, kind.k * 8),
                             (mod.D_MAP, 16 * 8)):
            flat = {tuple(c) for c in table.reshape(-1, 2).tolist()}
            assert len(flat) == cells == table.shape[0] * table.shape[1]


@pytest.mark.parametrize("probe_id", ["numerics-mma-f16-f32", "numerics-mma-bf16-f32",
                                      "numerics-mma-tf32-f32"])
def test_a_simulated_unit_is_read_back_through_the_models(tmp_path: Path, monkeypatch,
                                                          probe_id: str) -> None:
    monkeypatch.delenv("PROBELAB_GIT_HEAD", raising=False)
    probe = get_probe(probe_id)
    monkeypatch.setattr(probe, "sim_model", FusedDot(24, "toward-zero"))
    ds = run_sweep(probe.id, "sim", target="sm_90", out_root=tmp_path,
                   allow_blind=True).dataset
    grid = probe.stimulus()
    finite = ds["finite_inputs"].values == 1
    np.testing.assert_array_equal(ds["rest_zero"].values[0], finite.astype(np.uint32))
    own = parse_hypothesis(tmp_path / "own.toml", _model_file(
        'family = "fused-dot"\nfraction_bits = 24\nrounding = "toward-zero"', probe_id))
    rival = parse_hypothesis(tmp_path / "rival.toml", _model_file(
        'family = "fused-dot"\nfraction_bits = 25\nrounding = "toward-zero"', probe_id))
    want = evaluate_claim(own, grid, probe.observables)[0]["literal"]["d_bits"]
    other = evaluate_claim(rival, grid, probe.observables)[0]["literal"]["d_bits"]
    got = ds["d_bits"].values[0]
    assert (got[finite] == want[finite]).all() and (got[finite] != other[finite]).any()
