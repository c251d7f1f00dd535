"""`CyclicMap`: the cyclic and block-cyclic distribution."""

from __future__ import annotations

import numpy as np

from ...errors import dap_error
from ..checks import as_int
from .base import Map

__all__ = ["CyclicMap"]


class CyclicMap(Map):
    """Cyclic and block-cyclic distribution.

    Blocks of `block_size` consecutive indices are dealt round-robin: global
    index ``i`` belongs to grid rank ``(i // block_size) % nprocs``. The last
    block may be partial, on whichever rank it falls.

    Examples
    --------
    >>> m = CyclicMap(9, 2, block_size=2)
    >>> m.global_indices(0).tolist(), m.global_indices(1).tolist()
    ([0, 1, 4, 5, 8], [2, 3, 6, 7])
    >>> r, l = m.owner([7, 8])
    >>> r.tolist(), l.tolist()
    ([1, 0], [3, 4])
    """

    __slots__ = ("_block_size",)
    #: The DAP ``dist_type`` of a cyclic or block-cyclic map.
    dist_type = "c"

    def __init__(self, size: int, nprocs: int, block_size: int = 1):
        super().__init__(size, nprocs)
        block_size = as_int(block_size, "block_size")
        if block_size < 1:
            raise dap_error(f"block_size must be >= 1, got {block_size}", key="block_size")
        object.__setattr__(self, "_block_size", int(block_size))

    @property
    def block_size(self) -> int:
        """The number of consecutive elements dealt to a rank at a time (1: cyclic)."""
        return self._block_size

    @property
    def nblocks(self) -> int:
        """Number of (possibly partial) blocks in the whole dimension."""
        return -(-self._size // self._block_size)

    def _rank_nblocks(self, r: int) -> int:
        nb = self.nblocks
        return 0 if r >= nb else (nb - r + self._nprocs - 1) // self._nprocs

    def local_length(self, grid_rank):
        r = self._check_rank(grid_rank)
        n = self._rank_nblocks(r) * self._block_size
        last = self.nblocks - 1
        if last >= 0 and last % self._nprocs == r:
            n -= last * self._block_size + self._block_size - self._size
        return n

    num_owned = local_length

    def start(self, grid_rank: int) -> int:
        """DAP ``start``: the first owned index, or ``size`` on an empty rank."""
        r = self._check_rank(grid_rank)
        return min(r * self._block_size, self._size)

    def global_indices(self, grid_rank):
        r = self._check_rank(grid_rank)
        bs, P = self._block_size, self._nprocs
        if bs == 1:
            return np.arange(r, self._size, P, dtype=np.intp)
        n = self.local_length(r)
        first = np.arange(r * bs, self._size, P * bs, dtype=np.intp)
        idx = np.add.outer(first, np.arange(bs, dtype=np.intp)).reshape(-1)
        return idx[:n]

    owned_indices = global_indices

    def _owner(self, g):
        bs, P = self._block_size, self._nprocs
        block, within = np.divmod(g, bs)
        return block % P, (block // P) * bs + within

    def _local_to_global(self, grid_rank, local):
        bs, P = self._block_size, self._nprocs
        lblock, within = np.divmod(local, bs)
        return (lblock * P + grid_rank) * bs + within

    def dim_dict(self, grid_rank):
        r = self._check_rank(grid_rank)
        d = self._common(r)
        d.update(start=self.start(r), block_size=self._block_size)
        return d

    @classmethod
    def from_dim_dicts(cls, dicts):
        d0 = dicts[0]
        return cls(d0["size"], d0["proc_grid_size"], d0["block_size"])

    def _key(self):
        return ("c", self._size, self._nprocs, self._block_size)

    def __repr__(self):
        return f"CyclicMap(size={self._size}, nprocs={self._nprocs}, block_size={self._block_size})"

    def __reduce__(self):
        return CyclicMap, (self._size, self._nprocs, self._block_size)
