"""Sorting and searching: `numpy.sort`, `numpy.argsort`, `numpy.searchsorted`.

Along an axis that lives on one grid rank, sorting is local. Along a
distributed axis of an N-d array the array is redistributed so that the axis
is undistributed (the other axes carry the ranks), sorted, and moved back.
A distributed 1-d array is sorted with a sample sort: ranks sort their own
elements, agree on splitters from a few samples each, send each element to
its bucket's rank in one exchange, merge there, and move the result back to
the original layout in a second exchange. Only small metadata (8P weighted
samples per rank and the P x P counts) is allgathered. Splitters order
elements by (value, global index), so equal keys are split between ranks
like any others: whatever the keys (all equal, 90% equal, descending, mostly
NaN), no rank receives more than about 1.3 N/P + P elements in the bucket
exchange; the second exchange delivers the input's own layout.

`argsort` and ``kind="stable"`` (or ``stable=True``) sorts of floats are
stable (ties in global index order). The default values-only sort ties by
(rank, local position) instead and moves no index array: equal values are
interchangeable there, except -0.0 and 0.0, whose relative order NumPy's
default sort leaves unspecified as well.

`sort_carrying` sorts values stably with a payload moved along (weights for
weighted quantiles) and leaves both in the bucket layout, skipping the second
exchange.

Partitions are full sorts (one valid partition); `lexsort` is successive
stable argsorts. `searchsorted` of a distributed `v` sorts `a` and `v`
together instead of gathering either.
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core.array import DistributedArray, new_array
from ..core.dispatch import implements
from ..exchange.execute import execute, run_plan
from ..exchange.plans import exchange_plan
from ..layout.distribution import Distribution
from ..layout.maps import BlockMap
from .shaping import _is_trivial, clean_distribution, from_replicated, owned_block, ravel

__all__ = [
    "argpartition",
    "argsort",
    "lexsort",
    "partition",
    "searchsorted",
    "sort",
    "sort_carrying",
    "sort_complex",
]

_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")


def _order(values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Positions sorting by `values`, ties by `keys` (NumPy's order: NaN last)."""
    first = np.argsort(keys, kind="stable")
    return first[np.argsort(values[first], kind="stable")]


def _check(kind, order, stable) -> None:
    if kind is not None and stable is not None:
        raise ValueError(
            "`kind` and keyword parameters can't be provided at the same time. "
            "Use only one of them."
        )
    if kind not in _KINDS:
        raise ValueError(f"sort kind must be one of 'quick', 'heap', or 'stable' (got {kind!r})")
    if order is not None:
        raise NotImplementedError(
            "sorting structured arrays by field (order=) is not implemented for DistributedArray"
        )


#: Samples each rank contributes per destination rank. Each sample stands for the
#: elements up to it on its rank, so a bucket exceeds N/P by at most about
#: N/(P * _OVERSAMPLE) + N/S + P elements: below 1.3 N/P + P (see `_splitters`).
_OVERSAMPLE = 8


def _regular_positions(size: int, count: int) -> np.ndarray:
    """`count` evenly spaced positions of a sorted block of `size`, the last one last."""
    positions = (np.arange(1, count + 1) * size) // count - 1
    return np.unique(positions[positions >= 0])


def _splitters(samples: list, sizes: np.ndarray, nranks: int):
    """The P - 1 splitters (value, key) from every rank's weighted regular samples.

    ``samples[r] = (values, keys, positions)``: rank `r`'s samples of its sorted
    block and their positions there. A sample at position p stands for the
    ``p - p_previous`` elements up to it, so the running sum of the weights in
    sorted sample order never overstates how many elements sort at or before a
    sample, and understates it by less than one sample spacing per rank
    (``n_r / S + 1``). Splitter j is the first sample whose running weight reaches
    ``j * N / P``; each bucket thus holds fewer than
    ``N / P + max_r n_r / S + N / S + P + 1`` elements (S samples per rank).
    Keys make every element distinct, so equal values are split too.
    """
    values = np.concatenate([s[0] for s in samples])
    keys = np.concatenate([s[1] for s in samples]).astype(np.intp, copy=False)
    weights = np.concatenate(
        [np.diff(s[2], prepend=-1) for s in samples if s[2].size] or [np.zeros(0, np.intp)]
    )
    o = _order(values, keys)
    running = np.cumsum(weights[o])
    total = int(sizes.sum())
    targets = (np.arange(1, nranks) * total + nranks - 1) // nranks  # ceil(j N / P)
    pick = np.minimum(np.searchsorted(running, targets, side="left"), o.size - 1)
    return values[o][pick], keys[o][pick]


def _cuts(values: np.ndarray, keys, offset: int, split_values, split_keys) -> np.ndarray:
    """Bucket boundaries in a block sorted by (value, key): elements <= each splitter.

    `keys` is the block's keys, or None when they are implicit: ``offset + position``
    (the values-only sort, whose equal elements are interchangeable).
    """
    lo = np.searchsorted(values, split_values, side="left")
    hi = np.searchsorted(values, split_values, side="right")
    if keys is None:
        within = np.clip(split_keys - offset + 1, lo, hi)
    else:
        within = np.array(
            [
                a + np.searchsorted(keys[a:b], k, side="right")
                for a, b, k in zip(lo.tolist(), hi.tolist(), split_keys.tolist())
            ],
            np.intp,
        ).reshape(-1)
    within = np.maximum.accumulate(within) if within.size else within
    return np.concatenate(([0], within, [values.size])).astype(np.intp)


def _merge_keyed(values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The order of (value, key) pairs made of runs each sorted by (value, key).

    One stable argsort by value suffices when the runs come in key order (block
    layouts); a tie out of key order falls back to sorting by both.
    """
    o = np.argsort(values, kind="stable")
    v, k = values[o], keys[o]
    tied = v[1:] == v[:-1]
    if v.dtype.kind in "fc":
        tied |= np.isnan(v[1:]) & np.isnan(v[:-1])
    if np.any(tied & (k[1:] < k[:-1])):
        return _order(values, keys)
    return o


def _exchange_runs(blocks, cuts, table, dtype, backend) -> dict:
    """Send run b of each local sorted block to rank b: received runs back to back."""
    P = backend.nranks
    sends = {}
    for r, c in cuts.items():
        items = [((slice(a, b),), a, b - a, (b - a,)) for a, b in itertools.pairwise(c.tolist())]
        sends[r] = (np.diff(c), items)
    recvcounts, recvs, received = {}, {}, {}
    for d in backend.local_ranks:
        column = table[:, d]
        starts = np.concatenate(([0], np.cumsum(column))).tolist()
        recvcounts[d] = column
        recvs[d] = [
            (
                s,
                (slice(starts[s], starts[s + 1]),),
                0,
                starts[s + 1] - starts[s],
                (starts[s + 1] - starts[s],),
            )
            for s in range(P)
        ]
        received[d] = np.empty(starts[-1], dtype)
    execute(blocks, sends, recvcounts, recvs, received, dtype, backend, adopt=True)
    return received


def _sample_sort(x: DistributedArray, want_indices: bool, stable: bool) -> DistributedArray:
    """Sort a 1-d array whose only axis is distributed (see the module docstring).

    Ranks sort their own elements, allgather a few weighted regular samples
    each, pick P - 1 splitters that cut the (value, global index) order into
    near-equal buckets, send each sorted run to its bucket's rank in one
    exchange (at most about 1.3 N/P + P elements arrive at any rank, whatever
    the keys: ties are split by index, so all-equal keys spread evenly), merge
    there, and move the sorted buckets to the input's layout in a second
    exchange. The values-only sort of indistinguishable equals (not `stable`,
    or integers) keys ties by (rank, local position) implicitly and moves no
    index array.
    """
    backend, dist = x.backend, x.distribution
    merged, _, buckets = _buckets(x, want_indices, stable)
    dtype = np.dtype(np.intp) if want_indices else x.dtype
    if buckets == dist:
        return new_array(dist, merged, backend, dtype)
    back = exchange_plan(buckets, dist, backend.local_ranks)
    return new_array(dist, run_plan(back, merged, dtype, backend), backend, dtype)


def sort_carrying(
    x: DistributedArray, payload: DistributedArray
) -> tuple[DistributedArray, DistributedArray]:
    """`x` (1-d) sorted stably, and `payload` (laid out like `x`) moved along with it.

    Both results are in the sort's bucket layout: rank r holds a contiguous run of
    the sorted order, of about N/P elements (at most about 1.3 N/P + P, whatever
    the keys); nothing moves back to `x`'s layout. NaNs sort last.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> b = dapx.simulated(2)
    >>> x, w = dapx.asarray([3.0, 1.0, 2.0], backend=b), dapx.asarray([30, 10, 20], backend=b)
    >>> s, w = sort_carrying(x, w)
    >>> s.gather(), w.gather()
    (array([1., 2., 3.]), array([10, 20, 30]))
    """
    if x.ndim != 1 or payload.shape != x.shape:
        raise ValueError("sort_carrying takes a 1-d array and a payload of its shape")
    if payload.distribution != x.distribution:
        payload = payload.redistribute(x.distribution)
    clean = clean_distribution(x.distribution)
    if clean != x.distribution:
        x, payload = x.redistribute(clean), payload.redistribute(clean)
    backend = x.backend
    if x.size == 0 or backend.nranks == 1 or _is_trivial(x.distribution.maps[0]):
        values, carried = {}, {}
        for r in backend.local_ranks:
            block = owned_block(x, r)
            o = np.argsort(block, kind="stable")
            values[r], carried[r] = block[o], owned_block(payload, r)[o]
        dist = x.distribution
    else:
        values, carried, dist = _buckets(x, False, True, payload)
    return (
        new_array(dist, values, backend, x.dtype),
        new_array(dist, carried, backend, payload.dtype),
    )


def _buckets(x: DistributedArray, want_indices: bool, stable: bool, payload=None):
    """The sample sort's buckets: (sorted values or indices, carried payload, distribution).

    Rank r's bucket is the r-th run of the sorted order; `payload` (an array
    laid out like `x`, or None) travels with the values.
    """
    backend, P, n = x.backend, x.backend.nranks, x.size
    dist = x.distribution
    ranks = backend.local_ranks
    keyed = want_indices or payload is not None or (stable and x.dtype.kind in "fcOV")
    per_rank = _OVERSAMPLE * P
    # A clean block layout's blocks are what each rank owns, in global order: no owner lookup.
    whole_blocks = isinstance(dist.maps[0], BlockMap) and clean_distribution(dist) == dist
    values, keys, samples, carry = {}, {}, {}, {}
    for r in ranks:
        block = x.locals[r] if whole_blocks else owned_block(x, r)
        if keyed:
            k = dist.owned_indices(r)[0].astype(np.intp, copy=False)
            if k.size > 1 and not np.all(k[1:] > k[:-1]):
                o = _order(block, k)
            else:
                o = np.argsort(block, kind="stable")
            values[r], keys[r] = block[o], k[o]
            if payload is not None:
                carry[r] = (payload.locals[r] if whole_blocks else owned_block(payload, r))[o]
        else:
            values[r] = np.sort(block)
        at = _regular_positions(values[r].size, per_rank)
        samples[r] = (values[r][at], keys[r][at] if keyed else at, at)
    gathered = backend.allgather({r: (values[r].size, samples[r]) for r in ranks})
    sizes = np.array([g[0] for g in gathered], np.intp)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    if not keyed:  # implicit keys: offset of the rank (in rank order) + local position
        gathered = [
            (size, (v, k + offsets[r], at)) for r, (size, (v, k, at)) in enumerate(gathered)
        ]
    split_values, split_keys = _splitters([g[1] for g in gathered], sizes, P)
    cuts = {
        r: _cuts(values[r], keys.get(r), int(offsets[r]), split_values, split_keys) for r in ranks
    }
    table = np.array(
        backend.allgather({r: np.diff(c) for r, c in cuts.items()}), dtype=np.intp
    ).reshape(P, P)  # [source, bucket]
    got = _exchange_runs(values, cuts, table, x.dtype, backend)
    del values
    merged, carried = {}, {}
    if keyed:
        got_keys = _exchange_runs(keys, cuts, table, np.intp, backend)
        del keys
        got_carry = _exchange_runs(carry, cuts, table, payload.dtype, backend) if carry else None
        for r in ranks:
            o = _merge_keyed(got[r], got_keys[r])
            merged[r] = got_keys[r][o] if want_indices else got[r][o]
            if got_carry is not None:
                carried[r] = got_carry[r][o]
    else:
        for r in ranks:
            got[r].sort()  # P sorted runs; NumPy's sort is fast on them
            merged[r] = got[r]
    starts = np.concatenate(([0], np.cumsum(table.sum(axis=0))))
    return merged, carried, Distribution([BlockMap(n, starts)])


def _sort(a: DistributedArray, axis, want_indices: bool, stable: bool = True) -> DistributedArray:
    if axis is None:
        a, axis = ravel(a), 0
    if a.ndim == 0:
        func = np.argsort if want_indices else np.sort
        return from_replicated(func(a.locals[a.backend.local_ranks[0]], axis=axis), a.backend)
    axis = normalize_axis_index(axis, a.ndim)
    # Note: every kind sorts stably (ties in global index order), which is one of the
    # orders NumPy's unstable kinds may give; `kind` is validated and otherwise ignored.
    clean = clean_distribution(a.distribution)
    x = a if clean == a.distribution else a.redistribute(clean)
    local = (
        (lambda b: np.argsort(b, axis=axis, kind="stable"))
        if want_indices
        else (lambda b: np.sort(b, axis=axis, kind="stable"))
    )
    dtype = np.dtype(np.intp) if want_indices else x.dtype
    if x.size == 0 or _is_trivial(x.distribution.maps[axis]):
        blocks = {r: local(b) for r, b in x.locals.items()}
        return new_array(x.distribution, blocks, x.backend, dtype)
    if x.ndim == 1:
        return _sample_sort(x, want_indices, stable)
    specs = ["n" if k == axis else "b" for k in range(x.ndim)]
    y = x.redistribute(Distribution.create(x.shape, specs, nranks=x.backend.nranks))
    blocks = {r: local(b) for r, b in y.locals.items()}
    return new_array(y.distribution, blocks, y.backend, dtype).redistribute(x.distribution)


@implements(np.argsort)
def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """`numpy.argsort`; the result has the layout of `a` (without padding).

    Examples
    --------
    >>> import numpy as np, dapx
    >>> x = np.array([3.0, 1.0, 2.0, 5.0, 4.0])
    >>> a = dapx.asarray(x, dist="c", backend=dapx.simulated(2))
    >>> np.argsort(a).gather()
    array([1, 2, 0, 4, 3])
    """
    _check(kind, order, stable)
    return _sort(a, axis, True)


@implements(np.sort)
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """`numpy.sort`; the result has the layout of `a` (without padding).

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.asarray([3, 1, 2, 5, 4], backend=dapx.simulated(3))
    >>> np.sort(a).gather()
    array([1, 2, 3, 4, 5])
    """
    _check(kind, order, stable)
    return _sort(a, axis, False, bool(stable) or kind in ("stable", "mergesort"))


@implements(np.searchsorted)
def searchsorted(a, v, side="left", sorter=None):
    """`numpy.searchsorted` on a sorted 1-d DistributedArray `a`.

    Each rank searches the elements it owns (in global order) and the counts
    are summed over ranks with `Backend.combine`. For a NumPy `v` (or a 0-d
    DistributedArray) the result is a NumPy array of ``v``'s shape, the same
    on every process.

    A distributed `v` gives a result laid out like `v`, without gathering
    either array: `a` and `v` are sorted together (the distributed stable
    sort, `v` placed before `a` for ``side="left"`` and after it for
    ``"right"`` so that ties fall on the right side), a running count of
    `a`'s elements gives each element of `v` its answer, which goes back to
    `v`'s position (one exchange). `sorter` reorders `a` first (one exchange).

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.arange(0, 20, 2, dist="c", backend=dapx.simulated(3))
    >>> np.searchsorted(a, [5, 6, 100]), np.searchsorted(a, 6, side="right")
    (array([ 3,  3, 10]), np.int64(4))
    """
    if side not in ("left", "right"):
        raise ValueError(f"search side must be 'left' or 'right' (got {side!r})")
    if np.ndim(a) != 1:
        raise ValueError("object too deep for desired array")
    if sorter is not None:
        a = a[sorter]  # the sorted array, one exchange (fancy indexing)
    if isinstance(v, DistributedArray) and v.ndim:
        if not isinstance(a, DistributedArray):  # `a` is whole on every process already
            from .manipulation import _blockwise

            return _blockwise(lambda x: np.searchsorted(a, x, side=side), [v])
        return _searchsorted_distributed(a, v, side)
    if not isinstance(a, DistributedArray):
        return np.searchsorted(a, v, side=side)
    if isinstance(v, DistributedArray):
        v = v.locals[v.backend.local_ranks[0]]  # 0-d: replicated
    partials = {}
    for r in a.backend.local_ranks:
        values = owned_block(a, r)
        values = values[np.argsort(a.distribution.owned_indices(r)[0], kind="stable")]
        partials[r] = np.searchsorted(values, v, side=side)
    return a.backend.combine(partials, np.add)


def _searchsorted_distributed(a: DistributedArray, v: DistributedArray, side: str):
    """`np.searchsorted` of a distributed `v` in a distributed sorted `a` (see above)."""
    from .joining import concatenate
    from .scans import cumsum
    from .shaping import reshape

    flat = ravel(v)
    n, m = a.shape[0], flat.shape[0]
    dtype = np.result_type(a.dtype, v.dtype)
    av, vv = a.astype(dtype, copy=False), flat.astype(dtype, copy=False)
    # A stable sort keeps concatenation order among equal keys: v first puts each element
    # of v before the equal elements of a (left), v last after them (right).
    both = concatenate([vv, av] if side == "left" else [av, vv])
    order = argsort(both)
    is_a = order >= m if side == "left" else order < n
    before = cumsum(is_a, dtype=np.intp)  # elements of a up to each sorted position
    is_v = ~is_a
    at = order[is_v] if side == "left" else order[is_v] - n
    result = np.empty_like(flat, dtype=np.intp)
    result[at] = before[is_v]
    result = reshape(result, v.shape) if v.ndim != 1 else result
    target = clean_distribution(v.distribution)
    return result if result.distribution == target else result.redistribute(target)


# -- partitions, lexsort, complex sort: through the stable distributed sort ---------------------


def _check_kth(a, kth, axis) -> None:
    n = a.shape[normalize_axis_index(axis, a.ndim)] if axis is not None else a.size
    for k in np.atleast_1d(kth):
        if not -n <= int(k) < n:
            raise ValueError(f"kth(={int(k)}) out of bounds ({n})")


@implements(np.partition)
def partition(a, kth, axis=-1, kind="introselect", order=None):
    """`numpy.partition`: a full stable sort, which is one valid partition.

    # Note: NumPy leaves the order within each side unspecified; dapx sorts fully.
    """
    if order is not None:
        raise NotImplementedError("partition with order= (structured dtypes) is not implemented")
    if axis is None:
        a, axis = ravel(a), -1
    _check_kth(a, kth, axis)
    return sort(a, axis)


@implements(np.argpartition)
def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """`numpy.argpartition`: the indices of a full stable sort (one valid partition)."""
    if order is not None:
        raise NotImplementedError("argpartition with order= is not implemented")
    if axis is None:
        a, axis = ravel(a), -1
    _check_kth(a, kth, axis)
    return argsort(a, axis)


@implements(np.lexsort)
def lexsort(keys, axis=-1):
    """`numpy.lexsort` of 1-d keys: successive stable argsorts, the last key primary."""
    keys = (
        list(keys)
        if not isinstance(keys, DistributedArray)
        else [keys[i] for i in range(len(keys))]
    )
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    if any(np.ndim(k) != 1 for k in keys) or normalize_axis_index(axis, 1) != 0:
        raise NotImplementedError("dapx's lexsort takes 1-d keys (axis=-1)")
    order = argsort(keys[0])
    for key in keys[1:]:
        order = order[argsort(key[order])]
    return order


@implements(np.sort_complex)
def sort_complex(a):
    """`numpy.sort_complex`: a stable sort, as a complex array."""
    result = sort(a)
    if result.dtype.kind == "c":
        return result
    target = np.sort_complex(np.zeros(1, result.dtype)).dtype
    return result.astype(target)
