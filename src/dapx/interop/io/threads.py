"""How many threads a process uses for I/O, and how many zarr chunks each keeps in flight.

A process that holds several ranks (the simulated backend) reads and writes
their blocks from a thread pool, one thread per core. zarr overlaps the
chunks of one call (``async.concurrency``, 10 by default) and holds each
of them decoded and encoded at once, so ten 64 MiB chunks in flight would
add more than half a gigabyte to a rank's peak. dapx lets each I/O thread
keep only as many chunks in flight as the cores it has to itself decode,
at least one: a rank's peak memory is then its block plus about
``cores`` x (chunk + encoded chunk), and every core still decodes.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

__all__ = ["io_threads", "usable_cores", "zarr_in_flight"]


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def io_threads(tasks: int) -> int:
    """Threads for `tasks` independent reads or writes in this process: one per core at most.

    >>> io_threads(1), io_threads(10**6) == usable_cores()
    (1, True)
    """
    return max(min(tasks, usable_cores()), 1)


@contextlib.contextmanager
def zarr_in_flight(threads: int) -> Iterator[None]:
    """zarr's chunks in flight per call, while `threads` threads read or write at once.

    The setting is zarr's (process-wide) ``async.concurrency``, restored on exit.
    """
    try:
        import zarr
    except ImportError:
        yield
        return
    per_thread = max(usable_cores() // max(threads, 1), 1)
    with zarr.config.set({"async.concurrency": per_thread}):
        yield
