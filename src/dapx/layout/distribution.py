"""`Distribution`: the immutable N-D layout of an array over a process grid.

A distribution is a `ProcessGrid` plus one 1-D `Map` per array dimension.
Everything else (global shape, local shapes, global indices, owners, the DAP
dimension dictionaries of every rank) is derived from those two, never stored
twice, and computed without communication.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import DAPError, dap_error
from .checks import per_dim
from .grid import ProcessGrid
from .maps import BlockMap, CyclicMap, Map, map_from_dim_dicts
from .protocol import check_sequence_of_distbuffers, dim_dicts_equal, validate_distbuffer
from .spec import (
    build_map,
    parse_spec,
    per_dim_halo,
    per_dim_padding,
    per_dim_spec,
    resolve_grid,
)

__all__ = ["Distribution", "describe_map"]

DimSpec = Any  # "b" | "c" | "u" | "n" | None | Mapping


class Distribution:
    """An immutable N-dimensional distribution: a process grid and one map per dimension.

    Build one with `Distribution.create` (from a description) or
    `Distribution.from_distbuffers` (from the ``__distarray__()`` dicts of
    every rank).

    Parameters
    ----------
    maps : sequence of Map
        One map per array dimension.
    grid : ProcessGrid or sequence of int, optional
        Must have one entry per dimension equal to that map's ``nprocs``;
        default: those sizes.

    Examples
    --------
    >>> d = Distribution.create((5, 9), dist=("b", "c"), grid=(2, 2))
    >>> d.global_shape, d.grid_shape, d.nranks
    ((5, 9), (2, 2), 4)
    >>> d.local_shape(1)
    (3, 4)
    >>> [a.tolist() for a in d.global_indices(1)]
    [[0, 1, 2], [1, 3, 5, 7]]
    >>> d.owner((4, 8))
    (2, (1, 4))
    """

    __slots__ = ("_grid", "_has_halo", "_hash", "_is_padded", "_maps", "_shape")

    def __init__(self, maps: Sequence[Map], grid: ProcessGrid | Sequence[int] | None = None):
        maps = tuple(maps)
        for m in maps:
            if not isinstance(m, Map):
                raise TypeError(f"maps must be dapx.layout.maps.Map instances, got {m!r}")
        sizes = tuple(m.nprocs for m in maps)
        if grid is None:
            grid = ProcessGrid(sizes)
        elif not isinstance(grid, ProcessGrid):
            grid = ProcessGrid(grid)
        if grid.shape != sizes:
            raise DAPError(f"grid {grid.shape} does not match the maps' proc_grid_sizes {sizes}")
        object.__setattr__(self, "_maps", maps)
        object.__setattr__(self, "_grid", grid)
        object.__setattr__(self, "_shape", tuple(m.size for m in maps))
        blocks = [m for m in maps if isinstance(m, BlockMap) and m.is_padded]
        object.__setattr__(self, "_is_padded", bool(blocks))
        object.__setattr__(self, "_has_halo", any(m.ghost_edges for m in blocks))
        object.__setattr__(self, "_hash", None)  # computed on first use (plans are cached by it)

    def __setattr__(self, name, value):
        raise AttributeError("Distribution is immutable")

    def __delattr__(self, name):
        raise AttributeError("Distribution is immutable")

    # -- construction ------------------------------------------------------------
    @classmethod
    def create(
        cls,
        shape: int | Sequence[int],
        dist: DimSpec | Sequence[DimSpec] | None = None,
        grid: Sequence[int | None] | None = None,
        *,
        nranks: int | None = None,
        block_size: int | Sequence[int | None] | None = None,
        padding: Any = None,
        periodic: bool | Sequence[bool] | None = None,
        halo: Any = None,
    ) -> Distribution:
        """Build a distribution from a description.

        Parameters
        ----------
        shape : int or sequence of int
            Global shape (DAP ``size`` of each dimension).
        dist : spec or sequence of spec, optional
            One spec per dimension (a single spec applies to all): ``"b"``
            (even block), ``"c"`` (cyclic), ``"n"`` or None (not distributed),
            or a dict such as ``{"dist": "c", "block_size": 2}``,
            ``{"dist": "b", "bounds": [0, 2, 9]}`` or
            ``{"dist": "u", "indices": [[...], ...], "one_to_one": True}``.
            Dicts may also carry ``padding`` and ``periodic``. Default: ``"b"``
            on every dimension.
        grid : sequence of int or None, optional
            Processes per dimension; 0 or None entries are filled by
            `dapx.layout.grid.default_grid` (balanced over the leading dimensions, the
            last one split only when they cannot hold every rank).
            Undistributed dimensions get 1.
        nranks : int, optional
            Number of processes when `grid` leaves entries free. Default: the
            ``DAPX_RANKS`` environment variable, or 4.
        block_size : int or sequence, optional
            Block size of cyclic dimensions (default 1).
        padding : int or sequence, optional
            For block dimensions: one int for every dimension, or one entry
            per dimension, each an int or ``(lo, hi)`` applied to every grid
            rank, or one ``(lo, hi)`` pair per grid rank. Widths at
            non-periodic grid edges are boundary padding (counted in size),
            the others communication padding (DAP v0.10).
        periodic : bool or sequence of bool, optional
            Whether block dimensions wrap around.
        halo : int, sequence or dict, optional
            Ghost cells around every rank's block (dapx halo semantics,
            ``ghost_edges`` maps): one int for every dimension, one entry per
            dimension (an int or a ``(lo, hi)`` pair), or a dict
            ``{axis: int or (lo, hi)}`` (for a 1-d array a pair of ints is
            its ``(lo, hi)``). Unlike `padding`, the halo is never
            part of the domain: ``shape`` stays the domain, and the halo at a
            non-periodic domain edge holds boundary values. Exported to the
            DAP as boundary padding there, communication padding elsewhere.
            Only block (and undistributed) dimensions take a halo; the halos
            of neighbouring ranks must match and not exceed their blocks.

        Notes
        -----
        The even block split gives the first ``size % P`` ranks one element
        more, as MPI codes do; ``block_size == ceil(size / P)`` with ``"c"``
        gives the other common split (all full blocks first).

        Examples
        --------
        >>> d = Distribution.create(10, grid=(4,))
        >>> [d.local_shape(r)[0] for r in range(4)]
        [3, 3, 2, 2]
        >>> d = Distribution.create((18,), grid=(2,), padding=1)
        >>> d.dim_data(1)[0]["start"], d.dim_data(1)[0]["stop"]
        (8, 18)
        >>> h = Distribution.create((16,), grid=(2,), halo=1)
        >>> h.global_shape, h.local_shape(1), h.dim_data(1) == d.dim_data(1)
        ((16,), (10,), True)
        """
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        for n in shape:
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
                raise ValueError(f"shape must be non-negative integers, got {shape}")
        ndim = len(shape)
        specs = per_dim_spec(dist, ndim)
        block_sizes = per_dim(block_size, ndim, "block_size")
        paddings = per_dim_padding(padding, ndim)
        periodics = per_dim(periodic, ndim, "periodic")
        halos = per_dim_halo(halo, ndim)
        if halo is not None and padding is not None:
            raise TypeError(
                "pass either padding= (DAP semantics: edge padding is part of the domain) or "
                "halo= (ghost cells outside the domain), not both"
            )
        parsed = [
            parse_spec(s, i, block_sizes[i], paddings[i], periodics[i], halos[i])
            for i, s in enumerate(specs)
        ]
        grid_shape = resolve_grid(parsed, grid, nranks, shape)
        maps = tuple(build_map(p, int(shape[i]), grid_shape[i], i) for i, p in enumerate(parsed))
        return cls(maps, grid_shape)

    @classmethod
    def from_distbuffers(cls, distbuffers: Sequence[Mapping]) -> Distribution:
        """Build the distribution described by every rank's ``__distarray__()`` dict.

        Parameters
        ----------
        distbuffers : sequence of dict
            One distbuffer per rank, in rank order (v0.9.x or v0.10.x).

        Raises
        ------
        DAPError
            If any dict breaks a single-rank rule (see
            `dapx.protocol.validate_distbuffer`), or the dicts together break
            a cross-rank rule: the number of ranks is not the product of the
            grid sizes, grid coordinates are not row-major, dictionaries
            differ along a grid axis, blocks leave gaps or overlap,
            communication paddings do not match, indices do not cover the
            dimension, or ``one_to_one`` is false in fact.
        """
        distbuffers = check_sequence_of_distbuffers(distbuffers)
        normal = [validate_distbuffer(db, rank=k) for k, db in enumerate(distbuffers)]
        return cls.from_dim_data([n.dim_data for n in normal])

    @classmethod
    def from_dim_data(cls, dim_data: Sequence[Sequence[dict]]) -> Distribution:
        """Build from the normalised dimension dictionaries of every rank, in rank order."""
        nranks = len(dim_data)
        ndim = len(dim_data[0])
        for k, dd in enumerate(dim_data):
            if len(dd) != ndim:
                raise dap_error(
                    f"has {len(dd)} dimensions but rank 0 has {ndim}", rank=k, key="dim_data"
                )
        grid_shape = tuple(d["proc_grid_size"] for d in dim_data[0])
        for k, dd in enumerate(dim_data):
            for i, d in enumerate(dd):
                if d["proc_grid_size"] != grid_shape[i]:
                    raise dap_error(
                        f"is {d['proc_grid_size']} but rank 0 says {grid_shape[i]}: "
                        "every rank must agree on the grid",
                        rank=k,
                        dim=i,
                        key="proc_grid_size",
                    )
        if math.prod(grid_shape) != nranks:
            raise DAPError(
                f"the grid {grid_shape} has {math.prod(grid_shape)} ranks but "
                f"{nranks} distbuffers were given (the product of proc_grid_size must equal "
                "the number of processes)"
            )
        grid = ProcessGrid(grid_shape)
        for k, dd in enumerate(dim_data):
            coords = tuple(d["proc_grid_rank"] for d in dd)
            if coords != grid.coords(k):
                raise dap_error(
                    f"has grid coordinates {coords} but row-major order puts rank {k} at "
                    f"{grid.coords(k)}",
                    rank=k,
                    key="proc_grid_rank",
                )
        maps = []
        for i in range(ndim):
            maps.append(_map_along(dim_data, grid, i))
        return cls(maps, grid)

    # -- attributes --------------------------------------------------------------
    @property
    def maps(self) -> tuple[Map, ...]:
        """The 1-D map of each array dimension."""
        return self._maps

    @property
    def grid(self) -> ProcessGrid:
        """The process grid the maps are laid over."""
        return self._grid

    @property
    def global_shape(self) -> tuple[int, ...]:
        """The shape of the whole array (also `shape`)."""
        return self._shape

    shape = global_shape

    @property
    def ndim(self) -> int:
        """The number of array dimensions."""
        return len(self._maps)

    @property
    def grid_shape(self) -> tuple[int, ...]:
        """The number of ranks along each dimension of the process grid."""
        return self._grid.shape

    @property
    def nranks(self) -> int:
        """The number of ranks of the process grid."""
        return self._grid.nranks

    @property
    def is_padded(self) -> bool:
        """Whether any block dimension is padded (a halo or DAP padding) on some rank."""
        return self._is_padded

    @property
    def has_halo(self) -> bool:
        """Whether any dimension has a halo (padding with ``ghost_edges`` semantics)."""
        return self._has_halo

    @property
    def dist_types(self) -> tuple[str, ...]:
        """The distribution type of each dimension: ``"b"``, ``"c"`` or ``"u"``."""
        return tuple(m.dist_type for m in self._maps)

    # -- per-rank questions ----------------------------------------------------------
    def coords(self, rank: int) -> tuple[int, ...]:
        """Grid coordinates of `rank`."""
        return self._grid.coords(rank)

    def global_indices(self, rank: int) -> tuple[np.ndarray, ...]:
        """Global indices of `rank`'s local array: one 1-D array per dimension,
        in local order, padding included."""
        return tuple(m.global_indices(c) for m, c in zip(self._maps, self.coords(rank)))

    def owned_indices(self, rank: int) -> tuple[np.ndarray, ...]:
        """Global indices `rank` owns, one 1-D array per dimension, in local order."""
        return tuple(m.owned_indices(c) for m, c in zip(self._maps, self.coords(rank)))

    def local_shape(self, rank: int) -> tuple[int, ...]:
        """Shape of `rank`'s local buffer, padding included."""
        return tuple(m.local_length(c) for m, c in zip(self._maps, self.coords(rank)))

    def dim_data(self, rank: int) -> tuple[dict, ...]:
        """The explicit DAP v0.10 dimension dictionaries of `rank`."""
        return tuple(m.dim_dict(c) for m, c in zip(self._maps, self.coords(rank)))

    def owner(self, global_index) -> tuple:
        """Owning rank and local index of a global index.

        Parameters
        ----------
        global_index : tuple
            One integer per dimension, or one integer array per dimension
            (broadcast together, as in NumPy's integer-array indexing).

        Returns
        -------
        (rank, local_index)
            With integer input: an int and a tuple of ints. With array input:
            an array of ranks and a tuple of local index arrays.
        """
        if isinstance(global_index, (int, np.integer)) and self.ndim == 1:
            global_index = (global_index,)
        global_index = tuple(global_index)
        if len(global_index) != self.ndim:
            raise IndexError(
                f"a {self.ndim}-d distribution needs {self.ndim} indices, got {len(global_index)}"
            )
        scalar = all(np.ndim(g) == 0 for g in global_index)
        arrays = np.broadcast_arrays(*[np.asarray(g) for g in global_index])
        coords, local = [], []
        for m, g in zip(self._maps, arrays):
            c, loc = m.owner(g)
            coords.append(c)
            local.append(loc)
        ranks = self._grid.ranks_from_coords(coords) if self.ndim else np.intp(0)
        if scalar:
            return int(ranks), tuple(int(v) for v in local)
        return np.asarray(ranks), tuple(local)

    # -- value semantics ---------------------------------------------------------------
    def __eq__(self, other):
        return isinstance(other, Distribution) and self._maps == other._maps

    def __hash__(self):
        if self._hash is None:
            object.__setattr__(self, "_hash", hash(self._maps))
        return self._hash

    def __reduce__(self):
        return Distribution, (self._maps, self._grid)

    def __repr__(self):
        dims = ", ".join(describe_map(m) for m in self._maps)
        return f"Distribution(shape={self.global_shape}, grid={self.grid_shape}, dims=[{dims}])"


def _map_along(dim_data, grid, i):
    """Check that dicts agree along grid axis `i` and build that dimension's map."""
    P = grid.shape[i]
    first_rank = {}
    ref = dim_data[0][i]
    for k, dd in enumerate(dim_data):
        d = dd[i]
        for key in ("dist_type", "size", "block_size", "periodic", "one_to_one"):
            if d.get(key) != ref.get(key):
                raise dap_error(
                    f"is {d.get(key)!r} but rank 0 says {ref.get(key)!r}: it must be the same "
                    "on every rank",
                    rank=k,
                    dim=i,
                    key=key,
                )
        c = d["proc_grid_rank"]
        if c not in first_rank:
            first_rank[c] = k
        elif not dim_dicts_equal(d, dim_data[first_rank[c]][i]):
            raise dap_error(
                f"differs from the dimension dictionary of rank {first_rank[c]}, which has "
                f"the same proc_grid_rank {c}: dicts must be identical along a grid axis",
                rank=k,
                dim=i,
            )
    try:
        return map_from_dim_dicts([dim_data[first_rank[c]][i] for c in range(P)])
    except DAPError as e:
        # Map errors speak of grid ranks; name the process ranks too.
        named = sorted({int(g) for g in re.findall(r"grid rank (\d+)", str(e))})
        where = ", ".join(f"grid rank {g} is rank {first_rank[g]}" for g in named)
        message = f"{e} ({where})" if where else str(e)
        raise DAPError(f"dim {i}, {message}") from None


def describe_map(m: Map) -> str:
    """A short name of `m`: ``b``, ``b+halo1``, ``b+halo(1, 2)``, ``n+pad``, ``c``, ``u``..."""
    if isinstance(m, BlockMap):
        s = "b" if m.nprocs > 1 else "n"
        if m.is_padded and m.ghost_edges:
            lo, hi = int(m.padding[:, 0].max()), int(m.padding[:, 1].max())
            s += f"+halo{lo}" if lo == hi else f"+halo({lo}, {hi})"
        elif m.is_padded:
            s += "+pad"
        return s + ("(periodic)" if m.periodic else "")
    if isinstance(m, CyclicMap):
        return "c" if m.block_size == 1 else f"c(block_size={m.block_size})"
    return "u"
