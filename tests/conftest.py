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
"""

from __future__ import annotations

from pathlib import Path

import pytest

import dapx
from dapx.testing.pytest_plugin import uses_dask, uses_mpi

pytest_plugins = ["pytester"]

dapx.config.gather_warning_threshold = 0

MPI = uses_mpi()
DASK = uses_dask()  # DAPX_BACKEND=dask: the array tests run on the dask backend

if MPI:
    from hypothesis import settings

    settings.register_profile("dapx-mpi", derandomize=True, database=None)
    settings.load_profile("dapx-mpi")


@pytest.fixture
def backend(dapx_backend):
    """The plugin's `dapx_backend` under the name the array tests use."""
    return dapx_backend


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
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
