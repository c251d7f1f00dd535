"""Failure containment for SPMD operations.

Public dapx operations are wrapped with `collective`: when one fails on
some process, the backend is told (`Backend.recover`) so that no other
process is left waiting in a collective; on the simulated backend the
exception simply propagates.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable

from ..backends.base import remote_arrays
from ..errors import RankError

__all__ = ["backend_of", "collective", "raise_if_any_failed"]


class _Nesting(threading.local):
    """How deep in public dapx calls this thread is (ranks of the dask backend are threads)."""

    depth = 0


_nesting = _Nesting()


def backend_of(args, kwargs, default: bool = True):
    """The backend of a call's arrays (or its ``backend=``), else the current one or None."""
    from ..backends import Backend, get_backend
    from .array import DistributedArray

    backend = kwargs.get("backend")
    if isinstance(backend, Backend):
        return backend
    for a in (*args, *kwargs.values()):
        if isinstance(a, DistributedArray):
            return a.backend
        if isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, DistributedArray):
                    return b.backend
    return get_backend() if default else None


def _describe(name, args) -> tuple:
    from .array import DistributedArray

    return (name, tuple((a.shape, a.dtype.str) for a in args if isinstance(a, DistributedArray)))


_DEBUG = os.environ.get("DAPX_DEBUG", "") not in ("", "0")


def collective(func: Callable) -> Callable:
    """Run `func` so that a failure on one rank reaches every rank."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nesting = _nesting
        if nesting.depth:
            return func(*args, **kwargs)
        # The backend is looked up only when it is needed (a failure, the debug
        # checks, or remote backends), so that the guard costs next to nothing per call.
        remote = remote_arrays.in_use  # a backend whose ranks live elsewhere (dask) exists
        backend = backend_of(args, kwargs) if (_DEBUG or remote) else None
        if remote and not backend.local_ranks:
            return backend.call(wrapper, args, kwargs)  # the ranks live elsewhere: ship the call
        previous = backend.set_operation(_describe(func.__qualname__, args)) if _DEBUG else None
        nesting.depth += 1
        try:
            return func(*args, **kwargs)
        except RankError:
            raise
        except Exception as exc:
            outcome = (backend or backend_of(args, kwargs)).recover(exc)
            if outcome is exc:
                raise
            raise outcome from exc
        finally:
            nesting.depth -= 1
            if _DEBUG:
                backend.set_operation(previous)

    return wrapper


def raise_if_any_failed(backend, errors: dict, kind: type[Exception] = ValueError) -> None:
    """Share each local rank's error (or None) and raise the first on every rank.

    For checks that only some ranks can make (their own input), so that the
    whole job raises the same exception instead of some ranks waiting. The
    exception keeps its type when it is a subclass of `kind` or a built-in
    (or NumPy) exception that takes a message, e.g. NumPy's ``TypeError`` for
    a dtype it refuses; otherwise it is raised as `kind`.
    """
    messages = backend.allgather(
        {r: (None if e is None else (_portable_type(e), str(e))) for r, e in errors.items()}
    )
    for rank, shared in enumerate(messages):
        if shared is not None:
            cls, message = shared
            message = message if message.startswith("rank ") else f"rank {rank}: {message}"
            if cls is not None and not issubclass(kind, cls):
                try:
                    exc = cls(message)
                except Exception:
                    exc = None
                if isinstance(exc, Exception):
                    raise exc
            raise kind(message)


def _portable_type(error) -> type[Exception] | None:
    """The type of `error` if every process can rebuild it from a message, else None."""
    cls = type(error)
    module = getattr(cls, "__module__", "")
    if isinstance(error, Exception) and module.split(".")[0] in ("builtins", "numpy", "dapx"):
        return cls
    return None
