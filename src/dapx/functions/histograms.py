"""Histograms and bin counts: each rank counts its own elements, counts summed in rank order.

The bin edges are known before any counting: given, or from the global
minimum and maximum (two reductions) for a number of bins. Each rank runs
NumPy on its own elements with those edges and the counts are added in rank
order, so results are the same on every backend. Only the counts (the size
of the bins) travel. The results are distributed like any dapx result (the
counts and edges are small: every rank builds its part without moving data).

Bin estimators given by name ('auto', 'fd', ...) are distributed reductions
(`dapx.functions.bin_estimators`).
"""

from __future__ import annotations

import builtins

import numpy as np

from ..core.array import DistributedArray
from ..core.dispatch import implements
from ..core.elementwise import local_operands, result_layout
from .bin_estimators import ESTIMATORS, estimated_bin_count
from .reductions import max as max_
from .reductions import min as min_
from .scans import whole
from .shaping import from_replicated, ravel

__all__ = ["bincount", "histogram", "histogram2d", "histogram_bin_edges", "histogramdd"]


def _edges(a: DistributedArray, bins, range_, weights=None) -> np.ndarray:
    if np.ndim(bins) == 1 or isinstance(bins, DistributedArray):
        return np.asarray(whole(bins, "the histogram's bin edges"))
    if isinstance(bins, str):
        if bins not in ESTIMATORS:
            raise ValueError(f"{bins!r} is not a valid estimator for `bins`")
        if weights is not None:
            raise TypeError(
                "Automated estimation of the number of bins is not supported for weighted data"
            )
        if a.dtype == np.bool_:
            a = a.astype(np.uint8)  # as NumPy: estimators subtract
    ranged = range_ is not None
    if not ranged:
        # Edges in the data's own type (Python complex numbers do not compare).
        kind = a.dtype.type
        range_ = (kind(min_(a).item()), kind(max_(a).item())) if a.size else (0.0, 1.0)
    if isinstance(bins, str):
        # NumPy's checks of the range, then its outer edges: the range as given (or the data's
        # extent), widened by 0.5 each way when empty.
        np.histogram_bin_edges(np.zeros(0), 1, range=range_)
        first, last = range_
        if first == last:
            first, last = first - 0.5, last + 0.5
        bins = estimated_bin_count(a, bins, first, last, ranged)
    # NumPy's edges for a bin count depend only on the range (and the dtype).
    return np.histogram_bin_edges(np.zeros(0, a.dtype), bins, range=range_)


def _check_weights(weights, a, message: str) -> None:
    if weights is not None and np.shape(weights) != np.shape(a):
        raise ValueError(message)


def _aligned_blocks(arrays):
    """Each rank's owned blocks of `arrays` (aligned with the first), without halos."""
    inner = [
        x.interior if isinstance(x, DistributedArray) and x.distribution.has_halo else x
        for x in arrays
    ]
    backend, target, _ = result_layout([inner[0]], None)
    return backend, target, local_operands(inner, target, backend)


def _accumulate(total: np.ndarray, counts: np.ndarray) -> np.ndarray:
    # The partials are this module's own temporaries: add in place, no new array per rank
    # (unless the first arrived read-only, as unpickled buffers may).
    if not total.flags.writeable or total.dtype != np.result_type(total, counts):
        return total + counts
    return np.add(total, counts, out=total)


def _sum_counts(backend, counts: dict) -> np.ndarray:
    """The counts of every rank added in rank order (each rank's array is consumed)."""
    return backend.combine(counts, _accumulate)


@implements(np.histogram_bin_edges)
def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """`numpy.histogram_bin_edges` for a number of bins, an estimator's name or given edges."""
    _check_weights(weights, a, "weights should have the same shape as a.")
    edges = _edges(ravel(a), bins, range, weights)
    return from_replicated(edges, a.backend)


@implements(np.histogram)
def histogram(a, bins=10, range=None, density=None, weights=None):
    """`numpy.histogram`: per-rank counts with shared edges, summed in rank order.

    >>> import numpy as np, dapx
    >>> a = dapx.asarray([0.5, 1.5, 1.7, 3.0], backend=dapx.simulated(2))
    >>> hist, edges = np.histogram(a, bins=3, range=(0, 3))
    >>> hist.gather(), edges.gather()
    (array([1, 2, 1]), array([0., 1., 2., 3.]))
    """
    _check_weights(weights, a, "weights should have the same shape as a.")
    flat = ravel(a)
    edges = _edges(flat, bins, range, weights)
    operands = [a] if weights is None else [a, weights]
    backend, _, aligned = _aligned_blocks(operands)
    # A number of bins: NumPy's uniform-bin path (arithmetic, not a search per element) with
    # the same edges; given edges: NumPy's search.
    uniform = np.ndim(bins) == 0 and not isinstance(bins, str)
    per_rank_bins = (len(edges) - 1) if uniform else edges
    per_rank_range = (edges[0], edges[-1]) if uniform else None
    counts = {}
    for r in backend.local_ranks:
        w = None if weights is None else aligned[1][r].ravel()
        values = aligned[0][r].ravel()
        counts[r] = np.histogram(values, per_rank_bins, range=per_rank_range, weights=w)[0]
    hist = _sum_counts(backend, counts)
    if density:
        hist = hist / (hist.sum() * np.diff(edges))
    return from_replicated(hist, backend), from_replicated(edges, backend)


def _sample_columns(sample):
    if isinstance(sample, DistributedArray) and sample.ndim == 2:
        return [sample[:, k] for k in range(sample.shape[1])]
    if isinstance(sample, DistributedArray) and sample.ndim == 1:
        return [sample]
    return list(sample)


@implements(np.histogramdd)
def histogramdd(sample, bins=10, range=None, density=None, weights=None):
    """`numpy.histogramdd` of D distributed coordinate arrays (or an (N, D) array)."""
    columns = _sample_columns(sample)
    d = len(columns)
    bins_list = [bins] * d if np.ndim(bins) == 0 else list(bins)
    if len(bins_list) != d:
        raise ValueError("The dimension of bins must be equal to the dimension of the sample x.")
    ranges = list(range) if range is not None else [None] * d
    edges = [_edges(ravel(c), b, rg) for c, b, rg in zip(columns, bins_list, ranges)]
    operands = columns if weights is None else [*columns, weights]
    backend, _, aligned = _aligned_blocks(operands)
    counts = {}
    for r in backend.local_ranks:
        pts = np.stack([aligned[k][r].ravel() for k in builtins.range(d)], axis=-1)
        w = None if weights is None else aligned[d][r].ravel()
        counts[r] = np.histogramdd(pts, edges, weights=w)[0]
    hist = _sum_counts(backend, counts)
    if density:
        widths = np.meshgrid(*(np.diff(e) for e in edges), indexing="ij")
        hist = hist / (hist.sum() * np.prod(widths, axis=0))
    return from_replicated(hist, backend), [from_replicated(e, backend) for e in edges]


@implements(np.histogram2d)
def histogram2d(x, y, bins=10, range=None, density=None, weights=None):
    """`numpy.histogram2d`: `histogramdd` of the two coordinates."""
    hist, (xedges, yedges) = histogramdd([x, y], bins, range, density, weights)
    return hist, xedges, yedges


@implements(np.bincount)
def bincount(x, /, weights=None, minlength=0):
    """`numpy.bincount`: per-rank counts up to the global maximum, summed in rank order."""
    if x.ndim != 1:
        raise ValueError("object too deep for desired array")
    if x.dtype.kind not in "iub":
        raise TypeError(
            f"Cannot cast array data from dtype('{x.dtype}') to dtype('int64') "
            "according to the rule 'safe'"
        )
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    if x.size and int(min_(x)) < 0:
        raise ValueError("'list' argument must have no negative elements")
    _check_weights(weights, x, "The weights and list don't have the same length.")
    length = max(int(max_(x)) + 1 if x.size else 0, int(minlength))
    operands = [x] if weights is None else [x, weights]
    backend, _, aligned = _aligned_blocks(operands)
    counts = {}
    for r in backend.local_ranks:
        w = None if weights is None else aligned[1][r]
        counts[r] = np.bincount(aligned[0][r], w, minlength=length)
    return from_replicated(_sum_counts(backend, counts), backend)
