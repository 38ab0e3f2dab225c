"""notebooks/investigation.ipynb runs end to end (nbclient), so it can never rot."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "investigation.ipynb"


@pytest.mark.slow   # a Jupyter kernel, ~20 s: its own step in .ci/run (pytest -m slow)
def test_investigation_notebook_runs(tmp_path, monkeypatch):
    missing = [m for m in ("kvir.audit", "kvir.replay.run") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"the notebook needs {', '.join(missing)}, which this build does not have yet")
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("KVIR_NOTEBOOK_DIR", str(tmp_path / "work"))
    monkeypatch.setenv("KVIR_NOTEBOOK_REQUESTS", "8000")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = {i: c.get("outputs", []) for i, c in enumerate(nb.cells) if c.cell_type == "code"}
    errors = [o for outs in outputs.values() for o in outs if o.get("output_type") == "error"]
    assert errors == []
    # the figure was drawn and the report rendered
    assert any("image/png" in o.get("data", {}) for outs in outputs.values() for o in outs)
    report_md = tmp_path / "work" / "case" / "reports" / "public_report.md"
    assert report_md.exists() and "responses" in report_md.read_text()
    last = outputs[max(outputs)][0]["data"]["text/plain"]
    assert "Incident declared" in last
