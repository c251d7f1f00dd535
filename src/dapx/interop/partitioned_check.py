"""Checking a producer's ``__partitioned__`` dict against the protocol, before any data.

`check_partitioned` enforces the rules of ``shared/specs/partitioned-protocol.md``
that need no data: required keys, grid positions, each partition's ``start``,
``shape`` and ``location``, and that the partitions tile the shape along a
grid (no overlap, no gap). It returns the normalised layout that
`dapx.interop.partitioned.from_partitioned` builds its distribution from.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..errors import DAPError

__all__ = ["check_partitioned"]

_REQUIRED_KEYS = ("shape", "partition_tiling", "partitions", "get")
_PARTITION_KEYS = ("start", "shape", "data", "location")


class _Layout(NamedTuple):
    shape: tuple[int, ...]
    tiling: tuple[int, ...]
    bounds: tuple[tuple[int, ...], ...]
    partitions: dict[tuple[int, ...], Mapping]


def _ints(value: Any, what: str, minimum: int) -> tuple[int, ...]:
    bad = DAPError(f"{what} must be a tuple of integers >= {minimum}, got {value!r}")
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        raise bad
    out = []
    for v in value:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < minimum:
            raise bad
        out.append(int(v))
    return tuple(out)


def _position(key: Any, tiling: tuple[int, ...], what: str) -> tuple[int, ...]:
    ok = isinstance(key, tuple) and len(key) == len(tiling)
    ok = ok and all(
        isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)) for k in key
    )
    if not ok or not all(0 <= k < t for k, t in zip(key, tiling)):
        raise DAPError(
            f"{what} {key!r} is not a position in the partition grid {tiling}: positions are "
            f"tuples of {len(tiling)} integers, each below the tiling"
        )
    return tuple(int(k) for k in key)


def _check_partition(pos, info, shape) -> Mapping:
    if not isinstance(info, Mapping):
        raise DAPError(
            f"partition {pos} must map to a dict with keys {list(_PARTITION_KEYS)}, "
            f"got {type(info).__name__}"
        )
    missing = [k for k in _PARTITION_KEYS if k not in info]
    if missing:
        raise DAPError(f"partition {pos} lacks required key(s) {missing}")
    ndim = len(shape)
    start = _ints(info["start"], f"partition {pos}: 'start'", 0)
    extent = _ints(info["shape"], f"partition {pos}: 'shape'", 0)
    for key, value in (("start", start), ("shape", extent)):
        if len(value) != ndim:
            raise DAPError(
                f"partition {pos}: {key!r} {value} must have {ndim} entries, one per dimension "
                f"of the shape {shape}"
            )
    for i in range(ndim):
        if start[i] + extent[i] > shape[i]:
            raise DAPError(
                f"partition {pos} covers indices {start[i]}..{start[i] + extent[i] - 1} of "
                f"dim {i}, beyond its size {shape[i]} (shape mismatch)"
            )
    location = info["location"]
    if (
        isinstance(location, (str, bytes))
        or not isinstance(location, (Sequence, np.ndarray))
        or len(location) == 0
    ):
        raise DAPError(
            f"partition {pos}: 'location' must be a non-empty sequence of ranks or addresses, "
            f"got {location!r} (unsupported location)"
        )
    return {"start": start, "shape": extent, "data": info["data"], "location": location}


def _grid_bounds(dim: int, size: int, count: int, parts: dict) -> tuple[int, ...]:
    """Boundaries along `dim` of partitions that must form a grid tiling 0..size."""
    first: list = [None] * count
    for pos in sorted(parts):
        c, s, n = pos[dim], parts[pos]["start"][dim], parts[pos]["shape"][dim]
        if first[c] is None:
            first[c] = (s, n, pos)
        elif (s, n) != first[c][:2]:
            s0, n0, p0 = first[c]
            raise DAPError(
                f"partition {pos} covers indices {s}..{s + n - 1} of dim {dim} but partition "
                f"{p0}, at the same grid index {c} along dim {dim}, covers {s0}..{s0 + n0 - 1}: "
                "partitions must form a grid"
            )
    bounds = [0]
    for c in range(count):
        s, n, pos = first[c]
        end = bounds[-1]
        if s < end:
            raise DAPError(
                f"partition {pos} starts at {s} along dim {dim}, but the partition before it "
                f"({first[c - 1][2]}) ends at {end}: they overlap"
            )
        if s > end:
            raise DAPError(
                f"partition {pos} starts at {s} along dim {dim}, leaving indices {end}..{s - 1} "
                "covered by no partition (a gap)"
            )
        bounds.append(s + n)
    if bounds[-1] != size:
        raise DAPError(
            f"the partitions along dim {dim} end at {bounds[-1]} (the last is partition "
            f"{first[-1][2]}) but the shape says {size}: indices {bounds[-1]}..{size - 1} are "
            "covered by no partition (a gap)"
        )
    return tuple(bounds)


def check_partitioned(desc: Any) -> _Layout:
    """Check the rules of the protocol that need no data; return the layout.

    The layout holds the normalised ``shape``, ``partition_tiling``, the
    partition boundaries along each dimension and the checked partitions.

    Raises
    ------
    DAPError
        Naming the partition at fault: missing keys or positions, positions
        outside the grid, bad ``start``/``shape``/``location``, partitions
        that overlap, leave gaps, or do not line up along a grid.

    Examples
    --------
    >>> import dapx
    >>> layout = check_partitioned(dapx.arange(10, backend=dapx.simulated(3)).__partitioned__)
    >>> layout.tiling, layout.bounds
    ((3,), ((0, 4, 7, 10),))
    """
    if not isinstance(desc, Mapping):
        raise DAPError(f"__partitioned__ must be a dict, got {type(desc).__name__}")
    missing = [k for k in _REQUIRED_KEYS if k not in desc]
    if missing:
        raise DAPError(f"the __partitioned__ dict lacks required key(s) {missing}")
    shape = _ints(desc["shape"], "'shape'", 0)
    tiling = _ints(desc["partition_tiling"], "'partition_tiling'", 1)
    if len(tiling) != len(shape):
        raise DAPError(
            f"'partition_tiling' {tiling} must have one entry per dimension of 'shape' {shape}"
        )
    if not callable(desc["get"]):
        raise DAPError(f"'get' must be callable, got {desc['get']!r}")
    raw = desc["partitions"]
    if not isinstance(raw, Mapping):
        raise DAPError(f"'partitions' must be a dict, got {type(raw).__name__}")
    parts: dict[tuple[int, ...], Mapping] = {}
    for key, info in raw.items():
        pos = _position(key, tiling, "partition key")
        if pos in parts:
            raise DAPError(f"partition {pos} appears twice in 'partitions' (keys equal as ints)")
        parts[pos] = _check_partition(pos, info, shape)
    if len(parts) != math.prod(tiling):
        for pos in itertools.product(*(range(t) for t in tiling)):
            if pos not in parts:
                raise DAPError(
                    f"partition {pos} is missing: every position of the partition grid "
                    f"{tiling} must be a key of 'partitions'"
                )
    bounds = tuple(_grid_bounds(i, shape[i], tiling[i], parts) for i in range(len(shape)))
    return _Layout(shape, tiling, bounds, parts)
