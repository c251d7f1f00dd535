"""NumPy library functions that act element by element: rank by rank, the layout kept.

`choose`, `select`, `piecewise`, `digitize`, `interp`, `isin` (against a small
test set, used whole), `polyval`, `ravel_multi_index` and the business-day and
datetime functions compute each element from the elements at the same
position (plus small NumPy parameters: bins, sample points, coefficients),
so the operands are aligned by the elementwise engine and NumPy runs on each
rank's blocks. A parameter given as a DistributedArray (bins, `xp`/`fp`, a
test set) is needed whole on every rank and is gathered, with a
`dapx.GatherWarning` above the gather threshold.
"""

from __future__ import annotations

import numpy as np

from ..core.array import DistributedArray, new_array
from ..core.dispatch import implements
from .manipulation import _blockwise
from .scans import whole

__all__ = [
    "busday_count",
    "busday_offset",
    "choose",
    "datetime_as_string",
    "digitize",
    "interp",
    "is_busday",
    "isin_whole_test_set",
    "piecewise",
    "polyval",
    "ravel_multi_index",
    "select",
    "vander",
]


@implements(np.choose)
def choose(a, choices, out=None, mode="raise"):
    """`numpy.choose`, rank by rank (choices broadcast and aligned with `a`).

    >>> import numpy as np, dapx
    >>> idx = dapx.asarray([0, 1, 1], backend=dapx.simulated(2))
    >>> np.choose(idx, [[1, 2, 3], [7, 8, 9]]).gather()
    array([1, 8, 9])
    """
    choices = list(choices)
    return _blockwise(
        lambda i, *c, **kw: np.choose(i, c, mode=mode, **kw),
        [a, *choices],
        out=out,
        check=mode == "raise",  # an entry out of range may be on some ranks only
    )


@implements(np.select)
def select(condlist, choicelist, default=0):
    """`numpy.select`, rank by rank."""
    condlist, choicelist = list(condlist), list(choicelist)
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if not condlist:
        raise ValueError("select with an empty condition list is not possible")
    n = len(condlist)
    return _blockwise(
        lambda *ops: np.select(list(ops[:n]), list(ops[n : 2 * n]), ops[2 * n]),
        [*condlist, *choicelist, default],
    )


@implements(np.piecewise)
def piecewise(x, condlist, funclist, *args, **kw):
    """`numpy.piecewise`, rank by rank (each function sees the elements of one rank)."""
    if (
        isinstance(condlist, (DistributedArray, np.ndarray))
        and getattr(condlist, "ndim", 0) == x.ndim
    ):
        condlist = [condlist]
    condlist = list(condlist)
    return _blockwise(
        lambda v, *conds: np.piecewise(v, list(conds), funclist, *args, **kw), [x, *condlist]
    )


@implements(np.digitize)
def digitize(x, bins, right=False):
    """`numpy.digitize` against NumPy `bins`, rank by rank."""
    bins = whole(bins, "np.digitize's bins")
    return _blockwise(lambda v: np.digitize(v, bins, right), [x])


@implements(np.interp)
def interp(x, xp, fp, left=None, right=None, period=None):
    """`numpy.interp` at distributed points `x` of the NumPy curve (`xp`, `fp`)."""
    xp, fp = whole(xp, "np.interp's xp"), whole(fp, "np.interp's fp")
    return _blockwise(lambda v: np.interp(v, xp, fp, left, right, period), [x])


def isin_whole_test_set(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """`numpy.isin` against a test set used whole on every rank (gathered if distributed).

    `dapx.functions.sets.isin`, registered for `numpy.isin`, calls it for small test sets.
    """
    if not isinstance(element, DistributedArray):
        # Note: a NumPy `element` against a distributed test set gives a NumPy answer.
        return np.isin(
            element, whole(test_elements, "np.isin's test set"), assume_unique, invert, kind=kind
        )
    test = whole(test_elements, "np.isin's test set")
    return _blockwise(lambda v: np.isin(v, test, assume_unique, invert, kind=kind), [element])


@implements(np.polyval)
def polyval(p, x):
    """`numpy.polyval` by Horner's rule on distributed `x` (coefficients `p` whole)."""
    p = whole(p, "np.polyval's coefficients")
    if isinstance(x, DistributedArray):
        return _blockwise(lambda v: np.polyval(p, v), [x])
    return np.polyval(p, x)


@implements(np.ravel_multi_index)
def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """`numpy.ravel_multi_index` of distributed index arrays, rank by rank."""
    multi_index = list(multi_index)
    return _blockwise(
        lambda *idx: np.ravel_multi_index(idx, dims, mode=mode, order=order),
        multi_index,
        check=True,  # an entry out of range may be on some ranks only
    )


@implements(np.vander)
def vander(x, N=None, increasing=False):
    """`numpy.vander` of a distributed vector: rows laid out like `x`, columns whole."""
    from ..layout.distribution import Distribution
    from ..layout.maps import BlockMap

    if x.ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    x = x.interior if x.distribution.has_halo else x
    N = x.shape[0] if N is None else int(N)
    if N < 0:
        raise ValueError("negative dimensions are not allowed")
    dist = Distribution([*x.distribution.maps, BlockMap(N, nprocs=1)])
    blocks = {r: np.vander(b, N, increasing) for r, b in x.locals.items()}
    dtype = np.vander(np.zeros(1, x.dtype), 1).dtype
    return new_array(dist, blocks, x.backend, dtype)


def _calendar(weekmask, holidays, busdaycal) -> dict:
    """NumPy's business-day keywords, without the ones left at None (NumPy refuses None)."""
    out = {"weekmask": weekmask}
    if holidays is not None:
        out["holidays"] = holidays
    if busdaycal is not None:
        out = {"busdaycal": busdaycal}
    return out


@implements(np.is_busday)
def is_busday(dates, weekmask="1111100", holidays=None, busdaycal=None, out=None):
    """`numpy.is_busday`, rank by rank."""
    cal = _calendar(weekmask, holidays, busdaycal)
    return _blockwise(lambda d, **kw: np.is_busday(d, **cal, **kw), [dates], out=out)


@implements(np.busday_offset)
def busday_offset(
    dates, offsets, roll="raise", weekmask="1111100", holidays=None, busdaycal=None, out=None
):
    """`numpy.busday_offset`, rank by rank."""
    cal = _calendar(weekmask, holidays, busdaycal)
    return _blockwise(
        lambda d, o, **kw: np.busday_offset(d, o, roll, **cal, **kw),
        [dates, offsets],
        out=out,
        check=roll == "raise",  # a non-business day may be on some ranks only
    )


@implements(np.busday_count)
def busday_count(begindates, enddates, weekmask="1111100", holidays=None, busdaycal=None, out=None):
    """`numpy.busday_count`, rank by rank."""
    cal = _calendar(weekmask, holidays, busdaycal)
    return _blockwise(
        lambda b, e, **kw: np.busday_count(b, e, **cal, **kw), [begindates, enddates], out=out
    )


@implements(np.datetime_as_string)
def datetime_as_string(arr, unit=None, timezone="naive", casting="same_kind"):
    """`numpy.datetime_as_string`, rank by rank."""
    return _blockwise(lambda d: np.datetime_as_string(d, unit, timezone, casting), [arr])
