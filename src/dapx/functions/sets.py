"""Unique values and set operations, through the distributed stable sort.

The flattened array is sorted (a sample sort: `dapx.functions.sorting`), the
first of each run of equal values is flagged by comparing neighbours (one
boundary element moves between ranks), and the flagged values are selected.
Counts, first indices and the inverse come from the flags' positions, the
sort order and a cumulative sum, all distributed. Every result is a 1-d
array in even blocks over the ranks (its length depends on the data).
Set operations sort the concatenated unique values of both operands and
compare neighbours the same way.

The unique values alone of an integer or bool array (whose equal values are
indistinguishable, so no tie order matters) take a shorter path: each rank
sorts and deduplicates its own elements, the local uniques go to value
buckets (splitters from a sample; equal values always share a bucket) in one
exchange, and each bucket rank deduplicates what it received.

# Note: ``unique`` along an ``axis`` (unique sub-arrays) is not implemented.
"""

from __future__ import annotations

import itertools
from collections import namedtuple

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core.array import DistributedArray, new_array
from ..core.dispatch import implements
from ..exchange.execute import execute
from ..layout.distribution import Distribution
from ..layout.maps import BlockMap
from .joining import concatenate
from .manipulation import flatnonzero
from .scans import cumsum
from .shaping import clean_distribution, from_replicated, owned_block, ravel, reshape
from .sorting import argsort, sort

__all__ = [
    "intersect1d",
    "setdiff1d",
    "setxor1d",
    "union1d",
    "unique",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
]

UniqueAllResult = namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


def _balanced(x: DistributedArray) -> DistributedArray:
    """`x` (1-d) in even blocks over the ranks: data-dependent lengths get a known layout."""
    return x.redistribute(Distribution.create(x.shape, "b", nranks=x.backend.nranks))


def _first_flags(s: DistributedArray, equal_nan: bool) -> DistributedArray:
    """True where a sorted 1-d array starts a new run of equal values."""
    head = np.ones(min(s.shape[0], 1), bool)
    differ = s[1:] != s[:-1]
    if equal_nan and s.dtype.kind in "fc":
        differ = differ & ~(np.isnan(s[1:]) & np.isnan(s[:-1]))
    return concatenate([head, differ])


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """The distinct values of a 1-d array of indistinguishable equals, sorted.

    NumPy's own `unique` (hash-based for integers since NumPy 2.3, faster than a sort
    when duplicates are many) is used for that; the result is the same either way.
    """
    return np.unique(values)


def _unique_values_by_buckets(flat: DistributedArray) -> DistributedArray:
    """Sorted unique values of a 1-d integer or bool array (see the module docstring)."""
    backend, P, dtype = flat.backend, flat.backend.nranks, flat.dtype
    clean = clean_distribution(flat.distribution) == flat.distribution
    local = {
        r: _sorted_unique(flat.locals[r] if clean else owned_block(flat, r))
        for r in backend.local_ranks
    }
    picks = np.arange(1, P)
    samples = backend.allgather(
        {r: u[(picks * u.size) // P] if u.size else u for r, u in local.items()}
    )
    pool = np.sort(np.concatenate(samples))
    splitters = pool[(picks * pool.size) // P] if pool.size else np.zeros(P - 1, dtype)
    # Bucket b holds the values v with splitters[b - 1] < v <= splitters[b].
    sends = {}
    for r, u in local.items():
        cuts = np.concatenate(([0], np.searchsorted(u, splitters, side="right"), [u.size]))
        counts = np.diff(cuts).astype(np.intp)
        items = [((slice(a, b),), a, b - a, (b - a,)) for a, b in itertools.pairwise(cuts.tolist())]
        sends[r] = (counts, items)
    table = np.array(backend.allgather({r: c for r, (c, _) in sends.items()}), np.intp)
    recvcounts, recvs, received = {}, {}, {}
    for d in backend.local_ranks:
        column = table[:, d]
        starts = np.concatenate(([0], np.cumsum(column)))
        recvcounts[d] = column
        recvs[d] = [
            (s, (slice(int(starts[s]), int(starts[s + 1])),), 0, int(column[s]), (int(column[s]),))
            for s in range(P)
        ]
        received[d] = np.empty(int(starts[-1]), dtype)
    execute(local, sends, recvcounts, recvs, received, dtype, backend, adopt=True)
    merged = {d: _sorted_unique(v) for d, v in received.items()}
    lengths = backend.allgather({d: v.size for d, v in merged.items()})
    bounds = np.concatenate(([0], np.cumsum(lengths))).astype(np.intp)
    dist = Distribution([BlockMap(int(bounds[-1]), bounds)])
    return _balanced(new_array(dist, merged, backend, dtype))


def _unique(ar, return_index, return_inverse, return_counts, equal_nan):
    flat = ravel(ar)
    if (
        not (return_index or return_inverse or return_counts)
        and flat.dtype.kind in "iub"
        and flat.backend.nranks > 1
    ):
        return [_unique_values_by_buckets(flat)]
    n = flat.shape[0]
    need_order = return_index or return_inverse
    order = argsort(flat) if need_order else None
    s = flat[order] if need_order else sort(flat)
    flags = _first_flags(s, equal_nan)
    values = _balanced(s[flags])
    out = [values]
    if return_index or return_counts:
        starts = flatnonzero(flags)
    if return_index:
        out.append(_balanced(order[starts]))
    if return_inverse:
        run = cumsum(flags) - 1
        inverse = np.empty_like(order)
        inverse[order] = run
        inverse_ndim = np.unique(np.zeros((1,) * max(ar.ndim, 1)), return_inverse=True)[1].ndim
        out.append(reshape(inverse, ar.shape) if inverse_ndim == ar.ndim and ar.ndim else inverse)
    if return_counts:
        ends = concatenate([starts[1:], np.array([n], starts.dtype)])
        out.append(_balanced(ends - starts))
    return out


@implements(np.unique)
def unique(
    ar,
    return_index=False,
    return_inverse=False,
    return_counts=False,
    axis=None,
    *,
    equal_nan=True,
    sorted=True,
):
    """`numpy.unique` of the flattened array (sorted), with indices, inverse and counts.

    >>> import numpy as np, dapx
    >>> a = dapx.asarray([3, 1, 3, 2, 1], backend=dapx.simulated(2))
    >>> [r.gather().tolist() for r in np.unique(a, return_counts=True)]
    [[1, 2, 3], [2, 1, 2]]
    """
    if axis is not None:
        normalize_axis_index(axis, np.ndim(ar))  # NumPy's AxisError first
        raise NotImplementedError("np.unique along an axis (unique sub-arrays) is not implemented")
    out = _unique(ar, return_index, return_inverse, return_counts, equal_nan)
    return out[0] if len(out) == 1 else tuple(out)


@implements(np.unique_values)
def unique_values(x):
    """`numpy.unique_values`, sorted (NumPy leaves the order unspecified); NaNs distinct."""
    return _unique(x, False, False, False, equal_nan=False)[0]


@implements(np.unique_counts)
def unique_counts(x):
    """`numpy.unique_counts`, sorted; NaNs distinct."""
    return UniqueCountsResult(*_unique(x, False, False, True, equal_nan=False))


@implements(np.unique_inverse)
def unique_inverse(x):
    """`numpy.unique_inverse`, sorted; the inverse has `x`'s shape."""
    values, inverse = _unique(x, False, True, False, equal_nan=False)
    if inverse.shape != x.shape:
        inverse = reshape(inverse, x.shape)
    return UniqueInverseResult(values, inverse)


@implements(np.unique_all)
def unique_all(x):
    """`numpy.unique_all`, sorted; the inverse has `x`'s shape."""
    values, index, inverse, counts = _unique(x, True, True, True, equal_nan=False)
    if inverse.shape != x.shape:
        inverse = reshape(inverse, x.shape)
    return UniqueAllResult(values, index, inverse, counts)


def _flat(x, like):
    if isinstance(x, DistributedArray):
        return ravel(x)
    return from_replicated(np.ravel(x), like.backend)


def _backend_of(*xs):
    return next(x for x in xs if isinstance(x, DistributedArray))


@implements(np.union1d)
def union1d(ar1, ar2):
    """`numpy.union1d`: the unique values of both."""
    like = _backend_of(ar1, ar2)
    return unique(concatenate([_flat(ar1, like), _flat(ar2, like)]))


@implements(np.intersect1d)
def intersect1d(ar1, ar2, assume_unique=False, return_indices=False):
    """`numpy.intersect1d`: sorted values present in both."""
    if return_indices:
        raise NotImplementedError("np.intersect1d with return_indices=True is not implemented")
    like = _backend_of(ar1, ar2)
    a, b = _flat(ar1, like), _flat(ar2, like)
    if not assume_unique:
        a, b = unique(a), unique(b)
    aux = sort(concatenate([a, b]))
    if aux.shape[0] < 2:
        return _balanced(aux[:0])
    return _balanced(aux[:-1][aux[1:] == aux[:-1]])


@implements(np.setxor1d)
def setxor1d(ar1, ar2, assume_unique=False):
    """`numpy.setxor1d`: sorted values in exactly one of the two."""
    like = _backend_of(ar1, ar2)
    a, b = _flat(ar1, like), _flat(ar2, like)
    if not assume_unique:
        a, b = unique(a), unique(b)
    aux = sort(concatenate([a, b]))
    if aux.shape[0] == 0:
        return _balanced(aux)
    ends = np.ones(1, bool)
    flag = concatenate([ends, aux[1:] != aux[:-1], ends])
    return _balanced(aux[flag[1:] & flag[:-1]])


@implements(np.setdiff1d)
def setdiff1d(ar1, ar2, assume_unique=False):
    """`numpy.setdiff1d`: the values of `ar1` not in `ar2` (one merged stable sort).

    Sorted and unique, or with ``assume_unique=True`` in the order of `ar1`, as NumPy.
    """
    like = _backend_of(ar1, ar2)
    a, b = _flat(ar1, like), unique(_flat(ar2, like))
    if not assume_unique:
        a = unique(a)
    values = concatenate([a, b])
    tags = concatenate([np.zeros_like(a, dtype=bool), np.ones_like(b, dtype=bool)])
    order = argsort(values)  # stable: an element of a comes before an equal one of b
    s, t = values[order], tags[order]
    if s.shape[0] == 0:
        return _balanced(s)
    last = np.zeros(1, bool)
    # An element of a is dropped when the next sorted element is equal and comes from b.
    dropped = concatenate([(s[1:] == s[:-1]) & t[1:], last])
    keep = ~t & ~dropped
    if not assume_unique:
        return _balanced(s[keep])
    kept = np.empty_like(keep)
    kept[order] = keep  # back in the order of a (then b)
    return _balanced(a[kept[: a.shape[0]]])
