"""`BlockMap`: the block distribution, regular or irregular, padded and periodic.

A `BlockMap` with ``ghost_edges=True`` follows dapx's halo semantics instead
of the DAP's: *all* padding is ghost cells (not owned, not counted in
``size``), including the padding at a non-periodic domain edge, which holds
boundary-condition values rather than data. Its ``size`` is the domain; its DAP
dictionaries (`BlockMap.dim_dict`) still describe the padding exactly as the
DAP does, as boundary padding that the exported ``size`` counts (see
`BlockMap.as_dap` and `BlockMap.as_halo`, which convert between the two
readings).
"""

from __future__ import annotations

import numpy as np

from ...errors import DAPError, dap_error
from ..checks import as_int
from .base import Map, _readonly, even_bounds

__all__ = ["BlockMap"]


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
    #: The DAP ``dist_type`` of a block map.
    dist_type = "b"

    def __init__(
        self, size, bounds=None, *, nprocs=None, padding=None, periodic=False, ghost_edges=False
    ):
        if bounds is None:
            if nprocs is None:
                raise TypeError("BlockMap needs bounds or nprocs")
            bounds = even_bounds(as_int(size, "size"), as_int(nprocs, "proc_grid_size"))
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
        """Whether the dimension wraps around (the last block's neighbour is the first)."""
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
        """Whether any rank's block is padded (a halo or DAP padding)."""
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
        return self._ghost(self._check_rank(grid_rank))

    def _ghost(self, r: int) -> tuple[int, int]:
        # `ghost_widths` of a checked rank; plans call it for every neighbour, so it is lean.
        padding = self._padding
        lo, hi = int(padding[r, 0]), int(padding[r, 1])
        if self._ghost_edges or self._periodic:
            return lo, hi
        return (lo if r > 0 else 0), (hi if r < self._nprocs - 1 else 0)

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
        return int(self._bounds[r]) - self._ghost(r)[0]

    def stop(self, grid_rank: int) -> int:
        """Global index one past the end of the buffer, padding included (see `start`)."""
        r = self._check_rank(grid_rank)
        return int(self._bounds[r + 1]) + self._ghost(r)[1]

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
        # The low ghost width of the owners only (as `ghost_widths` has it), vectorised:
        # a list over every grid rank made each call O(nprocs) in Python.
        lo = self._padding[ranks, 0]
        if not (self._ghost_edges or self._periodic):
            lo = np.where(ranks > 0, lo, 0)
        return ranks, g - self._bounds[ranks] + lo

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
        return BlockMap(
            self._size + lo + hi, bounds, padding=self._padding, periodic=self._periodic
        )

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
            return BlockMap(
                size, bounds, padding=self._padding, periodic=self._periodic, ghost_edges=True
            )
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
                f"the blocks end at {int(bounds[-1])} but size is {size}: blocks must tile 0..size",
                key="stop",
            )
        return cls(size, bounds, padding=padding, periodic=periodic)

    def _key(self):
        return (
            "b",
            self._size,
            self._bounds.tobytes(),
            self._padding.tobytes(),
            self._periodic,
            self._ghost_edges,
        )

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
        return _rebuild_block, (
            self._size,
            self._bounds,
            self._padding,
            self._periodic,
            self._ghost_edges,
        )


def _rebuild_block(size, bounds, padding, periodic, ghost_edges=False):
    return BlockMap(size, bounds, padding=padding, periodic=periodic, ghost_edges=ghost_edges)
