"""Sorting and searching: `numpy.sort`, `numpy.argsort`, `numpy.searchsorted`.

Along an axis that lives on one grid rank, sorting is local. Along a
distributed axis of an N-d array the array is redistributed so that the axis
is undistributed (the other axes carry the ranks), sorted, and moved back.
A distributed 1-d array is sorted with a sample sort: ranks sort their own
elements, agree on splitters from a few samples each, send each element to
its bucket's rank in one exchange, merge there, and move the result back to
the original layout in a second exchange. Only small metadata (samples and
per-rank counts) is allgathered.

Sorts are always stable (ties keep global index order).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core.array import DistributedArray, new_array
from ..core.dispatch import implements
from ..exchange.execute import run_plan
from ..exchange.plans import exchange_plan
from ..layout.distribution import Distribution
from ..layout.maps import BlockMap, UnstructuredMap
from .shaping import _is_trivial, clean_distribution, from_replicated, owned_block, ravel

__all__ = [
    "argpartition",
    "argsort",
    "lexsort",
    "partition",
    "searchsorted",
    "sort",
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


def _buckets(values, keys, split_values, split_keys) -> np.ndarray:
    """For sorted (value, key) pairs: how many splitters sort at or before each."""
    n = split_values.size
    all_values = np.concatenate([split_values, values])
    all_keys = np.concatenate([split_keys, keys])
    tag = np.concatenate([np.zeros(n, np.int8), np.ones(values.size, np.int8)])
    order = np.argsort(tag, kind="stable")  # a splitter equal to an element sorts first
    order = order[_order(all_values[order], all_keys[order])]
    is_splitter = order < n
    before = np.cumsum(is_splitter)
    counts = np.empty(values.size, np.intp)
    counts[order[~is_splitter] - n] = before[~is_splitter]
    return counts


def _sample_sort(x: DistributedArray, want_indices: bool) -> DistributedArray:
    """Sort a 1-d array whose only axis is distributed (see the module docstring)."""
    backend, P, n = x.backend, x.backend.nranks, x.size
    dist = x.distribution
    ranks = backend.local_ranks
    mine = {}
    for r in ranks:
        values = owned_block(x, r)
        keys = dist.owned_indices(r)[0]
        o = _order(values, keys)
        mine[r] = (values[o], keys[o])
    samples = backend.allgather(
        {
            r: (v[(np.arange(1, P) * v.size) // P], k[(np.arange(1, P) * v.size) // P])
            if v.size
            else (v[:0], k[:0])
            for r, (v, k) in mine.items()
        }
    )
    sample_values = np.concatenate([s[0] for s in samples])
    sample_keys = np.concatenate([s[1] for s in samples])
    o = _order(sample_values, sample_keys)
    pick = (np.arange(1, P) * o.size) // P if o.size else np.zeros(0, np.intp)
    split_values, split_keys = sample_values[o][pick], sample_keys[o][pick]
    counts = {}
    for r, (v, k) in mine.items():
        counts[r] = np.bincount(_buckets(v, k, split_values, split_keys), minlength=P)
    table = np.array(backend.allgather(counts), dtype=np.intp).reshape(P, P)  # [source, bucket]
    starts = np.concatenate(([0], np.cumsum(table.sum(axis=0))))
    offsets = starts[:-1][None, :] + np.cumsum(table, axis=0) - table  # where each run lands
    positions = [
        np.concatenate(
            [np.arange(offsets[s, b], offsets[s, b] + table[s, b]) for b in range(P)]
        ).astype(np.intp)
        for s in range(P)
    ]
    source = Distribution([UnstructuredMap(n, positions, True)])
    buckets = Distribution([BlockMap(n, starts)])
    plan = exchange_plan(source, buckets, ranks)
    values = run_plan(plan, {r: v for r, (v, _) in mine.items()}, x.dtype, backend)
    keys = run_plan(plan, {r: k for r, (_, k) in mine.items()}, np.intp, backend)
    merged = {}
    for r in ranks:
        o = _order(values[r], keys[r])
        merged[r] = keys[r][o] if want_indices else values[r][o]
    dtype = np.dtype(np.intp) if want_indices else x.dtype
    back = exchange_plan(buckets, dist, ranks)
    return new_array(dist, run_plan(back, merged, dtype, backend), backend, dtype)


def _sort(a: DistributedArray, axis, want_indices: bool) -> DistributedArray:
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
        return _sample_sort(x, want_indices)
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
    return _sort(a, axis, False)


@implements(np.searchsorted)
def searchsorted(a, v, side="left", sorter=None):
    """`numpy.searchsorted` on a sorted 1-d DistributedArray `a`.

    Each rank searches the elements it owns (in global order) and the counts
    are summed over ranks with `Backend.combine`. For a NumPy `v` (or a 0-d
    DistributedArray) the result is a NumPy array of ``v``'s shape, the same
    on every process.

    A distributed `v` gives a result laid out like `v`: every rank searches
    its own elements in the whole of `a` (gathered, with a
    `dapx.GatherWarning` above the gather threshold). `sorter` reorders `a`
    first (one exchange).

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
        # Every rank searches its own elements of v in the whole of `a` (gathered, with a
        # GatherWarning when large): the result is laid out like v.
        from .manipulation import _blockwise
        from .scans import whole

        haystack = whole(a, "np.searchsorted's sorted array")
        return _blockwise(lambda x: np.searchsorted(haystack, x, side=side), [v])
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
