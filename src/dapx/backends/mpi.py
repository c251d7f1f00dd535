"""The MPI backend: one rank per process, over an mpi4py communicator.

Array data moves only through buffer-based calls (``Ialltoallv`` on the
packed buffers the plans produce); pickle carries only small metadata and
per-rank partials, which every process then combines in rank order so
results are bitwise identical to the simulated backend.

Every collective is non-blocking and waited on in a loop that also watches
an error channel: when a dapx operation fails on one rank, that rank tells
every other (`report_failure`) and all of them raise `dapx.RankError`
instead of waiting forever in a collective the failed rank will never join.
The loop sleeps between polls, so oversubscribed ranks do not spin.
"""

from __future__ import annotations

import functools
import os
import pickle
import sys
import time
import traceback
from typing import Any

import numpy as np

from ..errors import RankError
from .base import Backend, Cartesian

__all__ = ["MPIBackend", "mpi"]

_ERROR_TAG = 7301
_NEIGHBOUR_TAG = 7302
_SPIN_SECONDS = float(os.environ.get("DAPX_SPIN", "10"))
#: How long `MPIBackend._wait` polls only the request before it also watches the
#: error channel and yields the core (see there).
_HOT_SECONDS = float(os.environ.get("DAPX_HOT_SPIN", "100e-6"))


class _AllOf:
    """A set of requests that `MPIBackend._wait` can poll as one."""

    def __init__(self, MPI, requests):
        self._MPI = MPI
        self._requests = requests

    def Test(self) -> bool:
        return self._MPI.Request.Testall(self._requests)


class MPIBackend(Backend):
    """A backend over an mpi4py communicator (default ``COMM_WORLD``).

    The communicator is duplicated, so dapx's messages never mix with the
    application's, and a second duplicate carries failure reports.
    """

    name = "mpi"

    def __init__(self, comm=None):
        from mpi4py import MPI

        self._MPI = MPI
        base = MPI.COMM_WORLD if comm is None else comm
        self._user_comm = base
        self._comm = base.Dup()
        self._errors = base.Dup()
        self._rank = self._comm.Get_rank()
        self._size = self._comm.Get_size()
        self._reports_seen = 0
        self._failure: BaseException | None = None
        self._debug = os.environ.get("DAPX_DEBUG", "") not in ("", "0")
        self._operation: Any = None
        self._carts: dict = {}

    # -- core ---------------------------------------------------------------------------
    @property
    def nranks(self) -> int:
        return self._size

    @property
    def local_ranks(self) -> tuple[int, ...]:
        return (self._rank,)

    @property
    def comm(self):
        """dapx's private duplicate of the user's communicator."""
        return self._comm

    def is_local(self, rank: int) -> bool:
        return rank == self._rank

    def allgather(self, values):
        self._enter("allgather")
        return self._allgather_objects(values[self._rank])

    def allgather_array(self, values):
        """Every rank's small array as raw bytes: one ``Iallgather``, no pickle, no sizes.

        Every rank passes the same shape and dtype (the caller's contract); under
        ``DAPX_DEBUG`` the same-call check compares them, so a mismatch raises
        instead of scrambling bytes.
        """
        value = np.asarray(values[self._rank])
        if not value.flags.c_contiguous:  # (ascontiguousarray would make 0-d arrays 1-d)
            value = value.copy()
        if value.dtype.hasobject:
            raise TypeError(
                f"allgather_array moves fixed-size data only, not arrays of dtype {value.dtype}"
            )
        if self._debug:  # (the description costs a little; the hot path skips it)
            self._enter(("allgather_array", value.shape, value.dtype.str))
        gathered = np.empty((self._size, *value.shape), value.dtype)
        if self._size == 1:
            gathered[0] = value
            return gathered
        nbytes = value.nbytes
        if nbytes:
            # Bytes on both sides: any fixed-size dtype (structured, datetime, bool) travels
            # unchanged, and the counts are the same on every rank by contract.
            byte = self._MPI.BYTE
            self._wait(self._comm.Iallgather([value, nbytes, byte], [gathered, nbytes, byte]))
        return gathered

    def alltoallv(self, sends, recvcounts, sparse=False):
        buffer, counts = sends[self._rank]
        if buffer.dtype.hasobject and self._size > 1:
            # Note: the simulated backend moves object arrays; here their elements would
            # travel as raw pointers, meaningless in another process. The dtype is the
            # same on every rank, so every rank raises here, before any communication.
            raise TypeError(
                f"the MPI backend cannot move arrays of dtype {buffer.dtype}: their elements "
                "are Python objects, not data that can be sent as bytes; convert the array "
                "to a numeric, bool, fixed-width string or datetime dtype first"
            )
        self._enter("alltoallv")
        rcounts = np.asarray(recvcounts[self._rank], dtype=np.intp)
        recv = np.empty(int(rcounts.sum()), buffer.dtype)
        sdispl = np.concatenate(([0], np.cumsum(counts)[:-1]))
        rdispl = np.concatenate(([0], np.cumsum(rcounts)[:-1]))
        if self._size == 1:
            recv[...] = buffer
        elif sparse:
            comm = self._comm
            if isinstance(sparse, Cartesian) and len(sparse.shape) > 1:
                comm = self.cart_comm(tuple(sparse.shape), tuple(sparse.periods))
            self._exchange_with_neighbours(comm, buffer, counts, sdispl, recv, rcounts, rdispl)
        else:
            elem = _element_type(self._MPI, buffer.dtype.itemsize)
            req = self._comm.Ialltoallv(
                [buffer, (counts.astype(np.int64), sdispl.astype(np.int64)), elem],
                [recv, (rcounts.astype(np.int64), rdispl.astype(np.int64)), elem],
            )
            self._wait(req)
        offsets = np.concatenate(([0], np.cumsum(rcounts)))
        return {
            self._rank: {
                s: recv[offsets[s] : offsets[s + 1]] for s in np.flatnonzero(rcounts).tolist()
            }
        }

    def _exchange_with_neighbours(self, comm, buffer, counts, sdispl, recv, rcounts, rdispl):
        """Point-to-point messages to and from the ranks with non-zero counts only."""
        me = self._rank
        requests = []
        for src in np.flatnonzero(rcounts).tolist():
            piece = recv[rdispl[src] : rdispl[src] + rcounts[src]]
            if src == me:
                piece[...] = buffer[sdispl[me] : sdispl[me] + counts[me]]
            else:
                requests.append(comm.Irecv(piece, source=src, tag=_NEIGHBOUR_TAG))
        for dst in np.flatnonzero(counts).tolist():
            if dst != me:
                piece = buffer[sdispl[dst] : sdispl[dst] + counts[dst]]
                requests.append(comm.Isend(piece, dest=dst, tag=_NEIGHBOUR_TAG))
        if requests:
            self._wait(_AllOf(self._MPI, requests))

    def bcast(self, value, root):
        self._enter("bcast")
        if self._size == 1:
            return value
        payload = pickle.dumps(value, protocol=5) if self._rank == root else b""
        size = np.array([len(payload)], np.int64)
        self._wait(self._comm.Ibcast([size, self._MPI.INT64_T], root=root))
        data = bytearray(payload) if self._rank == root else bytearray(int(size[0]))
        self._wait(self._comm.Ibcast([data, self._MPI.BYTE], root=root))
        return value if self._rank == root else pickle.loads(data)

    def bcast_array(self, value, root, shape, dtype):
        """Rank `root`'s array as raw bytes: one ``Ibcast``, no pickle, no size first."""
        dtype = np.dtype(dtype)
        if dtype.hasobject:
            raise TypeError(f"bcast_array moves fixed-size data only, not arrays of dtype {dtype}")
        if self._debug:
            self._enter(("bcast_array", tuple(shape), dtype.str, root))
        if self._rank == root:
            buffer = np.ascontiguousarray(value, dtype=dtype).reshape(shape)
        else:
            buffer = np.empty(shape, dtype)
        if self._size > 1 and buffer.nbytes:
            byte = self._MPI.BYTE
            self._wait(self._comm.Ibcast([buffer, buffer.nbytes, byte], root=root))
        return buffer

    def barrier(self):
        self._enter("barrier")
        if self._size > 1:
            self._wait(self._comm.Ibarrier())

    # -- topology -----------------------------------------------------------------------
    def cart_comm(self, grid_shape: tuple[int, ...], periods: tuple[bool, ...]):
        """A Cartesian communicator for `grid_shape`, row-major like the DAP (no reorder).

        Built collectively the first time a grid is used (every rank reaches
        it in the same halo exchange) and kept until a failure replaces the
        communicator. Its ranks are this backend's ranks, so a DAP grid
        position addresses the same process in both.
        """
        key = (tuple(int(n) for n in grid_shape), tuple(bool(p) for p in periods))
        cart = self._carts.get(key)
        if cart is None:
            if int(np.prod(key[0])) != self._size:
                raise ValueError(f"grid {key[0]} does not have {self._size} ranks")
            cart = self._comm.Create_cart(list(key[0]), list(key[1]), reorder=False)
            self._carts[key] = cart
        return cart

    # -- failure handling ---------------------------------------------------------------
    def recover(self, exc: BaseException | None) -> BaseException:
        """Bring every rank out of a failed operation; return what this rank raises.

        Called by the failing rank(s) with their exception and by the others
        when a failure report reaches them inside a collective. All ranks
        then agree on who failed: when every rank failed (a consistent error
        such as a shape mismatch) each raises its own exception and the
        backend stays usable; otherwise every rank raises `RankError` naming
        the first failed rank, and dapx continues on a fresh communicator.
        A rank that never joins (stuck outside dapx) makes the job abort
        after ``DAPX_FAILURE_TIMEOUT`` seconds (default 8) rather than hang.
        """
        message = None if exc is None else f"{type(exc).__name__}: {exc}"
        reports = []
        if message is not None:
            for other in range(self._size):
                if other != self._rank:
                    reports.append(
                        self._errors.issend((self._rank, message), dest=other, tag=_ERROR_TAG)
                    )
        deadline = time.monotonic() + float(os.environ.get("DAPX_FAILURE_TIMEOUT", "8"))
        self._failure = exc  # reported on stderr if the job must be aborted
        try:
            statuses = self._agree(message, deadline)
        finally:
            self._failure = None
        failed = [(r, m) for r, m in enumerate(statuses) if m is not None]
        for _ in range(len(failed) - (message is not None) - self._reports_seen):
            self._errors.recv(source=self._MPI.ANY_SOURCE, tag=_ERROR_TAG)
        self._reports_seen = 0
        for req in reports:
            req.Wait()
        if len(failed) == self._size:
            return exc
        self._comm = self._errors.Dup()  # the old one may hold unmatched collectives
        self._carts = {}
        rank, first = failed[0]
        return RankError(rank, first)

    def _agree(self, message, deadline) -> list:
        """Every rank's failure message (or None), over the error channel, with a deadline."""
        self._wait_until(self._errors.Ibarrier(), deadline)
        payload = pickle.dumps(message)
        sizes = np.empty(self._size, np.int64)
        mine = np.array([len(payload)], np.int64)
        self._wait_until(
            self._errors.Iallgather([mine, self._MPI.INT64_T], [sizes, self._MPI.INT64_T]),
            deadline,
        )
        displs = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        data = bytearray(int(sizes.sum()))
        self._wait_until(
            self._errors.Iallgatherv(
                [payload, self._MPI.BYTE], [data, (sizes, displs), self._MPI.BYTE]
            ),
            deadline,
        )
        view = memoryview(data)
        return [pickle.loads(view[d : d + s]) for d, s in zip(displs.tolist(), sizes.tolist())]

    def _wait_until(self, request, deadline) -> None:
        while not request.Test():
            if time.monotonic() > deadline:
                self._abort()
            time.sleep(1e-3)

    def _abort(self) -> None:
        """End the job, saying first why this rank failed (the others may have gone on)."""
        exc = self._failure
        lines = []
        if exc is not None:
            text = str(exc).replace("\n", " ")
            lines.append(f"dapx: rank {self._rank} failed: {type(exc).__name__}: {text}\n")
            if os.environ.get("DAPX_DEBUG", "") not in ("", "0"):
                lines.extend(traceback.format_exception(exc))
        lines.append(
            f"dapx: rank {self._rank}: other ranks did not join failure recovery (they went on "
            "past the failed operation); aborting the job\n"
        )
        sys.stderr.write("".join(lines))
        sys.stderr.flush()
        self._comm.Abort(1)

    def _check_errors(self, request) -> bool:
        """Whether `request` completed; raises when a failure report means it never will.

        A report can arrive while this rank's collective is about to complete
        (the reporter failed just after it, possibly as every rank is about
        to): then the request completes within a grace period and the report
        is left for `recover` to collect.
        """
        status = self._MPI.Status()
        if not self._errors.Iprobe(source=self._MPI.ANY_SOURCE, tag=_ERROR_TAG, status=status):
            return False
        grace = time.monotonic() + 0.5
        while time.monotonic() < grace:
            if request.Test():
                return True
            time.sleep(1e-3)
        self._errors.recv(source=status.Get_source(), tag=_ERROR_TAG)
        self._reports_seen = 1
        raise self.recover(None)

    def _wait(self, request) -> None:
        """Poll `request` and the error channel until the request completes.

        MPICH advances a non-blocking collective only inside MPI calls, so
        polls must be frequent while data moves: spin with ``sched_yield``
        (which hands the core to another runnable rank when oversubscribed)
        for ``DAPX_SPIN`` seconds, then fall back to short sleeps for waits
        that are really idle.

        First, for ``DAPX_HOT_SPIN`` seconds (default 100 us), only the request
        is polled, as a blocking MPI call would: small collectives between ranks
        that are nearly in step complete in a few microseconds, while a single
        ``sched_yield`` on a loaded machine hands the core to another process for
        a whole time slice (it made a 3 us allgather take 100 us and more). A
        failure report waits at most that long to be seen.
        """
        hot_until = time.perf_counter() + _HOT_SECONDS
        while not request.Test():
            if time.perf_counter() > hot_until:
                break
        else:
            return
        spin_until = time.monotonic() + _SPIN_SECONDS
        while not request.Test():
            if self._check_errors(request):
                return
            if time.monotonic() < spin_until:
                os.sched_yield()
            else:
                time.sleep(1e-3)

    def _enter(self, collective: str) -> None:
        if self._debug and self._size > 1:
            self._check_same_call(collective)

    def _check_same_call(self, collective: str) -> None:
        mine = (collective, self._operation)
        calls = self._allgather_objects(mine)
        if any(c != calls[0] for c in calls):
            lines = "; ".join(f"rank {r}: {c[0]} in {c[1]}" for r, c in enumerate(calls))
            raise RuntimeError(f"DAPX_DEBUG: ranks are calling different collectives: {lines}")

    def _allgather_objects(self, value) -> list:
        if self._size == 1:
            return [value]
        payload = pickle.dumps(value, protocol=5)
        sizes = np.empty(self._size, np.int64)
        mine = np.array([len(payload)], np.int64)
        self._wait(self._comm.Iallgather([mine, self._MPI.INT64_T], [sizes, self._MPI.INT64_T]))
        displs = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        data = bytearray(int(sizes.sum()))
        self._wait(
            self._comm.Iallgatherv(
                [payload, self._MPI.BYTE], [data, (sizes, displs), self._MPI.BYTE]
            )
        )
        view = memoryview(data)
        return [pickle.loads(view[d : d + s]) for d, s in zip(displs.tolist(), sizes.tolist())]

    def set_operation(self, description: Any) -> Any:
        """Record the dapx operation in progress (checked by DAPX_DEBUG); return the old one."""
        previous, self._operation = self._operation, description
        return previous

    def __eq__(self, other):
        return isinstance(other, MPIBackend) and other._user_comm == self._user_comm

    def __hash__(self):
        return hash(("mpi", self._size))

    def __repr__(self):
        return f"MPIBackend(rank={self._rank}, nranks={self._size})"


@functools.cache
def _element_type_cached(MPI, itemsize: int):
    return MPI.BYTE.Create_contiguous(itemsize).Commit()


def _element_type(MPI, itemsize: int):
    return _element_type_cached(MPI, itemsize)


_WORLD: MPIBackend | None = None


def mpi(comm=None) -> MPIBackend:
    """The MPI backend over `comm` (default: one shared backend over ``COMM_WORLD``)."""
    global _WORLD
    if comm is not None:
        return MPIBackend(comm)
    if _WORLD is None:
        _WORLD = MPIBackend()
    return _WORLD
