"""The registries through which layers above the core implement the array's behaviour.

``HANDLED_FUNCTIONS``: modules register their versions of NumPy functions
with ``@implements(np.sum, ...)``; `DistributedArray.__array_function__`
looks them up and returns ``NotImplemented`` for anything unregistered, so
NumPy raises ``TypeError`` instead of dapx gathering the array behind the
user's back.

``ARRAY_METHODS``: what the array and its ufunc engine call but the core does
not implement (``astype``, ufunc methods, generalized ufuncs, the interop
exports) is registered by name with ``@implements_method(name)``, so that
the core never imports the layers above it.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["ARRAY_METHODS", "HANDLED_FUNCTIONS", "array_method", "implements", "implements_method"]

HANDLED_FUNCTIONS: dict[Callable, Callable] = {}
ARRAY_METHODS: dict[str, Callable] = {}


def implements(*numpy_functions: Callable) -> Callable:
    """Register the decorated function as dapx's version of `numpy_functions`."""

    def decorator(func: Callable) -> Callable:
        for f in numpy_functions:
            HANDLED_FUNCTIONS[f] = func
        return func

    return decorator


def implements_method(name: str) -> Callable:
    """Register the decorated function as the implementation of array method `name`."""

    def decorator(func: Callable) -> Callable:
        ARRAY_METHODS[name] = func
        return func

    return decorator


def array_method(name: str) -> Callable:
    """The registered implementation of `name` (``import dapx`` registers them all)."""
    try:
        return ARRAY_METHODS[name]
    except KeyError:
        raise NotImplementedError(
            f"{name!r} is implemented outside dapx.core and was not registered: import dapx"
        ) from None
