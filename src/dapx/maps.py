"""One immutable map per kind of 1-D distribution.

A map describes how the indices ``0 .. size-1`` of one array dimension are
laid out over the ``nprocs`` grid ranks along that dimension. It answers every
index question without communication and without a Python loop over elements,
and it round-trips to and from the DAP dimension dictionaries of all its grid
ranks (`dim_dict` / `from_dim_dicts`), which the tests use as an oracle.

Vocabulary used throughout:

* *local order*: the order of a rank's local buffer, padding included;
* *owned* indices: those a rank is the owner of. Boundary padding is owned
  (it counts toward ``size``); communication padding is a copy of indices
  owned by a neighbour.

A `BlockMap` with ``ghost_edges=True`` follows dapx's halo semantics instead:
*all* padding is ghost cells (not owned, not counted in ``size``), including
the padding at a non-periodic domain edge, which holds boundary-condition
values rather than data. Its ``size`` is the domain; its DAP dictionaries
(`BlockMap.dim_dict`) still describe the padding exactly as the DAP does, as
boundary padding that the exported ``size`` counts (see `BlockMap.as_dap`
and `BlockMap.as_halo`, which convert between the two readings).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from .errors import DAPError, dap_error

__all__ = ["BlockMap", "CyclicMap", "Map", "UnstructuredMap", "even_bounds", "map_from_dim_dicts"]


def even_bounds(size: int, nprocs: int) -> np.ndarray:
    """Block boundaries that split `size` over `nprocs` the way MPI codes do.

    The first ``size % nprocs`` ranks get one element more than the others.

    >>> even_bounds(10, 4).tolist()
    [0, 3, 6, 8, 10]
    """
    counts = np.full(nprocs, size // nprocs, dtype=np.intp)
    counts[: size % nprocs] += 1
    return np.concatenate(([0], np.cumsum(counts))).astype(np.intp)


def _as_int(value, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an integer, got {value!r}")
    return int(value)


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=np.intp, copy=True)
    a.setflags(write=False)
    return a


class Map(ABC):
    """Layout of one dimension of `size` indices over `nprocs` grid ranks."""

    __slots__ = ("_nprocs", "_size")
    dist_type: str

    def __init__(self, size: int, nprocs: int):
        size = _as_int(size, "size")
        nprocs = _as_int(nprocs, "proc_grid_size")
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
        return hash(self._key())


class BlockMap(Map):
    """Block distribution: regular or irregular, optionally padded and periodic.

    Parameters
    ----------
    size : int
        Global length: with DAP semantics (the default) boundary padding
        included (the DAP ``size``); with ``ghost_edges=True`` the domain
        only.
    bounds : sequence of int, optional
        ``nprocs + 1`` non-decreasing owned boundaries from 0 to `size`; grid
        rank ``r`` owns ``bounds[r]:bounds[r+1]``. Default: `even_bounds`.
    nprocs : int, optional
        Number of grid ranks; taken from `bounds` when given.
    padding : sequence, optional
        ``(nprocs, 2)`` padding widths (lo, hi) of each grid rank. A width at a
        non-periodic edge of the grid is boundary padding (inside the owned
        range); every other width is communication padding, which holds
        copies of the neighbour's first or last owned indices. Communication
        widths must match between neighbours and not exceed the neighbour's
        block (DAP v0.10).
    periodic : bool
        Whether the dimension wraps around: then the edge paddings are
        communication padding with the rank at the other end.
    ghost_edges : bool
        dapx halo semantics: all padding is ghost cells. The padding at a
        non-periodic domain edge lies *outside* the owned range (not counted
        in `size`) and holds boundary values, like a halo in GDP-3 storages;
        on a periodic map the flag changes no index, it only marks the
        padding as a halo. Normalised to False on an unpadded map.

    Examples
    --------
    The padded example of the DAP documentation (18 indices, 2 ranks):

    >>> m = BlockMap(18, nprocs=2, padding=[(1, 1), (1, 1)])
    >>> m.global_indices(1).tolist()
    [8, 9, 10, 11, 12, 13, 14, 15, 16, 17]
    >>> m.num_owned(0), m.num_owned(1)
    (9, 9)
    >>> m.dim_dict(1)["start"], m.dim_dict(1)["stop"]
    (8, 18)

    Read as a halo, it is a domain of 16 with one ghost cell on each side;
    its DAP dictionaries are the same:

    >>> h = m.as_halo()
    >>> h.size, h.bounds.tolist(), h.global_indices(0).tolist()
    (16, [0, 8, 16], [-1, 0, 1, 2, 3, 4, 5, 6, 7, 8])
    >>> [h.dim_dict(c) == m.dim_dict(c) for c in range(2)]
    [True, True]
    """

    __slots__ = ("_bounds", "_ghost_edges", "_padding", "_periodic")
    dist_type = "b"

    def __init__(self, size, bounds=None, *, nprocs=None, padding=None, periodic=False,
                 ghost_edges=False):  # fmt: skip
        if bounds is None:
            if nprocs is None:
                raise TypeError("BlockMap needs bounds or nprocs")
            bounds = even_bounds(_as_int(size, "size"), _as_int(nprocs, "proc_grid_size"))
        bounds = np.asarray(bounds)
        if bounds.ndim != 1 or bounds.size < 2 or bounds.dtype.kind not in "iu":
            raise dap_error(f"bounds must be nprocs + 1 integers, got {bounds!r}")
        if nprocs is not None and bounds.size != nprocs + 1:
            raise dap_error(f"{bounds.size} bounds do not describe {nprocs} grid ranks")
        super().__init__(size, bounds.size - 1)
        if bounds[0] != 0 or bounds[-1] != self._size:
            raise dap_error(
                f"the owned blocks must cover 0..{self._size} exactly, got bounds {bounds.tolist()}"
            )
        if (np.diff(bounds) < 0).any():
            r = int(np.flatnonzero(np.diff(bounds) < 0)[0])
            raise dap_error(
                f"block of grid rank {r + 1} starts at {int(bounds[r + 1])}, before the block of "
                f"grid rank {r} ends at {int(bounds[r + 2]) if r + 2 < bounds.size else '?'}; "
                "blocks must be adjacent and in grid-rank order"
            )
        if padding is None:
            padding = np.zeros((self._nprocs, 2), np.intp)
        padding = np.asarray(padding)
        if padding.shape != (self._nprocs, 2) or padding.dtype.kind not in "iu":
            raise dap_error(
                f"padding must be one (lo, hi) pair of integers per grid rank "
                f"({self._nprocs}), got {padding.tolist()}",
                key="padding",
            )
        if (padding < 0).any():
            raise dap_error(f"padding widths must be >= 0, got {padding.tolist()}", key="padding")
        object.__setattr__(self, "_bounds", _readonly(bounds))
        object.__setattr__(self, "_padding", _readonly(padding))
        if not isinstance(periodic, (bool, np.bool_)):
            raise TypeError(f"periodic must be a bool, got {periodic!r}")
        if not isinstance(ghost_edges, (bool, np.bool_)):
            raise TypeError(f"ghost_edges must be a bool, got {ghost_edges!r}")
        object.__setattr__(self, "_periodic", bool(periodic))
        object.__setattr__(self, "_ghost_edges", bool(ghost_edges) and bool(padding.any()))
        self._check_padding()

    def _check_padding(self):
        counts = np.diff(self._bounds)
        P = self._nprocs
        for r in range(P):
            lo, hi = (int(w) for w in self._padding[r])
            comm_lo, comm_hi = self.is_comm_padding(r)
            boundary = (0 if comm_lo else lo) + (0 if comm_hi else hi)
            if boundary > counts[r] and not self._ghost_edges:
                raise dap_error(
                    f"boundary padding {lo, hi} of grid rank {r} is wider than the "
                    f"{int(counts[r])} indices it owns",
                    key="padding",
                )
            if comm_hi:
                right = (r + 1) % P
                if int(self._padding[right][0]) != hi:
                    raise dap_error(
                        f"communication padding must match between neighbours: grid rank {r} "
                        f"has {hi} on its high side but grid rank {right} has "
                        f"{int(self._padding[right][0])} on its low side",
                        key="padding",
                    )
                if hi > counts[right]:
                    raise dap_error(
                        f"communication padding {hi} of grid rank {r} is wider than the "
                        f"{int(counts[right])} indices its neighbour (grid rank {right}) owns",
                        key="padding",
                    )
            if comm_lo:
                left = (r - 1) % P
                if lo > counts[left]:
                    raise dap_error(
                        f"communication padding {lo} of grid rank {r} is wider than the "
                        f"{int(counts[left])} indices its neighbour (grid rank {left}) owns",
                        key="padding",
                    )

    # -- attributes ----------------------------------------------------------
    @property
    def bounds(self) -> np.ndarray:
        """Owned boundaries, ``nprocs + 1`` values from 0 to size (read-only)."""
        return self._bounds

    @property
    def padding(self) -> np.ndarray:
        """``(nprocs, 2)`` padding widths (read-only)."""
        return self._padding

    @property
    def periodic(self) -> bool:
        return self._periodic

    @property
    def ghost_edges(self) -> bool:
        """Whether all padding is ghost cells, at non-periodic domain edges too (dapx halos)."""
        return self._ghost_edges

    def _edge_widths(self) -> tuple[int, int]:
        """Widths of the ghost cells outside the domain (non-periodic ``ghost_edges`` maps)."""
        if not self._ghost_edges or self._periodic:
            return 0, 0
        return int(self._padding[0, 0]), int(self._padding[-1, 1])

    @property
    def is_padded(self) -> bool:
        return bool(self._padding.any())

    def is_comm_padding(self, grid_rank: int) -> tuple[bool, bool]:
        """Whether the (lo, hi) padding of `grid_rank` is DAP communication padding.

        The other widths are DAP boundary padding, which a ``ghost_edges``
        map treats as ghost cells outside the domain (see `ghost_widths`).
        """
        if self._periodic:
            return True, True
        return grid_rank > 0, grid_rank < self._nprocs - 1

    def ghost_widths(self, grid_rank: int) -> tuple[int, int]:
        """The (lo, hi) widths of `grid_rank`'s padding that it does not own.

        Communication padding always; the padding at a non-periodic domain
        edge too when the map has ``ghost_edges``.

        >>> m = BlockMap(8, nprocs=2, padding=[(1, 1), (1, 1)])
        >>> m.ghost_widths(0), m.as_halo().ghost_widths(0)
        ((0, 1), (1, 1))
        """
        r = self._check_rank(grid_rank)
        lo, hi = (int(w) for w in self._padding[r])
        if self._ghost_edges:
            return lo, hi
        comm_lo, comm_hi = self.is_comm_padding(r)
        return (lo if comm_lo else 0), (hi if comm_hi else 0)

    def start(self, grid_rank: int) -> int:
        """First global index of the buffer, padding included.

        With DAP semantics this is the DAP v0.10 ``start``.

        # Note: on a periodic dimension the first rank's low communication
        # padding wraps to the end, so ``start`` is negative there (and the
        # last rank's ``stop`` exceeds ``size``); indices are taken modulo size.
        # With ``ghost_edges`` the edge ghosts of a non-periodic dimension lie
        # outside the domain too: ``start`` is ``-lo`` on the first rank and
        # the last rank's ``stop`` is ``size + hi`` (the DAP dictionaries
        # shift both by the low edge width, see `dim_dict`).
        """
        r = self._check_rank(grid_rank)
        return int(self._bounds[r]) - self.ghost_widths(r)[0]

    def stop(self, grid_rank: int) -> int:
        """Global index one past the end of the buffer, padding included (see `start`)."""
        r = self._check_rank(grid_rank)
        return int(self._bounds[r + 1]) + self.ghost_widths(r)[1]

    # -- Map interface ---------------------------------------------------------
    def local_length(self, grid_rank):
        return self.stop(grid_rank) - self.start(grid_rank)

    def num_owned(self, grid_rank):
        r = self._check_rank(grid_rank)
        return int(self._bounds[r + 1] - self._bounds[r])

    def global_indices(self, grid_rank):
        """Global indices of the buffer of `grid_rank`, in local order, padding included.

        Periodic dimensions wrap them into ``0 .. size-1``. # Note: the edge
        ghosts of a ``ghost_edges`` map are outside the domain and returned
        as they are: negative before the first index, ``>= size`` after the
        last (the position the boundary condition extends the domain to).
        """
        idx = np.arange(self.start(grid_rank), self.stop(grid_rank), dtype=np.intp)
        if self._periodic and self._size:
            np.remainder(idx, self._size, out=idx)
        return idx

    def owned_indices(self, grid_rank):
        r = self._check_rank(grid_rank)
        return np.arange(self._bounds[r], self._bounds[r + 1], dtype=np.intp)

    def _owner(self, g):
        ranks = np.searchsorted(self._bounds, g, side="right") - 1
        starts = self._bounds[:-1] - np.array(
            [self.ghost_widths(r)[0] for r in range(self._nprocs)], dtype=np.intp
        )
        return ranks, g - starts[ranks]

    def _local_to_global(self, grid_rank, local):
        g = local + self.start(grid_rank)
        if self._periodic and self._size:
            g = np.remainder(g, self._size)
        return g

    def dim_dict(self, grid_rank):
        """The DAP v0.10 dimension dictionary of `grid_rank`.

        A ``ghost_edges`` map exports its edge ghosts as DAP boundary padding:
        ``size`` grows by the two edge widths and ``start``/``stop`` shift by
        the low one, so that any DAP consumer reads the same buffer layout.
        """
        r = self._check_rank(grid_rank)
        d = self._common(r)
        shift, high = self._edge_widths()
        d["size"] = self._size + shift + high
        d.update(
            start=self.start(r) + shift,
            stop=self.stop(r) + shift,
            padding=(int(self._padding[r][0]), int(self._padding[r][1])),
            periodic=self._periodic,
        )
        return d

    def as_dap(self) -> BlockMap:
        """The map with DAP semantics and the same dimension dictionaries.

        For a ``ghost_edges`` map the edge ghosts become owned boundary
        padding, counted in ``size``; any other map is returned as it is.

        >>> m = BlockMap(16, nprocs=2, padding=[(1, 1), (1, 1)], ghost_edges=True)
        >>> m.as_dap()
        BlockMap(size=18, bounds=[0, 9, 18], padding=[[1, 1], [1, 1]])
        """
        if not self._ghost_edges:
            return self
        lo, hi = self._edge_widths()
        bounds = self._bounds + lo
        bounds[0], bounds[-1] = 0, self._size + lo + hi
        return BlockMap(self._size + lo + hi, bounds, padding=self._padding,
                        periodic=self._periodic)  # fmt: skip

    def as_halo(self) -> BlockMap:
        """The map with dapx halo semantics (``ghost_edges``) and the same dictionaries.

        The inverse of `as_dap`: DAP boundary padding at a non-periodic
        domain edge becomes a ghost region outside a domain that much
        smaller. Raises `DAPError` when the result would break a halo rule
        (a neighbour's communication padding wider than the block left once
        the boundary padding is removed).
        """
        if self._ghost_edges or not self.is_padded:
            return self
        lo, hi = (0, 0) if self._periodic else (int(self._padding[0, 0]), int(self._padding[-1, 1]))
        size = self._size - lo - hi
        bounds = self._bounds - lo
        bounds[0], bounds[-1] = 0, size
        try:
            return BlockMap(size, bounds, padding=self._padding, periodic=self._periodic,
                            ghost_edges=True)  # fmt: skip
        except DAPError as e:
            raise dap_error(
                f"the boundary padding ({lo}, {hi}) cannot be read as a halo: {e}",
                key="padding",
            ) from None

    @classmethod
    def from_dim_dicts(cls, dicts):
        size, P = dicts[0]["size"], dicts[0]["proc_grid_size"]
        periodic = dicts[0]["periodic"]
        padding = np.array([d["padding"] for d in dicts], dtype=np.intp).reshape(P, 2)
        bounds = np.empty(P + 1, np.intp)
        bounds[0] = 0
        for r, d in enumerate(dicts):
            comm_lo, comm_hi = (periodic, periodic) if periodic else (r > 0, r < P - 1)
            owned_start = d["start"] + (d["padding"][0] if comm_lo else 0)
            owned_stop = d["stop"] - (d["padding"][1] if comm_hi else 0)
            if owned_start != bounds[r]:
                want = int(bounds[r])
                raise dap_error(
                    f"grid rank {r} owns indices from {owned_start} (start {d['start']} "
                    f"plus communication padding), but the blocks before it end at {want}: "
                    + ("blocks overlap" if owned_start < want else "there is a gap")
                    + " (blocks must tile 0..size in grid-rank order)",
                    key="start",
                )
            bounds[r + 1] = owned_stop
        if bounds[-1] != size:
            raise dap_error(
                f"the blocks end at {int(bounds[-1])} but size is {size}: "
                "blocks must tile 0..size",
                key="stop",
            )
        return cls(size, bounds, padding=padding, periodic=periodic)

    def _key(self):
        return ("b", self._size, self._bounds.tobytes(), self._padding.tobytes(), self._periodic,
                self._ghost_edges)  # fmt: skip

    def __repr__(self):
        extra = ""
        if self.is_padded:
            extra += f", padding={self._padding.tolist()}"
        if self._periodic:
            extra += ", periodic=True"
        if self._ghost_edges:
            extra += ", ghost_edges=True"
        return f"BlockMap(size={self._size}, bounds={self._bounds.tolist()}{extra})"

    def __reduce__(self):
        return _rebuild_block, (self._size, self._bounds, self._padding, self._periodic,
                                self._ghost_edges)  # fmt: skip


def _rebuild_block(size, bounds, padding, periodic, ghost_edges=False):
    return BlockMap(size, bounds, padding=padding, periodic=periodic, ghost_edges=ghost_edges)


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
    dist_type = "c"

    def __init__(self, size: int, nprocs: int, block_size: int = 1):
        super().__init__(size, nprocs)
        block_size = _as_int(block_size, "block_size")
        if block_size < 1:
            raise dap_error(f"block_size must be >= 1, got {block_size}", key="block_size")
        object.__setattr__(self, "_block_size", int(block_size))

    @property
    def block_size(self) -> int:
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
    dist_type = "u"

    def __init__(self, size: int, indices: Sequence, one_to_one: bool | None = None):
        super().__init__(size, len(indices))
        raw, norm = [], []
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
            if np.unique(n).size != n.size:
                raise dap_error(
                    f"indices of grid rank {r} are not locally unique", key="indices"
                )
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


_MAP_TYPES = {"b": BlockMap, "c": CyclicMap, "u": UnstructuredMap}


def map_from_dim_dicts(dicts: Sequence[dict]) -> Map:
    """Build the map of one dimension from the normalised v0.10 dicts of its grid ranks.

    The dicts must already have passed `dapx.protocol.validate_distbuffer`
    (they are complete), be one per grid rank in grid-rank order, and agree on
    the keys that must be equal along the dimension.
    """
    if not dicts:
        raise DAPError("a dimension needs at least one dimension dictionary")
    return _MAP_TYPES[dicts[0]["dist_type"]].from_dim_dicts(dicts)
