"""The byte-perm notebook runs top to bottom (on simulated data) and is committed stripped."""

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


def test_notebook_reproduces_the_recorded_verdicts(monkeypatch):
    """On the archive itself: every verdict the notebook prints is the one recorded."""
    import json

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
