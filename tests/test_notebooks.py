"""The notebooks under ``notebooks/`` run top to bottom without error, and are stored clean.

Each notebook is executed with nbclient in a fresh ``python3`` kernel whose working directory is
``notebooks/``; a cell that raises (including a failed ``assert`` post-condition) fails the test.
The kernelspec is written for *this* interpreter into a temporary Jupyter path, so the test does
not depend on a ``python3`` kernelspec being installed or on which ``python`` is first on PATH.
"""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

nbformat = pytest.importorskip("nbformat")  # in the test extra; absent on the bare GPU host

NOTEBOOK_DIR = pathlib.Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
TIMEOUT_S = 600  # per cell; CI has 2 cores and the GEMM compile of notebook 04 takes seconds


def test_there_are_notebooks():
    names = [p.name for p in NOTEBOOKS]
    assert {"01_swizzle.ipynb", "02_mma_fragments.ipynb", "03_plan.ipynb",
            "04_author_a_kernel.ipynb"} <= set(names), names


@pytest.fixture(scope="module")
def kernel_name(tmp_path_factory):
    """A ``python3`` kernelspec that launches this interpreter, first on JUPYTER_PATH."""
    from ipykernel.kernelspec import write_kernel_spec

    root = tmp_path_factory.mktemp("jupyter")
    write_kernel_spec(path=str(root / "kernels" / "python3"), overrides={
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (frost tests)"})
    mp = pytest.MonkeyPatch()
    old = [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
    mp.setenv("JUPYTER_PATH", os.pathsep.join([str(root), *old]))
    mp.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    from jupyter_client.kernelspec import KernelSpecManager

    assert KernelSpecManager().get_kernel_spec("python3").argv[0] == sys.executable
    yield "python3"
    mp.undo()


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, kernel_name):
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, kernel_name=kernel_name, timeout=TIMEOUT_S,
                            resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, errors
    images = sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code"
                 for o in c.get("outputs", []))
    assert images >= 1, f"{path.name} drew no figure"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_stored_clean(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.cells and nb.cells[0].cell_type == "markdown", "must open with a markdown cell"
    assert nb.cells[0].source.strip(), "the opening markdown cell is empty"
    for i, c in enumerate(nb.cells):
        if c.cell_type == "code":
            assert not c.get("outputs"), f"cell {i} has stored outputs"
            assert c.get("execution_count") is None, f"cell {i} has an execution count"
