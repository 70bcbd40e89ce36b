"""`probelab diff`: exit codes 0/1/2, cell counts, pure JSON, figures.

The simulated gfx1201 dataset stands in for an AMD measurement here: it is the sim model of
HIP's __byte_perm (the documented & 7 per nibble) used as a TEST DOUBLE, never as evidence.
The measured H200 dataset is only read.
"""

import json
from pathlib import Path

import numpy as np
import pytest
from toylab import copy_probe
from typer.testing import CliRunner, Result

from probelab import dataset
from probelab.cli import app
from probelab.diff import diff as run_diff
from probelab.diff import load_side, pairs, parse_spec
from probelab.probe import catalog

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "data" / "byte-perm" / "sm_90" / "20261130T012306Z.nc"
CELLS = 16 * 65536
runner = CliRunner()

needs_h200 = pytest.mark.skipif(not H200.is_file(), reason="the measured H200 dataset is absent")


def invoke(*args: str | Path) -> Result:
    result = runner.invoke(app, ["diff", *(str(a) for a in args)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Path:
    """A lab of its own with the byte-perm probe and nothing sealed: no test here depends on
    the live ledger (a blind pair sealed there must not stop these sweeps)."""
    root = tmp_path_factory.mktemp("diff-lab")
    copy_probe(root, "byte_perm")
    (root / "preregistrations").mkdir()
    return root


@pytest.fixture(autouse=True)
def in_lab(lab: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PROBELAB_ROOT", str(lab))
    catalog.cache_clear()
    yield
    catalog.cache_clear()


@pytest.fixture
def archive(monkeypatch: pytest.MonkeyPatch) -> None:
    """The repository as the lab, for a diff with the measured H200 dataset: a measurement
    is read as check reads it, so it must be the archive's own (outside its lab's archive it
    is UNPINNED, exit 3). The simulated side may sit anywhere."""
    monkeypatch.setenv("PROBELAB_ROOT", str(ROOT))
    catalog.cache_clear()


@pytest.fixture(scope="module")
def sims(lab: Path):
    """{target: path} of simulated sweeps in the lab's sim-data/, one folder per sweep:
    dataset names are timestamps to the second."""
    from probelab.sweep import run_sweep

    paths = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PROBELAB_ROOT", str(lab))
        catalog.cache_clear()
        for target in ("gfx1201", "sm_90"):
            # repeats=2: one repeat cannot tell a cell equal to the poison from an unwritten one
            paths[target] = run_sweep("byte-perm", "sim", target=target, repeats=2,
                                      out_root=lab / "sim-data" / target).path
    catalog.cache_clear()
    return paths


def sign_nibble_cells(ds) -> np.ndarray:
    """(operand, selector) bool: cells whose selector has some nibble with bit 3 set, computed
    from the selector coordinate alone (independently of either dataset's values)."""
    s = ds["selector"].values.astype(np.int64)
    any_bit3 = np.zeros(s.shape, bool)
    for lane in range(4):
        any_bit3 |= ((s >> (4 * lane)) & 0x8) != 0
    return np.broadcast_to(any_bit3, (ds.sizes["operand"], s.size))


# ---- prmt (PTX, sign-replicating) vs HIP's __byte_perm (& 7) ----------------------------------


@needs_h200
def test_h200_prmt_vs_hip_byte_perm_differs_exactly_on_sign_nibbles(sims, archive):
    gfx = sims["gfx1201"]
    result = invoke(f"{H200}:prmt", f"{gfx}:byte_perm", "--json")
    assert result.exit_code == 1, result.stderr
    doc = json.loads(result.stdout)
    (pair,) = doc["pairs"]
    expected = sign_nibble_cells(dataset.load(gfx))
    assert (pair["a_kernel"], pair["b_kernel"]) == ("prmt", "byte_perm")
    assert pair["cells"] == CELLS
    assert pair["differing"] == int(np.count_nonzero(expected)) == CELLS - 16 * 4096
    assert not pair["identical"] and not doc["identical"]
    assert doc["a"]["simulated"] is False and doc["b"]["simulated"] is True
    assert doc["any_simulated"] is True
    for cell in pair["first_differences"]:
        assert any((cell["selector"] >> (4 * lane)) & 0x8 for lane in range(4))
        assert cell["a"] != cell["b"] and cell["a"].startswith("0x")
    # Not only as many: the very same cells.
    _, _, _, results = run_diff(f"{H200}:prmt", f"{gfx}:byte_perm")
    assert np.array_equal(results[0].masks["value"], expected)


@needs_h200
def test_h200_byte_perm_vs_hip_byte_perm_is_identical(sims, archive):
    result = invoke(H200, sims["gfx1201"])  # no kernels: byte_perm is the one both have
    assert result.exit_code == 1, result.stderr  # identical, but against a model: not 0
    assert "byte_perm (A) vs byte_perm (B): 0 / 1,048,576 cells differ" in result.stdout
    assert "identical" in result.stdout
    assert "SIMULATED" in result.stdout  # B is the sim model
    assert "not compared: kernels prmt of A" in result.stdout
    assert "not compared: kernels v_perm of B" in result.stdout


def test_sim_prmt_vs_sim_hip_byte_perm_counts(sims):
    result = invoke(f"{sims['sm_90']}:prmt", f"{sims['gfx1201']}:byte_perm")
    assert result.exit_code == 1, result.stderr
    assert f"{CELLS - 16 * 4096:,} / {CELLS:,} cells differ" in result.stdout
    assert "SIMULATED: A and B" in result.stdout
    assert "more" in result.stdout  # only the first few cells are listed


def test_default_kernels_are_the_common_names(sims):
    doc, *_ = run_diff(str(sims["sm_90"]), str(sims["gfx1201"]))
    assert [(p["a_kernel"], p["b_kernel"]) for p in doc["pairs"]] == [("byte_perm", "byte_perm")]
    assert doc["identical"]


def test_a_kernel_named_on_one_side_is_looked_up_by_name_on_the_other(sims):
    a, b = load_side(f"{sims['sm_90']}:byte_perm"), load_side(str(sims["gfx1201"]))
    assert pairs(a, b) == [("byte_perm", "byte_perm")]


def test_json_is_pure_json(sims):
    result = invoke(sims["gfx1201"], sims["sm_90"], "--json")
    assert result.exit_code == 1, result.stderr  # both sides are models
    doc = json.loads(result.stdout)  # nothing but JSON on stdout
    assert result.stdout.lstrip().startswith("{")
    assert doc["probe"] == "byte-perm" and doc["identical"] is True and doc["any_simulated"]
    assert doc["not_compared"]["kernels"] == {"A": ["v_perm"], "B": ["prmt"]}
    assert doc["grid_sha256"] == dataset.grid_sha256(dataset.load(sims["gfx1201"]))


def test_plot_writes_a_diff_figure(sims, tmp_path):
    out = tmp_path / "figs"
    result = invoke(f"{sims['sm_90']}:prmt", f"{sims['gfx1201']}:v_perm", "--plot", out,
                    "--json")
    assert result.exit_code == 1, result.stderr
    doc = json.loads(result.stdout)
    figures = sorted(Path(p) for p in doc["figures"])
    assert [p.suffix for p in figures] == [".png", ".svg"]
    for p in figures:
        assert p.is_file() and p.parent == out
        assert p.name.startswith("diff.sm_90-") and ".prmt.vs.gfx1201-" in p.name
        assert p.name.endswith((".v_perm.png", ".v_perm.svg"))
    svg = figures[1].read_text()  # matplotlib keeps each text as a comment beside its glyphs
    assert "prmt: diff, A (this) vs B" in svg and "B = v_perm on simulated gfx1201" in svg
    assert "SIMULATED — not evidence" in svg


@needs_h200
def test_plot_of_measured_vs_simulated_says_so(sims, tmp_path):
    from probelab.diff import plot

    doc, a, b, results = run_diff(f"{H200}:byte_perm", str(sims["gfx1201"]))
    (png, svg) = plot(doc, a, b, results, tmp_path)
    assert png.suffix == ".png" and png.stat().st_size > 10_000
    text = svg.read_text()
    assert "compared with SIMULATED data — not evidence" in text
    assert "1,048,576 / 1,048,576 cells agree" in text


# ---- refusals (exit 2) ---------------------------------------------------------------------


def test_different_grids_are_refused(sims, tmp_path):
    ds = dataset.load(sims["gfx1201"])
    smaller = tmp_path / "smaller.nc"
    dataset.save(ds.isel(operand=slice(0, 10)), smaller, dataset.provenance(ds))
    result = invoke(sims["sm_90"], smaller)
    assert result.exit_code == 2
    assert "different stimulus grids" in result.stderr
    assert result.stdout == ""


def test_different_probes_are_refused(sims, tmp_path):
    ds = dataset.load(sims["gfx1201"])
    other = tmp_path / "other-probe.nc"
    dataset.save(ds, other, dataset.provenance(ds) | {"probe": "builtin-modifiers"})
    result = invoke(sims["sm_90"], other, "--json")
    assert result.exit_code == 2
    assert "different probes" in result.stderr
    assert result.stdout == ""


def test_no_common_kernel_is_refused(sims, tmp_path):
    ds = dataset.load(sims["gfx1201"])
    only_v_perm = tmp_path / "v_perm-only.nc"
    dataset.save(ds.sel(kernel=["v_perm"]), only_v_perm, dataset.provenance(ds))
    result = invoke(sims["sm_90"], only_v_perm)
    assert result.exit_code == 2
    assert "no common kernel" in result.stderr


def test_unknown_kernel_is_refused(sims):
    result = invoke(f"{sims['sm_90']}:v_perm", sims["gfx1201"])
    assert result.exit_code == 2
    assert "no kernel 'v_perm'" in result.stderr


def test_missing_dataset_is_refused(tmp_path):
    result = invoke(tmp_path / "nope.nc", tmp_path / "nope2.nc")
    assert result.exit_code == 2


def test_parse_spec(tmp_path):
    assert parse_spec("a/b.nc") == (Path("a/b.nc"), None)
    assert parse_spec("a/b.nc:prmt") == (Path("a/b.nc"), "prmt")
    odd = tmp_path / "with:colon.nc"
    odd.write_bytes(b"")
    assert parse_spec(str(odd)) == (odd, None)  # an existing path is never split


@needs_h200
def test_only_identical_measurements_exit_0(archive):
    result = invoke(H200, H200)
    assert result.exit_code == 0, result.stderr
    assert "neither side is simulated" in result.stdout and "not compared" not in result.stdout
