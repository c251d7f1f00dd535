"""``a[key]`` and ``a[key] = value`` on distributed arrays, with NumPy's semantics.

* Basic keys (integers, slices, ``...``, ``None``) move no data: each rank
  indexes its own block and the result's `Distribution` comes from
  `dapx.core.slicing`. Local results are views wherever a slice selects the
  rank's elements (always on block dimensions).
* NumPy integer and boolean index arrays are known to every rank, so the
  result's layout and every rank's share of it follow from metadata: each
  rank picks its elements locally and one exchange (`dapx.exchange.plans`) delivers
  them to a block layout of the result.
* Distributed index arrays are gathered when small (`SMALL_INDEX_LIMIT`);
  larger ones, whose values only their holders know, are served by request:
  holders send the wanted local positions to the owners, who answer with the
  values. A distributed boolean mask over the leading dimensions yields its
  selection in C order, block-distributed with the counts of every rank.

Assignments take the same keys, with scalar, NumPy or distributed values
broadcast as in NumPy and aligned to the target by an exchange.

# Note: assignments write owned elements; extra copies of an index that a
# non-one-to-one unstructured dimension keeps on other ranks are refreshed
# like halos, not here.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from ..exchange.execute import run_plan
from ..layout.distribution import Distribution
from ..layout.maps import BlockMap, CyclicMap
from .array import SCALAR, DistributedArray, new_array
from .guard import raise_if_any_failed
from .redistribution import align, gather, redistribute
from .slicing import (
    EMPTY,
    INVALID_INDEX,
    NOT_INTEGER,
    AdvancedLayout,
    FancyLayout,
    basic_layout,
    broadcast_indices,
    checked_indices,
    fmt_shape,
    is_one_to_one,
    ndim_used,
    one_to_one_map,
    out_of_bounds,
    owned_flags,
    parse_key,
    permuted_plan,
)

__all__ = ["SMALL_INDEX_LIMIT", "getitem", "setitem"]

#: Distributed index arrays with at most this many elements in all are
#: gathered to every process; larger ones are served by request.
SMALL_INDEX_LIMIT = 1 << 20


# -- parsing ----------------------------------------------------------------------------------


def _entry(k, backend):
    """One key entry as int, bool, slice, None, Ellipsis, ndarray or DistributedArray."""
    if k is None or k is Ellipsis or isinstance(k, slice):
        return k
    if isinstance(k, (bool, np.bool_)):
        return bool(k)
    if isinstance(k, (int, np.integer)):
        return int(k)
    if isinstance(k, DistributedArray):
        if k.dtype.kind not in "iub":
            raise IndexError(NOT_INTEGER)
        if k.backend != backend:
            raise ValueError(f"index array lives on {k.backend}, the array on {backend}")
        if k.ndim == 0:
            return bool(k._scalar()) if k.dtype.kind == "b" else int(k._scalar())
        return k
    if isinstance(k, (np.ndarray, list, tuple)):
        a = np.asarray(k)
        if a.size == 0 and a.dtype.kind == "f" and not isinstance(k, np.ndarray):
            a = a.astype(np.intp)  # an empty list
        if a.dtype.kind not in "iub":
            raise IndexError(NOT_INTEGER if isinstance(k, np.ndarray) else INVALID_INDEX)
        if a.ndim == 0:
            return bool(a) if a.dtype.kind == "b" else int(a)
        return a
    if hasattr(k, "__index__"):
        return operator.index(k)
    raise IndexError(INVALID_INDEX)


def _prepare(x, key):
    """(x, items): bool scalars become a new axis indexed by a 1-element mask."""
    entries = [_entry(k, x.backend) for k in (key if isinstance(key, tuple) else (key,))]
    if any(isinstance(e, bool) for e in entries):
        pre = []
        for e in entries:
            if isinstance(e, bool) or e is Ellipsis:
                pre.append(None if isinstance(e, bool) else e)
            elif e is not None:
                pre.extend([slice(None)] * ndim_used(e))
        x = getitem(x, tuple(pre))
        entries = [np.array([e]) if isinstance(e, bool) else e for e in entries]
    items = parse_key(x.shape, entries)
    kinds = {it[0] for it in items}
    if "m" in kinds and not _mask_form(items, x.shape):
        masks = [it[2] for it in items if it[0] == "m"]
        if sum(m.size for m in masks) > SMALL_INDEX_LIMIT:
            raise NotImplementedError(
                "a large distributed boolean mask is supported over the leading dimensions "
                "only (a[mask] or a[mask, ...]); pass mask.gather() to index elsewhere"
            )
        items = parse_key(
            x.shape, [e.gather() if isinstance(e, DistributedArray) else e for e in entries]
        )
    ints = [it for it in items if it[0] == "d"]
    if ints and sum(it[2].size for it in ints) <= SMALL_INDEX_LIMIT:
        items = [("a", it[1], it[2].gather()) if it[0] == "d" else it for it in items]
    if {"a", "d"} & {it[0] for it in items}:  # integers count as advanced indices then
        items = [("a", it[1], np.array(it[2])) if it[0] == "i" else it for it in items]
        B = broadcast_indices([it[2] for it in items if it[0] in "ad"])
        if math.prod(B):  # NumPy checks the bounds of the broadcast indices
            items = [
                ("a", it[1], checked_indices(it[2], x.shape[it[1]], it[1])) if it[0] == "a" else it
                for it in items
            ]
    return x, items


def _mask_form(items, shape) -> bool:
    """Whether the key is a distributed mask followed by full slices only."""
    return items[0][0] == "m" and all(
        it[0] == "s" and it[2:] == (0, shape[it[1]], 1) for it in items[1:]
    )


# -- entry points ------------------------------------------------------------------------------


def _check_padding(x) -> None:
    for k, m in enumerate(x.distribution.maps):
        if isinstance(m, BlockMap) and m.is_padded:
            raise NotImplementedError(
                f"indexing arrays with padded (halo) dimensions is not supported yet "
                f"(dimension {k}: {m!r}); redistribute to an unpadded layout first"
            )


def getitem(x: DistributedArray, key) -> DistributedArray:
    """``x[key]`` with NumPy's semantics (see the module docstring).

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.asarray(np.arange(12).reshape(3, 4), backend=dapx.simulated(2))
    >>> b = a[1:, ::2]
    >>> b.gather()
    array([[ 4,  6],
           [ 8, 10]])
    >>> np.shares_memory(b.local(1), a.local(1))
    True
    >>> a[[2, 0], 1].gather(), int(a[2, 3])
    (array([9, 1]), 11)
    """
    _check_padding(x)
    x, items = _prepare(x, key)
    kinds = {it[0] for it in items}
    if "m" in kinds:
        return _MaskPlan(x, items).get()
    if "d" in kinds:
        return _RequestPlan(x, items).get()
    if "a" in kinds:
        return _FancyPlan(x, items).get()
    return _basic_get(x, items)


def setitem(x: DistributedArray, key, value) -> None:
    """``x[key] = value`` with NumPy's semantics; writes only into local blocks.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.zeros(6, dtype=int, backend=dapx.simulated(3))
    >>> a[::2] = 7
    >>> a[[1, 3]] = np.array([1, 3])
    >>> a.gather()
    array([7, 1, 7, 3, 7, 0])
    """
    _check_padding(x)
    x, items = _prepare(x, key)
    kinds = {it[0] for it in items}
    if "m" in kinds:
        return _MaskPlan(x, items).set(value)
    if "d" in kinds:
        return _RequestPlan(x, items).set(value)
    if "a" in kinds:
        return _FancyPlan(x, items).set(value)
    return _basic_set(x, items, value)


# -- values ------------------------------------------------------------------------------------


def _value(x, value, shape, advanced: bool):
    """("scalar" | "numpy" | "dist", value) broadcastable to `shape`, or raise as NumPy."""
    if isinstance(value, DistributedArray):
        if value.backend != x.backend:
            raise ValueError(f"the value lives on {value.backend}, the array on {x.backend}")
        vshape = value.shape
    else:
        value = np.asarray(value)
        vshape = value.shape
    extra = len(vshape) - len(shape)
    lead_ones = extra > 0 and all(n == 1 for n in vshape[:extra])
    try:
        ok = np.broadcast_shapes(vshape[max(extra, 0) :], shape) == shape
    except ValueError:
        ok = False
    if not ok or (extra > 0 and not lead_ones):
        vs, ts = fmt_shape(vshape), fmt_shape(shape)
        if advanced:
            raise ValueError(
                f"shape mismatch: value array of shape {vs} could not be broadcast to indexing "
                f"result of shape {ts}"
            )
        raise ValueError(f"could not broadcast input array from shape {vs} into shape {ts}")
    if extra > 0:
        value = (
            getitem(value, (0,) * extra)
            if isinstance(value, DistributedArray)
            else (value.reshape(vshape[extra:]))
        )
    if value.ndim == 0:
        scalar = value._scalar() if isinstance(value, DistributedArray) else value
        trial = np.empty((), x.dtype)
        trial[...] = scalar  # the same casting error on every rank
        return "scalar", scalar
    return ("dist" if isinstance(value, DistributedArray) else "numpy"), value


def _aligned(kind, value, target: Distribution, backend) -> dict[int, np.ndarray]:
    """Local parts of `value` (numpy or dist) broadcast to `target`'s local shapes."""
    local = backend.local_ranks
    if kind == "dist":
        parts = align(value, target)
    else:
        parts = {r: _numpy_part(value, target, r) for r in local}
    return {r: np.broadcast_to(parts[r], target.local_shape(r)) for r in local}


def _numpy_part(v: np.ndarray, target: Distribution, rank: int) -> np.ndarray:
    """The part of `v` (broadcastable to `target`'s shape) that `rank` holds."""
    if not v.ndim:
        return v
    held = target.global_indices(rank)[target.ndim - v.ndim :]
    return v[np.ix_(*[np.zeros(1, np.intp) if n == 1 else g for n, g in zip(v.shape, held)])]


# -- basic indexing ----------------------------------------------------------------------------


def _basic_key(items) -> tuple:
    return tuple(("n",) if it[0] == "n" else (it[0], *it[2:]) for it in items)


def _local_get(block: np.ndarray, parts: tuple, shape: tuple) -> np.ndarray:
    """`block` indexed by local key `parts` (see `BasicLayout.local_key`)."""
    if any(p is EMPTY for p in parts):
        key = tuple(slice(0, 0) if p is EMPTY or isinstance(p, np.ndarray) else p for p in parts)
        return block[key].reshape(shape)
    arrays = [k for k, p in enumerate(parts) if isinstance(p, np.ndarray)]
    if not arrays:
        return block[parts]
    # Note: a slice of a cyclic or unstructured dimension that no local slice
    # expresses makes the local result a copy, not a view.
    out = block[tuple(slice(None) if isinstance(p, np.ndarray) else p for p in parts)]
    for k in arrays:
        axis = sum(not isinstance(p, int) for p in parts[:k])
        out = np.take(out, parts[k], axis=axis)
    return out


def _local_set(block: np.ndarray, parts: tuple, value, shape: tuple) -> None:
    if any(p is EMPTY for p in parts):
        return
    if not any(isinstance(p, np.ndarray) for p in parts):
        block[parts] = value
        return
    axes = [p for p in parts if p is not None]
    idx = [
        np.array([p])
        if isinstance(p, int)
        else (np.arange(*p.indices(n)) if isinstance(p, slice) else p)
        for p, n in zip(axes, block.shape)
    ]
    block[np.ix_(*idx)] = np.broadcast_to(value, shape).reshape([i.size for i in idx])


def _scalar_owner(x, items):
    g = tuple(it[2] for it in items)
    return x.distribution.owner(g)


def _basic_get(x, items) -> DistributedArray:
    local = x.backend.local_ranks
    if x.ndim == 0:
        n = len(items)
        if not n:
            return new_array(SCALAR, {r: x._locals[r][...] for r in local}, x.backend, x.dtype)
        bounds = np.array([0] + [1] * x.backend.nranks)
        dist = Distribution([BlockMap(1, bounds)] + [BlockMap(1, nprocs=1)] * (n - 1))
        blocks = {r: x._locals[r][(None,) * n][: 1 if r == 0 else 0] for r in local}
        return new_array(dist, blocks, x.backend, x.dtype)
    if all(it[0] == "i" for it in items):
        # Note: NumPy returns a scalar here; this is a 0-d array, replicated on every
        # rank from the owner's value (float(), int(), .item() give the scalar).
        rank, where = _scalar_owner(x, items)
        value = x._locals[rank][where] if rank in x._locals else None
        value = x.backend.bcast(value, root=rank)
        blocks = {r: np.array(value, dtype=x.dtype) for r in local}
        return new_array(SCALAR, blocks, x.backend, x.dtype)
    lay = basic_layout(x.distribution, _basic_key(items))
    blocks = {r: _local_get(x._locals[r], lay.local_key(r), lay.dist.local_shape(r)) for r in local}
    return new_array(lay.dist, blocks, x.backend, x.dtype)


def _basic_set(x, items, value) -> None:
    local = x.backend.local_ranks
    if x.ndim == 0:
        kind, v = _value(x, value, (1,) * len(items), advanced=False)
        v = gather(v) if kind == "dist" else v  # one element
        for r in local:
            x._locals[r][(None,) * len(items)] = v
        return
    if all(it[0] == "i" for it in items):
        if isinstance(value, DistributedArray):
            if value.ndim:
                raise ValueError("setting an array element with a sequence.")
            value = value._scalar()
        element = np.empty((), x.dtype)
        element[()] = value  # NumPy's checks, on every rank
        rank, where = _scalar_owner(x, items)
        if rank in x._locals:
            x._locals[rank][where] = element
        return
    owned = not all(is_one_to_one(m) for m in x.distribution.maps)
    lay = basic_layout(x.distribution, _basic_key(items), owned)
    kind, v = _value(x, value, lay.dist.global_shape, advanced=False)
    parts = dict.fromkeys(local, v) if kind == "scalar" else _aligned(kind, v, lay.dist, x.backend)
    for r in local:
        _local_set(x._locals[r], lay.local_key(r), parts[r], lay.dist.local_shape(r))


def _run(src, dst, src_perm, dst_perm, blocks, dtype, backend):
    """`run_plan` between distributions whose rank r lives on process ``perm[r]``."""
    plan = permuted_plan(src, dst, src_perm, dst_perm, backend.local_ranks, backend.nranks)
    return run_plan(plan, blocks, dtype, backend)


# -- advanced indexing with NumPy index arrays ----------------------------------------------


class _FancyPlan:
    """NumPy index arrays: each rank picks its elements locally (`FancyLayout`), and
    one exchange delivers them to a block layout of the result."""

    def __init__(self, x, items):
        self.x = x
        self.lay = FancyLayout(x.distribution, items)

    def _mesh(self, rank):
        return self.lay.held_mesh(rank, self.x._locals[rank].shape)

    def get(self) -> DistributedArray:
        x, lay = self.x, self.lay
        blocks = {
            r: np.moveaxis(x._locals[r][self._mesh(r)[1]], 0, lay.pB) for r in x.backend.local_ranks
        }
        out = _run(lay.Vs, lay.Dt, lay.perm, None, blocks, x.dtype, x.backend)
        result = {r: b.reshape(lay.final_d.local_shape(r)) for r, b in out.items()}
        return new_array(lay.final_d, result, x.backend, x.dtype)

    def set(self, value) -> None:
        x, lay, pB = self.x, self.lay, self.lay.pB
        kind, v = _value(x, value, lay.final_d.global_shape, advanced=True)
        local = x.backend.local_ranks
        if kind == "scalar":
            for r in local:
                x._locals[r][self._mesh(r)[1]] = v
            return
        if kind == "numpy":  # every rank takes its values from v: no exchange
            ex = np.broadcast_to(v, lay.final_d.global_shape).reshape(lay.Dt.global_shape)
            for r in local:
                pos, mesh = self._mesh(r)
                own = lay.owned_nonadv(r)
                x._locals[r][mesh] = np.moveaxis(ex[np.ix_(*own[:pB], pos, *own[pB:])], pB, 0)
            return
        parts = _aligned(kind, v, lay.final_d, x.backend)
        blocks = {r: b.reshape(lay.Dt.local_shape(r)) for r, b in parts.items()}
        got = _run(lay.Dt, lay.Vs, None, lay.perm, blocks, v.dtype, x.backend)
        for r in local:
            x._locals[r][self._mesh(r)[1]] = np.moveaxis(got[r], pB, 0)


# -- advanced indexing with large distributed index arrays ----------------------------------


class _RequestPlan:
    """Large distributed index arrays: the result follows their layout (the other
    dimensions whole on every rank), and each rank requests what its indices name
    from the owners, which answer with the values."""

    def __init__(self, x, items):
        from .elementwise import result_layout

        self.x, lay = x, AdvancedLayout(x.distribution, items)
        self.lay, x1 = lay, lay.x1
        arrays = [it[2] for it in items if it[0] in "ad"]
        broadcast_indices(arrays)
        backend, tB, self.B = result_layout(arrays)
        for m in tB.maps:
            if isinstance(m, BlockMap) and m.is_padded:
                raise NotImplementedError("padded (halo) index arrays are not supported yet")
        self.tB = tB = Distribution([one_to_one_map(m) for m in tB.maps])
        local = backend.local_ranks
        loc = [
            align(a, tB)
            if isinstance(a, DistributedArray)
            else {r: _numpy_part(a, tB, r) for r in local}
            for a in arrays
        ]
        flat, errors = {}, {}
        for r in local:
            flat[r] = [np.broadcast_to(o[r], tB.local_shape(r)).reshape(-1) for o in loc]
            errors[r] = None
            for d, f in zip(lay.A, flat[r]):
                errors[r] = errors[r] or out_of_bounds(f, x.shape[d], d)
        raise_if_any_failed(backend, errors, IndexError)
        self.sources = {}  # coordinate over the advanced grid axes -> process ranks
        for s in range(backend.nranks):
            self.sources.setdefault(lay.adv_coord(x1.coords(s)), []).append(s)
        self.groups, self.requests = {}, {}
        P = tuple(x1.grid_shape[d] for d in lay.A)
        for r in local:
            owners = [x1.maps[d].owner(f) for d, f in zip(lay.A, flat[r])]
            C = np.ravel_multi_index([o[0] for o in owners], P)
            order = np.argsort(C, kind="stable")
            uniq, starts = np.unique(C[order], return_index=True)
            self.groups[r] = dict(zip(uniq.tolist(), np.split(order, starts[1:])))
            self.requests[r] = {}
            for c, pos in self.groups[r].items():
                payload = np.stack([o[1][pos] for o in owners]).reshape(-1)
                self.requests[r].update(dict.fromkeys(self.sources[c], payload))
        nmaps = [BlockMap(x1.shape[d], nprocs=1) for d in lay.nonadv]
        self.final_d = lay.final_dist(tB.maps, nmaps)

    def _serve(self, s: int, payload: np.ndarray) -> tuple:
        adv_local = list(payload.reshape(len(self.lay.A), -1))
        return self.lay.mesh(s, self.x._locals[s].shape, adv_local)

    def _pairs(self, r):
        """(positions of `r`'s result, source rank, owned global indices there)."""
        for c, pos in self.groups[r].items():
            for s in self.sources[c]:
                yield pos, s, self.lay.owned_nonadv(s)

    def get(self) -> DistributedArray:
        x, backend, pB, nb = self.x, self.x.backend, self.lay.pB, len(self.B)
        asked = _alltoallv(backend, self.requests, np.intp)
        replies = {
            s: {r: x._locals[s][self._serve(s, p)].reshape(-1) for r, p in q.items()}
            for s, q in asked.items()
        }
        got = _alltoallv(backend, replies, x.dtype)
        full = [self.lay.x1.shape[d] for d in self.lay.nonadv]
        result = {}
        for r in backend.local_ranks:
            out = np.empty((math.prod(self.tB.local_shape(r)), *full), x.dtype)
            for pos, s, own in self._pairs(r):
                if s in got[r]:
                    out[np.ix_(pos, *own)] = got[r][s].reshape(pos.size, *(o.size for o in own))
            out = out.reshape(self.tB.local_shape(r) + tuple(full))
            out = np.moveaxis(out, tuple(range(nb)), tuple(range(pB, pB + nb)))
            result[r] = out.reshape(self.final_d.local_shape(r))
        return new_array(self.final_d, result, x.backend, x.dtype)

    def set(self, value) -> None:
        x, backend, pB, nb = self.x, self.x.backend, self.lay.pB, len(self.B)
        kind, v = _value(x, value, self.final_d.global_shape, advanced=True)
        v = np.asarray(v) if kind == "scalar" else v
        parts = _aligned("numpy" if kind == "scalar" else kind, v, self.final_d, backend)
        values = {}
        for r in backend.local_ranks:
            b = np.moveaxis(
                self.lay.drop_new(parts[r], nb), tuple(range(pB, pB + nb)), tuple(range(nb))
            )
            b = b.reshape((math.prod(self.tB.local_shape(r)), *b.shape[nb:]))
            values[r] = {s: b[np.ix_(pos, *own)].reshape(-1) for pos, s, own in self._pairs(r)}
        asked = _alltoallv(backend, self.requests, np.intp)
        given = _alltoallv(backend, values, v.dtype)
        for s in backend.local_ranks:
            shape = tuple(o.size for o in self.lay.owned_nonadv(s))
            for r in sorted(set(asked[s]) & set(given[s])):  # in rank order: the last wins
                x._locals[s][self._serve(s, asked[s][r])] = given[s][r].reshape((-1, *shape))


def _alltoallv(backend, pieces: dict, dtype) -> dict:
    """``pieces[src][dst]`` (1-D) -> ``result[dst][src]`` for pieces whose sizes only the
    senders know: one all-to-all of the sizes, then the backend's packed all-to-all."""
    P, local = backend.nranks, backend.local_ranks
    ones = np.ones(P, np.intp)
    sizes = {s: np.zeros(P, np.intp) for s in local}
    for s in local:
        for d, a in pieces[s].items():
            sizes[s][d] = a.size
    told = backend.alltoallv({s: (sizes[s], ones) for s in local}, dict.fromkeys(local, ones))
    expect = {r: np.array([told[r][s][0] for s in range(P)], np.intp) for r in local}
    sends = {}
    for s in local:
        parts = [np.asarray(pieces[s][d], dtype) for d in sorted(pieces[s])]
        sends[s] = (np.concatenate(parts) if parts else np.empty(0, dtype), sizes[s])
    return backend.alltoallv(sends, expect)


# -- distributed boolean masks over the leading dimensions ----------------------------------


class _MaskPlan:
    """``x[mask]`` for a distributed mask over the first ``k`` dimensions.

    In a layout where every rank's leading block is one contiguous run of C
    order, in rank order (a block split of one leading dimension), the
    selection is each rank's local selection, and an allgather of the counts
    gives the result's block bounds. Other layouts are first redistributed
    along the leading dimensions.
    """

    def __init__(self, x, items):
        self.x, mask = x, items[0][2]
        k = self.k = mask.ndim
        dist = x.distribution
        lead, rest = dist.maps[:k], dist.maps[k:]
        split = [j for j, m in enumerate(lead) if m.nprocs > 1]
        ordered = all(isinstance(m, (BlockMap, CyclicMap)) for m in lead) and (
            not split
            or (
                len(split) == 1
                and isinstance(lead[split[0]], BlockMap)
                and all(m.size <= 1 for m in lead[: split[0]])
            )
        )
        if ordered:
            self.rb = dist
        else:
            P = math.prod(m.nprocs for m in lead)
            j = next((j for j, m in enumerate(lead) if m.size > 1), 0)
            maps = [BlockMap(m.size, nprocs=P if i == j else 1) for i, m in enumerate(lead)]
            self.rb = Distribution(maps + [one_to_one_map(m) for m in rest])
        trail = (BlockMap(1, nprocs=1),) * (x.ndim - k)
        self.mexp = new_array(
            Distribution(mask.distribution.maps + trail),
            {r: b.reshape(b.shape + (1,) * (x.ndim - k)) for r, b in mask._locals.items()},
            mask.backend,
            np.bool_,
        )
        self.mask_rb = self._lead_mask(self.rb)
        local = x.backend.local_ranks
        counts = x.backend.allgather({r: int(np.count_nonzero(self._mask(r))) for r in local})
        nrest = math.prod(m.nprocs for m in self.rb.maps[k:])
        bounds = np.concatenate(([0], np.cumsum(counts[::nrest]))).astype(np.intp)
        self.result = Distribution([BlockMap(int(bounds[-1]), bounds), *self.rb.maps[k:]])

    def _lead_mask(self, dist: Distribution) -> dict[int, np.ndarray]:
        """The mask block of each rank's leading block in `dist`, whatever the rest holds.

        Broadcast over trailing dimensions of one index per grid rank, so that
        every rank receives it.
        """
        k = self.k
        target = Distribution(
            [*dist.maps[:k], *(BlockMap(m.nprocs, nprocs=m.nprocs) for m in dist.maps[k:])]
        )
        parts = align(self.mexp, target)
        return {r: parts[r].reshape(dist.local_shape(r)[:k]) for r in parts}

    def _mask(self, r) -> np.ndarray:
        return self.mask_rb[r]

    def _source(self) -> DistributedArray:
        return self.x if self.rb == self.x.distribution else redistribute(self.x, self.rb)

    def get(self) -> DistributedArray:
        xr = self._source()
        blocks = {r: xr._locals[r][self._mask(r)] for r in self.x.backend.local_ranks}
        return new_array(self.result, blocks, self.x.backend, self.x.dtype)

    def set(self, value) -> None:
        x, local = self.x, self.x.backend.local_ranks
        kind, v = _value(x, value, self.result.global_shape, advanced=True)
        if kind == "scalar":
            on_x = self._lead_mask(x.distribution)
            for r in local:
                x._locals[r][on_x[r]] = v
            return
        xr = self._source()
        parts = _aligned(kind, v, self.result, x.backend)
        for r in local:
            mask, keep = self._mask(r), owned_flags(self.result, r)
            block = xr._locals[r]
            block[mask] = parts[r] if keep is True else np.where(keep, parts[r], block[mask])
        if xr is x:
            return
        back = align(xr, x.distribution)
        on_x = self._lead_mask(x.distribution)
        for r in local:
            lead = on_x[r].reshape(on_x[r].shape + (1,) * (x.ndim - self.k))
            pick = np.broadcast_to(lead, x._locals[r].shape) & owned_flags(x.distribution, r)
            x._locals[r][pick] = back[r][pick]
