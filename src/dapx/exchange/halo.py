"""Halos (ghost cells): padded block layouts, halo updates and the interior.

A *halo array* has ``ghost_edges`` block maps (`dapx.BlockMap`): each rank's
buffer is its block of the domain surrounded by ghost cells, which are not
part of the array's value (``a.shape`` is the domain; reductions, indexing
and ``gather`` see the interior only). Ghost cells between ranks copy the
neighbours' edges; those at a periodic edge copy the other end of the
domain; those at a non-periodic domain edge hold a boundary condition.

`update_halos` fills them in one exchange. Its plan is pure metadata,
cached per (distribution, boundary kinds, local ranks): for every local rank
and dimension, the buffer splits into a low ghost segment, the interior and
a high ghost segment, each ghost position naming the *source* global index
it copies (the neighbour's index, wrapped across a periodic edge, or mapped
by the boundary condition the way `numpy.pad` maps it). The N-D product of
those segments gives faces, edges and corners at once; each product is cut
into pieces by the owning rank of the sources, and all pieces travel in one
``Backend.alltoallv(..., sparse=True)``. Pieces whose source is a rank of
this process are copied directly, with basic slicing wherever the indices
allow it. Coordinates whose buffers copy alike (those of equal blocks away
from the domain edges) share one segment *class*, owners taken relative to
the coordinate, and the ranks of one combination of classes share one piece
list, shifted by their rank: a process holding every rank of a large grid
builds a handful of piece lists, not one per rank. The per-dimension part
(segments, classes, owners of ghost cells) is `dapx.exchange.halo_segments`.

Boundary conditions are spelled as in dask's ``map_overlap``:

=================  =========================  ==============================
``boundary``        ghost cells at the edge     `numpy.pad` mode
=================  =========================  ==============================
``"none"``/None     left as they are            (none)
a number            that constant               ``"constant"``
``"reflect"``       mirrored, edge repeated     ``"symmetric"``
``"nearest"``       the edge value              ``"edge"``
``"periodic"``      the other end               ``"wrap"``
=================  =========================  ==============================

# Note: dask's ``"reflect"`` repeats the edge value (``x[d-1::-1]``), which
# is NumPy's ``"symmetric"``, not NumPy's ``"reflect"``.

A dimension whose map is periodic always wraps; a single `boundary` value
applies to the other dimensions, and a dict entry for a periodic axis must
be ``"periodic"`` (or None/``"none"``).

Edges and corners (ghost cells beyond the domain along several axes) are
filled as `numpy.pad` fills them axis by axis, the axes left alone taken
first: beyond a constant edge a cell gets the constant (of the last such
axis); beyond a ``"none"`` edge along one axis and another condition along
a second, it copies the ghost cell that condition names, so values kept in
the ghost cells of one axis (Dirichlet walls) wrap, reflect or extend along
the others.

Working with a halo array ``a``:

* ``a.local(r)`` / ``a.local_with_halo(r)`` are the padded buffers (the DAP
  buffers); ``a.interior`` is the array without its halo, its blocks views of
  the buffers (GDP-3's ``domain_view``).
* Elementwise operations between arrays of one padded layout compute whole
  buffers and keep the layout (the result's halo holds the operation applied
  to the operands' halos); reductions, indexing, ``gather`` and the other
  array functions act on the interior; results of the latter have no halo.
* Stencils: call ``a.update_halos(...)``, then apply a NumPy kernel to each
  local rank's padded buffer (``for r in a.backend.local_ranks``), or use
  `dapx.map_overlap` (`dapx.functions.overlap`).

Arrays laid out with DAP ``padding=`` (boundary padding inside the domain)
are not halo arrays: `update_halos` fills their communication padding only.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Mapping, Sequence
from itertools import product
from typing import Any, NamedTuple

import numpy as np

from ..layout.distribution import Distribution
from ..layout.grid import Cartesian
from ..layout.maps import BlockMap
from ..layout.spec import by_axis
from .execute import execute
from .halo_segments import DimClass as _DimClass
from .halo_segments import classes as _classes
from .halo_segments import copiers as _copiers
from .halo_segments import owners as _owners
from .plans import as_index_array

# `halo_segments`' public names go by private ones here: internals of the plan.

__all__ = [
    "HaloPlan",
    "boundary_kinds",
    "cached_halo_plan",
    "halo_plan",
    "interior_distribution",
    "interior_key",
    "run_halo_plan",
]

_NAMES = {
    "none": "none",
    "reflect": "reflect",
    "nearest": "nearest",
    "edge": "nearest",
    "periodic": "periodic",
    "wrap": "periodic",
}


# -- boundary conditions -----------------------------------------------------------------------


def _one_boundary(spec, axis: int) -> tuple[str, Any]:
    if spec is None:
        return "none", None
    if isinstance(spec, str):
        if spec not in _NAMES:
            raise ValueError(
                f"axis {axis}: unknown boundary {spec!r}; use 'none', 'reflect', 'nearest' "
                "(or 'edge'), 'periodic' or a number"
            )
        return _NAMES[spec], None
    if isinstance(spec, (numbers.Number, np.generic)) and np.ndim(spec) == 0:
        return "constant", spec
    raise TypeError(
        f"axis {axis}: a boundary is 'none', 'reflect', 'nearest', 'periodic' or a number, "
        f"got {spec!r}"
    )


def boundary_kinds(boundary, dist: Distribution) -> tuple[tuple[str, ...], tuple]:
    """The boundary kind and constant of every dimension of `dist`.

    Parameters
    ----------
    boundary : str, number, None, or dict
        One condition for every non-periodic dimension, or a dict
        ``{axis: condition}`` (missing axes: ``"none"``).
    dist : Distribution
        Periodic dimensions of `dist` always wrap.

    Returns
    -------
    kinds, values
        ``kinds[k]`` is one of ``"none"``, ``"constant"``, ``"reflect"``,
        ``"nearest"``, ``"periodic"``; ``values[k]`` the constant or None.

    Examples
    --------
    >>> d = Distribution.create((4, 4), grid=(2, 1), periodic=(False, True))
    >>> boundary_kinds({0: 0.5}, d)
    (('constant', 'periodic'), (0.5, None))
    >>> boundary_kinds("edge", d)[0]
    ('nearest', 'periodic')
    """
    ndim = dist.ndim
    explicit = [False] * ndim
    if isinstance(boundary, Mapping):
        specs = [None] * ndim
        for axis, spec in by_axis(boundary, ndim, "boundary").items():
            specs[axis] = spec
            explicit[axis] = True
    else:
        specs = [boundary] * ndim
    kinds, values = [], []
    for k, (m, spec) in enumerate(zip(dist.maps, specs)):
        kind, value = _one_boundary(spec, k)
        if isinstance(m, BlockMap) and m.periodic:
            if explicit[k] and kind not in ("periodic", "none"):
                raise ValueError(
                    f"axis {k} is periodic, so its halo wraps around; boundary {spec!r} "
                    "cannot apply there"
                )
            kind, value = "periodic", None
        kinds.append(kind)
        values.append(value)
    return tuple(kinds), tuple(values)


# -- pieces: products of the per-dimension segments (`dapx.exchange.halo_segments`) -----------


def _key(parts: Sequence) -> tuple:
    if all(isinstance(p, slice) for p in parts):
        return tuple(parts)
    return np.ix_(*[as_index_array(p) for p in parts])


class _Piece(NamedTuple):
    """A region a rank receives: from the rank `offset` ranks after it (row-major)."""

    offset: int
    src_key: tuple
    dst_key: tuple
    shape: tuple[int, ...]
    count: int


def _strides(dist: Distribution) -> tuple[int, ...]:
    """Row-major strides of the process grid: neighbours' ranks by arithmetic."""
    shape = dist.grid.shape
    return tuple(math.prod(shape[k + 1 :]) for k in range(len(shape)))


@functools.lru_cache(maxsize=1024)
def _class_pieces(strides: tuple[int, ...], classes: tuple[_DimClass, ...]):
    """Everything a rank of these dimension classes receives, in canonical order, and its fills.

    Returns (pieces, fills): `_Piece` s from every source rank (self included,
    identity copies left out), the source given by its rank offset, and
    ``(dst_key, axis)`` for constant regions, `axis` being the dimension whose
    constant applies (the last one, as in `numpy.pad`, which pads the axes in
    order). Every rank of the same classes receives the same pieces, shifted.
    """
    pieces, fills = [], []
    for combo in product(*(c.segments for c in classes)):
        if any(s.kind == "constant" for s in combo):
            axis = max(k for k, s in enumerate(combo) if s.kind == "constant")
            if all(s.dst.stop > s.dst.start for s in combo):
                fills.append((tuple(s.dst for s in combo), axis))
            continue
        for runs in product(*(s.runs for s in combo)):
            if all(r.identity for r in runs):
                continue
            shape = tuple(r.count for r in runs)
            n = math.prod(shape)
            if not n:
                continue
            offset = sum(r.owner * k for r, k in zip(runs, strides))
            pieces.append(
                _Piece(offset, _key([r.src for r in runs]), tuple(r.dst for r in runs), shape, n)
            )
    return tuple(pieces), tuple(fills)


class HaloPlan:
    """The local side of a halo update: direct copies, packed sends and receives, fills.

    Built by `halo_plan` (cached). ``copies`` are pieces whose source rank
    is held by this process; ``sends[s]`` lists, for a local source rank,
    ``(src_key, offset, count, shape)`` in its packed buffer (ordered by
    destination rank, then by the destination's canonical order) with the
    per-rank ``counts``; ``recvs[d]`` lists ``(src_rank, dst_key, offset,
    count, shape)`` into what `d` receives from that rank; ``fills[d]`` the
    constant regions. ``exchange`` says whether any rank receives from a
    rank of another process, i.e. whether the all-to-all must run;
    ``topology`` is the process grid it follows (a `Cartesian`). Ranks that
    send or receive nothing share one read-only array of zero counts.
    """

    __slots__ = (
        "_buffers",
        "copies",
        "exchange",
        "fills",
        "recvcounts",
        "recvs",
        "sends",
        "topology",
    )

    def __init__(self, copies, sends, recvs, recvcounts, fills, exchange, topology):
        self.topology = topology
        self.copies = copies
        self.sends = sends
        self.recvs = recvs
        self.recvcounts = recvcounts
        self.fills = fills
        self.exchange = exchange
        self._buffers: dict = {}

    def send_buffer(self, rank: int, dtype: np.dtype) -> np.ndarray:
        """The preallocated pack buffer of local rank `rank` for `dtype`."""
        buf = self._buffers.get((rank, dtype))
        if buf is None:
            buf = np.empty(int(self.sends[rank][0].sum()), dtype)
            self._buffers[(rank, dtype)] = buf
        return buf


@functools.lru_cache(maxsize=8)
def _no_counts(nranks: int) -> np.ndarray:
    """Zero counts for every rank (read-only, shared by the ranks that send or receive nothing)."""
    none = np.zeros(nranks, np.intp)
    none.flags.writeable = False
    return none


@functools.lru_cache(maxsize=256)
def halo_plan(dist: Distribution, kinds: tuple[str, ...], local_ranks: tuple[int, ...]):
    """The cached `HaloPlan` of `local_ranks` for `dist` under boundary `kinds`.

    The pieces are built once per combination of dimension classes
    (`_class_pieces`), so a process holding every rank of a large grid (the
    simulated backend) builds a handful of piece lists and shifts them, and
    one rank (MPI) builds its own and its neighbours': O(1) in the number of
    ranks either way, plus the copies themselves.
    """
    nranks = dist.nranks
    local = set(local_ranks)
    everything = len(local) == nranks  # then every piece is a local copy
    strides = _strides(dist)
    none = _no_counts(nranks)
    copies, recvs, recvcounts, fills = [], {}, {}, {}
    for d, classes in zip(local_ranks, _classes(dist, kinds, local_ranks)):
        pieces, fills[d] = _class_pieces(strides, classes)
        recvs[d], recvcounts[d] = (), none
        if everything:
            copies.extend([(d + p.offset, d, p.src_key, p.dst_key) for p in pieces])
            continue
        remote = []
        for p in pieces:
            s = d + p.offset
            if s in local:
                copies.append((s, d, p.src_key, p.dst_key))
            else:
                remote.append((s, p))
        if not remote:
            continue
        remote.sort(key=lambda sp: sp[0])  # rank order; stable within a source
        counts = np.zeros(nranks, np.intp)
        items, offsets = [], {}
        for s, p in remote:
            offset = offsets.get(s, 0)
            items.append((s, p.dst_key, offset, p.count, p.shape))
            offsets[s] = offset + p.count
            counts[s] += p.count
        recvs[d], recvcounts[d] = tuple(items), counts
    # Senders: the ranks that may copy from each local rank, found dimension by dimension
    # among the grid neighbours (never a scan of every rank).
    sends = dict.fromkeys(local_ranks, (none, ()))
    for s in () if everything else local_ranks:
        cs = dist.coords(s)
        candidates = [_copiers(m, c, kind) for m, c, kind in zip(dist.maps, cs, kinds)]
        copiers = [sum(c * k for c, k in zip(dc, strides)) for dc in product(*candidates)]
        copiers = [d for d in copiers if d not in local]
        items = []
        for d, classes in zip(copiers, _classes(dist, kinds, copiers)):
            for p in _class_pieces(strides, classes)[0]:
                if d + p.offset == s:
                    items.append((d, p.src_key, p.count, p.shape))
        if not items:
            continue
        items.sort(key=lambda it: it[0])  # rank order; stable within a destination
        counts = np.zeros(nranks, np.intp)
        offset, packed = 0, []
        for d, key, n, shape in items:
            packed.append((key, offset, n, shape))
            counts[d] += n
            offset += n
        sends[s] = (counts, tuple(packed))
    # Whether any rank copies from another coordinate. Every rank of a process computes the
    # same answer; with every rank local nothing crosses processes and no exchange runs.
    exchange = not everything and _copies_across(dist, kinds)
    periods = tuple(bool(getattr(m, "periodic", False)) for m in dist.maps)
    topology = Cartesian(tuple(dist.grid.shape), periods)
    return HaloPlan(tuple(copies), sends, recvs, recvcounts, fills, exchange, topology)


@functools.lru_cache(maxsize=256)
def _copies_across(dist: Distribution, kinds: tuple[str, ...]) -> bool:
    """Whether some buffer of `dist` copies from another grid coordinate along some dimension.

    Every process must agree on whether the all-to-all runs, so this looks at
    every coordinate; block maps answer from their padding alone (O(1) NumPy
    work), other maps by their segments.
    """
    for m, kind in zip(dist.maps, kinds):
        if isinstance(m, BlockMap):
            if m.nprocs == 1 and not m.is_padded:
                continue
            if m.nprocs > 1 and m.is_padded and m.padding.any():
                # Communication ghosts copy a neighbour; edge ghosts may too (boundary
                # conditions reaching past a small block) or stay local: check the edges.
                comm = m.padding.copy()
                if not m.periodic:
                    comm[0, 0] = comm[-1, 1] = 0
                if comm.any():
                    return True
            if any(_owners(m, c, kind) - {c} for c in {0, m.nprocs - 1}):
                return True
        elif any(_owners(m, c, kind) - {c} for c in range(m.nprocs)):
            return True
    return False


def run_halo_plan(
    plan: HaloPlan, blocks: Mapping[int, np.ndarray], dtype, backend, values: Sequence
) -> None:
    """Fill the ghost cells of `blocks` in place."""
    for s, d, src_key, dst_key in plan.copies:
        blocks[d][dst_key] = blocks[s][src_key]
    if plan.exchange:
        execute(
            blocks,
            plan.sends,
            plan.recvcounts,
            plan.recvs,
            blocks,
            dtype,
            backend,
            sparse=plan.topology,
            send_buffer=plan.send_buffer,
        )
    for d, regions in plan.fills.items():
        block = blocks[d]
        for key, axis in regions:
            block[key] = values[axis]


def _hashable(boundary):
    if isinstance(boundary, Mapping):
        return ("dict", tuple(boundary.items()))
    return boundary


@functools.lru_cache(maxsize=256)
def _cached_plan(dist: Distribution, boundary, local_ranks: tuple[int, ...]):
    if isinstance(boundary, tuple) and boundary and boundary[0] == "dict":
        boundary = dict(boundary[1])
    kinds, values = boundary_kinds(boundary, dist)
    return halo_plan(dist, kinds, local_ranks), values


# -- the interior ----------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def interior_distribution(dist: Distribution) -> Distribution:
    """`dist` without padding on its block dimensions: the layout of ``a.interior``.

    The same object is returned for equal distributions, so that the
    interiors of arrays with one layout share one distribution.

    >>> d = Distribution.create((8, 6), grid=(2, 1), halo=1)
    >>> interior_distribution(d).local_shape(0), d.local_shape(0)
    ((4, 6), (6, 8))
    """
    if not dist.is_padded:
        return dist
    maps = [
        BlockMap(m.size, m.bounds, periodic=m.periodic)
        if isinstance(m, BlockMap) and m.is_padded
        else m
        for m in dist.maps
    ]
    return Distribution(maps, dist.grid)


@functools.lru_cache(maxsize=1024)
def interior_key(dist: Distribution, rank: int) -> tuple:
    key = []
    for m, c in zip(dist.maps, dist.coords(rank)):
        if isinstance(m, BlockMap):
            lo = m.ghost_widths(c)[0]
            key.append(slice(lo, lo + m.num_owned(c)))
        else:
            key.append(slice(None))
    return tuple(key)


def cached_halo_plan(dist: Distribution, boundary, local_ranks: tuple[int, ...]):
    """The `HaloPlan` and boundary values of `local_ranks` for `dist` (cached when hashable)."""
    try:
        return _cached_plan(dist, _hashable(boundary), local_ranks)
    except TypeError:  # an unhashable boundary (a list: rejected by boundary_kinds)
        kinds, values = boundary_kinds(boundary, dist)
        return halo_plan(dist, kinds, local_ranks), values
