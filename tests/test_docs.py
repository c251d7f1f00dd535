"""The documentation site builds offline with no warning, and its API reference is complete.

The site is built once for this module, as the README's command builds it
(``python -m sphinx -W --keep-going docs ...``), from copies of ``docs/`` and
``notebooks/`` in a temporary directory, so that the build neither writes into
the checkout nor meets a build another process runs there. Every page is
built: the guide's pages and the notebooks are executed, and any warning fails
the build. Web proxies that point nowhere make any fetch from the network (an
intersphinx inventory, a remote image) fail, which is a warning too.

The notebooks in ``notebooks/`` are checked on the copies the build executed
(``jupyter_execute/``, on 4 simulated ranks): every cell ran without an error,
each notebook checks its results with assertions (not printed ``True``), and
the pictures and messages it promises are there. (They used to run a second
time, in a test of their own, for the same checks.)

The reference's completeness is read off the ``objects.inv`` the build writes:
every name in ``dapx.__all__``, every public attribute and method of the
classes among them, of the backends' classes, of ``dapx.random.Generator``, of
``dapx.config`` and of the ``.dap`` accessors, every name of
``dapx.protocol``, ``dapx.random``, ``dapx.testing`` and the pytest plugin,
the array API functions dapx writes, and the plugin's command-line options.
"""

from __future__ import annotations

import inspect
import os
import posixpath
import re
import shutil
import sys
from pathlib import Path

import nbformat
import pytest
from sphinx.util.inventory import InventoryFile  # the docs extra, part of the test extra

import dapx
from tests import _processes

ROOT = Path(__file__).resolve().parent.parent

#: Seconds the build may take: about 80 s alone on this machine's 2 cores, more beside the suite.
BUILD_TIMEOUT = 840

# The build runs notebook kernels: with pytest-xdist this file runs on one worker, early (see
# tests/conftest.py), and builds the site once.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(BUILD_TIMEOUT + 60)]

#: Members of Python's own classes, which the reference does not repeat for every class.
FOREIGN = set(dir(Exception)) | set(dir(tuple)) | set(dir(object))


NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: How a cell checks a result: assert, an assert_* helper, or an else: raise AssertionError.
CHECK = re.compile(r"^\s*assert\b|\.assert_\w+\(|raise AssertionError", re.M)
#: A printed verdict that nobody checks, e.g. "identical: True" or "(4, 6) False".
BARE_VERDICT = re.compile(r"(:|->)\s*(True|False)\s*$|\b(True|False)\s*$", re.M)


class Site:
    """A built site: its output directory, the build's output and its inventory."""

    def __init__(self, html: Path, result, warnings: str):
        self.html = html
        self.executed = html.parent / "jupyter_execute"  # myst-nb's executed notebooks
        self.result = result
        self.warnings = warnings
        self.objects: dict[str, set[str]] = {}  # object type (domain:role) -> names
        inventory = html / "objects.inv"
        if inventory.exists():
            with inventory.open("rb") as f:
                loaded = InventoryFile.load(f, "", posixpath.join)
            for kind, entries in getattr(loaded, "data", loaded).items():
                self.objects[kind] = set(entries)

    def names(self, domain: str = "py") -> set[str]:
        """Every object name the site documents in `domain`."""
        return {
            n
            for kind, names in self.objects.items()
            if kind.startswith(domain + ":")
            for n in names
        }


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Site:
    work = tmp_path_factory.mktemp("docs")
    # The build writes into its source directory (autosummary's pages, the notebooks' copies):
    # build copies, as a fresh clone would have them.
    ignore = shutil.ignore_patterns("_build", "generated", "jupyter_execute", ".ipynb_checkpoints")
    shutil.copytree(ROOT / "docs", work / "docs", ignore=ignore)
    shutil.rmtree(work / "docs" / "notebooks", ignore_errors=True)
    shutil.copytree(ROOT / "notebooks", work / "notebooks", ignore=ignore)
    # A clone has no empty folders (git keeps none): neither have the copies.
    for folder in sorted((work / "docs").rglob("*"), key=lambda p: -len(p.parts)):
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    html = work / "html"
    warning_file = work / "warnings.txt"
    env = dict(os.environ)
    # The notebooks and the guide run on 4 simulated ranks, whatever the caller set.
    env.update(DAPX_BACKEND="simulated", DAPX_RANKS="4")
    # Offline: a fetch from the network would go through a proxy that is not there.
    dead = "http://127.0.0.1:9"
    env.update(http_proxy=dead, https_proxy=dead, HTTP_PROXY=dead, HTTPS_PROXY=dead)
    env.update(no_proxy="localhost,127.0.0.1", NO_PROXY="localhost,127.0.0.1")
    command = [
        sys.executable,
        "-m",
        "sphinx",
        "-W",
        "--keep-going",
        "-q",
        "-w",
        str(warning_file),
        "-d",
        str(work / "doctrees"),
        str(work / "docs"),
        str(html),
    ]
    result = _processes.run(command, timeout=BUILD_TIMEOUT, cwd=work, env=env)
    warnings = warning_file.read_text() if warning_file.exists() else ""
    return Site(html, result, warnings)


def test_the_readme_builds_the_site_as_this_test_does():
    readme = (ROOT / "README.md").read_text()
    commands = [line for line in readme.splitlines() if "-m sphinx" in line]
    assert commands, "the README names no command that builds the site"
    assert all("-m sphinx -W --keep-going docs docs/_build/html" in c for c in commands)
    assert any('pip install -q -e ".[docs]"' in c for c in commands)


def test_the_site_builds_without_a_warning(site):
    output = (site.result.stdout + site.result.stderr)[-8000:]
    assert site.warnings.strip() == "", site.warnings[-8000:]
    assert site.result.returncode == 0, output
    assert (site.html / "index.html").exists()
    for page in ("api/index", "api/array", "api/numpy", "api/xarray", "api/testing", "api/cli"):
        assert (site.html / f"{page}.html").exists(), page
    # The notebooks ran during the build: their pages hold outputs.
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        text = (site.html / "notebooks" / f"{notebook.stem}.html").read_text()
        assert "cell_output" in text, f"{notebook.name} shows no output"


def test_there_are_notebooks():
    assert [p.name for p in NOTEBOOKS if p.name == "quickstart.ipynb"] == ["quickstart.ipynb"]


def _code_outputs(notebook, kind: str | None = None) -> list:
    return [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if kind is None or output.get("output_type") == kind
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_notebook_ran_and_checks_its_results(site, path):
    executed = site.executed / "notebooks" / path.name
    assert executed.exists(), f"the build did not execute {path.name}"
    notebook = nbformat.read(executed, as_version=4)
    assert [c.source for c in notebook.cells] == [
        c.source for c in nbformat.read(path, as_version=4).cells
    ], f"{path.name}: the executed copy is not the notebook in notebooks/"
    assert not _code_outputs(notebook, "error")
    # A notebook proves what it shows: it checks its results with assertions (not prints of
    # True), and every cell holding one ran.
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    checking = [cell for cell in code if CHECK.search(cell.source)]
    assert checking, f"{path.name} checks none of its results"
    assert all(cell.get("execution_count") for cell in code)
    shown = [output.get("text", "") for output in _code_outputs(notebook)]
    assert not any(BARE_VERDICT.search(text) for text in shown), "print a check, not assert it"
    html = [
        o["data"]["text/html"] for o in _code_outputs(notebook) if "text/html" in o.get("data", {})
    ]
    if path.name == "quickstart.ipynb":
        assert any("<svg" in h for h in html), "the decomposition picture is not shown"
    if path.name == "interop.ipynb":
        printed = "".join(
            o.get("text", "")
            for o in _code_outputs(notebook, "stream")
            if o.get("name") == "stdout"
        )
        # The bad producers are caught and their DAPError shown, and every round trip that
        # should share memory says so for each of the four ranks.
        assert "gap: DAPError: partition (2, 0)" in printed
        assert "overlap: DAPError: partition (2, 0)" in printed
        assert printed.count("shares memory, per rank: [True, True, True, True]") == 4


def _public_members(cls: type, *, own_only: bool = False) -> set[str]:
    names = vars(cls) if own_only else dir(cls)
    return {n for n in names if not n.startswith("_") and n not in FOREIGN}


def test_every_public_name_is_in_the_reference(site):
    documented = site.names()
    assert documented, "the build wrote no inventory"
    missing = [n for n in dapx.__all__ if f"dapx.{n}" not in documented]
    assert not missing, f"not in the API reference: {missing}"
    for module, public in [
        ("dapx.protocol", dapx.protocol.__all__),
        ("dapx.random", dapx.random.__all__),
        ("dapx.testing", dapx.testing.__all__),
        ("dapx.testing.pytest_plugin", dapx.testing.pytest_plugin.__all__),
    ]:
        for name in public:
            obj = getattr(sys.modules[module], name)
            # A name that is also dapx's own (dapx.protocol.DAPError) is documented there.
            alias = getattr(dapx, name, None) is obj
            assert f"{module}.{name}" in documented or alias, f"{module}.{name}"


def test_every_public_member_of_the_classes_is_in_the_reference(site):
    documented = site.names()
    from dapx.backends.dask import DaskBackend
    from dapx.backends.mpi import MPIBackend

    classes = {f"dapx.{n}": getattr(dapx, n) for n in dapx.__all__}
    classes = {n: c for n, c in classes.items() if inspect.isclass(c)}
    classes.update(
        {
            "dapx.random.Generator": dapx.random.Generator,
            "dapx.backends.SimulatedBackend": dapx.backends.SimulatedBackend,
            "dapx.backends.mpi.MPIBackend": MPIBackend,
            "dapx.backends.dask.DaskBackend": DaskBackend,
        }
    )
    missing = [
        f"{name}.{member}"
        for name, cls in classes.items()
        if not issubclass(cls, BaseException)
        for member in sorted(_public_members(cls))
        if f"{name}.{member}" not in documented
    ]
    assert not missing, f"not in the API reference: {missing}"
    for protocol in ("__distarray__", "__partitioned__", "__array_namespace__"):
        assert f"dapx.DistributedArray.{protocol}" in documented
    settings = sorted(_public_members(type(dapx.config)))
    assert settings, "dapx.config has no settings?"
    missing = [f"dapx.config.{n}" for n in settings if f"dapx.config.{n}" not in documented]
    assert not missing, f"not in the API reference: {missing}"


def test_the_accessors_and_the_chunk_manager_are_in_the_reference(site):
    pytest.importorskip("xarray")
    from dapx.interop.xarray.accessor import DataArrayAccessor, DatasetAccessor
    from dapx.interop.xarray.chunkmanager import DapxChunkManager

    documented = site.names()
    expected = [f"xarray.DataArray.dap.{m}" for m in sorted(_public_members(DataArrayAccessor))]
    expected += [f"xarray.Dataset.dap.{m}" for m in sorted(_public_members(DatasetAccessor))]
    manager = "dapx.interop.xarray.chunkmanager.DapxChunkManager"
    expected += [manager, "dapx.interop.xarray.chunkmanager.grid_of_chunks"]
    expected += [
        f"{manager}.{m}"
        for m in sorted(_public_members(DapxChunkManager, own_only=True))
        if m not in ("array_cls", "available")
    ]
    missing = [n for n in expected if n not in documented]
    assert not missing, f"not in the API reference: {missing}"


def test_the_array_api_namespace_is_in_the_reference(site):
    from dapx.interop import array_api

    documented = site.names()
    page = (site.html / "api" / "array_api.html").read_text()
    for name in sorted(set(array_api.__all__)):
        obj = getattr(array_api, name)
        if (getattr(obj, "__module__", "") or "").startswith("dapx"):
            assert f"dapx.interop.array_api.{name}" in documented, name
        else:  # forwarded to NumPy, a dtype, a constant or an extension module: named on the page
            assert re.search(rf">{re.escape(name)}<", page), name


def test_every_numpy_function_dapx_implements_is_listed(site):
    from dapx.core.dispatch import HANDLED_FUNCTIONS

    page = (site.html / "api" / "numpy.html").read_text()
    missing = sorted(
        {f.__name__ for f in HANDLED_FUNCTIONS if not re.search(rf">{f.__name__}<", page)}
    )
    assert not missing, missing


def test_every_pytest_option_of_the_plugin_is_in_the_reference(site):
    result = _processes.run(
        [sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"],
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    options = set(re.findall(r"(--dapx-[a-z0-9-]+)", result.stdout))
    assert "--dapx-ranks" in options
    documented = site.objects.get("std:cmdoption", set())
    missing = sorted(o for o in options if f"pytest.{o}" not in documented)
    assert not missing, missing


def test_the_command_line_page_shows_every_option(site):
    result = _processes.run([sys.executable, "-m", "dapx", "demo", "--help"], timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    options = set(re.findall(r"(--[a-z][a-z-]+)", result.stdout))
    assert {"--size", "--steps", "--ranks"} <= options
    page = (site.html / "api" / "cli.html").read_text()
    missing = sorted(o for o in options if o not in page)
    assert not missing, missing
