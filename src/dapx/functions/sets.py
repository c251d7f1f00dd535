"""Unique values and set operations, through the distributed stable sort.

The flattened array is sorted (a sample sort: `dapx.functions.sorting`), the
first of each run of equal values is flagged by comparing neighbours (one
boundary element moves between ranks), and the flagged values are selected.
Counts, first indices and the inverse come from the flags' positions, the
sort order and a cumulative sum, all distributed. Every result is a 1-d
array in even blocks over the ranks (its length depends on the data).
Set operations sort the concatenated unique values of both operands and
compare neighbours the same way.

`isin` against a distributed test set of more than `ISIN_GATHER_LIMIT`
elements gathers neither operand: each rank deduplicates its elements and its
part of the test set, both go to value buckets (splitters from a sample, as in
the sample sort; equal values always share a bucket) in one exchange, each
bucket rank looks its element values up among its test values, and the answers
go back to the elements' ranks in a second exchange. Since every rank sends
each distinct value at most once per operand, no rank receives more than about
1.3 times its share of both operands plus 2P values, whatever the keys.

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
from ..core.elementwise import local_operands, result_layout
from ..exchange.execute import execute
from ..layout.distribution import Distribution
from ..layout.maps import BlockMap
from .elementwise_library import isin_whole_test_set
from .joining import concatenate
from .manipulation import flatnonzero
from .scans import cumsum
from .shaping import clean_distribution, from_replicated, owned_block, ravel, reshape
from .sorting import _regular_positions, _splitters, argsort, sort

__all__ = [
    "ISIN_GATHER_LIMIT",
    "intersect1d",
    "isin",
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


# -- isin against a distributed test set ----------------------------------------------------------

#: A distributed test set of at most this many elements is gathered to every rank (one
#: allgather, cheaper than the exchanges); a larger one is never gathered.
ISIN_GATHER_LIMIT = 4096

_TABLE_ONLY_INTEGERS = (
    "The 'table' method is only supported for boolean or integer arrays. "
    "Please select 'sort' or None for kind."
)
_TABLE_OVERFLOW = (
    "You have specified kind='table', but the range of values in `ar2` or `ar1` exceed the "
    "maximum integer of the datatype. Please set `kind` to None or 'sort'."
)


def _common_dtype(a: np.dtype, b: np.dtype) -> np.dtype | None:
    """The dtype both operands are compared in (NumPy's), or None where dapx gathers instead.

    Objects, structured dtypes and mixes NumPy cannot promote keep the gathering path, and so
    do integer mixes promoted to float (uint64 with a signed type: NumPy's answer then
    depends on which of its algorithms its sizes choose).
    """
    if a.kind not in "biufcmMUS" or b.kind not in "biufcmMUS":
        return None
    try:
        dtype = np.result_type(a, b)
    except TypeError:
        return None
    if a.kind in "biu" and b.kind in "biu" and dtype.kind not in "biu":
        return None
    return dtype


def _sorted_distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values of a 1-d array, sorted (NaNs, NaTs kept once), by one sort.

    (NumPy's hashed `unique` of integers is slow when most values are distinct.)
    """
    s = np.sort(values)
    if s.size < 2:
        return s
    keep = np.empty(s.size, bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    if s.dtype.kind in "fcmM":
        missing = np.isnat(s) if s.dtype.kind in "mM" else np.isnan(s)
        keep[1:] &= ~(missing[1:] & missing[:-1])
    return s[keep]


def _bucket_cuts(values: np.ndarray, splitters: np.ndarray | None, nranks: int) -> np.ndarray:
    """Bucket boundaries in a sorted block: bucket b holds splitters[b-1] < v <= splitters[b]."""
    if splitters is None:  # no values anywhere
        return np.zeros(nranks + 1, np.intp)
    inner = np.searchsorted(values, splitters, side="right")
    return np.concatenate(([0], inner, [values.size])).astype(np.intp)


def _isin_distributed(element: DistributedArray, test: DistributedArray, invert: bool, kind):
    """`np.isin` of a distributed `element` in a large distributed `test` (module docstring)."""
    backend, P = element.backend, element.backend.nranks
    ranks = backend.local_ranks
    dtype = _common_dtype(element.dtype, test.dtype)
    _, target, _ = result_layout([element])
    blocks = local_operands([element], target, backend)[0]
    uniques, inverses, tests = {}, {}, {}
    for r in ranks:
        values = np.ravel(blocks[r]).astype(dtype, copy=False)
        uniques[r], inverses[r] = np.unique(values, return_inverse=True)
        tests[r] = _sorted_distinct(owned_block(test, r).astype(dtype, copy=False))
    # Weighted regular samples of each rank's distinct values of both operands.
    per_rank = 8 * P
    table_kind = kind == "table"
    info = {}
    for r in ranks:
        picks = []
        for u in (uniques[r], tests[r]):
            at = _regular_positions(u.size, per_rank)
            picks.append((u.size, u[at], at))
        ends = (tests[r][0], tests[r][-1]) if table_kind and tests[r].size else None
        info[r] = (picks, ends)
    gathered = backend.allgather(info)
    if table_kind:
        _check_table_range([g[1] for g in gathered if g[1] is not None], test.dtype)
    picks = [p for g in gathered for p in g[0]]  # two sorted arrays per rank
    sizes = np.array([p[0] for p in picks], np.intp)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    splitters = None
    if sizes.sum():
        samples = [(v, at + offsets[i], at) for i, (_, v, at) in enumerate(picks)]
        splitters = _splitters(samples, sizes, P)[0]
    cuts_e = {r: _bucket_cuts(uniques[r], splitters, P) for r in ranks}
    cuts_t = {r: _bucket_cuts(tests[r], splitters, P) for r in ranks}
    counts = backend.allgather({r: (np.diff(cuts_e[r]), np.diff(cuts_t[r])) for r in ranks})
    table_e = np.array([c[0] for c in counts], np.intp).reshape(P, P)  # [source, bucket]
    table_t = np.array([c[1] for c in counts], np.intp).reshape(P, P)
    received = _exchange_both(uniques, tests, cuts_e, cuts_t, table_e, table_t, dtype, backend)
    answers = {}
    for d in ranks:
        n_e = int(table_e[:, d].sum())
        values, candidates = received[d][:n_e], _sorted_distinct(received[d][n_e:])
        at = np.searchsorted(candidates, values)
        found = np.zeros(values.size, bool)
        inside = at < candidates.size
        found[inside] = candidates[at[inside]] == values[inside]
        answers[d] = found
    back = _answers_back(answers, cuts_e, table_e, backend)
    result = {}
    for r in ranks:
        found = back[r][inverses[r]].reshape(np.shape(blocks[r]))
        result[r] = ~found if invert else found
    return new_array(target, result, backend, np.dtype(bool))


def _check_table_range(ends: list, test_dtype: np.dtype) -> None:
    """NumPy's RuntimeError for ``kind="table"`` when the test set's range overflows its dtype."""
    if not ends:
        return
    low, high = min(int(e[0]) for e in ends), max(int(e[1]) for e in ends)
    dtype = np.dtype(np.uint8) if test_dtype.kind == "b" else test_dtype
    if high - low > np.iinfo(dtype).max:
        raise RuntimeError(_TABLE_OVERFLOW)


def _exchange_both(uniques, tests, cuts_e, cuts_t, table_e, table_t, dtype, backend) -> dict:
    """Runs of both operands to their buckets in one exchange.

    Rank d receives the element runs of every source, then the test runs, back to back.
    """
    P = backend.nranks
    sources, sends = {}, {}
    for r, u in uniques.items():
        sources[r] = np.concatenate([u, tests[r]])
        ce, ct = cuts_e[r].tolist(), (cuts_t[r] + u.size).tolist()
        items, offset = [], 0
        for b in range(P):
            for lo, hi in ((ce[b], ce[b + 1]), (ct[b], ct[b + 1])):
                items.append(((slice(lo, hi),), offset, hi - lo, (hi - lo,)))
                offset += hi - lo
        sends[r] = (np.diff(cuts_e[r]) + np.diff(cuts_t[r]), items)
    recvcounts, recvs, received = {}, {}, {}
    for d in backend.local_ranks:
        ne, nt = table_e[:, d], table_t[:, d]
        e_at = np.concatenate(([0], np.cumsum(ne))).tolist()
        t_at = (np.concatenate(([0], np.cumsum(nt))) + e_at[-1]).tolist()
        recvcounts[d] = ne + nt
        recvs[d] = [
            item
            for s in range(P)
            for item in (
                (s, (slice(e_at[s], e_at[s + 1]),), 0, int(ne[s]), (int(ne[s]),)),
                (s, (slice(t_at[s], t_at[s + 1]),), int(ne[s]), int(nt[s]), (int(nt[s]),)),
            )
        ]
        received[d] = np.empty(t_at[-1], dtype)
    execute(sources, sends, recvcounts, recvs, received, dtype, backend)
    return received


def _answers_back(answers, cuts_e, table_e, backend) -> dict:
    """Each bucket's answers to the ranks that asked, in the order they asked (one exchange)."""
    P = backend.nranks
    sends = {}
    for d in answers:
        at = np.concatenate(([0], np.cumsum(table_e[:, d]))).tolist()
        items = [
            ((slice(at[s], at[s + 1]),), at[s], at[s + 1] - at[s], (at[s + 1] - at[s],))
            for s in range(P)
        ]
        sends[d] = (table_e[:, d], items)
    recvcounts, recvs, back = {}, {}, {}
    for r, c in cuts_e.items():
        c = c.tolist()
        recvcounts[r] = table_e[r, :]
        recvs[r] = [
            (b, (slice(c[b], c[b + 1]),), 0, c[b + 1] - c[b], (c[b + 1] - c[b],)) for b in range(P)
        ]
        back[r] = np.empty(c[-1], bool)
    execute(answers, sends, recvcounts, recvs, back, np.dtype(bool), backend, adopt=True)
    return back


@implements(np.isin)
def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """`numpy.isin`: whether each element is in the test set, laid out like `element`.

    A NumPy test set, or a distributed one of at most `ISIN_GATHER_LIMIT`
    elements, is used whole on every rank (`dapx.functions.elementwise_library`;
    a distributed one is gathered). A larger distributed test set is never
    gathered: both operands go to value buckets (see the module docstring), and
    no rank receives more than about 1.3 times its share of both plus 2P
    values. A NumPy `element` against it gives a NumPy answer (computed
    distributed, then gathered: one bool per element).

    # Note: `assume_unique` is a hint: the answer is NumPy's for inputs that are
    # unique; with duplicates NumPy's own answer under ``assume_unique=True`` is
    # unspecified. ``kind`` is checked as NumPy does; every kind gives the same answer.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> b = dapx.simulated(2)
    >>> a = dapx.asarray([1, 5, 2, 7], backend=b)
    >>> test = dapx.arange(0, 10000, 2, backend=b)  # above ISIN_GATHER_LIMIT: not gathered
    >>> np.isin(a, test).gather()
    array([False, False,  True, False])
    >>> np.isin(a, test, invert=True).gather()
    array([ True,  True, False,  True])
    """
    if kind not in (None, "sort", "table"):
        raise ValueError(f"Invalid kind: '{kind}'. Please use None, 'sort' or 'table'.")
    test = test_elements
    if (
        not isinstance(test, DistributedArray)
        or test.size <= ISIN_GATHER_LIMIT
        or (isinstance(element, DistributedArray) and element.backend != test.backend)
    ):
        return isin_whole_test_set(element, test, assume_unique, invert, kind=kind)
    values = element if isinstance(element, DistributedArray) else np.asarray(element)
    dtype = _common_dtype(values.dtype, test.dtype)
    if dtype is None:
        return isin_whole_test_set(element, test, assume_unique, invert, kind=kind)
    if kind == "table" and not (values.dtype.kind in "biu" and test.dtype.kind in "biu"):
        raise ValueError(_TABLE_ONLY_INTEGERS)
    if isinstance(element, DistributedArray) and element.ndim:
        return _isin_distributed(element, test, invert, kind)
    # A NumPy element (or a 0-d one, the same on every rank): distributed, answered, gathered.
    if isinstance(element, DistributedArray):
        values = element.locals[element.backend.local_ranks[0]]
    spread = from_replicated(np.ravel(values), test.backend)
    found = _isin_distributed(spread, test, invert, kind).gather().reshape(values.shape)
    if isinstance(element, DistributedArray):
        return from_replicated(found, test.backend)
    return found
