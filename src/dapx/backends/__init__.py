"""Backends: where the local blocks of a distributed array live.

Each backend registers here under its name with a probe that tells whether
its runtime requirements are installed. The array logic itself lives above
this package and is written once against `dapx.backends.base.Backend`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import threading
from collections.abc import Callable, Iterator

from .base import Backend
from .simulated import SimulatedBackend, simulated

__all__ = [
    "Backend",
    "SimulatedBackend",
    "available_backends",
    "dask_backend",
    "default_backend",
    "get_backend",
    "is_installed",
    "mpi_backend",
    "mpi_world_size",
    "register_backend",
    "resolve_backend",
    "set_backend",
    "simulated",
    "use_backend",
]

_REGISTRY: dict[str, Callable[[], bool]] = {}
_current: Backend | None = None
#: Per thread: the backend of the rank a dask actor's step runs for (see `dapx.backends.dask`).
_thread_state = threading.local()


def register_backend(name: str, probe: Callable[[], bool]) -> None:
    """Register backend `name`; `probe()` says whether it can run here."""
    _REGISTRY[name] = probe


def available_backends() -> dict[str, bool]:
    """Every registered backend and whether it can run in this environment."""
    return {name: bool(probe()) for name, probe in _REGISTRY.items()}


def is_installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def mpi_world_size() -> int:
    """Processes in this job as the launcher tells it, without importing mpi4py."""
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"):
        if var in os.environ:
            return int(os.environ[var])
    return 1


def mpi_backend(comm=None) -> Backend:
    """The MPI backend over `comm` (default ``COMM_WORLD``); imports mpi4py now.

    See `dapx.backends.mpi.MPIBackend`.
    """
    from .mpi import mpi as _mpi

    return _mpi(comm)


def dask_backend(client=None, nranks: int | None = None) -> Backend:
    """The dask backend: ranks on dask.distributed workers; imports distributed now.

    See `dapx.backends.dask.DaskBackend`.
    """
    from .dask import dask_backend as _dask_backend

    return _dask_backend(client, nranks)


def default_backend() -> Backend:
    """The backend used when none is given.

    ``DAPX_BACKEND=mpi|simulated|dask`` decides when set (dask: a new
    LocalCluster). Otherwise MPI when the process runs under mpiexec with
    more than one process and mpi4py is installed, else the simulated
    backend with ``DAPX_RANKS`` ranks (4).
    """
    choice = os.environ.get("DAPX_BACKEND", "").strip().lower()
    if choice not in ("", "mpi", "simulated", "dask"):
        raise ValueError(f"DAPX_BACKEND must be 'mpi', 'simulated' or 'dask', got {choice!r}")
    if choice == "dask":
        return dask_backend()
    if choice == "mpi" or (not choice and mpi_world_size() > 1 and is_installed("mpi4py")):
        return mpi_backend()
    return simulated()


def resolve_backend(backend: Backend | None) -> Backend:
    """`backend` itself, or the current backend when it is None (a TypeError for anything else)."""
    if backend is None:
        return get_backend()
    if not isinstance(backend, Backend):
        raise TypeError(f"backend must be a dapx backend, got {backend!r}")
    return backend


def get_backend() -> Backend:
    """The current backend: the one set by `set_backend`, else `default_backend()`."""
    global _current
    rank_backend = getattr(_thread_state, "backend", None)
    if rank_backend is not None:
        return rank_backend
    if _current is None:
        _current = default_backend()
    return _current


def set_backend(backend: Backend) -> None:
    """Make `backend` the current backend for creation functions."""
    global _current
    if not isinstance(backend, Backend):
        raise TypeError(f"expected a dapx backend, got {backend!r}")
    _current = backend


@contextlib.contextmanager
def use_backend(backend: Backend) -> Iterator[Backend]:
    """Use `backend` inside a ``with`` block, then restore the previous one."""
    global _current
    if not isinstance(backend, Backend):
        raise TypeError(f"expected a dapx backend, got {backend!r}")
    previous, _current = _current, backend
    try:
        yield backend
    finally:
        _current = previous


register_backend("simulated", lambda: True)
register_backend("mpi", lambda: is_installed("mpi4py"))
register_backend("dask", lambda: is_installed("distributed"))
