"""Suite-wide settings: hidden gathers fail, pytester is available, one backend fixture.

With the gather warning threshold at 0, every implicit conversion of a
DistributedArray to NumPy (``np.asarray(a)``, ``np.testing`` on one, ...)
emits `dapx.GatherWarning`, which ``filterwarnings = ["error"]`` turns into a
failure: tests must gather explicitly with ``.gather()``.

The array tests take ``backend``: the plugin's ``dapx_backend``, so they run
on every ``--dapx-ranks`` count (``1,2,3,4,6``, set in ``pyproject.toml``)
and, under ``mpiexec -n N`` (see tests/test_mpi.py), once on ``dapx.mpi()``.
There every process must make the same collective calls in the same order:
hypothesis is derandomized so all ranks draw the same examples, and tests
that build their own simulated backends are skipped.

Tests that start another program do so with `tests._processes.run`, which
kills the program and all it started when it runs out of time; the hooks
below tell it the running test's pytest timeout, which its own must stay below.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import dapx
from dapx.testing.pytest_plugin import uses_dask, uses_mpi
from tests import _processes

pytest_plugins = ["pytester"]

dapx.config.gather_warning_threshold = 0

MPI = uses_mpi()
DASK = uses_dask()  # DAPX_BACKEND=dask: the array tests run on the dask backend

if MPI:
    from hypothesis import settings

    settings.register_profile("dapx-mpi", derandomize=True, database=None)
    settings.load_profile("dapx-mpi")


def pytest_configure(config: pytest.Config) -> None:
    # xarray.tests, imported by test_xarray_duck_array.py, uses these marks (--strict-markers).
    config.addinivalue_line("markers", "flaky: xarray.tests' mark of flaky tests")
    config.addinivalue_line("markers", "network: xarray.tests' mark of tests that need a network")


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_timeout_set_timer(item: pytest.Item, settings) -> None:
    """Tell tests/_processes.py the test's pytest timeout: a child's must end before it."""
    _processes.set_test_timeout(settings.timeout)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_timeout_cancel_timer(item: pytest.Item) -> None:
    _processes.set_test_timeout(None)


@pytest.fixture
def backend(dapx_backend):
    """The plugin's `dapx_backend` under the name the array tests use."""
    return dapx_backend


#: Test files whose tests start their own processes (the docs build, mpiexec jobs, dask
#: clusters): with pytest-xdist (the README's ``-n 2``) they run one after another on one
#: worker, first, while the other worker takes the in-process tests, so no two of them compete
#: for the cores.
PROCESS_SUITES = ("test_docs.py", "test_mpi.py", "test_dask_backend.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.pluginmanager.hasplugin("xdist") and config.getoption("numprocesses", None):
        group = pytest.mark.xdist_group("processes")
        first = [item for item in items if item.path.name in PROCESS_SUITES]
        for item in first:
            item.add_marker(group)
        items[:] = first + [item for item in items if item.path.name not in PROCESS_SUITES]
    if not (MPI or DASK):
        return
    here = Path(__file__).resolve().parent
    own = pytest.mark.skip(
        reason="builds its own simulated backends: under mpiexec or on dask it would only "
        "repeat the simulated run"
    )
    for item in items:
        if item.path.parent == here and "dapx_backend" not in item.fixturenames:
            item.add_marker(own)
