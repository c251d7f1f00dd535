"""The simulated backend: every rank lives in this process.

It is what laptops, notebooks and tests use. Collectives are plain Python:
an allgather is a list in rank order and an all-to-all transposes a dict of
dicts without copying the pieces.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np

from .base import Backend

__all__ = ["SimulatedBackend", "simulated"]


class SimulatedBackend(Backend):
    """`nranks` ranks simulated in one process.

    Examples
    --------
    >>> b = SimulatedBackend(3)
    >>> b.local_ranks
    (0, 1, 2)
    >>> b.allgather({0: "a", 1: "b", 2: "c"})
    ['a', 'b', 'c']
    """

    name = "simulated"
    __slots__ = ("_nranks", "_ranks")

    def __init__(self, nranks: int):
        if isinstance(nranks, bool) or not isinstance(nranks, (int, np.integer)) or nranks < 1:
            raise ValueError(f"nranks must be a positive integer, got {nranks!r}")
        self._nranks = int(nranks)
        self._ranks = tuple(range(self._nranks))

    @property
    def nranks(self) -> int:
        return self._nranks

    @property
    def local_ranks(self) -> tuple[int, ...]:
        return self._ranks

    def _check_all(self, values: Mapping, what: str) -> None:
        if len(values) != self._nranks:
            missing = sorted(set(self._ranks) - set(values))
            raise ValueError(f"{what}: the simulated backend needs a value for ranks {missing}")

    def allgather(self, values):
        self._check_all(values, "allgather")
        return [values[r] for r in self._ranks]

    def alltoallv(self, sends, recvcounts, sparse=False):
        self._check_all(sends, "alltoallv")
        received: dict[int, dict[int, np.ndarray]] = {r: {} for r in self._ranks}
        for src in self._ranks:
            buffer, counts = sends[src]
            offsets = np.concatenate(([0], np.cumsum(counts)))
            for dst in np.flatnonzero(counts).tolist():
                expected = int(recvcounts[dst][src])
                if expected != counts[dst]:
                    raise ValueError(
                        f"alltoallv: rank {src} sends {int(counts[dst])} elements to rank {dst}, "
                        f"which expects {expected}"
                    )
                received[dst][src] = buffer[offsets[dst] : offsets[dst + 1]]
        return received

    def bcast(self, value, root):
        return value

    def barrier(self):
        return None

    def is_local(self, rank):
        return 0 <= rank < self._nranks

    def __eq__(self, other):
        return type(other) is type(self) and other._nranks == self._nranks

    def __hash__(self):
        return hash(("simulated", self._nranks))


def simulated(nranks: int | None = None, grid=None) -> SimulatedBackend:
    """A backend that simulates `nranks` ranks in this process.

    Parameters
    ----------
    nranks : int, optional
        Default: the product of `grid` when given, else ``DAPX_RANKS`` or 4.
    grid : sequence of int, optional
        A process grid whose size sets `nranks` (grids themselves belong to
        arrays; this only fixes the count).

    Examples
    --------
    >>> simulated(2).nranks, simulated(grid=(2, 3)).nranks
    (2, 6)
    """
    if grid is not None:
        count = int(np.prod(grid))
        if nranks is not None and nranks != count:
            raise ValueError(f"nranks={nranks} disagrees with grid {tuple(grid)} ({count} ranks)")
        nranks = count
    if nranks is None:
        nranks = int(os.environ.get("DAPX_RANKS", "4"))
    return SimulatedBackend(nranks)
