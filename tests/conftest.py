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

import os
import tempfile
import zlib
from pathlib import Path

import pytest

import dapx
from dapx.testing.pytest_plugin import uses_dask, uses_mpi
from tests import _processes

pytest_plugins = ["pytester"]


def _compile_each_module_once() -> None:
    """Let the processes the suite starts share compiled modules, in a cache of their own.

    With ``PYTHONDONTWRITEBYTECODE`` set (this workplace's machines set it),
    every process the suite starts (pytest-xdist workers, mpiexec ranks, dask
    workers, notebook kernels, the docs build) compiled dapx and the tests,
    and pytest rewrote their asserts, anew: 1 s per process and 2.5 s per pytest process,
    a third of a short mpiexec run. Instead they write their bytecode under
    ``PYTHONPYCACHEPREFIX``, away from the sources, which the variable keeps clean.
    """
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return
    user = os.getuid() if hasattr(os, "getuid") else "user"  # not shared between users
    cache = Path(tempfile.gettempdir()) / f"dapx-tests-pycache-{user}"
    os.environ.setdefault("PYTHONPYCACHEPREFIX", str(cache))
    del os.environ["PYTHONDONTWRITEBYTECODE"]


# Before pytest-xdist starts its workers: they inherit the environment.
_compile_each_module_once()

dapx.config.gather_warning_threshold = 0

MPI = uses_mpi()
DASK = uses_dask()  # DAPX_BACKEND=dask: the array tests run on the dask backend

if MPI:
    from hypothesis import settings

    settings.register_profile("dapx-mpi", derandomize=True, database=None)
    settings.load_profile("dapx-mpi")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--test-sample",
        default=None,
        metavar="R/K",
        help="of each test function's cases, in a fixed shuffled order, run those at "
        "positions R, R+K, R+2K, ...; a function with fewer runs its (R mod count)-th. "
        "tests/test_mpi.py runs the array tests under mpiexec with different R at each count.",
    )


def sampled(items: list[pytest.Item], sample: str) -> list[pytest.Item]:
    """The items `--test-sample` keeps (see its help): every test function keeps at least one."""
    try:
        r, k = (int(part) for part in sample.split("/"))
        if not 0 <= r < k:
            raise ValueError
    except ValueError:
        raise pytest.UsageError(f"--test-sample={sample}: expected R/K with 0 <= R < K") from None
    by_function: dict[tuple, list[pytest.Item]] = {}
    for item in items:
        by_function.setdefault((item.path, getattr(item, "originalname", item.name)), []).append(
            item
        )
    keep = set()
    for group in by_function.values():
        # In a fixed shuffled order: every K-th case in collection order could keep meeting
        # the same value of one parameter (the same layout, when there are K of them).
        order = sorted(group, key=lambda item: zlib.crc32(item.name.encode()))
        chosen = order[r::k] or [order[r % len(order)]]
        keep.update(id(item) for item in chosen)
    return [item for item in items if id(item) in keep]


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("test_sample"):
        config.pluginmanager.register(Sampling(), "dapx-test-sample")
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
#: clusters): they run first. pytest-xdist (the README's ``-n 2``) hands out whole files in
#: collection order (``--dist loadfile --no-loadscope-reorder`` in pyproject.toml), so the long
#: ones start at once, each on one worker, and the in-process files fill the time around them.
PROCESS_SUITES = ("test_docs.py", "test_mpi.py", "test_dask_backend.py")


class Sampling:
    """Applies ``--test-sample`` last, to what -k and -m selected."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list) -> None:
        kept = sampled(items, config.getoption("test_sample"))
        kept_ids = {id(item) for item in kept}
        config.hook.pytest_deselected(items=[i for i in items if id(i) not in kept_ids])
        items[:] = kept


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    first = [item for item in items if item.path.name in PROCESS_SUITES]
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
