"""The ``__array_function__`` registry.

Modules register their implementations with ``@implements(np.sum, ...)``;
`DistributedArray.__array_function__` looks them up and returns
``NotImplemented`` for anything unregistered, so NumPy raises ``TypeError``
instead of dapx gathering the array behind the user's back.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["HANDLED_FUNCTIONS", "implements"]

HANDLED_FUNCTIONS: dict[Callable, Callable] = {}


def implements(*numpy_functions: Callable) -> Callable:
    """Register the decorated function as dapx's version of `numpy_functions`."""

    def decorator(func: Callable) -> Callable:
        for f in numpy_functions:
            HANDLED_FUNCTIONS[f] = func
        return func

    return decorator
