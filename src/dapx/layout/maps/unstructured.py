"""`UnstructuredMap`: each grid rank lists the global indices it holds."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...errors import dap_error
from .base import Map, _readonly

__all__ = ["UnstructuredMap"]


class UnstructuredMap(Map):
    """Unstructured distribution: each grid rank lists the global indices it holds.

    Parameters
    ----------
    size : int
        Global length.
    indices : sequence of 1-D integer arrays
        The global indices of each grid rank, in local order. Each must be
        locally unique; values may be negative, counting from the end as in
        NumPy (the DAP allows negative indices).
    one_to_one : bool, optional
        Whether every index is held by exactly one rank. Default: whether the
        indices are in fact one-to-one. When indices are shared, the lowest
        grid rank holding an index owns it.

    Examples
    --------
    >>> m = UnstructuredMap(5, [[3, 0], [4, 2, 1]])
    >>> m.one_to_one
    True
    >>> r, l = m.owner([0, 1])
    >>> r.tolist(), l.tolist()
    ([0, 1], [1, 2])
    """

    __slots__ = ("_indices", "_normalized", "_one_to_one", "_owner_local", "_owner_rank")
    #: The DAP ``dist_type`` of an unstructured map.
    dist_type = "u"

    def __init__(self, size: int, indices: Sequence, one_to_one: bool | None = None):
        super().__init__(size, len(indices))
        raw, norm = [], []
        # Local uniqueness in linear time: write each index's position, read it back; a
        # repeated index reads the later position (no sort, no hash of every rank's indices).
        position = np.empty(self._size, np.intp)
        for r, idx in enumerate(indices):
            a = np.asarray(idx)
            if a.size == 0:
                a = a.astype(np.intp).reshape(0)
            if a.ndim != 1 or a.dtype.kind not in "iu":
                raise dap_error(
                    f"indices of grid rank {r} must be a 1-D buffer of integers, "
                    f"got shape {a.shape} dtype {a.dtype}",
                    key="indices",
                )
            a = _readonly(a)
            out = (a < -self._size) | (a >= self._size)
            if out.any():
                raise dap_error(
                    f"grid rank {r} lists index {int(a[out][0])}, outside a dimension "
                    f"of size {self._size}",
                    key="indices",
                )
            n = np.where(a < 0, a + self._size, a)
            order = np.arange(n.size, dtype=np.intp)
            position[n] = order
            if not np.array_equal(position[n], order):
                raise dap_error(f"indices of grid rank {r} are not locally unique", key="indices")
            raw.append(a)
            norm.append(_readonly(n))
        object.__setattr__(self, "_indices", tuple(raw))
        object.__setattr__(self, "_normalized", tuple(norm))
        everything = np.concatenate(norm) if norm else np.empty(0, np.intp)
        counts = np.bincount(everything, minlength=self._size)
        if (counts == 0).any():
            missing = np.flatnonzero(counts == 0)
            raise dap_error(
                f"global indices {missing[:10].tolist()} are held by no rank: "
                "the ranks' indices must cover 0..size-1",
                key="indices",
            )
        actually_one_to_one = bool((counts == 1).all())
        if one_to_one is None:
            one_to_one = actually_one_to_one
        elif one_to_one and not actually_one_to_one:
            dup = np.flatnonzero(counts > 1)
            raise dap_error(
                f"one_to_one is True but global indices {dup[:10].tolist()} are held by "
                "more than one rank",
                key="one_to_one",
            )
        object.__setattr__(self, "_one_to_one", bool(one_to_one))
        owner_rank = np.empty(self._size, np.intp)
        owner_local = np.empty(self._size, np.intp)
        # Reverse order so that the lowest rank holding a shared index owns it.
        for r in range(self._nprocs - 1, -1, -1):
            owner_rank[norm[r]] = r
            owner_local[norm[r]] = np.arange(norm[r].size, dtype=np.intp)
        owner_rank.setflags(write=False)
        owner_local.setflags(write=False)
        object.__setattr__(self, "_owner_rank", owner_rank)
        object.__setattr__(self, "_owner_local", owner_local)

    @property
    def one_to_one(self) -> bool:
        """Whether every element has exactly one owner."""
        return self._one_to_one

    def indices(self, grid_rank: int) -> np.ndarray:
        """The indices of `grid_rank` as given (negative values kept)."""
        return self._indices[self._check_rank(grid_rank)]

    def local_length(self, grid_rank):
        return int(self._indices[self._check_rank(grid_rank)].size)

    def global_indices(self, grid_rank):
        return self._normalized[self._check_rank(grid_rank)]

    def _owned_mask(self, r):
        return self._owner_rank[self._normalized[r]] == r

    def num_owned(self, grid_rank):
        r = self._check_rank(grid_rank)
        if self._one_to_one:
            return self.local_length(r)
        return int(np.count_nonzero(self._owned_mask(r)))

    def owned_indices(self, grid_rank):
        r = self._check_rank(grid_rank)
        if self._one_to_one:
            return self._normalized[r]
        return self._normalized[r][self._owned_mask(r)]

    def _owner(self, g):
        return self._owner_rank[g], self._owner_local[g]

    def _local_to_global(self, grid_rank, local):
        return self._normalized[grid_rank][local]

    def dim_dict(self, grid_rank):
        r = self._check_rank(grid_rank)
        d = self._common(r)
        d.update(indices=self._indices[r], one_to_one=self._one_to_one)
        return d

    @classmethod
    def from_dim_dicts(cls, dicts):
        d0 = dicts[0]
        return cls(d0["size"], [d["indices"] for d in dicts], d0["one_to_one"])

    def _key(self):
        return ("u", self._size, self._one_to_one, tuple(a.tobytes() for a in self._indices))

    def __repr__(self):
        return (
            f"UnstructuredMap(size={self._size}, nprocs={self._nprocs}, "
            f"one_to_one={self._one_to_one})"
        )

    def __reduce__(self):
        return UnstructuredMap, (self._size, self._indices, self._one_to_one)
