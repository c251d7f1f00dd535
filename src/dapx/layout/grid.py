"""The process grid: rank <-> coordinates, neighbours and default factorisation.

The DAP numbers grid coordinates in row-major ("C") order, exactly as
``MPI_Cart_create`` does, so a `ProcessGrid` can be laid over an MPI Cartesian
communicator without renumbering.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import product
from typing import NamedTuple

import numpy as np

from .checks import as_int, per_dim

__all__ = ["Cartesian", "ProcessGrid", "default_grid", "dims_create"]


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
        shape = tuple(as_int(n, "grid size") for n in shape)
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
        """The number of grid dimensions."""
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
        periodic = per_dim(periodic, self.ndim, "periodic")
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
        rank = as_int(rank, "rank")
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
    nranks = as_int(nranks, "nranks")
    if nranks < 1:
        raise ValueError(f"nranks must be >= 1, got {nranks}")
    if isinstance(dims, (int, np.integer)):
        if dims < 0:
            raise ValueError(f"the number of grid dimensions must be >= 0, got {dims}")
        dims = [0] * int(dims)
    dims = [0 if d is None else as_int(d, "grid size") for d in dims]
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


def default_grid(
    shape: Sequence[int],
    nranks: int,
    dims: Sequence[int | None] | None = None,
    min_extent: Sequence[int] | None = None,
) -> tuple[int, ...]:
    """The process grid dapx picks for an array of `shape` when none is given.

    Every free dimension but the last is filled as `dims_create` would (as
    balanced as possible); the last free dimension, the one contiguous in
    memory, takes ranks only when the others cannot hold them all with at
    least `min_extent` elements per rank. This is mpi4py-fft's slab/pencil
    default, and it matters for NumPy: with a 2-D block of short rows every
    stencil slice is a strided 2-D operand, and NumPy 2.3+ copies the rows of
    such operands through its ufunc buffer once three of them fit in it
    (rows of up to 2,730 float64 by default), which about halves a kernel's
    speed. Whole rows also make the halo faces along the split axes
    contiguous messages.

    Parameters
    ----------
    shape : sequence of int
        Global shape of the array.
    nranks : int
        Number of processes.
    dims : sequence of int or None, optional
        One entry per dimension: a positive int fixes that dimension, 0 or
        None leaves it free (default: all free).
    min_extent : sequence of int, optional
        The fewest elements a rank should hold along each dimension (e.g. the
        halo width), default 1.

    Returns
    -------
    tuple of int

    Examples
    --------
    >>> default_grid((4096, 4096), 4)
    (4, 1)
    >>> default_grid((64, 64, 64), 8)
    (4, 2, 1)
    >>> default_grid((3, 1000), 4)  # three rows cannot take four ranks
    (2, 2)
    >>> default_grid((8, 8), 4, min_extent=(3, 1))  # blocks of 2 rows are thinner than the halo
    (2, 2)
    >>> default_grid((100, 100), 6, dims=(0, 3))
    (2, 3)
    """
    shape = tuple(as_int(n, "shape entry") for n in shape)
    if any(n < 0 for n in shape):
        raise ValueError(f"shape entries must be >= 0, got {shape}")
    dims = [0] * len(shape) if dims is None else [0 if d is None else d for d in dims]
    if len(dims) != len(shape):
        raise ValueError(f"dims needs one entry per dimension ({len(shape)}), got {dims}")
    min_extent = (1,) * len(shape) if min_extent is None else tuple(min_extent)
    if len(min_extent) != len(shape):
        raise ValueError(
            f"min_extent needs one entry per dimension ({len(shape)}), got {min_extent}"
        )
    balanced = dims_create(nranks, dims)  # validates, and is the answer with < 2 free axes
    free = [i for i, d in enumerate(dims) if d == 0]
    if len(free) < 2:
        return balanced
    last, outer = free[-1], free[:-1]
    for on_last in _divisors(math.prod(balanced[i] for i in free)):
        trial = dims_create(nranks, [on_last if i == last else d for i, d in enumerate(dims)])
        if all(trial[i] == 1 or shape[i] // trial[i] >= max(min_extent[i], 1) for i in outer):
            return trial
    raise AssertionError("unreachable: with every rank on the last axis the others hold 1")


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


class Cartesian(NamedTuple):
    """A process grid a neighbour exchange follows: its shape and which dimensions wrap."""

    shape: tuple[int, ...]
    periods: tuple[bool, ...]
