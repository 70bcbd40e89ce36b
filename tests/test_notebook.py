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
