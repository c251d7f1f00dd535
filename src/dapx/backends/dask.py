"""The dask backend: every rank lives on a dask.distributed worker.

Each rank is a dask actor (`RankActor`) pinned to a worker, one rank per
worker process (as an MPI rank, a rank has a process of its own); the rank's
blocks of every array live in that actor's memory, on that worker. dapx's
array logic, written once for the SPMD backends, runs there: the client
ships each operation (a NumPy or dapx function and its arguments, arrays
replaced by references) to every rank, each rank runs it on its blocks with
a `RankBackend` whose collectives are messages between the ranks (worker to
worker, not through the scheduler), and the client gets back the metadata of
the resulting arrays, as `RemoteArray` handles. Only small objects and
scalar results travel to the client; blocks move to it only when asked
(``local(r)``, ``gather()``).

Failures follow the MPI backend's rules: a rank whose step raises tells the
others, a rank waiting for a message from this step then raises
`dapx.RankError`, and the client raises the original exception when every
rank failed alike, else `RankError` naming the first failed rank.

This module is the client side: `DaskBackend`, which starts the ranks, ships
each step to them, awaits their outcomes (watching for lost workers) and
keeps the handles. The ranks themselves (their actor, their step thread, the
messages between them) and what travels between the client and them are in
`dapx.backends.dask_ranks`; their public names are importable from here too.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import selectors
import warnings
import weakref

import numpy as np

from ..errors import RankError
from .base import Backend, remote_arrays
from .dask_channels import Channel, frames
from .dask_ranks import (
    BACKEND,
    Meta,
    RankActor,
    RankBackend,
    Ref,
    state_of,
    walk,
    worker_environ,
)

__all__ = [
    "DaskBackend",
    "RankActor",
    "RankBackend",
    "copy_back",
    "dask_backend",
    "holds_ndarray",
    "worker_environ",
]


# -- shipping a step and awaiting its outcomes -------------------------------------------------


def _serialized(func, args, kwargs) -> bytes:
    """The call as bytes, or a TypeError now (dask would fail later, inside its event loop)."""
    import cloudpickle

    try:
        return cloudpickle.dumps((func, args, kwargs), protocol=5)
    except Exception as e:
        raise TypeError(
            f"cannot send {getattr(func, '__name__', func)!r} and its arguments to the dask "
            f"ranks: {type(e).__name__}: {e}"
        ) from e


# -- the client side ---------------------------------------------------------------------------


class DaskBackend(Backend):
    """A backend whose ranks are actors on dask.distributed workers (see the module notes).

    The client process holds no rank (``local_ranks == ()``): it ships each
    operation to the ranks and holds `RemoteArray` handles.
    """

    name = "dask"

    def __init__(self, client=None, nranks: int | None = None):
        from distributed import Client, LocalCluster

        if remote_arrays.handle_type is None:
            raise RuntimeError("the dask backend needs dapx's array layer: import dapx")
        remote_arrays.in_use = True  # from now on public calls look for arrays held remotely
        self._cluster = None
        if client is None:
            import dask

            environ = {**dask.config.get("distributed.nanny.pre-spawn-environ"), **worker_environ()}
            with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
                self._cluster = LocalCluster(
                    n_workers=os.cpu_count() or 1, threads_per_worker=1, dashboard_address=":0"
                )
            client = Client(self._cluster)
        self.client = client
        # Note: like an MPI rank, a rank needs a process of its own (dapx keeps per-process
        # state, e.g. the warnings a step records), so ranks go one per worker process.
        pids = client.run(os.getpid)
        workers = sorted({pid: address for address, pid in sorted(pids.items())}.values())
        if not workers:
            raise ValueError("the dask client has no workers")
        self._nranks = len(workers) if nranks is None else int(nranks)
        if not 1 <= self._nranks <= len(workers):
            raise ValueError(
                f"nranks={nranks}: the dask backend runs one rank per worker process and this "
                f"cluster has {len(workers)} (start it with more workers, processes=True)"
            )
        self.workers = tuple(workers[: self._nranks])
        futures = [
            client.submit(
                RankActor,
                r,
                self._nranks,
                actor=True,
                workers=[w],
                allow_other_workers=False,
                pure=False,
            )
            for r, w in enumerate(self.workers)
        ]
        self._actor_futures = futures
        self.actors = [f.result() for f in futures]
        addresses = [call.result() for call in [a.listen() for a in self.actors]]
        for call in [a.connect(addresses) for a in self.actors]:
            call.result()
        self._channels = [Channel.connect(tuple(a), ("hello", "client")) for a in addresses]
        self._steps = itertools.count(1)
        # Ids of arrays no handle refers to any more, released with the next call. One list for
        # the backend's life: finalizers hold its append method.
        self._released: list[tuple[int, int]] = []
        self._handles: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        # Values of the numeric 0-d arrays the last step made, by id (see `_known_scalar`).
        self._values: dict[tuple[int, int], np.ndarray] = {}
        self._closed = False
        self._broken: str | None = None
        atexit.register(self.close)

    # -- Backend core: the client holds no rank ------------------------------------------------
    @property
    def nranks(self) -> int:
        return self._nranks

    @property
    def local_ranks(self) -> tuple[int, ...]:
        return ()

    def _no_rank(self, what: str):
        raise RuntimeError(
            f"{what} ran on the dask client, which holds no rank: dapx operations on the dask "
            "backend run on its ranks (pass the arrays, or backend=, to a dapx function)"
        )

    def allgather(self, values):
        self._no_rank("allgather")

    def alltoallv(self, sends, recvcounts, sparse=False):
        self._no_rank("alltoallv")

    def bcast(self, value, root):
        self._no_rank("bcast")

    def barrier(self):
        self.call(_noop)

    def __reduce__(self):
        raise TypeError(
            "a dask backend cannot be sent to its ranks (a function shipped to them captured "
            "a RemoteArray or the backend): pass arrays to dapx functions as arguments"
        )

    # -- running operations on the ranks ---------------------------------------------------------
    def call(self, func, args=(), kwargs=None):
        """``func(*args, **kwargs)`` on every rank; the result as rank 0 returns it.

        `RemoteArray` arguments stand for the ranks' arrays, this backend for
        each rank's own; arrays in the result come back as `RemoteArray`.
        """
        self._check_open()
        known = self._known_scalar(func, args, kwargs)
        if known is not None:
            return func(known[()])
        self._values = {}  # a step may change any array: values known so far may be stale

        stateful: list = []

        def ship(v):
            if getattr(v, "_dapx_stateful", False):
                stateful.append(v)
            if isinstance(v, remote_arrays.handle_type):
                if v.backend is not self:
                    raise ValueError("arrays of two different dask backends cannot be mixed")
                return Ref(v.remote_id)
            return BACKEND if v is self else v

        shipped_args = walk(list(args), ship)
        shipped_kwargs = walk(dict(kwargs or {}), ship)
        from ..config import config

        release = [self._released.pop() for _ in range(len(self._released))]
        step = next(self._steps)
        settings = state_of(config)
        payload = _serialized(func, shipped_args, shipped_kwargs)
        message = frames(("run", step, payload, release, settings))  # once, for every rank
        for r, channel in enumerate(self._channels):
            try:
                channel.send_frames(message)
            except OSError as e:
                self._lost(step, r, e)
        outcomes = self._outcomes(step)
        failed = [o for o in outcomes if o[0] == "failed"]
        if failed or any(o[0] == "other" for o in outcomes):
            self._discard([o[1] for o in outcomes if o[0] == "ok"])
            if len(failed) == self._nranks:
                raise failed[0][2]
            first = min((o for o in outcomes if o[0] != "ok"), key=lambda o: o[1])
            error = first[2]
            message = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
            raise RankError(first[1], message)
        self._discard([o[1] for o in outcomes[1:]], keep=outcomes[0][1])
        walk(outcomes[0][1], self._keep_value)
        result = walk(outcomes[0][1], self._handle)
        client_out = (kwargs or {}).get("out")
        if holds_ndarray(client_out):
            # Note: NumPy writes into an ndarray `out`; the ranks wrote into copies of it.
            result = copy_back(client_out, result)
        # Objects whose state a call changes (a generator's position) take rank 0's.
        for obj, state in zip(stateful, outcomes[0][3]):
            for name, value in state.items():
                setattr(obj, name, value)
        # Warnings the ranks raised, once each, as the simulated backend raises them.
        for category, message in dict.fromkeys(w for o in outcomes for w in o[2]):
            warnings.warn(message, category, stacklevel=3)
        return result

    def _known_scalar(self, func, args, kwargs) -> np.ndarray | None:
        """The value of ``func(a)`` 's 0-d argument if the client knows it, else None.

        A step that makes a numeric 0-d array sends its value along (e.g. ``np.sum(a)``), so
        that ``float(np.sum(a))`` costs one step, as it costs one reduction on MPI. The value
        holds until the next step, which may change the array (or one it is a view of).
        """
        if func not in _SCALAR_CONVERSIONS or kwargs or len(args) != 1:
            return None
        (a,) = args
        if not isinstance(a, remote_arrays.handle_type) or a.backend is not self:
            return None
        return self._values.get(a.remote_id)

    def _keep_value(self, value):
        if isinstance(value, Meta) and value.value is not None:
            self._values[value.id] = value.value
        return value

    def _discard(self, results, keep=None) -> None:
        """Queue for release the arrays of `results` that `keep` does not hold too."""
        kept = set()
        walk(keep, lambda v: kept.add(v.id) if isinstance(v, Meta) else v)
        for r in results:
            walk(
                r,
                lambda v: (
                    self._released.append(v.id) if isinstance(v, Meta) and v.id not in kept else v
                ),
            )

    def _handle(self, value):
        if isinstance(value, Ref):
            return self._handles[value.id]
        if isinstance(value, Meta):
            handle = remote_arrays.handle_type(value.dist, self, value.dtype, value.id)
            self._handles[value.id] = handle
            weakref.finalize(handle, self._released.append, value.id)
            return handle
        return value

    def fetch(self, array_id: int, rank: int, padded: bool = False) -> np.ndarray:
        """A copy of `rank`'s block of an array, on the client."""
        self._check_open()
        return self.actors[rank].block(array_id, padded).result()

    def _outcomes(self, step: int) -> list:
        """Every rank's outcome of `step`; RankError as soon as a rank's worker is lost.

        The outcomes are read as they arrive, from whichever rank sends first, so that a
        lost worker (its connection ends) is seen even while other ranks still wait
        (forever) for its messages.
        """
        outcomes: list = [None] * self._nranks
        with selectors.DefaultSelector() as selector:
            for r, channel in enumerate(self._channels):
                selector.register(channel.sock, selectors.EVENT_READ, r)
            pending = self._nranks
            while pending:
                for key, _ in selector.select(_POLL):
                    r = key.data
                    try:
                        kind, done, outcome = self._channels[r].receive()
                    except (ConnectionError, OSError) as e:  # its worker process ended
                        self._lost(step, r, e)
                    if kind == "outcome" and done < step:
                        # A step the client stopped waiting for (interrupted): drop its arrays.
                        if outcome[0] == "ok":
                            self._discard([outcome[1]])
                        continue
                    if kind != "outcome" or done != step:
                        raise RuntimeError(f"rank {r} answered step {done}, not step {step}")
                    outcomes[r] = outcome
                    selector.unregister(key.fileobj)
                    pending -= 1
        return outcomes

    def _lost(self, step: int, rank: int, error: BaseException) -> None:
        """Free the other ranks from `step`, retire this backend, raise RankError."""
        message = f"its dask worker {self.workers[rank]} was lost ({type(error).__name__}: {error})"
        for r, channel in enumerate(self._channels):
            if r != rank:
                # A rank waiting for the lost one's messages leaves the step (it may have
                # seen the connection end already; unless its worker is gone too).
                with contextlib.suppress(OSError):
                    channel.send(("fail", step, rank, rank, message))
        self._broken = f"rank {rank} {message}"
        raise RankError(rank, message)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this dask backend is closed")
        if self._broken is not None:
            raise RuntimeError(f"this dask backend lost a rank ({self._broken}): start a new one")

    def close(self) -> None:
        """Drop the ranks; close the LocalCluster this backend started, if any."""
        if self._closed:
            return
        self._closed = True
        try:
            for channel in self._channels:  # each rank's step thread and inbox end with it
                channel.close()
            for f in self._actor_futures:
                f.release()
            if self._cluster is not None:
                self.client.close()
                self._cluster.close()
        except Exception:
            pass

    def __enter__(self) -> DaskBackend:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"DaskBackend(nranks={self._nranks}, workers={len(set(self.workers))})"


#: Seconds the client waits for outcomes at a time (a step may take longer).
_POLL = 0.2

#: Conversions of a 0-d array the client answers from a value it knows (`_known_scalar`).
_SCALAR_CONVERSIONS = (float, int, complex, bool)


def _noop():
    return None


def dask_backend(client=None, nranks: int | None = None) -> DaskBackend:
    """A backend whose ranks live on dask.distributed workers.

    Parameters
    ----------
    client : distributed.Client, optional
        The cluster to use. Default: a new ``LocalCluster`` with one worker
        (one thread) per core, closed by `DaskBackend.close` or at exit, its
        workers started with `worker_environ` (start the workers of your own
        cluster with it too: without it, large blocks are allocated afresh by
        every operation).
    nranks : int, optional
        Ranks, one per worker process (at most as many as there are).
        Default: one on every worker process.
    """
    return DaskBackend(client, nranks)


def holds_ndarray(out) -> bool:
    """Whether `out` (an ``out=`` value) is or holds a NumPy array."""
    items = out if isinstance(out, tuple) else (out,)
    return any(isinstance(o, np.ndarray) for o in items)


def copy_back(out, result):
    """Write the ranks' results into the client's NumPy `out` arrays; return what NumPy would."""
    outs = out if isinstance(out, tuple) else (out,)
    results = result if isinstance(result, tuple) and isinstance(out, tuple) else (result,)
    final = []
    for o, r in zip(outs, results):
        if isinstance(o, np.ndarray):
            np.copyto(o, r)
            final.append(o)
        else:
            final.append(r)
    return tuple(final) if isinstance(result, tuple) and isinstance(out, tuple) else final[0]
