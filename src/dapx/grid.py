"""The process grid: rank <-> coordinates, neighbours and default factorisation.

The DAP numbers grid coordinates in row-major ("C") order, exactly as
``MPI_Cart_create`` does, so a `ProcessGrid` can be laid over an MPI Cartesian
communicator without renumbering.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import product

import numpy as np

__all__ = ["ProcessGrid", "dims_create"]


class ProcessGrid:
    """An immutable N-dimensional Cartesian grid of process ranks.

    Parameters
    ----------
    shape : sequence of int
        Number of processes along each grid dimension (each >= 1).

    Examples
    --------
    >>> g = ProcessGrid((2, 3))
    >>> g.nranks
    6
    >>> g.coords(4)
    (1, 1)
    >>> g.rank((1, 2))
    5
    >>> g.shift(0, (0, -1), periodic=(False, True))
    2
    """

    __slots__ = ("_shape",)

    def __init__(self, shape: Sequence[int]):
        shape = tuple(_as_int(n, "grid size") for n in shape)
        for n in shape:
            if n < 1:
                raise ValueError(f"every grid size must be >= 1, got grid {shape}")
        object.__setattr__(self, "_shape", shape)

    def __setattr__(self, name, value):
        raise AttributeError("ProcessGrid is immutable")

    def __delattr__(self, name):
        raise AttributeError("ProcessGrid is immutable")

    @property
    def shape(self) -> tuple[int, ...]:
        """Processes along each grid dimension."""
        return self._shape

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def nranks(self) -> int:
        """Total number of processes (1 for the grid of a 0-d array)."""
        return math.prod(self._shape)

    def coords(self, rank: int) -> tuple[int, ...]:
        """Row-major grid coordinates of `rank`."""
        rank = self._check_rank(rank)
        return tuple(int(c) for c in np.unravel_index(rank, self._shape)) if self._shape else ()

    def rank(self, coords: Sequence[int]) -> int:
        """The rank at grid coordinates `coords` (row-major)."""
        coords = tuple(coords)
        if len(coords) != self.ndim:
            raise ValueError(f"grid {self._shape} needs {self.ndim} coordinates, got {coords}")
        for c, n in zip(coords, self._shape):
            if not 0 <= c < n:
                raise ValueError(f"coordinates {coords} are outside grid {self._shape}")
        return int(np.ravel_multi_index(coords, self._shape)) if self._shape else 0

    def ranks_from_coords(self, coords: Sequence[np.ndarray]) -> np.ndarray:
        """Vectorised `rank`: one integer array of coordinates per grid dimension."""
        if not self._shape:
            return np.zeros(np.broadcast_shapes(*[np.shape(c) for c in coords]), np.intp)
        return np.ravel_multi_index(tuple(coords), self._shape)

    def shift(
        self,
        rank: int,
        offset: Sequence[int],
        periodic: bool | Sequence[bool] = False,
    ) -> int | None:
        """The rank at ``coords(rank) + offset``, or None past a non-periodic edge.

        Offsets may move along several dimensions at once, which is what edge
        and corner neighbours of a halo exchange need.
        """
        offset = tuple(offset)
        if len(offset) != self.ndim:
            raise ValueError(f"offset {offset} must have one entry per grid dimension")
        periodic = _per_dim(periodic, self.ndim, "periodic")
        target = []
        for c, d, n, p in zip(self.coords(rank), offset, self._shape, periodic):
            t = c + d
            if p:
                t %= n
            elif not 0 <= t < n:
                return None
            target.append(t)
        return self.rank(target)

    def neighbors(
        self, rank: int, periodic: bool | Sequence[bool] = False, width: int = 1
    ) -> dict[tuple[int, ...], int]:
        """All ranks within `width` steps of `rank` in every dimension (edges, corners).

        Returns a mapping offset -> rank, without the zero offset and without
        offsets that fall off a non-periodic edge.
        """
        result = {}
        for offset in product(range(-width, width + 1), repeat=self.ndim):
            if any(offset):
                other = self.shift(rank, offset, periodic)
                if other is not None:
                    result[offset] = other
        return result

    def _check_rank(self, rank) -> int:
        rank = _as_int(rank, "rank")
        if not 0 <= rank < self.nranks:
            raise ValueError(f"rank {rank} is outside a grid of {self.nranks} ranks")
        return rank

    def __eq__(self, other):
        return isinstance(other, ProcessGrid) and other._shape == self._shape

    def __hash__(self):
        return hash(("ProcessGrid", self._shape))

    def __repr__(self):
        return f"ProcessGrid({self._shape})"

    def __reduce__(self):
        return ProcessGrid, (self._shape,)


def dims_create(nranks: int, dims: int | Sequence[int | None]) -> tuple[int, ...]:
    """Factor `nranks` over a grid as evenly as possible, like ``MPI_Dims_create``.

    Parameters
    ----------
    nranks : int
        Number of processes, >= 1.
    dims : int or sequence of int or None
        Either the number of grid dimensions, or one entry per dimension where
        a positive int fixes that dimension and 0 or None leaves it free.

    Returns
    -------
    tuple of int
        The free dimensions are filled in non-increasing order, as balanced as
        possible (the smallest possible largest factor, then the next, ...).

    Examples
    --------
    >>> dims_create(12, 2)
    (4, 3)
    >>> dims_create(12, 3)
    (3, 2, 2)
    >>> dims_create(12, (0, 2, None))
    (3, 2, 2)
    """
    nranks = _as_int(nranks, "nranks")
    if nranks < 1:
        raise ValueError(f"nranks must be >= 1, got {nranks}")
    if isinstance(dims, (int, np.integer)):
        if dims < 0:
            raise ValueError(f"the number of grid dimensions must be >= 0, got {dims}")
        dims = [0] * int(dims)
    dims = [0 if d is None else _as_int(d, "grid size") for d in dims]
    if any(d < 0 for d in dims):
        raise ValueError(f"grid sizes must be >= 1 (or 0/None for free), got {dims}")
    fixed = math.prod(d for d in dims if d > 0)
    free = [i for i, d in enumerate(dims) if d == 0]
    if nranks % fixed:
        raise ValueError(f"{nranks} ranks cannot be split over a grid with fixed sizes {dims}")
    remaining = nranks // fixed
    if not free:
        if remaining != 1:
            raise ValueError(f"grid {tuple(dims)} has {fixed} ranks, not {nranks}")
        return tuple(dims)
    for i, f in zip(free, _balanced_factors(remaining, len(free))):
        dims[i] = f
    return tuple(dims)


def _balanced_factors(n: int, k: int) -> tuple[int, ...]:
    """The non-increasing k-factorisation of n that is lexicographically smallest."""
    if k == 1:
        return (n,)
    # The largest factor is at least ceil(n ** (1/k)); try the candidates upward.
    for first in _divisors(n):
        if first**k < n:
            continue
        rest = _balanced_factors(n // first, k - 1)
        if rest[0] <= first:
            return (first, *rest)
    raise AssertionError("unreachable: (n, 1, ..., 1) always qualifies")


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def _as_int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an integer, got {value!r}")
    return int(value)


def _per_dim(value, ndim: int, what: str) -> tuple:
    if isinstance(value, (bool, np.bool_)):
        return (bool(value),) * ndim
    value = tuple(value)
    if len(value) != ndim:
        raise ValueError(f"{what} needs one entry per dimension ({ndim}), got {value}")
    return value
