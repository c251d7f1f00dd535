"""Histogram bin estimators given by name ('auto', 'fd', 'scott', ...), on distributed data.

NumPy turns ``bins='auto'`` and the other names into a number of equal
bins from statistics of the data within the range: its size and extent,
its standard deviation (scott), its skewness (doane), its interquartile
range (fd), or histograms of every candidate bin count (stone). Each of
those is a distributed reduction here (`numpy.std`, `numpy.percentile`,
`numpy.histogram` of a DistributedArray), so the estimate needs no data to
move and gives NumPy's number of bins: the formulas are NumPy's.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..core.array import DistributedArray

__all__ = ["ESTIMATORS", "estimated_bin_count"]


def _extent(x: DistributedArray):
    return _unsigned_delta(x.min(), x.max())


def _unsigned_delta(first, last):
    """``last - first`` without the overflow of a signed integer subtraction (as NumPy)."""
    first, last = np.asarray(first), np.asarray(last)
    dtype = np.result_type(first, last)
    if dtype.kind == "i":
        unsigned = np.dtype(dtype.str.replace("i", "u"))
        return np.subtract(last, first, casting="unsafe", dtype=unsigned)
    return np.subtract(last, first)


def _sqrt(x, range_):
    return _extent(x) / np.sqrt(x.size)


def _sturges(x, range_):
    return _extent(x) / (np.log2(x.size) + 1.0)


def _rice(x, range_):
    return _extent(x) / (2.0 * x.size ** (1.0 / 3))


def _scott(x, range_):
    return (24.0 * np.pi**0.5 / x.size) ** (1.0 / 3.0) * np.std(x)


def _doane(x, range_):
    if x.size <= 2:
        return 0.0
    sg1 = np.sqrt(6.0 * (x.size - 2) / ((x.size + 1.0) * (x.size + 3)))
    sigma = np.std(x)
    if not sigma > 0.0:
        return 0.0
    g1 = np.mean(((x - np.mean(x)) / sigma) ** 3)
    return _extent(x) / (1.0 + np.log2(x.size) + np.log2(1.0 + np.absolute(g1) / sg1))


def _fd(x, range_):
    high, low = np.percentile(x, [75, 25]).gather()
    return 2.0 * (high - low) * x.size ** (-1.0 / 3.0)


def _auto(x, range_):
    return min(max(_fd(x, range_), _sqrt(x, range_) / 2), _sturges(x, range_))


def _stone(x, range_):
    n = x.size
    extent = _extent(x)
    if n <= 1 or extent == 0:
        return 0

    def risk(nbins: int) -> float:
        p = np.histogram(x, bins=nbins, range=range_)[0].gather() / n
        return (2 - (n + 1) * p.dot(p)) / (extent / nbins)

    upper = max(100, int(np.sqrt(n)))
    nbins = min(range(1, upper + 1), key=risk)
    if nbins == upper:
        warnings.warn(
            "The number of bins estimated may be suboptimal.", RuntimeWarning, stacklevel=4
        )
    return extent / nbins


#: NumPy's estimators by name: the bin width from the data within the range.
ESTIMATORS = {
    "auto": _auto,
    "doane": _doane,
    "fd": _fd,
    "rice": _rice,
    "scott": _scott,
    "sqrt": _sqrt,
    "stone": _stone,
    "sturges": _sturges,
}


def estimated_bin_count(a: DistributedArray, name: str, first, last, ranged: bool) -> int:
    """NumPy's number of equal bins between `first` and `last` for the estimator `name`.

    `a` is the flattened data; with `ranged` (a user's range) only the
    elements within ``[first, last]`` count, as NumPy's.

    >>> import numpy as np, dapx
    >>> x = np.random.default_rng(0).normal(size=1000)
    >>> a = dapx.asarray(x, backend=dapx.simulated(3))
    >>> n = estimated_bin_count(a, "auto", x.min(), x.max(), False)
    >>> n == len(np.histogram_bin_edges(x, "auto")) - 1
    True
    """
    if name not in ESTIMATORS:
        raise ValueError(f"{name!r} is not a valid estimator for `bins`")
    if ranged:
        keep = (a >= first) & (a <= last)
        if not keep.all():
            a = a[keep]
    if a.size == 0:
        return 1
    width = ESTIMATORS[name](a, (first, last))
    if not width:  # e.g. fd of data whose interquartile range is 0
        return 1
    if np.issubdtype(a.dtype, np.integer) and width < 1:
        width = 1
    return int(np.ceil(_unsigned_delta(first, last) / width))
