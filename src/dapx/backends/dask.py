"""The dask backend: every rank lives on a dask.distributed worker.

Each rank is a dask actor (`RankActor`) pinned to a worker, one rank per
worker process (as an MPI rank, a rank has a process of its own); the rank's
blocks of every array live in that actor's memory, on that worker. dapx's
array logic, written once for the SPMD backends, runs there: the client
ships each operation (a NumPy or dapx function and its arguments, arrays
replaced by references) to every rank, each rank runs it on its blocks with
a `RankBackend` whose collectives are messages between the actors (worker to
worker, not through the scheduler), and the client gets back the metadata of
the resulting arrays, as `RemoteArray` handles. Only small objects and
scalar results travel to the client; blocks move to it only when asked
(``local(r)``, ``gather()``).

Failures follow the MPI backend's rules: a rank whose step raises tells the
others, a rank waiting for a message from this step then raises
`dapx.RankError`, and the client raises the original exception when every
rank failed alike, else `RankError` naming the first failed rank.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import functools
import itertools
import os
import threading
import warnings
import weakref
from typing import Any, NamedTuple

import numpy as np

from ..errors import RankError
from .base import Backend, remote_arrays

__all__ = [
    "DaskBackend",
    "RankActor",
    "RankBackend",
    "copy_back",
    "dask_backend",
    "holds_ndarray",
    "worker_environ",
]


# -- what travels between the client and the ranks ---------------------------------------------


class _Ref(NamedTuple):
    """An array already held by the ranks, by id: (step that made it, position in its result)."""

    id: tuple[int, int]


class _Meta(NamedTuple):
    """A new array the ranks now hold: its id, the metadata the client keeps, and for a 0-d
    array (replicated: every rank holds it) rank 0's copy of its value, else None."""

    id: tuple[int, int]
    dist: Any
    dtype: np.dtype
    value: np.ndarray | None = None  # numeric 0-d arrays only


class _BackendToken:
    """Stands for "the backend" in shipped arguments: each rank reads its own."""

    def __reduce__(self):
        return "_BACKEND"


_BACKEND = _BackendToken()


def _walk(value, leaf):
    """`value` with `leaf` applied to every item of nested lists, tuples and dicts."""
    if isinstance(value, (_Ref, _Meta)):
        return leaf(value)
    if isinstance(value, list):
        return [_walk(v, leaf) for v in value]
    if isinstance(value, tuple):
        items = [_walk(v, leaf) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, dict):
        return {k: _walk(v, leaf) for k, v in value.items()}
    return leaf(value)


# -- the rank side ---------------------------------------------------------------------------


class _StepFailed(Exception):
    """Another rank failed in this step (raised inside a waiting collective)."""


class RankBackend(Backend):
    """The backend of one rank inside its actor: collectives are messages to the peers."""

    name = "dask-rank"

    def __init__(self, actor: RankActor):
        self._actor = actor
        self._step = 0
        self._seq = 0

    @property
    def nranks(self) -> int:
        return self._actor.nranks

    @property
    def local_ranks(self) -> tuple[int, ...]:
        return (self._actor.rank,)

    def _key(self, kind: str) -> tuple:
        self._seq += 1
        return (self._step, self._seq, kind)

    def _exchange(self, key, outgoing: dict[int, Any], sources) -> dict[int, Any]:
        """Send ``outgoing[dst]`` to each destination; receive one message from each source."""
        actor = self._actor
        pending = [actor.send(dst, key, payload) for dst, payload in outgoing.items()]
        received = {src: actor.receive(key, src, self._step) for src in sources}
        for future in pending:
            future.result()
        return received

    def allgather(self, values):
        me = self._actor.rank
        everyone = range(self.nranks)
        got = self._exchange(self._key("allgather"), dict.fromkeys(everyone, values[me]), everyone)
        return [got[r] for r in everyone]

    def alltoallv(self, sends, recvcounts, sparse=False):
        me = self._actor.rank
        buffer, counts = sends[me]
        offsets = np.concatenate(([0], np.cumsum(counts)))
        outgoing = {int(d): buffer[offsets[d] : offsets[d + 1]] for d in np.flatnonzero(counts)}
        sources = np.flatnonzero(np.asarray(recvcounts[me])).tolist()
        return {me: self._exchange(self._key("alltoallv"), outgoing, sources)}

    def bcast(self, value, root):
        me = self._actor.rank
        outgoing = dict.fromkeys(range(self.nranks), value) if me == root else {}
        return self._exchange(self._key("bcast"), outgoing, [root])[root]

    def barrier(self):
        self.allgather({self._actor.rank: None})


class RankActor:
    """One rank: its blocks, its mailbox and the thread that runs its steps.

    Steps run on a thread of their own, so that messages from other ranks
    (`deliver`, a coroutine on the worker's event loop) arrive while a step
    waits for them.
    """

    def __init__(self, rank: int, nranks: int):
        from distributed import get_worker

        self.rank = rank
        self.nranks = nranks
        self._worker = get_worker()
        self._thread = concurrent.futures.ThreadPoolExecutor(1, f"dapx-rank-{rank}")
        self._mail: dict[tuple, Any] = {}
        # step -> {rank that left the step: (rank whose own error started it, its message)}
        self._failed: dict[int, dict[int, tuple[int, str]]] = {}
        self._arrived = threading.Condition()
        self._store: dict[int, Any] = {}
        self._peers: list = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self.backend = RankBackend(self)

    # -- called by the client -------------------------------------------------------------
    async def connect(self, peers: list[tuple[str, str]]) -> int:
        from distributed.actor import Actor

        self._loop = asyncio.get_running_loop()
        self._peers = [
            Actor(RankActor, address, key, worker=self._worker) for address, key in peers
        ]
        return self.rank

    async def run(self, step: int, payload: bytes, release=(), settings=None):
        for i in release:
            self._store.pop(i, None)
        if settings:  # the client's dapx.config, e.g. the gather warning threshold
            from ..config import config

            for name, value in settings.items():
                setattr(config, name, value)
        return await self._loop.run_in_executor(self._thread, self._run, step, payload)

    async def block(self, array_id: int, padded: bool = False) -> np.ndarray:
        a = self._store[array_id]
        return a.local_with_halo(self.rank) if padded else a.local(self.rank)

    async def apply(self, array_id: int, func) -> Any:
        """``func(array, rank)`` for this rank's array `array_id` (e.g. its owned block)."""
        return func(self._store[array_id], self.rank)

    async def release(self, ids) -> None:
        for i in ids:
            self._store.pop(i, None)

    # -- called by peers ------------------------------------------------------------------------
    async def deliver(self, key: tuple, src: int, payload) -> None:
        with self._arrived:
            self._mail[(key, src)] = payload
            self._arrived.notify_all()

    async def fail(self, step: int, rank: int, origin: int, message: str) -> None:
        with self._arrived:
            self._failed.setdefault(step, {})[rank] = (origin, message)
            self._arrived.notify_all()

    # -- used by RankBackend, on the step thread ------------------------------------------------
    def send(self, dst: int, key: tuple, payload) -> concurrent.futures.Future:
        if dst == self.rank:
            future: concurrent.futures.Future = concurrent.futures.Future()
            with self._arrived:
                self._mail[(key, dst)] = payload
                self._arrived.notify_all()
            future.set_result(None)
            return future
        call = self._peers[dst].deliver(key, self.rank, payload)
        return asyncio.run_coroutine_threadsafe(_awaited(call), self._loop)

    def receive(self, key: tuple, src: int, step: int):
        with self._arrived:
            while (key, src) not in self._mail:
                # Only a source that left the step will not send; others send or leave too.
                gone = self._failed.get(step, {})
                if src in gone:
                    raise _StepFailed(*gone[src])
                self._arrived.wait()
            return self._mail.pop((key, src))

    def _tell_others(self, step: int, origin: int, message: str) -> None:
        """Tell every other rank that this one leaves `step` (after `origin`'s error)."""
        calls = [
            asyncio.run_coroutine_threadsafe(
                _awaited(p.fail(step, self.rank, origin, message)), self._loop
            )
            for r, p in enumerate(self._peers)
            if r != self.rank
        ]
        for c in calls:
            c.result()

    def _run(self, step: int, payload: bytes):
        import cloudpickle

        from . import _thread_state

        func, args, kwargs = cloudpickle.loads(payload)
        self.backend._step, self.backend._seq = step, 0
        _thread_state.backend = self.backend
        try:
            inputs: dict[int, Any] = {}
            stateful: list = []

            def resolve(v):
                if isinstance(v, _Ref):
                    inputs[id(self._store[v.id])] = v
                    return self._store[v.id]
                if getattr(v, "_dapx_stateful", False):
                    stateful.append(v)
                return self.backend if isinstance(v, _BackendToken) else v

            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                value = func(*_walk(list(args), resolve), **_walk(dict(kwargs), resolve))
            ids = ((step, k) for k in itertools.count())  # the same on every rank
            raised = [(w.category, str(w.message)) for w in caught]
            states = [_state_of(o) for o in stateful]  # e.g. a generator's call count
            exported = _walk(value, functools.partial(self._export, inputs, ids))
            return ("ok", exported, raised, states)
        except _StepFailed as e:  # a rank this one waited for left the step
            self._tell_others(step, e.args[0], e.args[1])
            return ("other", e.args[0], e.args[1])
        except RankError as e:
            self._tell_others(step, e.rank, e.original)
            return ("other", e.rank, e.original)
        except Exception as e:  # this rank's own failure: the others must not wait for it
            message = f"{type(e).__name__}: {e}"
            self._tell_others(step, self.rank, message)
            return ("failed", self.rank, e)
        finally:
            _thread_state.backend = None
            with self._arrived:
                self._failed.pop(step, None)
                for k in [k for k in self._mail if k[0][0] == step]:
                    del self._mail[k]

    def _export(self, inputs: dict, ids, value):
        if not isinstance(value, remote_arrays.array_type):
            return value
        if id(value) in inputs:
            return inputs[id(value)]
        new = next(ids)
        self._store[new] = value
        numeric = value.ndim == 0 and value.dtype.kind in "biufc"
        scalar = np.array(value.local(self.rank)) if numeric else None
        return _Meta(new, value.distribution, value.dtype, scalar)


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


def _state_of(obj) -> dict:
    """The attributes of `obj` (its ``__dict__`` or its slots)."""
    if hasattr(obj, "__dict__"):
        return dict(vars(obj))
    slots = [n for c in type(obj).__mro__ for n in getattr(c, "__slots__", ())]
    return {n: getattr(obj, n) for n in slots if hasattr(obj, n)}


async def _awaited(actor_future):
    return await actor_future


async def _settle(calls: list, timeout: float) -> list[tuple[bool, Any]]:
    """Wait for actor `calls` together, at most `timeout` s, or until one finds its worker
    gone: ``(True, result)``, ``(True, OSError)`` for a lost worker, or ``(False, None)``."""
    tasks = [asyncio.ensure_future(_awaited(c)) for c in calls]
    await asyncio.wait(tasks, timeout=timeout, return_when=asyncio.FIRST_EXCEPTION)
    for task in tasks:
        if not task.done():
            # Only the waiting stops: the call itself goes on. (A cancelled task is done
            # only once the loop runs again: until then, "not done" marks it unsettled.)
            task.cancel()
    errors = [task.exception() if task.done() else None for task in tasks]  # all retrieved
    for error in errors:
        if error is not None and not isinstance(error, OSError):
            raise error
    return [
        (False, None) if not task.done() else (True, error if error else task.result())
        for task, error in zip(tasks, errors)
    ]


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
        peers = [(a._address, a.key) for a in self.actors]
        for call in [a.connect(peers) for a in self.actors]:
            call.result()
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
                return _Ref(v.remote_id)
            return _BACKEND if v is self else v

        shipped_args = _walk(list(args), ship)
        shipped_kwargs = _walk(dict(kwargs or {}), ship)
        from ..config import config

        release = [self._released.pop() for _ in range(len(self._released))]
        step = next(self._steps)
        settings = _state_of(config)
        payload = _serialized(func, shipped_args, shipped_kwargs)  # once, for every rank
        calls = [a.run(step, payload, release, settings) for a in self.actors]
        outcomes = self._outcomes(step, calls)
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
        _walk(outcomes[0][1], self._keep_value)
        result = _walk(outcomes[0][1], self._handle)
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
        if isinstance(value, _Meta) and value.value is not None:
            self._values[value.id] = value.value
        return value

    def _discard(self, results, keep=None) -> None:
        """Queue for release the arrays of `results` that `keep` does not hold too."""
        kept = set()
        _walk(keep, lambda v: kept.add(v.id) if isinstance(v, _Meta) else v)
        for r in results:
            _walk(
                r,
                lambda v: (
                    self._released.append(v.id) if isinstance(v, _Meta) and v.id not in kept else v
                ),
            )

    def _handle(self, value):
        if isinstance(value, _Ref):
            return self._handles[value.id]
        if isinstance(value, _Meta):
            handle = remote_arrays.handle_type(value.dist, self, value.dtype, value.id)
            self._handles[value.id] = handle
            weakref.finalize(handle, self._released.append, value.id)
            return handle
        return value

    def fetch(self, array_id: int, rank: int, padded: bool = False) -> np.ndarray:
        """A copy of `rank`'s block of an array, on the client."""
        self._check_open()
        return self.actors[rank].block(array_id, padded).result()

    def _outcomes(self, step: int, calls: list) -> list:
        """Every rank's outcome of `step`; RankError as soon as a rank's worker is lost.

        The calls are awaited together, on the client's event loop (one hop there and back
        for all of them), a short wait at a time, so that a lost worker is seen even while
        other ranks still wait (forever) for its messages.
        """
        outcomes: list = [None] * len(calls)
        pending = list(range(len(calls)))
        while pending:
            settled = self.client.sync(_settle, [calls[r] for r in pending], _POLL)
            for r, (done, value) in zip(list(pending), settled):
                if not done:
                    continue
                if isinstance(value, OSError):  # "Unable to contact Actor's worker": gone
                    self._lost(step, r, value)
                outcomes[r] = value
                pending.remove(r)
        return outcomes

    def _lost(self, step: int, rank: int, error: BaseException) -> None:
        """Free the other ranks from `step`, retire this backend, raise RankError."""
        message = f"its dask worker {self.workers[rank]} was lost ({type(error).__name__}: {error})"
        for r, actor in enumerate(self.actors):
            if r != rank:
                # A rank waiting for the lost one's messages leaves the step (unless its
                # worker is gone too).
                with contextlib.suppress(Exception):
                    actor.fail(step, rank, rank, message).result(timeout=5)
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


#: Seconds the client waits on one rank before looking at the others (for lost workers).
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


def worker_environ() -> dict[str, str]:
    """The environment variables a dask worker process that holds a rank should start with.

    A rank's steps run on a thread of their own, and glibc gives a thread other
    than the main one a malloc arena of its own, whose heaps are at most 64 MB:
    a larger block (a rank's block of a large array) is then always a fresh
    ``mmap``, returned to the system when freed, whatever ``MALLOC_MMAP_MAX_``
    says, so every large operation pays its result's page faults again (a
    third of ``a*b+c`` 's time on 4e7 float64). ``MALLOC_ARENA_MAX=1`` puts
    every thread on the main arena, which reuses freed memory as an MPI rank's
    single thread does. With it, the ``MALLOC_MMAP_MAX_`` and
    ``MALLOC_TRIM_THRESHOLD_`` of this process, as an ``mpiexec`` would pass them
    to its ranks (dask's nanny sets a low trim threshold of its own otherwise).

    These act only when set before the worker process starts: `dask_backend`
    starts its own workers with them; for a cluster of your own, pass them in
    ``distributed.nanny.pre-spawn-environ`` (or the workers' environment).

    Examples
    --------
    >>> from dapx.backends.dask import worker_environ
    >>> worker_environ()["MALLOC_ARENA_MAX"]
    '1'
    """
    environ = {k: os.environ[k] for k in _MALLOC_SETTINGS if k in os.environ}
    environ["MALLOC_ARENA_MAX"] = "1"
    return environ


#: The client's malloc settings that `worker_environ` passes on to the workers.
_MALLOC_SETTINGS = ("MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")


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
