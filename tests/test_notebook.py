"""The notebooks run top to bottom (on simulated data, and on the archive where it is
recorded, reproducing its verdicts) and are committed stripped. A run starts a Jupyter
kernel and the whole lab in it (4-10 s each): those are `slow`."""

import json
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "byte_perm.ipynb"


def test_notebook_is_committed_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code
    for cell in code:
        assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]


@pytest.mark.slow
def test_notebook_runs_on_simulated_data(monkeypatch):
    pytest.importorskip("ipykernel", reason="ipykernel is needed to run the notebook")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("PROBELAB_NOTEBOOK_SIM", "1")  # fast, and independent of data/
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(ROOT)}})
    client.execute()  # raises CellExecutionError on any failing cell

    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "SIMULATED" in text
    assert "verdict:" in text
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 2


@pytest.mark.slow
def test_notebook_reproduces_the_recorded_verdicts(monkeypatch):
    """On the archive itself: every verdict the notebook prints is the one recorded."""
    pytest.importorskip("ipykernel", reason="ipykernel is needed to run the notebook")
    nbclient = pytest.importorskip("nbclient")
    recorded = sorted((ROOT / "data" / "byte-perm").glob("*/*.verdict.json"))
    if not recorded:
        pytest.skip("no recorded byte-perm verdicts")
    from probelab.prereg import ledger_entries, seal_commit

    if any(seal_commit(e) is None for e in ledger_entries() if e["probe"] == "byte-perm"):
        pytest.skip("the repository's history (the seal commits) is not here")
    monkeypatch.delenv("PROBELAB_NOTEBOOK_SIM", raising=False)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(ROOT)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "SIMULATED" not in text
    for path in recorded:
        doc = json.loads(path.read_text())
        shown = f"== {doc['hypothesis']['id']} vs {doc['dataset']['path']}\n   verdict: "
        assert shown + doc["verdict"] in text, shown


def _run_simulated_in(root: Path, monkeypatch) -> str:
    """Run the byte-perm notebook on simulated data in the lab at `root`; its printed text."""
    pytest.importorskip("ipykernel", reason="ipykernel is needed to run the notebook")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("PROBELAB_NOTEBOOK_SIM", "1")
    monkeypatch.setenv("PROBELAB_ROOT", str(root))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(root)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    return "".join(o.get("text", "") for o in outputs if o.output_type == "stream")


@pytest.mark.slow
def test_notebook_survives_drafts_and_hypotheses_that_do_not_apply(sealed_lab, monkeypatch):
    """In a lab of its own: a broken unsealed draft is reported and skipped, and a sealed
    hypothesis about other targets gets no mismatch map."""
    root = sealed_lab("byte_perm", "byte-perm", "v-perm-seeds")
    (root / "preregistrations" / "byte-perm" / "draft.toml").write_text(
        'schema = 1\nid = "draft"\n[predict\n')
    text = _run_simulated_in(root, monkeypatch)
    assert "== draft vs" in text and "not checked:" in text
    assert "does not apply" in text and "v-perm-seeds (literal" not in text


@pytest.mark.slow
def test_notebook_runs_on_simulated_data_with_a_blind_pair_sealed(sealed_lab, monkeypatch):
    """A restatement of ptx-prmt-default sealed as a rival (--allow-blind): the simulated
    sweep warns of the blind pair and the notebook runs on (issue 35, item 2)."""
    from probelab import prereg

    root = sealed_lab("byte_perm", "byte-perm", "ptx-prmt-default")
    folder = root / "preregistrations" / "byte-perm"
    again = folder / "prmt-again.toml"
    again.write_text((folder / "ptx-prmt-default.toml").read_text().replace(
        'id = "ptx-prmt-default"', 'id = "prmt-again"'))
    prereg.seal(again, allow_blind=True)
    text = _run_simulated_in(root, monkeypatch)
    assert "warning: the stimulus cannot tell apart prmt-again and ptx-prmt-default" in text
    assert "== prmt-again vs" in text and "verdict: NOT-EVIDENCE" in text


LANE_MAPS = ROOT / "notebooks" / "lane_maps.ipynb"


def _run_lane_maps(monkeypatch, sim: bool) -> str:
    pytest.importorskip("ipykernel", reason="ipykernel is needed to run the notebook")
    nbclient = pytest.importorskip("nbclient")
    if sim:
        monkeypatch.setenv("PROBELAB_NOTEBOOK_SIM", "1")
    else:
        monkeypatch.delenv("PROBELAB_NOTEBOOK_SIM", raising=False)
    nb = nbformat.read(LANE_MAPS, as_version=4)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 2 * 5  # two views of each of the five kernels
    return "".join(o.get("text", "") for o in outputs if o.output_type == "stream")


def test_lane_maps_notebook_is_committed_without_outputs() -> None:
    nb = nbformat.read(LANE_MAPS, as_version=4)
    nbformat.validate(nb)
    for cell in (c for c in nb.cells if c.cell_type == "code"):
        assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]


@pytest.mark.slow
def test_lane_maps_notebook_runs_on_simulated_data(monkeypatch) -> None:
    text = _run_lane_maps(monkeypatch, sim=True)
    assert text.count("SIMULATED stand-in (NOT evidence)") == 2
    assert "verdict: NOT-EVIDENCE" in text and "verdict: CONFIRMED" not in text


@pytest.mark.slow
def test_lane_maps_notebook_reproduces_the_recorded_verdicts(monkeypatch) -> None:
    recorded = sorted((ROOT / "data" / "dmma-f64").glob("*/*.verdict.json"))
    if not recorded:
        pytest.skip("no recorded dmma-f64 verdicts")
    from probelab.prereg import ledger_entries, seal_commit

    if any(seal_commit(e) is None for e in ledger_entries() if e["probe"] == "dmma-f64"):
        pytest.skip("the repository's history (the seal commits) is not here")
    text = _run_lane_maps(monkeypatch, sim=False)
    for path in recorded:
        doc = json.loads(path.read_text())
        shown = f"== {doc['hypothesis']['id']} vs {doc['dataset']['path']}\n"
        verdict = f"   verdict: {doc['verdict']} (recorded: {doc['verdict']})"
        assert shown + verdict in text, shown
