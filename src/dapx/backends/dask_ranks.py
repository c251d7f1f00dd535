"""The ranks of the dask backend: what runs on the workers, and what travels to them.

A rank is a dask actor, `RankActor`, pinned to a worker process: it holds
the rank's blocks of every array (by id) and runs the client's steps on a
thread of its own with a `RankBackend`, whose collectives are messages sent
straight to the other ranks' actors (`RankActor.deliver`), not through the
scheduler. A rank whose step raises tells the others (`RankActor.fail`), so
that none waits for its messages; the client (`dapx.backends.dask`) then
reports the failure.

What travels between the client and the ranks: `Ref` (an array the ranks
hold, in a step's arguments), `Meta` (an array a step made, in its result,
with its value when it is a numeric 0-d array, so that the client converts
it to a Python scalar without another step) and `BACKEND` (each rank's own
backend). `worker_environ` gives the environment a worker process holding a
rank should start with.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import itertools
import os
import threading
import warnings
from typing import Any, NamedTuple

import numpy as np

from ..errors import RankError
from .base import Backend, remote_arrays

__all__ = [
    "BACKEND",
    "BackendToken",
    "Meta",
    "RankActor",
    "RankBackend",
    "Ref",
    "awaited",
    "state_of",
    "walk",
    "worker_environ",
]


# -- what travels between the client and the ranks ---------------------------------------------


class Ref(NamedTuple):
    """An array already held by the ranks, by id: (step that made it, position in its result)."""

    id: tuple[int, int]


class Meta(NamedTuple):
    """A new array the ranks now hold: its id, the metadata the client keeps, and for a 0-d
    array (replicated: every rank holds it) rank 0's copy of its value, else None."""

    id: tuple[int, int]
    dist: Any
    dtype: np.dtype
    value: np.ndarray | None = None  # numeric 0-d arrays only


class BackendToken:
    """Stands for "the backend" in shipped arguments: each rank reads its own."""

    def __reduce__(self):
        return "BACKEND"


BACKEND = BackendToken()


def walk(value, leaf):
    """`value` with `leaf` applied to every item of nested lists, tuples and dicts.

    `Ref` and `Meta` are items, not tuples to walk into.

    Examples
    --------
    >>> from dapx.backends.dask_ranks import Ref, walk
    >>> walk([1, (2, Ref((1, 0))), {"k": 3}], lambda v: v * 10 if isinstance(v, int) else v)
    [10, (20, Ref(id=(1, 0))), {'k': 30}]
    """
    if isinstance(value, (Ref, Meta)):
        return leaf(value)
    if isinstance(value, list):
        return [walk(v, leaf) for v in value]
    if isinstance(value, tuple):
        items = [walk(v, leaf) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, dict):
        return {k: walk(v, leaf) for k, v in value.items()}
    return leaf(value)


def state_of(obj) -> dict:
    """The attributes of `obj` (its ``__dict__`` or its slots).

    What travels of an object whose state a step changes (a generator's
    position) and of the client's `dapx.config`.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from dapx.backends.dask_ranks import state_of
    >>> state_of(SimpleNamespace(calls=2))
    {'calls': 2}
    """
    if hasattr(obj, "__dict__"):
        return dict(vars(obj))
    slots = [n for c in type(obj).__mro__ for n in getattr(c, "__slots__", ())]
    return {n: getattr(obj, n) for n in slots if hasattr(obj, n)}


async def awaited(actor_future):
    """The result of a dask actor call, as a coroutine (for `asyncio` to schedule)."""
    return await actor_future


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
        return asyncio.run_coroutine_threadsafe(awaited(call), self._loop)

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
                awaited(p.fail(step, self.rank, origin, message)), self._loop
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
                if isinstance(v, Ref):
                    inputs[id(self._store[v.id])] = v
                    return self._store[v.id]
                if getattr(v, "_dapx_stateful", False):
                    stateful.append(v)
                return self.backend if isinstance(v, BackendToken) else v

            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                value = func(*walk(list(args), resolve), **walk(dict(kwargs), resolve))
            ids = ((step, k) for k in itertools.count())  # the same on every rank
            raised = [(w.category, str(w.message)) for w in caught]
            states = [state_of(o) for o in stateful]  # e.g. a generator's call count
            exported = walk(value, functools.partial(self._export, inputs, ids))
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
        return Meta(new, value.distribution, value.dtype, scalar)


# -- the worker processes ---------------------------------------------------------------------


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
