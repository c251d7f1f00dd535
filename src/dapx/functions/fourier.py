"""`numpy.fft` on distributed arrays, correct on every layout.

A transform needs its axes whole: the transformed axes are moved to the end
and made whole on every rank while the other axes are spread over the ranks
(`dapx.functions.whole_core.on_whole_core`, one exchange), NumPy transforms
each rank's block, and the axes are moved back. Transforming every axis of
an array (no batch axis left) makes it whole on one process, with a
`dapx.GatherWarning` above the gather threshold. `fftshift`/`ifftshift` are
`numpy.roll`s, distributed without making anything whole. Slab and pencil
decompositions (transposes between transforms, as mpi4py-fft's) replace this
path in the next step.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core.array import DistributedArray
from ..core.dispatch import implements
from .joining import roll
from .shaping import moveaxis, write_into
from .whole_core import on_whole_core

__all__ = [
    "fft",
    "fft2",
    "fftn",
    "fftshift",
    "hfft",
    "ifft",
    "ifft2",
    "ifftn",
    "ifftshift",
    "ihfft",
    "irfft",
    "irfft2",
    "irfftn",
    "rfft",
    "rfft2",
    "rfftn",
]

_fft = np.fft


def _transform(func, a, axes: Sequence[int], name: str, out=None, **kwargs):
    """``func(block, axes=<the moved axes>, **kwargs)`` with `axes` whole; axes moved back."""
    axes = [normalize_axis_index(int(k), a.ndim) for k in axes]
    if len(set(axes)) != len(axes):
        raise ValueError(f"{name}: repeated axes {axes} are not supported by dapx")
    k = len(axes)
    moved = moveaxis(a, axes, list(range(a.ndim - k, a.ndim)))
    last = tuple(range(-k, 0))
    (result,) = on_whole_core(lambda b: func(b, axes=last, **kwargs), [moved], [k], name)
    result = moveaxis(result, list(range(a.ndim - k, a.ndim)), axes)
    return result if out is None else write_into(out, result)


def _one_axis(func, name):
    def transform(a, n=None, axis=-1, norm=None, out=None):
        axis = normalize_axis_index(axis, a.ndim)
        return _transform(
            lambda b, axes, **kw: func(b, n=n, axis=axes[0], norm=norm), a, [axis], name, out
        )

    transform.__name__ = func.__name__
    transform.__doc__ = f"`numpy.fft.{func.__name__}` along one whole axis (see the module notes)."
    return transform


fft = implements(_fft.fft)(_one_axis(_fft.fft, "np.fft.fft"))
ifft = implements(_fft.ifft)(_one_axis(_fft.ifft, "np.fft.ifft"))
rfft = implements(_fft.rfft)(_one_axis(_fft.rfft, "np.fft.rfft"))
irfft = implements(_fft.irfft)(_one_axis(_fft.irfft, "np.fft.irfft"))
hfft = implements(_fft.hfft)(_one_axis(_fft.hfft, "np.fft.hfft"))
ihfft = implements(_fft.ihfft)(_one_axis(_fft.ihfft, "np.fft.ihfft"))


def _axes_of(a, s, axes, default_last: int | None):
    if axes is None:
        if s is not None:
            return list(range(a.ndim - len(s), a.ndim))
        return list(range(a.ndim)) if default_last is None else list(range(-default_last, 0))
    return list(axes)


def _many_axes(func, name, default_last):
    def transform(a, s=None, axes=None, norm=None, out=None):
        chosen = _axes_of(
            a, s, axes if axes is not None or default_last is None else (-2, -1), default_last
        )
        if s is not None and len(s) != len(chosen):
            raise ValueError("Shape and axes have different lengths.")
        return _transform(
            lambda b, axes, **kw: func(b, s=s, axes=axes, norm=norm), a, chosen, name, out
        )

    transform.__name__ = func.__name__
    transform.__doc__ = (
        f"`numpy.fft.{func.__name__}` over whole axes (see the module notes).\n\n"
        "    >>> import numpy as np, dapx\n"
        "    >>> x = np.arange(16.0).reshape(4, 4)\n"
        "    >>> a = dapx.asarray(x[None].repeat(3, 0), backend=dapx.simulated(3))\n"
        f"    >>> np.allclose(np.fft.{func.__name__}(a, axes=(1, 2)).gather()[1], "
        f"np.fft.{func.__name__}(x[None].repeat(3, 0), axes=(1, 2))[1])\n"
        "    True\n"
    )
    return transform


fft2 = implements(_fft.fft2)(_many_axes(_fft.fft2, "np.fft.fft2", 2))
ifft2 = implements(_fft.ifft2)(_many_axes(_fft.ifft2, "np.fft.ifft2", 2))
rfft2 = implements(_fft.rfft2)(_many_axes(_fft.rfft2, "np.fft.rfft2", 2))
irfft2 = implements(_fft.irfft2)(_many_axes(_fft.irfft2, "np.fft.irfft2", 2))
fftn = implements(_fft.fftn)(_many_axes(_fft.fftn, "np.fft.fftn", None))
ifftn = implements(_fft.ifftn)(_many_axes(_fft.ifftn, "np.fft.ifftn", None))
rfftn = implements(_fft.rfftn)(_many_axes(_fft.rfftn, "np.fft.rfftn", None))
irfftn = implements(_fft.irfftn)(_many_axes(_fft.irfftn, "np.fft.irfftn", None))


def _shift(x, axes, sign: int):
    if not isinstance(x, DistributedArray):
        x = np.asarray(x)
    axes = tuple(range(x.ndim)) if axes is None else np.atleast_1d(axes).tolist()
    shifts = [sign * (x.shape[k] // 2) for k in axes]
    return roll(x, shifts, axes) if axes else x


@implements(_fft.fftshift)
def fftshift(x, axes=None):
    """`numpy.fft.fftshift`: a `numpy.roll` by half of each axis; nothing is made whole.

    >>> import numpy as np, dapx
    >>> np.fft.fftshift(dapx.arange(5, backend=dapx.simulated(2))).gather()
    array([3, 4, 0, 1, 2])
    """
    return _shift(x, axes, 1)


@implements(_fft.ifftshift)
def ifftshift(x, axes=None):
    """`numpy.fft.ifftshift`: the inverse roll of `fftshift`."""
    return _shift(x, axes, -1)
