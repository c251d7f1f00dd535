"""A pytest plugin that runs tests on several simulated rank counts, or under MPI.

Installed with dapx (entry point ``pytest11``), it adds the option
``--dapx-ranks=1,2,4`` and the fixture ``dapx_backend``: a test that asks for
it runs once per rank count (ids ``ranks=1``, ``ranks=2``, ...) with
``dapx.simulated(n)`` as the current backend, so creation functions called
without ``backend=`` use it too.

Under ``mpiexec -n N pytest`` with N > 1 (or with ``DAPX_BACKEND=mpi``) the
fixture instead has the single parameter ``mpi`` and is ``dapx.mpi()``: one
rank per process, every process running the same tests in the same order.
There each test's outcome is shared between the processes after every phase
(setup, call, teardown), so a test that fails on one rank fails on all of
them, and ``-x`` stops every process at the same test instead of leaving the
others waiting in the next test's collectives. Tests that draw random data
must draw the same on every rank (for hypothesis: ``derandomize=True``).

Examples
--------
A test file using it::

    import numpy as np
    import dapx

    def test_double(dapx_backend):
        a = dapx.arange(10)  # on dapx_backend
        assert np.array_equal((2 * a).gather(), 2 * np.arange(10))

run with ``pytest --dapx-ranks=1,3`` gives ``test_double[ranks=1]`` and
``test_double[ranks=3]``.

>>> parse_ranks("1, 3,6")
[1, 3, 6]
"""

from __future__ import annotations

import getpass
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator

import pytest

__all__ = ["dapx_backend", "parse_ranks", "uses_mpi"]

DEFAULT_RANKS = "1,2,4"
_USES_MPI = pytest.StashKey[bool]()  # decided once per session
_OWN_BASETEMP = pytest.StashKey[str]()  # a rank's own temporary directory under mpiexec


def parse_ranks(text: str) -> list[int]:
    """The rank counts of a ``--dapx-ranks`` value such as ``"1,2,4"``.

    Raises
    ------
    ValueError
        If an entry is not a positive integer, or there is none.
    """
    entries = [t.strip() for t in str(text).split(",") if t.strip()]
    ranks = []
    for t in entries:
        if not t.isdigit() or int(t) < 1:
            raise ValueError(
                f"--dapx-ranks takes positive integers separated by commas, got {text!r} "
                f"(bad entry {t!r})"
            )
        if int(t) not in ranks:
            ranks.append(int(t))
    if not ranks:
        raise ValueError(f"--dapx-ranks needs at least one rank count, got {text!r}")
    return ranks


def uses_mpi() -> bool:
    """Whether `dapx_backend` is the MPI backend in this process.

    ``DAPX_BACKEND=mpi`` or ``simulated`` decides when set; otherwise MPI
    when the process runs under mpiexec with more than one process and
    mpi4py is installed (the rule of `dapx.default_backend`).
    """
    from ..backends import is_installed, mpi_world_size

    choice = os.environ.get("DAPX_BACKEND", "").strip().lower()
    if choice:
        return choice == "mpi"
    return mpi_world_size() > 1 and is_installed("mpi4py")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dapx")
    group.addoption(
        "--dapx-ranks",
        default=DEFAULT_RANKS,
        help="comma-separated rank counts the dapx_backend fixture runs each test on "
        f"(default {DEFAULT_RANKS}); ignored under mpiexec, where it is the MPI backend",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    try:
        parse_ranks(config.getoption("dapx_ranks"))
    except ValueError as e:
        raise pytest.UsageError(str(e)) from None
    config.stash[_USES_MPI] = uses_mpi()
    if config.stash[_USES_MPI] and not config.option.basetemp:
        # Every rank would otherwise number and clean pytest's shared temporary directories
        # at once: one rank's cleanup deletes what another is scanning, and the scan's
        # unclosed iterator fails the run at exit. Each rank gets a directory of its own.
        config.option.basetemp = os.path.join(
            tempfile.gettempdir(), f"pytest-dapx-{getpass.getuser()}-{os.getpid()}"
        )
        config.stash[_OWN_BASETEMP] = config.option.basetemp


def pytest_unconfigure(config: pytest.Config) -> None:
    own = config.stash.get(_OWN_BASETEMP, None)
    if own:
        shutil.rmtree(own, ignore_errors=True)


def uses_dask() -> bool:
    """Whether `dapx_backend` is the dask backend (``DAPX_BACKEND=dask``)."""
    return os.environ.get("DAPX_BACKEND", "").strip().lower() == "dask"


_DASK_BACKEND = None


def _dask_backend():
    """One dask backend for the session: ``DAPX_RANKS`` ranks (3), one per worker process."""
    global _DASK_BACKEND
    if _DASK_BACKEND is None:
        from distributed import Client, LocalCluster

        import dapx

        nranks = int(os.environ.get("DAPX_RANKS", "3"))
        cluster = LocalCluster(n_workers=nranks, threads_per_worker=1, dashboard_address=":0")
        client = Client(cluster)
        _DASK_BACKEND = dapx.dask_backend(client)
    return _DASK_BACKEND


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "dapx_backend" not in metafunc.fixturenames:
        return
    if uses_dask():
        metafunc.parametrize("dapx_backend", ["dask"], indirect=True, ids=["dask"])
        return
    if metafunc.config.stash[_USES_MPI]:
        metafunc.parametrize("dapx_backend", ["mpi"], indirect=True, ids=["mpi"])
        return
    ranks = parse_ranks(metafunc.config.getoption("dapx_ranks"))
    metafunc.parametrize("dapx_backend", ranks, indirect=True, ids=[f"ranks={n}" for n in ranks])


@pytest.fixture
def dapx_backend(request: pytest.FixtureRequest) -> Iterator:
    """``dapx.simulated(n)`` for each ``--dapx-ranks`` count, or ``dapx.mpi()`` under
    mpiexec; current for the test."""
    import dapx

    if request.param == "dask":
        backend = _dask_backend()
    else:
        backend = dapx.mpi() if request.param == "mpi" else dapx.simulated(request.param)
    with dapx.use_backend(backend):
        yield backend


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Under MPI, a phase that failed on some rank fails on every rank.

    Every process calls this for the same phases of the same tests, so the
    exchange of outcomes is itself a well-ordered collective. A test whose
    ranks make different collective calls leaves them out of step, and no
    later test could pass: when the exchange notices (another rank sent
    something else) the job is aborted with a message naming the test.
    """
    report = yield
    if not item.config.stash.get(_USES_MPI, False):
        return report
    import dapx

    backend = dapx.mpi()
    if backend.nranks == 1:
        return report
    rank = backend.local_ranks[0]
    here = (item.nodeid, report.when)
    try:
        outcomes = backend.allgather({rank: (*here, report.failed)})
    except dapx.RankError as exc:
        # A dapx operation of this phase failed on another rank after this
        # rank had left its last collective: the report arrives here.
        report.outcome = "failed"
        report.longrepr = f"{report.when}: {exc}"
        outcomes = backend.allgather({rank: (*here, True)})
    elsewhere = [
        (r, o) for r, o in enumerate(outcomes) if not (isinstance(o, tuple) and o[:2] == here)
    ]
    if elsewhere:
        r, o = elsewhere[0]
        sys.__stderr__.write(
            f"dapx: ranks out of step after {item.nodeid} ({report.when}): rank {rank} "
            f"sent its outcome, rank {r} sent {o!r:.200}; a test made different collective "
            "calls on different ranks. Aborting the job.\n"
        )
        sys.__stderr__.flush()
        backend.comm.Abort(1)
    failed = [r for r, o in enumerate(outcomes) if o[2]]
    if report.failed or not failed:
        return report
    report.outcome = "failed"
    report.longrepr = (
        f"{report.when} failed on rank {', '.join(map(str, failed))} (passed on rank {rank})"
    )
    return report
