"""The `Map` interface shared by every 1-D distribution, and its helpers.

A map describes how the indices ``0 .. size-1`` of one array dimension are
laid out over the ``nprocs`` grid ranks along that dimension. It answers every
index question without communication and without a Python loop over elements,
and it round-trips to and from the DAP dimension dictionaries of all its grid
ranks (`Map.dim_dict` / `Map.from_dim_dicts`), which the tests use as an oracle.

Vocabulary used throughout:

* *local order*: the order of a rank's local buffer, padding included;
* *owned* indices: those a rank is the owner of. Boundary padding is owned
  (it counts toward ``size``); communication padding is a copy of indices
  owned by a neighbour.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from ...errors import dap_error
from ..checks import as_int

__all__ = ["Map", "even_bounds"]


def even_bounds(size: int, nprocs: int) -> np.ndarray:
    """Block boundaries that split `size` over `nprocs` the way MPI codes do.

    The first ``size % nprocs`` ranks get one element more than the others.

    >>> even_bounds(10, 4).tolist()
    [0, 3, 6, 8, 10]
    """
    counts = np.full(nprocs, size // nprocs, dtype=np.intp)
    counts[: size % nprocs] += 1
    return np.concatenate(([0], np.cumsum(counts))).astype(np.intp)


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=np.intp, copy=True)
    a.setflags(write=False)
    return a


class Map(ABC):
    """Layout of one dimension of `size` indices over `nprocs` grid ranks."""

    __slots__ = ("_hash", "_nprocs", "_size")
    #: The DAP ``dist_type`` of this map: ``"b"``, ``"c"`` or ``"u"``.
    dist_type: str

    def __init__(self, size: int, nprocs: int):
        size = as_int(size, "size")
        nprocs = as_int(nprocs, "proc_grid_size")
        if size < 0:
            raise dap_error(f"size must be >= 0, got {size}", key="size")
        if nprocs < 1:
            raise dap_error(f"proc_grid_size must be >= 1, got {nprocs}", key="proc_grid_size")
        object.__setattr__(self, "_size", int(size))
        object.__setattr__(self, "_nprocs", int(nprocs))

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name):
        raise AttributeError(f"{type(self).__name__} is immutable")

    @property
    def size(self) -> int:
        """Global number of indices: the DAP ``size`` (a halo map's domain, see `BlockMap`)."""
        return self._size

    @property
    def nprocs(self) -> int:
        """Number of grid ranks along this dimension (the DAP ``proc_grid_size``)."""
        return self._nprocs

    # -- per-rank questions -------------------------------------------------
    @abstractmethod
    def global_indices(self, grid_rank: int) -> np.ndarray:
        """Global indices held by `grid_rank`, in local order, padding included."""

    @abstractmethod
    def local_length(self, grid_rank: int) -> int:
        """Length of the local buffer of `grid_rank`, padding included."""

    @abstractmethod
    def num_owned(self, grid_rank: int) -> int:
        """Number of indices `grid_rank` owns (boundary padding included)."""

    @abstractmethod
    def owned_indices(self, grid_rank: int) -> np.ndarray:
        """Global indices owned by `grid_rank`, in local order."""

    @abstractmethod
    def dim_dict(self, grid_rank: int) -> dict:
        """The explicit DAP v0.10 dimension dictionary of `grid_rank`."""

    # -- vectorised index translation ----------------------------------------
    @abstractmethod
    def _owner(self, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...

    @abstractmethod
    def _local_to_global(self, grid_rank: int, local: np.ndarray) -> np.ndarray: ...

    def owner(self, global_index) -> tuple[np.ndarray, np.ndarray]:
        """Owning grid rank and local index (padding included) of global indices.

        Negative indices count from the end, as in NumPy.
        """
        g = np.asarray(global_index)
        if g.dtype.kind not in "iu":
            raise TypeError(f"global indices must be integers, got dtype {g.dtype}")
        g = g.astype(np.intp, copy=True)
        bad = (g < -self._size) | (g >= self._size)
        if bad.any():
            raise IndexError(
                f"index {int(g[bad].flat[0])} is out of bounds for a dimension of size {self._size}"
            )
        g[g < 0] += self._size
        return self._owner(g)

    def local_to_global(self, grid_rank: int, local_index) -> np.ndarray:
        """Global index of local indices (padding included) on `grid_rank`."""
        grid_rank = self._check_rank(grid_rank)
        local = np.asarray(local_index)
        if local.dtype.kind not in "iu":
            raise TypeError(f"local indices must be integers, got dtype {local.dtype}")
        n = self.local_length(grid_rank)
        bad = (local < 0) | (local >= n)
        if bad.any():
            raise IndexError(
                f"local index {int(local[bad].flat[0])} is out of bounds on grid rank "
                f"{grid_rank}, whose buffer has length {n}"
            )
        return self._local_to_global(grid_rank, local.astype(np.intp))

    # -- construction from DAP ----------------------------------------------
    @classmethod
    @abstractmethod
    def from_dim_dicts(cls, dicts: Sequence[dict]) -> Map:
        """Build the map from the normalised v0.10 dicts of every grid rank, in order."""

    def _check_rank(self, grid_rank) -> int:
        if type(grid_rank) is int and 0 <= grid_rank < self._nprocs:  # the common case, fast
            return grid_rank
        if isinstance(grid_rank, bool) or not isinstance(grid_rank, (int, np.integer)):
            raise TypeError(f"grid rank must be an integer, got {grid_rank!r}")
        if not 0 <= grid_rank < self._nprocs:
            raise ValueError(f"grid rank {grid_rank} is outside 0..{self._nprocs - 1}")
        return int(grid_rank)

    def _common(self, grid_rank: int) -> dict:
        return {
            "dist_type": self.dist_type,
            "size": self._size,
            "proc_grid_size": self._nprocs,
            "proc_grid_rank": grid_rank,
        }

    @abstractmethod
    def _key(self) -> tuple: ...

    def __eq__(self, other):
        return type(other) is type(self) and self._key() == other._key()

    def __hash__(self):
        # Plans are cached by maps, and a block map's key serialises its arrays: hash once.
        try:
            return self._hash
        except AttributeError:
            object.__setattr__(self, "_hash", hash(self._key()))
            return self._hash
