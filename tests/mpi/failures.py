"""Scripts for tests/test_mpi.py: one rank fails, nobody may hang.

Run as ``mpiexec -n N python tests/mpi/failures.py SCENARIO``; every rank
prints one line ``RESULT <rank> <exception type> <message>``.
"""

from __future__ import annotations

import sys

import numpy as np

import dapx


def before_collective(backend):
    """Rank 1 passes a bad argument; the others go on into an exchange."""
    a = dapx.arange(40.0, backend=backend)
    other = dapx.arange(40.0, backend=backend).redistribute("c")
    if backend.comm.rank == 1:
        return a + np.ones(41)  # shape error on rank 1 only
    return a + other  # the others wait in the alignment exchange


def in_user_function(backend):
    """A user function fails on one rank inside dapx; the others then gather."""

    def f(i):
        if backend.comm.rank == 1:
            raise ZeroDivisionError("user function failed")
        return i * 2.0

    a = dapx.fromfunction(f, (20,), backend=backend)
    return a.gather()


def outside_collective(backend):
    """Rank 1's operation fails before any exchange; the others need none and finish."""
    a = dapx.arange(40.0, backend=backend)
    b = np.ones(41) if backend.comm.rank == 1 else np.ones(40)
    return a + b


def killed_in_collective(backend):
    """Rank 1 dies (SIGKILL) as the others enter a reduction and then an exchange."""
    import os
    import signal

    a = dapx.arange(40.0, backend=backend)
    if backend.comm.rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    total = float(np.sum(a))
    return a.redistribute("c").gather(), total


def debug_mismatch(backend):
    """Under DAPX_DEBUG=1 ranks calling different collectives get a clear error."""
    a = dapx.arange(10.0, backend=backend)
    if backend.comm.rank == 0:
        return a.gather()
    return a.redistribute("c")


def main(scenario: str) -> None:
    backend = dapx.mpi()
    try:
        globals()[scenario](backend)
        print(f"RESULT {backend.comm.rank} none -", flush=True)
    except Exception as exc:
        text = str(exc).replace("\n", " ")
        print(f"RESULT {backend.comm.rank} {type(exc).__name__} {text}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
