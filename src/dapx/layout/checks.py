"""Argument checks shared by the layout: integer counts and one value per dimension."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["as_int", "per_dim"]


def as_int(value, what: str) -> int:
    """`value` as an int; TypeError for anything else, booleans included.

    # Note: NumPy takes ``True`` as a size of 1; a layout rejects it (a flag is no count).

    >>> as_int(np.int64(3), "size")
    3
    >>> as_int(np.True_, "size")
    Traceback (most recent call last):
    TypeError: size must be an integer, got np.True_
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an integer, got {value!r}")
    return int(value)


def per_dim(value, ndim: int, what: str) -> tuple:
    """One value per dimension: a scalar (None, bool, int) repeated, or a sequence of `ndim`.

    >>> per_dim(True, 2, "periodic"), per_dim([1, None], 2, "block_size")
    ((True, True), (1, None))
    """
    if value is None or isinstance(value, (bool, np.bool_, int, np.integer)):
        return (value,) * ndim
    if not isinstance(value, (Sequence, np.ndarray)):
        raise TypeError(f"{what} must be an int/bool or one entry per dimension, got {value!r}")
    value = tuple(value)
    if len(value) != ndim:
        raise ValueError(f"{what} needs one entry per dimension ({ndim}), got {value}")
    return value
