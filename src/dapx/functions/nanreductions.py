"""NaN-ignoring reductions of distributed arrays: nansum, nanprod, nanmax, nanmin, nanarg....

Each one is a reduction of `dapx.functions.reductions` on data whose NaNs are replaced
(`replace_nan`, also used by the NaN-ignoring scans and statistics) or, for
``nanmax`` and ``nanmin``, folded by ``fmax`` and ``fmin``; all-NaN slices warn
or raise as NumPy does, on every rank alike.
"""

from __future__ import annotations

import operator
import warnings

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core.array import DistributedArray, new_array
from ..core.dispatch import implements
from .reduction_engine import (
    Axis,
    Blocks,
    NoValue,
    any_true,
    as_distributed,
    single_out,
    spmd_warnings,
    store,
)
from .reductions import _arg, _reduce, prod, sum

__all__ = [
    "nanargmax",
    "nanargmin",
    "nanmax",
    "nanmin",
    "nanprod",
    "nansum",
    "replace_nan",
]


def replace_nan(a: DistributedArray, value) -> tuple[DistributedArray, Blocks | None]:
    """`a` with NaNs replaced by `value`, and the NaN masks (None for exact dtypes)."""
    if a.dtype.kind not in "fc":
        return a, None
    masks = {r: np.isnan(b) for r, b in a.locals.items()}
    blocks = {}
    for r, b in a.locals.items():
        c = b.copy()
        np.copyto(c, value, where=masks[r])
        blocks[r] = c
    return new_array(a.distribution, blocks, a.backend, a.dtype), masks


@implements(np.nansum)
def nansum(
    a: DistributedArray,
    axis: Axis = None,
    dtype=None,
    out=None,
    keepdims=False,
    initial=NoValue,
    where=True,
) -> DistributedArray:
    """Sum treating NaN as zero, as `numpy.nansum`.

    >>> import numpy as np, dapx
    >>> float(np.nansum(dapx.asarray(np.array([1., np.nan, 2.]), backend=dapx.simulated(2))))
    3.0
    """
    out = single_out(out)
    a, _ = replace_nan(as_distributed(a, out), 0)
    return sum(a, axis, dtype, out, keepdims, initial, where)


@implements(np.nanprod)
def nanprod(
    a: DistributedArray,
    axis: Axis = None,
    dtype=None,
    out=None,
    keepdims=False,
    initial=NoValue,
    where=True,
) -> DistributedArray:
    """Product treating NaN as one, as `numpy.nanprod`.

    >>> import numpy as np, dapx
    >>> float(np.nanprod(dapx.asarray(np.array([3., np.nan, 2.]), backend=dapx.simulated(2))))
    6.0
    """
    out = single_out(out)
    a, _ = replace_nan(as_distributed(a, out), 1)
    return prod(a, axis, dtype, out, keepdims, initial, where)


@spmd_warnings
def _nan_extremum(ufunc, a, axis, out, keepdims, initial, where):
    out = single_out(out)
    a = as_distributed(a, out)
    res = _reduce(ufunc, a, axis, None, None, keepdims, initial, where)
    if a.dtype.kind in "fc" and any_true(
        {r: np.isnan(b) for r, b in res.locals.items()}, a.backend
    ):
        warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=3)
    return store(res, out)


@implements(np.nanmax)
def nanmax(
    a: DistributedArray,
    axis: Axis = None,
    out=None,
    keepdims=NoValue,
    initial=NoValue,
    where=NoValue,
) -> DistributedArray:
    """Maximum ignoring NaNs, as `numpy.nanmax` (warns on all-NaN slices).

    >>> import numpy as np, dapx
    >>> float(np.nanmax(dapx.asarray(np.array([1., np.nan, 2.]), backend=dapx.simulated(3))))
    2.0
    """
    return _nan_extremum(np.fmax, a, axis, out, keepdims, initial, where)


@implements(np.nanmin)
def nanmin(
    a: DistributedArray,
    axis: Axis = None,
    out=None,
    keepdims=NoValue,
    initial=NoValue,
    where=NoValue,
) -> DistributedArray:
    """Minimum ignoring NaNs, as `numpy.nanmin` (warns on all-NaN slices).

    >>> import numpy as np, dapx
    >>> float(np.nanmin(dapx.asarray(np.array([1., np.nan, 2.]), backend=dapx.simulated(3))))
    1.0
    """
    return _nan_extremum(np.fmin, a, axis, out, keepdims, initial, where)


@spmd_warnings
def _nan_arg(a, axis, out, keepdims, which):
    out = single_out(out)
    a = as_distributed(a, out)
    fill = np.inf if which == "argmin" else -np.inf
    filled, masks = replace_nan(a, fill)
    if masks is not None and a.size:
        axes = (
            tuple(range(a.ndim))
            if axis is None
            else (normalize_axis_index(operator.index(axis), a.ndim),)
        )
        if a.ndim:
            all_nan = _reduce(
                np.logical_and,
                new_array(a.distribution, dict(masks), a.backend, bool),
                axes,
                None,
                None,
                False,
                None,
                True,
            )
            blocks = all_nan.locals
        else:
            blocks = masks
        if any_true(blocks, a.backend):
            raise ValueError("All-NaN slice encountered")
    return _arg(filled, axis, out, keepdims, which)


@implements(np.nanargmin)
def nanargmin(
    a: DistributedArray, axis: Axis = None, out=None, *, keepdims=NoValue
) -> DistributedArray:
    """Index of the minimum ignoring NaNs, as `numpy.nanargmin`.

    >>> import numpy as np, dapx
    >>> int(np.nanargmin(dapx.asarray(np.array([np.nan, 2., 1.]), backend=dapx.simulated(2))))
    2
    """
    return _nan_arg(a, axis, out, keepdims, "argmin")


@implements(np.nanargmax)
def nanargmax(
    a: DistributedArray, axis: Axis = None, out=None, *, keepdims=NoValue
) -> DistributedArray:
    """Index of the maximum ignoring NaNs, as `numpy.nanargmax`.

    >>> import numpy as np, dapx
    >>> int(np.nanargmax(dapx.asarray(np.array([np.nan, 2., 1.]), backend=dapx.simulated(2))))
    1
    """
    return _nan_arg(a, axis, out, keepdims, "argmax")
