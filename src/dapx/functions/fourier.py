"""`numpy.fft` on distributed arrays: slab and pencil transforms, correct on every layout.

Every transform runs through `dapx.functions.fft_transposes.transform_in_stages`:
NumPy transforms the axes that are whole on the ranks, one all-to-all
(a "transpose") makes the next axes whole, and so on (one transpose for a
1-D process grid, two for a 2-D grid), as mpi4py-fft does. Each rank holds
O(N/P) elements (its blocks and exchange buffers): no rank ever holds the
whole array. A 1-d array whose only axis is distributed has no other axis to
transpose onto: its 1-axis transforms (`fft` ... `ihfft`) split the axis by
the four-step algorithm (`dapx.functions.fft_four_step`); a length that does
not split (prime, or below 4) makes it whole on one
process with a `dapx.GatherWarning` above the gather threshold.

Results have NumPy's shapes and dtypes (single precision stays single) and
are left in the last transpose's layout; ``dapx.config.fft_layout = "input"``
or ``with fft_layout("input"):`` returns them to the input's layout. An
inverse transform of a result in the transposed layout (``ifftn(fftn(a))``,
``irfftn(rfftn(a), s=a.shape)``) ends in ``a``'s layout. `fftshift`/`ifftshift`
are `numpy.roll`s, distributed without making anything whole;
`numpy.fft.fftfreq`/`rfftfreq` take sizes, not arrays, and return NumPy arrays.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator, Sequence

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..config import config
from ..core.array import DistributedArray
from ..core.dispatch import implements
from .fft_four_step import factors, four_step
from .fft_transposes import transform_in_stages
from .joining import roll
from .shaping import moveaxis, write_into
from .whole_core import on_whole_core

__all__ = [
    "fft",
    "fft2",
    "fft_layout",
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


@contextlib.contextmanager
def fft_layout(mode: str) -> Iterator[None]:
    """Set ``dapx.config.fft_layout`` (``"transposed"`` or ``"input"``) inside a block.

    >>> import numpy as np, dapx
    >>> from dapx.functions.fourier import fft_layout
    >>> a = dapx.ones((4, 6), backend=dapx.simulated(2), grid=(2, 1))
    >>> np.fft.fftn(a).distribution.grid_shape
    (1, 2)
    >>> with fft_layout("input"):
    ...     np.fft.fftn(a).distribution == a.distribution
    True
    """
    previous = config.fft_layout
    config.fft_layout = mode
    try:
        yield
    finally:
        config.fft_layout = previous


def _whole_path(func, a, axes: Sequence[int], name: str, out=None, **kwargs):
    """``func(block, axes=<the moved axes>)`` with `axes` whole; for a distributed 1-d array."""
    k = len(axes)
    moved = moveaxis(a, axes, list(range(a.ndim - k, a.ndim)))
    last = tuple(range(-k, 0))
    (result,) = on_whole_core(lambda b: func(b, axes=last, **kwargs), [moved], [k], name)
    result = moveaxis(result, list(range(a.ndim - k, a.ndim)), axes)
    return result if out is None else write_into(out, result)


def _only_axis_distributed(a) -> bool:
    return a.ndim == 1 and a.distribution.grid_shape[0] > 1


def _check_length(n: int) -> int:
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    return n


def _one_axis(func, name: str, kind: str):
    """A 1-axis transform; `kind` is "c2c", "r2c" (rfft, ihfft) or "c2r" (irfft, hfft)."""

    def transform(a, n=None, axis=-1, norm=None, out=None):
        axis = normalize_axis_index(axis, a.ndim)
        m = a.shape[axis]
        length = _check_length(int(n) if n is not None else (2 * (m - 1) if kind == "c2r" else m))
        if _only_axis_distributed(a):
            if factors(length, a.distribution.grid_shape[0]) is not None:
                result = four_step(a, func.__name__, length, norm)
                return result if out is None else write_into(out, result)
            return _whole_path(
                lambda b, axes: func(b, n=n, axis=axes[0], norm=norm), a, [axis], name, out
            )
        size = length // 2 + 1 if kind == "r2c" else length
        result = transform_in_stages(
            a,
            [axis],
            [size],
            lambda b, axes: func(b, n=length, axis=axes[0], norm=norm),
            family="c" if kind == "c2c" else "r",
            inverse=func in (_fft.ifft, _fft.irfft, _fft.hfft),
        )
        return result if out is None else write_into(out, result)

    transform.__name__ = func.__name__
    transform.__doc__ = (
        f"`numpy.fft.{func.__name__}` along one axis, transposed to be whole if it is "
        "distributed (see the module notes)."
    )
    return transform


fft = implements(_fft.fft)(_one_axis(_fft.fft, "np.fft.fft", "c2c"))
ifft = implements(_fft.ifft)(_one_axis(_fft.ifft, "np.fft.ifft", "c2c"))
rfft = implements(_fft.rfft)(_one_axis(_fft.rfft, "np.fft.rfft", "r2c"))
irfft = implements(_fft.irfft)(_one_axis(_fft.irfft, "np.fft.irfft", "c2r"))
hfft = implements(_fft.hfft)(_one_axis(_fft.hfft, "np.fft.hfft", "c2r"))
ihfft = implements(_fft.ihfft)(_one_axis(_fft.ihfft, "np.fft.ihfft", "r2c"))


def _cook(a, s, axes, c2r: bool) -> tuple[list[int], list[int]]:
    """NumPy's ``_cook_nd_args``: the axes and the length each is transformed to."""
    if axes is None:
        if s is not None:
            warnings.warn(
                "`axes` should not be `None` if `s` is not `None` (Deprecated in NumPy 2.0). "
                "To retain current behaviour, pass a sequence [0, ..., k-1] to `axes` for an "
                "array of dimension k.",
                DeprecationWarning,
                stacklevel=4,
            )
            axes = list(range(-len(s), 0))
        else:
            axes = list(range(a.ndim))
    axes = [normalize_axis_index(int(k), a.ndim) for k in axes]
    if s is not None and len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated axes {axes} are not supported by dapx")
    if s is not None and any(n is None for n in s):
        warnings.warn(
            "Passing an array containing `None` values to `s` is deprecated in NumPy 2.0.",
            DeprecationWarning,
            stacklevel=4,
        )
    lengths = []
    for i, k in enumerate(axes):
        n = None if s is None else s[i]
        n = a.shape[k] if n == -1 else n
        if n is None:
            n = 2 * (a.shape[k] - 1) if c2r and i == len(axes) - 1 else a.shape[k]
        lengths.append(_check_length(int(n)))
    return axes, lengths


#: The 1-axis transform that an n-axis one is on a single axis.
_ONE_AXIS_OF = {
    ("c2c", False): "fft",
    ("c2c", True): "ifft",
    ("r2c", False): "rfft",
    ("c2r", True): "irfft",
}


def _many_axes(name: str, kind: str, inverse: bool, default_axes):
    """An n-axis transform: `kind` "c2c", "r2c" (rfftn) or "c2r" (irfftn)."""
    whole, part = {
        ("c2c", False): (_fft.fftn, _fft.fftn),
        ("c2c", True): (_fft.ifftn, _fft.ifftn),
        ("r2c", False): (_fft.rfftn, _fft.fftn),
        ("c2r", True): (_fft.irfftn, _fft.ifftn),
    }[kind, inverse]
    reference = {
        "fftn": _fft.fftn,
        "ifftn": _fft.ifftn,
        "rfftn": _fft.rfftn,
        "irfftn": _fft.irfftn,
        "fft2": _fft.fft2,
        "ifft2": _fft.ifft2,
        "rfft2": _fft.rfft2,
        "irfft2": _fft.irfft2,
    }[name]

    def transform(a, s=None, axes=default_axes, norm=None, out=None):
        axes, lengths = _cook(a, s, axes, kind == "c2r")
        if _only_axis_distributed(a):
            if len(axes) == 1 and factors(lengths[0], a.distribution.grid_shape[0]) is not None:
                # A 1-d array's n-d transform is its 1-d transform: the four-step FFT.
                result = four_step(a, _ONE_AXIS_OF[kind, inverse], lengths[0], norm)
                return result if out is None else write_into(out, result)
            return _whole_path(
                lambda b, axes: reference(b, s=lengths, axes=axes, norm=norm),
                a,
                axes,
                f"np.fft.{name}",
                out,
            )
        special = axes[-1] if kind != "c2c" else None
        n_of = dict(zip(axes, lengths))
        sizes = [n // 2 + 1 if k == special and kind == "r2c" else n for k, n in n_of.items()]

        def block_call(b, stage_axes):
            f = whole if special in stage_axes else part
            return f(b, s=[n_of[k] for k in stage_axes], axes=stage_axes, norm=norm)

        result = transform_in_stages(
            a,
            axes,
            sizes,
            block_call,
            special=None if kind == "c2c" else kind,
            family="c" if kind == "c2c" else "r",
            inverse=inverse,
        )
        return result if out is None else write_into(out, result)

    transform.__name__ = name
    transform.__doc__ = (
        f"`numpy.fft.{name}` by slab or pencil transposes (see the module notes).\n\n"
        "    >>> import numpy as np, dapx\n"
        "    >>> x = np.arange(60.0).reshape(3, 4, 5)\n"
        "    >>> a = dapx.asarray(x, backend=dapx.simulated(3), grid=(3, 1, 1))\n"
        f"    >>> np.allclose(np.fft.{name}(a).gather(), np.fft.{name}(x))\n"
        "    True\n"
    )
    return transform


fft2 = implements(_fft.fft2)(_many_axes("fft2", "c2c", False, (-2, -1)))
ifft2 = implements(_fft.ifft2)(_many_axes("ifft2", "c2c", True, (-2, -1)))
rfft2 = implements(_fft.rfft2)(_many_axes("rfft2", "r2c", False, (-2, -1)))
irfft2 = implements(_fft.irfft2)(_many_axes("irfft2", "c2r", True, (-2, -1)))
fftn = implements(_fft.fftn)(_many_axes("fftn", "c2c", False, None))
ifftn = implements(_fft.ifftn)(_many_axes("ifftn", "c2c", True, None))
rfftn = implements(_fft.rfftn)(_many_axes("rfftn", "r2c", False, None))
irfftn = implements(_fft.irfftn)(_many_axes("irfftn", "c2r", True, None))


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
