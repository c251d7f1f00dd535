"""The backend interface: where the local blocks of distributed arrays live.

A backend owns ranks ``0 .. nranks-1``; this process runs the ranks listed in
`Backend.local_ranks` (all of them on the simulated backend, one per process
under MPI). Array logic above this package talks to blocks only through the
methods here, so that it is written once for every backend.

Every collective is SPMD: each process calls it with the values of *its own*
local ranks (a dict keyed by rank) and gets back what those ranks receive.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..layout.grid import Cartesian

__all__ = ["Backend", "Cartesian", "RemoteArrays", "remote_arrays"]


class RemoteArrays:
    """How a backend whose ranks live in other processes meets the array layer.

    Backends import nothing above `dapx.layout`; `dapx.core` registers here
    the array type the ranks hold and the client-side handle type
    (`register`). `in_use` turns true once such a backend exists: only then
    do public calls look for arrays held elsewhere (`dapx.core.guard`).
    """

    array_type: type | None = None
    handle_type: type | None = None
    in_use: bool = False

    def register(self, array_type: type, handle_type: type) -> None:
        """Register the arrays (`array_type`) and their client handles (`handle_type`).

        ``handle_type(dist, backend, dtype, remote_id)`` builds a handle; its
        ``remote_id`` and ``backend`` attributes give them back.
        """
        self.array_type, self.handle_type = array_type, handle_type


#: The one registry of the array types remote backends exchange (see `RemoteArrays`).
remote_arrays = RemoteArrays()


class Backend(ABC):
    """Abstract backend: a small required core and defaults built on it.

    Required: `nranks`, `local_ranks`, `allgather`, `alltoallv`, `bcast`,
    `barrier`. The default `combine` reduces partials in rank order; the
    default `allgather_array` stacks what `allgather` returns (the MPI backend
    moves such arrays as raw bytes instead of pickles). Per-rank
    work is not the backend's: the array layer runs it on the blocks of
    `local_ranks` itself, the same on every backend.
    """

    #: The backend's name: ``"simulated"``, ``"mpi"`` or ``"dask"``.
    name: str = "abstract"

    @property
    @abstractmethod
    def nranks(self) -> int:
        """Total number of ranks."""

    @property
    @abstractmethod
    def local_ranks(self) -> tuple[int, ...]:
        """The ranks whose blocks this process holds, ascending."""

    @abstractmethod
    def allgather(self, values: Mapping[int, Any]) -> list:
        """Every rank's value, in rank order, on every process.

        `values` maps each local rank to a small object (metadata, partials).
        """

    @abstractmethod
    def alltoallv(
        self,
        sends: Mapping[int, tuple[np.ndarray, np.ndarray]],
        recvcounts: Mapping[int, np.ndarray],
        sparse: bool | Cartesian = False,
    ) -> dict[int, dict[int, np.ndarray]]:
        """Exchange index-addressed pieces between all ranks.

        ``sends[src] = (buffer, counts)`` for each local rank: a 1-D buffer
        holding the pieces for every rank back to back in rank order, and
        ``counts[dst]`` the length of each. ``recvcounts[dst][src]`` is what
        each local rank expects from each source (plans know it, so no
        sizes are exchanged). Returns ``result[dst][src]``, 1-D views, for
        every source with a non-zero count. ``sparse=True`` says that each
        rank talks to few others (a halo exchange): multi-process backends
        then send point to point instead of a collective; a `Cartesian`
        (true too) says moreover that the ranks are the row-major grid
        positions of that process grid, so MPI sends over a Cartesian
        communicator. Every rank must pass the same value.
        """

    @abstractmethod
    def bcast(self, value: Any, root: int) -> Any:
        """`value` as known on rank `root`, on every process."""

    @abstractmethod
    def barrier(self) -> None:
        """Wait until every rank arrives."""

    # -- defaults built on the core -------------------------------------------------
    def allgather_array(self, values: Mapping[int, np.ndarray]) -> np.ndarray:
        """Every rank's small array, stacked in rank order, on every process.

        Parameters
        ----------
        values : mapping of int to array_like
            One array per local rank. Every rank of the job passes the same
            shape and dtype (numeric, bool or other fixed-size dtypes; not
            object), so that multi-process backends can move the values as
            raw bytes, without pickling and without first exchanging sizes.

        Returns
        -------
        numpy.ndarray
            Shape ``(nranks, *shape)``: row ``r`` is rank ``r``'s array.

        Raises
        ------
        ValueError
            When ranks pass different shapes or dtypes (backends that see every
            value check; MPI can only check under ``DAPX_DEBUG``).
        TypeError
            For object arrays, whose elements are not data that can be sent as bytes.
        """
        gathered = [np.asarray(v) for v in self.allgather(values)]
        first = gathered[0]
        if first.dtype.hasobject:
            raise TypeError(
                f"allgather_array moves fixed-size data only, not arrays of dtype {first.dtype}"
            )
        for rank, v in enumerate(gathered):
            if v.shape != first.shape or v.dtype != first.dtype:
                raise ValueError(
                    f"allgather_array: rank {rank} passes shape {v.shape} and dtype {v.dtype}, "
                    f"rank 0 shape {first.shape} and dtype {first.dtype}; every rank must pass "
                    "the same"
                )
        return np.stack(gathered)

    def bcast_array(self, value: np.ndarray | None, root: int, shape, dtype) -> np.ndarray:
        """Rank `root`'s array of a `shape` and `dtype` every rank knows, on every process.

        Parameters
        ----------
        value : numpy.ndarray or None
            The array on the process holding `root` (cast to `dtype`);
            ignored elsewhere.
        root : int
            The rank whose array is sent.
        shape : tuple of int
        dtype : dtype
            What every rank passes alike (numeric or other fixed-size
            dtypes), so that multi-process backends move raw bytes in one
            broadcast, without pickling or a size first.

        Returns
        -------
        numpy.ndarray
            The array; on the root's process possibly `value` itself.

        Raises
        ------
        TypeError
            For an object dtype, whose elements are not data sent as bytes.
        """
        if np.dtype(dtype).hasobject:
            raise TypeError(f"bcast_array moves fixed-size data only, not arrays of dtype {dtype}")
        if self.is_local(root):
            value = np.asarray(value, dtype=dtype).reshape(shape)
        return np.asarray(self.bcast(value, root))

    def combine(self, partials: Mapping[int, Any], op: Callable[[Any, Any], Any]) -> Any:
        """Reduce one partial per rank with `op`, strictly in rank order.

        Partials that are None (ranks with nothing to contribute) are skipped;
        the result is None when every partial is.
        """
        present = [p for p in self.allgather(partials) if p is not None]
        return functools.reduce(op, present) if present else None

    def recover(self, exc: BaseException | None) -> BaseException | None:
        """What to raise when a dapx operation failed with `exc` on this process.

        Backends whose ranks share one process have nobody to warn: the
        exception is raised as it is. Multi-process backends override this
        so that no other rank waits forever (see `dapx.backends.mpi`).
        """
        return exc

    def call(self, func: Callable, args=(), kwargs=None) -> Any:
        """Run a public dapx call on ranks held by other processes (see `dapx.core.guard`).

        Only a backend whose process holds no rank (``local_ranks == ()``, the
        dask client) needs it: `collective` ships such calls here instead of
        running the array logic locally.
        """
        raise NotImplementedError(
            f"{type(self).__name__} holds no rank in this process and cannot ship calls"
        )

    def fetch(self, array_id, rank: int, padded: bool = False) -> np.ndarray:
        """A copy of `rank`'s block of a remotely held array (its handle's ``remote_id``).

        Only a backend whose process holds no rank (the dask client) needs it:
        `dapx.core.remote.RemoteArray` fetches blocks with it.
        """
        raise NotImplementedError(f"{type(self).__name__} holds its blocks in this process")

    def set_operation(self, description):
        """Record the dapx operation in progress (for debugging checks); return the old one."""
        return None

    def is_local(self, rank: int) -> bool:
        """Whether `rank` is one of this process's ranks (`local_ranks`)."""
        return rank in self.local_ranks

    def __repr__(self) -> str:
        return f"{type(self).__name__}(nranks={self.nranks})"
