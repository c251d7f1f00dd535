"""What ``python -m dapx info`` reports: versions and available backends."""

from __future__ import annotations

import importlib
import importlib.metadata
import platform
import shutil
import sys
from pathlib import Path

from .._version import __version__
from ..backends import available_backends

__all__ = ["info_text", "mpi_library_version"]


def _version_of(module: str) -> str | None:
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return None
    return getattr(mod, "__version__", None) or importlib.metadata.version(module)


def mpi_library_version() -> str | None:
    """The MPI library's own version string, or None without mpi4py."""
    try:
        from mpi4py import MPI
    except ImportError:
        return None
    return MPI.Get_library_version().strip().splitlines()[0]


def _mpiexec() -> str | None:
    # The mpich wheel installs mpiexec next to the interpreter of its environment.
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def info_text() -> str:
    """A human-readable report of dapx's environment.

    >>> "dapx" in info_text()
    True
    """
    rows = [
        ("dapx", __version__),
        ("python", platform.python_version()),
        ("numpy", _version_of("numpy")),
        ("xarray", _version_of("xarray")),
        ("dask", _version_of("dask")),
        ("distributed", _version_of("distributed")),
        ("mpi4py", _version_of("mpi4py")),
        ("MPI library", mpi_library_version()),
        ("mpiexec", _mpiexec()),
    ]
    from ..backends import mpi_world_size

    if mpi_world_size() > 1:
        from mpi4py import MPI

        world = MPI.COMM_WORLD
        rows.append(("MPI ranks", f"{world.Get_size()} (this process is rank {world.Get_rank()})"))
    backends = available_backends()
    usable = [name for name, ok in backends.items() if ok]
    rows.append(("backends available", ", ".join(usable) or "none implemented yet"))
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}} : {value or 'not installed'}" for name, value in rows)
