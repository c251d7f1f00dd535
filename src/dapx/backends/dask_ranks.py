"""The ranks of the dask backend: what runs on the workers, and what travels to them.

A rank is a dask actor, `RankActor`, pinned to a worker process: it holds
the rank's blocks of every array (by id) and runs the client's steps on a
thread of its own with a `RankBackend`, whose collectives are messages sent
straight to the other ranks, not through the scheduler. Steps, outcomes and
messages travel on direct connections (`dapx.backends.dask_channels`); dask
places the ranks, and serves the rare fetch of a block. A rank whose step
raises tells the others (a "fail" message), so that none waits for its
messages; a rank whose process ends closes its connections, which tells
them too. The client (`dapx.backends.dask`) then reports the failure.

What travels between the client and the ranks: `Ref` (an array the ranks
hold, in a step's arguments), `Meta` (an array a step made, in its result,
with its value when it is a numeric 0-d array, so that the client converts
it to a Python scalar without another step) and `BACKEND` (each rank's own
backend). `worker_environ` gives the environment a worker process holding a
rank should start with.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import queue
import threading
import warnings
from typing import Any, NamedTuple

import numpy as np

from ..errors import RankError
from .base import Backend, remote_arrays
from .dask_channels import Channel, Inbox, frames

__all__ = [
    "BACKEND",
    "BackendToken",
    "Meta",
    "RankActor",
    "RankBackend",
    "Ref",
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
        for dst, payload in outgoing.items():
            actor.send(dst, key, payload)
        return {src: actor.receive(key, src, self._step) for src in sources}

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
    """One rank: its blocks, its mailbox, its inbox and the thread that runs its steps.

    dask places the actor on its worker; after `listen` and `connect`, steps
    and messages travel on `dapx.backends.dask_channels` connections, not as
    actor calls. Steps run on a thread of their own, so that messages from
    other ranks (read by the inbox's thread) arrive while a step waits for
    them.
    """

    def __init__(self, rank: int, nranks: int):
        from distributed import get_worker

        self.rank = rank
        self.nranks = nranks
        self._worker = get_worker()
        self._mail: dict[tuple, Any] = {}
        # step -> {rank that left the step: (rank whose own error started it, its message)}
        self._failed: dict[int, dict[int, tuple[int, str]]] = {}
        # rank whose connection ended -> why: it sends nothing more, in any step
        self._gone: dict[int, str] = {}
        self._arrived = threading.Condition()
        self._store: dict[int, Any] = {}
        self._peers: dict[int, Channel] = {}
        self._senders: dict[Channel, Any] = {}  # who is at the other end: a rank or "client"
        self._client: Channel | None = None
        self._steps: queue.SimpleQueue = queue.SimpleQueue()
        self._inbox: Inbox | None = None
        self.backend = RankBackend(self)

    # -- called by the client, as actor calls, to set up and to fetch ---------------------------
    async def listen(self) -> tuple[str, int]:
        """Start this rank's inbox and step thread; the address the others connect to."""
        from distributed.comm import get_address_host

        self._inbox = Inbox(get_address_host(self._worker.address), self._arrive, self._closed)
        threading.Thread(target=self._serve, name=f"dapx-rank-{self.rank}", daemon=True).start()
        return self._inbox.address

    async def connect(self, addresses: list[tuple[str, int]]) -> int:
        """Open this rank's connections to the other ranks' inboxes."""
        for r, address in enumerate(addresses):
            if r != self.rank:
                self._peers[r] = Channel.connect(tuple(address), ("hello", self.rank))
        return self.rank

    async def block(self, array_id: int, padded: bool = False) -> np.ndarray:
        a = self._store[array_id]
        return a.local_with_halo(self.rank) if padded else a.local(self.rank)

    async def apply(self, array_id: int, func) -> Any:
        """``func(array, rank)`` for this rank's array `array_id` (e.g. its owned block)."""
        return func(self._store[array_id], self.rank)

    async def release(self, ids) -> None:
        for i in ids:
            self._store.pop(i, None)

    # -- the inbox's thread -----------------------------------------------------------------------
    def _arrive(self, channel: Channel, message: tuple) -> None:
        kind = message[0]
        if kind == "msg":  # ("msg", key, src, payload), from a peer
            _, key, src, payload = message
            with self._arrived:
                self._mail[(key, src)] = payload
                self._arrived.notify_all()
        elif kind == "run":  # ("run", step, payload, release, settings), from the client
            self._steps.put(message[1:])
        elif kind == "fail":  # ("fail", step, rank, origin, text): `rank` left `step`
            _, step, rank, origin, text = message
            with self._arrived:
                self._failed.setdefault(step, {})[rank] = (origin, text)
                self._arrived.notify_all()
        elif kind == "hello":
            self._senders[channel] = message[1]
            if message[1] == "client":
                self._client = channel

    def _closed(self, channel: Channel, error: BaseException) -> None:
        sender = self._senders.pop(channel, None)
        if sender == "client":  # the client closed the backend, or its process ended
            self._steps.put(None)
        elif sender is not None:
            with self._arrived:
                self._gone[sender] = f"its connection closed ({type(error).__name__}: {error})"
                self._arrived.notify_all()

    # -- the step thread --------------------------------------------------------------------------
    def _serve(self) -> None:
        from ..config import config

        while (work := self._steps.get()) is not None:
            step, payload, release, settings = work
            for i in release:
                self._store.pop(i, None)
            for name, value in settings.items():  # the client's dapx.config
                setattr(config, name, value)
            outcome = self._run(step, payload)
            try:
                message = frames(("outcome", step, outcome))
            except Exception as e:  # e.g. an exception or a result that does not pickle
                why = f"{type(e).__name__}: {e}"
                error = outcome[2] if outcome[0] == "failed" else None
                text = (
                    f"{type(error).__name__}: {error} (the error itself could not be sent to "
                    f"the client: {why})"
                    if error is not None
                    else f"the step's result could not be sent to the client: {why}"
                )
                message = frames(("outcome", step, ("failed", self.rank, RuntimeError(text))))
            try:
                self._client.send_frames(message)
            except OSError:
                break
        self._inbox.close()
        for channel in self._peers.values():
            channel.close()
        self._store.clear()

    # -- used by RankBackend, on the step thread ------------------------------------------------
    def send(self, dst: int, key: tuple, payload) -> None:
        if dst == self.rank:
            with self._arrived:
                self._mail[(key, dst)] = payload
                self._arrived.notify_all()
            return
        # Note: a send to a rank whose connection ended is lost; its receive side raises.
        with contextlib.suppress(OSError):
            self._peers[dst].send(("msg", key, self.rank, payload))

    def receive(self, key: tuple, src: int, step: int):
        with self._arrived:
            while (key, src) not in self._mail:
                # Only a source that left the step will not send; others send or leave too.
                gone = self._failed.get(step, {})
                if src in gone:
                    raise _StepFailed(*gone[src])
                if src in self._gone:
                    raise _StepFailed(src, self._gone[src])
                self._arrived.wait()
            return self._mail.pop((key, src))

    def _tell_others(self, step: int, origin: int, message: str) -> None:
        """Tell every other rank that this one leaves `step` (after `origin`'s error)."""
        for channel in self._peers.values():
            with contextlib.suppress(OSError):
                channel.send(("fail", step, self.rank, origin, message))

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
