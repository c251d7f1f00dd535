"""Every notebook in notebooks/ runs from top to bottom without an error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: How a cell checks a result: assert, an assert_* helper, or an else: raise AssertionError.
CHECK = re.compile(r"^\s*assert\b|\.assert_\w+\(|raise AssertionError", re.M)
#: A printed verdict that nobody checks, e.g. "identical: True" or "(4, 6) False".
BARE_VERDICT = re.compile(r"(:|->)\s*(True|False)\s*$|\b(True|False)\s*$", re.M)


def test_there_are_notebooks():
    assert [p.name for p in NOTEBOOKS if p.name == "quickstart.ipynb"] == ["quickstart.ipynb"]


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, monkeypatch):
    # The kernel inherits the environment: pin the simulated backend whatever the caller set.
    monkeypatch.setenv("DAPX_BACKEND", "simulated")
    monkeypatch.setenv("DAPX_RANKS", "4")
    notebook = nbformat.read(path, as_version=4)
    # kernel "python3" runs sys.executable (jupyter_client substitutes it for "python"),
    # so the notebook sees the same environment as the tests.
    client = nbclient.NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    errors = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    assert not errors
    # A notebook proves what it shows: it checks its results with assertions (not prints of
    # True), and every cell holding one ran.
    checking = [
        cell for cell in notebook.cells if cell.cell_type == "code" and CHECK.search(cell.source)
    ]
    assert checking, f"{path.name} checks none of its results"
    assert all(cell.get("execution_count") for cell in checking)
    assert all(cell.get("execution_count") for cell in notebook.cells if cell.cell_type == "code")
    shown = [
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    ]
    assert not any(BARE_VERDICT.search(text) for text in shown), "print a check, not assert it"
    html = [
        output["data"]["text/html"]
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if "text/html" in output.get("data", {})
    ]
    if path.name == "quickstart.ipynb":
        assert any("<svg" in h for h in html), "the decomposition picture is not shown"
    if path.name == "interop.ipynb":
        printed = "".join(
            output.get("text", "")
            for cell in notebook.cells
            if cell.cell_type == "code"
            for output in cell.get("outputs", [])
            if output.get("output_type") == "stream" and output.get("name") == "stdout"
        )
        # The bad producers are caught and their DAPError shown, and every round trip that
        # should share memory says so for each of the four ranks.
        assert "gap: DAPError: partition (2, 0)" in printed
        assert "overlap: DAPError: partition (2, 0)" in printed
        assert printed.count("shares memory, per rank: [True, True, True, True]") == 4
